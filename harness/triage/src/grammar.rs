//! The line grammar of vLLM logs: container prefixes, process prefixes, log headers, torch c10
//! and glog headers, NCCL lines, uvicorn lines.
//!
//! Main function: [`parse_line`], which splits one physical line (bytes, without its LF) into a
//! [`ParsedLine`]. It never fails: text it does not recognise is simply the body. It is written
//! by hand (no regex) because it runs on every candidate line.

use std::borrow::Cow;

use crate::layers::Layers;

/// Log severity, normalised across vLLM, torch c10, glog, uvicorn and NCCL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
    Critical,
}

/// Which grammar produced the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderKind {
    /// `INFO 01-28 14:02:16 [model.py:541] ` or the old `INFO 01-28 14:02:16 model.py:541] `.
    Vllm,
    /// `[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] `.
    C10,
    /// `E1129 22:01:09.739000 763 torch/distributed/run.py:851] `.
    Glog,
    /// `INFO:     ` (uvicorn).
    Uvicorn,
    /// `host:pid:tid [dev] NCCL INFO ` / `NCCL WARN `.
    Nccl,
    /// Python's logging default format `2023-10-30 06:14:35,574\tWARNING worker.py:2037 -- `
    /// (Ray) and similar foreign loggers.
    Foreign,
    None,
}

/// One line, split into its parts. Borrowed from the input where possible.
#[derive(Clone, Debug)]
pub struct ParsedLine<'a> {
    /// Bytes of container/journald/timestamp prefixes before the log text.
    pub container_prefix: usize,
    /// The last `(NAME pid=N)` prefix's name, or `rankN`.
    pub process: Option<Cow<'a, str>>,
    pub pid: Option<u32>,
    /// Number of process prefixes (`(A pid=1) (B pid=2) …` counts 2).
    pub prefixes: usize,
    pub level: Option<Level>,
    pub header: HeaderKind,
    /// `file.py:123` of a vLLM/glog/c10 header.
    pub location: Option<Cow<'a, str>>,
    /// The message text after all prefixes and headers; ANSI escapes removed, trailing CR and
    /// spaces trimmed.
    pub body: Cow<'a, str>,
    /// `[repeated 7x across cluster]` (Ray's deduplication).
    pub repeated: Option<u32>,
    /// A process prefix or log header appears after the start of the text: two writers' bytes
    /// share this line.
    pub interleaved: bool,
}

impl ParsedLine<'_> {
    /// The key under which a process's stream is assembled: process, pid and header location.
    pub fn stream_key(&self) -> StreamKey {
        StreamKey {
            process: self.process.as_deref().map(str::to_string),
            pid: self.pid,
            location: self.location.as_deref().map(str::to_string),
        }
    }
}

/// Identity of one writer's stream (for assembling tracebacks that interleave).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamKey {
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub location: Option<String>,
}

/// Strip ANSI escape sequences (CSI and OSC) when present, also when a pager or a paste wrote
/// them out as text in caret notation (`^[[1;36m`, and `^M` for a carriage return).
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    // Most lines hold none of the three bytes that start an escape (`^` of caret notation, ESC,
    // and 0xC2, the lead byte of U+009B): one scan tells.
    if memchr::memchr3(b'^', 0x1b, 0xc2, s.as_bytes()).is_none() {
        return Cow::Borrowed(s);
    }
    if s.contains("^[[") || s.contains("^M") {
        let raw = s.replace("^[", "\x1b").replace("^M", "\r");
        let stripped = strip_ansi(&raw).into_owned();
        return Cow::Owned(stripped.trim_end_matches('\r').to_string());
    }
    if !s.contains('\x1b') && !s.contains('\u{9b}') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    for c2 in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c2) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    // OSC: until BEL or ESC \
                    chars.next();
                    while let Some(c2) = chars.next() {
                        if c2 == '\x07' {
                            break;
                        }
                        if c2 == '\x1b' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\u{9b}' => {
                for c2 in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c2) {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Decode a line: invalid UTF-8 becomes U+FFFD, a lone CR (tqdm refresh) keeps only the text after
/// the last CR that is not the line's final CR, ANSI escapes are removed, trailing CR/space trimmed.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    let mut b = bytes;
    while let Some((&last, rest)) = b.split_last() {
        if last == b'\r' || last == b' ' || last == 0 {
            b = rest;
        } else {
            break;
        }
    }
    // NUL bytes are damage, not text.
    let s: Cow<'_, str> = if b.contains(&0) {
        let cleaned: Vec<u8> = b.iter().copied().filter(|&c| c != 0).collect();
        Cow::Owned(String::from_utf8_lossy(&cleaned).into_owned())
    } else {
        // Valid UTF-8 (nearly every line) is checked word by word; only invalid text takes the
        // lossy path.
        match std::str::from_utf8(b) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(b),
        }
    };
    match s {
        Cow::Borrowed(x) => strip_ansi(x),
        Cow::Owned(x) => Cow::Owned(strip_ansi(&x).into_owned()),
    }
}

