//! One launch as per-process event streams: the startup sequence of a vLLM release, the serving
//! phase, and the failure cascade of a [`Deployment`]'s outcome.
//!
//! Main type: [`LaunchLog`], built by [`build_launch`]. Each process has its own clock; events of
//! one process are in order; the interleaver merges them. Which messages appear, with which
//! `[file:line]` and text, comes from the [`Profile`]; the order and the cascade follow vLLM's code
//! paths (API server → engine core → workers; worker error → `WorkerProc failed to start.` →
//! `EngineCore failed to start.` → `Engine core initialization failed.`). The CPU platform (a
//! CUDA wheel on a host without GPU) lives in [`cpu`].

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use crate::clock::SimTime;
use crate::deploy::{Deployment, Failure};
use crate::profile::{Banner, Engine, Profile, RankScope, WorkerNaming};
use crate::record::{Body, Event, Proc};
use crate::release::Switch;
use crate::scenario::{NcclFault, Phase, Platform, Signal};
use crate::seed::{Rng, Seed, SharedRng};
use crate::selector::{self, Announce, Selection};
use crate::traceback::{exception_line_index, exception_message, Traceback};
use vllm_argv::CliProblem;

mod cpu;

/// The status a launch ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchStatus {
    Ready,
    Stopped,
    Crashed,
    Hung,
    Starting,
}

impl LaunchStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LaunchStatus::Ready => "ready",
            LaunchStatus::Stopped => "stopped",
            LaunchStatus::Crashed => "crashed",
            LaunchStatus::Hung => "hung",
            LaunchStatus::Starting => "starting",
        }
    }
}

/// How the launch's story ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Run until the outcome: crash, or ready and serving for `serve_ms`, then keep running.
    Natural { serve_ms: u64 },
    /// Healthy: serve for `serve_ms`, then Ctrl-C (clean shutdown).
    StopAfter { serve_ms: u64 },
}

/// Everything one launch wrote, per process.
#[derive(Clone, Debug)]
pub struct LaunchLog {
    pub procs: Vec<Proc>,
    pub events: Vec<Event>,
    pub status: LaunchStatus,
    pub failure: Option<Failure>,
    /// Index into `events` of the event that carries the root-cause line.
    pub root: Option<usize>,
    /// The time from which padding traffic can be inserted (serving, before any runtime fault).
    pub traffic_from: Option<SimTime>,
    pub end: SimTime,
    pub api_pid: u32,
    /// The user-visible server port.
    pub port: u16,
    /// Processes that die from a signal (a fault), and when: the fake server delivers it.
    pub deaths: Vec<Death>,
    /// Processes that stop making progress, and from when.
    pub hangs: Vec<Hang>,
    /// Names of the `/dev/shm` segments the launch creates (`psm_…`).
    pub shm_names: Vec<String>,
    /// IPs of the machines of a Ray deployment, head first (empty otherwise).
    pub node_ips: Vec<String>,
    /// A Ray node lost while serving: (node, when).
    pub node_loss: Option<(u32, SimTime)>,
    /// When the ranks have sized their KV cache (and so hold their memory budget), if they did.
    pub memory_claimed: Option<SimTime>,
}

/// A process killed by a signal at `t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Death {
    /// The role of the process (`Worker3`, `APIServer`).
    pub role: String,
    pub t: SimTime,
    pub signal: i32,
}

/// A process that stops making progress at `t` and writes nothing more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hang {
    pub role: String,
    pub t: SimTime,
}

impl LaunchLog {
    pub fn pids(&self) -> Vec<u32> {
        let mut p: Vec<u32> = self
            .procs
            .iter()
            .filter(|p| p.role != "shell" && p.role != "tracker")
            .map(|p| p.pid)
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// The root-cause process name (as in the prefix), if any.
    pub fn root_process(&self) -> Option<(Option<String>, u32)> {
        let ev = &self.events[self.root?];
        let p = &self.procs[ev.proc];
        Some((if ev.prefixed { p.name.clone() } else { None }, p.pid))
    }
}

struct Builder<'a> {
    d: &'a Deployment,
    p: &'static Profile,
    env: &'a BTreeMap<String, String>,
    rng: SharedRng,
    procs: Vec<Proc>,
    clocks: Vec<SimTime>,
    prefixed: Vec<bool>,
    events: Vec<Event>,
    root: Option<usize>,
    vars: BTreeMap<&'static str, String>,
    deaths: Vec<Death>,
    hangs: Vec<Hang>,
    shm_names: Vec<String>,
    node_ips: Vec<String>,
    node_loss: Option<(u32, SimTime)>,
    memory_claimed: Option<SimTime>,
}

const API: usize = 0;

impl<'a> Builder<'a> {
    /// A launch's builder: the template variables every message may use, and the API server
    /// (process `API`) started at `start` with `api_pid`.
    fn new(
        d: &'a Deployment,
        env: &'a BTreeMap<String, String>,
        seed: Seed,
        start: SimTime,
        api_pid: u32,
    ) -> Builder<'a> {
        let p = d.profile;
        let mut b = Builder {
            d,
            p,
            env,
            rng: SharedRng::new(seed.derive("timing", 0).rng()),
            procs: Vec::new(),
            clocks: Vec::new(),
            prefixed: Vec::new(),
            events: Vec::new(),
            root: None,
            vars: BTreeMap::new(),
            deaths: Vec::new(),
            hangs: Vec::new(),
            shm_names: Vec::new(),
            node_ips: Vec::new(),
            node_loss: None,
            memory_claimed: None,
        };
        let model_name = d.args.model.clone();
        b.vars.insert("version", d.version.to_string());
        b.vars.insert("model", model_name);
        b.vars.insert("site", p.site.clone());
        b.vars.insert("nccl", p.nccl_version.clone());
        b.vars.insert("max_model_len", d.max_model_len.to_string());
        b.vars.insert("host", d.args.host.clone());
        b.vars.insert("port", d.args.port.to_string());
        b.vars.insert("world", d.world.to_string());
        b.vars.insert("tp", d.tp.to_string());
        b.vars
            .insert("tokens", d.max_num_batched_tokens.to_string());
        b.spawn(
            Some("APIServer".into()),
            "APIServer".into(),
            api_pid,
            start,
            p.api_server_prefixed,
        );
        b
    }

    /// The launch as written so far, ending in `status` (a launch with no failure that stopped
    /// short of its end is ready); traffic, if any, from `traffic_from`.
    fn finish(self, status: LaunchStatus, traffic_from: Option<SimTime>) -> LaunchLog {
        let end = self.clocks.iter().copied().max().unwrap_or_default();
        let failure = self.d.failure.clone();
        let status = if status == LaunchStatus::Crashed && failure.is_none() {
            LaunchStatus::Ready
        } else {
            status
        };
        LaunchLog {
            api_pid: self.procs[API].pid,
            port: self.d.args.port,
            procs: self.procs,
            events: self.events,
            status,
            failure,
            root: self.root,
            traffic_from,
            end,
            deaths: self.deaths,
            hangs: self.hangs,
            shm_names: self.shm_names,
            node_ips: self.node_ips,
            node_loss: self.node_loss,
            memory_claimed: self.memory_claimed,
        }
    }

    fn spawn(
        &mut self,
        name: Option<String>,
        role: String,
        pid: u32,
        t: SimTime,
        prefixed: bool,
    ) -> usize {
        self.procs.push(Proc {
            name,
            pid,
            role,
            ray: None,
        });
        self.clocks.push(t);
        self.prefixed.push(prefixed);
        self.procs.len() - 1
    }

    /// `decorate_logs(name)`: from now on the process writes with this prefix. A new entry
    /// keeps earlier events' prefixes as they were.
    fn decorate(&mut self, proc: usize, name: String) -> usize {
        let mut p = self.procs[proc].clone();
        p.name = Some(name);
        let t = self.clocks[proc];
        self.procs.push(p);
        self.clocks.push(t);
        self.prefixed.push(true);
        self.procs.len() - 1
    }

    /// The same process before it decorates its logs: from now on it writes without a prefix.
    fn undecorated(&mut self, proc: usize) -> usize {
        let p = self.procs[proc].clone();
        let t = self.clocks[proc];
        self.procs.push(p);
        self.clocks.push(t);
        self.prefixed.push(false);
        self.procs.len() - 1
    }

    /// A collective: every process continues when the last one arrives.
    fn barrier(&mut self, procs: &[usize]) {
        let t = procs
            .iter()
            .map(|&p| self.clocks[p])
            .max()
            .unwrap_or_default();
        for &p in procs {
            let jitter = self.rng.range(0, 40_000);
            self.clocks[p] = t.plus_us(jitter);
        }
    }

    fn now(&self, proc: usize) -> SimTime {
        self.clocks[proc]
    }

    fn advance_ms(&mut self, proc: usize, lo: u64, hi: u64) {
        let ms = self.rng.range(lo, hi);
        self.clocks[proc] = self.clocks[proc].plus_ms(ms);
    }

    fn set_time(&mut self, proc: usize, t: SimTime) {
        if t > self.clocks[proc] {
            self.clocks[proc] = t;
        }
    }

    fn fill(&self, text: &str, extra: &[(&str, String)]) -> String {
        if !text.contains("${") {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len() + 64);
        let mut rest = text;
        while let Some(i) = rest.find("${") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            let Some(j) = after.find('}') else {
                out.push_str(&rest[i..]);
                rest = "";
                break;
            };
            let key = &after[..j];
            let val = extra
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
                .or_else(|| self.vars.get(key).cloned())
                .unwrap_or_else(|| panic!("no value for ${{{key}}} in {text:?}"));
            out.push_str(&val);
            rest = &after[j + 1..];
        }
        out.push_str(rest);
        out
    }

    fn push(&mut self, proc: usize, body: Body, mark: Option<usize>) -> usize {
        let t = self.clocks[proc];
        // Releases that prefix only logging records write stream text bare.
        let prefixed =
            self.prefixed[proc] && (self.p.stream_prefixed || !matches!(body, Body::Stream(_)));
        self.events.push(Event {
            t,
            proc,
            prefixed,
            body,
            mark,
        });
        // Every write takes a little time; keeps one process's events strictly ordered.
        self.clocks[proc] = t.plus_us(self.rng.range(20, 400));
        self.events.len() - 1
    }

    /// Log a profile message; silently skipped when this release does not print it or its level
    /// is below the handler level.
    fn log(&mut self, proc: usize, id: &str, extra: &[(&str, String)]) -> Option<usize> {
        let spec = self.p.msg(id)?.clone();
        if !self.level_enabled(&spec.level) {
            return None;
        }
        let text = self.fill(&spec.text, extra);
        let line = self.fill(spec.line(), extra);
        Some(self.push(
            proc,
            Body::Log {
                level: spec.level.clone(),
                file: spec.file().to_string(),
                line,
                text,
            },
            None,
        ))
    }

    /// A record logged before logging is configured: Python's last-resort handler writes the
    /// bare message of a WARNING or worse to stderr and drops the rest.
    fn log_unconfigured(
        &mut self,
        proc: usize,
        id: &str,
        extra: &[(&str, String)],
    ) -> Option<usize> {
        let spec = self.p.msg(id)?.clone();
        if !matches!(spec.level.as_str(), "WARNING" | "ERROR" | "CRITICAL") {
            return None;
        }
        let text = self.fill(&spec.text, extra);
        let pre = std::mem::replace(&mut self.prefixed[proc], false);
        let idx = self.push(proc, Body::Stream(format!("{text}\n")), None);
        self.prefixed[proc] = pre;
        Some(idx)
    }

    /// torch's own warnings while a process imports vLLM, in glog style
    /// (`W1203 09:52:02.112000 PID PATH:LINE] TEXT`): never prefixed.
    fn torch_import_warnings(&mut self, proc: usize) {
        let pid = self.procs[proc].pid;
        for w in &self.p.torch_import_warnings {
            let stamp = self.clocks[proc].torch_log_stamp();
            let line = format!("W{stamp} {pid} {}/{w}\n", self.p.site);
            self.raw(proc, line);
        }
    }

    fn level_enabled(&self, level: &str) -> bool {
        let rank = |l: &str| match l {
            "DEBUG" => 10,
            "INFO" => 20,
            "WARNING" => 30,
            "ERROR" => 40,
            _ => 50,
        };
        let threshold = self
            .env
            .get("VLLM_LOGGING_LEVEL")
            .map(|l| l.to_ascii_uppercase())
            .unwrap_or_else(|| "INFO".into());
        rank(level) >= rank(&threshold)
    }

    /// `logger.exception(msg)`: the message, then the traceback, one record. Marks the first
    /// line of the final exception when `root` is set.
    fn log_exception(
        &mut self,
        proc: usize,
        id: &str,
        tb: &Traceback,
        root: bool,
    ) -> Option<usize> {
        let spec = self.p.msg(id)?.clone();
        let msg = self.fill(&spec.text, &[]);
        let tb_text = tb.render(self.p);
        let text = format!("{msg}\n{tb_text}");
        let idx = self.push_exception_log(proc, &spec, text, &tb.exception, root);
        if root {
            self.root = Some(idx);
        }
        Some(idx)
    }

    /// `text` (ending in `exception`) as one record of message `spec`; with `marked`, the line
    /// stating the exception is marked as the record's root-cause line. Returns the event.
    fn push_exception_log(
        &mut self,
        proc: usize,
        spec: &crate::profile::MsgSpec,
        text: String,
        exception: &str,
        marked: bool,
    ) -> usize {
        let mark = exception_line_index(&text, exception);
        self.push(
            proc,
            Body::Log {
                level: spec.level.clone(),
                file: spec.file().to_string(),
                line: spec.line().to_string(),
                text,
            },
            marked.then_some(mark),
        )
    }

    /// An uncaught traceback written to stderr (prefixed if decorated, no header).
    fn stderr_traceback(
        &mut self,
        proc: usize,
        head: Option<&str>,
        tb: &Traceback,
        root: bool,
    ) -> usize {
        let mut text = String::new();
        if let Some(h) = head {
            text.push_str(h);
            text.push('\n');
        }
        text.push_str(&tb.render(self.p));
        text.push('\n');
        let mark = exception_line_index(text.trim_end_matches('\n'), &tb.exception);
        let idx = self.push(
            proc,
            Body::Stream(text),
            if root { Some(mark) } else { None },
        );
        if root {
            self.root = Some(idx);
        }
        idx
    }

    fn stream(&mut self, proc: usize, text: String) -> usize {
        self.push(proc, Body::Stream(text), None)
    }

    fn raw(&mut self, proc: usize, text: String) -> usize {
        self.push(proc, Body::Raw(text), None)
    }

    fn mark_root(&mut self, idx: usize, line: usize) {
        self.events[idx].mark = Some(line);
        self.root = Some(idx);
    }

    /// The root cause is event `idx` (its first line) after all: earlier marks are cleared.
    fn remark_root(&mut self, idx: usize) {
        for ev in self.events.iter_mut() {
            ev.mark = None;
        }
        self.mark_root(idx, 0);
    }

    /// A sub-stream of the launch's randomness for ids that must not shift other draws.
    fn d_rng(&self) -> Rng {
        Seed(self.rng.next_u64()).rng()
    }

    /// Ray colours its prefixes unless `RAY_COLOR_PREFIX=0`.
    fn ray_color(&self) -> bool {
        self.env.get("RAY_COLOR_PREFIX").is_none_or(|v| v != "0")
    }

    /// `proc` is killed by `signal` at `t`: it writes nothing after that.
    fn die(&mut self, proc: usize, t: SimTime, signal: Signal) {
        self.deaths.push(Death {
            role: self.procs[proc].role.clone(),
            t,
            signal: signal.number(),
        });
    }

    /// `proc` stops making progress at `t`.
    fn hang(&mut self, proc: usize, t: SimTime) {
        self.hangs.push(Hang {
            role: self.procs[proc].role.clone(),
            t,
        });
    }
}

