//! Parameterisations: maps from free variables `v` to construction values `f`, with their chain rule.
//!
//! DOMAIN.md: for f ≥ 0, f = v² beats f = exp(v) (dead cells keep curvature and can revive);
//! for 0 ≤ h ≤ 1 a sigmoid; for the signed problem the raw values.

/// Relative floor for [`Parameterisation::Exp`]'s inverse: cells below `EXP_FLOOR · max f` map to
/// `ln(EXP_FLOOR · max f)`, so a zero cell gets a finite variable.
pub const EXP_FLOOR: f64 = 1e-12;

/// Clamp for [`Parameterisation::Sigmoid`]'s inverse: `f` is clamped to
/// `[SIGMOID_CLAMP, 1 − SIGMOID_CLAMP]` before the logit.
pub const SIGMOID_CLAMP: f64 = 1e-12;

/// How free variables map to construction values, elementwise (named in program files in
/// snake case: `square`, `exp`, `sigmoid`, `raw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Parameterisation {
    /// `f = v²` (for f ≥ 0).
    Square,
    /// `f = exp(v)` (for f > 0).
    Exp,
    /// `f = 1 / (1 + exp(−v))` (for 0 < f < 1).
    Sigmoid,
    /// `f = v` (signed values).
    Raw,
}

/// The logistic function, evaluated without overflow.
fn sigmoid(v: f64) -> f64 {
    if v >= 0.0 {
        1.0 / (1.0 + (-v).exp())
    } else {
        let e = v.exp();
        e / (1.0 + e)
    }
}

impl Parameterisation {
    /// `f = φ(v)`, elementwise. Panics if the lengths differ.
    pub fn forward(&self, v: &[f64], f: &mut [f64]) {
        assert_eq!(v.len(), f.len(), "forward: lengths differ");
        for (fi, &vi) in f.iter_mut().zip(v) {
            *fi = match self {
                Parameterisation::Square => vi * vi,
                Parameterisation::Exp => vi.exp(),
                Parameterisation::Sigmoid => sigmoid(vi),
                Parameterisation::Raw => vi,
            };
        }
    }

    /// Chain rule: `grad_v[i] = grad_f[i] · φ'(v[i])`. Panics if the lengths differ.
    pub fn backward(&self, v: &[f64], grad_f: &[f64], grad_v: &mut [f64]) {
        assert!(
            v.len() == grad_f.len() && v.len() == grad_v.len(),
            "backward: lengths differ"
        );
        for ((gv, &gf), &vi) in grad_v.iter_mut().zip(grad_f).zip(v) {
            *gv = gf
                * match self {
                    Parameterisation::Square => 2.0 * vi,
                    Parameterisation::Exp => vi.exp(),
                    Parameterisation::Sigmoid => {
                        let s = sigmoid(vi);
                        s * (1.0 - s)
                    }
                    Parameterisation::Raw => 1.0,
                };
        }
    }

    /// A `v` that maps to `f` as closely as possible: `sqrt(max(f, 0))` for `Square`; `ln` with
    /// the relative floor [`EXP_FLOOR`] for `Exp`; the logit of `f` clamped by [`SIGMOID_CLAMP`]
    /// for `Sigmoid`; `f` itself for `Raw`. NaN maps to NaN.
    pub fn inverse(&self, f: &[f64]) -> Vec<f64> {
        match self {
            Parameterisation::Square => f.iter().map(|&x| x.max(0.0).sqrt()).collect(),
            Parameterisation::Exp => {
                let top = f.iter().copied().fold(0.0_f64, f64::max);
                let floor = (top * EXP_FLOOR).max(f64::MIN_POSITIVE);
                f.iter().map(|&x| x.max(floor).ln()).collect()
            }
            Parameterisation::Sigmoid => f
                .iter()
                .map(|&x| {
                    let x = x.clamp(SIGMOID_CLAMP, 1.0 - SIGMOID_CLAMP);
                    (x / (1.0 - x)).ln()
                })
                .collect(),
            Parameterisation::Raw => f.to_vec(),
        }
    }

