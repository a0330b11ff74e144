//! Discrete moves that gradient descent cannot make, accepted only on the true score.
//!
//! DOMAIN.md and docs/records.md: on the third problem the basin is a discrete sign topology
//! (the number and places of the negative runs); a β cascade never changes it, and the gains past
//! 1e-6 reported by the arena's leaders came from discrete moves on good seeds. This stage
//! proposes such moves, drawn from the seeded RNG:
//!
//! - `flip_run`: negate one maximal run of same-sign values (length in `[min_len, max_len]`);
//! - `mirror_segment`: reverse the values of one segment;
//! - `swap_segments`: exchange two equal-length, non-overlapping segments at most `max_len`
//!   cells apart.
//!
//! Segment lengths are log-uniform in `[min_len, max_len]` (capped at the construction's
//! length). Each move may be followed by a short polish (a β cascade over `polish_betas`,
//! `polish_iterations` of L-BFGS at each, in the problem's default parameterisation: [`Lbfgs`];
//! at an equioscillating optimum a move is only ever taken with a polish that re-balances the
//! peak, which one high β alone does not in a few hundred iterations); the candidate then
//! replaces the incumbent only if its **true** score is better: the float64 `score_fast` decides
//! when the difference exceeds both error bounds, `score_exact` decides otherwise. The smooth
//! surrogate never decides, so the stage's exact score never gets worse than its start.
//!
//! Every problem may use it: mirror and swap keep every value (and the sum). A problem whose
//! rules refuse the negated start forbids signs (values ≥ 0, or a box): there `flip_run` would
//! only make invalid candidates, so it is dropped from the move set and the stage's note says so.
//!
//! Budget: one evaluation per scoring (the start, then each candidate), plus the polish's own;
//! the stage ends when the budget refuses or after `proposals` proposals. Deterministic for a
//! seed and an evaluation budget.

use super::lbfgs::Lbfgs;
use super::{at_least_one, betas, certainly_better, Stage, StageOutcome, Tunable, TuneRange};
use crate::optimize::Budget;
use crate::problems::{FastScore, Problem};
use num_rational::BigRational;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// One kind of discrete move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveKind {
    /// Negate one maximal run of same-sign values.
    FlipRun,
    /// Reverse the values of one segment.
    MirrorSegment,
    /// Exchange two equal-length segments.
    SwapSegments,
}

impl MoveKind {
    /// The name as program files write it.
    fn name(self) -> &'static str {
        match self {
            MoveKind::FlipRun => "flip_run",
            MoveKind::MirrorSegment => "mirror_segment",
            MoveKind::SwapSegments => "swap_segments",
        }
    }
}

/// Discrete moves (run flips, segment mirrors and swaps), each optionally polished, accepted
/// only when the true score improves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentMoves {
    /// The moves drawn from, uniformly.
    #[serde(default = "default_moves")]
    pub moves: Vec<MoveKind>,
    /// Most proposals of one run of the stage (the budget may end it first).
    #[serde(default = "default_proposals")]
    pub proposals: u64,
    /// Shortest run or segment moved.
    #[serde(default = "default_min_len")]
    pub min_len: usize,
    /// Longest run or segment moved (and the largest gap between two swapped segments).
    #[serde(default = "default_max_len")]
    pub max_len: usize,
    /// L-BFGS iterations at each β of the polish after each move (0: no polish).
    #[serde(default = "default_polish_iterations")]
    pub polish_iterations: u64,
    /// The polish's β cascade (rising; high, so that it stays in the move's basin).
    #[serde(default = "default_polish_betas")]
    pub polish_betas: Vec<f64>,
    /// The polish's L-BFGS history length.
    #[serde(default = "default_polish_history")]
    pub polish_history: usize,
}

fn default_moves() -> Vec<MoveKind> {
    vec![
        MoveKind::FlipRun,
        MoveKind::MirrorSegment,
        MoveKind::SwapSegments,
    ]
}
fn default_proposals() -> u64 {
    1_000
}
fn default_min_len() -> usize {
    1
}
fn default_max_len() -> usize {
    64
}
fn default_polish_iterations() -> u64 {
    0
}
fn default_polish_betas() -> Vec<f64> {
    vec![1e7, 1e8, 1e9]
}
fn default_polish_history() -> usize {
    20
}

