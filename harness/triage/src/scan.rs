//! Framing and the candidate scan: lines over bytes, damage, and the windows worth parsing.
//!
//! A line ends at LF only; CR, lone CRs and NUL runs never start one. A multi-literal search
//! (Aho–Corasick over every rule literal plus structural words) finds candidate lines; each opens
//! a window of lines that are parsed in full, so the tracebacks around an error are assembled
//! while gigabytes of steady-state traffic are skipped at memchr speed. No regex runs per line of
//! the whole file, and nothing is allocated for lines outside windows.

use aho_corasick::AhoCorasick;

use super::verdict::Damage;

/// Lines longer than this are analysed by their first `LINE_BYTES_MAX` bytes (diagnosed).
pub const LINE_BYTES_MAX: usize = 64 * 1024;
/// A window stays open this many lines after its last candidate line.
pub const WINDOW_QUIET_LINES: u64 = 400;
/// At most this many damage entries are reported per kind.
const DAMAGE_ENTRIES_MAX: usize = 32;

/// Words that open a window. Every line a built-in rule must find on its own (outside a
/// traceback or an ERROR record) contains one of these; every launch boundary does too. Kept at
/// few needles so the SIMD searcher (Slim Teddy) runs at memory speed: this search is the one
/// pass over a large log.
pub const STRUCTURAL: &[(&str, bool)] = &[
    // (needle, opens a window of context lines)
    ("Traceback", true),
    ("ERROR", true),
    ("rror", true),
    ("Exception", true),
    ("illed", true),
    ("died", true),
    ("exit", true),
    ("imeout", true),
    ("WARN", true),
    ("ailed", true),
    ("Segmentation", true),
    ("marked dead", true),
    // Launch boundaries: the line itself is enough.
    (" version ", false),
    ("args: ", false),
    ("Initializing", false),
    ("usage: vllm", false),
    ("usage: api_server", false),
];

/// The first lines of a launch (banner, configuration, startup) are always parsed whole: status
/// and evidence lines live there.
pub const HEAD_LINES: u64 = 6_000;
/// The last bytes of a launch are always parsed whole (shutdown lines, the last words).
pub const TAIL_BYTES: usize = 256 * 1024;
/// A window opens this many lines before its hit (`Process EngineCore_DP0:` precedes its
/// traceback).
pub const WINDOW_LEAD_LINES: usize = 3;

/// A multi-literal searcher: SIMD Teddy when the needles allow it (a few GB/s), otherwise an
/// Aho–Corasick automaton.
#[derive(Clone, Debug)]
pub enum Needles {
    Teddy(aho_corasick::packed::Searcher),
    Automaton(AhoCorasick),
}

/// Needles with, per needle, whether a match opens a window of context lines.
#[derive(Clone, Debug)]
pub struct Candidates {
    pub needles: Needles,
    pub window: Vec<bool>,
}

/// A candidate match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub offset: usize,
    pub window: bool,
}

impl Candidates {
    /// The needles for a rule set: the structural words plus every `any_level` literal they do
    /// not cover.
    pub fn for_rules(rules: &super::rules::RuleSet) -> Candidates {
        let mut lits: Vec<String> = STRUCTURAL.iter().map(|(s, _)| s.to_string()).collect();
        let mut window: Vec<bool> = STRUCTURAL.iter().map(|(_, w)| *w).collect();
        // Noise never becomes a candidate: its lines need not be found.
        // User rules that match on their own get their literals searched for too; the built-in
        // ones are covered by the structural words (a test checks it).
        for r in rules
            .rules()
            .iter()
            .filter(|r| r.any_level && r.user && r.role != super::rules::Role::Noise)
        {
            for l in &r.literals {
                if !lits.iter().any(|n| l.contains(n.as_str())) {
                    lits.push(l.clone());
                    window.push(true);
                }
            }
        }
        Candidates {
            needles: Needles::new(&lits),
            window,
        }
    }

    /// The needles of the built-in rules (built once).
    pub fn builtin() -> &'static Candidates {
        static C: std::sync::OnceLock<Candidates> = std::sync::OnceLock::new();
        C.get_or_init(|| Candidates::for_rules(super::rules::RuleSet::builtin()))
    }

    /// The needles for `rules`, reusing the built-in set when possible.
    pub fn get(rules: &super::rules::RuleSet) -> std::borrow::Cow<'static, Candidates> {
        if std::ptr::eq(rules, super::rules::RuleSet::builtin()) {
            std::borrow::Cow::Borrowed(Candidates::builtin())
        } else {
            std::borrow::Cow::Owned(Candidates::for_rules(rules))
        }
    }
}

