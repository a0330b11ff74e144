//! Task suites end to end: the committed suites load and split cleanly, `milo suite show` agrees
//! with `milo verify`, `milo suite freeze` round-trips, pinned hashes and malformed files fail
//! with errors that name the file and the key.

mod common;
use common::{arena_dir, milo, root};
use milo::runner::{run_program, Silent};
use milo::suite::{Split, Suite};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const THIRD: &str = "third-autocorrelation-inequality";

fn suite_path(name: &str) -> PathBuf {
    root().join("problems/suites").join(name)
}

fn arena_suites() -> Vec<PathBuf> {
    let problems = [
        "erdos-min-overlap",
        "first-autocorrelation-inequality",
        "second-autocorrelation-inequality",
        THIRD,
    ];
    problems
        .iter()
        .map(|slug| suite_path(&format!("arena-{slug}.toml")))
        .collect()
}

/// The split is disjoint, both sides are non-empty, and held-out starts are never searched.
fn assert_clean_split(suite: &Suite) {
    let search: HashSet<&str> = suite.search_tasks().map(|t| t.id.as_str()).collect();
    let validation: HashSet<&str> = suite.validation_tasks().map(|t| t.id.as_str()).collect();
    let name = &suite.name;
    assert!(!search.is_empty(), "{name}: no search tasks");
    assert!(!validation.is_empty(), "{name}: no validation tasks");
    assert!(search.is_disjoint(&validation), "{name}");
    assert_eq!(search.len() + validation.len(), suite.tasks.len(), "{name}");
    let held_out: HashSet<&str> = suite
        .starts
        .iter()
        .filter(|s| s.split == Split::Validation)
        .map(|s| s.label.as_str())
        .collect();
    let search_seeds: HashSet<u64> = suite.search_tasks().map(|t| t.seed).collect();
    for task in suite.validation_tasks() {
        let other_start = held_out.contains(task.start.label.as_str());
        let other_seed = !search_seeds.contains(&task.seed);
        assert!(other_start || other_seed, "{name}: {} is searched", task.id);
    }
    for task in suite.search_tasks() {
        assert!(!held_out.contains(task.start.label.as_str()), "{}", task.id);
    }
}

#[test]
fn the_default_suite_loads_from_the_repository_alone() {
    let suite = Suite::load(&suite_path("default.toml")).unwrap();
    assert_eq!(suite.problem.slug(), THIRD);
    assert_clean_split(&suite);
    // Everything it needs is committed in the repository (no ../shared).
    let repo = root().canonicalize().unwrap();
    for start in &suite.starts {
        let path = start.path.canonicalize().unwrap();
        assert!(path.starts_with(&repo), "{} is outside", path.display());
    }
    for task in &suite.tasks {
        let path = task.program_path.canonicalize().unwrap();
        assert!(path.starts_with(&repo), "{} is outside", path.display());
    }
    // Evaluation budgets only, so task runs are deterministic.
    assert!(suite.budget.evaluations.is_some() && suite.budget.seconds.is_none());
    assert!(suite.starts.len() >= 3);
    assert_eq!(suite.record, suite.best_start().exact);
}

#[test]
fn a_default_suite_task_reproduces_bit_for_bit() {
    let suite = Suite::load(&suite_path("default.toml")).unwrap();
    let task = suite.search_tasks().next().unwrap();
    let run = || {
        run_program(
            suite.problem.as_ref(),
            &task.start.values,
            &task.program,
            &task.run_settings(Default::default()),
            &mut Silent,
        )
        .unwrap()
    };
    let (a, b) = (run(), run());
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a.best), bits(&b.best), "{}", task.id);
    assert_eq!(a.best_exact, b.best_exact);
}

