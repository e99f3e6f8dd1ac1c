//! The `process` runner: a scenario as real processes. The fake vLLM server runs behind shims
//! named `vllm`, `python3` and `nvidia-smi` on `PATH`; faults happen for real (signals, orphans
//! holding GPUs, a relaunch appending to or truncating a log another process still writes).
//!
//! Main function: [`run`]. Per scenario it plays the sequence a person would: `faultkit launch`
//! for a plain start (and a plain start when the launcher refuses one, to show what vLLM would
//! do); `nohup vllm … > same.log &`, crash or `kill -9`, relaunch into the same file, read
//! after a few lines; the truncation race with a live old writer. The verdict is compared with
//! the text simulator's truth for the same scenario and seed — status, root cause, process
//! family, staleness, damage (line numbers and pids differ between a text and a process run).
//! After every case no process of it may be left, and no `/dev/shm` entry it created.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use fake_vllm::gpu::{GpuState, GpuUser};
use generator::scenario::{Fault, FileStory, RelaunchAfter};
use generator::{Scenario, Seed, SimOptions};
use vocab::Truth;

use super::compare::{Mismatch, Observed};
use super::{adapter, snapshot};
use launch::{self, state::Record, state::StateDir, tree, FollowUntil, LaunchOptions, Outcome};
use triage::{self, render, Options, Output, Verdict};

/// Real seconds per simulated second in process scenarios.
pub const TIME_SCALE: f64 = 0.003;
/// Bound on any one wait of a process case.
const STEP_TIMEOUT_MS: u64 = 60_000;
/// Grace period between SIGTERM and SIGKILL when a case cleans up.
const TERM_WAIT_MS: u64 = 3_000;
const POLL_MS: u64 = 5;

/// What a process case produced, for the runner to compare.
#[derive(Debug)]
pub struct ProcessRun {
    pub truth: Truth,
    pub observed: Observed,
    pub report: String,
    /// The log that was read.
    pub log: PathBuf,
    /// Disagreements found along the way (leftovers, the launcher's own answers).
    pub extra: Vec<Mismatch>,
}

impl ProcessRun {
    /// A played run's result from the verdict on its log (also written to `dir/verdict.txt`).
    pub(super) fn new(
        truth: Truth,
        verdict: &Verdict,
        log: PathBuf,
        extra: Vec<Mismatch>,
        dir: &Path,
    ) -> ProcessRun {
        let mut observed = adapter::observed_from_verdict(verdict);
        // Line numbers differ between a text and a process run: not scored.
        observed.line = None;
        let _ = std::fs::write(dir.join("verdict.txt"), render::human(verdict, false));
        ProcessRun {
            truth,
            observed,
            report: snapshot::render(verdict),
            log,
            extra,
        }
    }
}

/// Finds the `fake-vllm` binary: `$FAULTKIT_FAKE_VLLM`, else beside this executable (or its
/// parent directory, for test binaries in `deps/`), else on `PATH`.
pub fn fake_vllm() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(FAKE_VLLM_ENV) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{FAKE_VLLM_ENV}={}: no such file", p.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    let beside = exe.ancestors().skip(1).take(2).map(Path::to_path_buf);
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    beside
        .chain(on_path)
        .map(|dir| dir.join("fake-vllm"))
        .find(|c| c.is_file())
        .ok_or_else(|| {
            format!(
                "fake-vllm not found beside this program or on PATH: build it with `cargo build --release -p fake-vllm`, install it with `cargo install --path simulators/fake-vllm`, or name it with {FAKE_VLLM_ENV}=PATH"
            )
        })
}

/// Names the `fake-vllm` binary the process runner and `faultkit fake-host` use.
pub const FAKE_VLLM_ENV: &str = "FAULTKIT_FAKE_VLLM";

/// The host of one case: shims, model directory, GPU state, state dir, a free port.
struct Host {
    dir: PathBuf,
    env: Vec<(String, String)>,
    state: StateDir,
    port: u16,
    shm_prefix: String,
    /// Listeners the scenario says other processes hold.
    _held_ports: Vec<TcpListener>,
    leaders: Vec<(Child, Record)>,
}

