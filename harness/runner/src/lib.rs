//! The scenario runner: simulate → triage (or a command under test) → compare with truth and
//! with the scenario's `[expect]` → report. Called by `faultkit scenario` and `cargo xtask scenario`.
//!
//! Main types: [`Case`] (scenario × seed × runner), [`RunConfig`], [`CaseResult`]. Runner modes
//! are a closed set ([`Runner`]): `text` here; `process` and `container` plug into
//! [`run_case`] through the same interface.

pub mod adapter;
pub mod catalog;
pub mod cli;
pub mod compare;
#[cfg(feature = "container")]
pub mod container;
pub mod corpus;
pub mod process;
pub mod realism;
pub mod report;
pub mod snapshot;
pub mod swarm;

use std::path::{Path, PathBuf};
use std::time::Duration;

use generator::scenario::Runner;
use generator::{Scenario, Seed, SimOptions};
use vocab::Truth;

use adapter::Tut;
use compare::{Fields, Mismatch, Observed};
use triage::{self, Options, Output};

/// One thing to run.
#[derive(Clone, Debug)]
pub struct Case {
    pub scenario: Scenario,
    pub seed: u64,
    pub runner: Runner,
    /// Swarm cases are generated, not read from a file.
    pub swarm: bool,
}

/// How to run cases.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Where logs and truths are written (`<out>/<group>/<name>-<seed>/`).
    pub out_dir: PathBuf,
    pub tut: Tut,
    /// The commit the reproduce line names.
    pub commit: Option<String>,
    /// Rewrite the snapshot reports instead of comparing them.
    pub bless: bool,
    /// The command that reproduces a case (`cargo xtask scenario`).
    pub reproduce_with: String,
    /// Timeout for a command under test.
    pub command_timeout: Duration,
}

/// The outcome of one case.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CaseResult {
    pub scenario: String,
    pub runner: &'static str,
    pub seed: u64,
    pub passed: bool,
    pub mismatches: Vec<Mismatch>,
    pub observed: Observed,
    /// Status, line and id, each scored on its own.
    pub fields: Fields,
    /// What the tool printed, when it was no answer (the start of it).
    pub unanswered: Option<String>,
    pub truth_status: String,
    pub truth_root_cause: Option<String>,
    pub truth_line: Option<u64>,
    pub log: PathBuf,
    pub duration_ms: u64,
    pub reproduce: String,
    /// A failure to run at all (not a disagreement).
    pub error: Option<String>,
    /// Snapshot report diff, when the report changed.
    pub snapshot_diff: Option<String>,
}

impl CaseResult {
    pub fn group(&self) -> &str {
        self.scenario.split('/').next().unwrap_or("")
    }
}

/// The command that reproduces a case.
pub fn reproduce_line(cfg: &RunConfig, case: &Case) -> String {
    let mut s = if case.swarm {
        format!(
            "{} --swarm --count 1 --seed {}",
            cfg.reproduce_with, case.seed
        )
    } else {
        format!(
            "{} {} --runner {} --seed {}",
            cfg.reproduce_with,
            case.scenario.id(),
            case.runner.as_str(),
            case.seed
        )
    };
    if let Some(extra) = cfg.tut.cli_flag() {
        s.push(' ');
        s.push_str(&extra);
    }
    if let Some(c) = &cfg.commit {
        s.push_str(&format!("  (commit {c})"));
    }
    s
}

fn case_dir(cfg: &RunConfig, case: &Case) -> PathBuf {
    let id = case
        .scenario
        .id()
        .replace('/', std::path::MAIN_SEPARATOR_STR);
    cfg.out_dir
        .join(case.runner.as_str())
        .join(format!("{id}-{}", case.seed))
}

