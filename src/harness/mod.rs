//! Harnesses: the policy of the agent that writes optimizer programs.
//!
//! A harness is data (TOML, `problems/harnesses/*.toml`). It says how the agent revises a task's
//! parent program: how many revised programs it writes and runs, a weighted menu of edits
//! ([`EditKind`], the edits on programs in [`crate::program::edits`]), diagnosis rules mapping
//! evidence from the parent's run ([`Evidence`], read off the trace by
//! [`crate::runner::evidence`]) to preferred edits, how the task's budget is split (a minimal valid
//! run of the parent first, exploration, a reserve to polish the best), when it triages, and how
//! many candidates it verifies exactly before it stops. MILO evolves harnesses; the built-in agent
//! ([`crate::agent::BuiltinWriter`]) interprets them.
//!
//! A harness must be general: [`Harness::check_general`] rejects one that names a task, a start
//! or a file of the suite, or embeds construction data.
//!
//! An optional `[llm]` section ([`LlmPolicy`]) holds the LLM writer's prompts and context policy;
//! the built-in writer ignores it, and a harness without one serialises as before. An optional
//! `[racing]` section ([`Racing`]) makes the exploration a successive-halving race whose first
//! rung includes the parent unchanged.

mod llm_policy;
mod racing;

pub use llm_policy::{render, LlmPolicy, OutputKind, PLACEHOLDERS};
pub use racing::Racing;

use crate::bounded_read::{read_text_capped, CONFIG_CAP};
use crate::error::{MiloError, Result};
pub use crate::program::edits::EditKind;
pub use crate::runner::evidence::Evidence;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Whether each revision edits the parent program or the best revision so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevisionBase {
    /// Every revision starts from the task's parent program.
    Parent,
    /// Revisions chain: each edits the best program found so far.
    Best,
}

/// Whether each revised program runs from the task's start or the best construction so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunFrom {
    /// Every program runs from the task's start construction.
    Start,
    /// Programs continue from the best construction found so far.
    Best,
}

/// A diagnosis rule: when the parent's run shows `when`, edits in `prefer` get `boost`× weight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The evidence that triggers the rule.
    pub when: Evidence,
    /// The edits the rule favours.
    pub prefer: Vec<EditKind>,
    /// The factor applied to their menu weights (> 0).
    pub boost: f64,
}

/// How a task's budget is split; the three shares add up to at most 1 (the rest is unused).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSplit {
    /// A run of the parent program as it is: a valid baseline and the evidence to diagnose.
    pub minimal: f64,
    /// The revised programs, split evenly among them (leftovers roll forward).
    pub explore: f64,
    /// Polishing: the best revised program again, from the best construction.
    pub reserve: f64,
}

/// The policy of the optimizer-writing agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Harness {
    /// Short name.
    pub name: String,
    /// What the policy is meant to do.
    #[serde(default)]
    pub description: String,
    /// Revised programs written and run per task (1–16).
    pub programs: usize,
    /// Edits applied to make one revision (1–8).
    pub edits_per_program: usize,
    /// Which program a revision edits.
    pub revise: RevisionBase,
    /// Which construction a revised program runs from.
    pub run_from: RunFrom,
    /// Largest factor a tuning edit scales a parameter by (1 < range ≤ 100).
    pub tune_range: f64,
    /// Stop exploring after this many revisions in a row without a new best (0 = never).
    pub stop_after_failures: usize,
    /// Triage: when the exploration budget left is below this fraction of one revision's
    /// allotment, exploration stops and the rest goes to the reserve (0–1).
    pub triage: f64,
    /// Candidates (best first by float score) verified exactly before the agent stops (≥ 1).
    pub verify_top: usize,
    /// The budget split.
    pub budget: BudgetSplit,
    /// The edit menu: weight of each edit kind (missing kinds weigh 0).
    pub menu: BTreeMap<EditKind, f64>,
    /// Diagnosis rules, applied in order (boosts multiply).
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// Racing (successive halving) instead of revisions in turn for the exploration share
    /// (the built-in writer; absent: revisions in turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub racing: Option<Racing>,
    /// The LLM writer's prompts and context policy (the built-in writer ignores it; the LLM
    /// writer uses the default of [`llm_writer_harness`] without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmPolicy>,
}

/// Largest number array a harness may hold: longer ones are construction data, not policy.
const MAX_NUMBER_ARRAY: usize = 16;

