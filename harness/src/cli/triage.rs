//! `faultkit triage`: the root cause of a vLLM log.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use harness::triage::{self, render, ExitCode, LaunchSel, Options, Output, RuleSet};

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

/// How much of the file was read.
struct Input {
    bytes: Vec<u8>,
    tail: Option<triage::Tail>,
}

/// Read the log. Regular files larger than `FULL_SCAN_BYTES_MAX` are read from the end in
/// growing blocks until the newest launch's start is inside, so the cost follows the launch, not
/// the file. Positioned reads instead of mmap: a log that another process truncates while it is
/// mapped would kill the reader with SIGBUS.
fn read_input(path: &str, newest_only: bool) -> Result<Input, String> {
    use std::os::unix::fs::FileExt;
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut buf)
            .map_err(|e| format!("reading standard input: {e}"))?;
        return Ok(Input {
            bytes: buf,
            tail: None,
        });
    }
    let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    if meta.is_dir() {
        return Err(format!("{path}: is a directory, not a log file"));
    }
    let mut file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let len = meta.len();
    if !meta.is_file() || !newest_only || len <= triage::FULL_SCAN_BYTES_MAX as u64 {
        // FIFOs, devices, small files: read it all (the file may shrink meanwhile: fine).
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)
            .map_err(|e| format!("{path}: {e}"))?;
        return Ok(Input {
            bytes: buf,
            tail: None,
        });
    }
    let mut block: u64 = 8 << 20;
    loop {
        let start = len.saturating_sub(block);
        let mut buf = vec![0u8; (len - start) as usize];
        let mut got = 0usize;
        while got < buf.len() {
            match file.read_at(&mut buf[got..], start + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("{path}: {e}")),
            }
        }
        // The file shrank while we read: what we got is what there is.
        buf.truncate(got);
        let found = triage::segment::last_boundary(&buf).is_some_and(|b| b.offset > 0);
        if found || start == 0 {
            return Ok(Input {
                bytes: buf,
                tail: Some(triage::Tail {
                    offset: start,
                    total_len: len,
                }),
            });
        }
        block = block.saturating_mul(4);
    }
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
    let newest_only = a.launch == LaunchSel::Newest && a.pid.is_none();
    let input = match read_input(&a.log, newest_only) {
        Ok(i) => i,
        Err(e) => return fail(ExitCode::NoInput, e),
    };
    let opts = Options {
        launch: a.launch,
        pid: a.pid,
        rules,
        tail: input.tail,
        explain: a.explain,
    };
    let mut out = triage::triage(&input.bytes, &opts);
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
        (Output::One(v), true) => writeln!(w, "{}", serde_json::to_string_pretty(v)?)?,
        (Output::All(vs), true) => writeln!(w, "{}", serde_json::to_string_pretty(vs)?)?,
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
