//! Live counts shared between threads: the work adds to a [`Tally`] as it goes, a progress
//! display reads it on every tick (evaluations a run spent, task runs a search finished).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A count shared by its clones: the work adds to it, a display reads it.
#[derive(Clone, Debug, Default)]
pub struct Tally(Arc<AtomicU64>);

impl Tally {
    /// Adds `n` to the count.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The count now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The task runs of a search: handed to an executor, and finished.
#[derive(Clone, Debug, Default)]
pub struct TaskTally {
    /// Task runs handed to the executor so far.
    pub planned: Tally,
    /// Task runs finished so far.
    pub finished: Tally,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_count() {
        let tally = Tally::default();
        let clone = tally.clone();
        clone.add(3);
        tally.add(2);
        assert_eq!((tally.get(), clone.get()), (5, 5));
    }
}
