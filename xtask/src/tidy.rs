//! `cargo xtask tidy`: the style checks of STYLE.md. The same checks run as tests
//! (`harness/tests/it/tidy.rs`); this command prints them for a developer.

use std::process::Command;

use anyhow::Result;

pub fn run() -> Result<i32> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "test",
            "--quiet",
            "--package",
            "faultkit",
            "--test",
            "it",
            "tidy::",
        ])
        .status()?;
    Ok(status.code().unwrap_or(1))
}
