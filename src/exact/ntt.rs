//! Number-theoretic transforms modulo word-sized primes.
//!
//! Every prime is `c · 2^k + 1` with `2^62 < p < 2^63` and `k ≥ 53`, so
//! - sums of two residues never overflow a `u64` (lazy butterflies stay below `2p < 2^64`);
//! - each prime contributes at least 62 bits to a CRT modulus;
//! - power-of-two transforms up to length `2^53` exist (memory is the real limit).
//!
//! Arithmetic is Montgomery with `R = 2^64`. Data stay in the ordinary representation; twiddles
//! are stored in Montgomery form, so `mul(x, twiddle)` is the plain product `x · w mod p`.

/// NTT-friendly primes `c · 2^k + 1` below `2^63` (checked by Miller–Rabin in the tests).
pub(super) const PRIMES: [u64; 12] = [
    6269010681299730433, // 87 · 2^56 + 1
    4719772409484279809, // 131 · 2^55 + 1
    7097673012735901697, // 197 · 2^55 + 1
    5998794703657500673, // 333 · 2^54 + 1
    7728176960567771137, // 429 · 2^54 + 1
    7908320945662590977, // 439 · 2^54 + 1
    8592868089022906369, // 477 · 2^54 + 1
    9097271247288401921, // 505 · 2^54 + 1
    4782822804267466753, // 531 · 2^53 + 1
    4854880398305394689, // 539 · 2^53 + 1
    5071053180419178497, // 563 · 2^53 + 1
    5179139571476070401, // 575 · 2^53 + 1
];

/// Guaranteed bits per prime: every prime in [`PRIMES`] exceeds `2^PRIME_BITS`.
pub(super) const PRIME_BITS: u32 = 62;

/// Arithmetic modulo one odd prime `p < 2^63` (Montgomery form with `R = 2^64`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Modulus {
    /// The prime.
    pub(super) p: u64,
    /// `p^(-1) mod 2^64`.
    p_inv: u64,
    /// `R^2 mod p`, to enter Montgomery form.
    r2: u64,
}

impl Modulus {
    /// Precomputes the Montgomery constants of an odd `p < 2^63`.
    pub(super) fn new(p: u64) -> Modulus {
        assert!(
            p % 2 == 1 && p < 1 << 63,
            "modulus must be odd and below 2^63"
        );
        // Newton iteration: each step doubles the number of correct low bits (3 → 96).
        let mut p_inv = p;
        for _ in 0..5 {
            p_inv = p_inv.wrapping_mul(2u64.wrapping_sub(p.wrapping_mul(p_inv)));
        }
        let r = ((1u128 << 64) % p as u128) as u64;
        let r2 = ((r as u128 * r as u128) % p as u128) as u64;
        Modulus { p, p_inv, r2 }
    }

    /// Montgomery product `a · b · 2^(-64) mod p`, fully reduced.
    ///
    /// Valid whenever `a · b < p · 2^64`, e.g. `b < p` and any `a` (lazy inputs `< 2p` are fine).
    #[inline(always)]
    pub(super) fn mul(&self, a: u64, b: u64) -> u64 {
        let t = a as u128 * b as u128;
        let m = (t as u64).wrapping_mul(self.p_inv);
        // t − m·p is divisible by 2^64 and the low halves cancel exactly, so the quotient is
        // hi(t) − hi(m·p), which lies in (−p, p).
        let mp_hi = ((m as u128 * self.p as u128) >> 64) as u64;
        self.wrap_negative(((t >> 64) as u64).wrapping_sub(mp_hi))
    }

    /// Maps `d ∈ (−p, p)`, given as a wrapped `u64`, to `[0, p)` without branches: since
    /// `p < 2^63`, the top bit of `d` is set exactly when `d` is negative. (Data-dependent
    /// branches here mispredict half the time and cost several times the arithmetic.)
    #[inline(always)]
    fn wrap_negative(&self, d: u64) -> u64 {
        let negative_mask = ((d as i64) >> 63) as u64;
        d.wrapping_add(self.p & negative_mask)
    }