impl Needles {
    pub fn new<S: AsRef<str>>(needles: &[S]) -> Needles {
        let teddy = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(needles.iter().map(|n| n.as_ref()))
            .build();
        match teddy {
            Some(t) => Needles::Teddy(t),
            None => Needles::Automaton(
                AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                    .build(needles.iter().map(|n| n.as_ref()))
                    .expect("needles build an automaton"),
            ),
        }
    }

    /// The first match in `b[from..end]`: (start, end, needle index).
    pub fn find(&self, b: &[u8], from: usize, end: usize) -> Option<(usize, usize, usize)> {
        match self {
            Needles::Teddy(t) => t
                .find(&b[from..end])
                .map(|m| (from + m.start(), from + m.end(), m.pattern().as_usize())),
            Needles::Automaton(a) => a
                .find(aho_corasick::Input::new(b).range(from..end))
                .map(|m| (m.start(), m.end(), m.pattern().as_usize())),
        }
    }
}

/// One physical line.
#[derive(Clone, Copy, Debug)]
pub struct Line<'a> {
    /// 1-based line number (relative to `line_base`).
    pub no: u64,
    /// Byte offset of the line's first byte in the whole input.
    pub offset: usize,
    pub bytes: &'a [u8],
}

/// Bytes per chunk of the one pass (fits the L2 cache: the search, the newline count and the NUL
/// search read each chunk from memory once).
const CHUNK_BYTES: usize = 256 * 1024;
/// Longest needle: a match may straddle a chunk end by this much.
const NEEDLE_BYTES_MAX: usize = 256;

/// Everything one pass over a byte range learns: candidate hits, NUL runs, and newline counts per
/// chunk (so the line number of any offset costs at most one chunk of counting).
#[derive(Clone, Debug, Default)]
pub struct Scan {
    pub hits: Vec<Hit>,
    /// (offset, length) of each NUL run.
    pub nul_runs: Vec<(usize, usize)>,
    chunk_starts: Vec<usize>,
    /// Newlines before each chunk, counted from the first chunk.
    chunk_nl: Vec<u64>,
    /// Newlines in the whole scanned range.
    nl_total: u64,
    start: usize,
    end: usize,
}

impl Scan {
    /// One pass over `b[start..end]`.
    pub fn new(c: &Candidates, b: &[u8], start: usize, end: usize) -> Scan {
        let mut sc = Scan {
            start,
            end,
            ..Scan::default()
        };
        let mut nl = 0u64;
        let mut from = start;
        let mut chunk = start;
        while chunk < end {
            let chunk_end = (chunk + CHUNK_BYTES).min(end);
            sc.chunk_starts.push(chunk);
            sc.chunk_nl.push(nl);
            // Candidates starting in this chunk.
            from = from.max(chunk);
            let search_end = (chunk_end + NEEDLE_BYTES_MAX).min(end);
            while from < chunk_end {
                let Some((ms, me, pat)) = c.needles.find(b, from, search_end) else {
                    break;
                };
                if ms >= chunk_end {
                    break;
                }
                sc.hits.push(Hit {
                    offset: ms,
                    window: c.window.get(pat).copied().unwrap_or(true),
                });
                // The rest of this line needs no search: the whole line is parsed.
                from = memchr::memchr(b'\n', &b[me..end]).map_or(end, |p| me + p + 1);
            }
            let bytes = &b[chunk..chunk_end];
            nl += bytecount::count(bytes, b'\n') as u64;
            // NUL runs (joined across chunk ends).
            let mut p = 0;
            while let Some(z) = memchr::memchr(0, &bytes[p..]) {
                let zs = chunk + p + z;
                let mut ze = zs;
                while ze < chunk_end && b[ze] == 0 {
                    ze += 1;
                }
                match sc.nul_runs.last_mut() {
                    Some((o, l)) if *o + *l == zs => *l += ze - zs,
                    _ => sc.nul_runs.push((zs, ze - zs)),
                }
                p = ze - chunk;
            }
            chunk = chunk_end;
        }
        sc.nl_total = nl;
        sc
    }

