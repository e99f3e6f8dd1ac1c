//! Project automation: `cargo xtask scenario | ci | bench | tidy | image | fuzz | capture | realism | corpus | wheel-check`.
//! Everything the project needs to build, test and measure itself lives here (no shell scripts
//! beyond `.ci/run`).

mod bench;
mod capture;
mod ci;
mod corpus;
mod fuzz;
mod image;
mod realism;
mod tidy;
mod wheel;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "faultkit's project automation")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run scenarios (same as `faultkit scenario`).
    Scenario(runner::cli::ScenarioArgs),
    /// The whole CI: fmt, clippy, image, tests, every scenario per runner, a small swarm, a fuzz smoke run, leftovers. Prints each stage's time.
    Ci,
    /// Style checks of STYLE.md (also run as tests).
    Tidy,
    /// Capture real vLLM logs as fixtures (local, heavy: installs vLLM; never in CI).
    Capture(capture::CaptureArgs),
    /// Line-template coverage of the real vLLM captures by the simulator, per version.
    Realism(realism::RealismArgs),
    /// Triage scored on the labelled real logs of scenarios/real/ (line, id, status per directory).
    Corpus(corpus::CorpusArgs),
    /// Build the fake GPU host image faultkit/gpu-host:dev (FROM scratch, no registry).
    Image(image::ImageArgs),
    /// Fuzz the readers of untrusted bytes (framer, triage, scenario files); --smoke for CI.
    Fuzz(fuzz::FuzzArgs),
    /// Benchmarks: criterion suite, triage vs rg, peak memory, baselines (--save / --baseline).
    Bench(bench::BenchArgs),
    /// Check a profile's [file:line] of every message and frame against a vLLM wheel's source (local: downloads the wheel).
    WheelCheck(wheel::WheelCheckArgs),
}

/// Runs this same xtask command again, built with the container runner (a separate build, so
/// the main job never compiles testcontainers), and exits with its code.
fn with_container_runner() -> Result<()> {
    let release = std::env::current_exe()?
        .parent()
        .is_some_and(|d| d.ends_with("release"));
    let mut c =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.args([
        "run",
        "--quiet",
        "--package",
        "xtask",
        "--features",
        "container",
    ]);
    if release {
        c.arg("--release");
    }
    let status = c
        .arg("--")
        .args(std::env::args_os().skip(1))
        .status()
        .context("building xtask with the container runner")?;
    std::process::exit(status.code().unwrap_or(1));
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let code = match cli.command {
        Cmd::Scenario(a) => {
            if a.runner() == "process" {
                ci::build_fake()?;
            }
            if a.runner() == "container" {
                if !cfg!(feature = "container") {
                    return with_container_runner();
                }
                image::ensure(false)?;
            }
            runner::cli::run(a, "cargo xtask scenario", ci::commit()).code()
        }
        Cmd::Ci => ci::run()?,
        Cmd::Tidy => tidy::run()?,
        Cmd::Bench(a) => bench::run(a)?,
        Cmd::Image(a) => image::run(a)?,
        Cmd::Fuzz(a) => fuzz::run(a)?,
        Cmd::Realism(a) => realism::run(a)?,
        Cmd::Corpus(a) => corpus::run(a)?,
        Cmd::Capture(a) => capture::run(a)?,
        Cmd::WheelCheck(a) => wheel::run(a)?,
    };
    std::process::exit(code);
}
