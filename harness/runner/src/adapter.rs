//! Triage under test: faultkit's own, any command (`--triage-cmd 'my-triage {log}'`), or the
//! built-in baselines people use by hand (`tail -20`, `grep … | tail -20`).
//!
//! A command that prints `faultkit.verdict/1` JSON is scored field by field; any other output
//! passes when it contains the true root-cause line and no line of another launch.

use std::path::Path;
use std::time::Duration;

use vocab::truth::Truth;

use super::compare::{Mismatch, Observed};
use triage::Verdict;

/// What is being scored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tut {
    /// faultkit's triage, in process.
    Builtin,
    /// A shell command with `{log}` replaced by the shell-quoted log path.
    Command(String),
    /// `tail -20 {log}`.
    Tail,
    /// `grep -E "ERROR.*Worker_TPn" {log} | grep -v "Triton\|SparseMatrix\|gpt_oss" | tail -20`,
    /// n = the first worker that logged ERROR (the pattern also accepts the prefix-first order
    /// vLLM really writes).
    GrepTail,
}

impl Tut {
    /// The command-line flag that selects this tool (for reproduce lines).
    pub fn cli_flag(&self) -> Option<String> {
        match self {
            Tut::Builtin => None,
            Tut::Command(c) => Some(format!("--triage-cmd {}", shell_quote(c))),
            Tut::Tail => Some("--baseline tail".into()),
            Tut::GrepTail => Some("--baseline grep-tail".into()),
        }
    }

    pub fn name(&self) -> String {
        match self {
            Tut::Builtin => "faultkit".into(),
            Tut::Command(c) => c.clone(),
            Tut::Tail => "tail".into(),
            Tut::GrepTail => "grep-tail".into(),
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

fn observed_from_json(j: &serde_json::Value) -> Option<Observed> {
    if j.get("schema").and_then(|s| s.as_str()) != Some("faultkit.verdict/1") {
        return None;
    }
    let rc = j.get("root_cause").filter(|r| !r.is_null());
    Some(Observed {
        status: j.get("status").and_then(|s| s.as_str()).map(str::to_string),
        root_cause: rc
            .and_then(|r| r.get("id"))
            .and_then(|s| s.as_str())
            .map(str::to_string),
        line: rc.and_then(|r| r.get("line")).and_then(|s| s.as_u64()),
        process: rc
            .and_then(|r| r.get("process"))
            .and_then(|s| s.as_str())
            .map(str::to_string),
        stale: j
            .get("stale")
            .and_then(|s| s.get("suspected"))
            .and_then(|s| s.as_bool()),
        damage: j.get("damage").and_then(|d| d.as_array()).map(|a| {
            a.iter()
                .filter_map(|d| d.get("kind").and_then(|k| k.as_str()).map(str::to_string))
                .collect()
        }),
    })
}

/// The first worker that logged ERROR (`Worker_TP4`), as the grep-tail baseline picks it.
fn first_error_worker(log: &[u8]) -> Option<String> {
    for line in log.split(|&b| b == b'\n') {
        let l = String::from_utf8_lossy(line);
        if let Some(pos) = l.find("(Worker_TP") {
            let rest = &l[pos + 1..];
            let name: String = rest
                .chars()
                .take_while(|c| *c != ' ' && *c != ')')
                .collect();
            if l.contains(" ERROR ") {
                return Some(name);
            }
        }
    }
    None
}

/// Run a command under test. Returns structured fields (when it printed verdict JSON) and its
/// standard output.
pub fn run_command(
    tut: &Tut,
    log: &Path,
    pid: Option<u32>,
    timeout: Duration,
) -> Result<(Option<Observed>, String), String> {
    let quoted = shell_quote(&log.display().to_string());
    let script = match tut {
        Tut::Builtin => unreachable!("the built-in triage runs in process"),
        Tut::Command(c) => {
            let mut c = c.replace("{log}", &quoted);
            if let Some(p) = pid {
                c = c.replace("{pid}", &p.to_string());
            }
            c
        }
        Tut::Tail => format!("tail -20 {quoted}"),
        Tut::GrepTail => {
            let bytes =
                std::fs::read(log).map_err(|e| format!("reading {}: {e}", log.display()))?;
            let worker = first_error_worker(&bytes).unwrap_or_else(|| "Worker_TP".into());
            // The pipeline people use; the pattern also matches vLLM's real order, where the
            // prefix `(Worker_TP4 pid=…)` comes before the level.
            format!(
                "grep -aE 'ERROR.*{worker}[ )]|{worker} pid=[0-9]+\\)[^ ]* ERROR' {quoted} | grep -av 'Triton\\|SparseMatrix\\|gpt_oss' | tail -20"
            )
        }
    };
    let out = launch::bounded::run_shell(&script, timeout).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let observed = serde_json::from_str::<serde_json::Value>(text.trim())
        .ok()
        .and_then(|j| observed_from_json(&j));
    Ok((observed, text))
}

/// Plain-text scoring: the output must quote the true root-cause line and no line of another
/// launch. Only for commands without verdict JSON; `Ok` otherwise.
pub fn score_text(
    tut: &Tut,
    output: Option<&str>,
    truth: &Truth,
    log: &Path,
) -> Result<(), Mismatch> {
    if matches!(tut, Tut::Builtin) {
        return Ok(());
    }
    let Some(out) = output else { return Ok(()) };
    if serde_json::from_str::<serde_json::Value>(out.trim())
        .ok()
        .and_then(|j| observed_from_json(&j))
        .is_some()
    {
        return Ok(());
    }
    let out_clean = triage::grammar::strip_ansi(out).into_owned();
    if let Some(rc) = &truth.root_cause {
        if !out_clean
            .lines()
            .any(|l| l.trim_end() == rc.text.trim_end())
        {
            return Err(Mismatch {
                field: "output".into(),
                expected: format!("the root-cause line {}: {}", rc.line, shorten(&rc.text)),
                actual: "not in the output".into(),
                against: "truth",
            });
        }
    }
    // Lines of other launches must not be presented as current.
    let bytes = std::fs::read(log).unwrap_or_default();
    let current = truth.launch.and_then(|i| truth.launches.get(i));
    for (no, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let no = no as u64 + 1;
        let inside = current.is_some_and(|l| no >= l.first_line && no <= l.last_line);
        if inside {
            continue;
        }
        let text = triage::clean_text(line);
        if text.trim().len() < 24 {
            continue;
        }
        if out_clean.lines().any(|l| l.trim_end() == text.trim_end()) {
            return Err(Mismatch {
                field: "output".into(),
                expected: "only lines of the asked-for launch".into(),
                actual: format!("line {no} of another launch: {}", shorten(&text)),
                against: "truth",
            });
        }
    }
    Ok(())
}

fn shorten(s: &str) -> String {
    let t: String = s.chars().take(140).collect();
    if t.len() < s.len() {
        format!("{t}…")
    } else {
        t
    }
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
}
