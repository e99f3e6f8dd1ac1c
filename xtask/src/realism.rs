//! `cargo xtask realism`: how much the simulator's logs look like real vLLM's — line-template
//! coverage of every captured fixture (`scenarios/real/vllm-<version>/`) by the simulated log of
//! the same scenario and version, per capture, per version and overall.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use runner::catalog::ScenarioDir;
use runner::realism::{self, COVERAGE_MIN};

/// Options of `cargo xtask realism`.
#[derive(clap::Args, Debug)]
pub struct RealismArgs {
    /// Also list the real line templates the simulation lacks.
    #[arg(long)]
    verbose: bool,
}

pub fn run(a: RealismArgs) -> Result<i32> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = ScenarioDir {
        root: root.join("scenarios"),
    };
    let covs = realism::measure(&root.join("scenarios/real"), &dir).map_err(anyhow::Error::msg)?;
    if covs.is_empty() {
        eprintln!("realism: no captured fixture names a capturable scenario");
        return Ok(1);
    }
    println!(
        "{:<10} {:<34} {:>9} {:>9} {:>9}",
        "vllm", "capture", "templates", "covered", "coverage"
    );
    let mut per_version: BTreeMap<String, (usize, usize, Vec<f64>)> = BTreeMap::new();
    let mut below = Vec::new();
    for c in &covs {
        println!(
            "{:<10} {:<34} {:>9} {:>9} {:>8.1}%",
            c.version,
            c.file,
            c.templates,
            c.covered,
            c.ratio() * 100.0
        );
        if a.verbose {
            for m in &c.missing {
                println!("    missing: {m}");
            }
        }
        let e = per_version.entry(c.version.clone()).or_default();
        e.0 += c.templates;
        e.1 += c.covered;
        e.2.push(c.ratio());
        if c.ratio() < COVERAGE_MIN {
            below.push(format!("{} {}", c.version, c.file));
        }
    }
    println!();
    let (mut t, mut k) = (0, 0);
    for (v, (templates, covered, ratios)) in &per_version {
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        println!(
            "vLLM {v:<10} {} captures: {:.1}% of {templates} templates covered (mean per capture {:.1}%)",
            ratios.len(),
            *covered as f64 / *templates as f64 * 100.0,
            mean * 100.0
        );
        t += templates;
        k += covered;
    }
    println!(
        "overall: {:.1}% of {t} templates covered across {} captures",
        k as f64 / t as f64 * 100.0,
        covs.len()
    );
    if !below.is_empty() {
        eprintln!(
            "realism: below {:.0}%: {}",
            COVERAGE_MIN * 100.0,
            below.join(", ")
        );
        return Ok(1);
    }
    Ok(0)
}
