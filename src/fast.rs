//! Float64 convolution through a real FFT, with an a-priori bound on its rounding error.
//!
//! The bound follows the standard error analysis of FFT-based convolution (Brisebarre, Joldeş,
//! Muller, Naneş, Picot, "Error analysis of some operations involved in the Cooley–Tukey FFT",
//! 2020; Higham, *Accuracy and Stability*, §24.1): for `c = a ∗ b` computed as
//! `IFFT(FFT(a)·FFT(b))` with radix-2 stages and accurately rounded twiddles,
//! `‖ĉ − c‖_∞ ≤ ‖a‖₂‖b‖₂ · u · (3 + 3·L·(√5 + t))` up to second-order terms, with `L = log₂ N`
//! stages, `u = 2⁻⁵³` and `t` the twiddle error in units of `u`. We take `t = 2`, add two stages
//! for the real-to-complex packing and its post-processing, and double the whole bound to absorb
//! the second-order terms and the radix-3 and radix-5 passes of the 2^a·3^b·5^c lengths used
//! here. The tests check the bound against the exact
//! convolution on thousands of random inputs and on every arena construction.

use realfft::RealFftPlanner;

/// Unit roundoff of float64.
pub const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// `γ_k = k·u / (1 − k·u)`: the relative error bound of `k` chained float64 operations.
pub fn gamma(k: usize) -> f64 {
    let ku = k as f64 * UNIT_ROUNDOFF;
    ku / (1.0 - ku)
}

/// A float64 convolution and the bound on each coefficient's absolute rounding error.
#[derive(Clone, Debug)]
pub struct FloatConvolution {
    /// The coefficients, length `len(a) + len(b) − 1`.
    pub values: Vec<f64>,
    /// Bound on `|ĉ_k − c_k|` for every `k`.
    pub error_bound: f64,
}

/// A forward and an inverse real-FFT plan of one length.
pub type RealFftPlans = (
    std::sync::Arc<dyn realfft::RealToComplex<f64>>,
    std::sync::Arc<dyn realfft::ComplexToReal<f64>>,
);

thread_local! {
    /// This thread's plans by length (planning computes twiddle tables: a short run that
    /// builds many workspaces of one length would otherwise spend most of its time there).
    static PLANS: std::cell::RefCell<std::collections::HashMap<usize, RealFftPlans>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The forward and inverse real-FFT plans of length `len`, cached on this thread.
///
/// Each length is planned by a fresh planner, because rustfft's planner builds a length's
/// plan on top of the sub-FFTs it has already cached: one planner shared across lengths would
/// give a length a different factorisation (and results different in the last bits) depending
/// on which lengths the thread planned before, so a resumed run would drift from an
/// uninterrupted one.
pub fn real_fft_plans(len: usize) -> RealFftPlans {
    PLANS.with(|plans| {
        plans
            .borrow_mut()
            .entry(len)
            .or_insert_with(|| {
                let mut planner = RealFftPlanner::new();
                (planner.plan_fft_forward(len), planner.plan_fft_inverse(len))
            })
            .clone()
    })
}

/// FFT length for a linear convolution of output length `out_len`.
pub fn fft_len(out_len: usize) -> usize {
    // Smallest even 2^a·3^b·5^c ≥ out_len: rustfft's fast mixed-radix sizes, often well below
    // the next power of two.
    let mut best = out_len.next_power_of_two().max(2);
    let mut p5 = 1;
    while p5 < best {
        let mut p35 = p5;
        while p35 < best {
            let mut size = p35 * 2;
            while size < out_len {
                size *= 2;
            }
            best = best.min(size);
            p35 *= 3;
        }
        p5 *= 5;
    }
    best
}

/// A-priori bound on the absolute error of any coefficient of an FFT convolution of length `n_fft`.
pub fn convolution_error_bound(norm2_a: f64, norm2_b: f64, n_fft: usize) -> f64 {
    let stages = (n_fft as f64).log2().ceil() + 2.0;
    let per_unit = 3.0 + 3.0 * stages * (5f64.sqrt() + 2.0);
    2.0 * norm2_a * norm2_b * UNIT_ROUNDOFF * per_unit
}

fn norm2(xs: &[f64]) -> f64 {
    // Scaled to avoid overflow and underflow of the squares.
    let scale = xs.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    let sum: f64 = xs.iter().map(|x| (x / scale) * (x / scale)).sum();
    scale * sum.sqrt() * (1.0 + gamma(xs.len() + 2))
}

/// Linear convolution `a ∗ b` (length `len(a)+len(b)−1`) in float64 through one real FFT size.
pub fn convolve(a: &[f64], b: &[f64]) -> FloatConvolution {
    if a.is_empty() || b.is_empty() {
        return FloatConvolution {
            values: Vec::new(),
            error_bound: 0.0,
        };
    }
    let out_len = a.len() + b.len() - 1;
    let n = fft_len(out_len);
    let (forward, inverse) = real_fft_plans(n);
    let spectrum = |x: &[f64]| {
        let mut input = forward.make_input_vec();
        input[..x.len()].copy_from_slice(x);
        let mut output = forward.make_output_vec();
        forward
            .process(&mut input, &mut output)
            .expect("FFT buffer sizes are fixed by the plan");
        output
    };
    let mut product = spectrum(a);
    if std::ptr::eq(a, b) {
        product.iter_mut().for_each(|z| *z = *z * *z);
    } else {
        let other = spectrum(b);
        product.iter_mut().zip(&other).for_each(|(z, w)| *z *= w);
    }
    // A real signal's DC and Nyquist bins are real; drop rounding residue so realfft accepts them.
    product[0].im = 0.0;
    let last = product.len() - 1;
    product[last].im = 0.0;
    let mut values = inverse.make_output_vec();
    inverse
        .process(&mut product, &mut values)
        .expect("FFT buffer sizes are fixed by the plan");
    values.truncate(out_len);
    let scale = 1.0 / n as f64;
    values.iter_mut().for_each(|v| *v *= scale);
    FloatConvolution {
        values,
        error_bound: convolution_error_bound(norm2(a), norm2(b), n),
    }
}

/// Autoconvolution `f ∗ f`.
pub fn autoconvolve(f: &[f64]) -> FloatConvolution {
    convolve(f, f)
}

/// Full cross-correlation as numpy's `correlate(a, v, "full")`: entry `j` is the lag `j − (len(v)−1)`,
/// `Σ_i a[i + lag] · v[i]`.
pub fn correlate_full(a: &[f64], v: &[f64]) -> FloatConvolution {
    let reversed: Vec<f64> = v.iter().rev().copied().collect();
    convolve(a, &reversed)
}

/// The values times the power of two that brings the largest magnitude into `[1, 2)`.
///
/// Every score here is invariant under scaling `f`, and a power-of-two scaling is exact (up to
/// values far below the largest one flushing to zero, far below the error bound); it keeps the
/// float64 path free of overflow and underflow for inputs anywhere from 1e-300 to 1e300.
pub fn normalized(values: &[f64]) -> Vec<f64> {
    let largest = values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return values.to_vec();
    }
    let exponent = crate::exact::dyadic::binary_exponent(largest);
    // Two steps so that neither factor overflows or underflows on its own.
    let half = -exponent / 2;
    let (f1, f2) = (2f64.powi(half), 2f64.powi(-exponent - half));
    values.iter().map(|x| x * f1 * f2).collect()
}

