//! Hostile inputs and faults (issue 17): one-line errors naming the rule and the value, distinct
//! exit codes, never a panic, never a half-written or silently replaced file.

mod common;
use common::{evolve_tiny, milo, tiny_suite, Run};
use milo::bounded_read::{size_text, CONFIG_CAP, CONSTRUCTION_CAP};
use milo::error::{EXIT_BUSY, EXIT_INPUT, EXIT_INVALID, EXIT_USAGE, EXIT_WRITE};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FIRST: &str = "first-autocorrelation-inequality";

/// Asserts `run` failed with `code` on one stderr line holding every needle, without a panic.
fn expect_failure(run: &Run, code: i32, needles: &[&str]) {
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(
        run.code, code,
        "stdout {} stderr {}",
        run.stdout, run.stderr
    );
    let line = run.stderr.trim();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    for needle in needles {
        assert!(line.contains(needle), "'{line}' lacks '{needle}'");
    }
}

#[test]
fn a_duplicate_key_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.json");
    // milo used to take the first (score 2.0), Python the last (1.5431).
    std::fs::write(&path, r#"{"values": [1, 1], "values": [1, 2, 0.5]}"#).unwrap();
    let run = milo(&["verify", FIRST, path.to_str().unwrap()]);
    expect_failure(
        &run,
        EXIT_INPUT,
        &["duplicate key \"values\"", "twice.json"],
    );
}

/// Writes a small valid start for the first problem and returns its path as text.
fn small_start(dir: &Path) -> String {
    let path = dir.join("start.json");
    std::fs::write(&path, "[1, 0.5, 0.8, 1, 0.3, 0.9]").unwrap();
    path.to_str().unwrap().to_string()
}

