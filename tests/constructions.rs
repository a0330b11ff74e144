//! The project's own constructions are valid and score exactly what `constructions/README.md` says.

mod common;
use common::{milo, root};
use std::io::Read;

/// The heading of `constructions/README.md`'s table of records.
const RECORDS_HEADING: &str = "## Records";

/// The README up to its records (the starts' tables).
fn starts_section(readme: &str) -> &str {
    readme.split(RECORDS_HEADING).next().unwrap()
}

#[test]
fn committed_constructions_match_their_recorded_scores() {
    let readme = std::fs::read_to_string(root().join("constructions/README.md")).unwrap();
    let rows: Vec<Vec<&str>> = starts_section(&readme)
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(".json"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert!(rows.len() >= 4, "one row per problem at least");
    for row in rows {
        let (problem, file, recorded) = (row[1], row[2].trim_matches('`'), row[5]);
        let path = root().join("constructions").join(file);
        let run = milo(&[
            "verify",
            problem,
            path.to_str().unwrap(),
            "--json",
            "--mode",
            "exact",
        ]);
        assert_eq!(run.code, 0, "{file}: {}", run.stderr);
        assert_eq!(run.json()["score_exact"], recorded, "{file}");
    }
}

/// Every construction file is in the table, and every optimized start's recorded command names
/// its file, its problem, a start from the table, a seed and an evaluation budget (so it
/// reproduces), and improves on that start.
#[test]
fn optimized_starts_record_a_reproducible_command() {
    let readme = std::fs::read_to_string(root().join("constructions/README.md")).unwrap();
    let rows: Vec<Vec<String>> = starts_section(&readme)
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(".json"))
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    let file_of = |row: &Vec<String>| row[2].trim_matches('`').to_string();
    let listed: Vec<String> = rows.iter().map(file_of).collect();
    for problem in [
        "erdos-min-overlap",
        "first-autocorrelation-inequality",
        "second-autocorrelation-inequality",
        "third-autocorrelation-inequality",
    ] {
        for entry in std::fs::read_dir(root().join("constructions").join(problem)).unwrap() {
            let entry = entry.unwrap();
            if entry.path().is_dir() {
                continue; // records/: checked against its own table below
            }
            let name = entry.file_name().into_string().unwrap();
            let file = format!("{problem}/{name}");
            assert!(listed.contains(&file), "{file} is not in the table");
        }
    }
    let score_of = |file: &str| {
        let row = rows.iter().find(|r| file_of(r) == file);
        let row = row.unwrap_or_else(|| panic!("{file} is not in the table"));
        row[5].parse::<f64>().unwrap()
    };
    let mut optimized_per_problem = std::collections::HashMap::new();
    for row in rows.iter().filter(|r| r[4].starts_with("`milo optimize ")) {
        let (problem, file) = (row[1].as_str(), file_of(row));
        let words: Vec<&str> = row[4].trim_matches('`').split_whitespace().collect();
        let option = |name: &str| {
            let at = words.iter().position(|w| *w == name);
            let at = at.unwrap_or_else(|| panic!("{file}: the command has no {name}"));
            words[at + 1]
        };
        assert_eq!(words[2], problem, "{file}");
        assert_eq!(option("--out"), format!("constructions/{file}"));
        option("--seed").parse::<u64>().unwrap();
        option("--evaluations").parse::<u64>().unwrap();
        assert!(
            !words.contains(&"--budget"),
            "{file}: wall-clock budgets do not reproduce"
        );
        let start = option("--start").trim_start_matches("constructions/");
        let (before, after) = (score_of(start), score_of(&file));
        let improved = if problem == "second-autocorrelation-inequality" {
            after > before
        } else {
            after < before
        };
        assert!(improved, "{file} does not improve on {start}");
        *optimized_per_problem
            .entry(problem.to_string())
            .or_insert(0) += 1;
    }
    assert_eq!(
        optimized_per_problem.len(),
        4,
        "one optimized start per problem"
    );
    assert!(optimized_per_problem["third-autocorrelation-inequality"] >= 3);
}

