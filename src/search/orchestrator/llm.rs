//! The LLM orchestrator: a language model reads a compact summary of every island and answers
//! with at most two moves in JSON, each with its diagnosis.
//!
//! The summary holds, per island, its mutator, best quality, stalled rounds and
//! pending co-parent, its admitted members' mean gains per slot, its recent children with their
//! verdicts, and the recent moves; the instructions list the four allowed moves with their
//! parameters. Every proposed move is checked (a known kind with its parameters, islands in range,
//! a mutator of the pool, nodes that exist — a speciated subtree's in its island —, search slots
//! that exist, no island changed twice, at most [`MAX_MOVES`], a diagnosis each). An answer that
//! fails any check, or no answer, is refused as a whole with the reason and the
//! [`BuiltinOrchestrator`]'s rule decides instead; the search records the reason and the tokens
//! spent (a [`crate::search::lineage::ConsultationRecord`]).

use super::{gains, quality, show, BuiltinOrchestrator, Consultation, Orchestrator, MAX_MOVES};
use crate::cancel::CancelToken;
use crate::llm::{excerpt, ChatMessage, ChatRequest, ModelPool, Speaker};
use crate::runner::derive_seed;
use crate::search::lineage::{EventRecord, Move};
use crate::search::state::SearchState;
use serde_json::Value;
use std::collections::HashSet;

/// The orchestrator's name (`--orchestrator llm`).
pub const NAME: &str = "llm";

/// The moves the model may propose.
pub const ALLOWED: [&str; 4] = ["reassign", "graft", "speciate", "curriculum"];

/// Admitted members and recent children shown per island.
const SHOWN: usize = 6;

/// Moves shown from the run's past.
const PAST_MOVES: usize = 4;

/// Most tokens one answer may have.
const ANSWER_TOKENS: u32 = 1024;

/// Seed stream of the orchestrator's backend draw (islands use their index).
const STREAM: u64 = u64::MAX;

/// An orchestrator that asks a model from the `[orchestrator]` pool.
pub struct LlmOrchestrator {
    pool: ModelPool,
}

impl LlmOrchestrator {
    /// An orchestrator drawing on `pool`.
    pub fn new(pool: ModelPool) -> LlmOrchestrator {
        LlmOrchestrator { pool }
    }
}

impl Orchestrator for LlmOrchestrator {
    fn name(&self) -> &str {
        NAME
    }

    fn consult(
        &self,
        state: &SearchState,
        round: usize,
        patience: usize,
        mutators: &[&str],
        all_search_slots: &[String],
        cancel: &CancelToken,
    ) -> Consultation {
        let run_seed = state.config.as_ref().map_or(0, |c| c.seed);
        let seed = derive_seed(derive_seed(run_seed, round as u64), STREAM);
        let backend = self.pool.pick(seed);
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new(Speaker::System, instructions()),
                ChatMessage::new(
                    Speaker::User,
                    summary(state, round, patience, mutators, all_search_slots),
                ),
            ],
            max_tokens: Some(ANSWER_TOKENS),
            seed: Some(seed),
            cancel: cancel.clone(),
            ..ChatRequest::default()
        };
        let mut consultation = Consultation {
            backend: Some(backend.name().to_string()),
            ..Consultation::default()
        };
        let refusal = match backend.complete(&request) {
            Err(e) => e.to_string(),
            Ok(answer) => {
                consultation.usage += answer.usage;
                let checked = Check {
                    state,
                    round,
                    mutators,
                    slots: all_search_slots,
                    backend: backend.name(),
                }
                .moves(&answer.text);
                match checked {
                    Ok(events) => {
                        consultation.events = events;
                        return consultation;
                    }
                    Err(reason) => format!("{reason} (answer: {})", excerpt(&answer.text)),
                }
            }
        };
        consultation
            .rejected
            .push(format!("{refusal}; the built-in rule decided instead"));
        consultation.events = BuiltinOrchestrator
            .consult(state, round, patience, mutators, all_search_slots, cancel)
            .events;
        consultation
    }
}

