//! Reporters for runner results: the human summary, JSON, JUnit XML, and the scoreboard that
//! puts faultkit beside the baselines.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::CaseResult;
use triage::render::escape_control;

/// A failing case as a person reads it: what disagreed, and how to reproduce it.
pub fn failure_text(r: &CaseResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "FAIL {} [{}] seed {}", r.scenario, r.runner, r.seed);
    if let Some(e) = &r.error {
        let _ = writeln!(s, "  error: {}", escape_control(e));
    }
    if let Some(out) = &r.unanswered {
        let _ = writeln!(s, "  output:  {out}");
    }
    if !r.mismatches.is_empty() {
        let _ = writeln!(
            s,
            "  ┌─ {:<12} {:<8} {:<44} actual",
            "field", "against", "expected"
        );
        for m in &r.mismatches {
            let _ = writeln!(
                s,
                "  │  {:<12} {:<8} {:<44} {}",
                m.field,
                m.against,
                escape_control(&m.expected),
                escape_control(&m.actual)
            );
        }
        let _ = writeln!(s, "  └─");
    }
    if let Some(d) = &r.snapshot_diff {
        for l in d.lines() {
            let _ = writeln!(s, "  {l}");
        }
    }
    let _ = writeln!(s, "  log: {}", r.log.display());
    let _ = writeln!(s, "  reproduce: {}", r.reproduce);
    s
}

/// A field's mark: right, wrong, or not scored.
fn mark(f: Option<bool>) -> &'static str {
    match f {
        Some(true) => "ok",
        Some(false) => "x",
        None => "-",
    }
}

/// What a tool answered, field by field with its score (`status=crashed (ok) line=94 (x)`), or
/// that it gave no answer.
pub fn answer_line(r: &CaseResult) -> String {
    if r.unanswered.is_some() {
        return "no answer".into();
    }
    let o = &r.observed;
    let mut parts = Vec::new();
    let mut field = |name: &str, value: Option<String>, score: Option<bool>| {
        let v = value.unwrap_or_else(|| "(none)".into());
        parts.push(format!("{name}={} ({})", escape_control(&v), mark(score)));
    };
    field("status", o.status.clone(), r.fields.status);
    field("line", o.line.map(|l| l.to_string()), r.fields.line);
    field("id", o.root_cause.clone(), r.fields.id);
    parts.join(" ")
}

/// One line per case plus totals: the result, each scored field (`ok`, `x`, `-` not scored) and
/// what the tool answered.
pub fn summary_table(results: &[CaseResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<46} {:<9} {:>6} {:<6} {:<6} {:<4} {:<3} {:<40} {:>7}",
        "scenario", "runner", "seed", "result", "status", "line", "id", "answer", "ms"
    );
    for r in results {
        let o = &r.observed;
        let answer = if r.unanswered.is_some() {
            "(no answer)".to_string()
        } else {
            let mut a = o.status.clone().unwrap_or_else(|| "?".into());
            if let Some(id) = &o.root_cause {
                a = format!("{a} {id}");
            }
            if let Some(l) = o.line {
                a = format!("{a} @{l}");
            }
            a
        };
        let _ = writeln!(
            s,
            "{:<46} {:<9} {:>6} {:<6} {:<6} {:<4} {:<3} {:<40} {:>7}",
            r.scenario,
            r.runner,
            r.seed,
            if r.passed { "PASS" } else { "FAIL" },
            mark(r.fields.status),
            mark(r.fields.line),
            mark(r.fields.id),
            truncate(&escape_control(&answer), 40),
            r.duration_ms
        );
    }
    let passed = results.iter().filter(|r| r.passed).count();
    let _ = writeln!(s, "{passed}/{} passed; {}", results.len(), rates(results));
    s
}

/// `status 60/67, line 40/58, id 31/58`: how often each field was right where it was scored.
fn rates(results: &[CaseResult]) -> String {
    let parts: Vec<String> = FIELDS
        .iter()
        .map(|(name, m)| {
            let (right, scored) = tally(results, *m);
            format!("{name} {right}/{scored}")
        })
        .collect();
    parts.join(", ")
}

