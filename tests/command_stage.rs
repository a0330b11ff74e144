//! The `command` stage: a Python script inside a program improves a construction, and scripts
//! that hang, crash, write garbage or invalid values, allocate past their memory limit or leave a
//! grandchild behind are stopped or refused with a clear note, leaving no process behind.

mod common;
use common::processes_with;

use milo::cancel::CancelToken;
use milo::construction::{read_values, write_values};
use milo::problems::{by_slug, Problem};
use milo::program::Program;
use milo::runner::{run_program, RunOutcome, RunSettings, Silent};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const PROBLEM: &str = "first-autocorrelation-inequality";

/// Whether python3 with numpy runs; a skip note otherwise.
fn numpy_ready(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP {test}: python3 with numpy is not available");
    }
    ok
}

/// A deliberately poor start: flat, with one tall spike.
fn spiked_start() -> Vec<f64> {
    let mut values = vec![1.0; 50];
    values[25] = 20.0;
    values
}

/// A program of one `command` step running `script` as `python3 {script} {input} {output}`,
/// with `extra` TOML keys.
fn program_text(script: &str, extra: &str) -> String {
    format!(
        "name = \"python-command\"\n\n[[steps]]\nkind = \"command\"\n\
         argv = [\"python3\", \"{{script}}\", \"{{input}}\", \"{{output}}\", \"{{seed}}\", \"{{n}}\"]\n\
         {extra}\nscript = '''\n{script}\n'''\n"
    )
}

/// Runs the one-step program through the library.
fn run(script: &str, extra: &str) -> (Box<dyn Problem>, RunOutcome) {
    let problem = by_slug(PROBLEM).unwrap();
    let program = Program::parse(&program_text(script, extra), Path::new("p.toml")).unwrap();
    let settings = RunSettings {
        seed: 7,
        seconds: Some(120.0),
        evaluations: None,
        jobs: 1,
        cancel: CancelToken::new(),
        spent: Default::default(),
    };
    let outcome = run_program(
        problem.as_ref(),
        &spiked_start(),
        &program,
        &settings,
        &mut Silent,
    )
    .unwrap();
    (problem, outcome)
}

/// The note of the run's only stage, after checking the start came back unchanged.
fn refused(outcome: &RunOutcome) -> String {
    assert!(!outcome.improved);
    assert_eq!(outcome.best, spiked_start());
    assert_eq!(outcome.trace.stages.len(), 1);
    let stage = &outcome.trace.stages[0];
    assert_eq!(stage.kind, "command");
    assert_eq!(stage.score_after, stage.score_before);
    stage.note.clone().expect("a refused output has a note")
}

/// A marker unique to this test process and `what`, for finding leftover processes.
fn marker(what: &str) -> String {
    format!("milo-command-test-{what}-{}", std::process::id())
}

/// Python that starts a grandchild sleeping forever with `marker` among its arguments.
fn spawn_sleeper(marker: &str) -> String {
    format!(
        "import subprocess, sys\n\
         subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', '{marker}'])"
    )
}

