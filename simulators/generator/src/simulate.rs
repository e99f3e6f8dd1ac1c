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
use crate::release::Switch;
use crate::scenario::{Fault, RelaunchAfter, Scenario};
use crate::script::{build_launch, Ending, LaunchLog, LaunchStatus};
use crate::seed::Seed;
use crate::selector::{Announce, Selection};
use crate::traffic::{self, Traffic};
use crate::version::Version;
use vllm_argv::ServeArgs;
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

/// Simulate `s` and write the log to `out`.
pub fn simulate(s: &Scenario, opts: &SimOptions, out: &mut dyn Write) -> io::Result<Truth> {
    let s = s.at_version(opts.vllm.unwrap_or(s.vllm));
    let seed = opts.seed;
    let mut rng = seed.derive("file", 0).rng();
    // A start instant in 2026, from the seed.
    let mut t = SimTime::from_secs(1_767_225_600 + rng.range(0, 330 * 86_400));
    let renderer =
        Renderer::for_scenario(crate::profile::Profile::for_host(s.vllm, &s.host), &s, true);
    let main = Deployment::derive(&s, &s.args);
    let mut segments: Vec<Segment> = Vec::new();
    let mut launch_no = 0u64;
    let mut next_seed = |tag: &str| {
        launch_no += 1;
        seed.derive(tag, launch_no)
    };

    let earlier = s
        .fault(|f| match f {
            Fault::EarlierLaunches { count } => Some(*count),
            _ => None,
        })
        .unwrap_or(0);
    for _ in 0..earlier {
        let dep = healthy_variant(&main);
        let log = build_launch(
            &dep,
            &s.env,
            next_seed("earlier"),
            t,
            Ending::StopAfter {
                serve_ms: rng.range(60_000, 900_000),
            },
        );
        t = log.end.plus_ms(rng.range(20_000, 600_000));
        segments.push(launch_segment(log, &renderer, seed, true));
    }

    let relaunch = s.fault(|f| match f {
        Fault::RelaunchIntoSameLog {
            after,
            new_launch_lines,
            new_command,
        } => Some((*after, *new_launch_lines, new_command.clone())),
        _ => None,
    });
    let truncate = s.fault(|f| match f {
        Fault::TruncateWhileWriting {
            append,
            new_command,
        } => Some((*append, new_command.clone())),
        _ => None,
    });
    let orphan = s.faults.contains(&Fault::OrphanWorkers);
    let rotate = s.faults.contains(&Fault::Rotate);
    let partial = s.faults.contains(&Fault::PartialLastLine);

    let mut expected_pid = None;
    let mut stale = false;
    let mut target: Option<usize> = None; // segment index of the launch the verdict is about

    if let Some((append, new_command)) = truncate {
        // The old server (A) is serving, or still starting when its configuration fails; a
        // relaunch (B) truncates the file with `>` while A still writes. Without O_APPEND, A
        // keeps writing at its old offset. (A command line argparse rejects writes once and
        // exits at once: it cannot still be writing, so A is then the healthy variant.)
        let a_dep = if main
            .failure
            .as_ref()
            .is_some_and(|f| !matches!(f, crate::deploy::Failure::Cli(_)))
        {
            main.clone()
        } else {
            healthy_variant(&main)
        };
        let a = build_launch(
            &a_dep,
            &s.env,
            next_seed("old"),
            t,
            Ending::Natural {
                serve_ms: rng.range(120_000, 400_000),
            },
        );
        let t_trunc = match a.root.map(|r| a.events[r].t) {
            // A failing A is cut a third to two thirds into its start-up.
            Some(t_fail) if a_dep.failure.is_some() => {
                let span_us = t_fail.0.saturating_sub(t.0);
                t.plus_us(span_us / 3 + rng.range(0, span_us / 3))
            }
            _ => a
                .traffic_from
                .unwrap_or(a.end)
                .plus_ms(rng.range(30_000, 100_000)),
        };
        let b_args = relaunch_args(&s, new_command.as_deref());
        let b_dep = Deployment::derive(&s, &b_args);
        let b = build_launch(
            &b_dep,
            &s.env,
            next_seed("new"),
            t_trunc,
            Ending::Natural {
                serve_ms: rng.range(10_000, 40_000),
            },
        );
        let a_r = render_launch(&a, &renderer, seed.derive("old", 0), SPLIT_PERCENT);
        let (a_before, a_after) = split_at_time(&a_r, t_trunc);
        let b_r = render_launch(&b, &renderer, seed.derive("new", 0), SPLIT_PERCENT);
        // A's writes continue a little after the truncation.
        let mut a_tail = a_after;
        let b_end = b.end;
        a_tail.chunks.retain(|c| c.t <= b_end.plus_ms(30_000));
        for c in &mut a_tail.chunks {
            c.mark = None;
        }
        let mut a_tail_log = a.clone();
        a_tail_log.root = None;
        if append {
            let merged = merge_by_time(b_r, a_tail);
            segments.push(Segment::Launch {
                rendered: merged,
                log: b,
                counted: true,
                traffic: None,
            });
            target = Some(segments.len() - 1);
        } else {
            let b_len = b_r.len_bytes() as u64;
            let a_off = a_before.len_bytes() as u64;
            segments.push(Segment::Launch {
                rendered: b_r,
                log: b,
                counted: true,
                traffic: None,
            });
            target = Some(segments.len() - 1);
            if !a_tail.chunks.is_empty() {
                segments.push(Segment::Nul(a_off.saturating_sub(b_len).max(1)));
                segments.push(Segment::Launch {
                    rendered: a_tail,
                    log: a_tail_log,
                    counted: false,
                    traffic: None,
                });
            }
        }
    } else if let Some((after, new_lines, new_command)) = relaunch.clone().or(if orphan {
        Some((RelaunchAfter::Kill9, None, None))
    } else {
        None
    }) {
        // First launch, then `kill -9` / crash / stop, then a relaunch into the same file.
        let first_dep = match after {
            RelaunchAfter::Crash => main.clone(),
            _ => healthy_variant(&main),
        };
        let ending = match after {
            RelaunchAfter::Ready => Ending::StopAfter {
                serve_ms: rng.range(60_000, 300_000),
            },
            _ => Ending::Natural {
                serve_ms: rng.range(30_000, 300_000),
            },
        };
        let first = build_launch(&first_dep, &s.env, next_seed("first"), t, ending);
        let mut first_r = render_launch(&first, &renderer, seed.derive("first", 0), SPLIT_PERCENT);
        let t_kill = first.end.plus_ms(rng.range(2_000, 60_000));
        if after == RelaunchAfter::Kill9 {
            // `kill -9` of the API server: its output just stops.
            let cut = first
                .traffic_from
                .unwrap_or(first.end)
                .plus_ms(rng.range(5_000, 20_000));
            first_r.chunks.retain(|c| c.t <= cut);
        }
        let first_pid = first.api_pid;
        segments.push(Segment::Launch {
            rendered: first_r,
            log: first,
            counted: true,
            traffic: None,
        });
        // Workers of a `kill -9`ed server (vLLM ≤ 0.15) keep their GPU memory.
        let mut s2 = s.clone();
        let holds =
            (after == RelaunchAfter::Kill9 || orphan) && !s.vllm.has(Switch::WorkersWatchParent);
        if holds {
            let held = first_dep
                .memory
                .budget_gib
                .max(first_dep.gpu.torch_total_gib * 0.85);
            s2.faults.push(Fault::HoldGpuMemory { gib: held });
        }
        let new_args = relaunch_args(&s2, new_command.as_deref());
        let second_dep = Deployment::derive(&s2, &new_args);
        let second = build_launch(
            &second_dep,
            &s.env,
            next_seed("second"),
            t_kill,
            Ending::Natural {
                serve_ms: rng.range(10_000, 60_000),
            },
        );
        let mut second_r =
            render_launch(&second, &renderer, seed.derive("second", 0), SPLIT_PERCENT);
        let second_pid = second.api_pid;
        let _ = first_pid;
        match new_lines {
            Some(0) => {
                // The new server has written nothing yet: `tail` shows the old launch.
                expected_pid = Some(second_pid);
                stale = true;
            }
            Some(n) => {
                keep_lines(&mut second_r, n as usize);
                if carries_pid(&second_r, second_pid) {
                    expected_pid = Some(second_pid);
                }
                let mut cut_log = second.clone();
                // Whole writes are kept: if the failure is among them the launch has failed,
                // otherwise it is still starting.
                if !second_r.chunks.iter().any(|c| c.mark.is_some()) {
                    cut_log.status = LaunchStatus::Starting;
                    cut_log.root = None;
                    cut_log.failure = None;
                }
                segments.push(Segment::Launch {
                    rendered: second_r,
                    log: cut_log,
                    counted: true,
                    traffic: None,
                });
                target = Some(segments.len() - 1);
            }
            None => {
                if carries_pid(&second_r, second_pid) {
                    expected_pid = Some(second_pid);
                }
                segments.push(Segment::Launch {
                    rendered: second_r,
                    log: second,
                    counted: true,
                    traffic: None,
                });
                target = Some(segments.len() - 1);
            }
        }
    } else {
        let serve_ms = rng.range(20_000, 120_000);
        let log = build_launch(
            &main,
            &s.env,
            next_seed("main"),
            t,
            Ending::Natural { serve_ms },
        );
        let mut log = log;
        let host_kill = s.fault(|f| match f {
            Fault::HostKill { at } => Some(*at),
            _ => None,
        });
        if let Some(at) = host_kill {
            // Every process dies at once: the file ends where the phase began, no error, no
            // shutdown lines.
            let cut = phase_time(&log, at).plus_ms(1);
            log.events.retain(|e| e.t <= cut);
            log.status = LaunchStatus::Starting;
            log.root = None;
            log.failure = None;
            log.traffic_from = None;
        }
        let mut seg = launch_segment(log, &renderer, seed, true);
        if rotate {
            // copytruncate rotation while the server writes without O_APPEND: the file starts
            // with a hole as long as the writer's offset, then continues mid-launch.
            if let Segment::Launch { rendered, log, .. } = &mut seg {
                let cut = log
                    .traffic_from
                    .unwrap_or(log.end)
                    .plus_ms(rng.range(1_000, 15_000));
                let (before, after) = split_at_time(rendered, cut);
                let hole = before.len_bytes() as u64;
                *rendered = after;
                segments.push(Segment::Nul(hole.max(1)));
            }
        }
        segments.push(seg);
        target = Some(segments.len() - 1);
    }

    if partial {
        // The last write was cut short (a `kill -9` mid-write).
        let pid = rng.range(2_000, 390_000);
        let stamp = t.log_stamp();
        let text = format!(
            "(Worker_TP0 pid={pid}) INFO {stamp} [multiproc_executor.py:730] Parent process ex"
        );
        segments.push(Segment::Bytes(text.into_bytes()));
    }

    // Padding to the requested size.
    if let Some(size) = opts.size_bytes {
        let current: u64 = segments.iter().map(segment_len).sum();
        if size > current {
            pad(
                &mut segments,
                &mut target,
                size - current,
                &main,
                &s,
                &renderer,
                seed,
                &mut rng,
            );
        }
    }

    // Write and account.
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

/// The same command on the same host, as it ran while it still worked (for earlier launches and
/// the old server of a relaunch).
fn healthy_variant(d: &Deployment) -> Deployment {
    let mut h = d.clone();
    h.failure = None;
    h.args.problem = None;
    if h.model.is_none() {
        h.model = crate::catalog::model("llama-3.1-8b");
    }
    let model = h.model.expect("a model preset");
    if h.kv_cache_dtype.starts_with("fp8") && !matches!(h.selection, Some(Selection::Chosen { .. }))
    {
        h.kv_cache_dtype = "auto".into();
    }
    if !matches!(h.selection, Some(Selection::Chosen { .. })) {
        let shape = model.attention();
        let backend = if shape.mla {
            "TRITON_MLA"
        } else {
            "FLASH_ATTN"
        };
        h.selection = Some(Selection::Chosen {
            backend: backend.into(),
            announce: if h.version.has(Switch::SelectorAnnouncesCandidates) {
                Announce::Auto {
                    candidates: vec![backend.into()],
                }
            } else {
                Announce::V1Title {
                    title: if shape.mla {
                        "Triton MLA"
                    } else {
                        "Flash Attention"
                    },
                    line: 262,
                }
            },
            forced_block_size: None,
        });
    }
    let m = &mut h.memory;
    if m.kv_tokens == 0 || m.weights_per_rank_gib <= 0.0 {
        m.budget_gib = 0.9 * m.total_gib;
        m.weights_per_rank_gib =
            (model.weights_gib / f64::from(h.world.max(1))).min(m.budget_gib * 0.7);
        m.activation_gib = 1.2;
        m.kv_available_gib = (m.budget_gib - m.weights_per_rank_gib - m.activation_gib).max(1.0);
        let per_token = if m.kv_bytes_per_token > 0.0 {
            m.kv_bytes_per_token
        } else {
            70_000.0
        };
        m.kv_tokens =
            ((m.kv_available_gib * 1073741824.0 / per_token) as u64 / 16 * 16).max(h.max_model_len);
        m.graph_gib = 0.6;
    }
    if h.max_model_len > m.kv_tokens {
        h.max_model_len = m.kv_tokens;
    }
    h
}

fn relaunch_args(s: &Scenario, new_command: Option<&str>) -> ServeArgs {
    match new_command {
        Some(c) => ServeArgs::parse_command(c).unwrap_or_else(|_| s.args.clone()),
        None => s.args.clone(),
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

/// Split a rendered launch into the writes before and after an instant.
fn split_at_time(r: &RenderedLaunch, t: SimTime) -> (RenderedLaunch, RenderedLaunch) {
    let mut before = RenderedLaunch::default();
    let mut after = RenderedLaunch::default();
    for c in &r.chunks {
        if c.t < t {
            before.chunks.push(c.clone());
        } else {
            after.chunks.push(c.clone());
        }
    }
    before.interleaved = r.interleaved;
    (before, after)
}

fn merge_by_time(a: RenderedLaunch, b: RenderedLaunch) -> RenderedLaunch {
    let mut chunks: Vec<_> = a.chunks.into_iter().chain(b.chunks).collect();
    chunks.sort_by_key(|c| c.t);
    RenderedLaunch {
        chunks,
        interleaved: a.interleaved || b.interleaved,
    }
}

/// Keep the first writes of a launch until at least `n` lines are kept (a reader looked at the
/// file that early). Writes are never cut: a record reaches the file in one piece.
fn keep_lines(r: &mut RenderedLaunch, n: usize) {
    let mut lines = 0;
    let mut keep = 0;
    for (i, c) in r.chunks.iter().enumerate() {
        // The pieces of one record split at the stdio buffer share its instant and process.
        let continues = i > 0 && {
            let prev = &r.chunks[i - 1];
            prev.t == c.t && prev.proc == c.proc
        };
        if lines >= n && !continues {
            break;
        }
        lines += memchr_count(&c.bytes) as usize;
        keep += 1;
    }
    r.chunks.truncate(keep);
}

/// Whether a line of this launch carries `pid` (so `--pid` can find it).
fn carries_pid(r: &RenderedLaunch, pid: u32) -> bool {
    let needles = [
        format!("pid={pid})"),
        format!("pid={pid},"),
        format!("process [{pid}]"),
    ];
    r.chunks.iter().any(|c| {
        let text = String::from_utf8_lossy(&c.bytes);
        needles.iter().any(|n| text.contains(n.as_str()))
    })
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
                    let prefix = renderer.prefix(&log.procs[0]).into_bytes();
                    let dur = traffic::duration_us(missing, prefix.len());
                    let mut shifted = log.clone();
                    for e in &mut shifted.events {
                        if e.t >= from {
                            e.t = e.t.plus_us(dur);
                        }
                    }
                    let rendered = render_launch(
                        &shifted,
                        renderer,
                        seed.derive("render", u64::from(shifted.api_pid)),
                        SPLIT_PERCENT,
                    );
                    let at = rendered
                        .chunks
                        .iter()
                        .position(|c| c.t >= from.plus_us(dur))
                        .unwrap_or(rendered.chunks.len());
                    segments[ti] = Segment::Launch {
                        rendered,
                        log: shifted,
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
                    };
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
    let mut shifted = log.clone();
    for e in &mut shifted.events {
        if e.t >= from {
            e.t = e.t.plus_us(dur);
        }
    }
    let rendered = render_launch(
        &shifted,
        renderer,
        seed.derive("render-pad", 0),
        SPLIT_PERCENT,
    );
    let at = rendered
        .chunks
        .iter()
        .position(|c| c.t >= from.plus_us(dur))
        .unwrap_or(rendered.chunks.len());
    let prefix = renderer.prefix(&shifted.procs[0]).into_bytes();
    segments.insert(
        0,
        Segment::Launch {
            rendered,
            log: shifted,
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
        },
    );
    if let Some(t) = target {
        *t += 1;
    }
}
