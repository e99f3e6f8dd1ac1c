//! The runtime of one fake process: it walks its [`RolePlan`] in scaled real time — writing its
//! lines, starting its children, claiming GPU memory, creating `/dev/shm` segments — and then
//! stays up, exits, dies by a signal or hangs, as the plan says.
//!
//! Main type: [`Runtime`]. Real pids replace the script's pids in prefixes and texts; headers
//! carry the real clock. Logging records go to stdout and are written with one `write(2)` each
//! (vLLM's handler flushes per record); tracebacks and C++ output go to stderr.

use std::fs::File;
use std::io::{self, Write as _};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::process::{kill_process, Pid, Signal};

use super::gpu::{GpuState, GpuUser};
use super::plan::{Plan, RolePlan, What, API_ROLE};
use super::ray::{self, Hub, Lines};
use super::{http, Setup, ENV_NODE_IPS, ENV_PIDS, ENV_RAY_PORT, ENV_SHM_NAME};
use crate::clock;
use generator::clock::SimTime;
use generator::record::{Body, Renderer};
use generator::release::Switch;
use generator::scenario::{Fault, Phase, Signal as FaultSignal};
use procfacts::ProcInfo;

/// Longest single sleep, so stop requests and child exits are seen promptly.
const POLL_MS: u64 = 10;
/// How long a stopping process waits for its children before it leaves them.
const CHILD_EXIT_WAIT_MS: u64 = 10_000;
/// Size of the shared-memory segment (sparse on tmpfs).
const SHM_BYTES: u64 = 4 << 20;

/// The API server: the process the user started.
pub fn run_api_server(setup: Setup, listener: Option<TcpListener>) -> i32 {
    let plan = Plan::build(&setup.scenario, setup.seed, setup.t0);
    Runtime::new(setup, plan, API_ROLE.to_string(), listener).run()
}

/// An engine core or worker started by its parent.
pub fn run_child(role: &str) -> i32 {
    match Setup::for_child() {
        Ok(setup) => {
            let plan = Plan::build(&setup.scenario, setup.seed, setup.t0);
            if !plan.roles.contains_key(role) {
                eprintln!("fake-vllm: role {role} is not part of this launch");
                return 2;
            }
            Runtime::new(setup, plan, role.to_string(), None).run()
        }
        Err(e) => {
            eprintln!("fake-vllm ({role}): {e}");
            2
        }
    }
}

/// Runs the next program of the same name on `PATH` after this one (the `python3` shim's
/// pass-through). Returns only on failure.
pub fn exec_next_on_path(argv: &[String]) -> i32 {
    use std::os::unix::process::CommandExt as _;
    let Some(name) = argv
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
    else {
        return 2;
    };
    let me = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok());
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(&name);
        let Ok(real) = cand.canonicalize() else {
            continue;
        };
        if Some(&real) == me.as_ref() || !cand.is_file() {
            continue;
        }
        let err = Command::new(&cand).arg0(&name).args(&argv[1..]).exec();
        eprintln!("fake-vllm: cannot run {}: {err}", cand.display());
        return 127;
    }
    eprintln!("{name}: not found (only faultkit's shim is on PATH)");
    127
}

/// One process of the fake tree.
#[derive(Debug)]
pub struct Runtime {
    setup: Setup,
    plan: Plan,
    role: String,
    renderer: Renderer<'static>,
    /// (script text, real text) pairs: pids and shared-memory names.
    subst: Vec<(String, String)>,
    children: Vec<(String, Child)>,
    listener: Option<TcpListener>,
    shm_created: Option<(PathBuf, File)>,
    shm_open: Option<File>,
    stop: Arc<AtomicBool>,
    parent_at_start: Option<Pid>,
    start_time: u64,
    /// (Ray driver) the machines that joined.
    hub: Option<Arc<Hub>>,
    /// Added to every due time: the launch's clock after waiting for a real event.
    shift_us: u64,
    /// (API server) Set once the engine died: `/health` answers 503.
    engine_dead: Arc<AtomicBool>,
}

/// How long a Ray driver waits for its machines, and for the loss it expects.
const RAY_JOIN_WAIT_MS: u64 = 120_000;
const NODE_LOSS_WAIT_MS: u64 = 600_000;

