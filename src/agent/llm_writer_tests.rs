//! The LLM writer against scripted models: good programs, garbage, invalid programs, programs
//! that fail, a silent backend; what is fed back and what the tokens add up to.

use super::*;
use crate::agent::fixture::{smooth_start, TaskFixture};
use crate::agent::ProgramRun;
use crate::harness::{llm_writer_harness, Harness};
use crate::llm::scripted::ScriptedBackend;
use crate::llm::{ChatBackend, Completion, LlmError, Usage};
use crate::program::Program;
use std::sync::Arc;

/// A scripted backend the test keeps a handle on after the pool takes it.
struct Shared(Arc<ScriptedBackend>);

impl ChatBackend for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn complete(&self, request: &ChatRequest) -> std::result::Result<Completion, LlmError> {
        self.0.complete(request)
    }
}

const GOOD: &str = r#"I will polish with a longer cascade.
```toml
name = "revised"
[[steps]]
kind = "lbfgs"
parameterisation = "raw"
betas = [1e2, 1e3, 1e4]
iterations = 200
[[steps]]
kind = "finalize"
```
"#;

const INVALID: &str = "```toml\nname = \"bad\"\n[[steps]]\nkind = \"teleport\"\n```";

const PARENT: &str = r#"
name = "parent"
[[steps]]
kind = "lbfgs"
parameterisation = "raw"
betas = [1e2]
iterations = 5
[[steps]]
kind = "finalize"
"#;

/// The third problem from a smooth 60-value start, with [`PARENT`] as the parent.
fn case() -> TaskFixture {
    TaskFixture::new("third-autocorrelation-inequality", smooth_start(60), PARENT)
}

impl TaskFixture {
    /// Solves with a model answering `replies` under `harness`; the attempt and the requests.
    fn solve(&self, harness: &Harness, replies: Vec<&str>) -> (Attempt, Vec<ChatRequest>) {
        self.solve_allowing(harness, replies, false)
    }

    /// As [`TaskFixture::solve`], with the agents file's `allow_commands` set to `allow_commands`.
    fn solve_allowing(
        &self,
        harness: &Harness,
        replies: Vec<&str>,
        allow_commands: bool,
    ) -> (Attempt, Vec<ChatRequest>) {
        let scripted = Arc::new(ScriptedBackend::new(
            "scripted",
            replies.into_iter().map(|r| Ok(r.to_string())).collect(),
        ));
        let pool = ModelPool::new(vec![(1.0, Box::new(Shared(scripted.clone())))]);
        let attempt = LlmWriter::new(pool, allow_commands)
            .solve(harness, &self.assignment(3_000, 7))
            .unwrap();
        (attempt, scripted.requests())
    }
}

fn harness(tries: usize, require_improvement: bool) -> Harness {
    let mut h = llm_writer_harness();
    let policy = h.llm.as_mut().unwrap();
    policy.tries = tries;
    policy.require_improvement = require_improvement;
    h
}

fn revisions(attempt: &Attempt) -> Vec<&ProgramRun> {
    attempt
        .runs
        .iter()
        .filter(|r| r.role == Role::Revision)
        .collect()
}

fn total(usages: impl Iterator<Item = Usage>) -> Usage {
    usages.fold(Usage::default(), |mut sum, u| {
        sum += u;
        sum
    })
}

#[test]
fn a_good_program_is_run_and_its_result_verified() {
    let case = case();
    let (attempt, requests) = case.solve(&harness(3, false), vec![GOOD]);
    assert_eq!(requests.len(), 1);
    let user = &requests[0].messages[1].content;
    assert!(user.contains("name = \"parent\""), "{user}");
    assert!(user.contains("third-autocorrelation-inequality"), "{user}");
    assert!(!user.contains("{parent_program}"), "{user}");
    // A CLI agent gets the construction, the parent and how to run milo as files.
    let file = |name: &str| {
        let found = requests[0].workspace.iter().find(|f| f.name == name);
        found
            .unwrap_or_else(|| panic!("no {name} in the workspace"))
            .content
            .clone()
    };
    let from = crate::construction::json::parse_values(&file("start.json")).unwrap();
    assert_eq!(from.len(), case.start.len());
    let parent = Program::parse(&file("parent.toml"), std::path::Path::new("parent.toml"));
    assert_eq!(parent.unwrap(), case.parent);
    let guide = file("EVALUATE.md");
    assert!(guide.contains("optimize third-autocorrelation-inequality --start start.json"));
    let revised = revisions(&attempt);
    assert_eq!(revised.len(), 1);
    assert_eq!(revised[0].error, None);
    assert!(revised[0].evaluations > 0);
    assert!(revised[0]
        .reply
        .as_deref()
        .unwrap()
        .starts_with("scripted "));
    assert!(attempt.improved);
    assert_eq!(case.problem.score_exact(&attempt.best), attempt.best_exact);
    assert!(case.problem.check(&attempt.best).is_ok());
}

