//! faultkit's fuzz targets, one function per target, shared by the libFuzzer targets
//! (`fuzz_targets/*.rs`, `cargo +nightly fuzz run <target>`) and the stable-toolchain mutation
//! loop (`examples/stable_loop.rs`).
//!
//! Each function feeds untrusted bytes to one reader and checks what must hold for any input
//! (ARCHITECTURE.md: "Bad input never panics"; "everything quoted from a log is escaped before it
//! reaches a terminal; JSON stays exact"). A broken property is a panic, which both engines
//! report with the input that caused it.

pub mod mutate;

use std::path::Path;

use triage::grammar;
use triage::render;
use triage::scan::{self, Candidates, Scan, WindowedLines, LINE_BYTES_MAX};
use triage::{LaunchSel, Options, Output, Verdict};
use generator::deploy::Deployment;
use generator::Scenario;

/// vLLM releases the simulator has a profile for.
const VERSIONS: &[&str] = &["0.6.4", "0.8.5", "0.10.2", "0.15.1", "0.18.1"];

/// A fuzz target: a name and the function that takes one input.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "framer",
        run: framer,
    },
    Target {
        name: "triage",
        run: triage,
    },
    Target {
        name: "scenario",
        run: scenario,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().copied().find(|t| t.name == name)
}

/// Line framing and the line grammar: the one-pass scan (candidate hits, NUL runs, newline
/// counts), the windowed line iterator, damage, and `parse_line` / `decode` / `strip_ansi` on
/// every line.
pub fn framer(data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        let p = grammar::parse_line(line);
        assert_no_escape(&p.body, "parse_line body");
        assert!(
            p.process.is_some() || p.prefixes == 0,
            "prefixes counted without a process: {p:?}"
        );
        let _ = p.stream_key();
    }
    let decoded = grammar::decode(data);
    assert_no_escape(&decoded, "decode");
    assert!(!decoded.contains('\0'), "decode kept a NUL byte");
    let text = String::from_utf8_lossy(data);
    let stripped = grammar::strip_ansi(&text);
    assert_no_escape(&stripped, "strip_ansi");
    assert_eq!(
        grammar::strip_ansi(&stripped),
        stripped,
        "strip_ansi is not idempotent"
    );
    // `head` never splits a character, whatever the cut.
    let n = data.first().map_or(0, |&b| usize::from(b));
    assert!(text.starts_with(grammar::head(&text, n)));

    framing(data);
}

/// Full triage, then both renderings of every verdict: the human text must be safe for a
/// terminal, the JSON must serialise and parse back. Each input is triaged with the default
/// options (the newest launch; `--explain` when the first byte is odd) and with one more launch
/// selection of the command line, chosen by the first byte: `--launch all`, `--pid` (a pid that
/// occurs in the input, or a small number from the next bytes) or `--launch N`. One extra
/// selection per input, not three, keeps the target fast enough to explore.
pub fn triage(data: &[u8]) {
    let selector = data.first().copied().unwrap_or(0);
    let default = Options {
        explain: selector & 1 == 1,
        ..Options::default()
    };
    check_output(triage::triage(data, &default));
    let other = match (selector >> 1) % 3 {
        0 => Options {
            launch: LaunchSel::All,
            ..Options::default()
        },
        1 => Options {
            pid: Some(pid_from(data)),
            ..Options::default()
        },
        _ => Options {
            launch: LaunchSel::Index(usize::from(selector >> 5)),
            ..Options::default()
        },
    };
    check_output(triage::triage(data, &other));
}

