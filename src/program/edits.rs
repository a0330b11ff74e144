//! Edits on optimizer programs: the moves the optimizer-writing agent makes when it revises a
//! parent program (tune a parameter, insert/delete/reorder a stage, swap the parameterisation,
//! change resolution, add restarts or perturbation, cross over with a program that worked, add a
//! move gradient descent cannot make).
//!
//! Every edit returns a program that passes [`Program::check`], or `None` when it does not apply
//! (nothing to delete, no parameter to tune, no library program to cross with).

use super::params::{collect_numbers, tune_range};
use super::{Action, KeepBest, Program, Restarts, Step, UntilStall};
use crate::objective::SmoothMaxName;
use crate::optimize::Parameterisation;
use crate::problems::Problem;
use crate::stages::adam::Adam;
use crate::stages::dinkelbach::{self, Dinkelbach};
use crate::stages::lbfgs::Lbfgs;
use crate::stages::perturb::Perturb;
use crate::stages::prune_regrow::PruneRegrow;
use crate::stages::resample::{Resample, ResampleMethod};
use crate::stages::revive::Revive;
use crate::stages::segment_moves::{MoveKind, SegmentMoves};
use crate::stages::sequential_lp::SequentialLp;
use crate::stages::TuneRange;
use rand::distributions::{Distribution, WeightedIndex};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// A kind of edit on a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditKind {
    /// Scale one tunable numeric parameter (the stages say which, [`crate::stages::Stage::tunable`])
    /// by a log-uniform factor.
    Tune,
    /// Insert an optimizer stage suited to the problem.
    Insert,
    /// Delete a stage (never the last optimizer stage).
    Delete,
    /// Swap two neighbouring stages.
    Reorder,
    /// Swap a stage's parameterisation (or its smooth max where only one parameterisation fits).
    Parameterisation,
    /// Double the resolution before optimizing, or undo a resolution change.
    Resolution,
    /// Wrap the optimizer stages in independent restarts (or add more of them).
    Restarts,
    /// Append basin hopping: perturb, re-optimize, keep if better, until it stalls.
    Perturbation,
    /// Splice the head of this program with the tail of one that worked in the lineage.
    Crossover,
    /// Add a move that gradient descent cannot make, accepted only on the true score, after the
    /// optimizer stages: discrete segment moves, dead-cell revival (where `f = v²` fits), or a
    /// sequential LP over every near-peak lag with an exact line search (where the problem has a
    /// lag model); the records' operators ([`discrete_move_stage`]).
    DiscreteMove,
}

impl EditKind {
    /// Every edit kind, in a fixed order.
    pub const ALL: [EditKind; 10] = [
        EditKind::Tune,
        EditKind::Insert,
        EditKind::Delete,
        EditKind::Reorder,
        EditKind::Parameterisation,
        EditKind::Resolution,
        EditKind::Restarts,
        EditKind::Perturbation,
        EditKind::Crossover,
        EditKind::DiscreteMove,
    ];
}

/// A weighted menu of edit kinds (one weight per [`EditKind::ALL`], in that order).
#[derive(Clone, Debug)]
pub struct EditMenu(WeightedIndex<f64>);

impl EditMenu {
    /// The menu of `weights`; `None` when no weight is positive. Weights whose sum overflows
    /// (a harness's boosts can multiply finite weights past `f64::MAX`) are drawn as scaled by
    /// their largest, the infinite ones alike.
    pub fn new(weights: &[f64]) -> Option<EditMenu> {
        if weights.iter().sum::<f64>().is_finite() {
            return WeightedIndex::new(weights).ok().map(EditMenu);
        }
        let largest = weights.iter().copied().fold(0.0, f64::max);
        let scaled: Vec<f64> = weights
            .iter()
            .map(|&w| match largest.is_infinite() {
                true => f64::from(u8::from(w.is_infinite())),
                false => w / largest,
            })
            .collect();
        WeightedIndex::new(&scaled).ok().map(EditMenu)
    }

    /// Every edit kind with the same weight: program evolution's mutation step.
    pub fn uniform() -> EditMenu {
        EditMenu::new(&[1.0; EditKind::ALL.len()]).expect("positive weights")
    }

    /// Draws an edit kind.
    pub fn draw(&self, rng: &mut impl Rng) -> EditKind {
        EditKind::ALL[self.0.sample(rng)]
    }
}

