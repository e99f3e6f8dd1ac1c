//! How soon `faultkit launch` names the root cause of a crashing launch: the time from the
//! moment the root-cause line is in the log file to the moment the verdict is known.
//!
//! The crashing configuration is the headline one (Kimi-K2.5-NVFP4, TP=8, RTX PRO 6000): the
//! fake server writes the worker's `ValueError` for real; a watcher polls the file every
//! 200 µs and notes when the line lands; the launch's verdict callback notes when it is known.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use fake_vllm::FakeHost;
use launch::{self, LaunchOptions};

const ROOT_LINE: &[u8] = b"ValueError: No valid attention backend found";

fn one_launch(host: &FakeHost, n: u64) -> Duration {
    let state = host.dir.join(format!("state-{n}"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
    let mut argv: Vec<String> = "vllm serve nvidia/Kimi-K2.5-NVFP4 --tensor-parallel-size 8 --trust-remote-code --host 127.0.0.1"
        .split(' ')
        .map(String::from)
        .collect();
    argv.extend(["--port".into(), port.to_string()]);
    let mut opts = LaunchOptions::new(argv);
    opts.state_dir = Some(state.clone());
    opts.env = host.env(0.003);
    opts.env.push(("NO_COLOR".into(), "1".into()));
    opts.ready_timeout = Duration::from_secs(60);
    opts.term_wait_ms = 3_000;

    let seen: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let seen = Arc::clone(&seen);
        let done = Arc::clone(&done);
        let logs = state.join("logs");
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let hit = std::fs::read_dir(&logs).ok().and_then(|d| {
                    d.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                        .find_map(|e| std::fs::read(e.path()).ok())
                });
                if hit.is_some_and(|b| memchr::memmem::find(&b, ROOT_LINE).is_some()) {
                    *seen.lock().unwrap() = Some(Instant::now());
                    return;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let mut verdict_at = None;
    let r = launch::launch(&opts, &mut |_| {}, &mut |_| {
        verdict_at = Some(Instant::now())
    })
    .expect("launch runs");
    done.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    assert_eq!(r.exit_code, 1, "{:?}", r.verdict.map(|v| v.status));
    let seen = seen.lock().unwrap().expect("the root-cause line was seen");
    let at = verdict_at.expect("a verdict");
    at.saturating_duration_since(seen)
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = benches::fake_host(dir.path(), "rtx-pro-6000-blackwell", 8);
    let mut n = 0u64;
    let mut g = c.benchmark_group("launch");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("crash_line_to_verdict", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                total += one_launch(&host, n);
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
