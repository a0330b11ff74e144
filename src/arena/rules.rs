//! What the arena will do with a submission, decided before sending it, on exact values.
//!
//! The arena's rules (agent guide 1.0.x): an agent keeps one solution per problem, so a score not
//! better than the agent's own entry is **discarded**; a score that would take #1 without beating
//! the current best by `minImprovement` is **rejected**; anything else is **accepted** — as the new
//! #1 when it beats the best by the threshold, otherwise at its rank. The leaderboard's scores are
//! the arena's float64 values, compared here as the exact binary numbers they are.

use super::client::LeaderboardEntry;
use crate::exact::rational::{decimal_string, from_f64, to_f64, SCORE_DIGITS};
use crate::problems::Direction;
use num_rational::BigRational;
use num_traits::Signed;
use serde::{Deserialize, Serialize};

/// Relative margins below this are within the float64 noise of the arena's own evaluation.
pub const TOO_CLOSE: f64 = 1e-12;

/// What the arena's rules will do with a submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// It beats the current #1 by the threshold: the new #1.
    NewFirst,
    /// Accepted below #1 (replacing the agent's own entry if it has one).
    Ranked {
        /// Its rank once accepted.
        rank: usize,
        /// Whether it replaces the agent's own, worse entry.
        replaces_own: bool,
    },
    /// It would be #1 but does not beat the best by the threshold: deleted.
    Rejected,
    /// The agent's own entry is as good or better: deleted.
    Discarded,
}

impl Verdict {
    /// Whether the arena keeps the submission.
    pub fn kept(&self) -> bool {
        matches!(self, Verdict::NewFirst | Verdict::Ranked { .. })
    }

    /// The verdict in words.
    pub fn describe(&self) -> String {
        match self {
            Verdict::NewFirst => "would be the new #1 (beats the best by the threshold)".into(),
            Verdict::Ranked {
                rank,
                replaces_own: true,
            } => format!("would replace our own entry, at rank {rank}"),
            Verdict::Ranked { rank, .. } => format!("would enter the leaderboard at rank {rank}"),
            Verdict::Rejected => {
                "would be REJECTED: better than #1 but not by the threshold".into()
            }
            Verdict::Discarded => "would be DISCARDED: our own entry is as good or better".into(),
        }
    }
}

/// A submission checked against a leaderboard.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Assessment {
    /// The rules' verdict.
    pub verdict: Verdict,
    /// Our exact score, 40 significant digits.
    pub score_exact: String,
    /// The current #1 (agent, arena score), if the leaderboard is not empty.
    pub leader: Option<(String, f64)>,
    /// How much better than #1 (positive = better), exact, 6 significant digits.
    pub improvement_over_leader: Option<String>,
    /// The threshold the verdict used.
    pub min_improvement: f64,
    /// Our own entry's arena score, when the agent is named and on the leaderboard.
    pub own_score: Option<f64>,
    /// Whether the deciding comparison is within [`TOO_CLOSE`] relative: the arena's float64
    /// evaluation may decide it the other way.
    pub too_close: bool,
}

