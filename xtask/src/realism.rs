//! `cargo xtask realism`: how much the simulator's logs look like real vLLM's — line-template
//! coverage of every captured fixture (`scenarios/real/vllm-<version>/`) by the simulated log of
//! the same scenario and version, per capture, per version and overall. `--public`: how much of
//! each public real log's vLLM lines its twin scenario (`real = …`) reproduces.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use runner::catalog::ScenarioDir;
use runner::realism::{self, COVERAGE_MIN};

/// Options of `cargo xtask realism`.
#[derive(clap::Args, Debug)]
pub struct RealismArgs {
    /// Also list the real line templates the simulation lacks and the simulated ones real vLLM
    /// did not print.
    #[arg(long)]
    verbose: bool,
    /// Compare the public real logs of `scenarios/real/` with their twin scenarios (those that
    /// name one with `real = "batch-NN/….log"`): recall of the real log's vLLM line templates,
    /// the worst ten with what they lack
    #[arg(long)]
    public: bool,
}

pub fn run(a: RealismArgs) -> Result<i32> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = ScenarioDir {
        root: root.join("scenarios"),
    };
    if a.public {
        return public(&root, &dir, a.verbose);
    }
    let covs = realism::measure(&root.join("scenarios/real"), &dir).map_err(anyhow::Error::msg)?;
    if covs.is_empty() {
        eprintln!("realism: no captured fixture names a capturable scenario");
        return Ok(1);
    }
    println!(
        "{:<10} {:<34} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "vllm", "capture", "real", "simulated", "shared", "recall", "precision", "locations"
    );
    #[derive(Default)]
    struct Sum {
        real: usize,
        simulated: usize,
        shared: usize,
        captures: usize,
        locations: usize,
        locations_shared: usize,
    }
    let mut per_version: BTreeMap<String, Sum> = BTreeMap::new();
    let mut below = Vec::new();
    for c in &covs {
        println!(
            "{:<10} {:<34} {:>9} {:>9} {:>9} {:>8.1}% {:>8.1}% {:>9.1}%",
            c.version,
            c.file,
            c.templates,
            c.simulated,
            c.covered,
            c.ratio() * 100.0,
            c.precision() * 100.0,
            c.location_ratio() * 100.0
        );
        if a.verbose {
            for m in &c.missing {
                println!("    missing: {m}");
            }
            for m in &c.invented {
                println!("    invented: {m}");
            }
            for m in &c.missing_locations {
                println!("    location missing: {m}");
            }
        }
        let e = per_version.entry(c.version.clone()).or_default();
        e.real += c.templates;
        e.simulated += c.simulated;
        e.shared += c.covered;
        e.captures += 1;
        e.locations += c.locations;
        e.locations_shared += c.locations_covered;
        if c.ratio() < COVERAGE_MIN || c.precision() < COVERAGE_MIN {
            below.push(format!("{} {}", c.version, c.file));
        }
    }
    println!();
    let pct = |part: usize, whole: usize| part as f64 / whole.max(1) as f64 * 100.0;
    let mut all = Sum::default();
    for (v, s) in &per_version {
        println!(
            "vLLM {v:<10} {} captures: recall {:.1}% of {} real templates, precision {:.1}% of {} simulated, locations {:.1}% of {}",
            s.captures,
            pct(s.shared, s.real),
            s.real,
            pct(s.shared, s.simulated),
            s.simulated,
            pct(s.locations_shared, s.locations),
            s.locations
        );
        all.real += s.real;
        all.simulated += s.simulated;
        all.shared += s.shared;
        all.locations += s.locations;
        all.locations_shared += s.locations_shared;
    }
    println!(
        "overall: recall {:.1}% of {} real templates, precision {:.1}% of {} simulated, source locations {:.1}% of {}, across {} captures",
        pct(all.shared, all.real),
        all.real,
        pct(all.shared, all.simulated),
        all.simulated,
        pct(all.locations_shared, all.locations),
        all.locations,
        covs.len()
    );
    if !below.is_empty() {
        eprintln!(
            "realism: recall or precision below {:.0}%: {}",
            COVERAGE_MIN * 100.0,
            below.join(", ")
        );
        return Ok(1);
    }
    Ok(0)
}

/// `--public`: every twin scenario against its public real log, worst first; the worst ten
/// (all with `--verbose`) list the real templates their twin lacks.
fn public(root: &Path, dir: &ScenarioDir, verbose: bool) -> Result<i32> {
    let mut covs =
        realism::measure_public(&root.join("scenarios/real"), dir).map_err(anyhow::Error::msg)?;
    if covs.is_empty() {
        eprintln!("realism --public: no scenario names a public real log (`real = …`)");
        return Ok(1);
    }
    covs.sort_by(|a, b| a.ratio().total_cmp(&b.ratio()).then(a.real.cmp(&b.real)));
    println!(
        "{:<8} {:<44} {:<36} {:>6} {:>6} {:>7}",
        "vllm", "real log", "twin", "real", "shared", "recall"
    );
    let (mut real, mut shared) = (0, 0);
    for (i, c) in covs.iter().enumerate() {
        println!(
            "{:<8} {:<44} {:<36} {:>6} {:>6} {:>6.1}%",
            c.version,
            c.real,
            c.scenario,
            c.templates,
            c.covered,
            c.ratio() * 100.0
        );
        if verbose || i < 10 {
            for m in &c.missing {
                println!("    lacks: {}", triage::render::escape_control(m));
            }
        }
        real += c.templates;
        shared += c.covered;
    }
    println!(
        "\npublic twins: {} real logs, recall {:.1}% of {} vLLM line templates",
        covs.len(),
        shared as f64 / real.max(1) as f64 * 100.0,
        real
    );
    Ok(0)
}
