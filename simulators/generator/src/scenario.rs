//! Scenario files (`scenarios/<group>/<name>.toml`): the raw serde mirror and the validated
//! [`Scenario`].
//!
//! Two phases, as in ripgrep's `LowArgs` → `HiArgs`: [`RawScenario`] mirrors the TOML exactly
//! (unknown keys are errors), [`Scenario::from_toml`] checks every value and unit and reports
//! problems with file, line and column ([`ScenarioError`]).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::catalog::{self, GpuSpec, ModelPreset};
use crate::version::Version;
use vllm_argv::ServeArgs;
use vocab::taxonomy;

/// A scenario-file problem, located in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

impl std::error::Error for ScenarioError {}

/// The scenario TOML, field for field.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub summary: Spanned<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub runners: Option<Spanned<Vec<String>>>,
    pub vllm: Spanned<String>,
    pub command: Spanned<String>,
    pub gpus: Spanned<RawGpus>,
    #[serde(default)]
    pub model: Option<Spanned<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub host: Option<Spanned<RawHost>>,
    #[serde(default)]
    pub faults: Vec<Spanned<RawFault>>,
    #[serde(default)]
    pub variant: Vec<Spanned<RawVariant>>,
    pub expect: Spanned<RawExpect>,
}

/// `[[variant]]`: the same case as it was run on older releases (another command or model).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    pub before: Spanned<String>,
    #[serde(default)]
    pub command: Option<Spanned<String>>,
    #[serde(default)]
    pub model: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGpus {
    pub model: Spanned<String>,
    pub count: Spanned<u32>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawHost {
    #[serde(default)]
    pub ram_gib: Option<f64>,
    #[serde(default)]
    pub shm_mib: Option<u64>,
    #[serde(default)]
    pub ports_in_use: Vec<u16>,
    #[serde(default)]
    pub missing_modules: Vec<String>,
    #[serde(default)]
    pub nccl: Option<Spanned<String>>,
    #[serde(default)]
    pub platform: Option<Spanned<String>>,
    #[serde(default)]
    pub nodes: Option<Spanned<u32>>,
    #[serde(default)]
    pub platform_plugin: Option<Spanned<String>>,
    #[serde(default)]
    pub cpus: Option<u32>,
    #[serde(default)]
    pub numa_nodes: Option<u32>,
    #[serde(default)]
    pub ulimit_nofile: Option<u64>,
    #[serde(default)]
    pub python: Option<Spanned<String>>,
    #[serde(default)]
    pub python_home: Option<String>,
    #[serde(default)]
    pub venv: Option<String>,
    #[serde(default)]
    pub transformers: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFault {
    pub kind: Spanned<String>,
    #[serde(default)]
    pub after: Option<Spanned<String>>,
    #[serde(default)]
    pub new_launch_lines: Option<u32>,
    #[serde(default)]
    pub new_command: Option<Spanned<String>>,
    #[serde(default)]
    pub append: Option<bool>,
    #[serde(default)]
    pub process: Option<Spanned<String>>,
    #[serde(default)]
    pub signal: Option<Spanned<String>>,
    #[serde(default)]
    pub at: Option<Spanned<String>>,
    #[serde(default)]
    pub gib: Option<f64>,
    #[serde(default)]
    pub node: Option<u32>,
    #[serde(default)]
    pub earlier_launches: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    pub status: Spanned<String>,
    #[serde(default)]
    pub root_cause: Option<Spanned<String>>,
    #[serde(default)]
    pub process: Option<String>,
    #[serde(default)]
    pub stale: Option<bool>,
    #[serde(default)]
    pub damage: Option<Vec<Spanned<String>>>,
}

/// Where the scenario can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Runner {
    Text,
    Process,
    Container,
}

impl Runner {
    pub fn parse(s: &str) -> Option<Runner> {
        match s {
            "text" => Some(Runner::Text),
            "process" => Some(Runner::Process),
            "container" => Some(Runner::Container),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Runner::Text => "text",
            Runner::Process => "process",
            Runner::Container => "container",
        }
    }
}

/// Facts of the host that configuration alone does not show.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// Host RAM; loading weights beyond it gets the process killed by the OOM killer.
    pub ram_gib: Option<f64>,
    /// Size of /dev/shm (docker's default is 64 MiB).
    pub shm_mib: Option<u64>,
    pub ports_in_use: Vec<u16>,
    pub missing_modules: Vec<String>,
    pub nccl: Option<NcclFault>,
    /// `cpu`: no GPU, vLLM's CPU platform plugin (realism captures).
    pub platform: Platform,
    /// Machines the GPUs are spread over (a Ray cluster when more than one).
    pub nodes: u32,
    /// The platform plugin's entry point (`name = module:attr`) for `cpu-plugin`.
    pub platform_plugin: (String, String),
    /// Physical cores and NUMA nodes the CPU platform sees.
    pub cpus: u32,
    pub numa_nodes: u32,
    /// Hard limit of open files (`ulimit -Hn`); below 65535 the API server warns.
    pub ulimit_nofile: Option<u64>,
    /// The Python installation vLLM runs in.
    pub install: Install,
    /// The installed transformers release (`None`: the one of the version profile's era).
    pub transformers: Option<(u32, u32)>,
}

