//! `milo lineage`: the nodes (with an LLM mutator's tokens and diagnosis), orchestrator events,
//! LLM consultations (tokens, refused proposals) and failures of a run, as a table or JSON.

use crate::error::{Result, EXIT_OK};
use crate::llm::Usage;
use crate::search::lineage::{read_records, LINEAGE_FILE};
use crate::search::state::SearchState;
use serde_json::json;
use std::path::PathBuf;

/// Examples in `milo lineage --help`.
pub const EXAMPLES: &str = "Examples:
  milo lineage runs/third-hour
  milo lineage runs/third-hour --json | python3 -m json.tool";

/// Arguments of `milo lineage`.
#[derive(clap::Args, Debug)]
pub struct LineageArgs {
    /// The run directory.
    dir: PathBuf,
    /// Print `{"nodes": [...], "events": [...], "failures": [...], "consultations": [...]}` on
    /// one line.
    #[arg(long)]
    json: bool,
}

/// The width the text table keeps to.
const WIDTH: usize = 100;

/// The indent of a node's detail lines (its verdict's reason, its language-model use).
const INDENT: &str = "       ";

/// `text` in lines of at most [`WIDTH`] columns (a longer word stays whole), each after `indent`.
fn wrap(text: &str, indent: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::from(indent);
    for word in text.split_whitespace() {
        let fresh = line.len() == indent.len();
        if !fresh && line.chars().count() + 1 + word.chars().count() > WIDTH {
            lines.push(std::mem::replace(&mut line, String::from(indent)));
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.len() > indent.len() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Runs `milo lineage`.
pub fn run(args: &LineageArgs) -> Result<i32> {
    let (records, _) = read_records(&args.dir.join(LINEAGE_FILE))?;
    let state = SearchState::replay(&records);
    if args.json {
        let nodes: Vec<_> = state
            .nodes
            .iter()
            .map(|n| {
                json!({
                    "id": n.id,
                    "island": n.island,
                    "parents": n.parents,
                    "round": n.round,
                    "mutator": n.mutator,
                    "admitted": n.admitted(),
                    "same_gains_as_parent": n.same_gains_as_parent(),
                    "quality": n.evaluation.fitness.quality,
                    "cost": n.evaluation.fitness.cost,
                    "latency": n.evaluation.fitness.latency,
                    "evidence": n.evidence,
                    "usage": (!n.usage.is_zero()).then_some(n.usage),
                    "tokens": n.evaluation.usage().tokens(),
                    "cost_usd": n.evaluation.usage().cost_usd,
                })
            })
            .collect();
        let events: Vec<_> = state
            .events
            .iter()
            .map(|e| {
                json!({
                    "round": e.round,
                    "kind": e.action.kind(),
                    "islands": e.islands,
                    "diagnosis": e.diagnosis,
                })
            })
            .collect();
        return super::json_line(
            &json!({ "nodes": nodes, "events": events, "failures": state.failures,
                "consultations": state.consultations }),
        );
    }
    if let Some(config) = &state.config {
        for line in wrap(&format!("{}.", config.cost.description()), "") {
            out!("{line}")?;
        }
    }
    // Tokens where a writer asked a language model.
    let tokens = state.config.as_ref().is_some_and(|c| c.writer == "llm")
        || state
            .nodes
            .iter()
            .any(|n| n.evaluation.usage().tokens() > 0);
    out!(
        "{:<6} {:>6} {:>5} {:<11} {:<13} {:>9} {:>9} {:>8}{}  verdict",
        "node",
        "island",
        "round",
        "mutator",
        "parents",
        "quality",
        "cost",
        "latency",
        if tokens { "     tokens" } else { "" }
    )?;
    for n in &state.nodes {
        let f = n.evaluation.fitness;
        let spent = match tokens {
            true => format!(" {:>10}", n.evaluation.usage().tokens()),
            false => String::new(),
        };
        out!(
            "{:<6} {:>6} {:>5} {:<11} {:<13} {:>9.3} {:>9.2} {:>8.2}{spent}  {}",
            n.id,
            n.island,
            n.round,
            n.mutator,
            n.parents.join(","),
            f.quality,
            f.cost,
            f.latency,
            if n.admitted() { "admitted" } else { "rejected" },
        )?;
        for line in wrap(&n.verdict.reason, INDENT) {
            out!("{line}")?;
        }
        if !n.usage.is_zero() {
            let diagnoses = n.evidence.iter().filter(|l| l.starts_with("diagnosis"));
            for text in std::iter::once(&n.usage.summary()).chain(diagnoses) {
                for line in wrap(text, INDENT) {
                    out!("{line}")?;
                }
            }
        }
    }
    let failures = state
        .failures
        .iter()
        .map(|f| format!("round {} island {}: {}", f.round, f.island, f.summary()));
    let others = state.events.iter().map(|e| e.headline());
    let consultations = state.consultations.iter().map(|c| c.headline());
    for text in others.chain(consultations).chain(failures) {
        // The first line unindented, the rest under it.
        for (i, line) in wrap(&text, INDENT).iter().enumerate() {
            out!("{}", if i == 0 { line.trim_start() } else { line })?;
        }
    }
    out!(
        "{} rounds, {} nodes, {} events, {} failures, {} islands",
        state.rounds_done,
        state.nodes.len(),
        state.events.len(),
        state.failures.len(),
        state.islands.len()
    )?;
    let neutral: Vec<bool> = state
        .nodes
        .iter()
        .filter_map(|n| n.same_gains_as_parent())
        .collect();
    if !neutral.is_empty() {
        out!(
            "children with every task's gain equal to their parent's: {} of {}",
            neutral.iter().filter(|&&same| same).count(),
            neutral.len()
        )?;
    }
    let mut spent = Usage::default();
    for usage in state.nodes.iter().map(|n| n.total_usage()) {
        spent += usage;
    }
    for usage in state.consultations.iter().map(|c| c.usage) {
        spent += usage;
    }
    for usage in state.failures.iter().map(|f| f.usage) {
        spent += usage;
    }
    if !spent.is_zero() {
        out!("language models, all parts: {}", spent.summary())?;
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_keep_to_the_width_and_their_indent() {
        let text = "word ".repeat(60);
        let lines = wrap(&text, INDENT);
        assert!(lines.len() > 1);
        for line in &lines {
            assert!(line.chars().count() <= WIDTH, "{line}");
            assert!(line.starts_with(INDENT) && !line[INDENT.len()..].starts_with(' '));
        }
        assert_eq!(lines.join(" ").split_whitespace().count(), 60);
    }
}
