//! `milo verify` on bad input: clear one-line errors, distinct exit codes, never a panic.

mod common;
use common::milo;
use milo::error::EXIT_NOT_BETTER;
use std::io::Write;

const FIRST: &str = "first-autocorrelation-inequality";
const SECOND: &str = "second-autocorrelation-inequality";
const THIRD: &str = "third-autocorrelation-inequality";
const ERDOS: &str = "erdos-min-overlap";

fn file_with(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// Runs verify and checks exit code, no panic, one error line containing every `needle`.
fn expect_error(problem: &str, text: &str, code: i32, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(&dir, "c.json", text);
    let run = milo(&["verify", problem, &path]);
    assert_eq!(
        run.code, code,
        "{text}: stdout {} stderr {}",
        run.stdout, run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let line = run.stderr.trim();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    for needle in needles {
        assert!(line.contains(needle), "{text}: '{line}' lacks '{needle}'");
    }
}

#[test]
fn non_finite_values_name_index_and_token() {
    expect_error(FIRST, "[1, 2, NaN, 4]", 3, &["index 2", "NaN", FIRST]);
    expect_error(
        FIRST,
        r#"{"values": [0.5, Infinity]}"#,
        3,
        &["index 1", "Infinity"],
    );
    expect_error(THIRD, "[1, -Infinity]", 3, &["index 1", "-Infinity"]);
    expect_error(FIRST, "[1, 1e999]", 3, &["index 1", "1e999"]);
}

#[test]
fn wrong_element_types_name_the_index() {
    expect_error(FIRST, r#"[1, "0.5"]"#, 3, &["index 1", "string"]);
    expect_error(FIRST, "[1, [2, 3]]", 3, &["index 1", "nested array"]);
    expect_error(FIRST, "[1, null]", 3, &["index 1", "null"]);
}

#[test]
fn malformed_files_are_input_errors_with_position() {
    expect_error(FIRST, "[1, 2, 3", 6, &["line 1"]);
    expect_error(FIRST, r#"{"values": [1, 2}"#, 6, &["malformed"]);
    expect_error(FIRST, r#"{"vals": [1]}"#, 6, &["values"]);
    expect_error(FIRST, "", 6, &["malformed"]);
}

#[test]
fn empty_and_all_zero_constructions_are_invalid() {
    expect_error(FIRST, "[]", 3, &["no values"]);
    expect_error(FIRST, "[0, 0, 0]", 3, &["sum"]);
    expect_error(SECOND, "[0, 0]", 3, &["sum"]);
    expect_error(ERDOS, "[0, 0]", 3, &["sum"]);
}

#[test]
fn sign_rules_per_problem() {
    expect_error(
        FIRST,
        "[1, 0.5, -1e-300, 2]",
        3,
        &["≥ 0", "index 2", "-1e-300"],
    );
    expect_error(SECOND, "[1, -2e-6, 1]", 3, &["-1e-6", "index 1"]);
    let dir = tempfile::tempdir().unwrap();
    let ok = file_with(&dir, "ok.json", "[1, -1e-6, 1]");
    assert_eq!(milo(&["verify", SECOND, &ok]).code, 0);
    let signed = file_with(&dir, "signed.json", "[1, -0.5, 2]");
    assert_eq!(milo(&["verify", THIRD, &signed]).code, 0);
}

#[test]
fn erdos_bounds_before_and_after_rescale() {
    expect_error(ERDOS, "[0.5, 1.5, 0.2]", 3, &["[0, 1]", "index 1", "1.5"]);
    expect_error(ERDOS, "[0.5, -0.1]", 3, &["index 1"]);
    // n = 4, sum = 1: the rescale multiplies by 2, so h_0 = 1 becomes 2.
    expect_error(ERDOS, "[1, 0, 0, 0]", 3, &["after the rescale", "index 0"]);
}

#[test]
fn third_problem_rejects_near_zero_integral() {
    expect_error(THIRD, "[1, -1]", 3, &["1e-9"]);
    expect_error(THIRD, "[1e-6, 1e-6]", 3, &["1e-9"]);
}

#[test]
fn oversize_is_rejected_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let text = serde_json::to_string(&vec![1.0; 100_001]).unwrap();
    let path = file_with(&dir, "big.json", &text);
    let run = milo(&["verify", FIRST, &path, "--mode", "fast"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("100000") && run.stderr.contains("100001 values"));
    let run = milo(&["verify", FIRST, &path, "--mode", "fast", "--allow-oversize"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn missing_file_is_an_input_error_and_unknown_problem_a_usage_error() {
    let run = milo(&["verify", FIRST, "/nonexistent/c.json"]);
    assert_eq!(run.code, 6);
    assert!(run.stderr.contains("cannot read"), "{}", run.stderr);
    assert!(run.stderr.contains("/nonexistent/c.json"));
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(&dir, "c.json", "[1]");
    let run = milo(&["verify", "no-such-problem", &path]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no-such-problem") && run.stderr.contains(FIRST));
    assert_eq!(milo(&["verify", FIRST]).code, 2);
}

#[test]
fn invalid_construction_in_json_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(&dir, "c.json", "[1, -2]");
    let run = milo(&["verify", FIRST, &path, "--json"]);
    assert_eq!(run.code, 3);
    let report = run.json();
    assert_eq!(report["valid"], false);
    assert_eq!(report["index"], 1);
    assert!(report["error"].as_str().unwrap().contains("≥ 0"));
}

#[test]
fn reads_gzipped_and_bare_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("c.json.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(br#"{"values": [1, 2, 3], "note": "x"}"#)
        .unwrap();
    enc.finish().unwrap();
    let bare = file_with(&dir, "bare.json", "[1, 2, 3]");
    let a = milo(&["verify", FIRST, gz.to_str().unwrap(), "--json"]).json();
    let b = milo(&["verify", FIRST, &bare, "--json"]).json();
    assert_eq!(a["score_exact"], b["score_exact"]);
    assert_eq!(a["n"], 3);
    let bad = file_with(&dir, "bad.json.gz", "\u{1f}\u{8b}garbage");
    assert_eq!(milo(&["verify", FIRST, &bad]).code, 6);
}

#[test]
fn against_a_value_and_a_file_is_decided_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // f = [1, 1]: conv = [1, 2, 1], score = 2n·2/S² = 2·2·2/4 = 2 exactly.
    let flat = file_with(&dir, "flat.json", "[1, 1]");
    // f = [1]: score = 2·1·1/1 = 2 as well; [1,2,1]: conv max 6, S = 4, score = 2·3·6/16 = 2.25.
    let worse = file_with(&dir, "worse.json", "[1, 2, 1]");
    let beats = |args: &[&str]| milo(args).json()["against"]["beats"].as_bool().unwrap();
    assert!(beats(&[
        "verify",
        FIRST,
        &flat,
        "--json",
        "--against",
        &worse
    ]));
    assert!(!beats(&[
        "verify",
        FIRST,
        &worse,
        "--json",
        "--against",
        &flat
    ]));
    // Exactly 1e-8 better counts; one part less does not.
    assert!(beats(&[
        "verify",
        FIRST,
        &flat,
        "--json",
        "--against",
        "2.00000001"
    ]));
    assert!(!beats(&[
        "verify",
        FIRST,
        &flat,
        "--json",
        "--against",
        "2.000000009999"
    ]));
    // The exit code tells the same: 0 when FILE beats the rival by the threshold, 10 when not.
    assert_eq!(milo(&["verify", FIRST, &flat, "--against", &worse]).code, 0);
    assert_eq!(
        milo(&["verify", FIRST, &flat, "--against", "2.00000001"]).code,
        0
    );
    let run = milo(&["verify", FIRST, &worse, "--against", &flat]);
    assert_eq!(run.code, EXIT_NOT_BETTER, "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("does not beat"), "{}", run.stderr);
    let run = milo(&[
        "verify",
        FIRST,
        &flat,
        "--json",
        "--against",
        "2.000000009999",
    ]);
    assert_eq!(run.code, EXIT_NOT_BETTER, "{}", run.stderr);
    assert_eq!(run.json()["against"]["beats"], false);
    let quiet = milo(&["verify", FIRST, &flat, "--against", "2", "-q"]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (EXIT_NOT_BETTER, ""));
    // Without --against, not beating the arena's #1 is no failure.
    assert_eq!(milo(&["verify", FIRST, &worse]).code, 0);
    let run = milo(&["verify", FIRST, &flat, "--against", "not-a-thing"]);
    assert_eq!(run.code, 6, "a missing rival file is a missing input");
    let report = milo(&["verify", FIRST, &flat, "--json"]).json();
    assert_eq!(
        report["score_exact"],
        "2.000000000000000000000000000000000000000e0"
    );
}

#[test]
fn against_arena_is_the_number_one_of_the_problem_file() {
    let dir = tempfile::tempdir().unwrap();
    let flat = file_with(&dir, "flat.json", "[1, 1]"); // score 2 exactly
    let problems = milo(&["problems", "--json"]).json();
    let first = problems["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["slug"] == FIRST)
        .unwrap()["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["holder"].as_str().unwrap().starts_with("arena #1"))
        .unwrap()
        .clone();
    let run = milo(&["verify", FIRST, &flat, "--json", "--against", "arena"]);
    assert_eq!(run.code, EXIT_NOT_BETTER, "{}", run.stderr);
    let against = &run.json()["against"];
    let value = first["value"].as_f64().unwrap();
    let shown = against["against_score"].as_str().unwrap().parse::<f64>();
    assert_eq!(shown.unwrap(), value, "{against}");
    let improvement = against["improvement"].as_str().unwrap().parse::<f64>();
    assert!(
        (improvement.unwrap() - (value - 2.0)).abs() < 1e-15,
        "{against}"
    );
    let holder = first["holder"].as_str().unwrap();
    assert!(
        against["against"].as_str().unwrap().contains(holder),
        "{against}"
    );
    // The text report names the rival as the problem file does.
    let text = milo(&["verify", FIRST, &flat, "--against", "arena"]);
    assert!(
        text.stderr.contains("does not beat arena #1"),
        "{}",
        text.stderr
    );
}

/// Direction and threshold of a problem, from `milo problems --json`.
fn direction_and_threshold(slug: &str) -> (bool, f64) {
    let problems = milo(&["problems", "--json"]).json();
    let problem = problems["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["slug"] == slug)
        .unwrap_or_else(|| panic!("{slug} in {problems}"))
        .clone();
    (
        problem["direction"] == "minimize",
        problem["min_improvement"].as_f64().unwrap(),
    )
}

#[test]
fn against_exit_codes_on_project_constructions() {
    // The optimized start beats the simple one it came from (constructions/README.md), and a
    // construction never beats itself.
    let dir = common::root().join("constructions").join(FIRST);
    let optimized = dir.join("opt-arcsine-s1.json");
    let simple = dir.join("capped-arcsine-600.json");
    let (optimized, simple) = (optimized.to_str().unwrap(), simple.to_str().unwrap());
    let exact = |path: &str| milo(&["verify", FIRST, path, "--json"]).json()["score_exact"].clone();
    let (minimize, threshold) = direction_and_threshold(FIRST);
    let (a, b) = (exact(optimized), exact(simple));
    let parse = |v: &serde_json::Value| v.as_str().unwrap().parse::<f64>().unwrap();
    let gain = if minimize {
        parse(&b) - parse(&a)
    } else {
        parse(&a) - parse(&b)
    };
    assert!(
        gain > 100.0 * threshold,
        "the fixture must be decisive: {gain}"
    );
    assert_eq!(
        milo(&["verify", FIRST, optimized, "--against", simple]).code,
        0
    );
    assert_eq!(
        milo(&["verify", FIRST, simple, "--against", optimized]).code,
        EXIT_NOT_BETTER
    );
    assert_eq!(
        milo(&["verify", FIRST, simple, "--against", simple]).code,
        EXIT_NOT_BETTER
    );
}

#[test]
fn against_exit_codes_on_arena_constructions() {
    let Some(arena) = common::arena_dir("against_exit_codes_on_arena_constructions") else {
        return;
    };
    let entries = common::arena_entries(&arena);
    let mut decided = 0;
    for a in &entries {
        for b in entries
            .iter()
            .filter(|b| b.problem == a.problem && b.path != a.path)
        {
            let (minimize, threshold) = direction_and_threshold(&a.problem);
            let gain = if minimize {
                b.arena_score_numpy - a.arena_score_numpy
            } else {
                a.arena_score_numpy - b.arena_score_numpy
            };
            // The numpy scores are within 1e-12 of the exact ones: skip pairs that close to the
            // threshold, where only the exact verifier can tell.
            if (gain - threshold).abs() < 1e-10 {
                continue;
            }
            let want = if gain >= threshold {
                0
            } else {
                EXIT_NOT_BETTER
            };
            let (pa, pb) = (a.path.to_str().unwrap(), b.path.to_str().unwrap());
            let run = milo(&["verify", &a.problem, pa, "--against", pb, "--mode", "exact"]);
            assert_eq!(run.code, want, "{pa} against {pb}: {}", run.stderr);
            decided += 1;
        }
    }
    assert!(decided >= 8, "{decided} pairs decided");
}

#[test]
fn problems_lists_every_problem_with_records() {
    let run = milo(&["problems"]);
    assert_eq!(run.code, 0);
    for slug in [ERDOS, FIRST, SECOND, THIRD] {
        assert!(run.stdout.contains(slug));
    }
    let json = milo(&["problems", "--json"]).json();
    assert_eq!(json["problems"].as_array().unwrap().len(), 4);
}

#[test]
fn a_problem_answers_to_the_first_word_of_its_slug_and_a_near_miss_gets_the_nearest_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(&dir, "c.json", r#"{"values": [1, 2, 1]}"#);
    for (alias, slug) in [
        ("erdos", ERDOS),
        ("first", FIRST),
        ("second", SECOND),
        ("third", THIRD),
    ] {
        let verified = |name: &str| {
            let run = milo(&["verify", name, &path, "--json"]);
            let mut json: serde_json::Value = serde_json::from_str(&run.stdout)
                .unwrap_or_else(|e| panic!("{name}: {e}: {} {}", run.stdout, run.stderr));
            json.as_object_mut().unwrap().remove("timings");
            json
        };
        let by_alias = verified(alias);
        assert_eq!(by_alias, verified(slug), "{alias}");
        assert_eq!(by_alias["problem"], slug);
    }
    expect_error(
        "thrid",
        "[1, 2, 1]",
        2,
        &["unknown problem 'thrid'", "did you mean 'third'"],
    );
    expect_error(
        "knapsack",
        "[1, 2, 1]",
        2,
        &["unknown problem 'knapsack'", THIRD],
    );
}

#[test]
fn a_missing_rival_file_exits_as_a_missing_construction_file_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(&dir, "c.json", r#"{"values": [1, 2, 1]}"#);
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    let as_file = milo(&["verify", FIRST, missing]);
    let as_rival = milo(&["verify", FIRST, &path, "--against", missing]);
    assert_eq!(as_rival.code, as_file.code, "{}", as_rival.stderr);
    assert_eq!(
        as_rival.stderr.trim().lines().count(),
        1,
        "{}",
        as_rival.stderr
    );
    assert!(as_rival.stderr.contains("--against"), "{}", as_rival.stderr);
    assert!(as_rival.stderr.contains(missing), "{}", as_rival.stderr);
}

#[test]
fn a_toml_file_that_does_not_parse_is_one_line_naming_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let start = file_with(&dir, "start.json", "[1, 2, 3, 4]");
    let cases = [
        (
            "p.toml",
            "name = \"x\"\n[[steps]]\nkind = \"teleport\"\n",
            "line 2, column 1",
            "teleport",
        ),
        (
            "q.toml",
            "name = \"x\"\n[[steps]]\nkind = \"lbfgs\"\nbetas = [1e2,\n",
            "line 4",
            "expected `]`",
        ),
    ];
    for (name, text, position, what) in cases {
        let program = file_with(&dir, name, text);
        let run = milo(&[
            "optimize",
            THIRD,
            "--start",
            &start,
            "--program",
            &program,
            "--evaluations",
            "10",
        ]);
        assert_eq!(run.code, 6, "{}", run.stderr);
        let line = run.stderr.trim();
        assert_eq!(line.lines().count(), 1, "one line: {line}");
        for needle in [name, position, what] {
            assert!(line.contains(needle), "'{line}' lacks '{needle}'");
        }
    }
}

#[test]
fn campaign_has_no_force_flag_it_sends_only_a_new_first() {
    let run = milo(&["campaign", "first", "--force", "--rounds", "1"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("'--force'"), "{}", run.stderr);
}

#[test]
fn campaign_hours_are_bounded_as_evolve_hours_are() {
    // A finite, positive but huge --hours would overflow the deadline's Duration.
    for hours in ["1e308", "0", "NaN"] {
        let run = milo(&[
            "campaign",
            "first-autocorrelation-inequality",
            "--hours",
            hours,
            "--base-url",
            "http://127.0.0.1:1",
            "--dir",
            "/nonexistent/never-created",
        ]);
        assert_eq!(run.code, 2, "--hours {hours}: {}", run.stderr);
        let line = run.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(
            line.contains("--hours must be a number of hours in (0, "),
            "{line}"
        );
        assert!(line.contains("got "), "{line}");
    }
}
