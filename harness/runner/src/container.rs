//! The `container` runner: each scenario on a fake GPU host of its own — a container of the
//! image `faultkit/gpu-host:dev` (`cargo xtask image`), with its own PID namespace and
//! `/dev/shm` — started and stopped through testcontainers.
//!
//! Main function: [`run`]. Sequences:
//! - any scenario of the `process` runner: the same sequence, played by `faultkit scenario
//!   --runner process` inside the container (the manual restart sequence, the truncation race,
//!   orphans), its result read back;
//! - `host_kill {at}`: `faultkit launch` inside, then the container is killed when the launch
//!   reaches the phase; the log (on a host directory) ends with no shutdown lines, `/dev/shm`
//!   (a host directory too) keeps the launch's segments; after a restart `faultkit stop` removes
//!   exactly those;
//! - `host_restart`: the launch comes up, the host restarts, an unrelated process gets the pid the
//!   launch record names; `faultkit stop` must leave it alone, and a new launch must come up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use generator::scenario::{Fault, Phase};
use generator::Scenario;
use testcontainers::core::{CmdWaitFor, ExecCommand, Mount};
use testcontainers::runners::SyncRunner;
use testcontainers::{Container, GenericImage, ImageExt};
use vocab::Truth;

use super::compare::{Mismatch, Observed};
use super::process::{text_truth, ProcessRun};
use triage::{self, Options, Output, Verdict};

/// The fake GPU host image.
pub const IMAGE_NAME: &str = "faultkit/gpu-host";
pub const IMAGE_TAG: &str = "dev";
/// Real seconds per simulated second for sequences that act mid-startup (slow enough to hit a
/// phase, fast enough for CI).
const SLOW_SCALE: f64 = 0.02;
const FAST_SCALE: f64 = 0.003;
const STEP_TIMEOUT_MS: u64 = 120_000;
/// Inside the container: where the host's case directory is mounted.
const CASE_MOUNT: &str = "/var/log/faultkit";

type Host = Container<GenericImage>;

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Is a Docker engine there, and the image built? A clear reason when not.
pub fn preflight() -> Result<(), String> {
    let ok = std::process::Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{.Id}}",
            &format!("{IMAGE_NAME}:{IMAGE_TAG}"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match ok {
        Err(e) => Err(format!("no docker client: {e}")),
        Ok(s) if !s.success() => Err(format!(
            "image {IMAGE_NAME}:{IMAGE_TAG} not found or no Docker engine answers: run `cargo xtask image`"
        )),
        Ok(_) => Ok(()),
    }
}

fn start_host(s: &Scenario, dir: &Path, scale: f64, mounts: bool) -> Result<Host, String> {
    let mut req = GenericImage::new(IMAGE_NAME, IMAGE_TAG)
        .with_env_var("FAULTKIT_GPUS", format!("{}x{}", s.gpu_count, s.gpu.id))
        .with_env_var("FAULTKIT_TIME_SCALE", scale.to_string())
        .with_env_var("FAULTKIT_STATE_DIR", format!("{CASE_MOUNT}/state"))
        .with_startup_timeout(Duration::from_secs(60));
    for (k, v) in &s.env {
        req = req.with_env_var(k.clone(), v.clone());
    }
    if mounts {
        let shm = dir.join("shm");
        std::fs::create_dir_all(&shm).map_err(|e| err("creating shm dir", e))?;
        req = req
            .with_mount(Mount::bind_mount(dir.display().to_string(), CASE_MOUNT))
            .with_mount(Mount::bind_mount(shm.display().to_string(), "/dev/shm"));
    }
    req.start()
        .map_err(|e| err("starting the host container", e))
}

/// Runs `argv` in the container; returns (exit code, stdout, stderr).
fn exec(c: &Host, argv: &[&str]) -> Result<(i64, String, String), String> {
    let mut r = c
        .exec(ExecCommand::new(argv.iter().copied()).with_cmd_ready_condition(CmdWaitFor::exit()))
        .map_err(|e| err("docker exec", e))?;
    let out = String::from_utf8_lossy(&r.stdout_to_vec().map_err(|e| err("exec stdout", e))?)
        .into_owned();
    let errs = String::from_utf8_lossy(&r.stderr_to_vec().map_err(|e| err("exec stderr", e))?)
        .into_owned();
    let code = r
        .exit_code()
        .map_err(|e| err("exec exit code", e))?
        .unwrap_or(-1);
    Ok((code, out, errs))
}

