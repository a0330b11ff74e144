//! The report page in a real headless browser (Debian's `chromium`; the tests print `SKIP`
//! without it): the page of a real tiny run loads with no error, a node named in the URL
//! (`#node=ID`, as a click sets it) opens its panel with that node's harness diff, verdict and
//! per-task gains, the round in the URL hides the later nodes; a benchmark's page draws one
//! curve per run. The script writes any error it meets into `#errors`, which must be empty in
//! the dumped DOM, and the browser's log must hold no uncaught error.

mod common;

use common::{evolve_tiny, milo, synthetic_bench_results};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser, or `None` with a skip note.
fn chromium(test: &str) -> Option<&'static Path> {
    let path = Path::new(CHROMIUM);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "SKIP {test}: {CHROMIUM} is absent (apt-get install chromium) — the page was not \
             checked in a browser"
        );
        None
    }
}

/// What the browser made of a page: its DOM after the script ran, and its log.
struct Loaded {
    dom: String,
    log: String,
}

/// Loads `url` in headless Chromium (its own profile in `profile`) and dumps the DOM once the
/// page is idle.
fn load(browser: &Path, url: &str, profile: &Path) -> Loaded {
    let mut child = Command::new(browser)
        .args([
            "--headless=new",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-extensions",
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Read both pipes on threads so a full pipe cannot stall the browser.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).map(|_| text)
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("chromium did not finish loading {url} within 2 minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Loaded {
        dom: out.join().unwrap().unwrap_or_default(),
        log: err.join().unwrap().unwrap_or_default(),
    }
}

/// The inner HTML of the first element that starts with `open` (up to its closing `close`).
fn inner<'a>(dom: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let rest = &dom[dom.find(open)? + open.len()..];
    let rest = &rest[rest.find('>')? + 1..];
    Some(&rest[..rest.find(close)?])
}

/// Text of HTML: tags removed, entities decoded.
fn text_of(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// Checks that the page reported no error: `#errors` empty, no uncaught error in the log.
fn assert_no_errors(loaded: &Loaded, what: &str) {
    assert!(
        loaded.dom.contains("id=\"milo-data\""),
        "{what}: the browser dumped no page: {}",
        loaded.log
    );
    let errors = inner(&loaded.dom, "<pre id=\"errors\"", "</pre>").expect("an #errors box");
    assert!(
        errors.trim().is_empty(),
        "{what}: the script reported {errors}"
    );
    for line in loaded.log.lines() {
        assert!(
            !line.contains("Uncaught") && !line.contains("SyntaxError"),
            "{what}: the browser logged {line}"
        );
    }
}

fn file_url(path: &Path, hash: &str) -> String {
    format!("file://{}{hash}", path.canonicalize().unwrap().display())
}

/// A tiny real run in `dir/run` and its report in `dir/out`; returns the run and the page.
fn reported_run(dir: &Path) -> (PathBuf, PathBuf) {
    let run_dir = dir.join("run");
    let settings = [
        "--islands",
        "2",
        "--rounds",
        "3",
        "--seed",
        "5",
        "--patience",
        "1",
        "--promote-discoveries",
    ];
    evolve_tiny(dir, &run_dir, &settings);
    let out = dir.join("out");
    let report = milo(&[
        "report",
        run_dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    (run_dir, out.join("index.html"))
}

#[test]
fn a_run_page_loads_without_errors_and_a_node_shows_its_diff() {
    const TEST: &str = "a_run_page_loads_without_errors_and_a_node_shows_its_diff";
    let dir = tempfile::tempdir().unwrap();
    let (run_dir, index) = reported_run(dir.path());
    let Some(browser) = chromium(TEST) else {
        return;
    };
    let nodes: Vec<Value> = std::fs::read_to_string(run_dir.join("lineage.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["record"] == "node")
        .collect();
    // The last node with a harness diff (a child; seeds have none).
    let node = nodes
        .iter()
        .rev()
        .find(|n| !n["edit"].as_str().unwrap().is_empty())
        .expect("a child with a diff");
    let id = node["id"].as_str().unwrap();
    let edit = node["edit"].as_str().unwrap();

    let plain = load(browser, &file_url(&index, ""), &dir.path().join("profile"));
    assert_no_errors(&plain, "the page");
    assert!(
        !plain.dom.contains("id=\"diff\""),
        "no panel is open before a node is chosen"
    );
    for n in &nodes {
        let drawn = format!("data-id=\"{}\"", n["id"].as_str().unwrap());
        assert!(plain.dom.contains(&drawn), "node {} is not drawn", n["id"]);
    }

    let clicked = load(
        browser,
        &file_url(&index, &format!("#node={id}")),
        &dir.path().join("profile"),
    );
    assert_no_errors(&clicked, "the page with a node open");
    let diff = inner(&clicked.dom, "<pre class=\"diff\" id=\"diff\"", "</pre>")
        .expect("the node's panel shows a diff");
    assert_eq!(text_of(diff).trim_end(), edit.trim_end());
    let verdict = inner(&clicked.dom, "<p id=\"verdict\"", "</p>").expect("a verdict");
    assert_eq!(
        text_of(verdict),
        node["verdict"]["reason"].as_str().unwrap()
    );
    let gains = inner(
        &clicked.dom,
        "<table class=\"sortable\" id=\"task-gains\"",
        "</table>",
    )
    .expect("a per-task table");
    for task in node["evaluation"]["tasks"].as_array().unwrap() {
        let name = task["task"].as_str().unwrap();
        assert!(gains.contains(&format!(">{name}<")), "task {name} missing");
    }
    assert!(
        clicked
            .dom
            .contains(&format!("class=\"node selected\" data-id=\"{id}\"")),
        "the node is marked as chosen"
    );

    // The scrubber at round 0 (from the URL) hides every node after it.
    let scrubbed = load(
        browser,
        &file_url(&index, "#round=0"),
        &dir.path().join("profile"),
    );
    assert_no_errors(&scrubbed, "the page at round 0");
    let later = nodes.iter().filter(|n| n["round"] != 0).count();
    assert!(later > 0);
    assert_eq!(
        scrubbed.dom.matches("class=\"node hidden\"").count(),
        later,
        "the nodes after round 0 are hidden"
    );
}

#[test]
fn a_bench_page_loads_without_errors_and_draws_every_run() {
    const TEST: &str = "a_bench_page_loads_without_errors_and_draws_every_run";
    let dir = tempfile::tempdir().unwrap();
    let results = synthetic_bench_results();
    std::fs::write(
        dir.path().join("results.json"),
        serde_json::to_string(&results).unwrap(),
    )
    .unwrap();
    let report = milo(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let Some(browser) = chromium(TEST) else {
        return;
    };
    let index = dir.path().join("report").join("index.html");
    let loaded = load(browser, &file_url(&index, ""), &dir.path().join("profile"));
    assert_no_errors(&loaded, "the bench page");
    let curves = inner(
        &loaded.dom,
        "<div class=\"widget\" id=\"bench-curves\"",
        "</svg>",
    )
    .expect("the curves are drawn");
    assert_eq!(
        curves.matches("<g data-key=").count(),
        results.runs.len(),
        "one curve per run"
    );
    for method in &results.methods {
        assert!(
            loaded
                .dom
                .contains(&format!("data-method=\"{}\"", method.method)),
            "{} has no legend entry",
            method.method
        );
    }
}