/// Scenario files: `Scenario::from_toml` on the input (as lossy UTF-8), and on a known-good
/// scenario whose `command` is the input (so the command-line parser and the deployment
/// decision see arbitrary text, not only what survives the TOML parser). A valid scenario goes
/// through `Deployment::derive` (simulating it whole is too slow to fuzz).
pub fn scenario(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let path = Path::new("fuzz/x.toml");
    match Scenario::from_toml(path, &text) {
        Ok(s) => {
            let _ = Deployment::derive(&s, &s.args);
        }
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1, "error not located: {e:?}");
            assert!(
                e.to_string().starts_with("fuzz/x.toml:"),
                "error does not name the file: {e}"
            );
        }
    }
    let gpus = generator::catalog::gpus();
    let models = generator::catalog::models();
    let byte = |i: usize| data.get(i).map_or(0, |&b| usize::from(b));
    let model = match byte(3) % (models.len() + 1) {
        0 => String::new(), // no preset: the model path does not exist on the host
        i => format!("model = \"{}\"\n", models[i - 1].id),
    };
    let templated = format!(
        "summary = \"fuzz\"\nvllm = \"{}\"\ncommand = {}\ngpus = {{ model = \"{}\", count = {} }}\n\
         {model}[expect]\nstatus = \"crashed\"\n",
        VERSIONS[byte(0) % VERSIONS.len()],
        toml_string(&text),
        gpus[byte(1) % gpus.len()].id,
        1 + byte(2) % 16,
    );
    if let Ok(s) = Scenario::from_toml(path, &templated) {
        let _ = Deployment::derive(&s, &s.args);
    }
    let _ = vllm_argv::ServeArgs::parse_command(&text);
}

/// Whether `s` is safe to print to a terminal: no C0 control character but newline and tab, no
/// DEL, no C1 control (U+0080–U+009F: U+009B is a one-character CSI), no line/paragraph
/// separator or bidirectional override (`render::escape_control`'s list).
pub fn terminal_safe(s: &str) -> Result<(), (usize, char)> {
    for (i, c) in s.char_indices() {
        let cp = c as u32;
        let bad = (cp < 0x20 && c != '\n' && c != '\t')
            || cp == 0x7f
            || (0x80..0xa0).contains(&cp)
            || c == '\u{2028}'
            || c == '\u{2029}'
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c);
        if bad {
            return Err((i, c));
        }
    }
    Ok(())
}

fn assert_no_escape(s: &str, what: &str) {
    assert!(
        !s.contains('\x1b') && !s.contains('\u{9b}'),
        "{what} left an escape sequence introducer: {s:?}"
    );
}

