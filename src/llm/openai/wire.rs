//! The chat-completions wire format: the request milo sends and the part of the answer it
//! reads, as the project's own serde types.

use crate::llm::{reported_tokens, Attachment, ChatMessage, ChatRequest, Speaker};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Largest seed sent: 2^53 - 1, the largest integer every JSON reader (JavaScript included)
/// holds exactly. A larger seed is sent reduced modulo 2^53.
const SEED_MASK: u64 = (1 << 53) - 1;

/// The body of `POST {api_base}/chat/completions`.
#[derive(Debug, Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
}

/// One message as sent.
#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: Speaker,
    content: Cow<'a, str>,
}

/// The JSON body asking `model` to answer `request`, its attachments inlined into the last
/// user message (see [`inline`]), asking for at most `token_cap` completion tokens when set.
pub(super) fn request_body(model: &str, request: &ChatRequest, token_cap: Option<u32>) -> Vec<u8> {
    let body = WireRequest {
        model,
        messages: inline(&request.messages, &request.attachments),
        max_tokens: [request.max_tokens, token_cap].into_iter().flatten().min(),
        temperature: request.temperature,
        seed: request.seed.map(|s| s & SEED_MASK),
    };
    serde_json::to_vec(&body).expect("a chat request serializes")
}

/// The messages with each attachment appended to the last user message as a fenced block
/// headed by its file name (a new user message holds them when there is no user message).
fn inline<'a>(messages: &'a [ChatMessage], attachments: &[Attachment]) -> Vec<WireMessage<'a>> {
    let mut wire: Vec<WireMessage> = messages
        .iter()
        .map(|m| WireMessage {
            role: m.role,
            content: Cow::Borrowed(m.content.as_str()),
        })
        .collect();
    if attachments.is_empty() {
        return wire;
    }
    let last_user = match wire.iter().rposition(|m| m.role == Speaker::User) {
        Some(index) => index,
        None => {
            wire.push(WireMessage {
                role: Speaker::User,
                content: Cow::Borrowed(""),
            });
            wire.len() - 1
        }
    };
    let content = wire[last_user].content.to_mut();
    for attachment in attachments {
        if !content.is_empty() {
            content.push_str("\n\n");
        }
        content.push_str(&fenced(attachment));
    }
    wire
}

/// `### NAME` and the text in a fence longer than any run of backticks inside it.
fn fenced(attachment: &Attachment) -> String {
    let longest_run = attachment
        .content
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((longest_run + 1).max(3));
    let text = attachment
        .content
        .strip_suffix('\n')
        .unwrap_or(&attachment.content);
    format!("### {}\n{fence}\n{text}\n{fence}", attachment.name)
}

/// The part of a chat completion milo reads.
#[derive(Debug, Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    message: WireAnswer,
}

