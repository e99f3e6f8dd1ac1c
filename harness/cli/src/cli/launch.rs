//! `faultkit launch | stop | status | follow`: start a server safely, stop it, look at it,
//! and follow a log someone else writes.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use launch::{self, target, FollowUntil, LaunchOptions, Outcome};
use triage::{render, ExitCode};

use super::fail;

/// Start a vLLM server safely and wait until it is ready or has failed.
///
/// Stops the previous launch of the same state directory first (its whole process tree, found
/// by launch id and start time — never by name or bare pid), checks that the port and GPUs are
/// free (else lists who holds them and exits 75), starts COMMAND without a shell in a session
/// of its own with output to a new log `<state>/logs/<time>-<id>.log` (`latest.log` links to
/// it), then waits for `/health` to answer 200 (exit 0; the server keeps running), for a crash
/// (the root cause is printed as soon as it is in the log; the tree is stopped; exit 1 or 2),
/// or for the timeout (exit 2). Ctrl-C stops what was started and exits 130.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  faultkit launch --ready-timeout 900 -- vllm serve nvidia/Kimi-K2.5-NVFP4 -tp 8 --kv-cache-dtype bfloat16"
)]
pub struct LaunchArgs {
    /// State directory (default: $FAULTKIT_STATE_DIR, $XDG_STATE_HOME/faultkit, ~/.local/state/faultkit).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// The server's port, for the port check and the default health URL (default: the
    /// command's --port, else 8000). The command itself is never changed.
    #[arg(long)]
    port: Option<u16>,
    /// Readiness URL (default: http://127.0.0.1:PORT/health).
    #[arg(long)]
    health_url: Option<String>,
    /// Seconds to wait for readiness before giving up (the tree is then stopped).
    #[arg(long, default_value_t = launch::READY_TIMEOUT_SECS_DEFAULT)]
    ready_timeout: u64,
    /// Seconds between SIGTERM and SIGKILL when stopping.
    #[arg(long, default_value_t = launch::tree::TERM_WAIT_MS / 1000)]
    term_wait: u64,
    /// Where to run: local, ssh:HOST (runs `faultkit launch` there, every argument quoted),
    /// docker:CONTAINER (through `docker exec`).
    #[arg(long, default_value = "local")]
    target: String,
    /// The faultkit program on the target (for ssh: and docker: targets).
    #[arg(long, default_value = "faultkit")]
    remote_faultkit: String,
    /// Print the result as JSON (schema faultkit.launch/1).
    #[arg(long)]
    json: bool,
    /// The server command, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Stop the newest launch of a state directory (and any older one still running).
///
/// SIGTERM to the launch's process group, a bounded wait, SIGKILL to what is left, a wait until
/// every process is gone and nvidia-smi shows its memory released, then removal of the
/// /dev/shm entries the launch created. Processes faultkit did not start are never touched.
#[derive(clap::Args, Debug)]
pub struct StopArgs {
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Where: local, ssh:HOST, docker:CONTAINER (runs `faultkit stop` there).
    #[arg(long, default_value = "local")]
    target: String,
    /// The faultkit program on the target.
    #[arg(long, default_value = "faultkit")]
    remote_faultkit: String,
    /// Seconds between SIGTERM and SIGKILL.
    #[arg(long, default_value_t = launch::tree::TERM_WAIT_MS / 1000)]
    term_wait: u64,
    #[arg(long)]
    json: bool,
}

/// Show the newest launch: its processes, health, log and verdict.
///
/// Exit code: the verdict's (0 ready or stopped, 1/2 crashed or hung, 3 starting or unknown).
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Where: local, ssh:HOST, docker:CONTAINER (runs `faultkit status` there).
    #[arg(long, default_value = "local")]
    target: String,
    /// The faultkit program on the target.
    #[arg(long, default_value = "faultkit")]
    remote_faultkit: String,
    #[arg(long)]
    json: bool,
}

/// Follow a log someone else writes until the launch is ready or has failed.
///
/// With --pid, only the launch in which a line carries PID counts (older launches in the same
/// file are ignored — `tail` would show them). Prints the verdict as soon as it is final; after
/// --timeout prints what is known (exit 3 while starting or stale).
#[derive(clap::Args, Debug)]
pub struct FollowArgs {
    /// The log file.
    log: PathBuf,
    /// The pid of the server process of the launch to follow.
    #[arg(long)]
    pid: Option<u32>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Keep following a ready server until it fails or stops.
    #[arg(long)]
    until_failure: bool,
    /// Where the log is: local, ssh:HOST, docker:CONTAINER (runs `faultkit follow` there).
    #[arg(long, default_value = "local")]
    target: String,
    /// The faultkit program on the target.
    #[arg(long, default_value = "faultkit")]
    remote_faultkit: String,
    #[arg(long)]
    json: bool,
}

fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

pub fn launch(a: LaunchArgs) -> anyhow::Result<ExitCode> {
    if let Err(e) = target::parse(&a.target) {
        return fail(ExitCode::Usage, e);
    }
    if a.target != "local" {
        return remote(&a.target, &a.remote_faultkit);
    }
    let mut opts = LaunchOptions::new(a.command.clone());
    opts.state_dir = a.state_dir.clone();
    opts.port = a.port;
    opts.health_url = a.health_url.clone();
    opts.ready_timeout = Duration::from_secs(a.ready_timeout);
    opts.term_wait_ms = a.term_wait * 1000;
    let json = a.json;
    let mut progress = |m: &str| eprintln!("faultkit: {}", render::escape_control(m));
    let mut printed = false;
    let mut on_verdict = |v: &triage::Verdict| {
        if !json {
            print!("{}", render::human(v, color()));
            let _ = std::io::stdout().flush();
            printed = true;
        }
    };
    let r = match launch::launch(&opts, &mut progress, &mut on_verdict) {
        Ok(r) => r,
        Err(launch::LaunchError::Usage(m)) => return fail(ExitCode::Usage, m),
        Err(launch::LaunchError::Spawn { prog, source })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return fail(
                ExitCode::NoInput,
                format!("cannot start `{prog}`: not found on PATH"),
            )
        }
        Err(e) => return fail(ExitCode::NoInput, e),
    };
    if json {
        println!("{}", render::json_pretty(&r)?);
    } else {
        for h in &r.holders {
            eprintln!("faultkit:   {h}");
        }
        if !r.message.is_empty() {
            eprintln!("faultkit: {}", r.message);
        }
        match r.outcome {
            Outcome::Ready => {
                println!(
                    "ready: launch {} pid {} answers {} ({} ms); log {}",
                    r.id.as_deref().unwrap_or("?"),
                    r.pid.unwrap_or(0),
                    r.health_url.as_deref().unwrap_or(""),
                    r.elapsed_ms,
                    r.log
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                );
            }
            Outcome::Busy | Outcome::Locked => {}
            _ => {
                if let (false, Some(v)) = (printed, &r.verdict) {
                    print!("{}", render::human(v, color()));
                }
                if let Some(s) = &r.stop {
                    eprintln!(
                        "faultkit: stopped launch {}: {} terminated, {} killed, {} left, {} /dev/shm entries removed",
                        r.id.as_deref().unwrap_or("?"),
                        s.terminated.len(),
                        s.killed.len(),
                        s.left.len(),
                        s.shm_removed.len()
                    );
                }
            }
        }
    }
    Ok(exit_code_of(r.exit()))
}

fn exit_code_of(code: i32) -> ExitCode {
    match code {
        0 => ExitCode::Ok,
        1 => ExitCode::KnownCrash,
        2 => ExitCode::UnknownCrash,
        3 => ExitCode::Inconclusive,
        64 => ExitCode::Usage,
        66 => ExitCode::NoInput,
        75 => ExitCode::Busy,
        130 => ExitCode::Interrupted,
        _ => ExitCode::Internal,
    }
}