/// What an edit may know about the task: the problem, the construction's size, and programs
/// that improved tasks earlier in this lineage (for crossover).
pub struct EditContext<'a> {
    /// The problem (its parameterisations, which problem-specific stages apply, its length
    /// limit).
    pub problem: &'a dyn Problem,
    /// Number of values of the construction the program will run on.
    pub n: usize,
    /// Programs that produced gains earlier in the lineage.
    pub library: &'a [Program],
    /// Largest factor a tuning edit may scale a parameter by (> 1).
    pub tune_range: f64,
}

/// Largest construction a resolution edit will produce (keeps one task's cost bounded).
pub const RESOLUTION_CAP: usize = 200_000;

/// Applies one edit of `kind`; a description of what changed, or `None` if it does not apply.
pub fn apply(
    kind: EditKind,
    program: &Program,
    ctx: &EditContext,
    rng: &mut impl Rng,
) -> Option<(Program, String)> {
    let edited = match kind {
        EditKind::Tune => tune(program, ctx.tune_range, rng),
        EditKind::Insert => insert(program, ctx, rng),
        EditKind::Delete => delete(program, rng),
        EditKind::Reorder => reorder(program, rng),
        EditKind::Parameterisation => swap_parameterisation(program, ctx.problem, rng),
        EditKind::Resolution => resolution(program, ctx),
        EditKind::Restarts => restarts(program, rng),
        EditKind::Perturbation => perturbation(program, ctx.problem),
        EditKind::Crossover => crossover(program, ctx.library, rng),
        EditKind::DiscreteMove => discrete_move(program, ctx.problem, rng),
    }?;
    let (mut edited, description) = edited;
    edited.name = program.name.clone();
    if edited.check().is_ok() && &edited != program {
        Some((edited, description))
    } else {
        None
    }
}

/// Index of the trailing `finalize` step, if the program ends with one.
fn body_end(program: &Program) -> usize {
    match program.steps.last() {
        Some(Step {
            action: Action::Finalize(_),
            ..
        }) => program.steps.len() - 1,
        _ => program.steps.len(),
    }
}

fn tune(program: &Program, range: f64, rng: &mut impl Rng) -> Option<(Program, String)> {
    let mut tree = toml::Value::try_from(program).ok()?;
    let mut leaves = Vec::new();
    collect_numbers(&tree, String::new(), &mut leaves);
    let tunable: Vec<(String, TuneRange)> = leaves
        .into_iter()
        .filter_map(|path| {
            let how = tune_range(program, &path)?;
            Some((path, how))
        })
        .collect();
    let (path, how) = tunable.choose(rng)?.clone();
    let factor = range.ln() * rng.gen_range(-1.0..=1.0);
    let factor = factor.exp();
    let (before, after) = scale_number(&mut tree, &path, how, factor)?;
    let edited: Program = tree.try_into().ok()?;
    Some((edited, format!("tune {path}: {before} -> {after}")))
}

/// Scales the number (or every number of the float array) at `path` within its range; returns
/// before and after.
fn scale_number(
    tree: &mut toml::Value,
    path: &str,
    range: TuneRange,
    factor: f64,
) -> Option<(String, String)> {
    let mut node = tree;
    for part in path.split('.') {
        let (key, indices) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        node = node.get_mut(key)?;
        for index in indices.split(['[', ']']).filter(|s| !s.is_empty()) {
            node = node.get_mut(index.parse::<usize>().ok()?)?;
        }
    }
    let unit_interval = range == TuneRange::Fraction;
    let scale = |x: f64| {
        let y = x * factor;
        if unit_interval {
            y.clamp(1e-6, 1.0)
        } else {
            y
        }
    };
    let before = node.to_string();
    match node {
        toml::Value::Integer(k) => {
            let max = match range {
                TuneRange::Count(max) => max.min(i64::MAX as u64) as i64,
                _ => i64::MAX,
            };
            let scaled = (*k as f64 * factor).round().clamp(1.0, max as f64) as i64;
            *k = match scaled == *k {
                true if *k < max => *k + 1,
                true => (*k - 1).max(1),
                false => scaled,
            };
        }
        toml::Value::Float(x) => *x = scale(*x),
        toml::Value::Array(items) => {
            for item in items.iter_mut() {
                if let toml::Value::Float(x) = item {
                    *x = scale(*x);
                }
            }
        }
        _ => return None,
    }
    Some((before, node.to_string()))
}

