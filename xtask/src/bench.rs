//! `cargo xtask bench`: the criterion suite, the figures criterion cannot take (triage beside
//! `rg`, peak memory, the simulator writing a real file), saved baselines and a regression gate.
//!
//! Baselines live in `target/faultkit-bench/baselines/<NAME>.json` with the CPU, rustc and commit
//! they were taken on. Criterion alone exits 0 on a regression; this command fails and names the
//! bench when a mean got slower than the threshold and the confidence intervals do not overlap.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// Options of `cargo xtask bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Save this run as a baseline.
    #[arg(long)]
    save: Option<String>,
    /// Compare with a saved baseline; exit 1 on a regression.
    #[arg(long)]
    baseline: Option<String>,
    /// Fewer samples (criterion --quick): minutes, not tens of minutes.
    #[arg(long)]
    quick: bool,
    /// A mean this many percent slower (with non-overlapping confidence intervals) is a regression.
    #[arg(long, default_value_t = 10.0)]
    threshold: f64,
    /// Only benches whose id contains this text (e.g. `triage/`).
    #[arg(long)]
    filter: Option<String>,
}

/// One bench's estimate of the mean time per iteration.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct Estimate {
    mean_ns: f64,
    lo_ns: f64,
    hi_ns: f64,
    /// Bytes per iteration, when the bench declares a throughput.
    bytes: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Baseline {
    schema: String,
    name: String,
    cpu: String,
    rustc: String,
    commit: Option<String>,
    benches: BTreeMap<String, Estimate>,
    figures: BTreeMap<String, f64>,
}

fn root() -> PathBuf {
    let r = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    r.canonicalize().unwrap_or(r)
}

fn target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

pub fn run(a: BenchArgs) -> Result<i32> {
    let started = Instant::now();
    let baseline = match &a.baseline {
        Some(n) => Some(load(n)?),
        None => None,
    };
    eprintln!("==> building (release)");
    let ok = cargo()
        .current_dir(root())
        .args([
            "build",
            "--quiet",
            "--release",
            "--package",
            "faultkit",
            "--package",
            "fake-vllm",
            "--bins",
        ])
        .status()?
        .success();
    if !ok {
        bail!("release build failed");
    }

    // Figures outside criterion first: they also create the inputs the benches reuse.
    let mut figures: BTreeMap<String, f64> = BTreeMap::new();
    let faultkit = target().join("release/faultkit");
    let inputs = target().join("faultkit-bench/inputs");
    std::fs::create_dir_all(&inputs)?;
    eprintln!("==> simulator write rate (faultkit simulate --size 1GiB to a file)");
    let out = inputs.join("write-rate");
    let _ = std::fs::remove_dir_all(&out);
    let t = Instant::now();
    let st = Command::new(&faultkit)
        .args([
            "simulate",
            "serving-worker-killed",
            "--size",
            "1GiB",
            "--out",
        ])
        .arg(&out)
        .current_dir(root())
        .stdout(Stdio::null())
        .status()?;
    let secs = t.elapsed().as_secs_f64();
    if !st.success() {
        bail!("faultkit simulate failed");
    }
    let bytes = std::fs::metadata(out.join("vllm.log"))?.len() as f64;
    figures.insert("simulate_file_mb_per_s".into(), bytes / secs / 1e6);

    eprintln!("==> criterion");
    let mut c = cargo();
    c.current_dir(root())
        .args(["bench", "--quiet", "--package", "benches", "--"]);
    if a.quick {
        c.arg("--quick");
    }
    if let Some(f) = &a.filter {
        c.arg(f);
    }
    let st = c.status().context("running cargo bench")?;
    if !st.success() {
        bail!("cargo bench failed");
    }
    let benches = read_criterion(&target().join("criterion"), a.filter.as_deref())?;

    let full = target().join("faultkit-bench/inputs/serving-worker-killed-s0-1073741824.log");
    if full.exists() {
        eprintln!("==> faultkit triage vs rg -c ERROR on the same 1 GiB file (best of 3)");
        let fk = best_of(3, || {
            Command::new(&faultkit)
                .arg("triage")
                .arg(&full)
                .stdout(Stdio::null())
                .status()
                .map(|_| ())
        })?;
        figures.insert("triage_1gib_s".into(), fk);
        match best_of(3, || {
            Command::new("rg")
                .args(["-c", "ERROR"])
                .arg(&full)
                .stdout(Stdio::null())
                .status()
                .and_then(|s| {
                    if s.code().is_some_and(|c| c <= 1) {
                        Ok(())
                    } else {
                        Err(std::io::Error::other("rg failed"))
                    }
                })
        }) {
            Ok(rg) => {
                figures.insert("rg_1gib_s".into(), rg);
                figures.insert("triage_over_rg".into(), fk / rg);
            }
            Err(_) => {
                eprintln!("rg is not installed: no triage/rg ratio (apt-get install ripgrep)")
            }
        }
    }
    let big = target().join("faultkit-bench/inputs/newest-of-10GiB.log");
    if big.exists() {
        eprintln!("==> peak memory of faultkit triage on the 10 GiB file");
        let out = Command::new(&faultkit)
            .arg("triage")
            .arg(&big)
            .env("FAULTKIT_REPORT_PEAK_RSS", "1")
            .stdout(Stdio::null())
            .output()?;
        let err = String::from_utf8_lossy(&out.stderr);
        if let Some(kb) = err
            .lines()
            .find_map(|l| l.strip_prefix("faultkit: peak RSS (VmHWM) "))
            .and_then(|v| v.trim_end_matches(" kB").trim().parse::<f64>().ok())
        {
            figures.insert("peak_rss_10gib_mib".into(), kb / 1024.0);
        }
    }

    print_figures(&benches, &figures);
    let mut code = 0;
    if let Some(b) = &baseline {
        code = compare(b, &benches, a.threshold);
    }
    if let Some(name) = &a.save {
        save(name, &benches, &figures)?;
    }
    eprintln!("bench: {:.0} s", started.elapsed().as_secs_f64());
    Ok(code)
}

