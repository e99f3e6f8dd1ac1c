//! `cargo xtask fuzz`: fuzz what reads untrusted bytes — the line framer and grammar, the whole
//! triage with both renderings, and scenario files (the targets are `fuzz/src/lib.rs`).
//!
//! It fills the seed corpora (`fuzz/corpus/<target>/seed-*`, generated, not committed) from the
//! simulator, the real logs in `scenarios/real/` and the scenario files, then runs each target
//! for a while with libFuzzer (`cargo +nightly fuzz`, when a nightly toolchain and cargo-fuzz are
//! installed) or with the stable loop (`fuzz/examples/stable_loop.rs`: seed-corpus mutations on
//! the stable toolchain), and prints executions per target. Any finding — a panic, a broken
//! property, an input slower than the timeout, memory above the limit — fails the command, with
//! the input saved under `fuzz/artifacts/<target>/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use generator::{Seed, SimOptions};

/// Options of `cargo xtask fuzz`.
#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    /// Every target briefly (25 s each unless --seconds), failing on any finding: the quick check.
    #[arg(long)]
    smoke: bool,
    /// Only this target: framer, triage or scenario (default: all three).
    target: Option<String>,
    /// Seconds of fuzzing per target [default: 25 with --smoke, else 300].
    #[arg(long)]
    seconds: Option<u64>,
    /// Fuzzing processes per target, sharing its corpus.
    #[arg(long, default_value_t = 1)]
    jobs: u32,
    /// auto: libFuzzer when `cargo +nightly fuzz` works, else the stable loop.
    #[arg(long, default_value = "auto", value_parser = ["auto", "libfuzzer", "stable"])]
    engine: String,
    /// libFuzzer only: `none` (the default: triage is safe Rust, and the fuzzer runs several
    /// times faster without ASan) or `address`.
    #[arg(long, default_value = "none", value_parser = ["none", "address"])]
    sanitizer: String,
    /// Only (re)generate the seed corpora.
    #[arg(long)]
    corpus_only: bool,
}

/// Fuzz targets, in the order they run (the functions of the same names in `fuzz/src/lib.rs`).
pub const TARGETS: &[&str] = &["framer", "triage", "scenario"];

/// A seed-corpus file holds at most this much (a libFuzzer input grows from it).
const SEED_BYTES_MAX: usize = 64 << 10;
/// The seeds of one target hold at most this much in all.
const CORPUS_BYTES_MAX: usize = 2 << 20;
/// Framer seeds are line-aligned pieces of logs of about this size (small inputs run faster).
const FRAMER_PIECE_BYTES: usize = 1 << 10;
/// Triage seeds include each log's last bytes, about this many.
const TRIAGE_EXCERPT_BYTES: usize = 8 << 10;
/// An input running longer than this is a finding (a hang, or something quadratic).
const INPUT_TIMEOUT_S: u64 = 10;
/// Resident memory above this is a finding.
const RSS_LIMIT_MB: u64 = 2048;
const SMOKE_SECONDS: u64 = 25;
const LONG_SECONDS: u64 = 300;
/// Scenarios whose logs seed the corpora: every layer, old and new vLLM, colours, file damage.
const SEED_SCENARIOS: &[&str] = &[
    "crash/fp8-kv-sm120",
    "crash/fp8-kv-sm120-coloured",
    "crash/cuda-oom-model-load-tp2",
    "crash/port-in-use",
    "crash/cli-bad-value",
    "crash/nccl-peer-access",
    "crash/host-oom-killed",
    "crash/startup-worker-killed",
    "crash/kv-cache-too-small-v0.11",
    "runtime/serving-worker-killed",
    "runtime/serving-nccl-timeout",
    "files/rotated-log",
    "files/partial-last-line",
    "files/truncate-while-writing",
    "files/relaunch-stale-tail",
    "healthy/healthy-v0-engine",
    "healthy/healthy-nccl-debug",
    "healthy/healthy-v0.8.5-tp2",
];

/// The fuzzing engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    LibFuzzer,
    Stable,
}

/// What one target's run did.
#[derive(Debug)]
struct Outcome {
    target: String,
    execs: u64,
    secs: f64,
    findings: Vec<String>,
}