/// Process roles and naming.
fn worker_name(p: &Profile, d: &Deployment, rank: u32) -> String {
    let tp_rank = rank % d.tp;
    let pp_rank = rank / d.tp;
    match p.worker_name {
        WorkerNaming::Rank => format!("VllmWorker rank={rank}"),
        WorkerNaming::VllmParts => {
            let pp = (d.pp > 1).then(|| format!("PP{pp_rank}"));
            let tp = (d.tp > 1).then(|| format!("TP{tp_rank}"));
            let suffix = [pp, tp].into_iter().flatten().collect::<Vec<_>>().join("_");
            if suffix.is_empty() {
                "VllmWorker".to_string()
            } else {
                format!("VllmWorker {suffix}")
            }
        }
        WorkerNaming::V0Process => "VllmWorkerProcess".to_string(),
        WorkerNaming::Parts => {
            let mut s = String::from("Worker");
            if d.pp > 1 {
                s.push_str(&format!("_PP{pp_rank}"));
            }
            if d.tp > 1 {
                s.push_str(&format!("_TP{tp_rank}"));
            }
            if d.args.enable_expert_parallel {
                s.push_str(&format!("_EP{tp_rank}"));
            }
            s
        }
    }
}

fn fmt2(x: f64) -> String {
    format!("{x:.2}")
}

/// Thousands separators: `2,573,952`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

/// Build one launch.
/// What a startup phase tells the launch: go on, or the launch ends here in this status.
type Step = ControlFlow<LaunchStatus>;

/// The launch ends here with the process tree crashed.
const CRASHED: Step = ControlFlow::Break(LaunchStatus::Crashed);

/// State one V1 launch carries from phase to phase.
struct Launch {
    /// The launch's own random stream (pids, hashes, names); timing draws from the builder's.
    rng: Rng,
    api_pid: u32,
    failure: Option<Failure>,
    /// vLLM's CUDA wheel on a host without a GPU (with or without the CPU platform plugin).
    gpu_less: bool,
    /// The CPU platform plugin is loaded.
    on_cpu: bool,
    eng: usize,
    engine_pid: u32,
    engine_name: String,
    ray_ips: Vec<String>,
    workers: Vec<usize>,
    uniproc: bool,
    /// The time the KV cache was sized (the start of `init_engine_took`).
    t_kv: SimTime,
}

pub fn build_launch(
    d: &Deployment,
    env: &BTreeMap<String, String>,
    seed: Seed,
    start: SimTime,
    ending: Ending,
) -> LaunchLog {
    let p = d.profile;
    let mut rng = seed.derive("launch", 0).rng();
    let api_pid = rng.range(2_000, 390_000) as u32;
    let mut b = Builder::new(d, env, seed, start, api_pid);
    let mut l = Launch {
        rng,
        api_pid,
        failure: d.failure.clone(),
        gpu_less: d.platform != Platform::Cuda,
        on_cpu: d.platform == Platform::CpuPlugin,
        eng: API,
        engine_pid: 0,
        engine_name: String::new(),
        ray_ips: Vec::new(),
        workers: Vec::new(),
        // One rank runs inside the engine core (the uniproc executor), except on the CPU
        // platform of releases that always use worker processes there.
        uniproc: d.world == 1
            && !(d.platform == Platform::CpuPlugin
                && d.version.has(Switch::CpuMpExecutorAtWorldOne)),
        t_kv: SimTime::default(),
    };
    if let ControlFlow::Break(status) = api_server_config(&mut b, &l) {
        return b.finish(status, None);
    }
    if p.engine == Engine::V0 {
        if l.on_cpu {
            return cpu::v0_launch(b);
        }
        return v0_launch(b, ending);
    }
    let startup = [
        v1_api_client,
        engine_core,
        spawn_workers,
        distributed_init,
        device_init_failures,
        start_loading,
        attention_backend,
        load_weights,
        torch_compile,
        kv_cache,
        cuda_graphs,
    ];
    for phase in startup {
        if let ControlFlow::Break(status) = phase(&mut b, &mut l) {
            return b.finish(status, None);
        }
    }
    let traffic_from = api_server_up(&mut b, &l);
    let status = serve(&mut b, &l, ending);
    b.finish(status, Some(traffic_from))
}

/// The API server from `import vllm` to a checked `VllmConfig`: argparse, the port, the model's
/// config and the parallel, cache and quantization checks, in vLLM's order.
fn api_server_config(b: &mut Builder<'_>, l: &Launch) -> Step {
    let (d, p) = (b.d, b.p);
    let failure = &l.failure;
    let api_prefixed = p.api_server_prefixed;
    // argparse runs before anything is logged (but after `import vllm`).
    if l.gpu_less {
        cpu::import_preamble(b, API);
    } else {
        b.torch_import_warnings(API);
    }
    if let Some(Failure::Cli(problem)) = failure {
        cli_error(b, problem);
        return CRASHED;
    }
    if let Some(Failure::NoPlatform) = failure {
        if cpu::no_platform_at_parser(b) {
            return CRASHED;
        }
    }
    if p.platform_detected_level != "DEBUG" && d.platform == Platform::Cuda {
        // Printed at import time, before the API server decorates its streams.
        b.prefixed[API] = false;
        platform_line(b, API);
        b.prefixed[API] = api_prefixed;
    }
    if l.gpu_less {
        let (least, most) = p.cpu_import_ms;
        b.advance_ms(API, least, most);
    }
    banner(b);

    if let Some(Failure::PortInUse) = failure {
        b.advance_ms(API, 40, 300);
        let tb = Traceback::new(p.error("port_in_use"))
            .with(p, "api_main")
            .with(p, "api_setup_server");
        b.stderr_traceback(API, None, &tb, true);
        return CRASHED;
    }
    // `set_ulimit()` right after the port is bound.
    ulimit_warning(b);
    match failure {
        Some(Failure::NoPlatform) => {
            cpu::no_platform_at_engine_args(b);
            return CRASHED;
        }
        Some(Failure::ModelPathMissing) => {
            b.advance_ms(API, 200, 900);
            model_path_missing(b);
            return CRASHED;
        }
        Some(Failure::TrustRemoteCode) => {
            b.advance_ms(API, 800, 4000);
            trust_remote_code(b);
            return CRASHED;
        }
        Some(Failure::UnsupportedArch) => {
            b.advance_ms(API, 800, 4000);
            let arch = d
                .model
                .map(|m| m.architecture().to_string())
                .unwrap_or_default();
            let exc = b.fill(p.error("unsupported_arch"), &[("arch", arch)]);
            api_config_error(b, &exc, &["api_config"]);
            return CRASHED;
        }
        _ => {}
    }

    // Config resolution lines.
    b.advance_ms(API, 3000, 9000);
    let arch = d
        .model
        .map(|m| m.architecture().to_string())
        .unwrap_or_default();
    b.log(API, "resolved_arch", &[("arch", arch)]);
    dtype_lines(b);
    if let Some(Failure::MaxLenExceeds { requested, derived }) = failure {
        let exc = b.fill(
            p.error("max_len_exceeds"),
            &[
                ("max_model_len", requested.to_string()),
                ("derived", derived.to_string()),
            ],
        );
        // Releases before pydantic configs show the frames down to the raise.
        let stacks: &[&str] = if p.stack.contains_key("api_max_len_raise") {
            &["api_config", "api_max_len_raise"]
        } else {
            &["api_config"]
        };
        api_config_error(b, &exc, stacks);
        return CRASHED;
    }
    b.log(API, "max_model_len", &[]);
    if let Some(Failure::KvCacheDtypeInvalid { value }) = failure {
        let exc = b.fill(
            p.error("kv_cache_dtype_invalid"),
            &[("value", value.clone())],
        );
        api_config_error(b, &exc, &["api_cache_config"]);
        return CRASHED;
    }
    if p.msg("task_resolution").is_some() {
        b.advance_ms(API, 4000, 11000);
        task_resolution(b);
    }
    let on_cpu = l.on_cpu;
    if on_cpu && p.engine == Engine::V0 {
        // The CPU platform falls back to the V0 engine; its executor is always `mp`.
        b.log(API, "v1_fallback_cpu", &[]);
        if d.world > 1 {
            b.log(API, "mp_default", &[]);
        }
        b.log(API, "custom_ar_unsupported_platform", &[]);
    }
    // The parallel config picks the executor: Ray, when the world exceeds the machine (before
    // 0.12); releases that log the pick at INFO say so.
    if d.ray_fallback && p.msg("ray_default").is_some() {
        b.log(API, "ray_default", &[]);
    }
    // Checks of the parallel config: before the cache config in V0, in `VllmConfig` in V1.
    let tp_heads_now = p.engine == Engine::V0 || !d.version.has(Switch::TpHeadsCheckedInVllmConfig);
    if let (Some(Failure::TpHeads { heads }), true) = (failure, tp_heads_now) {
        let exc = b.fill(p.error("tp_heads"), &[("heads", heads.to_string())]);
        api_config_error(b, &exc, &["api_config_verify"]);
        return CRASHED;
    }
    if on_cpu {
        b.log(API, "cpu_kv_space", &[("gib", fmt2(d.cpu_kv_gib))]);
        if p.engine == Engine::V0 && d.world == 1 {
            b.log(API, "cpu_uni_fallback", &[]);
        }
    }
    // `CacheConfig` announces a quantized KV cache (before 0.24: any fp8 one, in fixed words;
    // then every quantized one by name, per-token-head scales in their own words).
    let kv = d.kv_cache_dtype.as_str();
    if !matches!(kv, "auto" | "float16" | "bfloat16") {
        let per_token_head =
            kv.ends_with("_per_token_head") && p.msg("kv_per_token_head").is_some();
        let id = if per_token_head {
            "kv_per_token_head"
        } else {
            "fp8_kv_cache"
        };
        b.log(API, id, &[("kv_dtype", kv.to_string())]);
    }
    // `ParallelConfig`, after the cache config and before the scheduler config (0.12+).
    if let Some(Failure::WorldExceedsGpus { world, gpus }) = failure {
        let key = if d.version.has(Switch::WorldSizeErrorNamesBackends) {
            "world_exceeds_gpus"
        } else {
            "world_exceeds_gpus_tp"
        };
        let exc = b.fill(
            p.error(key),
            &[("world", world.to_string()), ("gpus", gpus.to_string())],
        );
        api_config_error(b, &exc, &["api_parallel_config"]);
        return CRASHED;
    }
    // The V0 engine on the CPU platform runs without chunked prefill.
    if !(on_cpu && p.engine == Engine::V0) {
        b.log(
            API,
            "chunked_prefill",
            &[("tokens", d.max_num_batched_tokens.to_string())],
        );
    }
    match failure {
        Some(Failure::TpHeads { heads }) => {
            let exc = b.fill(p.error("tp_heads"), &[("heads", heads.to_string())]);
            api_config_error(b, &exc, &["api_config_verify"]);
            return CRASHED;
        }
        Some(Failure::QuantCapability { quant, min }) => {
            let exc = b.fill(
                p.error("quant_capability"),
                &[
                    ("quant", quant.clone()),
                    ("min", min.to_string()),
                    ("cap", d.gpu.capability_int().to_string()),
                ],
            );
            api_config_error(b, &exc, &["api_quant_verify"]);
            return CRASHED;
        }
        _ => {}
    }
    if on_cpu && d.version.has(Switch::CpuX86RequiresTriton) {
        // The platform's config check, after the notes VllmConfig logs before it; no Triton CPU
        // backend is there (the host has no GPU driver, so the CUDA build of Triton is inert).
        cpu_config_notes(b);
        let exc = p.error("cpu_x86_requires_triton").to_string();
        api_config_error(b, &exc, &["api_config_verify", "api_cpu_platform_check"]);
        return CRASHED;
    }
    if d.quantization.as_deref() == Some("modelopt_fp4") {
        b.log(API, "modelopt_nvfp4", &[]);
    }
    if d.ray {
        b.log(API, "ray_async_disabled", &[]);
        b.log(API, "async_disabled", &[]);
    } else {
        b.log(API, "async_scheduling", &[]);
    }
    if on_cpu {
        cpu_config_notes(b);
    }
    if let Some(Selection::Chosen {
        forced_block_size: Some(bs),
        ..
    }) = &d.selection
    {
        if d.version.has(Switch::Sm100MlaPreselectsCutlass) {
            b.log(
                API,
                if *bs == 128 {
                    "force_block_cutlass_mla"
                } else {
                    "force_block_flashmla"
                },
                &[],
            );
        }
    }
    ControlFlow::Continue(())
}

/// What the API server notes on the CPU platform as `VllmConfig` is built (profile data).
fn cpu_config_notes(b: &mut Builder<'_>) {
    let p = b.p;
    for id in &p.cpu_config_notes {
        b.log(API, id, &[]);
    }
}

/// V1's `AsyncLLM` builds the tokenizer before it starts the engine core.
fn v1_api_client(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let p = b.p;
    if let Some(Failure::TransformersTooNew) = &l.failure {
        b.advance_ms(API, 300, 2000);
        let tb = Traceback::new(p.error("tokenizer_attr_removed_top"))
            .with(p, "api_main")
            .with(p, "api_engine_client")
            .with(p, "api_tokenizer");
        b.stderr_traceback(API, None, &tb, true);
        return CRASHED;
    }
    ControlFlow::Continue(())
}

