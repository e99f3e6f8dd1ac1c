//! The fuzz targets without libFuzzer, on a stable toolchain: every seed-corpus input as is, then
//! mutations of them ([`faultkit_fuzz::mutate::Mutator`]) for a given time. A panic, an input
//! running longer than `--timeout`, or resident memory above `--rss-limit-mb` is a finding: the
//! input is saved under `--artifacts` and the loop exits 1.
//!
//! ```text
//! cargo run --release --no-default-features --manifest-path fuzz/Cargo.toml --example stable_loop -- \
//!     framer --seconds 60 --corpus fuzz/corpus/framer --artifacts fuzz/artifacts/framer [--seed N]
//! cargo run … --example stable_loop -- triage --replay fuzz/artifacts/triage/crash-…
//! ```
//!
//! The last line of output is `stable_loop: <target>: <N> executions in <S> s (<R> exec/s)`.

use std::hash::Hasher;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use faultkit_fuzz::mutate::Mutator;

/// Corpus files are read up to this size.
const CORPUS_FILE_BYTES_MAX: usize = 1 << 20;
/// The last input is mutated further only up to this size.
const CHAIN_BYTES_MAX: usize = 64 << 10;
/// How often the watchdog looks at the running input and the resident memory.
const WATCHDOG_PERIOD_MS: u64 = 100;

#[derive(Debug)]
struct Args {
    target: String,
    seconds: u64,
    corpus: Option<PathBuf>,
    artifacts: PathBuf,
    seed: u64,
    timeout_secs: u64,
    rss_limit_mb: u64,
    replay: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        target: String::new(),
        seconds: 30,
        corpus: None,
        artifacts: PathBuf::from("artifacts"),
        seed: 0,
        timeout_secs: 10,
        rss_limit_mb: 2048,
        replay: None,
    };
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let number = |s: String| s.parse::<u64>().map_err(|e| format!("`{s}`: {e}"));
        match arg.as_str() {
            "--seconds" => a.seconds = number(value("--seconds")?)?,
            "--corpus" => a.corpus = Some(value("--corpus")?.into()),
            "--artifacts" => a.artifacts = value("--artifacts")?.into(),
            "--seed" => a.seed = number(value("--seed")?)?,
            "--timeout" => a.timeout_secs = number(value("--timeout")?)?,
            "--rss-limit-mb" => a.rss_limit_mb = number(value("--rss-limit-mb")?)?,
            "--replay" => a.replay = Some(value("--replay")?.into()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if a.target.is_empty() => a.target = s.to_string(),
            s => return Err(format!("unexpected argument {s}")),
        }
    }
    if a.target.is_empty() {
        return Err("which target?".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            let names: Vec<&str> = faultkit_fuzz::TARGETS.iter().map(|t| t.name).collect();
            eprintln!(
                "stable_loop: {e}\nusage: stable_loop <{}> [--seconds N] [--corpus DIR] [--artifacts DIR] [--seed N] [--timeout S] [--rss-limit-mb M] [--replay FILE|DIR]",
                names.join("|")
            );
            return ExitCode::from(64);
        }
    };
    let Some(target) = faultkit_fuzz::target(&a.target) else {
        eprintln!("stable_loop: no target named `{}`", a.target);
        return ExitCode::from(64);
    };
    if let Some(p) = &a.replay {
        return replay(target, p);
    }
    let corpus = match &a.corpus {
        Some(dir) => match read_corpus(dir) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("stable_loop: {}: {e}", dir.display());
                return ExitCode::from(66);
            }
        },
        None => Vec::new(),
    };
    run(target, &a, corpus)
}

/// State the watchdog shares with the loop.
struct Current {
    /// Nanoseconds after `epoch` at which the running input started; 0 between inputs.
    started_ns: AtomicU64,
    input: Mutex<Arc<Vec<u8>>>,
    done: AtomicBool,
}