pub fn run(a: FuzzArgs) -> Result<i32> {
    let root = root();
    let fuzz = root.join("fuzz");
    let targets: Vec<&str> = match &a.target {
        Some(t) if TARGETS.contains(&t.as_str()) => vec![t.as_str()],
        Some(t) => bail!("no fuzz target `{t}` (targets: {})", TARGETS.join(", ")),
        None => TARGETS.to_vec(),
    };
    if a.jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    let seconds = a
        .seconds
        .unwrap_or(if a.smoke { SMOKE_SECONDS } else { LONG_SECONDS });

    eprintln!("==> seed corpora (fuzz/corpus/<target>/seed-*)");
    for t in &targets {
        let (files, bytes) = write_corpus(&root, t)?;
        eprintln!("    {t:<9} {files:>4} seed files, {:>5} KiB", bytes / 1024);
    }
    if a.corpus_only {
        return Ok(0);
    }

    let engine = match a.engine.as_str() {
        "libfuzzer" => Engine::LibFuzzer,
        "stable" => Engine::Stable,
        _ => match libfuzzer_missing() {
            None => Engine::LibFuzzer,
            Some(why) => {
                eprintln!("==> {why}: using the stable loop (no coverage feedback; install a nightly toolchain and `cargo install cargo-fuzz` for libFuzzer)");
                Engine::Stable
            }
        },
    };
    let started = Instant::now();
    let (engine, bin_dir) = match build(&fuzz, engine, &a.sanitizer) {
        Ok(dir) => (engine, dir),
        // Chosen automatically, libFuzzer may still fail to build (a nightly that cannot
        // compile libFuzzer's C++): the stable loop then runs the same targets.
        Err(e) if engine == Engine::LibFuzzer && a.engine == "auto" => {
            eprintln!("==> {e:#}: using the stable loop instead");
            (Engine::Stable, build(&fuzz, Engine::Stable, &a.sanitizer)?)
        }
        Err(e) => return Err(e),
    };
    let build_secs = started.elapsed().as_secs_f64();

    let logs = fuzz.join("target/logs");
    std::fs::create_dir_all(&logs)?;
    let mut outcomes = Vec::new();
    for t in &targets {
        eprintln!(
            "==> {t}: {seconds} s × {} job(s), {}",
            a.jobs,
            match engine {
                Engine::LibFuzzer => "libFuzzer",
                Engine::Stable => "stable loop",
            }
        );
        let o = run_target(&fuzz, &bin_dir, engine, t, seconds, a.jobs, &logs)?;
        for f in &o.findings {
            eprintln!("    FINDING: {f}");
        }
        outcomes.push(o);
    }

    println!();
    println!(
        "{:<9} {:>14} {:>8} {:>11}  findings",
        "target", "executions", "seconds", "exec/s"
    );
    for o in &outcomes {
        println!(
            "{:<9} {:>14} {:>8.1} {:>11.0}  {}",
            o.target,
            o.execs,
            o.secs,
            o.execs as f64 / o.secs.max(1e-9),
            o.findings.len()
        );
    }
    println!(
        "engine: {}; build {build_secs:.0} s, total {:.0} s",
        match engine {
            Engine::LibFuzzer =>
                format!("libFuzzer (cargo +nightly fuzz, sanitizer {})", a.sanitizer),
            Engine::Stable => "stable loop".to_string(),
        },
        started.elapsed().as_secs_f64()
    );
    let found = outcomes.iter().any(|o| !o.findings.is_empty());
    if found {
        println!("FAILED: inputs are in fuzz/artifacts/<target>/; replay one with the command printed above");
    }
    Ok(i32::from(found))
}

fn root() -> PathBuf {
    let r = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    r.canonicalize().unwrap_or(r)
}

/// `cargo` through rustup's proxy, so `+nightly` works, without the toolchain this xtask runs on
/// forced onto it.
fn rustup_cargo() -> Command {
    let mut c = Command::new("cargo");
    c.env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        // Asking whether nightly is there must not download it.
        .env("RUSTUP_AUTO_INSTALL", "0");
    c
}

