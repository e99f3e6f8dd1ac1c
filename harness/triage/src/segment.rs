//! Launches: where one start of the server begins in a file that several starts wrote.
//!
//! A launch begins at the API server's banner (the logo or `vLLM API server version`), at its
//! `non-default args` / `args:` line when the banner is missing, at an argparse `usage:` block,
//! or at an engine's `Initializing … engine` line with no API server before it. Main functions:
//! [`boundaries`] over a byte range and [`last_boundary`], which searches backwards from the end
//! so the newest launch of a huge file costs what the launch costs.

use aho_corasick::AhoCorasick;

use super::grammar::{head, parse_line_in};
use super::layers::Layers;
use super::scan::{Candidates, Hit, Scan, LINE_BYTES_MAX};

const NEEDLES: &[&str] = &[
    "vLLM API server version ",
    "vLLM server version ",
    "non-default args: ",
    "] args: ",
    "usage: ",
    "version ",
    "Initializing a",
];

/// Backwards search reads the file in blocks of this size.
const BACKWARD_BLOCK_BYTES: usize = 4 << 20;
/// A banner line and the `non-default args` line of one launch are this close.
const BANNER_SPAN_LINES: usize = 12;

/// What marks a launch start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// Logo / version banner of the API server.
    Banner,
    /// `non-default args:` / `args:` (the banner may be missing).
    Args,
    /// argparse usage block.
    Usage,
    /// An engine started with no API server in front of it.
    Engine,
}

/// One launch start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boundary {
    /// Byte offset of the first line of the launch.
    pub offset: usize,
    pub mark: Mark,
    pub pid: Option<u32>,
}

fn line_start(b: &[u8], pos: usize) -> usize {
    memchr::memrchr(b'\n', &b[..pos]).map_or(0, |p| p + 1)
}

fn line_end(b: &[u8], pos: usize) -> usize {
    memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |p| pos + p)
}

/// `Initializing a V1 LLM engine (v…)`, `Initializing a V0 LLM engine`, `Initializing an LLM engine`.
pub fn is_engine_init(body: &str) -> bool {
    body.starts_with("Initializing a") && head(body, 40).contains("LLM engine")
}

/// A launch's configuration as vLLM prints it at every start: the API server's `non-default
/// args: {…}` / `args: …`, argparse's `Namespace(…)` a script prints, an engine's
/// `Initializing … engine (v…) with config: …`. It names settings (`max_lora_rank=16`,
/// `kv_cache_dtype=fp8`), never a failure.
pub fn is_config_dump(body: &str) -> bool {
    body.starts_with("non-default args: ")
        || body.starts_with("args: ")
        || body.starts_with("Namespace(")
        || is_engine_init(body)
}

/// A line as the analysis sees it: its first [`LINE_BYTES_MAX`] bytes.
fn bounded(line: &[u8]) -> &[u8] {
    &line[..line.len().min(LINE_BYTES_MAX)]
}

/// Classify the line at `start..end` as a launch mark.
fn mark_of(line: &[u8], layers: &Layers) -> Option<(Mark, Option<u32>)> {
    let p = parse_line_in(bounded(line), layers);
    let body = p.body.as_ref();
    if body.starts_with("vLLM API server version ") || body.starts_with("vLLM server version ") {
        return Some((Mark::Banner, p.pid));
    }
    if body.contains("█") && body.contains("  version ") {
        return Some((Mark::Banner, p.pid));
    }
    if body.starts_with("non-default args: ")
        || (body.starts_with("args: ") && p.location.is_some())
    {
        return Some((Mark::Args, p.pid));
    }
    if body.starts_with("usage: ")
        && p.level.is_none()
        && (body.contains("vllm") || body.contains("api_server"))
    {
        return Some((Mark::Usage, p.pid));
    }
    if body.starts_with("Initializing a V1 LLM engine")
        || body.starts_with("Initializing an LLM engine")
    {
        return Some((Mark::Engine, p.pid));
    }
    None
}