    /// Append the scan of the bytes right after this one.
    pub fn append(&mut self, later: Scan) {
        let total = self.nl_total;
        self.hits.extend(later.hits);
        for (o, l) in later.nul_runs {
            match self.nul_runs.last_mut() {
                Some((po, pl)) if *po + *pl == o => *pl += l,
                _ => self.nul_runs.push((o, l)),
            }
        }
        self.chunk_starts.extend(later.chunk_starts);
        self.chunk_nl
            .extend(later.chunk_nl.into_iter().map(|n| n + total));
        self.nl_total += later.nl_total;
        self.end = later.end;
    }

    /// Drop what lies before `offset` (the launch starts there).
    pub fn keep_from(&mut self, offset: usize) {
        self.hits.retain(|h| h.offset >= offset);
        self.nul_runs.retain(|(o, l)| o + l > offset);
        if let Some((o, l)) = self.nul_runs.first_mut() {
            if *o < offset {
                *l -= offset - *o;
                *o = offset;
            }
        }
        self.start = offset.max(self.start);
    }

    /// Newlines in `b[a..z)` (both inside the scanned range).
    pub fn newlines_between(&self, b: &[u8], a: usize, z: usize) -> u64 {
        if z <= a {
            return 0;
        }
        self.newlines_before(b, z) - self.newlines_before(b, a)
    }

    fn newlines_before(&self, b: &[u8], p: usize) -> u64 {
        let i = self.chunk_starts.partition_point(|&cs| cs <= p);
        if i == 0 {
            return 0;
        }
        let cs = self.chunk_starts[i - 1];
        self.chunk_nl[i - 1] + bytecount::count(&b[cs..p], b'\n') as u64
    }
}

/// Lines of `b[start..end]`, numbered from `first_no`, inside candidate windows only.
#[derive(Debug)]
pub struct WindowedLines<'a> {
    b: &'a [u8],
    scan: &'a Scan,
    end: usize,
    pos: usize,
    no: u64,
    hits: Vec<Hit>,
    hit_i: usize,
    window_until: u64,
    pub long_lines: u64,
}

impl<'a> WindowedLines<'a> {
    /// The candidate lines of `b[start..end]` (a range `scan` covers). The first `HEAD_LINES`
    /// lines and the last `TAIL_BYTES` are parsed whole.
    pub fn new(b: &'a [u8], scan: &'a Scan, start: usize, end: usize, first_no: u64) -> Self {
        let lo = scan.hits.partition_point(|h| h.offset < start);
        let hi = scan.hits.partition_point(|h| h.offset < end);
        let mut hits = scan.hits[lo..hi].to_vec();
        let tail = end.saturating_sub(TAIL_BYTES).max(start);
        if tail > start {
            let at = hits.partition_point(|h| h.offset < tail);
            hits.insert(
                at,
                Hit {
                    offset: tail,
                    window: true,
                },
            );
        }
        WindowedLines {
            b,
            scan,
            end,
            pos: start,
            no: first_no,
            hits,
            hit_i: 0,
            window_until: first_no + HEAD_LINES,
            long_lines: 0,
        }
    }

    /// The line number the next line would get (after the iteration: total lines + first_no).
    pub fn next_no(&self) -> u64 {
        self.no
    }
}

impl<'a> Iterator for WindowedLines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        if self.pos >= self.end {
            return None;
        }
        // Outside a window: jump to the line of the next hit, counting the lines skipped.
        if self.no > self.window_until {
            while self.hit_i < self.hits.len() && self.hits[self.hit_i].offset < self.pos {
                self.hit_i += 1;
            }
            let Some(&Hit { offset: h, .. }) = self.hits.get(self.hit_i) else {
                // No more candidates: count the rest and stop.
                self.no += self.scan.newlines_between(self.b, self.pos, self.end);
                if self.end > self.pos && self.b[self.end - 1] != b'\n' {
                    self.no += 1;
                }
                self.pos = self.end;
                return None;
            };
            let mut ls =
                memchr::memrchr(b'\n', &self.b[self.pos..h]).map_or(self.pos, |p| self.pos + p + 1);
            // Start a few lines earlier: the line before a traceback may name its process.
            for _ in 0..WINDOW_LEAD_LINES {
                if ls <= self.pos {
                    break;
                }
                ls = memchr::memrchr(b'\n', &self.b[self.pos..ls - 1])
                    .map_or(self.pos, |p| self.pos + p + 1);
            }
            // A short gap is cheapest counted directly; a long one through the chunk table.
            self.no += if ls - self.pos < CHUNK_BYTES {
                bytecount::count(&self.b[self.pos..ls], b'\n') as u64
            } else {
                self.scan.newlines_between(self.b, self.pos, ls)
            };
            self.pos = ls;
            self.window_until = self.no + WINDOW_LEAD_LINES as u64;
        }
        let start = self.pos;
        let le = memchr::memchr(b'\n', &self.b[start..self.end]).map_or(self.end, |p| start + p);
        self.pos = le + 1;
        let no = self.no;
        self.no += 1;
        // A hit inside this line extends the window.
        while self.hit_i < self.hits.len() && self.hits[self.hit_i].offset <= le {
            if self.hits[self.hit_i].window {
                self.window_until = self.window_until.max(no + WINDOW_QUIET_LINES);
            }
            self.hit_i += 1;
        }
        let mut bytes = &self.b[start..le];
        if bytes.len() > LINE_BYTES_MAX {
            self.long_lines += 1;
            bytes = &bytes[..LINE_BYTES_MAX];
        }
        Some(Line {
            no,
            offset: start,
            bytes,
        })
    }
}