fn io_err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

impl Host {
    fn new(s: &Scenario, seed: u64, dir: &Path) -> Result<Host, String> {
        let fake = fake_vllm()?;
        let fh = fake_vllm::FakeHost::create(dir, &fake, &s.gpu.id, s.gpu_count)
            .map_err(|e| io_err("preparing the fake host", e))?;
        // Only the scenario's model exists on this host (or none: a missing model path).
        if let Some(m) = s.model {
            fh.add_model(m, &s.args.model)
                .map_err(|e| io_err("writing model dir", e))?;
        }
        let state =
            StateDir::resolve(Some(&dir.join("state"))).map_err(|e| io_err("state dir", e))?;
        // A free port for the server; ports the scenario says are taken are held for real.
        let port = free_port()?;
        let mut held = Vec::new();
        if s.host.ports_in_use.contains(&s.args.port) {
            held.push(
                TcpListener::bind(("127.0.0.1", port)).map_err(|e| io_err("holding port", e))?,
            );
        }
        let shm_prefix = format!("psm_{:04x}", (seed ^ fnv(&s.id())) & 0xffff);
        let mut env: Vec<(String, String)> =
            s.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        env.extend(fh.env(TIME_SCALE));
        env.extend([
            (fake_vllm::ENV_SCENARIO.into(), s.path.display().to_string()),
            (fake_vllm::ENV_SEED.into(), seed.to_string()),
            (fake_vllm::ENV_SHM_PREFIX.into(), shm_prefix.clone()),
        ]);
        Ok(Host {
            dir: dir.to_path_buf(),
            env,
            state,
            port,
            shm_prefix,
            _held_ports: held,
            leaders: Vec::new(),
        })
    }

    /// The scenario's command on this host's port.
    fn argv(&self, command: &str) -> Result<Vec<String>, String> {
        let mut argv = shlex::split(command).ok_or("unbalanced quotes in command")?;
        argv.extend([
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            self.port.to_string(),
        ]);
        Ok(argv)
    }

    fn launch_opts(&self, argv: Vec<String>) -> LaunchOptions {
        let mut o = LaunchOptions::new(argv);
        o.state_dir = Some(self.state.root.clone());
        o.port = Some(self.port);
        o.ready_timeout = Duration::from_millis(STEP_TIMEOUT_MS);
        o.env = self.env.clone();
        o.term_wait_ms = TERM_WAIT_MS;
        o
    }

    /// `nohup ARGV > LOG &` (or `>>` with `append`).
    fn start_plain(&mut self, argv: &[String], log: &Path, append: bool) -> Result<Record, String> {
        let mut o = OpenOptions::new();
        o.create(true).write(true);
        if append {
            o.append(true);
        } else {
            o.truncate(true);
        }
        let f = o.open(log).map_err(|e| io_err("opening log", e))?;
        let (child, rec) = launch::start_plain(&self.state, argv, &f, log, &self.env)
            .map_err(|e| e.to_string())?;
        self.leaders.push((child, rec.clone()));
        Ok(rec)
    }

    fn leader_pids(&self) -> Vec<u32> {
        self.leaders.iter().map(|(c, _)| c.id()).collect()
    }

    /// Waits until the leader of `rec` has exited.
    fn wait_exit(&mut self, rec: &Record) -> Result<(), String> {
        let what = format!("launch {} to exit", rec.id);
        wait_for(|| leader_exited(&mut self.leaders, rec), &what)
    }

    fn wait_healthy(&self) -> Result<(), String> {
        let url = launch::health::HealthUrl::for_port(self.port);
        wait_for(
            || launch::health::probe(&url) == Some(200),
            "the server to answer /health",
        )
    }

