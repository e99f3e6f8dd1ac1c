//! Launch: start and restart a vLLM server safely, and follow a log someone else writes.
//!
//! **Architecture invariant:** this module (with [`tree`]) is the only code in faultkit that
//! signals processes, and it signals only processes of launches recorded in its state directory
//! (see [`tree`] for how they are recognised).
//!
//! A launch: take the state directory's lock; stop the previous launch; check that the port and
//! the GPUs are free (else list the holders, exit 75); start the command without a shell in a
//! session of its own, output appended to a fresh per-launch log; then one loop over a closed
//! set of [`Event`]s — a log line, a health answer, the process's exit, the deadline, a signal —
//! that ends as ready (the server keeps running), crashed (triage of this launch's lines,
//! reported at once, then the tree is stopped), hung/timeout, or interrupted.
//!
//! Main functions: [`launch`], [`stop_current`], [`status`], [`follow`].

pub mod bounded;
pub mod health;
pub mod host;
pub mod state;
pub mod target;
pub mod tree;
pub mod wait;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use procfacts::ProcInfo;
use serde::Serialize;
use vllm_argv::ServeArgs;

use health::HealthUrl;
use host::Holder;
use state::{Record, StateDir, LAUNCH_ID_ENV, RECORD_SCHEMA};
use tree::StopReport;
use triage::{self, ExitCode, Options, Output, Status, Verdict};

/// Default time a server gets to become ready.
pub const READY_TIMEOUT_SECS_DEFAULT: u64 = 1_800;
/// How often the log is read for new lines.
const LOG_POLL_MS: u64 = 5;
/// How often `/health` is asked.
const HEALTH_POLL_MS: u64 = 100;
/// How often the shared-memory entries the launch holds are noted while it starts.
const SHM_NOTE_MS: u64 = 500;
/// How long `follow` waits after an unrecognised crash for more lines before it answers.
const QUIET_MS: u64 = 2_000;

/// What the wait loop reacts to; it owns all state and returns a [`LaunchResult`].
#[derive(Debug)]
pub enum Event {
    /// New complete lines were appended to the launch's log.
    LogLine(Vec<u8>),
    /// The process faultkit started exited.
    ProcessExited(ExitStatus),
    /// `/health` answered 200.
    HealthOk,
    /// The ready timeout passed.
    Deadline,
    /// SIGINT, SIGTERM or SIGHUP reached faultkit.
    Signal(i32),
}

/// How a launch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ready,
    Crashed,
    Hung,
    Timeout,
    Interrupted,
    /// The port or GPUs are held by processes faultkit did not start.
    Busy,
    /// Another faultkit is launching on this state directory.
    Locked,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ready => "ready",
            Outcome::Crashed => "crashed",
            Outcome::Hung => "hung",
            Outcome::Timeout => "timeout",
            Outcome::Interrupted => "interrupted",
            Outcome::Busy => "busy",
            Outcome::Locked => "locked",
        }
    }
}

/// What to launch and how.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    pub state_dir: Option<PathBuf>,
    pub argv: Vec<String>,
    /// The server's port; default: `--port` of a vLLM command, else 8000.
    pub port: Option<u16>,
    pub health_url: Option<String>,
    pub ready_timeout: Duration,
    /// Extra environment for the server.
    pub env: Vec<(String, String)>,
    /// Grace period between SIGTERM and SIGKILL when stopping.
    pub term_wait_ms: u64,
    /// Check port and GPUs before starting (off only to reproduce what a plain launch does).
    pub check_host: bool,
}

impl LaunchOptions {
    pub fn new(argv: Vec<String>) -> LaunchOptions {
        LaunchOptions {
            state_dir: None,
            argv,
            port: None,
            health_url: None,
            ready_timeout: Duration::from_secs(READY_TIMEOUT_SECS_DEFAULT),
            env: Vec::new(),
            term_wait_ms: tree::TERM_WAIT_MS,
            check_host: true,
        }
    }
}

