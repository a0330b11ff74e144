//! `milo arena submit`, `status` and `leaderboard` against a loopback mock arena
//! (`tests/mock_arena`): the verdicts before sending, the asynchronous status, rejection by the
//! threshold, 429 (a `Retry-After: 0` too: bounded tries, a second apart), 401, the blob path, an
//! upload that dies mid-body — and the key never written or printed, whatever encoding the server
//! echoes it in, and server ids that are no ids refused; a submission killed mid-POST or failed
//! after the server kept it is never sent twice without `--send-again`; `status` names entries
//! recorded under another server.

mod mock_arena;

use mock_arena::{MockArena, MockOptions, MockProblem};
use std::path::Path;
use std::time::{Duration, Instant};

const FIRST: &str = "first-autocorrelation-inequality";
const KEY: &str = "test-key-0123456789";
const AGENT: &str = "milo-test";
/// The mock's threshold for the first problem.
const THRESHOLD: f64 = 1e-3;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// `milo arena submit first-autocorrelation-inequality FILE --base-url BASE` and `extra` flags,
/// run in `dir` with `key` (see [`milo`]).
fn submit(dir: &Path, key: Option<&str>, file: &str, base: &str, extra: &[&str]) -> Run {
    let mut args = vec!["arena", "submit", FIRST, file, "--base-url", base];
    args.extend_from_slice(extra);
    milo(dir, key, &args)
}

/// Runs milo in `dir` with HOME there (no credentials file of this machine), the arena variables
/// cleared, and the key in the environment when given.
fn milo(dir: &Path, key: Option<&str>, args: &[&str]) -> Run {
    let out = MockArena::milo_command(env!("CARGO_BIN_EXE_milo"), dir, key, args)
        .output()
        .expect("milo runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A step function of `n` values with a bump: a valid, unremarkable first-problem construction.
fn bumpy(n: usize, height: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let x = i as f64 / n as f64;
            1.0 + height * (std::f64::consts::PI * x).sin()
        })
        .collect()
}

fn score(values: &[f64]) -> f64 {
    let problem = milo::problems::by_slug(FIRST).unwrap();
    milo::exact::rational::to_f64(&problem.score_exact(values))
}

fn write(dir: &Path, name: &str, values: &[f64]) -> String {
    let path = dir.join(name);
    milo::construction::write_values(&path, values).unwrap();
    path.to_string_lossy().into_owned()
}

/// `better.json` in `dir`: a construction scoring below the leader's `best` by twice the
/// threshold (a new #1).
fn better_than_the_leader(dir: &Path, best: f64) -> String {
    write(
        dir,
        "better.json",
        &scoring_below(best - 2.0 * THRESHOLD, None),
    )
}

/// A mock with two entries on the first problem: a leader and a weaker rival (a constant scores
/// 2.0; these bumps about 2.027 and 2.044).
fn mock(options: MockOptions) -> (MockArena, f64) {
    let leader = bumpy(40, 0.5);
    let rival = bumpy(40, 0.7);
    let best = score(&leader).min(score(&rival));
    let problems = vec![MockProblem {
        id: 2,
        slug: FIRST.into(),
        min_improvement: THRESHOLD,
    }];
    let entries = vec![
        (FIRST.to_string(), "leader".to_string(), leader),
        (FIRST.to_string(), "rival".to_string(), rival),
    ];
    (MockArena::start(problems, entries, options, 0), best)
}

/// A construction scoring below `target` (searching bump heights).
fn scoring_below(target: f64, above: Option<f64>) -> Vec<f64> {
    for k in 0..4000 {
        let v = bumpy(40, -0.3 + k as f64 * 0.00025);
        let s = score(&v);
        if s < target && above.is_none_or(|a| s > a) {
            return v;
        }
    }
    panic!("no bump height scores in the window");
}

/// Every file under `dir` (recursively) and the given outputs are free of the key.
fn assert_key_nowhere(dir: &Path, outputs: &[&Run]) {
    for run in outputs {
        assert!(
            !run.all().contains(KEY),
            "the key was printed: {}",
            run.all()
        );
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                let text = String::from_utf8_lossy(&bytes);
                assert!(!text.contains(KEY), "the key is in {}", path.display());
            }
        }
    }
}

