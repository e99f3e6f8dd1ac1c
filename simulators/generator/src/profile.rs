//! vLLM version profiles: what one release line writes, as data (`data/profiles/*.toml`).
//!
//! A [`Profile`] fixes the logger format, the process names, the colour rules, every message
//! text with its `[file:line]`, and the traceback frames of the failure paths. Profiles inherit
//! from one another (`inherits = "0.15.1"`), so a release only lists what changed.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;

use crate::host::{Host, Install, Platform};
use crate::version::Version;

/// The engine generation: the V0 `LLMEngine` or the V1 engine core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    V0,
    V1,
}

/// How the log header is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderStyle {
    /// `INFO 01-28 14:02:16 [model.py:541] ` (v0.8+).
    Bracket,
    /// `INFO 12-05 20:24:46 engine.py:366] ` (v0.7 and older).
    Plain,
}

/// When the per-process prefix is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefixColor {
    /// `\x1b[1;36m(NAME pid=N)\x1b[0;0m ` always, even in files (v0.8.5 – v0.11).
    BoldCyanAlways,
    /// `\x1b[0;36m…\x1b[0;0m ` unless NO_COLOR is set (v0.12 – v0.15).
    CyanUnlessNoColor,
    /// Coloured only on a TTY or with VLLM_LOGGING_COLOR=1 (v0.16+): files get plain prefixes.
    CyanIfTty,
}

/// How the API server announces itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Banner {
    /// The ASCII logo (v0.15+).
    Logo,
    /// `vLLM API server version X`.
    VersionLine,
}

/// How worker processes are named in prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerNaming {
    /// `Worker_TP3`, `Worker_PP1_TP2`, `Worker_TP4_EP4` (v0.10.2+).
    Parts,
    /// `VllmWorker rank=3` (v0.8.5 – v0.9.2).
    Rank,
    /// `VllmWorker TP1`, `VllmWorker PP1_TP0` (v0.10.0 – v0.10.1).
    VllmParts,
    /// `VllmWorkerProcess` (V0 engine).
    V0Process,
}

/// Which ranks print a per-rank "once" message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankScope {
    /// Only rank 0 (`scope="local"`/`"global"`, v0.13+).
    Rank0,
    /// Every rank prints it.
    All,
}

/// One log message: where it is logged from and its text (`${name}` placeholders).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MsgSpec {
    pub at: String,
    pub level: String,
    pub text: String,
    /// For worker-side messages: which ranks print it.
    #[serde(default)]
    pub ranks: Option<RankScope>,
}

impl MsgSpec {
    pub fn file(&self) -> &str {
        self.at
            .rsplit_once(':')
            .map_or(self.at.as_str(), |(f, _)| f)
    }
    pub fn line(&self) -> &str {
        self.at.rsplit_once(':').map_or("0", |(_, l)| l)
    }
}

/// One exception of a chain (`[[chain.NAME]]`): its text (an `[error]` id), its frames (`[stack]`
/// ids, concatenated) and how it follows the exception before it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainLink {
    pub error: String,
    pub stack: Vec<String>,
    /// `direct` ("The above exception was the direct cause…") or `during` ("During handling…");
    /// ignored on the first link.
    #[serde(default)]
    pub cause: Option<String>,
}

/// One traceback frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub path: String,
    pub line: u32,
    pub function: String,
    pub source: Option<String>,
    pub caret: Option<String>,
}

