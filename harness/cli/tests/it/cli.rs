//! The `faultkit` command line, run as a real process (assert_cmd + tempfile): every command,
//! bad arguments, bad input, and the documented exit codes.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn faultkit() -> Command {
    let mut c = Command::cargo_bin("faultkit").expect("faultkit builds");
    c.env(
        "FAULTKIT_SCENARIOS",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
    );
    c.env_remove("NO_COLOR");
    c
}

fn simulate(dir: &Path, name: &str, seed: u64) -> PathBuf {
    faultkit()
        .args(["simulate", name, "--seed", &seed.to_string(), "--out"])
        .arg(dir)
        .assert()
        .success();
    dir.join("vllm.log")
}

fn stdout_of(c: &mut Command) -> (i32, String, String) {
    let out = c.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn simulate_lists_and_writes_deterministic_files() {
    let (code, out, _) = stdout_of(faultkit().args(["simulate", "--list"]));
    assert_eq!(code, 0);
    assert!(out.lines().count() >= 25, "{out}");
    assert!(out.contains("crash/fp8-kv-sm120"));
    let t = tempfile::tempdir().unwrap();
    let a = simulate(&t.path().join("a"), "fp8-kv-sm120", 3);
    let b = simulate(&t.path().join("b"), "crash/fp8-kv-sm120", 3);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(
        std::fs::read(a.with_file_name("truth.json")).unwrap(),
        std::fs::read(b.with_file_name("truth.json")).unwrap()
    );
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.with_file_name("truth.json")).unwrap()).unwrap();
    assert_eq!(truth["schema"], "faultkit.truth/1");
    assert_eq!(
        truth["root_cause"]["id"],
        "fp8_kv_cache_unsupported_backend"
    );
}

#[test]
fn simulate_pads_to_a_size() {
    let t = tempfile::tempdir().unwrap();
    faultkit()
        .args([
            "simulate",
            "serving-worker-killed",
            "--size",
            "300KB",
            "--out",
        ])
        .arg(t.path())
        .assert()
        .success();
    let len = std::fs::metadata(t.path().join("vllm.log")).unwrap().len();
    assert!(len >= 300_000, "log is {len} bytes");
    // The padded log still triages to the truth.
    let (code, out, _) = stdout_of(
        faultkit()
            .arg("triage")
            .arg(t.path().join("vllm.log"))
            .arg("--json"),
    );
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("truth.json")).unwrap()).unwrap();
    assert_eq!(v["root_cause"]["id"], truth["root_cause"]["id"]);
    assert_eq!(v["root_cause"]["line"], truth["root_cause"]["line"]);
}

#[test]
fn simulate_rejects_bad_input_with_usage_code() {
    let (code, _, err) = stdout_of(faultkit().args(["simulate", "no-such-scenario"]));
    assert_eq!(code, 64);
    assert!(err.contains("no scenario named"), "{err}");
    let (code, _, err) =
        stdout_of(faultkit().args(["simulate", "fp8-kv-sm120", "--size", "12 parsecs"]));
    assert_eq!(code, 64, "{err}");
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("bad.toml");
    std::fs::write(&bad, "summary = \"x\"\nvllm = \"0.15.1\"\ncommand = \"vllm serve m\"\ngpus = { model = \"h100\", count = \"eight\" }\n[expect]\nstatus = \"ready\"\n").unwrap();
    let (code, _, err) = stdout_of(faultkit().arg("simulate").arg(&bad));
    assert_eq!(code, 64);
    assert!(
        err.contains("bad.toml:4:"),
        "error must point at file:line:col: {err}"
    );
    std::fs::write(&bad, "summary = \"x\"\nvllm = \"0.15.1\"\ncommand = \"vllm serve m\"\ngpus = { model = \"h100\", count = 1 }\n[expect]\nstatus = \"crashed\"\nroot_cause = \"gremlins\"\n").unwrap();
    let (code, _, err) = stdout_of(faultkit().arg("simulate").arg(&bad));
    assert_eq!(code, 64);
    assert!(
        err.contains("bad.toml:7:14") && err.contains("gremlins"),
        "{err}"
    );
}

