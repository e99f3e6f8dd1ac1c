//! Same (scenario, seed) ⇒ byte-identical log and truth; another seed changes pids, timestamps
//! and interleaving. The truth's root-cause line is the line at `line` in the file.

use generator::{simulate_to_vec, Seed, SimOptions};

use crate::support::scenarios;

fn opts(seed: u64) -> SimOptions {
    SimOptions {
        seed: Seed(seed),
        ..SimOptions::default()
    }
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    for s in scenarios() {
        let (a, ta) = simulate_to_vec(&s, &opts(7));
        let (b, tb) = simulate_to_vec(&s, &opts(7));
        assert!(a == b, "{}: two runs with seed 7 differ", s.id());
        assert_eq!(ta, tb, "{}: truths differ", s.id());
        let (c, _) = simulate_to_vec(&s, &opts(8));
        // A log with pids or timestamps must change with the seed (an argparse error has none).
        let has_random_parts = String::from_utf8_lossy(&a).contains("pid=");
        assert!(
            !has_random_parts || a != c,
            "{}: seeds 7 and 8 give the same log",
            s.id()
        );
    }
}

/// Every profile's release simulates every scenario it models the same way twice.
#[test]
fn every_release_is_deterministic() {
    let all = scenarios();
    for v in generator::profile::Profile::releases() {
        for s in &all {
            let opts = SimOptions {
                seed: Seed(3),
                vllm: Some(v),
                ..SimOptions::default()
            };
            if s.at_version(v).unmodelled(v).is_some() {
                continue;
            }
            let (a, ta) = simulate_to_vec(s, &opts);
            let (b, tb) = simulate_to_vec(s, &opts);
            assert!(
                a == b,
                "{} at vLLM {v}: two runs with seed 3 differ",
                s.id()
            );
            assert_eq!(ta, tb, "{} at vLLM {v}: truths differ", s.id());
        }
    }
}

#[test]
fn another_seed_changes_pids_and_timestamps() {
    let s = scenarios()
        .into_iter()
        .find(|s| s.name == "fp8-kv-sm120")
        .expect("headline scenario");
    let (_, t1) = simulate_to_vec(&s, &opts(1));
    let (_, t2) = simulate_to_vec(&s, &opts(2));
    assert_ne!(t1.launches[0].pids, t2.launches[0].pids);
    let r1 = t1.root_cause.unwrap();
    let r2 = t2.root_cause.unwrap();
    // `ERROR 01-28 14:02:44` differs between seeds.
    assert_ne!(
        r1.text.split(" ERROR ").nth(1).map(|x| &x[..14]),
        r2.text.split(" ERROR ").nth(1).map(|x| &x[..14])
    );
}

#[test]
fn truth_line_is_the_root_cause_line() {
    for s in scenarios() {
        for seed in 0..5 {
            let (log, t) = simulate_to_vec(&s, &opts(seed));
            let Some(rc) = &t.root_cause else { continue };
            let line = log
                .split(|&b| b == b'\n')
                .nth(rc.line as usize - 1)
                .unwrap_or_else(|| panic!("{} seed {seed}: no line {}", s.id(), rc.line));
            assert_eq!(
                vocab::truth::clean_line(line),
                rc.text,
                "{} seed {seed}: truth line {} is not the root-cause text",
                s.id(),
                rc.line
            );
            assert!(
                rc.text.ends_with(&rc.message),
                "{} seed {seed}: message not in text",
                s.id()
            );
        }
    }
}
