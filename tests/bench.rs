//! `milo bench` end to end on a tiny generated suite: every method runs every seed of both
//! batches under the CPU budget; each run's best and CPU seconds, recomputed here from the run's
//! own records, equal its summary; the method means, the tables and the CSV files agree with the
//! runs; a run whose summary is lost is rebuilt identically from its records on `--resume`.
//! With `--promote-discoveries`, every baseline's step starts each task from the construction
//! its records say was promoted.

mod common;

use common::{milo, tiny_suite};
use serde_json::Value;
use std::path::Path;

const METHODS: [&str; 7] = [
    "best-of-n",
    "stock",
    "alphaevolve",
    "ladder-a",
    "milo",
    "milo-frozen",
    "milo-degenerate",
];
const BUDGET: f64 = 0.4;

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Per evaluation recorded in a run directory (search or baseline), its search-task results.
/// Per record (a node or a step), the task results of its evaluations in order.
fn recorded_evaluations(run: &Path) -> Vec<Vec<Vec<Value>>> {
    let (file, key) = if run.join("lineage.jsonl").exists() {
        ("lineage.jsonl", "node")
    } else {
        ("steps.jsonl", "step")
    };
    // A node's parent re-run is a step before its own; a reused evaluation spent no CPU.
    let tasks = |evaluation: &Value| -> Vec<Value> {
        let mut tasks = evaluation["tasks"].as_array().unwrap().clone();
        if evaluation["reused"] == true {
            for t in &mut tasks {
                t["cpu_seconds"] = 0.0.into();
            }
        }
        tasks
    };
    std::fs::read_to_string(run.join(file))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["record"] == key)
        .map(|r| {
            let parent = r.get("parent_evaluation").map(tasks);
            parent
                .into_iter()
                .chain([tasks(&r["evaluation"])])
                .collect()
        })
        .collect()
}

/// How many tasks a baseline run's validation ran (0 for a search run or none yet).
fn baseline_validation_tasks(run: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(run.join("steps.jsonl")) else {
        return 0;
    };
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["record"] == "validation")
        .map(|r| r["evaluation"]["tasks"].as_array().unwrap().len())
        .sum()
}

/// Per node of a search run, in order, the CPU seconds its validation took (0 when it has none
/// or it was reused); nothing for a baseline's run.
fn validation_cpu(run: &Path) -> Vec<f64> {
    let Ok(text) = std::fs::read_to_string(run.join("lineage.jsonl")) else {
        return Vec::new();
    };
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["record"] == "node")
        .map(
            |r| match r["validation"].is_object() && r["validation"]["reused"] != true {
                true => r["validation"]["tasks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["cpu_seconds"].as_f64().unwrap())
                    .sum(),
                false => 0.0,
            },
        )
        .collect()
}

