//! The `faultkit` command line's library half: [`mapped`], the memory-mapped reading of a log
//! file that the `triage` subcommand and the benches share. Everything else of the binary is
//! clap definitions and dispatch (`src/cli/`).

pub mod mapped;
