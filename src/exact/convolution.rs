//! Exact linear convolution of dyadic integer arrays (multi-prime NTT with CRT).
//!
//! # Method
//! Each integer `a_i` is cut into `J` signed digits of `L` bits (`|a_i| = Σ_j d_ij 2^(jL)`, every
//! digit carries the sign of `a_i`). Value `i` of `a` is laid out at positions
//! `i·W .. i·W + J_a` of one long sequence, where `W = J_a + J_b − 1` is the block width (Kronecker
//! substitution with `J_b − 1` zero slots of padding). Convolving the two sequences puts
//! `coef(k, t) = Σ_(i+i'=k) Σ_(j+j'=t) d_ij · e_i'j'` (`d`, `e`: the digits of `a`, `b`) at
//! position `k·W + t`, `t < W`: the blocks never overlap, so `c_k = Σ_t coef(k, t) · 2^(tL)`,
//! which is assembled from 64-bit limbs once per `k`.
//!
//! # Bounds
//! At most `min(n_a, n_b) · min(J_a, J_b)` products add up in one coefficient, each below
//! `2^(min(L, bits_a) + min(L, bits_b))` in magnitude. The sequences are convolved modulo `P`
//! primes above `2^62`; with `M` their product, a coefficient is recovered exactly (as the residue
//! class representative in `(−M/2, M/2)`) whenever
//! `bitlen(terms) + min(L, bits_a) + min(L, bits_b) ≤ 62·P − 1`.
//! `choose_plan` picks the cheapest `(P, L)` satisfying this (typically `J = 1`, `P = 2` or `3`
//! for float data of moderate range) and a transform length within the memory budget; when no
//! plan fits (working set above 512 MiB or a transform above `2^28` points), the longer input
//! is split in halves and the partial results are added.
//!
//! The kernel is single-threaded and deterministic.

use super::dyadic::{DyadicArray, DyadicValue};
use super::ntt::{self, Modulus, PRIMES, PRIME_BITS};
use num_bigint::{BigInt, Sign};

/// Largest transform length (log2) the kernel will allocate in one piece.
const MAX_LOG_LEN: u32 = 28;

/// Memory budget for one transform, in 64-bit words (residues of every prime plus work buffers):
/// `2^26` words = 512 MiB.
const WORK_BUDGET_WORDS: usize = 1 << 26;

/// Exact linear convolution `c_k = Σ_i a_i · b_(k−i)` of the integers behind two dyadic arrays
/// (in units of `2^(a.exponent + b.exponent)`), streamed: `visit(c_k)` for
/// k = 0 … len(a) + len(b) − 2 in order. When one transform suffices (every input the arena
/// accepts) the coefficients are never all held at once, so a score that folds them (a maximum,
/// a sum) holds one coefficient at a time.
pub fn convolve_each(a: &DyadicArray, b: &DyadicArray, visit: impl FnMut(BigInt)) {
    convolve_streamed(
        Operand::of(a),
        Operand::of(b),
        false,
        WORK_BUDGET_WORDS,
        visit,
    )
}

/// The exact autoconvolution `a ∗ a` (one forward transform instead of two), streamed as
/// [`convolve_each`].
pub fn autoconvolve_each(a: &DyadicArray, visit: impl FnMut(BigInt)) {
    let a = Operand::of(a);
    convolve_streamed(a, a, true, WORK_BUDGET_WORDS, visit)
}

/// Streams the convolution within `budget` words: from one plan, or (when the inputs must be
/// split) from the sum of the halves' results.
fn convolve_streamed(
    a: Operand,
    b: Operand,
    square: bool,
    budget: usize,
    mut visit: impl FnMut(BigInt),
) {
    match plan_for(a, b, square, budget) {
        Planned::Empty => {}
        Planned::Zeros(len) => (0..len).for_each(|_| visit(BigInt::default())),
        Planned::Plan(plan) => convolve_planned(&plan, a, b, square, visit),
        Planned::Split => convolve_split(a, b, budget).into_iter().for_each(visit),
    }
}

/// What [`plan_for`] found for a convolution.
enum Planned {
    /// An input is empty: no coefficients.
    Empty,
    /// An input is all zeros: this many zero coefficients.
    Zeros(usize),
    /// One transform suffices.
    Plan(Plan),
    /// The inputs must be split first.
    Split,
}

/// How the convolution of `a` and `b` is carried out within `budget` words.
fn plan_for(a: Operand, b: Operand, square: bool, budget: usize) -> Planned {
    if a.len() == 0 || b.len() == 0 {
        return Planned::Empty;
    }
    let bits_a = a.max_bits();
    let bits_b = if square { bits_a } else { b.max_bits() };
    if bits_a == 0 || bits_b == 0 {
        return Planned::Zeros(a.len() + b.len() - 1);
    }
    let shape = Shape {
        len_a: a.len(),
        bits_a,
        len_b: b.len(),
        bits_b,
        square,
    };
    choose_plan(&shape, budget).map_or(Planned::Split, Planned::Plan)
}

