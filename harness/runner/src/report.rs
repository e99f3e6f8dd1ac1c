//! Reporters for runner results: the human summary, JSON, JUnit XML, and the scoreboard that
//! puts faultkit beside the baselines.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::CaseResult;

/// A failing case as a person reads it: what disagreed, and how to reproduce it.
pub fn failure_text(r: &CaseResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "FAIL {} [{}] seed {}", r.scenario, r.runner, r.seed);
    if let Some(e) = &r.error {
        let _ = writeln!(s, "  error: {e}");
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
                m.field, m.against, m.expected, m.actual
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

/// One line per case plus totals.
pub fn summary_table(results: &[CaseResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<46} {:<9} {:>6} {:<8} {:<40} {:>7}",
        "scenario", "runner", "seed", "result", "verdict", "ms"
    );
    for r in results {
        let verdict = match (&r.observed.status, &r.observed.root_cause) {
            (Some(st), Some(id)) => format!("{st} {id}"),
            (Some(st), None) => st.clone(),
            _ => r.truth_status.clone(),
        };
        let _ = writeln!(
            s,
            "{:<46} {:<9} {:>6} {:<8} {:<40} {:>7}",
            r.scenario,
            r.runner,
            r.seed,
            if r.passed { "PASS" } else { "FAIL" },
            truncate(&verdict, 40),
            r.duration_ms
        );
    }
    let passed = results.iter().filter(|r| r.passed).count();
    let _ = writeln!(s, "{passed}/{} passed", results.len());
    s
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

/// Pass rates per scenario group for several tools side by side.
pub fn scoreboard(columns: &[(String, Vec<CaseResult>)]) -> String {
    let mut groups: BTreeMap<String, ()> = BTreeMap::new();
    for (_, rs) in columns {
        for r in rs {
            groups.insert(r.group().to_string(), ());
        }
    }
    let mut s = String::new();
    let _ = write!(s, "{:<16}", "group");
    for (name, _) in columns {
        let _ = write!(s, " {:>16}", truncate(name, 16));
    }
    s.push('\n');
    let mut totals = vec![(0usize, 0usize); columns.len()];
    for g in groups.keys() {
        let _ = write!(s, "{g:<16}");
        for (i, (_, rs)) in columns.iter().enumerate() {
            let in_group: Vec<&CaseResult> = rs.iter().filter(|r| r.group() == g).collect();
            let pass = in_group.iter().filter(|r| r.passed).count();
            totals[i].0 += pass;
            totals[i].1 += in_group.len();
            let _ = write!(s, " {:>16}", format!("{pass}/{}", in_group.len()));
        }
        s.push('\n');
    }
    let _ = write!(s, "{:<16}", "total");
    for (p, n) in totals {
        let pct = if n == 0 {
            0.0
        } else {
            100.0 * p as f64 / n as f64
        };
        let _ = write!(s, " {:>16}", format!("{p}/{n} {pct:.0}%"));
    }
    s.push('\n');
    s
}
