//! milo in scripts: shell completions, `-q/--quiet`, and the examples in every `--help`.

mod common;
use common::{milo, root};

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