    /// `a + b mod p` for reduced inputs.
    #[inline(always)]
    pub(super) fn add(&self, a: u64, b: u64) -> u64 {
        // a + b < 2p < 2^64, so a + b − p ∈ [−p, p).
        self.wrap_negative((a + b).wrapping_sub(self.p))
    }

    /// `a − b mod p` for reduced inputs.
    #[inline(always)]
    pub(super) fn sub(&self, a: u64, b: u64) -> u64 {
        self.wrap_negative(a.wrapping_sub(b))
    }

    /// `−a mod p` for a reduced input.
    #[inline(always)]
    pub(super) fn neg(&self, a: u64) -> u64 {
        if a == 0 {
            0
        } else {
            self.p - a
        }
    }

    /// Montgomery form `x · R mod p` of a reduced `x`.
    pub(super) fn montgomery_form(&self, x: u64) -> u64 {
        self.mul(x, self.r2)
    }

    /// Ordinary product `a · b mod p` of reduced inputs (two Montgomery steps).
    #[cfg(test)]
    pub(super) fn mul_plain(&self, a: u64, b: u64) -> u64 {
        self.mul(self.mul(a, b), self.r2)
    }

    /// `base^exp mod p` for a reduced `base`.
    pub(super) fn pow(&self, base: u64, mut exp: u64) -> u64 {
        let mut result = self.montgomery_form(1);
        let mut b = self.montgomery_form(base);
        while exp > 0 {
            if exp & 1 == 1 {
                result = self.mul(result, b);
            }
            b = self.mul(b, b);
            exp >>= 1;
        }
        self.mul(result, 1)
    }

    /// Multiplicative inverse of a non-zero reduced `x` (Fermat).
    pub(super) fn inv(&self, x: u64) -> u64 {
        self.pow(x, self.p - 2)
    }

    /// A primitive `2^log_len`-th root of unity (ordinary representation).
    pub(super) fn root_of_unity(&self, log_len: u32) -> u64 {
        let two_adicity = (self.p - 1).trailing_zeros();
        assert!(log_len <= two_adicity, "transform too long for this prime");
        let odd = (self.p - 1) >> two_adicity;
        // z^odd has order exactly 2^two_adicity iff z is a quadratic non-residue (Euler).
        let z = (2..)
            .find(|&z| self.pow(z, (self.p - 1) / 2) == self.p - 1)
            .expect("a non-residue exists");
        let root = self.pow(z, odd);
        self.pow(root, 1 << (two_adicity - log_len))
    }
}

/// Twiddle table for transforms of one length: entry `h + j` is `ω_(2h)^j` (Montgomery form) for
/// every stage half-width `h` and `j < h`, where `ω_(2h)` is a primitive `2h`-th root of unity
/// (or its inverse, for the inverse transform). Total size: the transform length. Written into
/// `table` (resized), so that one buffer serves every table of a convolution: each buffer a
/// transform touches for the first time costs the page faults of its fresh memory.
pub(super) fn twiddles_into(m: &Modulus, log_len: u32, inverse: bool, table: &mut Vec<u64>) {
    let n = 1usize << log_len;
    table.clear();
    table.resize(n.max(2), 0);
    if n < 2 {
        return;
    }
    let mut root = m.root_of_unity(log_len);
    if inverse {
        root = m.inv(root);
    }
    let half = n / 2;
    // Powers of the root: the first `STRIDE` one after another, then each as the entry `STRIDE`
    // places earlier times root^STRIDE, so consecutive products are independent (pipelined).
    const STRIDE: usize = 32;
    let root_mont = m.montgomery_form(root);
    table[half] = m.montgomery_form(1);
    for j in 1..half.min(STRIDE) {
        table[half + j] = m.mul(table[half + j - 1], root_mont);
    }
    if half > STRIDE {
        let step = m.montgomery_form(m.pow(root, STRIDE as u64));
        for j in half + STRIDE..n {
            table[j] = m.mul(table[j - STRIDE], step);
        }
    }
    // ω_(2h)^j = ω_(4h)^(2j): each smaller stage takes every other entry of the next one.
    let mut h = half / 2;
    while h >= 1 {
        for j in 0..h {
            table[h + j] = table[2 * h + 2 * j];
        }
        h /= 2;
    }
}

