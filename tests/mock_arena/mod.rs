//! A loopback mock of the EinsteinArena API, for the tests and for `examples/mock_arena.rs`.
//!
//! It implements what milo uses: `GET /api/problems`, `/api/problems/{slug}`,
//! `/api/leaderboard`, `/api/solutions/best`, `/api/solutions/{id}`; `POST /api/solutions`
//! (inline or `solution_blob_key`) and `/api/solutions/upload-url`; `PUT /blob/{key}`. Its rules
//! are the agent guide's, written here independently of milo's `arena::rules`: a submission stays
//! `pending` for a number of status polls, then is scored (milo's exact scorer stands in for the
//! arena's verifier) and is `discarded` (not better than the agent's own entry), `rejected` (would be
//! #1 without beating it by `minImprovement`) or `evaluated`. Faults on demand: a rate limit (429
//! with `Retry-After`), a 401 that echoes the `Authorization` header it got, uploads cut off
//! mid-body, submissions kept but never answered (the client is killed or times out mid-POST) or
//! kept and answered HTTP 500. Every request is logged with its headers.
#![allow(dead_code)]

use milo::exact::rational::to_f64;
use milo::problems::{by_slug, Direction};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tiny_http::{Header, Method, Request, Response, Server};

/// A problem the mock serves.
#[derive(Clone, Debug)]
pub struct MockProblem {
    /// The server's id.
    pub id: i64,
    /// The slug.
    pub slug: String,
    /// The threshold to take #1.
    pub min_improvement: f64,
}

/// How the mock behaves.
#[derive(Clone, Debug)]
pub struct MockOptions {
    /// Accepted keys and the agent each one names.
    pub keys: Vec<(String, String)>,
    /// Status polls a submission stays `pending` for before it is scored.
    pub pending_polls: usize,
    /// Submissions answered 429 before one is accepted.
    pub rate_limited: usize,
    /// The `Retry-After` seconds a 429 names.
    pub retry_after: u64,
    /// Uploads to cut off mid-body (each upload ticket while this is positive points at a
    /// listener that reads part of the body and hangs up).
    pub cut_uploads: usize,
    /// Submissions to keep (as `pending`) but never answer: the connection stays open until the
    /// mock stops.
    pub unanswered_submissions: usize,
    /// Submissions to keep (as `pending`) and answer HTTP 500, as a server failing after it
    /// stored them.
    pub failing_submissions: usize,
}

impl Default for MockOptions {
    fn default() -> MockOptions {
        MockOptions {
            keys: vec![("test-key-0123456789".into(), "milo-test".into())],
            pending_polls: 1,
            rate_limited: 0,
            retry_after: 1,
            cut_uploads: 0,
            unanswered_submissions: 0,
            failing_submissions: 0,
        }
    }
}

/// One logged request.
#[derive(Clone, Debug)]
pub struct Logged {
    /// `GET`, `POST`, `PUT`.
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    /// Every header, `(lowercase name, value)`.
    pub headers: Vec<(String, String)>,
    /// The body's length in bytes.
    pub body_len: usize,
}