/// `faultkit launch --ready-timeout 120 --json -- <the scenario's command>`.
fn launch_argv(s: &Scenario) -> Result<Vec<String>, String> {
    let mut argv: Vec<String> = [
        "faultkit",
        "launch",
        "--ready-timeout",
        "120",
        "--json",
        "--",
    ]
    .map(String::from)
    .to_vec();
    argv.extend(serve_command(s)?);
    Ok(argv)
}

fn sh(c: &Host, script: &str) -> Result<(i64, String, String), String> {
    exec(c, &["sh", "-c", script])
}

fn verdict_of(bytes: &[u8]) -> Verdict {
    match triage::triage(bytes, &Options::default()) {
        Output::One(v) => v,
        Output::All(mut vs) => vs.pop().unwrap_or_else(Verdict::empty),
    }
}

fn check(extra: &mut Vec<Mismatch>, ok: bool, field: &str, expected: &str, actual: String) {
    if !ok {
        extra.push(Mismatch {
            field: field.into(),
            expected: expected.into(),
            actual,
            against: "host",
        });
    }
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) -> Result<(), String> {
    launch::wait::until(
        Duration::from_millis(STEP_TIMEOUT_MS),
        Duration::from_millis(20),
        what,
        || cond().then_some(()),
    )
}

/// Runs one scenario on its own container host, in `dir`.
pub fn run(s: &Scenario, seed: u64, dir: &Path) -> Result<ProcessRun, String> {
    preflight()?;
    // Bind mounts need absolute paths.
    let dir = &std::path::absolute(dir).map_err(|e| err("case dir", e))?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| err("creating case dir", e))?;
    let truth = text_truth(s, seed, dir)?;
    let kill_at = s.host_kill();
    let restart = s.faults.contains(&Fault::HostRestart);
    let node_loss = s.node_loss();
    let (verdict, log, extra) = if let Some(at) = kill_at {
        host_kill(s, dir, at)?
    } else if let Some(node) = node_loss {
        node_loss_flow(s, dir, node)?
    } else if restart {
        host_restart(s, dir)?
    } else {
        return inside(s, seed, dir, truth);
    };
    Ok(ProcessRun::new(truth, &verdict, log, extra, dir))
}

/// The process runner's sequence, played inside the container.
fn inside(s: &Scenario, seed: u64, dir: &Path, truth: Truth) -> Result<ProcessRun, String> {
    let c = start_host(s, dir, FAST_SCALE, false)?;
    let seed_s = seed.to_string();
    let id = s.id();
    let (code, out, errs) = exec(
        &c,
        &[
            "faultkit",
            "scenario",
            &id,
            "--runner",
            "process",
            "--seed",
            &seed_s,
            "--jobs",
            "1",
            "--out",
            "/tmp/out",
            "--json",
            "/tmp/result.json",
        ],
    )?;
    let (_, json, _) = exec(&c, &["cat", "/tmp/result.json"])?;
    let v: serde_json::Value = serde_json::from_str(&json)
        .map_err(|e| format!("no result from the container (exit {code}): {e}\n{out}\n{errs}"))?;
    let r = &v["results"][0];
    if let Some(e) = r["error"].as_str() {
        return Err(format!("inside the container: {e}"));
    }
    let observed: Observed =
        serde_json::from_value(r["observed"].clone()).map_err(|e| err("observed", e))?;
    // Truth and [expect] are compared again here; the other findings (leftovers, the launcher's
    // own answers, the tail check) come from inside.
    let extra: Vec<Mismatch> = r["mismatches"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter(|m| !matches!(m["against"].as_str(), Some("truth" | "expect")))
                .map(|m| Mismatch {
                    field: m["field"].as_str().unwrap_or_default().to_string(),
                    expected: m["expected"].as_str().unwrap_or_default().to_string(),
                    actual: m["actual"].as_str().unwrap_or_default().to_string(),
                    against: "container",
                })
                .collect()
        })
        .unwrap_or_default();
    let inner_log = r["log"].as_str().unwrap_or_default();
    let log = dir.join("server.log");
    if let Ok((_, text, _)) = exec(&c, &["cat", inner_log]) {
        let _ = std::fs::write(&log, text);
    }
    let (_, verdict_txt, _) = exec(
        &c,
        &[
            "sh",
            "-c",
            &format!("cat \"$(dirname {inner_log})/verdict.txt\""),
        ],
    )?;
    let _ = std::fs::write(dir.join("verdict.txt"), &verdict_txt);
    c.rm().map_err(|e| err("removing the container", e))?;
    let mut observed = observed;
    observed.line = None;
    Ok(ProcessRun {
        truth,
        observed,
        report: verdict_txt,
        log,
        extra,
    })
}

