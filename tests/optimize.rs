//! The runner and `milo optimize`: seed programs run and return valid constructions, results are
//! reproducible for a seed and an evaluation budget (also across --jobs), improvements are
//! verified exactly, nothing a user wrote is overwritten, and Ctrl-C writes the best so far.

mod common;
use common::{milo, root};
use milo::construction::read_values;
use milo::problems::by_slug;
use milo::program::Program;
use milo::runner::{run_program, RunSettings, Silent, StopReason};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn start_of(slug: &str) -> Vec<f64> {
    let dir = root().join("constructions").join(slug);
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_file())
        .unwrap();
    read_values(&file).unwrap()
}

fn program(name: &str) -> Program {
    Program::load(&root().join("problems/optimizers").join(name)).unwrap()
}

fn settings(evaluations: u64, jobs: usize) -> RunSettings {
    RunSettings {
        seed: 7,
        seconds: None,
        evaluations: Some(evaluations),
        jobs,
        cancel: Default::default(),
        spent: Default::default(),
    }
}

/// Every seed program (and every campaign program) parses and runs on a problem it is meant for, returning a valid
/// construction whose exact score is no worse than the start's.
#[test]
fn seed_programs_run_and_never_return_worse_or_invalid() {
    let cases = [
        ("lbfgs-cascade.toml", "first-autocorrelation-inequality"),
        (
            "resolution-cascade.toml",
            "third-autocorrelation-inequality",
        ),
        ("basin-hopping.toml", "first-autocorrelation-inequality"),
        ("adam-explore.toml", "first-autocorrelation-inequality"),
        ("restarts.toml", "second-autocorrelation-inequality"),
        ("prune-regrow.toml", "first-autocorrelation-inequality"),
        ("sequential-lp.toml", "first-autocorrelation-inequality"),
        ("dinkelbach.toml", "second-autocorrelation-inequality"),
        (
            "first-autocorrelation-inequality.campaign.toml",
            "first-autocorrelation-inequality",
        ),
        (
            "second-autocorrelation-inequality.campaign.toml",
            "second-autocorrelation-inequality",
        ),
        (
            "third-autocorrelation-inequality.campaign.toml",
            "third-autocorrelation-inequality",
        ),
    ];
    for (file, slug) in cases {
        let problem = by_slug(slug).unwrap();
        let start = start_of(slug);
        let outcome = run_program(
            problem.as_ref(),
            &start,
            &program(file),
            &settings(400, 1),
            &mut Silent,
        )
        .unwrap_or_else(|e| panic!("{file}: {e}"));
        problem
            .check(&outcome.best)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            problem.score_exact(&outcome.best),
            outcome.best_exact,
            "{file}"
        );
        let direction = problem.spec().direction;
        assert!(
            !direction.better(&outcome.start_exact, &outcome.best_exact),
            "{file}"
        );
        assert!(
            outcome.evaluations <= 400,
            "{file}: {}",
            outcome.evaluations
        );
        assert!(!outcome.trace.stages.is_empty(), "{file}");
    }
}

