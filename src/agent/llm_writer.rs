//! The LLM optimizer writer: a language model revises the parent program under the harness's
//! `[llm]` policy ([`crate::harness::LlmPolicy`]; the default of
//! [`crate::harness::llm_writer_harness`] without one).
//!
//! 1. Runs the parent program as it is on the harness's `minimal` share: a valid baseline and
//!    the evidence the prompt shows.
//! 2. Asks the pool member drawn from the task's seed for a revised program (the `system` and
//!    `task` templates), reads it from the answer ([`super::llm_answer`]) and runs it on an even
//!    split of what is left of the `explore` share, from the start or the best construction
//!    (`run_from`). An unusable answer — no program, an invalid one, a run that fails — is a
//!    recorded failed revision with its error, fed back (the `retry` template) for another
//!    answer, up to `tries` answers. With `require_improvement` a program whose run does not
//!    better the best construction exactly is fed back too; otherwise the first program that
//!    runs ends the asking. A backend that gives no answer (after its own retries) ends it as
//!    well, recorded the same way.
//! 3. Runs the best program again from the best construction on the `reserve` (plus whatever
//!    exploration left), and verifies the `verify_top` best candidates exactly, as the built-in
//!    writer does ([`super::ledger`]).
//!
//! Budgets count the programs' runs only; the model's time is not charged to them. Its tokens
//! are the attempt's [`Attempt::usage`].

use super::ledger::{run_on, run_parent, Allowance, Ledger};
use super::llm_answer::{admit_commands, one_line, program_of};
use super::{Assignment, Attempt, OptimizerWriter, Role};
use crate::construction::json::to_json;
use crate::error::Result;
use crate::exact::rational::decimal_string;
use crate::harness::{llm_writer_harness, render, Harness, LlmPolicy, RunFrom};
use crate::llm::{Attachment, ChatMessage, ChatRequest, ModelPool, Speaker};
use crate::runner::trace::cpu_seconds;
use crate::runner::{derive_seed, evidence};
use sha2::{Digest, Sha256};
use std::time::Instant;

/// The optimizer writer that asks a language model (drawn from its pool) for programs.
pub struct LlmWriter {
    pool: ModelPool,
    allow_commands: bool,
}

impl LlmWriter {
    /// A writer asking the members of `pool` (the agents file's `[writer]` pool); a program
    /// with a `command` step (a script answer is one) runs, confined, only if `allow_commands`.
    pub fn new(pool: ModelPool, allow_commands: bool) -> LlmWriter {
        LlmWriter {
            pool,
            allow_commands,
        }
    }
}

/// Index offset of the answers' run seeds (the parent's run is 0, the reserve 1000).
const ANSWER_SEEDS: u64 = 1;

impl OptimizerWriter for LlmWriter {
    fn name(&self) -> &str {
        "llm"
    }

