//! `faultkit launch | stop | status | follow` against the fake vLLM server as a real process
//! tree: real processes, real signals, real HTTP on 127.0.0.1, real `/dev/shm` files.
//! Every test checks that nothing it started is left running.

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::sync::Once;
use std::time::Duration;

use assert_cmd::Command;

/// Bound on every wait in these tests.
const WAIT_MS: u64 = 60_000;

fn ensure_fake_built() -> PathBuf {
    static BUILD: Once = Once::new();
    BUILD.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = StdCommand::new(cargo)
            .args(["build", "--quiet", "--package", "fake-vllm", "--bins"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building fake-vllm");
    });
    runner::process::fake_vllm().expect("fake-vllm beside the test binary")
}

/// A host with the fake server behind `vllm`/`python3`/`nvidia-smi` shims.
struct Host {
    fake: fake_vllm::FakeHost,
    _dir: tempfile::TempDir,
    shm_prefix: String,
}

impl Host {
    fn new(gpus: &str) -> Host {
        let fake = ensure_fake_built();
        let dir = tempfile::tempdir().unwrap();
        let (count, gpu) = gpus.split_once('x').unwrap();
        let fh =
            fake_vllm::FakeHost::create(dir.path(), &fake, gpu, count.parse().unwrap()).unwrap();
        fh.add_all_models().unwrap();
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let shm_prefix = format!("psm_t{:05x}{n:02x}_", std::process::id() & 0xfffff);
        Host {
            fake: fh,
            _dir: dir,
            shm_prefix,
        }
    }

    fn path(&self) -> &Path {
        &self.fake.dir
    }

    fn state(&self) -> PathBuf {
        self.path().join("state")
    }

    fn envs(&self) -> Vec<(String, String)> {
        let mut e = self.fake.env(0.003);
        e.push(("FAULTKIT_SHM_PREFIX".into(), self.shm_prefix.clone()));
        e.push(("NO_COLOR".into(), "1".into()));
        e
    }

    fn faultkit(&self) -> Command {
        let mut c = Command::cargo_bin("faultkit").unwrap();
        c.envs(self.envs()).env_remove("FAULTKIT_SCENARIO");
        c.timeout(Duration::from_millis(WAIT_MS));
        c
    }

    fn faultkit_std(&self) -> StdCommand {
        let mut c = StdCommand::new(assert_cmd::cargo::cargo_bin("faultkit"));
        c.envs(self.envs()).env_remove("FAULTKIT_SCENARIO");
        c
    }

    fn current_record(&self) -> serde_json::Value {
        let id = std::fs::read_to_string(self.state().join("current")).unwrap();
        serde_json::from_str(
            &std::fs::read_to_string(self.state().join(format!("launches/{}.json", id.trim())))
                .unwrap(),
        )
        .unwrap()
    }

    /// `faultkit triage LOG` must exit `code` and print every one of `says`.
    fn triage_says(&self, log: &Path, code: i32, says: &[&str]) {
        let out = self.faultkit().arg("triage").arg(log).assert().code(code);
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        for s in says {
            assert!(
                stdout.contains(s),
                "triage of {} lacks {s:?}:\n{stdout}",
                log.display()
            );
        }
    }

    /// `faultkit launch ARGS`, which must report ready: the launch's id, server pid and log.
    fn launch_ready(&self, args: &[String]) -> Launched {
        self.faultkit()
            .arg("launch")
            .arg("--state-dir")
            .arg(self.state())
            .args(args)
            .assert()
            .code(0);
        let rec = self.current_record();
        Launched {
            id: rec["id"].as_str().unwrap().to_string(),
            pid: rec["pid"].as_u64().unwrap() as u32,
            log: PathBuf::from(rec["log"].as_str().unwrap()),
        }
    }

    fn shm_left(&self) -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&self.shm_prefix))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A launch `faultkit launch` reported ready.
struct Launched {
    id: String,
    /// The API server.
    pid: u32,
    log: PathBuf,
}

impl Drop for Host {
    fn drop(&mut self) {
        // Whatever a failed test left behind goes, through faultkit's own stop.
        let _ = self
            .faultkit_std()
            .args(["stop", "--term-wait", "2", "--state-dir"])
            .arg(self.state())
            .output();
    }
}