#[test]
fn same_seed_and_evaluation_budget_give_the_same_bits_for_any_jobs() {
    let slug = "second-autocorrelation-inequality";
    let problem = by_slug(slug).unwrap();
    let start = start_of(slug);
    let p = program("restarts.toml");
    let bits = |jobs| {
        let o = run_program(
            problem.as_ref(),
            &start,
            &p,
            &settings(600, jobs),
            &mut Silent,
        )
        .unwrap();
        o.best.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    let one = bits(1);
    assert_eq!(one, bits(1));
    assert_eq!(one, bits(2));
}

/// The third problem's default program hops with two restarts at a time (threads under
/// --jobs): an evaluation budget still gives the same bits for any number of jobs, and the trace
/// says the budget stopped it.
#[test]
fn default_program_restarts_give_the_same_bits_for_any_jobs() {
    let slug = "third-autocorrelation-inequality";
    let problem = by_slug(slug).unwrap();
    let start = start_of(slug);
    let p = program(&format!("{slug}.default.toml"));
    let run = |jobs| {
        run_program(
            problem.as_ref(),
            &start,
            &p,
            &settings(15_000, jobs),
            &mut Silent,
        )
        .unwrap()
    };
    let one = run(1);
    let bits =
        |o: &milo::runner::RunOutcome| o.best.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(
        one.trace.stages.iter().any(|s| s.path.contains(".body")),
        "the hops ran"
    );
    assert_eq!(one.trace.stopped, Some(StopReason::Evaluations));
    assert_eq!(bits(&one), bits(&run(2)));
}

#[test]
fn default_programs_parse_and_improve_project_starts() {
    for problem in milo::problems::all() {
        let slug = problem.slug();
        let text = std::fs::read_to_string(
            root().join(format!("problems/optimizers/{slug}.default.toml")),
        )
        .unwrap();
        let p = Program::parse(&text, std::path::Path::new("default")).unwrap();
        let start = start_of(slug);
        let outcome = run_program(
            problem.as_ref(),
            &start,
            &p,
            // The Erdős default solves LPs (about a second each at n = 600): cap the time too.
            &RunSettings {
                seconds: Some(15.0),
                ..settings(1500, 1)
            },
            &mut Silent,
        )
        .unwrap();
        assert!(
            outcome.improved,
            "{slug}: no verified improvement on a simple start"
        );
    }
}

#[test]
fn optimize_cli_reports_json_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("best.json");
    let start =
        root().join("constructions/third-autocorrelation-inequality/capped-arcsine-400.json");
    let args = [
        "optimize",
        "third-autocorrelation-inequality",
        "--start",
        start.to_str().unwrap(),
        "--evaluations",
        "800",
        "--seed",
        "3",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ];
    let run = milo(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.json();
    for key in [
        "start_exact",
        "best_exact",
        "improvement",
        "evaluations",
        "seconds",
    ] {
        assert!(!report[key].is_null(), "{key}");
    }
    assert_eq!(report["improved"], true);
    let verify = milo(&[
        "verify",
        "third-autocorrelation-inequality",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(verify.json()["score_exact"], report["best_exact"]);
    // A second run must not overwrite the file it wrote.
    let again = milo(&args);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("exists"));
}

/// `milo optimize` of basin hopping on the first problem's project start for 600 s (the tests
/// stop it long before), with `args` added.
fn long_basin_hopping(args: &[&str]) -> Command {
    let start =
        root().join("constructions/first-autocorrelation-inequality/capped-arcsine-600.json");
    let program = root().join("problems/optimizers/basin-hopping.toml");
    let mut command = Command::new(env!("CARGO_BIN_EXE_milo"));
    command
        .args(["optimize", "first-autocorrelation-inequality", "--start"])
        .args([start.to_str().unwrap(), "--budget", "600", "--program"])
        .args([program.to_str().unwrap()])
        .args(args);
    command
}

#[test]
fn ctrl_c_writes_the_best_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("best.json");
    let mut child = long_basin_hopping(&["--json", "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first stderr line says the handler is installed.
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("Ctrl-C"), "{line}");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["interrupted"], true);
    let verify = milo(&[
        "verify",
        "first-autocorrelation-inequality",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(verify.code, 0);
    assert_eq!(verify.json()["score_exact"], report["best_exact"]);
}

#[test]
fn bad_program_files_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"square\"\nbetaz = [1]\n",
    )
    .unwrap();
    let start =
        root().join("constructions/first-autocorrelation-inequality/capped-arcsine-600.json");
    let run = milo(&[
        "optimize",
        "first-autocorrelation-inequality",
        "--start",
        start.to_str().unwrap(),
        "--program",
        bad.to_str().unwrap(),
        "--out",
        dir.path().join("o.json").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 6, "a malformed program file: {}", run.stderr);
    assert!(
        run.stderr.contains("betaz") && run.stderr.contains("line"),
        "{}",
        run.stderr
    );
}

/// Reads a `--trace` file as JSON, or `None` while it is still the empty reservation.
fn trace_json(path: &std::path::Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// A run killed with SIGKILL leaves its best so far and a trace; `--resume` continues from that
/// best on the same clock and evaluation count, with a fresh seed, and records a second segment.
#[test]
fn a_killed_run_leaves_its_best_and_trace_and_resume_continues_them() {
    let dir = tempfile::tempdir().unwrap();
    let (out, trace) = (dir.path().join("best.json"), dir.path().join("trace.json"));
    let mut child = long_basin_hopping(&[
        "--seed",
        "5",
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // The first improvement is saved at once; wait for it (bounded), then kill without warning.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let saved = loop {
        if let Some(t) = trace_json(&trace).filter(|t| !t["points"].as_array().unwrap().is_empty())
        {
            break t;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing saved in 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // One process at a time runs it: a resume while it runs is refused, naming the holder.
    let busy = milo(&["optimize", "--resume", trace.to_str().unwrap()]);
    assert_eq!(busy.code, 8, "{}", busy.stderr);
    assert!(
        busy.stderr.contains(&child.id().to_string()),
        "{}",
        busy.stderr
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let saved = trace_json(&trace).unwrap_or(saved);
    assert_eq!(saved["run"]["problem"], "first-autocorrelation-inequality");
    assert_eq!(saved["run"]["seed"], 5);
    assert_eq!(
        saved["run"]["out"], "best.json",
        "relative to the trace's folder"
    );
    let segments = saved["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 1);
    assert!(
        segments[0]["stopped"].is_null(),
        "a killed segment has no end"
    );
    let killed_best = milo(&[
        "verify",
        "first-autocorrelation-inequality",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(killed_best.code, 0, "the saved best is valid");
    let last = saved["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(killed_best.json()["score_f64"], last["score"]);

    // Continue for 3,000 more evaluations, from another folder: the paths are the trace's own.
    let spent = segments[0]["evaluations"].as_u64().unwrap();
    let total = (spent + 3_000).to_string();
    let resumed = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args(["optimize", "--resume", trace.to_str().unwrap()])
        .args(["--evaluations", &total, "--json", "-q"])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(report["segment"], 2);
    assert_eq!(report["start_exact"], killed_best.json()["score_exact"]);
    let verify = milo(&[
        "verify",
        "first-autocorrelation-inequality",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(verify.json()["score_exact"], report["best_exact"]);
    let after = trace_json(&trace).unwrap();
    let segments = after["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 2);
    assert_ne!(segments[1]["seed"], 5, "a resumed segment draws afresh");
    assert_eq!(segments[1]["best_exact"], report["best_exact"]);
    let evaluations: u64 = segments
        .iter()
        .map(|s| s["evaluations"].as_u64().unwrap())
        .sum();
    assert!(
        evaluations <= spent + 3_000,
        "{evaluations} > the new total"
    );
    // One clock: the points of both segments rise in time and evaluations.
    let points = after["points"].as_array().unwrap();
    assert!(points.len() > saved["points"].as_array().unwrap().len());
    for pair in points.windows(2) {
        assert!(pair[1]["seconds"].as_f64() >= pair[0]["seconds"].as_f64());
        assert!(pair[1]["evaluations"].as_u64() >= pair[0]["evaluations"].as_u64());
        assert!(
            pair[1]["score"].as_f64() < pair[0]["score"].as_f64(),
            "minimise"
        );
    }

    // Its budget spent, the run is not continued without a larger total.
    let again = milo(&["optimize", "--resume", trace.to_str().unwrap()]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("spent its budget"),
        "{}",
        again.stderr
    );
}

/// A trace written before runs could be resumed is refused with a one-line reason (exit 6), and
/// --resume cannot be mixed with the options of a new run (exit 2).
#[test]
fn resume_refuses_a_trace_without_settings_and_new_run_options() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(&old, r#"{"points":[],"stages":[],"stopped":"converged"}"#).unwrap();
    let run = milo(&["optimize", "--resume", old.to_str().unwrap()]);
    assert_eq!(run.code, 6, "{}", run.stderr);
    assert!(run.stderr.contains("no run settings"), "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    let mixed = milo(&["optimize", "--resume", old.to_str().unwrap(), "--seed", "3"]);
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
}

/// A finished run of 50 evaluations on a flat start in `dir`, with its best and trace:
/// (best, trace).
fn short_run(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (start, out, trace) = (
        dir.join("start.json"),
        dir.join("best.json"),
        dir.join("trace.json"),
    );
    std::fs::write(&start, format!("{{\"values\": {:?}}}", vec![1.0; 50])).unwrap();
    let run = milo(&[
        "optimize",
        "first-autocorrelation-inequality",
        "--start",
        start.to_str().unwrap(),
        "--evaluations",
        "50",
        "--out",
        out.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::metadata(&out).unwrap().len() > 0,
        "a best was saved"
    );
    (out, trace)
}

/// Rewrites the trace's `run.KEY` to `value`.
fn edit_run(trace: &std::path::Path, key: &str, value: serde_json::Value) {
    let mut json = trace_json(trace).unwrap();
    json["run"][key] = value;
    std::fs::write(trace, serde_json::to_string(&json).unwrap()).unwrap();
}

/// A trace someone sent is data, not code: the `command` steps of its stored program run only
/// with --allow-commands, and then confined to their work directory.
#[test]
fn a_resumed_trace_runs_its_command_steps_only_when_allowed_and_then_confined() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = short_run(dir.path());
    let outside = dir.path().join("written-by-the-trace");
    let program = format!(
        "name = \"shell\"\n[[steps]]\nkind = \"command\"\n\
         argv = [\"sh\", \"-c\", \"echo x > '{}'; cp {{input}} {{output}}\"]\n",
        outside.display()
    );
    edit_run(&trace, "program", program.into());
    let resume = |extra: &[&str]| {
        let mut args = vec!["optimize", "--resume", trace.to_str().unwrap()];
        args.extend_from_slice(&["--budget", "60", "-q"]);
        args.extend_from_slice(extra);
        milo(&args)
    };
    let refused = resume(&[]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(!outside.exists(), "the trace's shell ran");
    assert!(
        refused.stderr.contains("steps[0]") && refused.stderr.contains("--allow-commands"),
        "{}",
        refused.stderr
    );
    let allowed = resume(&["--allow-commands"]);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    assert!(
        !outside.exists(),
        "a confined command wrote outside its directory"
    );
    // It ran: a command that failed or could not be confined leaves a note.
    let stages = trace_json(&trace).unwrap()["stages"].clone();
    let last = stages.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "command");
    assert!(last["note"].is_null(), "{last}");
}

/// A resume writes only the --out its run created: a trace pointing elsewhere (a text file,
/// another construction, a link) or an --out that no longer holds what the run wrote is
/// refused naming both files, and the file is left as it was.
#[test]
fn a_resumed_trace_writes_only_the_out_its_run_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let (out, trace) = short_run(dir.path());
    let resume = || {
        milo(&[
            "optimize",
            "--resume",
            trace.to_str().unwrap(),
            "--evaluations",
            "500",
            "-q",
        ])
    };
    let refused_and_kept = |name: &str, content: &[u8]| {
        let run = resume();
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains(name) && run.stderr.contains("trace.json"),
            "{}",
            run.stderr
        );
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        assert_eq!(
            std::fs::read(dir.path().join(name)).unwrap(),
            content,
            "{name}"
        );
    };
    std::fs::write(dir.path().join("victim.txt"), "precious\n").unwrap();
    edit_run(&trace, "out", "victim.txt".into());
    refused_and_kept("victim.txt", b"precious\n");
    // A valid construction the run never wrote.
    let other = format!("{{\"values\": {:?}}}", vec![2.0; 50]);
    std::fs::write(dir.path().join("other.json"), &other).unwrap();
    edit_run(&trace, "out", "other.json".into());
    refused_and_kept("other.json", other.as_bytes());
    std::os::unix::fs::symlink(&out, dir.path().join("link.json")).unwrap();
    edit_run(&trace, "out", "link.json".into());
    let run = resume();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    // The run's own --out, no longer holding what the run wrote.
    edit_run(&trace, "out", "best.json".into());
    let best = std::fs::read(&out).unwrap();
    std::fs::write(&out, "not a construction").unwrap();
    refused_and_kept("best.json", b"not a construction");
    // Restored, the run continues.
    std::fs::write(&out, &best).unwrap();
    let run = resume();
    assert_eq!(run.code, 0, "{}", run.stderr);
}