    /// Pull an objective on `f` back to one on `v`: the returned closure computes `f = φ(v)`, calls
    /// `objective(f, grad_f)` and applies [`Parameterisation::backward`].
    pub fn compose<'a, F>(&'a self, mut objective: F) -> impl FnMut(&[f64], &mut [f64]) -> f64 + 'a
    where
        F: FnMut(&[f64], &mut [f64]) -> f64 + 'a,
    {
        let mut f = Vec::new();
        let mut grad_f = Vec::new();
        move |v, grad_v| {
            f.resize(v.len(), 0.0);
            grad_f.clear();
            grad_f.resize(v.len(), 0.0);
            self.forward(v, &mut f);
            let value = objective(&f, &mut grad_f);
            self.backward(v, &grad_f, grad_v);
            value
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Parameterisation; 4] = [
        Parameterisation::Square,
        Parameterisation::Exp,
        Parameterisation::Sigmoid,
        Parameterisation::Raw,
    ];

    fn valid_f(p: Parameterisation) -> Vec<f64> {
        match p {
            Parameterisation::Square => vec![0.0, 1e-8, 0.25, 1.0, 3.5, 1e6],
            Parameterisation::Exp => vec![1e-6, 0.25, 1.0, 3.5, 1e6],
            Parameterisation::Sigmoid => vec![1e-6, 0.1, 0.5, 0.9, 1.0 - 1e-6],
            Parameterisation::Raw => vec![-3.0, -1e-9, 0.0, 2.5, 1e6],
        }
    }

    #[test]
    fn forward_inverts_inverse_on_valid_values() {
        for p in ALL {
            let f = valid_f(p);
            let mut back = vec![0.0; f.len()];
            p.forward(&p.inverse(&f), &mut back);
            for (a, b) in f.iter().zip(&back) {
                assert!(
                    (a - b).abs() <= 1e-12 * a.abs().max(1e-6),
                    "{p:?}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn inverse_clamps_out_of_range_values() {
        let v = Parameterisation::Square.inverse(&[-1.0]);
        assert_eq!(v, vec![0.0]);
        let v = Parameterisation::Exp.inverse(&[0.0, 1.0]);
        assert!(v[0].is_finite() && (v[0].exp() - 1e-12).abs() < 1e-20);
        let v = Parameterisation::Sigmoid.inverse(&[0.0, 1.0]);
        assert!(v.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn backward_matches_finite_differences() {
        let v = [-1.3, -0.2, 0.0, 0.4, 1.7];
        let w = [0.3, -1.1, 2.0, 0.7, -0.5]; // objective Σ w_i f_i, so grad_f = w
        for p in ALL {
            let mut grad_v = [0.0; 5];
            p.backward(&v, &w, &mut grad_v);
            for i in 0..v.len() {
                let h = 1e-6;
                let eval = |x: f64| {
                    let mut vv = v;
                    vv[i] = x;
                    let mut f = [0.0; 5];
                    p.forward(&vv, &mut f);
                    f.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>()
                };
                let fd = (eval(v[i] + h) - eval(v[i] - h)) / (2.0 * h);
                assert!(
                    (fd - grad_v[i]).abs() < 1e-7,
                    "{p:?} i={i}: {fd} vs {}",
                    grad_v[i]
                );
            }
        }
    }

    #[test]
    fn sigmoid_does_not_overflow() {
        let mut f = [0.0; 2];
        Parameterisation::Sigmoid.forward(&[-1000.0, 1000.0], &mut f);
        assert_eq!(f, [0.0, 1.0]);
    }

    #[test]
    fn compose_chains_the_gradient() {
        let p = Parameterisation::Square;
        // objective Σ f_i² on f = v², so value Σ v_i⁴ and gradient 4 v³.
        let mut obj = p.compose(|f: &[f64], g: &mut [f64]| {
            for i in 0..f.len() {
                g[i] = 2.0 * f[i];
            }
            f.iter().map(|x| x * x).sum()
        });
        let mut g = [0.0; 2];
        let value = obj(&[1.0, -2.0], &mut g);
        assert_eq!(value, 17.0);
        assert_eq!(g, [4.0, -32.0]);
    }
}
