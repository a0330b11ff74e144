//! `milo evolve` end to end on a tiny generated suite: a run killed with SIGKILL and resumed
//! has the same lineage as an uninterrupted run with the same seed, with no lost or duplicated
//! nodes, discoveries promoted to starts included; `milo lineage --json` reads it back; without
//! `--suite` a run writes the embedded default suite into its directory and runs on that.

mod common;

use common::{comparable_records, evolve_tiny, milo, node_lines, tiny_suite};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_killed_run_resumes_to_the_same_lineage_as_an_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let suite = suite.to_str().unwrap();
    let settings = [
        "--islands",
        "2",
        "--rounds",
        "4",
        "--seed",
        "5",
        "--patience",
        "1",
        "--tasks-per-round",
        "4",
        "--promote-discoveries",
    ];
    let whole = dir.path().join("whole");
    let mut args = vec![
        "evolve",
        "--suite",
        suite,
        "--run-dir",
        whole.to_str().unwrap(),
    ];
    args.extend(settings);
    let run = milo(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("lineage"), "{}", run.stdout);

    let killed = dir.path().join("killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args([
            "evolve",
            "--suite",
            suite,
            "--run-dir",
            killed.to_str().unwrap(),
        ])
        .args(settings)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait (polling the file, with a generous deadline) until a few nodes are recorded.
    let deadline = Instant::now() + Duration::from_secs(600);
    while node_lines(&killed) < 4 && child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the run recorded no nodes");
        std::thread::sleep(Duration::from_millis(20));
    }
    let finished_early = child.try_wait().unwrap().is_some();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        !finished_early,
        "the run finished before it could be killed"
    );
    let before = node_lines(&killed);

    let resumed = milo(&["evolve", "--resume", killed.to_str().unwrap()]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert!(node_lines(&killed) > before);

    assert_eq!(comparable_records(&killed), comparable_records(&whole));

    let lineage = milo(&["lineage", killed.to_str().unwrap(), "--json"]);
    assert_eq!(lineage.code, 0, "{}", lineage.stderr);
    let json = lineage.json();
    let nodes = json["nodes"].as_array().unwrap();
    let mut ids: Vec<&str> = nodes.iter().map(|n| n["id"].as_str().unwrap()).collect();
    let count = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count, "duplicated node ids");
    let max_round = nodes.iter().map(|n| n["round"].as_u64().unwrap()).max();
    assert!(
        max_round <= Some(4) && max_round >= Some(1),
        "{max_round:?}"
    );
    for node in nodes {
        assert!(node["quality"].as_f64().unwrap() >= 0.0);
        for key in [
            "island", "parents", "mutator", "admitted", "cost", "latency",
        ] {
            assert!(node.get(key).is_some(), "missing {key}");
        }
    }
    assert!(json["events"].is_array());

    // The count of behaviour-neutral children, recomputed from the raw records.
    let gains = |evaluation: &Value| -> Vec<f64> {
        evaluation["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["gain"].as_f64().unwrap())
            .collect()
    };
    let children: Vec<bool> = comparable_records(&whole)
        .iter()
        .filter(|r| r["record"] == "node" && !r["parent_evaluation"].is_null())
        .map(|r| gains(&r["evaluation"]) == gains(&r["parent_evaluation"]))
        .collect();
    assert!(!children.is_empty(), "no child was evaluated");
    let shown = milo(&["lineage", whole.to_str().unwrap()]);
    let expected = format!(
        "children with every task's gain equal to their parent's: {} of {}",
        children.iter().filter(|&&same| same).count(),
        children.len()
    );
    assert!(shown.stdout.contains(&expected), "{}", shown.stdout);

    // best.json is the best construction of the whole lineage, as `milo verify` scores it.
    let best_end = comparable_records(&whole)
        .iter()
        .filter(|r| r["record"] == "node")
        .flat_map(|r| {
            let mut ends = Vec::new();
            for key in ["evaluation", "parent_evaluation", "validation"] {
                for t in r[key]["tasks"].as_array().into_iter().flatten() {
                    ends.push(t["end_exact"].as_str().unwrap().to_string());
                }
            }
            ends
        })
        .min_by(|a, b| a.parse::<f64>().unwrap().total_cmp(&b.parse().unwrap()))
        .unwrap();
    let verified = milo(&[
        "verify",
        "third-autocorrelation-inequality",
        whole.join("best.json").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    assert_eq!(verified.json()["score_exact"], best_end.as_str());
    let provenance: Value =
        serde_json::from_str(&std::fs::read_to_string(whole.join("best.provenance.json")).unwrap())
            .unwrap();
    assert_eq!(provenance["score_exact"], best_end.as_str());
}

/// A round's promotions: start label → exact score of the promoted construction.
fn promotions(records: &[Value], round: u64) -> Vec<(String, String)> {
    records
        .iter()
        .filter(|r| r["record"] == "event" && r["round"] == round)
        .filter(|r| r["move"]["kind"] == "promote")
        .map(|r| {
            let m = &r["move"];
            (
                m["start"].as_str().unwrap().into(),
                m["exact"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn promoted_discoveries_are_the_next_rounds_starts() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let run_dir = dir.path().join("run");
    let run = milo(&[
        "evolve",
        "--suite",
        suite.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
        "--islands",
        "1",
        "--rounds",
        "2",
        "--tasks-per-round",
        "4",
        "--promote-discoveries",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = comparable_records(&run_dir);
    let tasks_of = |round: u64| -> Vec<Value> {
        records
            .iter()
            .filter(|r| r["record"] == "node" && r["round"] == round)
            .flat_map(|r| r["evaluation"]["tasks"].as_array().unwrap().clone())
            .collect()
    };
    // The unoptimized tiny starts always improve: round 0 promotes both search starts, each to
    // the best end score any of its round-0 tasks reached.
    let promoted = promotions(&records, 0);
    assert_eq!(promoted.len(), 2, "{promoted:?}");
    let round0 = tasks_of(0);
    for (start, exact) in &promoted {
        let best = round0
            .iter()
            .filter(|t| {
                t["task"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{start}/"))
            })
            .map(|t| t["end_exact"].as_str().unwrap().parse::<f64>().unwrap())
            .fold(f64::INFINITY, f64::min);
        assert_eq!(exact.parse::<f64>().unwrap(), best, "{start}");
        assert!(run_dir.join("starts").read_dir().unwrap().count() >= 2);
        // Every round-1 task on that start starts from it, with fresh seeds.
        let round1 = tasks_of(1);
        let on_start: Vec<&Value> = round1
            .iter()
            .filter(|t| {
                t["task"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{start}/"))
            })
            .collect();
        assert!(!on_start.is_empty());
        for t in on_start {
            assert_eq!(&t["start_exact"], exact.as_str(), "{start}");
        }
    }
}

#[test]
fn resuming_a_missing_run_and_starting_over_an_existing_one_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = milo(&[
        "evolve",
        "--resume",
        dir.path().join("nope").to_str().unwrap(),
    ]);
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains("nope"), "{}", missing.stderr);

    let suite = tiny_suite(dir.path());
    let run_dir = dir.path().join("run");
    let args = [
        "evolve",
        "--suite",
        suite.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
        "--rounds",
        "0",
        "--islands",
        "1",
    ];
    assert_eq!(milo(&args).code, 0);
    let again = milo(&args);
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("--resume"), "{}", again.stderr);
}

#[test]
fn parts_chosen_by_name_are_recorded_and_used_and_unknown_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let run_dir = dir.path().join("run");
    let start = |extra: &[&str], rounds: &str| {
        let mut args = vec![
            "evolve",
            "--suite",
            suite.to_str().unwrap(),
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--rounds",
            rounds,
            "--islands",
            "2",
        ];
        args.extend_from_slice(extra);
        milo(&args)
    };
    for (flag, value) in [
        ("--writer", "oracle"),
        ("--mutators", "tuner,mystery"),
        ("--orchestrator", "oracle"),
        ("--executor", "cloud"),
    ] {
        let refused = start(&[flag, value], "1");
        assert_eq!(refused.code, 2, "{flag} {value}: {}", refused.stderr);
        let named = value.rsplit(',').next().unwrap();
        assert!(
            refused.stderr.contains(&format!("'{named}'")) && refused.stderr.contains("known"),
            "{flag}: {}",
            refused.stderr
        );
        assert!(!run_dir.exists(), "{flag}: nothing is written");
    }

    for (policy, flag, value, named) in [
        ("tournament", "--seed", "1", "tournament"),
        ("race", "--race-alpha", "0.7", "--race-alpha"),
        ("race", "--race-children", "0", "--race-children"),
        ("race", "--race-futility", "0.9", "--race-futility"),
    ] {
        let refused = start(&["--admission", policy, flag, value], "1");
        assert_eq!(refused.code, 2, "{flag} {value}: {}", refused.stderr);
        assert!(refused.stderr.contains(named), "{flag}: {}", refused.stderr);
        assert!(!run_dir.exists(), "{flag}: nothing is written");
    }

    let run = start(&["--writer", "verbatim", "--mutators", "structural"], "1");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = comparable_records(&run_dir);
    let started = &records[0];
    assert_eq!(started["record"], "started");
    assert_eq!(started["writer"], "verbatim", "{started}");
    assert_eq!(started["mutators"], serde_json::json!(["structural"]));
    assert_eq!(started["orchestrator"], "builtin");
    assert_eq!(started["executor"], "local-threads");
    let children: Vec<&Value> = records
        .iter()
        .filter(|r| r["record"] == "node" && r["round"] != 0)
        .collect();
    assert!(!children.is_empty());
    assert!(children.iter().all(|n| n["mutator"] == "structural"));
}

#[test]
fn without_suite_the_embedded_default_suite_is_written_into_the_run_and_resumes_from_there() {
    // Run from an empty directory, so nothing of the source tree is at hand.
    let cwd = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_milo"))
            .current_dir(cwd.path())
            .args(args)
            .output()
            .unwrap()
    };
    let settings = [
        "--run-dir",
        "r",
        "--islands",
        "1",
        "--rounds",
        "1",
        "--tasks-per-round",
        "1",
    ];
    let started = run(&[&["evolve"], &settings[..]].concat());
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let suite = cwd
        .path()
        .join("r/default-suite/problems/suites/default.toml");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("problems/suites/default.toml");
    assert_eq!(
        std::fs::read(&suite).unwrap(),
        std::fs::read(source).unwrap()
    );
    let lineage = std::fs::read_to_string(cwd.path().join("r/lineage.jsonl")).unwrap();
    let first: Value = serde_json::from_str(lineage.lines().next().unwrap()).unwrap();
    assert_eq!(Path::new(first["suite"].as_str().unwrap()), suite);
    // Starting again in the same directory is refused before anything is written.
    let again = run(&[&["evolve"], &settings[..]].concat());
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a run"));
    let resumed = run(&["evolve", "--resume", "r"]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
}

#[test]
fn node_lines_go_to_the_run_log_and_the_terminal_only_with_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, verbose: bool| {
        let run_dir = dir.path().join(name);
        let mut settings = vec!["--islands", "2", "--rounds", "2"];
        if verbose {
            settings.push("-v");
        }
        let out = evolve_tiny(dir.path(), &run_dir, &settings);
        let nodes = node_lines(&run_dir);
        let log = std::fs::read_to_string(run_dir.join("milo.log")).unwrap();
        let logged = log.lines().filter(|l| l.starts_with("round")).count();
        assert_eq!(logged, nodes, "one log line per node");
        let shown = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("round"))
            .count();
        (out, nodes, shown)
    };
    let (quiet, nodes, shown) = run("plain", false);
    assert_eq!(shown, 0, "{}", quiet.stderr);
    // Besides the two opening lines, standard error holds only status lines, plain (it is not a
    // terminal here): no escape codes.
    let other: Vec<&str> = quiet
        .stderr
        .lines()
        .skip(2)
        .filter(|l| !l.starts_with("milo evolve ["))
        .collect();
    assert!(other.is_empty(), "{other:?}");
    assert!(quiet
        .stderr
        .lines()
        .take(2)
        .all(|l| l.starts_with("milo evolve: ")));
    assert!(!quiet.stderr.contains('\x1b'), "{:?}", quiet.stderr);
    assert!(quiet.stdout.contains("best.json"), "{}", quiet.stdout);
    let (_, verbose_nodes, shown) = run("verbose", true);
    assert_eq!((verbose_nodes, shown), (nodes, nodes));
}

#[test]
fn a_finished_run_resumed_with_more_rounds_equals_a_run_with_that_many_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [
        "--islands",
        "2",
        "--patience",
        "1",
        "--tasks-per-round",
        "4",
    ];
    let run = |name: &str, rounds: &str| {
        let run_dir = dir.path().join(name);
        let mut args = settings.to_vec();
        args.extend(["--rounds", rounds]);
        evolve_tiny(dir.path(), &run_dir, &args);
        run_dir
    };
    let whole = run("whole", "3");
    let extended = run("extended", "2");
    let resume = |rounds: &str| {
        milo(&[
            "evolve",
            "--resume",
            extended.to_str().unwrap(),
            "--rounds",
            rounds,
        ])
    };
    let not_more = resume("2");
    assert_eq!(not_more.code, 2, "{}", not_more.stderr);
    assert!(not_more.stderr.contains("got 2"), "{}", not_more.stderr);
    let more = resume("3");
    assert_eq!(more.code, 0, "{}", more.stderr);
    assert!(more.stdout.contains("after 3 rounds"), "{}", more.stdout);
    let mut records = comparable_records(&extended);
    let at = records
        .iter()
        .position(|r| r["record"] == "extended")
        .expect("the extension is recorded");
    assert_eq!(records.remove(at)["rounds"], 3);
    // The settings differ in their rounds only; every record after them is the same.
    let expected = comparable_records(&whole);
    assert_eq!(
        (&records[0]["rounds"], &expected[0]["rounds"]),
        (&2.into(), &3.into())
    );
    records[0]["rounds"] = 3.into();
    assert_eq!(records.len(), expected.len());
    for (i, (got, want)) in records.iter().zip(&expected).enumerate() {
        assert!(got == want, "record {i} differs:\n{got}\n{want}");
    }
}

#[test]
fn the_summary_counts_seeds_apart_from_children_and_ends_with_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let out = evolve_tiny(dir.path(), &run_dir, &["--islands", "2", "--rounds", "2"]);
    let lineage = std::fs::read_to_string(run_dir.join("lineage.jsonl")).unwrap();
    let nodes: Vec<serde_json::Value> = lineage
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["record"] == "node")
        .collect();
    let children: Vec<&serde_json::Value> = nodes
        .iter()
        .filter(|n| !n["parents"].as_array().unwrap().is_empty())
        .collect();
    let admitted = children
        .iter()
        .filter(|n| n["verdict"]["admitted"] == true)
        .count();
    let seeds = nodes.len() - children.len();
    assert!(seeds > 0 && !children.is_empty(), "{lineage}");
    let counts = format!(
        "{seeds} seed harnesses, {} children ({admitted} admitted, {} rejected)",
        children.len(),
        children.len() - admitted
    );
    assert!(out.stdout.contains(&counts), "{counts}\n{}", out.stdout);
    let verdict = out
        .stdout
        .lines()
        .find(|l| l.starts_with("verdict: best "))
        .unwrap_or_else(|| panic!("no verdict line: {}", out.stdout));
    assert!(verdict.contains("the suite's best start"), "{verdict}");
    assert!(verdict.contains("the arena #1"), "{verdict}");
    assert!(
        verdict.contains(&format!(
            "{admitted} of {} children admitted",
            children.len()
        )),
        "{verdict}"
    );
    assert!(out.stdout.contains("milo report "), "{}", out.stdout);
}

#[test]
fn seed_harnesses_from_files_seed_every_island_and_are_recorded_whole() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let mut harness = std::fs::read_to_string("problems/harnesses/explorer.toml").unwrap();
    harness = harness.replace("name = \"explorer\"", "name = \"my-own\"");
    assert!(harness.contains("my-own"));
    let file = dir.path().join("mine.toml");
    std::fs::write(&file, &harness).unwrap();
    let run_dir = dir.path().join("run");
    let args = |seed_file: &str| {
        vec![
            "evolve".to_string(),
            "--suite".into(),
            suite.display().to_string(),
            "--run-dir".into(),
            run_dir.display().to_string(),
            "--rounds".into(),
            "1".into(),
            "--islands".into(),
            "2".into(),
            "--seed-harness".into(),
            seed_file.into(),
        ]
    };
    let missing = dir.path().join("absent.toml").display().to_string();
    let run = milo_owned(&args(&missing));
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("absent.toml"), "{}", run.stderr);
    assert!(!run_dir.join("lineage.jsonl").exists());

    let run = milo_owned(&args(&file.display().to_string()));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = comparable_records(&run_dir);
    assert_eq!(records[0]["seed_harnesses"][0]["name"], "my-own");
    let seeds: Vec<&Value> = records
        .iter()
        .filter(|r| r["record"] == "node" && r["round"] == 0)
        .collect();
    assert_eq!(seeds.len(), 2);
    assert!(seeds.iter().all(|n| n["name"] == "my-own"), "{seeds:?}");
    // The run holds the harness whole: its resume needs the file no more.
    std::fs::remove_file(&file).unwrap();
    let resumed = milo(&["evolve", "--resume", run_dir.to_str().unwrap()]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
}

