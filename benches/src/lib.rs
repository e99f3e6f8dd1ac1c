//! Shared inputs for the criterion benches: seeded simulator output and a host for the fake
//! server (shims, model directories, GPU state).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the fake server in this profile if it is not beside the bench binary yet.
pub fn fake_vllm() -> PathBuf {
    if let Ok(p) = harness::runner::process::fake_vllm() {
        return p;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let release = std::env::current_exe()
        .ok()
        .is_some_and(|p| p.ancestors().any(|a| a.ends_with("release")));
    let mut c = Command::new(cargo);
    c.args(["build", "--quiet", "--package", "simulators", "--bins"]);
    if release {
        c.arg("--release");
    }
    let ok = c.status().is_ok_and(|s| s.success());
    assert!(ok, "building fake-vllm failed");
    harness::runner::process::fake_vllm().expect("fake-vllm was just built")
}

/// A fake GPU host with every model preset (see `simulators::fake::FakeHost`).
pub fn fake_host(dir: &Path, gpu: &str, count: u32) -> simulators::fake::FakeHost {
    let h = simulators::fake::FakeHost::create(dir, &fake_vllm(), gpu, count).expect("fake host");
    h.add_all_models().expect("model dirs");
    h
}