fn ledger_lines(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("arena/ledger.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_new_first_is_sent_recorded_and_followed_until_the_arena_decides() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, best) = mock(MockOptions::default());
    let file = better_than_the_leader(dir.path(), best);

    let dry = submit(dir.path(), None, &file, &arena.base, &["--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.all());
    assert!(dry.stdout.contains("new #1"), "{}", dry.stdout);
    assert!(dry.stdout.contains("dry run: would send"), "{}", dry.stdout);
    assert!(
        arena.log().iter().all(|r| r.method == "GET"),
        "a dry run sends nothing"
    );

    let sent = submit(
        dir.path(),
        Some(KEY),
        &file,
        &arena.base,
        &["--agent", AGENT],
    );
    assert_eq!(sent.code, 0, "{}", sent.all());
    let post = arena
        .log()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(post.target, "/api/solutions");
    assert_eq!(
        post.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let ledger = ledger_lines(dir.path());
    assert_eq!(ledger.len(), 2, "an intent, then its outcome");
    assert_eq!(ledger[0]["kind"], "intent");
    assert_eq!(ledger[1]["kind"], "submission");
    assert_eq!(ledger[1]["intent"], ledger[0]["intent"]);
    assert_eq!(ledger[1]["assessment"]["verdict"], "new-first");
    assert_eq!(ledger[1]["upload"], "inline");
    assert_eq!(ledger[1]["status"], "pending");
    let id = ledger[1]["solution_id"].as_i64().unwrap();

    // The mock keeps it pending for one poll, then decides.
    let first = milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    assert_eq!(first.code, 0, "{}", first.all());
    assert!(first.stdout.contains("pending"), "{}", first.stdout);
    let second = milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    assert!(second.stdout.contains("evaluated"), "{}", second.stdout);
    let statuses: Vec<String> = ledger_lines(dir.path())
        .iter()
        .filter(|l| l["kind"] == "status")
        .map(|l| l["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["pending", "evaluated"]);
    assert_eq!(arena.leader(FIRST).unwrap().0, AGENT);
    // Asking again about a decided submission by id re-reads it without a new record.
    let by_id = milo(
        dir.path(),
        None,
        &[
            "arena",
            "status",
            &id.to_string(),
            "--base-url",
            &arena.base,
        ],
    );
    assert!(by_id.stdout.contains("evaluated"), "{}", by_id.stdout);
    assert_eq!(ledger_lines(dir.path()).len(), 4);

    let board = milo(
        dir.path(),
        None,
        &["arena", "leaderboard", FIRST, "--base-url", &arena.base],
    );
    assert_eq!(board.code, 0, "{}", board.all());
    assert!(
        board.stdout.lines().nth(2).unwrap().contains(AGENT),
        "{}",
        board.stdout
    );
    assert_key_nowhere(dir.path(), &[&dry, &sent, &first, &second, &by_id, &board]);
}

#[test]
fn what_the_rules_would_drop_is_refused_unless_forced_and_the_mock_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, best) = mock(MockOptions::default());
    // Better than #1, but by less than the threshold.
    let close = write(
        dir.path(),
        "close.json",
        &scoring_below(best, Some(best - THRESHOLD / 2.0)),
    );
    let refused = submit(dir.path(), Some(KEY), &close, &arena.base, &[]);
    assert_eq!(refused.code, 9, "{}", refused.all());
    assert!(refused.stdout.contains("REJECTED"), "{}", refused.stdout);
    assert!(refused.stdout.contains("not sent"), "{}", refused.stdout);
    assert!(arena.log().iter().all(|r| r.method == "GET"));
    assert!(
        ledger_lines(dir.path()).is_empty(),
        "nothing sent, nothing recorded"
    );

    let forced = submit(dir.path(), Some(KEY), &close, &arena.base, &["--force"]);
    assert_eq!(forced.code, 0, "{}", forced.all());
    assert_eq!(ledger_lines(dir.path())[0]["forced"], true);
    milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    let decided = milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    assert!(
        decided.stdout.contains("rejected"),
        "the mock applies the same rule: {}",
        decided.stdout
    );

    // Our own entry is better than this one: discarded.
    let (arena2, _) = mock(MockOptions {
        keys: vec![(KEY.into(), "rival".into())],
        ..MockOptions::default()
    });
    let worse = write(dir.path(), "worse.json", &bumpy(40, 0.9));
    let discarded = submit(
        dir.path(),
        Some(KEY),
        &worse,
        &arena2.base,
        &["--agent", "rival"],
    );
    assert_eq!(discarded.code, 9, "{}", discarded.all());
    assert!(
        discarded.stdout.contains("DISCARDED"),
        "{}",
        discarded.stdout
    );
    assert_key_nowhere(dir.path(), &[&refused, &forced, &decided, &discarded]);
}

#[test]
fn rate_limits_are_waited_out_or_reported_and_a_refused_key_is_never_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, best) = mock(MockOptions {
        rate_limited: 1,
        retry_after: 1,
        ..MockOptions::default()
    });
    let file = better_than_the_leader(dir.path(), best);
    let waited = submit(dir.path(), Some(KEY), &file, &arena.base, &[]);
    assert_eq!(waited.code, 0, "{}", waited.all());
    assert!(waited.stderr.contains("waiting 1 s"), "{}", waited.stderr);
    let posts = arena.log().iter().filter(|r| r.method == "POST").count();
    assert_eq!(posts, 2, "one 429, one accepted");

    let (limited, _) = mock(MockOptions {
        rate_limited: 5,
        retry_after: 3600,
        ..MockOptions::default()
    });
    let gave_up = submit(
        dir.path(),
        Some(KEY),
        &file,
        &limited.base,
        &["--max-wait", "60"],
    );
    assert_eq!(gave_up.code, 4, "{}", gave_up.all());
    assert!(
        gave_up.stderr.contains("rate-limited"),
        "{}",
        gave_up.stderr
    );
    let last = ledger_lines(dir.path()).pop().unwrap();
    assert!(last["solution_id"].is_null());
    assert!(last["error"].as_str().unwrap().contains("rate-limited"));

    // The mock echoes the Authorization header it got into its 401 body. (The file was sent to
    // this mock already: only --send-again sends it once more.)
    let wrong = "wrong-key-9876543210";
    let refused = submit(
        dir.path(),
        Some(wrong),
        &file,
        &arena.base,
        &["--send-again"],
    );
    assert_eq!(refused.code, 4, "{}", refused.all());
    assert!(
        refused.stderr.contains("refused the key"),
        "{}",
        refused.stderr
    );
    assert!(!refused.all().contains(wrong), "{}", refused.all());
    let ledger = std::fs::read_to_string(dir.path().join("arena/ledger.jsonl")).unwrap();
    assert!(!ledger.contains(wrong));

    let no_key = submit(dir.path(), None, &file, &arena.base, &[]);
    assert_eq!(no_key.code, 2, "{}", no_key.all());
    assert!(
        no_key.stderr.contains("EINSTEIN_ARENA_API_KEY"),
        "{}",
        no_key.stderr
    );
    assert_key_nowhere(dir.path(), &[&waited, &gave_up, &refused, &no_key]);
}

#[test]
fn large_constructions_go_through_a_blob_and_survive_an_upload_cut_off_once() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, _) = mock(MockOptions {
        cut_uploads: 1,
        ..MockOptions::default()
    });
    // Over 2 MB of JSON within the problem's 100,000 values: 17 digits and an exponent each.
    let n = 99_000;
    let big: Vec<f64> = (0..n)
        .map(|i| {
            let x = (i as f64 + 0.5) / n as f64;
            1.234567e-5 * (1.123456789012345 + (1.0 - (2.0 * x - 1.0).powi(2)).sqrt())
        })
        .collect();
    let file = write(dir.path(), "big.json", &big);
    assert!(std::fs::metadata(&file).unwrap().len() > 2_000_000);
    let sent = submit(dir.path(), Some(KEY), &file, &arena.base, &[]);
    assert_eq!(sent.code, 0, "{}", sent.all());
    let log = arena.log();
    let tickets = log
        .iter()
        .filter(|r| r.target == "/api/solutions/upload-url")
        .count();
    assert_eq!(
        tickets, 2,
        "the cut-off upload is retried with a fresh ticket"
    );
    let put = log
        .iter()
        .find(|r| r.method == "PUT")
        .expect("the second upload reached the mock");
    assert_eq!(
        put.header("authorization"),
        Some("Bearer upload-token-1"),
        "the ticket's token, not the key"
    );
    assert_eq!(put.header("x-api-version"), Some("7"));
    assert!(put.body_len > 2_000_000);
    let post = log.iter().find(|r| r.target == "/api/solutions").unwrap();
    assert!(
        post.body_len < 1000,
        "the blob's key is sent, not the values"
    );
    assert_eq!(ledger_lines(dir.path())[0]["upload"], "blob");
    milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    let decided = milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    assert!(decided.stdout.contains("evaluated"), "{}", decided.stdout);

    // An upload target that dies on every try: a clear failure, recorded without an id.
    let (dying, _) = mock(MockOptions {
        cut_uploads: 10,
        ..MockOptions::default()
    });
    let failed = submit(dir.path(), Some(KEY), &file, &dying.base, &[]);
    assert_eq!(failed.code, 4, "{}", failed.all());
    assert!(
        failed.stderr.contains("blob upload failed 3 times"),
        "{}",
        failed.stderr
    );
    let last = ledger_lines(dir.path()).pop().unwrap();
    assert!(last["solution_id"].is_null());
    assert!(
        dying.log().iter().all(|r| r.target != "/api/solutions"),
        "nothing submitted"
    );
    assert_key_nowhere(dir.path(), &[&sent, &decided, &failed]);
}

