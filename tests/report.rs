//! `milo report` end to end: the report of a tiny `milo evolve` run and of a synthetic
//! benchmark has every figure as a valid PNG and SVG, its tables show the numbers of the
//! records (rounded, the full value as the cell's title) and it embeds the data its script
//! draws from; `--watch` rewrites the page as records arrive and stops on SIGINT; a directory
//! that is neither is a usage error naming it. (The page in a real browser:
//! `tests/report_browser.rs`.)

mod common;

use common::{evolve_tiny, milo, synthetic_bench_results, tiny_suite};
use milo::bench::results::Batch;
use milo::bench::{BenchConfig, PlannedRun};
use milo::search::evaluation::Quality;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let run_dir = tiny_run(dir.path());

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
    let mut expected = vec![];
    if run_dir.join("best.json").exists() {
        expected.extend(["construction", "autoconvolution"]);
    }
    expected.extend(["lineage-tree", "progress-round", "progress-time"]);
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
    // The exact best is the cell's title; its text, 10 significant digits of it.
    let row = html
        .split("<tr><td>best score (exact)</td>")
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("a best score row");
    assert!(
        row.starts_with(&format!(
            "<td class=\"num\" title=\"{best}\" data-sort=\"{best}\">"
        )),
        "{row}"
    );
    assert_close(cell_text(row), best.parse().unwrap(), 10);
    assert!(html.contains(&fact("best node", node)), "{node}");

    // The data the script draws from: every node, with its diff.
    let data = embedded_data(&html);
    assert_eq!(data["kind"], "run");
    let drawn = data["nodes"].as_array().unwrap();
    assert_eq!(drawn.len(), nodes.len());
    for (drawn, node) in drawn.iter().zip(&nodes) {
        assert_eq!(drawn["id"], node["id"]);
        assert_eq!(drawn["edit"], node["edit"]);
        assert_eq!(drawn["admitted"], node["verdict"]["admitted"]);
    }
    assert!(html.contains("<div class=\"widget\" id=\"lineage\">"));
    assert!(
        !html.contains("reloads every"),
        "a plain report does not reload"
    );
}

/// The text of the first cell in `row` (`<td …>TEXT</td>…`).
fn cell_text(row: &str) -> &str {
    let start = row.find('>').unwrap() + 1;
    let end = row.find("</td>").unwrap();
    &row[start..end]
}

/// `text` is `value` to `digits` significant digits.
fn assert_close(text: &str, value: f64, digits: i32) {
    let shown: f64 = text
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {text}"));
    let tolerance = 0.5 * 10f64.powi(value.abs().log10().floor() as i32 - (digits - 1));
    assert!(
        (shown - value).abs() <= tolerance * (1.0 + 1e-9),
        "{text} is not {value} to {digits} digits"
    );
    let significant = text.trim_start_matches(['-', '0', '.']).replace('.', "");
    assert_eq!(significant.len(), digits as usize, "{text}");
}

/// The JSON the page embeds for its script.
fn embedded_data(html: &str) -> Value {
    let start = "<script type=\"application/json\" id=\"milo-data\">";
    let text = html
        .split(start)
        .nth(1)
        .unwrap()
        .split("</script>")
        .next()
        .unwrap();
    serde_json::from_str(text).unwrap()
}

/// Makes a tiny run in `dir/run` (2 islands, 2 rounds) and returns its directory.
fn tiny_run(dir: &Path) -> std::path::PathBuf {
    let run_dir = dir.join("run");
    let settings = [
        "--islands",
        "2",
        "--rounds",
        "2",
        "--seed",
        "5",
        "--patience",
        "1",
    ];
    evolve_tiny(dir, &run_dir, &settings);
    run_dir
}

/// The number in the page's `nodes` fact, once the page exists.
fn nodes_on_page(index: &Path) -> Option<usize> {
    let html = std::fs::read_to_string(index).ok()?;
    let rest = html.split("<tr><td>nodes</td><td>").nth(1)?;
    rest[..rest.find('<')?].parse().ok()
}

