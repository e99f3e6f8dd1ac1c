//! `truth.json` (`faultkit.truth/1`): what the simulator knows for certain about a log it wrote.

use serde::{Deserialize, Serialize};

pub const TRUTH_SCHEMA: &str = "faultkit.truth/1";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truth {
    pub schema: String,
    pub scenario: String,
    pub seed: u64,
    pub vllm_version: String,
    pub status: String,
    /// Index of the launch the verdict is about (`null` when the asked-for launch wrote nothing).
    pub launch: Option<usize>,
    pub launches: Vec<TruthLaunch>,
    pub root_cause: Option<TruthRootCause>,
    pub stale: TruthStale,
    pub damage: Vec<TruthDamage>,
    /// The pid to pass as `--pid` when the scenario is about one launch.
    pub expected_pid: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruthLaunch {
    pub index: usize,
    pub first_line: u64,
    pub last_line: u64,
    pub pids: Vec<u32>,
    pub status: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruthRootCause {
    pub id: String,
    pub line: u64,
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub text: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruthStale {
    pub suspected: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruthDamage {
    pub kind: String,
}

impl Truth {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("truth serializes");
        s.push('\n');
        s
    }
}

/// A line as `text` is defined: ANSI escape sequences removed, trailing CR and spaces trimmed,
/// invalid UTF-8 as U+FFFD.
pub fn clean_line(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c2 in chars.by_ref() {
                    if ('@'..='~').contains(&c2) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out.trim_end_matches(['\r', ' ', '\n']).to_string()
}
