//! Any program as a stage: a user's or an agent's script (e.g. Python with numpy) that reads a
//! construction file and writes one.
//!
//! ```toml
//! [[steps]]
//! kind = "command"
//! argv = ["python3", "{script}", "{input}", "{output}", "{seed}"]
//! wall_seconds = 60        # also capped by the time left in the stage's budget
//! cpu_seconds = 120        # optional
//! memory_mb = 2048         # address space (virtual memory) of each process
//! script = """
//! import json, sys, numpy as np
//! v = np.array(json.load(open(sys.argv[1]))["values"])
//! json.dump({"values": np.clip(v, 0, np.median(v)).tolist()}, open(sys.argv[2], "w"))
//! """
//! ```
//!
//! Placeholders in `argv`: `{input}` is a JSON file `{"values": [...]}` holding the start,
//! `{output}` the path the program must write (JSON, `.npy` bytes or text: the content decides;
//! note that `np.save` appends `.npy` to a name without it, so write through an open file),
//! `{seed}` the stage's seed, `{n}` the start's length, `{script}` a file holding `script`.
//! Each run works in a fresh temporary directory (its working directory), removed afterwards.
//! With `confine = true` (set by the LLM writer on every command step a model wrote) it runs
//! confined by [`crate::sandbox`]: it may write only in that directory, opens no TCP connection
//! and sees an empty environment.
//! The program runs through [`crate::subprocess`]: its own process group, killed whole at the
//! wall limit, on Ctrl-C and when it ends, and nothing it starts (`setsid` included) outlives it
//! or milo, where Linux lets milo make a PID namespace.
//!
//! The output is never trusted: a killed or failing program, a missing or unreadable file, an
//! output that is not a regular file (a FIFO or a device is refused at once, never waited on), or
//! a construction the problem rejects leaves the start unchanged, and the reason (with the tail of
//! standard error) is the stage's note in the trace. A valid output goes to the runner, which
//! keeps the best construction and verifies it exactly.

use super::{positive, Stage, StageOutcome};
use crate::bounded_read::{read_regular_file_capped, CONSTRUCTION_CAP};
use crate::cancel::CancelToken;
use crate::construction::{decode, write_values};
use crate::optimize::Budget;
use crate::problems::Problem;
use crate::subprocess::{self, Finished, Kill, Limits};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The placeholders `argv` may use.
const PLACEHOLDERS: [&str; 5] = ["input", "output", "seed", "n", "script"];
/// Characters of standard error quoted in a note.
const STDERR_TAIL: usize = 600;

/// Runs an external program on the construction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCommand {
    /// The command line, with placeholders (see the module).
    pub argv: Vec<String>,
    /// Text written to the file `{script}` names (e.g. a Python script kept in the program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// Wall seconds before the program's process group is killed.
    #[serde(default = "default_wall_seconds")]
    pub wall_seconds: f64,
    /// CPU seconds each process may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// Address space of each process, in MiB.
    #[serde(default = "default_memory_mb")]
    pub memory_mb: f64,
    /// Run confined ([`crate::sandbox`]): writes only in the work directory, no network, an
    /// empty environment. The LLM writer sets it on every command step a model wrote.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confine: bool,
}

fn default_wall_seconds() -> f64 {
    60.0
}
fn default_memory_mb() -> f64 {
    2048.0
}

impl Stage for RunCommand {
    fn kind(&self) -> &'static str {
        "command"
    }

    /// It takes a share of the budget's time (it spends no objective evaluation of milo's).
    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        if self.argv.is_empty() || self.argv[0].is_empty() {
            return Err(format!("{path}.argv: must name a program to run"));
        }
        for (i, word) in self.argv.iter().enumerate() {
            if let Some(unknown) = placeholders(word).find(|p| !PLACEHOLDERS.contains(p)) {
                return Err(format!(
                    "{path}.argv[{i}]: unknown placeholder {{{unknown}}} (known: {})",
                    PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                ));
            }
        }
        let names_script = self.argv.iter().any(|w| w.contains("{script}"));
        match (&self.script, names_script) {
            (None, true) => {
                return Err(format!(
                    "{path}.argv: names {{script}} but the step has no `script`"
                ))
            }
            (Some(_), false) => {
                return Err(format!(
                    "{path}.script: given but no argv element names {{script}}"
                ))
            }
            _ => {}
        }
        positive(path, "wall_seconds", self.wall_seconds)?;
        if let Some(cpu) = self.cpu_seconds {
            positive(path, "cpu_seconds", cpu)?;
        }
        positive(path, "memory_mb", self.memory_mb)
    }

    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        seed: u64,
    ) -> StageOutcome {
        let unchanged = |note: String| StageOutcome {
            values: start.to_vec(),
            beta: None,
            note: Some(note),
        };
        if let Some(why) = budget.exhausted() {
            return unchanged(format!("not run: {why}"));
        }
        let wall = budget.remaining_time().map_or(self.wall_seconds, |left| {
            left.as_secs_f64().min(self.wall_seconds)
        });
        match self.execute(problem, start, wall, seed, &budget.cancel) {
            Ok(values) => StageOutcome::plain(values),
            Err(note) => unchanged(note),
        }
    }
}

