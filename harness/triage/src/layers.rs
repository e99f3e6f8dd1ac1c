//! Prefix layers learned per input: whatever a collector, a CI page or a wrapper writes before
//! vLLM's own text (`vllm-7d9f8c6b5-x2k4q vllm-server `, `> [2026-01-28T23:59:42Z] `) or between
//! vLLM's process prefix and the rest (`(APIServer pid=1) [serve] `), found by what repeats in
//! front of text that is recognisably vLLM's, not from a list of formats.
//!
//! Main function: [`Layers::learn`]. A line's text before an *anchor* (a process prefix, a vLLM
//! log header, `Traceback (most recent call last):`, uvicorn's `INFO:     `, `[rankN]:`) is a
//! prefix candidate; its *shape* keeps punctuation and collapses runs of letters and digits
//! (names, times, pids) and of spaces. A shape seen in front of a good share of the anchored
//! lines is a layer, stripped from every line that starts with it — the lines without an anchor
//! (an exception line, a frame, a continuation) included.

use crate::grammar::{container_prefix_len, decode, vllm_header_len};
use crate::traceback::is_exception_statement;

/// Lines read to learn the layers (from the start and from the end of the input).
const SAMPLE_LINES: usize = 1_000;
/// A layer is at most this long.
const PREFIX_MAX: usize = 160;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Tok {
    /// One or more letters, digits or `_`.
    Word,
    /// This many spaces or tabs (a wrapper pads to a fixed width; the text after it keeps its
    /// own indentation).
    Space(usize),
    Lit(char),
}

type Shape = Vec<Tok>;

/// The learned layers of one input (empty for most: vLLM's own text needs none).
#[derive(Clone, Debug, Default)]
pub struct Layers {
    outer: Vec<Shape>,
    inner: Vec<Shape>,
}

impl Layers {
    /// No layers.
    pub fn none() -> &'static Layers {
        static NONE: Layers = Layers {
            outer: Vec::new(),
            inner: Vec::new(),
        };
        &NONE
    }

    pub fn is_empty(&self) -> bool {
        self.outer.is_empty() && self.inner.is_empty()
    }

    /// Whether an outer layer (in front of vLLM's text) was learned.
    pub fn has_outer(&self) -> bool {
        !self.outer.is_empty()
    }

    /// Learn the layers of `b` from its first and last lines.
    pub fn learn(b: &[u8]) -> Layers {
        let mut outer: Vec<(Shape, usize)> = Vec::new();
        let mut inner: Vec<(Shape, usize)> = Vec::new();
        let mut anchored = 0usize;
        // What follows the process prefixes on every line that has them (a short excerpt has
        // too few anchored lines to learn a wrapper's tag from alone).
        let mut after_prefix: Vec<String> = Vec::new();
        let count =
            |list: &mut Vec<(Shape, usize)>, s: Shape| match list.iter_mut().find(|(x, _)| *x == s)
            {
                Some((_, n)) => *n += 1,
                None => list.push((s, 1)),
            };
        for line in sample(b) {
            let text = decode(line);
            // Known container prefixes (compose, kubectl, journald, RFC 3339 times) are the
            // grammar's; layers are learned behind them.
            let mut t = text.as_ref();
            loop {
                let n = container_prefix_len(t);
                if n == 0 || n >= t.len() {
                    break;
                }
                t = &t[n..];
            }
            let Some(pos) = anchor(t) else {
                continue;
            };
            anchored += 1;
            if after_prefix.len() < 64 {
                let rest = skip_process_prefixes(&t[pos..]);
                if rest.len() < t.len() - pos {
                    after_prefix.push(rest.chars().take(PREFIX_MAX).collect());
                }
            }
            if pos > 0 && pos <= PREFIX_MAX {
                count(&mut outer, shape(&t[..pos]));
            }
            // Between the process prefixes and the next anchor.
            let after = skip_process_prefixes(&t[pos..]);
            if after.len() < t.len() - pos {
                if let Some(p2) = inner_anchor(after) {
                    if p2 > 0 && p2 <= PREFIX_MAX {
                        count(&mut inner, shape(&after[..p2]));
                    }
                }
            }
        }
        let accept = |list: Vec<(Shape, usize)>| -> Vec<Shape> {
            let mut out: Vec<Shape> = list
                .into_iter()
                .filter(|(s, n)| {
                    let punct = s.iter().any(|t| matches!(t, Tok::Lit(_)));
                    let share = if punct { 5 } else { 2 }; // ≥ 20 %, or ≥ 50 % for plain words
                                                           // A short excerpt has few anchored lines: a shape in front of all of them
                                                           // is a layer too.
                    let enough = *n >= 3 || (*n == anchored && punct);
                    enough && n * share >= anchored && !s.is_empty() && is_wrapper_like(s)
                })
                .map(|(s, _)| s)
                .collect();
            // Longest first: a layer that extends another wins.
            out.sort_by_key(|s| std::cmp::Reverse(s.len()));
            out
        };
        let mut inner_kept = accept(inner.clone());
        // A tag seen in front of anchored text after the process prefix, and in front of the
        // text of every process-prefixed line of a short input (at least three), is a layer.
        if after_prefix.len() >= 3 {
            for (sh, _) in &inner {
                if !inner_kept.contains(sh)
                    && is_wrapper_like(sh)
                    && after_prefix.iter().all(|r| matches(sh, r).is_some())
                {
                    inner_kept.push(sh.clone());
                }
            }
            inner_kept.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
        Layers {
            outer: accept(outer),
            inner: inner_kept,
        }
    }

    /// Bytes of a learned outer layer at the start of `s` (0 when none).
    pub fn outer_len(&self, s: &str) -> usize {
        self.outer.iter().find_map(|sh| matches(sh, s)).unwrap_or(0)
    }

    /// Bytes of a learned inner layer (after the process prefixes) at the start of `s`.
    pub fn inner_len(&self, s: &str) -> usize {
        self.inner.iter().find_map(|sh| matches(sh, s)).unwrap_or(0)
    }
}

