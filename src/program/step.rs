//! One step of a program: a stage (from [`crate::stages`]) or a control-flow block around steps,
//! with the step's share of the budget.

use crate::stages::adam::Adam;
use crate::stages::command::RunCommand;
use crate::stages::dinkelbach::Dinkelbach;
use crate::stages::finalize::Finalize;
use crate::stages::lbfgs::Lbfgs;
use crate::stages::perturb::Perturb;
use crate::stages::prune::Prune;
use crate::stages::prune_regrow::PruneRegrow;
use crate::stages::refine::Refine;
use crate::stages::resample::Resample;
use crate::stages::revive::Revive;
use crate::stages::segment_moves::SegmentMoves;
use crate::stages::sequential_lp::SequentialLp;
use crate::stages::symmetrize::Symmetrize;
use crate::stages::trim::Trim;
use crate::stages::{at_least_one, Stage, TuneRange};
use serde::{Deserialize, Serialize};

/// One step of a program: what it does, and its share of the budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The stage or block, with its `kind` and parameters.
    #[serde(flatten)]
    pub action: Action,
    /// Share of the enclosing budget (the unshared rest is split evenly among the steps that
    /// spend evaluations); only steps that spend evaluations take one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
}

/// What a step does: a stage, or a control-flow block around steps. Written in program files as
/// `kind = "<name>"` with the parameters beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    /// L-BFGS on the smooth surrogate with a β cascade.
    Lbfgs(Lbfgs),
    /// Adam with gradient noise.
    Adam(Adam),
    /// Dinkelbach iterations on the ratio objective.
    Dinkelbach(Dinkelbach),
    /// Trust-region sequential LP over the most active lags.
    SequentialLp(SequentialLp),
    /// A resolution change.
    Resample(Resample),
    /// Lift the dead cells the gradient says should live, re-polish, keep it only if better.
    Revive(Revive),
    /// A finer grid by block repeat, then a β cascade from a low floor.
    Refine(Refine),
    /// A random perturbation.
    Perturb(Perturb),
    /// Discrete moves (run flips, segment mirrors and swaps) accepted on the true score.
    SegmentMoves(SegmentMoves),
    /// Monotone pruning of the support (never regrows).
    Prune(Prune),
    /// Prune–regrow of the support.
    PruneRegrow(PruneRegrow),
    /// Drop the zero cells at both ends.
    Trim(Trim),
    /// Mirror the values and average.
    Symmetrize(Symmetrize),
    /// Zero tiny values, check constraints, verify exactly.
    Finalize(Finalize),
    /// Run an external program (e.g. a Python script) that reads and writes a construction.
    Command(RunCommand),
    /// Run the body `times` times.
    Repeat(Repeat),
    /// Run the body until the best score has not improved (by more than `min_gain`) for
    /// `patience` passes.
    UntilStall(UntilStall),
    /// Run the body `count` times from the same start with derived seeds; keep the best.
    Restarts(Restarts),
    /// Run the body and keep its result only if it improves the score.
    KeepBest(KeepBest),
}

/// Run the body `times` times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repeat {
    /// Repetitions.
    pub times: usize,
    /// The steps repeated.
    pub body: Vec<Step>,
}

/// Run the body until the best score has not improved by more than `min_gain` for `patience`
/// passes in a row (the block's convergence test).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UntilStall {
    /// Passes without improvement before stopping.
    pub patience: usize,
    /// A pass counts as an improvement only if it betters the best score by more than this (in
    /// score units; 0: any strict improvement).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_gain: f64,
    /// The steps repeated.
    pub body: Vec<Step>,
}

/// Run the body `count` times from the same start with derived seeds; keep the best.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restarts {
    /// Independent runs.
    pub count: usize,
    /// The steps of one run.
    pub body: Vec<Step>,
}

/// Run the body and keep its result only if it improves the score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeepBest {
    /// The steps tried.
    pub body: Vec<Step>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl From<Action> for Step {
    /// The step without a stated share.
    fn from(action: Action) -> Step {
        Step {
            action,
            share: None,
        }
    }
}

impl Action {
    /// The stage, unless this is a control-flow block.
    pub fn stage(&self) -> Option<&dyn Stage> {
        Some(match self {
            Action::Lbfgs(s) => s,
            Action::Adam(s) => s,
            Action::Dinkelbach(s) => s,
            Action::SequentialLp(s) => s,
            Action::Resample(s) => s,
            Action::Revive(s) => s,
            Action::Refine(s) => s,
            Action::Perturb(s) => s,
            Action::SegmentMoves(s) => s,
            Action::Prune(s) => s,
            Action::PruneRegrow(s) => s,
            Action::Trim(s) => s,
            Action::Symmetrize(s) => s,
            Action::Finalize(s) => s,
            Action::Command(s) => s,
            Action::Repeat(_)
            | Action::UntilStall(_)
            | Action::Restarts(_)
            | Action::KeepBest(_) => return None,
        })
    }