/// Transforms at most this long run stage by stage; longer ones first split recursively, so
/// that all stages of a sub-transform run while it sits in the L2 cache (2^12 words = 32 KiB, the L1 data cache of typical cores).
const CACHE_BLOCK: usize = 1 << 12;

/// In-place forward transform (decimation in frequency): natural order in, bit-reversed out.
/// `table` must come from [`twiddles`] with `inverse = false` and the same length.
pub(super) fn forward(m: &Modulus, table: &[u64], data: &mut [u64]) {
    debug_assert!(data.len().is_power_of_two() && table.len() >= data.len());
    if data.len() > CACHE_BLOCK {
        // The top stage couples the halves; after it each half is an independent transform
        // (DIF twiddles depend only on the position inside a block, not on the block).
        let h = data.len() / 2;
        forward_stage(m, &table[h..2 * h], data);
        let (lo, hi) = data.split_at_mut(h);
        forward(m, table, lo);
        forward(m, table, hi);
        return;
    }
    let mut h = data.len() / 2;
    while h >= 1 {
        forward_stage(m, &table[h..2 * h], data);
        h /= 2;
    }
}

/// One DIF stage with half-width `h = tw.len()` on every block of `2h`:
/// `(x, y) ← (x + y, (x − y) · ω^j)`.
#[inline]
fn forward_stage(m: &Modulus, tw: &[u64], data: &mut [u64]) {
    let p = m.p;
    for block in data.chunks_exact_mut(2 * tw.len()) {
        let (x, y) = block.split_at_mut(tw.len());
        for ((a, b), &w) in x.iter_mut().zip(y.iter_mut()).zip(tw) {
            let (u, v) = (*a, *b);
            *a = m.add(u, v);
            // u + p − v < 2p: a lazy input the Montgomery product accepts.
            *b = m.mul(u + p - v, w);
        }
    }
}

/// In-place inverse transform (decimation in time): bit-reversed in, natural order out,
/// *unscaled* (the result is `n` times the inverse DFT). `table` must come from [`twiddles`] with
/// `inverse = true` and the same length.
pub(super) fn inverse(m: &Modulus, table: &[u64], data: &mut [u64]) {
    debug_assert!(data.len().is_power_of_two() && table.len() >= data.len());
    if data.len() > CACHE_BLOCK {
        // Mirror image of `forward`: both halves first, then the stage that joins them.
        let h = data.len() / 2;
        let (lo, hi) = data.split_at_mut(h);
        inverse(m, table, lo);
        inverse(m, table, hi);
        inverse_stage(m, &table[h..2 * h], data);
        return;
    }
    let mut h = 1;
    while h < data.len() {
        inverse_stage(m, &table[h..2 * h], data);
        h *= 2;
    }
}

/// One DIT stage with half-width `h = tw.len()` on every block of `2h`:
/// `(x, y) ← (x + y · ω^j, x − y · ω^j)`.
#[inline]
fn inverse_stage(m: &Modulus, tw: &[u64], data: &mut [u64]) {
    for block in data.chunks_exact_mut(2 * tw.len()) {
        let (x, y) = block.split_at_mut(tw.len());
        for ((a, b), &w) in x.iter_mut().zip(y.iter_mut()).zip(tw) {
            let t = m.mul(*b, w);
            let u = *a;
            *a = m.add(u, t);
            *b = m.sub(u, t);
        }
    }
}

