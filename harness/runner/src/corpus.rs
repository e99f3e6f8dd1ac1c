//! Triage scored on labelled real logs: `scenarios/real/<dir>/labels.toml` beside the logs.
//! One [`Score`] per directory (a batch of public-thread logs, a release's captures), with the
//! three figures recorded at first sight in `scenarios/real/FIRST_SIGHT.md`: the exact
//! root-cause line, the root-cause id, and the status.
//!
//! A label's `root_cause = "none"` is a healthy log: it scores when the verdict is `ready` or
//! `stopped` and names no root cause.

use std::path::{Path, PathBuf};

use triage::grammar::strip_ansi;
use triage::{Options, Output, Status};

/// `labels.toml`: one entry per log file.
#[derive(Debug, serde::Deserialize)]
pub struct Labels {
    pub log: Vec<Label>,
}

/// What a person found in one real log (the fields the score uses; others are notes).
#[derive(Debug, serde::Deserialize)]
pub struct Label {
    pub file: String,
    pub root_cause: String,
    #[serde(default)]
    pub root_cause_line: String,
    #[serde(default)]
    pub source: String,
}

/// One log's result.
#[derive(Debug)]
pub struct Row {
    pub file: String,
    pub want_id: String,
    pub got_id: String,
    pub got_status: Status,
    pub got_text: String,
    pub line_ok: bool,
    pub id_ok: bool,
    pub status_ok: bool,
}

/// One directory's results.
#[derive(Debug)]
pub struct Score {
    pub dir: String,
    pub rows: Vec<Row>,
}

impl Score {
    pub fn n(&self) -> usize {
        self.rows.len()
    }
    pub fn lines(&self) -> usize {
        self.rows.iter().filter(|r| r.line_ok).count()
    }
    pub fn ids(&self) -> usize {
        self.rows.iter().filter(|r| r.id_ok).count()
    }
    pub fn statuses(&self) -> usize {
        self.rows.iter().filter(|r| r.status_ok).count()
    }
    /// `batch-01: 20 logs, line 12/20 (60%), id 6/20 (30%), status 14/20 (70%)`.
    pub fn summary(&self) -> String {
        let n = self.n().max(1);
        let pct = |k: usize| 100.0 * k as f64 / n as f64;
        format!(
            "{}: {} logs, line {}/{} ({:.0}%), id {}/{} ({:.0}%), status {}/{} ({:.0}%)",
            self.dir,
            self.n(),
            self.lines(),
            self.n(),
            pct(self.lines()),
            self.ids(),
            self.n(),
            pct(self.ids()),
            self.statuses(),
            self.n(),
            pct(self.statuses())
        )
    }
}

/// The directories below `real` that hold a `labels.toml`, sorted.
pub fn labelled_dirs(real: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(real)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("labels.toml").is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Triage every labelled log of `dir` with the built-in rules.
pub fn score_dir(dir: &Path) -> Result<Score, String> {
    let path = dir.join("labels.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let labels: Labels = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rows = Vec::new();
    for l in labels.log {
        let log = dir.join(&l.file);
        let bytes = std::fs::read(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        rows.push(score_one(&l, &bytes));
    }
    let name = dir
        .file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
    Ok(Score { dir: name, rows })
}

/// Triage one log and compare the verdict with its label.
pub fn score_one(l: &Label, bytes: &[u8]) -> Row {
    let Output::One(v) = triage::triage(bytes, &Options::default()) else {
        unreachable!("the default launch selection gives one verdict")
    };
    let (got_id, got_text) = v
        .root_cause
        .as_ref()
        .map_or(("-".to_string(), String::new()), |r| {
            (r.id.clone(), r.text.clone())
        });
    let (line_ok, id_ok, status_ok) = if l.root_cause == "none" {
        let quiet = v.root_cause.is_none();
        (
            quiet,
            quiet,
            matches!(v.status, Status::Ready | Status::Stopped),
        )
    } else {
        let want = strip_ansi(&l.root_cause_line);
        (
            v.root_cause.is_some() && got_text.trim() == want.trim(),
            got_id == l.root_cause,
            matches!(v.status, Status::Crashed | Status::Hung),
        )
    };
    Row {
        file: l.file.clone(),
        want_id: l.root_cause.clone(),
        got_id,
        got_status: v.status,
        got_text,
        line_ok,
        id_ok,
        status_ok,
    }
}

/// The per-log table: file, line, id, status, expected → got.
pub fn table(s: &Score) -> String {
    use std::fmt::Write as _;
    let mark = |ok: bool| if ok { "ok" } else { "MISS" };
    let mut out = String::new();
    for r in &s.rows {
        let _ = writeln!(
            out,
            "{:<64} {:<4} {:<4} {:<4} {}",
            format!("{}/{}", s.dir, r.file),
            mark(r.line_ok),
            mark(r.id_ok),
            mark(r.status_ok),
            if r.id_ok && r.status_ok {
                r.want_id.clone()
            } else {
                format!("{} → {} ({})", r.want_id, r.got_id, r.got_status.as_str())
            }
        );
    }
    out
}
