//! The fake vLLM server: a scenario as a real process tree.
//!
//! One binary (`fake-vllm`) answers to several names, as the harness puts shims first on `PATH`:
//! `vllm serve MODEL …`, `python3 -m vllm.entrypoints.openai.api_server --model MODEL …` and
//! `nvidia-smi …`. The server process plays vLLM's API server; it re-executes itself as the
//! engine core, which re-executes itself as the workers. Each process writes its own lines
//! with its own pid to the inherited stdout/stderr — so interleaving, write atomicity, orphans,
//! signals and `/dev/shm` leftovers are real — at the times the simulator's script gives them,
//! scaled by `FAULTKIT_TIME_SCALE`.
//!
//! Main types: [`Setup`] (what the launch is: the scenario, the command actually run, the model
//! found at its path, the host's live facts) and [`plan::Plan`]; the runtime is [`replay`].
//!
//! Environment (all optional):
//! - `FAULTKIT_SCENARIO` — a scenario file: version profile, GPUs, host facts, faults and env.
//!   Its `command` is ignored: the command line actually run decides.
//! - `FAULTKIT_VLLM` — version profile without a scenario (default 0.15.1).
//! - `FAULTKIT_GPUS` — `8xh100`, `rtx-pro-6000-blackwell:4`: the GPUs, when no state file exists.
//! - `FAULTKIT_GPU_STATE` — the GPU state file shared with `nvidia-smi` (default
//!   `$TMPDIR/faultkit-gpu-state.json`).
//! - `FAULTKIT_MODELS` — where repo ids (`org/name`) resolve to model directories.
//! - `FAULTKIT_TIME_SCALE` — real seconds per simulated second (default 1).
//! - `FAULTKIT_SEED` — the seed of the script (default 0).
//! - `FAULTKIT_SHM_DIR` (default `/dev/shm`), `FAULTKIT_SHM_PREFIX` (default `psm_`).

pub mod clock;
pub mod gpu;
pub mod http;
pub mod plan;
pub mod ray;
pub mod replay;
pub mod smi;

use std::collections::BTreeMap;
use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use generator::catalog::{self, ModelPreset};
use generator::clock::SimTime;
use generator::scenario::{Expect, Fault, Host, Runner, Scenario};
use generator::seed::Seed;
use generator::version::Version;
use vllm_argv::ServeArgs;

pub const ENV_SCENARIO: &str = "FAULTKIT_SCENARIO";
pub const ENV_VLLM: &str = "FAULTKIT_VLLM";
pub const ENV_GPUS: &str = "FAULTKIT_GPUS";
pub const ENV_GPU_STATE: &str = "FAULTKIT_GPU_STATE";
pub const ENV_MODELS: &str = "FAULTKIT_MODELS";
pub const ENV_TIME_SCALE: &str = "FAULTKIT_TIME_SCALE";
pub const ENV_SEED: &str = "FAULTKIT_SEED";
pub const ENV_SHM_DIR: &str = "FAULTKIT_SHM_DIR";
pub const ENV_SHM_PREFIX: &str = "FAULTKIT_SHM_PREFIX";

// Passed from a process to the processes it starts, so every process builds the same plan.
const ENV_ROLE: &str = "FAULTKIT_ROLE";
const ENV_ARGV: &str = "FAULTKIT_ARGV";
const ENV_T0: &str = "FAULTKIT_T0";
const ENV_PRESET: &str = "FAULTKIT_PRESET";
const ENV_HELD_MIB: &str = "FAULTKIT_HELD_MIB";
const ENV_PORT_BUSY: &str = "FAULTKIT_PORT_BUSY";
const ENV_PIDS: &str = "FAULTKIT_PIDS";
const ENV_SHM_NAME: &str = "FAULTKIT_SHM_NAME";
/// `sim=real,…`: the machines' simulated IPs and their real ones.
const ENV_NODE_IPS: &str = "FAULTKIT_NODE_IPS";
/// The port of the fake Ray driver (default 6379).
pub const ENV_RAY_PORT: &str = "FAULTKIT_RAY_PORT";

