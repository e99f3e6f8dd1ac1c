//! Triage: the root cause of a vLLM launch failure, from the bytes of its log.
//!
//! **Architecture invariant:** this module is pure — bytes (and optional launch facts such as a
//! pid) in, [`Verdict`] out. It does no process or network I/O, reads no clock, and never imports
//! `simulators`: it must work on real logs it has never seen. A tidy test enforces this.
//!
//! Pipeline: [`segment`] finds launch boundaries (backwards from the end for the newest launch);
//! [`scan`] frames lines and finds candidate windows with one multi-literal pass; [`grammar`]
//! parses the lines inside windows; [`traceback`] assembles per-process records;
//! [`analyze`] classifies them with the [`rules`] and picks the originating failure.

pub mod analyze;
pub mod grammar;
pub mod layers;
pub mod render;
pub mod rules;
pub mod scan;
pub mod segment;
pub mod traceback;
pub mod verdict;

pub use rules::RuleSet;
pub use verdict::{ExitCode, Status, Verdict};

use analyze::{analyze_launch, Region};
use verdict::{LaunchInfo, Stale};

/// Files up to this size are scanned whole (every launch listed, absolute line numbers).
pub const FULL_SCAN_BYTES_MAX: usize = 256 << 20;
/// Line numbers count from the start of the file when the launch starts within this many bytes;
/// beyond it they count from the launch start (a diagnostic says so).
pub const LINE_COUNT_BYTES_MAX: usize = 1 << 30;

/// Which launch the verdict is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchSel {
    Newest,
    All,
    Index(usize),
}

/// The bytes are the tail of a larger file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tail {
    /// Offset of the first byte in the file.
    pub offset: u64,
    /// Length of the whole file.
    pub total_len: u64,
}

/// What the caller knows besides the bytes.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    pub launch: LaunchSel,
    /// Select the launch this pid started (its API server; the first that reaches the pid's
    /// first line), else the launch in which a line carries this pid.
    pub pid: Option<u32>,
    pub rules: &'a RuleSet,
    /// Set when the bytes are only the end of the file.
    pub tail: Option<Tail>,
    /// List every candidate record and its classification in the diagnostics.
    pub explain: bool,
}

impl Default for Options<'static> {
    fn default() -> Self {
        Options {
            launch: LaunchSel::Newest,
            pid: None,
            rules: RuleSet::builtin(),
            tail: None,
            explain: false,
        }
    }
}

/// One verdict, or one per launch (`LaunchSel::All`).
#[derive(Clone, Debug)]
pub enum Output {
    One(Verdict),
    All(Vec<Verdict>),
}

impl Output {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Output::One(v) => v.exit_code(),
            Output::All(vs) => verdict::worst(vs.iter().map(Verdict::exit_code)),
        }
    }
}

/// `text` as DESIGN.md defines it: ANSI escape sequences removed, trailing CR and spaces
/// trimmed, invalid UTF-8 as U+FFFD (NUL bytes, which are damage, dropped).
pub fn clean_text(bytes: &[u8]) -> String {
    grammar::decode(bytes).into_owned()
}

#[derive(Clone, Copy)]
struct Launch {
    start: usize,
    end: usize,
    pid: Option<u32>,
    /// The pid is the API server's (not an engine's that started with no API server before it
    /// in the text).
    api_pid: bool,
}

fn launches_of(b: &[u8], bounds: &[segment::Boundary]) -> Vec<Launch> {
    let mut out = Vec::new();
    let first = bounds.first().map_or(b.len(), |x| x.offset);
    // Text before the first launch start (a rotated log, an excerpt) is a launch of its own.
    if first > 0
        && b[..first]
            .iter()
            .any(|c| !c.is_ascii_whitespace() && *c != 0)
    {
        out.push(Launch {
            start: 0,
            end: first,
            pid: None,
            api_pid: false,
        });
    }
    for (i, bd) in bounds.iter().enumerate() {
        let end = bounds.get(i + 1).map_or(b.len(), |n| n.offset);
        out.push(Launch {
            start: bd.offset,
            end,
            pid: bd.pid,
            api_pid: bd.mark != segment::Mark::Engine,
        });
    }
    out
}

