//! The LLM mutator: a language model rewrites the parent harness, diagnose-first.
//!
//! The prompt holds the harness format, the parent's TOML, its evaluation (quality, cost and
//! latency in the run's units, mean gain and evidence per slot, the built-in [`Diagnosis`]), the
//! island's history (every child, admitted or rejected with the reason and its diff, when the
//! run keeps memory) and the co-parent's TOML if there is one. The model answers with a short
//! `DIAGNOSIS:` and one fenced ```` ```toml ```` block: the whole child harness, or only the keys
//! it changes (merged over the parent's, tables key by key, anything else replaced), so a small
//! model or a tight token budget can still answer. An answer that does not parse
//! ([`Harness::parse`]), repeats the parent's policy, an island member's or a rejected harness is
//! fed back with the reason, for up to [`TRIES`] answers; then the mutator fails with the last
//! reason and the tokens spent ([`MutationError::Failed`]), which the search records. The backend is drawn from the
//! agents file's `[mutator]` pool with the step's seed.

use super::{
    child_name, policy_hash, Diagnosis, MutationContext, MutationError, Mutator, Proposal,
};
use crate::harness::{kind_key, EditKind, Evidence, Harness};
use crate::llm::{excerpt, ChatMessage, ChatRequest, ModelPool, Speaker, Usage};
use crate::search::mutators::evidence_key;
use crate::search::round_tasks::{mean_gain_per_slot, slot_of};
use std::path::Path;

/// The mutator's name in the pool (`--mutators tuner,llm`).
pub const NAME: &str = "llm";

/// Answers asked for before the mutator gives up.
pub const TRIES: usize = 3;

/// Island children shown in the prompt (the most recent ones).
const HISTORY_SHOWN: usize = 8;

/// Longest diagnosis kept on the node, in characters.
const DIAGNOSIS_CHARS: usize = 2000;

/// Most tokens one answer may have.
const ANSWER_TOKENS: u32 = 2048;

/// A mutator that asks a model from the `[mutator]` pool.
pub struct LlmMutator {
    pool: ModelPool,
}

impl LlmMutator {
    /// A mutator drawing on `pool`.
    pub fn new(pool: ModelPool) -> LlmMutator {
        LlmMutator { pool }
    }
}

impl Mutator for LlmMutator {
    fn name(&self) -> &'static str {
        NAME
    }

    fn propose(&self, ctx: &MutationContext) -> Result<Proposal, MutationError> {
        let backend = self.pool.pick(ctx.seed);
        let diagnosis = Diagnosis::of(ctx);
        let mut request = ChatRequest {
            messages: vec![
                ChatMessage::new(Speaker::System, instructions()),
                ChatMessage::new(Speaker::User, situation(ctx, &diagnosis)),
            ],
            max_tokens: Some(ANSWER_TOKENS),
            seed: Some(ctx.seed),
            cancel: ctx.cancel.clone(),
            ..ChatRequest::default()
        };
        let mut usage = Usage::default();
        let mut refusals: Vec<String> = Vec::new();
        let mut last_answer = String::new();
        for try_number in 1..=TRIES {
            let answer = backend
                .complete(&request)
                .map_err(|e| MutationError::Failed {
                    message: format!("{e} (try {try_number} of {TRIES}; {})", backend.name()),
                    usage,
                })?;
            usage += answer.usage;
            match child_of(ctx, &answer.text) {
                Ok((child, said)) => {
                    let mut evidence = diagnosis.lines();
                    evidence.push(format!("diagnosis ({}): {said}", backend.name()));
                    for (k, reason) in refusals.iter().enumerate() {
                        evidence.push(format!("answer {} refused: {reason}", k + 1));
                    }
                    return Ok(Proposal {
                        harness: child,
                        evidence,
                        usage,
                    });
                }
                Err(reason) => {
                    last_answer = excerpt(&answer.text);
                    request
                        .messages
                        .push(ChatMessage::new(Speaker::Assistant, answer.text));
                    request
                        .messages
                        .push(ChatMessage::new(Speaker::User, feedback(&reason)));
                    refusals.push(reason);
                }
            }
        }
        Err(MutationError::Failed {
            message: format!(
                "no usable harness in {TRIES} answers from {}; the last: {} (answer: {last_answer})",
                backend.name(),
                refusals.last().map_or("", String::as_str),
            ),
            usage,
        })
    }
}