impl Logged {
    /// The value of header `name` (lowercase), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Debug)]
struct Solution {
    id: i64,
    problem: i64,
    agent: String,
    values: Vec<f64>,
    status: String,
    score: Option<f64>,
    error: Option<String>,
    polls_left: usize,
    created_at: String,
}

struct State {
    problems: Vec<MockProblem>,
    options: MockOptions,
    solutions: Vec<Solution>,
    blobs: HashMap<String, Vec<u8>>,
    tickets: HashMap<String, String>,
    log: Vec<Logged>,
    base: String,
    cutter: String,
    /// Requests kept unanswered (answered 500 when the mock stops).
    unanswered: Vec<Request>,
}

/// A running mock arena on 127.0.0.1; stopped when dropped.
pub struct MockArena {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<Mutex<State>>,
    server: Arc<Server>,
    thread: Option<JoinHandle<()>>,
}

impl MockArena {
    /// Starts a mock serving `problems`, with `entries` (slug, agent, values) already evaluated,
    /// on `port` (0: any free port).
    pub fn start(
        problems: Vec<MockProblem>,
        entries: Vec<(String, String, Vec<f64>)>,
        options: MockOptions,
        port: u16,
    ) -> MockArena {
        let server = Arc::new(Server::http(("127.0.0.1", port)).expect("bind the mock arena"));
        let addr = server.server_addr().to_ip().expect("an IP listener");
        let base = format!("http://{addr}");
        let cutter = start_cutter();
        let mut state = State {
            problems,
            options,
            solutions: Vec::new(),
            blobs: HashMap::new(),
            tickets: HashMap::new(),
            log: Vec::new(),
            base: base.clone(),
            cutter,
            unanswered: Vec::new(),
        };
        for (slug, agent, values) in entries {
            let problem = state
                .problems
                .iter()
                .find(|p| p.slug == slug)
                .expect("an entry of a served problem")
                .id;
            let id = state.solutions.len() as i64 + 1;
            let score = score_of(&slug, &values).expect("seeded entries are valid");
            state.solutions.push(Solution {
                id,
                problem,
                agent,
                values,
                status: "evaluated".into(),
                score: Some(score),
                error: None,
                polls_left: 0,
                created_at: "2026-01-01T00:00:00Z".into(),
            });
        }
        let state = Arc::new(Mutex::new(state));
        let (s, st) = (Arc::clone(&server), Arc::clone(&state));
        let thread = std::thread::spawn(move || {
            for request in s.incoming_requests() {
                handle(request, &st);
            }
        });
        MockArena {
            base,
            state,
            server,
            thread: Some(thread),
        }
    }

    /// Every request so far.
    /// A command running the `milo` binary at `milo` with `args` in `dir` (also its HOME, so
    /// no credentials file of this machine is read), the arena variables cleared and `key` as
    /// the API key when given.
    pub fn milo_command<S: AsRef<std::ffi::OsStr>>(
        milo: &str,
        dir: &std::path::Path,
        key: Option<&str>,
        args: &[S],
    ) -> std::process::Command {
        let mut command = std::process::Command::new(milo);
        command
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .env_remove("EINSTEIN_ARENA_API_KEY")
            .env_remove("EINSTEIN_ARENA_BASE_URL")
            .env_remove("EINSTEIN_ARENA_AGENT");
        if let Some(key) = key {
            command.env("EINSTEIN_ARENA_API_KEY", key);
        }
        command
    }

    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }

    /// How many `POST /api/solutions` (submissions, accepted or not) it has received.
    pub fn solution_posts(&self) -> usize {
        self.log()
            .iter()
            .filter(|r| r.method == "POST" && r.target == "/api/solutions")
            .count()
    }

    /// Every submission's `(id, agent, status, score)`, in arrival order (seeded entries first).
    pub fn solutions(&self) -> Vec<(i64, String, String, Option<f64>)> {
        let state = self.state.lock().unwrap();
        state
            .solutions
            .iter()
            .map(|s| (s.id, s.agent.clone(), s.status.clone(), s.score))
            .collect()
    }

    /// The current #1 `(agent, score)` of problem `slug`.
    pub fn leader(&self, slug: &str) -> Option<(String, f64)> {
        let state = self.state.lock().unwrap();
        let board = leaderboard(&state, problem_of(&state, slug)?.id);
        board.first().map(|(a, s)| (a.clone(), *s))
    }
}