/// A key with characters that JSON, URLs and base64 each write differently.
const ECHOED_KEY: &str = "sk-arena/Q7f+9z~?>pLm~4Rt8Vw0Yb";

/// The ways a careless or hostile server may echo [`ECHOED_KEY`] back: whole, cut to the 19
/// characters a 200-character excerpt may keep, JSON-escaped (as literal text: `\/`, `\u0073`),
/// percent-encoded (all of it, or only its reserved characters), HTML character references,
/// upper- or lower-cased, hex-encoded (either case), and base64 (standard and URL-safe, at each
/// alignment).
fn echoes() -> Vec<String> {
    let key = ECHOED_KEY;
    let mut echoes = vec![
        key.to_string(),
        key[..19].to_string(),
        key.replace('/', "\\/"),
        key.chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect(),
        key.bytes().map(|b| format!("%{b:02X}")).collect(),
        key.replace('/', "%2F").replace('+', "%2B"),
        key.chars().map(|c| format!("&#{};", c as u32)).collect(),
        key.to_uppercase(),
        key.to_lowercase(),
        key.bytes().map(|b| format!("{b:02x}")).collect(),
        key.bytes().map(|b| format!("{b:02X}")).collect(),
    ];
    for alphabet in [
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    ] {
        for prefix in ["", "a", "ab"] {
            echoes.push(base64(alphabet, format!("{prefix}{key}").as_bytes()));
        }
    }
    echoes
}

