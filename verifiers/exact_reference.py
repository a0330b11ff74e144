#!/usr/bin/env python3
"""Exact rational reference for the four EinsteinArena scores (Python ints and fractions.Fraction).

Evaluates the scoring formulas of the table "How the arena scores a construction" in
/work/shared/DOMAIN.md with no rounding at all, on the float64 inputs taken as exact dyadic rationals.
With every value written as A_i / D over one common power of two D (A_i integers), C = A * A (or the
correlation of A with B) is an integer sequence and each score reduces to a ratio of integers:

  erdos-min-overlap                   B_i = 2*S - n*A_i (S = sum A);  max_k (A corr B)_k / (2 S^2)
  first-autocorrelation-inequality    2n * max C / S^2
  second-autocorrelation-inequality   A clipped at 0;  Q / (3 * sum C * max C) with
                                      Q = sum over the m+1 intervals of y1^2 + y1*y2 + y2^2, y = [0, C, 0]
                                      (h = 1/(m+1) and D cancel)
  third-autocorrelation-inequality    2n * |max C| / S^2, rejected when (S/D * 0.5/n)^2 < 1e-9
                                      (1e-9 taken as the exact value of the float64 literal)

The constraints are checked exactly too. Integer convolutions use Kronecker substitution (pack each
sequence into one big int, multiply once, unpack), so n up to ~2,000 takes well under a second.

Usage: exact_reference.py SLUG FILE [--digits 40]
Prints {"problem", "n", "score_exact", "numerator", "denominator", "valid": true} or
{"valid": false, "error"}; exit 0 either way, 2 for usage errors.
score_exact is decimal_string(numerator, denominator, digits): "0", or [-]d.ddd...e<exp> with exactly
`digits` significant digits rounded half-to-even (a single digit prints as de<exp>).
"""
import argparse
import gzip
import json
import sys
from fractions import Fraction

PROBLEMS = (
    "erdos-min-overlap",
    "first-autocorrelation-inequality",
    "second-autocorrelation-inequality",
    "third-autocorrelation-inequality",
)
if hasattr(sys, "set_int_max_str_digits"):  # numerators can exceed Python's 4300-digit str() limit
    sys.set_int_max_str_digits(0)


class Invalid(Exception):
    pass