#[test]
fn a_benchmark_runs_every_method_and_its_tables_agree_with_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let out = dir.path().join("bench");
    let budget = BUDGET.to_string();
    let run = milo(&[
        "bench",
        "--suite",
        suite.to_str().unwrap(),
        "--methods",
        &METHODS.join(","),
        "--seeds",
        "2",
        "--budget",
        &budget,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = read_json(&out.join("results.json"));
    let runs = results["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        METHODS.len() * 4,
        "2 seeds and 2 fresh re-run seeds each"
    );

    let cpu_of = |tasks: &Vec<Value>| -> f64 {
        tasks
            .iter()
            .map(|t| t["cpu_seconds"].as_f64().unwrap())
            .sum()
    };
    for summary in runs {
        let records = recorded_evaluations(&out.join(summary["dir"].as_str().unwrap()));
        let last_record: f64 = records.last().unwrap().iter().map(cpu_of).sum();
        let evaluations: Vec<Vec<Value>> = records.into_iter().flatten().collect();
        let cpu: Vec<f64> = evaluations
            .iter()
            .map(|tasks| {
                tasks
                    .iter()
                    .map(|t| t["cpu_seconds"].as_f64().unwrap())
                    .sum()
            })
            .collect();
        let total: f64 = cpu.iter().sum();
        let recorded = summary["cpu_seconds"].as_f64().unwrap();
        assert!(
            (total - recorded).abs() <= 1e-9 * total.max(1.0),
            "{summary}"
        );
        // A search's budget also counts its validations (a baseline validates once, after it).
        let validations = validation_cpu(&out.join(summary["dir"].as_str().unwrap()));
        let charged = total + validations.iter().sum::<f64>();
        let last_record = last_record + validations.last().copied().unwrap_or(0.0);
        // The run went on until the process had spent its budget (cut there), less what a
        // baseline keeps back for its validation: at most its costliest task's CPU per
        // validation task.
        let process = summary["process_cpu_seconds"].as_f64().unwrap();
        let most_per_task = evaluations
            .iter()
            .flatten()
            .map(|t| t["cpu_seconds"].as_f64().unwrap());
        let reserve = most_per_task.fold(0.0, f64::max)
            * baseline_validation_tasks(&out.join(summary["dir"].as_str().unwrap())) as f64;
        assert!(
            process + reserve >= BUDGET - 1e-6,
            "stopped before the budget: {process} (reserve at most {reserve})"
        );
        // The whole run's CPU (validation and re-scoring included) is reported beside it.
        assert!(process + 0.05 >= total, "{process} < {total}: {summary}");
        // The budget is checked between steps: the last step (a node's parent re-run and its
        // own evaluation) may overrun it, nothing after it.
        assert!(charged - last_record < BUDGET, "went on past the budget");
        // Minimisation: the best end score over every search task of every evaluation that
        // ended within the budget (the starts' scores when none did).
        let mut spent = 0.0;
        let counted = cpu
            .iter()
            .take_while(|c| {
                spent += *c;
                spent <= BUDGET
            })
            .count();
        assert_eq!(summary["counted_steps"], counted);
        let starts = evaluations[0]
            .iter()
            .map(|t| t["start_exact"].as_str().unwrap().to_string());
        let best = evaluations[..counted]
            .iter()
            .flatten()
            .map(|t| t["end_exact"].as_str().unwrap().to_string())
            .chain(starts)
            .min_by(|a, b| a.parse::<f64>().unwrap().total_cmp(&b.parse().unwrap()))
            .unwrap();
        assert_eq!(summary["best_exact"], best.as_str(), "{}", summary["dir"]);
        assert_eq!(summary["steps"], evaluations.len());
    }

    let markdown = std::fs::read_to_string(out.join("results.md")).unwrap();
    for (i, method) in METHODS.iter().enumerate() {
        let firsts: Vec<f64> = runs
            .iter()
            .filter(|r| r["method"] == *method && r["batch"] == "first")
            .map(|r| r["best"].as_f64().unwrap())
            .collect();
        assert_eq!(firsts.len(), 2);
        let mean = (firsts[0] + firsts[1]) / 2.0;
        let summary = &results["methods"][i];
        assert_eq!(summary["method"], *method);
        let reported = summary["best"]["mean"].as_f64().unwrap();
        assert!(
            (reported - mean).abs() <= 1e-15,
            "{method}: {reported} vs {mean}"
        );
        assert_eq!(
            summary["null_band"].as_f64().unwrap(),
            (firsts[0] - firsts[1]).abs()
        );
        assert!(
            markdown.contains(&format!("| {method} | 4 | {mean:.10} [")),
            "{method} row missing:\n{markdown}"
        );
    }
    let pairs = METHODS.len() * (METHODS.len() - 1) / 2;
    assert_eq!(results["verdicts"].as_array().unwrap().len(), pairs);
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + runs.len());
    let csv = std::fs::read_to_string(out.join("methods.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + METHODS.len());
    // The ladder holds the problem's known values and every method, best (lowest) first.
    let ladder: Vec<f64> = results["ladder"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].as_f64().unwrap())
        .collect();
    assert!(ladder.windows(2).all(|w| w[0] <= w[1]), "{ladder:?}");

    // Lost summaries are rebuilt from the runs' records, identically but for the whole run's
    // CPU, to which the rebuild's own (reading the records back) is added.
    let mut lost = Vec::new();
    for method in ["alphaevolve", "milo"] {
        let path = out.join(format!("runs/{method}/first-seed-1/summary.json"));
        lost.push((path.clone(), read_json(&path)));
        std::fs::remove_file(&path).unwrap();
    }
    let again = milo(&["bench", "--resume", out.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let spent = |v: &mut Value| {
        let object = v.as_object_mut().unwrap();
        object
            .remove("process_cpu_seconds")
            .unwrap()
            .as_f64()
            .unwrap()
    };
    for (path, mut before) in lost {
        let mut after = read_json(&path);
        assert!(
            spent(&mut after) >= spent(&mut before),
            "{}",
            path.display()
        );
        assert_eq!(after, before, "{}", path.display());
    }
}

#[test]
fn bad_benchmark_arguments_are_usage_errors_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let out = dir.path().join("bench");
    let args = |methods: &'static str, budget: &'static str| {
        vec![
            "bench".to_string(),
            "--suite".into(),
            suite.to_str().unwrap().into(),
            "--methods".into(),
            methods.into(),
            "--budget".into(),
            budget.into(),
            "--seeds".into(),
            "1".into(),
            "--no-rerun".into(),
            "--out".into(),
            out.to_str().unwrap().into(),
        ]
    };
    let call = |a: Vec<String>| milo(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let unknown = call(args("best-of-n,nope", "1"));
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("'nope'"), "{}", unknown.stderr);
    let zero = call(args("best-of-n", "0"));
    assert_eq!(zero.code, 2);
    assert!(zero.stderr.contains("got 0"), "{}", zero.stderr);
    assert!(
        !out.join("bench.json").exists(),
        "nothing written on bad input"
    );
    assert_eq!(call(args("best-of-n", "0.05")).code, 0);
    let twice = call(args("best-of-n", "0.05"));
    assert_eq!(twice.code, 2);
    assert!(twice.stderr.contains("--resume"), "{}", twice.stderr);
}

#[test]
fn with_promotion_each_baseline_step_starts_from_the_promoted_constructions() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let out = dir.path().join("bench");
    let run = milo(&[
        "bench",
        "--suite",
        suite.to_str().unwrap(),
        "--methods",
        "best-of-n,alphaevolve,stock",
        "--seeds",
        "1",
        "--no-rerun",
        "--budget",
        &BUDGET.to_string(),
        "--promote-discoveries",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("discoveries promoted"),
        "{}",
        run.stderr
    );
    assert_eq!(
        read_json(&out.join("bench.json"))["promote_discoveries"],
        true
    );
    let mut promotions = 0;
    for method in ["best-of-n", "alphaevolve", "stock"] {
        let steps: Vec<Value> =
            std::fs::read_to_string(out.join(format!("runs/{method}/first-seed-1/steps.jsonl")))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|r| r["record"] == "step")
                .collect();
        for pair in steps.windows(2) {
            let promoted: Vec<(String, String)> = pair[0]["promoted"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .map(|p| {
                            (
                                p["task"].as_str().unwrap().into(),
                                p["file"].as_str().unwrap().into(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            promotions += promoted.len();
            let (before, after) = (
                pair[0]["evaluation"]["tasks"].as_array().unwrap(),
                pair[1]["evaluation"]["tasks"].as_array().unwrap(),
            );
            for (b, a) in before.iter().zip(after) {
                assert_eq!(a["task"], b["task"]);
                let moved = promoted.iter().find(|(task, _)| b["task"] == task.as_str());
                let expected = if moved.is_some() {
                    &b["end_exact"]
                } else {
                    &b["start_exact"]
                };
                assert_eq!(&a["start_exact"], expected, "{method}: {}", a["task"]);
                if let Some((_, file)) = moved {
                    let path = out.join(format!("runs/{method}/first-seed-1/{file}"));
                    assert!(path.exists(), "{}", path.display());
                }
            }
        }
    }
    assert!(
        promotions > 0,
        "nothing was promoted: the test shows nothing"
    );
    let resumed = milo(&[
        "bench",
        "--resume",
        out.to_str().unwrap(),
        "--promote-discoveries",
    ]);
    assert_eq!(resumed.code, 2, "{}", resumed.stderr);
}

/// `milo bench` of `methods` on `suite`, one seed and no re-run, `budget` CPU s a run, into `out`.
fn one_seed_bench(suite: &str, methods: &str, budget: &str, out: &Path) -> common::Run {
    milo(&[
        "bench",
        "--suite",
        suite,
        "--methods",
        methods,
        "--seeds",
        "1",
        "--no-rerun",
        "--budget",
        budget,
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn a_harness_and_a_program_from_another_run_are_frozen_benchmarked_and_labelled() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("source-run");
    common::evolve_tiny(dir.path(), &run_dir, &["--rounds", "1", "--islands", "1"]);
    let harness = common::first_harness(&run_dir);
    // A program of its own: the tiny suite's, renamed, outside any run.
    let program = dir.path().join("mine.toml");
    let text = std::fs::read_to_string(dir.path().join("polish.toml")).unwrap();
    std::fs::write(&program, text.replace("\"polish\"", "\"mine\"")).unwrap();
    let suite = dir.path().join("tiny.toml");
    let out = dir.path().join("bench");
    let methods = format!(
        "harness:{},program:{}",
        harness.display(),
        program.display()
    );
    let run = one_seed_bench(suite.to_str().unwrap(), &methods, "0.2", &out);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let config = read_json(&out.join("bench.json"));
    let names: Vec<&str> = config["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names[0].starts_with("harness:") && names[1].starts_with("program:mine-"));
    let results = read_json(&out.join("results.json"));
    let transfers = results["transfers"].as_array().unwrap();
    assert_eq!(transfers[0]["level"], "same-suite", "{transfers:?}");
    assert_eq!(transfers[1]["level"], Value::Null, "{transfers:?}");
    let markdown = std::fs::read_to_string(out.join("results.md")).unwrap();
    assert!(
        markdown.contains("| new seeds (the source's suite) |"),
        "{markdown}"
    );
    // Every step of the program method ran the frozen program.
    let steps =
        std::fs::read_to_string(out.join(format!("runs/{}/first-seed-1/steps.jsonl", names[1])))
            .unwrap();
    assert!(steps.contains(r#"name = \"mine\""#), "{steps}");
    assert!(!steps.contains(r#"name = \"polish\""#), "{steps}");
    // The benchmark holds frozen copies: it resumes without the files, and refuses an edited copy.
    std::fs::remove_file(&program).unwrap();
    std::fs::remove_file(out.join(format!("runs/{}/first-seed-1/summary.json", names[1]))).unwrap();
    let again = milo(&["bench", "--resume", out.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let frozen = out.join(format!("methods/{}.toml", names[1].replace(':', "-")));
    let edited = std::fs::read_to_string(&frozen)
        .unwrap()
        .replace("mine", "theirs");
    std::fs::write(&frozen, edited).unwrap();
    std::fs::remove_file(out.join(format!("runs/{}/first-seed-1/summary.json", names[1]))).unwrap();
    let refused = milo(&["bench", "--resume", out.to_str().unwrap()]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("was edited"), "{}", refused.stderr);
}

#[test]
fn a_run_cut_at_its_budget_before_any_step_ends_reports_its_best_start() {
    // The default suite's tasks take seconds each: no step ends within a budget of 0.3 CPU s.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let run = one_seed_bench("problems/suites/default.toml", "stock,milo", "0.3", &out);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let exact = |label: &str| {
        let path = format!("constructions/third-autocorrelation-inequality/{label}.json");
        let report = milo(&[
            "verify",
            "third-autocorrelation-inequality",
            &path,
            "--json",
        ])
        .json();
        report["score_exact"].as_str().unwrap().to_string()
    };
    // The suite's search starts; the lower score is the best.
    let starts = [exact("opt-arcsine-s1"), exact("opt-bump-s3")];
    let value = |s: &String| s.parse::<f64>().unwrap();
    let lower = starts
        .iter()
        .min_by(|a, b| value(a).total_cmp(&value(b)))
        .unwrap();
    let results = read_json(&out.join("results.json"));
    for summary in results["runs"].as_array().unwrap() {
        assert_eq!(summary["steps"], 0, "{summary}");
        let process = summary["process_cpu_seconds"].as_f64().unwrap();
        assert!(
            (0.3..1.0).contains(&process),
            "cut at the budget: {summary}"
        );
        assert_eq!(summary["best_exact"].as_str().unwrap(), lower, "{summary}");
    }
}

#[test]
fn a_run_killed_outright_keeps_the_cpu_it_spent_for_its_resume() {
    // The CPU a run spends is saved as it goes (every 10 s of wall time), not only when the run
    // ends: a run killed outright before its end still counts it when it resumes.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_milo"))
        .args([
            "bench",
            "--suite",
            "problems/suites/default.toml",
            "--methods",
            "stock",
            "--seeds",
            "1",
            "--no-rerun",
            "--budget",
            "600",
            "--jobs",
            "1",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ])
        .current_dir(common::root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("milo runs");
    let run = out.join("runs/stock/first-seed-1");
    let (spent, summary) = (run.join("cpu-spent.json"), run.join("summary.json"));
    let started = std::time::Instant::now();
    while !spent.exists() {
        if started.elapsed() > std::time::Duration::from_secs(300) || summary.exists() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no CPU spent was saved before the run ended");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!summary.exists(), "the run ended: nothing was tested");
    let saved = read_json(&spent).as_f64().unwrap();
    assert!(saved > 0.0 && saved < 600.0, "{saved}");
}

#[test]
fn a_run_cut_at_its_budget_only_finishes_when_it_resumes_whatever_cpu_it_recorded() {
    // A run's cut fires at its budget less a baseline's validation reserve, so the CPU it
    // records can be under the budget. Its resume (here: the summary lost, and a recorded
    // spend of 0, which would leave the whole budget) must not step again.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let suite = tiny_suite(dir.path());
    let first = one_seed_bench(suite.to_str().unwrap(), "alphaevolve", "0.4", &out);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let run = out.join("runs/alphaevolve/first-seed-1");
    let steps = |run: &Path| read_json(&run.join("summary.json"))["steps"].clone();
    let before = steps(&run);
    assert!(run.join("budget-reached.json").exists());
    std::fs::remove_file(run.join("summary.json")).unwrap();
    std::fs::write(run.join("cpu-spent.json"), "0.0").unwrap();
    let again = milo(&["bench", "--resume", out.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(steps(&run), before);
}