/// A borrowed run of dyadic values with the exponent of the array it came from, so that the
/// integers `mantissa · 2^(exponent − array exponent)` do not change when an array is split.
#[derive(Clone, Copy, Debug)]
struct Operand<'a> {
    values: &'a [DyadicValue],
    exponent: i32,
}

impl<'a> Operand<'a> {
    fn of(array: &'a DyadicArray) -> Operand<'a> {
        Operand {
            values: &array.values,
            exponent: array.exponent,
        }
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    /// How far the mantissa of a non-zero value is shifted in its integer.
    fn shift(&self, v: &DyadicValue) -> u32 {
        debug_assert!(
            v.exponent >= self.exponent,
            "array exponent above a value exponent"
        );
        (v.exponent - self.exponent) as u32
    }

    /// Largest bit length of any `|a_i|` in this run (0 if all are zero).
    fn max_bits(&self) -> u32 {
        self.values
            .iter()
            .filter(|v| !v.is_zero())
            .map(|v| u64::BITS - v.mantissa.unsigned_abs().leading_zeros() + self.shift(v))
            .max()
            .unwrap_or(0)
    }

    fn split_at(&self, mid: usize) -> (Operand<'a>, Operand<'a>) {
        let (lo, hi) = self.values.split_at(mid);
        let part = |values| Operand {
            values,
            exponent: self.exponent,
        };
        (part(lo), part(hi))
    }
}

/// Convolution with an explicit memory budget (in words), collected; `square` means `b` is `a`.
fn convolve_within(a: Operand, b: Operand, square: bool, budget: usize) -> Vec<BigInt> {
    let mut out = Vec::with_capacity((a.len() + b.len()).saturating_sub(1));
    convolve_streamed(a, b, square, budget, |c| out.push(c));
    out
}

/// A convolution too large for one transform: split the longer input, convolve both halves with
/// the other input (each half needs about half the transform) and add the partial results.
fn convolve_split(a: Operand, b: Operand, budget: usize) -> Vec<BigInt> {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    assert!(
        long.len() > 1,
        "no NTT plan for a single product; budget too small"
    );
    let mid = long.len() / 2;
    let (lo, hi) = long.split_at(mid);
    let mut out = convolve_within(lo, short, false, budget);
    out.resize(a.len() + b.len() - 1, BigInt::default());
    for (dst, src) in out[mid..]
        .iter_mut()
        .zip(convolve_within(hi, short, false, budget))
    {
        *dst += src;
    }
    out
}

/// What a convolution needs: lengths and widest integers of both inputs.
#[derive(Clone, Copy, Debug)]
struct Shape {
    len_a: usize,
    bits_a: u32,
    len_b: usize,
    bits_b: u32,
    square: bool,
}

/// How one convolution is carried out (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    /// Digit width `L` in bits.
    digit_bits: u32,
    /// Digits per value of `a` (`J_a`).
    digits_a: usize,
    /// Digits per value of `b` (`J_b`).
    digits_b: usize,
    /// Number of primes `P` (the first `P` of [`PRIMES`]).
    primes: usize,
    /// Transform length `2^log_len ≥ (len_a + len_b − 1) · W`.
    log_len: u32,
}

impl Plan {
    /// Block width `W = J_a + J_b − 1`: output coefficients per `c_k`.
    fn block(&self) -> usize {
        self.digits_a + self.digits_b - 1
    }
}

/// Bit length of a positive integer.
fn bit_len(x: u64) -> u32 {
    u64::BITS - x.leading_zeros()
}

/// The cheapest plan whose coefficients are recovered exactly and whose working set fits in
/// `budget` words; `None` if the inputs must be split first.
fn choose_plan(shape: &Shape, budget: usize) -> Option<Plan> {
    let bits_max = shape.bits_a.max(shape.bits_b);
    let out_blocks = shape.len_a + shape.len_b - 1;
    let mut best: Option<(f64, Plan)> = None;
    for primes in 1..=PRIMES.len() {
        // |coef| < 2^(needed bits) must stay below M/2 ≥ 2^(62·P − 1).
        let available = PRIME_BITS * primes as u32 - 1;
        for digits in 1..=bits_max {
            let digit_bits = bits_max.div_ceil(digits);
            let digits_a = shape.bits_a.div_ceil(digit_bits) as usize;
            let digits_b = shape.bits_b.div_ceil(digit_bits) as usize;
            let terms = shape.len_a.min(shape.len_b) as u64 * digits_a.min(digits_b) as u64;
            let needed =
                bit_len(terms) + digit_bits.min(shape.bits_a) + digit_bits.min(shape.bits_b);
            if needed > available {
                continue; // more, narrower digits
            }
            let plan = Plan {
                digit_bits,
                digits_a,
                digits_b,
                primes,
                log_len: (out_blocks * (digits_a + digits_b - 1))
                    .next_power_of_two()
                    .trailing_zeros(),
            };
            // More digits only lengthen the transform: stop at the first feasible width.
            if plan.log_len <= MAX_LOG_LEN && working_words(&plan, shape.square) <= budget {
                let cost = plan_cost(&plan, out_blocks, shape.square);
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, plan));
                }
            }
            break;
        }
    }
    best.map(|(_, plan)| plan)
}