/// Reads a gzipped JSON file.
fn gz_json(path: &std::path::Path) -> serde_json::Value {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Every record of `constructions/README.md` (the campaigns' best constructions, gzipped, each
/// beside its gzipped `milo optimize` trace): valid, of the recorded length, scoring exactly the
/// recorded value, which is the verified best of its trace's last segment; the trace's settings
/// name the recorded problem, start, program and seed; it beats the start it came from; and
/// where `../shared` is present (a SKIP note when not), its start there scores what the trace
/// says and the table's last column says truly whether it is ahead of or behind the best public
/// construction of its problem (`../shared/arena` and `../shared/frontier`).
#[test]
fn records_score_what_they_say_and_their_traces_carry_the_provenance() {
    let readme = std::fs::read_to_string(root().join("constructions/README.md")).unwrap();
    let Some(section) = readme.split(RECORDS_HEADING).nth(1) else {
        panic!("constructions/README.md has no {RECORDS_HEADING} section");
    };
    let rows: Vec<Vec<String>> = section
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(".json.gz"))
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    assert!(
        !rows.is_empty(),
        "the {RECORDS_HEADING} table lists no record"
    );
    let arena = common::arena_dir("records_score_what_they_say");
    for row in &rows {
        let (problem, file, n) = (&row[1], row[2].trim_matches('`'), &row[3]);
        let (start, program, seed, recorded) = (&row[4], &row[5], &row[6], &row[8]);
        let path = root().join("constructions").join(file);
        assert!(
            std::fs::metadata(&path).unwrap().len() < 4 << 20,
            "{file}: keep records under 4 MB"
        );
        let verify = milo(&["verify", problem, path.to_str().unwrap(), "--json"]);
        assert_eq!(verify.code, 0, "{file}: {}", verify.stderr);
        let report = verify.json();
        assert_eq!(report["score_exact"], recorded.as_str(), "{file}");
        assert_eq!(report["n"].to_string(), *n, "{file}");

        let trace_path = path.with_file_name(
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .replace(".json.gz", ".trace.json.gz"),
        );
        let trace = gz_json(&trace_path);
        let run = &trace["run"];
        assert_eq!(run["problem"], problem.as_str(), "{file}");
        assert_eq!(run["seed"].to_string(), *seed, "{file}");
        assert_eq!(run["program_name"], program.trim_matches('`'), "{file}");
        milo::program::Program::parse(run["program"].as_str().unwrap(), &trace_path)
            .unwrap_or_else(|e| panic!("{file}: its trace's program does not parse: {e}"));
        let source = run["start"].as_str().unwrap();
        assert!(start.contains(source.rsplit('/').next().unwrap()), "{file}");
        assert_eq!(
            last_verified_best(&trace),
            recorded.as_str(),
            "{file}: the trace's verified best"
        );

        // A kept record beats the start it came from (its trace's exact score of it).
        let minimize = problem != "second-autocorrelation-inequality";
        let exact_of = |text: &str| text.parse::<f64>().unwrap();
        let (ours, start_exact) = (
            exact_of(recorded),
            exact_of(run["start_exact"].as_str().unwrap()),
        );
        let better = |a: f64, b: f64| if minimize { a < b } else { a > b };
        assert!(better(ours, start_exact), "{file} does not beat its start");

        let Some(arena) = &arena else { continue };
        let shared = arena.parent().unwrap();
        if let Some(at) = start.find("../shared/") {
            let path = start[at + "../shared/".len()..].split_whitespace().next();
            let frozen = shared.join(path.unwrap().trim_matches('`'));
            let start_verify = verify_public(problem, &frozen);
            assert_eq!(
                start_verify,
                run["start_exact"],
                "{file}: its start is {}",
                frozen.display()
            );
        }
        // The table says how it stands against the best public construction of its problem.
        let (best_name, best) = best_public(shared, problem, minimize);
        let standing = &row[9];
        let word = if better(ours, best) {
            "ahead of"
        } else {
            "behind"
        };
        assert!(
            standing.starts_with(&format!("{word} `{best_name}`")),
            "{file}: the table says {standing:?}; it is {word} `{best_name}` ({best})"
        );
    }
}

/// The exact score of a run trace's last verified best.
fn last_verified_best(trace: &serde_json::Value) -> &str {
    trace["segments"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find_map(|s| s["best_exact"].as_str())
        .unwrap()
}

/// Every construction kept under a `records/` folder (a record of the table above, or a start
/// derived from a public construction) is within the arena's length limit and scores exactly
/// what its trace's last verified best says.
#[test]
fn every_kept_construction_scores_what_its_trace_says() {
    let mut kept = 0;
    for problem in [
        "erdos-min-overlap",
        "first-autocorrelation-inequality",
        "second-autocorrelation-inequality",
        "third-autocorrelation-inequality",
    ] {
        let dir = root().join("constructions").join(problem).join("records");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if !name.ends_with(".json.gz") || name.ends_with(".trace.json.gz") {
                continue;
            }
            let trace = gz_json(&path.with_file_name(name.replace(".json.gz", ".trace.json.gz")));
            let last_best = last_verified_best(&trace);
            // No --allow-oversize: a construction over the length limit is refused.
            let verify = milo(&["verify", problem, path.to_str().unwrap(), "--json"]);
            assert_eq!(verify.code, 0, "{name}: {}", verify.stderr);
            assert_eq!(verify.json()["score_exact"], last_best, "{name}");
            kept += 1;
        }
    }
    assert!(kept >= 7, "the records and the derived start: {kept}");
}

/// The exact score of a public construction (the frontier's may be over the length limit).
fn verify_public(problem: &str, path: &std::path::Path) -> serde_json::Value {
    let run = milo(&[
        "verify",
        problem,
        path.to_str().unwrap(),
        "--json",
        "--allow-oversize",
    ]);
    assert_eq!(run.code, 0, "{}: {}", path.display(), run.stderr);
    run.json()["score_exact"].clone()
}

/// The best public construction of `problem` in `../shared/arena` and `../shared/frontier`:
/// its file name and exact score.
fn best_public(shared: &std::path::Path, problem: &str, minimize: bool) -> (String, f64) {
    let mut best: Option<(String, f64)> = None;
    for folder in ["arena", "frontier"] {
        let Ok(entries) = std::fs::read_dir(shared.join(folder).join(problem)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let score = verify_public(problem, &path);
            let score = score.as_str().unwrap().parse::<f64>().unwrap();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let wins = |b: f64| if minimize { score < b } else { score > b };
            if best.as_ref().is_none_or(|(_, b)| wins(*b)) {
                best = Some((name, score));
            }
        }
    }
    best.unwrap_or_else(|| panic!("no public construction of {problem}"))
}