/// Environment variables vLLM reads that change what it writes; the real environment wins over
/// the scenario's `env`.
const VLLM_ENV: &[&str] = &[
    "NO_COLOR",
    "VLLM_LOGGING_LEVEL",
    "VLLM_LOGGING_COLOR",
    "VLLM_LOGGING_PREFIX",
    "VLLM_CONFIGURE_LOGGING",
    "VLLM_DISABLE_LOG_LOGO",
    "VLLM_ATTENTION_BACKEND",
    "NCCL_DEBUG",
    "OMP_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
];

/// Largest time scale accepted (a 10-minute startup in at most 100 × 10 minutes).
const TIME_SCALE_MAX: f64 = 100.0;
/// Default GPUs when nothing says otherwise.
const DEFAULT_GPUS: (&str, u32) = ("h100", 8);

/// Why the fake cannot start (its own configuration, not a simulated vLLM failure).
#[derive(Debug)]
pub struct SetupError(pub String);

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// One launch of the fake server, as every process of its tree sees it.
#[derive(Debug)]
pub struct Setup {
    pub scenario: Scenario,
    pub argv: Vec<String>,
    pub seed: Seed,
    pub scale: f64,
    /// The wall-clock instant the API server started: the plan's time zero.
    pub t0: SimTime,
    pub gpu_state: PathBuf,
    pub shm_dir: PathBuf,
    pub shm_prefix: String,
    /// Physical GPU index of each rank (`CUDA_VISIBLE_DEVICES`).
    pub visible: Vec<u32>,
    /// Memory other processes held on the launch's GPUs when it started.
    pub held_mib: u64,
    pub port_busy: bool,
}

/// Entry point of the `fake-vllm` binary: dispatch on the role or the name it was called by.
pub fn main() -> i32 {
    let argv: Vec<String> = std::env::args().collect();
    if let Ok(role) = std::env::var(ENV_ROLE) {
        return replay::run_child(&role);
    }
    let prog = argv.first().map(String::as_str).unwrap_or("fake-vllm");
    let base = prog.rsplit('/').next().unwrap_or(prog);
    match base {
        "nvidia-smi" | "fake-nvidia-smi" => smi::main(&argv[1..]),
        b if b.starts_with("python") => python(&argv),
        "vllm" => server(argv),
        _ if argv.get(1).map(String::as_str) == Some("init") => init(),
        _ if argv.get(1).map(String::as_str) == Some("ray-node") => ray::agent(&argv[2..]),
        _ => {
            // `fake-vllm serve MODEL …` behaves as `vllm serve MODEL …`.
            let mut v = vec!["vllm".to_string()];
            v.extend(argv.iter().skip(1).cloned());
            server(v)
        }
    }
}

