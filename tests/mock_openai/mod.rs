//! A loopback mock of an OpenAI-compatible chat-completions server, scripted per request: each
//! `POST …/chat/completions` gets the next [`Reply`] of the script (the last one repeats), and
//! every request is logged with its arrival time, headers and body. A [`Reply::Hang`] holds the
//! request unanswered until the mock is dropped, without blocking the serving thread.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;
use tiny_http::{Header, Request, Response, Server};

/// How the mock answers one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with a chat completion of `text` and these token counts.
    Answer {
        /// The answer's text.
        text: String,
        /// `usage.prompt_tokens`.
        prompt_tokens: u64,
        /// `usage.completion_tokens`.
        completion_tokens: u64,
    },
    /// Any status, headers and body, as given.
    Raw {
        /// The status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// A 401 whose body echoes the `Authorization` header received (as a careless server may).
    EchoKey,
    /// No answer at all: the request is held open until the mock stops.
    Hang,
}

impl Reply {
    /// 200 with a completion of `text`, 11 prompt and 7 completion tokens.
    pub fn answer(text: &str) -> Reply {
        Reply::Answer {
            text: text.into(),
            prompt_tokens: 11,
            completion_tokens: 7,
        }
    }

    /// `status` with `body` and no extra header.
    pub fn raw(status: u16, body: &str) -> Reply {
        Reply::Raw {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
}

/// One logged request.
#[derive(Clone, Debug)]
pub struct Logged {
    /// When it arrived.
    pub at: Instant,
    /// The request target.
    pub target: String,
    /// Every header, `(lowercase name, value)`.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` if it is not JSON).
    pub body: Value,
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

struct State {
    script: Vec<Reply>,
    log: Vec<Logged>,
    held: Vec<Request>,
}

/// A running mock on 127.0.0.1; stopped when dropped.
pub struct MockOpenAi {
    /// `http://127.0.0.1:PORT/v1`.
    pub api_base: String,
    state: Arc<Mutex<State>>,
    server: Arc<Server>,
    thread: Option<JoinHandle<()>>,
}

impl MockOpenAi {
    /// Starts a mock on a free port answering with `script`, first to last, the last reply
    /// repeating.
    pub fn start(script: Vec<Reply>) -> MockOpenAi {
        assert!(!script.is_empty(), "a script has at least one reply");
        let server = Arc::new(Server::http("127.0.0.1:0").expect("bind the mock server"));
        let addr = server.server_addr().to_ip().expect("an IP listener");
        let mut script = script;
        script.reverse();
        let state = Arc::new(Mutex::new(State {
            script,
            log: Vec::new(),
            held: Vec::new(),
        }));
        let (s, st) = (Arc::clone(&server), Arc::clone(&state));
        let thread = std::thread::spawn(move || {
            for request in s.incoming_requests() {
                handle(request, &st);
            }
        });
        MockOpenAi {
            api_base: format!("http://{addr}/v1"),
            state,
            server,
            thread: Some(thread),
        }
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }
}

impl Drop for MockOpenAi {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.state.lock().unwrap().held.clear();
    }
}

fn handle(mut request: Request, state: &Mutex<State>) {
    let mut body = String::new();
    let _ = request.as_reader().read_to_string(&mut body);
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
    let logged = Logged {
        at: Instant::now(),
        target: request.url().to_string(),
        headers,
        body: serde_json::from_str(&body).unwrap_or(Value::Null),
    };
    let mut st = state.lock().unwrap();
    let reply = if st.script.len() > 1 {
        st.script.pop().unwrap()
    } else {
        st.script[0].clone()
    };
    let authorization = logged.header("authorization").unwrap_or("").to_string();
    st.log.push(logged);
    let (status, headers, body) = match reply {
        Reply::Hang => {
            st.held.push(request);
            return;
        }
        Reply::Answer {
            text,
            prompt_tokens,
            completion_tokens,
        } => (
            200,
            Vec::new(),
            json!({
                "id": "chatcmpl-mock",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}
            })
            .to_string(),
        ),
        Reply::Raw {
            status,
            headers,
            body,
        } => (status, headers, body),
        Reply::EchoKey => (
            401,
            Vec::new(),
            json!({"error": {"message": format!("invalid key in '{authorization}'")}}).to_string(),
        ),
    };
    drop(st);
    let mut response = Response::from_string(body).with_status_code(status);
    for (name, value) in headers {
        response.add_header(Header::from_bytes(name.as_bytes(), value.as_bytes()).unwrap());
    }
    let _ = request.respond(response);
}
