//! The `scenario` command, shared by `faultkit scenario` and `cargo xtask scenario`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use generator::scenario::Runner;

use super::adapter::{Baseline, Tut};
use super::{report, run_all, swarm, Case, CaseResult, RunConfig};
use crate::catalog::{FindError, ScenarioDir};
use triage::ExitCode;

/// Run scenarios: simulate each, triage it, compare with the truth and the scenario's [expect].
///
/// With no names, lists nothing and asks for --all. Names are scenario names (`fp8-kv-sm120`),
/// `group/name`, or globs (`crash/*`). Every failure prints the exact command that reproduces it.
#[derive(clap::Args, Debug, Clone)]
pub struct ScenarioArgs {
    /// Scenario names, `group/name`, or globs.
    names: Vec<String>,
    /// Run every scenario.
    #[arg(long)]
    all: bool,
    /// Only scenarios with this tag (repeatable).
    #[arg(long)]
    tag: Vec<String>,
    /// Runner: text (simulated log), process (real process tree), container.
    #[arg(long, default_value = "text", value_parser = ["text", "process", "container"])]
    runner: String,
    /// The seed of the first run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Run each scenario with this many seeds (seed, seed+1, …).
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Write results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write JUnit XML to this file (one test case per scenario and runner).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Score another triage command instead of faultkit's, e.g. `'my-triage {log}'`.
    ///
    /// The command runs through `sh -c` with stdin closed and a time bound (--timeout), once per
    /// case, on the simulated log. Placeholders: `{log}` (the log's path, shell-quoted) and `{pid}`
    /// (the pid the case is about, empty when it is about the newest launch); the environment has
    /// FAULTKIT_LOG, and FAULTKIT_PID when there is such a pid.
    ///
    /// It answers on stdout, either with faultkit.verdict/1 JSON, any subset of
    /// {"status": …, "root_cause": {"line": N, "id": …, "process": …}}, or with key=value lines a
    /// shell script can print:
    ///
    ///   status=crashed   (ready, stopped, crashed, hung, starting, unknown)
    ///   line=94          (1-based line of the root cause in the log)
    ///   id=fp8_kv_cache_unsupported_backend   (an id of taxonomy.toml)
    ///
    /// Status, line and id are each scored against the simulator's truth and shown in the table,
    /// JSON and JUnit; a case passes when every field the truth has is right (a healthy case needs
    /// status=ready). Output without such an answer fails.
    #[arg(long, conflicts_with = "baseline", verbatim_doc_comment)]
    triage_cmd: Option<String>,
    /// Score a built-in baseline, a pipeline people run by hand, instead of faultkit.
    ///
    ///   tail-20      the last 20 lines (what `sleep 30 && tail -20 LOG` shows)
    ///   seed-grep    grep -E "ERROR.*Worker_TP<N>" LOG | grep -v "Triton\|SparseMatrix\|gpt_oss" | tail -20
    ///                (N: the first failing rank, else 0)
    ///   last-error   the last line that reads as an error (an ERROR/CRITICAL record, an
    ///                exception line, `Killed`)
    ///   first-error  the first such line
    ///
    /// A baseline's answer is the last line it printed; its status is crashed when it printed an
    /// error line, else ready; it names no id. (`tail` and `grep-tail` are older names.)
    #[arg(long, value_name = "NAME", value_parser = baseline_name, verbatim_doc_comment)]
    baseline: Option<Baseline>,
    /// Also score faultkit and every baseline on the same cases: a scoreboard per scenario group
    /// (cases passed, then status, line and id each on its own).
    #[arg(long)]
    scoreboard: bool,
    /// Rewrite the snapshot reports beside the scenarios instead of comparing them.
    #[arg(long)]
    bless: bool,
    /// List matching scenarios and exit.
    #[arg(long)]
    list: bool,
    /// Swarm testing: draw random configurations from the seed instead of reading files.
    #[arg(long)]
    swarm: bool,
    /// Number of swarm cases.
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// Parallel jobs [default: number of CPUs].
    #[arg(long)]
    jobs: Option<usize>,
    /// Where logs and truths go [default: target/faultkit-scenarios].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seconds a command under test may run per case.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Scenario directory [default: $FAULTKIT_SCENARIOS, else ./scenarios, else the catalog
    /// built into faultkit].
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
}

