//! The launcher against a GPU host container (`faultkit/gpu-host:dev`, testcontainers):
//! `--target docker:NAME` runs the same launch, status, follow and stop there, with every
//! argument reaching the server exactly. Without a Docker engine these tests fail under
//! `CI=true` and are reported as skipped (with the reason) otherwise.

use std::process::Command as StdCommand;
use std::time::Duration;

use assert_cmd::Command;
use testcontainers::core::{CmdWaitFor, ExecCommand};
use testcontainers::runners::SyncRunner;
use testcontainers::{Container, GenericImage, ImageExt};

/// The image, built by `cargo xtask image` when missing. `Err` says why there is none.
fn image() -> Result<(), String> {
    let docker = StdCommand::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output();
    match docker {
        Ok(o) if o.status.success() => {}
        _ => return Err("no Docker engine answers `docker version`".into()),
    }
    let have = StdCommand::new("docker")
        .args(["image", "inspect", "faultkit/gpu-host:dev"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = StdCommand::new(cargo)
            .args(["run", "--quiet", "--package", "xtask", "--", "image"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err("`cargo xtask image` failed".into());
        }
    }
    Ok(())
}

/// Skips (outside CI) or fails (in CI) when there is no engine or image.
fn host_or_skip(test: &str) -> Option<Container<GenericImage>> {
    match image() {
        Ok(()) => {}
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{test}: {why} (required when CI=true)")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}");
            return None;
        }
    }
    let c = GenericImage::new("faultkit/gpu-host", "dev")
        .with_env_var("FAULTKIT_GPUS", "1xh100")
        .with_env_var("FAULTKIT_TIME_SCALE", "0.003")
        .with_env_var("NO_COLOR", "1")
        .with_startup_timeout(Duration::from_secs(60))
        .start()
        .expect("host container starts");
    Some(c)
}

fn exec_out(c: &Container<GenericImage>, argv: &[&str]) -> (i64, String) {
    let mut r = c
        .exec(ExecCommand::new(argv.iter().copied()).with_cmd_ready_condition(CmdWaitFor::exit()))
        .expect("exec");
    let out = String::from_utf8_lossy(&r.stdout_to_vec().unwrap()).into_owned();
    (r.exit_code().unwrap().unwrap_or(-1), out)
}

#[test]
fn docker_target_runs_launch_status_follow_and_stop_on_the_host() {
    let Some(c) = host_or_skip("docker_target_runs_launch_status_follow_and_stop_on_the_host")
    else {
        return;
    };
    let target = format!("docker:{}", c.id());
    let name = "it's a \"model\"; $(touch /pwned) `id` *\nsecond line";
    let out = Command::cargo_bin("faultkit")
        .unwrap()
        .args(["launch", "--json", "--target", &target, "--"])
        .args([
            "vllm",
            "serve",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--served-model-name",
            name,
        ])
        .timeout(Duration::from_secs(120))
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let r: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(r["outcome"], "ready");
    let log = r["log"].as_str().unwrap().to_string();

    // The name reached the server byte for byte.
    let (code, body) = exec_out(&c, &["wget", "-qO-", "http://127.0.0.1:8000/v1/models"]);
    assert_eq!(code, 0);
    let models: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(models["data"][0]["id"], name);
    assert_eq!(
        exec_out(&c, &["test", "-e", "/pwned"]).0,
        1,
        "no shell ran the name"
    );

    let st = Command::cargo_bin("faultkit")
        .unwrap()
        .args(["status", "--json", "--target", &target])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let st: serde_json::Value = serde_json::from_slice(&st).unwrap();
    assert_eq!(st["healthy"], true);
    Command::cargo_bin("faultkit")
        .unwrap()
        .args(["follow", "--timeout", "10", "--target", &target, &log])
        .assert()
        .code(0)
        .stdout(predicates::str::contains("status: ready"));
    Command::cargo_bin("faultkit")
        .unwrap()
        .args(["stop", "--target", &target])
        .assert()
        .code(0)
        .stdout(predicates::str::contains("0 left"));
    let (_, ps) = exec_out(&c, &["ps"]);
    assert!(!ps.contains("VLLM::") && !ps.contains("vllm serve"), "{ps}");
}
