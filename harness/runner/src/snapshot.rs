//! Machine-written reports beside each scenario (`<name>.report`): what faultkit's triage says
//! about the scenario at seed 0, so a change in triage output shows up in review. Refreshed with
//! `--bless` or `UPDATE_EXPECT=1`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use triage::Verdict;

const HEADER: &str = "# Written by `cargo xtask scenario --bless` (or UPDATE_EXPECT=1): faultkit's verdict on this\n# scenario at seed 0. Review changes; do not edit by hand.\n";

/// The report text of a verdict.
pub fn render(v: &Verdict) -> String {
    let mut s = String::from(HEADER);
    let _ = writeln!(s, "status: {}", v.status.as_str());
    if let Some(rc) = &v.root_cause {
        let _ = writeln!(s, "root_cause: {}", rc.id);
        let _ = writeln!(s, "line: {}", rc.line);
        let _ = writeln!(s, "process: {}", rc.process.as_deref().unwrap_or("-"));
        let _ = writeln!(
            s,
            "message: {}",
            triage::render::escape_control(&rc.message)
        );
        let _ = writeln!(s, "ranks: {}", rc.ranks.len());
    }
    let _ = writeln!(
        s,
        "secondary: {}",
        v.secondary.iter().map(|x| x.count).sum::<u64>()
    );
    let mut kinds: Vec<&str> = v.damage.iter().map(|d| d.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let _ = writeln!(s, "damage: [{}]", kinds.join(", "));
    let _ = writeln!(s, "stale: {}", v.stale.suspected);
    let _ = writeln!(s, "launches: {}", v.launches.len());
    s
}

fn report_path(scenario: &Path) -> PathBuf {
    scenario.with_extension("report")
}

/// Compare the report beside `scenario` with `report`; with `bless` (or UPDATE_EXPECT=1) write it.
/// `Err` carries a readable diff.
pub fn check(scenario: &Path, report: &str, bless: bool) -> Result<(), String> {
    let path = report_path(scenario);
    let bless = bless || std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let current = std::fs::read_to_string(&path).ok();
    if current.as_deref() == Some(report) {
        return Ok(());
    }
    if bless {
        return std::fs::write(&path, report)
            .map_err(|e| format!("writing {}: {e}", path.display()));
    }
    let Some(current) = current else {
        return Err(format!(
            "{} is missing; create it with --bless (or UPDATE_EXPECT=1)",
            path.display()
        ));
    };
    Err(diff(&current, report, &path))
}

/// A line diff: `-` what the report says, `+` what triage says now.
pub fn diff(old: &str, new: &str, path: &Path) -> String {
    let mut s = format!("{} changed (run with --bless to accept):\n", path.display());
    let old_l: Vec<&str> = old.lines().collect();
    let new_l: Vec<&str> = new.lines().collect();
    for l in &old_l {
        if !new_l.contains(l) {
            let _ = writeln!(s, "  - {l}");
        }
    }
    for l in &new_l {
        if !old_l.contains(l) {
            let _ = writeln!(s, "  + {l}");
        }
    }
    s
}