/// The lines to learn from: the first and the last `SAMPLE_LINES`.
fn sample(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    let head_end = nth_newline(b, SAMPLE_LINES).unwrap_or(b.len());
    let tail_start = nth_newline_back(b, SAMPLE_LINES).unwrap_or(0).max(head_end);
    b[..head_end]
        .split(|&c| c == b'\n')
        .chain(b[tail_start..].split(|&c| c == b'\n'))
        .map(|l| &l[..l.len().min(4 * PREFIX_MAX)])
}

fn nth_newline(b: &[u8], n: usize) -> Option<usize> {
    memchr::memchr_iter(b'\n', b).nth(n)
}

fn nth_newline_back(b: &[u8], n: usize) -> Option<usize> {
    memchr::memrchr_iter(b'\n', b).nth(n).map(|p| p + 1)
}

/// Where vLLM's own text starts in a line: the first anchor.
fn anchor(t: &str) -> Option<usize> {
    let limit = t.len().min(PREFIX_MAX + 1);
    let bytes = t.as_bytes();
    // Searched once per line, not at every position.
    let cli = {
        use std::sync::LazyLock;
        static ERROR: LazyLock<memchr::memmem::Finder<'static>> =
            LazyLock::new(|| memchr::memmem::Finder::new(": error: "));
        static USAGE: LazyLock<memchr::memmem::Finder<'static>> =
            LazyLock::new(|| memchr::memmem::Finder::new("usage: "));
        ERROR.find(t.as_bytes()).is_some() || USAGE.find(t.as_bytes()).is_some()
    };
    (0..limit).find(|&i| {
        t.is_char_boundary(i)
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
            && is_anchor_at(&t[i..], cli)
    })
}

fn is_anchor_at(s: &str, cli: bool) -> bool {
    // Text starts at a non-space (a frame's own indentation excepted): the space before it
    // belongs to the prefix.
    if s.starts_with([' ', '\t', '>', '`']) {
        return s.starts_with("  File \"");
    }
    process_prefix_at(s)
        || vllm_header_len(s).is_some()
        || s.starts_with("Traceback (most recent call last):")
        || s.starts_with("INFO:     ")
        || (s.starts_with("[rank") && s[5..].starts_with(|c: char| c.is_ascii_digit()))
        || s.starts_with("  File \"")
        || is_exception_statement(s)
        || (cli && is_cli_error_at(s))
}

