"""The exceptions milo raises: one class per kind of bad input, all under `MiloError`."""


class MiloError(Exception):
    """Anything milo reports; every exception below is one."""


class InvalidConstruction(MiloError, ValueError):
    """The values break the problem's rules (NaN or infinity, a negative value where values must
    be non-negative, empty, over the length limit, not 1-D, not real numbers). The message is the
    CLI's one line: the problem, the rule, the offending index and value."""


class UnknownProblem(MiloError, ValueError):
    """No problem has that name; the message lists the known ones."""


class ProgramError(MiloError, ValueError):
    """An optimizer program that cannot be read, parsed or checked; the message names the step
    and the key."""


class InvalidArgument(MiloError, ValueError):
    """A budget, seed, mode or `against` out of its range; the message names the argument."""


class InternalError(MiloError, RuntimeError):
    """A bug in milo: a Rust panic caught at the boundary. Please report it."""
