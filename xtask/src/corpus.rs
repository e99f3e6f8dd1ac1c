//! `cargo xtask corpus [DIR…]`: faultkit's triage scored on labelled real logs — per directory
//! of `scenarios/real/` (or the directories named), the exact root-cause line, the id and the
//! status. This is the figure a new batch gets at first sight, before any change made for it
//! (`scenarios/real/FIRST_SIGHT.md`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use runner::corpus;

/// Options of `cargo xtask corpus`.
#[derive(clap::Args, Debug)]
pub struct CorpusArgs {
    /// Directories holding a `labels.toml` (default: every one under scenarios/real/).
    dirs: Vec<PathBuf>,
    /// Also print every log's result (line, id, status, expected → got).
    #[arg(long, short)]
    verbose: bool,
}

pub fn run(a: CorpusArgs) -> Result<i32> {
    let dirs = if a.dirs.is_empty() {
        corpus::labelled_dirs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/real"))?
    } else {
        a.dirs
    };
    let mut out = String::new();
    let mut total = (0, 0, 0, 0);
    for d in &dirs {
        if !d.join("labels.toml").is_file() {
            bail!("{}: no labels.toml there", d.display());
        }
        let s = corpus::score_dir(d).map_err(anyhow::Error::msg)?;
        if a.verbose {
            out.push_str(&corpus::table(&s));
        }
        out.push_str(&s.summary());
        out.push('\n');
        total.0 += s.n();
        total.1 += s.lines();
        total.2 += s.ids();
        total.3 += s.statuses();
    }
    let (n, l, i, st) = total;
    let pct = |k: usize| 100.0 * k as f64 / n.max(1) as f64;
    out.push_str(&format!(
        "all: {n} logs, line {l}/{n} ({:.1}%), id {i}/{n} ({:.1}%), status {st}/{n} ({:.1}%)\n",
        pct(l),
        pct(i),
        pct(st)
    ));
    // A reader that stops early (`| head`) is not an error.
    match std::io::stdout().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(0),
    }
}
