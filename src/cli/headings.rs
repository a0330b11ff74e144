//! The headings that group the flags of the long commands' `--help` (`optimize`, `evolve`,
//! `campaign`, `bench`).

/// What a run may spend: rounds, hours, evaluations, threads.
pub const BUDGETS: &str = "Budgets";
/// What the search does: suite, islands, seeds, parts, admission's inputs, resume.
pub const SEARCH: &str = "Search";
/// Language models: the writer and the agents file.
pub const LLM: &str = "LLM";
/// Where tasks run: the executor and its Slurm settings.
pub const SLURM: &str = "Slurm";
/// What is written and shown: directories, files, verbosity, JSON.
pub const OUTPUT: &str = "Output";
/// The arena server and submission (`campaign`).
pub const ARENA: &str = "Arena";