    /// The body of a control-flow block (`None` for a stage).
    pub fn body(&self) -> Option<&[Step]> {
        match self {
            Action::Repeat(Repeat { body, .. })
            | Action::UntilStall(UntilStall { body, .. })
            | Action::Restarts(Restarts { body, .. })
            | Action::KeepBest(KeepBest { body }) => Some(body),
            _ => None,
        }
    }

    /// The body of a control-flow block, to edit (`None` for a stage).
    pub fn body_mut(&mut self) -> Option<&mut Vec<Step>> {
        match self {
            Action::Repeat(Repeat { body, .. })
            | Action::UntilStall(UntilStall { body, .. })
            | Action::Restarts(Restarts { body, .. })
            | Action::KeepBest(KeepBest { body }) => Some(body),
            _ => None,
        }
    }

    /// The block's count (`times`, `patience` or `count`) with its key, if it has one.
    fn count(&self) -> Option<(&'static str, usize)> {
        match self {
            Action::Repeat(r) => Some(("times", r.times)),
            Action::UntilStall(u) => Some(("patience", u.patience)),
            Action::Restarts(r) => Some(("count", r.count)),
            _ => None,
        }
    }
}

impl Step {
    /// The `kind` name of the step as written in program files.
    pub fn kind(&self) -> &'static str {
        match &self.action {
            Action::Repeat(_) => "repeat",
            Action::UntilStall(_) => "until_stall",
            Action::Restarts(_) => "restarts",
            Action::KeepBest(_) => "keep_best",
            stage => stage.stage().map_or("", |s| s.kind()),
        }
    }

    /// Whether the step spends objective evaluations (an optimizer, or a block around steps)
    /// rather than reshaping the values directly.
    pub fn spends_evaluations(&self) -> bool {
        self.action.stage().is_none_or(|s| s.spends_evaluations())
    }

    /// How a tuning edit may move the numeric parameter `key` of this step (dotted for a nested
    /// table), or `None` if it is not tunable: the share, a block's count, or what the stage says.
    pub fn tune_range(&self, key: &str) -> Option<TuneRange> {
        if key == "share" {
            return Some(TuneRange::Fraction);
        }
        match self.action.stage() {
            Some(stage) => stage
                .tunable()
                .iter()
                .find(|t| t.key == key)
                .map(|t| t.range),
            None if key == "min_gain" && matches!(self.action, Action::UntilStall(_)) => {
                Some(TuneRange::Positive)
            }
            None => self
                .action
                .count()
                .filter(|(name, _)| *name == key)
                .map(|(name, _)| TuneRange::Count(block_count_max(name))),
        }
    }

    /// Value checks of this step (and its body) at `path`; the message names the path and key.
    pub(crate) fn check(&self, path: &str) -> Result<(), String> {
        if let Some(share) = self.share {
            if !self.spends_evaluations() {
                return Err(format!(
                    "{path}.share: a {} step spends no evaluations and takes no share",
                    self.kind()
                ));
            }
            crate::stages::fraction(path, "share", share)?;
        }
        if let Some((key, count)) = self.action.count() {
            at_least_one(path, key, count)?;
        }
        if let Action::UntilStall(UntilStall { min_gain, .. }) = &self.action {
            crate::stages::non_negative(path, "min_gain", *min_gain)?;
        }
        match (self.action.stage(), self.action.body()) {
            (Some(stage), _) => stage.check(path),
            (None, Some(body)) => check_body(path, body),
            (None, None) => Ok(()),
        }
    }
}

/// Most passes of a `repeat` block.
pub const MAX_REPEAT: u64 = 10_000;
/// Most passes without improvement an `until_stall` block waits.
pub const MAX_PATIENCE: u64 = 1_000;
/// Most independent runs of a `restarts` block (each holds a copy of the construction).
pub const MAX_RESTARTS: u64 = 256;

/// The upper bound of a block's count, by its key.
fn block_count_max(key: &str) -> u64 {
    match key {
        "times" => MAX_REPEAT,
        "patience" => MAX_PATIENCE,
        _ => MAX_RESTARTS,
    }
}

/// Checks every step of `steps`, whose path is `path` (`steps`, `steps[1].body`).
pub(crate) fn check_steps(steps: &[Step], path: &str) -> Result<(), String> {
    for (i, step) in steps.iter().enumerate() {
        step.check(&format!("{path}[{i}]"))?;
    }
    Ok(())
}

fn check_body(path: &str, body: &[Step]) -> Result<(), String> {
    if body.is_empty() {
        return Err(format!("{path}.body: needs at least one step"));
    }
    check_steps(body, &format!("{path}.body"))
}