enum Outcome {
    /// The plan ran out: stay up, or exit.
    Done,
    /// A stop request (SIGTERM, SIGINT, parent gone) arrived before the end.
    Stopped,
}

impl Runtime {
    fn new(setup: Setup, plan: Plan, role: String, listener: Option<TcpListener>) -> Runtime {
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
        }
        let s = &setup.scenario;
        let renderer =
            Renderer::for_scenario(generator::profile::Profile::for_version(s.vllm), s, false);
        let me = std::process::id();
        let mut subst = Vec::new();
        if let Some(sim) = plan.sim_pid(&role) {
            subst.push((sim.to_string(), me.to_string()));
        }
        // Pids of the ancestors, as they passed them on.
        if let Ok(pairs) = std::env::var(ENV_PIDS) {
            for pair in pairs.split(',') {
                if let Some((a, b)) = pair.split_once('=') {
                    subst.push((a.to_string(), b.to_string()));
                }
            }
        }
        if let (Some(sim), Ok(real)) = (plan.log.shm_names.first(), std::env::var(ENV_SHM_NAME)) {
            subst.push((sim.clone(), real));
        }
        // The machines' simulated IPs and the real ones (Ray deployments).
        if let Ok(pairs) = std::env::var(ENV_NODE_IPS) {
            for pair in pairs.split(',') {
                if let Some((a, b)) = pair.split_once('=') {
                    subst.push((a.to_string(), b.to_string()));
                }
            }
        }
        let start_time = ProcInfo::read(me).map_or(0, |p| p.start_time);
        Runtime {
            setup,
            plan,
            role,
            renderer,
            subst,
            children: Vec::new(),
            listener,
            shm_created: None,
            shm_open: None,
            stop,
            parent_at_start: rustix::process::getppid(),
            start_time,
            hub: None,
            shift_us: 0,
            engine_dead: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The Ray driver of a multi-machine deployment: wait for the other machines to join.
    fn join_ray_cluster(&mut self) {
        let d = &self.plan.deployment;
        if !(d.ray && d.nodes > 1 && self.role == super::plan::ENGINE_ROLE) {
            return;
        }
        let port = std::env::var(ENV_RAY_PORT)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(ray::DEFAULT_PORT);
        let prefix = self.own_prefix();
        let hub = match Hub::listen(port, move |stream, bytes| {
            forward(stream, &ray::prefixed_lines(&prefix, bytes));
        }) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("fake-vllm: cannot listen for Ray machines on port {port}: {e}");
                return;
            }
        };
        let want = (d.nodes - 1) as usize;
        let (ips, driver_ip) = hub.wait_agents(want, Duration::from_millis(RAY_JOIN_WAIT_MS));
        if ips.len() < want {
            eprintln!(
                "fake-vllm: only {} of {want} Ray machines joined",
                ips.len()
            );
        }
        let sim = self.plan.log.node_ips.clone();
        let mut pairs = Vec::new();
        if let (Some(s0), Some(real)) = (sim.first(), driver_ip) {
            pairs.push((s0.clone(), real));
        }
        for (k, ip) in ips.iter().enumerate() {
            if let Some(s) = sim.get(k + 1) {
                pairs.push((s.clone(), ip.clone()));
            }
        }
        self.subst.extend(pairs);
        self.hub = Some(hub);
    }

    /// This process's own prefix, as its lines carry it.
    fn own_prefix(&self) -> String {
        let log = &self.plan.log;
        log.procs
            .iter()
            .rev()
            .find(|p| p.role == self.role && p.name.is_some())
            .map(|p| {
                let mut p = p.clone();
                p.pid = std::process::id();
                self.renderer.prefix(&p)
            })
            .unwrap_or_default()
    }

    fn rp(&self) -> &RolePlan {
        &self.plan.roles[&self.role]
    }

    fn run(mut self) -> i32 {
        self.join_ray_cluster();
        let steps = self.rp().run.clone();
        let mut ready = false;
        for step in &steps {
            if let Outcome::Stopped = self.wait_until(step.t) {
                return self.shut_down(false);
            }
            match &step.what {
                What::Write(i) => self.write_event(*i),
                What::Spawn(role) => self.spawn(role),
                What::HoldGpu { rank, mib } => self.hold_gpu(*rank, *mib),
                What::CreateShm => self.create_shm(),
                What::OpenShm => self.open_shm(),
                What::Ready => {
                    ready = true;
                    self.start_http();
                }
                What::Die(sig) => self.die(*sig),
                What::Hang => self.hang(),
                What::AwaitNodeLoss { node } => self.await_node_loss(*node, step.t),
                What::AwaitChildExit(role) => self.await_child_exit(role, step.t),
            }
        }
        if self.plan.lingers(&self.role) {
            // A worker with nothing to say about a failure elsewhere waits for its parent to
            // go (vLLM's executor, or Ray, then ends it).
            while !self.stop_requested() && !self.parent_gone() {
                self.reap();
                std::thread::sleep(Duration::from_millis(POLL_MS));
            }
            self.cleanup();
            return 1;
        }
        if !self.plan.stays_up {
            // The launch failed: leave after the children, as vLLM's processes unwind.
            self.wait_children(u64::MAX / 2);
            self.cleanup();
            return 1;
        }
        let _ = ready;
        // Up: serve (the HTTP thread) until told to stop, or until a child dies that nobody
        // told to (a `kill -9`, a crash): then react as vLLM does.
        loop {
            // A stop first: `faultkit stop` and Ctrl-C signal the whole group, and children that
            // finish their stop lines sooner are no deaths to react to.
            if self.stop_requested() {
                return self.shut_down(true);
            }
            if let Some((child, signal)) = self.child_died() {
                if self.stop_requested() {
                    return self.shut_down(true);
                }
                return self.react_to_death(&child, signal);
            }
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
    }

    /// A child that has exited (every exit of a child of an up launch is unexpected), with the
    /// signal that ended it.
    fn child_died(&mut self) -> Option<(String, Option<i32>)> {
        use std::os::unix::process::ExitStatusExt as _;
        for (role, child) in &mut self.children {
            if let Ok(Some(status)) = child.try_wait() {
                return Some((role.clone(), status.signal()));
            }
        }
        None
    }

    /// vLLM's reaction to the death of child `child`, which no scenario scripted: the same
    /// launch with that process killed while serving is simulated, and this process plays its
    /// own lines from that launch after the death (the engine core's executor monitor, the API
    /// server's engine monitor, output handler and watchdog), then leaves as that launch does.
    fn react_to_death(mut self, child: &str, signal: Option<i32>) -> i32 {
        let process = if child == super::plan::ENGINE_ROLE {
            "EngineCore".to_string()
        } else {
            child.to_string()
        };
        let signal = match signal {
            Some(11) => FaultSignal::Segv,
            Some(7) => FaultSignal::Bus,
            Some(15) => FaultSignal::Term,
            _ => FaultSignal::Kill,
        };
        if self.role == API_ROLE {
            self.engine_dead.store(true, Ordering::Relaxed);
        }
        let mut alt = self.setup.scenario.clone();
        alt.faults.push(Fault::Kill {
            process,
            signal,
            at: Phase::Serving,
        });
        let plan = Plan::build(&alt, self.setup.seed, self.setup.t0);
        let died_at = plan.roles.get(child).and_then(|r| {
            r.run
                .iter()
                .find_map(|s| matches!(s.what, What::Die(_)).then_some(s.t))
        });
        if let Some(t_death) = died_at {
            let writes: Vec<(usize, SimTime)> = plan.roles[&self.role]
                .run
                .iter()
                .filter(|s| s.t > t_death)
                .filter_map(|s| match s.what {
                    What::Write(i) => Some((i, s.t)),
                    _ => None,
                })
                .collect();
            self.plan = plan;
            let base = clock::wall_now().0;
            for (i, t) in writes {
                let due = base + ((t.0 - t_death.0) as f64 * self.setup.scale) as u64;
                while clock::wall_now().0 < due {
                    std::thread::sleep(Duration::from_millis(POLL_MS));
                }
                self.write_event(i);
            }
        }
        // The executor stops the ranks left (the engine core), or the server leaves its engine's
        // processes to their own watch (the API server).
        if self.role == super::plan::ENGINE_ROLE {
            self.terminate_children();
            self.wait_children(CHILD_EXIT_WAIT_MS);
        }
        self.cleanup();
        1
    }

    /// The real instant of launch time `t`.
    fn due(&self, t: SimTime) -> u64 {
        let offset_us = t.0.saturating_sub(self.setup.t0.0) as f64 * self.setup.scale;
        self.setup.t0.0 + offset_us as u64 + self.shift_us
    }

    /// (Ray driver) Blocks until machine `node` is really gone; the launch's clock then runs
    /// from that moment.
    fn await_node_loss(&mut self, node: u32, t: SimTime) {
        let Some(hub) = self.hub.clone() else {
            return;
        };
        if !hub.wait_lost(node, Duration::from_millis(NODE_LOSS_WAIT_MS)) {
            return;
        }
        let now = clock::wall_now().0;
        let due = self.due(t);
        self.shift_us += now.saturating_sub(due);
    }

    /// Blocks until the child `role` has exited; the launch's clock then runs from that moment.
    fn await_child_exit(&mut self, role: &str, t: SimTime) {
        let start = clock::wall_now().0;
        loop {
            let gone = self
                .children
                .iter_mut()
                .filter(|(r, _)| r == role)
                .all(|(_, c)| !matches!(c.try_wait(), Ok(None)));
            if gone || self.stop_requested() {
                break;
            }
            if clock::wall_now().0.saturating_sub(start) / 1000 >= NODE_LOSS_WAIT_MS {
                return;
            }
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
        let now = clock::wall_now().0;
        let due = self.due(t);
        self.shift_us += now.saturating_sub(due);
    }

    /// Sleeps until the scaled instant of `t`; a stop request ends the wait early.
    fn wait_until(&mut self, t: SimTime) -> Outcome {
        let due = self.due(t);
        loop {
            self.reap();
            if self.stop_requested() {
                return Outcome::Stopped;
            }
            let now = clock::wall_now().0;
            if now >= due {
                return Outcome::Done;
            }
            let left_ms = (due - now).div_ceil(1000);
            std::thread::sleep(Duration::from_millis(left_ms.min(POLL_MS)));
        }
    }

    fn parent_gone(&self) -> bool {
        rustix::process::getppid() != self.parent_at_start
    }

    /// SIGTERM/SIGINT arrived, or (vLLM ≥ 0.16, whose processes watch their parent) the parent
    /// is gone.
    fn stop_requested(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return true;
        }
        self.role != API_ROLE
            && self.setup.scenario.vllm.has(Switch::WorkersWatchParent)
            && rustix::process::getppid() != self.parent_at_start
    }

    /// A stop: the shutdown lines (if the launch was up), then the children, then out.
    fn shut_down(mut self, was_up: bool) -> i32 {
        if was_up {
            let steps = self.rp().on_stop.clone();
            if let Some(first) = steps.first().map(|s| s.t) {
                let base = clock::wall_now().0;
                for step in &steps {
                    let off = step.t.0.saturating_sub(first.0) as f64 * self.setup.scale;
                    let due = base + off as u64;
                    while clock::wall_now().0 < due {
                        std::thread::sleep(Duration::from_millis(POLL_MS));
                    }
                    if let What::Write(i) = step.what {
                        self.write_event(i);
                    }
                }
            }
        }
        self.terminate_children();
        self.wait_children(CHILD_EXIT_WAIT_MS);
        self.cleanup();
        0
    }

    /// SIGTERM to every child still running: one that has exited was reaped, and its pid may
    /// already belong to another process.
    fn terminate_children(&mut self) {
        for (_, child) in &mut self.children {
            if !matches!(child.try_wait(), Ok(None)) {
                continue;
            }
            if let Some(pid) = Pid::from_raw(child.id() as i32) {
                let _ = kill_process(pid, Signal::TERM);
            }
        }
    }

    fn reap(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.try_wait();
        }
    }

    /// Waits (bounded) until every child has exited (children that wait for us to go first are
    /// not waited for).
    fn wait_children(&mut self, bound_ms: u64) {
        let start = clock::wall_now().0;
        loop {
            let mut running = 0;
            for (role, child) in &mut self.children {
                if matches!(child.try_wait(), Ok(None)) && !self.plan.lingers(role) {
                    running += 1;
                }
            }
            if running == 0 || clock::wall_now().0.saturating_sub(start) / 1000 >= bound_ms {
                return;
            }
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
    }

    fn cleanup(&mut self) {
        let _ = io::stdout().flush();
        if let Some((path, _)) = self.shm_created.take() {
            let _ = std::fs::remove_file(path);
        }
    }

    fn render(&self, i: usize, t: SimTime) -> Vec<u8> {
        let log = &self.plan.log;
        let mut ev = log.events[i].clone();
        ev.t = t;
        let mut proc = log.procs[ev.proc].clone();
        proc.pid = std::process::id();
        let bytes = self.renderer.render(&ev, &proc).bytes;
        substitute(&bytes, &self.subst)
    }

    fn write_event(&mut self, i: usize) {
        let bytes = self.render(i, clock::wall_now());
        let to_stdout = matches!(self.plan.log.events[i].body, Body::Log { .. });
        if to_stdout {
            let mut out = io::stdout().lock();
            let _ = out.write_all(&bytes);
            let _ = out.flush();
        } else {
            let _ = io::stderr().lock().write_all(&bytes);
        }
    }

    fn spawn(&mut self, role: &str) {
        let exe = match std::env::current_exe() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("fake-vllm: cannot find own executable: {e}");
                return;
            }
        };
        let mut pids: Vec<String> = self
            .subst
            .iter()
            .filter(|(a, _)| a.bytes().all(|b| b.is_ascii_digit()))
            .map(|(a, b)| format!("{a}={b}"))
            .collect();
        pids.dedup();
        let mut cmd = Command::new(exe);
        {
            use std::os::unix::process::CommandExt as _;
            cmd.arg0(self.plan.title(role));
        }
        cmd.stdin(Stdio::null())
            .envs(self.setup.child_env(role))
            .env(ENV_PIDS, pids.join(","));
        if let Some(name) = self.shm_name_for_children() {
            cmd.env(ENV_SHM_NAME, name);
        }
        let ips: Vec<String> = self
            .subst
            .iter()
            .filter(|(a, _)| self.plan.log.node_ips.contains(a))
            .map(|(a, b)| format!("{a}={b}"))
            .collect();
        if !ips.is_empty() {
            cmd.env(ENV_NODE_IPS, ips.join(","));
        }
        let actor = self.plan.roles.get(role).is_some_and(|r| r.ray_actor);
        let node = self.plan.roles.get(role).map_or(0, |r| r.node);
        if actor && node > 0 {
            // On another machine: its node agent starts it.
            let mut env: Vec<(String, String)> = self
                .setup
                .child_env(role)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            env.push((ENV_PIDS.into(), pids.join(",")));
            if !ips.is_empty() {
                env.push((ENV_NODE_IPS.into(), ips.join(",")));
            }
            match &self.hub {
                Some(h) => {
                    if let Err(e) = h.spawn(node, role, &env) {
                        eprintln!("fake-vllm: cannot start {role} on machine {node}: {e}");
                    }
                }
                None => eprintln!("fake-vllm: no Ray machine {node} for {role}"),
            }
            return;
        }
        if actor {
            // A Ray actor on this machine: its output comes back here and is printed by us.
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        match cmd.spawn() {
            Ok(mut child) => {
                if let Some(sim) = self.plan.sim_pid(role) {
                    self.subst.push((sim.to_string(), child.id().to_string()));
                }
                if actor {
                    let prefix = self.own_prefix();
                    if let Some(out) = child.stdout.take() {
                        relay(out, 1, prefix.clone());
                    }
                    if let Some(err) = child.stderr.take() {
                        relay(err, 2, prefix);
                    }
                }
                self.children.push((role.to_string(), child));
            }
            Err(e) => eprintln!("fake-vllm: cannot start {role}: {e}"),
        }
    }

    fn shm_name_for_children(&self) -> Option<String> {
        if let Some((p, _)) = &self.shm_created {
            return p.file_name().map(|n| n.to_string_lossy().into_owned());
        }
        std::env::var(ENV_SHM_NAME).ok()
    }

    fn hold_gpu(&mut self, rank: u32, mib: u64) {
        let gpu = self.setup.gpu_of(rank);
        let pid = std::process::id();
        let start_time = self.start_time;
        let name = self.plan.title(&self.role);
        let _ = GpuState::update(&self.setup.gpu_state, |s| {
            s.users.retain(|u| !(u.pid == pid && u.gpu == gpu));
            s.users.push(GpuUser {
                gpu,
                pid,
                start_time,
                used_mib: mib,
                name,
            });
        });
    }

    fn create_shm(&mut self) {
        let hash = (u64::from(std::process::id()) << 20 ^ self.setup.t0.0)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let name = format!("{}{:08x}", self.setup.shm_prefix, hash >> 32);
        let path = self.setup.shm_dir.join(&name);
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path);
        match file {
            Ok(f) => {
                let _ = f.set_len(SHM_BYTES);
                if let Some(sim) = self.plan.log.shm_names.first() {
                    self.subst.push((sim.clone(), name));
                }
                self.shm_created = Some((path, f));
            }
            Err(e) => eprintln!("fake-vllm: cannot create {}: {e}", path.display()),
        }
    }

    fn open_shm(&mut self) {
        if let Ok(name) = std::env::var(ENV_SHM_NAME) {
            self.shm_open = File::options()
                .read(true)
                .write(true)
                .open(self.setup.shm_dir.join(name))
                .ok();
        }
    }

    fn start_http(&mut self) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let model = self.setup.scenario.args.served_name().to_string();
        let engine_dead = Arc::clone(&self.engine_dead);
        let log = &self.plan.log;
        let api = log.procs.iter().rev().find(|p| p.role == API_ROLE).cloned();
        let prefix = match api {
            Some(mut p) if self.renderer.profile.api_server_prefixed => {
                p.pid = std::process::id();
                self.renderer.prefix(&p)
            }
            _ => String::new(),
        };
        std::thread::spawn(move || {
            http::serve(listener, model, engine_dead, |line| {
                let mut out = io::stdout().lock();
                let _ = out.write_all(format!("{prefix}{line}").as_bytes());
                let _ = out.flush();
            })
        });
    }

    /// Killed: the kernel delivers the signal; buffered output is lost with the process.
    fn die(&mut self, sig: i32) -> ! {
        if let (Some(pid), Some(sig)) = (
            Pid::from_raw(std::process::id() as i32),
            Signal::from_named_raw(sig),
        ) {
            let _ = kill_process(pid, sig);
        }
        // SIGKILL cannot be caught; a caught signal still ends the process here.
        std::process::exit(128 + sig)
    }

    /// Stuck in a collective: no more output, deaf to SIGTERM; only SIGKILL ends it.
    fn hang(&mut self) -> ! {
        loop {
            self.reap();
            std::thread::sleep(Duration::from_millis(POLL_MS * 10));
        }
    }
}