/// The result of [`launch`].
#[derive(Debug, Clone, Serialize)]
pub struct LaunchResult {
    pub schema: &'static str,
    pub outcome: Outcome,
    pub exit_code: i32,
    pub id: Option<String>,
    pub pid: Option<u32>,
    pub log: Option<PathBuf>,
    pub health_url: Option<String>,
    pub elapsed_ms: u64,
    pub message: String,
    pub verdict: Option<Verdict>,
    /// What stopping the previous launch did.
    pub previous: Option<StopReport>,
    /// What stopping this launch did (crash, timeout, interrupt).
    pub stop: Option<StopReport>,
    pub holders: Vec<Holder>,
}

impl LaunchResult {
    fn early(outcome: Outcome, code: ExitCode, message: String, started: Instant) -> Self {
        LaunchResult {
            schema: "faultkit.launch/1",
            outcome,
            exit_code: code.code(),
            id: None,
            pid: None,
            log: None,
            health_url: None,
            elapsed_ms: started.elapsed().as_millis() as u64,
            message,
            verdict: None,
            previous: None,
            stop: None,
            holders: Vec::new(),
        }
    }

    pub fn exit(&self) -> i32 {
        self.exit_code
    }
}

/// Errors that are not a launch outcome: the state directory or the command is unusable.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("state directory: {0}")]
    State(std::io::Error),
    #[error("cannot start `{prog}`: {source}")]
    Spawn {
        prog: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Usage(String),
}

/// Facts about the command that the checks need.
struct CommandFacts {
    port: u16,
    gpus: Vec<u32>,
    utilization: f64,
}

fn command_facts(opts: &LaunchOptions) -> CommandFacts {
    let args = ServeArgs::parse_argv(&opts.argv).ok();
    let port = opts
        .port
        .or_else(|| args.as_ref().map(|a| a.port))
        .unwrap_or(8000);
    let world = args.as_ref().map_or(1, |a| {
        a.tensor_parallel_size.max(1) * a.pipeline_parallel_size.max(1)
    });
    let visible: Option<Vec<u32>> = opts
        .env
        .iter()
        .find(|(k, _)| k == "CUDA_VISIBLE_DEVICES")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("CUDA_VISIBLE_DEVICES").ok())
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    let gpus = match visible {
        Some(v) => v.into_iter().take(world as usize).collect(),
        None => (0..world).collect(),
    };
    CommandFacts {
        port,
        gpus,
        utilization: args.map_or(0.9, |a| a.gpu_memory_utilization),
    }
}