impl Drop for MockArena {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The mock's scorer: milo's exact score, rounded to float64, or why the values are invalid.
fn score_of(slug: &str, values: &[f64]) -> Result<f64, String> {
    let problem = by_slug(slug).map_err(|e| e.to_string())?;
    let options = milo::verify::Options {
        mode: milo::verify::Mode::Exact,
        allow_oversize: false,
    };
    milo::verify::verify(problem.as_ref(), values, options)
        .map(|v| to_f64(&v.exact.expect("exact mode")))
        .map_err(|v| v.to_string())
}

fn direction_of(slug: &str) -> Direction {
    by_slug(slug).expect("a known slug").spec().direction
}

fn problem_of<'a>(state: &'a State, slug: &str) -> Option<&'a MockProblem> {
    state.problems.iter().find(|p| p.slug == slug)
}

/// Each agent's best evaluated score on a problem, best first.
fn leaderboard(state: &State, problem: i64) -> Vec<(String, f64)> {
    let slug = &state
        .problems
        .iter()
        .find(|p| p.id == problem)
        .unwrap()
        .slug;
    let direction = direction_of(slug);
    let mut best: Vec<(String, f64)> = Vec::new();
    for s in state
        .solutions
        .iter()
        .filter(|s| s.problem == problem && s.status == "evaluated")
    {
        let score = s.score.unwrap();
        match best.iter_mut().find(|(a, _)| *a == s.agent) {
            Some(entry) if direction.better(&score, &entry.1) => entry.1 = score,
            Some(_) => {}
            None => best.push((s.agent.clone(), score)),
        }
    }
    best.sort_by(|a, b| {
        if direction.better(&a.1, &b.1) {
            std::cmp::Ordering::Less
        } else if direction.better(&b.1, &a.1) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    best
}

/// Scores a pending submission and applies the agent guide's decision tree.
fn decide(state: &mut State, index: usize) {
    let s = state.solutions[index].clone();
    let problem = state
        .problems
        .iter()
        .find(|p| p.id == s.problem)
        .unwrap()
        .clone();
    let direction = direction_of(&problem.slug);
    let score = match score_of(&problem.slug, &s.values) {
        Ok(score) => score,
        Err(why) => {
            let sol = &mut state.solutions[index];
            sol.status = "rejected".into();
            sol.error = Some(why);
            return;
        }
    };
    let board = leaderboard(state, problem.id);
    let own = board.iter().find(|(a, _)| *a == s.agent).map(|(_, x)| *x);
    let best = board.first().map(|(_, x)| *x);
    let status = if own.is_some_and(|own| !direction.better(&score, &own)) {
        "discarded"
    } else if let Some(best) = best.filter(|b| direction.better(&score, b)) {
        let gain = match direction {
            Direction::Minimize => best - score,
            Direction::Maximize => score - best,
        };
        if gain >= problem.min_improvement {
            "evaluated"
        } else {
            "rejected"
        }
    } else {
        "evaluated"
    };
    if status == "evaluated" {
        for other in state
            .solutions
            .iter_mut()
            .filter(|o| o.problem == s.problem && o.agent == s.agent && o.status == "evaluated")
        {
            other.status = "replaced".into();
        }
    }
    let sol = &mut state.solutions[index];
    sol.status = status.into();
    sol.score = Some(score);
}

fn json_response(status: u16, body: Value) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_string(body.to_string())
        .with_status_code(status)
        .with_header(Header::from_bytes("Content-Type", "application/json").unwrap())
}

fn handle(mut request: Request, state: &Mutex<State>) {
    let mut body = Vec::new();
    let _ = request.as_reader().read_to_end(&mut body);
    let method = request.method().clone();
    let target = request.url().to_string();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_ascii_lowercase(),
                h.value.as_str().to_string(),
            )
        })
        .collect();
    let mut st = state.lock().unwrap();
    st.log.push(Logged {
        method: method.as_str().to_string(),
        target: target.clone(),
        headers: headers.clone(),
        body_len: body.len(),
    });
    let auth = headers
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.clone());
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query: HashMap<&str, &str> = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let (mut status, mut answer, extra) =
        route(&mut st, &method, path, &query, auth.as_deref(), &body);
    if method == Method::Post && path == "/api/solutions" && status == 201 {
        if st.options.unanswered_submissions > 0 {
            st.options.unanswered_submissions -= 1;
            st.unanswered.push(request);
            return;
        }
        if st.options.failing_submissions > 0 {
            st.options.failing_submissions -= 1;
            status = 500;
            answer = json!({"error": "internal error"});
        }
    }
    drop(st);
    let mut response = json_response(status, answer);
    if let Some(h) = extra {
        response = response.with_header(h);
    }
    let _ = request.respond(response);
}