/// Run one case.
pub fn run_case(case: &Case, cfg: &RunConfig) -> CaseResult {
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let dir = case_dir(cfg, case);
    let mut result = CaseResult {
        scenario: case.scenario.id(),
        runner: case.runner.as_str(),
        seed: case.seed,
        passed: false,
        mismatches: Vec::new(),
        observed: Observed::default(),
        fields: Fields::default(),
        unanswered: None,
        truth_status: String::new(),
        truth_root_cause: None,
        truth_line: None,
        log: dir.join("vllm.log"),
        duration_ms: 0,
        reproduce: reproduce_line(cfg, case),
        error: None,
        snapshot_diff: None,
    };
    let mut extra: Vec<Mismatch> = Vec::new();
    let outcome = match case.runner {
        Runner::Text => run_text(case, cfg, &dir),
        Runner::Process if cfg.tut != Tut::Builtin => {
            Err("the process runner scores faultkit's own triage and launcher only".into())
        }
        Runner::Process => process::run(&case.scenario, case.seed, &dir).map(|r| {
            result.log = r.log;
            extra = r.extra;
            (r.truth, Some(r.observed), Some(r.report))
        }),
        #[cfg(feature = "container")]
        Runner::Container if cfg.tut != Tut::Builtin => {
            Err("the container runner scores faultkit's own triage and launcher only".into())
        }
        #[cfg(feature = "container")]
        Runner::Container => container::run(&case.scenario, case.seed, &dir).map(|r| {
            result.log = r.log;
            extra = r.extra;
            (r.truth, Some(r.observed), Some(r.report))
        }),
        #[allow(unreachable_patterns)]
        other => Err(format!(
            "the `{}` runner is not in this build of faultkit (use `cargo xtask scenario --runner {}`)",
            other.as_str(),
            other.as_str()
        )),
    };
    match outcome {
        Ok((truth, observed, verdict)) => {
            result.truth_status = truth.status.clone();
            result.truth_root_cause = truth.root_cause.as_ref().map(|r| r.id.clone());
            result.truth_line = truth.root_cause.as_ref().map(|r| r.line);
            // Swarm cases have no author's expectation: the truth is all there is.
            let mut mm = if case.swarm {
                Vec::new()
            } else {
                compare::against_expect(&truth, &case.scenario.expect)
            };
            let exact = case.runner == Runner::Text;
            result.fields = Fields::score(observed.as_ref(), &truth, exact);
            match &cfg.tut {
                Tut::Builtin => {
                    if let Some(o) = &observed {
                        mm.extend(compare::against_truth(o, &truth, exact));
                    }
                }
                Tut::Command(_) | Tut::Baseline(_) => {
                    mm.extend(compare::outside_against_truth(observed.as_ref(), &truth));
                    if observed.is_none() {
                        result.unanswered = Some(output_start(verdict.as_deref().unwrap_or("")));
                    }
                }
            }
            if let Some(o) = observed.clone() {
                result.observed = o;
            }
            // The snapshot: only for the built-in triage of file scenarios at seed 0.
            if matches!(cfg.tut, Tut::Builtin)
                && !case.swarm
                && case.seed == 0
                && case.runner == Runner::Text
            {
                if let Some(report) = verdict.as_deref() {
                    match snapshot::check(&case.scenario.path, report, cfg.bless) {
                        Ok(()) => {}
                        Err(diff) => result.snapshot_diff = Some(diff),
                    }
                }
            }
            mm.extend(extra);
            result.passed = mm.is_empty() && result.snapshot_diff.is_none();
            result.mismatches = mm;
        }
        Err(e) => result.error = Some(e),
    }
    result.duration_ms = started.elapsed().as_millis() as u64;
    result
}

/// Simulate the scenario and judge the log. Returns the truth, the observed verdict fields (when
/// the tool under test gave structured output) and the snapshot/plain-text output.
fn run_text(
    case: &Case,
    cfg: &RunConfig,
    dir: &Path,
) -> Result<(Truth, Option<Observed>, Option<String>), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let log = dir.join("vllm.log");
    let file =
        std::fs::File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let opts = SimOptions {
        seed: Seed(case.seed),
        size_bytes: None,
        vllm: None,
    };
    let truth = generator::simulate(&case.scenario, &opts, &mut w)
        .map_err(|e| format!("simulating: {e}"))?;
    std::io::Write::flush(&mut w).map_err(|e| format!("writing {}: {e}", log.display()))?;
    std::fs::write(dir.join("truth.json"), truth.to_json())
        .map_err(|e| format!("writing truth: {e}"))?;
    match &cfg.tut {
        Tut::Builtin => {
            let bytes =
                std::fs::read(&log).map_err(|e| format!("reading {}: {e}", log.display()))?;
            let out = triage::triage(
                &bytes,
                &Options {
                    pid: truth.expected_pid,
                    ..Options::default()
                },
            );
            let Output::One(v) = out else {
                return Err("triage returned several verdicts".into());
            };
            let observed = adapter::observed_from_verdict(&v);
            Ok((truth, Some(observed), Some(snapshot::render(&v))))
        }
        tut => {
            let (observed, text) = adapter::run_command(tut, &log, &truth, cfg.command_timeout)?;
            Ok((truth, observed, Some(text)))
        }
    }
}

/// The start of an output that held no answer, for the report (`(no output)` when empty).
fn output_start(out: &str) -> String {
    let t = out.trim();
    if t.is_empty() {
        return "(no output)".into();
    }
    let start: String = t.chars().take(120).collect();
    let start = triage::render::escape_control(&triage::clean_text(start.as_bytes()));
    if start.len() < t.len() {
        format!("{start}…")
    } else {
        start
    }
}

/// Run many cases on `jobs` threads, calling `progress` after each.
pub fn run_all(
    cases: &[Case],
    cfg: &RunConfig,
    jobs: usize,
    progress: &(dyn Fn(&CaseResult) + Sync),
) -> Vec<CaseResult> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::with_capacity(cases.len()));
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let r = run_case(case, cfg);
                progress(&r);
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, r));
            });
        }
    });
    let mut v = results.into_inner().unwrap_or_else(|e| e.into_inner());
    v.sort_by_key(|(i, _)| *i);
    v.into_iter().map(|(_, r)| r).collect()
}