/// `fake-vllm init`: PID 1 of a fake GPU host container. It reaps every orphan re-parented to
/// it (as an init does, so a `kill -9`ed server's children do not linger as zombies) and exits on
/// SIGTERM or SIGINT (`docker stop`).
fn init() -> i32 {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            eprintln!("fake-vllm init: cannot handle signal {sig}: {e}");
            return 1;
        }
    }
    while !stop.load(Ordering::Relaxed) {
        match rustix::process::wait(rustix::process::WaitOptions::NOHANG) {
            Ok(Some(_)) => continue,
            Ok(None) | Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    0
}

fn server(argv: Vec<String>) -> i32 {
    match argv.get(1).map(String::as_str) {
        Some("--version" | "-v") => {
            println!("{}", version_from_env().unwrap_or(DEFAULT_VERSION));
            return 0;
        }
        Some("--help" | "-h") | None => {
            println!("usage: vllm serve MODEL [options]\n\nfaultkit's fake vLLM server: it plays a vLLM launch as a real process tree.\nSee the faultkit README for the FAULTKIT_* environment it reads.");
            return 0;
        }
        _ => {}
    }
    match Setup::for_api_server(argv) {
        Ok((setup, listener)) => replay::run_api_server(setup, listener),
        Err(e) => {
            eprintln!("fake-vllm: {e}");
            2
        }
    }
}

/// `python3 …`: the vLLM module forms run the fake server; anything else runs the next real
/// `python3` on `PATH`, so the shim never breaks a user's other scripts.
fn python(argv: &[String]) -> i32 {
    let is_vllm = argv
        .windows(2)
        .any(|w| w[0] == "-m" && w[1].starts_with("vllm.entrypoints"));
    if is_vllm {
        return server(argv.to_vec());
    }
    replay::exec_next_on_path(argv)
}

const DEFAULT_VERSION: Version = Version::new(0, 15, 1);

fn version_from_env() -> Option<Version> {
    std::env::var(ENV_VLLM)
        .ok()
        .and_then(|v| Version::parse(&v))
}

impl Setup {
    /// The API server's setup: reads the host (model directory, GPU state, port) and records
    /// what it found, so the processes it starts agree with it.
    fn for_api_server(argv: Vec<String>) -> Result<(Setup, Option<TcpListener>), SetupError> {
        let mut setup = Setup::common(argv, clock::wall_now())?;
        let preset = resolve_model(
            &setup.scenario.args.model,
            std::env::var_os(ENV_MODELS).as_deref().map(Path::new),
        )?;
        setup.scenario.model = preset;
        // GPU memory others hold: the worst GPU among the launch's.
        let state = ensure_gpu_state(&setup)?;
        let world = setup.scenario.args.world_size().max(1);
        setup.held_mib = (0..world)
            .map(|r| state.used_mib(setup.gpu_of(r)))
            .max()
            .unwrap_or(0);
        let args = &setup.scenario.args;
        let listener = if args.problem.is_none() {
            let host = if args.host.is_empty() {
                "0.0.0.0"
            } else {
                &args.host
            };
            match TcpListener::bind((host, args.port)) {
                Ok(l) => Some(l),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    setup.port_busy = true;
                    None
                }
                Err(e) => return Err(SetupError(format!("cannot bind {host}:{}: {e}", args.port))),
            }
        } else {
            None
        };
        setup.apply_facts();
        Ok((setup, listener))
    }

    /// A child's setup, from what its parent passed on.
    fn for_child() -> Result<Setup, SetupError> {
        let argv: Vec<String> = serde_json::from_str(&env_required(ENV_ARGV)?)
            .map_err(|e| SetupError(format!("{ENV_ARGV}: {e}")))?;
        let t0 = SimTime(
            env_required(ENV_T0)?
                .parse()
                .map_err(|e| SetupError(format!("{ENV_T0}: {e}")))?,
        );
        let mut setup = Setup::common(argv, t0)?;
        let preset = env_required(ENV_PRESET)?;
        setup.scenario.model = if preset == "-" {
            None
        } else {
            Some(
                catalog::model(&preset)
                    .ok_or_else(|| SetupError(format!("unknown preset {preset}")))?,
            )
        };
        setup.held_mib = env_required(ENV_HELD_MIB)?.parse().unwrap_or(0);
        setup.port_busy = env_required(ENV_PORT_BUSY)? == "1";
        setup.apply_facts();
        Ok(setup)
    }

    fn common(argv: Vec<String>, t0: SimTime) -> Result<Setup, SetupError> {
        let args = ServeArgs::parse_argv(&argv).map_err(SetupError)?;
        let mut scenario = match std::env::var_os(ENV_SCENARIO) {
            Some(p) => Scenario::load(Path::new(&p)).map_err(|e| SetupError(e.to_string()))?,
            None => adhoc_scenario(&args),
        };
        if let Some(v) = version_from_env() {
            scenario.vllm = v;
        }
        scenario.command =
            shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "));
        scenario.args = args;
        // Faults the host now shows for real are not taken from the file.
        scenario.faults.retain(|f| !f.is_around_server());
        scenario.host.ports_in_use.clear();
        for key in VLLM_ENV {
            if let Ok(v) = std::env::var(key) {
                scenario.env.insert(key.to_string(), v);
            }
        }
        let scale = match std::env::var(ENV_TIME_SCALE) {
            Err(_) => 1.0,
            Ok(s) => match s.parse::<f64>() {
                Ok(x) if x > 0.0 && x <= TIME_SCALE_MAX => x,
                _ => {
                    return Err(SetupError(format!(
                        "{ENV_TIME_SCALE}={s:?}: expected a number in (0, {TIME_SCALE_MAX}]"
                    )))
                }
            },
        };
        let seed = match std::env::var(ENV_SEED) {
            Err(_) => Seed(0),
            Ok(s) => Seed(
                s.parse()
                    .map_err(|_| SetupError(format!("{ENV_SEED}={s:?}: expected an integer")))?,
            ),
        };
        let visible = scenario
            .env
            .get("CUDA_VISIBLE_DEVICES")
            .map(|v| {
                v.split(',')
                    .filter_map(|x| x.trim().parse::<u32>().ok())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Setup {
            scenario,
            argv,
            seed,
            scale,
            t0,
            gpu_state: std::env::var_os(ENV_GPU_STATE)
                .map(PathBuf::from)
                .unwrap_or_else(default_gpu_state),
            shm_dir: std::env::var_os(ENV_SHM_DIR)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/dev/shm")),
            shm_prefix: std::env::var(ENV_SHM_PREFIX).unwrap_or_else(|_| "psm_".into()),
            visible,
            held_mib: 0,
            port_busy: false,
        })
    }

    /// Turns the live facts into the scenario's terms, so the script derives the failure.
    fn apply_facts(&mut self) {
        if self.held_mib > 0 {
            self.scenario.faults.push(Fault::HoldGpuMemory {
                gib: self.held_mib as f64 / 1024.0,
            });
        }
        if self.port_busy {
            let port = self.scenario.args.port;
            self.scenario.host.ports_in_use.push(port);
        }
        if let Ok(state) = gpu::GpuState::load(&self.gpu_state) {
            if let Some(g) = catalog::gpu(&state.model) {
                // The state is this machine's; a multi-machine scenario has as many of them.
                self.scenario.gpu = g;
                self.scenario.gpu_count = state.count * self.scenario.host.nodes.max(1);
            }
        }
    }

    /// Physical GPU index of `rank`.
    pub fn gpu_of(&self, rank: u32) -> u32 {
        self.visible.get(rank as usize).copied().unwrap_or(rank)
    }

    /// The variables a child process needs on top of the inherited environment.
    fn child_env(&self, role: &str) -> Vec<(&'static str, String)> {
        vec![
            (ENV_ROLE, role.to_string()),
            (
                ENV_ARGV,
                serde_json::to_string(&self.argv).unwrap_or_default(),
            ),
            (ENV_T0, self.t0.0.to_string()),
            (
                ENV_PRESET,
                self.scenario
                    .model
                    .map_or_else(|| "-".to_string(), |m| m.id.clone()),
            ),
            (ENV_HELD_MIB, self.held_mib.to_string()),
            (
                ENV_PORT_BUSY,
                if self.port_busy { "1" } else { "0" }.to_string(),
            ),
            (ENV_SEED, self.seed.0.to_string()),
        ]
    }
}

fn env_required(key: &str) -> Result<String, SetupError> {
    std::env::var(key).map_err(|_| SetupError(format!("{key} is not set")))
}

/// Where the GPU state lives when `FAULTKIT_GPU_STATE` is not set.
pub fn default_gpu_state() -> PathBuf {
    std::env::temp_dir().join("faultkit-gpu-state.json")
}

/// Parses `8xh100`, `h100:8` or `h100`.
pub fn parse_gpus(s: &str) -> Result<(&'static catalog::GpuSpec, u32), SetupError> {
    let s = s.trim();
    let (model, count) = if let Some((n, m)) = s
        .split_once('x')
        .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    {
        (m, n.parse::<u32>().ok())
    } else if let Some((m, n)) = s.split_once(':') {
        (m, n.parse::<u32>().ok())
    } else {
        (s, Some(1))
    };
    let count = count.filter(|&c| (1..=64).contains(&c)).ok_or_else(|| {
        SetupError(format!(
            "{ENV_GPUS}={s:?}: expected COUNTxMODEL (1–64 GPUs)"
        ))
    })?;
    let spec = catalog::gpu(model).ok_or_else(|| {
        let known: Vec<&str> = catalog::gpus().iter().map(|g| g.id.as_str()).collect();
        SetupError(format!(
            "{ENV_GPUS}: unknown GPU `{model}` (known: {})",
            known.join(", ")
        ))
    })?;
    Ok((spec, count))
}

/// Reads the GPU state, creating it from `FAULTKIT_GPUS` or the scenario if it does not exist.
fn ensure_gpu_state(setup: &Setup) -> Result<gpu::GpuState, SetupError> {
    if let Ok(s) = gpu::GpuState::load(&setup.gpu_state) {
        return Ok(s);
    }
    let (spec, count) = match std::env::var(ENV_GPUS) {
        Ok(v) => parse_gpus(&v)?,
        Err(_) if std::env::var_os(ENV_SCENARIO).is_some() => {
            (setup.scenario.gpu, setup.scenario.gpu_count)
        }
        Err(_) => (
            catalog::gpu(DEFAULT_GPUS.0).expect("default GPU is in the catalog"),
            DEFAULT_GPUS.1,
        ),
    };
    let state = gpu::GpuState::new(&spec.id, count);
    state
        .store(&setup.gpu_state)
        .map_err(|e| SetupError(format!("{}: {e}", setup.gpu_state.display())))?;
    Ok(state)
}

/// A scenario for a command line run without `FAULTKIT_SCENARIO`.
fn adhoc_scenario(args: &ServeArgs) -> Scenario {
    let (gpu, gpu_count) = std::env::var(ENV_GPUS)
        .ok()
        .and_then(|v| parse_gpus(&v).ok())
        .unwrap_or_else(|| {
            (
                catalog::gpu(DEFAULT_GPUS.0).expect("default GPU is in the catalog"),
                DEFAULT_GPUS.1,
            )
        });
    Scenario {
        name: "adhoc".into(),
        group: "process".into(),
        path: PathBuf::new(),
        summary: String::new(),
        tags: Vec::new(),
        runners: vec![Runner::Process],
        vllm: version_from_env().unwrap_or(DEFAULT_VERSION),
        command: String::new(),
        args: args.clone(),
        gpu,
        gpu_count,
        model: None,
        env: BTreeMap::new(),
        host: Host::default(),
        faults: Vec::new(),
        variants: Vec::new(),
        renderings: Vec::new(),
        real: None,
        expect: Expect {
            status: "ready".into(),
            root_cause: None,
            process: None,
            stale: false,
            damage: None,
        },
    }
}

/// The model preset whose `config.json` sits at `model` (a directory, or a repo id under
/// `models_root`). `Ok(None)`: no such directory (vLLM then fails to find the model).
pub fn resolve_model(
    model: &str,
    models_root: Option<&Path>,
) -> Result<Option<&'static ModelPreset>, SetupError> {
    let mut candidates = vec![PathBuf::from(model)];
    if let Some(root) = models_root {
        if !model.starts_with('/') && !model.split('/').any(|c| c == "..") {
            candidates.push(root.join(model));
        }
    }
    for dir in candidates {
        if !dir.is_dir() {
            continue;
        }
        let path = dir.join("config.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(None);
        };
        let found: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| SetupError(format!("{}: {e}", path.display())))?;
        return catalog::models()
            .iter()
            .find(|m| serde_json::from_str::<serde_json::Value>(&m.config_json()).ok() == Some(found.clone()))
            .map(Some)
            .ok_or_else(|| {
                SetupError(format!(
                    "{}: matches no faultkit model preset (model directories must hold a preset's config.json)",
                    path.display()
                ))
            });
    }
    Ok(None)
}

