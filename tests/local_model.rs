//! The local model server (tests/local_model/server.mjs over SmolLM2-135M) answers in the OpenAI
//! shape, one fresh conversation per request, and is gone once its handle is dropped. Skips
//! (with a `SKIP:` note) where `.ci/run` could not install node-llama-cpp or the model.

mod common;

use common::local_model::LocalModel;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// An HTTP client that reports every status as a response (the tests check 400s too).
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .http_status_as_error(false)
        .build()
        .new_agent()
}

/// `POST {api_base}/chat/completions` with `body`: the status and the parsed answer.
fn chat(server: &LocalModel, body: &str) -> (u16, Value) {
    let mut response = agent()
        .post(format!("{}/chat/completions", server.api_base()))
        .content_type("application/json")
        .send(body)
        .expect("the server answers");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("a text body");
    let answer =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("answer is not JSON ({e}): {text}"));
    (status, answer)
}

/// A good request's answer, checked for the OpenAI shape; prints its latency.
fn good_answer(server: &LocalModel, request: &Value) -> Value {
    let started = Instant::now();
    let (status, answer) = chat(server, &request.to_string());
    let latency = started.elapsed();
    assert_eq!(status, 200, "{answer}");
    let content = answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no choices[0].message.content: {answer}"));
    assert!(!content.trim().is_empty(), "empty answer: {answer}");
    let finish = answer["choices"][0]["finish_reason"].as_str();
    assert!(
        matches!(finish, Some("stop" | "length")),
        "finish_reason: {answer}"
    );
    assert_eq!(answer["model"].as_str(), Some(server.model_id()));
    let prompt = answer["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
    let completion = answer["usage"]["completion_tokens"].as_u64().unwrap_or(0);
    assert!(prompt > 0 && completion > 0, "token counts: {answer}");
    println!(
        "answer in {:.2} s ({prompt} prompt + {completion} completion tokens): {content:?}",
        latency.as_secs_f64()
    );
    answer
}

fn usage(answer: &Value, field: &str) -> u64 {
    answer["usage"][field].as_u64().unwrap()
}

#[test]
fn serves_openai_chat_completions_one_fresh_conversation_at_a_time() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    println!(
        "loaded in {:.2} s; RSS {} MiB",
        server.load_time().as_secs_f64(),
        server.rss_kib().expect("VmRSS of a live server") / 1024
    );

    let mut models = agent()
        .get(format!("{}/models", server.api_base()))
        .call()
        .expect("GET /v1/models answers");
    assert_eq!(models.status().as_u16(), 200);
    let models: Value = serde_json::from_str(&models.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(models["data"][0]["id"].as_str(), Some(server.model_id()));

    let question = json!({
        "model": server.model_id(),
        "messages": [
            {"role": "system", "content": "You answer in one short sentence."},
            {"role": "user", "content": "What is the capital of France?"}
        ],
        "max_tokens": 48,
        "temperature": 0
    });
    let first = good_answer(&server, &question);
    // A tokenizer spends at least one token per word of the messages.
    let words = question["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().split_whitespace().count() as u64)
        .sum::<u64>();
    assert!(usage(&first, "prompt_tokens") >= words, "{first}");
    assert!(usage(&first, "completion_tokens") <= 48, "{first}");
    // Greedy decoding from a fresh history: the same request gets the same answer and counts.
    let again = good_answer(&server, &question);
    assert_eq!(first["choices"], again["choices"]);
    assert_eq!(first["usage"], again["usage"]);

    // max_tokens cuts a long answer short (sampled with a seed here).
    let cut = good_answer(
        &server,
        &json!({
            "messages": [{"role": "user", "content":
                "Write a long essay about the history of the Roman Empire, with many details \
                 about its emperors, its wars and its fall."}],
            "max_tokens": 5,
            "temperature": 0.7,
            "seed": 11
        }),
    );
    assert_eq!(usage(&cut, "completion_tokens"), 5, "{cut}");
    assert_eq!(cut["choices"][0]["finish_reason"], "length", "{cut}");

    for (body, rule) in [
        ("{\"messages\": [", "not JSON"),
        ("{\"messages\": []}", "messages must be a non-empty array"),
        (
            "{\"messages\": [{\"role\": \"robot\", \"content\": \"hi\"}]}",
            "role",
        ),
        (
            "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": -3}",
            "max_tokens",
        ),
        (
            "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 5000}",
            "context_length_exceeded",
        ),
    ] {
        let (status, answer) = chat(&server, body);
        assert_eq!(status, 400, "{body} -> {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(rule), "{body} -> {answer}");
    }
    // Still serving after the bad requests.
    good_answer(&server, &question);
    println!(
        "RSS after the answers {} MiB",
        server.rss_kib().expect("VmRSS of a live server") / 1024
    );
}

/// The process ids whose parent is `pid` (from `/proc/*/stat`).
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the parenthesised command name: state, then the parent's pid.
        let after_name = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        let parent = after_name.split_whitespace().nth(1);
        if parent.and_then(|p| p.parse::<u32>().ok()) == Some(pid) {
            children.push(child);
        }
    }
    children
}

#[test]
fn dropping_the_handle_kills_and_reaps_the_server() {
    let Some(server) = LocalModel::start() else {
        return;
    };
    let pid = server.pid();
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists(), "the server runs as {pid}");
    let children = children_of(pid);
    drop(server);
    assert!(!proc_dir.exists(), "server {pid} still exists after drop");
    for child in children {
        assert!(
            !std::path::Path::new(&format!("/proc/{child}")).exists(),
            "the server's child {child} outlived it"
        );
    }
}
