//! The `faultkit` command line: argument parsing and dispatch. Exit codes come from
//! `triage::ExitCode`, defined once.

mod fake_host;
mod launch;
mod render;
mod simulate;
mod triage;

use ::triage::ExitCode;
use clap::{Parser, Subcommand};

/// Reproduce vLLM launch failures and diagnose them.
///
/// Exit codes: 0 ready/stopped/ok, 1 crashed with a known root cause, 2 crashed with an unknown
/// cause or hung, 3 starting/unknown/stale, 64 usage error, 66 input unreadable, 70 internal
/// error, 75 resources held by processes faultkit did not start, 130 interrupted.
#[derive(Parser, Debug)]
#[command(name = "faultkit", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Simulate(simulate::Args),
    Triage(triage::Args),
    Render(render::Args),
    Launch(launch::LaunchArgs),
    Stop(launch::StopArgs),
    Status(launch::StatusArgs),
    Follow(launch::FollowArgs),
    Scenario(runner::cli::ScenarioArgs),
    FakeHost(fake_host::Args),
}

/// Parse arguments and run; returns the process exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => ExitCode::Usage.code(),
            };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Simulate(a) => simulate::run(a),
        Command::Triage(a) => triage::run(a),
        Command::Render(a) => render::run(a),
        Command::Launch(a) => launch::launch(a),
        Command::Stop(a) => launch::stop(a),
        Command::Status(a) => launch::status(a),
        Command::Follow(a) => launch::follow(a),
        Command::FakeHost(a) => fake_host::run(a),
        Command::Scenario(a) => Ok(runner::cli::run(a, "faultkit scenario", commit())),
    };
    if std::env::var_os("FAULTKIT_REPORT_PEAK_RSS").is_some() {
        // For `cargo xtask bench`: peak resident memory, file pages included.
        let hwm = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .map(|l| l.trim_start_matches("VmHWM:").trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        eprintln!("faultkit: peak RSS (VmHWM) {hwm}");
    }
    match result {
        Ok(code) => code.code(),
        Err(e) => {
            eprintln!("faultkit: {e:#}");
            ExitCode::Internal.code()
        }
    }
}

/// Print an error and return its exit code.
pub(crate) fn fail(code: ExitCode, msg: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    eprintln!("faultkit: {msg}");
    Ok(code)
}

/// The commit of the working tree, for reproduce lines (none outside a git checkout).
pub(crate) fn commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}
