//! The project's own constructions are valid and score exactly what `constructions/README.md` says.

mod common;
use common::{milo, root};

#[test]
fn committed_constructions_match_their_recorded_scores() {
    let table = std::fs::read_to_string(root().join("constructions/README.md")).unwrap();
    let rows: Vec<Vec<&str>> = table
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
    let table = std::fs::read_to_string(root().join("constructions/README.md")).unwrap();
    let rows: Vec<Vec<String>> = table
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
            let name = entry.unwrap().file_name().into_string().unwrap();
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