/// How a case scores on one measure (`None`: not scored).
type Measure = fn(&CaseResult) -> Option<bool>;

/// The fields every tool is scored on, each on its own.
const FIELDS: [(&str, Measure); 3] = [
    ("status", |r| r.fields.status),
    ("line", |r| r.fields.line),
    ("id", |r| r.fields.id),
];

/// (right, scored) of one measure over some cases.
fn tally<'a>(results: impl IntoIterator<Item = &'a CaseResult>, m: Measure) -> (usize, usize) {
    results
        .into_iter()
        .filter_map(m)
        .fold((0, 0), |(right, n), ok| (right + usize::from(ok), n + 1))
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

/// JUnit XML: one test case per (scenario, runner); seeds of one case are folded into it.
pub fn junit(results: &[CaseResult], suite_name: &str) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut grouped: BTreeMap<(String, &str), Vec<&CaseResult>> = BTreeMap::new();
    for r in results {
        grouped
            .entry((r.scenario.clone(), r.runner))
            .or_default()
            .push(r);
    }
    let mut report = Report::new("faultkit");
    let mut suite = TestSuite::new(suite_name);
    for ((scenario, runner), rs) in grouped {
        let failed: Vec<&&CaseResult> = rs.iter().filter(|r| !r.passed).collect();
        let status = if failed.is_empty() {
            TestCaseStatus::success()
        } else {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            st.set_message(format!("{} of {} seed(s) failed", failed.len(), rs.len()));
            st.set_description(
                failed
                    .iter()
                    .map(|r| failure_text(r))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            st
        };
        let mut tc = TestCase::new(format!("{scenario} [{runner}]"), status);
        for (name, m) in FIELDS {
            let (right, scored) = tally(rs.iter().copied(), m);
            if scored > 0 {
                tc.add_property((name.to_string(), format!("{right}/{scored}")));
            }
        }
        tc.set_classname(
            scenario
                .split('/')
                .next()
                .unwrap_or("scenarios")
                .to_string(),
        );
        let ms: u64 = rs.iter().map(|r| r.duration_ms).sum();
        tc.set_time(std::time::Duration::from_millis(ms));
        suite.add_test_case(tc);
    }
    report.add_test_suite(suite);
    report.to_string().unwrap_or_default()
}

/// JSON: every result with its seed.
pub fn json(results: &[CaseResult]) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "faultkit.scenario-results/1",
        "results": results,
    }))
    .unwrap_or_default()
}

/// Several tools side by side, per scenario group: cases passed, then each field on its own
/// (right / scored).
pub fn scoreboard(columns: &[(String, Vec<CaseResult>)]) -> String {
    let mut groups: BTreeMap<String, ()> = BTreeMap::new();
    for (_, rs) in columns {
        for r in rs {
            groups.insert(r.group().to_string(), ());
        }
    }
    let passed: (&str, Measure) = ("passed", |r| Some(r.passed));
    let measures: Vec<(&str, Measure)> = std::iter::once(passed).chain(FIELDS).collect();
    let mut s = String::new();
    for (i, (measure, score)) in measures.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let _ = write!(s, "{:<16}", measure);
        for (name, _) in columns {
            let _ = write!(s, " {:>16}", truncate(name, 16));
        }
        s.push('\n');
        let mut totals = vec![(0usize, 0usize); columns.len()];
        for g in groups.keys() {
            let _ = write!(s, "  {g:<14}");
            for (i, (_, rs)) in columns.iter().enumerate() {
                let (right, scored) = tally(rs.iter().filter(|r| r.group() == g), *score);
                totals[i].0 += right;
                totals[i].1 += scored;
                let cell = if scored == 0 {
                    "-".to_string()
                } else {
                    format!("{right}/{scored}")
                };
                let _ = write!(s, " {cell:>16}");
            }
            s.push('\n');
        }
        let _ = write!(s, "  {:<14}", "total");
        for (p, n) in totals {
            let pct = if n == 0 {
                0.0
            } else {
                100.0 * p as f64 / n as f64
            };
            let _ = write!(s, " {:>16}", format!("{p}/{n} {pct:.0}%"));
        }
        s.push('\n');
    }
    s
}
