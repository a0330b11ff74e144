//! The tuner: small numeric nudges of one or two knobs of the harness.
//!
//! Diagnosis first: when most search tasks gain nothing, it favours more revisions per task, more
//! exploration budget, wider tuning steps, bolder revisions and more weight on the edits that
//! address the dominant failure evidence; when most tasks gain, it favours polishing (budget to
//! the reserve, finer tuning steps, more exact verification, earlier triage); when the parent is
//! expensive for its gain, fewer revisions and stopping sooner. Every knob also keeps a small
//! weight in either direction, so a rejected nudge leaves others to try.

use super::{
    addresses, edit_count, fresh, pick_weighted, round_sig, widened, Diagnosis, DraftChild,
    MutationContext, MutationError, Mutator, Proposal,
};
use crate::harness::{kind_key, EditKind, Harness};
use crate::search::mutators::evidence_key;
use rand::Rng;

/// The small-numeric-tuning mutator.
pub struct Tuner;

impl Mutator for Tuner {
    fn name(&self) -> &'static str {
        "tuner"
    }

    fn propose(&self, ctx: &MutationContext) -> Result<Proposal, MutationError> {
        let diagnosis = Diagnosis::of(ctx);
        let parent = ctx.parent.1;
        fresh(
            ctx,
            self.name(),
            diagnosis.lines(),
            &[],
            |rng, try_number| nudge(parent, &diagnosis, rng, try_number),
        )
    }
}

/// A share of the budget split.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Share {
    Minimal,
    Explore,
    Reserve,
}

/// One numeric knob and the direction to move it (`None`: either way, drawn at random).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Knob {
    Programs(i64),
    EditsPerProgram(i64),
    TuneRange(Option<bool>),
    StopAfterFailures(i64),
    Triage(f64),
    VerifyTop(i64),
    Budget(Share, Share),
    Menu(EditKind, Option<bool>),
    Boost(usize, Option<bool>),
    RaceCandidates(i64),
    RaceFirstRung(f64),
    RaceEta(i64),
}

/// Budget moved by one nudge.
const BUDGET_STEP: f64 = 0.05;
/// Triage moved by one nudge.
const TRIAGE_STEP: f64 = 0.1;
/// Largest factor one nudge scales the tuning range by.
const TUNE_RANGE_STEP: f64 = 1.5;
/// A race's first-rung share moved by one nudge.
const RACE_RUNG_STEP: f64 = 0.1;

