//! The log file's own faults: a relaunch that truncates the file while the old server still
//! writes, a relaunch into the same file after a crash, `kill -9` or stop, earlier launches, a
//! rotation, a host kill, a partial last line. [`FileAssembly`] lays out the file as segments
//! (launches, NUL holes, stray bytes); `simulate` pads and writes them. Which story a scenario
//! tells is `Scenario::file_story`, which the process runner follows too.

use crate::clock::SimTime;
use crate::deploy::Deployment;
use crate::interleave::{render_launch, RenderedLaunch};
use crate::record::Renderer;
use crate::release::Switch;
use crate::scenario::{Fault, RelaunchAfter, Scenario};
use crate::script::{build_launch, Ending, LaunchLog, LaunchStatus};
use crate::seed::{Rng, Seed};
use crate::selector::{Announce, Selection};
use vllm_argv::ServeArgs;

use super::{launch_segment, memchr_count, phase_time, Segment, SPLIT_PERCENT};

/// The file being laid out: its segments and what the truth needs to know about them.
pub(super) struct FileAssembly<'a, 'r> {
    s: &'a Scenario,
    main: &'a Deployment,
    renderer: &'a Renderer<'r>,
    seed: Seed,
    pub(super) rng: Rng,
    launch_no: u64,
    /// When the scenario's own launch starts (after any earlier launches).
    pub(super) t: SimTime,
    pub(super) segments: Vec<Segment>,
    /// The segment of the launch the verdict is about.
    pub(super) target: Option<usize>,
    pub(super) expected_pid: Option<u32>,
    pub(super) stale: bool,
}

impl<'a, 'r> FileAssembly<'a, 'r> {
    pub(super) fn new(
        s: &'a Scenario,
        main: &'a Deployment,
        renderer: &'a Renderer<'r>,
        seed: Seed,
        rng: Rng,
        t: SimTime,
    ) -> Self {
        FileAssembly {
            s,
            main,
            renderer,
            seed,
            rng,
            launch_no: 0,
            t,
            segments: Vec::new(),
            target: None,
            expected_pid: None,
            stale: false,
        }
    }

    /// Append a launch's writes (`counted`: it starts in this file; not for a stray writer's
    /// tail); returns its segment index.
    fn push_launch(&mut self, rendered: RenderedLaunch, log: LaunchLog, counted: bool) -> usize {
        self.segments.push(Segment::Launch {
            rendered,
            log,
            counted,
            traffic: None,
        });
        self.segments.len() - 1
    }

    fn next_seed(&mut self, tag: &str) -> Seed {
        self.launch_no += 1;
        self.seed.derive(tag, self.launch_no)
    }

    /// `count` earlier healthy launches of the same command, one after the other.
    pub(super) fn earlier_launches(&mut self, count: u32) {
        let (s, main, renderer, seed) = (self.s, self.main, self.renderer, self.seed);
        for _ in 0..count {
            let dep = healthy_variant(main);
            let log = build_launch(
                &dep,
                &s.env,
                self.next_seed("earlier"),
                self.t,
                Ending::StopAfter {
                    serve_ms: self.rng.range(60_000, 900_000),
                },
            );
            self.t = log.end.plus_ms(self.rng.range(20_000, 600_000));
            self.segments
                .push(launch_segment(log, renderer, seed, true));
        }
    }

