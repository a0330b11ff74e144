//! The racing budget policy of a harness (`[racing]`): successive halving over revisions.
//!
//! The exploration share becomes a tournament. The first rung runs `candidates` programs from
//! the same incumbent (the task's start or the best construction so far, per `run_from`) on
//! `first_rung` of the exploration budget, split evenly: the parent program unchanged and
//! `candidates - 1` revisions. The best `1/eta` of a rung (by float score) continue, each from
//! its own result, on an equal share of what is left; the last one standing takes the rest.
//! As the parent itself runs in the race, a racing harness gives up only the budget of the
//! losing first-rung runs against re-running the parent, never the parent's own progress.

use serde::{Deserialize, Serialize};

/// Successive-halving settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Racing {
    /// Programs in the first rung, the parent unchanged among them (2–16).
    pub candidates: usize,
    /// Share of the exploration budget the first rung spends (0–1, exclusive).
    pub first_rung: f64,
    /// Each rung keeps the best `1/eta` of its programs, rounded up (2–8).
    pub eta: usize,
}

impl Racing {
    /// The settings a structural edit switches racing on with.
    pub const DEFAULT: Racing = Racing {
        candidates: 4,
        first_rung: 0.3,
        eta: 2,
    };

    /// Value checks serde cannot express; the message names the key (under `racing.`).
    pub fn check(&self) -> Result<(), String> {
        if !(2..=16).contains(&self.candidates) {
            return Err(format!(
                "racing.candidates: must be 2–16, got {}",
                self.candidates
            ));
        }
        if !(self.first_rung > 0.0 && self.first_rung < 1.0) {
            return Err(format!(
                "racing.first_rung: must be in (0, 1), got {}",
                self.first_rung
            ));
        }
        if !(2..=8).contains(&self.eta) {
            return Err(format!("racing.eta: must be 2–8, got {}", self.eta));
        }
        Ok(())
    }

    /// The number of programs in each rung, first to last: `candidates`, then each rung's
    /// survivors, down to one.
    pub fn rungs(&self) -> Vec<usize> {
        let mut sizes = vec![self.candidates];
        while let Some(&last) = sizes.last().filter(|&&n| n > 1) {
            sizes.push(last.div_ceil(self.eta));
        }
        sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rungs_halve_down_to_one() {
        let racing = |candidates, eta| Racing {
            candidates,
            first_rung: 0.3,
            eta,
        };
        assert_eq!(racing(4, 2).rungs(), [4, 2, 1]);
        assert_eq!(racing(5, 2).rungs(), [5, 3, 2, 1]);
        assert_eq!(racing(9, 3).rungs(), [9, 3, 1]);
        assert_eq!(racing(2, 8).rungs(), [2, 1]);
    }

    #[test]
    fn bad_settings_name_the_key_and_value() {
        let bad = Racing {
            candidates: 1,
            ..Racing::DEFAULT
        };
        assert!(bad.check().unwrap_err().contains("racing.candidates"));
        let bad = Racing {
            first_rung: 1.0,
            ..Racing::DEFAULT
        };
        assert!(bad.check().unwrap_err().contains("got 1"));
        let bad = Racing {
            eta: 9,
            ..Racing::DEFAULT
        };
        assert!(bad.check().unwrap_err().contains("racing.eta"));
        assert!(Racing::DEFAULT.check().is_ok());
    }
}
