//! Optimizer programs as data: a TOML file naming a sequence of stages with parameters and
//! control flow. Unknown keys and bad values are errors that name the line and the key.
//!
//! ```toml
//! name = "cascade"
//! [[steps]]
//! kind = "lbfgs"
//! parameterisation = "square"
//! betas = [1e2, 1e4, 1e6]
//! share = 0.8
//! [[steps]]
//! kind = "repeat"
//! times = 3
//! [[steps.body]]
//! kind = "perturb"
//! fraction = 0.05
//! ```

pub mod stages;

use crate::error::{MiloError, Result};
use serde::{Deserialize, Serialize};
pub use stages::*;
use std::path::Path;

/// One step of a program: an optimizer stage or a control-flow block around steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// L-BFGS on the smooth surrogate with a β cascade.
    Lbfgs {
        /// Parameters.
        #[serde(flatten)]
        params: LbfgsParams,
        /// Share of the program's budget (the unshared rest is split evenly).
        share: Option<f64>,
    },
    /// Adam with gradient noise.
    Adam {
        /// Parameters.
        #[serde(flatten)]
        params: AdamParams,
        /// Share of the budget.
        share: Option<f64>,
    },
    /// Dinkelbach iterations on the ratio objective.
    Dinkelbach {
        /// Parameters.
        #[serde(flatten)]
        params: DinkelbachParams,
        /// Share of the budget.
        share: Option<f64>,
    },
    /// Trust-region sequential LP over the most active lags.
    SequentialLp {
        /// Parameters.
        #[serde(flatten)]
        params: LpParams,
        /// Share of the budget.
        share: Option<f64>,
    },
    /// A resolution change.
    Resample {
        /// Parameters.
        #[serde(flatten)]
        params: ResampleParams,
    },
    /// A random perturbation.
    Perturb {
        /// Parameters.
        #[serde(flatten)]
        params: PerturbParams,
    },
    /// Prune–regrow of the support.
    PruneRegrow {
        /// Parameters.
        #[serde(flatten)]
        params: PruneRegrowParams,
        /// Share of the budget.
        share: Option<f64>,
    },
    /// Drop the zero cells at both ends (keeps the second problem's score exactly).
    Trim,
    /// Mirror the values and average (f ← (f + reverse f)/2).
    Symmetrize,
    /// Zero tiny values, check constraints, verify exactly.
    Finalize {
        /// Parameters.
        #[serde(flatten)]
        params: FinalizeParams,
    },
    /// Run the body `times` times.
    Repeat {
        /// Repetitions.
        times: usize,
        /// The steps repeated.
        body: Vec<Step>,
        /// Share of the budget.
        share: Option<f64>,
    },
    /// Run the body until the best score has not improved for `patience` passes.
    UntilStall {
        /// Passes without improvement before stopping.
        patience: usize,
        /// The steps repeated.
        body: Vec<Step>,
        /// Share of the budget.
        share: Option<f64>,
    },
    /// Run the body `count` times from the same start with derived seeds; keep the best.
    Restarts {
        /// Independent runs.
        count: usize,
        /// The steps of one run.
        body: Vec<Step>,
        /// Share of the budget.
        share: Option<f64>,
    },
    /// Run the body and keep its result only if it improves the score.
    KeepBest {
        /// The steps tried.
        body: Vec<Step>,
        /// Share of the budget.
        share: Option<f64>,
    },
}

/// An optimizer program: a named sequence of steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// Short name.
    pub name: String,
    /// What the program is for.
    #[serde(default)]
    pub description: String,
    /// The steps, run in order.
    pub steps: Vec<Step>,
}