/// Pids of live processes that carry launch id `id` in their environment.
fn processes_of(id: &str) -> Vec<u32> {
    procfacts::all_processes()
        .into_iter()
        .filter(|p| p.alive() && procfacts::environ_has(p.pid, "FAULTKIT_LAUNCH_ID", id))
        .map(|p| p.pid)
        .collect()
}

/// `kill -9 PID` of a process the test started (through `faultkit launch`).
fn kill_9(pid: u32) {
    assert!(StdCommand::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

fn wait_until(mut cond: impl FnMut() -> bool, what: &str) {
    launch::wait::until(
        Duration::from_millis(WAIT_MS),
        Duration::from_millis(10),
        what,
        || cond().then_some(()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn serve_args(model: &str, port: u16, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--",
        "vllm",
        "serve",
        model,
        "--host",
        "127.0.0.1",
        "--port",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(port.to_string());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn health(port: u16) -> Option<u16> {
    launch::health::probe(&launch::health::HealthUrl::for_port(port))
}

#[test]
fn healthy_launch_serves_then_status_and_stop_leave_nothing() {
    let h = Host::new("1xh100");
    let port = free_port();
    let out = h
        .faultkit()
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args("meta-llama/Llama-3.1-8B-Instruct", port, &[]))
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&out).starts_with("ready: launch "));
    assert_eq!(health(port), Some(200));
    let rec = h.current_record();
    let id = rec["id"].as_str().unwrap().to_string();
    assert!(
        processes_of(&id).len() >= 2,
        "API server and engine core run"
    );
    let log = PathBuf::from(rec["log"].as_str().unwrap());
    assert_eq!(
        std::fs::canonicalize(h.state().join("logs/latest.log")).unwrap(),
        std::fs::canonicalize(&log).unwrap()
    );

    let status = h
        .faultkit()
        .args(["status", "--json", "--state-dir"])
        .arg(h.state())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let st: serde_json::Value = serde_json::from_slice(&status).unwrap();
    assert_eq!(st["state"], "ready");
    assert_eq!(st["healthy"], true);
    assert_eq!(st["verdict"]["status"], "ready");

    h.faultkit()
        .args(["stop", "--state-dir"])
        .arg(h.state())
        .assert()
        .code(0)
        .stdout(predicates::str::contains("0 left"));
    assert!(processes_of(&id).is_empty());
    assert_eq!(health(port), None);
    // The clean shutdown wrote uvicorn's shutdown lines.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("Application shutdown complete."), "{text}");
}

#[test]
fn crash_is_reported_with_its_root_cause_and_the_tree_is_stopped() {
    let h = Host::new("8xrtx-pro-6000-blackwell");
    let port = free_port();
    let out = h
        .faultkit()
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args(
            "nvidia/Kimi-K2.5-NVFP4",
            port,
            &["--tensor-parallel-size", "8", "--trust-remote-code"],
        ))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("crashed — fp8_kv_cache_unsupported_backend"),
        "{stdout}"
    );
    assert!(stdout.contains("--kv-cache-dtype bfloat16"));
    let id = h.current_record()["id"].as_str().unwrap().to_string();
    assert!(processes_of(&id).is_empty());
    assert!(h.shm_left().is_empty(), "{:?}", h.shm_left());
    // The fix works: the same launch with the advised flag comes up.
    h.faultkit()
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args(
            "nvidia/Kimi-K2.5-NVFP4",
            port,
            &[
                "--tensor-parallel-size",
                "8",
                "--trust-remote-code",
                "--kv-cache-dtype",
                "bfloat16",
            ],
        ))
        .assert()
        .code(0);
}