/// The first line of a launch whose banner is at `start`: the logo begins two lines earlier
/// (a header-only line and the first logo row).
fn banner_start(b: &[u8], start: usize, pid: Option<u32>, layers: &Layers) -> usize {
    let mut s = start;
    for _ in 0..2 {
        if s == 0 {
            break;
        }
        let prev = line_start(b, s - 1);
        let p = parse_line_in(bounded(&b[prev..s - 1]), layers);
        let logo_row = p.body.is_empty() || p.body.contains('█');
        // The logo is logged from entrypoints/utils.py, serve/utils/api_utils.py (0.23) or
        // common/startup.py (0.33): any record of the same process with a logo row.
        if p.pid == pid && p.location.is_some() && logo_row {
            s = prev;
        } else {
            break;
        }
    }
    s
}

/// All launch starts in `b`, in file order.
pub fn boundaries(b: &[u8]) -> Vec<Boundary> {
    let scan = Scan::new(Candidates::builtin(), b, 0, b.len());
    boundaries_from_hits(b, &scan.hits, &Layers::learn(b))
}

/// Launch starts among the candidate lines of one forward scan (the same pass that finds the
/// errors), so a file is searched once.
pub fn boundaries_from_hits(b: &[u8], hits: &[Hit], layers: &Layers) -> Vec<Boundary> {
    let mut raw: Vec<(usize, usize, Mark, Option<u32>)> = Vec::new();
    let mut last_line_start = usize::MAX;
    for h in hits {
        let ls = line_start(b, h.offset);
        if ls == last_line_start {
            continue;
        }
        last_line_start = ls;
        // A hole of NUL bytes ends the line before it: text after the hole starts afresh
        // (the hole and an old writer's next line share a physical line).
        let ls = memchr::memrchr(0, &b[ls..h.offset]).map_or(ls, |p| ls + p + 1);
        let le = line_end(b, h.offset);
        let line = &b[ls..le];
        // Only lines with a boundary word can be a launch start.
        if !NEEDLES
            .iter()
            .any(|n| memchr::memmem::find(line, n.as_bytes()).is_some())
        {
            continue;
        }
        if let Some((mark, pid)) = mark_of(line, layers) {
            raw.push((ls, le, mark, pid));
        }
    }
    merge(b, raw, layers)
}

/// Collapse the marks of one launch (banner, then args a few lines later; the engine line of a
/// launch that has an API server) into one boundary.
fn merge(b: &[u8], raw: Vec<(usize, usize, Mark, Option<u32>)>, layers: &Layers) -> Vec<Boundary> {
    let mut out: Vec<Boundary> = Vec::new();
    let mut last: Option<(usize, Mark, Option<u32>)> = None; // (line end offset, mark, pid)
    let starts: Vec<usize> = raw.iter().map(|r| r.0).collect();
    // An older writer's text after an argparse exit (see below): its API server's pid, the end
    // of its last mark, whether its engine has started.
    let mut older: Option<(Option<u32>, usize, bool)> = None;
    for (i, (ls, le, mark, pid)) in raw.into_iter().enumerate() {
        // A line torn at its head (the tail of a record header, `7]   █…`) as the first line
        // after an argparse exit: a relaunch truncated the file and wrote its short output over
        // the start of a server that was still writing, which goes on at its own offset. Its
        // banner, arguments and engine are that older server's, not a new launch; a banner after
        // its engine started, far after its last mark, or of another API server is one again.
        if let Some((older_pid, last_end, engine)) = older {
            let far = bytecount::count(&b[last_end.min(ls)..ls], b'\n') > BANNER_SPAN_LINES;
            let new_server = pid.is_some() && pid != older_pid;
            if !(mark == Mark::Banner && (engine || far || new_server)) {
                older = Some((older_pid, le, engine || mark == Mark::Engine));
                continue;
            }
            older = None;
        } else if let Some((prev_end, Mark::Usage, _)) = last {
            if first_line_after_argparse_is_torn(&b[prev_end.min(ls)..le], layers) {
                older = Some((pid, le, mark == Mark::Engine));
                continue;
            }
        }
        // Text after a hole of NUL bytes comes from a writer that was already writing before
        // the file was truncated: an older launch, never the start of a new one.
        if let Some((prev_end, _, _)) = last {
            if memchr::memchr(0, &b[prev_end.min(ls)..ls]).is_some() {
                continue;
            }
        }
        if let Some((prev_end, prev_mark, prev_pid)) = last {
            let between = &b[prev_end.min(ls)..ls];
            let lines_between = bytecount::count(between, b'\n');
            let same_launch = match (prev_mark, mark) {
                // Banner then args of the same API server.
                (Mark::Banner, Mark::Args) => prev_pid == pid && lines_between <= BANNER_SPAN_LINES,
                // The logo's rows are one record.
                (Mark::Banner, Mark::Banner) => prev_pid == pid && lines_between <= 3,
                // The engine of a launch that has an API server.
                (Mark::Banner | Mark::Args, Mark::Engine) => true,
                // An engine line after a launch with no engine of its own (argparse exited, or
                // another engine): a new launch, unless an API server that never starts in
                // the text writes after it — then it is an older server's engine, still
                // writing into the file after a relaunch truncated it.
                (Mark::Usage | Mark::Engine, Mark::Engine) => {
                    let next = starts.get(i + 1).copied().unwrap_or(b.len());
                    // Only an engine process of a server (prefixed, V1) can be an older
                    // server's: an offline V0 engine prints no prefix.
                    (prev_mark == Mark::Usage
                        && pid.is_some()
                        && only_argparse_between(between, layers))
                        || api_server_writes(&b[le.min(next)..next], layers)
                }
                _ => false,
            };
            if same_launch {
                if mark != Mark::Engine {
                    last = Some((le, mark.min(prev_mark), prev_pid));
                }
                continue;
            }
        }
        let offset = if mark == Mark::Banner {
            banner_start(b, ls, pid, layers)
        } else {
            ls
        };
        out.push(Boundary { offset, mark, pid });
        last = Some((le, mark, pid));
    }
    out
}

