//! The processes of one launch: starting them in a session of their own, finding them again,
//! and stopping them — the only code in faultkit that sends signals.
//!
//! **Architecture invariant:** a process is signalled only if it is alive, carries the launch's
//! id in its environment (`FAULTKIT_LAUNCH_ID`, inherited by every process the server starts)
//! and started no earlier than the launch's leader. A pid alone is never trusted: it may have
//! been reused. A name never selects a process by itself: [`signal_member`] only picks, by its
//! exact vLLM title, among processes that already pass these checks.
//!
//! Main functions: [`spawn`], [`members`], [`stop`].

#![allow(unsafe_code)] // one `pre_exec` hook, see `spawn`

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use procfacts::ProcInfo;
use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use super::state::{Record, LAUNCH_ID_ENV};

/// How long processes get to exit after SIGTERM before SIGKILL.
pub const TERM_WAIT_MS: u64 = 10_000;
/// How long to wait for SIGKILLed processes to vanish.
pub const KILL_WAIT_MS: u64 = 5_000;
/// How long to wait for the GPUs to show the memory released.
pub const GPU_RELEASE_WAIT_MS: u64 = 10_000;
const POLL_MS: u64 = 20;

/// Pids of children whose `Child` handle someone holds: they are waited for by their owner,
/// never by [`reap_orphans`](super::reap_orphans).
static OWNED: std::sync::Mutex<BTreeSet<u32>> = std::sync::Mutex::new(BTreeSet::new());

/// Whether `pid` is a child this process spawned and will wait for itself.
pub fn owned(pid: u32) -> bool {
    OWNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&pid)
}

/// Forgets owned pids that no longer exist.
pub fn forget_gone() {
    OWNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&p| ProcInfo::read(p).is_some());
}

/// Starts `argv` with stdout and stderr appended to `log`, stdin from /dev/null, in a new
/// session (so a terminal's Ctrl-C or hang-up does not reach it), without a shell.
pub fn spawn(argv: &[String], log: &File, env: &[(String, String)]) -> io::Result<Child> {
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: the hook runs in the child between fork and exec; it calls only setsid(2), which
    // is async-signal-safe, and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid().map_err(io::Error::from)?;
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    OWNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(child.id());
    Ok(child)
}

/// Live processes of the launch `rec`.
pub fn members(rec: &Record) -> Vec<ProcInfo> {
    procfacts::all_processes()
        .into_iter()
        .filter(|p| is_member(rec, p))
        .collect()
}

fn is_member(rec: &Record, p: &ProcInfo) -> bool {
    p.alive()
        && p.start_time >= rec.start_time
        && procfacts::environ_has(p.pid, LAUNCH_ID_ENV, &rec.id)
}

/// Re-reads `pid` right before a signal: still the same member?
fn still_member(rec: &Record, p: &ProcInfo) -> bool {
    ProcInfo::read(p.pid).is_some_and(|now| now.start_time == p.start_time && is_member(rec, &now))
}

/// Where shared-memory segments live (`FAULTKIT_SHM_DIR` for tests, else `/dev/shm`).
pub fn shm_dir() -> PathBuf {
    std::env::var_os("FAULTKIT_SHM_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/dev/shm"))
}

/// Names in the shared-memory directory now.
pub fn shm_names() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(shm_dir()) else {
        return Vec::new();
    };
    let mut v: Vec<String> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Adds the shared-memory entries the launch's processes hold now to `rec.shm_seen`.
pub fn note_shm(rec: &mut Record, procs: &[ProcInfo]) {
    let dir = shm_dir();
    let mut seen: BTreeSet<String> = rec.shm_seen.iter().cloned().collect();
    for p in procs {
        for f in procfacts::files_held_under(p.pid, &dir) {
            if let Some(n) = f.file_name() {
                seen.insert(n.to_string_lossy().into_owned());
            }
        }
    }
    rec.shm_seen = seen.into_iter().collect();
}

/// What a stop did.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StopReport {
    /// Processes that got SIGTERM.
    pub terminated: Vec<u32>,
    /// Processes that were still there after the grace period and got SIGKILL.
    pub killed: Vec<u32>,
    /// Processes still alive at the end (should be empty).
    pub left: Vec<u32>,
    /// Shared-memory entries removed.
    pub shm_removed: Vec<String>,
    /// `Some(false)` when nvidia-smi still listed a launch process at the end of the wait.
    pub gpu_released: Option<bool>,
}

/// Stops every process of `rec`: SIGTERM to its group (and to members that left it), a bounded
/// wait, SIGKILL to what is left, a bounded wait until all are gone, a bounded wait until
/// nvidia-smi no longer lists them, then removal of the `/dev/shm` entries the launch created.
/// `reap` is called while waiting (the caller may be the parent of the leader).
pub fn stop(rec: &mut Record, term_wait_ms: u64, reap: &mut dyn FnMut()) -> StopReport {
    let mut report = StopReport::default();
    let procs = members(rec);
    note_shm(rec, &procs);
    let pids: Vec<u32> = procs.iter().map(|p| p.pid).collect();
    if !procs.is_empty() {
        signal_all(rec, &procs, Signal::TERM, &mut report.terminated);
        wait_gone(rec, term_wait_ms, reap);
        let rest = members(rec);
        if !rest.is_empty() {
            signal_all(rec, &rest, Signal::KILL, &mut report.killed);
            wait_gone(rec, KILL_WAIT_MS, reap);
        }
        report.left = members(rec).iter().map(|p| p.pid).collect();
        report.gpu_released = wait_gpu_released(&pids, &rec.env);
    }
    report.shm_removed = remove_shm(rec);
    report
}

