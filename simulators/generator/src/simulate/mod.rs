//! A whole simulated log file: the launches a scenario implies, the file faults applied to them,
//! padding to a requested size, and the truth about the result.
//!
//! Main function: [`simulate`], which streams the log to any writer (gigabytes without holding
//! them in memory) and returns the [`Truth`]. [`simulate_to_vec`] is the in-memory form.

use std::io::{self, Write};

use crate::clock::SimTime;
use crate::deploy::{Deployment, Failure};
use crate::interleave::{render_launch, RenderedLaunch};
use crate::record::{Proc, Renderer};
use crate::scenario::{Fault, FileStory, Scenario};
use crate::script::{build_launch, Ending, LaunchLog};
use crate::seed::Seed;
use crate::traffic::{self, Traffic};
use crate::version::Version;

mod file_faults;

use file_faults::{healthy_variant, FileAssembly};
use vocab::truth::{
    clean_line, Truth, TruthDamage, TruthLaunch, TruthRootCause, TruthStale, TRUTH_SCHEMA,
};

/// Options of one simulation.
#[derive(Clone, Debug, Default)]
pub struct SimOptions {
    pub seed: Seed,
    /// Pad the log with realistic traffic to about this many bytes.
    pub size_bytes: Option<u64>,
    /// Override the scenario's vLLM version.
    pub vllm: Option<Version>,
}

/// Chance (percent) that a record above the stdio buffer reaches the file in pieces.
const SPLIT_PERCENT: u64 = 35;

enum Segment {
    Launch {
        rendered: RenderedLaunch,
        log: LaunchLog,
        /// Counted as a launch (it starts in this file); `false` for a writer's stray tail.
        counted: bool,
        /// Traffic inserted at this chunk index.
        traffic: Option<(usize, Traffic)>,
    },
    Nul(u64),
    Bytes(Vec<u8>),
}

struct Counter<'a> {
    out: &'a mut dyn Write,
    bytes: u64,
    lines: u64,
}

impl Counter<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.bytes += b.len() as u64;
        self.lines += memchr_count(b);
        Ok(())
    }
}

fn memchr_count(b: &[u8]) -> u64 {
    bytecount::count(b, b'\n') as u64
}

/// Simulate `s` and write the log to `out`, shown as the scenario's renderings say.
pub fn simulate(s: &Scenario, opts: &SimOptions, out: &mut dyn Write) -> io::Result<Truth> {
    if s.renderings.is_empty() {
        return simulate_plain(s, opts, out);
    }
    let mut buf = Vec::new();
    let mut truth = simulate_plain(s, opts, &mut buf)?;
    for (i, &r) in s.renderings.iter().enumerate() {
        let focus = truth.root_cause.as_ref().map(|rc| rc.line);
        let shown = crate::render::render(&buf, r, focus, opts.seed.derive("render", i as u64));
        follow_rendering(&mut truth, &shown, r);
        buf = shown.bytes;
    }
    out.write_all(&buf)?;
    Ok(truth)
}

/// Carry the truth through a rendering: its lines are where the rendering shows the original
/// ones; a prepended healthy launch is one more (stopped) launch before the others.
fn follow_rendering(
    truth: &mut Truth,
    shown: &crate::render::Rendered,
    r: crate::render::Rendering,
) {
    let new_of = |no: u64| shown.new_line_of(no);
    // The first new line showing an original line at or after `no` (or before it, at the end).
    let at_or_after = |no: u64| {
        shown
            .origin
            .iter()
            .position(|o| o.iter().any(|&l| l >= no))
            .map(|i| i as u64 + 1)
            .unwrap_or(shown.origin.len() as u64)
    };
    let at_or_before = |no: u64| {
        shown
            .origin
            .iter()
            .rposition(|o| o.iter().any(|&l| l <= no))
            .map(|i| i as u64 + 1)
            .unwrap_or(1)
    };
    for l in &mut truth.launches {
        l.first_line = at_or_after(l.first_line);
        l.last_line = at_or_before(l.last_line).max(l.first_line);
    }
    if let Some(rc) = truth.root_cause.as_mut() {
        if let Some(no) = new_of(rc.line) {
            rc.line = no;
            let text = shown
                .bytes
                .split(|&b| b == b'\n')
                .nth(no as usize - 1)
                .unwrap_or_default();
            rc.text = clean_line(text);
        }
    }
    if r == crate::render::Rendering::PrependHealthyLaunch {
        let first = truth.launches.first().map_or(1, |l| l.first_line);
        if first > 1 {
            for l in &mut truth.launches {
                l.index += 1;
            }
            truth.launches.insert(
                0,
                TruthLaunch {
                    index: 0,
                    first_line: 1,
                    last_line: first - 1,
                    pids: Vec::new(),
                    status: "stopped".into(),
                },
            );
            if let Some(i) = truth.launch.as_mut() {
                *i += 1;
            }
        }
    }
}