type Routed = (u16, Value, Option<Header>);

fn route(
    st: &mut State,
    method: &Method,
    path: &str,
    query: &HashMap<&str, &str>,
    auth: Option<&str>,
    body: &[u8],
) -> Routed {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        (Method::Get, ["api", "problems"]) => {
            let list: Vec<Value> = st.problems.iter().map(problem_json).collect();
            (200, json!(list), None)
        }
        (Method::Get, ["api", "problems", slug]) => match problem_of(st, slug) {
            Some(p) => (200, problem_json(p), None),
            None => (404, json!({"error": "Problem not found"}), None),
        },
        (Method::Get, ["api", "leaderboard"]) => {
            let Some(id) = query.get("problem_id").and_then(|v| v.parse::<i64>().ok()) else {
                return (400, json!({"error": "problem_id is required"}), None);
            };
            let limit = limit_of(query);
            let board: Vec<Value> = leaderboard(st, id)
                .into_iter()
                .take(limit)
                .enumerate()
                .map(|(i, (agent, score))| {
                    json!({"rank": i + 1, "agentName": agent, "bestScore": score, "submissions": 1})
                })
                .collect();
            (200, json!(board), None)
        }
        (Method::Get, ["api", "solutions", "best"]) => {
            let Some(id) = query.get("problem_id").and_then(|v| v.parse::<i64>().ok()) else {
                return (400, json!({"error": "problem_id is required"}), None);
            };
            let board = leaderboard(st, id);
            let list: Vec<Value> = board
                .iter()
                .take(limit_of(query))
                .filter_map(|(agent, score)| {
                    st.solutions.iter().find(|s| {
                        s.problem == id
                            && &s.agent == agent
                            && s.status == "evaluated"
                            && s.score == Some(*score)
                    })
                })
                .map(|s| {
                    json!({"id": s.id, "agentName": s.agent, "score": s.score,
                           "createdAt": s.created_at, "data": {"values": s.values}})
                })
                .collect();
            (200, json!(list), None)
        }
        (Method::Get, ["api", "solutions", id]) => {
            let Some(index) = id
                .parse::<i64>()
                .ok()
                .and_then(|id| st.solutions.iter().position(|s| s.id == id))
            else {
                return (404, json!({"error": "Not found"}), None);
            };
            if st.solutions[index].status == "pending" {
                if st.solutions[index].polls_left == 0 {
                    decide(st, index);
                } else {
                    st.solutions[index].polls_left -= 1;
                }
            }
            let s = &st.solutions[index];
            (
                200,
                json!({"id": s.id, "status": s.status, "score": s.score, "error": s.error,
                       "createdAt": s.created_at, "evaluatedAt": null}),
                None,
            )
        }
        (Method::Post, ["api", "solutions", "upload-url"]) => {
            if let Err(refused) = agent_of(st, auth) {
                return refused;
            }
            let n = st.tickets.len();
            let token = format!("upload-token-{n}");
            let key = format!("blob-{n}");
            let url = if st.options.cut_uploads > 0 {
                st.options.cut_uploads -= 1;
                format!("{}/blob/{key}", st.cutter)
            } else {
                format!("{}/blob/{key}", st.base)
            };
            st.tickets.insert(key.clone(), token.clone());
            (
                200,
                json!({"clientToken": token, "blobKey": key, "uploadUrl": url}),
                None,
            )
        }
        (Method::Put, ["blob", key]) => {
            let expected = st.tickets.get(*key).map(|t| format!("Bearer {t}"));
            if expected.is_none() || expected.as_deref() != auth {
                return (403, json!({"error": "bad upload token"}), None);
            }
            st.blobs.insert(key.to_string(), body.to_vec());
            (
                200,
                json!({"url": format!("{}/blobs/{key}", st.base)}),
                None,
            )
        }
        (Method::Post, ["api", "solutions"]) => submit(st, auth, body),
        _ => (404, json!({"error": "no such endpoint"}), None),
    }
}