#[test]
fn a_numpy_script_improves_the_construction_through_milo_optimize() {
    if !numpy_ready("a_numpy_script_improves_the_construction_through_milo_optimize") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let start = dir.path().join("start.json");
    write_values(&start, &spiked_start()).unwrap();
    // Clipping at the median flattens the spike; written as .npy bytes through an open file.
    let script = "import json, sys, numpy as np\n\
                  v = np.array(json.load(open(sys.argv[1]))['values'])\n\
                  assert len(v) == int(sys.argv[4]) and int(sys.argv[3]) >= 0\n\
                  with open(sys.argv[2], 'wb') as f:\n    np.save(f, np.clip(v, 0, np.median(v)))";
    let program = dir.path().join("p.toml");
    std::fs::write(&program, program_text(script, "wall_seconds = 30")).unwrap();
    let out = dir.path().join("best.json");
    let run = common::milo(&[
        "optimize",
        PROBLEM,
        "--start",
        start.to_str().unwrap(),
        "--program",
        program.to_str().unwrap(),
        "--seed",
        "7",
        "--budget",
        "60",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.json();
    assert_eq!(report["improved"], true, "{report}");
    assert_eq!(report["notes"].as_array().unwrap().len(), 0, "{report}");
    let best = read_values(&out).unwrap();
    let mut sorted = spiked_start();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[24] + sorted[25]) / 2.0;
    let expected: Vec<f64> = spiked_start().iter().map(|x| x.min(median)).collect();
    assert_eq!(best, expected);
    let problem = by_slug(PROBLEM).unwrap();
    assert!(problem.score_exact(&best) < problem.score_exact(&spiked_start()));
}

#[test]
fn a_hanging_script_is_killed_at_its_wall_limit_with_its_grandchild() {
    if !numpy_ready("a_hanging_script_is_killed_at_its_wall_limit_with_its_grandchild") {
        return;
    }
    let mark = marker("hang");
    let dir = tempfile::tempdir().unwrap();
    let start = dir.path().join("start.json");
    write_values(&start, &spiked_start()).unwrap();
    let script = format!("{}\nimport time\ntime.sleep(1000)", spawn_sleeper(&mark));
    let program = dir.path().join("p.toml");
    std::fs::write(&program, program_text(&script, "wall_seconds = 1.5")).unwrap();
    let began = Instant::now();
    let run = common::milo(&[
        "optimize",
        PROBLEM,
        "--start",
        start.to_str().unwrap(),
        "--program",
        program.to_str().unwrap(),
        "--budget",
        "60",
        "--out",
        dir.path().join("best.json").to_str().unwrap(),
    ]);
    let seconds = began.elapsed().as_secs_f64();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("note         command steps[0]: killed at the wall limit of 1.5 s"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("no verified improvement"),
        "{}",
        run.stdout
    );
    assert!(seconds < 15.0, "took {seconds} s");
    assert_eq!(processes_with(&mark), Vec::<String>::new());
}

#[test]
fn a_grandchild_left_running_by_a_finished_script_is_killed() {
    if !numpy_ready("a_grandchild_left_running_by_a_finished_script_is_killed") {
        return;
    }
    let mark = marker("orphan");
    let script = format!(
        "{}\nimport shutil\nshutil.copy(sys.argv[1], sys.argv[2])",
        spawn_sleeper(&mark)
    );
    let (_, outcome) = run(&script, "");
    assert_eq!(outcome.trace.stages[0].note, None);
    assert_eq!(processes_with(&mark), Vec::<String>::new());
}

#[test]
fn a_crashing_script_is_refused_with_the_tail_of_its_stderr() {
    if !numpy_ready("a_crashing_script_is_refused_with_the_tail_of_its_stderr") {
        return;
    }
    let (_, outcome) = run(
        "import sys\nraise RuntimeError('the optimizer diverged')",
        "",
    );
    let note = refused(&outcome);
    assert!(note.contains("exited with status 1"), "{note}");
    assert!(
        note.contains("RuntimeError: the optimizer diverged"),
        "{note}"
    );
}

#[test]
fn garbage_and_missing_output_are_refused() {
    if !numpy_ready("garbage_and_missing_output_are_refused") {
        return;
    }
    let (_, outcome) = run(
        "import sys\nopen(sys.argv[2], 'w').write('{\"values\": [1, 2,')",
        "",
    );
    let note = refused(&outcome);
    assert!(note.starts_with("unusable output"), "{note}");
    let (_, outcome) = run(
        "import sys\nopen(sys.argv[2], 'w').write('hello world')",
        "",
    );
    assert!(refused(&outcome).starts_with("unusable output"));
    let (_, outcome) = run("print('did nothing')", "");
    let note = refused(&outcome);
    assert!(note.contains("wrote no output file"), "{note}");
}

#[test]
fn invalid_constructions_are_refused_naming_the_rule() {
    if !numpy_ready("invalid_constructions_are_refused_naming_the_rule") {
        return;
    }
    // A negative value: read fine, rejected by the problem's rules.
    let negative = "import json, sys\n\
                    v = json.load(open(sys.argv[1]))['values']\n\
                    v[3] = -0.5\n\
                    json.dump({'values': v}, open(sys.argv[2], 'w'))";
    let note = refused(&run(negative, "").1);
    assert!(note.starts_with("output rejected"), "{note}");
    assert!(note.contains("index 3") && note.contains("-0.5"), "{note}");
    // NaN in a .npy file: refused by the reader.
    let nan = "import sys, numpy as np\n\
               v = np.ones(int(sys.argv[4])); v[5] = np.nan\n\
               with open(sys.argv[2], 'wb') as f:\n    np.save(f, v)";
    let note = refused(&run(nan, "").1);
    assert!(note.contains("index 5") && note.contains("NaN"), "{note}");
}

#[test]
fn a_script_past_its_memory_limit_is_stopped() {
    if !numpy_ready("a_script_past_its_memory_limit_is_stopped") {
        return;
    }
    let began = Instant::now();
    let (_, outcome) = run(
        "import numpy as np\nx = np.ones(10**9)\nprint(x.sum())",
        "memory_mb = 600",
    );
    let note = refused(&outcome);
    assert!(note.contains("MemoryError"), "{note}");
    assert!(began.elapsed() < Duration::from_secs(30));
}

/// A program of one `command` step running `sh -c SCRIPT` (`{output}` and `{input}` filled in).
fn shell_program(script: &str, wall_seconds: u32) -> String {
    format!(
        "name = \"shell-command\"\n\n[[steps]]\nkind = \"command\"\n\
         argv = [\"sh\", \"-c\", {script:?}]\nwall_seconds = {wall_seconds}\n"
    )
}

#[test]
fn sigkill_of_milo_leaves_no_process_of_a_setsid_child() {
    let mark = marker("sigkill");
    let dir = tempfile::tempdir().unwrap();
    let start = dir.path().join("start.json");
    write_values(&start, &spiked_start()).unwrap();
    // One grandchild leaves the group and the session (`setsid`), one stays in the group.
    let script = format!(
        "setsid sh -c 'sleep 1000; : {mark}-setsid' & sh -c 'sleep 1000; : {mark}-group' & sleep 1000"
    );
    let program = dir.path().join("p.toml");
    std::fs::write(&program, shell_program(&script, 600)).unwrap();
    let mut milo = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args(["optimize", PROBLEM, "--start"])
        .arg(&start)
        .arg("--program")
        .arg(&program)
        .args(["--budget", "600", "--out"])
        .arg(dir.path().join("best.json"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let running = |what: &str| {
        let needle = format!("{mark}-{what}");
        processes_with(&needle)
            .iter()
            .any(|p| p.contains(&format!(": {needle}")) && !p.contains("setsid sh"))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(running("setsid") && running("group")) {
        assert!(Instant::now() < deadline, "the grandchildren never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    milo.kill().unwrap();
    milo.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = processes_with(&mark);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        left = processes_with(&mark);
    }
    // Stop what survived, with its process group (its unmarked `sleep`), before failing, so a
    // failure leaves nothing running.
    for process in &left {
        let pid = process.split(':').next().unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if let Some(group) = stat
            .rsplit_once(')')
            .and_then(|(_, f)| f.split_whitespace().nth(2))
        {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
        }
    }
    assert_eq!(left, Vec::<String>::new(), "outlived a SIGKILL of milo");
}

#[test]
fn an_output_that_is_a_fifo_or_a_link_is_refused_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let start = dir.path().join("start.json");
    write_values(&start, &spiked_start()).unwrap();
    for (i, (script, kind)) in [
        ("mkfifo {output}", "a FIFO"),
        ("ln -s /dev/zero {output}", "a symbolic link"),
    ]
    .into_iter()
    .enumerate()
    {
        let program = dir.path().join("p.toml");
        std::fs::write(&program, shell_program(script, 60)).unwrap();
        let began = Instant::now();
        let run = common::milo_within(
            &[
                "optimize",
                PROBLEM,
                "--start",
                start.to_str().unwrap(),
                "--program",
                program.to_str().unwrap(),
                "--budget",
                "5",
                "--out",
                dir.path().join(format!("best-{i}.json")).to_str().unwrap(),
            ],
            &[],
            Duration::from_secs(60),
        );
        let seconds = began.elapsed().as_secs_f64();
        let run =
            run.unwrap_or_else(|| panic!("{script}: milo still running after {seconds:.0} s"));
        assert_eq!(run.code, 0, "{script}: {}", run.stderr);
        assert!(
            seconds < 20.0,
            "{script}: took {seconds:.1} s on a 5 s budget"
        );
        let notes: Vec<&str> = run
            .stdout
            .lines()
            .filter(|l| l.starts_with("note"))
            .collect();
        assert_eq!(notes.len(), 1, "{}", run.stdout);
        assert!(
            notes[0].contains("unusable output")
                && notes[0].contains("must be a regular file")
                && notes[0].contains(kind),
            "{script}: {}",
            notes[0]
        );
    }
}
