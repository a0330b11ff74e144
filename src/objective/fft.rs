//! A reusable real-FFT workspace for linear convolutions of two length-`n` arrays and their
//! adjoints (gradients of a weighted sum of the convolution's coefficients).
//!
//! Plans and buffers are created once in [`ConvolutionWorkspace::new`]; every later call is
//! allocation-free and costs a fixed number of real FFTs of one size `N ≥ 2n − 1` (the smallest
//! even `2^a·3^b·5^c`, as in [`crate::fast`]).
//!
//! Adjoint identity: for `c = a ∗ b` (length `2n − 1`) and weights `w` over the lags,
//! `∂/∂a_i Σ_k w_k c_k = Σ_t w_(i+t)·b_t = (w ⋆ b)_i`, and symmetrically for `b`; for the
//! autoconvolution `c = f ∗ f` the gradient is `2·(w ⋆ f)`. In the frequency domain the
//! correlation is `IFFT(Ŵ·conj(B̂))`; since `i + t ≤ 2n − 2 < N` no wrap-around reaches the `n`
//! entries kept.

use crate::fast::fft_len;
use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use std::sync::Arc;

/// Plans and buffers for convolving two length-`n` arrays and back-propagating through the
/// convolution, all allocated once.
pub struct ConvolutionWorkspace {
    n: usize,
    fft_size: usize,
    forward: Arc<dyn RealToComplex<f64>>,
    inverse: Arc<dyn ComplexToReal<f64>>,
    /// Time-domain buffer of length `fft_size` (input of forward transforms, output of inverses).
    time: Vec<f64>,
    /// Spectrum of the first operand of the last [`convolve`](Self::convolve).
    spec_a: Vec<Complex<f64>>,
    /// Spectrum of the second operand (unused after an autoconvolution).
    spec_b: Vec<Complex<f64>>,
    /// Spectrum of the weights, or a product of spectra.
    spec_w: Vec<Complex<f64>>,
    scratch_forward: Vec<Complex<f64>>,
    scratch_inverse: Vec<Complex<f64>>,
    /// Which spectra the last forward call left for an adjoint.
    stored: Stored,
}

/// What the last forward call stored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stored {
    Nothing,
    Auto,
    Pair,
}

impl ConvolutionWorkspace {
    /// A workspace for operands of length `n ≥ 1` (convolutions of length `2n − 1`).
    pub fn new(n: usize) -> Self {
        assert!(n >= 1, "the operands must be non-empty");
        let fft_size = fft_len(2 * n - 1);
        let mut planner = RealFftPlanner::<f64>::new();
        let forward = planner.plan_fft_forward(fft_size);
        let inverse = planner.plan_fft_inverse(fft_size);
        let bins = fft_size / 2 + 1;
        ConvolutionWorkspace {
            n,
            fft_size,
            time: vec![0.0; fft_size],
            spec_a: vec![Complex::new(0.0, 0.0); bins],
            spec_b: vec![Complex::new(0.0, 0.0); bins],
            spec_w: vec![Complex::new(0.0, 0.0); bins],
            scratch_forward: forward.make_scratch_vec(),
            scratch_inverse: inverse.make_scratch_vec(),
            forward,
            inverse,
            stored: Stored::Nothing,
        }
    }

    /// The operand length `n`.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Always false: a workspace has `n ≥ 1`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The FFT size `N ≥ 2n − 1`.
    pub fn fft_size(&self) -> usize {
        self.fft_size
    }

    /// Zero-pads `x` (length at most `N`) into `time` and transforms it into `spectrum`.
    fn transform(
        forward: &Arc<dyn RealToComplex<f64>>,
        time: &mut [f64],
        scratch: &mut [Complex<f64>],
        x: &[f64],
        spectrum: &mut [Complex<f64>],
    ) {
        time[..x.len()].copy_from_slice(x);
        time[x.len()..].iter_mut().for_each(|v| *v = 0.0);
        forward
            .process_with_scratch(time, spectrum, scratch)
            .expect("FFT buffer sizes are fixed by the plan");
    }

    /// Inverse-transforms `spec_w` (destroyed) into `time`, scaled by `1/N`; the first `out.len()`
    /// entries go to `out`.
    fn inverse_into(&mut self, out: &mut [f64]) {
        // A real signal's DC and Nyquist bins are real; drop rounding residue.
        self.spec_w[0].im = 0.0;
        let last = self.spec_w.len() - 1;
        self.spec_w[last].im = 0.0;
        self.inverse
            .process_with_scratch(&mut self.spec_w, &mut self.time, &mut self.scratch_inverse)
            .expect("FFT buffer sizes are fixed by the plan");
        let scale = 1.0 / self.fft_size as f64;
        out.iter_mut()
            .zip(&self.time)
            .for_each(|(o, t)| *o = t * scale);
    }

    /// `out = f ∗ f` (`f` of length `n`, `out` of length `2n − 1`); keeps the spectrum of `f` for
    /// [`autoconvolution_adjoint`](Self::autoconvolution_adjoint). Two real FFTs.
    pub fn autoconvolve(&mut self, f: &[f64], out: &mut [f64]) {
        assert_eq!(f.len(), self.n);
        assert_eq!(out.len(), 2 * self.n - 1);
        Self::transform(
            &self.forward,
            &mut self.time,
            &mut self.scratch_forward,
            f,
            &mut self.spec_a,
        );
        self.spec_w
            .iter_mut()
            .zip(&self.spec_a)
            .for_each(|(p, a)| *p = a * a);
        self.stored = Stored::Auto;
        self.inverse_into(out);
    }