/// Starts a server; see the module docs. `on_verdict` is called as soon as a crash verdict
/// is known, before the tree is stopped.
pub fn launch(
    opts: &LaunchOptions,
    on_progress: &mut dyn FnMut(&str),
    on_verdict: &mut dyn FnMut(&Verdict),
) -> Result<LaunchResult, LaunchError> {
    let started = Instant::now();
    if opts.argv.is_empty() {
        return Err(LaunchError::Usage("no command to launch".into()));
    }
    let st = StateDir::resolve(opts.state_dir.as_deref()).map_err(LaunchError::State)?;
    let Some(lock) = st.try_lock().map_err(LaunchError::State)? else {
        let who = st
            .lock_holder()
            .map_or(String::new(), |p| format!(" (pid {p})"));
        return Ok(LaunchResult::early(
            Outcome::Locked,
            ExitCode::Busy,
            format!(
                "another faultkit{who} is launching or stopping on {}; nothing started",
                st.root.display()
            ),
            started,
        ));
    };

    // The previous launch (and any older one still alive) goes first.
    let mut previous: Option<StopReport> = None;
    for mut rec in st.all() {
        if tree::members(&rec).is_empty() {
            continue;
        }
        on_progress(&format!(
            "stopping previous launch {} (pid {})",
            rec.id, rec.pid
        ));
        let rep = tree::stop(&mut rec, opts.term_wait_ms, &mut || reap_orphans(&[]));
        rec.state = "stopped".into();
        let _ = st.save(&rec);
        previous = Some(rep);
    }

    let facts = command_facts(opts);
    let health = match &opts.health_url {
        Some(u) => HealthUrl::parse(u).map_err(LaunchError::Usage)?,
        None => HealthUrl::for_port(facts.port),
    };
    if opts.check_host {
        let mut holders = host::port_holders(facts.port);
        holders.extend(host::gpu_holders(&facts.gpus, facts.utilization, &opts.env));
        if !holders.is_empty() {
            let mut r = LaunchResult::early(
                Outcome::Busy,
                ExitCode::Busy,
                "resources the server needs are held by processes faultkit did not start; nothing started".into(),
                started,
            );
            r.holders = holders;
            r.previous = previous;
            return Ok(r);
        }
    }

    let id = new_id();
    let stamp = utc_stamp();
    let (log_path, log_file) = st.new_log(&id, &stamp).map_err(LaunchError::State)?;
    let shm_before = tree::shm_names();
    let mut env = opts.env.clone();
    env.push((LAUNCH_ID_ENV.to_string(), id.clone()));
    let child = tree::spawn(&opts.argv, &log_file, &env).map_err(|e| LaunchError::Spawn {
        prog: opts.argv[0].clone(),
        source: e,
    })?;
    let pid = child.id();
    let start_time = ProcInfo::read(pid).map_or(0, |p| p.start_time);
    let mut rec = Record {
        schema: RECORD_SCHEMA.into(),
        id: id.clone(),
        argv: opts.argv.clone(),
        pid,
        start_time,
        started_at: unix_secs(),
        log: log_path.clone(),
        port: facts.port,
        health_url: health.to_string(),
        shm_before,
        shm_seen: Vec::new(),
        state: "starting".into(),
        env: opts.env.clone(),
    };
    st.save(&rec).map_err(LaunchError::State)?;
    on_progress(&format!(
        "launch {id}: pid {pid}, log {}; waiting for {health} (up to {} s)",
        log_path.display(),
        opts.ready_timeout.as_secs()
    ));

    let mut w = Waiter::start(child, &log_path, health.clone());
    let deadline = started + opts.ready_timeout;
    let mut bytes: Vec<u8> = Vec::new();
    let mut last: Option<Verdict> = None;
    let mut last_shm_note = Instant::now();
    let mut held: std::collections::VecDeque<Event> = std::collections::VecDeque::new();
    let mut reported = false;
    let outcome = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = match held.pop_front() {
            Some(ev) => ev,
            None => match w.rx.recv_timeout(left) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => Event::Deadline,
                Err(RecvTimeoutError::Disconnected) => Event::Deadline,
            },
        };
        match ev {
            Event::LogLine(b) => {
                bytes.extend_from_slice(&b);
                // Take every line already waiting before triage runs; other events keep their
                // turn.
                while let Ok(more) = w.rx.try_recv() {
                    match more {
                        Event::LogLine(b) if held.is_empty() => bytes.extend_from_slice(&b),
                        other => held.push_back(other),
                    }
                }
                let v = verdict_of(&bytes, None);
                if let Some(o) = is_final_failure(&v) {
                    // Reported at once; stopping the tree comes after.
                    let mut shown = v.clone();
                    triage::render::mask_verdict(&mut shown);
                    on_verdict(&shown);
                    reported = true;
                    last = Some(v);
                    break o;
                }
                last = Some(v);
                if last_shm_note.elapsed() >= Duration::from_millis(SHM_NOTE_MS) {
                    let procs = tree::members(&rec);
                    let before = rec.shm_seen.len();
                    tree::note_shm(&mut rec, &procs);
                    if rec.shm_seen.len() != before {
                        // On disk at once: if the host dies now, the next faultkit knows.
                        let _ = st.save(&rec);
                    }
                    last_shm_note = Instant::now();
                }
            }
            Event::HealthOk => {
                let mut v = verdict_of(&bytes, None);
                if v.status != Status::Crashed && v.status != Status::Hung {
                    v.status = Status::Ready;
                }
                last = Some(v);
                break Outcome::Ready;
            }
            Event::ProcessExited(status) => {
                bytes = read_all(&log_path);
                let mut v = verdict_of(&bytes, None);
                if v.status != Status::Crashed && v.status != Status::Hung {
                    v.status = Status::Crashed;
                    v.diagnostics.push(format!(
                        "the server process exited ({}) and its log names no cause{}",
                        describe_exit(&status),
                        if signal_of(&status) == Some(9) {
                            ": an unannounced SIGKILL is usually the kernel's OOM killer (see `dmesg`)"
                        } else {
                            ""
                        }
                    ));
                }
                last = Some(v);
                break Outcome::Crashed;
            }
            Event::Deadline => break Outcome::Timeout,
            Event::Signal(_) => break Outcome::Interrupted,
        }
    };
    w.finish();

    let mut verdict = last.unwrap_or_else(|| verdict_of(&bytes, None));
    triage::render::mask_verdict(&mut verdict);
    let code = match outcome {
        Outcome::Ready => ExitCode::Ok,
        Outcome::Crashed | Outcome::Hung => match verdict.exit_code() {
            ExitCode::Ok | ExitCode::Inconclusive => ExitCode::UnknownCrash,
            c => c,
        },
        Outcome::Timeout => {
            verdict.status = Status::Hung;
            verdict.diagnostics.push(format!(
                "not ready after {} s: {health} did not answer 200",
                opts.ready_timeout.as_secs()
            ));
            ExitCode::UnknownCrash
        }
        Outcome::Interrupted => ExitCode::Interrupted,
        Outcome::Busy | Outcome::Locked => ExitCode::Busy,
    };
    let mut stop = None;
    if outcome != Outcome::Ready {
        if !reported {
            on_verdict(&verdict);
        }
        on_progress(&format!("stopping launch {id}"));
        let mut reap = || reap_orphans(&[pid]);
        stop = Some(tree::stop(&mut rec, opts.term_wait_ms, &mut reap));
    } else {
        let procs = tree::members(&rec);
        tree::note_shm(&mut rec, &procs);
    }
    rec.state = outcome.as_str().into();
    let _ = st.save(&rec);
    drop(lock);
    Ok(LaunchResult {
        schema: "faultkit.launch/1",
        outcome,
        exit_code: code.code(),
        id: Some(id),
        pid: Some(pid),
        log: Some(log_path),
        health_url: Some(health.to_string()),
        elapsed_ms: started.elapsed().as_millis() as u64,
        message: String::new(),
        verdict: Some(verdict),
        previous,
        stop,
        holders: Vec::new(),
    })
}