/// Polls `condition` every 50 ms for up to a minute.
fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_watched_report_is_rewritten_as_records_arrive_and_stops_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let whole = tiny_run(dir.path());
    let lines: Vec<String> = std::fs::read_to_string(whole.join("lineage.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let node_line = |l: &String| l.contains("\"record\":\"node\"");
    let total = lines.iter().filter(|l| node_line(l)).count();
    // The first half of the records, then the rest while the report is watched.
    let split = lines.len() / 2;
    let early = lines[..split].iter().filter(|l| node_line(l)).count();
    assert!(early < total, "the run is too short to split");
    let watched = dir.path().join("watched");
    std::fs::create_dir(&watched).unwrap();
    let lineage = watched.join("lineage.jsonl");
    std::fs::write(&lineage, lines[..split].join("\n") + "\n").unwrap();
    let out = dir.path().join("out");
    let index = out.join("index.html");
    let mut child = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args(["report", "--watch", watched.to_str().unwrap(), "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the first page", || nodes_on_page(&index) == Some(early));
    let html = std::fs::read_to_string(&index).unwrap();
    assert!(
        html.contains("data-refresh=\"5\""),
        "a watched page reloads itself"
    );
    std::fs::write(&lineage, lines.join("\n") + "\n").unwrap();
    wait_for("the page rewritten", || {
        nodes_on_page(&index) == Some(total)
    });

    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("--watch did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("stopped watching"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("index.html"),
        "the page's path is printed"
    );
}

#[test]
fn a_bench_report_has_its_figure_and_the_tables_of_its_results() {
    let dir = tempfile::tempdir().unwrap();
    let results = synthetic_bench_results();
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
        // Method, runs, then the best's mean, low, high to 10 significant digits and the
        // quality's to 3, each with its full value as the title.
        let row = html
            .split(&format!("<tr><td>{}</td><td>{}</td>", m.method, m.best.n))
            .nth(1)
            .and_then(|rest| rest.split("</tr>").next())
            .unwrap_or_else(|| panic!("no row for {}", m.method));
        let cells: Vec<&str> = row.split("</td>").collect();
        let numbers = [
            (m.best.mean, 10),
            (m.best.low, 10),
            (m.best.high, 10),
            (m.quality.mean, 3),
            (m.quality.low, 3),
            (m.quality.high, 3),
        ];
        for (cell, (value, digits)) in cells.iter().zip(numbers) {
            assert!(
                cell.starts_with(&format!("<td class=\"num\" title=\"{value}\"")),
                "{cell} has not the title {value}"
            );
            assert_close(&cell[cell.find('>').unwrap() + 1..], value, digits);
        }
    }
    let data = embedded_data(&html);
    assert_eq!(data["kind"], "bench");
    assert_eq!(data["runs"].as_array().unwrap().len(), results.runs.len());
    assert!(html.contains("<div class=\"widget\" id=\"bench-curves\">"));
    for (rank, rung) in results.ladder.iter().enumerate() {
        let row = format!(
            "<tr{}><td>{}</td><td>{}</td>",
            if rung.method { " class=\"method\"" } else { "" },
            rank + 1,
            rung.label
        );
        assert!(html.contains(&row), "{row}");
    }
    assert!(html.contains("<td>milo</td><td>random-restarts</td><td>a better</td>"));
}

#[test]
fn a_bench_in_progress_shows_its_finished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let results = synthetic_bench_results();
    let methods: Vec<String> = results.methods.iter().map(|m| m.method.clone()).collect();
    let seeds = |batch: Batch| -> Vec<u64> {
        let mut seeds: Vec<u64> = results
            .runs
            .iter()
            .filter(|r| r.batch == batch)
            .map(|r| r.seed)
            .collect();
        seeds.sort();
        seeds.dedup();
        seeds
    };
    let config = BenchConfig {
        suite,
        suite_pin: None,
        methods,
        seeds: seeds(Batch::First),
        rerun_seeds: seeds(Batch::Rerun),
        cpu_seconds: results.cpu_seconds,
        quality: Quality::Best,
        promote_discoveries: false,
        executor: "local-threads".into(),
        slurm: None,
        search: Default::default(),
    };
    let bench = dir.path().join("bench");
    std::fs::create_dir(&bench).unwrap();
    std::fs::write(
        bench.join("bench.json"),
        serde_json::to_string(&config).unwrap(),
    )
    .unwrap();
    // Only the first batch has finished.
    let finished: Vec<_> = results
        .runs
        .iter()
        .filter(|r| r.batch == Batch::First)
        .collect();
    for run in &finished {
        let planned = PlannedRun {
            method: run.method.clone(),
            seed: run.seed,
            batch: run.batch,
        };
        let run_dir = bench.join(planned.dir());
        std::fs::create_dir_all(&run_dir).unwrap();
        std::fs::write(
            run_dir.join("summary.json"),
            serde_json::to_string(run).unwrap(),
        )
        .unwrap();
    }
    let report = milo(&["report", bench.to_str().unwrap()]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let html = std::fs::read_to_string(bench.join("report").join("index.html")).unwrap();
    let note = format!(
        "In progress: {} of {} runs finished.",
        finished.len(),
        config.plan().len()
    );
    assert!(html.contains(&note), "{note}");
    assert!(
        !html.contains(">Verdicts</h2>"),
        "no verdicts before every run finished"
    );
    let data = embedded_data(&html);
    assert_eq!(data["runs"].as_array().unwrap().len(), finished.len());
}