/// argparse's `usage: vllm serve …` and `vllm serve: error: …` lines.
fn is_cli_error_at(s: &str) -> bool {
    s.starts_with("usage: ") || argparse_error_prog(s).is_some()
}

/// The program name of argparse's error line (`vllm serve: error: …` → `vllm serve`).
pub(crate) fn argparse_error_prog(s: &str) -> Option<&str> {
    // The program name is short: look no further than its bound (this runs at every position
    // of a sampled line).
    let end = s.len().min(70);
    let end = (end..=s.len())
        .find(|&e| s.is_char_boundary(e))
        .unwrap_or(s.len());
    match s[..end].find(": error: ") {
        Some(p) if p > 0 && p < 60 => Some(&s[..p]).filter(|prog| {
            prog.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ' ' | '/'))
        }),
        _ => None,
    }
}

/// Anchors after a process prefix: a header, a traceback, uvicorn, a frame.
fn inner_anchor(s: &str) -> Option<usize> {
    let limit = s.len().min(PREFIX_MAX + 1);
    (0..limit).find(|&i| {
        s.is_char_boundary(i) && (i == 0 || s.as_bytes()[i - 1] == b' ') && {
            let r = &s[i..];
            vllm_header_len(r).is_some()
                || r.starts_with("Traceback (most recent call last):")
                || r.starts_with("INFO:     ")
                || r.starts_with("File \"")
                || r.starts_with("  File \"")
                || is_exception_statement(r)
        }
    })
}

/// `(NAME pid=N)` at the start of `s`.
fn process_prefix_at(s: &str) -> bool {
    if !s.starts_with('(') {
        return false;
    }
    let end = s.len().min(160);
    let Some(close) = s.as_bytes()[..end].iter().position(|&c| c == b')') else {
        return false;
    };
    s[1..close].contains(" pid=")
}

fn skip_process_prefixes(mut s: &str) -> &str {
    while process_prefix_at(s) {
        let close = s.find(')').expect("checked");
        s = s[close + 1..].strip_prefix(' ').unwrap_or(&s[close + 1..]);
    }
    s
}

fn shape(s: &str) -> Shape {
    let mut out: Vec<Tok> = Vec::new();
    for c in s.chars() {
        if c == ' ' || c == '\t' {
            if let Some(Tok::Space(n)) = out.last_mut() {
                *n += 1;
            } else {
                out.push(Tok::Space(1));
            }
            continue;
        }
        let t = if c.is_alphanumeric() || c == '_' {
            Tok::Word
        } else {
            Tok::Lit(c)
        };
        if t == Tok::Word && out.last() == Some(&t) {
            continue;
        }
        out.push(t);
    }
    out
}

/// A shape that can be a wrapper's: it ends in a space or a separator, and is not a sentence
/// (`Error: `, `note: `) or a path (`/a/b.py:12: `).
fn is_wrapper_like(s: &[Tok]) -> bool {
    let ends_well = matches!(
        s.last(),
        Some(Tok::Space(_)) | Some(Tok::Lit('|' | ']' | ':'))
    );
    let words = s.iter().filter(|t| **t == Tok::Word).count();
    let slashes = s.iter().filter(|t| **t == Tok::Lit('/')).count();
    // `ValueError: `, `torch.OutOfMemoryError: `: an exception's head, not a wrapper.
    let exception_head = s.len() >= 3
        && s[s.len() - 2..] == [Tok::Lit(':'), Tok::Space(1)]
        && s[..s.len() - 2]
            .iter()
            .all(|t| matches!(t, Tok::Word | Tok::Lit('.')));
    // Markdown's block quote (`> `) in front of a pasted log is a layer of no words.
    let block_quote = s == [Tok::Lit('>'), Tok::Space(1)];
    block_quote
        || (ends_well
            && words >= 1
            && !exception_head
            && !(slashes >= 2 && s.contains(&Tok::Lit('.'))))
}