/// Starts `argv` the way a shell's `nohup CMD > LOG &` does — no checks, no waiting — but
/// records it in the state directory, so `stop` (and the scenario runner) can clean up after it.
pub fn start_plain(
    st: &StateDir,
    argv: &[String],
    log: &File,
    log_path: &Path,
    env: &[(String, String)],
) -> Result<(std::process::Child, Record), LaunchError> {
    let id = new_id();
    let mut env = env.to_vec();
    env.push((LAUNCH_ID_ENV.to_string(), id.clone()));
    let shm_before = tree::shm_names();
    let child = tree::spawn(argv, log, &env).map_err(|e| LaunchError::Spawn {
        prog: argv.first().cloned().unwrap_or_default(),
        source: e,
    })?;
    let pid = child.id();
    let rec = Record {
        schema: RECORD_SCHEMA.into(),
        id,
        argv: argv.to_vec(),
        pid,
        start_time: ProcInfo::read(pid).map_or(0, |p| p.start_time),
        started_at: unix_secs(),
        log: log_path.to_path_buf(),
        port: 0,
        health_url: String::new(),
        shm_before,
        shm_seen: Vec::new(),
        state: "starting".into(),
        env: env
            .iter()
            .filter(|(k, _)| k != LAUNCH_ID_ENV)
            .cloned()
            .collect(),
    };
    st.save(&rec).map_err(LaunchError::State)?;
    Ok((child, rec))
}

/// Crashed with a known cause, or hung: the verdict cannot change any more.
fn is_final_failure(v: &Verdict) -> Option<Outcome> {
    match v.status {
        Status::Crashed if v.root_cause.as_ref().is_some_and(|r| r.id != "unknown") => {
            Some(Outcome::Crashed)
        }
        Status::Hung => Some(Outcome::Hung),
        _ => None,
    }
}

fn verdict_of(bytes: &[u8], pid: Option<u32>) -> Verdict {
    let opts = Options {
        pid,
        ..Options::default()
    };
    match triage::triage(bytes, &opts) {
        Output::One(v) => v,
        Output::All(mut vs) => vs.pop().unwrap_or_else(Verdict::empty),
    }
}