/// Peak words held by [`convolve_planned`]: the residues of every prime, the twiddle table and
/// (unless squaring) the transform of `b`.
fn working_words(plan: &Plan, square: bool) -> usize {
    let buffers = plan.primes + if square { 1 } else { 2 };
    buffers << plan.log_len
}

/// Rough operation count: butterflies of all transforms plus the CRT work per coefficient.
fn plan_cost(plan: &Plan, out_blocks: usize, square: bool) -> f64 {
    let n = (1u64 << plan.log_len) as f64;
    let transforms = if square { 2.0 } else { 3.0 };
    let p = plan.primes as f64;
    let coefficients = (out_blocks * plan.block()) as f64;
    p * n * (transforms * plan.log_len as f64 / 2.0 + 4.0) + coefficients * p * (p + 4.0)
}

/// Runs one plan: the residues of the digit convolution for every prime, then CRT and assembly,
/// each coefficient handed to `visit` in order.
fn convolve_planned(plan: &Plan, a: Operand, b: Operand, square: bool, visit: impl FnMut(BigInt)) {
    let mut scratch = Scratch::default();
    let residues: Vec<Vec<u64>> = PRIMES[..plan.primes]
        .iter()
        .map(|&p| convolve_mod(plan, a, b, square, &Modulus::new(p), &mut scratch))
        .collect();
    assemble(plan, &residues, a.len() + b.len() - 1, visit)
}

/// The buffers one convolution's transforms share from prime to prime: the twiddle table and
/// the second operand's transform.
#[derive(Default)]
struct Scratch {
    twiddles: Vec<u64>,
    fb: Vec<u64>,
}

/// The digit-sequence convolution modulo one prime, truncated to `out_blocks · W` entries.
fn convolve_mod(
    plan: &Plan,
    a: Operand,
    b: Operand,
    square: bool,
    m: &Modulus,
    scratch: &mut Scratch,
) -> Vec<u64> {
    let n = 1usize << plan.log_len;
    let pow2 = powers_of_two(m, plan.digit_bits);
    let table = &mut scratch.twiddles;
    ntt::twiddles_into(m, plan.log_len, false, table);
    let mut fa = vec![0u64; n];
    load_digits(&mut fa, a, plan, &pow2, m);
    ntt::forward(m, table, &mut fa);
    let scale = ntt::product_scale(m, plan.log_len);
    if square {
        ntt::square_pointwise(m, &mut fa, scale);
    } else {
        let fb = &mut scratch.fb;
        fb.clear();
        fb.resize(n, 0);
        load_digits(fb, b, plan, &pow2, m);
        ntt::forward(m, table, fb);
        ntt::multiply_pointwise(m, &mut fa, fb, scale);
    }
    ntt::twiddles_into(m, plan.log_len, true, table);
    ntt::inverse(m, table, &mut fa);
    fa.truncate((a.len() + b.len() - 1) * plan.block());
    fa
}

/// `2^e · R mod p` (Montgomery form) for `e < digit_bits`.
fn powers_of_two(m: &Modulus, digit_bits: u32) -> Vec<u64> {
    let mut pow = m.montgomery_form(1);
    (0..digit_bits)
        .map(|_| {
            let current = pow;
            pow = m.add(pow, pow);
            current
        })
        .collect()
}

/// Writes the signed digits of every value, reduced mod `p`, at `i·W + j`.
fn load_digits(seq: &mut [u64], x: Operand, plan: &Plan, pow2: &[u64], m: &Modulus) {
    let block = plan.block();
    for (i, v) in x.values.iter().enumerate() {
        if v.is_zero() {
            continue;
        }
        let slots = &mut seq[i * block..];
        let negative = v.mantissa < 0;
        for_each_digit(
            v.mantissa.unsigned_abs(),
            x.shift(v),
            plan.digit_bits,
            |j, d, e| {
                // d < 2^53 < p, and pow2[e] is 2^e in Montgomery form: the product is d·2^e mod p.
                let r = m.mul(d, pow2[e as usize]);
                slots[j] = if negative { m.neg(r) } else { r };
            },
        );
    }
}

/// Calls `f(j, u, e)` for every non-zero `L`-bit digit `j` of `mantissa · 2^shift`, given as
/// `u · 2^e` with `u < 2^53` and `e < L` (`L = digit_bits`).
fn for_each_digit(mantissa: u64, shift: u32, digit_bits: u32, mut f: impl FnMut(usize, u64, u32)) {
    let top = shift + bit_len(mantissa); // one past the highest set bit
    let mut j = shift / digit_bits;
    while j * digit_bits < top {
        let low = j * digit_bits;
        let (u, e) = if shift >= low {
            // The digit holding the lowest bits: mantissa moved up by `shift − low < L`.
            let e = shift - low;
            (low_bits(mantissa, digit_bits - e), e)
        } else {
            // A higher digit: the mantissa bits from `low − shift` (< 53) upwards.
            (low_bits(mantissa >> (low - shift), digit_bits), 0)
        };
        if u != 0 {
            f(j as usize, u, e);
        }
        j += 1;
    }
}