/// A vLLM release line.
#[derive(Clone, Debug)]
pub struct Profile {
    pub version: Version,
    /// Further releases this profile stands for (its `also`): each runs with this profile's
    /// texts and its own behaviour switches (`data/switches.toml`).
    pub also: Vec<Version>,
    pub engine: Engine,
    pub python: (u32, u32),
    pub site: String,
    pub stdlib: String,
    pub console_script: String,
    pub console_script_line: u32,
    pub header: HeaderStyle,
    pub prefix_color: PrefixColor,
    pub banner: Banner,
    pub api_server_prefixed: bool,
    pub engine_name: String,
    pub worker_name: WorkerNaming,
    pub worker_prefix_before_init: bool,
    pub per_rank_once: RankScope,
    pub platform_detected_level: String,
    pub nccl_version: String,
    pub torch_version: String,
    pub c10_pg_line: u32,
    pub c10_watchdog_line: u32,
    pub engine_config: String,
    /// The engine generation on the CPU platform (0.8.5 falls back to V0 there).
    pub cpu_engine: Option<Engine>,
    /// The engine config line on the CPU platform.
    pub engine_config_cpu: Option<String>,
    /// `args: Namespace(…)` as the API server logs it (releases that print the whole namespace).
    pub namespace: Option<String>,
    /// Whether `non-default args` lists `api_server_count` (`vllm serve` sets it since 0.11).
    pub api_server_count_arg: bool,
    /// The dtype a float32 checkpoint is downcast to with `--dtype auto`.
    pub float32_downcast: String,
    /// Whether vLLM reads `config.torch_dtype` (transformers ≥ 4.56 then warns once).
    pub reads_torch_dtype: bool,
    /// `VLLM_CPU_OMP_THREADS_BIND` when unset: `auto` (bind per NUMA node) or `all` (no binding).
    pub cpu_threads_bind_default: String,
    /// Whether Triton is first imported with the worker module (not at `import vllm`): its
    /// "no active driver" lines then come from the engine core and workers only.
    pub triton_on_worker_import: bool,
    /// `--kv-cache-dtype` choices as argparse lists them.
    pub kv_cache_dtypes: Vec<String>,
    /// Whether lines written to `sys.stdout`/`sys.stderr` (uncaught tracebacks, prints) carry
    /// the process prefix: `decorate_logs` patched the streams up to 0.18; from 0.33 only
    /// logging records are prefixed.
    pub stream_prefixed: bool,
    /// Whether the API server configures logging only once its arguments are parsed (0.33):
    /// records before that go through Python's last-resort handler (WARNING and above, the
    /// bare message; INFO is lost).
    pub logging_from_args: bool,
    /// Warnings torch's own logger prints (glog style, `W1203 09:52:02.112000 PID PATH:LINE] …`)
    /// while a process imports vLLM: `PATH:LINE] TEXT`, PATH relative to site-packages.
    pub torch_import_warnings: Vec<String>,
    /// A worker's prefix before it decorates itself with its parallel ranks, where the release
    /// prefixes early records (`Worker`; 0.33: the multiprocessing name `VllmWorker-${rank}`).
    pub worker_early_name: String,
    /// The multiprocessing name a worker's records carry before its constructor has run
    /// (0.31+: records are named by the process's name until `decorate_logs`).
    pub worker_mp_name: Option<String>,
    /// Python warnings (raw stderr, `${site}` allowed) a CPU worker prints as it patches
    /// Triton kernels with their CPU fallbacks (0.33).
    pub cpu_worker_warnings: Vec<String>,
    /// The platform's messages a CPU worker logs while it imports its modules, in order (none
    /// listed before 0.20, whose CPU ranks run in the engine core; 0.33:
    /// FlashInfer disabled, then vLLM's AVX2 kernels failing to load; 0.24: the AVX2 failure once
    /// per module that imports the kernels, four times). `python-warnings` marks where the
    /// `cpu_worker_warnings` fall (default: after the list).
    pub cpu_worker_kernel_warnings: Vec<String>,
    /// Whether failed CPU workers are still running when the executor's five-second grace
    /// period ends, so that it sends them SIGTERM (0.33's captures; at 0.24 they exit in it).
    pub cpu_workers_outlive_grace: bool,
    /// How long, in ms (least, most), the API server on a GPU-less host takes from its import of
    /// torch to its first record: vLLM's own import (measured in real captures on a 2-core CPU).
    pub cpu_import_ms: (u64, u64),
    /// Messages the API server logs on the CPU platform once its scheduler config is built, in
    /// order (0.24: the IR op priority, then Model Runner V2 falling back without Triton).
    pub cpu_config_notes: Vec<String>,
    pub msg: BTreeMap<String, MsgSpec>,
    pub error: BTreeMap<String, String>,
    pub stack: BTreeMap<String, Vec<Frame>>,
    /// Exception chains, first exception first.
    pub chain: BTreeMap<String, Vec<ChainLink>>,
}