#[test]
fn triage_names_the_root_cause_with_exit_1() {
    let t = tempfile::tempdir().unwrap();
    let log = simulate(t.path(), "fp8-kv-sm120", 0);
    let (code, out, _) = stdout_of(faultkit().arg("triage").arg(&log));
    assert_eq!(code, 1);
    assert!(out.contains("fp8_kv_cache_unsupported_backend"), "{out}");
    assert!(
        out.contains("--kv-cache-dtype bfloat16"),
        "the fix is printed: {out}"
    );
    assert!(
        !out.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    let (code, out, _) = stdout_of(faultkit().arg("triage").arg(&log).arg("--json"));
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "faultkit.verdict/1");
    assert_eq!(v["status"], "crashed");
    assert_eq!(v["root_cause"]["ranks"].as_array().unwrap().len(), 8);
    // Colour only when asked.
    let (_, out, _) = stdout_of(
        faultkit()
            .arg("triage")
            .arg(&log)
            .args(["--color", "always"]),
    );
    assert!(out.contains("\x1b[1;31m"));
    // stdin
    let bytes = std::fs::read(&log).unwrap();
    let (code, out, _) = stdout_of(
        faultkit()
            .args(["triage", "-", "--json"])
            .write_stdin(bytes),
    );
    assert_eq!(code, 1);
    assert!(out.contains("fp8_kv_cache_unsupported_backend"));
}

#[test]
fn triage_bad_input_gets_documented_exit_codes() {
    let t = tempfile::tempdir().unwrap();
    let p = |n: &str| t.path().join(n);
    std::fs::write(p("empty.log"), b"").unwrap();
    std::fs::write(p("nul.log"), vec![0u8; 10_000]).unwrap();
    let junk: Vec<u8> = (0..50_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(p("junk.bin"), junk).unwrap();
    for (file, code) in [("empty.log", 3), ("nul.log", 3), ("junk.bin", 3)] {
        let (c, out, err) = stdout_of(faultkit().arg("triage").arg(p(file)).arg("--json"));
        assert_eq!(c, code, "{file}: {out}{err}");
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{file}: {e}: {out}"));
        assert_eq!(v["status"], "unknown");
    }
    // A directory, a missing file: 66, nothing on stdout, a reason on stderr.
    for path in [t.path().to_path_buf(), p("missing.log")] {
        let (c, out, err) = stdout_of(faultkit().arg("triage").arg(&path).arg("--json"));
        assert_eq!(c, 66, "{}: {err}", path.display());
        assert!(out.is_empty());
        assert!(!err.is_empty());
    }
    // Usage errors: 64.
    let (c, _, _) = stdout_of(faultkit().args(["triage", "x.log", "--launch", "sideways"]));
    assert_eq!(c, 64);
    let (c, _, _) = stdout_of(faultkit().args(["triage", "x.log", "--launch", "0", "--pid", "3"]));
    assert_eq!(c, 64);
    let (c, _, _) = stdout_of(faultkit().args(["triage"]));
    assert_eq!(c, 64);
    std::fs::write(p("rules.toml"), "[[rule]]\nid = \"x\"\nregex = '('\n").unwrap();
    let (c, _, err) = stdout_of(
        faultkit()
            .args(["triage", "x.log", "--rules"])
            .arg(p("rules.toml")),
    );
    assert_eq!(c, 64, "{err}");
    let (c, _, _) = stdout_of(
        faultkit()
            .args(["triage", "x.log", "--rules"])
            .arg(p("nope.toml")),
    );
    assert_eq!(c, 66);
}

#[test]
fn triage_escapes_hostile_log_text_and_masks_secrets() {
    let t = tempfile::tempdir().unwrap();
    let log = t.path().join("evil.log");
    std::fs::write(
        &log,
        "(APIServer pid=7) INFO 01-28 14:02:07 [utils.py:261] non-default args: {'api_key': 'sk-secret-1'}\n\
         (APIServer pid=7) Traceback (most recent call last):\n\
         (APIServer pid=7)   File \"/x.py\", line 1, in f\n\
         (APIServer pid=7) OSError: [Errno 98] Address already in use \x1b]0;owned\x07\x1b[2J\x1b]8;;http://evil\x07link\x1b]8;;\x07 hf_abcdefghijklmnopqrstuvwxyz\n",
    )
    .unwrap();
    let (code, out, _) = stdout_of(faultkit().arg("triage").arg(&log));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("port_in_use"));
    assert!(
        !out.contains('\x1b') && !out.contains('\x07'),
        "raw control characters reached the terminal: {out:?}"
    );
    assert!(!out.contains("hf_abcdefghij"), "token not masked: {out}");
    let (_, json, _) = stdout_of(faultkit().arg("triage").arg(&log).arg("--json"));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(!v["root_cause"]["text"]
        .as_str()
        .unwrap()
        .contains("hf_abcdefghij"));
}

