//! Merging per-process event streams into one file, the way concurrent writers share a file.
//!
//! Main function: [`render_launch`]. Events are ordered by their instant (ties broken by the
//! seed); each process's own order is kept. A record larger than the stdio buffer (8 KiB) may
//! reach the file in several `write(2)` calls, so another process's bytes can land between
//! them — mid-record and sometimes mid-line ([`Chunk`], `interleaved`).

use crate::clock::SimTime;
use crate::record::{Event, Renderer};
use crate::script::LaunchLog;
use crate::seed::Seed;

/// Python's `TextIOWrapper` flushes at this size; a record above it is several writes.
pub const STDIO_BUFFER_BYTES: usize = 8192;

/// One `write(2)`.
#[derive(Clone, Debug)]
pub struct Chunk {
    pub t: SimTime,
    pub proc: usize,
    /// The writing process's pid (a process that decorates its logs changes `proc`, not this).
    pub pid: u32,
    pub bytes: Vec<u8>,
    /// Offset of the root-cause line inside this chunk.
    pub mark: Option<usize>,
    /// The chunk ends in the middle of a line (the record continues in a later chunk).
    pub ends_mid_line: bool,
}

/// A launch as the sequence of writes that reached the file.
#[derive(Clone, Debug, Default)]
pub struct RenderedLaunch {
    pub chunks: Vec<Chunk>,
    /// A line of this launch contains bytes of two processes.
    pub interleaved: bool,
}

impl RenderedLaunch {
    pub fn len_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.bytes.len()).sum()
    }
}

/// Render and merge a launch. `split_percent` is the chance that a record above the stdio
/// buffer is split into several writes.
pub fn render_launch(
    log: &LaunchLog,
    r: &Renderer<'_>,
    seed: Seed,
    split_percent: u64,
) -> RenderedLaunch {
    let mut rng = seed.derive("interleave", 0).rng();
    // (time, tiebreak, process sequence) keeps each process's order: its instants increase.
    let mut order: Vec<(SimTime, u64, usize)> = log
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.t, rng.next_u64(), i))
        .collect();
    order.sort();
    let mut pieces: Vec<Chunk> = Vec::with_capacity(order.len());
    for (_, _, i) in order {
        let ev: &Event = &log.events[i];
        let proc = &log.procs[ev.proc];
        let out = r.render(ev, proc);
        if out.bytes.len() > STDIO_BUFFER_BYTES && rng.chance(split_percent) {
            let mut start = 0;
            while start < out.bytes.len() {
                let mut end = (start + STDIO_BUFFER_BYTES).min(out.bytes.len());
                // The root-cause line is never cut: truth must be able to quote it whole.
                if let Some(m) = out.mark_offset {
                    let line_end = out.bytes[m..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(out.bytes.len(), |p| m + p + 1);
                    if end > m && end < line_end && m > start {
                        end = m;
                    }
                }
                let mark = out
                    .mark_offset
                    .filter(|&m| m >= start && m < end)
                    .map(|m| m - start);
                pieces.push(Chunk {
                    t: ev.t,
                    proc: ev.proc,
                    pid: proc.pid,
                    bytes: out.bytes[start..end].to_vec(),
                    mark,
                    ends_mid_line: end < out.bytes.len() && out.bytes[end - 1] != b'\n',
                });
                start = end;
            }
        } else {
            // A progress bar's refresh ends without a newline.
            let ends_mid_line = out.bytes.last().is_some_and(|&b| b != b'\n');
            pieces.push(Chunk {
                t: ev.t,
                proc: ev.proc,
                pid: proc.pid,
                bytes: out.bytes,
                mark: out.mark_offset,
                ends_mid_line,
            });
        }
    }
    // Writes of a split record are separate syscalls: a write of another process that was due at
    // the same moment may land between them.
    let mut k = 0;
    while k + 2 < pieces.len() {
        if pieces[k].proc == pieces[k + 1].proc
            && pieces[k + 2].proc != pieces[k].proc
            && is_continuation(&pieces[k], &pieces[k + 1])
            && pieces[k + 2].t.0.saturating_sub(pieces[k].t.0) < 2_000
            && rng.chance(50)
        {
            pieces.swap(k + 1, k + 2);
            k += 2;
        } else {
            k += 1;
        }
    }
    RenderedLaunch {
        interleaved: interleaved(&pieces),
        chunks: pieces,
    }
}

