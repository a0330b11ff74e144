//! Unit tests of suite files: parsing, checks, the task product and the split.

use super::*;
use crate::construction::write_values;

const THIRD: &str = "third-autocorrelation-inequality";

/// A tempdir with three small third-problem starts and the suite text around them.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        for (name, values) in [
            ("a.json", vec![1.0, 2.0, 1.0]),
            ("b.json", vec![1.0, 1.0, 1.0, 1.0]),
            ("c.json", vec![0.5, 1.0, 1.0, 0.5]),
        ] {
            write_values(&dir.path().join(name), &values).unwrap();
        }
        Fixture { dir }
    }

    fn sha(&self, name: &str) -> String {
        sha256_hex(&std::fs::read(self.dir.path().join(name)).unwrap())
    }

    fn program(name: &str) -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let path = root.join("problems/optimizers").join(name);
        path.to_str().unwrap().to_string()
    }

    /// A valid suite: starts a, b (search) and c (validation), two programs, seeds 1, 2 and
    /// validation seed 9; `extra` is appended at the top level before the tables.
    fn text(&self, extra: &str) -> String {
        format!(
            r#"name = "t"
problem = "{THIRD}"
programs = ["{}", "{}"]
seeds = [1, 2]
validation_seeds = [9]
{extra}
[budget]
evaluations = 100

[[starts]]
label = "a"
path = "a.json"
sha256 = "{}"

[[starts]]
label = "b"
path = "b.json"
sha256 = "{}"
split = "search"

[[starts]]
label = "c"
path = "c.json"
sha256 = "{}"
split = "validation"
"#,
            Fixture::program("third-autocorrelation-inequality.default.toml"),
            Fixture::program("resolution-cascade.toml"),
            self.sha("a.json"),
            self.sha("b.json"),
            self.sha("c.json"),
        )
    }

    fn parse(&self, text: &str) -> Result<Suite> {
        Suite::parse(text, &self.dir.path().join("suite.toml"))
    }

    fn error(&self, text: &str) -> String {
        match self.parse(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e.to_string(),
        }
    }
}

#[test]
fn tasks_are_the_product_with_stable_ids_and_a_disjoint_split() {
    let fx = Fixture::new();
    let suite = fx.parse(&fx.text("")).unwrap();
    // 3 starts × 2 programs × (2 seeds + 1 validation seed).
    assert_eq!(suite.tasks.len(), 18);
    let search: Vec<&str> = suite.search_tasks().map(|t| t.id.as_str()).collect();
    let validation: Vec<&str> = suite.validation_tasks().map(|t| t.id.as_str()).collect();
    assert_eq!(search.len(), 8);
    assert_eq!(validation.len(), 10);
    assert!(search.iter().all(|id| !validation.contains(id)));
    assert!(search.contains(&"a/third-default/s1"));
    assert!(search.contains(&"b/resolution-cascade/s2"));
    // The held-out start and the held-out seed are never searched.
    assert!(suite
        .search_tasks()
        .all(|t| t.start.label != "c" && t.seed != 9));
    assert!(validation.contains(&"c/third-default/s1"));
    assert!(validation.contains(&"a/resolution-cascade/s9"));
    let task = suite.task("b/third-default/s2").unwrap();
    assert_eq!((task.seed, task.split), (2, Split::Search));
    assert_eq!(task.run_settings(Default::default()).evaluations, Some(100));
    assert_eq!(task.run_settings(Default::default()).seconds, None);
    assert!(suite.task("b/third-default/s3").is_none());
}

#[test]
fn starts_are_verified_exactly_and_the_record_defaults_to_the_best() {
    let fx = Fixture::new();
    let suite = fx.parse(&fx.text("")).unwrap();
    let problem = by_slug(THIRD).unwrap();
    for start in &suite.starts {
        assert_eq!(start.exact, problem.score_exact(&start.values));
    }
    let best = suite.starts.iter().map(|s| s.exact.clone()).min().unwrap();
    assert_eq!(suite.record, best);
    assert_eq!(suite.best_start().exact, best);
    assert!(!suite.record_given);
    let given = fx.parse(&fx.text("record = \"1.4\"")).unwrap();
    assert_eq!(given.record, parse_decimal("1.4").unwrap());
    assert!(given.record_given);
}

