//! The agents file (`milo evolve --agents FILE`, TOML): the backends, and for each LLM role the
//! pool of backends it draws from.
//!
//! ```toml
//! [[backend]]
//! name = "local"
//! kind = "openai"                      # an OpenAI-compatible chat-completions endpoint
//! api_base = "http://127.0.0.1:8080/v1"
//! model = "smollm2-135m"
//! api_key_env = "OPENAI_API_KEY"       # the NAME of the variable; absent: no key sent
//! weight = 1.0
//! timeout_seconds = 60
//! retries = 3
//! max_tokens = 512                     # optional: clamps what each role asks for
//!
//! [[backend]]
//! name = "claude"
//! kind = "cli"                         # a coding CLI run in a fresh work directory
//! argv = ["claude", "-p", "--model", "sonnet", "--output-format", "json", "{prompt}"]
//! output = "claude-json"               # or "codex-jsonl", "text"
//! timeout_seconds = 900
//!
//! [writer]                             # the LLM optimizer writer (`--writer llm`)
//! backends = ["local"]
//! allow_commands = false               # true: a model's `command` steps run, confined
//! [mutator]                            # the LLM mutator (`llm` in the mutator pool)
//! backends = ["claude", "local"]
//! [orchestrator]                       # the LLM orchestrator (`--orchestrator llm`)
//! backends = ["local"]
//! ```
//!
//! The file holds no secret, so a run records it whole in its settings and `--resume` (or a
//! Slurm worker) rebuilds the same backends from the record.

use super::cli_agent::{CliAgent, CliOutput};
use super::openai::{OpenAiBackend, MAX_RETRIES};
use super::pool::ModelPool;
use super::ChatBackend;
use crate::bounded_read::{read_text_capped, CONFIG_CAP};
use crate::error::{MiloError, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One backend of the agents file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BackendConfig {
    /// An OpenAI-compatible chat-completions endpoint.
    Openai {
        /// Name the roles refer to it by.
        name: String,
        /// Base URL, ending before `/chat/completions` (e.g. `http://127.0.0.1:8080/v1`).
        api_base: String,
        /// The model name sent with each request.
        model: String,
        /// Name of the environment variable holding the API key (absent: no key is sent).
        #[serde(default)]
        api_key_env: Option<String>,
        /// Weight in a role's pool (> 0).
        #[serde(default = "one")]
        weight: f64,
        /// Seconds one request may take.
        #[serde(default = "default_http_timeout")]
        timeout_seconds: f64,
        /// Retries after a 429, a 5xx, a timeout or a dropped connection (with backoff), at
        /// most [`MAX_RETRIES`].
        #[serde(default = "default_retries")]
        retries: u32,
        /// Most completion tokens one request asks for: a role asking for more is clamped to
        /// it (for small local servers; absent: each role's own ask).
        #[serde(default)]
        max_tokens: Option<u32>,
    },
    /// A coding CLI agent, run as a subprocess in a fresh work directory.
    Cli {
        /// Name the roles refer to it by.
        name: String,
        /// The command line; `{prompt}` is replaced by the prompt text, `{prompt_file}` by the
        /// path of a file holding it, `{workdir}` by the work directory.
        argv: Vec<String>,
        /// How its standard output carries the answer.
        #[serde(default)]
        output: CliOutput,
        /// Weight in a role's pool (> 0).
        #[serde(default = "one")]
        weight: f64,
        /// Seconds before its whole process group is killed.
        #[serde(default = "default_cli_timeout")]
        timeout_seconds: f64,
    },
}

fn one() -> f64 {
    1.0
}
fn default_http_timeout() -> f64 {
    60.0
}
fn default_retries() -> u32 {
    3
}

fn default_cli_timeout() -> f64 {
    900.0
}

impl BackendConfig {
    /// The backend's name.
    pub fn name(&self) -> &str {
        match self {
            BackendConfig::Openai { name, .. } | BackendConfig::Cli { name, .. } => name,
        }
    }

    /// Its weight in a pool.
    pub fn weight(&self) -> f64 {
        match self {
            BackendConfig::Openai { weight, .. } | BackendConfig::Cli { weight, .. } => *weight,
        }
    }

    /// The backend it configures.
    pub fn build(&self) -> Result<Box<dyn ChatBackend>> {
        Ok(match self {
            BackendConfig::Openai { .. } => Box::new(OpenAiBackend::new(self)?),
            BackendConfig::Cli { .. } => Box::new(CliAgent::new(self)?),
        })
    }
}

/// What one role draws on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleConfig {
    /// Names of the backends in its pool (each drawn with its weight).
    pub backends: Vec<String>,
    /// Writer only: a program from a model may hold `command` steps (a script answer is one),
    /// which then run confined ([`crate::sandbox`]); without it such a program is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_commands: bool,
}

