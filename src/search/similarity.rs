//! Behavioural similarity of two harnesses: how alike their per-task gain vectors are.
//!
//! Gains are ≥ 0 (in units of a problem's `min_improvement`, 0 when a task was not improved), so
//! the cosine of two gain vectors lies in [0, 1]: 1 when they improve the same tasks in the same
//! proportions, 0 when they improve disjoint sets of tasks. Convention for all-zero vectors: two
//! harnesses that improve nothing behave identically (similarity 1); one that improves nothing and
//! one that improves something share no behaviour (similarity 0).

use crate::error::{MiloError, Result};

/// The cosine similarity of two gain vectors of the same length, in [0, 1] (see the module
/// documentation for all-zero vectors). Errors on different lengths or a gain that is negative or
/// not finite, naming the vector, index and value.
pub fn similarity(a: &[f64], b: &[f64]) -> Result<f64> {
    if a.len() != b.len() {
        return Err(MiloError::Usage(format!(
            "gain vectors of different lengths ({} and {} tasks) cannot be compared",
            a.len(),
            b.len()
        )));
    }
    let (a, b) = (scaled(a, "first")?, scaled(b, "second")?);
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let (na, nb) = (norm(&a), norm(&b));
    Ok(match (na > 0.0, nb > 0.0) {
        (false, false) => 1.0,
        (true, true) => {
            let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            (dot / (na * nb)).clamp(0.0, 1.0)
        }
        _ => 0.0,
    })
}

/// Checks that every gain is finite and ≥ 0, and divides by the largest so that squaring cannot
/// overflow or underflow (the cosine does not change under scaling).
fn scaled(gains: &[f64], which: &str) -> Result<Vec<f64>> {
    if let Some((i, g)) = gains
        .iter()
        .enumerate()
        .find(|(_, g)| !g.is_finite() || **g < 0.0)
    {
        return Err(MiloError::Usage(format!(
            "{which} gain vector: gain at task index {i} is {g}, expected a finite value ≥ 0"
        )));
    }
    let max = gains.iter().copied().fold(0.0, f64::max);
    Ok(gains
        .iter()
        .map(|g| if max > 0.0 { g / max } else { 0.0 })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_cosines() {
        assert_eq!(similarity(&[1.0, 0.0], &[0.0, 2.0]).unwrap(), 0.0);
        assert_eq!(similarity(&[3.0, 0.0, 1.0], &[6.0, 0.0, 2.0]).unwrap(), 1.0);
        // (1, 1) against (1, 0): cos 45° = 1/√2.
        let c = similarity(&[1.0, 1.0], &[1.0, 0.0]).unwrap();
        assert!((c - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-15, "{c}");
        // Huge gains neither overflow nor lose the angle.
        let big = similarity(&[1e300, 1e300], &[1e300, 0.0]).unwrap();
        assert!(
            (big - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-15,
            "{big}"
        );
    }

    #[test]
    fn all_zero_convention() {
        assert_eq!(similarity(&[0.0, 0.0], &[0.0, 0.0]).unwrap(), 1.0);
        assert_eq!(similarity(&[], &[]).unwrap(), 1.0);
        assert_eq!(similarity(&[0.0, 0.0], &[0.0, 5.0]).unwrap(), 0.0);
        assert_eq!(similarity(&[5.0, 0.0], &[0.0, 0.0]).unwrap(), 0.0);
    }

    #[test]
    fn bad_input_is_an_error_naming_it() {
        let e = similarity(&[1.0, 2.0], &[1.0]).unwrap_err().to_string();
        assert!(e.contains("2 and 1 tasks"), "{e}");
        let e = similarity(&[1.0, 2.0], &[1.0, -0.5])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("second") && e.contains("index 1") && e.contains("-0.5"),
            "{e}"
        );
        let e = similarity(&[f64::NAN], &[1.0]).unwrap_err().to_string();
        assert!(e.contains("first") && e.contains("NaN"), "{e}");
    }

    proptest! {
        #[test]
        fn symmetric_bounded_and_scale_free(
            pairs in prop::collection::vec((0.0..10.0f64, 0.0..10.0f64), 0..12),
            scale in 0.001..1000.0f64,
        ) {
            let (a, b): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
            let s = similarity(&a, &b).unwrap();
            prop_assert!((0.0..=1.0).contains(&s));
            prop_assert_eq!(s, similarity(&b, &a).unwrap());
            let a_scaled: Vec<f64> = a.iter().map(|x| x * scale).collect();
            prop_assert!((similarity(&a_scaled, &b).unwrap() - s).abs() < 1e-12);
        }
    }
}