fn best_of(n: usize, mut f: impl FnMut() -> std::io::Result<()>) -> Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// `target/criterion/<group>/<bench>/new/{estimates,benchmark}.json`.
fn read_criterion(dir: &Path, filter: Option<&str>) -> Result<BTreeMap<String, Estimate>> {
    let mut out = BTreeMap::new();
    let Ok(groups) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    for g in groups.flatten().filter(|e| e.path().is_dir()) {
        for b in std::fs::read_dir(g.path())?.flatten() {
            let new = b.path().join("new");
            let (Ok(est), Ok(meta)) = (
                std::fs::read_to_string(new.join("estimates.json")),
                std::fs::read_to_string(new.join("benchmark.json")),
            ) else {
                continue;
            };
            let est: serde_json::Value = serde_json::from_str(&est)?;
            let meta: serde_json::Value = serde_json::from_str(&meta)?;
            let id = meta["full_id"].as_str().unwrap_or_default().to_string();
            if filter.is_some_and(|f| !id.contains(f)) {
                continue;
            }
            let m = &est["mean"];
            out.insert(
                id,
                Estimate {
                    mean_ns: m["point_estimate"].as_f64().unwrap_or(0.0),
                    lo_ns: m["confidence_interval"]["lower_bound"]
                        .as_f64()
                        .unwrap_or(0.0),
                    hi_ns: m["confidence_interval"]["upper_bound"]
                        .as_f64()
                        .unwrap_or(0.0),
                    bytes: meta["throughput"]["Bytes"].as_u64(),
                },
            );
        }
    }
    Ok(out)
}