impl Profile {
    /// The profile for a release: the newest profile not newer than `version` (the oldest for
    /// anything older).
    pub fn for_version(version: Version) -> &'static Profile {
        let all = all();
        all.iter()
            .rev()
            .find(|p| p.version <= version)
            .unwrap_or(&all[0])
    }

    /// Every profile, oldest first.
    pub fn all() -> &'static [Profile] {
        all()
    }

    /// The releases the simulator knows, oldest first: every profile's release and the
    /// releases it stands for (`also`).
    pub fn releases() -> Vec<Version> {
        let mut out: Vec<Version> = all()
            .iter()
            .flat_map(|p| std::iter::once(p.version).chain(p.also.iter().copied()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether the simulator knows `version`: one of [`Profile::releases`], or a post or hotfix
    /// release of one.
    pub fn knows(version: Version) -> bool {
        Profile::releases().iter().any(|r| r.same_release(version))
    }

    /// Why `version` is refused: the releases the simulator knows, for an error message.
    pub fn unknown_release(version: &str) -> String {
        let known: Vec<String> = Profile::releases().iter().map(|v| v.to_string()).collect();
        format!(
            "vLLM {version} is not a release the simulator knows (known: {}; their post and hotfix \
             releases too, e.g. 0.8.5.post1)",
            known.join(", ")
        )
    }

    /// The profile for a release as installed on a host: the interpreter and virtualenv of
    /// `host.install` change paths and frames (`X@py3.11` fragments replace `X`); the CPU
    /// platform selects `X@cpu` texts, the CPU engine generation and engine config.
    pub fn for_host(version: Version, host: &Host) -> &'static Profile {
        let base = Profile::for_version(version);
        let cpu = host.platform == Platform::CpuPlugin;
        if host.install == Install::default() && !cpu {
            return base;
        }
        let venv = host
            .install
            .venv
            .as_ref()
            .map(|v| v.replace("{vllm}", &version.to_string()));
        let key = (base.version, host.install.clone(), venv.clone(), cpu);
        static DERIVED: OnceLock<Mutex<Vec<(DerivedKey, &'static Profile)>>> = OnceLock::new();
        let cache = DERIVED.get_or_init(|| Mutex::new(Vec::new()));
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, p)) = cache.iter().find(|(k, _)| *k == key) {
            return p;
        }
        let derived: &'static Profile =
            Box::leak(Box::new(base.derive(&host.install, venv.as_deref(), cpu)));
        cache.push((key, derived));
        derived
    }

    fn derive(&self, install: &Install, venv: Option<&str>, cpu: bool) -> Profile {
        let mut p = self.clone();
        let mut tags: Vec<String> = Vec::new();
        if cpu {
            tags.push("cpu".into());
            if let Some(e) = p.cpu_engine {
                p.engine = e;
            }
            if let Some(c) = &p.engine_config_cpu {
                p.engine_config = c.clone();
            }
        }
        if let Some((major, minor)) = install.python {
            p.python = (major, minor);
            tags.push(format!("py{major}.{minor}"));
            let home = install.python_home.as_deref().unwrap_or("/usr");
            p.stdlib = format!("{home}/lib/python{major}.{minor}");
            if let Some(v) = venv {
                p.site = format!("{v}/lib/python{major}.{minor}/site-packages");
                p.console_script = format!("{v}/bin/vllm");
                // pip's console-script wrapper: `sys.exit(main())` is its 8th line.
                p.console_script_line = 8;
            }
        }
        for tag in &tags {
            apply_tag(&mut p.msg, tag);
            apply_tag(&mut p.error, tag);
            apply_tag(&mut p.stack, tag);
            apply_tag(&mut p.chain, tag);
        }
        p
    }

    /// A message of this profile, or `None` when this release does not print it.
    pub fn msg(&self, id: &str) -> Option<&MsgSpec> {
        self.msg.get(id)
    }

    /// An exception text (`Type: message`, may span lines).
    pub fn error(&self, id: &str) -> &str {
        self.error
            .get(id)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("profile {} lacks error text {id:?}", self.version))
    }

    /// Frames of a named traceback fragment.
    pub fn stack(&self, id: &str) -> &[Frame] {
        self.stack
            .get(id)
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("profile {} lacks stack {id:?}", self.version))
    }

    /// Whether Python prints caret lines under frames (3.11+).
    pub fn carets(&self) -> bool {
        self.python >= (3, 11)
    }

    /// A frame path as Python prints it.
    pub fn frame_path(&self, path: &str) -> String {
        if let Some(rest) = path.strip_prefix("@/") {
            format!("{}/{}", self.stdlib, rest)
        } else if path.starts_with('/')
            || path.starts_with('<')
            || path.starts_with("uvloop/loop.pyx")
        {
            // Absolute, a pseudo-file (`<string>` of generated `__init__`s), or compiled.
            path.to_string()
        } else if path.starts_with("${console_script}") {
            self.console_script.clone()
        } else {
            format!("{}/{}", self.site, path)
        }
    }
}

