//! Triage under test: faultkit's own, any command (`--triage-cmd 'my-triage {log}'`), or one of
//! the built-in baselines — the pipelines people run by hand.
//!
//! The outside-triage protocol (DESIGN.md, "Outside triage"): the command answers on stdout with
//! `faultkit.verdict/1` JSON (any subset of `status`, `root_cause.line`, `root_cause.id`,
//! `root_cause.process`) or with `key=value` lines (`status=crashed`, `line=94`, `id=…`,
//! `process=…`). [`parse_answer`] reads either; an output that is neither is no answer. A
//! baseline prints log lines (numbered with `grep -n`); its answer is the last line it printed
//! ([`answer_of_lines`]).

use std::path::Path;
use std::time::Duration;

use vocab::truth::Truth;

use super::compare::Observed;
use triage::Verdict;

/// What is being scored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tut {
    /// faultkit's triage, in process.
    Builtin,
    /// A shell command with `{log}` replaced by the shell-quoted log path and `{pid}` by the pid
    /// the case is about (empty when it is about the newest launch).
    Command(String),
    /// A built-in baseline.
    Baseline(Baseline),
}

/// The built-in baselines: what people read by hand, as shell pipelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Baseline {
    /// The last 20 lines, as read after `sleep 30 && tail -20 LOG`.
    Tail20,
    /// The incident's pipeline: `grep -E "ERROR.*Worker_TP<N>" LOG | grep -v
    /// "Triton\|SparseMatrix\|gpt_oss" | tail -20`, N the truth's first failing rank (else 0);
    /// the pattern also matches the order vLLM really writes, its prefix
    /// (`(Worker_TP4 pid=…)`) before the level.
    SeedGrep,
    /// The last line that reads as an error ([`ERROR_LINE`]).
    LastError,
    /// The first line that reads as an error ([`ERROR_LINE`]).
    FirstError,
}

/// What the error baselines (and a baseline's status) take for an error line, as a POSIX ERE: a
/// record at ERROR or CRITICAL, a Python exception line (after an optional process prefix), an
/// argparse error (`vllm serve: error: …`), or the shell's `Killed`.
pub const ERROR_LINE: &str = r"(^|[) ])(ERROR|CRITICAL) |^(\([^)]*\) )?[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Exit|Interrupt)(: |$)|^[a-z][a-z -]*: error: |^Killed$";

impl Baseline {
    pub const ALL: [Baseline; 4] = [
        Baseline::Tail20,
        Baseline::SeedGrep,
        Baseline::LastError,
        Baseline::FirstError,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Baseline::Tail20 => "tail-20",
            Baseline::SeedGrep => "seed-grep",
            Baseline::LastError => "last-error",
            Baseline::FirstError => "first-error",
        }
    }

    /// A name as `--baseline` takes it (`tail` and `grep-tail` are the names of earlier releases).
    pub fn parse(s: &str) -> Option<Baseline> {
        match s {
            "tail" => Some(Baseline::Tail20),
            "grep-tail" => Some(Baseline::SeedGrep),
            _ => Baseline::ALL.into_iter().find(|b| b.name() == s),
        }
    }

    /// The pipeline, with `grep -n` numbering what it prints (`N:text`).
    fn script(self, quoted_log: &str, truth: &Truth) -> String {
        let error = shell_quote(ERROR_LINE);
        match self {
            Baseline::Tail20 => format!("grep -na '' {quoted_log} | tail -20"),
            Baseline::SeedGrep => {
                let rank = first_failing_rank(truth);
                format!(
                    "grep -naE 'ERROR.*Worker_TP{rank}[ )]|Worker_TP{rank} pid=[0-9]+\\)[^ ]* ERROR' {quoted_log} | grep -av 'Triton\\|SparseMatrix\\|gpt_oss' | tail -20"
                )
            }
            Baseline::LastError => format!("grep -naE {error} {quoted_log} | tail -1"),
            Baseline::FirstError => format!("grep -naE {error} {quoted_log} | head -1"),
        }
    }
}

impl Tut {
    /// The command-line flag that selects this tool (for reproduce lines).
    pub fn cli_flag(&self) -> Option<String> {
        match self {
            Tut::Builtin => None,
            Tut::Command(c) => Some(format!("--triage-cmd {}", shell_quote(c))),
            Tut::Baseline(b) => Some(format!("--baseline {}", b.name())),
        }
    }

    pub fn name(&self) -> String {
        match self {
            Tut::Builtin => "faultkit".into(),
            Tut::Command(c) => c.clone(),
            Tut::Baseline(b) => b.name().into(),
        }
    }
}

