//! Constructions in and out of numpy: `.npy`, text (`np.savetxt`) and the arena API's
//! `{"data": {"values": [...]}}` shape, read by `milo verify` and `milo convert` and written by
//! `milo optimize --out` and `milo convert`, compared bit for bit against what numpy wrote or
//! reads (tests that need numpy print a SKIP note without it); standard input as `-`; bad `.npy`
//! files end in exit 6 on one line.

mod common;
use common::{milo, root, Run};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FIRST: &str = "first-autocorrelation-inequality";
const THIRD: &str = "third-autocorrelation-inequality";

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

/// Runs a Python script with arguments; its standard output (the script must succeed).
fn python(script: &str, args: &[&Path]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Python that writes, from a fixed seed, awkward float64 values (non-negative, 600 orders of
/// magnitude, subnormals, 1/3, 0.1) with numpy to `sys.argv[1]` in the way `sys.argv[2]` names
/// (`npy`, `npy-f32`, `npy-i64`, `savetxt`, `savetxt-row`, `data-json`), and prints the bits of the values
/// a reader must get, one hex word per line.
const WRITE_WITH_NUMPY: &str = r#"
import json, sys
import numpy as np
rng = np.random.default_rng(20261203)
a = rng.random(500) * 10.0 ** rng.integers(-300, 300, 500)
a = np.concatenate([a, [5e-324, 2.2250738585072014e-308, 1 / 3, 0.1, 0.0, 1e300]])
path, how = sys.argv[1], sys.argv[2]
if how == "npy":
    np.save(path, a)
elif how == "npy-f32":
    a = (rng.random(500) * 10.0 ** rng.integers(-44, 38, 500)).astype(np.float32)
    np.save(path, a)
    a = a.astype(np.float64)
elif how == "npy-i64":
    a = rng.integers(0, 2**53, 500, dtype=np.int64)
    np.save(path, a)
    a = a.astype(np.float64)
elif how == "savetxt":
    np.savetxt(path, a)
elif how == "savetxt-row":
    np.savetxt(path, a[None], delimiter=",")
elif how == "data-json":
    with open(path, "w") as f:
        json.dump({"id": 1, "agentName": "x", "data": {"values": a.tolist()}}, f)
print("\n".join("%016x" % b for b in a.view(np.uint64)))
"#;

/// Python that prints the dtype, the shape and the bits of `np.load(sys.argv[1])` (or
/// `np.loadtxt` for a `.txt`), one hex word per line after the first.
const LOAD_WITH_NUMPY: &str = r#"
import sys
import numpy as np
path = sys.argv[1]
a = np.loadtxt(path, ndmin=1) if path.endswith(".txt") else np.load(path)
print(a.dtype, a.shape)
print("\n".join("%016x" % b for b in a.view(np.uint64)))
"#;

fn hex_bits(lines: &str) -> Vec<u64> {
    lines
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect()
}

/// The values of a JSON construction milo wrote, as bits (serde_json reads floats exactly).
fn json_bits(path: &Path) -> Vec<u64> {
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap().to_bits())
        .collect()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `milo convert IN OUT`, which must succeed.
fn convert(input: &Path, output: &Path) {
    let run = milo(&["convert", s(input), s(output)]);
    assert_eq!(run.code, 0, "convert {input:?}: {}", run.stderr);
}

/// Runs milo with `stdin` as standard input.
fn milo_with_stdin(args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("milo runs");
    // A command that fails before reading (a usage error) closes its standard input early.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A project construction of the first problem (600 values).
fn first_start() -> PathBuf {
    root().join("constructions/first-autocorrelation-inequality/capped-arcsine-600.json")
}

#[test]
fn what_numpy_writes_reads_bit_for_bit() {
    if !numpy_ready("what_numpy_writes_reads_bit_for_bit") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (how, name) in [
        ("npy", "a.npy"),
        ("npy-f32", "a32.npy"),
        ("npy-i64", "i64.npy"),
        ("savetxt", "a.txt"),
        ("savetxt-row", "row.csv"),
        ("data-json", "entry.json"),
    ] {
        let input = dir.path().join(name);
        let want = hex_bits(&python(WRITE_WITH_NUMPY, &[&input, Path::new(how)]));
        assert!(want.len() > 400, "{how}: {} values", want.len());
        let output = dir.path().join(format!("{name}.out.json"));
        convert(&input, &output);
        assert_eq!(json_bits(&output), want, "{how}");
    }
}

#[test]
fn what_milo_writes_loads_in_numpy_bit_for_bit() {
    if !numpy_ready("what_milo_writes_loads_in_numpy_bit_for_bit") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.json");
    let want = hex_bits(&python(
        WRITE_WITH_NUMPY,
        &[&source, Path::new("data-json")],
    ));
    for name in ["out.npy", "out.txt"] {
        let output = dir.path().join(name);
        convert(&source, &output);
        let loaded = python(LOAD_WITH_NUMPY, &[&output]);
        let (header, bits) = loaded.split_once('\n').unwrap();
        assert_eq!(header, format!("float64 ({},)", want.len()), "{name}");
        assert_eq!(hex_bits(bits), want, "{name}");
    }
}

#[test]
fn optimize_out_npy_holds_the_same_bits_as_out_json() {
    if !numpy_ready("optimize_out_npy_holds_the_same_bits_as_out_json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let start =
        root().join("constructions/third-autocorrelation-inequality/capped-arcsine-400.json");
    let mut outputs = Vec::new();
    for name in ["best.npy", "best.json"] {
        let out = dir.path().join(name);
        let run = milo(&[
            "optimize",
            THIRD,
            "--start",
            s(&start),
            "--evaluations",
            "30",
            "--seed",
            "5",
            "--out",
            s(&out),
            "--json",
        ]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        outputs.push(out);
    }
    let loaded = python(LOAD_WITH_NUMPY, &[&outputs[0]]);
    let (header, bits) = loaded.split_once('\n').unwrap();
    let json = json_bits(&outputs[1]);
    assert_eq!(header, format!("float64 ({},)", json.len()));
    assert_eq!(hex_bits(bits), json);
    // milo reads its own .npy back to the same exact score it reported for the JSON.
    let a = milo(&["verify", THIRD, s(&outputs[0]), "--json"]).json();
    let b = milo(&["verify", THIRD, s(&outputs[1]), "--json"]).json();
    assert_eq!(a["score_exact"], b["score_exact"]);
}

#[test]
fn every_format_verifies_to_the_same_exact_score() {
    let dir = tempfile::tempdir().unwrap();
    let reference = milo(&["verify", FIRST, s(&first_start()), "--json"]).json();
    for name in ["c.npy", "c.txt", "c.csv", "c.npy.gz", "c.json.gz"] {
        let path = dir.path().join(name);
        convert(&first_start(), &path);
        let report = milo(&["verify", FIRST, s(&path), "--json"]).json();
        assert_eq!(report["score_exact"], reference["score_exact"], "{name}");
        assert_eq!(report["n"], reference["n"], "{name}");
    }
    // The arena API's entry shape, written by hand.
    let values = std::fs::read_to_string(first_start()).unwrap();
    let entry = dir.path().join("entry.json");
    std::fs::write(
        &entry,
        format!(r#"{{"id": 3, "score": 2.05, "data": {values}}}"#),
    )
    .unwrap();
    let report = milo(&["verify", FIRST, s(&entry), "--json"]).json();
    assert_eq!(report["score_exact"], reference["score_exact"]);
}

#[test]
fn standard_input_is_read_as_dash_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let reference = milo(&["verify", FIRST, s(&first_start()), "--json"]).json();
    for name in ["c.npy", "c.txt", "c.json", "c.npy.gz"] {
        let path = dir.path().join(name);
        convert(&first_start(), &path);
        let bytes = std::fs::read(&path).unwrap();
        let run = milo_with_stdin(&["verify", FIRST, "-", "--json"], &bytes);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        assert_eq!(
            run.json()["score_exact"],
            reference["score_exact"],
            "{name}"
        );
        let back = dir.path().join(format!("{name}.back.json"));
        let run = milo_with_stdin(&["convert", "-", s(&back)], &bytes);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        assert_eq!(json_bits(&back), json_bits(&first_start()), "{name}");
    }
    let run = milo_with_stdin(&["verify", FIRST, "-"], b"");
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("no values"), "{}", run.stderr);
    let run = milo_with_stdin(&["verify", FIRST, "-", "--against", "-"], b"1 2");
    assert_eq!(run.code, 2, "{}", run.stderr);
}

/// A version 1.0 `.npy` with this header dictionary and data.
fn npy_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let mut text = header.to_string();
    while !(10 + text.len() + 1).is_multiple_of(64) {
        text.push(' ');
    }
    text.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((text.len() as u16).to_le_bytes());
    out.extend(text.as_bytes());
    out.extend(data);
    out
}

/// `milo verify` on these bytes fails with exit 6 on one stderr line holding every needle.
fn expect_bad_npy(name: &str, bytes: &[u8], needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let never_written = dir.path().join("never-written.json");
    for args in [
        vec!["verify", FIRST, s(&path)],
        vec!["convert", s(&path), s(&never_written)],
    ] {
        let run = milo(&args);
        assert_eq!(run.code, 6, "{name} {args:?}: {}", run.stderr);
        let line = run.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{name}: {line}");
        assert!(!line.contains("panicked"), "{line}");
        for needle in needles {
            assert!(line.contains(needle), "{name}: '{line}' lacks '{needle}'");
        }
    }
    assert!(!never_written.exists());
}

#[test]
fn bad_npy_files_are_input_errors_naming_the_rule_and_value() {
    let data: Vec<u8> = (0..6)
        .flat_map(|i| (0.25 * f64::from(i + 1)).to_le_bytes())
        .collect();
    let two_d = npy_bytes(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
        &data,
    );
    expect_bad_npy("two-d.npy", &two_d, &["1-D", "(2, 3)"]);
    let complex = npy_bytes(
        "{'descr': '<c16', 'fortran_order': False, 'shape': (3,), }",
        &data,
    );
    expect_bad_npy("complex.npy", &complex, &["dtype must be float64", "<c16"]);
    let strings = npy_bytes(
        "{'descr': '<U4', 'fortran_order': False, 'shape': (3,), }",
        &data,
    );
    expect_bad_npy("strings.npy", &strings, &["dtype", "<U4"]);
    let whole = npy_bytes(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }",
        &data,
    );
    expect_bad_npy(
        "truncated.npy",
        &whole[..whole.len() - 5],
        &["truncated", "needs 48 data bytes", "has 43"],
    );
    expect_bad_npy("header-cut.npy", &whole[..30], &["truncated", "header"]);
    expect_bad_npy("magic-cut.npy", &whole[..3], &["magic"]);
    // Content decides: a .npy by its magic bytes, whatever its name.
    expect_bad_npy("looks-like.json", &two_d, &["1-D"]);
}

#[test]
fn bad_npy_files_written_by_numpy_are_refused() {
    if !numpy_ready("bad_npy_files_written_by_numpy_are_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import sys
import numpy as np
d = sys.argv[1]
np.save(d + "/m.npy", np.ones((4, 5)))
np.save(d + "/b.npy", np.ones(4, dtype=bool))
np.save(d + "/h.npy", np.ones(4, dtype=np.float16))
np.save(d + "/o.npy", np.array([1.0, "x"], dtype=object), allow_pickle=True)
np.save(d + "/s.npy", np.float64(1.5))
"#;
    python(script, &[dir.path()]);
    for (name, needle) in [
        ("m.npy", "(4, 5)"),
        ("b.npy", "|b1"),
        ("h.npy", "<f2"),
        ("o.npy", "dtype"),
        ("s.npy", "got shape ()"),
    ] {
        let bytes = std::fs::read(dir.path().join(name)).unwrap();
        expect_bad_npy(name, &bytes, &[needle]);
    }
}

#[test]
fn convert_refuses_an_existing_out_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.npy");
    convert(&first_start(), &out);
    let before = std::fs::read(&out).unwrap();
    let run = milo(&["convert", s(&first_start()), s(&out)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("exists"), "{}", run.stderr);
    let tiny = dir.path().join("tiny.txt");
    std::fs::write(&tiny, "1\n2\n").unwrap();
    let run = milo(&["convert", s(&tiny), s(&out), "--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_ne!(std::fs::read(&out).unwrap(), before);
    let back = dir.path().join("back.json");
    convert(&out, &back);
    assert_eq!(
        std::fs::read_to_string(back).unwrap(),
        r#"{"values":[1,2]}"#
    );
}

#[test]
fn a_text_table_and_a_bad_token_are_input_errors_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, needle) in [
        ("1 2\n3 4\n", "line 1 holds 2 values"),
        ("0.5\n0.25\nabc\n", "line 3"),
    ] {
        let path = dir.path().join("c.txt");
        std::fs::write(&path, text).unwrap();
        let run = milo(&["verify", FIRST, s(&path)]);
        assert_eq!(run.code, 6, "{text:?}: {}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1);
        assert!(run.stderr.contains(needle), "{}", run.stderr);
    }
    let path = dir.path().join("c.txt");
    std::fs::write(&path, "0.5\nnan\n").unwrap();
    let run = milo(&["verify", FIRST, s(&path)]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("index 1"), "{}", run.stderr);
}

/// The file type of `path` itself (a link is not followed), for "left as it was" checks.
fn file_type(path: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(path).unwrap().file_type()
}

#[test]
fn convert_force_replaces_only_regular_files() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    // A character device like /dev/null (1, 3), made here: needs root, as the harm did.
    let device = dir.path().join("out.device");
    let have_device = Command::new("mknod")
        .args([s(&device), "c", "1", "3"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    if !have_device {
        eprintln!("NOTE convert_force_replaces_only_regular_files: not root, no device node made");
    }
    let link = dir.path().join("out.link");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let subdir = dir.path().join("out.dir");
    std::fs::create_dir(&subdir).unwrap();
    let mut targets = vec![
        (fifo.clone(), "a FIFO"),
        (link.clone(), "a symbolic link"),
        (subdir.clone(), "a directory"),
    ];
    if have_device {
        targets.push((device.clone(), "a character device"));
    }
    for (target, kind) in &targets {
        let run = milo(&["convert", s(&first_start()), s(target), "--force"]);
        assert_eq!(run.code, 2, "{target:?}: {}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        assert!(
            run.stderr.contains("replaces only regular files")
                && run.stderr.contains(kind)
                && run.stderr.contains(s(target)),
            "{}",
            run.stderr
        );
    }
    assert!(file_type(&fifo).is_fifo());
    assert!(file_type(&link).is_symlink());
    assert!(file_type(&subdir).is_dir());
    if have_device {
        assert!(file_type(&device).is_char_device());
    }
    // Nothing else appeared beside them (no temporary file left).
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = targets
        .iter()
        .map(|(t, _)| t.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    expected.sort();
    assert_eq!(names, expected);
}
