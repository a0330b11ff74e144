//! End to end against a real local model (SmolLM2-135M behind tests/local_model/server.mjs):
//! `milo evolve --agents` runs three rounds with the LLM writer on every island, the LLM
//! mutator on one and the LLM orchestrator, and the lineage holds what each asked and spent.
//! A 135M model writes poor programs and harnesses: this checks the plumbing (requests,
//! parsing, refusal of bad answers, token accounting), not the quality of the search. Skips
//! (with a `SKIP:` note) where `.ci/run` could not install the model or node-llama-cpp.

mod common;

use common::local_model::LocalModel;
use common::{evolve_tiny, milo};
use serde_json::Value;
use std::path::Path;

/// The agents file: one backend on the local server for all three roles. `max_tokens` keeps
/// every answer short (the server's context is 4096 tokens and it generates about 50 tokens/s).
fn agents_file(dir: &Path, server: &LocalModel) -> String {
    let path = dir.join("agents.toml");
    let text = format!(
        "[[backend]]\nname = \"local\"\nkind = \"openai\"\napi_base = \"{}\"\nmodel = \"{}\"\n\
         timeout_seconds = 300\nretries = 1\nmax_tokens = 160\n\n\
         [writer]\nbackends = [\"local\"]\n[mutator]\nbackends = [\"local\"]\n\
         [orchestrator]\nbackends = [\"local\"]\n",
        server.api_base(),
        server.model_id()
    );
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// The lineage's records of kind `record`.
fn records<'a>(lineage: &'a [Value], record: &str) -> Vec<&'a Value> {
    lineage.iter().filter(|r| r["record"] == record).collect()
}

/// Prompt plus completion tokens of a `usage` object (0 when absent).
fn tokens(usage: &Value) -> u64 {
    usage["prompt_tokens"].as_u64().unwrap_or(0) + usage["completion_tokens"].as_u64().unwrap_or(0)
}

/// Requests of a `usage` object (0 when absent).
fn requests(usage: &Value) -> u64 {
    usage["requests"].as_u64().unwrap_or(0)
}

/// Tokens the writer spent in an evaluation (summed over its tasks); 0 when absent.
fn evaluation_tokens(evaluation: &Value) -> u64 {
    evaluation["tasks"]
        .as_array()
        .map_or(0, |tasks| tasks.iter().map(|t| tokens(&t["usage"])).sum())
}

#[test]
fn three_rounds_with_llm_writer_mutator_and_orchestrator_record_their_tokens_and_diagnoses() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let agents = agents_file(dir.path(), &server);
    evolve_tiny(
        dir.path(),
        &run_dir,
        &[
            "--agents",
            &agents,
            "--writer",
            "llm",
            "--mutators",
            "tuner,llm",
            "--orchestrator",
            "llm",
            "--rounds",
            "3",
            "--islands",
            "2",
            "--tasks-per-round",
            "1",
            "--patience",
            "1",
        ],
    );
    let text = std::fs::read_to_string(run_dir.join("lineage.jsonl")).unwrap();
    let lineage: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        !text.contains("Bearer"),
        "no credential reaches the lineage"
    );

    let started = records(&lineage, "started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["writer"], "llm");
    assert_eq!(started[0]["orchestrator"], "llm");
    assert_eq!(records(&lineage, "round_end").len(), 3, "three rounds ran");

    // The writer asked the model on every task of every node, but for the seed round's
    // unedited tasks on island 0, which the lineage marks as run by `verbatim`, tokenless.
    let nodes = records(&lineage, "node");
    assert!(nodes.len() >= 2, "the two seeds at least: {}", nodes.len());
    let mut unedited = 0;
    for node in &nodes {
        for task in node["evaluation"]["tasks"].as_array().unwrap() {
            if task["writer"] == "verbatim" {
                assert_eq!(
                    node["id"], "n0000",
                    "only the seed round runs unedited: {task}"
                );
                assert_eq!(requests(&task["usage"]), 0, "{task}");
                unedited += 1;
                continue;
            }
            assert!(task.get("writer").is_none(), "{task}");
            assert!(
                requests(&task["usage"]) >= 1 && tokens(&task["usage"]) > 0,
                "node {}: the writer's task carries its tokens: {task}",
                node["id"]
            );
        }
    }
    assert!(
        unedited >= 1,
        "island 0's seed round ran its slot's program unedited"
    );

    // The LLM mutator (island 1's, `tuner,llm` in turn) either made children, with its
    // diagnosis and tokens on the node, or failed with its reason and tokens recorded.
    let llm_children: Vec<&&Value> = nodes.iter().filter(|n| n["mutator"] == "llm").collect();
    for child in &llm_children {
        assert!(requests(&child["usage"]) >= 1, "{child}");
        let evidence = child["evidence"].as_array().unwrap();
        assert!(
            evidence
                .iter()
                .any(|l| l.as_str().unwrap().starts_with("diagnosis (local)")),
            "the model's diagnosis is on the node: {evidence:?}"
        );
    }
    let llm_failures: Vec<&Value> = records(&lineage, "failure")
        .into_iter()
        .filter(|f| f["part"] == "mutator" && f["name"] == "llm")
        .collect();
    for failure in &llm_failures {
        assert!(requests(&failure["usage"]) >= 1, "{failure}");
        assert!(!failure["message"].as_str().unwrap().is_empty());
    }
    assert!(
        !llm_children.is_empty() || !llm_failures.is_empty(),
        "the LLM mutator ran in some round"
    );

    // The orchestrator consulted the model once an island stalled (patience 1): each
    // consultation has its tokens, and any refused answer its reason.
    let consultations = records(&lineage, "consultation");
    assert!(!consultations.is_empty(), "the LLM orchestrator was asked");
    for c in &consultations {
        assert_eq!(c["orchestrator"], "llm");
        assert_eq!(c["backend"], "local");
        assert!(requests(&c["usage"]) >= 1, "{c}");
    }

    // `milo lineage` shows the tokens, and its total is every part's sum.
    let expected: u64 = nodes
        .iter()
        .map(|n| {
            tokens(&n["usage"])
                + evaluation_tokens(&n["evaluation"])
                + evaluation_tokens(&n["parent_evaluation"])
                + evaluation_tokens(&n["validation"])
        })
        .chain(consultations.iter().map(|c| tokens(&c["usage"])))
        .chain(llm_failures.iter().map(|f| tokens(&f["usage"])))
        .sum();
    let shown = milo(&["lineage", run_dir.to_str().unwrap()]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("tokens"), "{}", shown.stdout);
    assert!(
        shown
            .stdout
            .contains("orchestrator llm (local) after round"),
        "{}",
        shown.stdout
    );
    let total = shown
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("language models, all parts: "))
        .unwrap_or_else(|| panic!("no total in:\n{}", shown.stdout));
    assert!(
        total.starts_with(&format!("{expected} tokens")),
        "total {total:?}, records sum to {expected}"
    );
    eprintln!(
        "local model run: {} nodes ({} by the LLM mutator), {} LLM mutator failures, {} \
         consultations; {total}",
        nodes.len(),
        llm_children.len(),
        llm_failures.len(),
        consultations.len()
    );
}