fn human_time(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

fn print_figures(benches: &BTreeMap<String, Estimate>, figures: &BTreeMap<String, f64>) {
    println!("\n{:<34} {:>12} {:>14}", "bench", "mean", "throughput");
    for (id, e) in benches {
        let thr = e
            .bytes
            .map(|b| format!("{:.0} MB/s", b as f64 / e.mean_ns * 1e3))
            .unwrap_or_default();
        println!("{id:<34} {:>12} {thr:>14}", human_time(e.mean_ns));
    }
    let mean = |id: &str| benches.get(id).map(|e| e.mean_ns);
    println!(
        "\n{:<44} {:>16} {:>12}  result",
        "target", "measured", "goal"
    );
    let row = |name: &str, measured: Option<f64>, unit: &str, goal: &str, ok: Option<bool>| {
        let m = measured.map_or("—".to_string(), |v| format!("{v:.2} {unit}"));
        let r = match ok {
            Some(true) => "ok",
            Some(false) => "MISS",
            None if measured.is_some() => "reported",
            None => "not measured",
        };
        println!("{name:<44} {m:>16} {goal:>12}  {r}");
    };
    let ratio = figures.get("triage_over_rg").copied();
    row(
        "full triage 1 GiB / rg -c ERROR",
        ratio,
        "x",
        "≤ 2x",
        ratio.map(|r| r <= 2.0),
    );
    let newest = match (mean("triage/newest_10gib"), mean("triage/newest_alone")) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    row(
        "newest launch of 10 GiB / same launch alone",
        newest,
        "x",
        "≤ 1.5x",
        newest.map(|r| r <= 1.5),
    );
    let rss = figures.get("peak_rss_10gib_mib").copied();
    row(
        "peak RSS, triage of 10 GiB",
        rss,
        "MiB",
        "≤ 64 MiB",
        rss.map(|r| r <= 64.0),
    );
    let sim = figures.get("simulate_file_mb_per_s").copied();
    row(
        "simulator, --size 1GiB to a file",
        sim.map(|v| v / 1000.0),
        "GB/s",
        "≥ 1 GB/s",
        sim.map(|v| v >= 1000.0),
    );
    let sink = benches
        .get("simulate/write_rate_256mib")
        .and_then(|e| e.bytes.map(|b| b as f64 / e.mean_ns));
    row(
        "simulator, generation only",
        sink,
        "GB/s",
        "≥ 1 GB/s",
        sink.map(|v| v >= 1.0),
    );
    let lat = mean("launch/crash_line_to_verdict").map(|ns| ns / 1e6);
    row(
        "launch: crash line → verdict",
        lat,
        "ms",
        "≤ 200 ms",
        lat.map(|v| v <= 200.0),
    );
    let fg = benches
        .get("triage/framing_grammar")
        .and_then(|e| e.bytes.map(|b| b as f64 / e.mean_ns * 1e3));
    row(
        "framing + grammar, every line",
        fg,
        "MB/s",
        "(reported)",
        None,
    );
    if let Some(t) = figures.get("triage_1gib_s") {
        println!(
            "  (faultkit triage 1 GiB: {t:.3} s; rg -c ERROR: {})",
            figures
                .get("rg_1gib_s")
                .map_or("n/a".into(), |r| format!("{r:.3} s"))
        );
    }
}

/// Prints old → new per bench; returns 1 when any bench regressed.
fn compare(b: &Baseline, now: &BTreeMap<String, Estimate>, threshold: f64) -> i32 {
    println!(
        "\ncompared with baseline `{}` (commit {}, {}, {})",
        b.name,
        b.commit.as_deref().unwrap_or("?"),
        b.cpu,
        b.rustc
    );
    println!(
        "{:<34} {:>12} {:>12} {:>9}  verdict",
        "bench", "baseline", "now", "change"
    );
    let mut regressed = Vec::new();
    for (id, new) in now {
        let Some(old) = b.benches.get(id) else {
            println!(
                "{id:<34} {:>12} {:>12} {:>9}  new",
                "—",
                human_time(new.mean_ns),
                ""
            );
            continue;
        };
        let change = (new.mean_ns / old.mean_ns - 1.0) * 100.0;
        let verdict = if change > threshold && new.lo_ns > old.hi_ns {
            regressed.push(id.clone());
            "REGRESSED"
        } else if change < -threshold && new.hi_ns < old.lo_ns {
            "improved"
        } else {
            "within noise"
        };
        println!(
            "{id:<34} {:>12} {:>12} {change:>+8.1}%  {verdict}",
            human_time(old.mean_ns),
            human_time(new.mean_ns)
        );
    }
    if regressed.is_empty() {
        0
    } else {
        eprintln!(
            "bench: regression beyond {threshold}% in {}",
            regressed.join(", ")
        );
        1
    }
}

fn baseline_path(name: &str) -> Result<PathBuf> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        bail!("baseline name `{name}`: use letters, digits, - _ .");
    }
    Ok(target().join(format!("faultkit-bench/baselines/{name}.json")))
}

fn load(name: &str) -> Result<Baseline> {
    let p = baseline_path(name)?;
    let text = std::fs::read_to_string(&p).with_context(|| {
        format!(
            "no baseline `{name}` ({}); save one with --save {name}",
            p.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("reading {}", p.display()))
}

fn save(
    name: &str,
    benches: &BTreeMap<String, Estimate>,
    figures: &BTreeMap<String, f64>,
) -> Result<()> {
    let p = baseline_path(name)?;
    std::fs::create_dir_all(p.parent().expect("has a parent"))?;
    let b = Baseline {
        schema: "faultkit.bench-baseline/1".into(),
        name: name.into(),
        cpu: cpu(),
        rustc: rustc(),
        commit: crate::ci::commit(),
        benches: benches.clone(),
        figures: figures.clone(),
    };
    std::fs::write(&p, serde_json::to_string_pretty(&b)?)?;
    eprintln!("bench: saved baseline `{name}` to {}", p.display());
    Ok(())
}

fn cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        })
        .map(|m| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            format!("{m} ×{n}")
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn rustc() -> String {
    Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
