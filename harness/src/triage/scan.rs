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

/// Words that open a window besides the rule literals.
pub const STRUCTURAL: &[&str] = &[
    "Traceback (most recent call last)",
    "Error",
    "ERROR",
    "error:",
    "Exception",
    "CRITICAL",
    "FATAL",
    "Fatal",
    "Killed",
    "died",
    "Application startup complete",
    "Application shutdown complete",
    "Shutting down",
    "Uvicorn running",
    "Initializing a",
    "Initializing an",
    "non-default args",
    "kv_cache_dtype",
    "AttentionSelectorConfig",
    "Process ",
    "failed",
    "Failed",
    "No available shared memory broadcast block",
];

/// One physical line.
#[derive(Clone, Copy, Debug)]
pub struct Line<'a> {
    /// 1-based line number (relative to `line_base`).
    pub no: u64,
    /// Byte offset of the line's first byte in the whole input.
    pub offset: usize,
    pub bytes: &'a [u8],
}

/// Lines of `b[start..end]`, numbered from `first_no`, inside candidate windows only.
#[derive(Debug)]
pub struct WindowedLines<'a> {
    b: &'a [u8],
    end: usize,
    pos: usize,
    no: u64,
    hits: Vec<usize>,
    hit_i: usize,
    window_until: u64,
    pub long_lines: u64,
}

impl<'a> WindowedLines<'a> {
    /// `hits` are byte offsets of candidate matches, ascending.
    pub fn new(b: &'a [u8], start: usize, end: usize, first_no: u64, hits: Vec<usize>) -> Self {
        WindowedLines {
            b,
            end,
            pos: start,
            no: first_no,
            hits,
            hit_i: 0,
            window_until: 0,
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
        {
            if self.pos >= self.end {
                return None;
            }
            // Outside a window: jump to the line of the next hit, counting the lines skipped.
            if self.no > self.window_until {
                while self.hit_i < self.hits.len() && self.hits[self.hit_i] < self.pos {
                    self.hit_i += 1;
                }
                let Some(&h) = self.hits.get(self.hit_i) else {
                    // No more candidates: count the rest and stop.
                    self.no += bytecount::count(&self.b[self.pos..self.end], b'\n') as u64;
                    if self.end > self.pos && self.b[self.end - 1] != b'\n' {
                        self.no += 1;
                    }
                    self.pos = self.end;
                    return None;
                };
                let ls = memchr::memrchr(b'\n', &self.b[self.pos..h])
                    .map_or(self.pos, |p| self.pos + p + 1);
                self.no += bytecount::count(&self.b[self.pos..ls], b'\n') as u64;
                self.pos = ls;
                self.window_until = self.no + WINDOW_QUIET_LINES;
            }
            let start = self.pos;
            let le =
                memchr::memchr(b'\n', &self.b[start..self.end]).map_or(self.end, |p| start + p);
            self.pos = le + 1;
            let no = self.no;
            self.no += 1;
            // A hit inside this line extends the window.
            while self.hit_i < self.hits.len() && self.hits[self.hit_i] <= le {
                self.window_until = no + WINDOW_QUIET_LINES;
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
}

/// Byte offsets of candidate matches in `b[start..end]`, one per line at most.
pub fn candidate_hits(ac: &AhoCorasick, b: &[u8], start: usize, end: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = start;
    while from < end {
        let Some(m) = ac.find(aho_corasick::Input::new(b).range(from..end)) else {
            break;
        };
        out.push(m.start());
        // The rest of this line needs no search: the whole line is parsed.
        from = memchr::memchr(b'\n', &b[m.end()..end]).map_or(end, |p| m.end() + p + 1);
    }
    out
}

/// NUL runs and a final partial line in `b[start..end]`.
pub fn damage(b: &[u8], start: usize, end: usize, file_len: usize) -> Vec<Damage> {
    let mut out = Vec::new();
    let mut pos = start;
    let mut runs = 0;
    while let Some(p) = memchr::memchr(0, &b[pos..end]) {
        let s = pos + p;
        let mut e = s;
        while e < end && b[e] == 0 {
            e += 1;
        }
        runs += 1;
        if runs <= DAMAGE_ENTRIES_MAX {
            out.push(Damage {
                kind: "nul_run".into(),
                offset: Some(s as u64),
                length: Some((e - s) as u64),
                line: None,
            });
        }
        pos = e;
    }
    if end == file_len && end > start && b[end - 1] != b'\n' {
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

    #[test]
    fn windows_skip_and_count() {
        let mut text = String::new();
        for i in 0..2000 {
            text.push_str(&format!(
                "INFO:     10.0.0.1:{i} - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
            ));
        }
        text.push_str("ERROR boom\n");
        text.push_str("tail\n");
        let b = text.as_bytes();
        let ac = AhoCorasick::new(["ERROR"]).unwrap();
        let hits = candidate_hits(&ac, b, 0, b.len());
        assert_eq!(hits.len(), 1);
        let mut it = WindowedLines::new(b, 0, b.len(), 1, hits);
        let lines: Vec<_> = it.by_ref().collect();
        assert_eq!(lines[0].no, 2001);
        assert_eq!(lines[0].bytes, b"ERROR boom");
        assert_eq!(lines[1].no, 2002);
        assert_eq!(it.next_no(), 2003);
    }

    #[test]
    fn nul_runs_and_partial_lines() {
        let b = b"a\n\0\0\0b\nc";
        let d = damage(b, 0, b.len(), b.len());
        assert_eq!(d[0].kind, "nul_run");
        assert_eq!((d[0].offset, d[0].length), (Some(2), Some(3)));
        assert_eq!(d[1].kind, "partial_line");
        assert_eq!(d[1].offset, Some(7));
    }
}