/// Why libFuzzer cannot run here (None: it can).
fn libfuzzer_missing() -> Option<String> {
    let works = |args: &[&str]| {
        rustup_cargo()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !works(&["+nightly", "--version"]) {
        return Some("no nightly toolchain (`rustup toolchain install nightly`)".into());
    }
    if !works(&["+nightly", "fuzz", "--version"]) {
        return Some("cargo-fuzz is not installed (`cargo install cargo-fuzz`)".into());
    }
    None
}

/// Build the engine's binaries; returns the directory holding one binary per target (libFuzzer)
/// or the stable loop.
fn build(fuzz: &Path, engine: Engine, sanitizer: &str) -> Result<PathBuf> {
    let target_dir = fuzz.join("target");
    match engine {
        Engine::LibFuzzer => {
            eprintln!("==> cargo +nightly fuzz build --sanitizer {sanitizer}");
            let st = rustup_cargo()
                .current_dir(fuzz.join(".."))
                .args(["+nightly", "fuzz", "build", "--sanitizer", sanitizer])
                .env("CARGO_TARGET_DIR", &target_dir)
                .status()
                .context("running cargo +nightly fuzz build")?;
            if !st.success() {
                bail!("cargo fuzz build failed");
            }
            Ok(target_dir.join(host_triple()?).join("release"))
        }
        Engine::Stable => {
            eprintln!("==> cargo build --release --example stable_loop (fuzz/)");
            let st = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .current_dir(fuzz)
                .args([
                    "build",
                    "--locked",
                    "--release",
                    "--no-default-features",
                    "--example",
                    "stable_loop",
                ])
                .env("CARGO_TARGET_DIR", &target_dir)
                .status()
                .context("building the stable loop")?;
            if !st.success() {
                bail!("building fuzz/examples/stable_loop.rs failed");
            }
            Ok(target_dir.join("release/examples"))
        }
    }
}

fn host_triple() -> Result<String> {
    let mut rustc = Command::new("rustc");
    rustc
        .env_remove("RUSTUP_TOOLCHAIN")
        .env("RUSTUP_AUTO_INSTALL", "0");
    let out = rustc
        .args(["+nightly", "-vV"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .or_else(|| Command::new("rustc").arg("-vV").output().ok())
        .context("running rustc -vV")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .context("no host triple in `rustc -vV`")
}

/// Run `jobs` fuzzing processes of one target side by side and add up what they did.
fn run_target(
    fuzz: &Path,
    bin_dir: &Path,
    engine: Engine,
    target: &str,
    seconds: u64,
    jobs: u32,
    logs: &Path,
) -> Result<Outcome> {
    let corpus = fuzz.join("corpus").join(target);
    let artifacts = fuzz.join("artifacts").join(target);
    std::fs::create_dir_all(&artifacts)?;
    let started = Instant::now();
    let mut children = Vec::new();
    for job in 0..jobs {
        let log = logs.join(format!("{target}-{job}.log"));
        let file = std::fs::File::create(&log).with_context(|| format!("{}", log.display()))?;
        let mut c = match engine {
            Engine::LibFuzzer => {
                let mut c = Command::new(bin_dir.join(target));
                let max_len = if target == "scenario" {
                    16 << 10
                } else {
                    192 << 10
                };
                c.arg(format!("-max_total_time={seconds}"))
                    .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
                    .arg(format!("-timeout={INPUT_TIMEOUT_S}"))
                    .arg(format!("-max_len={max_len}"))
                    .arg(format!("-dict={}", fuzz.join("vllm.dict").display()))
                    .arg(format!("-artifact_prefix={}/", artifacts.display()))
                    .arg("-print_final_stats=1")
                    .arg(format!("-seed={}", job + 1))
                    .arg(&corpus);
                c
            }
            Engine::Stable => {
                let mut c = Command::new(bin_dir.join("stable_loop"));
                c.arg(target)
                    .args(["--seconds", &seconds.to_string()])
                    .arg("--corpus")
                    .arg(&corpus)
                    .arg("--artifacts")
                    .arg(&artifacts)
                    .args(["--seed", &job.to_string()])
                    .args(["--timeout", &INPUT_TIMEOUT_S.to_string()])
                    .args(["--rss-limit-mb", &RSS_LIMIT_MB.to_string()]);
                c
            }
        };
        c.current_dir(fuzz)
            .stdout(file.try_clone()?)
            .stderr(file)
            .stdin(Stdio::null());
        children.push((
            log,
            c.spawn().with_context(|| format!("starting {target}"))?,
        ));
    }
    let mut o = Outcome {
        target: target.to_string(),
        execs: 0,
        secs: 0.0,
        findings: Vec::new(),
    };
    for (log, mut child) in children {
        let status = child.wait()?;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let execs = executions(engine, &text);
        o.execs += execs.unwrap_or(0);
        if !status.success() || execs.is_none() {
            let tail: Vec<&str> = text.lines().rev().take(25).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            eprintln!(
                "---- {} (last lines)\n{}\n----",
                log.display(),
                tail.join("\n")
            );
            let saved = text
                .lines()
                .filter_map(|l| {
                    l.split("Test unit written to ")
                        .nth(1)
                        .or_else(|| l.split(" saved to ").nth(1))
                })
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(", ");
            let reproduce = match engine {
                Engine::LibFuzzer => format!("cargo +nightly fuzz run {target} <input>"),
                Engine::Stable => format!(
                    "cargo run --release --no-default-features --manifest-path fuzz/Cargo.toml \
                     --example stable_loop -- {target} --replay <input>"
                ),
            };
            o.findings.push(format!(
                "{target}: {status}; input: {}; log: {}; reproduce: {reproduce}",
                if saved.is_empty() {
                    "(none saved)"
                } else {
                    &saved
                },
                log.display()
            ));
        }
    }
    o.secs = started.elapsed().as_secs_f64();
    Ok(o)
}

/// Executions reported at the end of a run's output.
fn executions(engine: Engine, text: &str) -> Option<u64> {
    text.lines().rev().find_map(|l| match engine {
        Engine::LibFuzzer => l
            .strip_prefix("stat::number_of_executed_units:")
            .or_else(|| {
                l.strip_prefix("Done ")
                    .and_then(|r| r.split(" runs").next())
            })
            .and_then(|n| n.trim().parse().ok()),
        Engine::Stable => l
            .split(": ")
            .nth(2)
            .and_then(|r| r.strip_suffix(")"))
            .and_then(|r| r.split(" executions").next())
            .and_then(|n| n.trim().parse().ok()),
    })
}

/// Write `fuzz/corpus/<target>/seed-*` afresh (inputs libFuzzer added stay); returns (files, bytes).
fn write_corpus(root: &Path, target: &str) -> Result<(usize, usize)> {
    let dir = root.join("fuzz/corpus").join(target);
    std::fs::create_dir_all(&dir)?;
    for e in std::fs::read_dir(&dir)? {
        let p = e?.path();
        if p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("seed-"))
        {
            std::fs::remove_file(&p)?;
        }
    }
    let seeds: Vec<(String, Vec<u8>)> = match target {
        "scenario" => scenario_seeds(root)?,
        "framer" => logs(root)?
            .into_iter()
            .flat_map(|(name, bytes)| {
                pieces(&bytes, FRAMER_PIECE_BYTES)
                    .into_iter()
                    .enumerate()
                    .map(move |(i, p)| (format!("{name}-{i:03}"), p.to_vec()))
                    .collect::<Vec<_>>()
            })
            .collect(),
        _ => {
            let logs = logs(root)?;
            // Small excerpts first (the end of each log, where the crash is: fast to run), then
            // each log's first 64 KiB (and its last, when longer), while the budget lasts.
            let mut v: Vec<(String, Vec<u8>)> = logs
                .iter()
                .map(|(name, bytes)| {
                    (
                        format!("{name}-end"),
                        tail(bytes, TRIAGE_EXCERPT_BYTES).to_vec(),
                    )
                })
                .collect();
            for (name, bytes) in logs {
                v.push((name.clone(), head(&bytes, SEED_BYTES_MAX).to_vec()));
                if bytes.len() > SEED_BYTES_MAX {
                    v.push((
                        format!("{name}-tail"),
                        tail(&bytes, SEED_BYTES_MAX).to_vec(),
                    ));
                }
            }
            v
        }
    };
    let (mut files, mut total) = (0, 0);
    for (name, mut bytes) in seeds {
        bytes.truncate(SEED_BYTES_MAX);
        if total + bytes.len() > CORPUS_BYTES_MAX {
            continue;
        }
        total += bytes.len();
        files += 1;
        std::fs::write(dir.join(format!("seed-{name}")), &bytes)?;
    }
    Ok((files, total))
}

/// Logs to seed from: the seed scenarios simulated with seed 1, and every real log.
fn logs(root: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let dir = runner::catalog::ScenarioDir {
        root: root.join("scenarios"),
    };
    let mut out = Vec::new();
    for id in SEED_SCENARIOS {
        let s = dir
            .find(id)
            .with_context(|| format!("seed scenario {id}"))?;
        let (log, _truth) = generator::simulate_to_vec(
            &s,
            &SimOptions {
                seed: Seed(1),
                size_bytes: None,
                vllm: None,
            },
        );
        out.push((format!("sim-{}", id.replace('/', "-")), log));
    }
    let real = root.join("scenarios/real");
    for group in sorted_dir(&real)? {
        if !group.is_dir() {
            continue;
        }
        for f in sorted_dir(&group)? {
            if f.extension().is_some_and(|e| e == "log" || e == "txt") {
                let bytes = std::fs::read(&f).with_context(|| format!("{}", f.display()))?;
                out.push((
                    format!(
                        "real-{}-{}",
                        file_name(&group),
                        f.file_stem().and_then(|s| s.to_str()).unwrap_or("")
                    ),
                    bytes,
                ));
            }
        }
    }
    Ok(out)
}

/// Every scenario file, plus a few that are wrong in the ways people get them wrong.
fn scenario_seeds(root: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let dir = runner::catalog::ScenarioDir {
        root: root.join("scenarios"),
    };
    let mut out = Vec::new();
    for f in dir.files().map_err(|e| anyhow::anyhow!("{e}"))? {
        let bytes = std::fs::read(&f).with_context(|| format!("{}", f.display()))?;
        let id = runner::catalog::id_of(&f).replace('/', "-");
        out.push((id, bytes));
    }
    let base = "summary = \"x\"\nvllm = \"0.15.1\"\ncommand = \"vllm serve m -tp 8\"\ngpus = { model = \"h100\", count = 8 }\n";
    for (name, extra) in [
        ("bad-type", "[expect]\nstatus = 3\n"),
        ("bad-key", "colour = \"red\"\n[expect]\nstatus = \"crashed\"\n"),
        ("bad-root-cause", "[expect]\nstatus = \"crashed\"\nroot_cause = \"gremlins\"\n"),
        ("faults", "[[faults]]\nkind = \"kill\"\nprocess = \"Worker_TP3\"\nsignal = \"SIGKILL\"\nat = \"serving\"\n[expect]\nstatus = \"crashed\"\n"),
    ] {
        out.push((format!("hand-{name}"), format!("{base}{extra}").into_bytes()));
    }
    Ok(out)
}

fn sorted_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    v.sort();
    Ok(v)
}

fn file_name(p: &Path) -> &str {
    p.file_name().and_then(|s| s.to_str()).unwrap_or("")
}

/// The first `max` bytes, cut after the last whole line when there is one.
fn head(b: &[u8], max: usize) -> &[u8] {
    if b.len() <= max {
        return b;
    }
    match b[..max].iter().rposition(|&c| c == b'\n') {
        Some(p) => &b[..p + 1],
        None => &b[..max],
    }
}

/// The last `max` bytes, starting at a line start when there is one.
fn tail(b: &[u8], max: usize) -> &[u8] {
    if b.len() <= max {
        return b;
    }
    let from = b.len() - max;
    match b[from..].iter().position(|&c| c == b'\n') {
        Some(p) if from + p + 1 < b.len() => &b[from + p + 1..],
        _ => &b[from..],
    }
}

/// Consecutive line-aligned pieces of about `size` bytes.
fn pieces(b: &[u8], size: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = b;
    while !rest.is_empty() {
        let p = head(rest, size);
        out.push(p);
        rest = &rest[p.len()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cut_at_line_ends() {
        let b = b"one\ntwo\nthree\n";
        assert_eq!(head(b, 9), b"one\ntwo\n");
        assert_eq!(tail(b, 9), b"three\n");
        assert_eq!(head(b"abcdef", 3), b"abc");
        assert_eq!(pieces(b, 5), vec![&b"one\n"[..], b"two\n", b"three", b"\n"]);
    }

    #[test]
    fn execution_counts_are_read_from_either_engine() {
        let lf =
            "#1234\tDONE   cov: 1\nstat::number_of_executed_units: 98765\nstat::peak_rss_mb: 50\n";
        assert_eq!(executions(Engine::LibFuzzer, lf), Some(98765));
        assert_eq!(
            executions(Engine::LibFuzzer, "Done 4321 runs in 25 second(s)\n"),
            Some(4321)
        );
        let st = "stable_loop: framer: 120 executions, 12 exec/s\nstable_loop: framer: 555 executions in 30.0 s (18 exec/s)\n";
        assert_eq!(executions(Engine::Stable, st), Some(555));
    }
}