#[test]
fn a_broken_lineage_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    // A real run's lineage with its last node moved to an island the run never had.
    let run_dir = tiny_run(dir.path());
    let real = std::fs::read_to_string(run_dir.join("lineage.jsonl")).unwrap();
    let mut records: Vec<Value> = real
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = records
        .iter_mut()
        .rev()
        .find(|r| r["record"] == "node")
        .unwrap();
    last["island"] = Value::from(1_000_000_000u64);
    let far_island: String = records.iter().map(|r| format!("{r}\n")).collect();
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    let lineage = broken.join("lineage.jsonl");
    for (text, expected) in [
        (
            "{\"record\":\"round_end\",\"round\":1}\n".to_string(),
            "`started`",
        ),
        (
            "not json\n{\"record\":\"round_end\",\"round\":1}\n".to_string(),
            "line 1",
        ),
        (far_island, "island 1000000000"),
    ] {
        std::fs::write(&lineage, text).unwrap();
        let report = milo(&["report", broken.to_str().unwrap()]);
        assert_ne!(report.code, 0);
        assert_eq!(report.stderr.trim().lines().count(), 1, "{}", report.stderr);
        assert!(report.stderr.contains("lineage.jsonl"), "{}", report.stderr);
        assert!(report.stderr.contains(expected), "{}", report.stderr);
    }
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

/// A folder of `milo optimize` traces is a page of record campaigns: per problem, each run's
/// best-so-far figure over wall hours, its ladder of n (every length its best reached, with the
/// best at it) and a row with its start, program, seed, segments and verified best.
#[test]
fn a_folder_of_optimize_traces_is_a_records_page_with_curves_and_the_ladder_of_n() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("records/third");
    std::fs::create_dir_all(&runs).unwrap();
    let start = common::root()
        .join("constructions/third-autocorrelation-inequality/capped-arcsine-400.json");
    // A trace named `.gz` is written gzipped, resumed and found by the report as any other.
    let (out, trace) = (runs.join("a.json.gz"), runs.join("a.trace.json.gz"));
    let run = milo(&[
        "optimize",
        "third-autocorrelation-inequality",
        "--start",
        start.to_str().unwrap(),
        "--evaluations",
        "6000",
        "--seed",
        "2",
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let resumed = milo(&[
        "optimize",
        "--resume",
        trace.to_str().unwrap(),
        "--evaluations",
        "9000",
        "-q",
    ]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let file: Value = serde_json::from_reader(flate2::read::GzDecoder::new(
        std::fs::File::open(&trace).unwrap(),
    ))
    .unwrap();
    let lengths: std::collections::BTreeSet<u64> = file["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["n"].as_u64().unwrap())
        .collect();
    assert!(lengths.len() >= 2, "the run climbed: {lengths:?}");
    let best_exact = file["segments"][1]["best_exact"]
        .as_str()
        .unwrap()
        .to_string();

    let report_dir = dir.path().join("page");
    let run = milo(&[
        "report",
        dir.path().join("records").to_str().unwrap(),
        "--out",
        report_dir.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let html = std::fs::read_to_string(report_dir.join("index.html")).unwrap();
    assert!(html.contains("Record campaigns"));
    assert!(html.contains("third-autocorrelation-inequality"));
    assert!(html.contains("third/a.trace.json.gz"));
    assert!(html.contains("2 segment(s)"));
    assert!(html.contains(&best_exact), "the verified best, in full");
    let stems = checked_figures(&report_dir, &html);
    assert_eq!(
        stems,
        vec!["third-autocorrelation-inequality-0".to_string()]
    );
    for n in lengths {
        assert!(
            html.contains(&format!("<td>{n}</td>")),
            "n = {n} on the ladder"
        );
    }
}