    /// Stops everything this case started and checks nothing is left.
    fn clean_up(&mut self, extra: &mut Vec<Mismatch>) {
        let keep = self.leader_pids();
        for mut rec in self.state.all() {
            let mut reap = || {
                launch::reap_orphans(&keep);
            };
            let _ = tree::stop(&mut rec, TERM_WAIT_MS, &mut reap);
            if !tree::members(&rec).is_empty() {
                extra.push(leftover(
                    "processes",
                    format!("launch {} still has processes", rec.id),
                ));
            }
        }
        for (c, _) in &mut self.leaders {
            let _ = c.wait();
        }
        launch::reap_orphans(&[]);
        let left: Vec<String> = tree::shm_names()
            .into_iter()
            .filter(|n| n.starts_with(&self.shm_prefix))
            .collect();
        if !left.is_empty() {
            extra.push(leftover("shm", format!("/dev/shm entries left: {left:?}")));
        }
    }
}

fn leftover(field: &str, actual: String) -> Mismatch {
    Mismatch {
        field: format!("leftover_{field}"),
        expected: "none".into(),
        actual,
        against: "cleanup",
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| io_err("finding a free port", e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| io_err("finding a free port", e))
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) -> Result<(), String> {
    launch::wait::until(
        Duration::from_millis(STEP_TIMEOUT_MS),
        Duration::from_millis(POLL_MS),
        what,
        || cond().then_some(()),
    )
}

fn verdict_of(bytes: &[u8], pid: Option<u32>) -> Verdict {
    match triage::triage(
        bytes,
        &Options {
            pid,
            ..Options::default()
        },
    ) {
        Output::One(v) => v,
        Output::All(mut vs) => vs.pop().unwrap_or_else(Verdict::empty),
    }
}

/// Runs `case` as processes in `dir`.
pub fn run(s: &Scenario, seed: u64, dir: &Path) -> Result<ProcessRun, String> {
    if s.path.as_os_str().is_empty() {
        return Err("the process runner needs a scenario file".into());
    }
    // Orphans of the case are re-parented here, so they can be found and reaped.
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| io_err("creating case dir", e))?;
    let truth = text_truth(s, seed, dir)?;
    let mut host = Host::new(s, seed, dir)?;
    let mut extra = Vec::new();
    let result = play(s, &truth, &mut host, &mut extra);
    host.clean_up(&mut extra);
    let (verdict, log, more) = result?;
    extra.extend(more);
    // Keep the log beside the truth (a launch's own log lives in its state dir).
    let log = if log.parent() == Some(dir) {
        log
    } else {
        let copy = dir.join("server.log");
        std::fs::copy(&log, &copy).map_err(|e| io_err("copying the server log", e))?;
        copy
    };
    Ok(ProcessRun::new(truth, &verdict, log, extra, dir))
}

/// The text simulation of `s` beside a played run: `text.log` and `truth.json` in `dir`.
pub(super) fn text_truth(s: &Scenario, seed: u64, dir: &Path) -> Result<Truth, String> {
    let opts = SimOptions {
        seed: Seed(seed),
        size_bytes: None,
        vllm: None,
    };
    let (bytes, truth) = generator::simulate_to_vec(s, &opts);
    std::fs::write(dir.join("text.log"), bytes).map_err(|e| io_err("writing text.log", e))?;
    std::fs::write(dir.join("truth.json"), truth.to_json())
        .map_err(|e| io_err("writing truth", e))?;
    Ok(truth)
}

/// The scenario's sequence; returns the verdict to score.
/// The verdict to score, the log it came from, disagreements found on the way.
type Played = (Verdict, PathBuf, Vec<Mismatch>);