/// The tunable parameters of segment moves.
const TUNABLE: &[Tunable] = &[
    Tunable::new("proposals", TuneRange::Count(10_000_000)),
    Tunable::new("min_len", TuneRange::Count(1 << 20)),
    Tunable::new("max_len", TuneRange::Count(1 << 20)),
    Tunable::new("polish_iterations", TuneRange::Count(100_000)),
    Tunable::new("polish_betas", TuneRange::Positive),
    Tunable::new("polish_history", TuneRange::Count(500)),
];

impl Stage for SegmentMoves {
    fn kind(&self) -> &'static str {
        "segment_moves"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        if self.moves.is_empty() {
            return Err(format!(
                "{path}.moves: needs at least one of flip_run, mirror_segment, swap_segments"
            ));
        }
        at_least_one(path, "proposals", self.proposals as usize)?;
        at_least_one(path, "min_len", self.min_len)?;
        if self.max_len < self.min_len {
            return Err(format!(
                "{path}.max_len: must be at least min_len ({}), got {}",
                self.min_len, self.max_len
            ));
        }
        betas(path, "polish_betas", &self.polish_betas)?;
        at_least_one(path, "polish_history", self.polish_history)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        seed: u64,
    ) -> StageOutcome {
        let mut rng = StdRng::seed_from_u64(seed);
        let signed = {
            let negated: Vec<f64> = start.iter().map(|x| -x).collect();
            problem.check(&negated).is_ok()
        };
        let kinds: Vec<MoveKind> = self
            .moves
            .iter()
            .copied()
            .filter(|&k| signed || k != MoveKind::FlipRun)
            .collect();
        let dropped = if kinds.len() < self.moves.len() {
            "flip_run dropped (the problem forbids signs); "
        } else {
            ""
        };
        if kinds.is_empty() || start.len() < 2 || budget.try_spend().is_err() {
            let mut outcome = StageOutcome::plain(start.to_vec());
            outcome.note = Some(format!("{dropped}no move made"));
            return outcome;
        }
        let polish = (self.polish_iterations > 0).then(|| {
            Lbfgs::log_sum_exp(
                problem,
                None,
                self.polish_betas.clone(),
                self.polish_history,
                self.polish_iterations,
            )
        });
        let mut incumbent = Incumbent::new(problem, start.to_vec());
        let mut tried = [0u64; 3];
        let mut accepted = [0u64; 3];
        for _ in 0..self.proposals {
            if budget.exhausted().is_some() {
                break;
            }
            let kind = kinds[rng.gen_range(0..kinds.len())];
            let Some(mut candidate) = propose(kind, &incumbent.values, self, &mut rng) else {
                continue;
            };
            if let Some(polish) = &polish {
                candidate = polish.run(problem, &candidate, budget, seed).values;
            }
            if problem.check(&candidate).is_err() {
                continue;
            }
            if budget.try_spend().is_err() {
                break;
            }
            tried[kind as usize] += 1;
            if incumbent.offer(problem, candidate) {
                accepted[kind as usize] += 1;
            }
        }
        let counts: Vec<String> = kinds
            .iter()
            .map(|&k| {
                format!(
                    "{} {}/{}",
                    k.name(),
                    accepted[k as usize],
                    tried[k as usize]
                )
            })
            .collect();
        let mut outcome = StageOutcome::plain(incumbent.values);
        outcome.beta = polish.and_then(|_| self.polish_betas.last().copied());
        outcome.note = Some(format!("{dropped}accepted/tried: {}", counts.join(", ")));
        outcome
    }
}

/// The best construction so far with its float64 score, and its exact score once computed.
struct Incumbent {
    values: Vec<f64>,
    fast: FastScore,
    exact: Option<BigRational>,
}

impl Incumbent {
    fn new(problem: &dyn Problem, values: Vec<f64>) -> Incumbent {
        Incumbent {
            fast: problem.score_fast(&values),
            values,
            exact: None,
        }
    }