/// The system message: the moves and the answer's form.
fn instructions() -> String {
    format!(
        "You are the orchestrator of MILO, an island search over harnesses (policies of an \
agent that writes optimizer programs). Some islands have stalled. Read the islands' summary and \
decide at most {MAX_MOVES} moves that rewrite the search strategy. Allowed moves:
- {{\"kind\": \"reassign\", \"island\": I, \"mutator\": \"NAME\"}}: island I gets another mutator \
from the pool (when its children keep being rejected).
- {{\"kind\": \"graft\", \"from\": J, \"into\": I, \"node\": \"ID\"}}: node ID (a stronger \
island's best) becomes the co-parent of island I's next proposal.
- {{\"kind\": \"speciate\", \"from\": I, \"nodes\": [\"ID\", …], \"mutator\": \"NAME\"}}: admitted \
nodes of island I that solve different slots than its best move into a new island with that \
mutator.
- {{\"kind\": \"curriculum\", \"tasks\": [\"SLOT\", …]}}: the search slots become these (slots \
few harnesses improve).
Each move also has \"diagnosis\": one or two sentences on why. No island may be changed by two \
moves. Answer with one JSON object and nothing else:
{{\"moves\": [ … ]}}
An empty list makes no move."
    )
}

/// The user message: the islands, the pool, the slots and the recent moves.
fn summary(
    state: &SearchState,
    round: usize,
    patience: usize,
    mutators: &[&str],
    slots: &[String],
) -> String {
    let current = state.search_slots.clone().unwrap_or_else(|| slots.to_vec());
    let mut text = format!(
        "After round {round} (patience {patience} rounds).\nMutator pool: {}\nSearch slots: {} \
         (current: {})\n\n## Islands\n",
        mutators.join(", "),
        slots.join(", "),
        current.join(", ")
    );
    for (i, island) in state.islands.iter().enumerate() {
        let best = state.island_best(i);
        text.push_str(&format!(
            "- island {i}: mutator {}; stalled {} rounds; best {}; pending co-parent {}\n",
            island.mutator,
            island.stalled_rounds,
            best.map_or("none".into(), |b| format!(
                "{} (quality {})",
                b.id,
                show(quality(b))
            )),
            island.co_parent.as_deref().unwrap_or("none"),
        ));
        let admitted = state.admitted(i);
        for node in admitted.iter().skip(admitted.len().saturating_sub(SHOWN)) {
            let by_slot: Vec<String> = gains(node)
                .map(|(slot, g)| format!("{slot} {}", show(g)))
                .collect();
            text.push_str(&format!(
                "  admitted {} (quality {}): gains {}\n",
                node.id,
                show(quality(node)),
                by_slot.join(", ")
            ));
        }
        let children = state.children(i);
        for child in children.iter().skip(children.len().saturating_sub(SHOWN)) {
            let verdict = match child.admitted() {
                true => "admitted",
                false => "rejected",
            };
            text.push_str(&format!(
                "  child {} by {} in round {}: {verdict} ({})\n",
                child.id, child.mutator, child.round, child.verdict.reason
            ));
        }
    }
    let moves: Vec<&EventRecord> = state
        .events
        .iter()
        .filter(|e| !matches!(e.action, Move::Promote { .. }))
        .collect();
    if !moves.is_empty() {
        text.push_str("\n## Recent moves\n");
        for event in moves.iter().skip(moves.len().saturating_sub(PAST_MOVES)) {
            text.push_str(&format!("- {}\n", event.headline()));
        }
    }
    text
}

/// What a proposed plan is checked against.
struct Check<'a> {
    state: &'a SearchState,
    round: usize,
    mutators: &'a [&'a str],
    slots: &'a [String],
    backend: &'a str,
}

impl Check<'_> {
    /// The moves of an answer, or why it is refused.
    fn moves(&self, answer: &str) -> Result<Vec<EventRecord>, String> {
        let start = answer.find('{').ok_or("the answer holds no JSON object")?;
        let end = answer.rfind('}').filter(|&e| e > start);
        let end = end.ok_or("the answer's JSON object is not closed")?;
        let value: Value = serde_json::from_str(&answer[start..=end])
            .map_err(|e| format!("the answer is not JSON: {e}"))?;
        let proposed = value
            .get("moves")
            .and_then(Value::as_array)
            .ok_or("the answer has no \"moves\" list")?;
        if proposed.len() > MAX_MOVES {
            return Err(format!(
                "{} moves proposed; at most {MAX_MOVES} are allowed",
                proposed.len()
            ));
        }
        let mut islands = self.state.islands.len();
        let mut changed: HashSet<usize> = HashSet::new();
        let mut events = Vec::new();
        for (k, item) in proposed.iter().enumerate() {
            let refuse = |why: String| format!("move {}: {why}", k + 1);
            let kind = item
                .get("kind")
                .and_then(Value::as_str)
                .ok_or_else(|| refuse("no \"kind\"".into()))?;
            if !ALLOWED.contains(&kind) {
                return Err(refuse(format!(
                    "unknown move '{kind}' (allowed: {})",
                    ALLOWED.join(", ")
                )));
            }
            let diagnosis = item
                .get("diagnosis")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .ok_or_else(|| refuse("no \"diagnosis\"".into()))?;
            let action: Move =
                serde_json::from_value(item.clone()).map_err(|e| refuse(format!("{kind}: {e}")))?;
            let (involved, changes) = self.check(&action, islands).map_err(refuse)?;
            if let Some(twice) = changes.iter().find(|&&i| !changed.insert(i)) {
                return Err(refuse(format!("island {twice} is changed by two moves")));
            }
            if kind == "speciate" {
                islands += 1;
            }
            events.push(EventRecord {
                round: self.round,
                islands: involved,
                diagnosis: format!("{} ({}): {diagnosis}", NAME, self.backend),
                action,
            });
        }
        Ok(events)
    }

    /// The islands `action` involves (as the built-in rule records them) and those it changes
    /// (a curriculum changes the tasks, no island), or why it is invalid; `islands` is the
    /// number of islands after the moves before it.
    fn check(&self, action: &Move, islands: usize) -> Result<(Vec<usize>, Vec<usize>), String> {
        let in_range = |i: usize| match i < islands {
            true => Ok(i),
            false => Err(format!("island {i} is out of range (0–{})", islands - 1)),
        };
        let in_pool = |m: &str| match self.mutators.contains(&m) {
            true => Ok(()),
            false => Err(format!(
                "mutator '{m}' is not in the pool ({})",
                self.mutators.join(", ")
            )),
        };
        match action {
            Move::Reassign { island, mutator } => {
                in_pool(mutator)?;
                let island = in_range(*island)?;
                Ok((vec![island], vec![island]))
            }
            Move::Graft { from, into, node } => {
                let (from, into) = (in_range(*from)?, in_range(*into)?);
                if from == into {
                    return Err(format!("a graft from island {from} into itself"));
                }
                if self.state.node(node).is_none() {
                    return Err(format!("node '{node}' does not exist"));
                }
                Ok((vec![from, into], vec![into]))
            }
            Move::Speciate {
                from,
                nodes,
                mutator,
            } => {
                let from = in_range(*from)?;
                in_pool(mutator)?;
                if nodes.is_empty() {
                    return Err("a speciation names no node".into());
                }
                let admitted = self.state.islands.get(from).map(|i| &i.admitted);
                if let Some(stray) = nodes
                    .iter()
                    .find(|n| !admitted.is_some_and(|a| a.contains(n)))
                {
                    return Err(format!(
                        "node '{stray}' is not an admitted node of island {from}"
                    ));
                }
                Ok((vec![from, islands], vec![from, islands]))
            }
            Move::Curriculum { slots } => {
                if slots.is_empty() {
                    return Err("a curriculum names no slot".into());
                }
                if let Some(stray) = slots.iter().find(|t| !self.slots.contains(t)) {
                    return Err(format!(
                        "'{stray}' is not a search slot ({})",
                        self.slots.join(", ")
                    ));
                }
                Ok(((0..islands).collect(), vec![]))
            }
            Move::Promote { .. } => Err("a promotion is not the orchestrator's move".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::*;
    use super::*;
    use crate::llm::scripted::ScriptedBackend;
    use crate::llm::LlmError;
    use std::sync::Arc;

    fn orchestrator(reply: Result<String, LlmError>) -> (LlmOrchestrator, Arc<ScriptedBackend>) {
        let backend = Arc::new(ScriptedBackend::new("scripted", vec![reply]));
        let pool = ModelPool::new(vec![(1.0, Box::new(backend.clone()))]);
        (LlmOrchestrator::new(pool), backend)
    }

    fn ask(reply: Result<String, LlmError>, state: &SearchState) -> Consultation {
        let tasks = ["t0".to_string(), "t1".to_string()];
        let (o, _) = orchestrator(reply);
        o.consult(
            state,
            state.rounds_done + 1,
            3,
            &POOL,
            &tasks,
            &CancelToken::new(),
        )
    }

    #[test]
    fn a_valid_two_move_answer_is_applied_with_its_diagnoses_and_tokens() {
        let l = dry_lineage([0.8, 0.005]);
        let state = l.state();
        let tasks = ["t0".to_string(), "t1".to_string()];
        let (o, backend) = orchestrator(Ok(r#"Here is my plan:
{"moves": [
  {"kind": "reassign", "island": 0, "mutator": "breeder", "diagnosis": "island 0 is dry"},
  {"kind": "graft", "from": 0, "into": 1, "node": "n0000", "diagnosis": "share the seed"}
]}"#
        .into()));
        let c = o.consult(&state, 4, 3, &POOL, &tasks, &CancelToken::new());
        assert!(c.rejected.is_empty(), "{:?}", c.rejected);
        assert_eq!(c.events.len(), 2);
        assert_eq!(
            c.events[0].action,
            Move::Reassign {
                island: 0,
                mutator: "breeder".into()
            }
        );
        assert_eq!(c.events[0].islands, vec![0]);
        assert_eq!(c.events[0].diagnosis, "llm (scripted): island 0 is dry");
        assert_eq!(c.events[1].islands, vec![0, 1]);
        assert_eq!(c.events[1].round, 4);
        assert_eq!(c.backend.as_deref(), Some("scripted"));
        assert_eq!(c.usage.requests, 1);
        assert!(c.usage.tokens() > 0);
        let moved = after(&state, &c.events);
        assert_eq!(moved.islands[0].mutator, "breeder");
        assert_eq!(moved.islands[1].co_parent.as_deref(), Some("n0000"));
        // The model saw every island, its mutator, its members' gains and its children.
        let asked = &backend.requests()[0].messages[1].content;
        for needle in [
            "island 0: mutator tuner",
            "island 1: mutator structural",
            "n0006",
        ] {
            assert!(asked.contains(needle), "{needle} missing from:\n{asked}");
        }
        assert!(asked.contains("t1 0.005"), "{asked}");
    }

    #[test]
    fn bad_answers_are_refused_with_the_reason_and_the_built_in_rule_decides() {
        let state = dry_lineage([0.8, 0.005]).state();
        let builtin = consult(&state, 3, &["t0", "t1"]);
        assert!(!builtin.is_empty());
        let move_json = |island: usize| {
            format!(
                r#"{{"kind": "reassign", "island": {island}, "mutator": "breeder", "diagnosis": "d"}}"#
            )
        };
        let cases = [
            (format!(r#"{{"moves": [{}]}}"#, move_json(7)), "island 7 is out of range"),
            (
                r#"{"moves": [{"kind": "split", "island": 0, "diagnosis": "d"}]}"#.to_string(),
                "unknown move 'split'",
            ),
            (
                format!(
                    r#"{{"moves": [{}, {}, {}]}}"#,
                    move_json(0),
                    move_json(1),
                    move_json(0)
                ),
                "3 moves proposed",
            ),
            ("I think island 0 should change.".to_string(), "no JSON object"),
            ("{moves: reassign}".to_string(), "not JSON"),
            (
                r#"{"moves": [{"kind": "reassign", "island": 0, "mutator": "oracle", "diagnosis": "d"}]}"#
                    .to_string(),
                "'oracle' is not in the pool",
            ),
            (
                r#"{"moves": [{"kind": "reassign", "island": 0, "mutator": "breeder"}]}"#
                    .to_string(),
                "no \"diagnosis\"",
            ),
            (
                format!(r#"{{"moves": [{}, {}]}}"#, move_json(0), move_json(0)),
                "island 0 is changed by two moves",
            ),
            (
                r#"{"moves": [{"kind": "graft", "from": 1, "into": 0, "node": "n9999", "diagnosis": "d"}]}"#
                    .to_string(),
                "node 'n9999' does not exist",
            ),
        ];
        for (answer, reason) in cases {
            let c = ask(Ok(answer.clone()), &state);
            assert_eq!(c.rejected.len(), 1, "{answer}");
            assert!(
                c.rejected[0].contains(reason) && c.rejected[0].contains("built-in rule"),
                "{answer}: {}",
                c.rejected[0]
            );
            assert_eq!(c.events, builtin, "{answer}");
            assert_eq!(c.usage.requests, 1);
        }
    }

    #[test]
    fn no_answer_is_refused_and_the_built_in_rule_decides() {
        let state = dry_lineage([0.8, 0.005]).state();
        let c = ask(
            Err(LlmError::Status {
                backend: "scripted".into(),
                status: 500,
                message: "boom".into(),
            }),
            &state,
        );
        assert!(c.rejected[0].contains("HTTP 500"), "{:?}", c.rejected);
        assert_eq!(c.events, consult(&state, 3, &["t0", "t1"]));
        assert!(c.usage.is_zero());
    }

    #[test]
    fn an_empty_plan_makes_no_move_and_a_speciation_and_curriculum_check_their_parts() {
        let state = dry_lineage([0.8, 0.005]).state();
        let c = ask(Ok(r#"{"moves": []}"#.into()), &state);
        assert!(c.events.is_empty() && c.rejected.is_empty());
        let c = ask(
            Ok(r#"{"moves": [
                {"kind": "speciate", "from": 0, "nodes": ["n0004"], "mutator": "evidence", "diagnosis": "d"},
                {"kind": "curriculum", "tasks": ["t1"], "diagnosis": "t1 is hard"}]}"#
                .into()),
            &state,
        );
        assert!(c.rejected.is_empty(), "{:?}", c.rejected);
        assert_eq!(c.events[0].islands, vec![0, 2]);
        assert_eq!(c.events[1].islands, vec![0, 1, 2]);
        let c = ask(
            Ok(r#"{"moves": [{"kind": "speciate", "from": 0, "nodes": ["n0003"], "mutator": "evidence", "diagnosis": "d"}]}"#.into()),
            &state,
        );
        assert!(
            c.rejected[0].contains("not an admitted node of island 0"),
            "{:?}",
            c.rejected
        );
        let c = ask(
            Ok(r#"{"moves": [{"kind": "curriculum", "tasks": ["t9"], "diagnosis": "d"}]}"#.into()),
            &state,
        );
        assert!(
            c.rejected[0].contains("'t9' is not a search slot"),
            "{:?}",
            c.rejected
        );
    }
}