/// Sends `sig` to the launch's leader only (as `kill -9 <pid>` of the API server would), if it
/// is still the process that was started. Returns whether a signal was sent.
pub fn signal_leader(rec: &Record, sig: Signal) -> bool {
    let Some(p) = ProcInfo::read(rec.pid) else {
        return false;
    };
    if p.start_time != rec.start_time || !still_member(rec, &p) {
        return false;
    }
    Pid::from_raw(rec.pid as i32).is_some_and(|pid| kill_process(pid, sig).is_ok())
}

/// Whether `cmdline` is that of vLLM's process `name` (`Worker_TP1`, `EngineCore_DP0`): vLLM
/// titles it `VLLM::NAME`, exactly (so `Worker_TP1` is not `Worker_TP10`).
pub fn has_title(cmdline: &str, name: &str) -> bool {
    cmdline
        .split(' ')
        .next()
        .and_then(|a| a.strip_prefix("VLLM::"))
        == Some(name)
}

/// Sends `sig` to the live member of launch `rec` that vLLM titles `name` ([`has_title`]),
/// re-checked as a member right before the signal (a test harness's `kill -9` of one process of
/// its own launch). Returns the pid signalled.
pub fn signal_member(rec: &Record, name: &str, sig: Signal) -> Option<u32> {
    let p = members(rec)
        .into_iter()
        .find(|p| has_title(&procfacts::cmdline(p.pid), name))?;
    if !still_member(rec, &p) {
        return None;
    }
    let pid = Pid::from_raw(p.pid as i32)?;
    kill_process(pid, sig).ok().map(|()| p.pid)
}

fn signal_all(rec: &Record, procs: &[ProcInfo], sig: Signal, sent: &mut Vec<u32>) {
    // The leader's group holds only processes of this launch: a process can join a group only
    // inside its own session, and the session is the launch's. One kill(2) reaches them all,
    // including any child forked a moment ago.
    let leader_group = procs.iter().any(|p| p.pgid == rec.pid);
    if leader_group {
        if let Some(pg) = Pid::from_raw(rec.pid as i32) {
            // The group id stays reserved while any member lives, so it cannot name another
            // group; still, send only if a verified member is in it right now.
            if procs
                .iter()
                .any(|p| p.pgid == rec.pid && still_member(rec, p))
            {
                let _ = kill_process_group(pg, sig);
            }
        }
    }
    for p in procs {
        if leader_group && p.pgid == rec.pid {
            sent.push(p.pid);
            continue;
        }
        if still_member(rec, p) {
            if let Some(pid) = Pid::from_raw(p.pid as i32) {
                if kill_process(pid, sig).is_ok() {
                    sent.push(p.pid);
                }
            }
        }
    }
}

fn wait_gone(rec: &Record, bound_ms: u64, reap: &mut dyn FnMut()) {
    let start = Instant::now();
    loop {
        reap();
        if members(rec).is_empty() || start.elapsed() >= Duration::from_millis(bound_ms) {
            return;
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
}

/// Waits until `nvidia-smi --query-compute-apps=pid` lists none of `pids`. `None` when there
/// is no nvidia-smi to ask.
fn wait_gpu_released(pids: &[u32], env: &[(String, String)]) -> Option<bool> {
    let start = Instant::now();
    loop {
        let listed = gpu_pids(env)?;
        if !listed.iter().any(|p| pids.contains(p)) {
            return Some(true);
        }
        if start.elapsed() >= Duration::from_millis(GPU_RELEASE_WAIT_MS) {
            return Some(false);
        }
        std::thread::sleep(Duration::from_millis(POLL_MS * 5));
    }
}

/// Pids nvidia-smi lists as GPU users, `None` without nvidia-smi.
pub fn gpu_pids(env: &[(String, String)]) -> Option<Vec<u32>> {
    let out = super::host::smi_command(env)
        .args(["--query-compute-apps=pid", "--format=csv,noheader"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect(),
    )
}

/// Removes entries the launch's processes were seen holding that did not exist before it,
/// and that no live process holds any more.
fn remove_shm(rec: &Record) -> Vec<String> {
    let dir = shm_dir();
    let before: BTreeSet<&String> = rec.shm_before.iter().collect();
    let mut removed = Vec::new();
    for name in &rec.shm_seen {
        if before.contains(name) || name.contains('/') || name.starts_with('.') {
            continue;
        }
        let path = dir.join(name);
        if !path.exists() || held_by_anyone(&path) {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            removed.push(name.clone());
        }
    }
    removed
}

fn held_by_anyone(path: &Path) -> bool {
    let dir = shm_dir();
    procfacts::all_processes()
        .iter()
        .filter(|p| p.alive())
        .any(|p| procfacts::files_held_under(p.pid, &dir).contains(path))
}
