//! Every line of every simulated log against the line grammar of its version profile.
//!
//! This grammar is the simulator's own, written independently of triage's parser (a harness test
//! runs triage over simulator output, so the two implementations check each other). A line is a
//! vLLM log line (optional process prefix, header, text), a stream line of a decorated process
//! (traceback, uvicorn, tqdm), or raw output of C/C++ and helper processes (torch c10, NCCL,
//! resource tracker, argparse, the shell's `Killed`). Multi-line records end every line but the
//! last with CR, and the next line repeats the prefix and header.

use std::sync::OnceLock;

use generator::profile::{HeaderStyle, PrefixColor, Profile};
use generator::{simulate_to_vec, Scenario, Seed, SimOptions};
use proptest::prelude::*;
use regex::Regex;

use crate::support::scenarios;

struct Grammar {
    prefix: Regex,
    any_prefix: Regex,
    header: Regex,
    raw: Regex,
    stream: Regex,
}

const NAME: &str = r"(APIServer|EngineCore_DP\d+|EngineCore_\d+|EngineCore|Worker(_PP\d+)?(_TP\d+)?(_EP\d+)?|VllmWorker rank=\d+|VllmWorker( (PP\d+_)?TP\d+)?|VllmWorkerProcess)";

/// Ray's prefix on a forwarded actor line (coloured unless `RAY_COLOR_PREFIX=0`).
const RAY_ACTOR: &str = r"((\x1b\[36m)?\(RayWorkerWrapper pid=\d+(, ip=[\d.]+)?\)(\x1b\[0m)? |(\x1b\[33m)?\(raylet\)(\x1b\[0m)? )";

fn grammar(p: &Profile, no_color: bool) -> Grammar {
    let plain = format!(r"\({NAME} pid=\d+\) ");
    let prefix = match p.prefix_color {
        PrefixColor::BoldCyanAlways => format!(r"\x1b\[1;36m\({NAME} pid=\d+\)\x1b\[0;0m "),
        PrefixColor::CyanUnlessNoColor if !no_color => {
            format!(r"\x1b\[0;36m\({NAME} pid=\d+\)\x1b\[0;0m ")
        }
        _ => plain,
    };
    // A Ray actor's output, forwarded by its driver (the engine core) with Ray's own prefix.
    let prefix = format!(r"{prefix}({RAY_ACTOR})?");
    let header = match p.header {
        HeaderStyle::Bracket => {
            r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[[A-Za-z0-9_./]+\.py:\d+\] "
        }
        HeaderStyle::Plain => {
            r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d [A-Za-z0-9_./]+\.py:\d+\] "
        }
    };
    static RAW: OnceLock<String> = OnceLock::new();
    let raw = RAW.get_or_init(|| {
        [
            r"\[rank\d+\]:\[[IWEF]\d{3,4} \d\d:\d\d:\d\d\.\d{9} [A-Za-z]+\.cpp:\d+\] .+",
            r"[a-z0-9]+-node-\d+:\d+:\d+ \[\d+\] NCCL (INFO|WARN) .+",
            r"/.+/multiprocessing/resource_tracker\.py:\d+: UserWarning: resource_tracker: .+",
            r"  warnings\.warn\('resource_tracker: There appear to be %d '",
            r"Killed",
            r"usage: .+",
            r"            \{.+\} \.\.\.",
            r"[a-z_. ]+: error: .+",
        ]
        .join("|")
    });
    // What a decorated (or never-decorated) process writes through sys.stdout/stderr.
    let stream = [
        r"Traceback \(most recent call last\):",
        r#"  File "[^"]+", line \d+, in \S+"#,
        r"    .*",
        r"\s*\^+",
        r"[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Interrupt)(: .*)?",
        r"Exception: .+",
        r"  Value error, .+",
        r"    For further information visit .+",
        r"Process [A-Za-z0-9_-]+:",
        r"(INFO|WARNING|ERROR):  +.+",
        r"\r(Loading safetensors checkpoint shards|Capturing CUDA graphs).*",
        r"",
        r"(The above exception was the direct cause of the following exception:|During handling of the above exception, another exception occurred:)",
        r"[A-Z][A-Za-z ,'`.()]+\.",
        // Continuation lines of multi-line exception messages (transformers' custom-code notice,
        // vLLM 0.8's invalid-repository checklist).
        r" You can inspect the repository content at .+",
        r"Please pass the argument `trust_remote_code=True` .+",
        r"Please verify the following requirements:",
        r"\d\. .+",
        r"   - For .+",
        // vLLM's world-size error (0.13+) and Ray placement-group timeout (0.12+) advice.
        r"- (ray|multiprocessing), set .+",
        r"If running on K8s .+\.",
        // Ray's own logger (`ray.init` in the driver).
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\t(INFO|WARNING|ERROR) [a-z_]+\.py:\d+ -- .+",
        // Ray's node-death notice (raylet, one long line).
        r"The node with node id: .+",
        // Tab-indented continuation lines of Ray's notices and of `ActorDiedError`.
        r"\t.+",
        // A library's own warning (transformers tags its messages from 5.0 on).
        r"(\[[a-z]+\] )?`\w+` is deprecated! .+",
    ]
    .join("|");
    Grammar {
        any_prefix: Regex::new(&prefix).unwrap(),
        prefix: Regex::new(&format!("^{prefix}")).unwrap(),
        header: Regex::new(&format!("^{header}")).unwrap(),
        raw: Regex::new(&format!("^({raw})$")).unwrap(),
        stream: Regex::new(&format!("^({stream})$")).unwrap(),
    }
}