/// POSIX shell quoting: `'…'` with embedded quotes as `'\''`.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The scored fields of a verdict.
pub fn observed_from_verdict(v: &Verdict) -> Observed {
    Observed {
        status: Some(v.status.as_str().to_string()),
        root_cause: v.root_cause.as_ref().map(|r| r.id.clone()),
        line: v.root_cause.as_ref().map(|r| r.line),
        process: v.root_cause.as_ref().and_then(|r| r.process.clone()),
        stale: Some(v.stale.suspected),
        damage: Some(v.damage.iter().map(|d| d.kind.clone()).collect()),
    }
}

/// An answer in the outside-triage protocol, or `None` when the output holds none: JSON (the
/// whole output, or its last line that is a JSON object) or `key=value` lines.
pub fn parse_answer(out: &str) -> Option<Observed> {
    let json = serde_json::from_str::<serde_json::Value>(out.trim())
        .ok()
        .filter(serde_json::Value::is_object)
        .or_else(|| {
            out.lines()
                .rev()
                .map(str::trim)
                .find(|l| l.starts_with('{'))
                .and_then(|l| serde_json::from_str(l).ok())
        });
    match json {
        Some(j) => answer_from_json(&j),
        None => answer_from_pairs(out),
    }
}

fn answer_from_json(j: &serde_json::Value) -> Option<Observed> {
    if j.get("schema")
        .is_some_and(|s| s.as_str() != Some("faultkit.verdict/1"))
    {
        return None;
    }
    let text = |v: Option<&serde_json::Value>| v.and_then(|s| s.as_str()).map(str::to_string);
    let rc = j.get("root_cause").filter(|r| r.is_object());
    let o = Observed {
        status: text(j.get("status")),
        root_cause: text(rc.and_then(|r| r.get("id"))),
        line: rc.and_then(|r| r.get("line")).and_then(|s| s.as_u64()),
        process: text(rc.and_then(|r| r.get("process"))),
        stale: j
            .get("stale")
            .and_then(|s| s.get("suspected"))
            .and_then(|s| s.as_bool()),
        damage: j.get("damage").and_then(|d| d.as_array()).map(|a| {
            a.iter()
                .filter_map(|d| d.get("kind").and_then(|k| k.as_str()).map(str::to_string))
                .collect()
        }),
    };
    answered(o)
}

/// `status=crashed`, `line=94`, `id=…`, `process=…` (also `root_cause.id`, `root_cause.line`,
/// `root_cause.process`), one per line, anywhere in the output; the last of a key counts.
fn answer_from_pairs(out: &str) -> Option<Observed> {
    let mut o = Observed::default();
    for l in out.lines() {
        let Some((k, v)) = l.trim().split_once('=') else {
            continue;
        };
        let v = v.trim().trim_matches('"');
        match k.trim().trim_start_matches("root_cause.") {
            "status" => o.status = Some(v.to_string()),
            "line" => o.line = v.parse().ok(),
            "id" => o.root_cause = Some(v.to_string()),
            "process" => o.process = Some(v.to_string()),
            _ => {}
        }
    }
    answered(o)
}

fn answered(o: Observed) -> Option<Observed> {
    (o.status.is_some() || o.root_cause.is_some() || o.line.is_some() || o.process.is_some())
        .then_some(o)
}

/// A baseline's answer: the last line it printed (`N:text`, numbered by `grep -n`); `crashed`
/// when any line it printed reads as an error, else `ready` (also when it printed nothing: a
/// person who reads no error takes the server for up). No id: the pipelines name none.
pub fn answer_of_lines(out: &str) -> Observed {
    let error = regex::Regex::new(ERROR_LINE).expect("ERROR_LINE is a valid expression");
    let numbered: Vec<(u64, &str)> = out
        .lines()
        .filter_map(|l| {
            let (n, text) = l.split_once(':')?;
            Some((n.parse().ok()?, text))
        })
        .collect();
    let crashed = numbered
        .iter()
        .any(|(_, t)| error.is_match(&triage::grammar::strip_ansi(t)));
    Observed {
        status: Some(if crashed { "crashed" } else { "ready" }.into()),
        line: numbered.last().map(|&(line, _)| line),
        ..Observed::default()
    }
}

