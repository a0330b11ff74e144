//! A budget of objective evaluations and wall-clock time, shared across optimisation stages.

use crate::cancel::CancelToken;
use crate::tally::Tally;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The largest wall-clock budget milo accepts, in seconds (1e7 s, about 116 days): more than any
/// run needs, and far from what a [`Duration`] or an [`Instant`] can hold.
pub const MAX_SECONDS: f64 = 1e7;

/// Checks a budget of `seconds` given by `what` (a flag or a key): a number in (0, [`MAX_SECONDS`]];
/// the message names `what`, the value and the allowed range.
pub fn check_seconds(what: &str, seconds: f64) -> Result<f64, String> {
    if seconds.is_finite() && seconds > 0.0 && seconds <= MAX_SECONDS {
        Ok(seconds)
    } else {
        Err(format!(
            "{what} must be a number of seconds in (0, {MAX_SECONDS:e}], got {seconds:?}"
        ))
    }
}

/// Checks the limits of one run as its caller names them (`names`: seconds, evaluations, jobs;
/// `--budget`, `--evaluations`, `--jobs` on the command line): seconds as [`check_seconds`], at
/// least one evaluation, and a thread count in [`crate::bounds::JOBS`].
pub fn check_run_limits(
    names: [&str; 3],
    seconds: Option<f64>,
    evaluations: Option<u64>,
    jobs: u64,
) -> Result<(), String> {
    let [seconds_name, evaluations_name, jobs_name] = names;
    crate::bounds::check(jobs_name, jobs, &crate::bounds::JOBS)?;
    if let Some(seconds) = seconds {
        check_seconds(seconds_name, seconds)?;
    }
    if evaluations == Some(0) {
        return Err(format!("{evaluations_name} must be at least 1, got 0"));
    }
    Ok(())
}

/// Why a [`Budget`] refuses further evaluations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exhaustion {
    /// The maximum number of objective evaluations has been used.
    Evaluations,
    /// The deadline has passed.
    Deadline,
    /// The budget's [`CancelToken`] was cancelled (e.g. Ctrl-C).
    Interrupted,
}

impl std::fmt::Display for Exhaustion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exhaustion::Evaluations => f.write_str("budget exhausted: evaluations"),
            Exhaustion::Deadline => f.write_str("budget exhausted: deadline"),
            Exhaustion::Interrupted => f.write_str("interrupted"),
        }
    }
}

/// Limits on objective evaluations and wall-clock time, with a counter of evaluations used.
///
/// The solver asks [`Budget::try_spend`] before every call of the objective, so the number of
/// objective calls never exceeds `max_evaluations`. A budget is single-threaded (the counter is a
/// [`Cell`]) and is shared by reference between stages; [`Budget::share`] carves out a stage's part.
/// A deadline makes a run depend on the machine's speed; an evaluation limit keeps it deterministic.
#[derive(Debug, Default)]
pub struct Budget {
    /// No evaluation starts after this instant.
    pub deadline: Option<Instant>,
    /// At most this many objective evaluations in total.
    pub max_evaluations: Option<u64>,
    /// Once cancelled, the budget refuses every evaluation (so running stages wind down).
    pub cancel: CancelToken,
    /// Every evaluation spent under this budget and its shares, for a live display.
    pub tally: Tally,
    used: Cell<u64>,
}

impl Budget {
    /// A budget without limits.
    pub fn unlimited() -> Self {
        Self::default()
    }

    /// A budget of at most `max` evaluations.
    pub fn evaluations(max: u64) -> Self {
        Self::unlimited().with_max_evaluations(max)
    }

    /// This budget with an evaluation limit.
    #[must_use]
    pub fn with_max_evaluations(mut self, max: u64) -> Self {
        self.max_evaluations = Some(max);
        self
    }

    /// This budget cancelled with `cancel`.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// This budget counting its evaluations (and its shares') in `tally` too.
    #[must_use]
    pub fn with_tally(mut self, tally: Tally) -> Self {
        self.tally = tally;
        self
    }