/// `x mod 2^bits` (any `bits`).
fn low_bits(x: u64, bits: u32) -> u64 {
    if bits >= u64::BITS {
        x
    } else {
        x & ((1u64 << bits) - 1)
    }
}

/// Chinese remaindering (Garner) for the first `P` primes, producing signed values in
/// `(−M/2, M/2)` as magnitude limbs and a sign.
struct Crt {
    moduli: Vec<Modulus>,
    /// `inverses[i][j] = p_j^(−1) mod p_i` (Montgomery form), `j < i`.
    inverses: Vec<Vec<u64>>,
    /// `M = Π p_i`, little-endian limbs.
    modulus: Vec<u64>,
    /// `(M − 1) / 2`, little-endian limbs (`M` is odd).
    half: Vec<u64>,
}

impl Crt {
    fn new(primes: usize) -> Crt {
        let moduli: Vec<Modulus> = PRIMES[..primes].iter().map(|&p| Modulus::new(p)).collect();
        let inverses = moduli
            .iter()
            .enumerate()
            .map(|(i, m)| {
                PRIMES[..i]
                    .iter()
                    .map(|&q| m.montgomery_form(m.inv(q % m.p)))
                    .collect()
            })
            .collect();
        let mut modulus = vec![0u64; primes];
        modulus[0] = 1;
        for &p in &PRIMES[..primes] {
            mul_add_limbs(&mut modulus, p, 0);
        }
        let half = (0..primes)
            .map(|i| (modulus[i] >> 1) | modulus.get(i + 1).map_or(0, |&hi| hi << 63))
            .collect();
        Crt {
            moduli,
            inverses,
            modulus,
            half,
        }
    }

    /// The value `x ∈ (−M/2, M/2)` with `x ≡ residues[i] (mod p_i)`: writes `|x|` into `mag`
    /// (`P` limbs) and returns whether `x < 0`.
    fn reconstruct(&self, residues: &[u64], mag: &mut [u64]) -> bool {
        let primes = self.moduli.len();
        // Mixed-radix digits: x = v_0 + p_0 (v_1 + p_1 (v_2 + …)), 0 ≤ v_i < p_i.
        let mut v = [0u64; PRIMES.len()];
        for i in 0..primes {
            let m = &self.moduli[i];
            let mut t = residues[i];
            for (&vj, &inv) in v[..i].iter().zip(&self.inverses[i]) {
                // v_j < 2^63 < 2·p_i: one conditional subtraction reduces it.
                let vj = if vj >= m.p { vj - m.p } else { vj };
                t = m.mul(m.sub(t, vj), inv);
            }
            v[i] = t;
        }
        // Horner from the top digit; x < M < 2^(64·P) fits in P limbs.
        mag.fill(0);
        mag[0] = v[primes - 1];
        for i in (0..primes - 1).rev() {
            mul_add_limbs(mag, PRIMES[i], v[i]);
        }
        if greater(mag, &self.half) {
            // x − M < 0: the magnitude is M − x.
            let mut borrow = false;
            for (x, &mm) in mag.iter_mut().zip(&self.modulus) {
                let (d, b1) = mm.overflowing_sub(*x);
                let (d, b2) = d.overflowing_sub(borrow as u64);
                *x = d;
                borrow = b1 || b2;
            }
            true
        } else {
            false
        }
    }
}

/// `limbs ← limbs · factor + addend` (the result must fit).
fn mul_add_limbs(limbs: &mut [u64], factor: u64, addend: u64) {
    let mut carry = addend as u128;
    for limb in limbs.iter_mut() {
        let t = *limb as u128 * factor as u128 + carry;
        *limb = t as u64;
        carry = t >> 64;
    }
    debug_assert_eq!(carry, 0);
}

/// Whether `x > y` for equally long little-endian limb slices.
fn greater(x: &[u64], y: &[u64]) -> bool {
    for (a, b) in x.iter().rev().zip(y.iter().rev()) {
        if a != b {
            return a > b;
        }
    }
    false
}

/// `acc ← acc ± mag · 2^shift` without carry propagation: `acc` holds one signed 64-bit "limb"
/// per `i128` (each slot receives at most `2·W` terms below `2^64`, far from overflow), and
/// [`accumulator_to_bigint`] propagates the carries once per output.
fn add_shifted(acc: &mut [i128], mag: &[u64], shift: usize, negative: bool) {
    let (offset, bits) = (shift / 64, (shift % 64) as u32);
    debug_assert!(acc.len() > offset + mag.len());
    let mut previous = 0u64;
    for (slot, &x) in acc[offset..].iter_mut().zip(mag.iter().chain([&0])) {
        let limb = if bits == 0 {
            x
        } else {
            (x << bits) | (previous >> (64 - bits))
        };
        previous = x;
        if negative {
            *slot -= limb as i128;
        } else {
            *slot += limb as i128;
        }
    }
}