#[test]
fn garbage_then_a_good_program_feeds_the_error_back() {
    let case = case();
    let (attempt, requests) = case.solve(&harness(3, false), vec!["I cannot help.", GOOD]);
    assert_eq!(requests.len(), 2);
    let second = &requests[1].messages;
    assert_eq!(second.len(), 4);
    assert_eq!(second[2].role, Speaker::Assistant);
    assert_eq!(second[2].content, "I cannot help.");
    assert!(
        second[3].content.contains("no ```toml block"),
        "{}",
        second[3].content
    );
    let revised = revisions(&attempt);
    assert_eq!(revised.len(), 2);
    assert!(revised[0]
        .error
        .as_deref()
        .unwrap()
        .contains("no ```toml block"));
    assert_eq!(revised[0].evaluations, 0);
    assert_eq!(revised[1].error, None);
    assert!(attempt.improved);
}

#[test]
fn an_invalid_program_is_fed_back_with_its_error() {
    let case = case();
    let (attempt, requests) = case.solve(&harness(2, false), vec![INVALID, GOOD]);
    let error = revisions(&attempt)[0].error.clone().unwrap();
    assert!(error.contains("teleport"), "{error}");
    assert!(!error.contains('\n'));
    let fed_back = &requests[1].messages.last().unwrap().content;
    assert!(fed_back.contains(&error), "{fed_back}");
}

#[test]
fn when_every_answer_is_unusable_the_parents_result_is_kept() {
    let case = case();
    let h = harness(3, false);
    let (attempt, requests) = case.solve(&h, vec!["", INVALID, "```toml\nname = 3\n"]);
    assert_eq!(requests.len(), 3);
    let revised = revisions(&attempt);
    assert_eq!(revised.len(), 3);
    assert!(revised.iter().all(|r| r.error.is_some() && !r.new_best));
    // The parent ran (minimal, then the reserve from its result): its program is the best.
    assert_eq!(attempt.best_program, case.parent);
    assert!(case.problem.check(&attempt.best).is_ok());
    assert_eq!(case.problem.score_exact(&attempt.best), attempt.best_exact);
}

#[test]
fn a_run_that_does_not_improve_is_fed_back_when_an_improvement_is_required() {
    let case = case();
    // `trim` on a construction with no zero ends changes nothing: it runs but cannot improve.
    let idle = "```toml\nname = \"idle\"\n[[steps]]\nkind = \"trim\"\n```";
    let (attempt, requests) = case.solve(&harness(3, true), vec![idle, GOOD]);
    assert_eq!(requests.len(), 2);
    let fed_back = &requests[1].messages.last().unwrap().content;
    assert!(fed_back.contains("did not improve"), "{fed_back}");
    assert_eq!(revisions(&attempt)[0].error, None);
    // Without the requirement the first program that runs ends the asking.
    let (_, requests) = case.solve(&harness(3, false), vec![idle, GOOD]);
    assert_eq!(requests.len(), 1);
}

#[test]
fn tokens_add_up_over_every_answer_and_a_silent_backend_is_a_recorded_failure() {
    let case = case();
    let (attempt, requests) = case.solve(&harness(3, false), vec!["nothing", INVALID, GOOD]);
    let replies = ["nothing", INVALID, GOOD];
    let expected = Usage {
        prompt_tokens: requests
            .iter()
            .map(|r| {
                let chars: usize = r.messages.iter().map(|m| m.content.len()).sum();
                chars.div_ceil(4) as u64
            })
            .sum(),
        completion_tokens: replies.iter().map(|r| r.len().div_ceil(4) as u64).sum(),
        cost_usd: None,
        requests: 3,
    };
    assert_eq!(attempt.usage, expected);
    assert_eq!(total(attempt.runs.iter().map(|r| r.usage)), expected);
    assert!(attempt.usage.tokens() > 0);

    // The script runs out after one garbage answer: the backend's error ends the asking.
    let (attempt, requests) = case.solve(&harness(3, false), vec!["nothing"]);
    assert_eq!(requests.len(), 2);
    let revised = revisions(&attempt);
    assert_eq!(revised.len(), 2);
    assert!(revised[1]
        .error
        .as_deref()
        .unwrap()
        .contains("no more replies"));
    assert_eq!(attempt.usage.requests, 1);
}

#[test]
fn an_attempt_is_reproducible_and_reads_back_from_json() {
    let case = case();
    let (a, _) = case.solve(&harness(2, false), vec![INVALID, GOOD]);
    let (b, _) = case.solve(&harness(2, false), vec![INVALID, GOOD]);
    assert_eq!(a.best, b.best);
    assert_eq!(a.usage, b.usage);
    let text = serde_json::to_string(&a).unwrap();
    let back: Attempt = serde_json::from_str(&text).unwrap();
    assert_eq!(back.runs, a.runs);
    assert_eq!(back.usage, a.usage);
}