/// The engine core process: its start, its config line, Ray's cluster where Ray runs it.
fn engine_core(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    l.engine_name = b.fill(&p.engine_name, &[("dp", "0".into())]);
    l.engine_pid = l.api_pid + l.rng.range(150, 420) as u32;
    let t_engine = b.now(API).plus_ms(b.rng.range(5000, 9500));
    let eng = b.spawn(
        Some(l.engine_name.clone()),
        "EngineCore".into(),
        l.engine_pid,
        t_engine,
        true,
    );
    l.eng = eng;
    if l.gpu_less {
        cpu::import_preamble(b, eng);
        b.advance_ms(eng, 1000, 4000);
    } else {
        b.torch_import_warnings(eng);
        if p.platform_detected_level != "DEBUG" {
            // Printed at import time, before the prefix is set.
            b.prefixed[eng] = false;
            platform_line(b, eng);
            b.prefixed[eng] = true;
        }
    }
    b.log(eng, "engine_waiting_init", &[]);
    let config = engine_config(b, d);
    b.log(eng, "engine_init", &[("config", config)]);
    if l.on_cpu && d.world == 1 && p.triton_on_worker_import {
        // The uniproc executor imports the worker module, and with it Triton.
        cpu::triton_lines(b, eng);
    }
    if d.ray {
        l.ray_ips = ray_startup(b, eng, &mut l.rng);
        if let Some(Failure::RayPlacement { world, .. }) = l.failure {
            ray_placement_timeout(b, eng, l.api_pid, world);
            return CRASHED;
        }
    }
    ControlFlow::Continue(())
}

/// Ray's placement group waits for GPUs the cluster does not have: `_wait_until_pg_ready` logs
/// after 10, 30, 70, … seconds (its interval doubles) until PG_WAIT_TIMEOUT (1800 s) has passed,
/// then the engine core fails.
fn ray_placement_timeout(b: &mut Builder<'_>, eng: usize, api_pid: u32, world: u32) {
    let p = b.p;
    let head = b.node_ips.first().cloned().unwrap_or_default();
    let mut specs = vec![format!("{{'node:{head}': 0.001, 'GPU': 1.0}}")];
    specs.extend((1..world).map(|_| "{'GPU': 1.0}".to_string()));
    let specs = format!("[{}]", specs.join(", "));
    b.log(eng, "ray_pg_exceeds", &[]);
    let start = b.now(eng);
    let (mut elapsed, mut interval) = (0u64, 10u64);
    while elapsed < 1800 {
        elapsed += interval;
        interval *= 2;
        b.set_time(eng, start.plus_ms(elapsed * 1000 + b.rng.range(0, 40)));
        b.log(
            eng,
            "ray_pg_waiting",
            &[("secs", elapsed.to_string()), ("specs", specs.clone())],
        );
    }
    let exc = if b.d.version.has(Switch::RayPgTimeoutCountsGpus) {
        b.fill(
            p.error("ray_pg_timeout_gpus"),
            &[("gpus", format!("{world}.0")), ("specs", specs)],
        )
    } else {
        b.fill(p.error("ray_pg_timeout"), &[("specs", specs)])
    };
    let tb = Traceback::new(exc)
        .with(p, "engine_core_init")
        .with(p, "engine_ray_pg");
    engine_failure(b, &[], eng, api_pid, tb);
}

/// The workers (or, at world size 1, the engine core as the only rank). On the CPU platform
/// they fail here.
fn spawn_workers(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    let (eng, on_cpu, world) = (l.eng, l.on_cpu, d.world);
    if l.uniproc {
        l.workers.push(eng);
    } else {
        if !b.env.contains_key("OMP_NUM_THREADS") && !on_cpu {
            let threads = [32u32, 48, 56, 64, 96, 112, 128][l.rng.range(0, 6) as usize];
            b.log(
                eng,
                "reduce_torch_threads",
                &[("threads", threads.to_string())],
            );
        }
        if !d.ray && p.msg("dp_group_leader").is_some() {
            // The multiprocessing executor's group line (0.33).
            let ip = format!(
                "10.{}.{}.{}",
                l.rng.range(0, 255),
                l.rng.range(0, 255),
                l.rng.range(2, 254)
            );
            b.log(eng, "dp_group_leader", &[("ip", ip)]);
        }
        if let (Some(_spec), false) = (p.msg("shm_handle"), d.ray) {
            // On the CPU platform the workers fail before rank 0 sets up its group's
            // broadcaster: the handle printed is the engine core's RPC queue to every rank.
            let first_reader = u32::from(!on_cpu);
            let readers: Vec<String> = (first_reader..world).map(|r| r.to_string()).collect();
            let psm = format!("{:08x}", l.rng.next_u64() as u32);
            b.shm_names.push(format!("psm_{psm}"));
            let uuid = uuid(&mut l.rng);
            b.log(
                eng,
                "shm_handle",
                &[
                    ("readers", format!("[{}]", readers.join(", "))),
                    ("readers_n", readers.len().to_string()),
                    ("psm", psm),
                    ("uuid", uuid),
                ],
            );
        }
        let first_worker_pid = l.engine_pid + l.rng.range(200, 500) as u32;
        let t_workers = b.now(eng).plus_ms(b.rng.range(8000, 13000));
        for r in 0..world {
            let name = worker_name(p, d, r);
            // Before decoration a worker's lines carry no prefix (v0.10.2 – v0.16), or the
            // early `(Worker pid=N)` prefix (v0.17+); v0.8.5 – v0.10.1 decorate first.
            let (pname, pre) = match (p.worker_name, p.worker_prefix_before_init) {
                (WorkerNaming::Parts, false) => (name.clone(), false),
                (WorkerNaming::Parts, true) => (
                    b.fill(&p.worker_early_name, &[("rank", r.to_string())]),
                    true,
                ),
                _ => (name.clone(), true),
            };
            let t = t_workers.plus_us(b.rng.range(0, 600_000));
            let w = b.spawn(
                Some(pname),
                format!("Worker{r}"),
                first_worker_pid + r,
                t,
                pre,
            );
            if !on_cpu {
                b.torch_import_warnings(w);
            }
            if d.ray {
                // A Ray actor: Ray prints its lines through the driver (the engine core).
                let node = d.node_of(r) as usize;
                b.procs[w].name = Some("RayWorkerWrapper".into());
                b.procs[w].ray = Some(crate::record::RayActor {
                    driver_name: l.engine_name.clone(),
                    driver_pid: l.engine_pid,
                    ip: (node > 0).then(|| l.ray_ips[node].clone()),
                });
                b.prefixed[w] = true;
            }
            l.workers.push(w);
        }
    }
    let port = b.rng.range(30_000, 60_000);
    b.vars.insert("dist_port", port.to_string());
    if on_cpu {
        cpu::v1_workers_fail(b, &l.workers, eng, l.api_pid);
        return CRASHED;
    }
    ControlFlow::Continue(())
}

/// `torch.distributed` and NCCL come up on every rank (workers, before decoration).
fn distributed_init(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    if l.uniproc {
        return ControlFlow::Continue(());
    }
    let workers = l.workers.clone();
    let world = d.world;
    let port = b.vars["dist_port"].clone();
    let pcie = d.gpu.interconnect == crate::catalog::Interconnect::Pcie;
    // The multiprocessing executor's ranks meet through one file store (0.28+), Ray's through
    // TCP.
    let file_store = !d.ray && p.msg("world_size_file").is_some();
    let dist_file = if file_store {
        let mut rng = b.d_rng();
        format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64())
    } else {
        String::new()
    };
    for (r, &w) in workers.iter().enumerate() {
        if p.platform_detected_level != "DEBUG" {
            let pre = b.prefixed[w];
            b.prefixed[w] = false;
            platform_line(b, w);
            b.prefixed[w] = pre;
        }
        b.advance_ms(w, 500, 2500);
        b.log(
            w,
            if file_store {
                "world_size_file"
            } else {
                "world_size"
            },
            &[
                ("dist_file", dist_file.clone()),
                ("rank", r.to_string()),
                ("local_rank", (r as u32 % d.gpus_per_node()).to_string()),
                (
                    "init_host",
                    l.ray_ips
                        .first()
                        .cloned()
                        .unwrap_or_else(|| "127.0.0.1".into()),
                ),
                ("port", port.clone()),
            ],
        );
    }
    b.barrier(&workers);
    if b.env
        .get("NCCL_DEBUG")
        .is_some_and(|v| v.eq_ignore_ascii_case("INFO"))
    {
        nccl_info_noise(b, &workers, d);
    }
    for (r, &w) in workers.iter().enumerate() {
        b.advance_ms(w, 300, 1200);
        if r == 0 || p.per_rank_once == RankScope::All {
            b.log(w, "nccl_version", &[]);
        }
    }
    b.barrier(&workers);
    let init_fail = matches!(
        l.failure,
        Some(Failure::Nccl(_))
            | Some(Failure::ShmInsufficient { .. })
            | Some(Failure::FreeMemory { .. })
    );
    if !init_fail {
        for &w in &workers {
            b.advance_ms(w, 300, 900);
            if pcie && world > 2 {
                b.log(w, "custom_ar_pcie", &[]);
            }
        }
        b.barrier(&workers);
        for (r, &w) in workers.iter().enumerate() {
            b.advance_ms(w, 50, 300);
            let r = r as u32;
            b.log(
                w,
                "rank_assigned",
                &[
                    ("rank", r.to_string()),
                    ("pp_rank", (r / d.tp).to_string()),
                    ("tp_rank", (r % d.tp).to_string()),
                    (
                        "ep_rank",
                        if d.model.is_some_and(|m| m.moe_experts > 0) {
                            (r % d.tp).to_string()
                        } else {
                            "N/A".to_string()
                        },
                    ),
                ],
            );
        }
    }
    ControlFlow::Continue(())
}

/// Failures while the workers initialise their devices: free memory below the target, NCCL
/// and `/dev/shm`, bf16 on a GPU without it.
fn device_init_failures(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    let (workers, eng, api_pid) = (l.workers.clone(), l.eng, l.api_pid);
    match &l.failure {
        Some(Failure::FreeMemory {
            free_gib,
            requested_gib,
        }) => {
            let exc = b.fill(
                p.error("free_memory"),
                &[
                    ("device", "0".into()),
                    ("free", fmt2(*free_gib)),
                    ("total", fmt2(d.gpu.torch_total_gib)),
                    ("util", format!("{}", d.args.gpu_memory_utilization)),
                    ("requested", fmt2(*requested_gib)),
                ],
            );
            worker_failure(
                b,
                &workers,
                eng,
                api_pid,
                |b, r| {
                    let exc = exc.replace("cuda:0", &format!("cuda:{r}"));
                    Traceback::new(exc)
                        .with(b.p, "worker_init_device")
                        .with(b.p, "free_memory_raise")
                },
                WorkerStage::InitDevice,
            );
            CRASHED
        }
        Some(Failure::Nccl(NcclFault::PeerAccess)) | Some(Failure::ShmInsufficient { .. }) => {
            let shm = random_alnum(&mut l.rng, 6);
            // With NCCL_DEBUG set, NCCL itself says why (unprefixed C++ output).
            let mut warn_first = None;
            if let Some(Failure::ShmInsufficient { visible: true }) = &l.failure {
                let t = workers.iter().map(|&w| b.now(w)).max().unwrap_or_default();
                for (r, &w) in workers.iter().enumerate() {
                    b.set_time(w, t.plus_us(b.rng.range(100, 4000)));
                    let pid = b.procs[w].pid;
                    let seg = random_alnum(&mut l.rng, 6);
                    let host = nccl_host(d);
                    let idx = b.raw(
                        w,
                        format!(
                            "{host}:{pid}:{pid} [{r}] NCCL WARN Error: failed to extend /dev/shm/nccl-{seg} to 9637892 bytes, error: No space left on device (28)\n{host}:{pid}:{pid} [{r}] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-{seg} (size 9637888), error: No space left on device (28)\n"
                        ),
                    );
                    let tw = b.events[idx].t;
                    if warn_first.is_none_or(|(ft, _)| tw < ft) {
                        warn_first = Some((tw, idx));
                    }
                }
            }
            let exc = if matches!(l.failure, Some(Failure::ShmInsufficient { .. })) {
                b.fill(
                    p.error("nccl_shm"),
                    &[("shm", shm), ("size", "9637888".into())],
                )
            } else {
                b.fill(p.error("nccl_unhandled_cuda"), &[])
            };
            worker_failure(
                b,
                &workers,
                eng,
                api_pid,
                |b, _| Traceback::new(exc.clone()).with(b.p, "worker_init_distributed"),
                WorkerStage::InitDevice,
            );
            if let Some((_, idx)) = warn_first {
                b.remark_root(idx);
            }
            CRASHED
        }
        Some(Failure::Bf16Capability) => {
            let exc = b.fill(
                p.error("bf16_capability"),
                &[
                    ("gpu", d.gpu.name.clone()),
                    ("major", d.gpu.capability[0].to_string()),
                    ("minor", d.gpu.capability[1].to_string()),
                ],
            );
            worker_failure(
                b,
                &workers,
                eng,
                api_pid,
                |b, _| Traceback::new(exc.clone()).with(b.p, "worker_init_device"),
                WorkerStage::InitDevice,
            );
            CRASHED
        }
        _ => ControlFlow::Continue(()),
    }
}

/// Decoration (the workers' final prefixes; Ray actors keep Ray's), then `Starting to load
/// model` once per rank.
fn start_loading(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    if !l.uniproc && !d.ray {
        for w in l.workers.iter_mut() {
            let r: u32 = b.procs[*w]
                .role
                .trim_start_matches("Worker")
                .parse()
                .unwrap_or(0);
            *w = b.decorate(*w, worker_name(p, d, r));
        }
    }
    let rank0 = l.workers[0];
    b.advance_ms(rank0, 200, 1500);
    b.log(rank0, "start_load", &[]);
    if p.per_rank_once == RankScope::All {
        for &w in l.workers.iter().skip(1) {
            b.advance_ms(w, 100, 1500);
            b.log(w, "start_load", &[]);
        }
    }
    ControlFlow::Continue(())
}