/// `bytes` in base64 over `alphabet`, padded.
fn base64(alphabet: &str, bytes: &[u8]) -> String {
    let alphabet = alphabet.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The first 8-character piece of the key or of one of its [`echoes`] found in `text`.
fn leaked_piece(text: &str) -> Option<String> {
    echoes()
        .iter()
        .flat_map(|echo| {
            let chars: Vec<char> = echo.chars().collect();
            chars
                .windows(8)
                .map(|w| w.iter().collect::<String>())
                .collect::<Vec<_>>()
        })
        .find(|piece| text.contains(piece.as_str()))
}

/// No file under `dir` and none of `outputs` holds a piece of the key in any of its echoes.
fn assert_no_piece_anywhere(dir: &Path, outputs: &[&Run]) {
    for run in outputs {
        let all = run.all();
        assert_eq!(leaked_piece(&all), None, "printed: {all}");
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                assert_eq!(leaked_piece(&text), None, "in {}", path.display());
            }
        }
    }
}

#[test]
fn a_key_echoed_by_the_server_in_any_encoding_reaches_no_file_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    // The leaderboard's agents are named with the key, in each of its echoes.
    let entries: Vec<(String, String, Vec<f64>)> = echoes()
        .into_iter()
        .enumerate()
        .map(|(i, echo)| (FIRST.to_string(), echo, bumpy(40, 0.5 + 0.02 * i as f64)))
        .collect();
    let best = entries
        .iter()
        .map(|(_, _, v)| score(v))
        .fold(f64::INFINITY, f64::min);
    let problems = vec![MockProblem {
        id: 2,
        slug: FIRST.into(),
        min_improvement: THRESHOLD,
    }];
    let options = MockOptions {
        keys: vec![(ECHOED_KEY.into(), AGENT.into())],
        ..MockOptions::default()
    };
    let arena = MockArena::start(problems, entries, options, 0);
    let file = better_than_the_leader(dir.path(), best);
    let sent = submit(
        dir.path(),
        Some(ECHOED_KEY),
        &file,
        &arena.base,
        &["--agent", AGENT],
    );
    assert_eq!(sent.code, 0, "{}", sent.all());
    let board = milo(
        dir.path(),
        Some(ECHOED_KEY),
        &["arena", "leaderboard", FIRST, "--base-url", &arena.base],
    );
    assert_eq!(board.code, 0, "{}", board.all());
    assert!(board.stdout.contains("<redacted>"), "{}", board.stdout);
    let recorded = ledger_lines(dir.path());
    assert_eq!(recorded.len(), 2, "an intent, then its outcome");
    let agents: std::collections::HashSet<String> = echoes().into_iter().collect();
    let recorded_board = recorded[1]["leaderboard"].as_array().unwrap();
    assert_eq!(recorded_board.len(), agents.len(), "every entry recorded");
    for entry in recorded_board {
        let agent = entry["agentName"].as_str().unwrap();
        assert!(agent.contains("<redacted>"), "{agent}");
    }
    assert_no_piece_anywhere(dir.path(), &[&sent, &board]);
}

