//! `cargo xtask ci`: every check CI runs, in order, with the time of each stage.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

/// The commit of the working tree (short hash), when in a git checkout.
pub fn commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Builds the fake server (`fake-vllm`, `fake-nvidia-smi`) in the profile of this xtask, so
/// the process runner finds it beside the running program.
pub fn build_fake() -> Result<()> {
    let release = std::env::current_exe()?
        .parent()
        .is_some_and(|d| d.ends_with("release"));
    let mut c = cargo();
    c.args(["build", "--quiet", "--package", "fake-vllm", "--bins"]);
    if release {
        c.arg("--release");
    }
    let status = c.status().context("building the fake server")?;
    anyhow::ensure!(status.success(), "building the fake server failed");
    Ok(())
}

struct Stage {
    name: &'static str,
    cmd: Command,
}

/// A stage running this xtask with `args`.
fn xtask(name: &'static str, args: &[&str]) -> Stage {
    xtask_with(name, &[], args)
}

/// A stage running this xtask (with cargo `features`) with `args`. The dev profile, as the test
/// stage builds it (dependencies at opt-level 2): the scenario stages reuse that build instead
/// of compiling the workspace a second time in release.
fn xtask_with(name: &'static str, features: &[&str], args: &[&str]) -> Stage {
    let mut cmd = cargo();
    cmd.args(["run", "--quiet", "--package", "xtask"]);
    for f in features {
        cmd.args(["--features", f]);
    }
    cmd.arg("--").args(args);
    Stage { name, cmd }
}

/// Run all stages; stop at the first failure. Returns the exit code.
pub fn run() -> Result<i32> {
    let mut stages = Vec::new();
    let mut c = cargo();
    c.args(["fmt", "--all", "--", "--check"]);
    stages.push(Stage {
        name: "fmt",
        cmd: c,
    });
    let mut c = cargo();
    c.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]);
    stages.push(Stage {
        name: "clippy",
        cmd: c,
    });
    // The host image first: the container tests and scenarios use it.
    let mut c = cargo();
    c.args(["run", "--quiet", "--package", "xtask", "--", "image"]);
    stages.push(Stage {
        name: "image",
        cmd: c,
    });
    let mut c = cargo();
    // Every feature, so the container stage's xtask reuses this build (testcontainers is a
    // dev-dependency of the tests anyway).
    c.args(["test", "--workspace", "--all-features"]);
    stages.push(Stage {
        name: "tests",
        cmd: c,
    });
    stages.push(xtask(
        "scenarios",
        &[
            "scenario",
            "--all",
            "--junit",
            "target/scenarios.xml",
            "--json",
            "target/scenarios.json",
        ],
    ));
    for runner in ["process", "container"] {
        let junit = format!("target/scenarios-{runner}.xml");
        let json = format!("target/scenarios-{runner}.json");
        let (name, features): (_, &[&str]) = if runner == "process" {
            ("processes", &[])
        } else {
            ("containers", &["container"])
        };
        stages.push(xtask_with(
            name,
            features,
            &[
                "scenario", "--all", "--runner", runner, "--junit", &junit, "--json", &json,
            ],
        ));
    }
    stages.push(xtask(
        "swarm",
        &["scenario", "--swarm", "--count", "200", "--seed", "1000"],
    ));
    stages.push(xtask("fuzz", &["fuzz", "--smoke"]));
    let started = std::time::SystemTime::now();
    let mut times = Vec::new();
    for mut s in stages {
        eprintln!("==> {}", s.name);
        let t = Instant::now();
        let status = s
            .cmd
            .status()
            .with_context(|| format!("running stage {}", s.name))?;
        let secs = t.elapsed().as_secs_f64();
        times.push((s.name, secs, status.success()));
        if !status.success() {
            report(&times);
            eprintln!("stage {} failed", times.last().map_or("?", |t| t.0));
            return Ok(status.code().unwrap_or(1));
        }
    }
    // Nothing the suite started may outlive it.
    let t = Instant::now();
    let left = leftovers(started);
    times.push(("leftovers", t.elapsed().as_secs_f64(), left.is_empty()));
    report(&times);
    if !left.is_empty() {
        for l in &left {
            eprintln!("left behind: {l}");
        }
        return Ok(1);
    }
    Ok(0)
}

/// Processes of faultkit launches or the fake server still running, and `/dev/shm` segments
/// named like the fake's that appeared since `since`.
fn leftovers(since: std::time::SystemTime) -> Vec<String> {
    let mut out = Vec::new();
    for p in procfacts::all_processes() {
        if !p.alive() || p.pid == std::process::id() {
            continue;
        }
        let env = std::fs::read(format!("/proc/{}/environ", p.pid)).unwrap_or_default();
        let ours = env
            .split(|&b| b == 0)
            .any(|kv| kv.starts_with(b"FAULTKIT_LAUNCH_ID=") || kv.starts_with(b"FAULTKIT_ROLE="));
        if ours {
            out.push(format!("process {} {}", p.pid, procfacts::cmdline(p.pid)));
        }
    }
    // Containers of the host image, faultkit's networks, and image layers left dangling.
    let docker = |args: &[&str]| -> Vec<String> {
        Command::new("docker")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    for c in docker(&[
        "ps",
        "-a",
        "--filter",
        "ancestor=faultkit/gpu-host:dev",
        "--format",
        "{{.ID}} {{.Status}}",
    ]) {
        out.push(format!("container {c}"));
    }
    for n in docker(&[
        "network",
        "ls",
        "--filter",
        "name=faultkit-",
        "--format",
        "{{.Name}}",
    ]) {
        out.push(format!("docker network {n}"));
    }
    for i in docker(&[
        "images",
        "--filter",
        "dangling=true",
        "--filter",
        "label=faultkit.hash",
        "--format",
        "{{.ID}}",
    ]) {
        out.push(format!("dangling image {i}"));
    }
    if let Ok(dir) = std::fs::read_dir("/dev/shm") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let new = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| m >= since);
            if name.starts_with("psm_") && new {
                out.push(format!("/dev/shm/{name}"));
            }
        }
    }
    out
}

fn report(times: &[(&str, f64, bool)]) {
    eprintln!("\nstage       seconds  result");
    for (n, s, ok) in times {
        eprintln!("{n:<11} {s:>7.1}  {}", if *ok { "ok" } else { "FAILED" });
    }
}