fn simulate_plain(s: &Scenario, opts: &SimOptions, out: &mut dyn Write) -> io::Result<Truth> {
    let s = s.at_version(opts.vllm.unwrap_or(s.vllm));
    let seed = opts.seed;
    let mut rng = seed.derive("file", 0).rng();
    // A start instant in 2026, from the seed.
    let t = SimTime::from_secs(1_767_225_600 + rng.range(0, 330 * 86_400));
    let renderer =
        Renderer::for_scenario(crate::profile::Profile::for_host(s.vllm, &s.host), &s, true);
    let main = Deployment::derive(&s, &s.args);
    let mut file = FileAssembly::new(&s, &main, &renderer, seed, rng, t);
    file.earlier_launches(s.earlier_launches());
    match s.file_story() {
        FileStory::Truncated {
            append,
            new_command,
        } => file.truncated(append, new_command.as_deref()),
        FileStory::Relaunched {
            after,
            new_launch_lines,
            new_command,
        } => file.relaunched(after, new_launch_lines, new_command.as_deref()),
        FileStory::Single => file.single(),
    }
    if s.faults.contains(&Fault::PartialLastLine) {
        file.partial_last_line();
    }

    // Padding to the requested size.
    if let Some(size) = opts.size_bytes {
        let current: u64 = file.segments.iter().map(segment_len).sum();
        if size > current {
            pad(
                &mut file.segments,
                &mut file.target,
                size - current,
                &main,
                &s,
                &renderer,
                seed,
                &mut file.rng,
            );
        }
    }
    let FileAssembly {
        segments,
        target,
        expected_pid,
        stale,
        ..
    } = file;

    let mut w = Counter {
        out,
        bytes: 0,
        lines: 0,
    };
    let mut launches = Vec::new();
    let mut root: Option<TruthRootCause> = None;
    let mut status = "unknown".to_string();
    let mut launch_index = None;
    for (si, seg) in segments.iter().enumerate() {
        match seg {
            Segment::Nul(n) => {
                let zeros = vec![0u8; 64 * 1024];
                let mut left = *n;
                while left > 0 {
                    let k = left.min(zeros.len() as u64) as usize;
                    w.write(&zeros[..k])?;
                    left -= k as u64;
                }
            }
            Segment::Bytes(b) => w.write(b)?,
            Segment::Launch {
                rendered,
                log,
                counted,
                traffic,
            } => {
                let first_line = w.lines + 1;
                for (ci, c) in rendered.chunks.iter().enumerate() {
                    if let Some((at, tr)) = traffic {
                        if *at == ci {
                            tr.write_to(&renderer, &mut CounterWriter(&mut w))?;
                        }
                    }
                    if let (Some(m), true) = (c.mark, Some(si) == target) {
                        let line_no = w.lines + memchr_count(&c.bytes[..m]) + 1;
                        let end = c.bytes[m..]
                            .iter()
                            .position(|&b| b == b'\n')
                            .map_or(c.bytes.len(), |p| m + p);
                        let text = clean_line(&c.bytes[m..end]);
                        let proc: &Proc = &log.procs[c.proc];
                        let process = if text.starts_with('(') {
                            proc.name.clone()
                        } else {
                            rank_process(&text)
                        };
                        let pid = if text.starts_with('(') {
                            Some(proc.pid)
                        } else {
                            None
                        };
                        root = Some(TruthRootCause {
                            id: log
                                .failure
                                .as_ref()
                                .map_or("unknown", Failure::id)
                                .to_string(),
                            line: line_no,
                            process,
                            pid,
                            message: message_of(&text),
                            text,
                        });
                    }
                    w.write(&c.bytes)?;
                }
                if let Some((at, tr)) = traffic {
                    if *at >= rendered.chunks.len() {
                        tr.write_to(&renderer, &mut CounterWriter(&mut w))?;
                    }
                }
                if *counted {
                    let idx = launches.len();
                    if Some(si) == target {
                        launch_index = Some(idx);
                        status = log.status.as_str().to_string();
                    }
                    launches.push(TruthLaunch {
                        index: idx,
                        first_line,
                        last_line: w.lines.max(first_line),
                        pids: log.pids(),
                        status: log.status.as_str().to_string(),
                    });
                }
            }
        }
    }
    // Damage of the launch the verdict is about: its own segments and what follows it up to the
    // next launch (a stray writer's tail, a hole, a partial last line).
    let owner = |i: usize| -> Option<usize> {
        (0..=i)
            .rev()
            .find(|&j| matches!(&segments[j], Segment::Launch { counted: true, .. }))
            .or_else(|| {
                (i..segments.len())
                    .find(|&j| matches!(&segments[j], Segment::Launch { counted: true, .. }))
            })
    };
    let mut damage: Vec<&'static str> = Vec::new();
    for (i, seg) in segments.iter().enumerate() {
        if target.is_none() || owner(i) != target {
            continue;
        }
        match seg {
            Segment::Nul(_) => {
                damage.push("nul_run");
                if i == 0 {
                    damage.push("rotated");
                }
            }
            Segment::Bytes(_) => damage.push("partial_line"),
            Segment::Launch { rendered, .. } => {
                if rendered.interleaved {
                    damage.push("interleaved_line");
                }
            }
        }
    }

    if stale {
        status = "unknown".into();
        root = None;
        launch_index = None;
    }
    if !matches!(status.as_str(), "crashed" | "hung") {
        root = None;
    }
    damage.sort_unstable();
    damage.dedup();
    Ok(Truth {
        schema: TRUTH_SCHEMA.to_string(),
        scenario: s.name.clone(),
        seed: seed.0,
        vllm_version: s.vllm.to_string(),
        status,
        launch: launch_index,
        launches,
        root_cause: root,
        stale: TruthStale { suspected: stale },
        damage: damage
            .into_iter()
            .map(|k| TruthDamage {
                kind: k.to_string(),
            })
            .collect(),
        expected_pid,
    })
}