fn play(
    s: &Scenario,
    truth: &Truth,
    host: &mut Host,
    extra: &mut Vec<Mismatch>,
) -> Result<Played, String> {
    if let Some(f) = s.text_only_fault() {
        return Err(format!(
            "fault {f:?} has no process form (text runner only)"
        ));
    }
    match s.file_story() {
        FileStory::Relaunched {
            after,
            new_launch_lines,
            new_command,
        } => relaunch_into_same_log(
            s,
            truth,
            host,
            after,
            new_launch_lines,
            new_command.as_deref(),
        ),
        FileStory::Truncated {
            append,
            new_command,
        } => truncate_while_writing(s, host, append, new_command.as_deref()),
        FileStory::Single => plain(s, truth, host, extra).map(|(v, log)| (v, log, Vec::new())),
    }
}

/// `faultkit launch`; when it refuses (port or GPUs held), a plain start shows vLLM's own
/// failure. A server that comes up is followed while the scenario's runtime fault plays out.
fn plain(
    s: &Scenario,
    truth: &Truth,
    host: &mut Host,
    extra: &mut Vec<Mismatch>,
) -> Result<(Verdict, PathBuf), String> {
    let held_gib = s.held_gpu_gib();
    if let Some(gib) = held_gib {
        hold_gpus(host, s, gib)?;
    }
    let argv = host.argv(&s.command)?;
    let opts = host.launch_opts(argv.clone());
    let r = launch::launch(&opts, &mut |_| {}, &mut |_| {}).map_err(|e| e.to_string())?;
    let refused = r.outcome == Outcome::Busy;
    let expect_refusal = held_gib.is_some() || s.host.ports_in_use.contains(&s.args.port);
    if refused != expect_refusal {
        extra.push(Mismatch {
            field: "launch_outcome".into(),
            expected: if expect_refusal { "busy" } else { "not busy" }.into(),
            actual: format!("{} {:?}", r.outcome.as_str(), r.holders),
            against: "launcher",
        });
    }
    if refused {
        // The launcher names the holder: this runner, which holds the port or the GPU memory.
        let me = std::process::id();
        if !r.holders.iter().any(|h| h.pid == Some(me)) {
            extra.push(Mismatch {
                field: "launch_holders".into(),
                expected: format!("pid {me}"),
                actual: format!("{:?}", r.holders),
                against: "launcher",
            });
        }
        let log = host.dir.join("plain.log");
        let rec = host.start_plain(&argv, &log, false)?;
        host.wait_exit(&rec)?;
        let bytes = std::fs::read(&log).map_err(|e| io_err("reading log", e))?;
        return Ok((verdict_of(&bytes, None), log));
    }
    let v = r.verdict.ok_or("launch gave no verdict")?;
    let log = r.log.ok_or("launch gave no log")?;
    if r.outcome == Outcome::Ready {
        if let Some((process, signal)) = s.fault(|f| match f {
            Fault::Signal { process, signal } => Some((process.clone(), *signal)),
            _ => None,
        }) {
            // The situation's outside signal, sent by this runner to its own launch; the fake
            // server was not told and must react as vLLM does.
            send_signal(host, r.id.as_deref(), &process, signal, extra)?;
        }
    }
    if r.outcome == Outcome::Ready && truth.status != "ready" {
        let stop = AtomicBool::new(false);
        let v = launch::follow(
            &log,
            None,
            Duration::from_millis(STEP_TIMEOUT_MS),
            FollowUntil::Failure,
            &stop,
        )
        .map_err(|e| io_err("following", e))?;
        return Ok((v, log));
    }
    Ok((v, log))
}

/// Sends `signal` to the process of launch `id` that the scenario names (`Worker_TP1`,
/// `EngineCore_DP0`: its process title); a launch without that process is a mismatch.
fn send_signal(
    host: &Host,
    id: Option<&str>,
    process: &str,
    signal: generator::scenario::Signal,
    extra: &mut Vec<Mismatch>,
) -> Result<(), String> {
    let id = id.ok_or("a ready launch without an id")?;
    let rec = host
        .state
        .load(id)
        .map_err(|e| io_err("reading the launch record", e))?;
    let sig = rustix::process::Signal::from_named_raw(signal.number())
        .ok_or_else(|| format!("signal {} has no name", signal.number()))?;
    if tree::signal_member(&rec, process, sig).is_none() {
        extra.push(Mismatch {
            field: "signal_target".into(),
            expected: format!("a live {process} of launch {id}"),
            actual: "none".into(),
            against: "scenario",
        });
    }
    Ok(())
}

