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

/// A directory with `vllm`/`python3`/`nvidia-smi` shims, the model presets and a GPU state.
#[derive(Debug)]
pub struct FakeHost {
    pub dir: PathBuf,
    pub gpus: String,
}

impl FakeHost {
    pub fn new(dir: &Path, gpus: &str) -> FakeHost {
        let fake = fake_vllm();
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).expect("bin dir");
        for name in ["vllm", "python3", "nvidia-smi"] {
            let _ = std::fs::remove_file(bin.join(name));
            std::os::unix::fs::symlink(&fake, bin.join(name)).expect("shim");
        }
        for m in simulators::catalog::models() {
            simulators::fake::write_model_dir(m, &dir.join("models").join(&m.repo))
                .expect("model dir");
        }
        FakeHost {
            dir: dir.to_path_buf(),
            gpus: gpus.to_string(),
        }
    }

    /// The environment a server on this host gets.
    pub fn env(&self, time_scale: f64) -> Vec<(String, String)> {
        vec![
            (
                "PATH".into(),
                format!(
                    "{}:{}",
                    self.dir.join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
            (
                "FAULTKIT_MODELS".into(),
                self.dir.join("models").display().to_string(),
            ),
            (
                "FAULTKIT_GPU_STATE".into(),
                self.dir.join("gpus.json").display().to_string(),
            ),
            ("FAULTKIT_GPUS".into(), self.gpus.clone()),
            ("FAULTKIT_TIME_SCALE".into(), time_scale.to_string()),
            ("NO_COLOR".into(), "1".into()),
        ]
    }
}