#[test]
fn orphans_of_a_kill9_hold_the_gpus_until_launch_cleans_them_up() {
    let h = Host::new("4xh100");
    let port = free_port();
    let args = serve_args(
        "meta-llama/Llama-3.1-70B-Instruct",
        port,
        &["--tensor-parallel-size", "4"],
    );
    let Launched { id, pid: api, .. } = h.launch_ready(&args);
    // The user's `kill -9` of the API server: engine core and workers stay, holding GPUs.
    kill_9(api);
    wait_until(
        || !processes_of(&id).contains(&api),
        "the API server to die",
    );
    let orphans = processes_of(&id);
    assert_eq!(
        orphans.len(),
        5,
        "engine core + 4 workers survive: {orphans:?}"
    );
    let smi = StdCommand::new(h.path().join("bin/nvidia-smi"))
        .envs(h.envs())
        .args([
            "--query-compute-apps=pid,used_memory",
            "--format=csv,noheader",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&smi.stdout).lines().count(), 4);

    // A plain relaunch fails the free-memory check, as vLLM would.
    let log = h.path().join("plain.log");
    let out = std::fs::File::create(&log).unwrap();
    let status = StdCommand::new(h.path().join("bin/vllm"))
        .args(&args[2..])
        .envs(h.envs())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    h.triage_says(&log, 1, &["gpu_memory_already_in_use"]);

    // faultkit launch stops the orphans first (they are its own), then starts.
    h.faultkit()
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(&args)
        .assert()
        .code(0)
        .stderr(predicates::str::contains("stopping previous launch"));
    assert!(processes_of(&id).is_empty(), "orphans are gone");
}

#[test]
fn held_port_is_reported_with_its_holder_and_nothing_starts() {
    let h = Host::new("1xh100");
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    h.faultkit()
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args("meta-llama/Llama-3.1-8B-Instruct", port, &[]))
        .assert()
        .code(75)
        .stderr(predicates::str::contains(format!(
            "port {port}: pid {}",
            std::process::id()
        )));
    assert!(!h.state().join("current").exists(), "nothing was started");
    drop(l);
}

#[test]
fn two_concurrent_launches_start_exactly_one_server() {
    let h = Host::new("8xh100");
    let port = free_port();
    // A slow start, so the first launch still holds the lock when the second arrives.
    let mut first = h
        .faultkit_std()
        .env("FAULTKIT_TIME_SCALE", "0.02")
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args(
            "meta-llama/Llama-3.1-70B-Instruct",
            port,
            &["--tensor-parallel-size", "8"],
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        || h.state().join("current").exists(),
        "the first launch's record",
    );
    let second = h
        .faultkit()
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args(
            "meta-llama/Llama-3.1-70B-Instruct",
            port,
            &["--tensor-parallel-size", "8"],
        ))
        .output()
        .unwrap();
    assert_eq!(
        second.status.code(),
        Some(75),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(String::from_utf8_lossy(&second.stderr).contains("another faultkit"));
    assert_eq!(first.wait().unwrap().code(), Some(0));
    let launches = std::fs::read_dir(h.state().join("launches"))
        .unwrap()
        .count();
    assert_eq!(launches, 1);
}

