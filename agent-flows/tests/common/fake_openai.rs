//! A fake OpenAI-compatible model for the CLI tests that need a tool call: it speaks the
//! chat-completions wire format over plain HTTP/1.1 (one request per connection).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// A fake OpenAI-compatible server on a free port: the first request of a turn (no tool
/// message yet) gets a call of `tool` with `args`; a request holding a tool message gets the
/// answer `The result is <its content>.` Every request body is kept.
pub struct FakeModel {
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl FakeModel {
    pub fn start(tool: &'static str, args: Value) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                if let Some(body) = answer(stream, tool, &args) {
                    seen.lock().unwrap().push(body);
                }
            }
        });
        FakeModel { url, requests }
    }

    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// Reads one request from `stream` and answers it; returns its JSON body.
fn answer(mut stream: TcpStream, tool: &str, args: &Value) -> Option<Value> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let request: Value = serde_json::from_slice(&body).ok()?;
    let tool_message = request["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .cloned();
    let message = match tool_message {
        None => json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": tool, "arguments": args.to_string()},
        }]}),
        Some(result) => json!({
            "role": "assistant",
            "content": format!("The result is {}.", result["content"].as_str().unwrap_or("?")),
        }),
    };
    let finish = if message["tool_calls"].is_array() {
        "tool_calls"
    } else {
        "stop"
    };
    // Distinct ids: messages with the same id replace each other in the conversation.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let reply = json!({
        "id": format!("chatcmpl-fake-{id}"), "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    })
    .to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
        reply.len()
    );
    Some(request)
}
