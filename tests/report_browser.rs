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
    load_sized(browser, url, profile, (1400, 1000))
}

/// [`load`] in a window of `(width, height)` pixels.
fn load_sized(browser: &Path, url: &str, profile: &Path, (width, height): (u32, u32)) -> Loaded {
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
        .arg(format!("--window-size={width},{height}"))
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

/// The test's probe, run in the page after its own script: clicks each node of `NODES` (a JSON
/// array) in the lineage drawing and reads its panel's program diff and the numbers of its
/// "Programs it ran"; clicks a rounded number twice; measures every visible table against the
/// panel (or page) it is in. Writes what it found as JSON into `#probe`.
const PROBE: &str = r#"<script>
window.addEventListener('load', function () {
  var result = { nodes: {}, tables: [], errors: [] };
  var all = function (selector) { return Array.prototype.slice.call(document.querySelectorAll(selector)); };
  try {
    NODES.forEach(function (id) {
      var g = document.querySelector('g.node[data-id="' + id + '"]');
      if (!g) { result.errors.push('no node ' + id); return; }
      g.dispatchEvent(new MouseEvent('click', { bubbles: true }));
      var diff = document.getElementById('program-diff');
      var task = document.getElementById('program-diff-task');
      result.nodes[id] = {
        tag: diff ? diff.tagName : null,
        task: task ? task.getAttribute('data-task') : null,
        lines: diff ? Array.prototype.map.call(diff.children, function (s) { return [s.className, s.textContent]; }) : [],
        edits: all('#programs li').map(function (li) { return li.textContent; }),
        nums: all('#programs li .num[title]').map(function (n) { return [n.textContent, n.title]; })
      };
    });
    var n = document.querySelector('#panel .num[title]');
    if (n) {
      result.reveal = [n.textContent, n.title];
      n.click();
      result.reveal.push(n.textContent);
      n.click();
      result.reveal.push(n.textContent);
    }
    result.width = document.documentElement.clientWidth;
    all('table').forEach(function (table) {
      if (!table.offsetParent) return;
      var wrap = table.closest('.table-wrap');
      var panel = table.closest('.panel');
      var box = panel || document.documentElement;
      result.tables.push({
        name: table.id || table.className,
        in_panel: !!panel,
        scrolls: wrap ? getComputedStyle(wrap).overflowX : null,
        fits: wrap ? wrap.scrollWidth <= wrap.clientWidth + 1 : false,
        right: (wrap || table).getBoundingClientRect().right,
        box_right: box.getBoundingClientRect().left + box.clientLeft + box.clientWidth,
        box_scroll: box.scrollWidth,
        box_client: box.clientWidth
      });
    });
  } catch (e) {
    result.errors.push(String(e && e.stack ? e.stack : e));
  }
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
});
</script>"#;

/// The node records of a run's lineage.
fn lineage_nodes(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("lineage.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["record"] == "node")
        .collect()
}

/// A node's task results: its evaluation's, then its validation's.
fn node_tasks(node: &Value) -> Vec<&Value> {
    ["evaluation", "validation"]
        .iter()
        .filter_map(|part| node[part]["tasks"].as_array())
        .flatten()
        .collect()
}

/// The best program a node's evaluation (or validation) recorded for `task`.
fn program_of<'a>(node: &'a Value, task: &str) -> Option<&'a str> {
    node_tasks(node)
        .into_iter()
        .find(|t| t["task"] == task)
        .and_then(|t| t["best_program"].as_str())
}

/// The best program of the node's parent's re-run on `task`.
fn parent_program_of<'a>(node: &'a Value, task: &str) -> Option<&'a str> {
    node["parent_evaluation"]["tasks"]
        .as_array()?
        .iter()
        .find(|t| t["task"] == task)
        .and_then(|t| t["best_program"].as_str())
}

/// The decimals (with a point) of `text` and their significant digits (trailing zeros aside).
fn decimals(text: &str) -> Vec<(String, usize)> {
    text.split(|c: char| !(c.is_ascii_digit() || ".eE-+".contains(c)))
        .map(|token| token.trim_matches(|c| c == '.' || c == '-' || c == '+'))
        .filter(|token| token.contains('.') && token.parse::<f64>().is_ok())
        .map(|token| {
            let mantissa = token.split(['e', 'E']).next().unwrap();
            let digits = mantissa.replace('.', "");
            let significant = digits.trim_start_matches('0').trim_end_matches('0');
            (token.to_string(), significant.len())
        })
        .collect()
}