/// The request to answer again after `reason`.
fn feedback(reason: &str) -> String {
    format!(
        "That answer was refused: {reason}\nAnswer again in the same form: a line starting \
         DIAGNOSIS: and then one ```toml block holding the child harness or the keys it \
         changes."
    )
}

/// The system message: the task, the harness format and the answer's form.
fn instructions() -> String {
    let edits: Vec<String> = EditKind::ALL.iter().map(|&k| kind_key(k)).collect();
    let evidence: Vec<String> = Evidence::ALL.iter().map(|&e| evidence_key(e)).collect();
    format!(
        "You are a mutator in MILO, a search over harnesses. A harness is the policy of an \
agent that writes optimizer programs for a numerical construction problem: it revises a parent \
program with edits, runs the revisions, and verifies the best exactly. Your job: diagnose what \
limits the parent harness from its evaluation and the island's history, then write one child \
harness that addresses the diagnosis.

A harness is TOML with these keys (all required unless marked):
name = \"…\"; description = \"…\" (optional)
programs = 1–16 (revised programs written and run per task)
edits_per_program = 1–8
revise = \"parent\" | \"best\" (which program a revision edits)
run_from = \"start\" | \"best\" (which construction a revision runs from)
tune_range = number in (1, 100] (largest factor a tuning edit scales a parameter by)
stop_after_failures = integer ≥ 0 (stop after this many revisions without a new best; 0 never)
triage = number in [0, 1]
verify_top = integer ≥ 1 (candidates verified exactly)
[budget] minimal > 0, explore, reserve: shares in [0, 1] adding up to at most 1
[menu] weight ≥ 0 per edit kind, at least one positive; edit kinds: {edits}
[[rules]] when = one evidence kind ({evidence}); prefer = [edit kinds]; boost > 0
[racing] (optional: exploration as successive halving; the first rung runs the parent unchanged \
and candidates - 1 revisions from the same construction) candidates = 2–16; first_rung = share \
of the exploration budget in (0, 1); eta = 2–8 (each rung keeps the best 1/eta)

Rules: the child must differ from its parent and from every rejected harness; it must be \
general (never name a task, a start or a file, never embed data). The block may hold the whole \
child harness or only the keys that change: the rest is taken from the parent (tables merge key \
by key; a list such as [[rules]] is replaced whole).
Answer in exactly this form, nothing else:
DIAGNOSIS: two to five sentences on what limits the parent and what the child changes.
```toml
programs = 4
[menu]
restarts = 2.0
```",
        edits = edits.join(", "),
        evidence = evidence.join(", ")
    )
}

/// The user message: the parent, its evaluation, the island's history and the co-parent.
fn situation(ctx: &MutationContext, diagnosis: &Diagnosis) -> String {
    let (node, harness) = ctx.parent;
    let unit = ctx.cost.cost_unit();
    let f = node.evaluation.fitness;
    let mut text = format!(
        "## Parent harness (node {}, island {})\n```toml\n{}```\n\n## Its evaluation\n\
         quality {:.6} (higher is better), cost {:.4} {unit}, latency {:.4} {}\n",
        node.id,
        node.island,
        harness.to_toml(),
        f.quality,
        f.cost,
        f.latency,
        ctx.cost.latency_unit()
    );
    for line in diagnosis.lines() {
        text.push_str(&format!("{line}\n"));
    }
    text.push_str(
        "Mean gain per slot (units of the problem's minimal improvement) and evidence:\n",
    );
    for (slot, gain, evidence) in slot_summary(node) {
        text.push_str(&format!("- {slot}: gain {gain:.4}; evidence: {evidence}\n"));
    }
    text.push_str("\n## The island's history, oldest first\n");
    if ctx.history.is_empty() {
        text.push_str("(none shown)\n");
    }
    let skip = ctx.history.len().saturating_sub(HISTORY_SHOWN);
    for (child, _) in ctx.history.iter().skip(skip) {
        let verdict = match child.admitted() {
            true => "admitted",
            false => "rejected",
        };
        text.push_str(&format!(
            "- {} by {} in round {}: {verdict} ({}); quality {:.6}, cost {:.4} {unit}\n",
            child.id,
            child.mutator,
            child.round,
            child.verdict.reason,
            child.evaluation.fitness.quality,
            child.evaluation.fitness.cost,
        ));
        if !child.edit.is_empty() {
            text.push_str(&format!("```diff\n{}```\n", child.edit));
        }
    }
    if let Some((co, co_harness)) = ctx.co_parent {
        text.push_str(&format!(
            "\n## Co-parent (node {}, island {}, quality {:.6}): borrow from it\n```toml\n{}```\n",
            co.id,
            co.island,
            co.evaluation.fitness.quality,
            co_harness.to_toml()
        ));
    }
    text
}

