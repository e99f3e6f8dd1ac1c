//! The fake server's HTTP side: `GET /health`, `GET /v1/models`, `POST /v1/completions` on a
//! real socket, with uvicorn's access lines.
//!
//! Main function: [`serve`]. One connection at a time is enough for health checks and tests;
//! every read has a timeout so a silent client cannot stall the server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Largest request head or body read.
const REQUEST_BYTES_MAX: usize = 1 << 20;
const READ_TIMEOUT_MS: u64 = 2_000;

/// Serves on `listener` until the process exits. `access` receives each uvicorn access line.
/// Once `engine_dead` is set, `/health` answers 503 and requests fail, as vLLM's do when its
/// engine has died (`EngineDeadError`).
pub fn serve(
    listener: TcpListener,
    model: String,
    engine_dead: Arc<AtomicBool>,
    access: impl Fn(String),
) {
    for conn in listener.incoming() {
        let Ok(stream) = conn else {
            continue;
        };
        if let Some(line) = handle(stream, &model, engine_dead.load(Ordering::Relaxed)) {
            access(line);
        }
    }
}

fn handle(mut stream: TcpStream, model: &str, engine_dead: bool) -> Option<String> {
    let peer = stream.peer_addr().ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(READ_TIMEOUT_MS)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut content_length = 0usize;
    let mut head_bytes = request_line.len();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            break;
        }
        head_bytes += h.len();
        if head_bytes > REQUEST_BYTES_MAX {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                content_length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; content_length.min(REQUEST_BYTES_MAX)];
    reader.read_exact(&mut body).ok()?;
    let (code, reason, json) = if engine_dead {
        respond_engine_dead(&method, &path)
    } else {
        respond(&method, &path, &body, model)
    };
    let payload = json.unwrap_or_default();
    let resp = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{payload}",
        payload.len()
    );
    let _ = stream.write_all(resp.as_bytes());
    let _ = stream.flush();
    Some(format!(
        "INFO:     {}:{} - \"{method} {path} HTTP/1.1\" {code} {reason}\n",
        peer.ip(),
        peer.port()
    ))
}

/// vLLM's answers once its engine is dead: `/health` 503 (health.py catches EngineDeadError),
/// a request 500 with the engine's error.
fn respond_engine_dead(method: &str, path: &str) -> (u16, &'static str, Option<String>) {
    let path = path.split('?').next().unwrap_or(path);
    match (method, path) {
        ("GET", "/health") => (503, "Service Unavailable", None),
        _ => (
            500,
            "Internal Server Error",
            Some(
                r#"{"error":{"message":"EngineCore encountered an issue. See stack trace (above) for the root cause.","type":"InternalServerError","code":500}}"#
                    .to_string(),
            ),
        ),
    }
}

fn respond(
    method: &str,
    path: &str,
    body: &[u8],
    model: &str,
) -> (u16, &'static str, Option<String>) {
    let path = path.split('?').next().unwrap_or(path);
    match (method, path) {
        ("GET", "/health") => (200, "OK", None),
        ("GET", "/v1/models") => (
            200,
            "OK",
            Some(
                serde_json::json!({
                    "object": "list",
                    "data": [{"id": model, "object": "model", "owned_by": "vllm", "root": model}]
                })
                .to_string(),
            ),
        ),
        ("POST", "/v1/completions") => {
            let req: serde_json::Value = match serde_json::from_slice(body) {
                Ok(v) => v,
                Err(e) => {
                    return (
                        400,
                        "Bad Request",
                        Some(
                            serde_json::json!({"error": {"message": e.to_string(), "type": "BadRequestError", "code": 400}})
                                .to_string(),
                        ),
                    )
                }
            };
            let prompt = req.get("prompt").and_then(|p| p.as_str()).unwrap_or("");
            let max_tokens = req
                .get("max_tokens")
                .and_then(|m| m.as_u64())
                .unwrap_or(16)
                .min(64);
            let text: String = std::iter::repeat_n(" token", max_tokens as usize).collect();
            (
                200,
                "OK",
                Some(
                    serde_json::json!({
                        "id": "cmpl-faultkit",
                        "object": "text_completion",
                        "model": model,
                        "choices": [{"index": 0, "text": text, "finish_reason": "length"}],
                        "usage": {"prompt_tokens": prompt.split_whitespace().count(), "completion_tokens": max_tokens}
                    })
                    .to_string(),
                ),
            )
        }
        (_, "/health" | "/v1/models" | "/v1/completions") => (
            405,
            "Method Not Allowed",
            Some(r#"{"detail":"Method Not Allowed"}"#.to_string()),
        ),
        _ => (
            404,
            "Not Found",
            Some(r#"{"detail":"Not Found"}"#.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_health_models_and_completions() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let dead = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&dead);
        std::thread::spawn(move || serve(l, "m".into(), flag, move |line| tx.send(line).unwrap()));
        let get = |req: String| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(req.as_bytes()).unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        assert!(
            get("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".into()).starts_with("HTTP/1.1 200 OK")
        );
        assert!(rx
            .recv()
            .unwrap()
            .contains("\"GET /health HTTP/1.1\" 200 OK"));
        assert!(get("GET /v1/models HTTP/1.1\r\n\r\n".into()).contains("\"id\":\"m\""));
        let body = r#"{"model":"m","prompt":"hi","max_tokens":3}"#;
        let r = get(format!(
            "POST /v1/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        assert!(r.contains("\"text\":\" token token token\""), "{r}");
        assert!(get("GET /nope HTTP/1.1\r\n\r\n".into()).starts_with("HTTP/1.1 404"));
        dead.store(true, Ordering::Relaxed);
        assert!(get("GET /health HTTP/1.1\r\n\r\n".into()).starts_with("HTTP/1.1 503"));
        assert!(get(format!(
            "POST /v1/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ))
        .starts_with("HTTP/1.1 500"));
    }
}