impl Program {
    /// Parses and checks a program's TOML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Program> {
        let malformed = |message: String| MiloError::Malformed {
            path: origin.to_path_buf(),
            message,
        };
        let program: Program = toml::from_str(text).map_err(|e| malformed(e.to_string()))?;
        program.check().map_err(malformed)?;
        Ok(program)
    }

    /// Reads and checks a program file.
    pub fn load(path: &Path) -> Result<Program> {
        let text = std::fs::read_to_string(path).map_err(|source| MiloError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Program::parse(&text, path)
    }

    /// The program as TOML text (parses back to an equal program).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("programs serialise to TOML")
    }

    /// Value checks serde cannot express; the message names the step path and the key.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.steps.is_empty() {
            return Err("steps: a program needs at least one step".into());
        }
        check_steps(&self.steps, "steps")?;
        let shares: f64 = self.steps.iter().filter_map(Step::share).sum();
        if shares > 1.0 + 1e-12 {
            return Err(format!("steps: the budget shares add up to {shares} > 1"));
        }
        Ok(())
    }
}

impl Step {
    /// Whether the step spends objective evaluations (an optimizer, or a block around steps)
    /// rather than reshaping the values directly.
    pub fn spends_evaluations(&self) -> bool {
        !matches!(
            self,
            Step::Resample { .. }
                | Step::Perturb { .. }
                | Step::Trim
                | Step::Symmetrize
                | Step::Finalize { .. }
        )
    }

    /// The step's share of the budget, if it states one.
    pub fn share(&self) -> Option<f64> {
        match self {
            Step::Lbfgs { share, .. }
            | Step::Adam { share, .. }
            | Step::Dinkelbach { share, .. }
            | Step::SequentialLp { share, .. }
            | Step::PruneRegrow { share, .. }
            | Step::Repeat { share, .. }
            | Step::UntilStall { share, .. }
            | Step::Restarts { share, .. }
            | Step::KeepBest { share, .. } => *share,
            Step::Resample { .. }
            | Step::Perturb { .. }
            | Step::Trim
            | Step::Symmetrize
            | Step::Finalize { .. } => None,
        }
    }
}

fn positive(path: &str, key: &str, x: f64) -> std::result::Result<(), String> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(format!("{path}.{key}: must be a positive number, got {x}"))
    }
}

fn fraction(path: &str, key: &str, x: f64) -> std::result::Result<(), String> {
    if (0.0..=1.0).contains(&x) {
        Ok(())
    } else {
        Err(format!("{path}.{key}: must be in [0, 1], got {x}"))
    }
}

fn at_least_one(path: &str, key: &str, k: usize) -> std::result::Result<(), String> {
    if k >= 1 {
        Ok(())
    } else {
        Err(format!("{path}.{key}: must be at least 1"))
    }
}

fn check_lbfgs(path: &str, p: &LbfgsParams) -> std::result::Result<(), String> {
    if p.betas.is_empty() {
        return Err(format!("{path}.betas: needs at least one β"));
    }
    for (i, &b) in p.betas.iter().enumerate() {
        positive(path, &format!("betas[{i}]"), b)?;
    }
    at_least_one(path, "history", p.history)?;
    at_least_one(path, "iterations", p.iterations as usize)
}

fn check_steps(steps: &[Step], path: &str) -> std::result::Result<(), String> {
    for (i, step) in steps.iter().enumerate() {
        let here = format!("{path}[{i}]");
        if let Some(share) = step.share() {
            fraction(&here, "share", share)?;
        }
        match step {
            Step::Lbfgs { params, .. } => check_lbfgs(&here, params)?,
            Step::Adam { params, .. } => {
                positive(&here, "beta", params.beta)?;
                positive(&here, "learning_rate", params.learning_rate)?;
                if !(params.gradient_noise >= 0.0 && params.gradient_noise.is_finite()) {
                    return Err(format!("{here}.gradient_noise: must be ≥ 0"));
                }
            }
            Step::Dinkelbach { params, .. } => {
                at_least_one(&here, "rounds", params.rounds)?;
                check_lbfgs(&format!("{here}.inner"), &params.inner)?;
            }
            Step::SequentialLp { params, .. } => {
                at_least_one(&here, "active_lags", params.active_lags)?;
                positive(&here, "trust_radius", params.trust_radius)?;
                at_least_one(&here, "steps", params.steps)?;
            }
            Step::Resample { params } => {
                if params.factor < 2 {
                    return Err(format!("{here}.factor: must be at least 2"));
                }
                if !(params.noise >= 0.0 && params.noise.is_finite()) {
                    return Err(format!("{here}.noise: must be ≥ 0"));
                }
            }
            Step::Perturb { params } => {
                fraction(&here, "fraction", params.fraction)?;
                positive(&here, "scale", params.scale)?;
            }
            Step::PruneRegrow { params, .. } => {
                fraction(&here, "fraction", params.fraction)?;
                at_least_one(&here, "levels", params.levels)?;
            }
            Step::Trim | Step::Symmetrize => {}
            Step::Finalize { params } => {
                if !(params.zero_below >= 0.0 && params.zero_below.is_finite()) {
                    return Err(format!("{here}.zero_below: must be ≥ 0"));
                }
            }
            Step::Repeat { times: k, body, .. } => {
                at_least_one(&here, "times", *k)?;
                check_body(&here, body)?;
            }
            Step::UntilStall { patience, body, .. } => {
                at_least_one(&here, "patience", *patience)?;
                check_body(&here, body)?;
            }
            Step::Restarts { count, body, .. } => {
                at_least_one(&here, "count", *count)?;
                check_body(&here, body)?;
            }
            Step::KeepBest { body, .. } => check_body(&here, body)?,
        }
    }
    Ok(())
}