impl Harness {
    /// Parses and checks a harness's TOML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Harness> {
        let malformed = |message: String| MiloError::Malformed {
            path: origin.to_path_buf(),
            message,
        };
        let raw: toml::Value =
            toml::from_str(text).map_err(|e| MiloError::malformed_toml(origin, text, &e))?;
        if let Some(path) = long_number_array(&raw, String::new()) {
            return Err(malformed(format!(
                "{path}: an array of more than {MAX_NUMBER_ARRAY} numbers is construction data, \
                 which a harness may not embed"
            )));
        }
        let harness: Harness =
            toml::from_str(text).map_err(|e| MiloError::malformed_toml(origin, text, &e))?;
        harness.check().map_err(malformed)?;
        Ok(harness)
    }

    /// Reads (at most [`CONFIG_CAP`] bytes) and checks a harness file.
    pub fn load(path: &Path) -> Result<Harness> {
        let text = read_text_capped(path, CONFIG_CAP, "harness")?;
        Harness::parse(&text, path)
    }

    /// Loads each of `paths` ([`Harness::load`]): a run's `--seed-harness` files, in order.
    pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Harness>> {
        paths.iter().map(|path| Harness::load(path)).collect()
    }

    /// The harness as TOML text (parses back to an equal harness).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("harnesses serialise to TOML")
    }

    /// Content address: the sha256 of the canonical TOML text, first 16 hex digits.
    pub fn content_hash(&self) -> String {
        let digest = Sha256::digest(self.to_toml().as_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// Value checks serde cannot express; the message names the key.
    pub fn check(&self) -> std::result::Result<(), String> {
        if !(1..=16).contains(&self.programs) {
            return Err(format!("programs: must be 1–16, got {}", self.programs));
        }
        if !(1..=8).contains(&self.edits_per_program) {
            return Err(format!(
                "edits_per_program: must be 1–8, got {}",
                self.edits_per_program
            ));
        }
        if !(self.tune_range > 1.0 && self.tune_range <= 100.0) {
            return Err(format!(
                "tune_range: must be in (1, 100], got {}",
                self.tune_range
            ));
        }
        if !(0.0..=1.0).contains(&self.triage) {
            return Err(format!("triage: must be in [0, 1], got {}", self.triage));
        }
        if self.verify_top == 0 {
            return Err("verify_top: must be at least 1".into());
        }
        let b = self.budget;
        for (key, share) in [
            ("minimal", b.minimal),
            ("explore", b.explore),
            ("reserve", b.reserve),
        ] {
            if !(0.0..=1.0).contains(&share) {
                return Err(format!("budget.{key}: must be in [0, 1], got {share}"));
            }
        }
        if b.minimal + b.explore + b.reserve > 1.0 + 1e-12 {
            return Err(format!(
                "budget: minimal + explore + reserve = {} > 1",
                b.minimal + b.explore + b.reserve
            ));
        }
        if b.minimal < 0.0 {
            return Err(format!(
                "budget.minimal: must be ≥ 0 (0: the parent is not re-run, its start is the \
                 baseline and there is no evidence), got {}",
                b.minimal
            ));
        }
        for (kind, &w) in &self.menu {
            if !(w.is_finite() && w >= 0.0) {
                return Err(format!("menu.{}: must be ≥ 0, got {w}", kind_key(*kind)));
            }
        }
        let total = self.menu.values().sum::<f64>();
        if total <= 0.0 {
            return Err("menu: at least one edit needs a positive weight".into());
        }
        if !total.is_finite() {
            return Err(format!(
                "menu: the weights must add up to a finite number, got {total}"
            ));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if !(rule.boost.is_finite() && rule.boost > 0.0) {
                return Err(format!(
                    "rules[{i}].boost: must be positive, got {}",
                    rule.boost
                ));
            }
            if rule.prefer.is_empty() {
                return Err(format!("rules[{i}].prefer: names no edit"));
            }
        }
        if let Some(racing) = &self.racing {
            racing.check()?;
        }
        if let Some(llm) = &self.llm {
            llm.check()?;
        }
        Ok(())
    }

    /// The generality check: an error if any text of the harness names one of `forbidden`
    /// (task ids, start labels, file names of the suite) — a harness may not carry
    /// task-specific logic.
    pub fn check_general(&self, forbidden: &[String]) -> std::result::Result<(), String> {
        let text = self.to_toml();
        for word in forbidden.iter().filter(|w| w.len() >= 3) {
            if text.contains(word.as_str()) {
                return Err(format!(
                    "the harness names '{word}' from the suite; harnesses must be task-agnostic"
                ));
            }
        }
        Ok(())
    }

    /// Menu weights after the rules fired by `evidence` (same order as [`EditKind::ALL`]).
    pub fn edit_weights(&self, evidence: &[Evidence]) -> Vec<f64> {
        EditKind::ALL
            .iter()
            .map(|kind| {
                let base = self.menu.get(kind).copied().unwrap_or(0.0);
                self.rules
                    .iter()
                    .filter(|r| evidence.contains(&r.when) && r.prefer.contains(kind))
                    .fold(base, |w, r| w * r.boost)
            })
            .collect()
    }

    /// The degenerate harness: one revised program of one edit drawn from a uniform menu, no
    /// rules, no re-run of the parent, the whole budget on the revision. Under it the built-in
    /// agent's revision is program evolution's mutation step (the edit draw is tested below);
    /// the `milo-degenerate` benchmark method runs MILO's own machinery with it and harness
    /// evolution off, against `alphaevolve`. Its file is `problems/harnesses/program-evolution.toml`,
    /// the first of [`seed_harnesses`].
    pub fn program_evolution() -> Harness {
        seed_harnesses().remove(0)
    }

    /// Whether `self` and `other` spend a task's budget alike: every setting is equal but the
    /// name, the description, what decides the edits (menu, rules, tuning range) and two that
    /// this treats as never deciding: `verify_top` (it matters only when the best candidate's
    /// exact score fails to confirm its float score) and `triage` (it fires only when earlier
    /// revisions overspent their even allotments by more than the rest of the share). Whether
    /// the edits are alike is for a writer's plans to tell
    /// ([`crate::agent::OptimizerWriter::plan`]).
    pub fn same_run_settings(&self, other: &Harness) -> bool {
        let settings = |h: &Harness| Harness {
            name: String::new(),
            description: String::new(),
            menu: BTreeMap::new(),
            rules: Vec::new(),
            tune_range: 0.0,
            verify_top: 0,
            triage: 0.0,
            ..h.clone()
        };
        settings(self) == settings(other)
    }

    /// [`Harness::same_run_settings`] for a writer that draws no revision under either harness:
    /// then what shapes the revisions (how many, how many edits each, what they revise, where
    /// they run from, when they stop) cannot decide anything either.
    pub fn same_settings_without_revisions(&self, other: &Harness) -> bool {
        let settings = |h: &Harness| Harness {
            programs: 0,
            edits_per_program: 0,
            revise: RevisionBase::Parent,
            run_from: RunFrom::Start,
            stop_after_failures: 0,
            ..h.clone()
        };
        settings(self).same_run_settings(&settings(other))
    }

    /// Whether any writer behaves identically under `self` and `other` on tasks whose parent
    /// run shows one of the `evidence` sets, judged from the settings alone: the same run
    /// settings, tuning range, `verify_top` and `triage`, and the same menu as weighted by the rules under
    /// each evidence set (with no set given, under no evidence).
    pub fn same_behaviour(&self, other: &Harness, evidence: &[Vec<Evidence>]) -> bool {
        let none = [Vec::new()];
        let sets = if evidence.is_empty() {
            &none[..]
        } else {
            evidence
        };
        self.same_run_settings(other)
            && self.tune_range == other.tune_range
            && self.verify_top == other.verify_top
            && self.triage == other.triage
            && sets
                .iter()
                .all(|e| self.edit_weights(e) == other.edit_weights(e))
    }
}

/// The TOML key of an edit kind.
pub fn kind_key(kind: EditKind) -> String {
    toml::Value::try_from(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The TOML key of an evidence kind (`stalled`, `dead_cells`…).
pub fn evidence_key(evidence: Evidence) -> String {
    toml::Value::try_from(evidence)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Path of the first array holding more than [`MAX_NUMBER_ARRAY`] numbers.
fn long_number_array(value: &toml::Value, path: String) -> Option<String> {
    match value {
        toml::Value::Array(items) => {
            let numbers = items
                .iter()
                .filter(|x| matches!(x, toml::Value::Integer(_) | toml::Value::Float(_)))
                .count();
            if numbers > MAX_NUMBER_ARRAY {
                return Some(path);
            }
            items
                .iter()
                .enumerate()
                .find_map(|(i, v)| long_number_array(v, format!("{path}[{i}]")))
        }
        toml::Value::Table(table) => table.iter().find_map(|(k, v)| {
            let here = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            long_number_array(v, here)
        }),
        _ => None,
    }
}

/// The seed harnesses shipped with milo (`problems/harnesses/`), embedded in the binary.
/// Program evolution's comes first, so island 0 (and every run, whatever its islands) starts
/// from program evolution and harness evolution can only add to it.
pub fn seed_harnesses() -> Vec<Harness> {
    [
        (
            "program-evolution",
            include_str!("../../problems/harnesses/program-evolution.toml"),
        ),
        (
            "steady-polish",
            include_str!("../../problems/harnesses/steady-polish.toml"),
        ),
        (
            "explorer",
            include_str!("../../problems/harnesses/explorer.toml"),
        ),
        (
            "diagnostician",
            include_str!("../../problems/harnesses/diagnostician.toml"),
        ),
    ]
    .iter()
    .map(|(name, text)| {
        let origin = Path::new("problems/harnesses").join(format!("{name}.toml"));
        match Harness::parse(text, &origin) {
            Ok(h) => h,
            Err(e) => panic!("embedded seed harness is broken: {e}"),
        }
    })
    .collect()
}

/// The seed harness of the LLM writer (`problems/harnesses/llm-writer.toml`), embedded.
pub fn llm_writer_harness() -> Harness {
    let origin = Path::new("problems/harnesses/llm-writer.toml");
    match Harness::parse(
        include_str!("../../problems/harnesses/llm-writer.toml"),
        origin,
    ) {
        Ok(h) => h,
        Err(e) => panic!("embedded seed harness is broken: {e}"),
    }
}

/// The seed harnesses a run of `writer` starts its islands from: for the LLM writer, its own
/// seed harness first, then the built-in seeds, each given its `[llm]` section (so the prompts
/// are part of every harness the mutators evolve); for other writers, [`seed_harnesses`].
pub fn seed_harnesses_for(writer: &str) -> Vec<Harness> {
    if writer != "llm" {
        return seed_harnesses();
    }
    let first = llm_writer_harness();
    let mut seeds = seed_harnesses();
    for seed in &mut seeds {
        seed.llm = first.llm.clone();
    }
    seeds.insert(0, first);
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_harnesses_are_distinct_and_round_trip() {
        let seeds = seed_harnesses();
        assert_eq!(seeds.len(), 4);
        assert_eq!(seeds[0], Harness::program_evolution());
        for (i, a) in seeds.iter().enumerate() {
            let back = Harness::parse(&a.to_toml(), Path::new("x")).unwrap();
            assert_eq!(&back, a);
            assert_eq!(back.content_hash(), a.content_hash());
            for b in &seeds[i + 1..] {
                assert_ne!(a.content_hash(), b.content_hash());
                assert_ne!(a.name, b.name);
            }
        }
    }

    #[test]
    fn the_degenerate_harness_draws_edits_as_program_evolution_does() {
        use crate::program::edits::EditMenu;
        use rand::SeedableRng;
        let harness = Harness::program_evolution();
        harness.check().unwrap();
        // One program of one edit to the task's parent, from the start, on the whole budget.
        assert_eq!((harness.programs, harness.edits_per_program), (1, 1));
        assert_eq!(harness.revise, RevisionBase::Parent);
        assert_eq!(harness.run_from, RunFrom::Start);
        assert_eq!(harness.budget.minimal, 0.0);
        assert_eq!(harness.budget.reserve, 0.0);
        assert!(harness.rules.is_empty());
        let menu = EditMenu::new(&harness.edit_weights(&[Evidence::Stalled])).unwrap();
        let uniform = EditMenu::uniform();
        for seed in 0..50 {
            let mut a = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut b = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let draws: Vec<EditKind> = (0..20).map(|_| menu.draw(&mut a)).collect();
            let theirs: Vec<EditKind> = (0..20).map(|_| uniform.draw(&mut b)).collect();
            assert_eq!(draws, theirs, "seed {seed}");
        }
        // And the uniform menu reaches every kind.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut seen: Vec<EditKind> = (0..500).map(|_| uniform.draw(&mut rng)).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), EditKind::ALL.len());
    }

    #[test]
    fn a_dry_run_sees_through_names_and_rules_that_do_not_fire() {
        let parent = seed_harnesses()[3].clone(); // diagnostician: rules on evidence
        let mut renamed = parent.clone();
        renamed.name = "other".into();
        renamed.description = "other".into();
        assert!(parent.same_behaviour(&renamed, &[]));
        // A rule boosted under `stalled` changes nothing where no run stalled …
        let mut boosted = parent.clone();
        let stalled = boosted
            .rules
            .iter_mut()
            .find(|r| r.when == Evidence::Stalled)
            .unwrap();
        stalled.boost *= 2.0;
        assert!(parent.same_behaviour(&boosted, &[vec![Evidence::NoGain]]));
        // … and everything where one did.
        assert!(!parent.same_behaviour(&boosted, &[vec![], vec![Evidence::Stalled]]));
        let mut split = parent.clone();
        split.budget.reserve = parent.budget.reserve / 2.0;
        assert!(!parent.same_behaviour(&split, &[]));
    }

    fn with(edit: &str) -> String {
        let base = seed_harnesses()[1].to_toml();
        format!("{edit}\n{base}")
    }

    #[test]
    fn malformed_harnesses_name_the_key() {
        let err = |text: &str| {
            Harness::parse(text, Path::new("h.toml"))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&with("colour = 3")).contains("colour"));
        let base = seed_harnesses()[1].clone();
        let mut bad = base.clone();
        bad.programs = 0;
        assert!(err(&bad.to_toml()).contains("programs"));
        let mut bad = base.clone();
        bad.budget.explore = 0.9;
        bad.budget.reserve = 0.9;
        assert!(err(&bad.to_toml()).contains("budget"));
        let mut bad = base.clone();
        bad.menu.clear();
        assert!(err(&bad.to_toml()).contains("menu"));
        let text = base.to_toml().replace("[menu]", "[menu]\nteleport = 1.0");
        assert!(err(&text).contains("teleport"));
        let mut bad = base.clone();
        for w in bad.menu.values_mut() {
            *w = 1.7e308;
        }
        let e = err(&bad.to_toml());
        assert!(e.contains("menu") && e.contains("finite"), "{e}");
        let llm = llm_writer_harness();
        for (key, bad) in [
            ("tries", "tries = 9"),
            ("max_tokens", "max_tokens = 3"),
            ("temperature", "temperature = 5.0"),
            ("library_programs", "library_programs = 20"),
        ] {
            let name = bad.split(' ').next().unwrap();
            let text: String = llm
                .to_toml()
                .lines()
                .filter(|l| !l.starts_with(&format!("{name} =")))
                .map(|l| format!("{l}\n"))
                .collect::<String>()
                .replace("[llm]\n", &format!("[llm]\n{bad}\n"));
            let e = err(&text);
            assert!(e.contains(&format!("llm.{key}")), "{key}: {e}");
        }
        let text = llm.to_toml().replace("[llm]", "[llm]\nmodel = \"x\"");
        assert!(err(&text).contains("model"));
    }

    #[test]
    fn the_llm_section_round_trips_and_leaves_other_harnesses_unchanged() {
        let llm = llm_writer_harness();
        assert!(llm.llm.is_some());
        let back = Harness::parse(&llm.to_toml(), Path::new("x")).unwrap();
        assert_eq!(back, llm);
        // A harness without [llm] writes no trace of it: its text and hash stay as they were.
        for seed in seed_harnesses() {
            assert!(!seed.to_toml().contains("llm"));
        }
        let with = seed_harnesses_for("llm");
        assert_eq!(with.len(), 5);
        assert!(with.iter().all(|h| h.llm.is_some()));
        assert_eq!(seed_harnesses_for("builtin"), seed_harnesses());
        // Prompts are part of behaviour, and of generality.
        let mut other = llm.clone();
        other.llm.as_mut().unwrap().tries += 1;
        assert!(!llm.same_behaviour(&other, &[]));
        let mut sneaky = llm.clone();
        sneaky
            .llm
            .as_mut()
            .unwrap()
            .task
            .push_str(" alphaevolve/third-default/s1");
        assert!(sneaky
            .check_general(&["alphaevolve/third-default/s1".to_string()])
            .is_err());
    }

    #[test]
    fn embedded_construction_data_and_task_names_are_rejected() {
        let data: Vec<String> = (0..40).map(|i| format!("{}.5", i)).collect();
        let text = with(&format!("values = [{}]", data.join(", ")));
        let message = Harness::parse(&text, Path::new("h.toml"))
            .unwrap_err()
            .to_string();
        assert!(message.contains("values"), "{message}");
        assert!(message.contains("construction data"), "{message}");

        let mut sneaky = seed_harnesses()[1].clone();
        sneaky.description = "special-case alphaevolve/third-default/s1".into();
        let forbidden = vec!["alphaevolve/third-default/s1".to_string()];
        assert!(sneaky.check_general(&forbidden).is_err());
        assert!(seed_harnesses()[1].check_general(&forbidden).is_ok());
    }

    #[test]
    fn rules_boost_the_preferred_edits_only_when_their_evidence_is_present() {
        let h = seed_harnesses()
            .into_iter()
            .find(|h| !h.rules.is_empty())
            .expect("a seed harness with rules");
        let rule = &h.rules[0];
        let plain = h.edit_weights(&[]);
        let fired = h.edit_weights(&[rule.when]);
        for (i, kind) in EditKind::ALL.iter().enumerate() {
            if rule.prefer.contains(kind) && plain[i] > 0.0 {
                assert!(fired[i] != plain[i], "{kind:?}");
            }
        }
        assert_eq!(h.edit_weights(&[]), plain);
    }
}