/// An optimizer stage suited to the problem, from a small menu, with moderate parameters: L-BFGS,
/// Adam and prune–regrow in one of the problem's parameterisations, plus sequential LP where the
/// problem has a lag model and Dinkelbach's method where its score is a ratio.
fn template_stage(problem: &dyn Problem, rng: &mut impl Rng) -> Step {
    let parameterisation = *problem.parameterisations().choose(rng).expect("non-empty");
    let lbfgs = Lbfgs {
        parameterisation,
        smooth_max: SmoothMaxName::LogSumExp,
        betas: vec![1e4, 1e5, 1e6, 1e7, 1e8],
        history: 50,
        iterations: 300,
    };
    let mut menu = vec![
        Action::Lbfgs(lbfgs.clone()),
        Action::Adam(Adam {
            parameterisation,
            beta: 1e3,
            learning_rate: 1e-3,
            gradient_noise: 1e-3,
            iterations: 500,
            patience: 100,
        }),
        Action::PruneRegrow(PruneRegrow {
            fraction: 0.01,
            levels: 2,
        }),
    ];
    if problem.lag_model().is_some() {
        menu.push(sequential_lp(0.0, false));
    }
    if dinkelbach::applies_to(problem) {
        menu.push(Action::Dinkelbach(Dinkelbach {
            rounds: 3,
            inner: lbfgs,
        }));
    }
    Step::from(menu.swap_remove(rng.gen_range(0..menu.len())))
}

/// A sequential LP step of 50 LPs over 100 lags in a trust region of 1e-3, with every lag within
/// `active_within` of the peak and the exact line search if asked.
fn sequential_lp(active_within: f64, line_search: bool) -> Action {
    Action::SequentialLp(SequentialLp {
        active_lags: 100,
        trust_radius: 1e-3,
        steps: 50,
        solver: Default::default(),
        active_within,
        line_search,
    })
}

fn insert(program: &Program, ctx: &EditContext, rng: &mut impl Rng) -> Option<(Program, String)> {
    let mut edited = program.clone();
    let at = rng.gen_range(0..=body_end(program));
    let step = template_stage(ctx.problem, rng);
    let description = format!("insert {} at steps[{at}]", step.kind());
    edited.steps.insert(at, step);
    Some((edited, description))
}

fn delete(program: &Program, rng: &mut impl Rng) -> Option<(Program, String)> {
    let optimizers = program
        .steps
        .iter()
        .filter(|s| s.spends_evaluations())
        .count();
    let candidates: Vec<usize> = (0..body_end(program))
        .filter(|&i| !program.steps[i].spends_evaluations() || optimizers > 1)
        .collect();
    let &at = candidates.choose(rng)?;
    let mut edited = program.clone();
    let removed = edited.steps.remove(at);
    Some((edited, format!("delete {} at steps[{at}]", removed.kind())))
}

fn reorder(program: &Program, rng: &mut impl Rng) -> Option<(Program, String)> {
    let end = body_end(program);
    if end < 2 {
        return None;
    }
    let at = rng.gen_range(0..end - 1);
    let mut edited = program.clone();
    edited.steps.swap(at, at + 1);
    Some((edited, format!("swap steps[{at}] and steps[{}]", at + 1)))
}

/// Visits every L-BFGS parameter block in the steps (nested ones and Dinkelbach's inner run
/// included), in order.
fn visit_lbfgs_blocks(steps: &mut [Step], visit: &mut dyn FnMut(&mut Lbfgs)) {
    for step in steps {
        match &mut step.action {
            Action::Lbfgs(params) => visit(params),
            Action::Dinkelbach(params) => visit(&mut params.inner),
            action => {
                if let Some(body) = action.body_mut() {
                    visit_lbfgs_blocks(body, visit)
                }
            }
        }
    }
}