fn milo_owned(args: &[String]) -> common::Run {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    milo(&refs)
}

/// Replaces every `best_program` text in the records of `lineage` with `program`.
fn replace_best_programs(lineage: &Path, program: &str) -> usize {
    fn walk(value: &mut Value, program: &str, count: &mut usize) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if key == "best_program" && v.is_string() {
                        *v = program.into();
                        *count += 1;
                    } else {
                        walk(v, program, count);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, program, count)),
            _ => {}
        }
    }
    let mut count = 0;
    let text: String = std::fs::read_to_string(lineage)
        .unwrap()
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            walk(&mut record, program, &mut count);
            format!("{record}\n")
        })
        .collect();
    std::fs::write(lineage, text).unwrap();
    count
}

/// A run directory someone sent is data, not code: a lineage whose programs hold a `command`
/// step resumes only with --allow-commands, and its commands then run confined.
#[test]
fn a_resumed_run_runs_its_stored_command_steps_only_when_allowed_and_then_confined() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    evolve_tiny(
        dir.path(),
        &run_dir,
        &["--islands", "1", "--rounds", "1", "-q"],
    );
    let outside = dir.path().join("written-by-the-lineage");
    let program = format!(
        "name = \"shell\"\n[[steps]]\nkind = \"command\"\n\
         argv = [\"sh\", \"-c\", \"echo x > '{}'; cp {{input}} {{output}}\"]\n",
        outside.display()
    );
    assert!(replace_best_programs(&run_dir.join("lineage.jsonl"), &program) > 0);
    let resume = |extra: &[&str]| {
        let mut args = vec!["evolve", "--resume", run_dir.to_str().unwrap()];
        args.extend_from_slice(&["--rounds", "5", "-q"]);
        args.extend_from_slice(extra);
        milo(&args)
    };
    let refused = resume(&[]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("steps[0]") && refused.stderr.contains("--allow-commands"),
        "{}",
        refused.stderr
    );
    assert!(!outside.exists(), "the lineage's shell ran");
    let allowed = resume(&["--allow-commands"]);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    assert!(
        !outside.exists(),
        "a stored command wrote outside its directory"
    );
    // The stored program ran as a parent, confined (the children's records say so).
    let lineage = std::fs::read_to_string(run_dir.join("lineage.jsonl")).unwrap();
    assert!(
        lineage.contains("confine = true"),
        "no confined command ran"
    );
}
