//! Renderings of a log: the same lines as a collector, a CI page or a paste shows them — wrapped in
//! a container runtime's or journald's prefix, quoted, with ANSI written out as text, CRLF line
//! ends, noise of other processes between writes, cut to an excerpt, with lost newlines, an extra
//! echo, or an older healthy launch before it. None of them changes what failed, so triage must
//! give the same answer on every rendering (the metamorphic properties, and `faultkit render` for
//! anyone's triage).
//!
//! Main function: [`render`], which returns the new bytes and, per new line, the original lines
//! it holds ([`Rendered::original_lines`]).

use std::fmt;

use crate::clock::SimTime;
use crate::seed::{Rng, Seed};

/// One way of showing a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rendering {
    /// `docker compose logs`: `vllm-1  | ` before every line.
    Compose,
    /// `kubectl logs --prefix`: `[pod/NAME/CONTAINER] `.
    Kubectl,
    /// A log collector's pod and container names (`stern`): `NAME CONTAINER `.
    PodContainer,
    /// journald / syslog: `Jan 28 23:59:42 host vllm[4242]: `.
    Journald,
    /// `docker logs -t`: an RFC 3339 timestamp with nanoseconds.
    DockerTimestamps,
    /// A CI log quoted in markdown, with the CI's own timestamps: `> [2026-01-28T23:59:42Z] `.
    CiQuote,
    /// A wrapper's tag between the process prefix and the rest: `(APIServer pid=1) [serve] …`.
    ExtraTag,
    /// ANSI colour written out as text (`^[[1;36m`, as `less` or a paste shows it).
    AnsiAsText,
    /// `\r\n` line ends.
    Crlf,
    /// Lines of other processes (library warnings, Gloo's peer lines) between writes.
    Noise,
    /// A window around the root cause, as an issue quotes it.
    Excerpt,
    /// A window around the root cause with `[...]` where text was cut.
    ExcerptElided,
    /// A paste that lost its newlines: the root cause's traceback on one physical line.
    LostNewlines,
    /// Another echo of the failure by the API server after it.
    AppendEcho,
    /// An older healthy launch of a server before the log (a relaunch into the same file).
    PrependHealthyLaunch,
}

impl Rendering {
    pub const ALL: [Rendering; 15] = [
        Rendering::Compose,
        Rendering::Kubectl,
        Rendering::PodContainer,
        Rendering::Journald,
        Rendering::DockerTimestamps,
        Rendering::CiQuote,
        Rendering::ExtraTag,
        Rendering::AnsiAsText,
        Rendering::Crlf,
        Rendering::Noise,
        Rendering::Excerpt,
        Rendering::ExcerptElided,
        Rendering::LostNewlines,
        Rendering::AppendEcho,
        Rendering::PrependHealthyLaunch,
    ];