fn swap_parameterisation(
    program: &Program,
    problem: &dyn Problem,
    rng: &mut impl Rng,
) -> Option<(Program, String)> {
    let mut edited = program.clone();
    let mut blocks = 0;
    visit_lbfgs_blocks(&mut edited.steps, &mut |_| blocks += 1);
    if blocks == 0 {
        return None;
    }
    let target = rng.gen_range(0..blocks);
    let roll = rng.gen::<u64>();
    let mut index = 0;
    let mut description = String::new();
    visit_lbfgs_blocks(&mut edited.steps, &mut |params| {
        if index == target {
            let choices: Vec<_> = problem
                .parameterisations()
                .iter()
                .copied()
                .filter(|&p| p != params.parameterisation)
                .collect();
            description = if choices.is_empty() {
                let before = params.smooth_max;
                params.smooth_max = match before {
                    SmoothMaxName::LogSumExp => SmoothMaxName::PNorm,
                    SmoothMaxName::PNorm => SmoothMaxName::LogSumExp,
                };
                format!("smooth max {before:?} -> {:?}", params.smooth_max)
            } else {
                let before = params.parameterisation;
                params.parameterisation = choices[(roll % choices.len() as u64) as usize];
                format!(
                    "parameterisation {before:?} -> {:?}",
                    params.parameterisation
                )
            };
        }
        index += 1;
    });
    Some((edited, description))
}

fn resolution(program: &Program, ctx: &EditContext) -> Option<(Program, String)> {
    let mut edited = program.clone();
    if let Some(at) = edited
        .steps
        .iter()
        .position(|s| matches!(s.action, Action::Resample(_)))
    {
        edited.steps.remove(at);
        return Some((
            edited,
            format!("remove the resolution change at steps[{at}]"),
        ));
    }
    if 2 * ctx.n > ctx.problem.spec().max_len.min(RESOLUTION_CAP) {
        return None;
    }
    edited.steps.insert(
        0,
        Step::from(Action::Resample(Resample {
            method: ResampleMethod::BlockRepeat,
            factor: 2,
            noise: 1e-9,
            max_n: None,
        })),
    );
    Some((edited, "double the resolution first (block repeat)".into()))
}

fn restarts(program: &Program, rng: &mut impl Rng) -> Option<(Program, String)> {
    let mut edited = program.clone();
    if let Some(Action::Restarts(Restarts { count, .. })) = edited
        .steps
        .iter_mut()
        .map(|s| &mut s.action)
        .find(|a| matches!(a, Action::Restarts(_)))
    {
        *count += 1;
        let description = format!("restarts: {} -> {count}", *count - 1);
        return Some((edited, description));
    }
    let end = body_end(program);
    let count = rng.gen_range(2..=4);
    let body: Vec<Step> = edited.steps.drain(..end).collect();
    edited.steps.insert(
        0,
        Step::from(Action::Restarts(Restarts {
            count,
            body: strip_shares(body),
        })),
    );
    Some((edited, format!("wrap the stages in {count} restarts")))
}

/// The steps without their budget shares (inside a block, shares would be relative to it).
fn strip_shares(steps: Vec<Step>) -> Vec<Step> {
    steps
        .into_iter()
        .map(|step| Step {
            share: None,
            ..step
        })
        .collect()
}

fn perturbation(program: &Program, problem: &dyn Problem) -> Option<(Program, String)> {
    if program
        .steps
        .iter()
        .any(|s| matches!(s.action, Action::UntilStall(_)))
    {
        return None;
    }
    let hop = Step::from(Action::UntilStall(UntilStall {
        min_gain: 0.0,
        patience: 3,
        body: vec![Step::from(Action::KeepBest(KeepBest {
            body: vec![
                Step::from(Action::Perturb(Perturb {
                    fraction: 0.02,
                    scale: 0.01,
                })),
                Step::from(Action::Lbfgs(Lbfgs {
                    parameterisation: problem.default_parameterisation(),
                    smooth_max: SmoothMaxName::LogSumExp,
                    betas: vec![1e6, 1e7, 1e8],
                    history: 50,
                    iterations: 200,
                })),
            ],
        }))],
    }));
    let mut edited = program.clone();
    let at = body_end(program);
    edited.steps.insert(at, hop);
    Some((
        edited,
        "append basin hopping (perturb 2%, L-BFGS, keep best)".into(),
    ))
}

/// A log-uniform draw from `[low, high]`.
fn log_uniform(rng: &mut impl Rng, low: f64, high: f64) -> f64 {
    (rng.gen_range(low.ln()..=high.ln())).exp()
}