/// At most this many lines, and this many bytes, before a launch's banner are its import-time
/// output.
const PREAMBLE_LINES: usize = 16;
const PREAMBLE_BYTES_MAX: usize = 64 << 10;

/// The start of the [`PREAMBLE_LINES`] lines before `start`, not before `floor`.
fn preamble_start(b: &[u8], floor: usize, start: usize) -> usize {
    let mut at = start;
    for _ in 0..PREAMBLE_LINES {
        // The newline that ends the line before `at`, then the one before that line.
        let before = at.saturating_sub(1).max(floor);
        match memchr::memrchr(b'\n', &b[floor..before]) {
            Some(p) => at = floor + p + 1,
            None => return floor,
        }
    }
    at
}

/// Triage a log.
pub fn triage(b: &[u8], opts: &Options<'_>) -> Output {
    let mut diagnostics = Vec::new();
    if b.is_empty() {
        let mut v = Verdict::empty();
        v.diagnostics.push("empty input".into());
        return wrap(opts, v);
    }
    if b.iter().all(|&c| c == 0) {
        let mut v = Verdict::empty();
        let sc = scan::Scan::new(scan::Candidates::builtin(), b, 0, b.len());
        v.damage = scan::damage(b, &sc, 0, b.len());
        v.diagnostics.push(
            "the input holds only NUL bytes (a truncated log whose writer never wrote again?)"
                .into(),
        );
        return wrap(opts, v);
    }
    let tail_offset = opts.tail.map_or(0, |t| t.offset);
    if tail_offset > 0 {
        diagnostics.push(format!(
            "large file ({} bytes): only the newest launch (from byte {tail_offset}) was read; its line numbers count from there. Use --launch all for absolute lines and every launch",
            opts.tail.map_or(0, |t| t.total_len)
        ));
    }
    let whole =
        b.len() <= FULL_SCAN_BYTES_MAX || opts.launch != LaunchSel::Newest || opts.pid.is_some();
    let cands = scan::Candidates::get(opts.rules);
    // Prefixes a collector or wrapper put before vLLM's text, learned from this input.
    let layers = layers::Layers::learn(b);
    // One search over the bytes that matter: the whole file, or (newest launch of a large file)
    // backwards from the end to the launch start.
    let (bounds, sc) = if whole {
        let sc = scan::Scan::new(&cands, b, 0, b.len());
        (segment::boundaries_from_hits(b, &sc.hits, &layers), sc)
    } else {
        match segment::last_boundary_with_scan(b, &cands, &layers) {
            Some((bd, sc)) => (vec![bd], sc),
            None => (Vec::new(), scan::Scan::new(&cands, b, 0, b.len())),
        }
    };
    let launches = launches_of(b, &bounds);
    if launches.is_empty() {
        let mut v = Verdict::empty();
        v.diagnostics.push("no text lines found".into());
        return wrap(opts, v);
    }
    let target = if let Some(pid) = opts.pid {
        // The first launch that pid started (its API server's banner) and that reaches its first
        // line, else the launch that line falls in: a launch's import-time lines (torch's glog
        // warnings) come before its banner and carry its pid too.
        match segment::pid_offset(b, pid, &layers) {
            Some(off) => launches
                .iter()
                .position(|l| l.pid == Some(pid) && l.end > off)
                .or_else(|| launches.iter().rposition(|l| l.start <= off)),
            None => None,
        }
    } else {
        match opts.launch {
            LaunchSel::Newest | LaunchSel::All => Some(launches.len() - 1),
            LaunchSel::Index(n) => {
                if n < launches.len() {
                    Some(n)
                } else {
                    diagnostics.push(format!(
                        "launch {n} does not exist: the file has {} launch(es)",
                        launches.len()
                    ));
                    None
                }
            }
        }
    };

    // Analyse: the target always; every launch when the file was read whole.
    let mut infos: Vec<LaunchInfo> = Vec::new();
    let mut verdicts: Vec<Option<verdict::Verdict>> = Vec::new();
    let mut line_base = 1u64;
    let mut counted_to = 0usize;
    let mut relative_lines = false;
    let mut launches = launches;
    let mut target = target;
    let mut next = 0;
    while next < launches.len() {
        let i = next;
        next += 1;
        let l = launches[i];
        let analyse = whole || Some(i) == target;
        if !analyse {
            verdicts.push(None);
            continue;
        }
        if l.start > counted_to {
            if l.start - counted_to <= LINE_COUNT_BYTES_MAX || whole {
                line_base += if whole {
                    sc.newlines_between(b, counted_to, l.start)
                } else {
                    bytecount::count(&b[counted_to..l.start], b'\n') as u64
                };
            } else {
                relative_lines = true;
                line_base = 1;
            }
            counted_to = l.start;
        }
        // The lines just before a launch's start are what it printed while it imported (a
        // command line, import warnings) before its banner.
        let preamble = (i > 0).then(|| {
            let floor = launches[i - 1]
                .start
                .max(l.start.saturating_sub(PREAMBLE_BYTES_MAX));
            (preamble_start(b, floor, l.start), l.start)
        });
        let region = Region {
            start: l.start,
            end: l.end,
            first_line: line_base,
            launch_pid: l.pid.filter(|_| l.api_pid),
            preamble,
        };
        let mut d = Vec::new();
        let mut a = analyze_launch(b, &region, opts.rules, &sc, &layers, opts.explain, &mut d);
        if let Some(off) = a.newer_launch_at.filter(|&o| o > l.start && o < l.end) {
            // A newer launch whose start the text lost: this launch ends there.
            launches.insert(
                i + 1,
                Launch {
                    start: off,
                    end: l.end,
                    pid: None,
                    api_pid: false,
                },
            );
            launches[i].end = off;
            if opts.pid.is_none() && opts.launch != LaunchSel::Index(i) && target == Some(i) {
                target = Some(i + 1);
            } else if let Some(t) = target.filter(|&t| t > i) {
                target = Some(t + 1);
            }
            let region = Region { end: off, ..region };
            d.clear();
            a = analyze_launch(b, &region, opts.rules, &sc, &layers, opts.explain, &mut d);
        }
        infos.push(LaunchInfo {
            index: i,
            first_line: line_base,
            last_line: a.last_line,
            pids: a.pids.clone(),
            status: a.verdict.status,
        });
        let mut v = a.verdict;
        for dmg in &mut v.damage {
            if let Some(o) = &mut dmg.offset {
                *o += tail_offset;
            }
        }
        v.diagnostics.extend(d);
        verdicts.push(Some(v));
    }
    if relative_lines {
        diagnostics.push("line numbers count from the start of the launch (the file before it is too large to count)".into());
    }
    let finish = |mut v: Verdict, idx: Option<usize>| {
        v.launch = idx;
        v.launches = infos.clone();
        v.diagnostics.extend(diagnostics.iter().cloned());
        v
    };
    if opts.launch == LaunchSel::All && opts.pid.is_none() {
        let all = verdicts
            .into_iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| finish(v, Some(i))))
            .collect();
        return Output::All(all);
    }
    match target {
        Some(t) => {
            let v = verdicts[t].take().unwrap_or_else(Verdict::empty);
            Output::One(finish(v, Some(t)))
        }
        None => {
            let mut v = Verdict::empty();
            if let Some(pid) = opts.pid {
                let last_pids = infos.last().map(|l| l.pids.clone()).unwrap_or_default();
                v.stale = Stale {
                    suspected: true,
                    reason: Some(format!(
                        "no line in this log carries pid {pid}: the launch you asked about has not written anything yet, and the lines at the end belong to an earlier launch (pids {})",
                        last_pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                    )),
                };
            }
            Output::One(finish(v, None))
        }
    }
}

fn wrap(opts: &Options<'_>, v: Verdict) -> Output {
    if opts.launch == LaunchSel::All && opts.pid.is_none() {
        Output::All(vec![v])
    } else {
        Output::One(v)
    }
}