/// The knobs worth nudging for this diagnosis, with weights and reasons.
fn plan(parent: &Harness, diagnosis: &Diagnosis) -> Vec<(f64, (Knob, &'static str))> {
    let background = "background nudge";
    let mut plan: Vec<(f64, (Knob, &'static str))> = [
        Knob::Programs(1),
        Knob::Programs(-1),
        Knob::EditsPerProgram(1),
        Knob::EditsPerProgram(-1),
        Knob::TuneRange(None),
        Knob::StopAfterFailures(1),
        Knob::StopAfterFailures(-1),
        Knob::Triage(TRIAGE_STEP),
        Knob::Triage(-TRIAGE_STEP),
        Knob::VerifyTop(1),
        Knob::VerifyTop(-1),
    ]
    .into_iter()
    .map(|k| (0.2, (k, background)))
    .collect();
    let shares = [Share::Minimal, Share::Explore, Share::Reserve];
    for from in shares {
        for to in shares.into_iter().filter(|&to| to != from) {
            plan.push((0.1, (Knob::Budget(from, to), background)));
        }
    }
    for &kind in parent.menu.keys() {
        plan.push((0.1, (Knob::Menu(kind, None), background)));
    }
    for i in 0..parent.rules.len() {
        plan.push((0.1, (Knob::Boost(i, None), background)));
    }
    if parent.racing.is_some() {
        for knob in [
            Knob::RaceCandidates(1),
            Knob::RaceCandidates(-1),
            Knob::RaceFirstRung(RACE_RUNG_STEP),
            Knob::RaceFirstRung(-RACE_RUNG_STEP),
            Knob::RaceEta(1),
            Knob::RaceEta(-1),
        ] {
            plan.push((0.2, (knob, background)));
        }
    }

    let dominant = diagnosis.dominant();
    let addressing = |plan: &mut Vec<(f64, (Knob, &'static str))>, weight: f64| {
        if let Some(e) = dominant {
            for &kind in addresses(e) {
                if parent.menu.get(&kind).is_some_and(|&w| w > 0.0) {
                    let why = "more weight on an edit that addresses the dominant evidence";
                    plan.push((weight, (Knob::Menu(kind, Some(true)), why)));
                }
            }
            for (i, rule) in parent.rules.iter().enumerate() {
                if rule.when == e {
                    let why = "a stronger rule for the dominant evidence";
                    plan.push((weight, (Knob::Boost(i, Some(true)), why)));
                }
            }
        }
    };
    if diagnosis.mostly_failing() {
        let why = "most tasks gain nothing: more revisions per task";
        plan.push((3.0, (Knob::Programs(1), why)));
        let why = "most tasks gain nothing: more exploration budget";
        plan.push((3.0, (Knob::Budget(Share::Reserve, Share::Explore), why)));
        plan.push((1.5, (Knob::Budget(Share::Minimal, Share::Explore), why)));
        let why = "most tasks gain nothing: wider tuning steps";
        plan.push((2.0, (Knob::TuneRange(Some(true)), why)));
        let why = "most tasks gain nothing: bolder revisions";
        plan.push((1.0, (Knob::EditsPerProgram(1), why)));
        if parent.stop_after_failures > 0 {
            let why = "most tasks gain nothing: give up on a line of revisions later";
            plan.push((1.0, (Knob::StopAfterFailures(1), why)));
        }
        addressing(&mut plan, 2.0);
    } else {
        let why = "most tasks gain: more budget to polish the best";
        plan.push((2.0, (Knob::Budget(Share::Explore, Share::Reserve), why)));
        let why = "most tasks gain: finer tuning steps around what works";
        plan.push((2.0, (Knob::TuneRange(Some(false)), why)));
        let why = "most tasks gain: verify more candidates exactly";
        plan.push((1.0, (Knob::VerifyTop(1), why)));
        let why = "most tasks gain: triage earlier, in favour of the reserve";
        plan.push((1.0, (Knob::Triage(TRIAGE_STEP), why)));
        addressing(&mut plan, 1.0);
    }
    if diagnosis.expensive {
        let why = "expensive for its gain: fewer revisions per task";
        plan.push((3.0, (Knob::Programs(-1), why)));
        let why = "expensive for its gain: stop sooner when revisions keep failing";
        let step = if parent.stop_after_failures == 0 {
            1
        } else {
            -1
        };
        plan.push((2.0, (Knob::StopAfterFailures(step), why)));
        let why = "expensive for its gain: triage earlier";
        plan.push((1.0, (Knob::Triage(TRIAGE_STEP), why)));
        let why = "expensive for its gain: smaller revisions";
        plan.push((1.0, (Knob::EditsPerProgram(-1), why)));
    }
    plan
}

/// One or two nudges of `parent` chosen by the diagnosis (up to three, any knob alike, on late
/// tries); the lines say what moved and why.
pub(super) fn nudge(
    parent: &Harness,
    diagnosis: &Diagnosis,
    rng: &mut impl Rng,
    try_number: usize,
) -> Option<DraftChild> {
    let plan = widened(&plan(parent, diagnosis), try_number);
    let count = edit_count(try_number, 0.35, rng);
    let mut child = parent.clone();
    let mut lines = Vec::new();
    let mut used = Vec::new();
    for _ in 0..count {
        let (knob, why) = pick_weighted(&plan, rng)?;
        if used.contains(&knob) {
            continue;
        }
        used.push(knob);
        if let Some(change) = apply(&mut child, knob, rng) {
            lines.push(format!("tuner: {change} ({why})"));
        }
    }
    Some((child, lines))
}

fn share(h: &mut Harness, s: Share) -> &mut f64 {
    match s {
        Share::Minimal => &mut h.budget.minimal,
        Share::Explore => &mut h.budget.explore,
        Share::Reserve => &mut h.budget.reserve,
    }
}

fn share_key(s: Share) -> &'static str {
    match s {
        Share::Minimal => "minimal",
        Share::Explore => "explore",
        Share::Reserve => "reserve",
    }
}

/// Moves `value` by `step` within `lo..=hi`; `None` if it would leave the range.
fn step_count(value: usize, step: i64, lo: usize, hi: usize) -> Option<usize> {
    let next = value as i64 + step;
    (lo as i64..=hi as i64)
        .contains(&next)
        .then_some(next as usize)
}

/// A factor in [1.25, 2] (up) or [0.5, 0.8] (down); the direction drawn when not given.
fn scale_factor(up: Option<bool>, rng: &mut impl Rng) -> f64 {
    let up = up.unwrap_or_else(|| rng.gen_bool(0.5));
    if up {
        rng.gen_range(1.25..=2.0)
    } else {
        rng.gen_range(0.5..=0.8)
    }
}

/// Applies one knob; a description of the change, or `None` if it cannot move that way.
fn apply(h: &mut Harness, knob: Knob, rng: &mut impl Rng) -> Option<String> {
    match knob {
        Knob::Programs(step) => {
            let next = step_count(h.programs, step, 1, 16)?;
            let line = format!("programs {} -> {next}", h.programs);
            h.programs = next;
            Some(line)
        }
        Knob::EditsPerProgram(step) => {
            let next = step_count(h.edits_per_program, step, 1, 8)?;
            let line = format!("edits_per_program {} -> {next}", h.edits_per_program);
            h.edits_per_program = next;
            Some(line)
        }
        Knob::StopAfterFailures(step) => {
            let next = step_count(h.stop_after_failures, step, 0, 16)?;
            let line = format!("stop_after_failures {} -> {next}", h.stop_after_failures);
            h.stop_after_failures = next;
            Some(line)
        }
        Knob::VerifyTop(step) => {
            let next = step_count(h.verify_top, step, 1, 16)?;
            let line = format!("verify_top {} -> {next}", h.verify_top);
            h.verify_top = next;
            Some(line)
        }
        Knob::TuneRange(up) => {
            let up = up.unwrap_or_else(|| rng.gen_bool(0.5));
            let factor = rng.gen_range(1.1..=TUNE_RANGE_STEP);
            let scaled = if up {
                h.tune_range * factor
            } else {
                h.tune_range / factor
            };
            let next = round_sig(scaled).min(100.0);
            if next <= 1.0 || next == h.tune_range {
                return None;
            }
            let line = format!("tune_range {} -> {next}", h.tune_range);
            h.tune_range = next;
            Some(line)
        }
        Knob::Triage(step) => {
            let next = ((h.triage + step) * 1e6).round() / 1e6;
            if !(0.0..=1.0).contains(&next) {
                return None;
            }
            let line = format!("triage {} -> {next}", h.triage);
            h.triage = next;
            Some(line)
        }
        Knob::Budget(from, to) => {
            let left = *share(h, from) - BUDGET_STEP;
            let floor = if from == Share::Minimal { 1e-9 } else { -1e-12 };
            if left < floor {
                return None;
            }
            let before = (*share(h, from), *share(h, to));
            let after = (
                (left.max(0.0) * 1e6).round() / 1e6,
                ((before.1 + BUDGET_STEP) * 1e6).round() / 1e6,
            );
            *share(h, from) = after.0;
            *share(h, to) = after.1;
            Some(format!(
                "budget: {BUDGET_STEP} from {} to {} ({} -> {}, {} -> {})",
                share_key(from),
                share_key(to),
                before.0,
                after.0,
                before.1,
                after.1
            ))
        }
        Knob::Menu(kind, up) => {
            let weight = h.menu.get(&kind).copied().filter(|&w| w > 0.0)?;
            let next = round_sig(weight * scale_factor(up, rng));
            if next == weight {
                return None;
            }
            h.menu.insert(kind, next);
            Some(format!("menu.{} {weight} -> {next}", kind_key(kind)))
        }
        Knob::Boost(i, up) => {
            let rule = h.rules.get_mut(i)?;
            let next = round_sig(rule.boost * scale_factor(up, rng));
            if next == rule.boost {
                return None;
            }
            let line = format!(
                "rules[{i}] (when {}) boost {} -> {next}",
                evidence_key(rule.when),
                rule.boost
            );
            rule.boost = next;
            Some(line)
        }
        Knob::RaceCandidates(step) => {
            let racing = h.racing.as_mut()?;
            let next = step_count(racing.candidates, step, 2, 16)?;
            let line = format!("racing.candidates {} -> {next}", racing.candidates);
            racing.candidates = next;
            Some(line)
        }
        Knob::RaceEta(step) => {
            let racing = h.racing.as_mut()?;
            let next = step_count(racing.eta, step, 2, 8)?;
            let line = format!("racing.eta {} -> {next}", racing.eta);
            racing.eta = next;
            Some(line)
        }
        Knob::RaceFirstRung(step) => {
            let racing = h.racing.as_mut()?;
            let next = ((racing.first_rung + step) * 1e6).round() / 1e6;
            if !(next > 0.0 && next < 1.0) {
                return None;
            }
            let line = format!("racing.first_rung {} -> {next}", racing.first_rung);
            racing.first_rung = next;
            Some(line)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::policy_hash;
    use super::*;
    use crate::harness::{seed_harnesses, Evidence};
    use std::collections::HashSet;

    #[test]
    fn proposals_are_deterministic_valid_and_new() {
        let h = seed_harnesses().remove(3);
        let n = node("n0", None, &h, &[0.0, 1.0], &[&[Evidence::Stalled]], true);
        let rejected = HashSet::new();
        let a = Tuner
            .propose(&context((&n, &h), vec![], &rejected, 11))
            .unwrap();
        let b = Tuner
            .propose(&context((&n, &h), vec![], &rejected, 11))
            .unwrap();
        assert_eq!(a, b);
        let other: Vec<Proposal> = (0..8)
            .filter_map(|s| Tuner.propose(&context((&n, &h), vec![], &rejected, s)).ok())
            .collect();
        assert!(other.iter().any(|p| p.harness != a.harness));
        for p in other.iter().chain([&a]) {
            assert!(p.harness.check().is_ok());
            assert_ne!(policy_hash(&p.harness), policy_hash(&h));
            assert!(p.evidence[0].starts_with("diagnosis:"));
            assert!(p.evidence.iter().any(|l| l.starts_with("tuner: ")));
        }
    }

    #[test]
    fn it_never_repeats_a_rejected_harness() {
        let h = seed_harnesses().remove(1);
        let n = node("n0", None, &h, &[0.0, 0.0, 1.0], &[], true);
        assert_eq!(never_repeats_rejected(&Tuner, (&n, &h), None, 30), 30);
    }

    /// Over many seeds, the diagnosis steers the nudges: a failing parent gets more programs and
    /// exploration more often than fewer; a gaining one gets more reserve more often than less.
    #[test]
    fn the_diagnosis_steers_the_knob() {
        let h = seed_harnesses().remove(3);
        let rejected = HashSet::new();
        let count = |gains: &[f64], pick: &dyn Fn(&Harness) -> bool| {
            let n = node("n0", None, &h, gains, &[], true);
            (0..200)
                .filter_map(|s| Tuner.propose(&context((&n, &h), vec![], &rejected, s)).ok())
                .filter(|p| pick(&p.harness))
                .count()
        };
        let failing = [0.0, 0.0, 0.0, 1.0];
        let more = count(&failing, &|c| c.programs > h.programs);
        let fewer = count(&failing, &|c| c.programs < h.programs);
        assert!(more > 3 * fewer.max(1), "more {more}, fewer {fewer}");
        let explore = count(&failing, &|c| c.budget.explore > h.budget.explore);
        let less = count(&failing, &|c| c.budget.explore < h.budget.explore);
        assert!(explore > 3 * less.max(1), "explore {explore}, less {less}");
        let gaining = [1.0, 2.0, 3.0, 0.0];
        let reserve = count(&gaining, &|c| c.budget.reserve > h.budget.reserve);
        let less = count(&gaining, &|c| c.budget.reserve < h.budget.reserve);
        assert!(reserve > 3 * less.max(1), "reserve {reserve}, less {less}");
    }

    #[test]
    fn an_expensive_parent_gets_fewer_programs() {
        let h = seed_harnesses().remove(2);
        let cheap = |id: &str| node(id, None, &h, &[2.0, 2.0], &[], true);
        let (a, b) = (cheap("a"), cheap("b"));
        let mut parent = node("p", None, &h, &[1.0, 1.0], &[], true);
        parent.evaluation.fitness.cost = 100.0;
        let rejected = HashSet::new();
        let mut fewer = 0;
        let mut more = 0;
        for s in 0..200 {
            let history = vec![(&a, &h), (&b, &h), (&parent, &h)];
            let p = Tuner
                .propose(&context((&parent, &h), history, &rejected, s))
                .unwrap();
            assert!(p.evidence.iter().any(|l| l.contains("expensive")));
            fewer += usize::from(p.harness.programs < h.programs);
            more += usize::from(p.harness.programs > h.programs);
        }
        assert!(fewer > 3 * more.max(1), "fewer {fewer}, more {more}");
    }
}