/// A stage of the records' operators suited to the problem, with parameters drawn from the
/// ranges the record campaigns measured (docs/records.md): segment moves of 4–1,024 cells,
/// 200–2,000 proposals, raw or polished at β 1e7 → 1e9 (the polish is what lets a move re-balance
/// an equioscillating peak); revival of 10–100 % of the dead cells with a descent gradient at
/// 1e-6–1e-4 of the largest value (where `f = v²` fits, i.e. values ≥ 0); sequential LP over
/// every lag within 1e-7–1e-5 of the peak with the exact line search (where there is a lag
/// model).
pub fn discrete_move_stage(problem: &dyn Problem, rng: &mut impl Rng) -> Step {
    let max_len = log_uniform(rng, 4.0, 1024.0).round() as usize;
    let mut menu = vec![Action::SegmentMoves(SegmentMoves {
        moves: vec![
            MoveKind::FlipRun,
            MoveKind::MirrorSegment,
            MoveKind::SwapSegments,
        ],
        proposals: log_uniform(rng, 200.0, 2000.0).round() as u64,
        min_len: 1,
        max_len,
        polish_iterations: *[0, 50, 200].choose(rng).expect("non-empty"),
        polish_betas: vec![1e7, 1e8, 1e9],
        polish_history: 20,
    })];
    if problem
        .parameterisations()
        .contains(&Parameterisation::Square)
    {
        menu.push(Action::Revive(Revive {
            betas: vec![1e10, 3.162e10, 1e11],
            size: log_uniform(rng, 1e-6, 1e-4),
            fraction: rng.gen_range(0.1..=1.0),
            iterations: 300,
            history: 50,
        }));
    }
    if problem.lag_model().is_some() {
        menu.push(sequential_lp(log_uniform(rng, 1e-7, 1e-5), true));
    }
    Step::from(menu.swap_remove(rng.gen_range(0..menu.len())))
}

/// Appends one of the records' operators ([`discrete_move_stage`]) after the optimizer stages
/// (before a trailing `finalize`).
fn discrete_move(
    program: &Program,
    problem: &dyn Problem,
    rng: &mut impl Rng,
) -> Option<(Program, String)> {
    let step = discrete_move_stage(problem, rng);
    let at = body_end(program);
    let description = format!("append the move {} at steps[{at}]", step.kind());
    let mut edited = program.clone();
    edited.steps.insert(at, step);
    Some((edited, description))
}