/// Where vLLM is installed: the interpreter and the environment. `None` fields keep the version
/// profile's own (a container image's system Python).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Install {
    /// `3.11`: decides stdlib and uvloop frames, comprehension frames and carets.
    pub python: Option<(u32, u32)>,
    /// The interpreter's prefix (`/home/.pyenv/versions/3.11.7`); stdlib is `<home>/lib/pythonX.Y`.
    pub python_home: Option<String>,
    /// A virtualenv vLLM was pip-installed into; `{vllm}` stands for the release.
    pub venv: Option<String>,
}

/// The CPU platform plugin of the lab captures (`vllm-lab-cpu-plugin`).
pub const DEFAULT_PLATFORM_PLUGIN: (&str, &str) = ("lab_cpu", "vllm_lab_cpu_plugin:register");

impl Default for Host {
    fn default() -> Host {
        Host {
            ram_gib: None,
            shm_mib: None,
            ports_in_use: Vec::new(),
            missing_modules: Vec::new(),
            nccl: None,
            platform: Platform::default(),
            nodes: 1,
            platform_plugin: (
                DEFAULT_PLATFORM_PLUGIN.0.to_string(),
                DEFAULT_PLATFORM_PLUGIN.1.to_string(),
            ),
            cpus: 8,
            numa_nodes: 1,
            ulimit_nofile: None,
            install: Install::default(),
            transformers: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Platform {
    #[default]
    Cuda,
    /// vLLM's CUDA wheel running on a CPU-only host through the CPU platform plugin.
    CpuPlugin,
    /// No GPU and no plugin: "Failed to infer device type".
    CpuNoPlugin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcclFault {
    /// Peer access between devices fails: `ncclUnhandledCudaError`.
    PeerAccess,
}

/// A file or process fault, from the closed list in `scenarios/README.md`.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The server is started again with output redirected (`>`) into the same log.
    RelaunchIntoSameLog {
        after: RelaunchAfter,
        /// Lines the new launch has written when someone reads the file; `None`: all of them.
        new_launch_lines: Option<u32>,
        new_command: Option<String>,
    },
    /// The log is truncated with `>` by a relaunch while the old server still writes to it.
    TruncateWhileWriting {
        append: bool,
        new_command: Option<String>,
    },
    PartialLastLine,
    Rotate,
    Kill {
        process: String,
        signal: Signal,
        at: Phase,
    },
    Hang {
        process: String,
        at: Phase,
    },
    OrphanWorkers,
    HoldGpuMemory {
        gib: f64,
    },
    ShmLeftover,
    NodeLoss {
        node: u32,
        at: Phase,
    },
    /// Earlier healthy launches of the same file before the scenario's launch.
    EarlierLaunches {
        count: u32,
    },
    /// The whole host (container) is killed at a phase: every process dies at once, the log
    /// just ends (`docker kill`, a power loss).
    HostKill {
        at: Phase,
    },
    /// The host restarts after the launch came up; pids are handed out again from the start.
    HostRestart,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelaunchAfter {
    /// The first launch crashed on its own.
    Crash,
    /// The first launch was killed with `kill -9` of the API server (workers may survive).
    Kill9,
    /// The first launch was running fine and was stopped.
    Ready,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Kill,
    Term,
    Segv,
    Bus,
}

impl Signal {
    pub fn number(self) -> i32 {
        match self {
            Signal::Kill => 9,
            Signal::Term => 15,
            Signal::Segv => 11,
            Signal::Bus => 7,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Signal::Kill => "SIGKILL",
            Signal::Term => "SIGTERM",
            Signal::Segv => "SIGSEGV",
            Signal::Bus => "SIGBUS",
        }
    }
}

/// When a process fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// During distributed init (before the worker prefix is set).
    InitDevice,
    /// While loading weights.
    LoadWeights,
    /// During torch.compile / CUDA graph capture.
    Compile,
    /// After `Application startup complete.`, while serving.
    Serving,
}

impl Phase {
    fn parse(s: &str) -> Option<Phase> {
        Some(match s {
            "init_device" => Phase::InitDevice,
            "load_weights" => Phase::LoadWeights,
            "compile" => Phase::Compile,
            "serving" => Phase::Serving,
            _ => return None,
        })
    }
}

/// What the scenario says triage must conclude.
#[derive(Clone, Debug, PartialEq)]
pub struct Expect {
    pub status: String,
    pub root_cause: Option<String>,
    /// A glob (`Worker_TP*`) over the root cause's process name.
    pub process: Option<String>,
    pub stale: bool,
    pub damage: Option<Vec<String>>,
}

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub group: String,
    pub path: PathBuf,
    pub summary: String,
    pub tags: Vec<String>,
    pub runners: Vec<Runner>,
    pub vllm: Version,
    pub command: String,
    pub args: ServeArgs,
    pub gpu: &'static GpuSpec,
    pub gpu_count: u32,
    /// `None`: the model path in the command does not exist on the host.
    pub model: Option<&'static ModelPreset>,
    pub env: BTreeMap<String, String>,
    pub host: Host,
    pub faults: Vec<Fault>,
    /// The same case on older releases, oldest bound first.
    pub variants: Vec<Variant>,
    pub expect: Expect,
}

/// How the case was run on releases older than `before` (e.g. another base model, because the
/// newer one fails earlier there for an unrelated reason).
#[derive(Clone, Debug)]
pub struct Variant {
    pub before: Version,
    pub command: Option<(String, ServeArgs)>,
    /// `Some(None)`: the model path does not exist in this variant.
    pub model: Option<Option<&'static ModelPreset>>,
}

/// Statuses a scenario may expect (the verdict statuses).
pub const STATUSES: &[&str] = &["ready", "stopped", "crashed", "hung", "starting", "unknown"];
/// Damage kinds.
pub const DAMAGE_KINDS: &[&str] = &["nul_run", "partial_line", "interleaved_line", "rotated"];

struct Located<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Located<'_> {
    fn at(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        let (line, column) = line_col(self.text, span.start);
        ScenarioError {
            file: self.file.to_path_buf(),
            line,
            column,
            message: message.into(),
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

impl Scenario {
    /// Reads and validates a scenario file. `group` and `name` come from its path.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.to_path_buf(),
            line: 1,
            column: 1,
            message: format!("cannot read scenario file: {e}"),
        })?;
        Scenario::from_toml(path, &text)
    }

    /// Validates scenario text; `path` names it in errors and gives its name and group.
    pub fn from_toml(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let loc = Located { file: path, text };
        let raw: RawScenario = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            loc.at(span, e.message().trim_end().to_string())
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let group = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();

        let vllm = Version::parse(raw.vllm.get_ref()).ok_or_else(|| {
            loc.at(
                raw.vllm.span(),
                format!("`{}` is not a vLLM version", raw.vllm.get_ref()),
            )
        })?;
        let args = ServeArgs::parse_command(raw.command.get_ref())
            .map_err(|e| loc.at(raw.command.span(), e))?;
        let gpus = raw.gpus.get_ref();
        let gpu = catalog::gpu(gpus.model.get_ref()).ok_or_else(|| {
            let known: Vec<_> = catalog::gpus().iter().map(|g| g.id.as_str()).collect();
            loc.at(
                gpus.model.span(),
                format!(
                    "unknown GPU model `{}` (known: {})",
                    gpus.model.get_ref(),
                    known.join(", ")
                ),
            )
        })?;
        let gpu_count = *gpus.count.get_ref();
        if gpu_count == 0 || gpu_count > 64 {
            return Err(loc.at(gpus.count.span(), "gpus.count must be between 1 and 64"));
        }
        let model = match &raw.model {
            None => None,
            Some(m) => Some(catalog::model(m.get_ref()).ok_or_else(|| {
                let known: Vec<_> = catalog::models().iter().map(|m| m.id.as_str()).collect();
                loc.at(
                    m.span(),
                    format!(
                        "unknown model preset `{}` (known: {}; omit `model` for a missing model path)",
                        m.get_ref(),
                        known.join(", ")
                    ),
                )
            })?),
        };
        let runners = match &raw.runners {
            None => vec![Runner::Text],
            Some(r) => {
                let mut out = Vec::new();
                for s in r.get_ref() {
                    out.push(Runner::parse(s).ok_or_else(|| {
                        loc.at(
                            r.span(),
                            format!("unknown runner `{s}` (known: text, process, container)"),
                        )
                    })?);
                }
                if out.is_empty() {
                    return Err(loc.at(r.span(), "runners must not be empty"));
                }
                out
            }
        };
        let host = match &raw.host {
            None => Host::default(),
            Some(h) => {
                let r = h.get_ref();
                let nccl = match &r.nccl {
                    None => None,
                    Some(n) => match n.get_ref().as_str() {
                        "peer_access" => Some(NcclFault::PeerAccess),
                        other => {
                            return Err(loc.at(
                                n.span(),
                                format!("unknown host.nccl fault `{other}` (known: peer_access)"),
                            ))
                        }
                    },
                };
                let platform = match &r.platform {
                    None => Platform::Cuda,
                    Some(p) => match p.get_ref().as_str() {
                        "cuda" => Platform::Cuda,
                        "cpu-plugin" => Platform::CpuPlugin,
                        "cpu" => Platform::CpuNoPlugin,
                        other => {
                            return Err(loc.at(
                                p.span(),
                                format!(
                                    "unknown host.platform `{other}` (known: cuda, cpu-plugin, cpu)"
                                ),
                            ))
                        }
                    },
                };
                let nodes = match &r.nodes {
                    None => 1,
                    Some(n)
                        if (1..=16).contains(n.get_ref())
                            && gpu_count.is_multiple_of(*n.get_ref()) =>
                    {
                        *n.get_ref()
                    }
                    Some(n) => {
                        return Err(
                            loc.at(n.span(), "host.nodes must be 1–16 and divide gpus.count")
                        )
                    }
                };
                let platform_plugin =
                    match &r.platform_plugin {
                        None => Host::default().platform_plugin,
                        Some(e) => match e.get_ref().split_once('=') {
                            Some((n, v)) if !n.trim().is_empty() && v.contains(':') => {
                                (n.trim().to_string(), v.trim().to_string())
                            }
                            _ => return Err(loc.at(
                                e.span(),
                                "host.platform_plugin must be an entry point `name = module:attr`",
                            )),
                        },
                    };
                let python = match &r.python {
                    None => None,
                    Some(p) => Some(parse_minor(p.get_ref()).ok_or_else(|| {
                        loc.at(p.span(), "host.python must be a Python version like `3.11`")
                    })?),
                };
                let transformers = match &r.transformers {
                    None => None,
                    Some(t) => Some(parse_minor(t.get_ref()).ok_or_else(|| {
                        loc.at(
                            t.span(),
                            "host.transformers must be a version like `4.57.6`",
                        )
                    })?),
                };
                let defaults = Host::default();
                Host {
                    nodes,
                    ram_gib: r.ram_gib,
                    shm_mib: r.shm_mib,
                    ports_in_use: r.ports_in_use.clone(),
                    missing_modules: r.missing_modules.clone(),
                    nccl,
                    platform,
                    platform_plugin,
                    cpus: r.cpus.unwrap_or(defaults.cpus).max(1),
                    numa_nodes: r.numa_nodes.unwrap_or(defaults.numa_nodes).max(1),
                    ulimit_nofile: r.ulimit_nofile,
                    install: Install {
                        python,
                        python_home: r.python_home.clone(),
                        venv: r.venv.clone(),
                    },
                    transformers,
                }
            }
        };
        let mut variants = Vec::new();
        for v in &raw.variant {
            let r = v.get_ref();
            let before = Version::parse(r.before.get_ref()).ok_or_else(|| {
                loc.at(
                    r.before.span(),
                    format!("`{}` is not a vLLM version", r.before.get_ref()),
                )
            })?;
            let command = match &r.command {
                None => None,
                Some(c) => Some((
                    c.get_ref().clone(),
                    ServeArgs::parse_command(c.get_ref()).map_err(|e| loc.at(c.span(), e))?,
                )),
            };
            let model = match &r.model {
                None => None,
                Some(m) if m.get_ref().is_empty() => Some(None),
                Some(m) => Some(Some(catalog::model(m.get_ref()).ok_or_else(|| {
                    loc.at(m.span(), format!("unknown model preset `{}`", m.get_ref()))
                })?)),
            };
            variants.push(Variant {
                before,
                command,
                model,
            });
        }
        variants.sort_by_key(|v| v.before);
        let mut faults = Vec::new();
        for f in &raw.faults {
            faults.push(parse_fault(&loc, f)?);
        }
        let e = raw.expect.get_ref();
        if !STATUSES.contains(&e.status.get_ref().as_str()) {
            return Err(loc.at(
                e.status.span(),
                format!(
                    "unknown status `{}` (known: {})",
                    e.status.get_ref(),
                    STATUSES.join(", ")
                ),
            ));
        }
        if let Some(rc) = &e.root_cause {
            if !taxonomy::contains(rc.get_ref()) && rc.get_ref() != "unknown" {
                return Err(loc.at(
                    rc.span(),
                    format!(
                        "unknown root-cause id `{}` (not in taxonomy.toml)",
                        rc.get_ref()
                    ),
                ));
            }
        }
        if let Some(d) = &e.damage {
            for k in d {
                if !DAMAGE_KINDS.contains(&k.get_ref().as_str()) {
                    return Err(loc.at(
                        k.span(),
                        format!(
                            "unknown damage kind `{}` (known: {})",
                            k.get_ref(),
                            DAMAGE_KINDS.join(", ")
                        ),
                    ));
                }
            }
        }
        let expect = Expect {
            status: e.status.get_ref().clone(),
            root_cause: e.root_cause.as_ref().map(|r| r.get_ref().clone()),
            process: e.process.clone(),
            stale: e.stale.unwrap_or(false),
            damage: e
                .damage
                .as_ref()
                .map(|d| d.iter().map(|k| k.get_ref().clone()).collect()),
        };
        let s = Scenario {
            name,
            group,
            path: path.to_path_buf(),
            summary: raw.summary.into_inner(),
            tags: raw.tags,
            runners,
            vllm,
            command: raw.command.get_ref().clone(),
            args,
            gpu,
            gpu_count,
            model,
            env: raw.env,
            host,
            faults,
            variants,
            expect,
        };
        if let Some(why) = s.unmodelled(s.vllm) {
            return Err(loc.at(raw.vllm.span(), why));
        }
        Ok(s)
    }

    /// Why the simulator cannot play this scenario on `version`, when it cannot. vLLM's V1
    /// CPU worker with `VLLM_CPU_OMP_THREADS_BIND=all` or `nobind` on the CUDA wheel gets past
    /// every op the simulator knows to fail there (it looks `init_shm_manager` up with
    /// `hasattr`, and runs SiluAndMul natively); no real capture shows what fails next, and the
    /// simulator does not make it up.
    pub fn unmodelled(&self, version: Version) -> Option<String> {
        if self.host.platform != Platform::CpuPlugin {
            return None;
        }
        let p = crate::profile::Profile::for_version(version);
        let engine = p.cpu_engine.unwrap_or(p.engine);
        let bind = self
            .env
            .get("VLLM_CPU_OMP_THREADS_BIND")
            .map_or(p.cpu_threads_bind_default.as_str(), String::as_str);
        (engine == crate::profile::Engine::V1 && matches!(bind, "all" | "nobind")).then(|| {
            format!(
                "vLLM {version} on the CPU platform with VLLM_CPU_OMP_THREADS_BIND={bind} is not \
                 simulated: its V1 CPU worker gets past the ops known to fail there, and no real \
                 log shows what fails next (use `auto` or a list of CPUs)"
            )
        })
    }

    /// The scenario as run on `version`: the version set, and the variant for it applied (the
    /// one with the lowest `before` above `version`).
    pub fn at_version(&self, version: Version) -> Scenario {
        let mut s = self.clone();
        s.vllm = version;
        if let Some(v) = self.variants.iter().find(|v| version < v.before) {
            if let Some((command, args)) = &v.command {
                s.command = command.clone();
                s.args = args.clone();
            }
            if let Some(model) = v.model {
                s.model = model;
            }
        }
        s
    }

    /// `group/name`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.group, self.name)
    }