fn check_body(path: &str, body: &[Step]) -> std::result::Result<(), String> {
    if body.is_empty() {
        return Err(format!("{path}.body: needs at least one step"));
    }
    check_steps(body, &format!("{path}.body"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
name = "cascade"
description = "β cascade, then perturb-and-polish"

[[steps]]
kind = "lbfgs"
parameterisation = "square"
betas = [1e2, 1e4, 1e6]
share = 0.5

[[steps]]
kind = "restarts"
count = 4
share = 0.4

[[steps.body]]
kind = "perturb"
fraction = 0.05

[[steps.body]]
kind = "lbfgs"
parameterisation = "square"

[[steps]]
kind = "finalize"
zero_below = 1e-12
"#;

    fn parse(text: &str) -> Result<Program> {
        Program::parse(text, Path::new("p.toml"))
    }

    #[test]
    fn parses_nested_control_flow_with_defaults() {
        let p = parse(EXAMPLE).unwrap();
        assert_eq!(p.steps.len(), 3);
        let Step::Restarts { count, body, .. } = &p.steps[1] else {
            panic!("{:?}", p.steps[1])
        };
        assert_eq!(*count, 4);
        let Step::Lbfgs { params, .. } = &body[1] else {
            panic!()
        };
        assert_eq!(params.history, 200);
        assert_eq!(params.smooth_max, SmoothMaxName::LogSumExp);
    }

    #[test]
    fn round_trips_through_toml() {
        let p = parse(EXAMPLE).unwrap();
        assert_eq!(parse(&p.to_toml()).unwrap(), p);
    }

    #[test]
    fn unknown_keys_name_the_line_and_key() {
        let text = EXAMPLE.replace("fraction = 0.05", "fraction = 0.05\nfractoin = 1");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("fractoin"), "{err}");
        assert!(err.contains("line"), "{err}");
        let err = parse(&EXAMPLE.replace("share = 0.5", "share = 0.5\nhistroy = 3"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("histroy"), "{err}");
        let err = parse(&EXAMPLE.replace("kind = \"perturb\"", "kind = \"shake\"")).unwrap_err();
        assert!(err.to_string().contains("shake"), "{err}");
    }

    #[test]
    fn bad_values_name_the_step_and_key() {
        let cases = [
            (
                "betas = [1e2, 1e4, 1e6]",
                "betas = [1e2, -1]",
                "steps[0].betas[1]",
            ),
            ("share = 0.5", "share = 1.5", "steps[0].share"),
            ("count = 4", "count = 0", "steps[1].count"),
            (
                "fraction = 0.05",
                "fraction = 2.0",
                "steps[1].body[0].fraction",
            ),
            ("share = 0.4", "share = 0.6", "shares add up"),
        ];
        for (from, to, needle) in cases {
            let err = parse(&EXAMPLE.replace(from, to)).unwrap_err().to_string();
            assert!(err.contains(needle), "{to}: {err}");
        }
        assert!(parse("name = \"x\"\nsteps = []").is_err());
    }
}