/// Lines of a probed diff of class `class`, without their `+`/`-` mark and newline.
fn diff_lines<'a>(lines: &'a [Value], class: &str) -> Vec<&'a str> {
    lines
        .iter()
        .filter(|l| l[0] == class)
        .map(|l| {
            let text = l[1].as_str().unwrap().trim_end_matches('\n');
            text.get(1..).unwrap_or("")
        })
        .collect()
}

#[test]
fn node_panels_show_program_diffs_and_rounded_numbers_and_no_table_overflows() {
    const TEST: &str = "node_panels_show_program_diffs_and_rounded_numbers_and_no_table_overflows";
    let dir = tempfile::tempdir().unwrap();
    let (run_dir, index) = reported_run(dir.path());
    let Some(browser) = chromium(TEST) else {
        return;
    };
    let nodes = lineage_nodes(&run_dir);
    let id = |n: &Value| n["id"].as_str().unwrap().to_string();
    // A seed with an improving program, and the last child whose program on a task differs
    // from its parent's re-run's.
    let seed = nodes
        .iter()
        .find(|n| {
            n["parents"].as_array().unwrap().is_empty()
                && node_tasks(n).iter().any(|t| t["best_program"].is_string())
        })
        .expect("a seed with an improving program");
    let child = nodes
        .iter()
        .rev()
        .find(|n| {
            node_tasks(n).iter().any(|t| {
                let task = t["task"].as_str().unwrap();
                let parent = parent_program_of(n, task);
                parent.is_some()
                    && t["best_program"]
                        .as_str()
                        .is_some_and(|p| Some(p) != parent)
            })
        })
        .expect("a child whose program differs from its parent's");
    let clicked: Vec<String> = nodes.iter().map(id).collect();
    // Every node is clicked; the child last, so its panel is the one measured.
    let mut order: Vec<String> = clicked
        .iter()
        .filter(|n| **n != id(child))
        .cloned()
        .collect();
    order.push(id(child));
    let html = std::fs::read_to_string(&index).unwrap();
    let probe_script = PROBE.replace("NODES", &serde_json::to_string(&order).unwrap());
    assert!(html.contains("</body>"));
    let probe_page = index.with_file_name("probe.html");
    std::fs::write(
        &probe_page,
        html.replace("</body>", &format!("{probe_script}</body>")),
    )
    .unwrap();
    // Edits with long decimals in the lineage: the page must round them.
    let long_decimals = nodes.iter().any(|n| {
        node_tasks(n).iter().any(|t| {
            t["edits"].as_array().unwrap().iter().any(|e| {
                decimals(e.as_str().unwrap())
                    .iter()
                    .any(|(_, digits)| *digits > 4)
            })
        })
    });

    for (width, height) in [(1400, 1000), (800, 1000)] {
        let what = format!("the probed page at {width} px");
        let loaded = load_sized(
            browser,
            &file_url(&probe_page, ""),
            &dir.path().join("profile"),
            (width, height),
        );
        assert_no_errors(&loaded, &what);
        let probe: Value = serde_json::from_str(&text_of(
            inner(&loaded.dom, "<pre id=\"probe\"", "</pre>").expect("the probe ran"),
        ))
        .unwrap();
        assert_eq!(probe["errors"], serde_json::json!([]), "{what}");
        let seen = probe["width"].as_u64().unwrap() as u32;
        assert!(
            seen <= width && seen + 30 >= width,
            "{what}: the page is {seen} px wide"
        );

        // A seed's program diff is its whole program, added.
        let view = &probe["nodes"][id(seed)];
        assert_eq!(
            view["tag"],
            "PRE",
            "{what}: {} shows no program diff",
            id(seed)
        );
        let task = view["task"].as_str().expect("the diff names its task");
        let lines = view["lines"].as_array().unwrap();
        assert!(diff_lines(lines, "del").is_empty(), "{what}: {lines:?}");
        let program = program_of(seed, task).expect("the seed's program on the task");
        assert_eq!(
            diff_lines(lines, "add"),
            program.lines().collect::<Vec<_>>()
        );

        // A child's against its parent's: added lines are its program's, removed ones its
        // parent's, headers name both.
        let view = &probe["nodes"][id(child)];
        assert_eq!(
            view["tag"],
            "PRE",
            "{what}: {} shows no program diff",
            id(child)
        );
        let task = view["task"].as_str().unwrap();
        let lines = view["lines"].as_array().unwrap();
        let (added, removed) = (diff_lines(lines, "add"), diff_lines(lines, "del"));
        assert!(
            !added.is_empty() || !removed.is_empty(),
            "{what}: an empty diff"
        );
        let program: Vec<&str> = program_of(child, task).unwrap().lines().collect();
        assert!(
            added.iter().all(|l| program.contains(l)),
            "{what}: {added:?}"
        );
        if let Some(parent) = parent_program_of(child, task) {
            let parent: Vec<&str> = parent.lines().collect();
            assert!(
                removed.iter().all(|l| parent.contains(l)),
                "{what}: {removed:?}"
            );
        }
        let header: Vec<&str> = lines
            .iter()
            .filter(|l| l[0] == "hunk")
            .map(|l| l[1].as_str().unwrap())
            .collect();
        let parent_id = child["parents"][0].as_str().unwrap();
        assert!(
            header[0].starts_with(&format!("--- {parent_id} ")),
            "{header:?}"
        );
        assert!(
            header[1].starts_with(&format!("+++ {} ", id(child))),
            "{header:?}"
        );

        // Edits show decimals to 4 significant digits, the full value on the number.
        let mut rounded = 0;
        for n in &nodes {
            let view = &probe["nodes"][id(n)];
            for edit in view["edits"].as_array().unwrap() {
                let edit = edit.as_str().unwrap();
                assert!(
                    !edit.trim_end().ends_with(':'),
                    "{what}: an empty bullet {edit}"
                );
                for (token, digits) in decimals(edit) {
                    assert!(digits <= 4, "{what}: {token} in {edit}");
                }
            }
            let recorded: Vec<&str> = node_tasks(n)
                .iter()
                .flat_map(|t| t["edits"].as_array().unwrap())
                .map(|e| e.as_str().unwrap())
                .collect();
            for pair in view["nums"].as_array().unwrap() {
                let (text, full) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
                let (x, y) = (text.parse::<f64>().unwrap(), full.parse::<f64>().unwrap());
                assert!((x - y).abs() <= 5e-4 * y.abs(), "{what}: {text} for {full}");
                assert!(recorded.iter().any(|e| e.contains(full)), "{what}: {full}");
                rounded += 1;
            }
        }
        assert!(
            !long_decimals || rounded > 0,
            "{what}: no long decimal was rounded"
        );
        let reveal = probe["reveal"]
            .as_array()
            .expect("a rounded number in the panel");
        assert_ne!(reveal[0], reveal[1], "{what}: {reveal:?}");
        assert_eq!(reveal[2], reveal[1], "{what}: a click shows the full value");
        assert_eq!(
            reveal[3], reveal[0],
            "{what}: a second click the rounded one"
        );

        // Every table scrolls inside its box or fits, and no panel or page is wider than
        // its box; the per-task table fits its panel.
        let tables = probe["tables"].as_array().unwrap();
        assert!(tables
            .iter()
            .any(|t| t["name"] == "task-gains" && t["in_panel"] == true));
        for table in tables {
            let f = |k: &str| table[k].as_f64().unwrap();
            assert!(
                table["scrolls"] == "auto" || table["scrolls"] == "scroll",
                "{what}: {table} is in no scrolling box"
            );
            assert!(
                f("right") <= f("box_right") + 1.0,
                "{what}: {table} overflows"
            );
            assert!(
                f("box_scroll") <= f("box_client") + 1.0,
                "{what}: {table}'s box overflows"
            );
            if table["name"] == "task-gains" {
                assert_eq!(
                    table["fits"], true,
                    "{what}: {table} does not fit its panel"
                );
            }
        }
    }
}