fn limit_of(query: &HashMap<&str, &str>) -> usize {
    query
        .get("limit")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(10)
        .min(100)
}

fn problem_json(p: &MockProblem) -> Value {
    let direction = match direction_of(&p.slug) {
        Direction::Minimize => "minimize",
        Direction::Maximize => "maximize",
    };
    json!({"id": p.id, "slug": p.slug, "title": p.slug, "scoring": direction,
           "minImprovement": p.min_improvement, "evaluationMode": "exact",
           "verifier": "def evaluate(data): ...", "solutionSchema": {"values": "list[float]"}})
}

/// The agent a bearer key names, or the 401 answer (echoing what it got, as a careless server
/// might: milo must redact it).
fn agent_of(st: &State, auth: Option<&str>) -> Result<String, Routed> {
    let key = auth.and_then(|a| a.strip_prefix("Bearer "));
    match key.and_then(|k| st.options.keys.iter().find(|(known, _)| known == k)) {
        Some((_, agent)) => Ok(agent.clone()),
        None => Err((
            401,
            json!({"error": format!("invalid API key: {}", auth.unwrap_or("none"))}),
            None,
        )),
    }
}

fn submit(st: &mut State, auth: Option<&str>, body: &[u8]) -> Routed {
    let agent = match agent_of(st, auth) {
        Ok(agent) => agent,
        Err(refused) => return refused,
    };
    if st.options.rate_limited > 0 {
        st.options.rate_limited -= 1;
        let retry = st.options.retry_after;
        return (
            429,
            json!({"error": "rate limited", "retry_after_seconds": retry}),
            Some(Header::from_bytes("Retry-After", retry.to_string()).unwrap()),
        );
    }
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return (400, json!({"error": "body is not JSON"}), None);
    };
    let Some(problem) = request["problem_id"].as_i64() else {
        return (
            400,
            json!({"error": "problem_id is required and must be a number"}),
            None,
        );
    };
    if !st.problems.iter().any(|p| p.id == problem) {
        return (404, json!({"error": "Problem not found"}), None);
    }
    let solution: Value = if let Some(key) = request["solution_blob_key"].as_str() {
        match st
            .blobs
            .get(key)
            .and_then(|b| serde_json::from_slice(b).ok())
        {
            Some(v) => v,
            None => return (400, json!({"error": "unknown blob"}), None),
        }
    } else {
        if request["solution"].to_string().len() > 2_000_000 {
            return (
                400,
                json!({"error": "Solution data must be under 2 MB"}),
                None,
            );
        }
        request["solution"].clone()
    };
    let Some(values) = solution["values"]
        .as_array()
        .and_then(|a| a.iter().map(|v| v.as_f64()).collect::<Option<Vec<f64>>>())
    else {
        return (
            400,
            json!({"error": "solution.values: expected a list of numbers"}),
            None,
        );
    };
    let id = st.solutions.iter().map(|s| s.id).max().unwrap_or(0) + 1;
    st.solutions.push(Solution {
        id,
        problem,
        agent,
        values,
        status: "pending".into(),
        score: None,
        error: None,
        polls_left: st.options.pending_polls,
        created_at: "2026-12-03T00:00:00Z".into(),
    });
    (201, json!({"id": id, "status": "pending"}), None)
}

/// A listener that reads a request's headers and a little of its body, then hangs up: an upload
/// target that dies mid-upload. Returns its base URL.
fn start_cutter() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the cutter");
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.flush();
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    });
    base
}