/// A loopback server answering its one request with `status` and `body`; its base URL.
fn answering_once(status: u16, body: &str) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind a loopback server");
    let base = format!("http://{}", server.server_addr().to_ip().unwrap());
    let body = body.to_string();
    std::thread::spawn(move || {
        if let Ok(request) = server.recv() {
            let _ =
                request.respond(tiny_http::Response::from_string(body).with_status_code(status));
        }
    });
    base
}

#[test]
fn a_server_id_that_is_no_id_is_refused_naming_the_rule_and_the_scrubbed_value() {
    use milo::arena::{ApiKey, ArenaClient, ArenaId};
    let key = ApiKey::new(ECHOED_KEY).unwrap();
    let client = |base: &str| {
        ArenaClient::new(base, Duration::from_secs(10), Duration::from_secs(30)).unwrap()
    };
    for (id, shown) in [
        ("../../../api/problems?x=", "../../../api/problems?x="),
        (ECHOED_KEY, "<redacted>"),
    ] {
        let body = serde_json::json!({"id": id, "status": "pending"}).to_string();
        let base = answering_once(200, &body);
        let failed = client(&base)
            .submit_inline(&key, &ArenaId::Number(2), "{\"values\":[1.0]}")
            .expect_err("an id that is no id is refused");
        assert!(failed.may_have_arrived, "the server accepted it");
        let error = failed.error;
        let message = error.to_string();
        assert_eq!(error.exit_code(), milo::error::EXIT_REMOTE, "{message}");
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(message.contains(shown), "{message}");
        assert!(message.contains("an id must be"), "{message}");
        assert_eq!(leaked_piece(&message), None, "{message}");
    }

    // A status whose error field quotes the key (cut, encoded) comes back without it.
    let error = format!(
        "bad key {}… and {}",
        &ECHOED_KEY[..19],
        echoes().last().unwrap()
    );
    let body = serde_json::json!({"id": 7, "status": "rejected", "error": error}).to_string();
    let status = client(&answering_once(200, &body))
        .solution_status(&ArenaId::Number(7))
        .unwrap();
    let said = status.error.unwrap();
    assert!(said.starts_with("bad key <redacted>"), "{said}");
    assert_eq!(leaked_piece(&said), None, "{said}");
}

