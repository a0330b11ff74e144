//! Upper bounds on the counts milo reads: from the command line (checked by the parser, so a
//! bad value exits 2 before anything runs) and again from a run's or benchmark's recorded
//! settings when it resumes (a record edited by hand gets the same one-line error). Each bound
//! is far above any useful setting and far below what would exhaust memory or threads.

use std::ops::RangeInclusive;

/// Islands of a MILO run.
pub const ISLANDS: RangeInclusive<u64> = 1..=64;
/// Threads evaluating tasks.
pub const JOBS: RangeInclusive<u64> = 1..=1_024;
/// Search tasks per harness per round.
pub const TASKS_PER_ROUND: RangeInclusive<u64> = 1..=4_096;
/// Seeds of one benchmark batch.
pub const SEEDS: RangeInclusive<u64> = 1..=1_000;
/// Methods of one benchmark.
pub const METHODS: RangeInclusive<u64> = 1..=64;
/// Rounds of a run (0: only the seeds are evaluated).
pub const ROUNDS: RangeInclusive<u64> = 0..=1_000_000;
/// Rounds an island may stall before the orchestrator is consulted.
pub const PATIENCE: RangeInclusive<u64> = 1..=1_000;
/// Attempts per task.
pub const ATTEMPTS: RangeInclusive<u64> = 1..=100;
/// Tasks of a race's block, and most tasks a raced child runs.
pub const RACE_TASKS: RangeInclusive<u64> = 1..=4_096;
/// Slurm counts: the throttle, the pilots, the submissions of one task.
pub const SLURM_COUNT: RangeInclusive<u64> = 1..=10_000;
/// Seed harnesses a run starts from.
pub const SEED_HARNESSES: RangeInclusive<u64> = 1..=64;
/// Programs a slot's archive keeps as parents (`--archive-population`).
pub const ARCHIVE_POPULATION: RangeInclusive<u64> = 1..=1_000;

/// `Ok` if `value` lies in `range`, else the one-line error naming `name`, the range and the
/// value.
pub fn check(name: &str, value: u64, range: &RangeInclusive<u64>) -> Result<(), String> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(format!(
            "{name} must be in {}..={}, got {value}",
            range.start(),
            range.end()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_out_of_its_range_names_the_range_and_the_value() {
        assert!(check("--islands", 3, &ISLANDS).is_ok());
        let e = check("--islands", u64::MAX, &ISLANDS).unwrap_err();
        assert_eq!(e, "--islands must be in 1..=64, got 18446744073709551615");
        assert!(check("--jobs", 0, &JOBS).is_err());
    }
}