#[test]
fn ctrl_c_stops_what_launch_started() {
    let h = Host::new("4xh100");
    let port = free_port();
    let mut child = h
        .faultkit_std()
        .env("FAULTKIT_TIME_SCALE", "0.05")
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args(
            "meta-llama/Llama-3.1-70B-Instruct",
            port,
            &["--tensor-parallel-size", "4"],
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(|| h.state().join("current").exists(), "the launch record");
    let id = h.current_record()["id"].as_str().unwrap().to_string();
    wait_until(|| processes_of(&id).len() >= 3, "workers to start");
    assert!(StdCommand::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(processes_of(&id).is_empty());
    assert!(h.shm_left().is_empty());
}

#[test]
fn stop_removes_shm_the_launch_left_and_nothing_else() {
    let h = Host::new("4xh100");
    let port = free_port();
    struct Removed(PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let foreign = PathBuf::from(format!("/dev/shm/{}foreign", h.shm_prefix));
    std::fs::write(&foreign, b"not faultkit's").unwrap();
    let _guard = Removed(foreign.clone());
    h.faultkit()
        .arg("launch")
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args(
            "meta-llama/Llama-3.1-70B-Instruct",
            port,
            &["--tensor-parallel-size", "4"],
        ))
        .assert()
        .code(0);
    let id = h.current_record()["id"].as_str().unwrap().to_string();
    let ours: Vec<String> = h
        .shm_left()
        .into_iter()
        .filter(|n| !n.ends_with("foreign"))
        .collect();
    assert_eq!(ours.len(), 1, "the engine's message queue: {ours:?}");
    // Hard kill of every process: nobody cleans the segment up.
    for pid in processes_of(&id) {
        let _ = StdCommand::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    wait_until(|| processes_of(&id).is_empty(), "the tree to die");
    assert!(Path::new("/dev/shm").join(&ours[0]).exists());
    let out = h
        .faultkit()
        .args(["stop", "--json", "--state-dir"])
        .arg(h.state())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let j: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["report"]["shm_removed"], serde_json::json!([ours[0]]));
    assert!(!Path::new("/dev/shm").join(&ours[0]).exists());
    assert!(
        foreign.exists(),
        "a segment the launch did not create stays"
    );
}

#[test]
fn follow_answers_for_the_launch_a_pid_belongs_to() {
    let t = tempfile::tempdir().unwrap();
    let mut sim = Command::cargo_bin("faultkit").unwrap();
    sim.env(
        "FAULTKIT_SCENARIOS",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
    );
    sim.args(["simulate", "relaunch-stale-tail", "--out"])
        .arg(t.path())
        .assert()
        .success();
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("truth.json")).unwrap()).unwrap();
    let new_pid = truth["expected_pid"].as_u64().unwrap();
    let log = t.path().join("vllm.log");
    // The new server has written nothing: the answer after the timeout is "stale", exit 3.
    Command::cargo_bin("faultkit")
        .unwrap()
        .args(["follow", "--timeout", "1", "--pid", &new_pid.to_string()])
        .arg(&log)
        .assert()
        .code(3)
        .stdout(predicates::str::contains("stale"));
    // Without --pid the old crash is the newest launch: answered at once.
    Command::cargo_bin("faultkit")
        .unwrap()
        .args(["follow", "--timeout", "30"])
        .arg(&log)
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "fp8_kv_cache_unsupported_backend",
        ));
}

#[test]
fn ssh_target_runs_the_same_launch_with_every_argument_intact() {
    let h = Host::new("1xh100");
    // An `ssh` that runs the remote command with `sh -c`, as a remote login shell would.
    let shim = h.path().join("bin/ssh");
    std::fs::write(
        &shim,
        "#!/bin/sh\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift\nshift\nexec sh -c \"$*\"\n",
    )
    .unwrap();
    let mut perm = std::fs::metadata(&shim).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&shim, perm).unwrap();
    let port = free_port();
    let name = "it's a \"model\";\n $(touch pwned) `x` * \\";
    h.faultkit()
        .args(["launch", "--target", "ssh:gpu1", "--remote-faultkit"])
        .arg(assert_cmd::cargo::cargo_bin("faultkit"))
        .arg("--state-dir")
        .arg(h.state())
        .args(serve_args(
            "meta-llama/Llama-3.1-8B-Instruct",
            port,
            &["--served-model-name", name],
        ))
        .current_dir(h.path())
        .assert()
        .code(0)
        .stderr(predicates::str::contains("running on ssh:gpu1"));
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    std::io::Write::write_all(&mut s, b"GET /v1/models HTTP/1.1\r\n\r\n").unwrap();
    let mut body = String::new();
    std::io::Read::read_to_string(&mut s, &mut body).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["data"][0]["id"], name);
    assert!(!h.path().join("pwned").exists());
}