/// Sum with Neumaier's compensation: error about `2u·|sum| + O(n·u²)·Σ|x|`, far below a plain
/// loop's `γ_n·Σ|x|` and below numpy's pairwise sum; the error bounds here still assume `γ_n`.
pub fn compensated_sum(xs: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut carry) = (0.0f64, 0.0f64);
    for x in xs {
        let t = sum + x;
        carry += if sum.abs() >= x.abs() {
            (sum - t) + x
        } else {
            (x - t) + sum
        };
        sum = t;
    }
    sum + carry
}

/// Maximum of a slice and its index (first occurrence); `(−∞, 0)` for an empty slice.
pub fn argmax(xs: &[f64]) -> (f64, usize) {
    xs.iter().enumerate().fold(
        (f64::NEG_INFINITY, 0),
        |(m, im), (i, &x)| {
            if x > m {
                (x, i)
            } else {
                (m, im)
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; a.len() + b.len() - 1];
        for (i, x) in a.iter().enumerate() {
            for (j, y) in b.iter().enumerate() {
                c[i + j] += x * y;
            }
        }
        c
    }

    #[test]
    fn a_convolution_does_not_depend_on_the_lengths_planned_before_it() {
        // rustfft's planner builds a length on the sub-FFTs it has cached: on one planner per
        // thread, planning 1,728 first changed how 432 was factorised (and its last bits).
        let values = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| ((i * 7919 % 1013) as f64).sin() + 1.5)
                .collect()
        };
        let on_fresh_thread = |planned_before: Vec<usize>, n: usize| {
            std::thread::spawn(move || {
                for m in planned_before {
                    autoconvolve(&values(m));
                }
                autoconvolve(&values(n)).values
            })
            .join()
            .unwrap()
        };
        // FFT lengths 432 and 576, each after a length that contains it as a sub-FFT.
        for (n, before) in [(216, 864), (288, 1_152), (864, 216), (1_152, 288)] {
            assert_eq!(fft_len(2 * n - 1) % 144, 0);
            let fresh = on_fresh_thread(vec![], n);
            let after_other = on_fresh_thread(vec![before], n);
            assert!(
                fresh
                    .iter()
                    .zip(&after_other)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "n = {n}: the convolution changed with the length planned before it"
            );
        }
    }

    #[test]
    fn matches_direct_convolution_within_bound() {
        let a: Vec<f64> = (0..37)
            .map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0)
            .collect();
        let b: Vec<f64> = (0..20).map(|i| ((i * 31) % 17) as f64 / 3.0).collect();
        let fast = convolve(&a, &b);
        for (x, y) in fast.values.iter().zip(direct(&a, &b)) {
            assert!((x - y).abs() <= fast.error_bound, "{x} vs {y}");
        }
        assert!(fast.error_bound < 1e-11, "{}", fast.error_bound);
    }

    #[test]
    fn correlate_matches_numpy_convention() {
        // numpy.correlate([1,2,3], [0,1,0.5], "full") = [0.5, 2, 3.5, 3, 0]
        let c = correlate_full(&[1.0, 2.0, 3.0], &[0.0, 1.0, 0.5]);
        let want = [0.5, 2.0, 3.5, 3.0, 0.0];
        for (x, y) in c.values.iter().zip(want) {
            assert!((x - y).abs() < 1e-14, "{:?}", c.values);
        }
    }
}
