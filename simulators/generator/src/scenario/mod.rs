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

mod fault;
mod raw;

pub use crate::host::{CpuIsa, Host, Install, NcclFault, Platform, DEFAULT_PLATFORM_PLUGIN};
pub use fault::{Fault, FileStory, Phase, RelaunchAfter, Signal};
pub use raw::{RawExpect, RawFault, RawGpus, RawHost, RawScenario, RawVariant};

use fault::parse_fault;

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
    /// How the log is shown (a collector's prefix, an excerpt, …), applied in order to the
    /// simulated text; text runner and `faultkit simulate` only.
    pub renderings: Vec<crate::render::Rendering>,
    /// The public real log (a path under `scenarios/real/`) this scenario twins: the same
    /// hardware, model, flags and release as far as its thread tells.
    pub real: Option<String>,
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
        if !crate::profile::Profile::knows(vllm) {
            return Err(loc.at(
                raw.vllm.span(),
                crate::profile::Profile::unknown_release(raw.vllm.get_ref()),
            ));
        }
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
        let renderings = match &raw.render {
            None => Vec::new(),
            Some(r) => {
                let mut out = Vec::new();
                for name in r.get_ref() {
                    out.push(crate::render::Rendering::parse(name).ok_or_else(|| {
                        loc.at(
                            r.span(),
                            format!(
                                "unknown rendering `{name}` (known: {})",
                                crate::render::Rendering::names()
                            ),
                        )
                    })?);
                }
                // A rendering describes how a file shows the log; the process and container
                // runners play the scenario as processes, which it does not describe.
                if !out.is_empty() && runners.iter().any(|r| *r != Runner::Text) {
                    return Err(loc.at(
                        r.span(),
                        "render applies to the text runner only: remove the process and container runners, or the renderings",
                    ));
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
                let cpu_isa = match &r.cpu_isa {
                    None => CpuIsa::default(),
                    Some(i) => CpuIsa::parse(i.get_ref()).ok_or_else(|| {
                        loc.at(
                            i.span(),
                            format!(
                                "unknown host.cpu_isa `{}` (known: {})",
                                i.get_ref(),
                                CpuIsa::NAMES.join(", ")
                            ),
                        )
                    })?,
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
                    cpu_isa,
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
        let story = |f: &Fault| {
            matches!(
                f,
                Fault::TruncateWhileWriting { .. } | Fault::RelaunchIntoSameLog { .. }
            )
        };
        if let Some((second, _)) = raw
            .faults
            .iter()
            .zip(&faults)
            .filter(|(_, f)| story(f))
            .nth(1)
        {
            return Err(loc.at(
                second.span(),
                "a scenario has at most one `relaunch_into_same_log` or `truncate_while_writing` fault (each is a whole story of the file)",
            ));
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
        let real = match &raw.real {
            Some(r) => {
                let path = r.get_ref();
                let ok = path.ends_with(".log")
                    && !path.starts_with('/')
                    && !path.split('/').any(|c| c == ".." || c.is_empty());
                if !ok {
                    return Err(loc.at(
                        r.span(),
                        format!(
                            // Debug quoting escapes control characters of a hostile file.
                            "`real = {path:?}`: name a labelled log under scenarios/real/ \
                             (`batch-07/408-x.log`)"
                        ),
                    ));
                }
                Some(path.clone())
            }
            None => None,
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
            renderings,
            real,
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
        let p = crate::profile::Profile::for_version(version);
        if self.node_loss().is_some() && !p.stack.contains_key("engine_ray_step") {
            // 0.33's Ray backend is RayExecutorV2 (a multiprocessing executor over Ray actors):
            // how it reports a lost node has not been read from a real log.
            return Some(format!(
                "vLLM {version} losing a Ray node is not simulated: its Ray executor (V2) reports \
                 lost actors in another way, and no real log shows it"
            ));
        }
        if self.host.platform != Platform::CpuPlugin {
            return None;
        }
        let engine = p.cpu_engine.unwrap_or(p.engine);
        if engine == crate::profile::Engine::V0 && !p.stack.contains_key("v0_engine_head") {
            // The CPU platform's V0 texts come from the 0.8.5.post1 captures; older profiles
            // have none, and guessing them would be inventing vLLM's output.
            return Some(format!(
                "vLLM {version} on the CPU platform is not simulated: no real capture of that \
                 release line shows its CPU engine (the CPU profiles start at 0.8.5)"
            ));
        }
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

        // A hostile `real` path is quoted with its control characters escaped.
        let bad = GOOD.replacen(
            "summary",
            "real = \"x\\u001b]0;pwn\\u0007.txt\"\nsummary",
            1,
        );
        let e = Scenario::from_toml(Path::new("x.toml"), &bad).unwrap_err();
        assert!(e.message.contains("labelled log"), "{e}");
        assert!(!e.message.chars().any(|c| c.is_control()), "{e:?}");
    }

    #[test]
    fn renderings_are_checked_and_kept_in_order() {
        let with = |line: &str| GOOD.replace("[expect]", &format!("{line}\n[expect]"));
        let s = Scenario::from_toml(
            Path::new("x.toml"),
            &with("render = [\"kubectl-prefix\", \"excerpt-elided\"]"),
        )
        .unwrap();
        assert_eq!(
            s.renderings,
            vec![
                crate::render::Rendering::Kubectl,
                crate::render::Rendering::ExcerptElided
            ]
        );
        let e =
            Scenario::from_toml(Path::new("x.toml"), &with("render = [\"sideways\"]")).unwrap_err();
        assert_eq!((e.line, e.column), (7, 10), "{e}");
        assert!(e.message.contains("unknown rendering `sideways`"), "{e}");
        assert!(e.message.contains("kubectl-prefix"), "{e}");
        let e = Scenario::from_toml(
            Path::new("x.toml"),
            &with("runners = [\"text\", \"process\"]\nrender = [\"crlf\"]"),
        )
        .unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(e.message.contains("text runner only"), "{e}");
    }

    #[test]
    fn the_file_story_follows_the_faults_and_two_stories_are_refused() {
        let with = |faults: &str| format!("{GOOD}{faults}");
        let s = Scenario::from_toml(Path::new("x.toml"), GOOD).unwrap();
        assert_eq!(s.file_story(), FileStory::Single);
        let s = Scenario::from_toml(
            Path::new("x.toml"),
            &with("[[faults]]\nkind = \"orphan_workers\"\n"),
        )
        .unwrap();
        assert_eq!(
            s.file_story(),
            FileStory::Relaunched {
                after: RelaunchAfter::Kill9,
                new_launch_lines: None,
                new_command: None
            }
        );
        let two = with(
            "[[faults]]\nkind = \"relaunch_into_same_log\"\n\n[[faults]]\nkind = \"truncate_while_writing\"\n",
        );
        let e = Scenario::from_toml(Path::new("x.toml"), &two).unwrap_err();
        assert!(e.message.contains("at most one"), "{e}");
        assert_eq!(e.line, 14, "{e}");
    }
}