fn crossover(
    program: &Program,
    library: &[Program],
    rng: &mut impl Rng,
) -> Option<(Program, String)> {
    let other = library.iter().filter(|p| *p != program).collect::<Vec<_>>();
    let other = *other.choose(rng)?;
    let head = body_end(program).div_ceil(2);
    let tail_from = body_end(other) / 2;
    let mut steps: Vec<Step> = program.steps[..head].to_vec();
    steps.extend(other.steps[tail_from..].iter().cloned());
    if !matches!(
        steps.last(),
        Some(Step {
            action: Action::Finalize(_),
            ..
        })
    ) {
        if let Some(finalize) = program.steps.get(body_end(program)) {
            steps.push(finalize.clone());
        }
    }
    let edited = Program {
        name: program.name.clone(),
        description: program.description.clone(),
        steps: strip_shares(steps),
    };
    Some((
        edited,
        format!(
            "cross over: steps[..{head}] of this program with steps[{tail_from}..] of '{}'",
            other.name
        ),
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::path::Path;

    #[test]
    fn a_menu_whose_weights_overflow_still_draws_the_heaviest() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut weights = vec![0.0; EditKind::ALL.len()];
        weights[0] = 1.7e308;
        weights[1] = 1.7e308;
        let menu = EditMenu::new(&weights).expect("a positive weight");
        for _ in 0..20 {
            assert!(EditKind::ALL[..2].contains(&menu.draw(&mut rng)));
        }
        weights[2] = f64::INFINITY;
        let menu = EditMenu::new(&weights).expect("a positive weight");
        assert_eq!(menu.draw(&mut rng), EditKind::ALL[2]);
    }

    fn program(slug: &str) -> Program {
        let text = match slug {
            "third-autocorrelation-inequality" => {
                include_str!(
                    "../../problems/optimizers/third-autocorrelation-inequality.default.toml"
                )
            }
            "lbfgs-cascade" => include_str!("../../problems/optimizers/lbfgs-cascade.toml"),
            _ => include_str!(
                "../../problems/optimizers/first-autocorrelation-inequality.default.toml"
            ),
        };
        Program::parse(text, std::path::Path::new("test.toml")).unwrap()
    }

    #[test]
    fn every_edit_yields_a_checked_program_different_from_its_parent() {
        let library = vec![program("lbfgs-cascade")];
        let mut applied = std::collections::BTreeMap::new();
        for (slug, parent) in [
            (
                "third-autocorrelation-inequality",
                program("third-autocorrelation-inequality"),
            ),
            ("first-autocorrelation-inequality", program("lbfgs-cascade")),
        ] {
            let problem = crate::problems::by_slug(slug).unwrap();
            let ctx = EditContext {
                problem: problem.as_ref(),
                n: 400,
                library: &library,
                tune_range: 4.0,
            };
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            for kind in EditKind::ALL {
                for _ in 0..20 {
                    if let Some((child, description)) = apply(kind, &parent, &ctx, &mut rng) {
                        assert!(child.check().is_ok(), "{kind:?}: {description}");
                        assert_ne!(child, parent, "{kind:?}: {description}");
                        assert!(!description.is_empty());
                        let reparsed =
                            Program::parse(&child.to_toml(), std::path::Path::new("x")).unwrap();
                        assert_eq!(reparsed, child);
                        *applied.entry(kind).or_insert(0) += 1;
                    }
                }
            }
        }
        for kind in EditKind::ALL {
            assert!(applied.contains_key(&kind), "{kind:?} never applied");
        }
    }

    #[test]
    fn edits_are_deterministic_given_the_rng_seed() {
        let parent = program("third-autocorrelation-inequality");
        let problem = crate::problems::by_slug("third-autocorrelation-inequality").unwrap();
        let ctx = EditContext {
            problem: problem.as_ref(),
            n: 400,
            library: &[],
            tune_range: 4.0,
        };
        let run = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            EditKind::ALL
                .iter()
                .filter_map(|&k| apply(k, &parent, &ctx, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
    }

    #[test]
    fn every_numeric_parameter_of_the_shipped_programs_is_declared_tunable() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("problems/optimizers");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let program = Program::load(&path).unwrap();
            let mut leaves = Vec::new();
            collect_numbers(
                &toml::Value::try_from(&program).unwrap(),
                String::new(),
                &mut leaves,
            );
            for leaf in leaves {
                assert!(
                    tune_range(&program, &leaf).is_some(),
                    "{}: {leaf}",
                    path.display()
                );
                seen += 1;
            }
        }
        let all_kinds = Program::parse(ALL_KINDS, Path::new("all.toml")).unwrap();
        let mut leaves = Vec::new();
        collect_numbers(
            &toml::Value::try_from(&all_kinds).unwrap(),
            String::new(),
            &mut leaves,
        );
        assert_eq!(leaves.len(), 52, "{leaves:?}");
        for leaf in leaves {
            assert!(tune_range(&all_kinds, &leaf).is_some(), "{leaf}");
        }
        assert!(seen > 0);
        let text = all_kinds.to_toml();
        assert!(text.contains("kind = \"trim\""), "{text}");
        assert_eq!(
            Program::parse(&text, Path::new("again.toml")).unwrap(),
            all_kinds
        );
        assert_eq!(
            tune_range(&all_kinds, "steps[0].share"),
            Some(TuneRange::Fraction)
        );
        assert_eq!(
            tune_range(&all_kinds, "steps[12].body[0].times"),
            Some(TuneRange::Count(crate::program::step::MAX_REPEAT))
        );
        assert_eq!(
            tune_range(&all_kinds, "steps[2].inner.betas"),
            Some(TuneRange::Positive)
        );
    }

    #[test]
    fn tuning_a_count_stays_within_its_bound() {
        let program = Program::parse(
            "name = \"p\"\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"raw\"\nhistory = 500\n",
            Path::new("p.toml"),
        )
        .unwrap();
        let mut tree = toml::Value::try_from(&program).unwrap();
        let bound = TuneRange::Count(500);
        let (before, after) = scale_number(&mut tree, "steps[0].history", bound, 4.0).unwrap();
        assert_eq!((before.as_str(), after.as_str()), ("500", "499"));
        let (_, after) = scale_number(&mut tree, "steps[0].history", bound, 1e9).unwrap();
        assert_eq!(after, "500");
        let edited: Program = tree.try_into().unwrap();
        assert!(edited.check().is_ok());
    }

    /// Every stage and block kind once, with every numeric parameter (defaults filled in).
    pub(crate) const ALL_KINDS: &str = r#"
name = "all"

[[steps]]
kind = "lbfgs"
parameterisation = "square"
share = 0.1

[[steps]]
kind = "adam"
parameterisation = "square"

[[steps]]
kind = "dinkelbach"

[steps.inner]
parameterisation = "square"

[[steps]]
kind = "sequential_lp"

[[steps]]
kind = "resample"
method = "pool"

[[steps]]
kind = "perturb"

[[steps]]
kind = "prune_regrow"

[[steps]]
kind = "prune"
parameterisation = "square"

[[steps]]
kind = "refine"
max_n = 1000
parameterisation = "square"
beta_floor = 10.0

[[steps]]
kind = "trim"

[[steps]]
kind = "symmetrize"

[[steps]]
kind = "finalize"

[[steps]]
kind = "restarts"
count = 2

[[steps.body]]
kind = "repeat"
times = 2

[[steps.body.body]]
kind = "until_stall"
patience = 2
min_gain = 1e-9

[[steps.body.body.body]]
kind = "keep_best"

[[steps.body.body.body.body]]
kind = "trim"

[[steps]]
kind = "segment_moves"

[[steps]]
kind = "revive"
"#;

    #[test]
    fn resolution_respects_the_length_cap() {
        let parent = program("lbfgs-cascade");
        let problem = crate::problems::by_slug("first-autocorrelation-inequality").unwrap();
        let ctx = EditContext {
            problem: problem.as_ref(),
            n: 60_000,
            library: &[],
            tune_range: 4.0,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert!(apply(EditKind::Resolution, &parent, &ctx, &mut rng).is_none());
    }
    #[test]
    fn each_records_operator_the_edit_draws_parses_runs_and_never_worsens_the_exact_score() {
        use crate::optimize::Budget;
        let mut drawn = std::collections::BTreeSet::new();
        for problem in crate::problems::all() {
            let p = problem.as_ref();
            let start: Vec<f64> = (0..48)
                .map(|i| 0.5 + 0.3 * (i as f64 * 0.7).sin())
                .collect();
            if p.check(&start).is_err() {
                continue;
            }
            let before = p.score_exact(&start);
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            for seed in 0..12 {
                let step = discrete_move_stage(p, &mut rng);
                let program = Program {
                    name: "move".into(),
                    description: String::new(),
                    steps: vec![step],
                };
                let parsed = Program::parse(&program.to_toml(), Path::new("move.toml")).unwrap();
                assert_eq!(parsed, program);
                let stage = parsed.steps[0].action.stage().unwrap();
                drawn.insert((p.slug().to_string(), stage.kind()));
                let out = stage.run(p, &start, &Budget::evaluations(400), seed);
                assert!(
                    p.check(&out.values).is_ok(),
                    "{} {}",
                    p.slug(),
                    stage.kind()
                );
                let after = p.score_exact(&out.values);
                assert!(
                    !p.spec().direction.better(&before, &after),
                    "{} {}: {after} worse than {before}",
                    p.slug(),
                    stage.kind()
                );
            }
        }
        // Segment moves everywhere, revival where f = v² fits, the LP where there is a lag model.
        for (slug, kind) in [
            ("erdos-min-overlap", "segment_moves"),
            ("erdos-min-overlap", "sequential_lp"),
            ("first-autocorrelation-inequality", "revive"),
            ("first-autocorrelation-inequality", "sequential_lp"),
            ("third-autocorrelation-inequality", "segment_moves"),
        ] {
            assert!(
                drawn.contains(&(slug.into(), kind)),
                "{slug} never drew {kind}"
            );
        }
        assert!(!drawn.contains(&("erdos-min-overlap".into(), "revive")));
    }

    #[test]
    fn the_records_operators_refuse_a_bad_range_naming_the_key() {
        let cases = [
            ("kind = \"segment_moves\"\nmax_len = 0", "steps[0].max_len"),
            (
                "kind = \"segment_moves\"\nproposals = 0",
                "steps[0].proposals",
            ),
            ("kind = \"revive\"\nsize = -1e-4", "steps[0].size"),
            ("kind = \"revive\"\nfraction = 1.5", "steps[0].fraction"),
            (
                "kind = \"sequential_lp\"\nactive_within = -1e-6",
                "steps[0].active_within",
            ),
        ];
        for (step, key) in cases {
            let text = format!("name = \"bad\"\n[[steps]]\n{step}\n");
            let err = Program::parse(&text, Path::new("bad.toml"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{step}: {err}");
        }
    }
}