/// The attention backend: the selector's failure, or the chosen backend announced.
fn attention_backend(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    let (workers, eng, api_pid) = (l.workers.clone(), l.eng, l.api_pid);
    let at_load = |b: &mut Builder<'_>, exc: String| {
        worker_failure(
            b,
            &workers,
            eng,
            api_pid,
            |b, _| Traceback::new(exc.clone()).with(b.p, "worker_load_model"),
            WorkerStage::Load,
        );
        CRASHED
    };
    match &l.failure {
        Some(Failure::Selector { selection, .. }) => {
            selector_failure(b, &workers, eng, api_pid, selection);
            return CRASHED;
        }
        Some(Failure::MissingModule { module }) => {
            let exc = b.fill(p.error("missing_module"), &[("module", module.clone())]);
            return at_load(b, exc);
        }
        Some(Failure::NoKernelImage) => {
            let exc = b.fill(p.error("no_kernel_image"), &[]);
            return at_load(b, exc);
        }
        _ => {}
    }
    if let Some(sel) = &d.selection {
        announce_backend(b, &workers, sel);
    }
    if d.quantization.as_deref() == Some("modelopt_fp4")
        && d.model.is_some_and(|m| m.moe_experts > 0)
    {
        let rank0 = workers[0];
        b.advance_ms(rank0, 200, 900);
        b.log(rank0, "nvfp4_moe", &[]);
    }
    ControlFlow::Continue(())
}

/// The weights: the loading bar, and what can stop it (CUDA OOM, the host's OOM killer, a
/// kill or a hang while loading).
fn load_weights(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    let (workers, eng, api_pid) = (l.workers.clone(), l.eng, l.api_pid);
    let rank0 = workers[0];
    let shards = d.model.map_or(1, |m| m.shards);
    let load_secs = (d.memory.weights_per_rank_gib * b.rng.range(45, 75) as f64 / 10.0).max(1.5);
    let oom_at = match &l.failure {
        Some(Failure::WeightsOom { .. }) | Some(Failure::HostOomKilled) => Some(
            b.rng
                .range(u64::from(shards / 3), u64::from(shards.saturating_sub(1)))
                as u32,
        ),
        Some(Failure::Killed {
            at: Phase::LoadWeights,
            ..
        })
        | Some(Failure::Hang {
            at: Phase::LoadWeights,
            ..
        }) => Some(shards / 2),
        _ => None,
    };
    loading_bar(b, rank0, shards, load_secs, oom_at);
    match &l.failure {
        Some(Failure::WeightsOom {
            alloc_gib,
            free_mib,
            used_gib,
        }) => {
            let err = b.fill(
                p.error("torch_oom"),
                &[
                    ("alloc", fmt2(*alloc_gib)),
                    ("device", "0".into()),
                    ("total", fmt2(d.gpu.torch_total_gib)),
                    ("free", fmt2(*free_mib)),
                    ("used", fmt2(*used_gib)),
                    ("allocated", fmt2(used_gib - 0.5)),
                    ("reserved", fmt2(free_mib / 7.0)),
                    ("pid", "0".into()),
                ],
            );
            let short = err
                .split_once(": ")
                .map(|x| x.1)
                .unwrap_or(&err)
                .to_string();
            // Each rank logs the ERROR first, then re-raises; the root cause is the exception
            // line of the re-raised traceback (as real logs are labelled: the record is vLLM's
            // advice, the exception names the cause).
            for &w in &workers {
                b.advance_ms(w, 5, 80);
                b.log(w, "oom_load_model", &[("error", short.clone())]);
            }
            worker_failure(
                b,
                &workers,
                eng,
                api_pid,
                |b, _| Traceback::new(err.clone()).with(b.p, "load_weights_oom"),
                WorkerStage::Load,
            );
            return CRASHED;
        }
        Some(Failure::HostOomKilled) => {
            host_oom(b, &workers, eng, api_pid);
            return CRASHED;
        }
        Some(Failure::Killed {
            process,
            signal,
            at: Phase::LoadWeights | Phase::InitDevice,
        }) => {
            killed_at_startup(b, &workers, eng, api_pid, process, *signal);
            return CRASHED;
        }
        Some(Failure::Hang {
            process,
            at: Phase::LoadWeights | Phase::InitDevice,
        }) => {
            hang_at_startup(b, &workers, eng, process);
            return ControlFlow::Break(LaunchStatus::Hung);
        }
        _ => {}
    }
    for (i, w) in once_per_rank(p, &workers) {
        b.advance_ms(w, 100, 900);
        b.log(
            w,
            "weights_took",
            &[("secs", fmt2(load_secs + i as f64 * 0.37))],
        );
        b.advance_ms(w, 500, 4000);
        let gib = d.memory.weights_per_rank_gib;
        b.log(
            w,
            "model_loading_took",
            &[
                ("gib", fmt2(gib)),
                ("gib4", format!("{gib:.4}")),
                ("secs", format!("{:.6}", load_secs + 4.3 + i as f64 * 0.21)),
            ],
        );
    }
    ControlFlow::Continue(())
}

/// `torch.compile` (unless `--enforce-eager`): Dynamo, the graph cache, Inductor.
fn torch_compile(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    if d.args.enforce_eager {
        return ControlFlow::Continue(());
    }
    let (workers, eng, api_pid) = (l.workers.clone(), l.eng, l.api_pid);
    let hash = format!("{:010x}", l.rng.next_u64() & 0xff_ffff_ffff);
    let tokens = d.max_num_batched_tokens.to_string();
    let dynamo = 8.0 + b.rng.range(0, 1200) as f64 / 100.0;
    for (i, w) in once_per_rank(p, &workers) {
        b.advance_ms(w, 8000, 18000);
        b.log(
            w,
            "compile_cache_dir",
            &[("hash", hash.clone()), ("rank", i.to_string())],
        );
        b.log(w, "dynamo_time", &[("secs", fmt2(dynamo))]);
    }
    for &w in &workers {
        b.advance_ms(w, 4000, 9000);
        b.log(w, "cache_graph", &[("tokens", tokens.clone())]);
    }
    if let Some(Failure::Killed {
        process,
        signal,
        at: Phase::Compile,
    }) = &l.failure
    {
        killed_at_startup(b, &workers, eng, api_pid, process, *signal);
        return CRASHED;
    }
    let compile = 20.0 + b.rng.range(0, 3000) as f64 / 100.0;
    for (_, w) in once_per_rank(p, &workers) {
        b.advance_ms(w, 20000, 40000);
        b.log(
            w,
            "compile_graph",
            &[("tokens", tokens.clone()), ("secs", fmt2(compile))],
        );
        b.advance_ms(w, 1000, 5000);
        b.log(
            w,
            "torch_compile_total",
            &[("secs", fmt2(compile + dynamo))],
        );
    }
    b.vars.insert("compile_secs", fmt2(compile + dynamo));
    ControlFlow::Continue(())
}

/// Memory profiling and the KV cache: no memory left, or too little for `max_model_len`.
fn kv_cache(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    let (workers, eng, api_pid) = (l.workers.clone(), l.eng, l.api_pid);
    let kv = d.memory.kv_available_gib;
    for (_, w) in once_per_rank(p, &workers) {
        b.advance_ms(w, 2000, 6000);
        // vLLM prints what is left, negative when the weights and activations took more
        // than the budget (`Available KV cache memory: -0.7 GiB` in real logs).
        b.log(w, "available_kv", &[("gib", fmt2(kv))]);
    }
    l.t_kv = workers
        .iter()
        .map(|&w| b.now(w))
        .max()
        .unwrap_or(b.now(eng));
    b.set_time(eng, l.t_kv.plus_ms(300));
    let raise = match &l.failure {
        Some(Failure::KvNoMemory { .. }) => {
            Some((b.fill(p.error("no_kv_memory"), &[]), "kv_no_memory_raise"))
        }
        Some(Failure::KvTooSmall {
            needed_gib,
            available_gib,
            estimated,
        }) => Some((
            b.fill(
                p.error("kv_too_small"),
                &[
                    ("needed", fmt2(*needed_gib)),
                    ("available", fmt2(*available_gib)),
                    ("estimated", estimated.to_string()),
                    ("tokens", estimated.to_string()),
                ],
            ),
            "kv_too_small_raise",
        )),
        _ => None,
    };
    if let Some((exc, raise)) = raise {
        engine_failure(
            b,
            &workers,
            eng,
            api_pid,
            Traceback::new(exc)
                .with(p, "engine_core_init")
                .with(p, "engine_core_kv")
                .with(p, raise),
        );
        return CRASHED;
    }
    b.memory_claimed = Some(l.t_kv);
    let conc = d.memory.kv_tokens as f64 / d.max_model_len as f64;
    // One line in releases that merged the concurrency into it (0.33).
    b.log(
        eng,
        "kv_cache_size",
        &[
            ("tokens", thousands(d.memory.kv_tokens)),
            ("max_model_len", thousands(d.max_model_len)),
            ("x", fmt2(conc)),
        ],
    );
    b.log(
        eng,
        "max_concurrency",
        &[
            ("max_model_len", thousands(d.max_model_len)),
            ("x", fmt2(conc)),
        ],
    );
    ControlFlow::Continue(())
}

/// CUDA-graph capture (unless `--enforce-eager`), then the engine's `init engine took`.
fn cuda_graphs(b: &mut Builder<'_>, l: &mut Launch) -> Step {
    let (d, p) = (b.d, b.p);
    let (workers, eng, api_pid) = (l.workers.clone(), l.eng, l.api_pid);
    let rank0 = workers[0];
    if !d.args.enforce_eager {
        b.set_time(rank0, b.now(eng));
        b.advance_ms(rank0, 200, 800);
        if matches!(l.failure, Some(Failure::GraphCaptureOom)) {
            graph_bar(b, rank0, "mixed prefill-decode, PIECEWISE", Some(23));
            let err = b.fill(
                p.error("graph_oom"),
                &[
                    ("alloc", "20.00".into()),
                    ("device", "0".into()),
                    ("total", fmt2(d.gpu.torch_total_gib)),
                    ("free", "12.81".into()),
                    ("used", fmt2(d.gpu.torch_total_gib - 0.2)),
                    ("allocated", fmt2(d.memory.budget_gib)),
                    ("graph", "0.84".into()),
                    ("reserved", "171.35".into()),
                ],
            );
            rpc_failure(b, &workers, eng, api_pid, &err);
            return CRASHED;
        }
        graph_bar(b, rank0, "mixed prefill-decode, PIECEWISE", None);
        graph_bar(b, rank0, "decode, FULL", None);
        for (_, w) in once_per_rank(p, &workers) {
            b.advance_ms(w, 100, 400);
            b.log(
                w,
                "graph_capture_done",
                &[
                    ("secs", format!("{}", b.rng.range(6, 40))),
                    ("gib", fmt2(d.memory.graph_gib)),
                ],
            );
        }
    }
    let t_ready = workers
        .iter()
        .map(|&w| b.now(w))
        .max()
        .unwrap_or(b.now(eng));
    b.set_time(eng, t_ready.plus_ms(100));
    let init_secs = (t_ready.0.saturating_sub(l.t_kv.0)) as f64 / 1e6 + 40.0;
    // Releases that report the compilation time say it, or use a shorter line without one.
    let took = if d.args.enforce_eager && p.msg("init_engine_took_eager").is_some() {
        "init_engine_took_eager"
    } else {
        "init_engine_took"
    };
    b.log(eng, took, &[("secs", fmt2(init_secs))]);
    if d.ray {
        b.log(eng, "async_disabled", &[]);
    } else {
        b.log(eng, "async_scheduling", &[]);
    }
    ControlFlow::Continue(())
}

/// The API server up: tasks, chat template warm-up, routes, uvicorn's startup lines. Returns
/// when traffic may start.
fn api_server_up(b: &mut Builder<'_>, l: &Launch) -> SimTime {
    let (d, p) = (b.d, b.p);
    b.set_time(API, b.now(l.eng).plus_ms(400));
    b.log(API, "supported_tasks", &[]);
    if d.model.is_some_and(|m| m.generation_sampling) {
        b.log(API, "sampling_overridden", &[]);
    }
    b.log(API, "chat_warmup", &[]);
    b.advance_ms(API, 150, 600);
    b.log(API, "chat_format", &[]);
    b.log(
        API,
        "chat_warmup_done",
        &[("ms", format!("{:.1}", b.rng.range(800, 6000) as f64 / 10.0))],
    );
    b.log(API, "starting_server", &[]);
    if p.msg("routes").is_some() {
        b.log(API, "routes", &[]);
        for (path, methods) in ROUTES {
            b.log(
                API,
                "route",
                &[("path", path.to_string()), ("methods", methods.to_string())],
            );
        }
    }
    b.stream(
        API,
        format!("INFO:     Started server process [{}]\n", l.api_pid),
    );
    b.stream(API, "INFO:     Waiting for application startup.\n".into());
    b.stream(API, "INFO:     Application startup complete.\n".into());
    b.now(API).plus_ms(500)
}

/// Serving traffic until the launch's runtime fault or its ending; returns the final status.
fn serve(b: &mut Builder<'_>, l: &Launch, ending: Ending) -> LaunchStatus {
    let d = b.d;
    let (workers, eng) = (&l.workers, l.eng);
    let serve_ms = match ending {
        Ending::Natural { serve_ms } | Ending::StopAfter { serve_ms } => serve_ms,
    };
    serve_traffic(b, serve_ms);
    match &l.failure {
        Some(Failure::Killed {
            process,
            signal,
            at: Phase::Serving,
        }) => {
            runtime_kill(b, workers, eng, process, *signal);
            LaunchStatus::Crashed
        }
        Some(Failure::Hang {
            process,
            at: Phase::Serving,
        }) => {
            runtime_hang(b, workers, eng, process);
            LaunchStatus::Hung
        }
        Some(Failure::NodeLoss { node, .. }) if d.ray => {
            ray_node_loss(b, workers, eng, (*node).max(1), &l.ray_ips);
            LaunchStatus::Crashed
        }
        Some(Failure::NodeLoss { .. }) => {
            runtime_hang(b, workers, eng, "Worker_TP1");
            LaunchStatus::Hung
        }
        _ => {
            if let Ending::StopAfter { .. } = ending {
                shutdown(b, workers, l.uniproc);
                LaunchStatus::Stopped
            } else {
                LaunchStatus::Ready
            }
        }
    }
}

/// The ranks that print a once-per-process line: every rank where the release logs on all
/// ranks, else rank 0 only. `(rank index, process)`.
fn once_per_rank<'w>(
    p: &Profile,
    workers: &'w [usize],
) -> impl Iterator<Item = (usize, usize)> + 'w {
    let n = if p.per_rank_once == RankScope::All {
        workers.len()
    } else {
        1
    };
    workers.iter().copied().enumerate().take(n)
}