type DerivedKey = (Version, Install, Option<String>, bool);

/// `X@tag` entries replace `X` when the tag applies.
fn apply_tag<T: Clone>(map: &mut BTreeMap<String, T>, tag: &str) {
    let suffix = format!("@{tag}");
    let overrides: Vec<(String, T)> = map
        .iter()
        .filter_map(|(k, v)| k.strip_suffix(&suffix).map(|b| (b.to_string(), v.clone())))
        .collect();
    map.extend(overrides);
}

/// A child's own `X` supersedes the `X@tag` variants it inherited.
fn drop_inherited_variants<T>(map: &mut BTreeMap<String, T>, own: &[String]) {
    map.retain(|k, _| {
        k.split_once('@')
            .is_none_or(|(base, _)| !own.iter().any(|o| o == base))
    });
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    version: String,
    /// Releases after `version` (and before the next profile) simulated with these texts; not
    /// inherited.
    #[serde(default)]
    also: Vec<String>,
    #[serde(default)]
    inherits: Option<String>,
    engine: Option<Engine>,
    python: Option<String>,
    site: Option<String>,
    stdlib: Option<String>,
    console_script: Option<String>,
    console_script_line: Option<u32>,
    header: Option<HeaderStyle>,
    prefix_color: Option<PrefixColor>,
    banner: Option<Banner>,
    api_server_prefixed: Option<bool>,
    engine_name: Option<String>,
    worker_name: Option<WorkerNaming>,
    worker_prefix_before_init: Option<bool>,
    per_rank_once: Option<RankScope>,
    platform_detected_level: Option<String>,
    nccl_version: Option<String>,
    torch_version: Option<String>,
    c10_pg_line: Option<u32>,
    c10_watchdog_line: Option<u32>,
    engine_config: Option<String>,
    cpu_engine: Option<Engine>,
    engine_config_cpu: Option<String>,
    namespace: Option<String>,
    api_server_count_arg: Option<bool>,
    float32_downcast: Option<String>,
    reads_torch_dtype: Option<bool>,
    cpu_threads_bind_default: Option<String>,
    triton_on_worker_import: Option<bool>,
    kv_cache_dtypes: Option<Vec<String>>,
    stream_prefixed: Option<bool>,
    logging_from_args: Option<bool>,
    torch_import_warnings: Option<Vec<String>>,
    worker_early_name: Option<String>,
    worker_mp_name: Option<String>,
    cpu_worker_warnings: Option<Vec<String>>,
    cpu_worker_kernel_warnings: Option<Vec<String>>,
    cpu_workers_outlive_grace: Option<bool>,
    cpu_import_ms: Option<(u64, u64)>,
    cpu_config_notes: Option<Vec<String>>,
    #[serde(default)]
    msg: BTreeMap<String, MsgSpec>,
    /// Messages a release no longer (or not yet) prints.
    #[serde(default)]
    drop_msg: Vec<String>,
    #[serde(default)]
    error: BTreeMap<String, String>,
    #[serde(default)]
    stack: BTreeMap<String, Vec<String>>,
    /// Traceback fragments of code paths a release does not have.
    #[serde(default)]
    drop_stack: Vec<String>,
    #[serde(default)]
    chain: BTreeMap<String, Vec<ChainLink>>,
}

// Every file of `data/profiles/`, listed by `build.rs`.
include!(concat!(env!("OUT_DIR"), "/profile_files.rs"));

fn all() -> &'static [Profile] {
    static ALL: OnceLock<Vec<Profile>> = OnceLock::new();
    ALL.get_or_init(|| {
        let raws: Vec<(String, RawProfile)> = PROFILE_FILES
            .iter()
            .map(|(name, text)| {
                let raw: RawProfile = toml::from_str(text)
                    .unwrap_or_else(|e| panic!("data/profiles/{name} is invalid: {e}"));
                (name.to_string(), raw)
            })
            .collect();
        let mut out: Vec<Profile> = raws
            .iter()
            .map(|(name, raw)| resolve(name, raw, &raws))
            .collect();
        out.sort_by_key(|p| p.version);
        out
    })
}

