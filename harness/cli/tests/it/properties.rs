//! Properties of triage: it agrees with the simulator's truth on every scenario over many seeds,
//! and no input makes it panic.

use proptest::prelude::*;

use generator::{simulate_to_vec, Scenario, Seed, SimOptions};
use runner::adapter::observed_from_verdict;
use runner::compare::against_truth;
use triage::{self, Options, Output};

fn scenarios() -> Vec<Scenario> {
    runner::catalog::ScenarioDir {
        root: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios"),
    }
    .load_all()
    .expect("scenarios load")
}

/// Seeds per scenario (CI keeps this at 200; `FAULTKIT_SEEDS` raises it for long local runs).
fn seeds() -> u64 {
    std::env::var("FAULTKIT_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

#[test]
fn verdict_matches_truth_on_every_scenario_and_seed() {
    let mut failures = Vec::new();
    let all = scenarios();
    let n = seeds();
    for s in &all {
        for seed in 0..n {
            let (log, truth) = simulate_to_vec(
                s,
                &SimOptions {
                    seed: Seed(seed),
                    ..SimOptions::default()
                },
            );
            let out = triage::triage(
                &log,
                &Options {
                    pid: truth.expected_pid,
                    ..Options::default()
                },
            );
            let Output::One(v) = out else {
                panic!("one verdict")
            };
            let mm = against_truth(&observed_from_verdict(&v), &truth, true);
            if !mm.is_empty() {
                failures.push(format!(
                    "{} seed {seed}: {mm:?}\n  reproduce: cargo xtask scenario {} --seed {seed}",
                    s.id(),
                    s.id()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree with the truth:\n{}",
        failures.len(),
        all.len() as u64 * n,
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn fragments() -> Vec<&'static [u8]> {
    vec![
        b"(Worker_TP4 pid=208015) ERROR 01-28 14:09:44 [multiproc_executor.py:772] ",
        b"Traceback (most recent call last):\n",
        b"  File \"/x.py\", line 3, in f\n",
        b"ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(kv_cache_dtype=fp8_e4m3) Reasons: {TRITON_MLA: [kv_cache_dtype not supported]}",
        b"\r\n",
        b"\n",
        b"\0\0\0\0",
        b"\x1b[0;36m",
        b"\xff\xfe\xe2\x82",
        "█▄ version 0.15.1 ██".as_bytes(),
        b"(APIServer pid=1) INFO 01-28 14:02:07 [utils.py:261] non-default args: {}\n",
        b"[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout\n",
        b"usage: vllm serve\nvllm serve: error: argument x\n",
        b"Process EngineCore_DP0:\n",
        b"During handling of the above exception, another exception occurred:\n",
        b"h:1:1 [0] NCCL WARN Error while creating shared memory segment\n",
        b"Killed\n",
        b"(",
        b" pid=",
        b"[rank",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    /// Arbitrary bytes never panic, whatever the options.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096), pid in proptest::option::of(0u32..400_000), all in any::<bool>()) {
        let opts = Options { pid, launch: if all { triage::LaunchSel::All } else { triage::LaunchSel::Newest }, ..Options::default() };
        let out = triage::triage(&bytes, &opts);
        let _ = out.exit_code();
    }

    /// Log-shaped garbage (real fragments glued with random bytes) never panics either, and the
    /// human rendering of any verdict contains no raw escape character.
    #[test]
    fn log_shaped_garbage_never_panics(parts in proptest::collection::vec((0usize..20, proptest::collection::vec(any::<u8>(), 0..12)), 0..200)) {
        let frags = fragments();
        let mut bytes = Vec::new();
        for (i, junk) in parts {
            bytes.extend_from_slice(frags[i % frags.len()]);
            bytes.extend_from_slice(&junk);
        }
        if let Output::One(v) = triage::triage(&bytes, &Options::default()) {
            let human = triage::render::human(&v, false);
            prop_assert!(!human.contains('\x1b'));
            prop_assert!(!human.contains('\r'));
        }
    }
}