    /// Takes `candidate` (valid for `problem`) if its true score is better; says whether it did.
    fn offer(&mut self, problem: &dyn Problem, candidate: Vec<f64>) -> bool {
        let fast = problem.score_fast(&candidate);
        match certainly_better(problem, &fast, &self.fast) {
            Some(false) => false,
            Some(true) => {
                *self = Incumbent {
                    values: candidate,
                    fast,
                    exact: None,
                };
                true
            }
            None => {
                let exact = problem.score_exact(&candidate);
                let current = self
                    .exact
                    .get_or_insert_with(|| problem.score_exact(&self.values));
                if !problem.spec().direction.better(&exact, current) {
                    return false;
                }
                *self = Incumbent {
                    values: candidate,
                    fast,
                    exact: Some(exact),
                };
                true
            }
        }
    }
}

/// A length log-uniform in `[lo, hi]` (`1 ≤ lo ≤ hi`).
fn length(rng: &mut StdRng, lo: usize, hi: usize) -> usize {
    let x = rng.gen_range((lo as f64).ln()..=(hi as f64).ln()).exp();
    (x.round() as usize).clamp(lo, hi)
}

/// `values` after one move of `kind` drawn from `rng`; `None` when no such move fits.
fn propose(
    kind: MoveKind,
    values: &[f64],
    stage: &SegmentMoves,
    rng: &mut StdRng,
) -> Option<Vec<f64>> {
    let n = values.len();
    let mut out = values.to_vec();
    match kind {
        MoveKind::FlipRun => {
            let runs: Vec<(usize, usize)> = sign_runs(values)
                .into_iter()
                .filter(|&(a, b)| (stage.min_len..=stage.max_len).contains(&(b - a)))
                .collect();
            if runs.is_empty() {
                return None;
            }
            let (a, b) = runs[rng.gen_range(0..runs.len())];
            out[a..b].iter_mut().for_each(|x| *x = -*x);
        }
        MoveKind::MirrorSegment => {
            let hi = stage.max_len.min(n);
            let lo = stage.min_len.max(2);
            if lo > hi {
                return None;
            }
            let len = length(rng, lo, hi);
            let a = rng.gen_range(0..=n - len);
            out[a..a + len].reverse();
        }
        MoveKind::SwapSegments => {
            let len = length(rng, stage.min_len, stage.max_len.min(n / 2).max(1));
            if 2 * len > n {
                return None;
            }
            let gap = rng.gen_range(0..=stage.max_len.min(n - 2 * len));
            let a = rng.gen_range(0..=n - 2 * len - gap);
            let b = a + len + gap;
            let (left, right) = out.split_at_mut(b);
            left[a..a + len].swap_with_slice(&mut right[..len]);
        }
    }
    (out != values).then_some(out)
}