/// Every suite in `problems/suites` (the arena's, the benchmarks', the record suites) loads:
/// its programs parse, its starts match their pins, its splits are clean.
#[test]
fn every_committed_suite_loads_and_splits_cleanly() {
    if arena_dir("every_committed_suite_loads_and_splits_cleanly").is_none() {
        return;
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("problems/suites"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    let records = [
        "records-erdos-min-overlap.toml",
        "records-third-autocorrelation-inequality.toml",
    ];
    for expected in arena_suites().into_iter().chain(records.map(suite_path)) {
        assert!(
            paths.contains(&expected),
            "{} is missing",
            expected.display()
        );
    }
    for path in paths {
        let suite = Suite::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_clean_split(&suite);
    }
}

#[test]
fn show_json_start_scores_match_verify() {
    if arena_dir("show_json_start_scores_match_verify").is_none() {
        return;
    }
    let suite = suite_path(&format!("arena-{THIRD}.toml"));
    let run = milo(&["suite", "show", suite.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tasks = run.json();
    let tasks = tasks.as_array().unwrap();
    assert!(!tasks.is_empty());
    let mut checked = HashSet::new();
    for task in tasks {
        for key in ["id", "split", "start", "program", "seed", "start_exact"] {
            assert!(task.get(key).is_some(), "{key} missing in {task}");
        }
        let file = task["start_path"].as_str().unwrap();
        if checked.insert(file.to_string()) {
            let verify = milo(&["verify", THIRD, file, "--json"]);
            assert_eq!(verify.code, 0, "{}", verify.stderr);
            assert_eq!(task["start_exact"], verify.json()["score_exact"], "{file}");
        }
    }
    assert_eq!(checked.len(), 2, "both arena starts are listed");
}

#[test]
fn an_arena_suite_without_shared_is_a_clear_io_error() {
    // The same suite file and its programs in a copy of the project with no shared/ beside it.
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("main");
    let (suites, optimizers) = (
        project.join("problems/suites"),
        project.join("problems/optimizers"),
    );
    std::fs::create_dir_all(&suites).unwrap();
    std::fs::create_dir_all(&optimizers).unwrap();
    for name in [
        format!("{THIRD}.default.toml"),
        "resolution-cascade.toml".into(),
    ] {
        let from = root().join("problems/optimizers").join(&name);
        std::fs::copy(from, optimizers.join(&name)).unwrap();
    }
    let copy = suites.join("arena.toml");
    std::fs::copy(suite_path(&format!("arena-{THIRD}.toml")), &copy).unwrap();
    let run = milo(&["suite", "show", copy.to_str().unwrap()]);
    assert_eq!(run.code, 6, "{}", run.stderr);
    assert!(run.stderr.contains("cannot read"), "{}", run.stderr);
    assert!(run.stderr.contains("shared/arena"), "{}", run.stderr);
}

/// A tempdir holding copies of the project's third-problem starts, with arena-client side files.
fn starts_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    std::fs::create_dir(&starts).unwrap();
    let source = root().join("constructions").join(THIRD);
    for name in [
        "opt-arcsine-s1.json",
        "opt-arcsine-s2.json",
        "opt-bump-s3.json",
    ] {
        std::fs::copy(source.join(name), starts.join(name)).unwrap();
    }
    std::fs::write(starts.join("opt-bump-s3.provenance.json"), "{}").unwrap();
    std::fs::write(starts.join("MANIFEST.json"), "[]").unwrap();
    dir
}

fn freeze(dir: &Path, out: &str, extra: &[&str]) -> common::Run {
    let programs = root().join("problems/optimizers");
    let default = programs.join(format!("{THIRD}.default.toml"));
    let cascade = programs.join("resolution-cascade.toml");
    let mut args = vec![
        "suite",
        "freeze",
        "--problem",
        THIRD,
        "--from",
        dir.join("starts").to_str().unwrap(),
        "--programs",
        default.to_str().unwrap(),
        cascade.to_str().unwrap(),
        "--seeds",
        "1,2",
        "--budget-evaluations",
        "500",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(["--out".to_string(), dir.join(out).to_str().unwrap().into()]);
    milo(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn freeze_then_show_round_trips() {
    let dir = starts_folder();
    let run = freeze(
        dir.path(),
        "s.toml",
        &[
            "--validation-starts",
            "opt-arcsine-s2",
            "--validation-seeds",
            "7",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(dir.path().join("s.toml")).unwrap();
    // Paths are relative to the suite file; the side files are skipped.
    assert!(
        text.contains("path = \"starts/opt-arcsine-s1.json\""),
        "{text}"
    );
    assert!(!text.contains(dir.path().to_str().unwrap()), "{text}");
    assert!(
        !text.contains("provenance") && !text.contains("MANIFEST"),
        "{text}"
    );

    let shown = milo(&[
        "suite",
        "show",
        dir.path().join("s.toml").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let tasks = shown.json();
    let tasks = tasks.as_array().unwrap();
    // 3 starts × 2 programs × (2 seeds + 1 validation seed).
    assert_eq!(tasks.len(), 18);
    let split_of = |id: &str| {
        let task = tasks.iter().find(|t| t["id"] == id).unwrap();
        task["split"].as_str().unwrap().to_string()
    };
    assert_eq!(split_of("opt-arcsine-s1/third-default/s1"), "search");
    assert_eq!(
        split_of("opt-arcsine-s1/resolution-cascade/s7"),
        "validation"
    );
    assert_eq!(split_of("opt-arcsine-s2/third-default/s2"), "validation");
    let searched = tasks.iter().filter(|t| t["split"] == "search").count();
    assert_eq!(searched, 8);
    for task in tasks {
        let file = task["start_path"].as_str().unwrap();
        let verify = milo(&["verify", THIRD, file, "--json", "--mode", "exact"]);
        assert_eq!(task["start_exact"], verify.json()["score_exact"], "{file}");
    }

    // A second freeze to the same file is refused and leaves it unchanged.
    let again = freeze(dir.path(), "s.toml", &["--validation-seeds", "8"]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("exists"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("s.toml")).unwrap(),
        text
    );
}

#[test]
fn freeze_refuses_a_suite_without_validation_and_writes_nothing() {
    let dir = starts_folder();
    let run = freeze(dir.path(), "s.toml", &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("validation_seeds"), "{}", run.stderr);
    assert!(!dir.path().join("s.toml").exists());
    let unknown = freeze(dir.path(), "s.toml", &["--validation-starts", "nope"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("'nope'"), "{}", unknown.stderr);
}

#[test]
fn a_changed_start_fails_with_both_hashes() {
    let dir = starts_folder();
    let run = freeze(dir.path(), "s.toml", &["--validation-seeds", "7"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let suite = dir.path().join("s.toml");
    let before = Suite::load(&suite).unwrap();
    let start = before
        .task("opt-bump-s3/third-default/s1")
        .unwrap()
        .start
        .clone();
    // Same values, one more byte: still a valid construction with the same score.
    let file = dir.path().join("starts/opt-bump-s3.json");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push('\n');
    std::fs::write(&file, text).unwrap();
    let actual = milo::suite::sha256_hex(&std::fs::read(&file).unwrap());
    let shown = milo(&["suite", "show", suite.to_str().unwrap()]);
    assert_eq!(shown.code, 6, "a start that no longer matches its pin");
    assert!(
        shown.stderr.contains("opt-bump-s3.json"),
        "{}",
        shown.stderr
    );
    assert!(shown.stderr.contains(&start.sha256), "{}", shown.stderr);
    assert!(shown.stderr.contains(&actual), "{}", shown.stderr);
    assert_ne!(start.sha256, actual);
}

#[test]
fn malformed_suite_files_name_the_key_and_the_file() {
    let dir = starts_folder();
    let run = freeze(dir.path(), "s.toml", &["--validation-seeds", "7"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let good = std::fs::read_to_string(dir.path().join("s.toml")).unwrap();
    let cases = [
        (
            "unknown-key",
            good.replace("seeds = [1, 2]", "seeds = [1, 2]\nsteps = 3"),
            "steps",
        ),
        (
            "wrong-type",
            good.replace("seeds = [1, 2]", "seeds = 1"),
            "seeds",
        ),
        (
            "no-budget",
            good.replace("[budget]\nevaluations = 500\n", ""),
            "budget",
        ),
        (
            "empty-split",
            good.replace("validation_seeds = [7]\n", ""),
            "validation_seeds",
        ),
        (
            "empty-seeds",
            good.replace("seeds = [1, 2]", "seeds = []"),
            "seeds",
        ),
    ];
    for (name, text, key) in cases {
        assert_ne!(text, good, "{name}: the edit applies");
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let shown = milo(&["suite", "show", path.to_str().unwrap()]);
        assert_eq!(shown.code, 6, "{name}: {}", shown.stderr);
        assert!(shown.stderr.contains(key), "{name}: {}", shown.stderr);
        assert!(
            shown.stderr.contains(&format!("{name}.toml")),
            "{name}: {}",
            shown.stderr
        );
    }
}