/// NUL runs (from the scan) and a final partial line in `b[start..end]`.
pub fn damage(b: &[u8], scan: &Scan, start: usize, end: usize) -> Vec<Damage> {
    let mut out: Vec<Damage> = scan
        .nul_runs
        .iter()
        .filter(|(o, l)| o + l > start && *o < end)
        .take(DAMAGE_ENTRIES_MAX)
        .map(|&(o, l)| Damage {
            kind: "nul_run".into(),
            offset: Some(o as u64),
            length: Some(l as u64),
            line: None,
        })
        .collect();
    if end == b.len() && end > start && b[end - 1] != b'\n' {
        let ls = memchr::memrchr(b'\n', &b[start..end]).map_or(start, |p| start + p + 1);
        out.push(Damage {
            kind: "partial_line".into(),
            offset: Some(ls as u64),
            length: Some((end - ls) as u64),
            line: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_only() -> Candidates {
        Candidates {
            needles: Needles::new(&["ERROR"]),
            window: vec![true],
        }
    }

    #[test]
    fn windows_skip_and_count() {
        let mut text = String::new();
        for i in 0..20_000 {
            text.push_str(&format!(
                "INFO:     10.0.0.1:{i} - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
            ));
        }
        text.push_str("ERROR boom\n");
        for _ in 0..10_000 {
            text.push_str("INFO:     10.0.0.1:1 - \"POST /v1/completions HTTP/1.1\" 200 OK\n");
        }
        let b = text.as_bytes();
        let sc = Scan::new(&errors_only(), b, 0, b.len());
        assert_eq!(sc.hits.len(), 1);
        let mut it = WindowedLines::new(b, &sc, 0, b.len(), 1);
        let lines: Vec<_> = it.by_ref().collect();
        // The head window, then the error line (and its window), then the tail.
        let err = lines.iter().find(|l| l.bytes == b"ERROR boom").unwrap();
        assert_eq!(err.no, 20_001);
        assert!(lines.len() < 12_000, "windows parse {} lines", lines.len());
        assert_eq!(it.next_no(), 30_002);
        assert_eq!(sc.newlines_between(b, 0, b.len()), 30_001);
    }

    #[test]
    fn scans_append_like_one_scan() {
        let text = "a\nERROR x\n\0\0\0b\nc\nERROR y\n".repeat(40_000);
        let b = text.as_bytes();
        let whole = Scan::new(&errors_only(), b, 0, b.len());
        let mid = b.len() / 2 + 7;
        let mut first = Scan::new(&errors_only(), b, 0, mid);
        first.append(Scan::new(&errors_only(), b, mid, b.len()));
        assert_eq!(whole.hits.len(), first.hits.len());
        assert_eq!(whole.nul_runs.len(), first.nul_runs.len());
        for p in [0, 10, mid - 3, mid, mid + 100, b.len()] {
            assert_eq!(
                whole.newlines_between(b, 0, p),
                first.newlines_between(b, 0, p),
                "at {p}"
            );
        }
    }

    #[test]
    fn nul_runs_and_partial_lines() {
        let b = b"a\n\0\0\0b\nc";
        let sc = Scan::new(&errors_only(), b, 0, b.len());
        let d = damage(b, &sc, 0, b.len());
        assert_eq!(d[0].kind, "nul_run");
        assert_eq!((d[0].offset, d[0].length), (Some(2), Some(3)));
        assert_eq!(d[1].kind, "partial_line");
        assert_eq!(d[1].offset, Some(7));
    }
}