/// A fake host directory whose GPUs live processes hold, asked for other GPUs.
#[derive(Debug)]
pub struct HostInUse {
    pub dir: PathBuf,
    /// The GPUs it has (`8xh100`).
    pub gpus: String,
    /// Processes holding them.
    pub pids: Vec<u32>,
}

impl fmt::Display for HostInUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pids: Vec<String> = self.pids.iter().map(u32::to_string).collect();
        write!(
            f,
            "{} is in use: its {} are held by pid {}; stop those servers (`faultkit stop`, or \
             kill them) or prepare another directory",
            self.dir.display(),
            self.gpus,
            pids.join(", ")
        )
    }
}

impl std::error::Error for HostInUse {}

/// A directory that makes this machine a fake GPU host: `bin/` with `vllm`, `python3`,
/// `python` and `nvidia-smi` shims pointing at `fake_vllm`, `models/` (see
/// [`FakeHost::add_model`]), and `gpus.json` with `count` GPUs of `gpu`.
#[derive(Clone, Debug)]
pub struct FakeHost {
    pub dir: PathBuf,
}

impl FakeHost {
    pub fn create(
        dir: &Path,
        fake_vllm: &Path,
        gpu: &str,
        count: u32,
    ) -> std::io::Result<FakeHost> {
        // A host in use keeps its GPU state (servers started on it still hold their memory) and
        // its shims; other GPUs are refused before anything is touched.
        let state = dir.join("gpus.json");
        let in_use = match gpu::GpuState::load(&state) {
            Ok(old) => {
                let live: Vec<u32> = old.live_users().iter().map(|u| u.pid).collect();
                let other_gpus = old.model != gpu || old.count != count;
                if !live.is_empty() && other_gpus {
                    return Err(std::io::Error::other(HostInUse {
                        dir: dir.to_path_buf(),
                        gpus: format!("{}x{}", old.count, old.model),
                        pids: live,
                    }));
                }
                !live.is_empty()
            }
            Err(_) => false,
        };
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin)?;
        for name in ["vllm", "python3", "python", "nvidia-smi"] {
            let link = bin.join(name);
            if in_use && std::fs::read_link(&link).is_ok_and(|t| t == fake_vllm) {
                continue;
            }
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(fake_vllm, &link)?;
        }
        std::fs::create_dir_all(dir.join("models"))?;
        if !in_use {
            gpu::GpuState::new(gpu, count).store(&state)?;
        }
        Ok(FakeHost {
            dir: dir.to_path_buf(),
        })
    }

    /// Puts `preset` where the command's model argument `at` (a repo id) resolves.
    pub fn add_model(&self, preset: &ModelPreset, at: &str) -> std::io::Result<()> {
        write_model_dir(preset, &self.dir.join("models").join(at))
    }

    /// Every preset under its repo id.
    pub fn add_all_models(&self) -> std::io::Result<()> {
        for m in catalog::models() {
            self.add_model(m, &m.repo)?;
        }
        Ok(())
    }

    /// The environment a server (and faultkit's checks) on this host get: the shims first on
    /// `PATH`, the models, the GPU state, the time scale.
    pub fn env(&self, time_scale: f64) -> Vec<(String, String)> {
        vec![
            (
                "PATH".into(),
                format!(
                    "{}:{}",
                    self.dir.join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
            (
                ENV_MODELS.into(),
                self.dir.join("models").display().to_string(),
            ),
            (
                ENV_GPU_STATE.into(),
                self.dir.join("gpus.json").display().to_string(),
            ),
            (ENV_TIME_SCALE.into(), time_scale.to_string()),
        ]
    }
}

/// Writes a preset's `config.json` (and `hf_quant_config.json`) into `dir`.
pub fn write_model_dir(preset: &ModelPreset, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("config.json"), preset.config_json())?;
    if let Some(q) = preset.hf_quant_config_json() {
        std::fs::write(dir.join("hf_quant_config.json"), q)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_specs_parse() {
        assert_eq!(parse_gpus("8xh100").unwrap().1, 8);
        assert_eq!(parse_gpus("rtx-pro-6000-blackwell:4").unwrap().1, 4);
        assert_eq!(parse_gpus("t4").unwrap().1, 1);
        assert!(parse_gpus("0xh100").is_err());
        assert!(parse_gpus("8xnope").is_err());
    }

    #[test]
    fn model_dirs_resolve_to_their_preset() {
        let dir = std::env::temp_dir().join(format!("fk-model-{}", std::process::id()));
        let preset = catalog::model("kimi-k2.5-nvfp4").unwrap();
        write_model_dir(preset, &dir.join("nvidia/Kimi-K2.5-NVFP4")).unwrap();
        let got = resolve_model("nvidia/Kimi-K2.5-NVFP4", Some(&dir)).unwrap();
        assert_eq!(got.map(|m| m.id.as_str()), Some("kimi-k2.5-nvfp4"));
        assert!(resolve_model("nvidia/Nope", Some(&dir)).unwrap().is_none());
        std::fs::write(dir.join("nvidia/Kimi-K2.5-NVFP4/config.json"), "{}").unwrap();
        assert!(resolve_model("nvidia/Kimi-K2.5-NVFP4", Some(&dir)).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