/// The maximal runs of same-sign values (a zero counts as positive), as half-open ranges.
fn sign_runs(values: &[f64]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=values.len() {
        if i == values.len() || (values[i] < 0.0) != (values[start] < 0.0) {
            runs.push((start, i));
            start = i;
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::SmoothMaxName;
    use crate::problems::by_slug;

    fn third() -> Box<dyn Problem> {
        by_slug("third-autocorrelation-inequality").unwrap()
    }

    fn stage(text: &str) -> SegmentMoves {
        toml::from_str(text).unwrap()
    }

    /// A signed start of `n` values with several negative runs.
    fn signed_start(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let x = i as f64 / n as f64;
                1.0 + 0.8 * (9.0 * x).sin() - 0.9 * (23.0 * x * x).cos()
            })
            .collect()
    }

    #[test]
    fn the_runs_of_a_signed_array() {
        assert_eq!(
            sign_runs(&[1.0, 2.0, -1.0, 0.0, -3.0, -4.0]),
            vec![(0, 2), (2, 3), (3, 4), (4, 6)]
        );
        assert_eq!(sign_runs(&[]), vec![]);
    }

    #[test]
    fn the_exact_score_never_gets_worse_and_moves_are_taken() {
        let p = third();
        let start = signed_start(60);
        let before = p.score_exact(&start);
        for text in ["", "polish_iterations = 20\npolish_betas = [1e4]"] {
            let out = stage(text).run(p.as_ref(), &start, &Budget::evaluations(3_000), 7);
            let after = p.score_exact(&out.values);
            assert!(after < before, "{text}: {after} vs {before}");
            assert!(p.check(&out.values).is_ok());
            assert!(out.note.unwrap().contains("accepted/tried"));
        }
    }

    #[test]
    fn a_bad_parameter_is_an_error_naming_its_key() {
        let cases = [
            ("moves = []", "steps[3].moves"),
            ("min_len = 0", "steps[3].min_len"),
            ("min_len = 8\nmax_len = 4", "steps[3].max_len"),
            ("polish_betas = [1e3, -1.0]", "steps[3].polish_betas[1]"),
            ("polish_betas = []", "steps[3].polish_betas"),
            ("proposals = 0", "steps[3].proposals"),
            ("polish_history = 0", "steps[3].polish_history"),
        ];
        for (text, key) in cases {
            let err = stage(text).check("steps[3]").unwrap_err();
            assert!(err.starts_with(key), "{text}: {err}");
        }
        assert!(stage("").check("steps[0]").is_ok());
        assert!(toml::from_str::<SegmentMoves>("moves = [\"shuffle\"]").is_err());
    }

    #[test]
    fn acceptance_is_on_the_true_score_not_the_surrogate() {
        // At a low β the surrogate weighs every lag, not the peak: among random moves of a
        // signed start, find one that lowers the surrogate and raises the true score.
        let p = third();
        let start = signed_start(40);
        let surrogate = |v: &[f64]| {
            let mut objective = p.objective(v.len(), SmoothMaxName::LogSumExp.build(1.0));
            objective.value_and_gradient(v, &mut vec![0.0; v.len()])
        };
        let mut rng = StdRng::seed_from_u64(11);
        let moves = stage("max_len = 8");
        let fooled = (0..500)
            .filter_map(|i| propose(moves.moves[i % 3], &start, &moves, &mut rng))
            .find(|v| surrogate(v) < surrogate(&start) && p.score_exact(v) > p.score_exact(&start))
            .expect("a move that fools the surrogate");
        let mut incumbent = Incumbent::new(p.as_ref(), start.clone());
        assert!(!incumbent.offer(p.as_ref(), fooled));
        assert_eq!(incumbent.values, start);
        // The stage itself, polishing that surrogate after every move: whatever the polish
        // reaches, nothing worse by the exact score is ever taken.
        let low = stage("polish_iterations = 50\npolish_betas = [1.0]\nproposals = 40");
        let out = low.run(p.as_ref(), &start, &Budget::evaluations(5_000), 3);
        assert!(p.score_exact(&out.values) <= p.score_exact(&start));
    }

    #[test]
    fn a_tie_within_the_error_bound_is_decided_exactly() {
        let p = third();
        let start = signed_start(40);
        let mut incumbent = Incumbent::new(p.as_ref(), start.clone());
        // The mirror image has the same exact score: not better, so refused.
        let mirrored: Vec<f64> = start.iter().rev().copied().collect();
        assert_eq!(p.score_exact(&mirrored), p.score_exact(&start));
        assert!(!incumbent.offer(p.as_ref(), mirrored));
        assert!(incumbent.exact.is_some(), "decided by the exact scores");
    }

    #[test]
    fn the_same_seed_and_evaluations_give_the_same_bits() {
        let p = third();
        let start = signed_start(48);
        let s = stage("polish_iterations = 10\npolish_betas = [1e3, 1e5]");
        let bits = |seed: u64| {
            let budget = Budget::evaluations(400);
            let out = s.run(p.as_ref(), &start, &budget, seed);
            assert!(budget.used() <= 400);
            out.values.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(bits(5), bits(5));
        assert_ne!(bits(5), bits(6));
    }

    #[test]
    fn a_problem_without_signs_never_flips() {
        let first = by_slug("first-autocorrelation-inequality").unwrap();
        let start: Vec<f64> = (0..30).map(|i| 1.0 + (i % 7) as f64).collect();
        let flips = stage("moves = [\"flip_run\"]");
        let out = flips.run(first.as_ref(), &start, &Budget::evaluations(100), 1);
        assert_eq!(out.values, start);
        assert!(out.note.unwrap().contains("flip_run dropped"));
        let out = stage("").run(first.as_ref(), &start, &Budget::evaluations(300), 1);
        assert!(first.check(&out.values).is_ok());
        assert!(first.score_exact(&out.values) <= first.score_exact(&start));
    }
}
