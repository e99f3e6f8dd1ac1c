//! Readiness over HTTP: `GET /health` with short timeouts, on plain `http://` URLs.
//!
//! Main function: [`probe`]. vLLM binds its socket before the engine is up, so a connection may
//! be accepted and never answered: every step has a timeout, and only a 200 counts.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

const CONNECT_TIMEOUT_MS: u64 = 300;
const IO_TIMEOUT_MS: u64 = 1_000;
const RESPONSE_BYTES_MAX: u64 = 64 << 10;

/// A parsed `http://host:port/path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthUrl {
    pub host: String,
    pub port: u16,
    pub path: String,
}

impl HealthUrl {
    pub fn parse(url: &str) -> Result<HealthUrl, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("health URL `{url}`: only http:// is supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h.trim_matches(|c| c == '[' || c == ']').to_string(),
                p.parse::<u16>()
                    .map_err(|_| format!("health URL `{url}`: bad port `{p}`"))?,
            ),
            _ => (authority.to_string(), 80),
        };
        if host.is_empty() {
            return Err(format!("health URL `{url}`: no host"));
        }
        Ok(HealthUrl { host, port, path })
    }

    pub fn for_port(port: u16) -> HealthUrl {
        HealthUrl {
            host: "127.0.0.1".into(),
            port,
            path: "/health".into(),
        }
    }
}

impl std::fmt::Display for HealthUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}:{}{}", self.host, self.port, self.path)
    }
}

/// One probe: `Some(status)` if the server answered, `None` if it did not (refused, timed out,
/// closed without a status line).
pub fn probe(url: &HealthUrl) -> Option<u16> {
    let addrs: Vec<SocketAddr> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .ok()?
        .collect();
    let addr = addrs.first()?;
    let mut s = TcpStream::connect_timeout(addr, Duration::from_millis(CONNECT_TIMEOUT_MS)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(IO_TIMEOUT_MS)))
        .ok()?;
    s.set_write_timeout(Some(Duration::from_millis(IO_TIMEOUT_MS)))
        .ok()?;
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: faultkit\r\nConnection: close\r\n\r\n",
        url.path, url.host, url.port
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    let _ = s.take(RESPONSE_BYTES_MAX).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let status = text.lines().next()?.split_whitespace().nth(1)?;
    status.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        assert_eq!(
            HealthUrl::parse("http://127.0.0.1:8000/health").unwrap(),
            HealthUrl::for_port(8000)
        );
        let u = HealthUrl::parse("http://gpu1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("gpu1", 80, "/")
        );
        assert!(HealthUrl::parse("https://x/health").is_err());
        assert!(HealthUrl::parse("http://x:notaport/").is_err());
    }

    #[test]
    fn silent_and_closed_ports_are_not_ready() {
        // A listener that never answers: the probe gives up within its timeouts.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(probe(&HealthUrl::for_port(port)), None);
        drop(l);
        assert_eq!(probe(&HealthUrl::for_port(port)), None);
    }
}
