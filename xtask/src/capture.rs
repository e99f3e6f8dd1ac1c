//! `cargo xtask capture --vllm VERSION [SCENARIO…]`: real vLLM logs as test fixtures.
//!
//! Local and heavy (a vLLM wheel per version, minutes per version); never run in CI. For each
//! scenario tagged `capturable` it runs the scenario's real `vllm serve …` command line — real
//! processes, output redirected to a file as a user would — on this CPU-only machine: vLLM's
//! CUDA wheel, a tiny random model, and a small platform plugin that selects vLLM's own CPU
//! platform (without it: "Failed to infer device type"). Each log lands in
//! `scenarios/real/vllm-<version>/<scenario>.log` with the command that produced it (`.cmd`) and
//! a label entry in `labels.toml`.
//!
//! The work directory is reached through `/tmp/vllm` (a link, 9 bytes like `/srv/vllm`), and
//! the captured bytes have `/tmp/vllm` rewritten to `/srv/vllm` and `$HOME/.pyenv` to
//! `/home/.pyenv` when the lengths match: stand-ins of the same length keep byte offsets true.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use generator::scenario::{Fault, Platform};
use generator::Scenario;
use runner::catalog::ScenarioDir;

const MAKE_TINY_MODEL: &str = include_str!("../capture/make_tiny_model.py");
const PLUGIN_INIT: &str = r#""""faultkit capture: a vLLM platform plugin that selects vLLM's own CPU platform, so a CUDA
wheel on a machine without GPU runs its CPU code paths instead of failing to infer a device."""


def register():
    return "vllm.platforms.cpu.CpuPlatform"
"#;
const PLUGIN_PYPROJECT: &str = r#"[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "vllm-lab-cpu-plugin"
version = "0.1.0"
requires-python = ">=3.9"

[project.entry-points."vllm.platform_plugins"]
lab_cpu = "vllm_lab_cpu_plugin:register"

[tool.setuptools]
packages = ["vllm_lab_cpu_plugin"]
"#;
/// The plugin's distribution; its module and entry point (`lab_cpu -> vllm_lab_cpu_plugin:register`,
/// which vLLM logs) are the ones the simulator's hosts name (`generator::host::DEFAULT_PLATFORM_PLUGIN`).
const PLUGIN_DIST: &str = "vllm-lab-cpu-plugin";
/// The link the work directory is reached through, and its stand-in in the fixtures.
const LINK: &str = "/tmp/vllm";
const STAND_IN: &str = "/srv/vllm";
/// Bound on one `vllm serve` run.
const RUN_TIMEOUT_S: u64 = 240;
/// How long the first server of a relaunch sequence writes before the relaunch truncates.
const RELAUNCH_AFTER_S: u64 = 12;

/// Options of `cargo xtask capture`.
#[derive(clap::Args, Debug)]
pub struct CaptureArgs {
    /// The vLLM release to capture (e.g. 0.15.1, 0.10.1.1, 0.8.5.post1).
    #[arg(long)]
    vllm: String,
    /// Scenario names (default: every scenario tagged `capturable`).
    scenarios: Vec<String>,
    /// Use this existing virtualenv instead of creating one (it must have that vLLM).
    #[arg(long)]
    venv: Option<PathBuf>,
    /// Work directory (venvs, models, runs) [default: target/faultkit-capture].
    #[arg(long)]
    work: Option<PathBuf>,
    /// Where the logs and labels go [default: scenarios/real/vllm-VERSION].
    #[arg(long)]
    out: Option<PathBuf>,
}

fn root() -> PathBuf {
    let r = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    r.canonicalize().unwrap_or(r)
}

pub fn run(a: CaptureArgs) -> Result<i32> {
    let work = a
        .work
        .clone()
        .unwrap_or_else(|| root().join("target/faultkit-capture"));
    fs::create_dir_all(&work)?;
    let work = work.canonicalize()?;
    // The work dir through a 9-byte path, like the stand-in.
    let link = Path::new(LINK);
    if link.exists() || link.is_symlink() {
        if fs::read_link(link).ok().as_deref() != Some(work.as_path()) {
            bail!(
                "{LINK} exists and does not point to {}: remove it first",
                work.display()
            );
        }
    } else {
        std::os::unix::fs::symlink(&work, link).with_context(|| format!("creating {LINK}"))?;
    }
    let venv = match &a.venv {
        Some(v) => v.canonicalize()?,
        None => make_venv(&a.vllm)?,
    };
    let python = venv.join("bin/python");
    eprintln!("==> capture: tiny models");
    let models = link.join("models");
    fs::write(work.join("make_tiny_model.py"), MAKE_TINY_MODEL)?;
    sh(Command::new(&python)
        .arg(work.join("make_tiny_model.py"))
        .arg(&models))?;
    let plugin = work.join("plugin");
    fs::create_dir_all(plugin.join("vllm_lab_cpu_plugin"))?;
    fs::write(plugin.join("pyproject.toml"), PLUGIN_PYPROJECT)?;
    fs::write(plugin.join("vllm_lab_cpu_plugin/__init__.py"), PLUGIN_INIT)?;

    let dir = ScenarioDir {
        root: root().join("scenarios"),
    };
    let scenarios: Vec<Scenario> = if a.scenarios.is_empty() {
        dir.files()?
            .iter()
            .filter_map(|f| Scenario::load(f).ok())
            .filter(|s| s.tags.iter().any(|t| t == "capturable"))
            .collect()
    } else {
        a.scenarios
            .iter()
            .map(|n| dir.find(n).map_err(anyhow::Error::from))
            .collect::<Result<_>>()?
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| root().join(format!("scenarios/real/vllm-{}", a.vllm)));
    fs::create_dir_all(&out)?;
    let mut labels = load_labels(&out.join("labels.toml"));
    for s in &scenarios {
        eprintln!("==> capture: {} (vLLM {})", s.name, a.vllm);
        set_plugin(&venv, &plugin, s.host.platform == Platform::CpuPlugin)?;
        let log = out.join(format!("{}.log", s.name));
        let cmd = capture_one(s, &venv, &link.join("run"), &log)?;
        fs::write(out.join(format!("{}.cmd", s.name)), cmd)?;
        rewrite_paths(&log)?;
        labels.insert(s.name.clone(), label(s, &a.vllm, &log, labels.get(&s.name)));
    }
    let missing = fs::read_to_string(venv.join(MISSING)).unwrap_or_default();
    write_labels(&out.join("labels.toml"), &a.vllm, &missing, &labels)?;
    eprintln!("capture: {} logs in {}", scenarios.len(), out.display());
    Ok(0)
}

fn sh(c: &mut Command) -> Result<()> {
    let st = c.status().with_context(|| format!("running {c:?}"))?;
    if !st.success() {
        bail!("{c:?} failed ({st})");
    }
    Ok(())
}

/// A virtualenv with `vllm==VERSION` (transformers pinned below 5 for releases that need it).
fn make_venv(version: &str) -> Result<PathBuf> {
    let venv = Path::new(LINK).join(format!("venv-{version}"));
    if !venv.join("bin/vllm").exists() {
        eprintln!("==> capture: virtualenv with vllm=={version} (several GB, minutes)");
        sh(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        let pip = venv.join("bin/pip");
        let whole = Command::new(&pip)
            .args(["install", "--no-cache-dir", &format!("vllm=={version}")])
            .status()
            .with_context(|| format!("running {}", pip.display()))?;
        if !whole.success() {
            install_without_missing(&venv, version)?;
        }
        let old = generator::Version::parse(version)
            .is_some_and(|v| v < generator::Version::new(0, 12, 0));
        if old {
            // transformers 5 breaks these releases on every launch.
            sh(Command::new(venv.join("bin/pip")).args([
                "install",
                "--no-cache-dir",
                "transformers<5",
            ]))?;
        }
    }
    Ok(venv)
}

/// The file in a virtualenv that lists the requirements of vLLM the package index did not have.
const MISSING: &str = "faultkit-missing-requirements.txt";

/// When pip cannot resolve a release (it pins a dependency the index does not carry, as 0.34.0
/// pins `flashinfer-python==0.7.3`): vLLM without dependencies, then its requirements for this
/// interpreter, leaving out, one by one, those the index reports missing. They are CUDA-only
/// packages the CPU path does not import; each is named on stderr and in the capture's labels.
fn install_without_missing(venv: &Path, version: &str) -> Result<()> {
    let pip = venv.join("bin/pip");
    eprintln!("==> capture: pip could not resolve vllm=={version}; installing its requirements one by one");
    sh(Command::new(&pip).args([
        "install",
        "--no-cache-dir",
        "--no-deps",
        &format!("vllm=={version}"),
    ]))?;
    let out = Command::new(venv.join("bin/python"))
        .args(["-c", REQUIREMENTS_PY])
        .output()
        .context("reading vLLM's requirements")?;
    if !out.status.success() {
        bail!(
            "reading vLLM's requirements failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut wanted: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let mut missing = Vec::new();
    loop {
        let out = Command::new(&pip)
            .args(["install", "--no-cache-dir"])
            .args(&wanted)
            .stdout(Stdio::inherit())
            .output()
            .with_context(|| format!("running {}", pip.display()))?;
        let err = String::from_utf8_lossy(&out.stderr);
        eprint!("{err}");
        if out.status.success() {
            break;
        }
        let Some(name) = err
            .lines()
            .find_map(|l| l.strip_prefix("ERROR: No matching distribution found for "))
            .map(str::trim)
        else {
            bail!("installing vLLM {version}'s requirements failed (see above)");
        };
        let before = wanted.len();
        wanted.retain(|r| !same_requirement(r, name));
        if wanted.len() == before || missing.len() >= 5 {
            bail!("installing vLLM {version}'s requirements failed at {name}");
        }
        eprintln!("==> capture: {name} is not on the package index; vLLM {version} is installed without it");
        missing.push(name.to_owned());
    }
    fs::write(venv.join(MISSING), missing.join("\n") + "\n")?;
    Ok(())
}

/// Whether requirement line `r` (`name==1.0 ; marker`) is the one pip named as `name` (`name==1.0`).
fn same_requirement(r: &str, name: &str) -> bool {
    let key = |s: &str| {
        s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .next()
            .unwrap_or("")
            .to_ascii_lowercase()
            .replace('_', "-")
    };
    key(r) == key(name)
}

/// Prints vLLM's requirements that apply to this interpreter, one per line, extras left out.
const REQUIREMENTS_PY: &str = r#"
import importlib.metadata as m
from pip._vendor.packaging.requirements import Requirement
for line in m.requires("vllm") or []:
    r = Requirement(line)
    if r.marker is None or r.marker.evaluate({"extra": ""}):
        r.marker = None
        print(r)
"#;

/// Installs or removes the CPU platform plugin.
fn set_plugin(venv: &Path, plugin: &Path, want: bool) -> Result<()> {
    let have = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            &format!("import importlib.metadata as m; m.version('{PLUGIN_DIST}')"),
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    match (want, have) {
        (true, false) => sh(Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "--no-cache-dir"])
            .arg(plugin)),
        (false, true) => {
            sh(Command::new(venv.join("bin/pip")).args(["uninstall", "-q", "-y", PLUGIN_DIST]))
        }
        _ => Ok(()),
    }
}

/// The minimal environment of a user with an activated venv (no TTY, no NO_COLOR).
fn base_env(venv: &Path) -> Vec<(String, String)> {
    vec![
        (
            "HOME".into(),
            std::env::var("HOME").unwrap_or_else(|_| "/root".into()),
        ),
        ("LANG".into(), "C.UTF-8".into()),
        (
            "PATH".into(),
            format!(
                "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                venv.join("bin").display()
            ),
        ),
        ("VIRTUAL_ENV".into(), venv.display().to_string()),
        ("HF_HOME".into(), format!("{LINK}/hf_home")),
        ("HF_HUB_OFFLINE".into(), "1".into()),
    ]
}

fn argv_of(command: &str) -> Result<Vec<String>> {
    let argv = shlex::split(command).context("unbalanced quotes in command")?;
    // The scenario names models by their stand-in path.
    Ok(argv
        .into_iter()
        .map(|a| a.replace(STAND_IN, LINK))
        .collect())
}

fn start(
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    log: &Path,
    truncate: bool,
) -> Result<Child> {
    let mut o = OpenOptions::new();
    o.create(true).write(true);
    if truncate {
        o.truncate(true);
    } else {
        o.append(true);
    }
    let f: File = o.open(log)?;
    Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(f.try_clone()?)
        .stderr(f)
        .spawn()
        .with_context(|| format!("starting {}", argv[0]))
}

/// Waits for `child` up to the run timeout, then kills it.
fn finish(mut child: Child) -> Result<()> {
    launch::bounded::wait_or_kill(&mut child, Duration::from_secs(RUN_TIMEOUT_S))?;
    Ok(())
}

/// Runs one scenario for real; returns the `.cmd` text describing what ran.
fn capture_one(s: &Scenario, venv: &Path, cwd: &Path, log: &Path) -> Result<String> {
    fs::create_dir_all(cwd)?;
    let mut env = base_env(venv);
    env.extend(s.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let argv = argv_of(&s.command)?;
    let show_env: String = env
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                shlex::try_quote(v)
                    .map(|c| c.into_owned())
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    let quoted = |a: &[String]| shlex::try_join(a.iter().map(String::as_str)).unwrap_or_default();
    let mut cmd =
        format!(
        "# vLLM capture of scenario {}; generated by `cargo xtask capture`\n# plugin: {}\ncd {}\n",
        s.name,
        if s.host.platform == Platform::CpuPlugin { "installed" } else { "not installed" },
        cwd.display()
    );
    // Ports the scenario says are taken: held here, by a plain listening socket.
    let held: Vec<TcpListener> = s
        .host
        .ports_in_use
        .iter()
        .map(|p| TcpListener::bind(("0.0.0.0", *p)))
        .collect::<std::io::Result<_>>()
        .context("holding a port")?;
    if !held.is_empty() {
        cmd.push_str(&format!(
            "# ports held by another process: {:?}\n",
            s.host.ports_in_use
        ));
    }
    let truncate = s.fault(|f| match f {
        Fault::TruncateWhileWriting { new_command, .. } => Some(new_command.clone()),
        _ => None,
    });
    // The log as the fixture directory names it (its file name), not where this machine keeps it.
    let shown_log = log
        .file_name()
        .map_or_else(|| "vllm.log".into(), |n| n.to_string_lossy().into_owned());
    match truncate {
        None => {
            cmd.push_str(&format!(
                "env -i {show_env} {} > {} 2>&1\n",
                quoted(&argv),
                shown_log
            ));
            finish(start(&argv, &env, cwd, log, true)?)?;
        }
        Some(new) => {
            // The first server writes without O_APPEND; a relaunch with `>` truncates the file.
            let second = argv_of(new.as_deref().unwrap_or(&s.command))?;
            cmd.push_str(&format!(
                "env -i {show_env} {} > {} 2>&1 &\nsleep {RELAUNCH_AFTER_S}\nenv -i {show_env} {} > {} 2>&1\nwait\n",
                quoted(&argv),
                shown_log,
                quoted(&second),
                shown_log
            ));
            let first = start(&argv, &env, cwd, log, true)?;
            std::thread::sleep(Duration::from_secs(RELAUNCH_AFTER_S));
            finish(start(&second, &env, cwd, log, true)?)?;
            finish(first)?;
        }
    }
    drop(held);
    Ok(cmd.replace(LINK, STAND_IN))
}

/// Same-length stand-ins for machine paths.
fn rewrite_paths(log: &Path) -> Result<()> {
    let mut b = fs::read(log)?;
    let mut pairs: Vec<(String, String)> = vec![(LINK.into(), STAND_IN.into())];
    // Some modules (torch's own logger) print the link's resolved target: its stand-in is padded
    // with slashes to the same length, which names the same place (POSIX folds repeated '/').
    if let Ok(real) = fs::canonicalize(LINK) {
        let real = real.display().to_string();
        if real.len() >= STAND_IN.len() && real != LINK {
            let padded = format!("{STAND_IN}{}", "/".repeat(real.len() - STAND_IN.len()));
            pairs.push((real, padded));
        }
    }
    if let Ok(home) = std::env::var("HOME") {
        let from = format!("{home}/.pyenv");
        if from.len() == "/home/.pyenv".len() {
            pairs.push((from, "/home/.pyenv".into()));
        }
    }
    for (from, to) in pairs {
        let (f, t) = (from.as_bytes(), to.as_bytes());
        let mut i = 0;
        while let Some(p) = memchr::memmem::find(&b[i..], f) {
            b[i + p..i + p + f.len()].copy_from_slice(t);
            i += p + f.len();
        }
    }
    fs::write(log, b)?;
    Ok(())
}

/// One `[[log]]` entry of labels.toml.
#[derive(Clone, Debug)]
struct Label {
    fields: BTreeMap<String, String>,
}

/// The root cause comes from the scenario; its line is kept from the reviewed label when it is
/// still in the new log, else faultkit's pick, marked for review.
fn label(s: &Scenario, version: &str, log: &Path, old: Option<&Label>) -> Label {
    let bytes = fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut fields = BTreeMap::new();
    fields.insert("file".into(), format!("{}.log", s.name));
    fields.insert("vllm_version".into(), version.into());
    fields.insert("scenario".into(), s.name.clone());
    fields.insert(
        "root_cause".into(),
        s.expect
            .root_cause
            .clone()
            .unwrap_or_else(|| "unknown".into()),
    );
    let kept = old
        .and_then(|o| o.fields.get("root_cause_line"))
        .filter(|l| lines.contains(&l.as_str()))
        .cloned();
    let (line, notes) = match kept {
        Some(l) => (
            l,
            old.and_then(|o| o.fields.get("notes"))
                .cloned()
                .unwrap_or_default(),
        ),
        None => {
            let v = match triage::triage(&bytes, &triage::Options::default()) {
                triage::Output::One(v) => v,
                triage::Output::All(mut vs) => vs.pop().unwrap_or_else(triage::Verdict::empty),
            };
            let line = v
                .root_cause
                .as_ref()
                .and_then(|rc| {
                    lines
                        .get(rc.line.saturating_sub(1) as usize)
                        .map(|l| l.to_string())
                })
                .unwrap_or_default();
            (
                line,
                "root_cause_line picked by faultkit triage at capture time: review it".into(),
            )
        }
    };
    fields.insert("root_cause_line".into(), line);
    if let Some(p) = old.and_then(|o| o.fields.get("first_failing_process")) {
        fields.insert("first_failing_process".into(), p.clone());
    }
    fields.insert("notes".into(), notes);
    fields.insert("cpu_isa".into(), cpu_isa().as_str().into());
    Label { fields }
}

/// This machine's processor as vLLM's CPU platform tells it apart (`/proc/cpuinfo` flags): the
/// simulation of a capture runs on the same kind of host.
fn cpu_isa() -> generator::scenario::CpuIsa {
    use generator::scenario::CpuIsa;
    let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags: std::collections::BTreeSet<&str> = info
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    match (flags.contains("avx512f"), flags.contains("avx512_bf16")) {
        (true, true) => CpuIsa::Avx512Bf16,
        (true, false) => CpuIsa::Avx512,
        _ => CpuIsa::Avx2,
    }
}

fn load_labels(path: &Path) -> BTreeMap<String, Label> {
    let Ok(text) = fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    let Ok(v) = toml::from_str::<toml::Table>(&text) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for e in v
        .get("log")
        .and_then(|l| l.as_array())
        .cloned()
        .unwrap_or_default()
    {
        let Some(t) = e.as_table() else { continue };
        let fields: BTreeMap<String, String> = t
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect();
        let key = fields
            .get("scenario")
            .or_else(|| fields.get("file"))
            .cloned()
            .unwrap_or_default();
        out.insert(key, Label { fields });
    }
    out
}

fn write_labels(
    path: &Path,
    version: &str,
    missing: &str,
    labels: &BTreeMap<String, Label>,
) -> Result<()> {
    let mut s = format!(
        "# Real vLLM {version} logs captured with `cargo xtask capture` on a CPU-only host with the CUDA\n# wheel (and vLLM's CPU platform plugin where the scenario needs it). Paths were rewritten to\n# stand-ins of the same length (/srv/vllm/..., /home/.pyenv/...) so byte offsets hold. The .cmd\n# file beside each log is the command that produced it. root_cause_line is the verbatim line\n# (ANSI escapes kept, trailing CR removed).\n"
    );
    for name in missing.lines().filter(|l| !l.trim().is_empty()) {
        s.push_str(&format!(
            "# Installed without {name}: the package index does not carry it (CUDA only; the CPU path does not import it).\n"
        ));
    }
    for l in labels.values() {
        s.push_str("\n[[log]]\n");
        for key in [
            "file",
            "vllm_version",
            "scenario",
            "root_cause",
            "root_cause_line",
            "first_failing_process",
            "notes",
            "cpu_isa",
        ] {
            if let Some(v) = l.fields.get(key) {
                let mut t = toml::Table::new();
                t.insert(key.into(), toml::Value::String(v.clone()));
                s.push_str(&toml::to_string(&t)?);
            }
        }
    }
    fs::write(path, s)?;
    Ok(())
}