/// Whether a line of these writes, in file order, holds bytes of two writers as the text shows
/// them: a write that ends mid-line followed by another process's, or by a record of the same
/// process on a line that does not begin with that process's prefix (a bare progress bar left
/// unfinished, then a log record: nothing on the line says they are one writer's) — not by the
/// rest of a record split across writes, nor by the bar's next refresh.
pub fn interleaved(chunks: &[Chunk]) -> bool {
    // The pid in the prefix the current line begins with, if it begins with one.
    let mut head: Option<u32> = None;
    let mut at_line_start = true;
    let mut prev: Option<&Chunk> = None;
    for c in chunks {
        if let Some(w0) = prev.filter(|p| p.ends_mid_line) {
            let split = c.proc == w0.proc && is_continuation(w0, c);
            let refresh = c.proc == w0.proc && c.bytes.first() == Some(&b'\r');
            let own_line = c.pid == w0.pid && head == Some(c.pid);
            if !split && !refresh && !own_line {
                return true;
            }
        }
        let tail = match c.bytes.iter().rposition(|&b| b == b'\n') {
            Some(nl) => {
                at_line_start = true;
                &c.bytes[nl + 1..]
            }
            None => &c.bytes[..],
        };
        if at_line_start && !tail.is_empty() {
            head = prefix_pid(tail);
            at_line_start = false;
        }
        prev = Some(c);
    }
    false
}

/// The pid of the `(NAME pid=N)` prefix `line` begins with (after colour codes).
fn prefix_pid(line: &[u8]) -> Option<u32> {
    let mut l = line;
    while let Some(rest) = l.strip_prefix(b"\x1b[") {
        let end = rest.iter().position(|&b| b == b'm')?;
        l = &rest[end + 1..];
    }
    let close = l.strip_prefix(b"(")?.iter().position(|&b| b == b')')?;
    let inner = std::str::from_utf8(&l[1..1 + close]).ok()?;
    inner
        .rsplit_once("pid=")?
        .1
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn is_continuation(a: &Chunk, b: &Chunk) -> bool {
    a.t == b.t && a.bytes.len() == STDIO_BUFFER_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(t: u64, proc: usize, pid: u32, bytes: &str) -> Chunk {
        Chunk {
            t: SimTime(t),
            proc,
            pid,
            bytes: bytes.as_bytes().to_vec(),
            mark: None,
            ends_mid_line: !bytes.ends_with('\n'),
        }
    }

    #[test]
    fn a_line_is_interleaved_when_its_text_shows_two_writers() {
        let bar = "\rCapturing CUDA graphs:   1%|          | 1/51";
        let record = "(Worker_TP0 pid=7) ERROR 06-18 02:30:15 [x.py:1] boom\n";
        // A bare bar, then a record of the same process: nothing on the line says one writer.
        assert!(interleaved(&[chunk(1, 0, 7, bar), chunk(2, 1, 7, record)]));
        // The bar on a line that begins with that process's prefix: one writer.
        let prefixed = "(Worker_TP0 pid=7) Capturing CUDA graphs:   0%|";
        assert!(!interleaved(&[
            chunk(1, 0, 7, prefixed),
            chunk(2, 0, 7, bar),
            chunk(3, 1, 7, record)
        ]));
        // Another process's record after a bar always shares the line.
        let other = "(Worker_TP1 pid=8) ERROR 06-18 02:30:15 [x.py:1] boom\n";
        assert!(interleaved(&[
            chunk(1, 0, 7, prefixed),
            chunk(2, 2, 8, other)
        ]));
        // Whole lines never interleave.
        assert!(!interleaved(&[
            chunk(1, 1, 7, record),
            chunk(2, 2, 8, other)
        ]));
        assert_eq!(
            prefix_pid(b"\x1b[0;36m(EngineCore_DP0 pid=42)\x1b[0;0m x"),
            Some(42)
        );
        assert_eq!(prefix_pid(b"Capturing"), None);
    }
}