    /// NO_COLOR as vLLM reads it: any value but "0" disables colour.
    pub fn no_color(&self) -> bool {
        self.env.get("NO_COLOR").is_some_and(|v| v != "0")
    }

    pub fn fault<T>(&self, f: impl Fn(&Fault) -> Option<T>) -> Option<T> {
        self.faults.iter().find_map(f)
    }
}

/// `3.11`, `3.11.7`, `4.57.6` → (major, minor).
fn parse_minor(s: &str) -> Option<(u32, u32)> {
    let mut it = s.trim().split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

fn parse_fault(loc: &Located<'_>, f: &Spanned<RawFault>) -> Result<Fault, ScenarioError> {
    let r = f.get_ref();
    let need = |field: &Option<Spanned<String>>, name: &str| -> Result<String, ScenarioError> {
        field.as_ref().map(|s| s.get_ref().clone()).ok_or_else(|| {
            loc.at(
                f.span(),
                format!("fault `{}` needs `{name}`", r.kind.get_ref()),
            )
        })
    };
    let phase = |field: &Option<Spanned<String>>| -> Result<Phase, ScenarioError> {
        let s = field
            .as_ref()
            .ok_or_else(|| loc.at(f.span(), format!("fault `{}` needs `at`", r.kind.get_ref())))?;
        Phase::parse(s.get_ref()).ok_or_else(|| {
            loc.at(
                s.span(),
                format!(
                    "unknown phase `{}` (known: init_device, load_weights, compile, serving)",
                    s.get_ref()
                ),
            )
        })
    };
    Ok(match r.kind.get_ref().as_str() {
        "relaunch_into_same_log" => {
            let after = match r.after.as_ref().map(|a| a.get_ref().as_str()) {
                None | Some("crash") => RelaunchAfter::Crash,
                Some("kill9") => RelaunchAfter::Kill9,
                Some("ready") => RelaunchAfter::Ready,
                Some(other) => {
                    return Err(loc.at(
                        r.after.as_ref().map_or(f.span(), |a| a.span()),
                        format!("unknown `after` value `{other}` (known: crash, kill9, ready)"),
                    ))
                }
            };
            Fault::RelaunchIntoSameLog {
                after,
                new_launch_lines: r.new_launch_lines,
                new_command: r.new_command.as_ref().map(|c| c.get_ref().clone()),
            }
        }
        "truncate_while_writing" => Fault::TruncateWhileWriting {
            append: r.append.unwrap_or(false),
            new_command: r.new_command.as_ref().map(|c| c.get_ref().clone()),
        },
        "partial_last_line" => Fault::PartialLastLine,
        "rotate" => Fault::Rotate,
        "kill" => {
            let signal = match r.signal.as_ref().map(|s| s.get_ref().as_str()) {
                None | Some("SIGKILL") | Some("KILL") | Some("9") => Signal::Kill,
                Some("SIGTERM") | Some("TERM") | Some("15") => Signal::Term,
                Some("SIGSEGV") | Some("SEGV") | Some("11") => Signal::Segv,
                Some("SIGBUS") | Some("BUS") | Some("7") => Signal::Bus,
                Some(other) => {
                    return Err(loc.at(
                        r.signal.as_ref().map_or(f.span(), |s| s.span()),
                        format!("unknown signal `{other}`"),
                    ))
                }
            };
            Fault::Kill {
                process: need(&r.process, "process")?,
                signal,
                at: phase(&r.at)?,
            }
        }
        "hang" => Fault::Hang {
            process: need(&r.process, "process")?,
            at: phase(&r.at)?,
        },
        "orphan_workers" => Fault::OrphanWorkers,
        "hold_gpu_memory" => Fault::HoldGpuMemory {
            gib: r
                .gib
                .ok_or_else(|| loc.at(f.span(), "fault `hold_gpu_memory` needs `gib`"))?,
        },
        "shm_leftover" => Fault::ShmLeftover,
        "node_loss" => Fault::NodeLoss {
            node: r.node.unwrap_or(1),
            at: phase(&r.at)?,
        },
        "earlier_launches" => Fault::EarlierLaunches {
            count: r.earlier_launches.unwrap_or(1),
        },
        "host_kill" => Fault::HostKill { at: phase(&r.at)? },
        "host_restart" => Fault::HostRestart,
        other => {
            return Err(loc.at(
                r.kind.span(),
                format!(
                    "unknown fault kind `{other}` (known: relaunch_into_same_log, truncate_while_writing, partial_last_line, rotate, kill, hang, orphan_workers, hold_gpu_memory, shm_leftover, node_loss, earlier_launches, host_kill, host_restart)"
                ),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
summary = "s"
vllm = "0.15.1"
command = "vllm serve /models/kimi --tensor-parallel-size 8 --trust-remote-code"
gpus = { model = "rtx-pro-6000-blackwell", count = 8 }
model = "kimi-k2.5-nvfp4"
[expect]
status = "crashed"
root_cause = "fp8_kv_cache_unsupported_backend"
process = "Worker_TP*"
"#;

    #[test]
    fn good_file_validates() {
        let s = Scenario::from_toml(Path::new("scenarios/crash/fp8-kv-sm120.toml"), GOOD).unwrap();
        assert_eq!(s.id(), "crash/fp8-kv-sm120");
        assert_eq!(s.args.tensor_parallel_size, 8);
        assert_eq!(s.runners, vec![Runner::Text]);
    }

    #[test]
    fn cpu_thread_binding_the_simulator_cannot_follow_is_refused() {
        let cpu = |vllm: &str, bind: &str| {
            format!(
                "summary = \"s\"\nvllm = \"{vllm}\"\ncommand = \"vllm serve /srv/vllm/models/tiny-llama --tensor-parallel-size 2\"\n\
                 gpus = {{ model = \"h100\", count = 1 }}\nmodel = \"tiny-llama\"\n\
                 env = {{ VLLM_CPU_OMP_THREADS_BIND = \"{bind}\" }}\n\
                 [host]\nplatform = \"cpu-plugin\"\n[expect]\nstatus = \"crashed\"\n"
            )
        };
        let path = Path::new("scenarios/capture/t.toml");
        let e = Scenario::from_toml(path, &cpu("0.15.1", "all")).unwrap_err();
        assert_eq!((e.line, e.column), (2, 8), "{e}");
        assert!(
            e.message
                .contains("VLLM_CPU_OMP_THREADS_BIND=all is not simulated"),
            "{e}"
        );
        // The V0 engine (0.8.5 on CPU) is followed; asked for on V1 it is refused.
        let s = Scenario::from_toml(path, &cpu("0.8.5.post1", "nobind")).unwrap();
        let v1 = Version::parse("0.10.1.1").unwrap();
        assert!(s.unmodelled(s.vllm).is_none());
        assert!(s.at_version(v1).unmodelled(v1).is_some());
        assert!(Scenario::from_toml(path, &cpu("0.15.1", "auto")).is_ok());
    }

    #[test]
    fn errors_point_at_line_and_column() {
        let bad = GOOD.replace("fp8_kv_cache_unsupported_backend", "no_such_id");
        let e = Scenario::from_toml(Path::new("x.toml"), &bad).unwrap_err();
        assert_eq!((e.line, e.column), (9, 14), "{e}");
        assert!(e.message.contains("no_such_id"));

        let bad = GOOD.replace("count = 8", "count = \"eight\"");
        let e = Scenario::from_toml(Path::new("x.toml"), &bad).unwrap_err();
        assert_eq!(e.line, 5, "{e}");

        let bad = format!("{GOOD}\nbogus = 1\n");
        let e = Scenario::from_toml(Path::new("x.toml"), &bad).unwrap_err();
        assert!(e.message.contains("unknown field"), "{e}");
    }
}