impl ScenarioArgs {
    /// The runner asked for (`text`, `process`, `container`).
    pub fn runner(&self) -> &str {
        &self.runner
    }
}

fn baseline_name(s: &str) -> Result<Baseline, String> {
    Baseline::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Baseline::ALL.iter().map(|b| b.name()).collect();
        format!("no baseline `{s}` (known: {})", names.join(", "))
    })
}

fn runner_of(s: &str) -> Runner {
    Runner::parse(s).unwrap_or(Runner::Text)
}

/// Run the command; `reproduce_with` is how users invoke it (`cargo xtask scenario`).
pub fn run(a: ScenarioArgs, reproduce_with: &str, commit: Option<String>) -> ExitCode {
    let runner = runner_of(&a.runner);
    let cases = match ScenarioDir::discover(a.scenarios.as_deref())
        .and_then(|dir| select_cases(&a, &dir, runner))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("faultkit: {e}");
            return match e {
                FindError::Io { .. } => ExitCode::NoInput,
                _ => ExitCode::Usage,
            };
        }
    };
    if a.list {
        for c in &cases {
            println!(
                "{:<44} {:<8} {}",
                c.scenario.id(),
                c.scenario.vllm.to_string(),
                c.scenario.summary
            );
        }
        return ExitCode::Ok;
    }
    if cases.is_empty() {
        eprintln!("faultkit: no scenario selected (give names or globs, --all, --tag, or --swarm; --list shows them)");
        return ExitCode::Usage;
    }
    let tut = match (&a.triage_cmd, a.baseline) {
        (Some(c), _) => Tut::Command(c.clone()),
        (None, Some(b)) => Tut::Baseline(b),
        (None, None) => Tut::Builtin,
    };
    let out_dir = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/faultkit-scenarios"));
    let cfg = RunConfig {
        out_dir,
        tut: tut.clone(),
        commit,
        bless: a.bless,
        reproduce_with: reproduce_with.to_string(),
        command_timeout: Duration::from_secs(a.timeout),
    };
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let single = cases.len() == 1;
    if single {
        let c = &cases[0];
        eprintln!(
            "scenario {} (seed {}, runner {})",
            c.scenario.id(),
            c.seed,
            c.runner.as_str()
        );
        eprintln!("  {}", c.scenario.summary);
        eprintln!("  command: {}", c.scenario.command);
    }
    let results = run_with_progress(&cases, &cfg, jobs);
    let mut stdout = std::io::stdout().lock();
    if single {
        let r = &results[0];
        let _ = writeln!(stdout, "  log:     {}", r.log.display());
        let _ = writeln!(
            stdout,
            "  truth:   {}",
            r.log.with_file_name("truth.json").display()
        );
        if matches!(cfg.tut, Tut::Builtin) {
            if let Ok(v) = show_verdict(&r.log, &cfg, r) {
                let _ = writeln!(stdout, "{v}");
            }
        } else {
            let _ = writeln!(stdout, "  {}:  {}", tut.name(), report::answer_line(r));
        }
    } else {
        let _ = write!(stdout, "{}", report::summary_table(&results));
    }
    for r in results.iter().filter(|r| !r.passed) {
        let _ = write!(stdout, "{}", report::failure_text(r));
    }
    if single {
        let r = &results[0];
        let _ = writeln!(
            stdout,
            "{} {}",
            if r.passed { "PASS" } else { "FAIL" },
            r.scenario
        );
    }
    if a.scoreboard {
        let mut columns = vec![(tut.name(), results.clone())];
        let others =
            std::iter::once(Tut::Builtin).chain(Baseline::ALL.into_iter().map(Tut::Baseline));
        for other in others {
            if other != tut {
                let c2 = RunConfig {
                    tut: other.clone(),
                    bless: false,
                    ..cfg.clone()
                };
                columns.push((other.name(), run_with_progress(&cases, &c2, jobs)));
            }
        }
        let _ = writeln!(stdout);
        let _ = write!(stdout, "{}", report::scoreboard(&columns));
    }
    if let Some(p) = &a.json {
        if let Err(e) = std::fs::write(p, report::json(&results)) {
            eprintln!("faultkit: writing {}: {e}", p.display());
            return ExitCode::Internal;
        }
    }
    if let Some(p) = &a.junit {
        if let Err(e) = std::fs::write(p, report::junit(&results, "scenarios")) {
            eprintln!("faultkit: writing {}: {e}", p.display());
            return ExitCode::Internal;
        }
    }
    if results.iter().all(|r| r.passed) {
        ExitCode::Ok
    } else {
        ExitCode::KnownCrash
    }
}

