//! Metamorphic properties of triage: wrapping a log in a collector's prefixes, quoting it, writing
//! its ANSI out as text, CRLF, noise of other processes, an excerpt around the root cause, lost
//! newlines, another echo, an older healthy launch before it — none of these changes what failed,
//! so the verdict's root-cause line must map back to the same original line, with the same id.
//! Inputs: every labelled real log of `scenarios/real/` and the simulator's output of every
//! scenario. The renderings are the generator's (`generator::render`, also `faultkit render`).
//! A failure prints the command that reproduces it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use generator::render::{render, Rendering};
use generator::{simulate_to_vec, Seed, SimOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use triage::{Options, Output, Verdict};

/// Cases per input and rendering (`FAULTKIT_RENDER_CASES` raises it for long local runs).
fn cases() -> u32 {
    std::env::var("FAULTKIT_RENDER_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
}

struct Input {
    /// How to name it in a reproduce command: a file path, or `scenario NAME`.
    name: String,
    /// The path `faultkit render` reads to reproduce (a real log, or the simulated log written
    /// by `faultkit simulate`).
    reproduce_from: String,
    bytes: Vec<u8>,
    pid: Option<u32>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn inputs() -> Vec<Input> {
    let mut out = Vec::new();
    let real = repo().join("scenarios/real");
    for dir in runner::corpus::labelled_dirs(&real).expect("scenarios/real") {
        let text = std::fs::read_to_string(dir.join("labels.toml")).expect("labels");
        let labels: runner::corpus::Labels = toml::from_str(&text).expect("labels parse");
        for l in labels.log {
            let path = dir.join(&l.file);
            let rel = path
                .strip_prefix(repo())
                .unwrap_or(&path)
                .display()
                .to_string();
            out.push(Input {
                name: rel.clone(),
                reproduce_from: rel,
                bytes: std::fs::read(&path).expect("log"),
                pid: None,
            });
        }
    }
    let scenarios = runner::catalog::ScenarioDir {
        root: repo().join("scenarios"),
    }
    .load_all()
    .expect("scenarios load");
    for s in scenarios {
        let (bytes, truth) = simulate_to_vec(&s, &SimOptions::default());
        out.push(Input {
            name: format!("scenario {}", s.id()),
            reproduce_from: format!("faultkit-out/{}-0/vllm.log", s.name),
            bytes,
            pid: truth.expected_pid,
        });
    }
    out
}

fn verdict(bytes: &[u8], pid: Option<u32>) -> Verdict {
    let Output::One(v) = triage::triage(
        bytes,
        &Options {
            pid,
            ..Options::default()
        },
    ) else {
        panic!("one verdict")
    };
    v
}

/// The property for one input, rendering and seed.
fn holds(input: &Input, before: &Verdict, r: Rendering, seed: u64) -> Result<(), String> {
    let focus = before.root_cause.as_ref().map(|rc| rc.line);
    let rendered = render(&input.bytes, r, focus, Seed(seed));
    let after = verdict(&rendered.bytes, input.pid);
    match (&before.root_cause, &after.root_cause) {
        (Some(b), Some(a)) => {
            let origins = rendered.original_lines(a.line);
            if !origins.contains(&b.line) {
                return Err(format!(
                    "root cause moved: line {} ({:?}) before, line {} (original lines {origins:?}: {:?}) after",
                    b.line, b.text, a.line, a.text
                ));
            }
            if a.id != b.id {
                return Err(format!("id changed: {} before, {} after", b.id, a.id));
            }
            Ok(())
        }
        (Some(b), None) => Err(format!(
            "root cause lost: line {} ({:?}) before, status {} after",
            b.line,
            b.text,
            after.status.as_str()
        )),
        (None, Some(a)) => Err(format!(
            "root cause appeared: status {} before, line {} ({:?}) after",
            before.status.as_str(),
            a.line,
            a.text
        )),
        (None, None) if before.status != after.status => Err(format!(
            "status changed: {} before, {} after",
            before.status.as_str(),
            after.status.as_str()
        )),
        (None, None) => Ok(()),
    }
}

/// Whether a rendering applies to an input: an echo needs a failure to echo; excerpts and lost
/// newlines need a root cause to keep (without one they are the identity, run anyway).
fn applies(r: Rendering, before: &Verdict) -> bool {
    r != Rendering::AppendEcho || before.root_cause.is_some()
}

#[test]
fn renderings_do_not_change_the_verdict() {
    let inputs = inputs();
    let mut ran: BTreeMap<Rendering, (usize, usize)> = BTreeMap::new(); // inputs, failures
    let mut failures = Vec::new();
    for input in &inputs {
        let before = verdict(&input.bytes, input.pid);
        for r in Rendering::ALL {
            if !applies(r, &before) {
                continue;
            }
            let entry = ran.entry(r).or_default();
            entry.0 += 1;
            // Deterministic: the same cases every run, so a failure reproduces and the ceilings
            // below compare like with like.
            let mut runner = TestRunner::new_with_rng(
                Config {
                    cases: cases(),
                    failure_persistence: None,
                    ..Config::default()
                },
                TestRng::deterministic_rng(RngAlgorithm::ChaCha),
            );
            let result = runner.run(&any::<u64>(), |seed| {
                holds(input, &before, r, seed).map_err(TestCaseError::fail)
            });
            if let Err(e) = result {
                entry.1 += 1;
                let (msg, seed) = match e {
                    proptest::test_runner::TestError::Fail(why, seed) => (why.to_string(), seed),
                    other => (other.to_string(), 0),
                };
                let mut prep = String::new();
                if let Some(name) = input.name.strip_prefix("scenario ") {
                    prep = format!("faultkit simulate {name} && ");
                }
                failures.push(format!(
                    "{} [{r}] seed {seed}: {msg}\n  reproduce: {prep}faultkit render {} {r} --seed {seed} | faultkit triage -",
                    input.name, input.reproduce_from
                ));
            }
        }
    }
    let ceilings = ceilings();
    println!("rendering                 inputs  failures  ceiling");
    let mut over = Vec::new();
    let mut below = Vec::new();
    for (r, (n, f)) in &ran {
        let c = ceilings.get(r.name()).copied().unwrap_or(0);
        println!("{:<25} {n:>6}  {f:>8}  {c:>7}", r.name());
        if *f > c {
            over.push(format!("{r}: {f} failures > ceiling {c}"));
        } else if *f < c {
            below.push(format!("{r}: {f} < {c}"));
        }
    }
    if !failures.is_empty() {
        println!("\n{}", failures.join("\n"));
    }
    assert!(
        over.is_empty(),
        "renderings that change the verdict more often than their ceiling in {CEILINGS}:\n{}\n\n{} of {} input × rendering pairs change the verdict:\n{}",
        over.join("\n"),
        failures.len(),
        ran.values().map(|v| v.0).sum::<usize>(),
        failures.join("\n")
    );
    assert!(
        below.is_empty(),
        "fewer failures than the ceiling in {CEILINGS}: lower it to the new count ({})",
        below.join(", ")
    );
}

/// The ratchet: per rendering, how many input × rendering pairs may still change the verdict
/// (0 for a rendering triage already handles everywhere). A change that fixes some lowers the
/// number in the same commit; none may rise.
const CEILINGS: &str = "scenarios/real/metamorphic-ceilings.toml";

fn ceilings() -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(repo().join(CEILINGS)).expect("ceilings file");
    let table: BTreeMap<String, usize> = toml::from_str(&text).expect("ceilings parse");
    for name in table.keys() {
        assert!(
            Rendering::parse(name).is_some(),
            "{CEILINGS}: unknown rendering `{name}`"
        );
    }
    table
}