/// Writes forwarded actor output to this process's stdout (1) or stderr (2).
fn forward(stream: u8, bytes: &[u8]) {
    if stream == 2 {
        let _ = io::stderr().lock().write_all(bytes);
    } else {
        let mut out = io::stdout().lock();
        let _ = out.write_all(bytes);
        let _ = out.flush();
    }
}

/// Prints a local actor's output with the driver's prefix, line by line.
fn relay(mut pipe: impl io::Read + Send + 'static, stream: u8, prefix: String) {
    std::thread::spawn(move || {
        let mut lines = Lines::default();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if let Some(whole) = lines.push(&buf[..n]) {
                forward(stream, &ray::prefixed_lines(&prefix, &whole));
            }
        }
        let rest = lines.finish();
        if !rest.is_empty() {
            forward(stream, &ray::prefixed_lines(&prefix, &rest));
        }
    });
}

/// Replaces whole tokens (not inside a longer word or number) of `bytes`.
pub fn substitute(bytes: &[u8], subst: &[(String, String)]) -> Vec<u8> {
    if subst.is_empty() {
        return bytes.to_vec();
    }
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut i = 0;
    'outer: while i < bytes.len() {
        let before_ok = i == 0 || !word(bytes[i - 1]);
        if before_ok {
            for (from, to) in subst {
                let f = from.as_bytes();
                if !f.is_empty()
                    && bytes[i..].starts_with(f)
                    && bytes.get(i + f.len()).is_none_or(|&b| !word(b))
                {
                    out.extend_from_slice(to.as_bytes());
                    i += f.len();
                    continue 'outer;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_whole_tokens_only() {
        let s = vec![
            ("1234".to_string(), "77".to_string()),
            ("psm_ab12cd34".to_string(), "psm_fk000001".to_string()),
        ];
        let got = substitute(
            b"(Worker_TP0 pid=1234) x 12345 [1234] a1234 psm_ab12cd34'",
            &s,
        );
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "(Worker_TP0 pid=77) x 12345 [77] a1234 psm_fk000001'"
        );
    }
}