/// The first `n` bytes of `s`, shortened to a character boundary (never panics).
pub fn head(s: &str, n: usize) -> &str {
    if n >= s.len() {
        return s;
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn parse_u32(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Length of a container/journald/timestamp prefix at the start of `s` (0 when none).
pub(crate) fn container_prefix_len(s: &str) -> usize {
    let b = s.as_bytes();
    // RFC 3339 timestamp (docker logs -t, k8s): 2024-02-08T08:40:56.016480879Z
    if b.len() > 21
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[..4].iter().all(u8::is_ascii_digit)
    {
        if let Some(sp) = s.find(' ') {
            if sp < 40 && (s[..sp].ends_with('Z') || s[..sp].contains('+')) {
                return sp + 1;
            }
        }
    }
    // [2023-10-30 14:14:35] (bracketed timestamp)
    if b.len() > 22
        && b[0] == b'['
        && b[5] == b'-'
        && b[20] == b']'
        && b[1..5].iter().all(u8::is_ascii_digit)
    {
        return if b.get(21) == Some(&b' ') { 22 } else { 21 };
    }
    // docker compose: `vllm-1  | ` (the name is short: no need to search the whole line)
    if let Some(bar) = memchr::memchr(b'|', &b[..b.len().min(68)])
        .filter(|&p| p > 0 && b[p - 1] == b' ' && b.get(p + 1) == Some(&b' '))
        .map(|p| p - 1)
    {
        let name = s[..bar].trim_end();
        if bar < 64
            && !name.is_empty()
            && name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
        {
            return bar + 3;
        }
    }
    // journald: `Nov 29 22:01:09 host unit[1234]: `
    if b.len() > 16
        && b[3] == b' '
        && b[6] == b' '
        && b[9] == b':'
        && b[12] == b':'
        && b[..3].iter().all(u8::is_ascii_alphabetic)
    {
        if let Some(colon) = s.get(16..).and_then(|r| r.find("]: ")) {
            return 16 + colon + 3;
        }
    }
    // kubectl logs --prefix: `[pod/name/container] `
    if s.starts_with("[pod/") {
        if let Some(end) = s.find("] ") {
            return end + 2;
        }
    }
    // A bare container name before a process prefix: `kserve-container (EngineCore_0 pid=58) `.
    if let Some(sp) = s.find(' ') {
        let name = &s[..sp];
        let rest = &s[sp + 1..];
        if sp > 0
            && sp < 64
            && name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
            && name.contains('-')
            && (rest.starts_with('(') && rest[..rest.find(')').unwrap_or(0)].contains(" pid=")
                || rest.starts_with("[rank"))
        {
            return sp + 1;
        }
    }
    0
}

/// `(NAME pid=N) ` or `(NAME pid=N, ip=A.B.C.D) ` at the start: (name, pid, length).
fn process_prefix(s: &str) -> Option<(&str, u32, usize)> {
    if !s.starts_with('(') {
        return None;
    }
    let close = head(s, 160).find(')')?;
    let inner = &s[1..close];
    let pos = inner.rfind(" pid=")?;
    let name = &inner[..pos];
    let rest = &inner[pos + 5..];
    let pid_str = rest.split(',').next()?;
    let pid = parse_u32(pid_str.trim())?;
    if name.is_empty() || name.contains('(') {
        return None;
    }
    let mut len = close + 1;
    if s[len..].starts_with(' ') {
        len += 1;
    }
    Some((name, pid, len))
}

fn level_word(w: &str) -> Option<Level> {
    Some(match w {
        "DEBUG" => Level::Debug,
        "INFO" => Level::Info,
        "WARNING" | "WARN" => Level::Warning,
        "ERROR" => Level::Error,
        "CRITICAL" | "FATAL" => Level::Critical,
        _ => return None,
    })
}

fn level_letter(c: u8) -> Option<Level> {
    Some(match c {
        b'I' => Level::Info,
        b'W' => Level::Warning,
        b'E' => Level::Error,
        b'F' => Level::Critical,
        b'D' => Level::Debug,
        _ => return None,
    })
}

/// `LEVEL MM-DD HH:MM:SS [file:line] ` / `LEVEL MM-DD HH:MM:SS file:line] `: (level, location, len).
fn vllm_header(s: &str) -> Option<(Level, &str, usize)> {
    let sp = head(s, 9).find(' ')?;
    let level = level_word(&s[..sp])?;
    let rest = &s[sp + 1..];
    let b = rest.as_bytes();
    if b.len() < 16
        || b[2] != b'-'
        || b[5] != b' '
        || b[8] != b':'
        || b[11] != b':'
        || b[14] != b' '
    {
        return None;
    }
    let after = &rest[15..];
    let (loc_start, bracket) = if after.starts_with('[') {
        (1, true)
    } else {
        (0, false)
    };
    let close = head(after, 200).find(']')?;
    let loc = &after[loc_start..close];
    if !loc.contains(':') || loc.contains(' ') && !bracket {
        return None;
    }
    let mut len = sp + 1 + 15 + close + 1;
    if s[len..].starts_with(' ') {
        len += 1;
    }
    Some((level, loc, len))
}

/// `E1129 22:01:09.739000 763 file.py:986] `: (level, pid, location, len).
fn glog_header(s: &str) -> Option<(Level, Option<u32>, &str, usize)> {
    let b = s.as_bytes();
    if b.len() < 22 || !b[1..5].iter().all(u8::is_ascii_digit) || b[5] != b' ' || b[8] != b':' {
        return None;
    }
    let level = level_letter(b[0])?;
    let close = head(s, 260).find("] ")?;
    let head = &s[..close];
    let mut parts = head.split_whitespace();
    let _stamp1 = parts.next()?;
    let _stamp2 = parts.next()?;
    let pid = parts.next().and_then(parse_u32);
    let loc = parts.next().unwrap_or("");
    Some((level, pid, loc, close + 2))
}

/// `[rankN]:` then optionally a c10 header `[E1218 20:27:21.426415540 File.cpp:629] `.
fn rank_prefix(s: &str) -> Option<(&str, usize)> {
    let rest = s.strip_prefix("[rank")?;
    let end = head(rest, 8).find("]:")?;
    parse_u32(&rest[..end])?;
    Some((&s[1..5 + end], 5 + end + 2))
}

fn c10_header(s: &str) -> Option<(Level, &str, usize)> {
    let b = s.as_bytes();
    if b.len() < 10 || b[0] != b'[' {
        return None;
    }
    let level = level_letter(b[1])?;
    if !b[2].is_ascii_digit() {
        return None;
    }
    let close = head(s, 200).find(']')?;
    let head = &s[1..close];
    let loc = head.rsplit(' ').next().unwrap_or("");
    let mut len = close + 1;
    if s[len..].starts_with(' ') {
        len += 1;
    }
    Some((level, loc, len))
}

/// `host:pid:tid [dev] NCCL INFO …`
fn nccl_line(s: &str) -> Option<(Option<u32>, Level, usize)> {
    let pos = head(s, 200).find(" NCCL ")?;
    let head = &s[..pos];
    let mut colon = head.split(':');
    let _host = colon.next()?;
    let pid = colon.next().and_then(parse_u32);
    pid?;
    let after = &s[pos + 6..];
    let (level, len) = if after.starts_with("INFO") {
        (Level::Info, 4)
    } else if after.starts_with("WARN") {
        // NCCL reports its failures at WARN (its `WARN(…)` macro, then an error result; NVIDIA/
        // nccl src/init.cc, transport/*.cc): it has no level above it. RCCL also warns there of
        // a setting that only slows it (ROCm/rccl src/init.cc: `NUMA auto balancing enabled which
        // can lead to variability in the RCCL performance!`).
        let advisory = after
            .strip_prefix("WARN")
            .is_some_and(|w| w.trim_start().starts_with("NUMA auto balancing enabled"));
        (
            if advisory {
                Level::Warning
            } else {
                Level::Error
            },
            4,
        )
    } else if after.starts_with("ERROR") {
        (Level::Error, 5)
    } else {
        return None;
    };
    // A failure keeps `NCCL WARN ` in its text: what it says is NCCL's (`Cuda failure 'operation
    // not supported'` is NCCL's report of a CUDA call, not the CUDA runtime's).
    if level == Level::Error {
        return Some((pid, level, pos + 1));
    }
    let mut total = pos + 6 + len;
    if s[total..].starts_with(' ') {
        total += 1;
    }
    Some((pid, level, total))
}

/// Python logging's default-ish formats of other libraries (Ray):
/// `2023-10-30 06:14:35,574\tWARNING worker.py:2037 -- `.
fn foreign_header(s: &str) -> Option<(Level, usize)> {
    let b = s.as_bytes();
    if b.len() < 25 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[19] != b',' {
        return None;
    }
    let rest = s.get(23..)?;
    let rest_t = rest.trim_start_matches(['\t', ' ']);
    let skipped = rest.len() - rest_t.len();
    let sp = head(rest_t, 10).find(' ')?;
    let level = level_word(&rest_t[..sp])?;
    let after = &rest_t[sp + 1..];
    let len = after.find(" -- ").map_or(sp + 1, |d| sp + 1 + d + 4);
    Some((level, 23 + skipped + len))
}

/// The `tracing` crate's default format after its timestamp (which a container prefix took):
/// `ERROR engine.run_mp_engine: NIXL_ERR_BACKEND` — a level word, spaces, a target, `: `.
/// Wrappers written in Rust (Dynamo) log vLLM's failures this way.
fn tracing_header(s: &str) -> Option<(Level, usize)> {
    let sp = head(s, 8).find(' ')?;
    let level = match &s[..sp] {
        "ERROR" => Level::Error,
        "WARN" => Level::Warning,
        "INFO" => Level::Info,
        "DEBUG" | "TRACE" => Level::Debug,
        _ => return None,
    };
    let rest = s[sp..].trim_start_matches(' ');
    let target_len = head(rest, 84).find(": ")?;
    let target = &rest[..target_len];
    let well_formed = !target.is_empty()
        && target.len() <= 80
        && target.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':'));
    well_formed.then(|| (level, s.len() - rest.len() + target_len + 2))
}

/// A native library's log line whose level stands inside its leading bracketed tag, then the
/// message: `[HAMI-core ERROR (pid:565 thread=… multiprocess_memory_limit.c:831)]: Illegal
/// device id: …` (HAMi's GPU-sharing shim), `[TensorRT-LLM][ERROR] …`. At most three tags; the
/// level is a whole upper-case word of one of them.
fn bracket_level_header(s: &str) -> Option<(Level, usize)> {
    let mut level = None;
    let mut len = 0;
    for _ in 0..3 {
        let Some(tag) = s[len..].strip_prefix('[') else {
            break;
        };
        let close = head(tag, 160).find(']')?;
        let inner = &tag[..close];
        if level.is_none() {
            level = inner.split([' ', '(', ')', ':']).find_map(level_word);
        }
        len += close + 2;
    }
    let level = level?;
    let rest = &s[len..];
    let body = rest.strip_prefix(':').unwrap_or(rest);
    let body = body.strip_prefix(' ').unwrap_or(body);
    Some((level, s.len() - body.len()))
}

/// pytest's report of the exception a test raised: `E` and spaces in front of the exception
/// line (`E                   KeyError: 'model.embed_tokens.weight'`), under the failing source
/// line it marks with `>` — a vLLM start inside a test, as CI logs show it.
fn pytest_error_line(s: &str) -> Option<(Level, usize)> {
    let t = s.strip_prefix("E ")?.trim_start_matches(' ');
    crate::traceback::is_exception_statement(t).then(|| (Level::Error, s.len() - t.len()))
}

/// Whether a log header or process prefix starts somewhere inside `body` (two writers' bytes
/// in one line).
fn has_inner_header(body: &str, own_pid: Option<u32>) -> bool {
    let first = body.chars().next().map_or(0, char::len_utf8);
    if let Some(p) = memchr::memmem::find(&body.as_bytes()[first..], b"[rank") {
        if rank_prefix(&body[first + p..]).is_some() {
            return true;
        }
    }
    // Headers right after a prefix of this same process continue its own unterminated line
    // (a tqdm bar cut short by an error): one writer, not two.
    let mut own_header_at: Vec<usize> = Vec::new();
    let b = body.as_bytes();
    let mut i = 1;
    while let Some(p) = memchr::memchr(b'(', &b[i.min(b.len())..]) {
        let at = i + p;
        if let Some((_, pid, len)) = process_prefix(&body[at..]) {
            if own_pid != Some(pid) {
                return true;
            }
            own_header_at.push(at + len);
        }
        i = at + 1;
        if i >= b.len() {
            break;
        }
    }
    // A level word after a space (` INFO `, ` WARNING `, ` ERROR `, ` DEBUG `), read at each
    // space rather than searched once per word.
    memchr::memchr_iter(b' ', b).any(|sp| {
        let at = sp + 1;
        let r = &b[at..];
        let level_word = [&b"INFO "[..], b"WARNING ", b"ERROR ", b"DEBUG "]
            .iter()
            .any(|w| r.starts_with(w));
        level_word
            && own_header_at.binary_search(&at).is_err()
            && vllm_header(&body[at..])
                .is_some_and(|(_, loc, _)| loc.ends_with(|c: char| c.is_ascii_digit()))
    })
}

/// Length of a vLLM log header (`INFO 01-28 14:02:16 [model.py:541] `) at the start of `s`.
pub fn vllm_header_len(s: &str) -> Option<usize> {
    vllm_header(s).map(|(_, _, len)| len)
}

/// Parse one physical line.
pub fn parse_line(raw: &[u8]) -> ParsedLine<'_> {
    parse_line_in(raw, Layers::none())
}

