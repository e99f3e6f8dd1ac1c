//! `faultkit render`: show a log as a collector, a CI page or a paste would (`generator::render`).

use std::io::Write;

use generator::render::{render, Rendering};
use generator::Seed;
use triage::{ExitCode, Options, Output};

use super::fail;

/// Write a log as a collector, a CI page or a paste shows it, to standard output.
///
/// The renderings are the ones the metamorphic test applies to every labelled real log and every
/// scenario's log: none changes what failed, so a triage should give the same answer on the
/// output. Excerpts and lost newlines keep the root-cause line that
/// `faultkit triage` finds (or `--focus`). Renderings: docker-compose, kubectl-prefix,
/// pod-container, journald, docker-timestamps, ci-quote, extra-tag, ansi-as-text, crlf, noise,
/// excerpt, excerpt-elided, lost-newlines, append-echo, prepend-healthy-launch.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The log file, or `-` for standard input.
    log: String,
    /// The rendering (e.g. `docker-compose`, `lost-newlines`).
    rendering: String,
    /// Seed of names, times and window sizes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The line (1-based) excerpts and lost newlines keep [default: triage's root-cause line].
    #[arg(long, value_name = "LINE")]
    focus: Option<u64>,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let Some(r) = Rendering::parse(&a.rendering) else {
        return fail(
            ExitCode::Usage,
            format!(
                "unknown rendering `{}` (known: {})",
                a.rendering,
                Rendering::names()
            ),
        );
    };
    let input = match super::triage::read_input(&a.log) {
        Ok(i) => i,
        Err(e) => return fail(ExitCode::NoInput, e),
    };
    let focus = a.focus.or_else(|| {
        if !r.needs_focus() {
            return None;
        }
        match triage::triage(&input, &Options::default()) {
            Output::One(v) => v.root_cause.map(|rc| rc.line),
            Output::All(_) => None,
        }
    });
    let out = render(&input, r, focus, Seed(a.seed));
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&out.bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(ExitCode::Ok),
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::Ok),
        Err(e) => Err(e.into()),
    }
}
