//! milo in scripts: shell completions, `-q/--quiet`, plain progress lines when standard error is
//! not a terminal, the JSON types, and the examples and headings of every `--help`.

mod common;
use common::{milo, root, Run};
use std::path::{Path, PathBuf};

const THIRD: &str = "third-autocorrelation-inequality";

#[test]
fn completions_print_a_script_for_each_shell() {
    let bash = milo(&["completions", "bash"]);
    assert_eq!(bash.code, 0, "{}", bash.stderr);
    assert!(bash.stdout.contains("_milo()"), "{}", bash.stdout);
    assert!(bash.stdout.contains("complete -F _milo"), "{}", bash.stdout);
    for word in ["verify", "convert", "completions", "--quiet", "--against"] {
        assert!(bash.stdout.contains(word), "bash script lacks {word}");
    }
    let zsh = milo(&["completions", "zsh"]);
    assert_eq!(zsh.code, 0);
    assert!(zsh.stdout.starts_with("#compdef milo"), "{}", zsh.stdout);
    let fish = milo(&["completions", "fish"]);
    assert_eq!(fish.code, 0);
    assert!(fish.stdout.contains("complete -c milo"), "{}", fish.stdout);
    let unknown = milo(&["completions", "tcsh"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
}

#[test]
fn quiet_silences_progress_but_not_results_or_errors() {
    let dir = tempfile::tempdir().unwrap();
    let start =
        root().join("constructions/third-autocorrelation-inequality/capped-arcsine-400.json");
    let start = start.to_str().unwrap();
    let optimize = |out: &str, quiet: bool| {
        let out = dir.path().join(out);
        let mut args = vec![
            "optimize",
            THIRD,
            "--start",
            start,
            "--evaluations",
            "20",
            "--out",
            out.to_str().unwrap(),
        ];
        if quiet {
            args.push("-q");
        }
        milo(&args)
    };
    let loud = optimize("loud.npy", false);
    assert_eq!(loud.code, 0, "{}", loud.stderr);
    assert!(loud.stderr.contains("milo: optimizing"), "{}", loud.stderr);
    let quiet = optimize("quiet.npy", true);
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert_eq!(quiet.stderr, "");
    assert!(quiet.stdout.contains("best exact"), "{}", quiet.stdout);
    assert!(quiet.stdout.contains("quiet.npy"), "{}", quiet.stdout);

    let out = dir.path().join("c.txt");
    let run = milo(&["--quiet", "convert", start, out.to_str().unwrap()]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    // Errors still print.
    let run = milo(&["-q", "convert", start, out.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("exists"), "{}", run.stderr);
}

#[test]
fn every_help_ends_with_examples() {
    for command in [
        vec!["--help"],
        vec!["verify", "--help"],
        vec!["optimize", "--help"],
        vec!["convert", "--help"],
        vec!["completions", "--help"],
        vec!["arena", "pull", "--help"],
        vec!["suite", "freeze", "--help"],
        vec!["evolve", "--help"],
    ] {
        let run = milo(&command);
        assert_eq!(run.code, 0, "{command:?}: {}", run.stderr);
        let examples = run
            .stdout
            .split_once("Examples")
            .unwrap_or_else(|| panic!("{command:?}: no examples in {}", run.stdout))
            .1;
        assert!(examples.contains("milo "), "{command:?}: {examples}");
    }
}

#[test]
fn the_long_commands_group_their_flags_under_headings() {
    let headings = |command: &str| -> Vec<String> {
        let run = milo(&[command, "--help"]);
        assert_eq!(run.code, 0, "{command}: {}", run.stderr);
        run.stdout
            .lines()
            .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
            .map(|l| l.trim_end_matches(':').to_string())
            .collect()
    };
    let has = |command: &str, wanted: &[&str]| {
        let found = headings(command);
        for heading in wanted {
            assert!(found.iter().any(|h| h == heading), "{command}: {found:?}");
        }
    };
    has("evolve", &["Budgets", "Search", "LLM", "Slurm", "Output"]);
    has("bench", &["Budgets", "Search", "Slurm", "Output"]);
    has("campaign", &["Budgets", "Search", "Output", "Arena"]);
    has("optimize", &["Budgets", "Search", "Output"]);
    // The Slurm flags sit under their heading, not among the search's.
    let help = milo(&["evolve", "--help"]).stdout;
    // A section: the lines after its heading, up to the next heading.
    let section = |name: &str| -> String {
        let heading = format!("{name}:");
        help.lines()
            .skip_while(|l| *l != heading)
            .skip(1)
            .take_while(|l| l.starts_with(' ') || !l.ends_with(':'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let slurm = section("Slurm");
    for flag in ["--executor", "--slurm-partition", "--slurm-pilots"] {
        assert!(slurm.contains(flag), "{flag} not under Slurm:\n{slurm}");
    }
    assert!(!section("Search").contains("--slurm"), "{help}");
}

/// `milo optimize` on the third problem from the project's capped-arcsine start for
/// `evaluations`, writing `best.json` in `dir`: the run, the start and the output.
fn optimize_third(dir: &Path, evaluations: &str, extra: &[&str]) -> (Run, PathBuf, PathBuf) {
    let start =
        root().join("constructions/third-autocorrelation-inequality/capped-arcsine-400.json");
    let out = dir.join("best.json");
    let mut args = vec![
        "optimize",
        THIRD,
        "--start",
        start.to_str().unwrap(),
        "--evaluations",
        evaluations,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    (milo(&args), start, out)
}

#[test]
fn progress_off_a_terminal_is_plain_lines_and_quiet_has_none() {
    let dir = tempfile::tempdir().unwrap();
    // Standard error is a pipe here: whatever status lines the run prints are whole lines
    // without escape codes or carriage returns (however fast the machine is).
    let (run, _, _) = optimize_third(dir.path(), "3000", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains('\x1b'), "{:?}", run.stderr);
    assert!(!run.stderr.contains('\r'), "{:?}", run.stderr);
    assert!(run.stderr.ends_with('\n'), "{:?}", run.stderr);
    for line in run
        .stderr
        .lines()
        .filter(|l| l.starts_with("milo optimize ["))
    {
        assert!(line.contains("% · ") && line.contains("evals/s"), "{line}");
    }
    // The run ends with its verdict.
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("verdict: best "), "{}", run.stdout);
    assert!(last.contains("the start"), "{last}");
}

#[test]
fn json_exact_values_and_thresholds_are_decimal_strings() {
    let dir = tempfile::tempdir().unwrap();
    let (run, start, out) = optimize_third(dir.path(), "200", &["--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.json();
    for key in [
        "start_exact",
        "best_exact",
        "improvement",
        "min_improvement",
    ] {
        assert!(report[key].is_string(), "{key}: {report}");
    }
    assert_eq!(report["min_improvement"], "1e-5");
    if report["improved"] == true {
        // 40 significant digits, as the scores.
        let improvement = report["improvement"].as_str().unwrap();
        let digits = improvement
            .split('e')
            .next()
            .unwrap()
            .replace(['.', '-'], "");
        assert_eq!(digits.len(), 40, "{improvement}");
    }

    let verify = milo(&[
        "verify",
        THIRD,
        out.to_str().unwrap(),
        "--json",
        "--against",
        start.to_str().unwrap(),
    ]);
    let report = verify.json();
    assert!(report["min_improvement"].is_string(), "{report}");
    for key in ["against_score", "improvement", "min_improvement"] {
        assert!(report["against"][key].is_string(), "{key}: {report}");
    }
}