    /// `out = a ∗ b` (both of length `n`, `out` of length `2n − 1`); keeps both spectra for
    /// [`convolution_adjoint`](Self::convolution_adjoint). Three real FFTs.
    pub fn convolve(&mut self, a: &[f64], b: &[f64], out: &mut [f64]) {
        assert_eq!(a.len(), self.n);
        assert_eq!(b.len(), self.n);
        assert_eq!(out.len(), 2 * self.n - 1);
        Self::transform(
            &self.forward,
            &mut self.time,
            &mut self.scratch_forward,
            a,
            &mut self.spec_a,
        );
        Self::transform(
            &self.forward,
            &mut self.time,
            &mut self.scratch_forward,
            b,
            &mut self.spec_b,
        );
        self.spec_w
            .iter_mut()
            .zip(self.spec_a.iter().zip(&self.spec_b))
            .for_each(|(p, (a, b))| *p = a * b);
        self.stored = Stored::Pair;
        self.inverse_into(out);
    }

    /// Gradient of `Σ_k w_k (f∗f)_k` with respect to `f`, at the `f` of the last
    /// [`autoconvolve`](Self::autoconvolve): `grad = 2·(w ⋆ f)`, i.e.
    /// `grad_i = 2·Σ_t w_(i+t)·f_t`. Two real FFTs.
    pub fn autoconvolution_adjoint(&mut self, w: &[f64], grad: &mut [f64]) {
        assert_eq!(self.stored, Stored::Auto, "call autoconvolve first");
        assert_eq!(w.len(), 2 * self.n - 1);
        assert_eq!(grad.len(), self.n);
        Self::transform(
            &self.forward,
            &mut self.time,
            &mut self.scratch_forward,
            w,
            &mut self.spec_w,
        );
        self.spec_w
            .iter_mut()
            .zip(&self.spec_a)
            .for_each(|(p, a)| *p *= 2.0 * a.conj());
        self.inverse_into(grad);
    }

    /// Gradients of `Σ_k w_k (a∗b)_k` at the `a`, `b` of the last [`convolve`](Self::convolve):
    /// `grad_a = w ⋆ b`, `grad_b = w ⋆ a`. Three real FFTs.
    pub fn convolution_adjoint(&mut self, w: &[f64], grad_a: &mut [f64], grad_b: &mut [f64]) {
        assert_eq!(self.stored, Stored::Pair, "call convolve first");
        assert_eq!(w.len(), 2 * self.n - 1);
        assert_eq!(grad_a.len(), self.n);
        assert_eq!(grad_b.len(), self.n);
        Self::transform(
            &self.forward,
            &mut self.time,
            &mut self.scratch_forward,
            w,
            &mut self.spec_w,
        );
        // grad_b = IFFT(Ŵ·conj(Â)): overwrite spec_a (no longer needed) with that product.
        self.spec_a
            .iter_mut()
            .zip(&self.spec_w)
            .for_each(|(a, w)| *a = w * a.conj());
        // grad_a = IFFT(Ŵ·conj(B̂)).
        self.spec_w
            .iter_mut()
            .zip(&self.spec_b)
            .for_each(|(w, b)| *w *= b.conj());
        self.inverse_into(grad_a);
        std::mem::swap(&mut self.spec_w, &mut self.spec_a);
        self.inverse_into(grad_b);
        // The stored spectra are spent: a later adjoint needs a fresh convolution.
        self.stored = Stored::Nothing;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn naive_conv(a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; a.len() + b.len() - 1];
        for (i, x) in a.iter().enumerate() {
            for (j, y) in b.iter().enumerate() {
                c[i + j] += x * y;
            }
        }
        c
    }

    fn naive_corr(w: &[f64], x: &[f64]) -> Vec<f64> {
        (0..x.len())
            .map(|i| (0..x.len()).map(|t| w[i + t] * x[t]).sum())
            .collect()
    }

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        let scale = b.iter().fold(1e-300f64, |m, x| m.max(x.abs()));
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * scale, "{x} vs {y}");
        }
    }

    #[test]
    fn convolutions_and_adjoints_match_naive_sums() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for n in [1usize, 2, 3, 5, 17, 64, 200] {
            let mut ws = ConvolutionWorkspace::new(n);
            assert!(ws.fft_size() >= 2 * n - 1);
            let a: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let b: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let w: Vec<f64> = (0..2 * n - 1).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let mut c = vec![0.0; 2 * n - 1];
            let mut g = vec![0.0; n];
            let mut gb = vec![0.0; n];
            ws.autoconvolve(&a, &mut c);
            close(&c, &naive_conv(&a, &a), 1e-13);
            ws.autoconvolution_adjoint(&w, &mut g);
            let expected: Vec<f64> = naive_corr(&w, &a).iter().map(|x| 2.0 * x).collect();
            close(&g, &expected, 1e-13);
            // Twice in a row: the workspace is reusable.
            ws.convolve(&a, &b, &mut c);
            close(&c, &naive_conv(&a, &b), 1e-13);
            ws.convolution_adjoint(&w, &mut g, &mut gb);
            close(&g, &naive_corr(&w, &b), 1e-13);
            close(&gb, &naive_corr(&w, &a), 1e-13);
            ws.convolve(&b, &a, &mut c);
            close(&c, &naive_conv(&b, &a), 1e-13);
            ws.convolution_adjoint(&w, &mut g, &mut gb);
            close(&g, &naive_corr(&w, &a), 1e-13);
            close(&gb, &naive_corr(&w, &b), 1e-13);
        }
    }
}