#[derive(Debug, Deserialize)]
struct WireAnswer {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// What a chat completion says: the first choice's text and the tokens the server counted
/// (0 where it reports no `usage`, or a `usage` without a count).
#[derive(Debug, PartialEq)]
pub(super) struct Answer {
    /// `choices[0].message.content`.
    pub text: String,
    /// `usage.prompt_tokens`, or 0.
    pub prompt_tokens: u64,
    /// `usage.completion_tokens`, or 0.
    pub completion_tokens: u64,
}

/// The answer in `body`, or what is wrong with it (malformed or truncated JSON, no choices,
/// no text), naming the JSON path at fault.
pub(super) fn parse_answer(body: &[u8]) -> Result<Answer, String> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let response: WireResponse = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at {path}")
        };
        format!("not a chat completion{at}: {}", e.inner())
    })?;
    de.end()
        .map_err(|e| format!("not a chat completion: {e} after the JSON"))?;
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or("the answer has no choices")?;
    let text = choice
        .message
        .content
        .ok_or("choices[0].message.content is missing or null")?;
    let usage = response.usage;
    let prompt_tokens = usage.as_ref().and_then(|u| u.prompt_tokens).unwrap_or(0);
    let completion_tokens = usage
        .as_ref()
        .and_then(|u| u.completion_tokens)
        .unwrap_or(0);
    Ok(Answer {
        text,
        prompt_tokens: reported_tokens("usage.prompt_tokens", prompt_tokens)?,
        completion_tokens: reported_tokens("usage.completion_tokens", completion_tokens)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_gives_its_first_choice_and_its_token_counts() {
        let body = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}},
            {"message":{"content":"other"}}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#;
        let answer = parse_answer(body).unwrap();
        assert_eq!(
            answer,
            Answer {
                text: "hi".into(),
                prompt_tokens: 12,
                completion_tokens: 3
            }
        );
        let bare = parse_answer(br#"{"choices":[{"message":{"content":"ok"}}]}"#).unwrap();
        assert_eq!((bare.prompt_tokens, bare.completion_tokens), (0, 0));
        let null = parse_answer(br#"{"choices":[{"message":{"content":"ok"}}],"usage":null}"#);
        assert_eq!(null.unwrap().prompt_tokens, 0);
    }

    #[test]
    fn a_bad_answer_says_what_is_wrong() {
        let e = parse_answer(b"<html>busy</html>").unwrap_err();
        assert!(e.starts_with("not a chat completion"), "{e}");
        let e = parse_answer(br#"{"choices":[{"message":{"content":"hel"#).unwrap_err();
        assert!(e.contains("EOF"), "{e}");
        let e = parse_answer(br#"{"choices":[]}"#).unwrap_err();
        assert!(e.contains("no choices"), "{e}");
        let e = parse_answer(
            br#"{"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":18446744073709551615}}"#,
        )
        .unwrap_err();
        assert!(
            e.contains("usage.prompt_tokens") && e.contains("18446744073709551615"),
            "{e}"
        );
        let e = parse_answer(br#"{"choices":[{"message":{"content":null}}]}"#).unwrap_err();
        assert!(e.contains("content"), "{e}");
        let e = parse_answer(br#"{"choices":[{"message":{"content":7}}]}"#).unwrap_err();
        assert!(e.contains("choices[0].message.content"), "{e}");
        let e = parse_answer(br#"{"choices":[]} {}"#).unwrap_err();
        assert!(e.contains("after the JSON"), "{e}");
    }

    #[test]
    fn attachments_go_into_the_last_user_message_in_fences_longer_than_their_backticks() {
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new(Speaker::System, "be brief"),
                ChatMessage::new(Speaker::User, "first"),
                ChatMessage::new(Speaker::Assistant, "bad"),
                ChatMessage::new(Speaker::User, "fix it"),
            ],
            attachments: vec![
                Attachment {
                    name: "parent.toml".into(),
                    content: "a = 1\n".into(),
                },
                Attachment {
                    name: "notes.md".into(),
                    content: "```x```".into(),
                },
            ],
            workspace: vec![Attachment {
                name: "start.json".into(),
                content: "{\"values\": [1.0]}".into(),
            }],
            max_tokens: Some(100),
            temperature: None,
            seed: Some(u64::MAX),
            ..ChatRequest::default()
        };
        let body = |cap| -> serde_json::Value {
            serde_json::from_slice(&request_body("m", &request, cap)).unwrap()
        };
        assert_eq!(
            body(Some(40))["max_tokens"],
            40,
            "the backend's cap clamps the ask"
        );
        assert_eq!(
            body(Some(1000))["max_tokens"],
            100,
            "a cap above the ask changes nothing"
        );
        let body = body(None);
        assert_eq!(body["model"], "m");
        assert_eq!(body["max_tokens"], 100);
        assert!(body.get("temperature").is_none());
        assert_eq!(body["seed"], SEED_MASK);
        assert!(
            !body.to_string().contains("start.json"),
            "workspace files are not sent"
        );
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert_eq!(messages[1]["content"], "first");
        assert_eq!(
            messages[3]["content"],
            "fix it\n\n### parent.toml\n```\na = 1\n```\n\n### notes.md\n````\n```x```\n````"
        );
    }

    #[test]
    fn attachments_without_a_user_message_make_one() {
        let request = ChatRequest {
            messages: vec![ChatMessage::new(Speaker::System, "s")],
            attachments: vec![Attachment {
                name: "a.txt".into(),
                content: "x".into(),
            }],
            ..ChatRequest::default()
        };
        let body: serde_json::Value =
            serde_json::from_slice(&request_body("m", &request, None)).unwrap();
        assert_eq!(body["messages"][1]["role"], "user");
        assert_eq!(body["messages"][1]["content"], "### a.txt\n```\nx\n```");
    }
}