/// Writes a quick program (a short L-BFGS polish) and returns its path as text.
fn quick_program(dir: &Path) -> String {
    let path = dir.join("quick.toml");
    std::fs::write(
        &path,
        "name = \"quick\"\n\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"raw\"\n\
         betas = [1e3]\nhistory = 5\niterations = 10\n\n[[steps]]\nkind = \"finalize\"\n",
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn exit_codes_tell_usage_input_and_write_failures_apart() {
    let dir = tempfile::tempdir().unwrap();
    let start = small_start(dir.path());
    let run = milo(&["verify", "no-such-problem", &start]);
    expect_failure(&run, EXIT_USAGE, &["no-such-problem"]);
    let missing = dir.path().join("missing.json");
    let run = milo(&["verify", FIRST, missing.to_str().unwrap()]);
    expect_failure(&run, EXIT_INPUT, &["cannot read", "missing.json"]);
    // A trace under a regular file cannot be written: "cannot write", not "cannot read".
    let trace = dir.path().join("start.json").join("trace.json");
    let out = dir.path().join("out.json");
    let run = milo(&[
        "optimize",
        FIRST,
        "--start",
        &start,
        "--program",
        &quick_program(dir.path()),
        "--evaluations",
        "20",
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let line = run.stderr.lines().last().unwrap_or_default().to_string();
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(run.code, EXIT_WRITE, "{}", run.stderr);
    assert!(
        line.contains("cannot write") && line.contains("trace.json"),
        "{line}"
    );
}

/// A folder `starts/` with two small starts for the first problem, and the quick program.
fn freeze_inputs(dir: &Path) -> (PathBuf, String) {
    let starts = dir.join("starts");
    std::fs::create_dir_all(&starts).unwrap();
    std::fs::write(starts.join("a.json"), "[1, 0.5, 0.8, 1, 0.3, 0.9]").unwrap();
    std::fs::write(starts.join("b.json"), "[1, 0.9, 0.7, 0.4, 0.3, 0.2]").unwrap();
    (starts, quick_program(dir))
}

/// `milo suite freeze` of [`freeze_inputs`] into `out`, with `extra` flags.
fn freeze(dir: &Path, out: &Path, extra: &[&str]) -> Vec<String> {
    let (starts, program) = freeze_inputs(dir);
    let mut args: Vec<String> = [
        "suite",
        "freeze",
        "--problem",
        FIRST,
        "--from",
        starts.to_str().unwrap(),
        "--programs",
        &program,
        "--seeds",
        "1",
        "--validation-seeds",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Runs `milo` with files limited to `kib` KiB (SIGXFSZ ignored, so a write past the limit fails
/// with EFBIG as on a full disk).
fn milo_with_file_limit(kib: u32, args: &[String]) -> Run {
    milo_after(&format!("trap '' XFSZ; ulimit -f {kib}"), args)
}

/// Runs `milo` with its virtual memory limited to about 2 GB, so reading a whole 2 GB file, or
/// growing a 1 GiB buffer by doubling, fails.
fn milo_with_memory_limit(args: &[&str]) -> Run {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    milo_after("ulimit -v 2000000", &args)
}

/// Runs `milo` with arguments from a shell, after the shell commands `setup` (limits).
fn milo_after(setup: &str, args: &[String]) -> Run {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("{setup}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_milo"))
        .args(args)
        .output()
        .expect("bash runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_write_cut_short_by_a_full_disk_leaves_no_torn_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.toml");
    // A long description makes the suite file larger than the 1 KiB limit.
    let description = "d".repeat(4000);
    let args = freeze(
        dir.path(),
        &out,
        &["--budget-evaluations", "100", "--description", &description],
    );
    let run = milo_with_file_limit(1, &args);
    expect_failure(&run, EXIT_WRITE, &["cannot write", "s.toml"]);
    assert!(!out.exists(), "no half-written suite");
    assert_eq!(
        names_in(dir.path()),
        ["quick.toml", "starts"],
        "no temporary left"
    );
    // Without the limit the same suite is written whole.
    let run = milo(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains(&description));
}

#[test]
fn budgets_out_of_range_are_usage_errors_naming_flag_value_and_range() {
    let dir = tempfile::tempdir().unwrap();
    let start = small_start(dir.path());
    let program = quick_program(dir.path());
    let out = dir.path().join("o.json");
    for (flag, value) in [
        ("--budget", "1e20"),
        ("--budget", "1e308"),
        ("--budget", "inf"),
        ("--budget", "0"),
        ("--budget", "-1"),
        ("--budget", "nan"),
        ("--evaluations", "0"),
    ] {
        let run = milo(&[
            "optimize",
            FIRST,
            "--start",
            &start,
            "--program",
            &program,
            "--out",
            out.to_str().unwrap(),
            &format!("{flag}={value}"),
        ]);
        expect_failure(&run, EXIT_USAGE, &[flag]);
        if flag == "--budget" {
            assert!(run.stderr.contains("1e7"), "the range: {}", run.stderr);
        }
        assert!(!out.exists(), "{flag} {value}: nothing written");
    }
    // A suite asking for 1e20 seconds per task is refused when read, naming the key.
    let suite = dir.path().join("frozen.toml");
    let args = freeze(dir.path(), &suite, &["--budget-evaluations", "100"]);
    assert_eq!(
        milo(&args.iter().map(String::as_str).collect::<Vec<_>>()).code,
        0
    );
    let text = std::fs::read_to_string(&suite).unwrap();
    let edited = text.replace("evaluations = 100", "seconds = 1e20");
    assert_ne!(edited, text);
    std::fs::write(&suite, edited).unwrap();
    let run = milo(&["suite", "show", suite.to_str().unwrap()]);
    expect_failure(&run, EXIT_INPUT, &["budget.seconds", "1e20", "1e7"]);
    // `suite freeze` refuses to write such a suite.
    let huge = dir.path().join("huge.toml");
    let args = freeze(dir.path(), &huge, &["--budget-seconds", "1e300"]);
    let run = milo(&args.iter().map(String::as_str).collect::<Vec<_>>());
    expect_failure(&run, EXIT_USAGE, &["--budget-seconds", "1e300", "1e7"]);
    assert!(!huge.exists());
    // `bench` checks its budget the same way.
    let run = milo(&[
        "bench",
        "--suite",
        suite.to_str().unwrap(),
        "--budget",
        "1e20",
        "--out",
        dir.path().join("bench").to_str().unwrap(),
    ]);
    expect_failure(&run, EXIT_USAGE, &["--budget", "1e20", "1e7"]);
}

#[test]
fn a_closed_standard_output_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let start = small_start(dir.path());
    for args in [vec!["problems"], vec!["verify", FIRST, start.as_str()]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_milo"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before milo writes its first line (as `| head -0` would).
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.trim().is_empty(), "{args:?}: quietly: {stderr}");
    }
}

/// `/dev/full` opened for writing (every write to it fails with "no space left"), or `None`
/// after a note where the system has none.
fn dev_full(test: &str) -> Option<std::fs::File> {
    match std::fs::OpenOptions::new().write(true).open("/dev/full") {
        Ok(file) => Some(file),
        Err(e) => {
            println!("SKIP {test}: /dev/full cannot be opened ({e})");
            None
        }
    }
}

/// Runs `milo args` with standard output and standard error on `stdout` and `stderr`.
fn milo_on(args: &[&str], stdout: Stdio, stderr: Stdio) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args(args)
        .stdout(stdout)
        .stderr(stderr)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Writes a construction of the first problem that breaks its rules (a negative value) and
/// returns its path as text.
fn invalid_start(dir: &Path) -> String {
    let path = dir.join("invalid.json");
    std::fs::write(&path, "[1, -1, 0.5]").unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_full_standard_output_is_a_write_error() {
    let Some(full) = dev_full("a_full_standard_output_is_a_write_error") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let start = small_start(dir.path());
    let invalid = invalid_start(dir.path());
    for args in [
        vec!["problems"],
        vec!["verify", FIRST, start.as_str()],
        vec!["verify", FIRST, invalid.as_str()],
    ] {
        let run = milo_on(&args, full.try_clone().unwrap().into(), Stdio::piped());
        expect_failure(&run, EXIT_WRITE, &["cannot write standard output"]);
        // With standard error full as well, the error is dropped; the exit code stands.
        let run = milo_on(
            &args,
            full.try_clone().unwrap().into(),
            full.try_clone().unwrap().into(),
        );
        assert_eq!(run.code, EXIT_WRITE, "{args:?}");
    }
}

#[test]
fn an_unwritable_standard_error_drops_the_messages_not_the_work() {
    let Some(full) = dev_full("an_unwritable_standard_error_drops_the_messages_not_the_work")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let start = common::root()
        .join("constructions/third-autocorrelation-inequality/capped-arcsine-400.json");
    let out = dir.path().join("o.json");
    let args = [
        "optimize",
        "third-autocorrelation-inequality",
        "--start",
        start.to_str().unwrap(),
        "--evaluations",
        "60",
        "--out",
        out.to_str().unwrap(),
    ];
    let run = milo_on(&args, Stdio::piped(), full.try_clone().unwrap().into());
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("wrote"), "{}", run.stdout);
    let check = milo(&[
        "verify",
        "third-autocorrelation-inequality",
        out.to_str().unwrap(),
    ]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    let invalid = invalid_start(dir.path());
    let run = milo_on(
        &["verify", FIRST, &invalid],
        Stdio::piped(),
        full.try_clone().unwrap().into(),
    );
    assert_eq!(run.code, EXIT_INVALID, "{}", run.stdout);
    assert!(run.stdout.starts_with("INVALID"), "{}", run.stdout);
    let missing = dir.path().join("missing.json");
    let run = milo_on(
        &["verify", FIRST, missing.to_str().unwrap()],
        Stdio::piped(),
        full.into(),
    );
    assert_eq!(run.code, EXIT_INPUT);
}

#[test]
fn an_error_quotes_a_few_hundred_bytes_of_a_hostile_string() {
    let dir = tempfile::tempdir().unwrap();
    let huge = |fill: &str, mib: usize| fill.repeat((mib << 20) / fill.len());
    // serde quotes a string of the wrong type whole (`invalid type: string "…"`).
    let bench = dir.path().join("bench");
    std::fs::create_dir(&bench).unwrap();
    std::fs::write(
        bench.join("results.json"),
        format!(
            r#"{{"problem": "p", "direction": "minimize", "cpu_seconds": "{}"}}"#,
            huge("y", 30)
        ),
    )
    .unwrap();
    let construction = dir.path().join("values.json");
    std::fs::write(
        &construction,
        format!(r#"{{"values": "{}"}}"#, huge("é\\n", 8)),
    )
    .unwrap();
    // The toml crate quotes an unknown step kind whole, on several lines.
    let program = dir.path().join("program.toml");
    std::fs::write(
        &program,
        format!(
            "name = \"q\"\n[[steps]]\nkind = \"\"\"{}\"\"\"\n",
            huge("k\n", 1)
        ),
    )
    .unwrap();
    let start = small_start(dir.path());
    for (args, needle) in [
        (vec!["report", bench.to_str().unwrap()], "results.json"),
        (
            vec!["verify", FIRST, construction.to_str().unwrap()],
            "values.json",
        ),
        (
            vec![
                "optimize",
                FIRST,
                "--start",
                &start,
                "--program",
                program.to_str().unwrap(),
                "--out",
                dir.path().join("out.json").to_str().unwrap(),
            ],
            "program.toml",
        ),
    ] {
        let run = milo(&args);
        assert!(
            run.stderr.len() < 2048,
            "{args:?}: {} bytes",
            run.stderr.len()
        );
        expect_failure(&run, EXIT_INPUT, &[needle, "…"]);
    }
}

#[test]
fn a_zero_construction_in_best_json_is_refused_on_resume_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let run_dir = dir.path().join("run");
    let run = milo(&[
        "evolve",
        "--suite",
        suite.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
        "--islands",
        "1",
        "--rounds",
        "1",
        "--tasks-per-round",
        "1",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::write(run_dir.join("best.json"), r#"{"values": [0, 0, 0]}"#).unwrap();
    let resumed = milo(&["evolve", "--resume", run_dir.to_str().unwrap()]);
    expect_failure(
        &resumed,
        EXIT_INPUT,
        &["best.json", "not a valid construction"],
    );
    let report = milo(&[
        "report",
        run_dir.to_str().unwrap(),
        "--out",
        dir.path().join("report").to_str().unwrap(),
    ]);
    expect_failure(&report, EXIT_INPUT, &["best.json"]);
}

#[test]
fn optimize_reserves_out_and_trace_at_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let start = small_start(dir.path());
    let program = quick_program(dir.path());
    let optimize = |extra: &[&str]| {
        let mut args = vec!["optimize", FIRST, "--start", &start, "--json"];
        args.extend_from_slice(extra);
        milo(&args)
    };
    // One file for both: a usage error, nothing written.
    let same = dir.path().join("same.json");
    let run = optimize(&[
        "--out",
        same.to_str().unwrap(),
        "--trace",
        same.to_str().unwrap(),
    ]);
    expect_failure(&run, EXIT_USAGE, &["--out and --trace", "same.json"]);
    assert!(!same.exists());
    // A missing directory fails before the run (the default program would take 20 s).
    let lost = dir.path().join("no-such-dir").join("best.json");
    let started = std::time::Instant::now();
    let run = optimize(&["--out", lost.to_str().unwrap(), "--budget", "20"]);
    expect_failure(&run, EXIT_WRITE, &["cannot write", "no-such-dir"]);
    assert!(
        started.elapsed().as_secs_f64() < 10.0,
        "failed before the run"
    );
    // An existing trace is not overwritten, and the reserved --out is released.
    let trace = dir.path().join("trace.json");
    std::fs::write(&trace, "keep me").unwrap();
    let out = dir.path().join("out.json");
    let run = optimize(&[
        "--program",
        &program,
        "--out",
        out.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    expect_failure(&run, EXIT_USAGE, &["--trace", "exists"]);
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), "keep me");
    assert!(!out.exists(), "the reservation of --out is released");
    // Two runs on one name: the second is refused, whether the first is running or done.
    let first = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args([
            "optimize", FIRST, "--start", &start, "--json", "--budget", "3",
        ])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let second = optimize(&["--program", &program, "--out", out.to_str().unwrap()]);
    expect_failure(&second, EXIT_USAGE, &["--out", "exists"]);
    let first = first.wait_with_output().unwrap();
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let verified = milo(&["verify", FIRST, out.to_str().unwrap()]);
    assert_eq!(
        verified.code, 0,
        "the first run's result is whole: {}",
        verified.stderr
    );
}

/// Holds `dir`'s lock from this process (as a running milo would), its PID written in.
fn hold_lock(dir: &Path) -> std::fs::File {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.join("milo.lock"))
        .unwrap();
    file.try_lock().unwrap();
    writeln!(file, "{}", std::process::id()).unwrap();
    file
}

#[test]
fn a_second_process_on_a_run_or_bench_directory_is_refused_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let suite = suite.to_str().unwrap();
    let pid = std::process::id().to_string();
    // A run directory: a live second `evolve` is refused while the first runs.
    let run_dir = dir.path().join("run");
    let mut first = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args([
            "evolve",
            "--suite",
            suite,
            "--run-dir",
            run_dir.to_str().unwrap(),
        ])
        .args(["--islands", "1", "--rounds", "100000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = run_dir.join("milo.lock");
    let waited = std::time::Instant::now();
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.ends_with('\n')) {
        assert!(
            waited.elapsed().as_secs() < 60,
            "the first run took its lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = milo(&["evolve", "--resume", run_dir.to_str().unwrap()]);
    let first_pid = first.id().to_string();
    first.kill().unwrap();
    first.wait().unwrap();
    expect_failure(
        &second,
        EXIT_BUSY,
        &["milo.lock", &format!("PID {first_pid}")],
    );
    // Any holder is named: here the test process itself.
    let held = hold_lock(&run_dir);
    let again = milo(&["evolve", "--resume", run_dir.to_str().unwrap()]);
    expect_failure(&again, EXIT_BUSY, &["milo.lock", &format!("PID {pid}")]);
    drop(held);
    // A benchmark directory: resume is refused while another process holds it, then works.
    let bench = dir.path().join("bench");
    let run = milo(&[
        "bench",
        "--suite",
        suite,
        "--methods",
        "best-of-n",
        "--budget",
        "0.05",
        "--seeds",
        "1",
        "--no-rerun",
        "--out",
        bench.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let held = hold_lock(&bench);
    let resumed = milo(&["bench", "--resume", bench.to_str().unwrap()]);
    expect_failure(&resumed, EXIT_BUSY, &["milo.lock", &format!("PID {pid}")]);
    drop(held);
    let resumed = milo(&["bench", "--resume", bench.to_str().unwrap()]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
}

#[test]
fn program_counts_past_their_bounds_are_refused_naming_path_bound_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let start = small_start(dir.path());
    let lbfgs = "kind = \"lbfgs\"\nparameterisation = \"raw\"\nbetas = [1e3]\niterations = 10\n";
    for (label, body, needles) in [
        (
            "history",
            format!("[[steps]]\n{lbfgs}history = 1000000000\n"),
            ["steps[0].history", "at most 500", "1000000000"],
        ),
        (
            "repeat",
            format!(
                "[[steps]]\nkind = \"repeat\"\ntimes = 9223372036854775807\n\n\
                 [[steps.body]]\n{lbfgs}history = 5\n"
            ),
            ["steps[0].times", "at most 10000", "9223372036854775807"],
        ),
    ] {
        let program = dir.path().join(format!("{label}.toml"));
        std::fs::write(&program, format!("name = \"{label}\"\n\n{body}")).unwrap();
        let run = milo(&[
            "optimize",
            FIRST,
            "--start",
            &start,
            "--program",
            program.to_str().unwrap(),
            "--evaluations",
            "20",
            "--out",
            dir.path()
                .join(format!("{label}.out.json"))
                .to_str()
                .unwrap(),
        ]);
        expect_failure(&run, EXIT_INPUT, &needles);
    }
}

/// The one-line error of a `what` file past `cap`.
fn past_cap(what: &str, cap: u64) -> String {
    format!("{what} is past its size cap of {}", size_text(cap))
}

/// A file of `len` zero bytes that takes no disk space (sparse).
fn sparse_file(path: &Path, len: u64) {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}

#[test]
fn a_construction_that_never_ends_stops_at_its_cap() {
    let run = milo_with_memory_limit(&["verify", FIRST, "/dev/zero"]);
    expect_failure(
        &run,
        EXIT_INPUT,
        &["/dev/zero", &past_cap("construction", CONSTRUCTION_CAP)],
    );
}

#[test]
fn standard_input_that_never_ends_stops_at_its_cap() {
    let args = ["verify", FIRST, "-"].map(String::from);
    let run = milo_after("ulimit -v 2000000; exec < /dev/zero", &args);
    expect_failure(
        &run,
        EXIT_INPUT,
        &[
            "standard input",
            &past_cap("construction", CONSTRUCTION_CAP),
        ],
    );
}

#[test]
fn a_sparse_2_gb_construction_stops_at_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.json");
    sparse_file(&path, 2_000_000_000);
    let run = milo_with_memory_limit(&["verify", FIRST, path.to_str().unwrap()]);
    expect_failure(
        &run,
        EXIT_INPUT,
        &["huge.json", &past_cap("construction", CONSTRUCTION_CAP)],
    );
}

#[test]
fn a_gzip_bomb_stops_at_its_cap_once_gunzipped() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.json.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::io::BufWriter::new(std::fs::File::create(&path).unwrap()),
        flate2::Compression::default(),
    );
    // One byte past the cap, streamed: zeros compress about a thousandfold.
    let zeros = vec![0u8; 1 << 20];
    let mut left = CONSTRUCTION_CAP + 1;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        gz.write_all(&zeros[..n]).unwrap();
        left -= n as u64;
    }
    gz.finish().unwrap().flush().unwrap();
    let compressed = std::fs::metadata(&path).unwrap().len();
    assert!(
        compressed < CONSTRUCTION_CAP / 100,
        "a bomb: {compressed} bytes"
    );
    let run = milo_with_memory_limit(&["verify", FIRST, path.to_str().unwrap()]);
    expect_failure(
        &run,
        EXIT_INPUT,
        &[
            "bomb.json.gz",
            &format!(
                "{} once gunzipped",
                past_cap("construction", CONSTRUCTION_CAP)
            ),
        ],
    );
}

#[test]
fn a_huge_program_stops_at_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let start = small_start(dir.path());
    let program = dir.path().join("huge.toml");
    sparse_file(&program, CONFIG_CAP + (1 << 20));
    let out = dir.path().join("out.json");
    let run = milo_with_memory_limit(&[
        "optimize",
        FIRST,
        "--start",
        &start,
        "--program",
        program.to_str().unwrap(),
        "--evaluations",
        "20",
        "--out",
        out.to_str().unwrap(),
    ]);
    expect_failure(
        &run,
        EXIT_INPUT,
        &["huge.toml", &past_cap("program", CONFIG_CAP)],
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn a_resume_refuses_an_edited_suite_harness_or_lineage_naming_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    evolve_tiny(dir.path(), &run_dir, &["--islands", "2", "--rounds", "1"]);
    let suite = dir.path().join("tiny.toml");
    let resume = || {
        milo(&[
            "evolve",
            "--resume",
            run_dir.to_str().unwrap(),
            "--jobs",
            "1",
        ])
    };
    // Each file is edited, the resume refused, and the file restored.
    let edit = |path: &Path, change: &dyn Fn(&str) -> String, needles: &[&str]| {
        let before = std::fs::read_to_string(path).unwrap();
        std::fs::write(path, change(&before)).unwrap();
        expect_failure(&resume(), EXIT_INPUT, needles);
        std::fs::write(path, before).unwrap();
    };
    // The suite's budget changed between a kill and the resume.
    edit(
        &suite,
        &|text| text.replace("evaluations = 150", "evaluations = 151"),
        &["the suite or one of its programs changed", "tiny.toml"],
    );
    // A program of the suite changed.
    edit(
        &dir.path().join("polish.toml"),
        &|text| text.replace("iterations = 100", "iterations = 101"),
        &["the suite or one of its programs changed"],
    );
    // A content-addressed harness file was edited.
    let harness = common::first_harness(&run_dir);
    edit(
        &harness,
        &|text| {
            let name = text.lines().find(|l| l.starts_with("name = ")).unwrap();
            text.replace(name, "name = \"edited\"")
        },
        &["a stored harness was edited"],
    );
    // A node line copied.
    let lineage = run_dir.join("lineage.jsonl");
    edit(
        &lineage,
        &|text| {
            let node = text
                .lines()
                .find(|l| l.contains("\"record\":\"node\""))
                .unwrap();
            format!("{text}{node}\n")
        },
        &["is recorded twice", "lineage.jsonl"],
    );
    // Restored, the run resumes.
    let resumed = resume();
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
}

#[test]
fn counts_past_their_bounds_exit_2_naming_flag_range_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let suite = suite.to_str().unwrap();
    for (args, needles) in [
        (
            vec!["evolve", "--islands", "18446744073709551615"],
            ["--islands", "18446744073709551615", "1..=64"],
        ),
        (
            vec!["evolve", "--tasks-per-round", "1000000000"],
            ["--tasks-per-round", "1000000000", "1..=4096"],
        ),
        (
            vec!["evolve", "--jobs", "100000"],
            ["--jobs", "100000", "1..=1024"],
        ),
        (
            vec![
                "bench",
                "--suite",
                suite,
                "--seeds",
                "100000000",
                "--budget",
                "1",
            ],
            ["--seeds", "100000000", "1..=1000"],
        ),
    ] {
        let run = milo(&args);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        assert_eq!(run.code, EXIT_USAGE, "{args:?}: {}", run.stderr);
        let first = run.stderr.lines().next().unwrap_or_default();
        for needle in needles {
            assert!(first.contains(needle), "'{first}' lacks '{needle}'");
        }
    }
    // A run whose recorded settings were edited past a bound is refused on resume.
    let run_dir = dir.path().join("run");
    evolve_tiny(dir.path(), &run_dir, &["--rounds", "1", "-q"]);
    let lineage = run_dir.join("lineage.jsonl");
    let text = std::fs::read_to_string(&lineage).unwrap();
    let edited = text.replacen("\"islands\":3", "\"islands\":1000000000", 1);
    assert_ne!(edited, text);
    std::fs::write(&lineage, edited).unwrap();
    let run = milo(&[
        "evolve",
        "--resume",
        run_dir.to_str().unwrap(),
        "--rounds",
        "2",
    ]);
    expect_failure(
        &run,
        EXIT_INPUT,
        &["lineage.jsonl", "--islands", "1000000000"],
    );
}

#[test]
fn record_files_that_are_fifos_or_links_are_refused_at_once_never_blocked_on() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    evolve_tiny(dir.path(), &run_dir, &["--rounds", "1", "-q"]);
    let lineage = run_dir.join("lineage.jsonl");
    let kept = dir.path().join("kept.jsonl");
    std::fs::rename(&lineage, &kept).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(&lineage)
        .status()
        .unwrap()
        .success());
    let ledger = dir.path().join("ledger.jsonl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&ledger)
        .status()
        .unwrap()
        .success());
    let run = run_dir.to_str().unwrap();
    let limit = std::time::Duration::from_secs(20);
    for (args, code) in [
        (&["lineage", run][..], EXIT_USAGE),
        (
            &["evolve", "--resume", run, "--rounds", "2"][..],
            EXIT_USAGE,
        ),
        (
            // The ledger is read as every record file is: the same refusal, the same code.
            &["arena", "status", "--ledger", ledger.to_str().unwrap()][..],
            EXIT_USAGE,
        ),
    ] {
        let done =
            common::milo_within(args, &[], limit).unwrap_or_else(|| panic!("{args:?} blocked"));
        expect_failure(&done, code, &["a FIFO", "regular file"]);
    }
    // A symbolic link to the real lineage is not followed either.
    std::fs::remove_file(&lineage).unwrap();
    std::os::unix::fs::symlink(&kept, &lineage).unwrap();
    let done =
        common::milo_within(&["evolve", "--resume", run, "--rounds", "2"], &[], limit).unwrap();
    expect_failure(&done, EXIT_USAGE, &["a symbolic link"]);
    assert!(std::fs::symlink_metadata(&lineage).unwrap().is_symlink());
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Runs milo with `args`, killed past 20 s: what went wrong with its refusal (`code`, one line
/// naming `needles`), if anything.
fn refusal_problem(args: &[&str], code: i32, needles: &[&str]) -> Option<String> {
    let Some(run) = common::milo_within(args, &[], std::time::Duration::from_secs(20)) else {
        return Some(format!("{args:?} blocked"));
    };
    let line = run.stderr.trim();
    let right = run.code == code
        && !line.contains("panicked")
        && line.lines().count() == 1
        && needles.iter().all(|n| line.contains(n));
    (!right).then(|| format!("{args:?}: exit {} with '{line}'", run.code))
}

/// Runs a short optimize of the first problem recording its trace at `trace` and its best at
/// `out`, and asserts it succeeded.
fn traced_run(dir: &Path, trace: &Path, out: &Path) {
    let args = traced_run_args(dir, trace, out);
    let run = milo(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// The arguments of [`traced_run`]'s short optimize of the first problem (its start and program
/// written into `dir`).
fn traced_run_args(dir: &Path, trace: &Path, out: &Path) -> Vec<String> {
    let (start, program) = (small_start(dir), quick_program(dir));
    [
        "optimize",
        FIRST,
        "--start",
        &start,
        "--program",
        &program,
        "--evaluations",
        "30",
        "--out",
        out.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

/// The arguments resuming the optimize run of `trace` for up to 1,000 evaluations in all.
fn resume(trace: &Path) -> [&str; 5] {
    let trace = trace.to_str().unwrap();
    ["optimize", "--resume", trace, "--evaluations", "1000"]
}

/// A finished one-seed benchmark of the tiny suite (written into `dir`) in `dir/bench`.
fn tiny_bench(dir: &Path) -> PathBuf {
    bench_of(dir, &tiny_suite(dir), "best-of-n")
}

/// A finished one-seed benchmark of `suite` with `method` in `dir/bench`.
fn bench_of(dir: &Path, suite: &Path, method: &str) -> PathBuf {
    let bench = dir.join("bench");
    let made = milo(&[
        "bench",
        "--suite",
        suite.to_str().unwrap(),
        "--methods",
        method,
        "--budget",
        "0.05",
        "--seeds",
        "1",
        "--no-rerun",
        "--out",
        bench.to_str().unwrap(),
    ]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    bench
}

#[test]
fn lock_files_that_are_links_or_fifos_are_refused_and_their_targets_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    let link_to_victim = |lock: &Path| {
        let _ = std::fs::remove_file(lock);
        std::os::unix::fs::symlink(&victim, lock).unwrap();
    };
    let mut problems = Vec::new();
    // A new optimize run with --trace T locks T.lock.
    let trace = dir.path().join("new.trace.json");
    let trace_lock = dir.path().join("new.trace.json.lock");
    link_to_victim(&trace_lock);
    let new_run = traced_run_args(dir.path(), &trace, &dir.path().join("new.json"));
    let new_run: Vec<&str> = new_run.iter().map(String::as_str).collect();
    problems.extend(refusal_problem(
        &new_run,
        EXIT_USAGE,
        &["new.trace.json.lock", "a symbolic link"],
    ));
    // A resumed one, on the same lock.
    let trace = dir.path().join("run.trace.json");
    let trace_lock = dir.path().join("run.trace.json.lock");
    traced_run(dir.path(), &trace, &dir.path().join("run.json"));
    let resume = resume(&trace);
    link_to_victim(&trace_lock);
    problems.extend(refusal_problem(
        &resume,
        EXIT_USAGE,
        &["run.trace.json.lock", "a symbolic link"],
    ));
    std::fs::remove_file(&trace_lock).unwrap();
    mkfifo(&trace_lock);
    problems.extend(refusal_problem(
        &resume,
        EXIT_USAGE,
        &["run.trace.json.lock", "a FIFO"],
    ));
    // A run directory's and a benchmark directory's milo.lock.
    let run_dir = dir.path().join("run");
    evolve_tiny(dir.path(), &run_dir, &["--rounds", "1", "-q"]);
    link_to_victim(&run_dir.join("milo.lock"));
    let run = run_dir.to_str().unwrap();
    problems.extend(refusal_problem(
        &["evolve", "--resume", run, "--rounds", "2"],
        EXIT_USAGE,
        &["milo.lock", "a symbolic link"],
    ));
    let bench = tiny_bench(dir.path());
    link_to_victim(&bench.join("milo.lock"));
    problems.extend(refusal_problem(
        &["bench", "--resume", bench.to_str().unwrap()],
        EXIT_USAGE,
        &["milo.lock", "a symbolic link"],
    ));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn files_of_traces_runs_and_benchmarks_that_are_fifos_or_links_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    // A trace: a FIFO, a link to a real one, and a real one whose --out became a FIFO.
    let fifo = dir.path().join("fifo.trace.json");
    mkfifo(&fifo);
    problems.extend(refusal_problem(
        &resume(&fifo),
        EXIT_USAGE,
        &["fifo.trace.json", "a FIFO"],
    ));
    let (trace, out) = (dir.path().join("t.trace.json"), dir.path().join("t.json"));
    traced_run(dir.path(), &trace, &out);
    let link = dir.path().join("link.trace.json");
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    problems.extend(refusal_problem(
        &resume(&link),
        EXIT_USAGE,
        &["link.trace.json", "a symbolic link"],
    ));
    std::fs::remove_file(&out).unwrap();
    mkfifo(&out);
    problems.extend(refusal_problem(
        &resume(&trace),
        EXIT_USAGE,
        &["t.json", "a FIFO"],
    ));
    // A trace names files it did not write: its start (read when --out is still empty) and,
    // for a run, its suite's starts. A FIFO there is refused, never waited on.
    std::fs::remove_file(&out).unwrap();
    std::fs::write(&out, "").unwrap();
    let mut settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let start_fifo = dir.path().join("start-fifo.json");
    mkfifo(&start_fifo);
    settings["run"]["start"] = start_fifo.to_str().unwrap().into();
    std::fs::write(&trace, settings.to_string()).unwrap();
    problems.extend(refusal_problem(
        &resume(&trace),
        EXIT_USAGE,
        &["start-fifo.json", "a FIFO"],
    ));
    // A run directory's best.json and a stored harness (read under the run's lock).
    let run_dir = dir.path().join("run");
    evolve_tiny(dir.path(), &run_dir, &["--rounds", "1", "-q"]);
    let run = run_dir.to_str().unwrap();
    let evolve = ["evolve", "--resume", run, "--rounds", "2"];
    let best = run_dir.join("best.json");
    let kept = dir.path().join("kept.json");
    std::fs::rename(&best, &kept).unwrap();
    mkfifo(&best);
    problems.extend(refusal_problem(
        &evolve,
        EXIT_USAGE,
        &["best.json", "a FIFO"],
    ));
    let report_out = dir.path().join("report");
    let report_out = report_out.to_str().unwrap();
    problems.extend(refusal_problem(
        &["report", run, "--out", report_out],
        EXIT_USAGE,
        &["best.json", "a FIFO"],
    ));
    std::fs::remove_file(&best).unwrap();
    std::fs::rename(&kept, &best).unwrap();
    let harness = common::first_harness(&run_dir);
    let harness_text = std::fs::read(&harness).unwrap();
    std::fs::remove_file(&harness).unwrap();
    mkfifo(&harness);
    problems.extend(refusal_problem(&evolve, EXIT_USAGE, &[".toml", "a FIFO"]));
    std::fs::remove_file(&harness).unwrap();
    std::fs::write(&harness, harness_text).unwrap();
    let suite_start = dir.path().join("wave-a.json");
    std::fs::remove_file(&suite_start).unwrap();
    mkfifo(&suite_start);
    problems.extend(refusal_problem(
        &evolve,
        EXIT_USAGE,
        &["wave-a.json", "a FIFO"],
    ));
    std::fs::remove_file(&suite_start).unwrap();
    // A benchmark directory's settings and results.
    let bench = tiny_bench(dir.path());
    let results = bench.join("results.json");
    let elsewhere = dir.path().join("results.json");
    std::fs::rename(&results, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &results).unwrap();
    problems.extend(refusal_problem(
        &["report", bench.to_str().unwrap(), "--out", report_out],
        EXIT_USAGE,
        &["results.json", "a symbolic link"],
    ));
    let settings = bench.join("bench.json");
    std::fs::remove_file(&settings).unwrap();
    mkfifo(&settings);
    problems.extend(refusal_problem(
        &["bench", "--resume", bench.to_str().unwrap()],
        EXIT_USAGE,
        &["bench.json", "a FIFO"],
    ));
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A benchmark directory is data, not code: one whose suite's programs run commands is not
/// resumed (a benchmark has no opt-in to run them confined), and nothing runs.
#[test]
fn a_benchmark_whose_programs_run_commands_is_not_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    std::fs::write(
        dir.path().join("polish.toml"),
        "name = \"polish\"\n[[steps]]\nkind = \"command\"\nargv = [\"cp\", \"{input}\", \"{output}\"]\n",
    )
    .unwrap();
    let bench = bench_of(dir.path(), &suite, "stock");
    let resumed = milo(&["bench", "--resume", bench.to_str().unwrap()]);
    expect_failure(
        &resumed,
        EXIT_USAGE,
        &["steps[0]", "polish.toml", "command"],
    );
}