fn run(target: faultkit_fuzz::Target, a: &Args, mut corpus: Vec<Vec<u8>>) -> ExitCode {
    let name = target.name;
    let seeds = corpus.len();
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let epoch = Instant::now();
    let current = Arc::new(Current {
        started_ns: AtomicU64::new(0),
        input: Mutex::new(Arc::new(Vec::new())),
        done: AtomicBool::new(false),
    });
    let watchdog = {
        let current = Arc::clone(&current);
        let artifacts = a.artifacts.clone();
        let timeout = Duration::from_secs(a.timeout_secs);
        let rss_limit_kb = a.rss_limit_mb * 1024;
        std::thread::spawn(move || {
            while !current.done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(WATCHDOG_PERIOD_MS));
                let started = current.started_ns.load(Ordering::Relaxed);
                let running = (started > 0).then(|| {
                    epoch
                        .elapsed()
                        .saturating_sub(Duration::from_nanos(started))
                });
                let slow = running.is_some_and(|r| r > timeout);
                let rss = rss_kb();
                if slow || rss > rss_limit_kb {
                    let input = current
                        .input
                        .lock()
                        .map(|i| Arc::clone(&i))
                        .unwrap_or_default();
                    let (kind, why) = if slow {
                        (
                            "timeout",
                            format!("one input ran longer than {} s", timeout.as_secs()),
                        )
                    } else {
                        (
                            "oom",
                            format!("resident memory {} MiB above the limit", rss / 1024),
                        )
                    };
                    let path = save(&artifacts, kind, &input);
                    eprintln!(
                        "stable_loop: {name}: FINDING ({kind}): {why}; input ({} bytes) saved to {}",
                        input.len(),
                        path.display()
                    );
                    std::process::exit(1);
                }
            }
        })
    };

    eprintln!(
        "stable_loop: {name}: {seeds} seed inputs, {} s, seed {}",
        a.seconds, a.seed
    );
    let mut m = Mutator::new(a.seed);
    let deadline = Duration::from_secs(a.seconds);
    let mut execs: u64 = 0;
    let mut last: Option<Arc<Vec<u8>>> = None;
    let mut finding = None;
    let mut next_report = Duration::from_secs(10);
    loop {
        let input: Arc<Vec<u8>> = if (execs as usize) < corpus.len() {
            Arc::new(corpus[execs as usize].clone())
        } else {
            let base = match &last {
                // Stack mutations on the last input now and then (not on huge ones: they
                // would come back again and again and slow every target down).
                Some(l) if l.len() <= CHAIN_BYTES_MAX && m.below(100) < 30 => Arc::clone(l),
                _ => Arc::new(corpus[m.below(corpus.len())].clone()),
            };
            let other = &corpus[m.below(corpus.len())];
            Arc::new(m.mutate(&base, other))
        };
        if let Ok(mut slot) = current.input.lock() {
            *slot = Arc::clone(&input);
        }
        current.started_ns.store(
            (epoch.elapsed().as_nanos() as u64).max(1),
            Ordering::Relaxed,
        );
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
        current.started_ns.store(0, Ordering::Relaxed);
        execs += 1;
        if outcome.is_err() {
            finding = Some(input);
            break;
        }
        last = Some(input);
        let elapsed = epoch.elapsed();
        if elapsed >= deadline {
            break;
        }
        if elapsed >= next_report {
            eprintln!(
                "stable_loop: {name}: {execs} executions, {:.0} exec/s",
                execs as f64 / elapsed.as_secs_f64()
            );
            next_report += Duration::from_secs(10);
        }
    }
    current.done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    let secs = epoch.elapsed().as_secs_f64();
    let code = match finding {
        Some(input) => {
            let path = save(&a.artifacts, "crash", &input);
            eprintln!(
                "stable_loop: {name}: FINDING (panic): input ({} bytes) saved to {}\n\
                 reproduce: cargo run --release --no-default-features --manifest-path fuzz/Cargo.toml --example stable_loop -- {name} --replay {}",
                input.len(),
                path.display(),
                path.display()
            );
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    };
    println!(
        "stable_loop: {name}: {execs} executions in {secs:.1} s ({:.0} exec/s)",
        execs as f64 / secs.max(1e-9)
    );
    code
}

/// Run the target once on a file, or on every file of a directory.
fn replay(target: faultkit_fuzz::Target, p: &Path) -> ExitCode {
    let files: Vec<PathBuf> = if p.is_dir() {
        match sorted_files(p) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("stable_loop: {}: {e}", p.display());
                return ExitCode::from(66);
            }
        }
    } else {
        vec![p.to_path_buf()]
    };
    let mut failed = 0;
    for f in &files {
        let data = match std::fs::read(f) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("stable_loop: {}: {e}", f.display());
                return ExitCode::from(66);
            }
        };
        let started = Instant::now();
        let ok = std::panic::catch_unwind(|| (target.run)(&data)).is_ok();
        eprintln!(
            "stable_loop: {}: {} ({} bytes, {:.1} ms)",
            f.display(),
            if ok { "ok" } else { "PANIC" },
            data.len(),
            started.elapsed().as_secs_f64() * 1e3
        );
        failed += usize::from(!ok);
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn sorted_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

fn read_corpus(dir: &Path) -> std::io::Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for f in sorted_files(dir)? {
        let mut d = std::fs::read(&f)?;
        d.truncate(CORPUS_FILE_BYTES_MAX);
        out.push(d);
    }
    Ok(out)
}

/// Save a finding as `<kind>-<hash>` (libFuzzer's naming) and return its path.
fn save(dir: &Path, kind: &str, input: &[u8]) -> PathBuf {
    let mut h = std::hash::DefaultHasher::new();
    h.write(input);
    let path = dir.join(format!("{kind}-{:016x}", h.finish()));
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, input)) {
        eprintln!("stable_loop: could not save {}: {e}", path.display());
    }
    path
}

/// Resident set size of this process in KiB (0 when unknown).
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