def load_values(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    return data["values"] if isinstance(data, dict) else data


def to_integers(values):
    """Exact dyadic values -> (integers A, D) with value_i == A_i / D and D a power of two."""
    fr = []
    for v in values:
        try:
            fr.append(Fraction(float(v)))
        except (ValueError, OverflowError, TypeError):
            raise Invalid(f"NaN, infinite or non-numeric value: {v!r}")
    d = max(q.denominator for q in fr)
    return [q.numerator * (d // q.denominator) for q in fr], d


def _conv_nonneg(a, b):
    """Full linear convolution of two non-negative integer lists by Kronecker substitution."""
    if not any(a) or not any(b):
        return [0] * (len(a) + len(b) - 1)
    bound = min(len(a), len(b)) * max(a) * max(b)  # no output coefficient exceeds this
    w = (bound.bit_length() + 8) // 8  # slot width in bytes
    pack = lambda xs: int.from_bytes(b"".join(x.to_bytes(w, "little") for x in xs), "little")
    raw = (pack(a) * pack(b)).to_bytes(w * (len(a) + len(b)), "little")
    return [int.from_bytes(raw[i * w:(i + 1) * w], "little") for i in range(len(a) + len(b) - 1)]


def conv(a, b):
    """Full linear convolution of signed integer lists (split into positive and negative parts)."""
    ap, an = [max(x, 0) for x in a], [max(-x, 0) for x in a]
    bp, bn = [max(x, 0) for x in b], [max(-x, 0) for x in b]
    terms = [(_conv_nonneg(ap, bp), 1), (_conv_nonneg(an, bn), 1), (_conv_nonneg(ap, bn), -1), (_conv_nonneg(an, bp), -1)]
    return [sum(s * t[k] for t, s in terms) for k in range(len(a) + len(b) - 1)]


def erdos(a, d):
    n = len(a)
    if any(x < 0 or x > d for x in a):
        raise Invalid("value outside [0, 1]")
    s = sum(a)
    if s == 0:
        raise Invalid("sum is zero")
    if any(n * x > 2 * s for x in a):  # h_i = n*A_i / (2S) must stay <= 1 (>= 0 holds since S > 0)
        raise Invalid("value outside [0, 1] after rescaling to sum n/2")
    b = [2 * s - n * x for x in a]
    corr = conv(a, b[::-1])  # correlate(h, 1-h, "full") == convolve(h, (1-h)[::-1])
    return Fraction(max(corr), 2 * s * s)


def first(a, d):
    if any(x < 0 for x in a):
        raise Invalid("negative value")
    s = sum(a)
    if s <= 0:
        raise Invalid("sum is not positive")
    return Fraction(2 * len(a) * max(conv(a, a)), s * s)


def second(a, d):
    if any(Fraction(x, d) < Fraction(-1e-6) for x in a):
        raise Invalid("value below -1e-6")
    a = [max(x, 0) for x in a]
    if sum(a) <= 0:
        raise Invalid("sum is not positive")
    c = conv(a, a)
    y = [0] + c + [0]
    q = sum(y1 * y1 + y1 * y2 + y2 * y2 for y1, y2 in zip(y, y[1:]))
    return Fraction(q, 3 * sum(abs(x) for x in c) * max(abs(x) for x in c))


def third(a, d):
    n, s = len(a), sum(a)
    if Fraction(s * s, 4 * n * n * d * d) < Fraction(1e-9):
        raise Invalid("(sum(f)*dx)^2 < 1e-9")
    return Fraction(2 * n * abs(max(conv(a, a))), s * s)


SCORERS = dict(zip(PROBLEMS, (erdos, first, second, third)))


def decimal_string(num, den, digits):
    """num/den as [-]d.ddd...e<exp>, `digits` significant digits, round half to even; integers only."""
    if den < 0:
        num, den = -num, -den
    if num == 0:
        return "0"
    sign, num = ("-" if num < 0 else ""), abs(num)

    def ge_pow10(e):  # num/den >= 10**e ?
        return num * 10 ** max(-e, 0) >= den * 10 ** max(e, 0)

    e = (num.bit_length() - den.bit_length()) * 30103 // 100000  # log10(2) ~ 0.30103, off by <= 1
    while not ge_pow10(e):
        e -= 1
    while ge_pow10(e + 1):
        e += 1
    k = digits - 1 - e  # significand = round(num/den * 10**k)
    n2, d2 = num * 10 ** max(k, 0), den * 10 ** max(-k, 0)
    sig, rem = divmod(n2, d2)
    if 2 * rem > d2 or (2 * rem == d2 and sig % 2 == 1):
        sig += 1
    if sig == 10**digits:  # rounding carried into a new digit
        sig, e = 10 ** (digits - 1), e + 1
    s = str(sig)
    return f"{sign}{s[0]}{'.' + s[1:] if digits > 1 else ''}e{e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("slug", choices=PROBLEMS)
    ap.add_argument("file")
    ap.add_argument("--digits", type=int, default=40)
    args = ap.parse_args()
    if args.digits < 1:
        ap.error("--digits must be >= 1")
    try:
        values = load_values(args.file)
    except OSError as e:
        print(f"cannot read {args.file}: {e}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError) as e:
        print(json.dumps({"valid": False, "error": f"bad input: {e!r}"}))
        return 0
    try:
        if not isinstance(values, list) or not values:
            raise Invalid("values must be a non-empty array")
        a, d = to_integers(values)
        q = SCORERS[args.slug](a, d)
    except (Invalid, ValueError) as e:
        print(json.dumps({"valid": False, "error": str(e)}))
        return 0
    print(json.dumps({"problem": args.slug, "n": len(values), "score_exact": decimal_string(q.numerator, q.denominator, args.digits),
                      "numerator": str(q.numerator), "denominator": str(q.denominator), "valid": True}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