/// The agents file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsConfig {
    /// The backends.
    #[serde(rename = "backend")]
    pub backends: Vec<BackendConfig>,
    /// The LLM optimizer writer's pool.
    #[serde(default)]
    pub writer: Option<RoleConfig>,
    /// The LLM mutator's pool.
    #[serde(default)]
    pub mutator: Option<RoleConfig>,
    /// The LLM orchestrator's pool.
    #[serde(default)]
    pub orchestrator: Option<RoleConfig>,
}

/// The LLM roles an agents file configures.
pub const ROLES: [&str; 3] = ["writer", "mutator", "orchestrator"];

impl AgentsConfig {
    /// Parses and checks the text of an agents file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<AgentsConfig> {
        let malformed = |message: String| MiloError::Malformed {
            path: origin.to_path_buf(),
            message,
        };
        let config: AgentsConfig =
            toml::from_str(text).map_err(|e| MiloError::malformed_toml(origin, text, &e))?;
        config.check().map_err(malformed)?;
        // The keys the backends will send are secrets in use from now on: a CLI agent (or a
        // model) may echo any of them.
        for backend in &config.backends {
            if let BackendConfig::Openai {
                api_key_env: Some(variable),
                ..
            } = backend
            {
                crate::secrets::remember_variable(variable);
            }
        }
        Ok(config)
    }

    /// Reads (at most [`CONFIG_CAP`] bytes) and checks an agents file.
    pub fn load(path: &Path) -> Result<AgentsConfig> {
        let text = read_text_capped(path, CONFIG_CAP, "agents file")?;
        AgentsConfig::parse(&text, path)
    }

    fn check(&self) -> std::result::Result<(), String> {
        let mut names: Vec<&str> = Vec::new();
        for backend in &self.backends {
            let name = backend.name();
            if name.is_empty() {
                return Err("backend.name: must not be empty".into());
            }
            if names.contains(&name) {
                return Err(format!("backend.name: '{name}' is named twice"));
            }
            names.push(name);
            let weight = backend.weight();
            if !(weight.is_finite() && weight > 0.0) {
                return Err(format!(
                    "backend '{name}': weight must be a positive number, got {weight}"
                ));
            }
            if let BackendConfig::Openai { retries, .. } = backend {
                if *retries > MAX_RETRIES {
                    return Err(format!(
                        "backend '{name}': retries must be at most {MAX_RETRIES}, got {retries}"
                    ));
                }
            }
            if let BackendConfig::Openai {
                max_tokens: Some(0),
                ..
            } = backend
            {
                return Err(format!(
                    "backend '{name}': max_tokens must be a positive number, got 0"
                ));
            }
            let timeout = match backend {
                BackendConfig::Openai {
                    timeout_seconds, ..
                }
                | BackendConfig::Cli {
                    timeout_seconds, ..
                } => *timeout_seconds,
            };
            if !(timeout.is_finite() && timeout > 0.0 && timeout <= 86_400.0) {
                return Err(format!(
                    "backend '{name}': timeout_seconds must be in (0, 86400], got {timeout}"
                ));
            }
            if let BackendConfig::Cli { argv, .. } = backend {
                if argv.is_empty() {
                    return Err(format!("backend '{name}': argv must not be empty"));
                }
            }
        }
        for (role, config) in self.roles() {
            let Some(config) = config else { continue };
            if config.allow_commands && role != "writer" {
                return Err(format!(
                    "{role}.allow_commands: only the [writer] runs programs, so only it may \
                     allow commands"
                ));
            }
            if config.backends.is_empty() {
                return Err(format!("{role}.backends: must name at least one backend"));
            }
            for wanted in &config.backends {
                if !names.contains(&wanted.as_str()) {
                    return Err(format!(
                        "{role}.backends: no backend is named '{wanted}' (known: {})",
                        names.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether the writer's models may write `command` steps (`[writer] allow_commands`).
    pub fn writer_allows_commands(&self) -> bool {
        self.writer.as_ref().is_some_and(|w| w.allow_commands)
    }

    fn roles(&self) -> [(&'static str, Option<&RoleConfig>); 3] {
        [
            ("writer", self.writer.as_ref()),
            ("mutator", self.mutator.as_ref()),
            ("orchestrator", self.orchestrator.as_ref()),
        ]
    }

    /// The pool of `role` (one of [`ROLES`]), or a usage error when the file does not configure
    /// it.
    pub fn pool(&self, role: &str) -> Result<ModelPool> {
        let config = self
            .roles()
            .into_iter()
            .find(|(name, _)| *name == role)
            .and_then(|(_, config)| config)
            .ok_or_else(|| {
                MiloError::Usage(format!(
                    "the agents file configures no [{role}] (a role needs `backends = [...]`)"
                ))
            })?;
        let mut members = Vec::new();
        for wanted in &config.backends {
            let backend = self
                .backends
                .iter()
                .find(|b| b.name() == wanted)
                .expect("checked on read");
            members.push((backend.weight(), backend.build()?));
        }
        Ok(ModelPool::new(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[[backend]]
name = "local"
kind = "openai"
api_base = "http://127.0.0.1:9/v1"
model = "m"
api_key_env = "MILO_TEST_KEY"

[[backend]]
name = "claude"
kind = "cli"
argv = ["claude", "-p", "{prompt}"]
output = "claude-json"
weight = 2.0

[writer]
backends = ["local", "claude"]
"#;

    #[test]
    fn an_agents_file_reads_with_defaults_and_names_its_roles() {
        let config = AgentsConfig::parse(FILE, Path::new("agents.toml")).unwrap();
        assert_eq!(config.backends.len(), 2);
        match &config.backends[0] {
            BackendConfig::Openai {
                timeout_seconds,
                retries,
                weight,
                ..
            } => assert_eq!((*timeout_seconds, *retries, *weight), (60.0, 3, 1.0)),
            other => panic!("{other:?}"),
        }
        assert_eq!(config.backends[1].weight(), 2.0);
        assert!(config.pool("writer").is_ok());
        let e = config.pool("mutator").err().unwrap().to_string();
        assert!(e.contains("[mutator]"), "{e}");
    }

    #[test]
    fn a_bad_agents_file_is_refused_naming_the_rule_and_the_value() {
        let refuse = |text: &str| {
            AgentsConfig::parse(text, Path::new("a.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = refuse(&FILE.replace("[\"local\", \"claude\"]", "[\"gpt\"]"));
        assert!(e.contains("'gpt'") && e.contains("local, claude"), "{e}");
        let e = refuse(&FILE.replace("weight = 2.0", "weight = -1.0"));
        assert!(e.contains("weight") && e.contains("-1"), "{e}");
        let e = refuse(&FILE.replace("name = \"claude\"", "name = \"local\""));
        assert!(e.contains("named twice"), "{e}");
        let e = refuse(&FILE.replace("kind = \"cli\"", "kind = \"grpc\""));
        assert!(e.contains("a.toml"), "{e}");
        let e = refuse(&FILE.replace("[\"claude\", \"-p\", \"{prompt}\"]", "[]"));
        assert!(e.contains("argv"), "{e}");
        let e = refuse(&FILE.replace("model = \"m\"", "model = \"m\"\nmax_tokens = 0"));
        assert!(e.contains("max_tokens") && e.contains("got 0"), "{e}");
        let e = refuse(&FILE.replace("model = \"m\"", "model = \"m\"\nretries = 4294967295"));
        assert!(e.contains("retries") && e.contains("got 4294967295"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        let e = refuse(&format!(
            "{FILE}[mutator]\nbackends = [\"local\"]\nallow_commands = true\n"
        ));
        assert!(e.contains("mutator.allow_commands"), "{e}");
    }

    #[test]
    fn only_the_writer_may_allow_a_models_commands_and_by_default_it_does_not() {
        let config = AgentsConfig::parse(FILE, Path::new("agents.toml")).unwrap();
        assert!(!config.writer_allows_commands());
        let allowing = FILE.replace(
            "backends = [\"local\", \"claude\"]",
            "backends = [\"local\", \"claude\"]\nallow_commands = true",
        );
        let config = AgentsConfig::parse(&allowing, Path::new("agents.toml")).unwrap();
        assert!(config.writer_allows_commands());
    }
}