/// Registers this runner as a GPU user holding `gib` on every GPU (another job on the host).
fn hold_gpus(host: &Host, s: &Scenario, gib: f64) -> Result<(), String> {
    let me = procfacts::ProcInfo::read(std::process::id()).ok_or("reading /proc/self")?;
    let path = host.dir.join("gpus.json");
    GpuState::update(&path, |st| {
        for g in 0..s.gpu_count {
            st.users.push(GpuUser {
                gpu: g,
                pid: me.pid,
                start_time: me.start_time,
                used_mib: (gib * 1024.0) as u64,
                name: "python3".into(),
            });
        }
    })
    .map(|_| ())
    .map_err(|e| io_err("updating GPU state", e))
}

/// The classic manual restart: `nohup vllm … > same.log &`; it crashes (or is `kill -9`ed, or
/// stopped); `nohup vllm … >> same.log &` again; someone reads the file a moment later.
fn relaunch_into_same_log(
    s: &Scenario,
    truth: &Truth,
    host: &mut Host,
    after: RelaunchAfter,
    lines: Option<u32>,
    new_command: Option<&str>,
) -> Result<Played, String> {
    let log = host.dir.join("same.log");
    let argv1 = host.argv(&s.command)?;
    let first = host.start_plain(&argv1, &log, false)?;
    match after {
        RelaunchAfter::Crash => host.wait_exit(&first)?,
        RelaunchAfter::Ready => {
            host.wait_healthy()?;
            let mut rec = first.clone();
            let keep = host.leader_pids();
            tree::stop(&mut rec, TERM_WAIT_MS, &mut || launch::reap_orphans(&keep));
            host.wait_exit(&first)?;
        }
        RelaunchAfter::Kill9 => {
            host.wait_healthy()?;
            // `kill -9 <api server pid>`: the engine core and workers stay (vLLM ≤ 0.15).
            if !tree::signal_leader(&first, rustix::process::Signal::KILL) {
                return Err("could not kill -9 the first server".into());
            }
            host.wait_exit(&first)?;
        }
    }
    let old_len = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) as usize;
    let argv2 = host.argv(new_command.unwrap_or(&s.command))?;
    let second = host.start_plain(&argv2, &log, true)?;
    let new_pid = second.pid;
    // Read the file when the new launch has written `lines` whole lines (the new server is
    // still running: this is what `tail` would see), or at its end.
    let snapshot = match lines {
        Some(n) => {
            let mut cut = None;
            wait_for(
                || {
                    let b = std::fs::read(&log).unwrap_or_default();
                    let tail = &b[old_len.min(b.len())..];
                    let ends: Vec<usize> = memchr::memchr_iter(b'\n', tail).collect();
                    if n == 0 || ends.len() >= n as usize {
                        let end = if n == 0 { 0 } else { ends[n as usize - 1] + 1 };
                        cut = Some(b[..old_len + end].to_vec());
                        true
                    } else {
                        false
                    }
                },
                "the new launch's first lines",
            )?;
            cut.unwrap_or_default()
        }
        None => {
            wait_end(host, &second, &log)?;
            std::fs::read(&log).map_err(|e| io_err("reading log", e))?
        }
    };
    let read = host.dir.join("read.log");
    std::fs::write(&read, &snapshot).map_err(|e| io_err("writing read.log", e))?;
    let pid = truth.expected_pid.map(|_| new_pid);
    let v = verdict_of(&snapshot, pid);

    // What `tail -20` showed at that moment, and what `faultkit follow --pid NEW` says.
    let mut extra = Vec::new();
    if truth.stale.suspected {
        // The trap is real: `tail -20` shows pids, none of them the new server's.
        let tail = last_lines(&snapshot, 20);
        let pids = pids_in(&tail);
        if pids.is_empty() || pids.contains(&new_pid) {
            extra.push(Mismatch {
                field: "tail_shows_old_pids".into(),
                expected: format!("old pids only (the new server is {new_pid})"),
                actual: format!("{pids:?}"),
                against: "scenario",
            });
        }
    }
    let stop = AtomicBool::new(false);
    let followed = launch::follow(
        &log,
        Some(new_pid),
        Duration::from_millis(STEP_TIMEOUT_MS),
        FollowUntil::ReadyOrFailure,
        &stop,
    )
    .map_err(|e| io_err("following", e))?;
    let mut alone = s.clone();
    for f in &mut alone.faults {
        if let Fault::RelaunchIntoSameLog {
            new_launch_lines, ..
        } = f
        {
            *new_launch_lines = None;
        }
    }
    let end_truth = text_truth_quiet(&alone, truth.seed);
    if followed.stale.suspected || followed.status.as_str() != end_truth.status {
        extra.push(Mismatch {
            field: "follow_new_pid".into(),
            expected: format!("{} (not stale)", end_truth.status),
            actual: format!(
                "{}{}",
                followed.status.as_str(),
                if followed.stale.suspected {
                    " (stale)"
                } else {
                    ""
                }
            ),
            against: "truth",
        });
    }
    Ok((v, read, extra))
}