    /// The old server (A) is serving, or still starting when its configuration fails; a
    /// relaunch (B) truncates the file with `>` while A still writes. Without O_APPEND, A
    /// keeps writing at its old offset.
    pub(super) fn truncated(&mut self, append: bool, new_command: Option<&str>) {
        let (s, main, renderer, seed, t) = (self.s, self.main, self.renderer, self.seed, self.t);
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
            healthy_variant(main)
        };
        let a = build_launch(
            &a_dep,
            &s.env,
            self.next_seed("old"),
            t,
            Ending::Natural {
                serve_ms: self.rng.range(120_000, 400_000),
            },
        );
        let t_trunc = match a.root.map(|r| a.events[r].t) {
            // A failing A is cut a third to two thirds into its start-up.
            Some(t_fail) if a_dep.failure.is_some() => {
                let span_us = t_fail.0.saturating_sub(t.0);
                t.plus_us(span_us / 3 + self.rng.range(0, span_us / 3))
            }
            _ => a
                .traffic_from
                .unwrap_or(a.end)
                .plus_ms(self.rng.range(30_000, 100_000)),
        };
        let b_args = relaunch_args(s, new_command);
        let b_dep = Deployment::derive(s, &b_args);
        let b = build_launch(
            &b_dep,
            &s.env,
            self.next_seed("new"),
            t_trunc,
            Ending::Natural {
                serve_ms: self.rng.range(10_000, 40_000),
            },
        );
        let a_r = render_launch(&a, renderer, seed.derive("old", 0), SPLIT_PERCENT);
        let (a_before, a_after) = split_at_time(&a_r, t_trunc);
        let b_r = render_launch(&b, renderer, seed.derive("new", 0), SPLIT_PERCENT);
        // A's writes continue after the truncation: a failing A until it has exited, a serving
        // one for a while (the window a reader of the file sees).
        let mut a_tail = a_after;
        if a_dep.failure.is_none() {
            let b_end = b.end;
            a_tail.chunks.retain(|c| c.t <= b_end.plus_ms(30_000));
        }
        for c in &mut a_tail.chunks {
            c.mark = None;
        }
        let mut a_tail_log = a.clone();
        a_tail_log.root = None;
        if append {
            let merged = merge_by_time(b_r, a_tail);
            self.target = Some(self.push_launch(merged, b, true));
        } else {
            let b_len = b_r.len_bytes() as u64;
            let a_off = a_before.len_bytes() as u64;
            self.target = Some(self.push_launch(b_r, b, true));
            if !a_tail.chunks.is_empty() {
                self.segments
                    .push(Segment::Nul(a_off.saturating_sub(b_len).max(1)));
                self.push_launch(a_tail, a_tail_log, false);
            }
        }
    }

    /// First launch, then `kill -9` / crash / stop, then a relaunch into the same file.
    pub(super) fn relaunched(
        &mut self,
        after: RelaunchAfter,
        new_lines: Option<u32>,
        new_command: Option<&str>,
    ) {
        let (s, main, renderer, seed, t) = (self.s, self.main, self.renderer, self.seed, self.t);
        // First launch, then `kill -9` / crash / stop, then a relaunch into the same file.
        let first_dep = match after {
            RelaunchAfter::Crash => main.clone(),
            _ => healthy_variant(main),
        };
        let ending = match after {
            RelaunchAfter::Ready => Ending::StopAfter {
                serve_ms: self.rng.range(60_000, 300_000),
            },
            _ => Ending::Natural {
                serve_ms: self.rng.range(30_000, 300_000),
            },
        };
        let first = build_launch(&first_dep, &s.env, self.next_seed("first"), t, ending);
        let mut first_r = render_launch(&first, renderer, seed.derive("first", 0), SPLIT_PERCENT);
        let t_kill = first.end.plus_ms(self.rng.range(2_000, 60_000));
        if after == RelaunchAfter::Kill9 {
            // `kill -9` of the API server: its output just stops.
            let cut = first
                .traffic_from
                .unwrap_or(first.end)
                .plus_ms(self.rng.range(5_000, 20_000));
            first_r.chunks.retain(|c| c.t <= cut);
        }
        let first_pid = first.api_pid;
        self.push_launch(first_r, first, true);
        // Workers of a `kill -9`ed server (vLLM ≤ 0.15) keep their GPU memory.
        let mut s2 = s.clone();
        let holds = (after == RelaunchAfter::Kill9 || s.faults.contains(&Fault::OrphanWorkers))
            && !s.vllm.has(Switch::WorkersWatchParent);
        if holds {
            let held = first_dep
                .memory
                .budget_gib
                .max(first_dep.gpu.torch_total_gib * 0.85);
            s2.faults.push(Fault::HoldGpuMemory { gib: held });
        }
        let new_args = relaunch_args(&s2, new_command);
        let second_dep = Deployment::derive(&s2, &new_args);
        let second = build_launch(
            &second_dep,
            &s.env,
            self.next_seed("second"),
            t_kill,
            Ending::Natural {
                serve_ms: self.rng.range(10_000, 60_000),
            },
        );
        let mut second_r =
            render_launch(&second, renderer, seed.derive("second", 0), SPLIT_PERCENT);
        let second_pid = second.api_pid;
        let _ = first_pid;
        match new_lines {
            Some(0) => {
                // The new server has written nothing yet: `tail` shows the old launch.
                self.expected_pid = Some(second_pid);
                self.stale = true;
            }
            Some(n) => {
                keep_lines(&mut second_r, n as usize);
                if carries_pid(&second_r, second_pid) {
                    self.expected_pid = Some(second_pid);
                }
                let mut cut_log = second.clone();
                // Whole writes are kept: if the failure is among them the launch has failed,
                // otherwise it is still starting.
                if !second_r.chunks.iter().any(|c| c.mark.is_some()) {
                    cut_log.status = LaunchStatus::Starting;
                    cut_log.root = None;
                    cut_log.failure = None;
                }
                self.target = Some(self.push_launch(second_r, cut_log, true));
            }
            None => {
                if carries_pid(&second_r, second_pid) {
                    self.expected_pid = Some(second_pid);
                }
                self.target = Some(self.push_launch(second_r, second, true));
            }
        }
    }

    /// The scenario's launch alone (cut short by a host kill, preceded by a rotation's hole).
    pub(super) fn single(&mut self) {
        let (s, main, renderer, seed, t) = (self.s, self.main, self.renderer, self.seed, self.t);
        let serve_ms = self.rng.range(20_000, 120_000);
        let log = build_launch(
            main,
            &s.env,
            self.next_seed("main"),
            t,
            Ending::Natural { serve_ms },
        );
        let mut log = log;
        let host_kill = s.host_kill();
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
        let mut seg = launch_segment(log, renderer, seed, true);
        if s.faults.contains(&Fault::Rotate) {
            // copytruncate rotation while the server writes without O_APPEND: the file starts
            // with a hole as long as the writer's offset, then continues mid-launch.
            if let Segment::Launch { rendered, log, .. } = &mut seg {
                let cut = log
                    .traffic_from
                    .unwrap_or(log.end)
                    .plus_ms(self.rng.range(1_000, 15_000));
                let (before, after) = split_at_time(rendered, cut);
                let hole = before.len_bytes() as u64;
                *rendered = after;
                self.segments.push(Segment::Nul(hole.max(1)));
            }
        }
        self.segments.push(seg);
        self.target = Some(self.segments.len() - 1);
    }

    /// The last write was cut short (a `kill -9` mid-write).
    pub(super) fn partial_last_line(&mut self) {
        let t = self.t;
        let pid = self.rng.range(2_000, 390_000);
        let stamp = t.log_stamp();
        let text = format!(
            "(Worker_TP0 pid={pid}) INFO {stamp} [multiproc_executor.py:730] Parent process ex"
        );
        self.segments.push(Segment::Bytes(text.into_bytes()));
    }
}

/// The same command on the same host, as it ran while it still worked (for earlier launches and
/// the old server of a relaunch).
pub(super) fn healthy_variant(d: &Deployment) -> Deployment {
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
    // Each part's interleaving is read from its own writes.
    before.interleaved = crate::interleave::interleaved(&before.chunks);
    after.interleaved = crate::interleave::interleaved(&after.chunks);
    (before, after)
}

fn merge_by_time(a: RenderedLaunch, b: RenderedLaunch) -> RenderedLaunch {
    let mut chunks: Vec<_> = a.chunks.into_iter().chain(b.chunks).collect();
    chunks.sort_by_key(|c| c.t);
    RenderedLaunch {
        interleaved: crate::interleave::interleaved(&chunks),
        chunks,
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