#[test]
fn bad_arguments_and_missing_programs_have_their_exit_codes() {
    let h = Host::new("1xh100");
    h.faultkit().arg("launch").assert().code(64);
    h.faultkit()
        .args(["launch", "--target", "ftp:x", "--", "vllm", "serve", "m"])
        .assert()
        .code(64);
    h.faultkit()
        .args(["launch", "--state-dir"])
        .arg(h.state())
        .args(["--", "no-such-program-faultkit-test"])
        .assert()
        .code(66)
        .stderr(predicates::str::contains("not found"));
    h.faultkit()
        .args(["launch", "--health-url", "https://x/health", "--state-dir"])
        .arg(h.state())
        .args(["--", "vllm", "serve", "m"])
        .assert()
        .code(64);
    h.faultkit()
        .args(["status", "--state-dir"])
        .arg(h.path().join("empty-state"))
        .assert()
        .code(3)
        .stdout(predicates::str::contains("no launch recorded"));
    h.faultkit()
        .args(["stop", "--state-dir"])
        .arg(h.path().join("empty-state"))
        .assert()
        .code(0);
    h.faultkit()
        .args(["follow", "/nonexistent/faultkit.log"])
        .assert()
        .code(66);
    // fake-host prepares a host and prints how to use it.
    let fh = h.path().join("other-host");
    h.faultkit()
        .args(["fake-host", "--gpus", "2xa100"])
        .arg(&fh)
        .assert()
        .code(0)
        .stdout(predicates::str::contains("export PATH="))
        .stdout(predicates::str::contains("export FAULTKIT_GPU_STATE="));
    assert!(
        fh.join("bin/vllm").exists()
            && fh
                .join("models/meta-llama/Llama-3.1-8B-Instruct/config.json")
                .exists()
    );
    h.faultkit()
        .args(["fake-host", "--gpus", "0xh100"])
        .arg(&fh)
        .assert()
        .code(64);
    // The fake's nvidia-smi answers the query forms launchers use.
    let out = StdCommand::new(h.path().join("bin/nvidia-smi"))
        .envs(h.envs())
        .args([
            "--query-gpu=index,memory.used,memory.total",
            "--format=csv,noheader,nounits",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0, 0, 81559\n");
}

#[test]
fn a_recorded_pid_now_held_by_an_unrelated_process_is_never_signalled() {
    let h = Host::new("1xh100");
    std::fs::create_dir_all(h.state().join("launches")).unwrap();
    // An unrelated process: not started by faultkit, no launch id in its environment.
    let mut other = StdCommand::new("sleep").arg("60").spawn().unwrap();
    let info = procfacts::ProcInfo::read(other.id()).unwrap();
    // Records that name its pid: once with its own start time (pid reused by a process that
    // happens to match), once with another.
    for (id, start) in [
        ("aaaa0001", info.start_time),
        ("aaaa0002", info.start_time + 1),
    ] {
        let rec = serde_json::json!({
            "schema": "faultkit.launch-record/1", "id": id, "argv": ["vllm", "serve", "m"],
            "pid": other.id(), "start_time": start, "started_at": 1, "log": "/nonexistent.log",
            "port": 8000, "health_url": "http://127.0.0.1:8000/health", "shm_before": [],
            "shm_seen": [], "state": "ready", "env": []
        });
        std::fs::write(
            h.state().join(format!("launches/{id}.json")),
            serde_json::to_string(&rec).unwrap(),
        )
        .unwrap();
    }
    std::fs::write(h.state().join("current"), "aaaa0001\n").unwrap();
    h.faultkit()
        .args(["stop", "--term-wait", "1", "--state-dir"])
        .arg(h.state())
        .assert()
        .code(0)
        .stdout(predicates::str::contains("0 terminated, 0 killed"));
    assert!(
        other.try_wait().unwrap().is_none(),
        "the unrelated process was signalled"
    );
    other.kill().unwrap();
    other.wait().unwrap();
}

/// The live process of launch `id` that vLLM titles `name` (`Worker_TP1`, `EngineCore_DP0`).
fn process_titled(id: &str, name: &str) -> Option<u32> {
    processes_of(id)
        .into_iter()
        .find(|&p| launch::tree::has_title(&procfacts::cmdline(p), name))
}

#[test]
fn a_stopped_multi_rank_launch_logs_no_death() {
    // `faultkit stop` signals the whole group: workers that finish first are no deaths.
    for _ in 0..4 {
        let h = Host::new("2xh100");
        let port = free_port();
        let Launched { id, log, .. } = h.launch_ready(&serve_args(
            "meta-llama/Llama-3.1-8B-Instruct",
            port,
            &["--tensor-parallel-size", "2"],
        ));
        h.faultkit()
            .args(["stop", "--state-dir"])
            .arg(h.state())
            .assert()
            .code(0);
        assert!(processes_of(&id).is_empty());
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains("died unexpectedly"), "{text}");
        h.triage_says(&log, 0, &["stopped"]);
    }
}

#[test]
fn a_worker_killed_while_serving_brings_the_server_down_as_vllm_does() {
    let h = Host::new("2xh100");
    let port = free_port();
    let args = serve_args(
        "meta-llama/Llama-3.1-8B-Instruct",
        port,
        &["--tensor-parallel-size", "2"],
    );
    let Launched { id, pid: api, log } = h.launch_ready(&args);
    assert_eq!(health(port), Some(200));
    // A watcher of the ready server, which must answer once the server fails.
    let watcher = h
        .faultkit_std()
        .args(["follow", "--until-failure", "--timeout", "60", "--pid"])
        .arg(api.to_string())
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody scripted this: the test kills a worker it started (through faultkit launch).
    let worker = process_titled(&id, "Worker_TP1").expect("worker rank 1 runs");
    kill_9(worker);
    // The executor's monitor, the API server's engine monitor and its watchdog: the server
    // stops answering, then the whole tree is gone.
    wait_until(
        || health(port) != Some(200),
        "/health to stop answering 200",
    );
    wait_until(|| processes_of(&id).is_empty(), "every process to exit");
    let text = std::fs::read_to_string(&log).unwrap();
    for line in [
        "Worker proc VllmWorker-1 died unexpectedly, shutting down executor.",
        "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
        "AsyncLLM output_handler failed.",
        "Application shutdown complete.",
    ] {
        assert!(text.contains(line), "{line:?} missing from\n{text}");
    }
    h.triage_says(
        &log,
        1,
        &["worker_killed_by_signal", "VllmWorker-1 died unexpectedly"],
    );
    let answer = watcher.wait_with_output().unwrap();
    assert_eq!(
        answer.status.code(),
        Some(1),
        "follow --until-failure answers 'crashed'"
    );
    assert!(String::from_utf8_lossy(&answer.stdout).contains("worker_killed_by_signal"));
}

#[test]
fn an_engine_core_killed_while_serving_fails_health_and_ends_the_server() {
    let h = Host::new("1xh100");
    let port = free_port();
    let Launched { id, log, .. } =
        h.launch_ready(&serve_args("meta-llama/Llama-3.1-8B-Instruct", port, &[]));
    let engine = process_titled(&id, "EngineCore_DP0").expect("the engine core runs");
    kill_9(engine);
    wait_until(|| processes_of(&id).is_empty(), "the API server to exit");
    assert_eq!(health(port), None);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."),
        "{text}"
    );
    h.triage_says(&log, 1, &["worker_killed_by_signal"]);
}