#[test]
fn every_stage_kind_the_seed_prompt_lists_parses_with_its_required_parameters() {
    let system = llm_writer_harness().llm.unwrap().system;
    let sample = |param: &str| match param {
        "parameterisation" => "\"raw\"",
        "method" => "\"block_repeat\"",
        "inner" => "{ parameterisation = \"raw\" }",
        other => panic!("no sample value for the required parameter {other}"),
    };
    let mut failures = Vec::new();
    let mut count = 0;
    for line in system.lines().filter_map(|l| l.strip_prefix("- ")) {
        let (kinds, params) = line.split_once(':').unwrap();
        let required: String = params
            .split([',', ' '])
            .filter_map(|w| w.strip_suffix('*'))
            .map(|p| format!("{p} = {}\n", sample(p)))
            .collect();
        for kind in kinds.split(", ") {
            count += 1;
            let text = format!("name = \"t\"\n[[steps]]\nkind = \"{kind}\"\n{required}");
            if let Err(e) = Program::parse(&text, std::path::Path::new("t.toml")) {
                failures.push(format!("{kind}: {}", e.to_string().lines().last().unwrap()));
            }
        }
    }
    assert!(count >= 12, "{count} kinds");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Whether `python3` runs; a skip note otherwise.
fn python_ready(test: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIP {test}: python3 is not available");
    }
    ok
}

#[test]
fn in_script_mode_a_crashing_script_is_fed_back_and_a_good_one_improves() {
    if !python_ready("in_script_mode_a_crashing_script_is_fed_back_and_a_good_one_improves") {
        return;
    }
    // A flat start with one tall spike: clipping at the median lowers the first problem's score.
    let mut start = vec![1.0; 40];
    start[20] = 20.0;
    let case = TaskFixture::new("first-autocorrelation-inequality", start, PARENT);
    let mut h = harness(3, false);
    h.llm.as_mut().unwrap().output = crate::harness::OutputKind::Script;
    h.run_from = crate::harness::RunFrom::Start;
    let crash = "```python\nimport sys\nsys.stderr.write('boom at line 2')\nsys.exit(3)\n```";
    let good = "Clip the spike.\n```python\nimport json, sys\n\
                v = json.load(open(sys.argv[1]))['values']\n\
                m = sorted(v)[len(v) // 2]\n\
                json.dump({'values': [min(x, m) for x in v]}, open(sys.argv[2], 'w'))\n```";
    let (attempt, requests) = case.solve_allowing(&h, vec![crash, good], true);
    assert_eq!(requests.len(), 2);
    let revised = revisions(&attempt);
    assert_eq!(revised.len(), 2);
    let error = revised[0].error.clone().expect("the crash is an error");
    assert!(
        error.contains("command") && error.contains("boom"),
        "{error}"
    );
    let fed_back = &requests[1].messages.last().unwrap().content;
    assert!(fed_back.contains("boom"), "{fed_back}");
    // The script ran from the start (run_from = "start") and lowered its score.
    assert_eq!(revised[1].error, None);
    let start_score = case.problem.score_fast(&case.start).value;
    assert!(
        revised[1].score < start_score,
        "{} vs {start_score}",
        revised[1].score
    );
    assert!(attempt.improved);
    assert!(attempt.best_exact < case.start_exact);
    assert_eq!(case.problem.score_exact(&attempt.best), attempt.best_exact);
}

/// A model's TOML program whose `command` step copies the start to its output and tries to
/// write `outside` too.
fn command_program(outside: &std::path::Path) -> String {
    format!(
        "```toml\nname = \"shell\"\n[[steps]]\nkind = \"command\"\n\
         argv = [\"sh\", \"-c\", \"echo x > '{}'; cp {{input}} {{output}}\"]\n```",
        outside.display()
    )
}

#[test]
fn a_models_command_step_is_refused_unless_the_agents_file_allows_it() {
    let case = case();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("written-by-the-model");
    let answer = command_program(&marker);
    let (attempt, requests) = case.solve(&harness(2, false), vec![&answer, GOOD]);
    assert!(!marker.exists(), "the model's shell ran");
    let revised = revisions(&attempt);
    let error = revised[0].error.clone().expect("refused");
    assert!(
        error.contains("steps[0]") && error.contains("allow_commands"),
        "{error}"
    );
    // The refusal is fed back, and the next answer runs.
    assert!(requests[1]
        .messages
        .last()
        .unwrap()
        .content
        .contains("allow_commands"));
    assert_eq!(revised[1].error, None);
}

#[test]
fn an_allowed_command_step_runs_confined_to_its_work_directory() {
    let case = case();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("written-by-the-model");
    let answer = command_program(&marker);
    let (attempt, _) = case.solve_allowing(&harness(1, false), vec![&answer], true);
    let revised = revisions(&attempt);
    // It ran (its output, a copy of the start, is a valid construction) but wrote nothing
    // outside its work directory.
    assert_eq!(revised[0].error, None, "{:?}", revised[0]);
    assert!(
        !marker.exists(),
        "a confined command wrote outside its directory"
    );
}