    fn solve(&self, harness: &Harness, task: &Assignment) -> Result<Attempt> {
        let started = Instant::now();
        let cpu_started = cpu_seconds();
        let policy = match &harness.llm {
            Some(policy) => policy.clone(),
            None => llm_writer_harness()
                .llm
                .expect("the LLM seed harness has [llm]"),
        };
        let problem = task.problem;
        let direction = problem.spec().direction;
        let total = Allowance::of(task);
        let mut ledger = Ledger::default();
        let (minimal, minimal_left) = run_parent(task, total.scaled(harness.budget.minimal))?;
        let found = evidence::diagnose(&minimal);
        let parent_result = format!(
            "score {:.12} after {} objective evaluations ({})",
            problem.score_fast(&minimal.best).value,
            minimal.evaluations,
            if minimal.improved {
                "an exactly verified improvement over the start"
            } else {
                "no improvement over the start"
            }
        );
        ledger.record(
            problem,
            Role::Minimal,
            vec![],
            task.parent.clone(),
            minimal,
            None,
        );
        let mut best = 0;

        let explore_total = total.scaled(harness.budget.explore).plus(minimal_left);
        let prompt = Prompt::new(task, &policy, &found, &parent_result, explore_total);
        let mut messages = vec![
            ChatMessage::new(Speaker::System, prompt.fill(&policy.system, "")),
            ChatMessage::new(Speaker::User, prompt.fill(&policy.task, "")),
        ];
        let backend = self.pool.pick(task.seed);
        let mut explore_left = explore_total;
        for i in 0..policy.tries {
            let allotment = explore_left.scaled(1.0 / (policy.tries - i) as f64);
            if task.cancel.is_cancelled() || allotment.is_empty() {
                break;
            }
            let label = format!("{} answer {}", backend.name(), i + 1);
            let (from, from_exact) = match harness.run_from {
                RunFrom::Start => (task.start, task.start_exact),
                RunFrom::Best => {
                    let candidate = &ledger.candidates[best];
                    (&candidate.values[..], &candidate.exact)
                }
            };
            let from_score = problem.score_fast(from).value;
            let request = ChatRequest {
                messages: messages.clone(),
                attachments: Vec::new(),
                workspace: workspace(task, &policy, from),
                max_tokens: Some(policy.max_tokens),
                temperature: Some(policy.temperature),
                seed: Some(derive_seed(task.seed, ANSWER_SEEDS + i as u64)),
                cancel: task.cancel.clone(),
            };
            let completion = match backend.complete(&request) {
                Ok(completion) => completion,
                Err(e) => {
                    ledger.record_failure(vec![label], from_score, one_line(&e.to_string()));
                    break;
                }
            };
            ledger.usage += completion.usage;
            let program = program_of(&completion.text, policy.output, &policy.script_argv)
                .and_then(|program| admit_commands(program, self.allow_commands));
            let ran = program.and_then(|program| {
                run_on(
                    task,
                    &program,
                    from,
                    from_exact,
                    allotment,
                    ANSWER_SEEDS + i as u64,
                )
                .map(|outcome| (program, outcome))
                .map_err(|e| one_line(&e.to_string()))
            });
            let feedback = match ran {
                Err(error) => {
                    ledger.record_failure(vec![label], from_score, error.clone());
                    Some(error)
                }
                Ok((program, outcome)) => {
                    explore_left = explore_left.minus(outcome.seconds, outcome.evaluations);
                    let edits = vec![format!("{label}: {}", program.name)];
                    let refusals: Vec<String> = outcome
                        .trace
                        .stages
                        .iter()
                        .filter_map(|stage| {
                            let note = stage.note.as_deref()?;
                            Some(format!("{} ({}): {note}", stage.path, stage.kind))
                        })
                        .collect();
                    let before = ledger.candidates[best].exact.clone();
                    let new_best =
                        ledger.record(problem, Role::Revision, edits, program, outcome, Some(best));
                    let latest = ledger.candidates.len() - 1;
                    let improved = direction.better(&ledger.candidates[latest].exact, &before);
                    if new_best {
                        best = latest;
                    }
                    if !improved && !refusals.is_empty() {
                        // A stage that failed (e.g. a script that crashed or wrote garbage) makes
                        // the answer unusable: its notes are the error fed back.
                        let error =
                            one_line(&format!("the program ran, but {}", refusals.join("; ")));
                        ledger.runs.last_mut().expect("just recorded").error = Some(error.clone());
                        Some(error)
                    } else if policy.require_improvement && !improved {
                        Some(format!(
                            "the program ran but did not improve on the best construction: it \
                             reached {:.12}, the best is {}",
                            ledger.candidates[latest].score,
                            decimal_string(&before, 14)
                        ))
                    } else {
                        None
                    }
                }
            };
            let run = ledger.runs.last_mut().expect("just recorded");
            run.reply = Some(format!(
                "{} {}",
                completion.backend,
                digest(&completion.text)
            ));
            run.usage = completion.usage;
            let Some(error) = feedback else { break };
            messages.push(ChatMessage::new(Speaker::Assistant, completion.text));
            messages.push(ChatMessage::new(
                Speaker::User,
                prompt.fill(&policy.retry, &error),
            ));
        }

        if harness.budget.reserve > 0.0 {
            let reserve = total.scaled(harness.budget.reserve).plus(explore_left);
            ledger.run_reserve(task, best, reserve)?;
        }
        Ok(ledger.finish(
            task,
            harness.verify_top,
            found,
            started.elapsed().as_secs_f64(),
            cpu_seconds() - cpu_started,
        ))
    }
}