/// Simulate into memory.
pub fn simulate_to_vec(s: &Scenario, opts: &SimOptions) -> (Vec<u8>, Truth) {
    let mut buf = Vec::new();
    let truth = simulate(s, opts, &mut buf).expect("writing to memory cannot fail");
    (buf, truth)
}

struct CounterWriter<'a, 'b>(&'a mut Counter<'b>);

impl Write for CounterWriter<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.out.flush()
    }
}

fn segment_len(s: &Segment) -> u64 {
    match s {
        Segment::Launch { rendered, .. } => rendered.len_bytes() as u64,
        Segment::Nul(n) => *n,
        Segment::Bytes(b) => b.len() as u64,
    }
}

fn launch_segment(log: LaunchLog, r: &Renderer<'_>, seed: Seed, counted: bool) -> Segment {
    let rendered = render_launch(
        &log,
        r,
        seed.derive("render", u64::from(log.api_pid)),
        SPLIT_PERCENT,
    );
    Segment::Launch {
        rendered,
        log,
        counted,
        traffic: None,
    }
}

/// When a launch reaches a phase: the first line that shows it.
pub fn phase_time(log: &LaunchLog, at: crate::scenario::Phase) -> SimTime {
    use crate::scenario::Phase;
    let first_text = |needles: &[&str]| {
        log.events
            .iter()
            .find(|e| match &e.body {
                crate::record::Body::Log { text, .. }
                | crate::record::Body::Stream(text)
                | crate::record::Body::Raw(text) => needles.iter().any(|n| text.contains(n)),
            })
            .map(|e| e.t)
    };
    let t = match at {
        Phase::InitDevice => log
            .events
            .iter()
            .find(|e| log.procs[e.proc].role.starts_with("Worker"))
            .map(|e| e.t),
        Phase::LoadWeights => first_text(&[
            "Starting to load model",
            "Loading safetensors",
            "Loading weights",
        ]),
        Phase::Compile => first_text(&[
            "torch.compile",
            "Dynamo bytecode",
            "Compiling a graph",
            "Capturing CUDA graph",
        ]),
        Phase::Serving => log.traffic_from,
    };
    t.unwrap_or(log.end)
}

fn rank_process(text: &str) -> Option<String> {
    let rest = text.strip_prefix("[rank")?;
    let end = rest.find(']')?;
    Some(format!("rank{}", &rest[..end]))
}

