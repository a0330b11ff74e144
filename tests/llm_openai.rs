//! The OpenAI-compatible backend against a loopback mock server (`tests/mock_openai`): good
//! answers with their tokens, garbage, truncated JSON, 429 with `Retry-After`, 500s, a hang, a
//! 401, a refused connection, an oversize answer — each a retry or a typed error within a bounded
//! time, never a panic or a hang — and the key sent but never shown.

mod mock_openai;

use milo::llm::openai::{OpenAiBackend, ANSWER_CAP};
use milo::llm::{
    Attachment, BackendConfig, ChatBackend, ChatMessage, ChatRequest, Completion, LlmError, Speaker,
};
use mock_openai::{MockOpenAi, Reply};
use std::sync::mpsc;
use std::sync::Once;
use std::time::{Duration, Instant};

/// The variable holding the sentinel key.
const KEY_VARIABLE: &str = "MILO_TEST_OPENAI_KEY";
/// A key that must reach the server and nothing else.
const SENTINEL: &str = "sk-sentinel-7f3a9c1e";
/// A variable never set.
const ABSENT_VARIABLE: &str = "MILO_TEST_OPENAI_KEY_NEVER_SET";

/// Sets the test variables once, before any test reads the environment (every test calls this
/// first, and the others wait on the `Once`).
fn environment() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        std::env::set_var(KEY_VARIABLE, SENTINEL);
        std::env::remove_var(ABSENT_VARIABLE);
    });
}

fn backend(api_base: &str, key: Option<&str>, timeout_seconds: f64, retries: u32) -> OpenAiBackend {
    environment();
    OpenAiBackend::new(&BackendConfig::Openai {
        name: "mock".into(),
        api_base: api_base.into(),
        model: "mock-model".into(),
        api_key_env: key.map(str::to_string),
        weight: 1.0,
        timeout_seconds,
        retries,
        max_tokens: None,
    })
    .expect("a valid configuration")
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::new(Speaker::User, text)],
        ..ChatRequest::default()
    }
}

/// `backend.complete(request)` run on its own thread, with the time it took; a test failure
/// (not a hang) if it takes longer than `limit`.
fn complete_within(
    backend: OpenAiBackend,
    request: ChatRequest,
    limit: Duration,
) -> (Result<Completion, LlmError>, Duration) {
    let (send, receive) = mpsc::channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        let _ = send.send(backend.complete(&request));
    });
    let result = receive
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("no result within {limit:?}"));
    (result, start.elapsed())
}

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn a_good_answer_gives_its_text_and_tokens_and_the_request_is_well_formed() {
    let mock = MockOpenAi::start(vec![Reply::Answer {
        text: "x = 1".into(),
        prompt_tokens: 123,
        completion_tokens: 45,
    }]);
    // A trailing slash on api_base is tolerated.
    let backend = backend(&format!("{}/", mock.api_base), None, 2.0, 0);
    let request = ChatRequest {
        messages: vec![
            ChatMessage::new(Speaker::System, "You write optimizers."),
            ChatMessage::new(Speaker::User, "Improve the parent."),
        ],
        attachments: vec![Attachment {
            name: "parent.toml".into(),
            content: "[[stage]]\nkind = \"adam\"\n".into(),
        }],
        workspace: Vec::new(),
        max_tokens: Some(256),
        temperature: Some(0.5),
        seed: Some(42),
        ..ChatRequest::default()
    };
    let (result, _) = complete_within(backend, request, LIMIT);
    let completion = result.unwrap();
    assert_eq!(completion.text, "x = 1");
    assert_eq!(completion.backend, "mock");
    assert_eq!(
        (
            completion.usage.prompt_tokens,
            completion.usage.completion_tokens,
            completion.usage.requests
        ),
        (123, 45, 1)
    );
    let log = mock.log();
    assert_eq!(log.len(), 1);
    let sent = &log[0];
    assert_eq!(sent.target, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.body["model"], "mock-model");
    assert_eq!(sent.body["max_tokens"], 256);
    assert_eq!(sent.body["temperature"], 0.5);
    assert_eq!(sent.body["seed"], 42);
    assert_eq!(sent.body["messages"][0]["role"], "system");
    assert_eq!(sent.body["messages"][1]["role"], "user");
    let user = sent.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.starts_with("Improve the parent.\n\n### parent.toml\n```\n[[stage]]"),
        "{user}"
    );
}

#[test]
fn an_answer_without_usage_counts_no_tokens() {
    let mock = MockOpenAi::start(vec![Reply::raw(
        200,
        r#"{"choices":[{"message":{"role":"assistant","content":"ok"}}]}"#,
    )]);
    let (result, _) = complete_within(backend(&mock.api_base, None, 2.0, 0), ask("hi"), LIMIT);
    let usage = result.unwrap().usage;
    assert_eq!(
        (usage.prompt_tokens, usage.completion_tokens, usage.requests),
        (0, 0, 1)
    );
}