fn read_all(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

fn describe_exit(s: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown status".into(),
    }
}

fn signal_of(s: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt as _;
    s.signal()
}

/// The threads that turn the outside world into [`Event`]s.
struct Waiter {
    rx: mpsc::Receiver<Event>,
    done: Arc<AtomicBool>,
    signals: Option<signal_hook::iterator::Handle>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Waiter {
    fn start(mut child: std::process::Child, log: &Path, health: HealthUrl) -> Waiter {
        let (tx, rx) = mpsc::channel();
        let done = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        {
            let tx = tx.clone();
            threads.push(std::thread::spawn(move || {
                if let Ok(st) = child.wait() {
                    let _ = tx.send(Event::ProcessExited(st));
                }
            }));
        }
        {
            let tx = tx.clone();
            let done = Arc::clone(&done);
            let log = log.to_path_buf();
            threads.push(std::thread::spawn(move || tail_lines(&log, &done, &tx)));
        }
        {
            let tx = tx.clone();
            let done = Arc::clone(&done);
            threads.push(std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if health::probe(&health) == Some(200) {
                        let _ = tx.send(Event::HealthOk);
                        return;
                    }
                    for _ in 0..HEALTH_POLL_MS / LOG_POLL_MS {
                        if done.load(Ordering::Relaxed) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(LOG_POLL_MS));
                    }
                }
            }));
        }
        let mut handle = None;
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        if let Ok(mut sigs) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            handle = Some(sigs.handle());
            let tx = tx.clone();
            threads.push(std::thread::spawn(move || {
                if let Some(s) = sigs.forever().next() {
                    let _ = tx.send(Event::Signal(s));
                }
            }));
        }
        Waiter {
            rx,
            done,
            signals: handle,
            threads,
        }
    }

    /// Stops the polling threads (the exit waiter ends with the process).
    fn finish(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.signals.take() {
            h.close();
        }
        // Join the pollers; the process waiter may still be waiting on a live server.
        let threads = std::mem::take(&mut self.threads);
        for (i, t) in threads.into_iter().enumerate() {
            if i > 0 {
                let _ = t.join();
            }
        }
    }
}