/// Parse one physical line of an input whose prefix layers were learned (`Layers::learn`).
pub fn parse_line_in<'a>(raw: &'a [u8], layers: &Layers) -> ParsedLine<'a> {
    let text = decode(raw);
    match text {
        Cow::Borrowed(t) => parse_str(t, layers),
        Cow::Owned(t) => {
            let p = parse_str(&t, layers);
            // Re-own every borrowed part.
            ParsedLine {
                container_prefix: p.container_prefix,
                process: p.process.map(|c| Cow::Owned(c.into_owned())),
                pid: p.pid,
                prefixes: p.prefixes,
                level: p.level,
                header: p.header,
                location: p.location.map(|c| Cow::Owned(c.into_owned())),
                body: Cow::Owned(p.body.into_owned()),
                repeated: p.repeated,
                interleaved: p.interleaved,
            }
        }
    }
}

/// Whether `rest` is a layer alone whose trailing space was trimmed (`vllm-1  |`, `[serve]`):
/// `len` measures a layer at the start of a string. Only short text ending in a wrapper's
/// punctuation is tried — or, where the input has learned layers of that kind (`learned`),
/// short text that holds some (`pod-x7k2 container-name`) — so ordinary lines cost no
/// allocation; a line of plain words (`Killed`) is text, whatever a layer of words would match.
fn layer_alone(rest: &str, learned: bool, len: impl Fn(&str) -> usize) -> bool {
    if rest.is_empty() || rest.len() >= 120 {
        return false;
    }
    let punctuated = rest.ends_with(['|', ':', ']', '>', 'Z'])
        || (learned && rest.bytes().any(|c| c.is_ascii_punctuation()));
    if !punctuated {
        return false;
    }
    let padded = format!("{rest} ");
    len(&padded) == padded.len()
}