fn show_verdict(log: &std::path::Path, cfg: &RunConfig, r: &CaseResult) -> Result<String, String> {
    if !matches!(cfg.tut, Tut::Builtin) {
        return Ok(String::new());
    }
    if r.runner == "process" || r.runner == "container" {
        // The process runner keeps the verdict it scored (the log kept growing after).
        let dir = log.parent().ok_or("no case dir")?;
        return std::fs::read_to_string(dir.join("verdict.txt"))
            .map(|v| format!("\n{v}"))
            .map_err(|e| e.to_string());
    }
    let bytes = std::fs::read(log).map_err(|e| e.to_string())?;
    let truth: vocab::truth::Truth = serde_json::from_str(
        &std::fs::read_to_string(log.with_file_name("truth.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let out = triage::triage(
        &bytes,
        &triage::Options {
            pid: truth.expected_pid,
            ..triage::Options::default()
        },
    );
    let _ = r;
    match out {
        triage::Output::One(v) => Ok(format!(
            "\n{}",
            triage::render::human(
                &v,
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            )
        )),
        _ => Ok(String::new()),
    }
}

fn run_with_progress(cases: &[Case], cfg: &RunConfig, jobs: usize) -> Vec<CaseResult> {
    let bar = if cases.len() > 1 && std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(cases.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let progress = |r: &CaseResult| {
        if let Some(b) = &bar {
            b.set_message(r.scenario.clone());
            b.inc(1);
        }
    };
    let results = run_all(cases, cfg, jobs, &progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    results
}

fn select_cases(
    a: &ScenarioArgs,
    dir: &ScenarioDir,
    runner: Runner,
) -> Result<Vec<Case>, FindError> {
    let mut cases = Vec::new();
    if a.swarm && runner != Runner::Text {
        return Err(FindError::Usage(
            "--swarm draws configurations for the text runner only".into(),
        ));
    }
    if a.swarm {
        for k in 0..a.count {
            cases.push(Case {
                scenario: swarm::draw(a.seed + k),
                seed: a.seed + k,
                runner,
                swarm: true,
            });
        }
        return Ok(cases);
    }
    let mut files: Vec<PathBuf> = Vec::new();
    if a.all || (!a.tag.is_empty() && a.names.is_empty()) {
        files = dir.files()?;
    }
    for n in &a.names {
        let matched = if n.contains('*') || n.contains('?') {
            dir.matching(n)?
        } else if n.ends_with(".toml") && std::path::Path::new(n).exists() {
            vec![PathBuf::from(n)]
        } else {
            let s = dir.find(n)?;
            vec![s.path.clone()]
        };
        if matched.is_empty() {
            return Err(FindError::NotFound {
                name: n.clone(),
                dir: dir.root.display().to_string(),
            });
        }
        for m in matched {
            if !files.contains(&m) {
                files.push(m);
            }
        }
    }
    for f in files {
        let s = generator::Scenario::load(&f)?;
        if !a.tag.is_empty() && !a.tag.iter().any(|t| s.tags.contains(t)) {
            continue;
        }
        // A scenario runs under the runners it declares; asking for another one skips it
        // unless it was named explicitly.
        if !s.runners.contains(&runner) && (a.all || !a.tag.is_empty()) {
            continue;
        }
        for k in 0..a.seeds.max(1) {
            cases.push(Case {
                scenario: s.clone(),
                seed: a.seed + k,
                runner,
                swarm: false,
            });
        }
    }
    Ok(cases)
}