/// Sends complete lines appended to `path` until `done`.
fn tail_lines(path: &Path, done: &AtomicBool, tx: &mpsc::Sender<Event>) {
    let Ok(mut f) = File::open(path) else {
        return;
    };
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while !done.load(Ordering::Relaxed) {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => std::thread::sleep(Duration::from_millis(LOG_POLL_MS)),
            Ok(n) => {
                pending.extend_from_slice(&buf[..n]);
                if let Some(end) = memchr::memrchr(b'\n', &pending) {
                    let rest = pending.split_off(end + 1);
                    let lines = std::mem::replace(&mut pending, rest);
                    if tx.send(Event::LogLine(lines)).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// Reaps zombies reparented to this process (when it is a child subreaper), except `keep` and
/// children whose owner waits for them.
pub fn reap_orphans(keep: &[u32]) {
    let me = std::process::id();
    tree::forget_gone();
    for p in procfacts::all_processes() {
        if p.ppid == me && p.state == 'Z' && !keep.contains(&p.pid) && !tree::owned(p.pid) {
            if let Some(pid) = rustix::process::Pid::from_raw(p.pid as i32) {
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            }
        }
    }
}

/// Stops the newest launch (and any older one still running) of a state directory.
pub fn stop_current(
    state_dir: Option<&Path>,
    term_wait_ms: u64,
) -> Result<Option<(Record, StopReport)>, LaunchError> {
    let st = StateDir::resolve(state_dir).map_err(LaunchError::State)?;
    let Some(_lock) = st.try_lock().map_err(LaunchError::State)? else {
        return Err(LaunchError::Usage(format!(
            "another faultkit is launching or stopping on {}",
            st.root.display()
        )));
    };
    let mut last = None;
    for mut rec in st.all() {
        let alive = !tree::members(&rec).is_empty();
        if !alive && rec.state == "stopped" {
            continue;
        }
        let rep = tree::stop(&mut rec, term_wait_ms, &mut || reap_orphans(&[]));
        if alive || rec.state != "stopped" {
            rec.state = "stopped".into();
            let _ = st.save(&rec);
        }
        last = Some((rec, rep));
    }
    Ok(last)
}

/// The state of the newest launch.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub schema: &'static str,
    pub id: Option<String>,
    pub state: Option<String>,
    pub argv: Vec<String>,
    pub pid: Option<u32>,
    pub log: Option<PathBuf>,
    pub health_url: Option<String>,
    /// Processes of the launch alive now.
    pub processes: Vec<ProcessView>,
    pub healthy: bool,
    pub verdict: Option<Verdict>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessView {
    pub pid: u32,
    pub command: String,
}

pub fn status(state_dir: Option<&Path>) -> Result<StatusReport, LaunchError> {
    let st = StateDir::resolve(state_dir).map_err(LaunchError::State)?;
    let Some(rec) = st.current() else {
        return Ok(StatusReport {
            schema: "faultkit.status/1",
            id: None,
            state: None,
            argv: Vec::new(),
            pid: None,
            log: None,
            health_url: None,
            processes: Vec::new(),
            healthy: false,
            verdict: None,
        });
    };
    let processes: Vec<ProcessView> = tree::members(&rec)
        .iter()
        .map(|p| ProcessView {
            pid: p.pid,
            command: procfacts::cmdline(p.pid),
        })
        .collect();
    let healthy = !processes.is_empty()
        && HealthUrl::parse(&rec.health_url)
            .ok()
            .and_then(|u| health::probe(&u))
            == Some(200);
    let mut v = verdict_of(&read_all(&rec.log), None);
    if healthy && v.status != Status::Crashed && v.status != Status::Hung {
        v.status = Status::Ready;
    }
    triage::render::mask_verdict(&mut v);
    Ok(StatusReport {
        schema: "faultkit.status/1",
        id: Some(rec.id.clone()),
        state: Some(if processes.is_empty() && rec.state == "ready" {
            "exited".into()
        } else {
            rec.state.clone()
        }),
        argv: rec.argv.clone(),
        pid: Some(rec.pid),
        log: Some(rec.log.clone()),
        health_url: Some(rec.health_url.clone()),
        processes,
        healthy,
        verdict: Some(v),
    })
}

/// When `follow` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FollowUntil {
    /// Ready, stopped, crashed or hung (the CLI).
    ReadyOrFailure,
    /// Only a failure (or stopped): keeps watching a server that is up.
    Failure,
}

/// Watches `path` (written by someone else) until the launch that `pid` belongs to (or the
/// newest) is ready or failed, or `timeout` passes; returns the verdict then. The file may be
/// truncated or replaced while watched; it is re-read from the start when it shrinks.
pub fn follow(
    path: &Path,
    pid: Option<u32>,
    timeout: Duration,
    until: FollowUntil,
    stop: &AtomicBool,
) -> Result<Verdict, std::io::Error> {
    let start = Instant::now();
    let mut bytes: Vec<u8> = Vec::new();
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 256 << 10];
    let mut last_growth = Instant::now();
    let mut dirty = true;
    loop {
        if replaced(path, &f) {
            // A new file under the name (`mv vllm.log old.log; vllm serve > vllm.log`).
            f = File::open(path)?;
            bytes.clear();
            dirty = true;
        } else if rewritten(&f, &bytes) {
            // Shrunk, or truncated and rewritten past where we were (`>` of a relaunch).
            bytes.clear();
            f.seek(SeekFrom::Start(0))?;
            dirty = true;
        }
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
            last_growth = Instant::now();
            dirty = true;
        }
        // Replaced or rewritten while we read: what we hold mixes two files; start over at
        // the next poll (the top of the loop resets), within the timeout.
        if (replaced(path, &f) || rewritten(&f, &bytes))
            && start.elapsed() < timeout
            && !stop.load(Ordering::Relaxed)
        {
            std::thread::sleep(Duration::from_millis(LOG_POLL_MS));
            continue;
        }
        // Whole lines only: a line being written is not evidence yet.
        let upto = memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1);
        let v = verdict_of(&bytes[..upto], pid);
        let timed_out = start.elapsed() >= timeout || stop.load(Ordering::Relaxed);
        if dirty || timed_out {
            dirty = false;
            let known = v.root_cause.as_ref().is_some_and(|r| r.id != "unknown");
            let done = !v.stale.suspected
                && match v.status {
                    Status::Crashed => {
                        known || last_growth.elapsed() >= Duration::from_millis(QUIET_MS)
                    }
                    Status::Hung | Status::Stopped => true,
                    Status::Ready => until == FollowUntil::ReadyOrFailure,
                    Status::Starting | Status::Unknown => false,
                };
            if done || timed_out {
                let mut v = v;
                if timed_out && !done {
                    v.diagnostics.push(format!(
                        "follow: no final verdict after {} s",
                        timeout.as_secs()
                    ));
                }
                triage::render::mask_verdict(&mut v);
                return Ok(v);
            }
        } else if v.status == Status::Crashed
            && last_growth.elapsed() >= Duration::from_millis(QUIET_MS)
        {
            dirty = true;
            continue;
        }
        std::thread::sleep(Duration::from_millis(LOG_POLL_MS * 2));
    }
}