/// Per slot of the node's evaluation, in order: its mean gain and the evidence seen on it.
fn slot_summary(node: &crate::search::lineage::NodeRecord) -> Vec<(String, f64, String)> {
    mean_gain_per_slot(&node.evaluation)
        .into_iter()
        .map(|(slot, mean)| {
            let mut evidence: Vec<Evidence> = Vec::new();
            let seen = node
                .evaluation
                .tasks
                .iter()
                .filter(|t| slot_of(&t.task) == slot);
            for e in seen.flat_map(|t| &t.evidence) {
                if !evidence.contains(e) {
                    evidence.push(*e);
                }
            }
            let words: Vec<String> = evidence.into_iter().map(evidence_key).collect();
            let words = match words.is_empty() {
                true => "none".to_string(),
                false => words.join(", "),
            };
            (slot.to_string(), mean, words)
        })
        .collect()
}

/// The child harness an answer holds and the model's diagnosis, or why the answer is refused.
fn child_of(ctx: &MutationContext, answer: &str) -> Result<(Harness, String), String> {
    let (said, toml) = split_answer(answer)?;
    let parent = ctx.parent.1;
    let mut child = Harness::parse(
        &merged_over(parent, toml)?,
        Path::new("the answer's harness"),
    )
    .map_err(|e| e.to_string())?;
    let policy = policy_hash(&child);
    if policy == policy_hash(parent) {
        return Err("the harness is the parent's policy unchanged".into());
    }
    if let Some((node, _)) = ctx.history.iter().find(|(_, h)| policy_hash(h) == policy) {
        let verdict = match node.admitted() {
            true => "admitted".to_string(),
            false => format!("rejected: {}", node.verdict.reason),
        };
        return Err(format!(
            "the harness repeats the policy of node {} ({verdict})",
            node.id
        ));
    }
    child.description = parent.description.clone();
    child.name = child_name(parent, NAME, &child);
    if ctx.rejected.contains(&child.content_hash()) {
        return Err("the harness was already rejected in this run".into());
    }
    Ok((child, said))
}

/// The TOML text of `parent` with the keys of `answer` (a whole harness or part of one) written
/// over it: tables merge key by key, any other value is replaced.
fn merged_over(parent: &Harness, answer: &str) -> Result<String, String> {
    let answer: toml::Table = answer.parse().map_err(|e: toml::de::Error| {
        format!("the answer's TOML does not parse: {}", e.message())
    })?;
    let mut merged: toml::Table = parent
        .to_toml()
        .parse()
        .expect("a harness's own TOML parses");
    merge(&mut merged, answer);
    Ok(toml::to_string(&merged).expect("a TOML table serialises"))
}