    /// The name in scenario files and on the command line (`docker-compose`, `lost-newlines`).
    pub fn name(self) -> &'static str {
        match self {
            Rendering::Compose => "docker-compose",
            Rendering::Kubectl => "kubectl-prefix",
            Rendering::PodContainer => "pod-container",
            Rendering::Journald => "journald",
            Rendering::DockerTimestamps => "docker-timestamps",
            Rendering::CiQuote => "ci-quote",
            Rendering::ExtraTag => "extra-tag",
            Rendering::AnsiAsText => "ansi-as-text",
            Rendering::Crlf => "crlf",
            Rendering::Noise => "noise",
            Rendering::Excerpt => "excerpt",
            Rendering::ExcerptElided => "excerpt-elided",
            Rendering::LostNewlines => "lost-newlines",
            Rendering::AppendEcho => "append-echo",
            Rendering::PrependHealthyLaunch => "prepend-healthy-launch",
        }
    }

    pub fn parse(s: &str) -> Option<Rendering> {
        Rendering::ALL.into_iter().find(|r| r.name() == s)
    }

    /// Whether the rendering needs to know the root-cause line (excerpts, lost newlines).
    pub fn needs_focus(self) -> bool {
        matches!(
            self,
            Rendering::Excerpt | Rendering::ExcerptElided | Rendering::LostNewlines
        )
    }

    /// Every name, for error messages and `--help`.
    pub fn names() -> String {
        Rendering::ALL
            .iter()
            .map(|r| r.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Rendering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A rendered log and where its lines came from.
#[derive(Clone, Debug)]
pub struct Rendered {
    pub bytes: Vec<u8>,
    /// Per line of `bytes` (index 0 is line 1): the original lines (1-based) it shows; empty
    /// for a line the rendering added.
    pub origin: Vec<Vec<u64>>,
}

impl Rendered {
    /// The original lines that new line `no` (1-based) shows.
    pub fn original_lines(&self, no: u64) -> &[u64] {
        usize::try_from(no)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| self.origin.get(i))
            .map_or(&[], Vec::as_slice)
    }

    /// The new line that shows original line `no`, if one does.
    pub fn new_line_of(&self, no: u64) -> Option<u64> {
        self.origin
            .iter()
            .position(|o| o.contains(&no))
            .map(|i| i as u64 + 1)
    }
}

/// The lines of `log` (without their `\n`; a last line without one is kept).
fn lines(log: &[u8]) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = log.split(|&b| b == b'\n').collect();
    if log.ends_with(b"\n") || log.is_empty() {
        out.pop();
    }
    out
}

