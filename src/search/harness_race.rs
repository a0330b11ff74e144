//! Harness racing, the `race` admission policy (not the `[racing]` of a harness, which races
//! programs within one task): the children of one step share one parent
//! evaluation and race block by block, as in irace's F-race (losers leave early, survivors run
//! to the end) and GEPA's minibatch-then-full acceptance (no full evaluation without a minibatch
//! improvement). Every child runs on a first block of the round's tasks (the tasks go round the
//! search slots in turn, so a block of one task per slot is balanced); after each block, on the
//! per-task differences from the parent:
//!
//! - **reject** when the mean gain is negative, or zero without a saving of cost: the child
//!   shows nothing on the tasks so far;
//! - **reject** when the mean gain is positive but its t statistic is below the one-sided
//!   critical value at `futility` (a loose bound, 0.25 by default, as group-sequential designs
//!   stop for futility): on two tasks, a child that lost on one of them;
//! - **continue** otherwise, on the next block (parent and child both), up to the cap;
//! - at the cap, **admit** when the mean gain is positive and clears the one-sided paired t
//!   test at `alpha` (n − 1 degrees of freedom), or ties its parent within the test and is
//!   significantly cheaper (the `paired` rule's tie-break); reject otherwise.
//!
//! So every admitted child ran on every task up to the cap, and its fitness compares with its
//! island's other members; only rejections come early. A child rejected after its first block
//! costs that block plus its share of the parent's; the `paired` policy runs the parent and one
//! child on every task of the round.

use super::admission::{Paired, Verdict};
use super::evaluation::{CostMeasure, Evaluation};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The knobs of the `race` policy (recorded in the run's settings).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RaceSettings {
    /// Children proposed in a step, sharing one parent evaluation.
    pub children: usize,
    /// Tasks in each block (absent: one per search slot, at least 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    /// Most tasks a child runs (absent: every task of the round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<usize>,
    /// One-sided significance level of the paired t test at the cap.
    pub alpha: f64,
    /// One-sided level of the futility bound before the cap: a child whose gain's t statistic
    /// falls below its critical value stops.
    pub futility: f64,
}

/// Children per raced step unless a run says otherwise.
pub const DEFAULT_CHILDREN: usize = 4;

/// Significance level of the race's test unless a run says otherwise.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Level of the race's futility bound unless a run says otherwise.
pub const DEFAULT_FUTILITY: f64 = 0.25;

impl Default for RaceSettings {
    fn default() -> Self {
        RaceSettings {
            children: DEFAULT_CHILDREN,
            block: None,
            cap: None,
            alpha: DEFAULT_ALPHA,
            futility: DEFAULT_FUTILITY,
        }
    }
}

impl RaceSettings {
    /// A one-line error naming the first knob out of range, if any.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_CHILDREN).contains(&self.children) {
            return Err(format!(
                "--race-children must be in 1..={MAX_CHILDREN}, got {}",
                self.children
            ));
        }
        for (name, tasks) in [("--race-block", self.block), ("--race-cap", self.cap)] {
            if let Some(tasks) = tasks {
                crate::bounds::check(name, tasks as u64, &crate::bounds::RACE_TASKS)?;
            }
        }
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return Err(format!(
                "--race-alpha must be in (0, 0.5), got {}",
                self.alpha
            ));
        }
        if !(self.futility >= self.alpha && self.futility <= 0.5) {
            return Err(format!(
                "--race-futility must be in [--race-alpha, 0.5], got {}",
                self.futility
            ));
        }
        Ok(())
    }

    /// The block size and the cap for a round of `tasks` tasks over `slots` search slots.
    pub fn schedule(&self, tasks: usize, slots: usize) -> (usize, usize) {
        let cap = self.cap.unwrap_or(tasks).clamp(1, tasks.max(1));
        let block = self.block.unwrap_or(slots.max(2)).clamp(1, cap);
        (block, cap)
    }
}

/// Most children a raced step may propose.
pub const MAX_CHILDREN: usize = 64;

/// What the race says about a child after a block.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Decided: the verdict.
    Decided(Verdict),
    /// Not yet: run it on the next block.
    Continue,
}

/// The one-sided critical value of Student's t at `alpha` with `n - 1` degrees of freedom
/// (infinite for one task: a single difference decides nothing).
fn critical_t(n: usize, alpha: f64) -> f64 {
    if n < 2 {
        return f64::INFINITY;
    }
    StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .expect("positive degrees of freedom")
        .inverse_cdf(1.0 - alpha)
}