/// Whether the first line after argparse's own lines (its usage block and `error:` line) in
/// `text` is the rest of a line whose head another writer overwrote, read after the prefixes a
/// collector put in front of every line: the tail of a record header (`7]  …`), or — after the
/// `error:` line, when argparse's process has exited — an indented line (a torn logo row or
/// traceback line), which no process starts its output with.
fn first_line_after_argparse_is_torn(text: &[u8], layers: &Layers) -> bool {
    let mut after_error = false;
    for l in text.split(|&c| c == b'\n').map(bounded) {
        let l = &l[parse_line_in(l, layers).container_prefix.min(l.len())..];
        if l.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if memchr::memmem::find(l, b": error: ").is_some() {
            after_error = true;
            continue;
        }
        let indented = l.first().is_some_and(u8::is_ascii_whitespace);
        if indented && !after_error {
            // The usage block's continuation lines.
            continue;
        }
        return indented || torn_header_tail(l);
    }
    false
}

/// Whether a line starts with the tail of a vLLM record header (`7]  `, `py:347] `): what is
/// left of a record whose head another writer overwrote.
fn torn_header_tail(line: &[u8]) -> bool {
    let Some(close) = memchr::memchr(b']', &line[..line.len().min(32)]) else {
        return false;
    };
    let head = &line[..close];
    let digits = head.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    digits > 0
        && line.get(close + 1) == Some(&b' ')
        && head[..head.len() - digits]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':'))
        && head[..head.len() - digits]
            .last()
            .is_none_or(|&c| c == b':')
}