/// The statement without prefixes and log header.
pub fn message_of(text: &str) -> String {
    let mut s = text;
    // Process prefixes: `(Name pid=N) ` possibly several.
    loop {
        let t = s.trim_start();
        if t.starts_with('(') {
            if let Some(end) = t.find(") ") {
                if t[..end].contains("pid=") {
                    s = &t[end + 2..];
                    continue;
                }
            }
        }
        break;
    }
    // `[rankN]:` and `[rankN]:[E… file:line] `
    if let Some(rest) = s.strip_prefix("[rank") {
        if let Some(i) = rest.find("]:") {
            s = rest[i + 2..].trim_start();
            if s.starts_with('[') {
                if let Some(j) = s.find("] ") {
                    s = &s[j + 2..];
                }
            }
        }
    }
    // `LEVEL MM-DD HH:MM:SS [file:line] ` / `LEVEL MM-DD HH:MM:SS file:line] `
    for level in ["DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL "] {
        if let Some(rest) = s.strip_prefix(level) {
            if let Some(i) = rest.find("] ") {
                return rest[i + 2..].to_string();
            }
        }
    }
    s.to_string()
}

#[allow(clippy::too_many_arguments)]
fn pad(
    segments: &mut Vec<Segment>,
    target: &mut Option<usize>,
    missing: u64,
    main: &Deployment,
    s: &Scenario,
    renderer: &Renderer<'_>,
    seed: Seed,
    rng: &mut crate::seed::Rng,
) {
    // A runtime failure or a healthy server: the same launch serves traffic first.
    if let Some(ti) = *target {
        if let Segment::Launch { log, .. } = &segments[ti] {
            if let Some(from) = log.traffic_from {
                let failure_at_runtime = log.failure.as_ref().is_none_or(Failure::at_runtime);
                if failure_at_runtime {
                    let prefix_len = renderer.prefix(&log.procs[0]).len();
                    let dur = traffic::duration_us(missing, prefix_len);
                    let render_seed = seed.derive("render", u64::from(log.api_pid));
                    segments[ti] = serving_padded(
                        log.clone(),
                        (from, dur),
                        missing,
                        renderer,
                        render_seed,
                        seed,
                    );
                    return;
                }
            }
        }
    }
    // A startup failure: an earlier launch of the same file ran and served first.
    let dep = healthy_variant(main);
    let first_t = segments
        .iter()
        .find_map(|sg| match sg {
            Segment::Launch { log, .. } => log.events.iter().map(|e| e.t).min(),
            _ => None,
        })
        .unwrap_or_default();
    let prefix_len = renderer
        .prefix(&Proc {
            name: Some("APIServer".into()),
            pid: 100_000,
            role: "APIServer".into(),
            ray: None,
        })
        .len();
    let dur = traffic::duration_us(missing, prefix_len);
    let start = SimTime(first_t.0.saturating_sub(dur + 3_600_000_000));
    let log = build_launch(
        &dep,
        &s.env,
        seed.derive("padding-launch", 0),
        start,
        Ending::StopAfter {
            serve_ms: rng.range(5_000, 20_000),
        },
    );
    let from = log.traffic_from.unwrap_or(log.end);
    let padded = serving_padded(
        log,
        (from, dur),
        missing,
        renderer,
        seed.derive("render-pad", 0),
        seed,
    );
    segments.insert(0, padded);
    if let Some(t) = target {
        *t += 1;
    }
}

/// A launch that serves `missing` bytes of traffic for `dur` µs from `from` on: its later events
/// move by that duration, and the traffic is written where they resume.
fn serving_padded(
    mut log: LaunchLog,
    (from, dur): (SimTime, u64),
    missing: u64,
    renderer: &Renderer<'_>,
    render_seed: Seed,
    seed: Seed,
) -> Segment {
    let prefix = renderer.prefix(&log.procs[0]).into_bytes();
    for e in &mut log.events {
        if e.t >= from {
            e.t = e.t.plus_us(dur);
        }
    }
    let rendered = render_launch(&log, renderer, render_seed, SPLIT_PERCENT);
    let at = rendered
        .chunks
        .iter()
        .position(|c| c.t >= from.plus_us(dur))
        .unwrap_or(rendered.chunks.len());
    Segment::Launch {
        rendered,
        log,
        counted: true,
        traffic: Some((
            at,
            Traffic {
                prefix,
                start: from,
                bytes: missing,
                seed: seed.derive("padding", 0),
            },
        )),
    }
}