#[test]
fn garbage_truncated_json_and_no_choices_are_unusable_and_not_retried() {
    for body in [
        "<html>Bad gateway</html>",
        r#"{"choices":[{"message":{"role":"assistant","content":"hel"#,
        r#"{"choices":[]}"#,
    ] {
        let mock = MockOpenAi::start(vec![Reply::raw(200, body), Reply::answer("late")]);
        let (result, _) = complete_within(backend(&mock.api_base, None, 2.0, 3), ask("hi"), LIMIT);
        match result {
            Err(LlmError::Unusable { backend, message }) => {
                assert_eq!(backend, "mock");
                assert!(!message.is_empty());
            }
            other => panic!("{body}: {other:?}"),
        }
        assert_eq!(mock.log().len(), 1, "{body}");
    }
}

#[test]
fn a_429_waits_its_retry_after_then_takes_the_answer() {
    let mock = MockOpenAi::start(vec![
        Reply::Raw {
            status: 429,
            headers: vec![("Retry-After".into(), "1".into())],
            body: r#"{"error":{"message":"rate limited"}}"#.into(),
        },
        Reply::answer("after the wait"),
    ]);
    let (result, elapsed) =
        complete_within(backend(&mock.api_base, None, 2.0, 3), ask("hi"), LIMIT);
    let completion = result.unwrap();
    assert_eq!(completion.text, "after the wait");
    assert_eq!(completion.usage.requests, 2);
    let log = mock.log();
    assert_eq!(log.len(), 2);
    let gap = log[1].at - log[0].at;
    assert!(gap >= Duration::from_millis(950), "retried after {gap:?}");
    assert!(elapsed >= Duration::from_millis(950), "{elapsed:?}");
}

#[test]
fn a_500_is_retried_and_the_retry_answers() {
    let mock = MockOpenAi::start(vec![Reply::raw(500, "oops"), Reply::answer("fine")]);
    let (result, _) = complete_within(backend(&mock.api_base, None, 2.0, 2), ask("hi"), LIMIT);
    let completion = result.unwrap();
    assert_eq!(
        (completion.text.as_str(), completion.usage.requests),
        ("fine", 2)
    );
    assert_eq!(mock.log().len(), 2);
}