impl RunCommand {
    /// Runs the program once in a fresh directory under a wall limit of `wall` seconds: the
    /// valid construction it wrote, or why there is none.
    fn execute(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        wall: f64,
        seed: u64,
        cancel: &CancelToken,
    ) -> Result<Vec<f64>, String> {
        let dir = tempfile::Builder::new()
            .prefix("milo-command-")
            .tempdir()
            .map_err(|e| format!("cannot create a work directory: {e}"))?;
        let input = dir.path().join("input.json");
        let output = dir.path().join("output");
        let script = dir.path().join("script");
        write_values(&input, start).map_err(|e| e.to_string())?;
        if let Some(text) = &self.script {
            std::fs::write(&script, text)
                .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
        }
        let path_text = |p: &Path| p.to_string_lossy().into_owned();
        let fill = |word: &str| {
            word.replace("{input}", &path_text(&input))
                .replace("{output}", &path_text(&output))
                .replace("{script}", &path_text(&script))
                .replace("{seed}", &seed.to_string())
                .replace("{n}", &start.len().to_string())
        };
        let mut command = std::process::Command::new(fill(&self.argv[0]));
        command
            .args(self.argv[1..].iter().map(|w| fill(w)))
            .current_dir(dir.path());
        let before_exec = match self.confine {
            true => Some(crate::sandbox::confine(&mut command, dir.path())?),
            false => None,
        };
        let limits = Limits {
            cpu_seconds: self.cpu_seconds.map(|s| s.ceil() as u64),
            memory_bytes: Some((self.memory_mb * 1024.0 * 1024.0) as u64),
            ..Limits::wall(Duration::from_secs_f64(wall.max(0.0)))
        };
        let finished = subprocess::run_with(command, &limits, cancel, before_exec)
            .map_err(|e| format!("cannot start {}: {e}", self.argv[0]))?;
        if let Some(failure) = self.failure(&finished, wall) {
            return Err(with_stderr(failure, &finished));
        }
        // A regular file only: a FIFO or a device there (or a link to one) is refused, never
        // waited on.
        let values = match read_regular_file_capped(&output, CONSTRUCTION_CAP, "the output") {
            Err(e) if e.is_missing_file() => {
                return Err(with_stderr(
                    "the program exited 0 but wrote no output file ({output})".into(),
                    &finished,
                ))
            }
            read => read.and_then(|bytes| decode(&output, bytes)),
        }
        .map_err(|e| with_stderr(format!("unusable output: {e}"), &finished))?;
        problem
            .check(&values)
            .map_err(|v| format!("output rejected: {v}"))?;
        Ok(values)
    }

    /// Why a finished run produced nothing usable, if it did not exit 0 by itself.
    fn failure(&self, finished: &Finished, wall: f64) -> Option<String> {
        let seconds = finished.wall_seconds;
        Some(match finished.killed {
            Some(Kill::Wall) => format!("killed at the wall limit of {wall} s"),
            Some(Kill::Cancelled) => format!("interrupted after {seconds:.1} s"),
            Some(Kill::Cpu) => format!(
                "killed at the CPU limit of {} s",
                self.cpu_seconds.unwrap_or_default()
            ),
            Some(Kill::Signal(signal)) => format!(
                "killed by signal {signal} after {seconds:.1} s (a crash, or the memory limit \
                 of {} MiB)",
                self.memory_mb
            ),
            None if !finished.status.success() => format!(
                "exited with status {} after {seconds:.1} s",
                finished
                    .status
                    .code()
                    .map_or("unknown".into(), |c| c.to_string())
            ),
            None => return None,
        })
    }
}

/// `message` followed by the tail of the run's standard error, if it wrote any.
fn with_stderr(message: String, finished: &Finished) -> String {
    let tail = finished.stderr.tail(STDERR_TAIL);
    if tail.is_empty() {
        message
    } else {
        format!("{message}; stderr: {}", tail.replace('\n', " | "))
    }
}

/// The `{name}` placeholders in `word` (a name: letters, digits, `_`).
fn placeholders(word: &str) -> impl Iterator<Item = &str> {
    word.split('{').skip(1).filter_map(|piece| {
        let (name, _) = piece.split_once('}')?;
        let is_name =
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        is_name.then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(argv: &[&str], script: Option<&str>) -> RunCommand {
        RunCommand {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            script: script.map(str::to_string),
            wall_seconds: 10.0,
            cpu_seconds: None,
            memory_mb: 256.0,
            confine: false,
        }
    }

    #[test]
    fn checks_name_the_key_and_the_value() {
        let e = stage(&[], None).check("steps[0]").unwrap_err();
        assert!(e.starts_with("steps[0].argv"), "{e}");
        let e = stage(&["sh", "{inptu}"], None)
            .check("steps[1]")
            .unwrap_err();
        assert!(
            e.contains("steps[1].argv[1]") && e.contains("{inptu}"),
            "{e}"
        );
        let e = stage(&["python3", "{script}"], None)
            .check("s")
            .unwrap_err();
        assert!(e.contains("no `script`"), "{e}");
        let e = stage(&["python3"], Some("print(1)"))
            .check("s")
            .unwrap_err();
        assert!(e.starts_with("s.script"), "{e}");
        let mut bad = stage(&["true"], None);
        bad.memory_mb = 0.0;
        assert!(bad.check("s").unwrap_err().contains("s.memory_mb"));
        bad = stage(&["true"], None);
        bad.cpu_seconds = Some(-1.0);
        assert!(bad.check("s").unwrap_err().contains("s.cpu_seconds"));
        bad = stage(&["true"], None);
        bad.wall_seconds = f64::NAN;
        assert!(bad.check("s").unwrap_err().contains("s.wall_seconds"));
        assert!(
            stage(&["sh", "-c", "cp {input} {output} # {n} {seed}"], None)
                .check("s")
                .is_ok()
        );
    }

    #[test]
    fn placeholders_are_names_in_braces() {
        let found: Vec<&str> = placeholders("a{input}b{ x }{}{seed}{1:2}").collect();
        assert_eq!(found, vec!["input", "seed"]);
    }
}