/// Applies the arena's rules to a submission scoring `score` (exact) on `leaderboard` (best
/// first, as served), for the agent `agent` (when known), with the server's `direction` and
/// `min_improvement`.
pub fn assess(
    score: &BigRational,
    leaderboard: &[LeaderboardEntry],
    agent: Option<&str>,
    direction: Direction,
    min_improvement: f64,
) -> Assessment {
    let gain = |rival: f64| -> BigRational {
        let rival = from_f64(rival);
        match direction {
            Direction::Minimize => rival - score,
            Direction::Maximize => score - rival,
        }
    };
    let near = |gain: &BigRational, scale: f64| {
        let scale = scale.abs().max(f64::MIN_POSITIVE);
        (to_f64(gain).abs() / scale) < TOO_CLOSE
    };
    let own = agent.and_then(|a| leaderboard.iter().find(|e| e.agent_name == a));
    let leader = leaderboard
        .iter()
        .fold(None::<&LeaderboardEntry>, |best, e| match best {
            Some(b) if !direction.better(&e.best_score, &b.best_score) => Some(b),
            _ => Some(e),
        });
    let threshold = from_f64(min_improvement);
    let mut too_close = false;
    let verdict = if let Some(own) = own.filter(|own| !gain(own.best_score).is_positive()) {
        too_close = near(&gain(own.best_score), own.best_score);
        Verdict::Discarded
    } else {
        match leader {
            None => Verdict::NewFirst,
            Some(leader) => {
                let g = gain(leader.best_score);
                if g.is_positive() {
                    too_close = near(&(&g - &threshold), leader.best_score);
                    if g >= threshold {
                        Verdict::NewFirst
                    } else {
                        Verdict::Rejected
                    }
                } else {
                    too_close = near(&g, leader.best_score);
                    let others_ahead = leaderboard
                        .iter()
                        .filter(|e| Some(e.agent_name.as_str()) != agent)
                        .filter(|e| !gain(e.best_score).is_positive())
                        .count();
                    Verdict::Ranked {
                        rank: others_ahead + 1,
                        replaces_own: own.is_some(),
                    }
                }
            }
        }
    };
    Assessment {
        verdict,
        score_exact: decimal_string(score, SCORE_DIGITS),
        leader: leader.map(|l| (l.agent_name.clone(), l.best_score)),
        improvement_over_leader: leader.map(|l| decimal_string(&gain(l.best_score), 6)),
        min_improvement,
        own_score: own.map(|o| o.best_score),
        too_close,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::rational::decimal_of_f64;

    fn board(entries: &[(&str, f64)]) -> Vec<LeaderboardEntry> {
        entries
            .iter()
            .enumerate()
            .map(|(i, (a, s))| LeaderboardEntry {
                rank: i + 1,
                agent_name: a.to_string(),
                best_score: *s,
                submissions: None,
            })
            .collect()
    }

    fn verdict(score: f64, entries: &[(&str, f64)], agent: Option<&str>) -> Verdict {
        let b = board(entries);
        assess(&decimal_of_f64(score), &b, agent, Direction::Minimize, 1e-4).verdict
    }

    #[test]
    fn the_decision_tree_of_the_agent_guide() {
        let lb = [("alpha", 1.5), ("beta", 1.6), ("us", 1.7)];
        assert_eq!(verdict(1.4, &lb, Some("us")), Verdict::NewFirst);
        assert_eq!(verdict(1.49995, &lb, Some("us")), Verdict::Rejected);
        assert_eq!(
            verdict(1.55, &lb, Some("us")),
            Verdict::Ranked {
                rank: 2,
                replaces_own: true
            }
        );
        assert_eq!(verdict(1.7, &lb, Some("us")), Verdict::Discarded, "a tie");
        assert_eq!(verdict(1.8, &lb, Some("us")), Verdict::Discarded);
        assert_eq!(
            verdict(1.8, &lb, Some("new")),
            Verdict::Ranked {
                rank: 4,
                replaces_own: false
            }
        );
        assert_eq!(verdict(1.8, &[], None), Verdict::NewFirst);
        // Tying #1 is not better than #1: ranked behind it.
        assert_eq!(
            verdict(1.5, &lb, None),
            Verdict::Ranked {
                rank: 2,
                replaces_own: false
            }
        );
    }

    #[test]
    fn the_threshold_is_decided_exactly_in_both_directions() {
        // 1.5 - 1e-4 in float64 is not exactly 1.4999; the exact comparison decides.
        let lb = board(&[("alpha", 1.5)]);
        let exactly = from_f64(1.5) - from_f64(1e-4);
        let a = assess(&exactly, &lb, None, Direction::Minimize, 1e-4);
        assert_eq!(a.verdict, Verdict::NewFirst);
        assert!(a.too_close);
        let short = &exactly + BigRational::new(1.into(), num_bigint::BigInt::from(10).pow(30));
        let a = assess(&short, &lb, None, Direction::Minimize, 1e-4);
        assert_eq!(a.verdict, Verdict::Rejected);
        let up = assess(
            &decimal_of_f64(0.97),
            &board(&[("a", 0.96)]),
            None,
            Direction::Maximize,
            1e-4,
        );
        assert_eq!(up.verdict, Verdict::NewFirst);
        assert_eq!(up.leader, Some(("a".into(), 0.96)));
    }
}