/// The framer's own properties: every line it hands out is a whole line (or its first
/// `LINE_BYTES_MAX` bytes) at the right line number, the counts agree with a plain count, and a
/// scan in two parts finds what one scan finds.
fn framing(data: &[u8]) {
    let cands = Candidates::builtin();
    let sc = Scan::new(cands, data, 0, data.len());
    let newlines = data.iter().filter(|&&b| b == b'\n').count() as u64;
    assert_eq!(sc.newlines_between(data, 0, data.len()), newlines);
    let mut lines = WindowedLines::new(data, &sc, 0, data.len(), 1);
    let mut counted_to = 0usize;
    let mut no_at = 1u64;
    let mut last: Option<(u64, usize)> = None;
    for l in lines.by_ref() {
        assert!(
            l.offset == 0 || data[l.offset - 1] == b'\n',
            "line {} at byte {} does not start a line",
            l.no,
            l.offset
        );
        assert!(l.bytes.len() <= LINE_BYTES_MAX);
        assert!(!l.bytes.contains(&b'\n'));
        assert_eq!(&data[l.offset..l.offset + l.bytes.len()], l.bytes);
        no_at += data[counted_to..l.offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        counted_to = l.offset;
        assert_eq!(
            l.no, no_at,
            "wrong line number for the line at byte {}",
            l.offset
        );
        if let Some((no, off)) = last {
            assert!(l.no > no && l.offset > off, "lines out of order");
        }
        last = Some((l.no, l.offset));
    }
    let total_lines = newlines + u64::from(data.last().is_some_and(|&b| b != b'\n'));
    assert_eq!(
        lines.next_no(),
        1 + total_lines,
        "line count after the last line"
    );
    for d in scan::damage(data, &sc, 0, data.len()) {
        let end = d.offset.unwrap_or(0) + d.length.unwrap_or(0);
        assert!(end <= data.len() as u64, "damage beyond the input: {d:?}");
    }
    // Two scans joined equal one scan (the newest-launch search scans backwards in pieces).
    let mid = data.len() / 2;
    let mut joined = Scan::new(cands, data, 0, mid);
    joined.append(Scan::new(cands, data, mid, data.len()));
    assert_eq!(joined.nul_runs, sc.nul_runs);
    for p in [0, mid / 2, mid, data.len()] {
        assert_eq!(
            joined.newlines_between(data, 0, p),
            sc.newlines_between(data, 0, p)
        );
    }
}

fn check_output(out: Output) {
    let _ = out.exit_code();
    match out {
        Output::One(v) => check_verdict(v),
        Output::All(vs) => vs.into_iter().for_each(check_verdict),
    }
}

fn check_verdict(mut v: Verdict) {
    // What the command line does before printing.
    render::mask_verdict(&mut v);
    let human = render::human(&v, false);
    if let Err((at, c)) = terminal_safe(&human) {
        panic!("raw control character {c:?} at byte {at} of the human verdict:\n{human}");
    }
    // With colour, faultkit's own SGR sequences are the only escapes.
    let coloured = render::human(&v, true);
    let without_sgr = strip_own_sgr(&coloured);
    if let Err((at, c)) = terminal_safe(&without_sgr) {
        panic!("raw control character {c:?} at byte {at} of the coloured verdict:\n{without_sgr}");
    }
    let json = serde_json::to_string_pretty(&v).expect("a verdict serialises");
    // As `--json` prints it: nothing for a terminal to act on, and the same values.
    let printed = render::escape_json_controls(&json);
    if let Err((at, c)) = terminal_safe(&printed) {
        panic!("raw control character {c:?} at byte {at} of the JSON verdict:\n{printed}");
    }
    let back: serde_json::Value = serde_json::from_str(&printed).expect("verdict JSON parses back");
    let direct: serde_json::Value = serde_json::from_str(&json).expect("verdict JSON parses");
    assert_eq!(back, direct, "escaping changed the JSON's values");
    if let Some(rc) = &v.root_cause {
        assert_eq!(
            back["root_cause"]["text"].as_str(),
            Some(rc.text.as_str()),
            "JSON changed the root-cause text"
        );
        assert!(rc.line >= 1, "root cause at line 0");
    }
}

/// Remove `ESC [ digits/semicolons m` (the renderer's colours).
fn strip_own_sgr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find("\x1b[") {
        out.push_str(&rest[..p]);
        let after = &rest[p + 2..];
        let n = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[n..].starts_with('m') {
            rest = &after[n + 1..];
        } else {
            // Not ours: keep the ESC so the check reports it.
            out.push('\x1b');
            rest = &rest[p + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// A pid for `--pid`: when bit 3 of the first byte is set, the first `pid=N` of the input (the
/// launch-selection path); else a small number from the next bytes (usually no such pid: the
/// stale path).
fn pid_from(data: &[u8]) -> u32 {
    if data.first().is_some_and(|b| b & 8 == 8) {
        if let Some(p) = data.windows(4).position(|w| w == b"pid=") {
            let digits: Vec<u8> = data[p + 4..]
                .iter()
                .copied()
                .take_while(u8::is_ascii_digit)
                .take(9)
                .collect();
            if let Some(n) = std::str::from_utf8(&digits)
                .ok()
                .and_then(|s| s.parse().ok())
            {
                return n;
            }
        }
    }
    let b = |i: usize| data.get(i).copied().map_or(0, u32::from);
    (b(1) << 8) | b(2)
}

/// A TOML basic string holding `s` exactly.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_accept_their_seeds() {
        let log = b"(APIServer pid=7) INFO 01-28 14:02:07 [utils.py:261] vLLM API server version 0.15.1\n\
            (Worker_TP0 pid=9) ERROR 01-28 14:02:09 [core.py:1] ValueError: x \x1b]0;t\x07 \xc2\x9b2J\n";
        for t in TARGETS {
            (t.run)(log);
            (t.run)(b"");
        }
    }

    #[test]
    fn terminal_safety_check_finds_raw_controls() {
        assert!(terminal_safe("ok\n\tfine").is_ok());
        assert_eq!(terminal_safe("a\x1b[2J"), Err((1, '\x1b')));
        assert_eq!(terminal_safe("a\u{9b}"), Err((1, '\u{9b}')));
        assert_eq!(strip_own_sgr("\x1b[1;31mx\x1b[0m"), "x");
        assert!(strip_own_sgr("\x1b]0;t\x07").contains('\x1b'));
    }

    #[test]
    fn templated_command_is_exact() {
        let s = toml_string("vllm serve \"m\" \\ \x01");
        assert_eq!(s, "\"vllm serve \\\"m\\\" \\\\ \\u0001\"");
    }
}