#[test]
fn triage_with_user_rules() {
    let t = tempfile::tempdir().unwrap();
    let log = t.path().join("a.log");
    std::fs::write(
        &log,
        "ERROR 01-28 14:02:07 [x.py:1] FrobnicatorError: the frobnicator jammed\n",
    )
    .unwrap();
    let (code, out, _) = stdout_of(faultkit().arg("triage").arg(&log).arg("--json"));
    assert_eq!(code, 2, "unknown cause: {out}");
    let rules = t.path().join("r.toml");
    std::fs::write(&rules, "[[rule]]\nid = \"frobnicator_jam\"\nliterals = [\"frobnicator\"]\nregex = 'frobnicator jammed'\nfix = \"Unjam it.\"\n").unwrap();
    let (code, out, _) = stdout_of(
        faultkit()
            .arg("triage")
            .arg(&log)
            .arg("--rules")
            .arg(&rules),
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("frobnicator_jam") && out.contains("Unjam it."));
}

#[test]
fn scenario_runs_one_and_writes_reports() {
    let t = tempfile::tempdir().unwrap();
    let junit = t.path().join("j.xml");
    let json = t.path().join("r.json");
    let (code, out, err) = stdout_of(
        faultkit()
            .args(["scenario", "fp8-kv-sm120", "port-in-use", "--junit"])
            .arg(&junit)
            .arg("--json")
            .arg(&json)
            .arg("--out")
            .arg(t.path().join("out")),
    );
    assert_eq!(code, 0, "{out}{err}");
    let x = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(x.matches("<testcase").count(), 2, "{x}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["results"].as_array().unwrap().len(), 2);
    assert!(r["results"][0]["seed"].is_u64());
    let (code, _, err) = stdout_of(faultkit().args(["scenario", "nope"]));
    assert_eq!(code, 64, "{err}");
}

/// Runs `faultkit scenario ARGS --json FILE` and returns the exit code, stdout and the results.
fn scenario_results(args: &[&str], dir: &Path) -> (i32, String, Vec<serde_json::Value>) {
    let json = dir.join(format!("results-{}.json", args.len()));
    let (code, out, err) = stdout_of(
        faultkit()
            .arg("scenario")
            .args(args)
            .arg("--json")
            .arg(&json)
            .arg("--out")
            .arg(dir.join("out")),
    );
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    (code, out, r["results"].as_array().unwrap().clone())
}

#[test]
fn outside_triage_is_scored_field_by_field_by_its_answer() {
    let t = tempfile::tempdir().unwrap();
    let exe = assert_cmd::cargo::cargo_bin("faultkit");
    // faultkit's own triage as an outside command (verdict JSON) passes.
    let own = format!("{} triage --json {{log}}", exe.display());
    let (code, out, _) = scenario_results(&["fp8-kv-sm120", "--triage-cmd", &own], t.path());
    assert_eq!(code, 0, "{out}");
    // key=value lines a shell script prints: the status alone is right, line and id are not.
    let (code, out, r) = scenario_results(
        &[
            "fp8-kv-sm120",
            "--triage-cmd",
            "echo status=crashed; echo line=1",
        ],
        t.path(),
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(r[0]["fields"]["status"], true, "{out}");
    assert_eq!(r[0]["fields"]["line"], false, "{out}");
    assert_eq!(r[0]["fields"]["id"], false, "{out}");
    assert!(out.contains("reproduce:"), "{out}");
    // Output that is no answer fails every field, however much of the log it quotes.
    for cmd in ["cat {log}", "true", "echo CRASHED: oom"] {
        let (code, out, r) = scenario_results(&["fp8-kv-sm120", "--triage-cmd", cmd], t.path());
        assert_eq!(code, 1, "{cmd}: {out}");
        assert_eq!(r[0]["fields"]["status"], false, "{cmd}: {out}");
        assert!(r[0]["unanswered"].is_string(), "{cmd}: {out}");
        assert!(out.contains("no answer"), "{cmd}: {out}");
    }
    // A healthy scenario needs status=ready: nothing else passes it.
    let (code, _, r) = scenario_results(
        &["healthy/*", "--triage-cmd", "echo CRASHED: oom"],
        t.path(),
    );
    assert_eq!(code, 1);
    assert!(r.iter().all(|c| c["passed"] == false));
    let (code, out, r) = scenario_results(
        &["healthy/*", "--triage-cmd", "echo status=ready"],
        t.path(),
    );
    assert_eq!(code, 0, "{out}");
    assert!(r.len() >= 5 && r.iter().all(|c| c["fields"]["line"].is_null()));
    // The pid a case is about reaches the command as {pid} and FAULTKIT_PID.
    let (_, out, r) = scenario_results(
        &[
            "relaunch-stale-tail",
            "--triage-cmd",
            "echo \"status=unknown\"; echo \"process=$FAULTKIT_PID-{pid}\"",
        ],
        t.path(),
    );
    let pid = r[0]["observed"]["process"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"));
    let (a, b) = pid.split_once('-').unwrap();
    assert!(!a.is_empty() && a == b, "{pid}");
}

#[test]
fn faultkit_through_the_protocol_scores_as_the_built_in_triage() {
    let t = tempfile::tempdir().unwrap();
    let exe = assert_cmd::cargo::cargo_bin("faultkit");
    let own = format!(
        "{} triage --json {{log}} ${{FAULTKIT_PID:+--pid \"$FAULTKIT_PID\"}}",
        exe.display()
    );
    let (_, _, builtin) = scenario_results(&["--all"], &t.path().join("builtin"));
    let (_, out, outside) =
        scenario_results(&["--all", "--triage-cmd", &own], &t.path().join("cmd"));
    assert_eq!(builtin.len(), outside.len());
    assert!(builtin.len() >= 60);
    for (b, o) in builtin.iter().zip(&outside) {
        assert_eq!(b["scenario"], o["scenario"]);
        assert_eq!(b["fields"], o["fields"], "{}: {out}", b["scenario"]);
    }
}

#[test]
fn baselines_answer_with_lines_and_no_id() {
    let t = tempfile::tempdir().unwrap();
    for baseline in ["tail-20", "seed-grep", "last-error", "first-error"] {
        let (code, out, r) =
            scenario_results(&["--all", "--baseline", baseline], &t.path().join(baseline));
        assert_eq!(code, 1, "{baseline} must fail some scenarios: {out}");
        // No pipeline names a cause; a stale tail is never recognised as stale.
        assert!(r.iter().all(|c| c["fields"]["id"] != true), "{baseline}");
        let stale = r
            .iter()
            .find(|c| c["scenario"] == "files/relaunch-stale-tail")
            .unwrap();
        assert_eq!(stale["passed"], false, "{baseline}");
        // Each answers on some crash with the true line (they are not strawmen) …
        let right_lines = r.iter().filter(|c| c["fields"]["line"] == true).count();
        assert!(
            right_lines > 0 || baseline == "seed-grep",
            "{baseline}: {out}"
        );
        // … and its table shows what it answered, field by field.
        assert!(out.contains("passed; status "), "{out}");
    }
    // The older names still select the same pipelines.
    let (_, out, _) = scenario_results(&["fp8-kv-sm120", "--baseline", "tail"], t.path());
    assert!(out.contains("--baseline tail-20"), "{out}");
    let (code, _, err) =
        stdout_of(faultkit().args(["scenario", "fp8-kv-sm120", "--baseline", "nope"]));
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("tail-20, seed-grep, last-error, first-error"),
        "{err}"
    );
}

#[test]
fn a_release_without_cpu_texts_is_refused_for_a_cpu_scenario_not_a_panic() {
    let t = tempfile::tempdir().unwrap();
    let (code, _, err) = stdout_of(
        faultkit()
            .args(["simulate", "cpu-missing-ops", "--vllm", "0.6.4", "--out"])
            .arg(t.path()),
    );
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("not simulated"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_installed_binary_finds_its_embedded_scenarios() {
    // Outside the source tree, with no scenario directory named: the catalog built into the
    // binary is written to the cache directory and used.
    let t = tempfile::tempdir().unwrap();
    let mut c = Command::cargo_bin("faultkit").unwrap();
    c.current_dir(t.path())
        .env_remove("FAULTKIT_SCENARIOS")
        .env("XDG_CACHE_HOME", t.path().join("cache"))
        .args(["simulate", "fp8-kv-sm120", "--out", "out"]);
    let (code, _, err) = stdout_of(&mut c);
    assert_eq!(code, 0, "{err}");
    let truth = std::fs::read_to_string(t.path().join("out/truth.json")).unwrap();
    assert!(
        truth.contains("fp8_kv_cache_unsupported_backend"),
        "{truth}"
    );
    let cached: Vec<_> = std::fs::read_dir(t.path().join("cache/faultkit"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        cached.len() == 1 && cached[0].starts_with("scenarios-"),
        "{cached:?}"
    );
    // `--scenarios` naming something that is not a directory is a usage error.
    let (code, _, err) = stdout_of(
        Command::cargo_bin("faultkit")
            .unwrap()
            .current_dir(t.path())
            .args(["simulate", "fp8-kv-sm120", "--scenarios", "nowhere"]),
    );
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("nowhere"), "{err}");
}
