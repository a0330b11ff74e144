//! `milo report` end to end: the report of a tiny `milo evolve` run and of a synthetic
//! benchmark has every figure as a valid PNG and SVG, and its tables show the numbers of the
//! records; a directory that is neither is a usage error naming it.

mod common;

use common::{milo, tiny_suite};
use milo::bench::results::{
    Batch, BenchResults, CurvePoint, Interval, LadderRung, MethodSummary, PairVerdict, RunSummary,
};
use serde_json::Value;
use std::path::Path;

/// The stems `X` of every `<img src="X.png">` on the page, after checking that `X.png` is a
/// non-trivial PNG and `X.svg` an SVG, both beside it.
fn checked_figures(out: &Path, html: &str) -> Vec<String> {
    let stems: Vec<String> = html
        .split("<img src=\"")
        .skip(1)
        .map(|rest| {
            let src = &rest[..rest.find('"').unwrap()];
            src.strip_suffix(".png")
                .expect("figures are PNGs")
                .to_string()
        })
        .collect();
    for stem in &stems {
        let png = std::fs::read(out.join(format!("{stem}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png is not a PNG");
        assert!(png.len() > 2000, "{stem}.png has only {} bytes", png.len());
        let svg = std::fs::read_to_string(out.join(format!("{stem}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") || svg.starts_with("<?xml"),
            "{stem}.svg is not an SVG"
        );
        assert!(
            svg.len() > 500 && svg.contains("<text"),
            "{stem}.svg is empty"
        );
        assert!(html.contains(&format!("<a href=\"{stem}.svg\">")));
    }
    stems
}

/// A two-column fact row of the page.
fn fact(name: &str, value: &str) -> String {
    format!("<tr><td>{name}</td><td>{value}</td></tr>")
}

#[test]
fn a_run_report_has_its_figures_and_the_numbers_of_its_lineage() {
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
        "2",
        "--rounds",
        "2",
        "--seed",
        "5",
        "--patience",
        "1",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    let out = dir.path().join("out");
    let report = milo(&[
        "report",
        run_dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(report.stdout.contains("index.html"), "{}", report.stdout);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let figures = checked_figures(&out, &html);
    let mut expected = vec!["lineage-tree", "progress-round", "progress-time"];
    if run_dir.join("best.json").exists() {
        expected.extend(["construction", "autoconvolution"]);
    }
    assert_eq!(figures, expected);

    // The numbers, computed from the records independently of milo.
    let lineage = std::fs::read_to_string(run_dir.join("lineage.jsonl")).unwrap();
    let records: Vec<Value> = lineage
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let nodes: Vec<&Value> = records.iter().filter(|r| r["record"] == "node").collect();
    let admitted = nodes
        .iter()
        .filter(|n| n["verdict"]["admitted"] == true)
        .count();
    let events = records
        .iter()
        .filter(|r| r["record"] == "event" && r["move"]["kind"] != "promote")
        .count();
    assert!(html.contains(&fact("nodes", &nodes.len().to_string())));
    assert!(html.contains(&fact("admitted", &admitted.to_string())));
    assert!(html.contains(&fact("rejected", &(nodes.len() - admitted).to_string())));
    assert!(html.contains(&fact("orchestrator moves", &events.to_string())));
    // The third problem is minimised: the best is the lowest search-task end score.
    let (best, node) = nodes
        .iter()
        .flat_map(|n| {
            ["evaluation", "parent_evaluation"]
                .into_iter()
                .filter_map(|key| n[key]["tasks"].as_array())
                .flatten()
                .filter(|t| t["split"] == "search")
                .map(move |t| (t["end_exact"].as_str().unwrap(), n["id"].as_str().unwrap()))
        })
        .min_by(|a, b| {
            let value = |s: &str| s.parse::<f64>().unwrap();
            value(a.0).total_cmp(&value(b.0))
        })
        .unwrap();
    assert!(html.contains(&fact("best score (exact)", best)), "{best}");
    assert!(html.contains(&fact("best node", node)), "{node}");
}

fn interval(mean: f64, spread: f64, n: usize) -> Interval {
    Interval {
        n,
        mean,
        low: mean - spread,
        high: mean + spread,
    }
}

fn run_summary(method: &str, seed: u64, batch: Batch, best: f64) -> RunSummary {
    let curve: Vec<CurvePoint> = (0..6)
        .map(|i| CurvePoint {
            cpu_seconds: i as f64 * 1.5,
            wall_seconds: i as f64,
            best: best + 0.01 / (1.0 + i as f64),
        })
        .collect();
    RunSummary {
        method: method.into(),
        seed,
        batch,
        dir: format!("{method}-s{seed}"),
        cpu_seconds: 7.5,
        wall_seconds: 5.0,
        steps: curve.len(),
        counted_steps: curve.len(),
        best_exact: format!("{best}"),
        best,
        quality: 3.25,
        validation_best_exact: None,
        validation_best: None,
        validation_quality: Some(1.5),
        curve,
    }
}

fn synthetic_results() -> BenchResults {
    let methods = ["milo", "random-restarts"];
    let summaries: Vec<MethodSummary> = methods
        .iter()
        .enumerate()
        .map(|(k, m)| MethodSummary {
            method: m.to_string(),
            best: interval(1.4551234567891 + k as f64 * 1e-3, 2.5e-4, 2),
            quality: interval(7.123456789 - k as f64, 0.75, 2),
            rerun_best: Some(interval(1.4552 + k as f64 * 1e-3, 1e-4, 2)),
            validation_best: None,
            validation_quality: Some(interval(2.0, 0.5, 4)),
            null_band: 3.1e-4,
            rerun_null_band: Some(2.2e-4),
        })
        .collect();
    let mut runs = Vec::new();
    for (k, m) in methods.iter().enumerate() {
        for seed in 1..=2 {
            let base = 1.455 + k as f64 * 1e-3 + seed as f64 * 1e-4;
            runs.push(run_summary(m, seed, Batch::First, base));
            runs.push(run_summary(m, seed + 10, Batch::Rerun, base + 5e-5));
        }
    }
    BenchResults {
        problem: "third-autocorrelation-inequality".into(),
        direction: "minimize".into(),
        suite: "problems/suites/default.toml".into(),
        cpu_seconds: 7.5,
        arena_first: Some(1.4508066),
        methods: summaries,
        runs,
        verdicts: vec![PairVerdict {
            a: "milo".into(),
            b: "random-restarts".into(),
            advantage: 1e-3,
            null_band: 3.1e-4,
            rerun_advantage: Some(9e-4),
            rerun_null_band: Some(2.2e-4),
            verdict: "a better".into(),
        }],
        ladder: vec![
            LadderRung {
                label: "arena #1".into(),
                method: false,
                value: 1.4508066,
            },
            LadderRung {
                label: "milo".into(),
                method: true,
                value: 1.4551234567891,
            },
            LadderRung {
                label: "random-restarts".into(),
                method: true,
                value: 1.4561234567891,
            },
        ],
    }
}

#[test]
fn a_bench_report_has_its_figure_and_the_tables_of_its_results() {
    let dir = tempfile::tempdir().unwrap();
    let results = synthetic_results();
    std::fs::write(
        dir.path().join("results.json"),
        serde_json::to_string_pretty(&results).unwrap(),
    )
    .unwrap();
    let report = milo(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let out = dir.path().join("report");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(checked_figures(&out, &html), ["curves"]);
    for m in &results.methods {
        // Method, runs, then the best's mean, low, high and the quality's: shortest round-trip.
        let row = format!(
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            m.method,
            m.best.n,
            m.best.mean,
            m.best.low,
            m.best.high,
            m.quality.mean,
            m.quality.low,
            m.quality.high
        );
        assert!(html.contains(&row), "{row}");
        assert_eq!(m.best.mean.to_string().parse::<f64>().unwrap(), m.best.mean);
    }
    for (rank, rung) in results.ladder.iter().enumerate() {
        let row = format!(
            "<tr{}><td>{}</td><td>{}</td>",
            if rung.method { " class=\"method\"" } else { "" },
            rank + 1,
            rung.label
        );
        assert!(html.contains(&row), "{row}");
    }
    assert!(html.contains("<td>a better</td>"));
}

#[test]
fn a_directory_that_is_neither_a_run_nor_a_benchmark_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-run");
    let run = milo(&["report", missing.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no-such-run"), "{}", run.stderr);
    assert!(run.stderr.contains("not a directory"), "{}", run.stderr);

    let run = milo(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(dir.path().to_str().unwrap())
            && run.stderr.contains("neither lineage.jsonl"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("report").exists());
}