const ROUTES: &[(&str, &str)] = &[
    ("/openapi.json", "HEAD, GET"),
    ("/docs", "HEAD, GET"),
    ("/docs/oauth2-redirect", "HEAD, GET"),
    ("/redoc", "HEAD, GET"),
    ("/tokenize", "POST"),
    ("/detokenize", "POST"),
    ("/metrics", "GET"),
    ("/health", "GET"),
    ("/v1/chat/completions", "POST"),
    ("/v1/responses", "POST"),
    ("/v1/completions", "POST"),
    ("/v1/models", "GET"),
    ("/load", "GET"),
    ("/version", "GET"),
    ("/ping", "GET"),
    ("/ping", "POST"),
    ("/invocations", "POST"),
];

fn uuid(rng: &mut Rng) -> String {
    let a = rng.next_u64();
    let c = rng.next_u64();
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        0x4000 | (a & 0x0fff),
        0x8000 | (c >> 52 & 0x3fff),
        c & 0xffff_ffff_ffff
    )
}

fn random_alnum(rng: &mut Rng, n: usize) -> String {
    const A: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..n).map(|_| *rng.pick(A) as char).collect()
}

/// The host name NCCL prints (from the GPU model, stable per scenario).
fn nccl_host(d: &Deployment) -> String {
    format!("{}-node-1", d.gpu.id.split('-').next().unwrap_or("gpu"))
}

/// NCCL_DEBUG=INFO output of communicator set-up: raw C++ lines, never prefixed.
fn nccl_info_noise(b: &mut Builder<'_>, workers: &[usize], d: &Deployment) {
    const LINES: &[&str] = &[
        "ENV/Plugin: Could not find: libnccl-env.so",
        "Bootstrap: Using eth0:10.0.0.2<0>",
        "cudaDriverVersion 12090",
        "NCCL version ${nccl}+cuda12.9",
        "Comm config Blocking set to 1",
        "NET/Plugin: Could not find: libnccl-net.so",
        "NET/IB : No device found.",
        "NET/Socket : Using [0]eth0:10.0.0.2<0>",
        "Using network Socket",
        "ncclCommInitRankConfig comm 0x${comm} rank ${rank} nranks ${world} cudaDev ${rank} nvmlDev ${rank} busId ${bus} commId 0x${commid} - Init START",
        "Bootstrap timings total 0.000684 (create 0.000029, send 0.000111, recv 0.000222, ring 0.000026, delay 0.000001)",
        "comm 0x${comm} rank ${rank} nRanks ${world} nNodes 1 localRanks ${world} localRank ${rank} MNNVL 0",
        "Channel 00/02 : ${ring}",
        "Channel 01/02 : ${ring}",
        "Connected all rings, use ring PXN 0 GDR 1",
        "ncclCommInitRankConfig comm 0x${comm} rank ${rank} nranks ${world} cudaDev ${rank} nvmlDev ${rank} busId ${bus} commId 0x${commid} - Init COMPLETE",
    ];
    let host = nccl_host(d);
    let commid = format!("{:016x}", b.rng.next_u64());
    let ring: Vec<String> = (0..workers.len()).map(|r| r.to_string()).collect();
    let ring = ring.join(" ");
    for line in LINES {
        for (r, &w) in workers.iter().enumerate() {
            b.advance_ms(w, 0, 30);
            let pid = b.procs[w].pid;
            let comm = format!("{:08x}", (u64::from(pid) * 2_654_435_761) & 0xffff_ffff);
            let bus = format!("{:x}", d.gpu.bus_base as usize * 0x10 + r * 0x10 + 0x10);
            let text = b.fill(
                line,
                &[
                    ("comm", comm),
                    ("rank", r.to_string()),
                    ("bus", bus),
                    ("commid", commid.clone()),
                    ("ring", ring.clone()),
                ],
            );
            let pre = b.prefixed[w];
            b.prefixed[w] = false;
            b.raw(w, format!("{host}:{pid}:{pid} [{r}] NCCL INFO {text}\n"));
            b.prefixed[w] = pre;
        }
    }
}

fn platform_line(b: &mut Builder<'_>, proc: usize) {
    if let Some(spec) = b.p.msg("platform_detected") {
        if spec.level != "DEBUG" || b.level_enabled("DEBUG") {
            b.log(proc, "platform_detected", &[]);
        }
    }
}

fn banner(b: &mut Builder<'_>) {
    let d = b.d;
    match b.p.banner {
        Banner::Logo => {
            if b.env.get("VLLM_DISABLE_LOG_LOGO").is_some_and(|v| v == "1") {
                b.log(API, "banner_plain", &[]);
            } else {
                b.log(API, "logo", &[]);
            }
        }
        Banner::VersionLine => {
            b.log(API, "api_server_version", &[]);
        }
    }
    if let Some(template) = &b.p.namespace {
        // Releases that log the whole argparse namespace.
        let vars = namespace_vars(d, &mut b.d_rng());
        let args = b.fill(template, &vars);
        b.log(API, "non_default_args", &[("args", args)]);
    } else if b.p.engine == Engine::V0 && !d.version.has(Switch::V0NamespaceArgs) {
        let args = v0_namespace(d);
        b.log(API, "v0_args", &[("args", args)]);
    } else {
        let mut args = d.args.clone();
        if !b.p.api_server_count_arg {
            args.non_default.retain(|(k, _)| k != "api_server_count");
        }
        b.log(
            API,
            "non_default_args",
            &[("args", args.non_default_repr())],
        );
    }
}

/// The fields of an argparse `Namespace(…)` that depend on the command line.
fn namespace_vars(d: &Deployment, rng: &mut Rng) -> Vec<(&'static str, String)> {
    let a = &d.args;
    let opt_str = |v: &Option<String>| v.as_ref().map_or("None".to_string(), |s| format!("'{s}'"));
    let opt_int = |v: Option<u64>| v.map_or("None".to_string(), |n| n.to_string());
    let host = if a
        .argv
        .iter()
        .any(|x| x == "--host" || x.starts_with("--host="))
    {
        format!("'{}'", a.host)
    } else {
        "None".to_string()
    };
    vec![
        ("model_tag", format!("'{}'", a.model)),
        ("host", host),
        ("port", a.port.to_string()),
        ("trust_remote_code", py_bool(a.trust_remote_code)),
        ("dtype_arg", format!("'{}'", a.dtype)),
        ("max_model_len_arg", opt_int(a.max_model_len)),
        (
            "distributed_executor_backend",
            opt_str(&a.distributed_executor_backend),
        ),
        ("pp", a.pipeline_parallel_size.max(1).to_string()),
        ("tp", a.tensor_parallel_size.max(1).to_string()),
        ("dp", a.data_parallel_size.max(1).to_string()),
        ("enable_expert_parallel", py_bool(a.enable_expert_parallel)),
        (
            "gpu_memory_utilization",
            format!("{}", a.gpu_memory_utilization),
        ),
        ("kv_cache_dtype_arg", format!("'{}'", a.kv_cache_dtype)),
        ("quantization_arg", opt_str(&a.quantization)),
        ("enforce_eager", py_bool(a.enforce_eager)),
        ("served_model_name", opt_str(&a.served_model_name)),
        (
            "max_num_batched_tokens_arg",
            opt_int(a.max_num_batched_tokens),
        ),
        ("max_num_seqs_arg", opt_int(a.max_num_seqs)),
        (
            "address",
            format!("0x7f{:010x}", rng.next_u64() & 0xff_ffff_fff0),
        ),
    ]
}

/// `set_ulimit()`: a hard limit of open files below 65535 cannot be raised.
fn ulimit_warning(b: &mut Builder<'_>) {
    if let Some(limit) = b.d.host.ulimit_nofile.filter(|&l| l < 65_535) {
        b.log(API, "ulimit", &[("limit", limit.to_string())]);
    }
}

/// What reading the checkpoint's dtype prints: transformers' deprecation of `torch_dtype` (read by
/// older releases), then vLLM's downcast of a float32 checkpoint.
fn dtype_lines(b: &mut Builder<'_>) {
    let d = b.d;
    let deprecated = d.host.transformers.is_some_and(|v| v >= (4, 56));
    if b.p.reads_torch_dtype && deprecated && d.model.is_some() {
        let tag = if d.host.transformers.is_some_and(|(major, _)| major >= 5) {
            "[transformers] "
        } else {
            ""
        };
        b.stream(
            API,
            format!("{tag}`torch_dtype` is deprecated! Use `dtype` instead!\n"),
        );
    }
    // `_get_and_verify_dtype` (vllm/config/model.py): to float32 is an upcast, from float32
    // a downcast (INFO), between float16 and bfloat16 a cast (WARNING).
    if let Some(from) = d.config_dtype.as_deref().filter(|&c| c != d.dtype) {
        let (id, extra) = if d.dtype == "float32" {
            ("upcasting", vec![("from", from.to_string())])
        } else if from == "float32" {
            ("downcasting", vec![("dtype", d.dtype.clone())])
        } else {
            (
                "casting",
                vec![("from", from.to_string()), ("dtype", d.dtype.clone())],
            )
        };
        b.log(API, id, &extra);
    }
}

/// `This model supports multiple tasks: {…}`: a Python set, printed in hash order.
fn task_resolution(b: &mut Builder<'_>) {
    let mut tasks = vec!["'generate'", "'embed'", "'classify'", "'score'", "'reward'"];
    let mut rng = b.d_rng();
    rng.shuffle(&mut tasks);
    b.log(API, "task_resolution", &[("tasks", tasks.join(", "))]);
}

/// An exception chain of the profile (`[[chain.NAME]]`), placeholders filled.
fn chain_traceback(b: &Builder<'_>, name: &str, extra: &[(&str, String)]) -> Traceback {
    let p = b.p;
    let links = p
        .chain
        .get(name)
        .unwrap_or_else(|| panic!("profile {} lacks chain {name:?}", p.version));
    let mut tb: Option<Traceback> = None;
    for link in links {
        let mut t = Traceback::new(b.fill(p.error(&link.error), extra));
        for st in &link.stack {
            t = t.with(p, st);
        }
        tb = Some(match tb {
            None => t,
            Some(prev) => t.caused_by(prev, link.cause.as_deref() == Some("direct")),
        });
    }
    tb.unwrap_or_default()
}

/// The model path does not exist: huggingface_hub rejects it as a repo id.
fn model_path_missing(b: &mut Builder<'_>) {
    let model = b.d.args.model.clone();
    if b.p.chain.contains_key("model_path_missing") {
        let tb = chain_traceback(b, "model_path_missing", &[("model", model)]);
        b.stderr_traceback(API, None, &tb, true);
        return;
    }
    let exc = format!(
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '{model}'. Use `repo_type` argument if needed."
    );
    api_config_error(b, &exc, &["api_model_config_hf"]);
}

/// A checkpoint with custom code and no `--trust-remote-code`. transformers ≥ 4.56 words it
/// "contains custom code which must be executed", which vLLM no longer recognises: the
/// `ValueError` reaches pydantic as is.
fn trust_remote_code(b: &mut Builder<'_>) {
    let p = b.p;
    let model = b.d.args.model.clone();
    let new_wording = b.d.host.transformers.is_some_and(|v| v >= (4, 56));
    if new_wording && p.error.contains_key("trust_remote_code_custom") {
        let local = model.starts_with('/');
        let at = if local {
            model.clone()
        } else {
            format!("https://hf.co/{model}")
        };
        let exc = b.fill(
            p.error("trust_remote_code_custom"),
            &[("model", model.clone()), ("at", at)],
        );
        let stack = if p.stack.contains_key("api_trust_remote_code") {
            "api_trust_remote_code"
        } else {
            "api_config"
        };
        let retry = config_parse_retries(b, &exc);
        api_config_error(b, &exc, &[stack]);
        if let Some(idx) = retry {
            // The first record of the failure states it.
            b.remark_root(idx);
        }
        return;
    }
    let exc = b.fill(p.error("trust_remote_code"), &[]);
    api_config_error(b, &exc, &["api_model_config_hf"]);
}

fn v0_namespace(d: &Deployment) -> String {
    format!(
        "Namespace(subparser='serve', model_tag='{m}', config='', host=None, port={port}, uvicorn_log_level='info', allow_credentials=False, allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], api_key=None, lora_modules=None, prompt_adapters=None, chat_template=None, response_role='assistant', ssl_keyfile=None, ssl_certfile=None, ssl_ca_certs=None, ssl_cert_reqs=0, root_path=None, middleware=[], return_tokens_as_token_ids=False, disable_frontend_multiprocessing=False, enable_auto_tool_choice=False, tool_call_parser=None, model='{m}', tokenizer=None, skip_tokenizer_init=False, revision=None, code_revision=None, tokenizer_revision=None, tokenizer_mode='auto', trust_remote_code={trc}, download_dir=None, load_format='auto', dtype='auto', kv_cache_dtype='{kv}', max_model_len={mml}, distributed_executor_backend=None, pipeline_parallel_size={pp}, tensor_parallel_size={tp}, gpu_memory_utilization={util}, enforce_eager={ee}, dispatch_function=<function serve at 0x7f2c3d2a5ea0>)",
        m = d.args.model,
        port = d.args.port,
        trc = py_bool(d.args.trust_remote_code),
        kv = d.args.kv_cache_dtype,
        mml = d.args.max_model_len.map_or("None".to_string(), |v| v.to_string()),
        pp = d.pp,
        tp = d.tp,
        util = d.args.gpu_memory_utilization,
        ee = py_bool(d.args.enforce_eager),
    )
}

fn engine_config(b: &Builder<'_>, d: &Deployment) -> String {
    b.fill(
        &b.p.engine_config,
        &[
            ("trust_remote_code", py_bool(d.args.trust_remote_code)),
            ("pp", d.pp.to_string()),
            ("dp", d.args.data_parallel_size.to_string()),
            (
                "quantization",
                d.quantization.clone().unwrap_or_else(|| "None".into()),
            ),
            ("enforce_eager", py_bool(d.args.enforce_eager)),
            ("kv_cache_dtype", d.kv_cache_dtype.clone()),
            ("dtype", d.dtype.clone()),
            ("max_model_len", d.max_model_len.to_string()),
        ],
    )
}