fn resolve(name: &str, raw: &RawProfile, all: &[(String, RawProfile)]) -> Profile {
    let base = raw.inherits.as_ref().map(|parent| {
        let (pname, praw) = all
            .iter()
            .find(|(_, r)| &r.version == parent)
            .unwrap_or_else(|| panic!("{name}: inherits unknown profile {parent}"));
        resolve(pname, praw, all)
    });
    let pick = |o: &Option<String>, b: Option<&String>, field: &str| -> String {
        o.clone()
            .or_else(|| b.cloned())
            .unwrap_or_else(|| panic!("{name}: missing {field}"))
    };
    macro_rules! field {
        ($f:ident) => {
            raw.$f
                .or(base.as_ref().map(|b| b.$f))
                .unwrap_or_else(|| panic!("{name}: missing {}", stringify!($f)))
        };
    }
    // A field this profile may leave to its base, with the value when no profile sets it.
    macro_rules! inherited {
        ($f:ident, $default:expr) => {
            raw.$f
                .clone()
                .or_else(|| base.as_ref().map(|b| b.$f.clone()))
                .unwrap_or_else(|| $default)
        };
    }
    // An optional field this profile may leave to its base.
    macro_rules! inherited_opt {
        ($f:ident) => {
            raw.$f
                .clone()
                .or_else(|| base.as_ref().and_then(|b| b.$f.clone()))
        };
    }
    let python = raw
        .python
        .clone()
        .or(base
            .as_ref()
            .map(|b| format!("{}.{}", b.python.0, b.python.1)))
        .unwrap_or_else(|| panic!("{name}: missing python"));
    let (pmaj, pmin) = python
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .unwrap_or_else(|| panic!("{name}: bad python version {python}"));

    let mut msg = base.as_ref().map(|b| b.msg.clone()).unwrap_or_default();
    for d in &raw.drop_msg {
        msg.remove(d);
    }
    drop_inherited_variants(&mut msg, &raw.msg.keys().cloned().collect::<Vec<_>>());
    msg.extend(raw.msg.clone());
    let mut error = base.as_ref().map(|b| b.error.clone()).unwrap_or_default();
    drop_inherited_variants(&mut error, &raw.error.keys().cloned().collect::<Vec<_>>());
    error.extend(raw.error.clone());
    let mut chain = base.as_ref().map(|b| b.chain.clone()).unwrap_or_default();
    drop_inherited_variants(&mut chain, &raw.chain.keys().cloned().collect::<Vec<_>>());
    chain.extend(raw.chain.clone());
    let mut stack = base.as_ref().map(|b| b.stack.clone()).unwrap_or_default();
    for d in &raw.drop_stack {
        stack.remove(d);
    }
    drop_inherited_variants(&mut stack, &raw.stack.keys().cloned().collect::<Vec<_>>());
    for (k, frames) in &raw.stack {
        let parsed = frames
            .iter()
            .map(|f| parse_frame(f).unwrap_or_else(|| panic!("{name}: bad frame {f:?}")))
            .collect();
        stack.insert(k.clone(), parsed);
    }
    Profile {
        version: Version::parse(&raw.version)
            .unwrap_or_else(|| panic!("{name}: bad version {}", raw.version)),
        also: raw
            .also
            .iter()
            .map(|v| Version::parse(v).unwrap_or_else(|| panic!("{name}: bad version {v}")))
            .collect(),
        engine: field!(engine),
        python: (pmaj, pmin),
        site: pick(&raw.site, base.as_ref().map(|b| &b.site), "site"),
        stdlib: pick(&raw.stdlib, base.as_ref().map(|b| &b.stdlib), "stdlib"),
        console_script: pick(
            &raw.console_script,
            base.as_ref().map(|b| &b.console_script),
            "console_script",
        ),
        console_script_line: field!(console_script_line),
        header: field!(header),
        prefix_color: field!(prefix_color),
        banner: field!(banner),
        api_server_prefixed: field!(api_server_prefixed),
        engine_name: pick(
            &raw.engine_name,
            base.as_ref().map(|b| &b.engine_name),
            "engine_name",
        ),
        worker_name: field!(worker_name),
        worker_prefix_before_init: field!(worker_prefix_before_init),
        per_rank_once: field!(per_rank_once),
        platform_detected_level: pick(
            &raw.platform_detected_level,
            base.as_ref().map(|b| &b.platform_detected_level),
            "platform_detected_level",
        ),
        nccl_version: pick(
            &raw.nccl_version,
            base.as_ref().map(|b| &b.nccl_version),
            "nccl_version",
        ),
        torch_version: pick(
            &raw.torch_version,
            base.as_ref().map(|b| &b.torch_version),
            "torch_version",
        ),
        c10_pg_line: field!(c10_pg_line),
        c10_watchdog_line: field!(c10_watchdog_line),
        engine_config: pick(
            &raw.engine_config,
            base.as_ref().map(|b| &b.engine_config),
            "engine_config",
        ),
        cpu_engine: raw.cpu_engine.or(base.as_ref().and_then(|b| b.cpu_engine)),
        engine_config_cpu: inherited_opt!(engine_config_cpu),
        namespace: inherited_opt!(namespace),
        api_server_count_arg: inherited!(api_server_count_arg, true),
        float32_downcast: inherited!(float32_downcast, "bfloat16".into()),
        reads_torch_dtype: inherited!(reads_torch_dtype, false),
        cpu_threads_bind_default: inherited!(cpu_threads_bind_default, "auto".into()),
        triton_on_worker_import: inherited!(triton_on_worker_import, false),
        kv_cache_dtypes: inherited!(
            kv_cache_dtypes,
            vllm_argv::KV_CACHE_DTYPES_V0_15
                .iter()
                .map(|s| s.to_string())
                .collect()
        ),
        stream_prefixed: inherited!(stream_prefixed, true),
        logging_from_args: inherited!(logging_from_args, false),
        torch_import_warnings: inherited!(torch_import_warnings, Default::default()),
        worker_early_name: inherited!(worker_early_name, "Worker".into()),
        worker_mp_name: inherited_opt!(worker_mp_name),
        cpu_worker_warnings: inherited!(cpu_worker_warnings, Default::default()),
        cpu_worker_kernel_warnings: inherited!(cpu_worker_kernel_warnings, Default::default()),
        cpu_workers_outlive_grace: inherited!(cpu_workers_outlive_grace, false),
        cpu_import_ms: inherited!(cpu_import_ms, (2000, 6000)),
        cpu_config_notes: inherited!(cpu_config_notes, Default::default()),
        msg,
        error,
        stack,
        chain,
    }
}

