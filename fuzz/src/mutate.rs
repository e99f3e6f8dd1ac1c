//! The stable loop's input generator: [`Mutator`] turns seed-corpus inputs into hostile ones —
//! byte flips, splices, truncations, NUL runs, huge lines, ANSI/OSC/C1 sequences, invalid UTF-8,
//! tqdm-style `\r` progress, repeated and reordered lines, and tokens of vLLM's log grammar from
//! `vllm.dict` (the same dictionary libFuzzer gets with `-dict=`).
//!
//! There is no coverage feedback here (that is what libFuzzer adds); the mutations are chosen to
//! reach what a coverage-blind loop would otherwise miss: the exact prefixes and headers the
//! grammar looks for, and the sizes at which limits apply.

use generator::seed::Rng;
use generator::Seed;

/// Generated inputs stop growing at this size (a line longer than `LINE_BYTES_MAX` fits twice).
pub const INPUT_BYTES_MAX: usize = 1 << 20;

/// libFuzzer's dictionary of vLLM log tokens, also used here.
pub const DICTIONARY: &str = include_str!("../vllm.dict");

/// Terminal control sequences a hostile or colourful log may carry (complete and cut short).
const ESCAPES: &[&[u8]] = &[
    b"\x1b[0m",
    b"\x1b[1;36m",
    b"\x1b[2J",
    b"\x1b[H",
    b"\x1b]0;pwned\x07",
    b"\x1b]0;pwned\x1b\\",
    b"\x1b]8;;http://evil/\x07link\x1b]8;;\x07",
    b"\x1b]52;c;cHduZWQ=\x07",
    b"\xc2\x9b31m",
    b"\xc2\x9d0;x\xc2\x9c",
    b"\x1b",
    b"\x1b[",
    b"\x1b]",
    b"\x1b]0;never terminated",
    b"\x07",
    b"\x7f",
    b"\xe2\x80\xae",
    b"\xe2\x80\xa8",
];

/// Bytes that are not UTF-8: lone continuation bytes, overlongs, cut sequences, surrogates.
const INVALID_UTF8: &[&[u8]] = &[
    b"\xff",
    b"\xfe\xff",
    b"\x80",
    b"\xc0\xaf",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
];

/// Single bytes worth trying at any position.
const INTERESTING_BYTES: &[u8] = b"\0\n\r\t (()[]:=|,.-0123456789 pid=\x1b\x07\xc2\x9b\xff";

/// Makes new inputs from corpus inputs, deterministically from a seed.
#[derive(Debug)]
pub struct Mutator {
    rng: Rng,
    dict: Vec<Vec<u8>>,
}

impl Mutator {
    pub fn new(seed: u64) -> Mutator {
        Mutator {
            rng: Seed(seed).rng(),
            dict: parse_dictionary(DICTIONARY),
        }
    }