fn cli_error(b: &mut Builder<'_>, problem: &CliProblem) {
    let d = b.d;
    let (prog, usage) = match d.args.entrypoint {
        vllm_argv::Entrypoint::Serve => {
            if d.version.has(Switch::ServeUsageOptionalModel) {
                (
                    "vllm serve",
                    "usage: vllm serve [model_tag] [options]".to_string(),
                )
            } else {
                (
                    "vllm serve",
                    "usage: vllm serve <model_tag> [options]".to_string(),
                )
            }
        }
        vllm_argv::Entrypoint::ApiServerModule => (
            "api_server.py",
            "usage: api_server.py [-h] [--host HOST] [--port PORT] [options]".to_string(),
        ),
    };
    let (prog, usage, msg) = match problem {
        CliProblem::Unrecognized(args) => (
            if d.args.entrypoint == vllm_argv::Entrypoint::Serve {
                "vllm"
            } else {
                prog
            },
            if d.args.entrypoint == vllm_argv::Entrypoint::Serve {
                "usage: vllm [-h] [-v]\n            {chat,complete,serve,bench,collect-env,run-batch} ...".to_string()
            } else {
                usage
            },
            format!("unrecognized arguments: {}", args.join(" ")),
        ),
        CliProblem::InvalidValue { flag, kind, value } => (
            prog,
            usage,
            format!("argument {flag}: invalid {kind} value: '{value}'"),
        ),
        CliProblem::InvalidChoice {
            flag,
            value,
            choices,
        } => {
            // The release's own choices for `--kv-cache-dtype`.
            let choices: Vec<String> = if flag == "--kv-cache-dtype" {
                b.p.kv_cache_dtypes.clone()
            } else {
                choices.iter().map(|c| c.to_string()).collect()
            };
            (
                prog,
                usage,
                format!(
                    "argument {flag}: invalid choice: '{value}' (choose from {})",
                    choices
                        .iter()
                        .map(|c| format!("'{c}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        }
        CliProblem::MissingValue { flag } => (
            prog,
            usage,
            format!("argument {flag}: expected one argument"),
        ),
    };
    // argparse writes to stderr before vLLM decorates anything: no prefix.
    b.prefixed[API] = false;
    let text = format!("{usage}\n{prog}: error: {msg}\n");
    let mark = text.lines().count() - 1;
    let idx = b.stream(API, text);
    b.mark_root(idx, mark);
}

/// `get_config` under `with_retry` (0.27+): a parse error is logged with "retrying 1 of 2", tried
/// again two seconds later, logged once more and raised. `exc` is the pydantic error the config
/// raises; the records carry the validator's message.
fn config_parse_retries(b: &mut Builder<'_>, exc: &str) -> Option<usize> {
    b.p.msg("config_parse_retry")?;
    let cause = exc
        .split_once("Value error, ")
        .map_or(exc, |(_, m)| m.rsplit_once(" [type=").map_or(m, |(m, _)| m))
        .to_string();
    b.advance_ms(API, 30, 200);
    let first = b.log(API, "config_parse_retry", &[("cause", cause.clone())]);
    b.advance_ms(API, 2000, 2100);
    b.log(API, "config_parse_failed", &[("cause", cause)]);
    first
}

/// A configuration error raised in the API server process (uncaught, printed to stderr).
fn api_config_error(b: &mut Builder<'_>, exc: &str, stacks: &[&str]) {
    let p = b.p;
    let legacy_v0 = p.engine == Engine::V0 && !b.d.version.has(Switch::V0NamespaceArgs);
    let tb = if legacy_v0 {
        Traceback::new(exc.to_string()).with(p, "v0_api")
    } else {
        let mut t = Traceback::new(exc.to_string())
            .with(p, "api_main")
            .with(p, "api_engine_client");
        for stack in stacks {
            if p.stack.contains_key(*stack) {
                t = t.with(p, stack);
            }
        }
        t
    };
    b.stderr_traceback(API, None, &tb, true);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WorkerStage {
    InitDevice,
    Load,
}

/// Every rank fails alike (they run the same code on the same kind of GPU): each logs
/// `WorkerProc failed to start.` with its traceback; the engine core and the API server follow.
fn worker_failure(
    b: &mut Builder<'_>,
    workers: &[usize],
    eng: usize,
    api_pid: u32,
    make_tb: impl Fn(&Builder<'_>, u32) -> Traceback,
    stage: WorkerStage,
) {
    let p = b.p;
    let uniproc = workers.len() == 1 && workers[0] == eng;
    if uniproc {
        let tb = make_tb(b, 0);
        let mut full = Traceback::new(tb.exception.clone()).with(p, "engine_core_init");
        full.frames
            .extend(p.stack("engine_core_executor")[..2].iter().cloned());
        let uni = match stage {
            WorkerStage::InitDevice => "uni_init_device",
            WorkerStage::Load => "uni_load_model",
        };
        if p.stack.contains_key(uni) {
            full = full.with(p, uni);
        }
        full.frames.extend(tb.frames.iter().cloned());
        engine_failure(b, workers, eng, api_pid, full);
        return;
    }
    // The ranks hit the error within milliseconds of one another, in no fixed order.
    let mut order: Vec<usize> = (0..workers.len()).collect();
    b.rng.shuffle(&mut order);
    let t0 = workers
        .iter()
        .map(|&w| b.now(w))
        .max()
        .unwrap_or_default()
        .plus_ms(b.rng.range(500, 3000));
    let mut first: Option<(SimTime, usize)> = None;
    for (k, &r) in order.iter().enumerate() {
        let w = workers[r];
        let t = t0.plus_us(k as u64 * b.rng.range(50, 900));
        b.set_time(w, t);
        let mp = match stage {
            WorkerStage::InitDevice => "mp_init_device",
            WorkerStage::Load => "mp_load_model",
        };
        let tb = make_tb(b, r as u32)
            .with_prefix_frames(p, mp)
            .with_prefix_frames(p, "worker_main");
        let idx = b.log_exception(w, "worker_failed_start", &tb, false);
        if let Some(idx) = idx {
            let mark = match &b.events[idx].body {
                Body::Log { text, .. } => exception_line_index(text, &tb.exception),
                _ => 0,
            };
            b.events[idx].mark = Some(mark);
            if first.is_none_or(|(ft, _)| t < ft) {
                first = Some((t, idx));
            }
        }
    }
    // Only the first is the root; the others are the same cause on other ranks.
    if let Some((_, idx)) = first {
        b.root = Some(idx);
        for (i, ev) in b.events.iter_mut().enumerate() {
            if i != idx
                && matches!(&ev.body, Body::Log { text, .. } if text.starts_with("WorkerProc failed to start."))
            {
                ev.mark = None;
            }
        }
    }
    // torch warns on exit for ranks whose process group exists.
    // Ranks still busy when the engine core closes the death pipes say so.
    for &w in workers {
        if b.rng.chance(30) {
            let t = b.now(w);
            b.set_time(w, t.plus_us(b.rng.range(100, 3000)));
            b.log(w, "parent_exited", &[]);
        }
    }
    let t_exit = t0.plus_ms(b.rng.range(300, 1200));
    let mut exit_order: Vec<usize> = (0..workers.len()).collect();
    b.rng.shuffle(&mut exit_order);
    for (k, &r) in exit_order.iter().enumerate() {
        let w = workers[r];
        b.set_time(w, t_exit.plus_us(k as u64 * 9_731));
        let stamp = b.now(w).c10_stamp();
        b.raw(
            w,
            format!(
                "[rank{r}]:[W{stamp} ProcessGroupNCCL.cpp:{}] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())\n",
                p.c10_pg_line
            ),
        );
    }
    b.set_time(eng, t_exit.plus_ms(b.rng.range(50, 300)));
    let tb = Traceback::new(p.error("worker_init_failed").to_string())
        .with(p, "engine_core_init")
        .with(p, "engine_core_executor");
    engine_failure_with(b, eng, api_pid, tb, false);
}

trait TbExt {
    fn with_prefix_frames(self, p: &Profile, stack: &str) -> Traceback;
}

impl TbExt for Traceback {
    fn with_prefix_frames(mut self, p: &Profile, stack: &str) -> Traceback {
        let mut frames = p.stack(stack).to_vec();
        frames.append(&mut self.frames);
        self.frames = frames;
        self
    }
}

/// The engine core's own failure (KV cache sizing, uniproc worker errors): it is the root.
fn engine_failure(b: &mut Builder<'_>, workers: &[usize], eng: usize, api_pid: u32, tb: Traceback) {
    // Worker processes learn of it through the death pipe.
    let uniproc = workers.len() == 1 && workers[0] == eng;
    engine_failure_with(b, eng, api_pid, tb, true);
    if !uniproc {
        let t = b.now(eng);
        for &w in workers {
            b.set_time(w, t.plus_us(b.rng.range(100, 5000)));
            b.log(w, "parent_exited", &[]);
        }
    }
}

fn engine_failure_with(b: &mut Builder<'_>, eng: usize, api_pid: u32, tb: Traceback, root: bool) {
    engine_failure_seen(b, eng, api_pid, tb, root, None);
}

/// The engine core fails to start and the API server gives up waiting for it. `alive`: whether
/// the engine process is still running when the API server notices (it is still stopping its
/// workers): the process manager then sends it SIGTERM, where the release logs that, and no
/// core process has an exit code yet; `None`: either, as timing falls.
fn engine_failure_seen(
    b: &mut Builder<'_>,
    eng: usize,
    api_pid: u32,
    tb: Traceback,
    root: bool,
    alive: Option<bool>,
) {
    let p = b.p;
    b.log_exception(eng, "engine_failed_start", &tb, root);
    // `raise e` leaves the process target: CPython prints `Process NAME:` and the traceback.
    let name = b.procs[eng].name.clone().unwrap_or_default();
    let mut boot = Traceback::new(tb.exception.clone()).with(p, "engine_bootstrap");
    boot.frames.extend(tb.frames.iter().cloned());
    b.stderr_traceback(eng, Some(&format!("Process {name}:")), &boot, false);
    // The API server's wait for the handshake sees the sentinel.
    b.set_time(API, b.now(eng).plus_ms(b.rng.range(20, 400)));
    // Real logs print `Failed core proc(s): {}` about fifteen times as often as an exit code
    // (106 of 113 in scenarios/real): the engine is usually still exiting.
    let alive = alive.unwrap_or_else(|| b.rng.chance(94));
    if alive {
        b.log(API, "process_manager_sigterm", &[("name", name.clone())]);
    }
    let failed = if alive {
        "{}".to_string()
    } else {
        format!("{{'{name}': 1}}")
    };
    let exc = b.fill(p.error("engine_init_failed"), &[("failed", failed)]);
    let api = Traceback::new(exc)
        .with(p, "api_main")
        .with(p, "api_engine_client")
        .with(p, "api_async_llm");
    b.stderr_traceback(API, None, &api, false);
    let _ = api_pid;
    if b.rng.chance(40) {
        let tracker_pid = b.procs[API].pid + 1 + b.rng.range(1, 40) as u32;
        let t = b.now(API).plus_ms(b.rng.range(50, 900));
        let tr = b.spawn(None, "tracker".into(), tracker_pid, t, false);
        b.raw(
            tr,
            format!(
                "{}/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: There appear to be 1 leaked shared_memory objects to clean up at shutdown\n  warnings.warn('resource_tracker: There appear to be %d '\n",
                p.stdlib
            ),
        );
    }
}

/// A worker fails inside an RPC from the engine core (CUDA graph capture): the worker logs
/// `WorkerProc hit an exception.`; the engine core fails with `Worker failed with error '…'`.
fn rpc_failure(b: &mut Builder<'_>, workers: &[usize], eng: usize, api_pid: u32, err: &str) {
    let p = b.p;
    let uniproc = workers.len() == 1 && workers[0] == eng;
    if uniproc || !p.stack.contains_key("mp_rpc") {
        let mut tb = Traceback::new(err.to_string()).with(p, "engine_core_init");
        if p.stack.contains_key("mp_rpc") {
            tb = tb.with(p, "mp_rpc");
        }
        engine_failure(b, workers, eng, api_pid, tb);
        return;
    }
    let w = workers[0];
    let tb = Traceback::new(err.to_string()).with(p, "mp_rpc");
    b.log_exception(w, "worker_hit_exception", &tb, true);
    b.set_time(eng, b.now(w).plus_ms(b.rng.range(5, 80)));
    let short = exception_message(err);
    let exc = b.fill(p.error("worker_rpc_failed"), &[("error", short)]);
    let tb = Traceback::new(exc)
        .with(p, "engine_core_init")
        .with(p, "engine_core_rpc");
    engine_failure_with(b, eng, api_pid, tb, false);
    let t = b.now(eng);
    for &w in workers {
        b.set_time(w, t.plus_us(b.rng.range(100, 5000)));
        b.log(w, "parent_exited", &[]);
    }
}

fn selector_failure(
    b: &mut Builder<'_>,
    workers: &[usize],
    eng: usize,
    api_pid: u32,
    sel: &Selection,
) {
    let p = b.p;
    let d = b.d;
    let Some(model) = d.model else { return };
    let shape = model.attention();
    let model_stack = if model.id.starts_with("kimi") {
        "model_kimi"
    } else if shape.mla {
        "model_deepseek"
    } else {
        "model_llama"
    };
    let (exc, tail) = match sel {
        Selection::NoValid { reasons } => (
            b.fill(
                p.error("no_valid_backend"),
                &[
                    ("head_size", shape.head_size.to_string()),
                    ("dtype", d.dtype.clone()),
                    ("kv_cache_dtype", d.kv_cache_dtype.clone()),
                    ("use_mla", py_bool(shape.mla)),
                    ("has_sink", py_bool(model.sinks)),
                    ("use_sparse", py_bool(shape.sparse)),
                    ("has_sliding_window", py_bool(false)),
                    ("reasons", selector::reasons_repr(reasons)),
                ],
            ),
            "selector_raise_none",
        ),
        Selection::InvalidSelected { backend, reasons } => (
            b.fill(
                p.error("invalid_selected_backend"),
                &[
                    ("backend", backend.clone()),
                    (
                        "reasons",
                        reasons
                            .iter()
                            .map(|r| format!("'{r}'"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                ],
            ),
            "selector_raise_selected",
        ),
        Selection::NotImplemented { error_id } => {
            (p.error(error_id).to_string(), "triton_mla_raise")
        }
        Selection::Chosen { .. } => return,
    };
    let uses_mla_selector = shape.mla && p.stack.contains_key("mla_selector");
    worker_failure(
        b,
        workers,
        eng,
        api_pid,
        |b, _| {
            let mut tb = Traceback::new(exc.clone()).with(b.p, "worker_load_model");
            if b.p.stack.contains_key(model_stack) && model_stack != "model_llama" {
                tb = tb.with(b.p, model_stack);
            }
            if uses_mla_selector {
                tb = tb.with(b.p, "mla_selector");
            }
            if b.p.stack.contains_key(tail) {
                tb = tb.with(b.p, tail);
            }
            tb
        },
        WorkerStage::Load,
    );
}

fn announce_backend(b: &mut Builder<'_>, workers: &[usize], sel: &Selection) {
    let Selection::Chosen {
        backend, announce, ..
    } = sel
    else {
        return;
    };
    let version = b.d.version;
    for (i, &w) in workers.to_vec().iter().enumerate() {
        b.advance_ms(w, 100, 1200);
        match announce {
            Announce::Auto { candidates } => {
                if i == 0 || b.p.per_rank_once == RankScope::All {
                    b.log(
                        w,
                        "backend_auto",
                        &[
                            ("backend", backend.clone()),
                            ("candidates", selector::candidates_repr(version, candidates)),
                        ],
                    );
                }
            }
            Announce::Forced => {
                b.log(w, "backend_forced", &[("backend", backend.clone())]);
            }
            Announce::V1Title { title, line } => {
                b.log(
                    w,
                    "backend_v1",
                    &[
                        ("backend_title", title.to_string()),
                        ("backend_line", line.to_string()),
                    ],
                );
            }
        }
    }
}

/// tqdm's weight-loading bar (`_BAR_FORMAT` ends with `\n`, so every refresh is its own line).
fn loading_bar(b: &mut Builder<'_>, w: usize, shards: u32, secs: f64, stop_at: Option<u32>) {
    let per = secs / f64::from(shards.max(1));
    let last = stop_at.unwrap_or(shards);
    let mut steps = vec![0u32, 1];
    for q in [shards / 4, shards / 2, shards * 3 / 4, shards] {
        if q > 1 && !steps.contains(&q) {
            steps.push(q);
        }
    }
    steps.retain(|&s| s <= last);
    if stop_at.is_some() && !steps.contains(&last) {
        steps.push(last);
    }
    let start = b.now(w);
    for s in steps {
        let elapsed = per * f64::from(s);
        b.set_time(w, start.plus_ms((elapsed * 1000.0) as u64));
        let pct = (f64::from(s) * 100.0 / f64::from(shards.max(1))).floor();
        let rate = if s == 0 {
            "?it/s".to_string()
        } else {
            format!("{per:5.2}s/it")
        };
        let remaining = if s == 0 {
            "?".to_string()
        } else {
            mmss(per * f64::from(shards - s))
        };
        b.stream(
            w,
            format!(
                "\rLoading safetensors checkpoint shards: {pct:3.0}% Completed | {s}/{shards} [{}<{remaining}, {rate}]\n",
                mmss(elapsed)
            ),
        );
    }
    if stop_at.is_none() {
        b.stream(w, "\n".into());
    }
}

fn mmss(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    format!("{:02}:{:02}", s / 60, s % 60)
}

/// tqdm's default bar: one physical line of `\r`-separated refreshes.
fn graph_bar(b: &mut Builder<'_>, w: usize, desc: &str, stop_at: Option<u32>) {
    let total = 51u32;
    let mut line = String::new();
    for &(n, e, r) in &[
        (0u32, "00:00<?", "?it/s"),
        (1, "00:00<00:31", "  1.61it/s"),
        (26, "00:03<00:03", "  7.42it/s"),
        (51, "00:06<00:00", "  8.17it/s"),
    ] {
        if stop_at.is_some_and(|s| n > s) {
            break;
        }
        let pct = n * 100 / total;
        let filled = (n * 10 / total) as usize;
        let bar: String = "█".repeat(filled) + &" ".repeat(10 - filled);
        line.push_str(&format!(
            "\rCapturing CUDA graphs ({desc}): {pct:3}%|{bar}| {n}/{total} [{e}, {r}]"
        ));
    }
    if stop_at.is_none() {
        line.push('\n');
    }
    b.stream(w, line);
    b.advance_ms(w, 3000, 9000);
}

fn serve_traffic(b: &mut Builder<'_>, serve_ms: u64) {
    let end = b.now(API).plus_ms(serve_ms);
    let mut next_stats = b.now(API).plus_ms(10_000);
    while b.now(API) < end {
        b.advance_ms(API, 50, 1500);
        let port = b.rng.range(32_768, 60_999);
        let path = *b.rng.pick(&[
            "/v1/chat/completions",
            "/v1/completions",
            "/v1/chat/completions",
        ]);
        b.stream(
            API,
            format!(
                "INFO:     10.0.{}.{}:{port} - \"POST {path} HTTP/1.1\" 200 OK\n",
                b.rng.range(0, 3),
                b.rng.range(2, 250)
            ),
        );
        if b.now(API) >= next_stats {
            next_stats = b.now(API).plus_ms(10_000);
            let gen = b.rng.range(200, 9000) as f64 / 10.0;
            let kv = b.rng.range(1, 600) as f64 / 10.0;
            b.log(
                API,
                "engine_stats",
                &[
                    ("prompt", format!("{:.1}", gen * 1.7)),
                    ("gen", format!("{gen:.1}")),
                    ("running", b.rng.range(1, 40).to_string()),
                    ("kv", format!("{kv:.1}")),
                    ("hit", format!("{:.1}", b.rng.range(0, 700) as f64 / 10.0)),
                ],
            );
        }
    }
}

fn shutdown(b: &mut Builder<'_>, workers: &[usize], uniproc: bool) {
    b.advance_ms(API, 1000, 5000);
    b.log(API, "shutting_down_http", &[]);
    uvicorn_shutdown(b);
    if !uniproc {
        let t = b.now(API);
        for &w in workers {
            b.set_time(w, t.plus_us(b.rng.range(1000, 90_000)));
            b.log(w, "parent_exited", &[]);
            b.log(w, "worker_shutting_down", &[]);
        }
    }
}

/// The Ray driver (the engine core) joins the cluster and reserves the GPUs; returns the node
/// IPs (head first).
fn ray_startup(b: &mut Builder<'_>, eng: usize, rng: &mut Rng) -> Vec<String> {
    let d = b.d;
    let net = (rng.range(0, 255), rng.range(0, 255));
    let ips: Vec<String> = (0..d.nodes)
        .map(|k| format!("10.{}.{}.{}", net.0, net.1, 2 + k))
        .collect();
    b.node_ips = ips.clone();
    b.log(eng, "async_disabled", &[]);
    let local = d.visible_gpus;
    if d.world > local {
        b.log(
            eng,
            "ray_tp_exceeds",
            &[("world", d.world.to_string()), ("local", local.to_string())],
        );
    }
    b.advance_ms(eng, 50, 400);
    if d.ray_fallback && d.nodes <= 1 {
        // `ray.init()` with no cluster to join starts one (Ray's line as a real 0.8.5 log shows
        // it: batch-08/502).
        b.advance_ms(eng, 1500, 4000);
        ray_driver_line(b, eng, 1888, "Started a local Ray instance.");
    } else {
        ray_driver_line(
            b,
            eng,
            1771,
            &format!(
                "Connecting to existing Ray cluster at address: {}:6379...",
                ips[0]
            ),
        );
        b.advance_ms(eng, 300, 1500);
        ray_driver_line(b, eng, 1951, "Connected to Ray cluster.");
    }
    b.log(eng, "ray_new_pg", &[]);
    if matches!(d.failure, Some(Failure::RayPlacement { .. })) {
        return ips;
    }
    if d.tp > local {
        for _ in 0..d.nodes {
            let node_id = hex(rng, 56);
            b.log(
                eng,
                "ray_tp_bigger",
                &[
                    ("tp", d.tp.to_string()),
                    ("local", local.to_string()),
                    ("node_id", node_id),
                ],
            );
        }
    }
    ips
}

/// uvicorn's lines when the server ends (a stop, or the launcher's watchdog after the engine died).
fn uvicorn_shutdown(b: &mut Builder<'_>) {
    for line in [
        "INFO:     Shutting down",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
    ] {
        b.stream(API, format!("{line}\n"));
    }
}

/// A line of Ray's own logger in the driver (`ray.init`): its timestamp, a tab, `worker.py:LINE`.
fn ray_driver_line(b: &mut Builder<'_>, proc: usize, line: u32, text: &str) {
    let t = b.now(proc);
    b.stream(
        proc,
        format!("{}\tINFO worker.py:{line} -- {text}\n", t.ray_stamp()),
    );
}

fn hex(rng: &mut Rng, n: usize) -> String {
    let mut s = String::with_capacity(n + 16);
    while s.len() < n {
        s.push_str(&format!("{:016x}", rng.next_u64()));
    }
    s.truncate(n);
    s
}

/// A node of the Ray cluster goes away while serving (power loss, cable cut): nothing for about
/// a minute, then Ray marks the node dead, the compiled graph is torn down, the engine core dies
/// with the lost actor's `ActorDiedError`, and the API server with `EngineDeadError`.
fn ray_node_loss(b: &mut Builder<'_>, workers: &[usize], eng: usize, node: u32, ips: &[String]) {
    let p = b.p;
    let d = b.d;
    let node = node.min(d.nodes.saturating_sub(1)).max(1);
    let ip = ips.get(node as usize).cloned().unwrap_or_default();
    let t_loss = b.now(API).plus_ms(b.rng.range(100, 3000));
    let lost: Vec<usize> = workers
        .iter()
        .enumerate()
        .filter(|(r, _)| d.node_of(*r as u32) == node)
        .map(|(_, &w)| w)
        .collect();
    for &w in &lost {
        b.die(w, t_loss, Signal::Kill);
    }
    b.node_loss = Some((node, t_loss));
    let mut rng = b.d_rng();
    let node_id = hex(&mut rng, 56);
    b.set_time(eng, t_loss.plus_ms(b.rng.range(55_000, 65_000)));
    let raylet = if b.ray_color() {
        "\x1b[33m(raylet)\x1b[0m"
    } else {
        "(raylet)"
    };
    let idx = b.stream(
        eng,
        format!(
            "{raylet} The node with node id: {node_id} and address: {ip} and node name: {ip} has been marked dead because the detector has missed too many heartbeats from it. This can happen when a \t(1) raylet crashes unexpectedly (OOM, etc.) \n\t(2) raylet has lagging heartbeats due to slow network or busy workload.\n"
        ),
    );
    b.mark_root(idx, 0);
    b.advance_ms(eng, 1, 20);
    let t = b.now(eng);
    b.stream(
        eng,
        format!(
            "{}\tINFO compiled_dag_node.py:2171 -- Tearing down compiled DAG\n",
            t.ray_stamp()
        ),
    );
    for _ in workers {
        let actor = hex(&mut rng, 32);
        let t = b.now(eng);
        b.stream(
            eng,
            format!(
                "{}\tINFO compiled_dag_node.py:2176 -- Cancelling compiled worker on actor: Actor(RayWorkerWrapper, {actor})\n",
                t.ray_stamp()
            ),
        );
    }
    let first_lost = lost.first().copied().unwrap_or(eng);
    let exc = b.fill(
        p.error("ray_actor_died"),
        &[
            ("actor_id", hex(&mut rng, 32)),
            ("pid", b.procs[first_lost].pid.to_string()),
            ("namespace", uuid(&mut rng)),
            ("ip", ip.clone()),
            ("node_id", node_id),
        ],
    );
    b.advance_ms(eng, 5, 50);
    let tb = Traceback::new(exc).with(p, "engine_ray_step");
    b.log_exception(eng, "engine_fatal", &tb, false);
    b.log(eng, "ray_shutdown", &[]);
    b.set_time(API, b.now(eng));
    api_engine_dead(b);
}

fn rank_of(b: &Builder<'_>, workers: &[usize], process: &str) -> usize {
    // `Worker_TP3`, `VllmWorker rank=3`, `3`: the last number names the rank.
    let digits: String = process
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let r: usize = digits.parse().unwrap_or(1);
    let _ = b;
    r.min(workers.len().saturating_sub(1))
}

/// A worker dies from a signal while serving: the executor's monitor notices at once; the other
/// ranks, blocked in a collective with it, then hit the NCCL watchdog.
fn runtime_kill(b: &mut Builder<'_>, workers: &[usize], eng: usize, process: &str, signal: Signal) {
    let t_kill = b.now(API).plus_ms(b.rng.range(100, 3000));
    if names_engine_core(process) {
        // The engine core itself: the API server's monitor of its engine processes notices.
        b.die(eng, t_kill, signal);
        b.set_time(API, t_kill.plus_ms(b.rng.range(5, 60)));
        if let Some(idx) = b.log(API, "engine_core_died", &[]) {
            b.mark_root(idx, 0);
        }
    } else {
        let r = rank_of(b, workers, process);
        b.die(workers[r], t_kill, signal);
        b.set_time(eng, t_kill.plus_ms(b.rng.range(5, 60)));
        let idx = b.log(
            eng,
            "worker_died",
            &[
                ("rank", r.to_string()),
                ("exitcode", (-signal.number()).to_string()),
            ],
        );
        if let Some(idx) = idx {
            b.mark_root(idx, 0);
        }
        watchdog_timeouts(b, workers, r, t_kill);
        b.set_time(API, b.now(eng).plus_ms(b.rng.range(30, 300)));
        b.log(API, "engine_core_died", &[]);
    }
    api_engine_dead(b);
}

/// `Fault::Kill`'s process names the engine core (`EngineCore`, `EngineCore_DP0`), not a rank.
pub fn names_engine_core(process: &str) -> bool {
    process.starts_with("EngineCore")
}

/// The API server after its engine died: the output handler's next read raises EngineDeadError
/// (`AsyncLLM output_handler failed.`), and the launcher's watchdog (every 5 s, vllm/entrypoints/
/// launcher.py) sees the engine errored and ends uvicorn.
fn api_engine_dead(b: &mut Builder<'_>) {
    let p = b.p;
    if p.msg("output_handler_failed").is_some() {
        b.advance_ms(API, 5, 200);
        let api = Traceback::new(p.error("engine_dead").to_string()).with(p, "api_output_handler");
        b.log_exception(API, "output_handler_failed", &api, false);
    }
    b.advance_ms(API, 200, 5000);
    uvicorn_shutdown(b);
}

fn watchdog_timeouts(
    b: &mut Builder<'_>,
    workers: &[usize],
    dead: usize,
    t: SimTime,
) -> Option<usize> {
    let p = b.p;
    let timeout_ms = 600_000u64;
    let mut first = None;
    let seq = b.rng.range(10_000, 900_000);
    for (r, &w) in workers.iter().enumerate() {
        if r == dead {
            continue;
        }
        b.set_time(w, t.plus_ms(timeout_ms + b.rng.range(10, 120)));
        let ran = timeout_ms + b.rng.range(20, 110);
        let stamp = b.now(w).c10_stamp();
        let idx = b.raw(
            w,
            format!(
                "[rank{r}]:[E{stamp} ProcessGroupNCCL.cpp:{}] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=14680064, NumelOut=14680064, Timeout(ms)={timeout_ms}) ran for {ran} milliseconds before timing out.\n",
                p.c10_watchdog_line
            ),
        );
        if first.is_none() {
            first = Some(idx);
        }
    }
    first
}

/// One rank stops making progress while serving: the others time out in the collective.
fn runtime_hang(b: &mut Builder<'_>, workers: &[usize], eng: usize, process: &str) {
    let r = rank_of(b, workers, process);
    let t = b.now(API).plus_ms(b.rng.range(100, 3000));
    let _ = eng;
    b.hang(workers[r], t);
    // The first watchdog line is the first evidence: the hang itself writes nothing.
    let mut first_idx = None;
    let mut first_t = None;
    let p = b.p;
    let timeout_ms = 600_000u64;
    let seq = b.rng.range(10_000, 900_000);
    for (k, &w) in workers.iter().enumerate() {
        if k == r {
            continue;
        }
        b.set_time(
            w,
            t.plus_ms(timeout_ms + b.rng.range(10, 120))
                .plus_us(k as u64),
        );
        let ran = timeout_ms + b.rng.range(20, 110);
        let stamp = b.now(w).c10_stamp();
        let tw = b.now(w);
        let idx = b.raw(
            w,
            format!(
                "[rank{k}]:[E{stamp} ProcessGroupNCCL.cpp:{}] [Rank {k}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=14680064, NumelOut=14680064, Timeout(ms)={timeout_ms}) ran for {ran} milliseconds before timing out.\n",
                p.c10_watchdog_line
            ),
        );
        if first_t.is_none_or(|ft| tw < ft) {
            first_t = Some(tw);
            first_idx = Some(idx);
        }
    }
    if let Some(idx) = first_idx {
        b.mark_root(idx, 0);
    }
}

fn killed_at_startup(
    b: &mut Builder<'_>,
    workers: &[usize],
    eng: usize,
    api_pid: u32,
    process: &str,
    signal: Signal,
) {
    let p = b.p;
    let r = rank_of(b, workers, process);
    let uniproc = workers.len() == 1 && workers[0] == eng;
    let t = workers.iter().map(|&w| b.now(w)).max().unwrap_or_default();
    b.die(workers[r], b.now(workers[r]), signal);
    b.set_time(eng, t.plus_ms(b.rng.range(50, 500)));
    if !uniproc {
        // The ready pipe of the dead worker closes: the engine core fails; there is no worker
        // traceback, so the supervisor's report is the first evidence.
        let idx = b.log(
            eng,
            "worker_died",
            &[
                ("rank", r.to_string()),
                ("exitcode", (-signal.number()).to_string()),
            ],
        );
        if let Some(idx) = idx {
            b.mark_root(idx, 0);
        }
        let tb = Traceback::new(p.error("worker_init_failed").to_string())
            .with(p, "engine_core_init")
            .with(p, "engine_core_executor");
        engine_failure_with(b, eng, api_pid, tb, false);
        for (k, &w) in workers.iter().enumerate() {
            if k != r {
                b.set_time(w, b.now(eng).plus_us(b.rng.range(100, 5000)));
                b.log(w, "parent_exited", &[]);
            }
        }
    } else {
        b.set_time(API, b.now(eng).plus_ms(b.rng.range(20, 400)));
        let name = b.procs[eng].name.clone().unwrap_or_default();
        let exc = b.fill(
            p.error("engine_init_failed"),
            &[("failed", format!("{{'{name}': -{}}}", signal.number()))],
        );
        let api = Traceback::new(exc)
            .with(p, "api_main")
            .with(p, "api_engine_client")
            .with(p, "api_async_llm");
        b.stderr_traceback(API, None, &api, true);
    }
}

fn hang_at_startup(b: &mut Builder<'_>, workers: &[usize], eng: usize, process: &str) {
    // The engine core waits for the stuck worker: the shm broadcast warning repeats.
    let r = rank_of(b, workers, process);
    b.hang(workers[r], b.now(workers[r]));
    let t = workers.iter().map(|&w| b.now(w)).max().unwrap_or_default();
    b.set_time(eng, t);
    let mut first = None;
    for _ in 0..5 {
        b.advance_ms(eng, 60_000, 60_100);
        let idx = b.log(eng, "shm_no_block", &[]);
        if first.is_none() {
            first = idx;
        }
    }
    if let Some(idx) = first {
        b.mark_root(idx, 0);
    }
}

fn host_oom(b: &mut Builder<'_>, workers: &[usize], eng: usize, api_pid: u32) {
    // The kernel's OOM killer takes the biggest process; the shell that ran the server reports
    // `Killed` for it and nothing else is written.
    let _ = (workers, eng, api_pid);
    let t = b
        .procs
        .iter()
        .enumerate()
        .map(|(i, _)| b.now(i))
        .max()
        .unwrap_or_default();
    let sh = b.spawn(
        None,
        "shell".into(),
        b.procs[API].pid.saturating_sub(3),
        t.plus_ms(b.rng.range(200, 2000)),
        false,
    );
    b.die(API, b.now(sh), Signal::Kill);
    let idx = b.raw(sh, "Killed\n".into());
    b.mark_root(idx, 0);
}

/// The V0 engine: `LLMEngine` in a `MQLLMEngine` process (`SpawnProcess-1`), unprefixed;
/// workers `VllmWorkerProcess`.
/// Spawns the V0 engine's `VllmWorkerProcess` of rank `r` (pid `eng_pid + 10 + r`), `delay_ms`
/// (a range) after the engine's clock.
fn spawn_v0_worker(
    b: &mut Builder<'_>,
    eng: usize,
    eng_pid: u32,
    r: u32,
    delay_ms: (u64, u64),
) -> usize {
    let t = b.now(eng).plus_ms(b.rng.range(delay_ms.0, delay_ms.1));
    b.spawn(
        Some("VllmWorkerProcess".into()),
        format!("Worker{r}"),
        eng_pid + 10 + r,
        t,
        true,
    )
}

/// The V0 engine process fails: MQLLMEngine logs the exception (`logger.exception(e)`, then
/// `raise e`), the process prints its traceback, its workers are stopped, and the API server's
/// wait for the engine fails.
fn v0_engine_failed(
    b: &mut Builder<'_>,
    eng: usize,
    workers: &[usize],
    exc: &str,
    stack: &str,
    executor_started: bool,
) {
    let p = b.p;
    let tb = Traceback::new(exc.to_string()).with(p, stack);
    // MQLLMEngine: logger.exception(e) then raise → message line, traceback, then bootstrap.
    let first_line = exception_message(exc);
    if let Some(spec) = p.msg("v0_engine_error").cloned() {
        let text = format!("{first_line}\n{}", {
            let mut t = Traceback::new(exc.to_string());
            t.frames = tb.frames[3..].to_vec();
            t.render(p)
        });
        let idx = b.push_exception_log(eng, &spec, text, exc, true);
        b.root = Some(idx);
    }
    b.stderr_traceback(eng, Some("Process SpawnProcess-1:"), &tb, false);
    // An executor that started its workers stops them (multiproc_gpu_executor's shutdown).
    if executor_started {
        for &w in workers.iter().skip(1) {
            let pid = b.procs[w].pid;
            b.set_time(eng, b.now(eng).plus_ms(b.rng.range(100, 900)));
            b.log(
                eng,
                "v0_worker_died",
                &[("pid", pid.to_string()), ("code", "-15".into())],
            );
        }
        b.log(eng, "v0_killing_workers", &[]);
    }
    b.set_time(API, b.now(eng).plus_ms(b.rng.range(100, 900)));
    let api = Traceback::new(p.error("v0_engine_failed").to_string()).with(p, "v0_api");
    b.stderr_traceback(API, None, &api, false);
}

fn v0_launch(mut b: Builder<'_>, ending: Ending) -> LaunchLog {
    let d = b.d;
    let p = b.p;
    let mut status = LaunchStatus::Crashed;
    let failure = d.failure.clone();
    let api_pid = b.procs[API].pid;
    let eng_pid = api_pid + b.rng.range(60, 300) as u32;
    let t = b.now(API).plus_ms(b.rng.range(800, 3000));
    let eng = b.spawn(None, "EngineCore".into(), eng_pid, t, false);
    if let Some(Failure::RayPlacement { .. }) = failure {
        // `from_engine_args` picks the executor class, which starts Ray before the engine is
        // built: a local instance, then a cluster with too few GPUs is refused at once.
        b.advance_ms(eng, 1500, 4000);
        ray_driver_line(&mut b, eng, 1786, "Started a local Ray instance.");
        b.advance_ms(eng, 200, 900);
        let exc = p.error("ray_cluster_short").to_string();
        v0_engine_failed(&mut b, eng, &[eng], &exc, "v0_ray_cluster", false);
        return b.finish(status, None);
    }
    let config = engine_config(&b, d);
    b.log(eng, "engine_init", &[("config", config)]);
    let mut workers = vec![eng];
    if d.world > 1 {
        b.log(eng, "reduce_torch_threads", &[("threads", "64".into())]);
        for r in 1..d.world {
            let w = spawn_v0_worker(&mut b, eng, eng_pid, r, (2000, 4000));
            b.log(w, "v0_worker_ready", &[]);
            workers.push(w);
        }
        for &w in &workers.clone() {
            b.advance_ms(w, 300, 900);
            b.log(w, "nccl_version", &[]);
            b.log(w, "pynccl_using", &[]);
        }
    }
    for &w in &workers.clone() {
        b.advance_ms(w, 300, 900);
        b.log(w, "v0_start_load", &[]);
        b.log(w, "v0_backend", &[]);
    }
    let shards = d.model.map_or(1, |m| m.shards);
    let stop = if matches!(
        failure,
        Some(Failure::HostOomKilled) | Some(Failure::WeightsOom { .. })
    ) {
        Some(shards / 2)
    } else {
        None
    };
    loading_bar(
        &mut b,
        eng,
        shards,
        d.memory.weights_per_rank_gib * 6.0,
        stop,
    );
    let fail_exc: Option<(String, &str)> = match &failure {
        Some(Failure::HostOomKilled) => {
            host_oom(&mut b, &workers, eng, api_pid);
            return b.finish(status, None);
        }
        Some(Failure::KvNoMemory { .. }) => {
            Some((p.error("no_kv_memory").to_string(), "v0_mp_engine_kv"))
        }
        Some(Failure::KvTooSmall { estimated, .. }) => Some((
            b.fill(
                p.error("kv_too_small"),
                &[("tokens", estimated.to_string())],
            ),
            "v0_mp_engine_kv",
        )),
        Some(Failure::WeightsOom {
            alloc_gib,
            free_mib,
            used_gib,
        }) => Some((
            b.fill(
                p.error("torch_oom"),
                &[
                    ("alloc", fmt2(*alloc_gib)),
                    ("device", "0".into()),
                    ("total", fmt2(d.gpu.torch_total_gib)),
                    ("free", fmt2(*free_mib)),
                    ("used", fmt2(*used_gib)),
                    ("allocated", fmt2(used_gib - 0.5)),
                    ("reserved", fmt2(free_mib / 7.0)),
                    ("pid", eng_pid.to_string()),
                ],
            ),
            "v0_mp_engine",
        )),
        Some(Failure::Nccl(_)) | Some(Failure::ShmInsufficient { .. }) => {
            Some((p.error("nccl_unhandled_cuda").to_string(), "v0_mp_engine"))
        }
        Some(Failure::NoKernelImage) => {
            Some((p.error("no_kernel_image").to_string(), "v0_mp_engine"))
        }
        Some(Failure::MissingModule { module }) => Some((
            b.fill(p.error("missing_module"), &[("module", module.clone())]),
            "v0_mp_engine",
        )),
        Some(Failure::Bf16Capability) => Some((
            b.fill(
                p.error("bf16_capability"),
                &[
                    ("gpu", d.gpu.name.clone()),
                    ("major", d.gpu.capability[0].to_string()),
                    ("minor", d.gpu.capability[1].to_string()),
                ],
            ),
            "v0_mp_engine",
        )),
        Some(other) => unreachable!("deploy never derives {other:?} for the V0 engine"),
        None => None,
    };
    if let Some((exc, stack)) = fail_exc {
        b.advance_ms(eng, 500, 3000);
        v0_engine_failed(&mut b, eng, &workers, &exc, stack, true);
        return b.finish(status, None);
    }
    b.advance_ms(eng, 2000, 6000);
    let gib = d.memory.weights_per_rank_gib;
    b.log(eng, "v0_loading_took", &[("gib4", format!("{gib:.4}"))]);
    let blocks = d.memory.kv_tokens / 16;
    b.advance_ms(eng, 3000, 9000);
    b.memory_claimed = Some(b.now(eng));
    b.log(
        eng,
        "v0_blocks",
        &[
            ("gpu_blocks", blocks.to_string()),
            ("cpu_blocks", "2048".into()),
        ],
    );
    b.log(
        eng,
        "v0_concurrency",
        &[(
            "x",
            fmt2(d.memory.kv_tokens as f64 / d.max_model_len as f64),
        )],
    );
    if !d.args.enforce_eager {
        b.log(eng, "v0_capture_start", &[]);
        b.advance_ms(eng, 8000, 30000);
        b.log(
            eng,
            "v0_capture_done",
            &[("secs", "14".into()), ("gib", fmt2(d.memory.graph_gib))],
        );
    }
    b.set_time(API, b.now(eng).plus_ms(800));
    b.log(API, "routes", &[]);
    for (path, methods) in ROUTES {
        b.log(
            API,
            "route",
            &[("path", path.to_string()), ("methods", methods.to_string())],
        );
    }
    b.stream(
        API,
        format!("INFO:     Started server process [{api_pid}]\n"),
    );
    b.stream(API, "INFO:     Waiting for application startup.\n".into());
    b.stream(API, "INFO:     Application startup complete.\n".into());
    b.stream(
        API,
        format!(
            "INFO:     Uvicorn running on http://{}:{} (Press CTRL+C to quit)\n",
            d.args.host, d.args.port
        ),
    );
    status = LaunchStatus::Ready;
    let traffic_from = Some(b.now(API).plus_ms(500));
    let serve_ms = match ending {
        Ending::Natural { serve_ms } | Ending::StopAfter { serve_ms } => serve_ms,
    };
    serve_traffic(&mut b, serve_ms);
    if let Ending::StopAfter { .. } = ending {
        b.advance_ms(API, 1000, 3000);
        uvicorn_shutdown(&mut b);
        status = LaunchStatus::Stopped;
    }
    b.finish(status, traffic_from)
}