#[test]
fn a_changed_start_is_an_error_naming_the_file_and_both_hashes() {
    let fx = Fixture::new();
    let text = fx.text("");
    let pinned = fx.sha("b.json");
    write_values(&fx.dir.path().join("b.json"), &[1.0, 1.0, 1.0, 1.5]).unwrap();
    let actual = fx.sha("b.json");
    let message = fx.error(&text);
    assert!(message.contains("b.json"), "{message}");
    assert!(message.contains(&pinned), "{message}");
    assert!(message.contains(&actual), "{message}");
}

#[test]
fn a_missing_start_is_an_io_error_naming_it() {
    let fx = Fixture::new();
    let text = fx.text("");
    std::fs::remove_file(fx.dir.path().join("c.json")).unwrap();
    let err = fx.parse(&text).err().unwrap();
    assert!(matches!(err, MiloError::Io { .. }), "{err}");
    assert!(err.to_string().contains("c.json"), "{err}");
}

#[test]
fn malformed_suites_name_the_key() {
    let fx = Fixture::new();
    let good = fx.text("");
    let cases: Vec<(String, &str)> = vec![
        (fx.text("colour = \"red\""), "colour"),
        (good.replace("seeds = [1, 2]", "seeds = \"1, 2\""), "seeds"),
        (
            good.replace("[budget]\nevaluations = 100", "[budget]"),
            "budget",
        ),
        (
            good.replace("[budget]\nevaluations = 100", "[budget]\nevaluations = 0"),
            "budget.evaluations",
        ),
        (
            good.replace("evaluations = 100", "evaluations = 100\nminutes = 3"),
            "minutes",
        ),
        (good.replace("[budget]\nevaluations = 100\n", ""), "budget"),
        (good.replace("seeds = [1, 2]", "seeds = []"), "seeds"),
        (
            good.replace("validation_seeds = [9]", "validation_seeds = [2]"),
            "validation_seeds",
        ),
        (
            good.replace("validation_seeds = [9]\n", "")
                .replace("split = \"validation\"", "split = \"search\""),
            "validation_seeds / starts.split",
        ),
        (
            good.replace("split = \"search\"", "split = \"validation\"")
                .replace(
                    "label = \"a\"\npath = \"a.json\"",
                    "label = \"a\"\npath = \"a.json\"\nsplit = \"validation\"",
                ),
            "starts.split",
        ),
        (
            good.replace("split = \"search\"", "split = \"test\""),
            "split",
        ),
        (
            good.replace("label = \"b\"", "label = \"a\""),
            "starts[1].label",
        ),
        (
            good.replace("label = \"b\"", "label = \"b/x\""),
            "starts[1].label",
        ),
        (fx.text("record = \"fast\""), "record"),
        (good.replace(THIRD, "fourth-problem"), "problem"),
    ];
    for (text, key) in cases {
        let message = fx.error(&text);
        assert!(message.contains(key), "expected '{key}' in: {message}");
        assert!(
            message.contains("suite.toml"),
            "the file is named: {message}"
        );
    }
}

#[test]
fn two_programs_with_one_name_are_refused() {
    let fx = Fixture::new();
    let default = Fixture::program("third-autocorrelation-inequality.default.toml");
    let text = fx
        .text("")
        .replace(&Fixture::program("resolution-cascade.toml"), &default);
    assert!(fx.error(&text).contains("programs[1]"));
}

#[test]
fn an_invalid_start_names_the_file() {
    let fx = Fixture::new();
    // The third problem needs (Σf·dx)² ≥ 1e-9: an all-zero start is invalid.
    write_values(&fx.dir.path().join("a.json"), &[0.0, 0.0, 0.0]).unwrap();
    let message = fx.error(&fx.text(""));
    assert!(message.contains("a.json"), "{message}");
    assert!(message.contains("not a valid"), "{message}");
}

#[test]
fn budgets_need_one_positive_limit() {
    let none = TaskBudget {
        seconds: None,
        evaluations: None,
    };
    assert!(none.check().unwrap_err().starts_with("budget"));
    let negative = TaskBudget {
        seconds: Some(-1.0),
        evaluations: None,
    };
    assert!(negative.check().unwrap_err().starts_with("budget.seconds"));
    let both = TaskBudget {
        seconds: Some(2.0),
        evaluations: Some(10),
    };
    assert!(both.check().is_ok());
}