#[test]
fn preparing_a_fake_host_in_use_keeps_its_gpu_state_or_refuses() {
    let h = Host::new("1xh100");
    let port = free_port();
    let Launched { id, pid: api, .. } =
        h.launch_ready(&serve_args("meta-llama/Llama-3.1-8B-Instruct", port, &[]));
    let held = || {
        let smi = StdCommand::new(h.path().join("bin/nvidia-smi"))
            .envs(h.envs())
            .args([
                "--query-compute-apps=pid,used_memory",
                "--format=csv,noheader",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&smi.stdout).lines().count()
    };
    let before = held();
    assert!(before >= 1, "the server holds its GPU");
    // The same GPUs again: the state stays, the server still holds its memory.
    h.faultkit()
        .args(["fake-host", "--gpus", "1xh100"])
        .arg(h.path())
        .assert()
        .code(0);
    assert_eq!(held(), before);
    // Other GPUs while servers hold these: refused, naming a holder.
    h.faultkit()
        .args(["fake-host", "--gpus", "2xa100"])
        .arg(h.path())
        .assert()
        .code(75)
        .stderr(predicates::str::contains("is in use"))
        .stderr(predicates::str::contains("held by pid"));
    assert_eq!(health(port), Some(200));
    assert!(processes_of(&id).contains(&api));
}