/// Parses `PATH:LINE FUNCTION | SOURCE | CARET` (a CARET starting with `>` marks its last
/// occurrence in SOURCE, not its first).
fn parse_frame(s: &str) -> Option<Frame> {
    let mut parts = s.splitn(3, " | ");
    let head = parts.next()?;
    let source = parts.next().map(str::to_string);
    let caret = parts.next().filter(|c| !c.is_empty()).map(str::to_string);
    let (loc, function) = head.split_once(' ')?;
    let (path, line) = loc.rsplit_once(':')?;
    // `${console_script}:${console_script_line}` is resolved when rendering.
    let line = if line == "${console_script_line}" {
        0
    } else {
        line.parse().ok()?
    };
    Some(Frame {
        path: path.to_string(),
        line,
        function: function.to_string(),
        source,
        caret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_load_and_select() {
        let all = Profile::all();
        assert!(all.len() >= 5);
        let p = Profile::for_version(Version::parse("0.15.1").unwrap());
        assert_eq!(p.version, Version::parse("0.15.1").unwrap());
        assert_eq!(
            p.msg("worker_failed_start").unwrap().at,
            "multiproc_executor.py:772"
        );
        let older = Profile::for_version(Version::parse("0.11.0").unwrap());
        assert_eq!(older.version, Version::parse("0.10.2").unwrap());
        let oldest = Profile::for_version(Version::parse("0.2.1").unwrap());
        assert_eq!(oldest.engine, Engine::V0);
        for p in all {
            for (id, frames) in &p.stack {
                assert!(!frames.is_empty(), "{} {id}", p.version);
            }
            // The lists of messages a profile prints name messages it has.
            for id in p
                .cpu_config_notes
                .iter()
                .chain(&p.cpu_worker_kernel_warnings)
            {
                assert!(
                    id == "python-warnings" || p.msg.contains_key(id),
                    "{}: `{id}` is listed but not a message of the profile",
                    p.version
                );
            }
            for m in p.msg.values() {
                assert!(
                    m.line().parse::<u32>().is_ok() || m.line().starts_with("${"),
                    "{}: {}",
                    p.version,
                    m.at
                );
            }
        }
    }

    #[test]
    fn frame_syntax() {
        let f = parse_frame("vllm/a.py:12 f | x = g(1) | g(1)").unwrap();
        assert_eq!(f.line, 12);
        assert_eq!(f.caret.as_deref(), Some("g(1)"));
        let f = parse_frame("uvloop/loop.pyx:1518 uvloop.loop.Loop.run_until_complete").unwrap();
        assert!(f.source.is_none());
    }
}