/// The first 16 hex digits of the sha256 of `text`.
fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The files a CLI agent works beside: the construction the program runs from
/// (`start.json`), the parent program (`parent.toml`) and `EVALUATE.md`, how to run and score
/// a program or script with this `milo` before answering.
fn workspace(task: &Assignment, policy: &LlmPolicy, from: &[f64]) -> Vec<Attachment> {
    let milo = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "milo".into());
    let slug = &task.problem.spec().slug;
    let script = policy.script_argv.join(" ");
    let guide = format!(
        "# Trying an answer before you give it\n\n\
         `start.json` is the construction your program runs from ({n} values); `parent.toml` is \
         the parent program.\n\n\
         Run a program on it and keep the result:\n\n    \
         {milo} optimize {slug} --start start.json --program mine.toml --evaluations 2000 \
         --out out.json\n\n\
         Score a construction exactly:\n\n    {milo} verify {slug} out.json\n\n\
         A script answer is run as `{script}` (`{{input}}` a JSON file `{{\"values\": [...]}}`, \
         `{{output}}` the file it writes).\n",
        n = from.len()
    );
    let mut files = vec![
        Attachment {
            name: "parent.toml".into(),
            content: task.parent.to_toml(),
        },
        Attachment {
            name: "EVALUATE.md".into(),
            content: guide,
        },
    ];
    if let Ok(json) = to_json(from) {
        files.push(Attachment {
            name: "start.json".into(),
            content: json,
        });
    }
    files
}

/// The texts the placeholders of a task's templates become.
struct Prompt {
    values: Vec<(&'static str, String)>,
}

impl Prompt {
    fn new(
        task: &Assignment,
        policy: &LlmPolicy,
        found: &[crate::harness::Evidence],
        parent_result: &str,
        explore: Allowance,
    ) -> Prompt {
        let spec = task.problem.spec();
        let direction = match spec.direction {
            crate::problems::Direction::Minimize => "minimize",
            crate::problems::Direction::Maximize => "maximize",
        };
        let evidence = if !policy.show_evidence {
            "(not shown)".to_string()
        } else if found.is_empty() {
            "nothing notable".to_string()
        } else {
            found
                .iter()
                .map(|e| crate::harness::evidence_key(*e))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let library: Vec<String> = task
            .library
            .iter()
            .take(policy.library_programs)
            .map(|p| format!("```toml\n{}```", p.to_toml()))
            .collect();
        let per_answer = explore.scaled(1.0 / policy.tries as f64);
        let budget = match (per_answer.evaluations, per_answer.seconds) {
            (Some(e), Some(s)) => format!("about {e} objective evaluations or {s:.1} s"),
            (Some(e), None) => format!("about {e} objective evaluations"),
            (None, Some(s)) => format!("about {s:.1} s"),
            (None, None) => "unlimited".to_string(),
        };
        Prompt {
            values: vec![
                (
                    "problem",
                    format!(
                        "{} ({}): {direction} the score. Domain: {}. Score: {}",
                        spec.title, spec.slug, spec.domain, spec.score
                    ),
                ),
                (
                    "rules",
                    format!(
                        "{}; at most {} values; a new record must beat the old one by {}",
                        spec.constraints.join("; "),
                        spec.max_len,
                        spec.min_improvement
                    ),
                ),
                ("n", task.start.len().to_string()),
                ("start_score", decimal_string(task.start_exact, 20)),
                ("parent_program", task.parent.to_toml()),
                ("parent_result", parent_result.to_string()),
                ("evidence", evidence),
                (
                    "library",
                    if library.is_empty() {
                        "(none)".to_string()
                    } else {
                        library.join("\n")
                    },
                ),
                ("budget", budget),
                ("script_argv", policy.script_argv.join(" ")),
            ],
        }
    }

    /// `template` with the placeholders filled in, `{error}` by `error`.
    fn fill(&self, template: &str, error: &str) -> String {
        let mut values: Vec<(&str, &str)> =
            self.values.iter().map(|(k, v)| (*k, v.as_str())).collect();
        values.push(("error", error));
        render(template, &values)
    }
}

#[cfg(test)]
#[path = "llm_writer_tests.rs"]
mod tests;
