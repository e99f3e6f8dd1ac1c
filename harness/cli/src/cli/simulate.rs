//! `faultkit simulate`: write a scenario's log and truth.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use generator::{Seed, SimOptions, Version};
use runner::catalog::{FindError, ScenarioDir};
use triage::ExitCode;

use super::fail;

/// Write the log (`vllm.log`) and truth (`truth.json`) of a scenario.
///
/// The same scenario and seed always give byte-identical files. `--size` pads the log with
/// realistic traffic: a failure at runtime serves traffic first; a startup failure gets earlier
/// launches of the same file before it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario name (`fp8-kv-sm120`), `group/name`, or a path to a scenario file.
    #[arg(required_unless_present_any = ["list", "list_releases"])]
    scenario: Option<String>,
    /// Seed of every random choice (pids, timings, interleaving).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory [default: ./faultkit-out/<name>-<seed>].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Pad the log to about this size: bytes or with a unit (500MB, 1GiB).
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Simulate another vLLM release than the scenario's (one the simulator knows: `faultkit
    /// simulate --list-releases` lists them, and an unknown one is refused).
    #[arg(long)]
    vllm: Option<String>,
    /// List the scenarios and exit.
    #[arg(long)]
    list: bool,
    /// List the vLLM releases the simulator knows (for `--vllm`) and the profile each is
    /// simulated with, and exit.
    #[arg(long)]
    list_releases: bool,
    /// Scenario directory [default: $FAULTKIT_SCENARIOS, else ./scenarios, else the catalog
    /// built into faultkit].
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
}

/// Parse `123`, `500MB`, `1GiB`, `2k`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size (e.g. 1GiB, 500MB, 1048576)"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1048576.0,
        "g" | "gb" => 1e9,
        "gib" => 1073741824.0,
        "t" | "tb" => 1e12,
        "tib" => 1099511627776.0,
        other => {
            return Err(format!(
                "unknown size unit `{other}` (use B, KB, KiB, MB, MiB, GB, GiB)"
            ))
        }
    };
    Ok((n * mult) as u64)
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let dir = match ScenarioDir::discover(a.scenarios.as_deref()) {
        Ok(d) => d,
        Err(e) => return fail(ExitCode::Usage, e),
    };
    if a.list_releases {
        let mut out = std::io::stdout().lock();
        for v in generator::profile::Profile::releases() {
            let profile = generator::profile::Profile::for_version(v).version;
            if profile == v {
                writeln!(out, "{v}")?;
            } else {
                writeln!(out, "{v:<10} (simulated with the {profile} profile)")?;
            }
        }
        return Ok(ExitCode::Ok);
    }
    if a.list {
        let scenarios = match dir.load_all() {
            Ok(s) => s,
            Err(e) => return fail(ExitCode::Usage, e),
        };
        let mut out = std::io::stdout().lock();
        for s in scenarios {
            let runners: Vec<&str> = s.runners.iter().map(|r| r.as_str()).collect();
            writeln!(
                out,
                "{:<44} {:<8} {:<10} {}",
                s.id(),
                s.vllm.to_string(),
                runners.join(","),
                s.summary
            )?;
        }
        return Ok(ExitCode::Ok);
    }
    let name = a.scenario.expect("clap requires it");
    let scenario = match dir.find(&name) {
        Ok(s) => s,
        Err(e @ FindError::NotFound { .. }) => return fail(ExitCode::Usage, e),
        Err(e @ (FindError::Invalid(_) | FindError::Usage(_))) => return fail(ExitCode::Usage, e),
        Err(e @ FindError::Io { .. }) => return fail(ExitCode::NoInput, e),
    };
    let vllm = match a.vllm.as_deref().map(|v| Version::parse(v).ok_or(v)) {
        Some(Err(v)) => return fail(ExitCode::Usage, format!("`{v}` is not a vLLM version")),
        Some(Ok(v)) if !generator::profile::Profile::knows(v) => {
            let raw = a.vllm.as_deref().unwrap_or_default();
            return fail(
                ExitCode::Usage,
                format!(
                    "--vllm: {}",
                    generator::profile::Profile::unknown_release(raw)
                ),
            );
        }
        Some(Ok(v)) => Some(v),
        None => None,
    };
    if let Some(why) = vllm.and_then(|v| scenario.at_version(v).unmodelled(v)) {
        return fail(
            ExitCode::Usage,
            format!("{}: {why}", scenario.path.display()),
        );
    }
    let out_dir = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("faultkit-out/{}-{}", scenario.name, a.seed)));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let log_path = out_dir.join("vllm.log");
    let file = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let opts = SimOptions {
        seed: Seed(a.seed),
        size_bytes: a.size,
        vllm,
    };
    let truth = generator::simulate(&scenario, &opts, &mut w)
        .with_context(|| format!("writing {}", log_path.display()))?;
    w.flush()?;
    let truth_path = out_dir.join("truth.json");
    std::fs::write(&truth_path, truth.to_json())
        .with_context(|| format!("writing {}", truth_path.display()))?;
    eprintln!(
        "{}: wrote {} and {} (status {}{})",
        scenario.id(),
        log_path.display(),
        truth_path.display(),
        truth.status,
        truth
            .root_cause
            .as_ref()
            .map(|r| format!(", root cause {} at line {}", r.id, r.line))
            .unwrap_or_default()
    );
    Ok(ExitCode::Ok)
}