/// This invocation's arguments for the target: `--target` and `--remote-faultkit` (before the
/// `--` that starts a server command) removed, the program replaced by the remote faultkit.
fn remote_argv(args: &[String], remote_faultkit: &str) -> Vec<String> {
    let mut out = vec![remote_faultkit.to_string()];
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(it.cloned());
            break;
        }
        if a == "--target" || a == "--remote-faultkit" {
            it.next();
            continue;
        }
        if a.starts_with("--target=") || a.starts_with("--remote-faultkit=") {
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// `--target ssh:HOST|docker:NAME`: the same command, run by faultkit on the target.
fn remote(target: &str, remote_faultkit: &str) -> anyhow::Result<ExitCode> {
    let t = match target::parse(target) {
        Ok(t) => t,
        Err(e) => return fail(ExitCode::Usage, e),
    };
    let args: Vec<String> = std::env::args().collect();
    let argv = remote_argv(&args, remote_faultkit);
    let wrapped = match t.wrap(&argv) {
        Ok(w) => w,
        Err(e) => return fail(ExitCode::Usage, e),
    };
    eprintln!("faultkit: running on {}", t.name());
    let status = match std::process::Command::new(&wrapped[0])
        .args(&wrapped[1..])
        .status()
    {
        Ok(s) => s,
        Err(e) => {
            return fail(
                ExitCode::NoInput,
                format!("cannot run `{}` for --target {}: {e}", wrapped[0], t.name()),
            )
        }
    };
    Ok(match status.code() {
        Some(c) => exit_code_of(c),
        None => ExitCode::Internal,
    })
}

pub fn stop(a: StopArgs) -> anyhow::Result<ExitCode> {
    if a.target != "local" {
        return remote(&a.target, &a.remote_faultkit);
    }
    match launch::stop_current(a.state_dir.as_deref(), a.term_wait * 1000) {
        Ok(None) => {
            if a.json {
                println!("null");
            } else {
                eprintln!("faultkit: no launch recorded in this state directory");
            }
            Ok(ExitCode::Ok)
        }
        Ok(Some((rec, rep))) => {
            if a.json {
                println!(
                    "{}",
                    render::json_pretty(&serde_json::json!({
                        "schema": "faultkit.stop/1", "id": rec.id, "report": rep
                    }))?
                );
            } else {
                println!(
                    "stopped launch {} (pid {}): {} terminated, {} killed, {} left, {} /dev/shm entries removed{}",
                    rec.id,
                    rec.pid,
                    rep.terminated.len(),
                    rep.killed.len(),
                    rep.left.len(),
                    rep.shm_removed.len(),
                    match rep.gpu_released {
                        Some(false) => "; nvidia-smi still lists its processes",
                        _ => "",
                    }
                );
            }
            Ok(if rep.left.is_empty() {
                ExitCode::Ok
            } else {
                ExitCode::Internal
            })
        }
        Err(launch::LaunchError::Usage(m)) => fail(ExitCode::Busy, m),
        Err(e) => fail(ExitCode::NoInput, e),
    }
}

pub fn status(a: StatusArgs) -> anyhow::Result<ExitCode> {
    if a.target != "local" {
        return remote(&a.target, &a.remote_faultkit);
    }
    let r = match launch::status(a.state_dir.as_deref()) {
        Ok(r) => r,
        Err(e) => return fail(ExitCode::NoInput, e),
    };
    let code = r
        .verdict
        .as_ref()
        .map_or(ExitCode::Inconclusive, |v| v.exit_code());
    if a.json {
        println!("{}", render::json_pretty(&r)?);
        return Ok(code);
    }
    let Some(id) = &r.id else {
        println!("no launch recorded");
        return Ok(ExitCode::Inconclusive);
    };
    println!(
        "launch {id}: {} — {} process(es) alive, health {}",
        r.state.as_deref().unwrap_or("?"),
        r.processes.len(),
        if r.healthy { "OK" } else { "not answering" }
    );
    println!(
        "command: {}",
        render::escape_control(
            &shlex::try_join(r.argv.iter().map(String::as_str)).unwrap_or_default()
        )
    );
    if let Some(l) = &r.log {
        println!("log: {}", l.display());
    }
    for p in &r.processes {
        println!("  pid {} {}", p.pid, render::escape_control(&p.command));
    }
    if let Some(v) = &r.verdict {
        println!();
        print!("{}", render::human(v, color()));
    }
    Ok(code)
}

pub fn follow(a: FollowArgs) -> anyhow::Result<ExitCode> {
    if a.target != "local" {
        return remote(&a.target, &a.remote_faultkit);
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    let until = if a.until_failure {
        FollowUntil::Failure
    } else {
        FollowUntil::ReadyOrFailure
    };
    let v = match launch::follow(&a.log, a.pid, Duration::from_secs(a.timeout), until, &stop) {
        Ok(v) => v,
        Err(e) => return fail(ExitCode::NoInput, format!("{}: {e}", a.log.display())),
    };
    if a.json {
        println!("{}", render::json_pretty(&v)?);
    } else {
        print!("{}", render::human(&v, color()));
    }
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(ExitCode::Interrupted);
    }
    Ok(v.exit_code())
}

#[cfg(test)]
mod tests {
    use super::remote_argv;

    #[test]
    fn remote_argv_drops_only_target_options_before_the_command() {
        let args: Vec<String> = [
            "/usr/bin/faultkit",
            "launch",
            "--target",
            "ssh:gpu1",
            "--json",
            "--remote-faultkit=/opt/fk",
            "--",
            "vllm",
            "serve",
            "m",
            "--target",
            "x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            remote_argv(&args, "fk"),
            ["fk", "launch", "--json", "--", "vllm", "serve", "m", "--target", "x"]
        );
    }
}
