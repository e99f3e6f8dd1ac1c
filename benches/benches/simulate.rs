//! The simulator's write rate: `serving-worker-killed` padded to 256 MiB, written to a sink
//! (generation only; `cargo xtask bench` also times `faultkit simulate --size 1GiB` to a file).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use generator::{Seed, SimOptions};

const BYTES: u64 = 256 << 20;

fn bench(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let s = runner::catalog::ScenarioDir { root }
        .find("serving-worker-killed")
        .expect("scenario");
    let mut g = c.benchmark_group("simulate");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Bytes(BYTES));
    g.bench_function("write_rate_256mib", |b| {
        b.iter(|| {
            let opts = SimOptions {
                seed: Seed(0),
                size_bytes: Some(BYTES),
                vllm: None,
            };
            generator::simulate(&s, &opts, &mut std::io::sink()).expect("simulate")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
