//! Comparing a verdict with the simulator's truth, and the truth with the scenario's `[expect]`.
//!
//! Main function: [`compare`]: a list of field mismatches, empty when everything agrees.

use generator::scenario::Expect;
use vocab::truth::Truth;

use crate::catalog::glob_match;

/// The fields of a verdict the runner scores (from triage, from `--triage-cmd` JSON, or parsed
/// from a baseline's text).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Observed {
    pub status: Option<String>,
    pub root_cause: Option<String>,
    pub line: Option<u64>,
    pub process: Option<String>,
    pub stale: Option<bool>,
    pub damage: Option<Vec<String>>,
}

/// One disagreement.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Mismatch {
    pub field: String,
    pub expected: String,
    pub actual: String,
    /// `truth` (verdict vs truth) or `expect` (truth vs the scenario's [expect]).
    pub against: &'static str,
}

fn show<T: std::fmt::Debug>(v: &Option<T>) -> String {
    match v {
        None => "null".into(),
        Some(x) => format!("{x:?}").trim_matches('"').to_string(),
    }
}

fn kinds(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// Verdict vs truth: status, root-cause id, line, process, stale, damage kinds. With `exact`
/// false (a process run: its line numbers differ from the text run's, and which rank reports
/// first is a race between real processes) lines are not compared and processes by family.
pub fn against_truth(o: &Observed, t: &Truth, exact: bool) -> Vec<Mismatch> {
    let lines = exact;
    let mut m = Vec::new();
    let mut check = |field: &str, expected: String, actual: String| {
        if expected != actual {
            m.push(Mismatch {
                field: field.into(),
                expected,
                actual,
                against: "truth",
            });
        }
    };
    check("status", t.status.clone(), show(&o.status));
    let trc = t.root_cause.as_ref();
    check(
        "root_cause",
        show(&trc.map(|r| r.id.clone())),
        show(&o.root_cause),
    );
    if lines && (trc.is_some() || o.line.is_some()) {
        check("line", show(&trc.map(|r| r.line)), show(&o.line));
    }
    if let Some(r) = trc {
        if exact {
            check("process", show(&r.process), show(&o.process));
        } else {
            check(
                "process",
                show(&r.process.as_deref().map(family)),
                show(&o.process.as_deref().map(family)),
            );
        }
    }
    check(
        "stale",
        t.stale.suspected.to_string(),
        show(&o.stale.or(Some(false))),
    );
    if let Some(d) = &o.damage {
        let want = kinds(t.damage.iter().map(|d| d.kind.clone()).collect());
        check(
            "damage",
            format!("{want:?}"),
            format!("{:?}", kinds(d.clone())),
        );
    }
    m
}

/// The fields every tool is scored on, each on its own: `None` where the truth has no such field
/// (a healthy launch has no root-cause line or id) or it is not compared (line numbers of a
/// process run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Fields {
    pub status: Option<bool>,
    pub line: Option<bool>,
    pub id: Option<bool>,
}

impl Fields {
    /// Scores an answer (`None`: the tool gave none, so every field it should have given is wrong).
    pub fn score(o: Option<&Observed>, t: &Truth, lines: bool) -> Fields {
        let rc = t.root_cause.as_ref();
        Fields {
            status: Some(o.and_then(|o| o.status.as_deref()) == Some(t.status.as_str())),
            line: rc
                .filter(|_| lines)
                .map(|r| o.and_then(|o| o.line) == Some(r.line)),
            id: rc.map(|r| o.and_then(|o| o.root_cause.as_deref()) == Some(r.id.as_str())),
        }
    }
}

/// An outside tool's answer against the truth: status, line and id, each on its own (DESIGN.md,
/// "Outside triage"); no answer at all is one mismatch of its own.
pub fn outside_against_truth(o: Option<&Observed>, t: &Truth) -> Vec<Mismatch> {
    let Some(o) = o else {
        return vec![Mismatch {
            field: "answer".into(),
            expected: "faultkit.verdict/1 JSON or key=value lines".into(),
            actual: "no answer in the output".into(),
            against: "truth",
        }];
    };
    let f = Fields::score(Some(o), t, true);
    let rc = t.root_cause.as_ref();
    let mut m = Vec::new();
    let mut push = |field: &str, right: Option<bool>, expected: String, actual: String| {
        if right == Some(false) {
            m.push(Mismatch {
                field: field.into(),
                expected,
                actual,
                against: "truth",
            });
        }
    };
    push("status", f.status, t.status.clone(), show(&o.status));
    push("line", f.line, show(&rc.map(|r| r.line)), show(&o.line));
    push(
        "root_cause",
        f.id,
        show(&rc.map(|r| r.id.clone())),
        show(&o.root_cause),
    );
    m
}

/// `Worker_TP3` → `Worker_TP*`: the process without its rank.
pub fn family(p: &str) -> String {
    let t = p.trim_end_matches(|c: char| c.is_ascii_digit());
    if t.len() == p.len() {
        p.to_string()
    } else {
        format!("{t}*")
    }
}

/// Truth vs the scenario's `[expect]` (the scenario author's claim about the simulator).
pub fn against_expect(t: &Truth, e: &Expect) -> Vec<Mismatch> {
    let mut m = Vec::new();
    let mut push = |field: &str, expected: String, actual: String| {
        m.push(Mismatch {
            field: field.into(),
            expected,
            actual,
            against: "expect",
        })
    };
    if t.status != e.status {
        push("status", e.status.clone(), t.status.clone());
    }
    let id = t.root_cause.as_ref().map(|r| r.id.clone());
    if e.root_cause.is_some() && id != e.root_cause {
        push("root_cause", show(&e.root_cause), show(&id));
    }
    if let Some(glob) = &e.process {
        let p = t.root_cause.as_ref().and_then(|r| r.process.clone());
        if !p.as_deref().is_some_and(|p| glob_match(glob, p)) {
            push("process", glob.clone(), show(&p));
        }
    }
    if t.stale.suspected != e.stale {
        push("stale", e.stale.to_string(), t.stale.suspected.to_string());
    }
    // The expected damage kinds must be present; others (interleaving) depend on the seed.
    if let Some(d) = &e.damage {
        let want = kinds(d.clone());
        let got = kinds(t.damage.iter().map(|d| d.kind.clone()).collect());
        if !want.iter().all(|k| got.contains(k)) {
            push("damage", format!("{want:?} (at least)"), format!("{got:?}"));
        }
    }
    m
}