/// Render `log`. `focus` is the root-cause line (1-based) that excerpts and lost newlines keep;
/// without one they leave the log as it is. `seed` picks names, times and window sizes.
pub fn render(log: &[u8], r: Rendering, focus: Option<u64>, seed: Seed) -> Rendered {
    let mut rng = seed.derive(r.name(), 0).rng();
    let src = lines(log);
    let mut out = Out::default();
    let n = src.len() as u64;
    let mut t = SimTime::from_secs(1_767_225_600 + rng.range(0, 300 * 86_400));
    match r {
        Rendering::Compose => {
            let name = *rng.pick(&["vllm-1", "vllm-server-1", "llm-1", "inference-vllm-1"]);
            let pad = " ".repeat(rng.range(1, 3) as usize);
            prefix_each(&src, &mut out, |_| format!("{name}{pad}| "));
        }
        Rendering::Kubectl => {
            let pod = pod_name(&mut rng);
            prefix_each(&src, &mut out, |_| format!("[pod/{pod}/vllm] "));
        }
        Rendering::PodContainer => {
            let pod = pod_name(&mut rng);
            prefix_each(&src, &mut out, |_| format!("{pod} vllm-server "));
        }
        Rendering::Journald => {
            let host = *rng.pick(&["gpu-node-3", "dgx01", "ip-10-0-4-17"]);
            let pid = rng.range(900, 60_000);
            prefix_each(&src, &mut out, |_| {
                t = t.plus_ms(rng.range(0, 40));
                let c = t.ctime();
                // `Sun Nov 29 22:00:30 2026` → `Nov 29 22:00:30`
                format!("{} {host} vllm[{pid}]: ", &c[4..19])
            });
        }
        Rendering::DockerTimestamps => prefix_each(&src, &mut out, |_| {
            t = t.plus_us(rng.range(0, 40_000));
            format!("{} ", t.rfc3339_nanos())
        }),
        Rendering::CiQuote => prefix_each(&src, &mut out, |_| {
            t = t.plus_ms(rng.range(0, 400));
            let s = t.rfc3339_nanos();
            format!("> [{}Z] ", &s[..19])
        }),
        Rendering::ExtraTag => {
            let tag = *rng.pick(&["[serve]", "[vllm]", "[model-server]"]);
            for (i, l) in src.iter().enumerate() {
                let p = process_prefix_len(l);
                let mut line = l[..p].to_vec();
                line.extend_from_slice(tag.as_bytes());
                line.push(b' ');
                line.extend_from_slice(&l[p..]);
                out.line(line, vec![i as u64 + 1]);
            }
        }
        Rendering::AnsiAsText => {
            for (i, l) in src.iter().enumerate() {
                let mut line = Vec::with_capacity(l.len() + 16);
                let p = process_prefix_len(l);
                let coloured = p > 0 && !l.contains(&0x1b);
                if coloured {
                    line.extend_from_slice(b"^[[1;36m");
                    line.extend_from_slice(l[..p].trim_ascii_end());
                    line.extend_from_slice(b"^[[0;0m ");
                }
                for &b in &l[if coloured { p } else { 0 }..] {
                    match b {
                        0x1b => line.extend_from_slice(b"^["),
                        b'\r' => line.extend_from_slice(b"^M"),
                        _ => line.push(b),
                    }
                }
                out.line(line, vec![i as u64 + 1]);
            }
        }
        Rendering::Crlf => {
            for (i, l) in src.iter().enumerate() {
                let mut line = l.to_vec();
                if !line.ends_with(b"\r") {
                    line.push(b'\r');
                }
                out.line(line, vec![i as u64 + 1]);
            }
        }
        Rendering::Noise => {
            let mut pid = rng.range(2_000, 90_000);
            for (i, l) in src.iter().enumerate() {
                if starts_a_write(l) && rng.chance(12) {
                    pid += rng.range(1, 7);
                    let noise = match rng.range(0, 3) {
                        0 => "[Gloo] Rank 0 is connected to 0 peer ranks. Expected number of connected peer ranks is : 0".to_string(),
                        1 => "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is deprecated. Please install nvidia-ml-py instead.".to_string(),
                        2 => format!("(raylet) [{}] Spilled 0 MiB, 0 objects", t.plus_ms(pid).ray_stamp()),
                        _ => "  import pynvml  # type: ignore[import]".to_string(),
                    };
                    out.line(noise.into_bytes(), Vec::new());
                }
                out.line(l.to_vec(), vec![i as u64 + 1]);
            }
        }
        Rendering::Excerpt | Rendering::ExcerptElided => {
            match focus.filter(|&f| f >= 1 && f <= n) {
                None => copy(&src, &mut out),
                Some(f) => {
                    let elide = r == Rendering::ExcerptElided;
                    // An excerpt keeps the root cause's traceback (its frames are the
                    // evidence) and some lines around it.
                    let tb = (0..f as usize)
                        .rev()
                        .take(400)
                        .find(|&i| contains(src[i], b"Traceback (most recent call last):"))
                        .map_or(f, |i| i as u64 + 1);
                    let from = tb.saturating_sub(rng.range(3, 60)).max(1);
                    // …and the rest of the root cause's record: the lines the same log call
                    // wrote under the same header (an exception's message over several lines,
                    // the runtime's detail below it), which a paste of the error keeps.
                    let record_end = record_continues_to(&src, f);
                    let to = (f + rng.range(0, 40)).min(n).max(record_end);
                    if elide && from > 1 {
                        out.line(b"[...]".to_vec(), Vec::new());
                    }
                    for no in from..=to {
                        out.line(src[(no - 1) as usize].to_vec(), vec![no]);
                    }
                    if elide && to < n {
                        out.line(b"[...]".to_vec(), Vec::new());
                    }
                }
            }
        }
        Rendering::LostNewlines => match focus.filter(|&f| f >= 1 && f <= n) {
            None => copy(&src, &mut out),
            Some(f) => {
                // The traceback that ends at the root cause, joined with spaces as a paste that
                // lost its newlines shows it.
                let fi = (f - 1) as usize;
                let start = (0..=fi)
                    .rev()
                    .take(200)
                    .find(|&i| contains(src[i], b"Traceback (most recent call last):"))
                    .unwrap_or(fi);
                for (i, l) in src.iter().enumerate().take(start) {
                    out.line(l.to_vec(), vec![i as u64 + 1]);
                }
                let mut joined = Vec::new();
                for (k, l) in src[start..=fi].iter().enumerate() {
                    if k > 0 {
                        joined.push(b' ');
                    }
                    joined.extend_from_slice(l.strip_suffix(b"\r").unwrap_or(l));
                }
                out.line(joined, (start as u64 + 1..=f).collect());
                for (i, l) in src.iter().enumerate().skip(fi + 1) {
                    out.line(l.to_vec(), vec![i as u64 + 1]);
                }
            }
        },
        Rendering::AppendEcho => {
            copy(&src, &mut out);
            let api = src.iter().rev().find_map(|l| api_server_prefix(l));
            let stamp = t.log_stamp();
            let echo = match api {
                Some(p) => format!("{p} ERROR {stamp} [api_server.py:1080] RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}"),
                None => "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}".to_string(),
            };
            out.line(echo.into_bytes(), Vec::new());
        }
        Rendering::PrependHealthyLaunch => {
            for l in healthy_launch(&mut rng, t) {
                out.line(l.into_bytes(), Vec::new());
            }
            // The relaunch prints its banner first; an excerpt of its output may have lost it.
            let starts_a_launch = src
                .iter()
                .take(40)
                .any(|l| contains(l, b"vLLM API server version") || contains(l, b"usage: "));
            if !starts_a_launch {
                let stamp = t.log_stamp();
                out.line(
                    format!("INFO {stamp} [api_server.py:1885] vLLM API server version 0.11.0")
                        .into_bytes(),
                    Vec::new(),
                );
            }
            copy(&src, &mut out);
        }
    }
    out.finish(log.ends_with(b"\n"))
}