#[test]
fn a_500_every_time_is_an_error_after_every_retry() {
    let mock = MockOpenAi::start(vec![Reply::raw(503, "overloaded")]);
    let (result, elapsed) =
        complete_within(backend(&mock.api_base, None, 2.0, 2), ask("hi"), LIMIT);
    match result {
        Err(LlmError::Status {
            status, message, ..
        }) => {
            assert_eq!(status, 503);
            assert!(message.contains("overloaded"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.log().len(), 3);
    // Backoff 0.5 s, then 1 s.
    assert!(elapsed >= Duration::from_millis(1400), "{elapsed:?}");
}

#[test]
fn a_hang_ends_as_a_timeout_after_the_retries() {
    let mock = MockOpenAi::start(vec![Reply::Hang]);
    let (result, elapsed) =
        complete_within(backend(&mock.api_base, None, 1.0, 1), ask("hi"), LIMIT);
    match result {
        Err(LlmError::Timeout { seconds, .. }) => assert_eq!(seconds, 1.0),
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.log().len(), 2);
    // Two 1 s timeouts and a 1 s wait, with slack for a loaded machine.
    assert!(elapsed >= Duration::from_millis(2900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
}

#[test]
fn a_401_is_not_retried() {
    let mock = MockOpenAi::start(vec![
        Reply::raw(401, r#"{"error":"no key"}"#),
        Reply::answer("never"),
    ]);
    let (result, _) = complete_within(backend(&mock.api_base, None, 2.0, 3), ask("hi"), LIMIT);
    match result {
        Err(LlmError::Status {
            status, message, ..
        }) => {
            assert_eq!(status, 401);
            assert!(message.contains("api_key_env"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.log().len(), 1);
}

#[test]
fn the_key_is_sent_as_a_bearer_and_never_shown() {
    let mock = MockOpenAi::start(vec![Reply::answer("ok"), Reply::EchoKey]);
    let backend = backend(&mock.api_base, Some(KEY_VARIABLE), 2.0, 1);
    let debug = format!("{backend:?}");
    assert!(
        debug.contains(KEY_VARIABLE) && !debug.contains(SENTINEL),
        "{debug}"
    );
    let completion = backend.complete(&ask("hi")).unwrap();
    assert!(!format!("{completion:?}").contains(SENTINEL));
    let refused = backend.complete(&ask("again")).unwrap_err();
    let log = mock.log();
    assert_eq!(log.len(), 2);
    let expected = format!("Bearer {SENTINEL}");
    for sent in &log {
        assert_eq!(sent.header("authorization"), Some(expected.as_str()));
        assert!(!sent.body.to_string().contains(SENTINEL));
    }
    let shown = format!("{refused} {refused:?}");
    assert!(!shown.contains(SENTINEL), "{shown}");
    assert!(
        shown.contains("<redacted>") && shown.contains(KEY_VARIABLE),
        "{shown}"
    );
}

#[test]
fn a_missing_key_variable_is_unavailable_naming_it_and_sends_nothing() {
    let mock = MockOpenAi::start(vec![Reply::answer("never")]);
    let backend = backend(&mock.api_base, Some(ABSENT_VARIABLE), 2.0, 3);
    match backend.complete(&ask("hi")) {
        Err(LlmError::Unavailable { message, .. }) => {
            assert!(message.contains(ABSENT_VARIABLE), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(mock.log().is_empty());
}

#[test]
fn a_refused_connection_is_unavailable_after_the_retries() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let api_base = format!("http://127.0.0.1:{port}/v1");
    let (result, elapsed) = complete_within(backend(&api_base, None, 1.0, 2), ask("hi"), LIMIT);
    match result {
        Err(LlmError::Unavailable { message, .. }) => {
            assert!(message.contains("refused"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // Two retries: 1 s, then 2 s.
    assert!(elapsed >= Duration::from_millis(2900), "{elapsed:?}");
}

#[test]
fn an_answer_past_the_cap_is_refused_unread() {
    let big = format!(
        r#"{{"choices":[{{"message":{{"content":"{}"}}}}]}}"#,
        "a".repeat(ANSWER_CAP as usize)
    );
    let mock = MockOpenAi::start(vec![Reply::raw(200, &big)]);
    let (result, _) = complete_within(backend(&mock.api_base, None, 5.0, 2), ask("hi"), LIMIT);
    match result {
        Err(LlmError::Unusable { message, .. }) => assert!(message.contains("larger"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(mock.log().len(), 1);
}

/// The ways a server or a model may echo [`SENTINEL`] back beyond the plain text: cut to 18
/// characters, JSON escapes as literal text, percent-encoded, and base64 of the
/// `Authorization` header at each alignment.
fn echoes() -> Vec<String> {
    let mut echoes = vec![
        SENTINEL[..18].to_string(),
        SENTINEL
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect(),
        SENTINEL.bytes().map(|b| format!("%{b:02x}")).collect(),
    ];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for prefix in ["", "x", "xy"] {
        let bytes = format!("{prefix}Bearer {SENTINEL}").into_bytes();
        let mut encoded = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                encoded.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        echoes.push(encoded);
    }
    echoes
}

/// Whether `text` holds an 8-character piece of the key (the pieces of its base64 that encode
/// `Bearer ` and the prefix, up to the key's first bits, excepted).
fn holds_a_piece_of_the_key(text: &str) -> bool {
    let bearer_only = ["QmVhcmVyIH", "eEJlYXJlciB", "eHlCZWFyZXIg"];
    std::iter::once(SENTINEL.to_string())
        .chain(echoes())
        .any(|echo| {
            let chars: Vec<char> = echo.chars().collect();
            chars.windows(8).any(|w| {
                let piece: String = w.iter().collect();
                !bearer_only.iter().any(|b| b.contains(&piece)) && text.contains(&piece)
            })
        })
}

#[test]
fn an_answer_or_an_error_echoing_the_key_in_any_encoding_holds_no_piece_of_it() {
    let echoed = echoes().join(" | ");
    assert!(
        holds_a_piece_of_the_key(&echoed),
        "the check sees the echoes"
    );
    let mock = MockOpenAi::start(vec![
        Reply::answer(&format!("x = 1 # {echoed}")),
        Reply::raw(401, &format!("{{\"error\": \"bad key {echoed}\"}}")),
    ]);
    let backend = || backend(&mock.api_base, Some(KEY_VARIABLE), 5.0, 0);
    let (answer, _) = complete_within(backend(), ask("hi"), LIMIT);
    let text = answer.unwrap().text;
    assert!(text.starts_with("x = 1 # <redacted>"), "{text}");
    assert!(!holds_a_piece_of_the_key(&text), "{text}");
    let (refused, _) = complete_within(backend(), ask("hi"), LIMIT);
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("refused the key"), "{message}");
    assert!(!holds_a_piece_of_the_key(&message), "{message}");
}

#[test]
fn a_429_asking_for_no_wait_is_retried_at_least_a_second_apart() {
    let limited = Reply::Raw {
        status: 429,
        headers: vec![("Retry-After".into(), "0".into())],
        body: "slow down".into(),
    };
    let mock = MockOpenAi::start(vec![limited.clone(), limited, Reply::answer("ok")]);
    let backend = backend(&mock.api_base, None, 5.0, 3);
    let (result, _) = complete_within(backend, ask("hi"), LIMIT);
    assert_eq!(result.unwrap().usage.requests, 3);
    let log = mock.log();
    for pair in log.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(gap >= Duration::from_millis(950), "requests {gap:?} apart");
    }
}

#[test]
fn a_cancel_abandons_a_request_in_flight_and_its_retries_within_seconds() {
    let mock = MockOpenAi::start(vec![Reply::Hang]);
    // Without the cancel, this would hold the caller for 60 s × 11 requests.
    let backend = backend(&mock.api_base, None, 60.0, 10);
    let request = ask("hi");
    let _deadline = request
        .cancel
        .cancel_at(Instant::now() + Duration::from_millis(300));
    let (result, took) = complete_within(backend, request, Duration::from_secs(10));
    assert!(
        matches!(result, Err(LlmError::Cancelled { .. })),
        "{result:?}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(mock.log().len(), 1, "no retry after the cancel");
}