/// Decides `child` against `parent` on the tasks both ran so far (the same, in order), under
/// `measure` and the race's levels; `last` says no further block is possible (the cap is
/// reached).
pub fn decide(
    parent: &Evaluation,
    child: &Evaluation,
    measure: CostMeasure,
    race: &RaceSettings,
    last: bool,
) -> Decision {
    let decided =
        |admitted, reason: String| Decision::Decided(Verdict::new(parent, child, admitted, reason));
    let stats = match Paired::of(parent, child, measure) {
        Ok(stats) => stats,
        Err(reason) => return decided(false, reason),
    };
    let t = critical_t(stats.n, race.alpha);
    let (gain, gain_error) = stats.gain;
    let (saving, saving_error) = stats.saving;
    let after = format!("raced, decided after {} tasks", stats.n);
    let gain_text = stats.gain_text();
    if last && gain > 0.0 && gain > t * gain_error {
        return decided(true, format!("beats its parent ({after}): {gain_text}"));
    }
    if gain < 0.0 {
        let how = match -gain > t * gain_error {
            true => "loses to its parent",
            false => "falls behind its parent",
        };
        return decided(false, format!("{how} ({after}): {gain_text}"));
    }
    let saving_text = stats.saving_text(measure);
    let cheaper = saving > 0.0 && saving > t * saving_error;
    if gain == 0.0 && saving <= 0.0 {
        return decided(
            false,
            format!("shows no gain and no saving ({after}): {gain_text}; {saving_text}"),
        );
    }
    let futile = gain > 0.0 && gain < critical_t(stats.n, race.futility) * gain_error;
    if !last && futile {
        return decided(
            false,
            format!("shows too little gain to go on ({after}): {gain_text}"),
        );
    }
    if !last {
        return Decision::Continue;
    }
    match cheaper {
        true => decided(
            true,
            format!("ties its parent and is cheaper ({after}): {gain_text}; {saving_text}"),
        ),
        false => decided(
            false,
            format!("ties its parent at the cap ({after}): {gain_text}; {saving_text}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::admission::tests::evaluation;

    const WORK: [f64; 8] = [1e6; 8];

    fn race(parent: &[f64], child: &[f64], last: bool) -> Decision {
        let n = parent.len();
        decide(
            &evaluation(parent, &WORK[..n]),
            &evaluation(child, &WORK[..n]),
            CostMeasure::Counted,
            &RaceSettings::default(),
            last,
        )
    }

    fn admitted(decision: &Decision) -> Option<bool> {
        match decision {
            Decision::Decided(v) => Some(v.admitted),
            Decision::Continue => None,
        }
    }

    #[test]
    fn a_worse_or_idle_child_is_rejected_after_its_first_block() {
        let d = race(&[1.0, 1.0], &[0.5, 0.9], false);
        assert_eq!(admitted(&d), Some(false), "{d:?}");
        let d = race(&[1.0, 1.0], &[1.0, 1.0], false);
        assert_eq!(admitted(&d), Some(false), "{d:?}");
        // A positive mean from one task of two: futile.
        let d = race(&[1.0, 1.0], &[3.0, 0.9], false);
        assert_eq!(admitted(&d), Some(false), "{d:?}");
        let Decision::Decided(v) = d else { panic!() };
        assert!(v.reason.contains("after 2 tasks"), "{}", v.reason);
    }

    #[test]
    fn a_promising_child_runs_to_the_cap_where_a_clear_gain_is_admitted() {
        let steady = [1.5, 1.4, 1.6, 1.5];
        assert_eq!(race(&[1.0; 4], &steady, false), Decision::Continue);
        let d = race(&[1.0; 4], &steady, true);
        assert_eq!(admitted(&d), Some(true), "{d:?}");
        // Two tasks: the critical t with one degree of freedom is 6.3, so at the cap a noisy gain
        // is a tie, not a win.
        assert_eq!(admitted(&race(&[1.0, 1.0], &[1.5, 1.1], true)), Some(false));
    }

    #[test]
    fn the_schedule_and_knobs_are_checked() {
        let race = RaceSettings::default();
        assert_eq!(race.schedule(8, 2), (2, 8));
        assert_eq!(race.schedule(8, 3), (3, 8));
        let capped = RaceSettings {
            block: Some(5),
            cap: Some(4),
            ..race
        };
        assert_eq!(capped.schedule(8, 2), (4, 4));
        assert!(race.check().is_ok());
        let bad = RaceSettings { alpha: 0.7, ..race };
        assert!(bad.check().unwrap_err().contains("0.7"));
        let bad = RaceSettings {
            futility: 0.01,
            ..race
        };
        assert!(bad.check().unwrap_err().contains("--race-futility"));
        let bad = RaceSettings {
            children: 0,
            ..race
        };
        assert!(bad.check().unwrap_err().contains("--race-children"));
    }
}
