//! Optimizer programs as data: a TOML file naming a sequence of steps, each a stage (its
//! parameters and code in [`crate::stages`]) or a control-flow block around steps ([`step`]),
//! with an optional budget share. Unknown keys and bad values are errors that name the line and
//! the key. The edits the optimizer-writing agent makes on programs live beside them ([`edits`]);
//! the runner ([`crate::runner`]) executes them.
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

pub mod edits;
mod params;
pub mod step;

use crate::bounded_read::{read_text_capped, CONFIG_CAP};
use crate::error::{MiloError, Result};
use crate::stages::command::RunCommand;
use serde::{Deserialize, Serialize};
use std::path::Path;
pub use step::{Action, KeepBest, Repeat, Restarts, Step, UntilStall};

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
        let program: Program =
            toml::from_str(text).map_err(|e| MiloError::malformed_toml(origin, text, &e))?;
        program.check().map_err(malformed)?;
        Ok(program)
    }

    /// The default program of a problem, embedded from `problems/optimizers/<slug>.default.toml`.
    pub fn default_for(problem: &dyn crate::problems::Problem) -> Result<Program> {
        let slug = problem.slug();
        Program::parse(
            problem.default_program(),
            Path::new(&format!("problems/optimizers/{slug}.default.toml")),
        )
    }

    /// Reads (at most [`CONFIG_CAP`] bytes) and checks a program file.
    pub fn load(path: &Path) -> Result<Program> {
        let text = read_text_capped(path, CONFIG_CAP, "program")?;
        Program::parse(&text, path)
    }

    /// The program as TOML text (parses back to an equal program).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("programs serialise to TOML")
    }

    /// Calls `visit` on every `command` step, in order and inside blocks, with its path (as
    /// `steps[1].body[0]`): the steps that run an outside program.
    pub fn visit_commands(&mut self, visit: &mut dyn FnMut(&str, &mut RunCommand)) {
        fn walk(steps: &mut [Step], path: &str, visit: &mut dyn FnMut(&str, &mut RunCommand)) {
            for (i, step) in steps.iter_mut().enumerate() {
                let here = format!("{path}[{i}]");
                if let Action::Command(command) = &mut step.action {
                    visit(&here, command);
                }
                if let Some(body) = step.action.body_mut() {
                    walk(body, &format!("{here}.body"), visit);
                }
            }
        }
        walk(&mut self.steps, "steps", visit);
    }

    /// This program as one that came from elsewhere (a model's answer, a stored trace or run)
    /// may run: every `command` step confined ([`crate::sandbox`]), and the path of the first
    /// one (`None` when it has none), for a caller that must refuse it without an opt-in.
    pub fn confined(mut self) -> (Program, Option<String>) {
        let mut first = None;
        self.visit_commands(&mut |path, command| {
            first.get_or_insert_with(|| path.to_string());
            command.confine = true;
        });
        (self, first)
    }

    /// Value checks serde cannot express; the message names the step path and the key.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.steps.is_empty() {
            return Err("steps: a program needs at least one step".into());
        }
        step::check_steps(&self.steps, "steps")?;
        params::check_bounds(self)?;
        let shares: f64 = self.steps.iter().filter_map(|s| s.share).sum();
        if shares > 1.0 + 1e-12 {
            return Err(format!("steps: the budget shares add up to {shares} > 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::SmoothMaxName;

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
        let Action::Restarts(Restarts { count, body }) = &p.steps[1].action else {
            panic!("{:?}", p.steps[1])
        };
        assert_eq!(*count, 4);
        let Action::Lbfgs(params) = &body[1].action else {
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
            (
                "zero_below = 1e-12",
                "zero_below = 1e-12\nshare = 0.05",
                "steps[2].share: a finalize step spends no evaluations",
            ),
        ];
        for (from, to, needle) in cases {
            let err = parse(&EXAMPLE.replace(from, to)).unwrap_err().to_string();
            assert!(err.contains(needle), "{to}: {err}");
        }
        assert!(parse("name = \"x\"\nsteps = []").is_err());
    }
}