/// The Montgomery factor that turns `mul(mul(x, y), s)` into `x · y / n mod p`:
/// `s = R^2 / n` (two Montgomery reductions remove `R^2`; the `1/n` undoes the unscaled inverse).
pub(super) fn product_scale(m: &Modulus, log_len: u32) -> u64 {
    let n_inv = m.inv(((1u128 << log_len) % m.p as u128) as u64);
    m.montgomery_form(m.montgomery_form(n_inv))
}

/// Pointwise `a_i ← a_i · b_i / n` (see [`product_scale`]).
pub(super) fn multiply_pointwise(m: &Modulus, a: &mut [u64], b: &[u64], scale: u64) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = m.mul(m.mul(*x, y), scale);
    }
}

/// Pointwise `a_i ← a_i² / n` (see [`product_scale`]).
pub(super) fn square_pointwise(m: &Modulus, a: &mut [u64], scale: u64) {
    for x in a.iter_mut() {
        *x = m.mul(m.mul(*x, *x), scale);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A fresh twiddle table.
    fn twiddles(m: &Modulus, log_len: u32, inverse: bool) -> Vec<u64> {
        let mut table = Vec::new();
        twiddles_into(m, log_len, inverse, &mut table);
        table
    }

    fn mul_mod(a: u64, b: u64, p: u64) -> u64 {
        ((a as u128 * b as u128) % p as u128) as u64
    }

    fn pow_mod(mut b: u64, mut e: u64, p: u64) -> u64 {
        let mut r = 1u64;
        b %= p;
        while e > 0 {
            if e & 1 == 1 {
                r = mul_mod(r, b, p);
            }
            b = mul_mod(b, b, p);
            e >>= 1;
        }
        r
    }

    /// Deterministic Miller–Rabin for all 64-bit integers (bases: the first 12 primes).
    fn is_prime(n: u64) -> bool {
        const BASES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
        if n < 2 {
            return false;
        }
        for &q in &BASES {
            if n.is_multiple_of(q) {
                return n == q;
            }
        }
        let s = (n - 1).trailing_zeros();
        let d = (n - 1) >> s;
        'bases: for &a in &BASES {
            let mut x = pow_mod(a, d, n);
            if x == 1 || x == n - 1 {
                continue;
            }
            for _ in 1..s {
                x = mul_mod(x, x, n);
                if x == n - 1 {
                    continue 'bases;
                }
            }
            return false;
        }
        true
    }

    #[test]
    fn miller_rabin_knows_small_numbers() {
        let sieve: Vec<u64> = (0..2000u64)
            .filter(|&n| n >= 2 && (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0))
            .collect();
        let mr: Vec<u64> = (0..2000u64).filter(|&n| is_prime(n)).collect();
        assert_eq!(sieve, mr);
        assert!(is_prime(0xFFFF_FFFF_0000_0001));
        assert!(!is_prime(3_215_031_751)); // strong pseudoprime to bases 2, 3, 5, 7
        assert!(!is_prime(4_294_967_291 * 4_294_967_279)); // product of two primes
    }

    #[test]
    fn primes_are_prime_distinct_and_ntt_friendly() {
        for (i, &p) in PRIMES.iter().enumerate() {
            assert!(is_prime(p), "{p} is not prime");
            assert!(p > 1 << PRIME_BITS && p < 1 << 63, "{p} out of range");
            assert!((p - 1).trailing_zeros() >= 53, "{p}: 2-adicity too small");
            assert!(!PRIMES[..i].contains(&p), "{p} repeated");
        }
    }

    #[test]
    fn montgomery_matches_u128_arithmetic() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for &p in &PRIMES {
            let m = Modulus::new(p);
            assert_eq!(p.wrapping_mul(m.p_inv), 1);
            for _ in 0..1000 {
                let a = rng.gen_range(0..p);
                let b = rng.gen_range(0..p);
                assert_eq!(m.mul_plain(a, b), mul_mod(a, b, p));
                assert_eq!(m.add(a, b), ((a as u128 + b as u128) % p as u128) as u64);
                assert_eq!(
                    m.sub(a, b),
                    ((a as u128 + p as u128 - b as u128) % p as u128) as u64
                );
                assert_eq!(m.add(a, m.neg(a)), 0);
                // Lazy first operand below 2p.
                let lazy = a + p;
                assert_eq!(m.mul(lazy, m.montgomery_form(b)), mul_mod(a, b, p));
            }
            assert_eq!(m.mul_plain(m.inv(12345), 12345), 1);
            assert_eq!(m.pow(3, p - 1), 1);
        }
    }

    #[test]
    fn roots_have_exact_order() {
        for &p in &PRIMES {
            let m = Modulus::new(p);
            for log_len in [1u32, 2, 10, 28, 53] {
                let w = m.root_of_unity(log_len);
                assert_eq!(m.pow(w, 1 << log_len), 1, "p = {p}, log = {log_len}");
                assert_eq!(
                    m.pow(w, 1 << (log_len - 1)),
                    p - 1,
                    "p = {p}, log = {log_len}"
                );
            }
        }
    }

    #[test]
    fn forward_is_a_dft_in_bit_reversed_order() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let m = Modulus::new(PRIMES[3]);
        for log_len in 0..7u32 {
            let n = 1usize << log_len;
            let x: Vec<u64> = (0..n).map(|_| rng.gen_range(0..m.p)).collect();
            let mut y = x.clone();
            forward(&m, &twiddles(&m, log_len, false), &mut y);
            let w = if n > 1 { m.root_of_unity(log_len) } else { 1 };
            for (k, &yk) in y.iter().enumerate() {
                let freq = if log_len == 0 {
                    0
                } else {
                    k.reverse_bits() >> (usize::BITS - log_len)
                };
                let expected = x.iter().enumerate().fold(0, |acc, (i, &xi)| {
                    m.add(acc, mul_mod(xi, pow_mod(w, (i * freq) as u64, m.p), m.p))
                });
                assert_eq!(yk, expected, "n = {n}, k = {k}");
            }
        }
    }

    #[test]
    fn round_trip_and_cyclic_convolution() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for &p in &PRIMES[..4] {
            let m = Modulus::new(p);
            for log_len in [0u32, 1, 2, 3, 5, 9, 12] {
                let n = 1usize << log_len;
                let fwd = twiddles(&m, log_len, false);
                let inv = twiddles(&m, log_len, true);
                let scale = product_scale(&m, log_len);
                let x: Vec<u64> = (0..n).map(|_| rng.gen_range(0..p)).collect();
                let y: Vec<u64> = (0..n).map(|_| rng.gen_range(0..p)).collect();

                // Round trip: multiplying by the transform of δ_0 (all ones) is the identity.
                let mut ones = vec![0u64; n];
                ones[0] = 1;
                forward(&m, &fwd, &mut ones);
                let mut t = x.clone();
                forward(&m, &fwd, &mut t);
                multiply_pointwise(&m, &mut t, &ones, scale);
                inverse(&m, &inv, &mut t);
                assert_eq!(t, x, "round trip, p = {p}, n = {n}");

                // Cyclic convolution and squaring against the O(n²) definition.
                let naive = |u: &[u64], v: &[u64]| -> Vec<u64> {
                    let mut c = vec![0u64; n];
                    for i in 0..n {
                        for j in 0..n {
                            c[(i + j) % n] = m.add(c[(i + j) % n], mul_mod(u[i], v[j], p));
                        }
                    }
                    c
                };
                let (mut tx, mut ty) = (x.clone(), y.clone());
                forward(&m, &fwd, &mut tx);
                forward(&m, &fwd, &mut ty);
                let mut sq = tx.clone();
                multiply_pointwise(&m, &mut tx, &ty, scale);
                inverse(&m, &inv, &mut tx);
                assert_eq!(tx, naive(&x, &y), "product, p = {p}, n = {n}");
                square_pointwise(&m, &mut sq, scale);
                inverse(&m, &inv, &mut sq);
                assert_eq!(sq, naive(&x, &x), "square, p = {p}, n = {n}");
            }
        }
    }
}
