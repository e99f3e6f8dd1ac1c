//! Steady-state serving traffic used to pad a log to a requested size: uvicorn access lines and
//! the engine's periodic stats line, written straight into a buffer (no per-line allocation),
//! so the simulator can write gigabytes quickly.

use std::io::{self, Write};

use crate::clock::SimTime;
use crate::record::Renderer;
use crate::seed::Seed;

/// Access lines per simulated second.
const REQUESTS_PER_SEC: u64 = 40;
/// The stats logger's interval.
const STATS_INTERVAL_US: u64 = 10_000_000;
const BUFFER_BYTES: usize = 1 << 20;

/// A block of traffic written by one API server.
#[derive(Clone, Debug)]
pub struct Traffic {
    /// The API server's prefix (with its colour bytes), empty if unprefixed.
    pub prefix: Vec<u8>,
    pub start: SimTime,
    pub bytes: u64,
    pub seed: Seed,
}

/// What a traffic block wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub bytes: u64,
    pub lines: u64,
    pub end: SimTime,
}

/// Simulated duration of `bytes` of traffic (to shift the events that follow it).
pub fn duration_us(bytes: u64, prefix_len: usize) -> u64 {
    let line = 72 + prefix_len as u64;
    let lines = bytes / line;
    lines * 1_000_000 / REQUESTS_PER_SEC
}

impl Traffic {
    /// Write at least `self.bytes` bytes of whole lines to `out`.
    pub fn write_to(&self, r: &Renderer<'_>, out: &mut dyn Write) -> io::Result<Written> {
        let mut rng = self.seed.derive("traffic", 0).rng();
        let mut buf: Vec<u8> = Vec::with_capacity(BUFFER_BYTES + 4096);
        let mut written = Written {
            end: self.start,
            ..Written::default()
        };
        let step_us = 1_000_000 / REQUESTS_PER_SEC;
        let mut t = self.start;
        let mut next_stats = self.start.0 + STATS_INTERVAL_US;
        let stats_spec = r.profile.msg("engine_stats").cloned();
        // The access lines are drawn from a table rendered once: a copy per line instead of
        // formatting, which keeps padding at memory speed.
        let table = self.access_lines(&mut rng);
        while written.bytes < self.bytes {
            let x = rng.next_u64();
            t = t.plus_us(step_us / 2 + (x & 0x3ff) * step_us / 1024);
            let (a, b) = table.index[(x >> 52) as usize % ACCESS_LINES];
            buf.extend_from_slice(&table.bytes[a..b]);
            written.lines += 1;
            if t.0 >= next_stats {
                next_stats = t.0 + STATS_INTERVAL_US;
                if let Some(spec) = &stats_spec {
                    let gen = (x >> 44) % 9000;
                    buf.extend_from_slice(&self.prefix);
                    buf.extend_from_slice(
                        r.header(&spec.level, t, spec.file(), spec.line())
                            .as_bytes(),
                    );
                    let text = spec
                        .text
                        .replace("${prompt}", &format!("{:.1}", gen as f64 * 0.17))
                        .replace("${gen}", &format!("{:.1}", gen as f64 / 10.0))
                        .replace("${running}", &(1 + (x >> 8) % 40).to_string())
                        .replace("${kv}", &format!("{:.1}", ((x >> 16) % 600) as f64 / 10.0))
                        .replace("${hit}", &format!("{:.1}", ((x >> 24) % 700) as f64 / 10.0));
                    buf.extend_from_slice(text.as_bytes());
                    buf.push(b'\n');
                    written.lines += 1;
                }
            }
            if buf.len() >= BUFFER_BYTES {
                out.write_all(&buf)?;
                written.bytes += buf.len() as u64;
                buf.clear();
            }
        }
        if !buf.is_empty() {
            out.write_all(&buf)?;
            written.bytes += buf.len() as u64;
        }
        written.end = t;
        Ok(written)
    }
}

/// Distinct access lines in the table.
const ACCESS_LINES: usize = 4096;

/// Pre-rendered access lines: `bytes[a..b]` for each `(a, b)` in `index`.
struct AccessTable {
    bytes: Vec<u8>,
    index: Vec<(usize, usize)>,
}

impl Traffic {
    fn access_lines(&self, rng: &mut crate::seed::Rng) -> AccessTable {
        let mut num = itoa_buf();
        let mut t = AccessTable {
            bytes: Vec::with_capacity(ACCESS_LINES * (80 + self.prefix.len())),
            index: Vec::with_capacity(ACCESS_LINES),
        };
        for _ in 0..ACCESS_LINES {
            let x = rng.next_u64();
            let a = t.bytes.len();
            let buf = &mut t.bytes;
            buf.extend_from_slice(&self.prefix);
            buf.extend_from_slice(b"INFO:     10.0.");
            buf.extend_from_slice(num.format((x >> 10) & 3));
            buf.push(b'.');
            buf.extend_from_slice(num.format(2 + ((x >> 12) & 0xff) % 248));
            buf.push(b':');
            buf.extend_from_slice(num.format(32_768 + ((x >> 20) & 0x7fff) % 28_000));
            let path: &[u8] = if (x >> 40) & 3 == 0 {
                b" - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
            } else if (x >> 40) & 0x3f == 1 {
                b" - \"GET /health HTTP/1.1\" 200 OK\n"
            } else {
                b" - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
            };
            buf.extend_from_slice(path);
            t.index.push((a, t.bytes.len()));
        }
        t
    }
}

/// A reusable decimal formatter (no allocation per number).
struct Itoa {
    buf: [u8; 20],
    start: usize,
}

fn itoa_buf() -> Itoa {
    Itoa {
        buf: [0; 20],
        start: 20,
    }
}

impl Itoa {
    fn format(&mut self, mut n: u64) -> &[u8] {
        let mut i = 20;
        loop {
            i -= 1;
            self.buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.start = i;
        &self.buf[self.start..]
    }
}