/// `milo` as [`milo`] runs it, killed if it has not ended within `limit` (then `None`).
fn milo_within(dir: &Path, key: &str, args: &[&str], limit: Duration) -> Option<Run> {
    let mut child = MockArena::milo_command(env!("CARGO_BIN_EXE_milo"), dir, Some(key), args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("milo runs");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    Some(Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

#[test]
fn a_429_asking_for_no_wait_is_retried_a_bounded_number_of_times_a_second_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, best) = mock(MockOptions {
        rate_limited: usize::MAX,
        retry_after: 0,
        ..MockOptions::default()
    });
    let file = better_than_the_leader(dir.path(), best);
    let started = Instant::now();
    let args = [
        "arena",
        "submit",
        FIRST,
        &file,
        "--base-url",
        &arena.base,
        "--max-wait",
        "4",
    ];
    let run = milo_within(dir.path(), KEY, &args, Duration::from_secs(60))
        .expect("gives up within 60 s, not never");
    let took = started.elapsed();
    assert_eq!(run.code, 4, "{}", run.all());
    assert!(run.stderr.contains("rate-limited"), "{}", run.stderr);
    assert_eq!(
        run.stderr
            .trim()
            .lines()
            .last()
            .unwrap()
            .matches("milo:")
            .count(),
        1
    );
    let posts = arena.log().iter().filter(|r| r.method == "POST").count();
    // A floor of 1 s between tries, within --max-wait 4: the first try and at most 4 more.
    assert!((2..=5).contains(&posts), "{posts} POSTs");
    assert!(
        took >= Duration::from_secs(posts as u64 - 1),
        "{took:?} for {posts} POSTs"
    );
}

/// The last line of standard error, which must be the only `milo:` line of a refusal.
fn last_error_line(run: &Run) -> &str {
    run.stderr.trim().lines().last().unwrap_or_default()
}

/// Polls `arena` until `n` submissions have reached it (at most 60 s): no sleep-and-hope.
fn wait_for_posts(arena: &MockArena, n: usize) {
    let started = Instant::now();
    while arena.solution_posts() < n {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no POST within 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_submission_killed_mid_post_is_never_posted_again_until_sent_again_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    // The mock keeps the first submission and never answers it.
    let (arena, best) = mock(MockOptions {
        unanswered_submissions: 1,
        ..MockOptions::default()
    });
    let file = better_than_the_leader(dir.path(), best);
    let mut child = MockArena::milo_command(
        env!("CARGO_BIN_EXE_milo"),
        dir.path(),
        Some(KEY),
        &["arena", "submit", FIRST, &file, "--base-url", &arena.base],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .expect("milo runs");
    wait_for_posts(&arena, 1);
    child.kill().unwrap(); // SIGKILL while the POST waits for its answer
    child.wait().unwrap();
    let ledger = ledger_lines(dir.path());
    assert_eq!(ledger.len(), 1, "only the intent: {ledger:?}");
    assert_eq!(ledger[0]["kind"], "intent");
    assert_eq!(ledger[0]["base_url"], arena.base.as_str());
    assert_eq!(ledger[0]["slug"], FIRST);
    assert_eq!(ledger[0]["sha256"].as_str().unwrap().len(), 64);

    // Run again: held back, one line saying what to check and run; nothing posted.
    let again = submit(dir.path(), Some(KEY), &file, &arena.base, &[]);
    assert_eq!(again.code, 11, "{}", again.all());
    let line = last_error_line(&again);
    assert_eq!(again.stderr.matches("milo:").count(), 1, "{}", again.stderr);
    assert!(line.contains("may already be on"), "{line}");
    assert!(line.contains("--send-again"), "{line}");
    assert!(line.contains("milo arena status"), "{line}");
    assert_eq!(arena.solution_posts(), 1, "not posted twice");

    // `status` lists it as unconfirmed.
    let status = milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    assert_eq!(status.code, 0, "{}", status.all());
    assert!(status.stdout.contains("unconfirmed:"), "{}", status.stdout);
    assert!(status.stdout.contains("better.json"), "{}", status.stdout);

    // The user is sure it never arrived: --send-again posts it, recorded against a new intent.
    let resent = submit(dir.path(), Some(KEY), &file, &arena.base, &["--send-again"]);
    assert_eq!(resent.code, 0, "{}", resent.all());
    assert_eq!(arena.solution_posts(), 2);
    let ledger = ledger_lines(dir.path());
    let kinds: Vec<&str> = ledger.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["intent", "intent", "submission"]);
    assert_eq!(ledger[2]["intent"], ledger[1]["intent"]);
    assert_ne!(ledger[1]["intent"], ledger[0]["intent"]);

    // Confirmed now: a plain run says where it went and posts nothing.
    let third = submit(dir.path(), Some(KEY), &file, &arena.base, &[]);
    assert_eq!(third.code, 11, "{}", third.all());
    assert!(
        last_error_line(&third).contains("already sent"),
        "{}",
        third.stderr
    );
    assert_eq!(arena.solution_posts(), 2);
    let status = milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    assert!(!status.stdout.contains("unconfirmed:"), "{}", status.stdout);
    assert_key_nowhere(dir.path(), &[&again, &status, &resent, &third]);
}

#[test]
fn a_submission_the_server_kept_but_answered_500_is_unconfirmed_and_held_back() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, best) = mock(MockOptions {
        failing_submissions: 1,
        ..MockOptions::default()
    });
    let file = better_than_the_leader(dir.path(), best);
    let failed = submit(dir.path(), Some(KEY), &file, &arena.base, &[]);
    assert_eq!(failed.code, 4, "{}", failed.all());
    assert!(failed.stderr.contains("HTTP 500"), "{}", failed.stderr);
    let last = ledger_lines(dir.path()).pop().unwrap();
    assert_eq!(last["may_have_arrived"], true);
    assert!(last["solution_id"].is_null());

    let again = submit(dir.path(), Some(KEY), &file, &arena.base, &[]);
    assert_eq!(again.code, 11, "{}", again.all());
    assert!(
        last_error_line(&again).contains("HTTP 500"),
        "{}",
        again.stderr
    );
    assert_eq!(arena.solution_posts(), 1, "not posted twice");

    // A refusal is no doubt: after a 401 the same file is sent (to another mock) on a plain run.
    let (other, _) = mock(MockOptions::default());
    let refused = submit(
        dir.path(),
        Some("wrong-key-9876543210"),
        &file,
        &other.base,
        &[],
    );
    assert_eq!(refused.code, 4, "{}", refused.all());
    assert_eq!(
        ledger_lines(dir.path()).pop().unwrap()["may_have_arrived"],
        false
    );
    let sent = submit(dir.path(), Some(KEY), &file, &other.base, &[]);
    assert_eq!(sent.code, 0, "{}", sent.all());
    assert_eq!(
        other.solution_posts(),
        2,
        "the refused POST and the accepted one"
    );
}

