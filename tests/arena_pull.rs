//! `milo arena pull` against a loopback HTTP server started by each test (no outside network):
//! good pulls, flagged entries, and every kind of failure leaving nothing behind.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

const FIRST: &str = "first-autocorrelation-inequality";
/// How long a server thread waits on a silent client before giving up on it.
const SERVER_PATIENCE: Duration = Duration::from_secs(30);

/// What the server answers to a request target: a status and body, or `None` to never answer.
type Handler = Box<dyn Fn(&str) -> Option<(u16, String)> + Send>;

/// A loopback server answering at most `connections` connections, one request each.
struct Server {
    base: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(connections: usize, handler: Handler) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(connections) {
                let Ok(stream) = stream else { continue };
                answer(stream, &handler, &seen);
            }
        });
        Server { base, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn answer(mut stream: TcpStream, handler: &Handler, seen: &Mutex<Vec<String>>) {
    stream.set_read_timeout(Some(SERVER_PATIENCE)).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // Skip the headers (a GET has no body).
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let target = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    seen.lock().unwrap().push(target.clone());
    match handler(&target) {
        Some((status, body)) => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                if status == 200 { "OK" } else { "Error" },
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
        None => {
            // Never answer: wait until the client gives up and hangs up.
            let mut buf = [0u8; 256];
            while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
        }
    }
}

/// The problems list as the arena serves it (the second problem is deliberately absent).
fn problems_body() -> String {
    json!([
        {"id": 1, "slug": "erdos-min-overlap", "title": "Erdős minimum overlap",
         "scoring": "minimize", "minImprovement": 1e-7, "evaluationMode": "exact"},
        {"id": 2, "slug": FIRST, "title": "First autocorrelation inequality",
         "scoring": "minimize", "minImprovement": 1e-8, "evaluationMode": "exact"},
        {"id": 4, "slug": "third-autocorrelation-inequality", "title": "Third autocorrelation inequality",
         "scoring": "minimize", "minImprovement": 1e-5, "evaluationMode": "exact"}
    ])
    .to_string()
}

/// `n` positive values from a fixed linear congruential sequence.
fn generated(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            0.05 + (state >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}

/// The first problem's score by its definition, direct convolution in float64:
/// dx = 0.5/n, max(conv(f, f)·dx) / (Σf·dx)².
fn first_score(f: &[f64]) -> f64 {
    let n = f.len();
    let dx = 0.5 / n as f64;
    let mut peak = f64::MIN;
    for k in 0..2 * n - 1 {
        let lo = k.saturating_sub(n - 1);
        let hi = k.min(n - 1);
        let c: f64 = (lo..=hi).map(|i| f[i] * f[k - i]).sum();
        peak = peak.max(c * dx);
    }
    let integral: f64 = f.iter().sum::<f64>() * dx;
    peak / (integral * integral)
}

/// One served leaderboard entry.
struct Entry {
    id: u64,
    agent: &'static str,
    score: f64,
    values: Vec<f64>,
}

fn entry(id: u64, agent: &'static str, n: usize) -> Entry {
    let values = generated(n, id);
    Entry {
        id,
        agent,
        score: first_score(&values),
        values,
    }
}

fn solutions_body(entries: &[Entry]) -> String {
    Value::Array(
        entries
            .iter()
            .map(|e| {
                json!({
                    "id": e.id,
                    "agentName": e.agent,
                    "score": e.score,
                    "createdAt": format!("2026-09-0{}T12:00:00.000Z", e.id % 9 + 1),
                    "data": {"values": e.values},
                })
            })
            .collect(),
    )
    .to_string()
}

/// A server answering the problems list and one solutions body for the first problem.
fn arena_server(solutions: String) -> Server {
    let problems = problems_body();
    Server::start(
        2,
        Box::new(move |target| {
            if target == "/api/problems" {
                Some((200, problems.clone()))
            } else if target.starts_with("/api/solutions/best?problem_id=2&") {
                Some((200, solutions.clone()))
            } else {
                Some((404, format!("no route {target}")))
            }
        }),
    )
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `milo` in `dir` with no proxy settings, so loopback requests go straight to the server.
fn milo_in(dir: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_milo"));
    command.args(args).current_dir(dir);
    for var in [
        "ALL_PROXY",
        "all_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
    ] {
        command.env_remove(var);
    }
    let out = command.output().expect("milo runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_good_pull_writes_verifiable_constructions_with_provenance() {
    let entries = vec![
        entry(11, "Together AI", 300),
        entry(12, "TTT-Discover", 200),
        entry(13, "alpha evolve", 400),
    ];
    let server = arena_server(solutions_body(&entries));
    let tmp = tempfile::tempdir().unwrap();
    let before = SystemTime::now() - Duration::from_secs(1);
    let run = milo_in(
        tmp.path(),
        &[
            "arena",
            "pull",
            FIRST,
            "--limit",
            "3",
            "--base-url",
            &server.base,
            "--into",
            "snap",
            "--json",
        ],
    );
    let after = SystemTime::now() + Duration::from_secs(1);
    assert_eq!(run.code, 0, "stdout {}\nstderr {}", run.stdout, run.stderr);
    assert_eq!(
        server.requests(),
        vec![
            "/api/problems".to_string(),
            "/api/solutions/best?problem_id=2&limit=3".to_string()
        ]
    );
    let printed: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(printed["directory"], "snap");
    assert_eq!(
        printed["counts"],
        json!({"entries": 3, "invalid": 0, "score_mismatch": 0})
    );

    // Nothing but the complete directory is left in the parent.
    assert_eq!(names_in(tmp.path()), vec!["snap"]);
    let dir = tmp.path().join("snap");
    let stems = [
        "rank-01-together-ai",
        "rank-02-ttt-discover",
        "rank-03-alpha-evolve",
    ];
    let mut expected_files: Vec<String> = stems
        .iter()
        .flat_map(|s| [format!("{s}.json"), format!("{s}.provenance.json")])
        .chain(["PULL.json".to_string()])
        .collect();
    expected_files.sort();
    assert_eq!(names_in(&dir), expected_files);

    let summary = read_json(&dir.join("PULL.json"));
    assert_eq!(summary["problem"]["slug"], FIRST);
    assert_eq!(summary["problem"]["id"], 2);
    assert_eq!(summary["problem"]["minImprovement"], 1e-8);
    assert_eq!(summary["base_url"], server.base.as_str());
    assert_eq!(summary["limit"], 3);
    let listed = summary["entries"].as_array().unwrap();
    assert_eq!(listed.len(), 3);

    for (rank, (stem, served)) in stems.iter().zip(&entries).enumerate() {
        let rank = rank + 1;
        let file = dir.join(format!("{stem}.json"));
        let provenance = read_json(&dir.join(format!("{stem}.provenance.json")));
        // The saved values are the served ones, bit for bit.
        let saved = milo::construction::read_values(&file).unwrap();
        assert_eq!(bits(&saved), bits(&served.values), "{stem}");
        // milo verify accepts the file and agrees with the provenance's exact score.
        let verified = milo_in(
            tmp.path(),
            &["verify", FIRST, file.to_str().unwrap(), "--json"],
        );
        assert_eq!(verified.code, 0, "{}", verified.stderr);
        let verified: Value = serde_json::from_str(verified.stdout.trim()).unwrap();
        assert_eq!(provenance["score_exact"], verified["score_exact"], "{stem}");
        assert_eq!(provenance["score_f64"], verified["score_f64"], "{stem}");
        // Provenance of the entry.
        let sha = Sha256::digest(std::fs::read(&file).unwrap());
        let sha: String = sha.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(provenance["sha256"], sha.as_str());
        assert_eq!(provenance["rank"], rank);
        assert_eq!(provenance["file"], format!("{stem}.json"));
        assert_eq!(provenance["n"], served.values.len());
        assert_eq!(provenance["problem"], FIRST);
        assert_eq!(provenance["problem_id"], 2);
        assert_eq!(provenance["base_url"], server.base.as_str());
        assert_eq!(provenance["arena_solution_id"], served.id);
        assert_eq!(provenance["agent"], served.agent);
        assert_eq!(provenance["arena_score"].as_f64().unwrap(), served.score);
        assert_eq!(
            provenance["created_at"],
            format!("2026-09-0{}T12:00:00.000Z", served.id % 9 + 1)
        );
        assert_eq!(provenance["valid"], true);
        assert_eq!(provenance["flags"], json!([]));
        assert!(provenance["relative_difference"].as_f64().unwrap() <= 1e-12);
        let pulled = humantime::parse_rfc3339(provenance["pulled_at"].as_str().unwrap()).unwrap();
        assert!(
            before <= pulled && pulled <= after,
            "{:?}",
            provenance["pulled_at"]
        );
        // The summary lists the entry with the same record.
        let listed = &listed[rank - 1];
        assert_eq!(listed["provenance_file"], format!("{stem}.provenance.json"));
        assert_eq!(listed["sha256"], provenance["sha256"]);
        assert_eq!(listed["score_exact"], provenance["score_exact"]);
    }
}

#[test]
fn a_disagreeing_arena_score_is_flagged_and_the_default_directory_is_used() {
    let mut entries = vec![entry(21, "close", 250), entry(22, "off", 260)];
    // Within the tolerance (1e-12 relative): not flagged. Beyond it: flagged.
    entries[0].score *= 1.0 + 1e-14;
    entries[1].score *= 1.0 + 1e-9;
    let server = arena_server(solutions_body(&entries));
    let tmp = tempfile::tempdir().unwrap();
    let run = milo_in(
        tmp.path(),
        &["arena", "pull", FIRST, "--base-url", &server.base],
    );
    assert_eq!(run.code, 5, "stdout {}\nstderr {}", run.stdout, run.stderr);
    assert!(run.stdout.contains("SCORE-MISMATCH"), "{}", run.stdout);
    assert!(run.stderr.contains("rank 2"), "{}", run.stderr);
    assert!(
        server.requests()[1].ends_with("limit=10"),
        "{:?}",
        server.requests()
    );

    let dir = tmp.path().join("arena").join(FIRST);
    let close = read_json(&dir.join("rank-01-close.provenance.json"));
    assert_eq!(close["flags"], json!([]));
    let off = read_json(&dir.join("rank-02-off.provenance.json"));
    assert_eq!(off["flags"], json!(["score-mismatch"]));
    assert_eq!(off["valid"], true);
    let relative = off["relative_difference"].as_f64().unwrap();
    assert!((0.9e-9..1.1e-9).contains(&relative), "{relative}");
    let summary = read_json(&dir.join("PULL.json"));
    assert_eq!(summary["counts"]["score_mismatch"], 1);
}

#[test]
fn an_invalid_entry_is_saved_and_flagged() {
    let mut entries = vec![entry(31, "fine", 200), entry(32, "negative", 200)];
    entries[1].values[7] = -0.25;
    let server = arena_server(solutions_body(&entries));
    let tmp = tempfile::tempdir().unwrap();
    let run = milo_in(
        tmp.path(),
        &[
            "arena",
            "pull",
            FIRST,
            "--base-url",
            &server.base,
            "--into",
            "out",
        ],
    );
    assert_eq!(run.code, 3, "stdout {}\nstderr {}", run.stdout, run.stderr);
    assert!(run.stdout.contains("INVALID"), "{}", run.stdout);
    assert!(
        run.stderr.contains("saved for inspection"),
        "{}",
        run.stderr
    );

    let dir = tmp.path().join("out");
    let bad = read_json(&dir.join("rank-02-negative.provenance.json"));
    assert_eq!(bad["valid"], false);
    assert_eq!(bad["flags"], json!(["invalid"]));
    assert_eq!(bad["score_exact"], Value::Null);
    assert!(
        bad["violation"].as_str().unwrap().contains("index 7"),
        "{bad}"
    );
    let file = dir.join("rank-02-negative.json");
    let saved = milo::construction::read_values(&file).unwrap();
    assert_eq!(bits(&saved), bits(&entries[1].values));
    let verified = milo_in(tmp.path(), &["verify", FIRST, file.to_str().unwrap()]);
    assert_eq!(verified.code, 3, "milo verify agrees it is invalid");
    let good = read_json(&dir.join("rank-01-fine.provenance.json"));
    assert_eq!(good["flags"], json!([]));
    assert_eq!(read_json(&dir.join("PULL.json"))["counts"]["invalid"], 1);
}

#[test]
fn an_existing_directory_is_replaced_only_with_force_and_only_when_it_is_a_pull() {
    let entries = vec![entry(41, "only", 150)];
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("snap");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("mine.txt"), "keep me").unwrap();
    let pull = |server: &Server, into: &str, force: bool| {
        let mut args = vec![
            "arena",
            "pull",
            FIRST,
            "--base-url",
            &server.base,
            "--into",
            into,
        ];
        if force {
            args.push("--force");
        }
        milo_in(tmp.path(), &args)
    };

    let server = arena_server(solutions_body(&entries));
    let refused = pull(&server, "snap", false);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    // Not an earlier pull: --force does not delete someone's files.
    let forced = pull(&server, "snap", true);
    assert_eq!(forced.code, 2, "{}", forced.stderr);
    assert!(
        forced.stderr.contains("not an earlier pull"),
        "{}",
        forced.stderr
    );
    assert!(server.requests().is_empty(), "refused before any request");
    assert_eq!(names_in(&target), vec!["mine.txt"]);

    let first = pull(&server, "again", false);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let server = arena_server(solutions_body(&entries));
    let replaced = pull(&server, "again", true);
    assert_eq!(replaced.code, 0, "{}", replaced.stderr);
    assert_eq!(
        names_in(&tmp.path().join("again")),
        vec![
            "PULL.json",
            "rank-01-only.json",
            "rank-01-only.provenance.json"
        ]
    );
    assert_eq!(
        names_in(tmp.path()),
        vec!["again", "snap"],
        "no staging left behind"
    );
}

/// `milo arena pull FIRST --into INTO` (with `--force` if asked) in `dir` against `server`.
fn pull_into(dir: &Path, server: &Server, into: &str, force: bool) -> Run {
    let mut args = vec![
        "arena",
        "pull",
        FIRST,
        "--base-url",
        &server.base,
        "--into",
        into,
    ];
    if force {
        args.push("--force");
    }
    milo_in(dir, &args)
}

/// Every file under `dir` with its bytes, links not followed (a link's bytes are its target).
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = names_in(dir)
        .into_iter()
        .map(|name| {
            let path = dir.join(&name);
            let bytes = if std::fs::symlink_metadata(&path).unwrap().is_symlink() {
                std::fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                std::fs::read(&path).unwrap()
            };
            (name, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn force_deletes_only_the_files_its_own_pull_lists() {
    let entries = vec![entry(41, "only", 150)];
    let tmp = tempfile::tempdir().unwrap();
    let first = pull_into(
        tmp.path(),
        &arena_server(solutions_body(&entries)),
        "snap",
        false,
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    let target = tmp.path().join("snap");
    std::fs::write(target.join("notes.txt"), "my notes").unwrap();
    let before = snapshot(&target);

    let server = arena_server(solutions_body(&entries));
    let refused = pull_into(tmp.path(), &server, "snap", true);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert_eq!(
        refused.stderr.trim().lines().count(),
        1,
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("\"notes.txt\"") && refused.stderr.contains("does not list"),
        "{}",
        refused.stderr
    );
    assert!(server.requests().is_empty(), "refused before any request");
    assert_eq!(
        snapshot(&target),
        before,
        "the foreign file and the pull survive"
    );

    // Once the foreign file is moved away, the pull is replaced.
    std::fs::rename(target.join("notes.txt"), tmp.path().join("notes.txt")).unwrap();
    let replaced = pull_into(tmp.path(), &server, "snap", true);
    assert_eq!(replaced.code, 0, "{}", replaced.stderr);
    assert_eq!(names_in(tmp.path()), vec!["notes.txt", "snap"]);
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("notes.txt")).unwrap(),
        "my notes"
    );
}

#[test]
fn force_never_deletes_through_a_symbolic_link() {
    let entries = vec![entry(41, "only", 150)];
    let tmp = tempfile::tempdir().unwrap();
    let first = pull_into(
        tmp.path(),
        &arena_server(solutions_body(&entries)),
        "real",
        false,
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    let real = tmp.path().join("real");
    let kept = snapshot(&real);
    std::os::unix::fs::symlink("real", tmp.path().join("link")).unwrap();
    let server = arena_server(solutions_body(&entries));
    // The target itself a link, however it is spelled.
    for into in ["link", "link/", "link/."] {
        let refused = pull_into(tmp.path(), &server, into, true);
        assert_eq!(refused.code, 2, "{into}: {}", refused.stderr);
        assert_eq!(
            refused.stderr.trim().lines().count(),
            1,
            "{}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains("symbolic link"),
            "{into}: {}",
            refused.stderr
        );
        assert_eq!(snapshot(&real), kept, "{into}");
    }

    // Links inside an earlier pull: its PULL.json, or a listed entry, pointing elsewhere.
    let outside = tmp.path().join("outside.json");
    std::fs::write(&outside, "someone's file").unwrap();
    let copy = tmp.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for (name, _) in &kept {
        std::fs::copy(real.join(name), copy.join(name)).unwrap();
    }
    let entry_file = kept
        .iter()
        .map(|(name, _)| name.clone())
        .find(|name| name.starts_with("rank-01") && !name.contains("provenance"))
        .unwrap();
    for (i, linked) in ["PULL.json", entry_file.as_str()].into_iter().enumerate() {
        let dir = tmp.path().join(format!("with-link-{i}"));
        std::fs::create_dir(&dir).unwrap();
        for (name, _) in &kept {
            if name == linked {
                let target = if name == "PULL.json" {
                    copy.join(name)
                } else {
                    outside.clone()
                };
                std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
            } else {
                std::fs::copy(real.join(name), dir.join(name)).unwrap();
            }
        }
        let before = snapshot(&dir);
        let into = dir.file_name().unwrap().to_str().unwrap().to_string();
        let refused = pull_into(tmp.path(), &server, &into, true);
        assert_eq!(refused.code, 2, "{linked}: {}", refused.stderr);
        assert_eq!(
            refused.stderr.trim().lines().count(),
            1,
            "{}",
            refused.stderr
        );
        assert_eq!(snapshot(&dir), before, "{linked}");
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "someone's file");
    assert_eq!(snapshot(&copy), kept);
    assert!(server.requests().is_empty(), "refused before any request");
}

#[test]
fn more_entries_than_asked_are_dropped_and_an_oversized_body_is_refused() {
    let entries = vec![entry(1, "a", 100), entry(2, "b", 100), entry(3, "c", 100)];
    let tmp = tempfile::tempdir().unwrap();
    let server = arena_server(solutions_body(&entries));
    let run = milo_in(
        tmp.path(),
        &[
            "arena",
            "pull",
            FIRST,
            "--base-url",
            &server.base,
            "--into",
            "p",
            "--limit",
            "2",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        read_json(&tmp.path().join("p/PULL.json"))["counts"]["entries"],
        2
    );

    // One entry of the first problem may hold 100,000 values, 3.2 MB: an entry of 5 MB (its
    // values padded with spaces) is refused as soon as it passes its cap, even when the whole
    // answer is within what `--limit 2` allows.
    let padded = format!(
        r#"[{{"id": 1, "agentName": "a", "score": 1.0, "createdAt": "x", "data": {{"values": [1,{}1]}}}}]"#,
        " ".repeat(5_000_000)
    );
    let server = arena_server(padded);
    let refused = expect_failure(
        &server.base,
        &["--limit", "2"],
        FIRST,
        4,
        &[
            "at [0]",
            "an entry is past its size cap of",
            "100000 values",
        ],
    );
    assert!(refused.stderr.len() < 1000);
    // Entries within their cap but past the answer's (those after the limit are read, then
    // dropped): cut off while read, not buffered whole.
    let small = format!(
        r#"{{"id": 1, "agentName": "a", "score": 1.0, "createdAt": "x", "data": {{"values": [1,{}1]}}}}"#,
        " ".repeat(1_000_000)
    );
    let many = format!("[{}]", vec![small; 40].join(","));
    let server = arena_server(many);
    let refused = expect_failure(
        &server.base,
        &["--limit", "1"],
        FIRST,
        4,
        &["the response is past its size cap of", "(--limit 1)"],
    );
    assert!(refused.stderr.len() < 1000);
}

/// A one-connection server writing `head`, then `body` a byte at a time every `gap`.
fn raw_server(head: String, body: &'static [u8], gap: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            if stream.write_all(head.as_bytes()).is_err() {
                continue;
            }
            for byte in body {
                if stream.write_all(&[*byte]).is_err() {
                    break;
                }
                std::thread::sleep(gap);
            }
        }
    });
    base
}

#[test]
fn a_redirect_is_refused_and_a_trickling_server_meets_the_deadline() {
    let redirect = raw_server(
        "HTTP/1.1 302 Found\r\nLocation: http://elsewhere.example/api/problems\r\nContent-Length: 0\r\n\r\n".into(),
        b"",
        Duration::ZERO,
    );
    expect_failure(
        &redirect,
        &[],
        FIRST,
        4,
        &["redirects", "elsewhere.example"],
    );

    // One byte a second keeps every read within --timeout; --deadline ends the request.
    let trickle = raw_server(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n".into(),
        &[b' '; 1000],
        Duration::from_millis(500),
    );
    let started = std::time::Instant::now();
    expect_failure(
        &trickle,
        &["--timeout", "5", "--deadline", "2"],
        FIRST,
        4,
        &["timed out"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// Runs a pull that must fail with `code`, mentioning each of `needles`, leaving nothing behind.
fn expect_failure(base: &str, extra: &[&str], slug: &str, code: i32, needles: &[&str]) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["arena", "pull", slug, "--base-url", base, "--into", "pull"];
    args.extend_from_slice(extra);
    let run = milo_in(tmp.path(), &args);
    assert_eq!(
        run.code, code,
        "stdout {}\nstderr {}",
        run.stdout, run.stderr
    );
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "{needle:?} not in: {}",
            run.stderr
        );
    }
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        names_in(tmp.path()).is_empty(),
        "left behind: {:?}",
        names_in(tmp.path())
    );
    run
}

#[test]
fn an_http_error_status_is_a_remote_error() {
    let problems = problems_body();
    let server = Server::start(
        2,
        Box::new(move |target| {
            if target == "/api/problems" {
                Some((200, problems.clone()))
            } else {
                Some((500, "database unavailable".into()))
            }
        }),
    );
    expect_failure(
        &server.base,
        &[],
        FIRST,
        4,
        &[
            "HTTP 500",
            "database unavailable",
            "/api/solutions/best?problem_id=2",
        ],
    );
}

#[test]
fn malformed_json_names_what_was_expected() {
    let truncated = Server::start(
        1,
        Box::new(|_| Some((200, r#"[{"id": 1, "slug": "#.into()))),
    );
    expect_failure(
        &truncated.base,
        &[],
        FIRST,
        4,
        &[
            "/api/problems",
            "malformed response",
            "expected a JSON list of {id, slug",
        ],
    );
    let mut body: Value = serde_json::from_str(&solutions_body(&[entry(51, "a", 100)])).unwrap();
    body[0]["score"] = json!("1.5");
    let wrong_type = arena_server(body.to_string());
    expect_failure(
        &wrong_type.base,
        &[],
        FIRST,
        4,
        &[
            "malformed response at [0].score",
            "expected f64",
            "agentName, score",
        ],
    );
}

#[test]
fn data_that_is_not_a_construction_is_a_remote_error() {
    let mut body: Value =
        serde_json::from_str(&solutions_body(&[entry(61, "a", 100), entry(62, "b", 100)])).unwrap();
    body[1]["data"] = json!({"vals": [1.0, 2.0]});
    let no_values = arena_server(body.to_string());
    expect_failure(
        &no_values.base,
        &[],
        FIRST,
        4,
        &["rank 2 (arena solution 62", "no \"values\" key"],
    );
    body[1]["data"] = json!({"values": [1.0, "two", 3.0]});
    let text = arena_server(body.to_string());
    expect_failure(
        &text.base,
        &[],
        FIRST,
        4,
        &["rank 2", "found a string", "index 1"],
    );
    body[1]["data"] = json!({"values": []});
    let empty = arena_server(body.to_string());
    expect_failure(&empty.base, &[], FIRST, 4, &["rank 2", "no values"]);
}

#[test]
fn an_unknown_slug_lists_the_servers_problems() {
    let problems = problems_body();
    let server = Server::start(2, Box::new(move |_| Some((200, problems.clone()))));
    let known =
        "erdos-min-overlap, first-autocorrelation-inequality, third-autocorrelation-inequality";
    expect_failure(
        &server.base,
        &[],
        "no-such-problem",
        2,
        &["no-such-problem", known],
    );
    // Known to milo but not served.
    expect_failure(
        &server.base,
        &[],
        "second-autocorrelation-inequality",
        2,
        &[known],
    );
}

#[test]
fn a_server_that_never_answers_times_out() {
    let server = Server::start(1, Box::new(|_| None));
    expect_failure(
        &server.base,
        &["--timeout", "1"],
        FIRST,
        4,
        &["timed out", "--timeout"],
    );
}

#[test]
fn a_refused_connection_is_a_remote_error() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}");
    expect_failure(&base, &[], FIRST, 4, &["connection refused", base.as_str()]);
}

#[test]
fn bad_options_are_usage_errors() {
    expect_failure("ftp://example", &[], FIRST, 2, &["--base-url"]);
    let tmp = tempfile::tempdir().unwrap();
    let run = milo_in(tmp.path(), &["arena", "pull", FIRST, "--limit", "101"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--limit"), "{}", run.stderr);
    assert!(names_in(tmp.path()).is_empty());
}
