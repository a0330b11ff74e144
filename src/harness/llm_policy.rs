//! The LLM writer's part of a harness: the `[llm]` section (ignored by the built-in writer).
//!
//! It holds the prompt templates, the context policy (the parent's evidence or not, how many
//! library programs, how many tries), the kind of answer asked for (a TOML program, or a Python
//! script run by a `command` stage), sampling settings, and whether the writer keeps asking until
//! a program's result is an exactly verified improvement.
//!
//! Templates name placeholders in braces; [`PLACEHOLDERS`] lists them. Any other text in braces
//! is left as it is, so a prompt may show code.

use serde::{Deserialize, Serialize};

/// The placeholders templates may use, with what each becomes.
pub const PLACEHOLDERS: [(&str, &str); 11] = [
    (
        "problem",
        "the problem: title, slug, direction, domain and score formula",
    ),
    (
        "rules",
        "the validity rules and the arena's improvement threshold",
    ),
    ("n", "the number of values of the start construction"),
    (
        "start_score",
        "the start's exact score (20 significant digits)",
    ),
    ("parent_program", "the parent optimizer program, as TOML"),
    (
        "parent_result",
        "the score the parent's run reached and its evaluations",
    ),
    (
        "evidence",
        "what the parent's run showed (stalled, dead cells…), if shown",
    ),
    (
        "library",
        "programs that gained earlier in the lineage, as TOML",
    ),
    ("budget", "the budget each revised program runs on"),
    ("script_argv", "how a script is run (output = \"script\")"),
    (
        "error",
        "why the last answer was not usable (the retry template only)",
    ),
];

/// What the model is asked to write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// An optimizer program in a fenced ```toml block.
    #[default]
    Program,
    /// A Python script in a fenced ```python block, run as a program of one `command` stage.
    Script,
}

/// The `[llm]` section of a harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmPolicy {
    /// The system message template.
    pub system: String,
    /// The request template.
    pub task: String,
    /// The template of the message that feeds an unusable answer's error back (`{error}`).
    #[serde(default = "default_retry")]
    pub retry: String,
    /// Whether `{evidence}` shows what the parent's run showed.
    #[serde(default = "yes")]
    pub show_evidence: bool,
    /// Library programs `{library}` shows, at most (0–8).
    #[serde(default)]
    pub library_programs: usize,
    /// Answers asked for per task, the first included (1–8): each unusable answer, or one whose
    /// run did not verify an improvement when `require_improvement`, is fed back for another.
    pub tries: usize,
    /// What the model writes.
    #[serde(default)]
    pub output: OutputKind,
    /// The command line of a script (`output = "script"`): placeholders of the `command` stage,
    /// `{script}` the script's file, `{input}` and `{output}` the construction files.
    #[serde(default = "default_script_argv")]
    pub script_argv: Vec<String>,
    /// Most tokens an answer may have (16–65536).
    pub max_tokens: u32,
    /// Sampling temperature (0–2).
    pub temperature: f64,
    /// Whether the writer keeps asking (up to `tries`) until a program's run is an exactly
    /// verified improvement; otherwise it stops at the first program that runs.
    #[serde(default)]
    pub require_improvement: bool,
}

fn yes() -> bool {
    true
}

fn default_retry() -> String {
    "Your answer could not be used: {error}\nAnswer again with the whole corrected program in \
     one fenced block."
        .into()
}

fn default_script_argv() -> Vec<String> {
    ["python3", "{script}", "{input}", "{output}", "{seed}"]
        .map(String::from)
        .to_vec()
}

/// Longest template, in bytes.
const MAX_TEMPLATE: usize = 32_768;

impl LlmPolicy {
    /// Value checks serde cannot express; the message names the key (under `llm.`).
    pub fn check(&self) -> Result<(), String> {
        for (key, text) in [
            ("system", &self.system),
            ("task", &self.task),
            ("retry", &self.retry),
        ] {
            if text.trim().is_empty() {
                return Err(format!("llm.{key}: the template is empty"));
            }
            if text.len() > MAX_TEMPLATE {
                return Err(format!(
                    "llm.{key}: the template has {} bytes, more than {MAX_TEMPLATE}",
                    text.len()
                ));
            }
        }
        if !(1..=8).contains(&self.tries) {
            return Err(format!("llm.tries: must be 1–8, got {}", self.tries));
        }
        if self.library_programs > 8 {
            return Err(format!(
                "llm.library_programs: must be 0–8, got {}",
                self.library_programs
            ));
        }
        if !(16..=65_536).contains(&self.max_tokens) {
            return Err(format!(
                "llm.max_tokens: must be 16–65536, got {}",
                self.max_tokens
            ));
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return Err(format!(
                "llm.temperature: must be in [0, 2], got {}",
                self.temperature
            ));
        }
        if !self.script_argv.iter().any(|a| a.contains("{script}")) {
            return Err(format!(
                "llm.script_argv: must pass the script ({{script}}), got {:?}",
                self.script_argv
            ));
        }
        Ok(())
    }
}

/// `template` with each `{name}` of `values` replaced by its text, in one pass (text put in is
/// never scanned again); other braces stay as they are.
pub fn render(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let known = after.find('}').and_then(|close| {
            let name = &after[..close];
            values
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (close, *value))
        });
        match known {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_replaces_known_placeholders_once_and_keeps_other_braces() {
        let text = render("a {x} b {y} {unknown} {{x}} {", &[("x", "{y}"), ("y", "2")]);
        assert_eq!(text, "a {y} b 2 {unknown} {{y}} {");
    }
}