/// Bytes of `s` that `shape` covers from its start.
fn matches(shape: &[Tok], s: &str) -> Option<usize> {
    let mut chars = s.char_indices().peekable();
    let mut end = 0;
    for t in shape {
        match t {
            Tok::Word => {
                let mut n = 0;
                while let Some(&(i, c)) = chars.peek() {
                    if c.is_alphanumeric() || c == '_' {
                        end = i + c.len_utf8();
                        chars.next();
                        n += 1;
                    } else {
                        break;
                    }
                }
                if n == 0 {
                    return None;
                }
            }
            Tok::Space(want) => {
                for _ in 0..*want {
                    match chars.next() {
                        Some((i, ' ' | '\t')) => end = i + 1,
                        _ => return None,
                    }
                }
            }
            Tok::Lit(l) => match chars.next() {
                Some((i, c)) if c == *l => end = i + c.len_utf8(),
                _ => return None,
            },
        }
    }
    // A layer ends where a word ends: `vllm ` must not match the start of `vllmx`.
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned(lines: &[&str]) -> Layers {
        Layers::learn(lines.join("\n").as_bytes())
    }

    #[test]
    fn a_pod_and_container_prefix_is_learned_and_stripped_from_every_line() {
        let l = learned(&[
            "vllm-7d9f8c6b5-x2k4q vllm-server INFO 01-28 14:02:16 [model.py:541] Resolved",
            "vllm-7d9f8c6b5-x2k4q vllm-server (EngineCore_DP0 pid=7) ERROR 01-28 14:02:17 [core.py:708] Traceback (most recent call last):",
            "vllm-7d9f8c6b5-x2k4q vllm-server (EngineCore_DP0 pid=7) ERROR 01-28 14:02:17 [core.py:708] ValueError: boom",
            "vllm-7d9f8c6b5-x2k4q vllm-server ValueError: boom",
        ]);
        let s = "vllm-7d9f8c6b5-x2k4q vllm-server ValueError: boom";
        assert_eq!(&s[l.outer_len(s)..], "ValueError: boom");
    }

    #[test]
    fn a_markdown_block_quote_is_a_layer() {
        let l = learned(&[
            "> ERROR 04-20 20:40:11 worker_base.py:153] Traceback (most recent call last):",
            ">   File \"/x/vllm/worker/worker_base.py\", line 145, in execute_method",
            "> ERROR 04-20 20:40:11 worker_base.py:153] NameError: name 'vllm_ops' is not defined",
            "> INFO 04-20 20:40:12 api_server.py:1] up",
        ]);
        let s = "> NameError: name 'vllm_ops' is not defined";
        assert_eq!(
            &s[l.outer_len(s)..],
            "NameError: name 'vllm_ops' is not defined"
        );
    }

    #[test]
    fn a_ci_quote_and_an_inner_tag_are_learned() {
        let l = learned(&[
            "> [2026-01-28T23:59:42Z] (APIServer pid=1) [serve] INFO 01-28 14:02:16 [api_server.py:1] up",
            "> [2026-01-28T23:59:43Z] (APIServer pid=1) [serve] INFO 01-28 14:02:17 [api_server.py:1] up",
            "> [2026-01-28T23:59:44Z] (APIServer pid=1) [serve] ERROR 01-28 14:02:18 [api_server.py:1] x",
        ]);
        let s = "> [2026-01-28T23:59:45Z] (APIServer pid=1) [serve] ValueError: x";
        let o = l.outer_len(s);
        assert_eq!(&s[o..o + 1], "(");
        let rest = "[serve] ValueError: x";
        assert_eq!(&rest[l.inner_len(rest)..], "ValueError: x");
    }

    #[test]
    fn vllm_text_alone_learns_nothing_and_sentences_are_not_layers() {
        let l = learned(&[
            "INFO 01-28 14:02:16 [model.py:541] Resolved",
            "(EngineCore_DP0 pid=7) ERROR 01-28 14:02:17 [core.py:708] ValueError: boom",
            "RuntimeError: (EngineCore_DP0 pid=7) died",
            "RuntimeError: (EngineCore_DP0 pid=8) died",
            "RuntimeError: (EngineCore_DP0 pid=9) died",
        ]);
        assert_eq!(l.outer_len("RuntimeError: x"), 0);
        assert!(l.is_empty(), "{l:?}");
        assert_eq!(Layers::learn(b"").outer_len("x"), 0);
    }
}
