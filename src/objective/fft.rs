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
//!
//! The Erdős correlation `a ∗ reverse(1 − a)` needs one forward transform, not two: the
//! spectrum of `1 − a` is `Box − Â`, with `Box` the spectrum of the length-`n` run of ones
//! (computed once per workspace), and its adjoint folds the two operands' gradients into one inverse
//! ([`complement_correlate`](ConvolutionWorkspace::complement_correlate)).

use crate::fast::fft_len;
use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealToComplex};
use std::sync::Arc;

#[cfg(test)]
thread_local! {
    /// Real FFTs (forward and inverse) performed on this thread, for the tests that check each
    /// objective's documented count.
    static TRANSFORMS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Real FFTs (forward and inverse) the workspaces have performed on this thread.
#[cfg(test)]
pub(crate) fn transforms_on_this_thread() -> usize {
    TRANSFORMS.with(|t| t.get())
}

/// Counts one real FFT (tests only).
#[inline]
fn count_transform() {
    #[cfg(test)]
    TRANSFORMS.with(|t| t.set(t.get() + 1));
}

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
    /// Spectrum of the second operand of the last [`convolve`](Self::convolve), or of the
    /// length-`n` run of ones when `spec_b_is_box` (unused after an autoconvolution).
    spec_b: Vec<Complex<f64>>,
    /// Whether `spec_b` holds the spectrum of the run of ones, computed by a
    /// [`complement_correlate`](Self::complement_correlate) since the last `convolve`.
    spec_b_is_box: bool,
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
    Complement,
}