/// Writes `over` onto `base`: a table onto a table key by key, anything else in place.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(value)) => merge(inner, value),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The diagnosis (the text before the fenced block, `DIAGNOSIS:` dropped, whitespace folded)
/// and the TOML inside the first ```` ```toml ```` block (or the first fenced block).
fn split_answer(answer: &str) -> Result<(String, &str), String> {
    let open = answer
        .find("```toml")
        .or_else(|| answer.find("```"))
        .ok_or("the answer holds no ```toml block")?;
    let body_start = answer[open..]
        .find('\n')
        .map(|i| open + i + 1)
        .ok_or("the ```toml block is empty")?;
    let body_end = answer[body_start..]
        .find("```")
        .map_or(answer.len(), |i| body_start + i);
    let before = answer[..open].trim();
    let before = match before.get(..10) {
        Some(head) if head.eq_ignore_ascii_case("diagnosis:") => &before[10..],
        _ => before,
    };
    let said: String = before
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(DIAGNOSIS_CHARS)
        .collect();
    if said.is_empty() {
        return Err("no DIAGNOSIS before the harness".into());
    }
    Ok((said, &answer[body_start..body_end]))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{context, node};
    use super::*;
    use crate::harness::seed_harnesses;
    use crate::llm::scripted::ScriptedBackend;
    use crate::llm::LlmError;
    use std::collections::HashSet;
    use std::sync::Arc;

    fn mutator(replies: Vec<Result<String, LlmError>>) -> (LlmMutator, Arc<ScriptedBackend>) {
        let backend = Arc::new(ScriptedBackend::new("scripted", replies));
        let pool = ModelPool::new(vec![(1.0, Box::new(backend.clone()))]);
        (LlmMutator::new(pool), backend)
    }

    /// An answer holding `harness` with a diagnosis.
    fn answer(harness: &Harness) -> String {
        format!(
            "DIAGNOSIS: the parent stalls on every slot;\n more restarts should help.\n\
             ```toml\n{}```\n",
            harness.to_toml()
        )
    }

    fn parent() -> Harness {
        seed_harnesses().remove(1)
    }

    fn changed(by: usize) -> Harness {
        let mut h = parent();
        h.programs = 1 + (h.programs + by) % 16;
        h
    }

    #[test]
    fn a_good_answer_becomes_the_child_with_its_diagnosis_and_tokens() {
        let p = parent();
        let n = node("n0", None, &p, &[0.0, 1.0], &[&[Evidence::Stalled]], true);
        let rejected = HashSet::new();
        let ctx = context((&n, &p), vec![], &rejected, 5);
        let (m, backend) = mutator(vec![Ok(answer(&changed(1)))]);
        let proposal = m.propose(&ctx).unwrap();
        assert_eq!(proposal.harness.programs, changed(1).programs);
        assert!(proposal.harness.name.starts_with("steady-polish+llm-"));
        let said = proposal
            .evidence
            .iter()
            .find(|l| l.starts_with("diagnosis (scripted)"))
            .expect("the model's diagnosis is kept");
        assert!(
            said.contains("stalls on every slot; more restarts"),
            "{said}"
        );
        let requests = backend.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].seed, Some(5));
        let asked = &requests[0].messages[1].content;
        assert!(
            asked.contains(&p.to_toml()) && asked.contains("stalled"),
            "{asked}"
        );
        assert_eq!(proposal.usage.requests, 1);
        assert!(proposal.usage.prompt_tokens > 0 && proposal.usage.completion_tokens > 0);
    }

    #[test]
    fn an_answer_with_only_the_changed_keys_is_merged_over_the_parent() {
        let p = parent();
        let n = node("n0", None, &p, &[1.0], &[], true);
        let rejected = HashSet::new();
        let ctx = context((&n, &p), vec![], &rejected, 2);
        let partial = "DIAGNOSIS: more programs, less reserve.\n```toml\nprograms = 7\n\
                       [budget]\nreserve = 0.1\n```"
            .to_string();
        let (m, _) = mutator(vec![Ok(partial)]);
        let child = m.propose(&ctx).unwrap().harness;
        let mut expected = p.clone();
        expected.programs = 7;
        expected.budget.reserve = 0.1;
        expected.name = child.name.clone();
        assert_eq!(child, expected, "only the named keys change");
    }

    #[test]
    fn garbage_is_fed_back_and_the_second_answer_is_used() {
        let p = parent();
        let n = node("n0", None, &p, &[1.0], &[], true);
        let rejected = HashSet::new();
        let ctx = context((&n, &p), vec![], &rejected, 1);
        let garbage = "DIAGNOSIS: hm\n```toml\nprograms = \"many\"\n```".to_string();
        let (m, backend) = mutator(vec![Ok(garbage.clone()), Ok(answer(&changed(2)))]);
        let proposal = m.propose(&ctx).unwrap();
        assert_eq!(proposal.harness.programs, changed(2).programs);
        let requests = backend.requests();
        assert_eq!(requests.len(), 2);
        let second = &requests[1].messages;
        assert_eq!(second.len(), 4);
        assert_eq!(second[2].role, Speaker::Assistant);
        assert_eq!(second[2].content, garbage);
        assert!(
            second[3].content.contains("refused") && second[3].content.contains("programs"),
            "{}",
            second[3].content
        );
        assert!(proposal
            .evidence
            .iter()
            .any(|l| l.starts_with("answer 1 refused")));
        assert_eq!(proposal.usage.requests, 2);
    }

    #[test]
    fn a_child_equal_to_its_parent_or_a_history_member_is_refused() {
        let p = parent();
        let n = node("n0", None, &p, &[1.0], &[], true);
        let sibling = changed(3);
        let s = node("n1", Some("n0"), &sibling, &[0.0], &[], false);
        let rejected = HashSet::new();
        let ctx = context((&n, &p), vec![(&s, &sibling)], &rejected, 1);
        let mut renamed = p.clone();
        renamed.name = "something-else".into();
        let (m, backend) = mutator(vec![
            Ok(answer(&renamed)),
            Ok(answer(&sibling)),
            Ok(answer(&changed(4))),
        ]);
        let proposal = m.propose(&ctx).unwrap();
        assert_eq!(proposal.harness.programs, changed(4).programs);
        let feedback: Vec<String> = backend
            .requests()
            .last()
            .unwrap()
            .messages
            .iter()
            .filter(|m| m.role == Speaker::User)
            .map(|m| m.content.clone())
            .collect();
        assert!(
            feedback[1].contains("parent's policy unchanged"),
            "{}",
            feedback[1]
        );
        assert!(
            feedback[2].contains("node n1") && feedback[2].contains("rejected"),
            "{}",
            feedback[2]
        );
    }

    #[test]
    fn three_bad_answers_fail_with_the_last_reason_and_the_tokens() {
        let p = parent();
        let n = node("n0", None, &p, &[1.0], &[], true);
        let rejected = HashSet::new();
        let ctx = context((&n, &p), vec![], &rejected, 1);
        let (m, backend) = mutator(vec![
            Ok("no idea".into()),
            Ok(answer(&p)),
            Ok(format!("```toml\n{}```", changed(1).to_toml())),
        ]);
        let Err(MutationError::Failed {
            message: reason,
            usage,
        }) = m.propose(&ctx)
        else {
            panic!("three bad answers must fail");
        };
        assert_eq!(backend.requests().len(), TRIES);
        assert!(reason.contains("no DIAGNOSIS"), "{reason}");
        assert!(reason.contains("scripted"), "{reason}");
        assert_eq!(usage.requests, 3, "{usage:?}");
    }

    #[test]
    fn a_backend_error_fails_at_once_naming_it() {
        let p = parent();
        let n = node("n0", None, &p, &[1.0], &[], true);
        let rejected = HashSet::new();
        let ctx = context((&n, &p), vec![], &rejected, 1);
        let (m, _) = mutator(vec![Err(LlmError::Timeout {
            backend: "scripted".into(),
            seconds: 60.0,
        })]);
        let Err(MutationError::Failed {
            message: reason, ..
        }) = m.propose(&ctx)
        else {
            panic!("a backend error must fail");
        };
        assert!(reason.contains("no answer within 60 s"), "{reason}");
    }

    #[test]
    fn an_already_rejected_child_is_refused() {
        let p = parent();
        let n = node("n0", None, &p, &[1.0], &[], true);
        let mut known = changed(5);
        known.description = p.description.clone();
        known.name = child_name(&p, NAME, &known);
        let rejected: HashSet<String> = [known.content_hash()].into();
        let ctx = context((&n, &p), vec![], &rejected, 1);
        let (m, _) = mutator(vec![Ok(answer(&changed(5))), Ok(answer(&changed(6)))]);
        let proposal = m.propose(&ctx).unwrap();
        assert_eq!(proposal.harness.programs, changed(6).programs);
        assert!(proposal
            .evidence
            .iter()
            .any(|l| l.contains("already rejected")));
    }
}
