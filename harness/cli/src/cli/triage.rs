//! `faultkit triage`: the root cause of a vLLM log.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use triage::{self, render, ExitCode, LaunchSel, Options, Output, RuleSet};

use super::fail;

/// Name the root cause of a vLLM launch failure in a log file (or `-` for stdin).
///
/// Reads the newest launch unless --launch or --pid says otherwise. Prints the status, the
/// originating error with its line and process, the key frames, the fix, and what was folded.
/// Exit codes: 0 ready/stopped, 1 crashed (known cause), 2 crashed (unknown cause) or hung,
/// 3 starting/unknown/stale/empty, 64 usage, 66 unreadable input, 70 internal error.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The log file, or `-` to read standard input (`docker logs c 2>&1 | faultkit triage -`).
    log: String,
    /// Print the verdict as JSON (schema faultkit.verdict/1).
    #[arg(long)]
    json: bool,
    /// Which launch: `newest`, `all` (a JSON array with --json), or its 0-based index.
    #[arg(long, default_value = "newest", value_parser = parse_launch)]
    launch: LaunchSel,
    /// The launch in which a line carries this pid (e.g. the server you just started).
    #[arg(long, conflicts_with = "launch")]
    pid: Option<u32>,
    /// More signature rules (TOML, same format as the built-in rules).
    #[arg(long)]
    rules: Option<PathBuf>,
    /// Explain the choice: list every candidate error and how it was classified.
    #[arg(long)]
    explain: bool,
    /// Colour: auto (only on a terminal without NO_COLOR), always, never.
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
}

fn parse_launch(s: &str) -> Result<LaunchSel, String> {
    match s {
        "newest" => Ok(LaunchSel::Newest),
        "all" => Ok(LaunchSel::All),
        n => n
            .parse()
            .map(LaunchSel::Index)
            .map_err(|_| format!("`{n}` is not newest, all or a launch index")),
    }
}

/// The bytes of the log: a mapping for regular files (zero-copy; triage of the newest launch
/// touches only the pages it reads), a buffer for standard input, FIFOs and devices.
pub(super) enum Input {
    Mapped(faultkit::mapped::Mapped),
    Bytes(Vec<u8>),
}

impl std::ops::Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Input::Mapped(m) => m,
            Input::Bytes(b) => b,
        }
    }
}

pub(super) fn read_input(path: &str) -> Result<Input, String> {
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut buf)
            .map_err(|e| format!("reading standard input: {e}"))?;
        return Ok(Input::Bytes(buf));
    }
    let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    if meta.is_dir() {
        return Err(format!("{path}: is a directory, not a log file"));
    }
    let mut file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    if meta.is_file() && meta.len() > 0 {
        return faultkit::mapped::map(&file)
            .map(Input::Mapped)
            .map_err(|e| format!("{path}: {e}"));
    }
    // FIFOs, character devices, empty files.
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(|e| format!("{path}: {e}"))?;
    Ok(Input::Bytes(buf))
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let rules_owned;
    let rules: &RuleSet = match &a.rules {
        None => RuleSet::builtin(),
        Some(p) => {
            let text = match std::fs::read_to_string(p) {
                Ok(t) => t,
                Err(e) => return fail(ExitCode::NoInput, format!("{}: {e}", p.display())),
            };
            rules_owned = match RuleSet::with_user_rules(&text, &p.display().to_string()) {
                Ok(r) => r,
                Err(e) => return fail(ExitCode::Usage, e),
            };
            &rules_owned
        }
    };
    let input = match read_input(&a.log) {
        Ok(i) => i,
        Err(e) => return fail(ExitCode::NoInput, e),
    };
    let opts = Options {
        launch: a.launch,
        pid: a.pid,
        rules,
        tail: None,
        explain: a.explain,
    };
    let mut out = triage::triage(&input, &opts);
    match &mut out {
        Output::One(v) => render::mask_verdict(v),
        Output::All(vs) => vs.iter_mut().for_each(render::mask_verdict),
    }
    let code = out.exit_code();
    let stdout = std::io::stdout();
    let color = match a.color.as_str() {
        "always" => true,
        "never" => false,
        _ => stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let mut w = stdout.lock();
    match (&out, a.json) {
        (Output::One(v), true) => writeln!(w, "{}", render::json_pretty(v)?)?,
        (Output::All(vs), true) => writeln!(w, "{}", render::json_pretty(vs)?)?,
        (Output::One(v), false) => write!(w, "{}", render::human(v, color))?,
        (Output::All(vs), false) => {
            for (i, v) in vs.iter().enumerate() {
                if i > 0 {
                    writeln!(w)?;
                }
                write!(w, "{}", render::human(v, color))?;
            }
        }
    }
    Ok(code)
}