fn parse_str<'a>(t: &'a str, layers: &Layers) -> ParsedLine<'a> {
    let mut rest = t;
    let mut container = 0;
    loop {
        let mut n = container_prefix_len(rest);
        if n == 0 {
            n = layers.outer_len(rest);
        }
        // A blank line of the wrapped log: the layer alone, its trailing space trimmed
        // (`vllm-1  |`). Its body is empty, as the unwrapped line's is.
        if n == 0
            && layer_alone(rest, layers.has_outer(), |p| {
                layers.outer_len(p).max(container_prefix_len(p))
            })
        {
            container += rest.len();
            rest = "";
            break;
        }
        if n == 0 || n >= rest.len() {
            break;
        }
        container += n;
        rest = &rest[n..];
    }
    let mut process: Option<&str> = None;
    let mut pid = None;
    let mut prefixes = 0;
    while let Some((name, p, len)) = process_prefix(rest) {
        process = Some(name);
        pid = Some(p);
        prefixes += 1;
        rest = &rest[len..];
    }
    // A wrapper's tag after the process prefix (`(APIServer pid=1) [serve] …`) also stands
    // alone on the lines that have no process prefix.
    // And a tag learned at the start of the lines without a process prefix stands after the
    // prefix on the lines that have one.
    let tag_len = |r: &str| {
        let n = layers.inner_len(r);
        if n == 0 && prefixes > 0 {
            layers.outer_len(r)
        } else {
            n
        }
    };
    let n = tag_len(rest);
    if n > 0 && n < rest.len() {
        rest = &rest[n..];
    } else if n == 0 && layer_alone(rest, !layers.is_empty(), tag_len) {
        rest = "";
    }
    // Progress dots printed without a newline (CANN's operator compilation on Ascend) glued to
    // the next record: `....[rank0]:[E623 13:46:28… compiler_depend.ts:429] …`, `..[ERROR] …`.
    let dots = rest.bytes().take_while(|&b| b == b'.').count();
    if dots >= 2 && rest[dots..].starts_with('[') {
        rest = &rest[dots..];
    }
    // `[repeated 7x across cluster]`
    let mut repeated = None;
    let mut body_end = rest.len();
    if let Some(inner) = rest
        .strip_suffix(" across cluster]")
        .and_then(|r| r.rfind(" [repeated ").map(|pos| (pos, &r[pos + 11..])))
    {
        let (pos, count) = inner;
        repeated = count.strip_suffix('x').and_then(parse_u32);
        if repeated.is_some() {
            body_end = pos;
        }
    }
    let rest = &rest[..body_end];
    let mut out = ParsedLine {
        container_prefix: container,
        process: process.map(Cow::Borrowed),
        pid,
        prefixes,
        level: None,
        header: HeaderKind::None,
        location: None,
        body: Cow::Borrowed(rest),
        repeated,
        interleaved: false,
    };
    if let Some((rank, len)) = rank_prefix(rest) {
        out.process = Some(Cow::Borrowed(rank));
        let after = &rest[len..];
        if let Some((level, loc, l2)) = c10_header(after) {
            out.level = Some(level);
            out.header = HeaderKind::C10;
            out.location = Some(Cow::Borrowed(loc));
            out.body = Cow::Borrowed(&after[l2..]);
        } else {
            out.body = Cow::Borrowed(after.strip_prefix(' ').unwrap_or(after));
        }
    } else if let Some((level, loc, len)) = vllm_header(rest) {
        out.level = Some(level);
        out.header = HeaderKind::Vllm;
        out.location = Some(Cow::Borrowed(loc));
        out.body = Cow::Borrowed(&rest[len..]);
    } else if let Some((level, gpid, loc, len)) = glog_header(rest) {
        out.level = Some(level);
        out.header = HeaderKind::Glog;
        out.location = Some(Cow::Borrowed(loc));
        if out.pid.is_none() {
            out.pid = gpid;
        }
        out.body = Cow::Borrowed(&rest[len..]);
    } else if let Some((level, loc, len)) = c10_header(rest) {
        // torch's c10 logging without the rank prefix torchrun adds: `[E329 06:28:12.542939754
        // socket.cpp:1023] [c10d] The client socket has timed out …`.
        out.level = Some(level);
        out.header = HeaderKind::C10;
        out.location = Some(Cow::Borrowed(loc));
        out.body = Cow::Borrowed(&rest[len..]);
    } else if let Some(after) = rest.strip_prefix("INFO:     ") {
        out.level = Some(Level::Info);
        out.header = HeaderKind::Uvicorn;
        out.body = Cow::Borrowed(after);
    } else if let Some(after) = rest.strip_prefix("ERROR:    ") {
        out.level = Some(Level::Error);
        out.header = HeaderKind::Uvicorn;
        out.body = Cow::Borrowed(after);
    } else if let Some(after) = rest.strip_prefix("WARNING:  ") {
        out.level = Some(Level::Warning);
        out.header = HeaderKind::Uvicorn;
        out.body = Cow::Borrowed(after);
    } else if let Some((npid, level, len)) = nccl_line(rest) {
        out.level = Some(level);
        out.header = HeaderKind::Nccl;
        if out.pid.is_none() {
            out.pid = npid;
        }
        out.body = Cow::Borrowed(&rest[len..]);
    } else if let Some((level, len)) = foreign_header(rest)
        .or_else(|| tracing_header(rest))
        .or_else(|| bracket_level_header(rest))
        .or_else(|| pytest_error_line(rest))
    {
        out.level = Some(level);
        out.header = HeaderKind::Foreign;
        out.body = Cow::Borrowed(&rest[len..]);
    }
    if out.body.len() > 12 && has_inner_header(&out.body, out.pid) {
        out.interleaved = true;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_line_with_prefix() {
        let p = parse_line(b"(Worker_TP4 pid=208015) ERROR 01-28 14:09:44 [multiproc_executor.py:772] ValueError: x\r");
        assert_eq!(p.process.as_deref(), Some("Worker_TP4"));
        assert_eq!(p.pid, Some(208015));
        assert_eq!(p.level, Some(Level::Error));
        assert_eq!(p.location.as_deref(), Some("multiproc_executor.py:772"));
        assert_eq!(p.body, "ValueError: x");
    }

    #[test]
    fn coloured_prefix_and_stacked_prefixes() {
        let p = parse_line(b"\x1b[1;36m(VllmWorker rank=3 pid=1090)\x1b[0;0m ERROR 06-05 06:18:13 [multiproc_executor.py:470] RuntimeError: CUDA error: out of memory");
        assert_eq!(p.process.as_deref(), Some("VllmWorker rank=3"));
        assert_eq!(p.body, "RuntimeError: CUDA error: out of memory");
        let p = parse_line(b"(Worker_TP0 pid=43972) (Worker_TP1 pid=18128) (EngineCore pid=44992) ERROR 05-02 04:19:49 [core.py:1136] EngineCore failed to start.");
        assert_eq!(p.process.as_deref(), Some("EngineCore"));
        assert_eq!(p.prefixes, 3);
        assert!(!p.interleaved);
    }

    #[test]
    fn old_header_docker_and_rank() {
        let p = parse_line(
            b"vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory",
        );
        assert_eq!(p.location.as_deref(), Some("engine.py:366"));
        assert_eq!(p.body, "ValueError: No available memory");
        let p =
            parse_line(b"[rank0]:[W128 14:02:45.318233310 ProcessGroupNCCL.cpp:1524] Warning: x");
        assert_eq!(p.process.as_deref(), Some("rank0"));
        assert_eq!(p.header, HeaderKind::C10);
        assert_eq!(p.body, "Warning: x");
        let p = parse_line(b"[rank0]: RuntimeError: CUDA error: no kernel image");
        assert_eq!(p.body, "RuntimeError: CUDA error: no kernel image");
        let p = parse_line(b"E1129 22:01:22.066000 830 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: -9)");
        assert_eq!(p.header, HeaderKind::Glog);
        assert_eq!(p.pid, Some(830));
        assert_eq!(p.body, "failed (exitcode: -9)");
        let p = parse_line(b"2024-02-08T08:40:56.161618385Z Traceback (most recent call last):");
        assert_eq!(p.body, "Traceback (most recent call last):");
        let p = parse_line(b"kserve-container (EngineCore_0 pid=58) RuntimeError: Error building extension 'sampling':");
        assert_eq!(p.process.as_deref(), Some("EngineCore_0"));
        let p = parse_line(b"(RayWorkerWrapper pid=392789, ip=10.0.0.2) ERROR 03-13 16:32:15 worker_base.py:574] x [repeated 7x across cluster]");
        assert_eq!(p.process.as_deref(), Some("RayWorkerWrapper"));
        assert_eq!(p.repeated, Some(7));
        assert_eq!(p.body, "x");
        // A marker with no count, or overlapping the suffix, is plain text.
        for raw in [
            &b"ERROR 03-13 16:32:15 worker_base.py:574] boom [repeated across cluster]"[..],
            b" [repeated across cluster]",
            b"x [repeated x across cluster]",
        ] {
            let p = parse_line(raw);
            assert_eq!(p.repeated, None);
            assert!(p.body.ends_with("across cluster]"), "{:?}", p.body);
        }
    }

    #[test]
    fn nccl_and_uvicorn_and_interleaving() {
        let p = parse_line(b"h200-1:830:870 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>");
        assert_eq!(p.header, HeaderKind::Nccl);
        assert_eq!(p.pid, Some(830));
        assert_eq!(p.body, "Bootstrap: Using eth0:10.0.0.1<0>");
        // A failure keeps NCCL's name on its text; RCCL's NUMA advice is only a warning.
        let p = parse_line(
            b"h:830:830 [0] init.cc:416 NCCL WARN Cuda failure 'operation not supported'",
        );
        assert_eq!(p.level, Some(Level::Error));
        assert_eq!(p.body, "NCCL WARN Cuda failure 'operation not supported'");
        let p = parse_line(b"h:927:927 [0] /src/init.cc:1563 NCCL WARN NUMA auto balancing enabled which can lead to variability in the RCCL performance!");
        assert_eq!(p.level, Some(Level::Warning));
        let p = parse_line(b"(APIServer pid=1) INFO:     Started server process [1]");
        assert_eq!(p.header, HeaderKind::Uvicorn);
        let p = parse_line(b"(Worker_TP1 pid=2) ERROR 01-28 14:02:44 [m.py:772]     self.x(Worker_TP3 pid=5) ERROR 01-28 14:02:44 [m.py:772] y");
        assert!(p.interleaved);
        let p = parse_line(b"\xff\xfe garbage \x00\x00 text");
        assert!(p.body.contains('\u{fffd}'));
    }

    #[test]
    fn progress_dots_glued_to_a_record_are_not_its_text() {
        let p = parse_line(b"....[rank0]:[E623 13:46:28.176383770 compiler_depend.ts:429] ReshapeAndCacheOperation setup failed!");
        assert_eq!((p.level, p.header), (Some(Level::Error), HeaderKind::C10));
        assert_eq!(p.body, "ReshapeAndCacheOperation setup failed!");
        let p = parse_line(b"..[ERROR] the socversion Ascend910B1 of bin package does not match");
        assert_eq!(p.level, Some(Level::Error));
        // An elision stays one.
        assert_eq!(parse_line(b"...").body, "...");
    }

    #[test]
    fn c10_header_without_a_rank_prefix() {
        let p = parse_line(
            b"[E329 06:28:12.542939754 socket.cpp:1023] [c10d] The client socket has timed out.",
        );
        assert_eq!((p.level, p.header), (Some(Level::Error), HeaderKind::C10));
        assert_eq!(p.location.as_deref(), Some("socket.cpp:1023"));
        assert_eq!(p.body, "[c10d] The client socket has timed out.");
    }

    #[test]
    fn a_blank_line_of_a_wrapped_log_is_its_layer_alone() {
        let log = "pod-x7k2 vllm-server INFO 02-07 05:08:36 weight_utils.py:252] Using weights\n\
                   pod-x7k2 vllm-server \n\
                   pod-x7k2 vllm-server Traceback (most recent call last):\n\
                   pod-x7k2 vllm-server   File \"/x/engine.py\", line 1, in run\n\
                   pod-x7k2 vllm-server ValueError: boom\n";
        let layers = crate::layers::Layers::learn(log.as_bytes());
        // The collector's blank line, its trailing space trimmed.
        assert_eq!(parse_line_in(b"pod-x7k2 vllm-server", &layers).body, "");
        // A line of plain words stays text.
        assert_eq!(parse_line_in(b"Killed", &layers).body, "Killed");
    }

    #[test]
    fn pytests_exception_line() {
        let p = parse_line(b"E                   KeyError: 'model.embed_tokens.weight'");
        assert_eq!(p.level, Some(Level::Error));
        assert_eq!(p.body, "KeyError: 'model.embed_tokens.weight'");
        // Any other line that starts with an `E` stays text.
        assert_eq!(parse_line(b"E and more words").level, None);
    }

    #[test]
    fn a_native_librarys_bracketed_level() {
        let p = parse_line(b"[HAMI-core ERROR (pid:565 thread=1402 multiprocess_memory_limit.c:831)]: Illegal device id: 8");
        assert_eq!(
            (p.level, p.header),
            (Some(Level::Error), HeaderKind::Foreign)
        );
        assert_eq!(p.body, "Illegal device id: 8");
        let p = parse_line(b"[TensorRT-LLM][WARNING] Fall back to unfused MHA");
        assert_eq!(p.level, Some(Level::Warning));
        assert_eq!(p.body, "Fall back to unfused MHA");
        // A tag without a level word, and an excerpt's elision mark, are no header.
        for line in [
            &b"[Gloo] Rank 0 is connected to 1 peer ranks."[..],
            b"[...]",
            b"[unterminated ERROR",
        ] {
            assert_eq!(parse_line(line).header, HeaderKind::None);
        }
    }
}