impl ConvolutionWorkspace {
    /// A workspace for operands of length `n ≥ 1` (convolutions of length `2n − 1`).
    pub fn new(n: usize) -> Self {
        assert!(n >= 1, "the operands must be non-empty");
        let fft_size = fft_len(2 * n - 1);
        let (forward, inverse) = crate::fast::real_fft_plans(fft_size);
        let bins = fft_size / 2 + 1;
        ConvolutionWorkspace {
            n,
            fft_size,
            time: vec![0.0; fft_size],
            spec_a: vec![Complex::new(0.0, 0.0); bins],
            spec_b: vec![Complex::new(0.0, 0.0); bins],
            spec_w: vec![Complex::new(0.0, 0.0); bins],
            spec_b_is_box: false,
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
        Self::forward_time(forward, time, scratch, spectrum);
    }

    /// Transforms `time` (destroyed) into `spectrum`.
    fn forward_time(
        forward: &Arc<dyn RealToComplex<f64>>,
        time: &mut [f64],
        scratch: &mut [Complex<f64>],
        spectrum: &mut [Complex<f64>],
    ) {
        count_transform();
        forward
            .process_with_scratch(time, spectrum, scratch)
            .expect("FFT buffer sizes are fixed by the plan");
    }

    /// Inverse-transforms `spec_w` (destroyed) into `time`, unscaled.
    fn inverse(&mut self) {
        // A real signal's DC and Nyquist bins are real; drop rounding residue.
        self.spec_w[0].im = 0.0;
        let last = self.spec_w.len() - 1;
        self.spec_w[last].im = 0.0;
        count_transform();
        self.inverse
            .process_with_scratch(&mut self.spec_w, &mut self.time, &mut self.scratch_inverse)
            .expect("FFT buffer sizes are fixed by the plan");
    }

    /// Inverse-transforms `spec_w` (destroyed) into `time`, scaled by `1/N`; the first `out.len()`
    /// entries go to `out`.
    fn inverse_into(&mut self, out: &mut [f64]) {
        self.inverse();
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
        self.spec_b_is_box = false;
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

    /// `out = a ∗ reverse(1 − a)` (`a` of length `n`, `out` of length `2n − 1`), i.e.
    /// `out_k = Σ_i a_i·(1 − a_(i+n−1−k))` = numpy's `correlate(a, 1 − a, "full")`; keeps the
    /// spectrum of `a` for [`complement_correlation_adjoint`](Self::complement_correlation_adjoint).
    /// Two real FFTs (one more for the spectrum of the ones on the first call, and on the first
    /// after a [`convolve`](Self::convolve), which shares its buffer).
    ///
    /// With `b = 1 − a`, `B̂ = Box − Â`, the cross-correlation `D_j = Σ_i a_(i+j)·b_i` is
    /// `IFFT(Â·conj(B̂)) = IFFT(Â·conj(Box) − |Â|²)` and `out_k = D_(k−(n−1))`, a lag read
    /// circularly (lags `−(n−1)…n−1` do not wrap since `N ≥ 2n − 1`).
    pub fn complement_correlate(&mut self, a: &[f64], out: &mut [f64]) {
        let n = self.n;
        assert_eq!(a.len(), n);
        assert_eq!(out.len(), 2 * n - 1);
        if !self.spec_b_is_box {
            self.time[..n].iter_mut().for_each(|v| *v = 1.0);
            self.time[n..].iter_mut().for_each(|v| *v = 0.0);
            Self::forward_time(
                &self.forward,
                &mut self.time,
                &mut self.scratch_forward,
                &mut self.spec_b,
            );
            self.spec_b_is_box = true;
        }
        Self::transform(
            &self.forward,
            &mut self.time,
            &mut self.scratch_forward,
            a,
            &mut self.spec_a,
        );
        self.spec_w
            .iter_mut()
            .zip(self.spec_a.iter().zip(&self.spec_b))
            .for_each(|(p, (a, bx))| *p = a * bx.conj() - a.norm_sqr());
        self.stored = Stored::Complement;
        self.inverse();
        // out_k = D_(k−(n−1)): negative lags sit at the end of `time`.
        let scale = 1.0 / self.fft_size as f64;
        let (negative, non_negative) = out.split_at_mut(n - 1);
        negative
            .iter_mut()
            .zip(&self.time[self.fft_size - (n - 1)..])
            .for_each(|(o, t)| *o = t * scale);
        non_negative
            .iter_mut()
            .zip(&self.time[..n])
            .for_each(|(o, t)| *o = t * scale);
    }

    /// Gradient of `Σ_k w_k·out_k` with respect to `a`, at the `a` of the last
    /// [`complement_correlate`](Self::complement_correlate) (both operands' dependence on `a`).
    /// Two real FFTs.
    ///
    /// With `v_j = w_(j+n−1)` (lags `j = −(n−1)…n−1`, stored circularly) the sum is
    /// `Σ_j v_j·D_j`, and `∂/∂a_m = Σ_j v_j·b_(m−j) − Σ_j v_j·a_(m+j)`
    /// `= IFFT(V̂·(Box − Â) − Â·conj(V̂))_m`.
    pub fn complement_correlation_adjoint(&mut self, w: &[f64], grad: &mut [f64]) {
        let n = self.n;
        assert_eq!(
            self.stored,
            Stored::Complement,
            "call complement_correlate first"
        );
        assert_eq!(w.len(), 2 * n - 1);
        assert_eq!(grad.len(), n);
        let size = self.fft_size;
        self.time[..n].copy_from_slice(&w[n - 1..]);
        self.time[n..size - (n - 1)]
            .iter_mut()
            .for_each(|v| *v = 0.0);
        self.time[size - (n - 1)..].copy_from_slice(&w[..n - 1]);
        Self::forward_time(
            &self.forward,
            &mut self.time,
            &mut self.scratch_forward,
            &mut self.spec_w,
        );
        self.spec_w
            .iter_mut()
            .zip(self.spec_a.iter().zip(&self.spec_b))
            .for_each(|(v, (a, bx))| *v = *v * (bx - a) - a * v.conj());
        self.inverse_into(grad);
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

    #[test]
    fn complement_correlation_and_adjoint_match_naive_sums() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        for n in [1usize, 2, 3, 5, 17, 64, 200] {
            let mut ws = ConvolutionWorkspace::new(n);
            let a: Vec<f64> = (0..n).map(|_| rng.gen_range(0.0..1.0)).collect();
            let w: Vec<f64> = (0..2 * n - 1).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let reversed: Vec<f64> = a.iter().rev().map(|x| 1.0 - x).collect();
            let mut c = vec![0.0; 2 * n - 1];
            let mut g = vec![0.0; n];
            for _ in 0..2 {
                let before = transforms_on_this_thread();
                ws.complement_correlate(&a, &mut c);
                close(&c, &naive_conv(&a, &reversed), 1e-13);
                ws.complement_correlation_adjoint(&w, &mut g);
                // ∂/∂a_m = (w ⋆ b̃)_m − (w ⋆ a)_(n−1−m) for b̃ = reverse(1 − a).
                let via_b = naive_corr(&w, &reversed);
                let via_a = naive_corr(&w, &a);
                let expected: Vec<f64> = (0..n).map(|m| via_b[m] - via_a[n - 1 - m]).collect();
                close(&g, &expected, 1e-13);
                // The spectrum of the ones is computed once, on the first call.
                assert!(transforms_on_this_thread() - before <= 5);
            }
            let before = transforms_on_this_thread();
            ws.complement_correlate(&a, &mut c);
            ws.complement_correlation_adjoint(&w, &mut g);
            assert_eq!(transforms_on_this_thread() - before, 4);
            // A convolution in between takes the buffer of the ones' spectrum, which comes back.
            let mut full = vec![0.0; 2 * n - 1];
            ws.convolve(&a, &reversed, &mut full);
            let before = transforms_on_this_thread();
            ws.complement_correlate(&a, &mut c);
            assert_eq!(transforms_on_this_thread() - before, 3);
            close(&c, &full, 1e-13);
        }
    }
}