/// The rank in `Worker_TP<N>` of the truth's root-cause process, else 0.
fn first_failing_rank(truth: &Truth) -> u32 {
    truth
        .root_cause
        .as_ref()
        .and_then(|r| r.process.as_deref())
        .and_then(|p| p.strip_prefix("Worker_TP"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Runs a command or baseline under test on `log`. Returns its answer (`None`: it gave none)
/// and its standard output.
pub fn run_command(
    tut: &Tut,
    log: &Path,
    truth: &Truth,
    timeout: Duration,
) -> Result<(Option<Observed>, String), String> {
    let quoted = shell_quote(&log.display().to_string());
    let pid = truth
        .expected_pid
        .map(|p| p.to_string())
        .unwrap_or_default();
    let script = match tut {
        Tut::Builtin => return Err("the built-in triage runs in process".into()),
        Tut::Command(c) => c.replace("{log}", &quoted).replace("{pid}", &pid),
        Tut::Baseline(b) => b.script(&quoted, truth),
    };
    let mut env = vec![("FAULTKIT_LOG", log.display().to_string())];
    if !pid.is_empty() {
        env.push(("FAULTKIT_PID", pid));
    }
    let out = launch::bounded::run_shell(&script, &env, timeout).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let answer = match tut {
        Tut::Baseline(_) => Some(answer_of_lines(&text)),
        _ => parse_answer(&text),
    };
    Ok((answer, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/tmp/a.log"), "/tmp/a.log");
        assert_eq!(shell_quote("/tmp/a b'c.log"), "'/tmp/a b'\\''c.log'");
        assert_eq!(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
    }

    #[test]
    fn answers_in_json_any_subset() {
        let o = parse_answer(r#"{"schema":"faultkit.verdict/1","status":"crashed","root_cause":{"id":"x","line":94}}"#).unwrap();
        assert_eq!(o.status.as_deref(), Some("crashed"));
        assert_eq!(o.root_cause.as_deref(), Some("x"));
        assert_eq!(o.line, Some(94));
        // Without the schema, and after other output.
        let o = parse_answer("checking…\n{\"status\":\"ready\"}\n").unwrap();
        assert_eq!(o.status.as_deref(), Some("ready"));
        assert_eq!(o.line, None);
        // Another schema, an object with none of the fields, or not JSON at all: no answer.
        assert_eq!(
            parse_answer(r#"{"schema":"other/1","status":"ready"}"#),
            None
        );
        assert_eq!(parse_answer(r#"{"ok":true}"#), None);
        assert_eq!(parse_answer("[1, 2]"), None);
    }

    #[test]
    fn answers_in_key_value_lines() {
        let o = parse_answer("status=crashed\nline=94\nid=fp8_kv\nprocess = Worker_TP4\n").unwrap();
        assert_eq!(o.status.as_deref(), Some("crashed"));
        assert_eq!(o.line, Some(94));
        assert_eq!(o.root_cause.as_deref(), Some("fp8_kv"));
        assert_eq!(o.process.as_deref(), Some("Worker_TP4"));
        let o = parse_answer("root_cause.line=7\nline=nine\n").unwrap_or_default();
        assert_eq!(
            o.line, None,
            "the last of a key counts, and it is not a number"
        );
        for none in [
            "",
            "CRASHED: oom",
            "all good",
            "(APIServer pid=1) INFO 12-01 ready",
        ] {
            assert_eq!(parse_answer(none), None, "{none:?}");
        }
    }

    #[test]
    fn a_baseline_answers_with_the_last_line_it_printed() {
        let o = answer_of_lines(
            "3:INFO starting\n9:(Worker_TP0 pid=7) ERROR 01-01 [x.py:1] boom\n12:shutting down\n",
        );
        assert_eq!(o.line, Some(12));
        assert_eq!(o.status.as_deref(), Some("crashed"));
        assert_eq!(o.root_cause, None);
        let o = answer_of_lines(
            "40:(APIServer pid=1) INFO 12-01 [api_server.py:1] Application startup complete.\n",
        );
        assert_eq!(o.status.as_deref(), Some("ready"));
        let o = answer_of_lines("");
        assert_eq!(
            (o.status.as_deref(), o.line),
            (Some("ready"), None),
            "nothing printed"
        );
        let e = regex::Regex::new(ERROR_LINE).unwrap();
        for yes in [
            "ValueError: no",
            "(EngineCore pid=3) RuntimeError: x",
            "torch.OutOfMemoryError: CUDA",
            "Killed",
            "KeyboardInterrupt",
            "SystemExit: 1",
            "x ERROR 01-01 boom",
            "vllm serve: error: argument -tp",
        ] {
            assert!(e.is_match(yes), "{yes}");
        }
        for no in [
            "INFO Errors: none",
            "  File \"x.py\", line 3, in f",
            "Traceback (most recent call last):",
        ] {
            assert!(!e.is_match(no), "{no}");
        }
    }
}