fn serve_command(s: &Scenario) -> Result<Vec<String>, String> {
    shlex::split(&s.command).ok_or_else(|| "unbalanced quotes in command".to_string())
}

/// The newest launch log under the mounted state dir.
fn launch_log(dir: &Path) -> Option<PathBuf> {
    let logs = dir.join("state/logs");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&logs)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log") && p.is_file())
        .collect();
    v.sort();
    v.pop()
}

/// The line that shows a launch reached `at` (what the person watching the log waits for).
fn phase_marker(at: Phase) -> &'static [&'static str] {
    match at {
        Phase::InitDevice => &["world_size=", "rank=0"],
        Phase::LoadWeights => &[
            "Starting to load model",
            "Loading safetensors",
            "Loading weights",
        ],
        Phase::Compile => &["torch.compile", "Dynamo bytecode", "Compiling a graph"],
        Phase::Serving => &["Application startup complete"],
    }
}

fn shm_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("shm"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

type Played = (Verdict, PathBuf, Vec<Mismatch>);

fn host_kill(s: &Scenario, dir: &Path, at: Phase) -> Result<Played, String> {
    let c = start_host(s, dir, SLOW_SCALE, true)?;
    let mut extra = Vec::new();
    // A segment someone else left in /dev/shm: it must survive everything below.
    std::fs::write(dir.join("shm/psm_foreign"), b"not this launch's")
        .map_err(|e| err("writing foreign shm", e))?;
    let argv = serve_command(s)?;
    let quoted = shlex::try_join(argv.iter().map(String::as_str)).map_err(|e| err("quoting", e))?;
    sh(
        &c,
        &format!("faultkit launch --ready-timeout 600 -- {quoted} > {CASE_MOUNT}/launch.out 2>&1 < /dev/null &"),
    )?;
    let markers = phase_marker(at);
    wait_for(
        || {
            launch_log(dir)
                .and_then(|p| std::fs::read_to_string(p).ok())
                .is_some_and(|t| markers.iter().any(|m| t.contains(m)))
        },
        "the launch to reach the phase",
    )?;
    // The launcher notes the launch's /dev/shm segments every half second.
    std::thread::sleep(Duration::from_millis(600));
    // `docker kill`: every process of the host dies at once.
    c.stop_with_timeout(Some(0))
        .map_err(|e| err("killing the host", e))?;
    let log = launch_log(dir).ok_or("no launch log")?;
    let bytes = std::fs::read(&log).map_err(|e| err("reading log", e))?;
    let text = String::from_utf8_lossy(&bytes);
    check(
        &mut extra,
        !text.contains("Shutting down") && !text.contains("shutdown complete"),
        "no_shutdown_lines",
        "none",
        "shutdown lines present".into(),
    );
    let left = shm_entries(dir);
    let ours: Vec<&String> = left
        .iter()
        .filter(|n| n.as_str() != "psm_foreign")
        .collect();
    let multi = s.args.world_size() > 1;
    check(
        &mut extra,
        !multi || !ours.is_empty(),
        "shm_left_after_kill",
        "the launch's segment left in /dev/shm",
        format!("{left:?}"),
    );
    // The host comes back; faultkit removes what the dead launch left, and only that.
    c.start().map_err(|e| err("restarting the host", e))?;
    let (code, out, errs) = exec(&c, &["faultkit", "stop", "--json"])?;
    check(
        &mut extra,
        code == 0,
        "stop_exit",
        "0",
        format!("{code}: {out}{errs}"),
    );
    let after = shm_entries(dir);
    check(
        &mut extra,
        after == ["psm_foreign"],
        "shm_after_stop",
        "[\"psm_foreign\"]",
        format!("{after:?}"),
    );
    c.rm().map_err(|e| err("removing the container", e))?;
    let copy = dir.join("server.log");
    std::fs::copy(&log, &copy).map_err(|e| err("copying log", e))?;
    Ok((verdict_of(&bytes), copy, extra))
}

/// A Ray deployment over several host containers on a private network; one machine is killed
/// while serving.
fn node_loss_flow(s: &Scenario, dir: &Path, lost: u32) -> Result<Played, String> {
    let nodes = s.host.nodes.max(2);
    let per_node = s.gpu_count / nodes;
    let net = format!("faultkit-{}-{}", s.name, std::process::id());
    let scenario_in_image = format!("/scenarios/{}/{}.toml", s.group, s.name);
    let start = |name: &str, mounts: bool| -> Result<Host, String> {
        let mut req = GenericImage::new(IMAGE_NAME, IMAGE_TAG)
            .with_network(net.clone())
            .with_env_var("FAULTKIT_GPUS", format!("{per_node}x{}", s.gpu.id))
            .with_env_var("FAULTKIT_TIME_SCALE", FAST_SCALE.to_string())
            .with_env_var("FAULTKIT_SCENARIO", scenario_in_image.clone())
            .with_env_var("FAULTKIT_STATE_DIR", format!("{CASE_MOUNT}/state"))
            .with_env_var("FAULTKIT_NODE_NAME", name)
            .with_startup_timeout(Duration::from_secs(60));
        for (k, v) in &s.env {
            req = req.with_env_var(k.clone(), v.clone());
        }
        if mounts {
            req = req.with_mount(Mount::bind_mount(dir.display().to_string(), CASE_MOUNT));
        }
        req.start().map_err(|e| err("starting a host container", e))
    };
    let head = start("head", true)?;
    let head_ip = container_ip(head.id(), &net)?;
    let mut workers = Vec::new();
    for k in 1..nodes {
        let w = start(&format!("node{k}"), false)?;
        sh(
            &w,
            &format!("fake-vllm ray-node --address {head_ip}:6379 > /var/log/ray-node.log 2>&1 < /dev/null &"),
        )?;
        workers.push(w);
    }
    let mut extra = Vec::new();
    let launch = launch_argv(s)?;
    let launch: Vec<&str> = launch.iter().map(String::as_str).collect();
    let (code, out, errs) = exec(&head, &launch)?;
    let r: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| format!("launch ({code}): {e}: {errs}"))?;
    check(
        &mut extra,
        r["outcome"] == "ready",
        "launch_ready",
        "ready",
        r["outcome"].to_string(),
    );
    let log_in = r["log"].as_str().ok_or("launch gave no log")?.to_string();
    let log_host = dir.join(
        log_in
            .strip_prefix(&format!("{CASE_MOUNT}/"))
            .ok_or("log outside the case dir")?,
    );
    // The machine goes away.
    let victim = workers
        .get((lost.max(1) - 1) as usize)
        .ok_or("no such machine")?;
    victim
        .stop_with_timeout(Some(0))
        .map_err(|e| err("killing the machine", e))?;
    // Someone following the log sees the failure when it is there.
    let (code, out, _) = exec(
        &head,
        &[
            "faultkit",
            "follow",
            "--until-failure",
            "--timeout",
            "120",
            "--json",
            &log_in,
        ],
    )?;
    let followed: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    check(
        &mut extra,
        code == 1 && followed["root_cause"]["id"] == "node_lost",
        "follow_names_the_lost_node",
        "exit 1, node_lost",
        format!("exit {code}, {}", followed["root_cause"]["id"]),
    );
    let (code, _, _) = exec(&head, &["faultkit", "stop"])?;
    check(&mut extra, code == 0, "stop_exit", "0", code.to_string());
    let bytes = std::fs::read(&log_host).map_err(|e| err("reading log", e))?;
    let copy = dir.join("server.log");
    std::fs::write(&copy, &bytes).map_err(|e| err("copying log", e))?;
    drop(workers);
    head.rm().map_err(|e| err("removing the container", e))?;
    Ok((verdict_of(&bytes), copy, extra))
}