/// The big integer `Σ acc_i · 2^(64 i)`, which must lie in `(−2^(64·len − 1), 2^(64·len − 1))`;
/// resets `acc` to zero. `limbs` (same length) and `digits` are scratch space.
fn accumulator_to_bigint(acc: &mut [i128], limbs: &mut [u64], digits: &mut Vec<u32>) -> BigInt {
    // Carry propagation into two's complement limbs (the final carry is the sign, 0 or −1,
    // which the top bit repeats because of the headroom).
    let mut carry = 0i128;
    for (slot, limb) in acc.iter_mut().zip(limbs.iter_mut()) {
        let v = *slot + carry;
        *limb = v as u64;
        carry = v >> 64;
        *slot = 0;
    }
    let negative = limbs.last().is_some_and(|&top| top >> 63 == 1);
    if negative {
        let mut carry = true;
        for limb in limbs.iter_mut() {
            let (r, c) = (!*limb).overflowing_add(carry as u64);
            *limb = r;
            carry = c;
        }
    }
    digits.clear();
    for &limb in limbs.iter() {
        digits.push(limb as u32);
        digits.push((limb >> 32) as u32);
    }
    let sign = if negative { Sign::Minus } else { Sign::Plus };
    BigInt::from_slice(sign, digits)
}

/// CRT for every coefficient and `c_k = Σ_t coef(k, t) · 2^(tL)`, handed to `visit` in order.
fn assemble(plan: &Plan, residues: &[Vec<u64>], out_blocks: usize, mut visit: impl FnMut(BigInt)) {
    let crt = Crt::new(plan.primes);
    let block = plan.block();
    let digit_bits = plan.digit_bits as usize;
    // Each |coef| < 2^(64·P) and |c_k| < 2^(64·P + L·(W−1) + 1); one more bit for the sign.
    let width = (64 * plan.primes + digit_bits * (block - 1) + 2).div_ceil(64);
    let mut acc = vec![0i128; width];
    let mut limbs = vec![0u64; width];
    let mut mag = vec![0u64; plan.primes];
    let mut r = [0u64; PRIMES.len()];
    let mut digits = Vec::with_capacity(2 * width);
    for k in 0..out_blocks {
        for t in 0..block {
            let pos = k * block + t;
            for (ri, res) in r.iter_mut().zip(residues) {
                *ri = res[pos];
            }
            if r.iter().all(|&x| x == 0) {
                continue;
            }
            let negative = crt.reconstruct(&r, &mut mag);
            add_shifted(&mut acc, &mag, t * digit_bits, negative);
        }
        visit(accumulator_to_bigint(&mut acc, &mut limbs, &mut digits));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_traits::Zero;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::time::Instant;

    /// The whole convolution, collected from the stream.
    fn convolve(a: &DyadicArray, b: &DyadicArray) -> Vec<BigInt> {
        let mut out = Vec::new();
        convolve_each(a, b, |c| out.push(c));
        out
    }

    /// The whole autoconvolution, collected from the stream.
    fn autoconvolve(a: &DyadicArray) -> Vec<BigInt> {
        let mut out = Vec::new();
        autoconvolve_each(a, |c| out.push(c));
        out
    }

    /// The O(n·m) definition on big integers.
    fn naive(a: &DyadicArray, b: &DyadicArray) -> Vec<BigInt> {
        if a.is_empty() || b.is_empty() {
            return Vec::new();
        }
        let ai: Vec<BigInt> = (0..a.len()).map(|i| a.integer(i)).collect();
        let bi: Vec<BigInt> = (0..b.len()).map(|i| b.integer(i)).collect();
        let mut c = vec![BigInt::zero(); a.len() + b.len() - 1];
        for (i, x) in ai.iter().enumerate() {
            if x.is_zero() {
                continue;
            }
            for (j, y) in bi.iter().enumerate() {
                c[i + j] += x * y;
            }
        }
        c
    }

    /// Kinds of random test data.
    #[derive(Clone, Copy, Debug)]
    enum Kind {
        /// Uniform in [0, 1).
        Unit,
        /// Uniform in (−1, 1) with about a quarter zeros.
        SignedWithZeros,
        /// Any sign, magnitudes from subnormal (5e-324) to 1e300.
        Wide,
        /// Integers up to 2^40 times 2^±20: narrow but not normalised.
        Scaled,
    }

    fn sample(rng: &mut StdRng, kind: Kind) -> f64 {
        match kind {
            Kind::Unit => rng.gen::<f64>(),
            Kind::SignedWithZeros => {
                if rng.gen_bool(0.25) {
                    0.0
                } else {
                    rng.gen_range(-1.0..1.0)
                }
            }
            Kind::Wide => {
                let sign = if rng.gen_bool(0.5) { -1.0 } else { 1.0 };
                match rng.gen_range(0..6) {
                    0 => sign * 5e-324 * rng.gen_range(1..1000) as f64,
                    1 => sign * 1e300,
                    2 => sign * 1e-300,
                    3 => 0.0,
                    _ => sign * 10f64.powf(rng.gen_range(-300.0..300.0)),
                }
            }
            Kind::Scaled => {
                rng.gen_range(-(1i64 << 40)..1 << 40) as f64 * 2f64.powi(rng.gen_range(-20..20))
            }
        }
    }

    fn random_array(rng: &mut StdRng, len: usize, kind: Kind) -> DyadicArray {
        let xs: Vec<f64> = (0..len).map(|_| sample(rng, kind)).collect();
        DyadicArray::from_f64(&xs)
    }

    const KINDS: [Kind; 4] = [Kind::Unit, Kind::SignedWithZeros, Kind::Wide, Kind::Scaled];
    const SIZES: [usize; 9] = [0, 1, 2, 3, 4, 17, 64, 100, 257];

    #[test]
    fn matches_naive_on_equal_kinds_and_sizes() {
        let mut rng = StdRng::seed_from_u64(10);
        for kind in KINDS {
            for &n in &SIZES {
                let a = random_array(&mut rng, n, kind);
                let b = random_array(&mut rng, n, kind);
                assert_eq!(convolve(&a, &b), naive(&a, &b), "{kind:?}, n = {n}");
                assert_eq!(autoconvolve(&a), naive(&a, &a), "{kind:?}, n = {n} (auto)");
            }
        }
    }

    #[test]
    fn matches_naive_on_different_lengths_and_exponents() {
        let mut rng = StdRng::seed_from_u64(11);
        for (ka, kb) in [
            (Kind::Unit, Kind::Wide),
            (Kind::Wide, Kind::SignedWithZeros),
            (Kind::Scaled, Kind::Unit),
            (Kind::Wide, Kind::Wide),
        ] {
            for &na in &SIZES {
                for &nb in &[0usize, 1, 5, 33, 120] {
                    let a = random_array(&mut rng, na, ka);
                    let b = random_array(&mut rng, nb, kb);
                    let expected = naive(&a, &b);
                    assert_eq!(convolve(&a, &b), expected, "{ka:?}×{kb:?}, {na}×{nb}");
                    assert_eq!(convolve(&b, &a), expected, "{kb:?}×{ka:?}, {nb}×{na}");
                }
            }
        }
    }

    #[test]
    fn extreme_values() {
        let cases: Vec<Vec<f64>> = vec![
            vec![5e-324],
            vec![f64::MAX],
            vec![f64::MAX, -5e-324, f64::MIN_POSITIVE, -f64::MAX],
            vec![0.0, 0.0, 0.0],
            vec![-0.0, 1.0],
            vec![1e300, 1e-300, -1e300, 5e-324, 0.0, 1.0],
            vec![-1.0; 50],
            vec![f64::MAX; 40],
        ];
        for xs in &cases {
            for ys in &cases {
                let a = DyadicArray::from_f64(xs);
                let b = DyadicArray::from_f64(ys);
                assert_eq!(convolve(&a, &b), naive(&a, &b), "{xs:?} * {ys:?}");
            }
            let a = DyadicArray::from_f64(xs);
            assert_eq!(autoconvolve(&a), naive(&a, &a), "{xs:?} auto");
        }
    }

    #[test]
    fn splitting_under_a_small_budget_matches_naive() {
        let mut rng = StdRng::seed_from_u64(12);
        for (kind, n, m) in [
            (Kind::Unit, 300, 300),
            (Kind::Wide, 90, 40),
            (Kind::SignedWithZeros, 7, 500),
        ] {
            let a = random_array(&mut rng, n, kind);
            let b = random_array(&mut rng, m, kind);
            for budget in [1 << 10, 1 << 12, 1 << 14] {
                let got = convolve_within(Operand::of(&a), Operand::of(&b), false, budget);
                assert_eq!(got, naive(&a, &b), "{kind:?} {n}×{m}, budget {budget}");
                let auto = convolve_within(Operand::of(&a), Operand::of(&a), true, budget);
                assert_eq!(auto, naive(&a, &a), "{kind:?} {n} auto, budget {budget}");
            }
        }
    }

    /// Constant arrays have closed-form convolutions, which lets us test at the edge of the
    /// CRT bound with lengths far beyond the naive algorithm.
    #[test]
    fn constant_arrays_at_the_bound() {
        let widest = (1i64 << 53) - 1; // every digit of every product as large as possible
        for (n, sign_b) in [(131_071usize, 1i64), (131_072, -1), (3000, -1)] {
            let a = DyadicArray::from_f64(&vec![widest as f64; n]);
            let b = DyadicArray::from_f64(&vec![(sign_b * widest) as f64; n / 3 + 1]);
            let shape = Shape {
                len_a: a.len(),
                bits_a: 53,
                len_b: a.len(),
                bits_b: 53,
                square: true,
            };
            let plan = choose_plan(&shape, WORK_BUDGET_WORDS).unwrap();
            // 131071 terms · 2^106 needs 123 bits: two primes suffice exactly; one more term does not.
            let expected_primes = if n == 131_071 || n == 3000 { 2 } else { 3 };
            assert_eq!(plan.primes, expected_primes, "n = {n}");
            let v2 = BigInt::from(widest) * BigInt::from(widest);
            let auto = autoconvolve(&a);
            for (k, c) in auto.iter().enumerate() {
                let count = (k + 1).min(2 * n - 1 - k);
                assert_eq!(*c, BigInt::from(count) * &v2, "auto n = {n}, k = {k}");
            }
            let prod = convolve(&a, &b);
            let (na, nb) = (a.len(), b.len());
            for (k, c) in prod.iter().enumerate() {
                let count = (k + 1).min(nb).min(na + nb - 1 - k);
                assert_eq!(
                    *c,
                    BigInt::from(sign_b * count as i64) * &v2,
                    "n = {n}, k = {k}"
                );
            }
        }
    }

    #[test]
    fn alternating_signs_in_closed_form() {
        let n = 5000usize;
        let x = 0.123456789f64;
        let xs: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { x } else { -x }).collect();
        let a = DyadicArray::from_f64(&xs);
        let v2 = a.integer(0) * a.integer(0);
        for (k, c) in autoconvolve(&a).iter().enumerate() {
            let count = (k + 1).min(2 * n - 1 - k) as i64;
            let sign = if k % 2 == 0 { 1 } else { -1 };
            assert_eq!(*c, BigInt::from(sign * count) * &v2, "k = {k}");
        }
    }

    #[test]
    fn plans_respect_the_crt_bound_and_budget() {
        let mut rng = StdRng::seed_from_u64(13);
        for _ in 0..2000 {
            let shape = Shape {
                len_a: rng.gen_range(1..5_000_000),
                bits_a: rng.gen_range(1..2200),
                len_b: rng.gen_range(1..5_000_000),
                bits_b: rng.gen_range(1..2200),
                square: rng.gen_bool(0.3),
            };
            let Some(plan) = choose_plan(&shape, WORK_BUDGET_WORDS) else {
                continue;
            };
            let digits_a = shape.bits_a.div_ceil(plan.digit_bits) as usize;
            let digits_b = shape.bits_b.div_ceil(plan.digit_bits) as usize;
            assert_eq!((plan.digits_a, plan.digits_b), (digits_a, digits_b));
            let terms = shape.len_a.min(shape.len_b) * digits_a.min(digits_b);
            let bound = (terms as f64).log2()
                + plan.digit_bits.min(shape.bits_a) as f64
                + plan.digit_bits.min(shape.bits_b) as f64;
            let log_m: f64 = PRIMES[..plan.primes]
                .iter()
                .map(|&p| (p as f64).log2())
                .sum();
            assert!(bound < log_m - 1.0, "{shape:?} -> {plan:?}");
            let out = (shape.len_a + shape.len_b - 1) * plan.block();
            assert!(out <= 1 << plan.log_len);
            assert!(working_words(&plan, shape.square) <= WORK_BUDGET_WORDS);
        }
        // Typical float data: one digit per value.
        let typical = Shape {
            len_a: 2_000_000,
            bits_a: 80,
            len_b: 2_000_000,
            bits_b: 80,
            square: true,
        };
        let plan = choose_plan(&typical, WORK_BUDGET_WORDS).unwrap();
        assert_eq!((plan.digits_a, plan.primes, plan.log_len), (1, 3, 22));
    }

    #[test]
    fn wide_inputs_use_several_and_unequal_digit_counts() {
        let wide = Shape {
            len_a: 257,
            bits_a: 2098,
            len_b: 257,
            bits_b: 2098,
            square: false,
        };
        let plan = choose_plan(&wide, WORK_BUDGET_WORDS).unwrap();
        assert!(
            plan.digits_a > 1 && plan.digits_a == plan.digits_b,
            "{plan:?}"
        );
        let mixed = Shape { bits_b: 53, ..wide };
        let plan = choose_plan(&mixed, WORK_BUDGET_WORDS).unwrap();
        assert!(plan.digits_a > plan.digits_b, "{plan:?}");
    }

    /// Large inputs: a few coefficients against their defining sums, and the split fallback
    /// against the single transform.
    #[test]
    fn large_inputs_spot_checked_and_split_consistently() {
        let mut rng = StdRng::seed_from_u64(17);
        let a = DyadicArray::from_f64(&full_precision_unit(&mut rng, 60_000));
        let b = random_array(&mut rng, 25_000, Kind::SignedWithZeros);
        let ai: Vec<BigInt> = (0..a.len()).map(|i| a.integer(i)).collect();
        let bi: Vec<BigInt> = (0..b.len()).map(|i| b.integer(i)).collect();
        let coefficient = |x: &[BigInt], y: &[BigInt], k: usize| -> BigInt {
            let low = (k + 1).saturating_sub(y.len());
            (low..=k.min(x.len() - 1)).map(|i| &x[i] * &y[k - i]).sum()
        };
        let auto = autoconvolve(&a);
        let prod = convolve(&a, &b);
        assert_eq!(auto.len(), 2 * a.len() - 1);
        assert_eq!(prod.len(), a.len() + b.len() - 1);
        for k in
            (0..40)
                .map(|_| rng.gen_range(0..prod.len()))
                .chain([0, a.len() - 1, prod.len() - 1])
        {
            assert_eq!(prod[k], coefficient(&ai, &bi, k), "a*b at {k}");
            let k2 = k * 2 % auto.len();
            assert_eq!(auto[k2], coefficient(&ai, &ai, k2), "a*a at {k2}");
        }
        let small_budget = 1 << 18;
        let split = convolve_within(Operand::of(&a), Operand::of(&b), false, small_budget);
        assert_eq!(split, prod);
        let split = convolve_within(Operand::of(&a), Operand::of(&a), true, small_budget);
        assert_eq!(split, auto);
    }

    #[test]
    fn digits_reassemble_the_integer() {
        let mut rng = StdRng::seed_from_u64(14);
        for _ in 0..3000 {
            let mantissa = rng.gen_range(1u64..1 << 53) | 1;
            let shift = rng.gen_range(0..2100);
            let digit_bits = rng.gen_range(1..300);
            let mut sum = BigInt::zero();
            for_each_digit(mantissa, shift, digit_bits, |j, u, e| {
                assert!(u < 1 << 53 && e < digit_bits && u != 0);
                assert!(bit_len(u) + e <= digit_bits, "digit too wide");
                sum += BigInt::from(u) << (e as usize + j * digit_bits as usize);
            });
            assert_eq!(sum, BigInt::from(mantissa) << shift);
        }
    }

    #[test]
    fn crt_recovers_signed_values() {
        let mut rng = StdRng::seed_from_u64(15);
        for primes in 1..=PRIMES.len() {
            let crt = Crt::new(primes);
            let modulus = PRIMES[..primes]
                .iter()
                .fold(BigInt::from(1), |acc, &p| acc * p);
            let half: BigInt = (&modulus - 1u32) / 2u32;
            let mut samples = vec![BigInt::zero(), BigInt::from(1), BigInt::from(-1)];
            samples.push(half.clone());
            samples.push(-half.clone());
            for _ in 0..200 {
                let bits = rng.gen_range(1..=62 * primes as u64);
                let x = (0..bits.div_ceil(32)).fold(BigInt::zero(), |acc, _| {
                    (acc << 32) + BigInt::from(rng.gen::<u32>())
                }) % &half;
                samples.push(if rng.gen_bool(0.5) { -x } else { x });
            }
            let mut mag = vec![0u64; primes];
            for x in samples {
                let residues: Vec<u64> = PRIMES[..primes]
                    .iter()
                    .map(|&p| {
                        let r = ((&x % p) + p) % p;
                        u64::try_from(r).unwrap()
                    })
                    .collect();
                let negative = crt.reconstruct(&residues, &mut mag);
                let digits: Vec<u32> = mag
                    .iter()
                    .flat_map(|&l| [l as u32, (l >> 32) as u32])
                    .collect();
                let sign = if negative { Sign::Minus } else { Sign::Plus };
                assert_eq!(BigInt::from_slice(sign, &digits), x, "P = {primes}");
            }
        }
    }

    /// Random doubles in [0, 1) at full precision: a uniform 52-bit fraction times a
    /// geometrically distributed power of two, so small values keep 53 significant bits and the
    /// scaled integers reach ~53 + log2(n) bits (the "53–80 bits" of real constructions).
    fn full_precision_unit(rng: &mut StdRng, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let exponent = 1022 - rng.gen::<u64>().trailing_zeros().min(60) as u64;
                f64::from_bits((exponent << 52) | (rng.gen::<u64>() >> 12))
            })
            .collect()
    }

    fn time_autoconvolution(n: usize, with_wide: bool) {
        let mut rng = StdRng::seed_from_u64(16);
        let mut data = vec![
            (
                "rng.gen::<f64>()",
                (0..n).map(|_| rng.gen::<f64>()).collect(),
            ),
            ("full precision", full_precision_unit(&mut rng, n)),
        ];
        if with_wide {
            let wide = (0..n).map(|_| sample(&mut rng, Kind::Wide)).collect();
            data.push(("mixed 5e-324 .. 1e300", wide));
        }
        for (label, xs) in data {
            let a = DyadicArray::from_f64(&xs);
            let start = Instant::now();
            let c = autoconvolve(&a);
            let elapsed = start.elapsed();
            let bits = a.max_bits();
            let shape = Shape {
                len_a: n,
                bits_a: bits,
                len_b: n,
                bits_b: bits,
                square: true,
            };
            let plan = choose_plan(&shape, WORK_BUDGET_WORDS);
            println!(
                "autoconvolve n = {n} ({label}, {bits} bits): {elapsed:?}, plan {plan:?}, \
                 c[n-1] has {} bits",
                c[n - 1].bits()
            );
        }
    }

    #[test]
    #[ignore = "timing, run with --release --ignored --nocapture"]
    fn timing_autoconvolve_100k() {
        time_autoconvolution(100_000, true);
    }

    #[test]
    #[ignore = "timing, run with --release --ignored --nocapture"]
    fn timing_autoconvolve_2m() {
        time_autoconvolution(2_000_000, false);
    }
}