/// Whether `path` now names another file than the one `f` has open (replaced by a rename, or
/// deleted and created again) and that file has something in it: a new, still empty file
/// beside an old one still written (logrotate's `create`) is not worth switching to yet. A
/// path that vanished keeps the old file: it may come back.
fn replaced(path: &Path, f: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(now), Ok(open)) = (std::fs::metadata(path), f.metadata()) else {
        return false;
    };
    (now.dev(), now.ino()) != (open.dev(), open.ino()) && now.len() > 0
}

/// Whether the open file no longer starts with what was read from it: it shrank, or was
/// truncated and written again (perhaps longer than before, so its size alone does not tell).
fn rewritten(f: &File, bytes: &[u8]) -> bool {
    use std::os::unix::fs::FileExt;
    const HEAD: usize = 4096;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len < bytes.len() as u64 {
        return true;
    }
    // Its first bytes, and the last ones read (a rewrite may start the same way).
    let n = bytes.len().min(HEAD);
    let mut got = [0u8; HEAD];
    let mut differs = |at: usize| match f.read_exact_at(&mut got[..n], at as u64) {
        Ok(()) => got[..n] != bytes[at..at + n],
        Err(_) => true,
    };
    differs(0) || differs(bytes.len() - n)
}

/// A fresh launch id: 8 hex digits from the kernel's random source.
fn new_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .ok()
        .map(|u| u.chars().filter(char::is_ascii_hexdigit).take(8).collect())
        .filter(|s: &String| s.len() == 8)
        .unwrap_or_else(|| format!("{:08x}", std::process::id() ^ unix_secs() as u32))
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `20261130T003301Z`: the launch's start in UTC, for its directory name.
fn utc_stamp() -> String {
    utc_stamp_at(unix_secs())
}

fn utc_stamp_at(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a proleptic Gregorian date (Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    format!("{year:04}{month:02}{day:02}T{h:02}{m:02}{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_facts_come_from_the_vllm_command() {
        let mut o = LaunchOptions::new(
            "vllm serve m --port 8123 --tensor-parallel-size 4 --gpu-memory-utilization 0.5"
                .split(' ')
                .map(String::from)
                .collect(),
        );
        o.env
            .push(("CUDA_VISIBLE_DEVICES".into(), "4,5,6,7".into()));
        let f = command_facts(&o);
        assert_eq!(f.port, 8123);
        assert_eq!(f.gpus, vec![4, 5, 6, 7]);
        assert!((f.utilization - 0.5).abs() < 1e-9);
        let f = command_facts(&LaunchOptions::new(vec!["./serve.sh".into()]));
        assert_eq!(f.port, 8000);
    }

    #[test]
    fn stamps_and_ids() {
        let s = utc_stamp();
        assert_eq!(s.len(), 16, "{s}");
        assert!(s.ends_with('Z'));
        assert_eq!(utc_stamp_at(1_796_084_581), "20261201T002301Z");
        assert_eq!(utc_stamp_at(951_782_400), "20000229T000000Z");
        assert_eq!(new_id().len(), 8);
    }
}
