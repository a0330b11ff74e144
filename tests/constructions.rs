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