/// Pids in `(NAME pid=N)` prefixes.
fn pids_in(text: &str) -> Vec<u32> {
    let mut out: Vec<u32> = text
        .match_indices(" pid=")
        .filter_map(|(i, m)| {
            let rest = &text[i + m.len()..];
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            rest[..end].parse().ok()
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn text_truth_quiet(s: &Scenario, seed: u64) -> Truth {
    let opts = SimOptions {
        seed: Seed(seed),
        size_bytes: None,
        vllm: None,
    };
    generator::simulate_to_vec(s, &opts).1
}

/// Waits until a plainly started launch has exited or answers `/health`.
fn wait_end(host: &mut Host, rec: &Record, log: &Path) -> Result<(), String> {
    let url = launch::health::HealthUrl::for_port(host.port);
    let _ = log;
    launch::wait::until(
        Duration::from_millis(STEP_TIMEOUT_MS),
        Duration::from_millis(POLL_MS * 4),
        "the relaunch to exit or become ready",
        || {
            (leader_exited(&mut host.leaders, rec) || launch::health::probe(&url) == Some(200))
                .then_some(())
        },
    )
}

/// Whether the leader process of launch `rec` has exited.
fn leader_exited(leaders: &mut [(Child, Record)], rec: &Record) -> bool {
    leaders
        .iter_mut()
        .any(|(c, r)| r.id == rec.id && !matches!(c.try_wait(), Ok(None)))
}

fn last_lines(b: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(b);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A server is up and writing (its log opened with `>`, or `>>` when `append`); a relaunch
/// truncates the log with `>` and fails; the old server writes again — at its old offset.
fn truncate_while_writing(
    s: &Scenario,
    host: &mut Host,
    append: bool,
    new_command: Option<&str>,
) -> Result<Played, String> {
    let log = host.dir.join("same.log");
    let argv1 = host.argv(&s.command)?;
    let old = host.start_plain(&argv1, &log, append)?;
    host.wait_healthy()?;
    let argv2 = host.argv(new_command.unwrap_or(&s.command))?;
    let new = host.start_plain(&argv2, &log, false)?;
    host.wait_exit(&new)?;
    let new_len = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    // Traffic to the old server: it logs each request.
    let url = launch::health::HealthUrl::for_port(host.port);
    for _ in 0..3 {
        let _ = launch::health::probe(&url);
    }
    wait_for(
        || std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) > new_len,
        "the old server's next write",
    )?;
    let mut bytes = Vec::new();
    File::open(&log)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| io_err("reading log", e))?;
    let _ = old;
    Ok((verdict_of(&bytes, None), log, Vec::new()))
}