#[test]
fn status_names_a_pending_submission_recorded_under_another_server() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, best) = mock(MockOptions::default());
    let (elsewhere, _) = mock(MockOptions::default());
    let file = better_than_the_leader(dir.path(), best);
    let sent = submit(dir.path(), Some(KEY), &file, &arena.base, &[]);
    assert_eq!(sent.code, 0, "{}", sent.all());
    let asked_before = arena.log().len();
    let status = milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &elsewhere.base],
    );
    assert_eq!(status.code, 0, "{}", status.all());
    assert!(
        status.stdout.contains(&format!(
            "recorded under {}, not the server asked",
            arena.base
        )),
        "{}",
        status.stdout
    );
    assert!(
        status
            .stdout
            .contains(&format!("pass --base-url {} to ask it", arena.base)),
        "{}",
        status.stdout
    );
    assert_eq!(
        arena.log().len(),
        asked_before,
        "the other server is not asked"
    );
    assert!(
        elsewhere.log().is_empty(),
        "nothing of it is asked of this one"
    );
    // Asked under its own server, no note.
    let here = milo(
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    );
    assert!(!here.stdout.contains("recorded under"), "{}", here.stdout);
}

#[test]
fn a_submit_waits_for_the_ledger_lock_and_two_at_once_send_one_construction_once() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, best) = mock(MockOptions::default());
    let file = better_than_the_leader(dir.path(), best);
    let args = ["arena", "submit", FIRST, &file, "--base-url", &arena.base];
    // While another process holds the ledger's lock, a submit sends nothing.
    let lock = milo::arena::ledger::lock(&dir.path().join("arena/ledger.jsonl")).unwrap();
    let mut waiting =
        MockArena::milo_command(env!("CARGO_BIN_EXE_milo"), dir.path(), Some(KEY), &args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        arena.solution_posts(),
        0,
        "a submit posted while the ledger was locked"
    );
    drop(lock);
    assert!(waiting.wait().unwrap().success());
    assert_eq!(arena.solution_posts(), 1);
    // A new construction, two submits of it at once: one sends, the other is held back.
    let other = write(
        dir.path(),
        "other.json",
        &scoring_below(best - 3.0 * THRESHOLD, None),
    );
    let args = ["arena", "submit", FIRST, &other, "--base-url", &arena.base];
    let children: Vec<_> = (0..2)
        .map(|_| {
            MockArena::milo_command(env!("CARGO_BIN_EXE_milo"), dir.path(), Some(KEY), &args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut codes: Vec<i32> = children
        .into_iter()
        .map(|mut c| c.wait().unwrap().code().unwrap_or(-1))
        .collect();
    codes.sort();
    assert_eq!(
        arena.solution_posts(),
        2,
        "the second construction posted once"
    );
    assert_eq!(codes, [0, 11], "one sent, one held back");
}

/// Whether the process `pid` is waiting for a file lock (a blocked waiter in `/proc/locks`).
fn waits_for_a_lock(pid: u32) -> bool {
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    let pid = pid.to_string();
    locks
        .lines()
        .any(|l| l.contains("->") && l.split_whitespace().any(|field| field == pid))
}

#[test]
fn a_status_record_is_appended_only_under_the_ledger_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (arena, best) = mock(MockOptions::default());
    let file = better_than_the_leader(dir.path(), best);
    let sent = milo(
        dir.path(),
        Some(KEY),
        &["arena", "submit", FIRST, &file, "--base-url", &arena.base],
    );
    assert_eq!(sent.code, 0, "{}", sent.all());
    let path = dir.path().join("arena/ledger.jsonl");
    let before = std::fs::read(&path).unwrap();
    // While another process holds the lock (it may be cutting a torn line or appending), a
    // status check waits for it before it touches the ledger.
    let lock = milo::arena::ledger::lock(&path).unwrap();
    let mut status = MockArena::milo_command(
        env!("CARGO_BIN_EXE_milo"),
        dir.path(),
        None,
        &["arena", "status", "--base-url", &arena.base],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let started = std::time::Instant::now();
    while !waits_for_a_lock(status.id()) {
        if let Some(code) = status.try_wait().unwrap() {
            panic!("`arena status` ended ({code}) without waiting for the ledger lock");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "`arena status` neither waited for the lock nor ended in 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "nothing appended while the lock is held"
    );
    drop(lock);
    assert!(status.wait().unwrap().success());
    let kinds: Vec<String> = ledger_lines(dir.path())
        .iter()
        .map(|l| l["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["intent", "submission", "status"]);
}

/// A dry run that cannot reach the arena still checks: against the #1 that milo's problem file
/// records, and it says so; a real submission fails as before.
#[test]
fn a_dry_run_without_the_arena_checks_against_the_problem_files_number_one() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound, then released.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    // The project's own record, past the problem file's #1.
    let ahead = format!(
        "{}/constructions/{FIRST}/records/codexprolong-record.json.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    let run = submit(dir.path(), None, &ahead, &closed, &["--dry-run"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("offline"), "{}", run.stdout);
    assert!(run.stdout.contains("would be the new #1"), "{}", run.stdout);
    let behind = write(dir.path(), "behind.json", &bumpy(600, 3.0));
    let run = submit(dir.path(), None, &behind, &closed, &["--dry-run"]);
    assert!(run.stdout.contains("offline"), "{}", run.stdout);
    assert!(
        run.stdout.contains("would not be the new #1"),
        "{}",
        run.stdout
    );
    // Sending needs the live arena.
    let sent = submit(
        dir.path(),
        Some("sk-test-offline-0123456789abcdef"),
        &ahead,
        &closed,
        &[],
    );
    assert_eq!(sent.code, milo::error::EXIT_REMOTE, "{}", sent.stderr);
    assert!(!sent.stdout.contains("offline"), "{}", sent.stdout);
}
