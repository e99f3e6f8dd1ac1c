//! Triage throughput on seeded simulator output (inputs: `benches::inputs`).
//!
//! - `framing_grammar`: split 64 MiB into lines and parse every line (MB/s).
//! - `full_1gib`: triage of a 1 GiB TP=8 log whose root cause is near the end.
//! - `newest_10gib` / `newest_alone`: the newest launch (5 MB) at the end of a 10 GiB file, and
//!   the same launch alone — the cost must follow the launch, not the file.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use triage::{self, grammar, Options};

const FRAMING_BYTES: usize = 64 << 20;

fn mapped(path: &std::path::Path) -> faultkit::mapped::Mapped {
    let f = std::fs::File::open(path).expect("bench input");
    faultkit::mapped::map(&f).expect("map")
}

fn bench(c: &mut Criterion) {
    let full = benches::inputs::full();
    let full_map = mapped(&full);

    let mut g = c.benchmark_group("triage");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(6));

    let slice = &full_map[..FRAMING_BYTES.min(full_map.len())];
    g.throughput(Throughput::Bytes(slice.len() as u64));
    g.bench_function("framing_grammar", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for line in slice.split(|&c| c == b'\n') {
                let p = grammar::parse_line(line);
                n += usize::from(p.process.is_some());
            }
            black_box(n)
        })
    });

    g.throughput(Throughput::Bytes(full_map.len() as u64));
    g.bench_function("full_1gib", |b| {
        b.iter(|| black_box(triage::triage(&full_map, &Options::default())))
    });

    let alone = mapped(&benches::inputs::newest_alone());
    g.throughput(Throughput::Bytes(alone.len() as u64));
    g.bench_function("newest_alone", |b| {
        b.iter(|| black_box(triage::triage(&alone, &Options::default())))
    });
    match benches::inputs::big() {
        Some(p) => {
            let big = mapped(&p);
            // Throughput in the launch's bytes: comparable with `newest_alone`.
            g.throughput(Throughput::Bytes(alone.len() as u64));
            g.bench_function("newest_10gib", |b| {
                b.iter(|| black_box(triage::triage(&big, &Options::default())))
            });
        }
        None => eprintln!(
            "triage/newest_10gib skipped: less than {} GiB free under {}",
            (benches::inputs::BIG_BYTES >> 30) + 1,
            benches::inputs::dir().display()
        ),
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