/// Check one log; returns the first offending line.
fn check(s: &Scenario, log: &[u8]) -> Result<(), String> {
    let p = Profile::for_version(s.vllm);
    let g = grammar(p, s.no_color());
    let text = String::from_utf8_lossy(log);
    let lines: Vec<&str> = text.split('\n').collect();
    // Lines two writers share (a record split at the stdio buffer) are damage, not grammar;
    // so are the lines next to them.
    let interleaved: Vec<bool> = lines
        .iter()
        .map(|l| g.any_prefix.find_iter(l).count() > 1)
        .collect();
    let near_damage = |i: usize| {
        interleaved[i]
            || interleaved.get(i + 1).copied().unwrap_or(false)
            || (i > 0 && interleaved[i - 1])
    };
    // Each split leaves one orphan remainder line (the rest of the cut line), without prefix.
    let mut orphan_budget = interleaved.iter().filter(|&&x| x).count();
    for (i, raw_line) in lines.iter().enumerate() {
        if near_damage(i) {
            continue;
        }
        if i + 1 == lines.len() && raw_line.is_empty() {
            break;
        }
        // NUL holes (truncation, rotation) and a partial last line are damage, not grammar.
        let line = raw_line.trim_start_matches('\0');
        if line.contains('\0') || (i + 1 == lines.len()) {
            continue;
        }
        let fail = |why: &str| Err(format!("line {}: {why}: {:?}", i + 1, line));
        if line.contains("${") {
            return fail("unfilled placeholder");
        }
        let (body, prefixed) = match g.prefix.find(line) {
            Some(m) => (&line[m.end()..], true),
            None => (line, false),
        };
        let body_nocr = body.strip_suffix('\r').unwrap_or(body);
        if let Some(h) = g.header.find(body_nocr) {
            if body.ends_with('\r') {
                // The next line continues the record: same prefix and header.
                let head = &line[..line.len() - body.len() + h.end()];
                let next = lines.get(i + 1).copied().unwrap_or("");
                if !next.starts_with(head) {
                    return fail("a CR-terminated record line not followed by its next line");
                }
            }
            continue;
        }
        if body.ends_with('\r') && !body.starts_with('\r') {
            return fail("CR at the end of a line outside a multi-line record");
        }
        if !prefixed && g.raw.is_match(line) {
            continue;
        }
        if g.stream.is_match(body_nocr) {
            continue;
        }
        if body.starts_with('\r') {
            continue;
        }
        if !prefixed && orphan_budget > 0 {
            orphan_budget -= 1;
            continue;
        }
        return fail("matches no form of the grammar");
    }
    Ok(())
}

#[test]
fn every_line_of_every_scenario_is_grammatical() {
    for mut s in scenarios() {
        // The grammar is vLLM's own output; a scenario's renderings (a collector's prefix, an
        // excerpt) are checked by the render module's tests, on this same text.
        s.renderings.clear();
        for seed in 0..3 {
            let (log, _) = simulate_to_vec(
                &s,
                &SimOptions {
                    seed: Seed(seed),
                    ..SimOptions::default()
                },
            );
            if let Err(e) = check(&s, &log) {
                panic!("{} seed {seed}: {e}\nreproduce: cargo run -p faultkit -- simulate {} --seed {seed}", s.id(), s.id());
            }
        }
    }
}

fn pid_and_stamp(line: &str, g: &Grammar) -> Option<(u32, String)> {
    let m = g.prefix.find(line)?;
    let pre = &line[..m.end()];
    let pid: u32 = pre.split("pid=").nth(1)?.split(')').next()?.parse().ok()?;
    let body = &line[m.end()..];
    g.header.find(body)?;
    // `LEVEL MM-DD HH:MM:SS`: the timestamp after the level word.
    let rest = body.split_once(' ')?.1;
    Some((pid, rest.get(..14)?.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Interleaving keeps each process's own order: per pid, header timestamps never go back.
    #[test]
    fn interleaving_keeps_each_process_order(seed in any::<u64>(), tp in prop::sample::select(vec![1u32, 2, 4, 8]), v in prop::sample::select(vec!["0.8.5", "0.10.2", "0.15.1", "0.18.1"])) {
        let text = format!(
            "summary = \"p\"\nvllm = \"{v}\"\ncommand = \"vllm serve m --tensor-parallel-size {tp}\"\ngpus = {{ model = \"h100\", count = 8 }}\nmodel = \"llama-3.1-70b\"\nenv = {{ NO_COLOR = \"1\" }}\n[expect]\nstatus = \"ready\"\n"
        );
        let s = Scenario::from_toml(std::path::Path::new("p/p.toml"), &text).unwrap();
        let (log, _) = simulate_to_vec(&s, &SimOptions { seed: Seed(seed), ..SimOptions::default() });
        let g = grammar(Profile::for_version(s.vllm), true);
        let text = String::from_utf8_lossy(&log);
        let mut last: std::collections::BTreeMap<u32, String> = Default::default();
        for line in text.split('\n') {
            if let Some((pid, stamp)) = pid_and_stamp(line, &g) {
                if let Some(prev) = last.get(&pid) {
                    prop_assert!(*prev <= stamp, "pid {pid}: {stamp} after {prev} (seed {seed})");
                }
                last.insert(pid, stamp);
            }
        }
        prop_assert!(check(&s, &log).is_ok(), "{:?}", check(&s, &log));
    }
}
