//! The verdict line a run ends with: its best against where it started (or a record) and
//! against the arena's #1, in the problem's direction.

use crate::problems::{Direction, ProblemSpec};

/// `score` against `of` (named `name`): how far better or behind, or equal.
pub fn against(direction: Direction, score: f64, of: f64, name: &str) -> String {
    match ahead(direction, score, of) {
        d if d > 0.0 => format!("{d:.2e} better than {name} {of:.8}"),
        d if d < 0.0 => format!("{:.2e} behind {name} {of:.8}", -d),
        _ => format!("equal to {name} {of:.8}"),
    }
}

/// `score` against the arena's #1, if the problem knows it, and whether it passes it by the
/// arena's threshold.
pub fn against_arena_first(spec: &ProblemSpec, score: f64) -> Option<String> {
    let first = spec.arena_first()?;
    let beats = ahead(spec.direction, score, first.value) >= spec.min_improvement;
    Some(format!(
        "{} ({})",
        against(spec.direction, score, first.value, "the arena #1"),
        match beats {
            true => "past it by the arena's threshold: a new #1",
            false => "not a new #1",
        }
    ))
}

/// How far `score` is ahead of `of`: positive when better, in the problem's direction.
fn ahead(direction: Direction, score: f64, of: f64) -> f64 {
    match direction {
        Direction::Minimize => of - score,
        Direction::Maximize => score - of,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_reads_in_the_problems_direction() {
        let text = against(Direction::Minimize, 1.0, 1.5, "the start");
        assert_eq!(text, "5.00e-1 better than the start 1.50000000");
        let text = against(Direction::Maximize, 1.0, 1.5, "the start");
        assert_eq!(text, "5.00e-1 behind the start 1.50000000");
    }
}