#[derive(Default)]
struct Out {
    bytes: Vec<u8>,
    origin: Vec<Vec<u64>>,
}

impl Out {
    fn line(&mut self, l: Vec<u8>, origin: Vec<u64>) {
        self.bytes.extend_from_slice(&l);
        self.bytes.push(b'\n');
        self.origin.push(origin);
    }

    fn finish(mut self, trailing_newline: bool) -> Rendered {
        if !trailing_newline && self.bytes.ends_with(b"\n") {
            self.bytes.pop();
        }
        Rendered {
            bytes: self.bytes,
            origin: self.origin,
        }
    }
}

fn copy(src: &[&[u8]], out: &mut Out) {
    for (i, l) in src.iter().enumerate() {
        out.line(l.to_vec(), vec![i as u64 + 1]);
    }
}

fn prefix_each(src: &[&[u8]], out: &mut Out, mut prefix: impl FnMut(usize) -> String) {
    for (i, l) in src.iter().enumerate() {
        let mut line = prefix(i).into_bytes();
        line.extend_from_slice(l);
        out.line(line, vec![i as u64 + 1]);
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `vllm-7d9f8c6b5-x2k4q`: a Deployment's pod name.
fn pod_name(rng: &mut Rng) -> String {
    const ALNUM: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut s = String::from("vllm-");
    for _ in 0..9 {
        s.push(ALNUM[rng.range(0, ALNUM.len() as u64 - 1) as usize] as char);
    }
    s.push('-');
    for _ in 0..5 {
        s.push(ALNUM[rng.range(0, ALNUM.len() as u64 - 1) as usize] as char);
    }
    s
}

/// Length of the `(NAME pid=N) ` prefixes (ANSI colour included) at the start of a line.
fn process_prefix_len(l: &[u8]) -> usize {
    let mut i = 0;
    loop {
        let mut j = i;
        // Optional colour before the prefix.
        if l[j..].starts_with(b"\x1b[") {
            match l[j..].iter().position(|&b| b == b'm') {
                Some(m) => j += m + 1,
                None => return i,
            }
        }
        if l.get(j) != Some(&b'(') {
            return i;
        }
        let Some(close) = l[j..].iter().take(160).position(|&b| b == b')') else {
            return i;
        };
        if !contains(&l[j..j + close], b" pid=") {
            return i;
        }
        j += close + 1;
        if l[j..].starts_with(b"\x1b[") {
            if let Some(m) = l[j..].iter().position(|&b| b == b'm') {
                j += m + 1;
            }
        }
        if l.get(j) == Some(&b' ') {
            j += 1;
        }
        i = j;
    }
}

/// `(APIServer pid=N)` of a line, if it has one.
fn api_server_prefix(l: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(l).ok()?;
    let start = s.find("(APIServer pid=")?;
    let end = s[start..].find(')')? + start + 1;
    Some(s[start..end].to_string())
}

/// Whether a line starts a write of its own (a header, a process prefix, a traceback's first
/// line): noise of another process may land before it without splitting a record.
fn starts_a_write(l: &[u8]) -> bool {
    let l = l.strip_prefix(b"\x1b[1;36m").unwrap_or(l);
    l.starts_with(b"(")
        || l.starts_with(b"INFO ")
        || l.starts_with(b"WARNING ")
        || l.starts_with(b"DEBUG ")
}

/// The last line (1-based) of the record whose line `f` is: the lines after it that carry the
/// same header (`(Worker pid=…) ERROR … [file.py:N] `), at most 40.
fn record_continues_to(src: &[&[u8]], f: u64) -> u64 {
    let line = src[(f - 1) as usize];
    let Some(h) = line.windows(2).position(|w| w == b"] ") else {
        return f;
    };
    let header = &line[..h + 2];
    let mut end = f;
    while (end as usize) < src.len() && end < f + 40 && src[end as usize].starts_with(header) {
        end += 1;
    }
    end
}

/// The lines of a short healthy launch that ended before the log began: banner, engine, ready,
/// a request, shutdown.
fn healthy_launch(rng: &mut Rng, t: SimTime) -> Vec<String> {
    let api = rng.range(1_000, 60_000);
    let core = api + rng.range(100, 900);
    let t0 = SimTime(t.0.saturating_sub(3_600_000_000));
    let st = |ms: u64| t0.plus_ms(ms).log_stamp();
    vec![
        format!("(APIServer pid={api}) INFO {} [api_server.py:1885] vLLM API server version 0.11.0", st(0)),
        format!("(APIServer pid={api}) INFO {} [utils.py:328] non-default args: {{'model_tag': 'Qwen/Qwen2.5-7B-Instruct', 'model': 'Qwen/Qwen2.5-7B-Instruct'}}", st(20)),
        format!("(EngineCore_DP0 pid={core}) INFO {} [core.py:654] Waiting for init message from front-end.", st(4_000)),
        format!("(EngineCore_DP0 pid={core}) INFO {} [gpu_model_runner.py:2338] Model loading took 14.2488 GiB and 6.012348 seconds", st(30_000)),
        format!("(EngineCore_DP0 pid={core}) INFO {} [gpu_worker.py:298] Available KV cache memory: 52.19 GiB", st(41_000)),
        format!("(APIServer pid={api}) INFO {} [api_server.py:1957] Starting vLLM API server 0 on http://0.0.0.0:8000", st(60_000)),
        format!("(APIServer pid={api}) INFO:     Started server process [{api}]"),
        format!("(APIServer pid={api}) INFO:     Waiting for application startup."),
        format!("(APIServer pid={api}) INFO:     Application startup complete."),
        format!("(APIServer pid={api}) INFO:     127.0.0.1:51234 - \"POST /v1/completions HTTP/1.1\" 200 OK"),
        format!("(APIServer pid={api}) INFO:     Shutting down"),
        format!("(APIServer pid={api}) INFO:     Application shutdown complete."),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An excerpt keeps the whole record of the root cause: the runtime's detail lines the same
    /// log call wrote under the same header, which name why the call failed.
    #[test]
    fn an_excerpt_keeps_the_rest_of_the_root_cause_record() {
        let h = "(VllmWorker rank=3 pid=9) ERROR 07-17 08:06:53 [multiproc_executor.py:487] ";
        let log = format!(
            "{h}Traceback (most recent call last):\n{h}  File \"x.py\", line 1, in f\n{h}RuntimeError: NPU function error: aclrtGetDeviceCount, error code is 207004\n{h}[Error]: The device is unavailable.\n{h}EE1001: set ASCEND_RT_VISIBLE_DEVICES:0,2,1 error, it must be in ascending order\nINFO 07-17 08:06:54 [core.py:1] shutting down\n"
        );
        for seed in 0..16 {
            let out = render(log.as_bytes(), Rendering::Excerpt, Some(3), Seed(seed));
            let text = String::from_utf8_lossy(&out.bytes).into_owned();
            assert!(text.contains("EE1001"), "seed {seed}: {text}");
        }
    }

    /// A scenario's renderings carry the truth: its root-cause line is the rendered line that
    /// shows the original one, and its text is that line's.
    #[test]
    fn a_scenario_rendering_carries_the_truth_to_the_rendered_line() {
        let plain = crate::Scenario::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/crash/fp8-kv-sm120.toml"
        )))
        .expect("scenario");
        for names in [
            &["kubectl-prefix", "excerpt-elided"][..],
            &["journald", "crlf"],
            &["prepend-healthy-launch"],
            &["lost-newlines"],
        ] {
            let mut s = plain.clone();
            s.renderings = names.iter().map(|n| Rendering::parse(n).unwrap()).collect();
            for seed in 0..4 {
                let opts = crate::SimOptions {
                    seed: Seed(seed),
                    size_bytes: None,
                    vllm: None,
                };
                let (bytes, truth) = crate::simulate_to_vec(&s, &opts);
                let rc = truth.root_cause.as_ref().expect("a root cause");
                let line = bytes
                    .split(|&b| b == b'\n')
                    .nth(rc.line as usize - 1)
                    .expect("the line exists");
                assert_eq!(
                    vocab::truth::clean_line(line),
                    rc.text,
                    "{names:?} seed {seed}"
                );
                let (_, plain_truth) = crate::simulate_to_vec(&plain, &opts);
                assert_eq!(rc.id, plain_truth.root_cause.as_ref().unwrap().id);
                let extra = usize::from(names.contains(&"prepend-healthy-launch"));
                assert_eq!(truth.launches.len(), plain_truth.launches.len() + extra);
            }
        }
    }

    const LOG: &[u8] = b"INFO 01-28 14:02:16 [model.py:541] Resolved architecture\n\
(EngineCore_DP0 pid=7) ERROR 01-28 14:02:17 [core.py:708] Traceback (most recent call last):\n\
(EngineCore_DP0 pid=7) ERROR 01-28 14:02:17 [core.py:708]   File \"/x/core.py\", line 1, in f\n\
(EngineCore_DP0 pid=7) ERROR 01-28 14:02:17 [core.py:708] ValueError: boom\n";

    #[test]
    fn every_rendering_keeps_the_focus_line_findable_and_is_deterministic() {
        for r in Rendering::ALL {
            let a = render(LOG, r, Some(4), Seed(3));
            let b = render(LOG, r, Some(4), Seed(3));
            assert_eq!(a.bytes, b.bytes, "{r}");
            let new = a
                .new_line_of(4)
                .unwrap_or_else(|| panic!("{r} lost line 4"));
            assert!(a.original_lines(new).contains(&4), "{r}");
            assert_eq!(a.origin.len(), lines(&a.bytes).len(), "{r}");
            assert_eq!(Rendering::parse(r.name()), Some(r));
        }
    }

    #[test]
    fn wrappers_prefix_every_line_and_lost_newlines_join_the_traceback() {
        let c = render(LOG, Rendering::Compose, None, Seed(1));
        assert!(lines(&c.bytes).iter().all(|l| contains(l, b"| ")));
        let j = render(LOG, Rendering::LostNewlines, Some(4), Seed(1));
        assert_eq!(lines(&j.bytes).len(), 2);
        assert_eq!(j.original_lines(2), &[2, 3, 4]);
        let t = render(LOG, Rendering::ExtraTag, None, Seed(1));
        assert!(lines(&t.bytes)[1].starts_with(b"(EngineCore_DP0 pid=7) ["));
    }
}