/// Whether `text` (between an argparse `usage:` line and an engine line) holds only argparse's
/// own lines and what a process prints while it imports vLLM (the platform it detected, its
/// plugins, Triton, vLLM's kernels): no config. A new launch's engine starts after its parent
/// has logged its config; an engine line right after an argparse exit is an older server's.
fn only_argparse_between(text: &[u8], layers: &Layers) -> bool {
    const IMPORT_TIME: &[&str] = &[
        "Automatically detected platform",
        "No platform detected",
        "Available plugins for group",
        "All plugins in this group",
        "Platform plugin",
        "Triton ",
        "Failed to import from vllm._C",
    ];
    text.split(|&c| c == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .all(|l| {
            let p = parse_line_in(bounded(l), layers);
            (p.level.is_none() && p.process.is_none())
                || IMPORT_TIME.iter().any(|w| p.body.starts_with(w))
                || is_plugin_entry(&p.body)
        })
}

/// vLLM's list of a plugin group's entries: `- NAME -> module:function`.
fn is_plugin_entry(body: &str) -> bool {
    body.strip_prefix("- ")
        .and_then(|r| r.split_once(" -> "))
        .is_some_and(|(name, target)| !name.contains(' ') && target.contains(':'))
}

/// Whether an `(APIServer pid=N)` line is among the first lines of `text` (bounded, so a huge
/// segment costs what its head costs).
fn api_server_writes(text: &[u8], layers: &Layers) -> bool {
    const HEAD_BYTES: usize = 1 << 20;
    let text = &text[..text.len().min(HEAD_BYTES)];
    text.split(|&c| c == b'\n').any(|line| {
        memchr::memmem::find(line, b"APIServer").is_some()
            && parse_line_in(bounded(line), layers)
                .process
                .is_some_and(|p| p.starts_with("APIServer"))
    })
}

/// The last launch start in `b`, searching backwards block by block.
pub fn last_boundary(b: &[u8]) -> Option<Boundary> {
    last_boundary_with_scan(b, Candidates::builtin(), &Layers::learn(b)).map(|(bd, _)| bd)
}

/// The last launch start in `b` and the scan of the bytes from it to the end, searching
/// backwards block by block: the newest launch of a huge file costs what the launch costs, and
/// its bytes are read once.
pub fn last_boundary_with_scan(
    b: &[u8],
    c: &Candidates,
    layers: &Layers,
) -> Option<(Boundary, Scan)> {
    let mut end = b.len();
    let mut later: Option<Scan> = None;
    // Blocks are scanned two at a time on two threads (the earlier one speculatively: it is
    // wasted if the later block holds the boundary).
    let mut ahead: Option<(usize, Scan)> = None;
    while end > 0 {
        let (start, block) = match ahead.take() {
            Some(x) => x,
            None => {
                let start = block_start(b, end);
                let prev = (start > 0).then(|| (block_start(b, start), start));
                let (block, prev_scan) = scan_pair(c, b, (start, end), prev);
                if let (Some((ps, _)), Some(sc)) = (prev, prev_scan) {
                    ahead = Some((ps, sc));
                }
                (start, block)
            }
        };
        // A banner a few lines before the block may belong to a boundary in it.
        let ctx = if start == 0 {
            0
        } else {
            let mut s = start;
            for _ in 0..BANNER_SPAN_LINES {
                if s == 0 {
                    break;
                }
                s = line_start(b, s - 1);
            }
            s
        };
        let ctx_scan = Scan::new(c, b, ctx, start);
        let mut hits = ctx_scan.hits.clone();
        hits.extend_from_slice(&block.hits);
        let found = boundaries_from_hits(b, &hits, layers);
        if let Some(last) = found.last().copied() {
            let mut scan = if last.offset < start {
                let mut head = Scan::new(c, b, last.offset, start);
                head.append(block);
                head
            } else {
                let mut blk = block;
                blk.keep_from(last.offset);
                blk
            };
            if let Some(l) = later {
                scan.append(l);
            }
            return Some((last, scan));
        }
        let mut blk = block;
        if let Some(l) = later {
            blk.append(l);
        }
        later = Some(blk);
        if start == 0 {
            break;
        }
        end = start;
    }
    None
}

/// Where the backward block that ends at `end` starts (a line start).
fn block_start(b: &[u8], end: usize) -> usize {
    let start = end.saturating_sub(BACKWARD_BLOCK_BYTES);
    if start == 0 {
        0
    } else {
        line_start(b, start)
    }
}

/// Scans `first` and, on a second thread, `second`.
fn scan_pair(
    c: &Candidates,
    b: &[u8],
    first: (usize, usize),
    second: Option<(usize, usize)>,
) -> (Scan, Option<Scan>) {
    match second {
        None => (Scan::new(c, b, first.0, first.1), None),
        Some((s2, e2)) => std::thread::scope(|sc| {
            let h = sc.spawn(|| Scan::new(c, b, s2, e2));
            let a = Scan::new(c, b, first.0, first.1);
            // A panic on the helper thread is a bug in the scan: scan again here instead.
            let other = h.join().unwrap_or_else(|_| Scan::new(c, b, s2, e2));
            (a, Some(other))
        }),
    }
}

/// The launch that contains the first line carrying `pid` (as `pid=N`, `[N]`, `pid N`).
pub fn pid_offset(b: &[u8], pid: u32, layers: &Layers) -> Option<usize> {
    let needles = [
        format!("pid={pid})"),
        format!("pid={pid},"),
        format!("process [{pid}]"),
        format!(" {pid} "),
        format!(":{pid}:"),
    ];
    let ac = AhoCorasick::new(&needles).ok()?;
    let uvicorn = memchr::memmem::Finder::new(needles[2].as_bytes());
    let mut from = 0;
    // Each line with a match is parsed once, then skipped: a long line naming the pid many
    // times costs one parse, not one per mention.
    while let Some(m) = ac.find(aho_corasick::Input::new(b).range(from..)) {
        let ls = line_start(b, m.start());
        let le = line_end(b, m.start());
        let line = &b[ls..le];
        if parse_line_in(bounded(line), layers).pid == Some(pid)
            || uvicorn.find(&line[m.start() - ls..]).is_some()
        {
            return Some(ls);
        }
        from = le + 1;
        if from >= b.len() {
            break;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_line_after_an_argparse_exit_is_an_older_writer() {
        // A relaunch with a typo truncated the file and wrote over the head of a server that was
        // still writing: its records go on after the argparse error, the first one torn.
        let log = "\
usage: vllm serve [model_tag] [options]
vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'abc'
7]        █     █     █▄   ▄█\r
(APIServer pid=5) INFO 12-03 17:15:25 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.31.0\r
(APIServer pid=5) INFO 12-03 17:15:25 [api_utils.py:286] non-default args: {'model_tag': 'm'}
(EngineCore pid=6) INFO 12-03 17:15:39 [core.py:129] Initializing a V1 LLM engine (v0.31.0) with config: x
(APIServer pid=9) INFO 12-03 18:02:07 [api_utils.py:347] vLLM server version 0.31.0, serving model m
";
        let b = boundaries(log.as_bytes());
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[0].mark, Mark::Usage);
        // Another API server's banner is a new launch again.
        assert_eq!(b[1].pid, Some(9));
        // Without the torn line, the banner after the exit is a launch of its own.
        let whole = log.replace("7]        █     █     █▄   ▄█\r\n", "");
        assert_eq!(boundaries(whole.as_bytes()).len(), 3);
        // Without prefixes, or with the pid reused (a container's API server), a relaunch after
        // the older server's engine started is a launch again; a `N] ` line that is not the
        // first after the error starts nothing.
        let plain = "usage: vllm serve [model_tag] [options]
vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'abc'
7]        █     █     █▄   ▄█\r
INFO 12-03 17:15:25 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.31.0\r
INFO 12-03 17:15:39 [core.py:129] Initializing a V1 LLM engine (v0.31.0) with config: x
INFO 12-03 18:02:07 [api_utils.py:347] vLLM server version 0.31.0, serving model m
";
        assert_eq!(boundaries(plain.as_bytes()).len(), 2, "{plain}");
        let later = "usage: vllm serve [model_tag] [options]
vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'abc'
warming up
0:00:01] warming up
INFO 12-03 18:02:07 [api_utils.py:347] vLLM server version 0.31.0, serving model m
";
        assert_eq!(boundaries(later.as_bytes()).len(), 2, "{later}");
        // Torn inside the message: the rest of a logo row, indented (0.34's capture).
        let body = log.replace("7]        █", "        █");
        assert_eq!(boundaries(body.as_bytes()).len(), 2, "{body}");
        // An indented line before the error line is argparse's usage, not a torn one.
        let usage = log.replace(
            "vllm serve: error:",
            "       [--port PORT]\nvllm serve: error:",
        );
        let usage = usage.replace("7]        █     █     █▄   ▄█\r\n", "");
        assert_eq!(boundaries(usage.as_bytes()).len(), 3, "{usage}");
        assert!(torn_header_tail(b"py:347] x") && torn_header_tail(b"7]  x"));
        assert!(
            !torn_header_tail(b"[1] x")
                && !torn_header_tail(b"a b] x")
                && !torn_header_tail(b"ab] x")
        );
    }

    #[test]
    fn banner_and_args_are_one_launch() {
        let log = "\
(APIServer pid=1) INFO 01-28 14:02:07 [utils.py:325] \r
(APIServer pid=1) INFO 01-28 14:02:07 [utils.py:325]        █     █     █▄   ▄█\r
(APIServer pid=1) INFO 01-28 14:02:07 [utils.py:325]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.15.1\r
(APIServer pid=1) INFO 01-28 14:02:07 [utils.py:325]   █▄█▀ █     █     █     █  model   m\r
(APIServer pid=1) INFO 01-28 14:02:07 [utils.py:325] 
(APIServer pid=1) INFO 01-28 14:02:07 [utils.py:261] non-default args: {'model_tag': 'm'}
(EngineCore_DP0 pid=2) INFO 01-28 14:02:26 [core.py:96] Initializing a V1 LLM engine (v0.15.1) with config: x
INFO 01-28 14:03:00 [x.py:1] other
(APIServer pid=9) INFO 01-28 15:02:07 [api_server.py:1839] vLLM API server version 0.11.0
(APIServer pid=9) INFO 01-28 15:02:07 [utils.py:233] non-default args: {'model_tag': 'm'}
";
        let b = boundaries(log.as_bytes());
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[0].offset, 0);
        assert_eq!(b[0].mark, Mark::Banner);
        assert_eq!(b[1].pid, Some(9));
        let last = last_boundary(log.as_bytes()).unwrap();
        assert_eq!(last, b[1]);
        assert_eq!(
            pid_offset(log.as_bytes(), 2, Layers::none()),
            Some(log.find("(EngineCore_DP0").unwrap())
        );
        assert_eq!(pid_offset(log.as_bytes(), 77, Layers::none()), None);
    }

    #[test]
    fn an_old_writer_after_a_hole_starts_no_launch_even_on_the_hole_line() {
        let mut log = b"usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'abc'\n".to_vec();
        log.extend_from_slice(&[0; 300]);
        log.extend_from_slice(b"(EngineCore_DP0 pid=2) INFO 01-28 14:02:26 [core.py:96] Initializing a V1 LLM engine (v0.15.1) with config: x\n");
        let b = boundaries(&log);
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(b[0].mark, Mark::Usage);
    }

    #[test]
    fn an_older_servers_engine_after_an_argparse_exit_starts_no_launch() {
        // A relaunch truncated the file (its writer keeps O_APPEND) and exited at argparse; the
        // older server, still starting, then fails: its engine line is no launch start.
        let older = "(EngineCore_DP0 pid=20) INFO 09-24 09:12:14 [core.py:97] Initializing a V1 LLM engine (v0.16.0) with config: x
(EngineCore_DP0 pid=20) ERROR 09-24 09:12:14 [core.py:1006] EngineCore failed to start.
(APIServer pid=10) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
";
        let log = format!(
            "usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'abc'\n{older}"
        );
        let b = boundaries(log.as_bytes());
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(b[0].mark, Mark::Usage);
        // A script's offline `LLM(...)` logs its config, then its engine starts: a new launch.
        let offline = format!(
            "usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'abc'\nINFO 09-24 09:13:01 [model.py:744] Resolved architecture: LlamaForCausalLM\n{}",
            older.lines().take(2).collect::<Vec<_>>().join("\n")
        );
        let b = boundaries(offline.as_bytes());
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[1].mark, Mark::Engine);
        // An offline V0 engine (no process prefix) after a typo'd `vllm serve`: a new launch.
        let v0 = "usage: vllm serve <model_tag> [options]\nvllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'abc'\nINFO 09-24 09:13:01 __init__.py:207] Automatically detected platform cuda.\nINFO 09-24 09:13:05 llm_engine.py:249] Initializing an LLM engine (v0.6.4) with config: model='m'\n";
        let b = boundaries(v0.as_bytes());
        assert_eq!(b.len(), 2, "{b:?}");
    }
}