    /// This budget with a deadline.
    #[must_use]
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// This budget with a deadline `limit` from now (none if the clock cannot represent it).
    #[must_use]
    pub fn with_time_limit(self, limit: Duration) -> Self {
        match Instant::now().checked_add(limit) {
            Some(deadline) => self.with_deadline(deadline),
            None => self,
        }
    }

    /// Evaluations counted so far.
    pub fn used(&self) -> u64 {
        self.used.get()
    }

    /// Evaluations still allowed (`None`: no limit).
    pub fn remaining_evaluations(&self) -> Option<u64> {
        self.max_evaluations
            .map(|max| max.saturating_sub(self.used.get()))
    }

    /// Time left before the deadline (`None`: no deadline).
    pub fn remaining_time(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Why no further evaluation is allowed, or `None` while some are.
    pub fn exhausted(&self) -> Option<Exhaustion> {
        if self.cancel.is_cancelled() {
            return Some(Exhaustion::Interrupted);
        }
        if self.remaining_evaluations() == Some(0) {
            return Some(Exhaustion::Evaluations);
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Some(Exhaustion::Deadline),
            _ => None,
        }
    }

    /// Count one evaluation if the budget allows it; otherwise say why not (and count nothing).
    pub fn try_spend(&self) -> Result<(), Exhaustion> {
        match self.exhausted() {
            Some(why) => Err(why),
            None => {
                self.used.set(self.used.get() + 1);
                self.tally.add(1);
                Ok(())
            }
        }
    }

    /// Count `n` evaluations made elsewhere (e.g. under a [`Budget::share`] of this budget).
    pub fn charge(&self, n: u64) {
        self.used.set(self.used.get().saturating_add(n));
    }

    /// A fresh budget holding `fraction` (clamped to \[0, 1\]) of what remains of this one: that
    /// share of the remaining evaluations (rounded down) and of the remaining time. Its counter
    /// starts at zero; [`Budget::charge`] its use back to this budget afterwards.
    pub fn share(&self, fraction: f64) -> Budget {
        let fraction = if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 1.0)
        };
        let max_evaluations = self
            .remaining_evaluations()
            .map(|r| ((r as f64) * fraction).floor() as u64);
        let deadline = self
            .remaining_time()
            .map(|t| Instant::now() + t.mul_f64(fraction));
        Budget {
            deadline: match (deadline, self.deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                _ => None,
            },
            max_evaluations,
            cancel: self.cancel.clone(),
            tally: self.tally.clone(),
            used: Cell::new(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_refuses_past_the_limit() {
        let b = Budget::evaluations(3);
        assert!(b.try_spend().is_ok());
        assert!(b.try_spend().is_ok());
        assert!(b.try_spend().is_ok());
        assert_eq!(b.try_spend(), Err(Exhaustion::Evaluations));
        assert_eq!(b.used(), 3);
    }

    #[test]
    fn past_deadline_is_exhausted() {
        let b = Budget::unlimited().with_deadline(Instant::now());
        assert_eq!(b.exhausted(), Some(Exhaustion::Deadline));
        assert!(Budget::unlimited().exhausted().is_none());
    }

    #[test]
    fn share_takes_a_fraction_of_what_remains() {
        let b = Budget::evaluations(10);
        b.charge(4);
        let s = b.share(0.5);
        assert_eq!(s.max_evaluations, Some(3));
        assert_eq!(s.used(), 0);
        assert_eq!(Budget::unlimited().share(0.5).max_evaluations, None);
    }

    #[test]
    fn a_cancelled_token_exhausts_the_budget_and_its_shares() {
        let cancel = CancelToken::new();
        let b = Budget::evaluations(10).with_cancel(cancel.clone());
        let s = b.share(0.5);
        assert!(b.exhausted().is_none() && s.exhausted().is_none());
        cancel.cancel();
        assert_eq!(b.try_spend(), Err(Exhaustion::Interrupted));
        assert_eq!(s.exhausted(), Some(Exhaustion::Interrupted));
    }
}