fn container_ip(id: &str, net: &str) -> Result<String, String> {
    let out = std::process::Command::new("docker")
        .args([
            "inspect",
            "--format",
            &format!("{{{{(index .NetworkSettings.Networks \"{net}\").IPAddress}}}}"),
            id,
        ])
        .output()
        .map_err(|e| err("docker inspect", e))?;
    let ip = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if ip.is_empty() {
        return Err(format!("no address on network {net}"));
    }
    Ok(ip)
}

fn host_restart(s: &Scenario, dir: &Path) -> Result<Played, String> {
    let c = start_host(s, dir, FAST_SCALE, true)?;
    let mut extra = Vec::new();
    // The host has run a while before the launch (pids are used up), so after the restart,
    // when pids start again from 1, the launch's pid lies ahead of whatever boots first.
    sh(
        &c,
        "i=0; while [ $i -lt 64 ]; do true & i=$((i+1)); done; wait",
    )?;
    let launch = launch_argv(s)?;
    let launch: Vec<&str> = launch.iter().map(String::as_str).collect();
    let (code, out, errs) = exec(&c, &launch)?;
    if code != 0 {
        return Err(format!("first launch failed ({code}): {out}{errs}"));
    }
    let first: serde_json::Value = serde_json::from_str(&out).map_err(|e| err("launch json", e))?;
    let pid = first["pid"].as_u64().ok_or("launch gave no pid")?;
    // The host restarts: every process is gone, pids start again from 1.
    c.stop_with_timeout(Some(2))
        .map_err(|e| err("stopping the host", e))?;
    c.start().map_err(|e| err("restarting the host", e))?;
    // An unrelated process takes the recorded pid.
    let (_, got, _) = sh(
        &c,
        &format!(
            "while :; do sleep 600 & p=$!; if [ $p -eq {pid} ]; then echo $p; break; elif [ $p -gt {pid} ]; then echo miss $p; break; fi; kill $p; done"
        ),
    )?;
    if got.trim() != pid.to_string() {
        return Err(format!(
            "could not give pid {pid} to another process after the restart ({})",
            got.trim()
        ));
    }
    let (code, out, errs) = exec(&c, &["faultkit", "stop", "--json"])?;
    check(
        &mut extra,
        code == 0,
        "stop_exit",
        "0",
        format!("{code}: {out}{errs}"),
    );
    let (alive, _, _) = exec(&c, &["kill", "-0", &pid.to_string()])?;
    check(
        &mut extra,
        alive == 0,
        "unrelated_process_alive",
        "the process now holding the old pid is not signalled",
        format!("kill -0 {pid} → {alive}"),
    );
    // A new launch comes up (and does not touch the unrelated process either).
    let (code, out, errs) = exec(&c, &launch)?;
    let second: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| format!("second launch ({code}): {e} {errs}"))?;
    let (alive, _, _) = exec(&c, &["kill", "-0", &pid.to_string()])?;
    check(
        &mut extra,
        alive == 0,
        "unrelated_process_alive_after_launch",
        "alive",
        format!("{alive}"),
    );
    let verdict: Verdict = serde_json::from_value::<serde_json::Value>(second["verdict"].clone())
        .ok()
        .and_then(|v| {
            let log = second["log"].as_str()?;
            let host_log = dir.join(log.strip_prefix(&format!("{CASE_MOUNT}/"))?);
            let _ = v;
            std::fs::read(host_log).ok()
        })
        .map(|b| {
            let mut v = verdict_of(&b);
            if second["outcome"] == "ready" && v.status != triage::Status::Crashed {
                v.status = triage::Status::Ready;
            }
            v
        })
        .ok_or("second launch gave no log")?;
    let (code, _, _) = exec(&c, &["faultkit", "stop"])?;
    check(&mut extra, code == 0, "final_stop", "0", code.to_string());
    c.rm().map_err(|e| err("removing the container", e))?;
    let log = dir.join("server.log");
    if let Some(l) = second["log"]
        .as_str()
        .and_then(|l| l.strip_prefix(&format!("{CASE_MOUNT}/")))
    {
        let _ = std::fs::copy(dir.join(l), &log);
    }
    Ok((verdict, log, extra))
}
