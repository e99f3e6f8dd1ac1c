//! `faultkit fake-host`: make this machine look like a GPU host running vLLM, for trying
//! launch scripts and triage by hand against the fake server.

use std::path::PathBuf;

use anyhow::Context as _;

use triage::ExitCode;

use super::fail;

/// Prepare a directory with `vllm`, `python3` and `nvidia-smi` shims for the fake vLLM server,
/// every model preset under its repo id, and a GPU state; print the environment to use it.
///
/// Preparing a directory again keeps its GPU state while servers started on it hold GPUs (the
/// same GPUs asked for), and refuses other GPUs then (exit 75, naming the holders).
///
/// Use: `eval "$(faultkit fake-host /tmp/fk --gpus 8xrtx-pro-6000-blackwell)"`, then
/// `vllm serve nvidia/Kimi-K2.5-NVFP4 --tensor-parallel-size 8 --trust-remote-code` runs the
/// headline failure as a real process tree, and `nvidia-smi` shows its GPU memory. Faults of a
/// scenario apply with FAULTKIT_SCENARIO=scenarios/<group>/<name>.toml.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory to prepare (created if missing).
    dir: PathBuf,
    /// GPUs: COUNTxMODEL (8xh100, 8xrtx-pro-6000-blackwell, 2xa100 …).
    #[arg(long, default_value = "8xh100")]
    gpus: String,
    /// Real seconds per simulated second (0.01: a 10-minute start in 6 s).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let (spec, count) = match fake_vllm::parse_gpus(&a.gpus) {
        Ok(x) => x,
        Err(e) => return fail(ExitCode::Usage, e),
    };
    if !(a.time_scale > 0.0 && a.time_scale <= 100.0) {
        return fail(ExitCode::Usage, "--time-scale must be in (0, 100]");
    }
    let fake = match runner::process::fake_vllm() {
        Ok(f) => f,
        Err(e) => return fail(ExitCode::NoInput, e),
    };
    let dir = std::path::absolute(&a.dir)?;
    let host = match fake_vllm::FakeHost::create(&dir, &fake, &spec.id, count) {
        Ok(h) => h,
        Err(e) => {
            if let Some(busy) = e
                .get_ref()
                .and_then(|r| r.downcast_ref::<fake_vllm::HostInUse>())
            {
                return fail(ExitCode::Busy, busy);
            }
            return Err(anyhow::Error::new(e).context(format!("preparing {}", dir.display())));
        }
    };
    host.add_all_models()
        .with_context(|| format!("writing the model presets under {}", dir.display()))?;
    for (k, v) in host.env(a.time_scale) {
        let v = shlex::try_quote(&v).map_err(|e| anyhow::anyhow!("{e}"))?;
        println!("export {k}={v}");
    }
    eprintln!(
        "faultkit: {} is a fake host with {count}x {}; models under {}/models",
        dir.display(),
        spec.name,
        dir.display()
    );
    Ok(ExitCode::Ok)
}