    /// A uniformly random index below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0);
        self.rng.range(0, n as u64 - 1) as usize
    }

    /// `base` changed by one to four stacked mutations; `other` is splice material.
    pub fn mutate(&mut self, base: &[u8], other: &[u8]) -> Vec<u8> {
        let mut out = base.to_vec();
        for _ in 0..self.rng.range(1, 4) {
            self.once(&mut out, other);
        }
        out.truncate(INPUT_BYTES_MAX);
        out
    }

    fn once(&mut self, b: &mut Vec<u8>, other: &[u8]) {
        match self.rng.range(0, 14) {
            0 if !b.is_empty() => {
                let i = self.below(b.len());
                b[i] ^= 1 << self.rng.range(0, 7);
            }
            1 if !b.is_empty() => {
                let i = self.below(b.len());
                b[i] = *self.rng.pick(INTERESTING_BYTES);
            }
            2 => {
                let n = self.rng.range(1, 16) as usize;
                let bytes: Vec<u8> = (0..n).map(|_| self.rng.next_u64() as u8).collect();
                let at = self.position(b);
                b.splice(at..at, bytes);
            }
            3 if !b.is_empty() => {
                let at = self.below(b.len());
                let n = self.span(b.len() - at);
                b.drain(at..at + n);
            }
            4 if !b.is_empty() => {
                let at = self.below(b.len());
                b.truncate(at);
            }
            5 if !other.is_empty() => {
                let from = self.below(other.len());
                let n = self.span(other.len() - from);
                let at = self.position(b);
                let replace = if self.rng.chance(50) {
                    self.span(b.len() - at)
                } else {
                    0
                };
                b.splice(at..at + replace, other[from..from + n].iter().copied());
            }
            6 => {
                let n = *self.rng.pick(&[1, 7, 4096, 8192, 70_000]);
                let at = self.position(b);
                b.splice(at..at, std::iter::repeat_n(0u8, n));
            }
            7 if self.rng.chance(5) => {
                // A line longer than LINE_BYTES_MAX (64 KiB), of text or of one repeated byte.
                let n = self.rng.range(60_000, 200_000) as usize;
                let fill = *self.rng.pick(b"x \x1b\xff(");
                let at = self.position(b);
                b.splice(at..at, std::iter::repeat_n(fill, n));
            }
            8 => {
                let e = *self.rng.pick(ESCAPES);
                let at = self.position(b);
                b.splice(at..at, e.iter().copied());
            }
            9 | 10 => {
                let i = self.below(self.dict.len());
                let t = self.dict[i].clone();
                let at = self.line_start(b);
                b.splice(at..at, t);
            }
            11 => {
                let e = *self.rng.pick(INVALID_UTF8);
                let at = self.position(b);
                b.splice(at..at, e.iter().copied());
            }
            12 => {
                // Repeat a line (folded echoes, `[repeated Nx]`, tracebacks from every rank).
                let (s, e) = self.line_at(b);
                let times = self.rng.range(2, 60) as usize;
                let copies = b[s..e].repeat(times);
                b.splice(e..e, copies);
            }
            13 => {
                // tqdm: progress redrawn with `\r`, no `\n` until the end (or never).
                if !b.is_empty() && self.rng.chance(50) {
                    let at = self.below(b.len());
                    let n = self.span(b.len() - at);
                    for c in &mut b[at..at + n] {
                        if *c == b'\n' {
                            *c = b'\r';
                        }
                    }
                } else {
                    let at = self.line_start(b);
                    let steps = self.rng.range(1, 200);
                    let mut bar = Vec::new();
                    for i in 0..steps {
                        bar.extend_from_slice(
                            format!("\rLoading safetensors checkpoint shards: {i:3}% Completed | {i}/{steps} [00:0{}<?, ?it/s]", i % 10).as_bytes(),
                        );
                    }
                    b.splice(at..at, bar);
                }
            }
            _ => {
                // Move a chunk of lines elsewhere (writers interleave, logs rotate).
                if b.len() > 2 {
                    let (s, _) = self.line_at(b);
                    let n = self.span(b.len() - s);
                    let chunk: Vec<u8> = b.drain(s..s + n).collect();
                    let at = self.line_start(b);
                    b.splice(at..at, chunk);
                }
            }
        }
    }

    /// A length in `1..=max` (0 when `max` is 0), small more often than large.
    fn span(&mut self, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let cap = *self.rng.pick(&[8usize, 64, 1024, usize::MAX]);
        1 + self.below(max.min(cap))
    }

    /// Any position in `b` (its end included); half the time the start of a line.
    fn position(&mut self, b: &[u8]) -> usize {
        if self.rng.chance(50) {
            self.line_start(b)
        } else {
            self.below(b.len() + 1)
        }
    }

    fn line_start(&mut self, b: &[u8]) -> usize {
        let at = self.below(b.len() + 1);
        b[..at]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |p| p + 1)
    }

    /// A random line: (start, end including its `\n`).
    fn line_at(&mut self, b: &[u8]) -> (usize, usize) {
        let s = self.line_start(b);
        let e = b[s..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |p| s + p + 1);
        (s, e)
    }
}

/// Tokens of a libFuzzer dictionary: `name="value"` or `"value"` lines with `\\`, `\"` and
/// `\xNN` escapes; `#` comments.
pub fn parse_dictionary(text: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (Some(open), Some(close)) = (line.find('"'), line.rfind('"')) else {
            continue;
        };
        if close <= open {
            continue;
        }
        let body = &line.as_bytes()[open + 1..close];
        let mut token = Vec::with_capacity(body.len());
        let mut i = 0;
        while i < body.len() {
            match (body[i], body.get(i + 1)) {
                (b'\\', Some(b'x')) if i + 4 <= body.len() => {
                    let hex = std::str::from_utf8(&body[i + 2..i + 4]).ok();
                    match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                        Some(v) => {
                            token.push(v);
                            i += 4;
                        }
                        None => {
                            token.push(b'x');
                            i += 2;
                        }
                    }
                }
                (b'\\', Some(&c)) => {
                    token.push(c);
                    i += 2;
                }
                (c, _) => {
                    token.push(c);
                    i += 1;
                }
            }
        }
        out.push(token);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_parses() {
        let d = parse_dictionary("# c\nkw=\"a\\x1b[\\\"b\\\\\"\n\"(APIServer pid=\"\n");
        assert_eq!(
            d,
            vec![b"a\x1b[\"b\\".to_vec(), b"(APIServer pid=".to_vec()]
        );
        let tokens = parse_dictionary(DICTIONARY);
        assert!(tokens.len() >= 40);
        // libFuzzer rejects a dictionary with a longer token.
        for t in &tokens {
            assert!(t.len() <= 64, "{:?}", String::from_utf8_lossy(t));
        }
    }

    #[test]
    fn mutations_are_deterministic_and_bounded() {
        let base = b"(APIServer pid=1) INFO 01-28 14:02:07 [a.py:1] hello\nline two\n";
        let run = |seed| {
            let mut m = Mutator::new(seed);
            (0..2_000)
                .map(|_| m.mutate(base, b"other\ntext"))
                .collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert!(a.iter().all(|x| x.len() <= INPUT_BYTES_MAX));
        assert!(a.iter().any(|x| x.contains(&0x1b)));
        assert!(a.iter().any(|x| x.len() > 64 * 1024));
        let mut empty = Mutator::new(1);
        for _ in 0..1_000 {
            empty.mutate(b"", b"");
        }
    }
}
