//! Shared inputs for the criterion benches: seeded simulator output and a host for the fake
//! server (shims, model directories, GPU state).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the fake server in this profile if it is not beside the bench binary yet.
pub fn fake_vllm() -> PathBuf {
    if let Ok(p) = runner::process::fake_vllm() {
        return p;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let release = std::env::current_exe()
        .ok()
        .is_some_and(|p| p.ancestors().any(|a| a.ends_with("release")));
    let mut c = Command::new(cargo);
    c.args(["build", "--quiet", "--package", "fake-vllm", "--bins"]);
    if release {
        c.arg("--release");
    }
    let ok = c.status().is_ok_and(|s| s.success());
    assert!(ok, "building fake-vllm failed");
    runner::process::fake_vllm().expect("fake-vllm was just built")
}

/// A fake GPU host with every model preset (see `fake_vllm::FakeHost`).
pub fn fake_host(dir: &Path, gpu: &str, count: u32) -> fake_vllm::FakeHost {
    let h = fake_vllm::FakeHost::create(dir, &fake_vllm(), gpu, count).expect("fake host");
    h.add_all_models().expect("model dirs");
    h
}

/// Bench inputs: seeded simulator output under `target/faultkit-bench/inputs`, generated once
/// (same seed and size ⇒ same bytes) and reused by every bench and by `cargo xtask bench`.
pub mod inputs {
    use std::io::Write as _;
    use std::path::{Path, PathBuf};

    use generator::{Scenario, Seed, SimOptions};

    /// 1 GiB, one TP=8 launch serving traffic, a worker SIGKILLed near the end.
    pub const FULL_BYTES: u64 = 1 << 30;
    /// The big file of the newest-launch bench.
    pub const BIG_BYTES: u64 = 10 << 30;
    /// Its newest launch.
    pub const NEWEST_BYTES: u64 = 5 << 20;

    /// `target/faultkit-bench/inputs` of the workspace.
    pub fn dir() -> PathBuf {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        target.join("faultkit-bench/inputs")
    }

    fn scenario(name: &str) -> Scenario {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let dir = runner::catalog::ScenarioDir { root };
        dir.find(name).expect("bench scenario exists")
    }

    /// Writes `name` at `seed`, padded to `size`, unless the file is already there.
    pub fn simulated(name: &str, seed: u64, size: u64) -> PathBuf {
        let path = dir().join(format!("{name}-s{seed}-{size}.log"));
        if path.exists() {
            return path;
        }
        std::fs::create_dir_all(dir()).expect("inputs dir");
        let tmp = path.with_extension("tmp");
        let f = std::fs::File::create(&tmp).expect("input file");
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let opts = SimOptions {
            seed: Seed(seed),
            size_bytes: Some(size),
            vllm: None,
        };
        generator::simulate(&scenario(name), &opts, &mut w).expect("simulate");
        w.flush().expect("flush");
        drop(w);
        std::fs::rename(&tmp, &path).expect("rename");
        path
    }

    /// The 1 GiB input of the full-triage bench.
    pub fn full() -> PathBuf {
        simulated("serving-worker-killed", 0, FULL_BYTES)
    }

    /// The newest launch alone (5 MB).
    pub fn newest_alone() -> PathBuf {
        simulated("serving-worker-killed", 1, NEWEST_BYTES)
    }

    /// Free bytes on the file system of the inputs directory.
    pub fn free_bytes() -> u64 {
        std::fs::create_dir_all(dir()).expect("inputs dir");
        rustix::fs::statvfs(dir()).map_or(0, |s| s.f_bavail * s.f_frsize)
    }

    /// 10 GiB of earlier launches with the 5 MB launch last; `None` when the disk has not
    /// room for it (with a margin of 1 GiB).
    pub fn big() -> Option<PathBuf> {
        let path = dir().join("newest-of-10GiB.log");
        if path.exists() {
            return Some(path);
        }
        if free_bytes() < BIG_BYTES + NEWEST_BYTES + (1 << 30) {
            return None;
        }
        let head = simulated("serving-worker-killed", 2, BIG_BYTES);
        let tail = newest_alone();
        let tmp = path.with_extension("tmp");
        std::fs::rename(&head, &tmp).expect("rename");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&tmp)
            .expect("open");
        std::io::copy(&mut std::fs::File::open(tail).expect("tail"), &mut f).expect("append");
        drop(f);
        std::fs::rename(&tmp, &path).expect("rename");
        Some(path)
    }
}
