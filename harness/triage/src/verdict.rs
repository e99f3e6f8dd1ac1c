//! The verdict (`faultkit.verdict/1`) and the status → exit-code mapping, defined once.

use std::collections::BTreeMap;

use serde::Serialize;

pub const VERDICT_SCHEMA: &str = "faultkit.verdict/1";

/// What state the launch is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ready,
    Stopped,
    Crashed,
    Hung,
    Starting,
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ready => "ready",
            Status::Stopped => "stopped",
            Status::Crashed => "crashed",
            Status::Hung => "hung",
            Status::Starting => "starting",
            Status::Unknown => "unknown",
        }
    }
}

/// Process exit codes of `faultkit`, defined once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// ready, stopped
    Ok = 0,
    /// crashed with a known root cause
    KnownCrash = 1,
    /// crashed with an unknown cause, or hung
    UnknownCrash = 2,
    /// starting, unknown, stale, empty input
    Inconclusive = 3,
    /// bad command line
    Usage = 64,
    /// input missing, a directory, not readable
    NoInput = 66,
    /// a bug in faultkit
    Internal = 70,
    /// resources held by processes faultkit did not start
    Busy = 75,
    /// interrupted (Ctrl-C)
    Interrupted = 130,
}

impl ExitCode {
    pub fn code(self) -> i32 {
        self as i32
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LaunchInfo {
    pub index: usize,
    pub first_line: u64,
    pub last_line: u64,
    pub pids: Vec<u32>,
    pub status: Status,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RootCause {
    pub id: String,
    pub line: u64,
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub text: String,
    pub message: String,
    /// Key frames of the originating traceback (`File "…", line N, in f`), innermost last.
    pub traceback: Vec<String>,
    /// Every process that hit the same root cause, first one first.
    pub ranks: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Secondary {
    pub line: u64,
    pub process: Option<String>,
    pub count: u64,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stale {
    pub suspected: bool,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Damage {
    pub kind: String,
    /// 0-based byte offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// The answer of triage about one launch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub schema: &'static str,
    pub status: Status,
    pub launch: Option<usize>,
    pub launches: Vec<LaunchInfo>,
    pub vllm_version: Option<String>,
    pub evidence: BTreeMap<String, serde_json::Value>,
    pub root_cause: Option<RootCause>,
    /// What the root cause means (from its signature).
    pub meaning: Option<String>,
    pub fix: Option<String>,
    pub secondary: Vec<Secondary>,
    pub stale: Stale,
    pub damage: Vec<Damage>,
    pub diagnostics: Vec<String>,
}

impl Verdict {
    /// The exit code this verdict maps to.
    pub fn exit_code(&self) -> ExitCode {
        if self.stale.suspected {
            return ExitCode::Inconclusive;
        }
        match self.status {
            Status::Ready | Status::Stopped => ExitCode::Ok,
            Status::Crashed => match &self.root_cause {
                Some(rc) if rc.id != "unknown" => ExitCode::KnownCrash,
                _ => ExitCode::UnknownCrash,
            },
            Status::Hung => ExitCode::UnknownCrash,
            Status::Starting | Status::Unknown => ExitCode::Inconclusive,
        }
    }

    /// An empty verdict (no input, nothing recognised).
    pub fn empty() -> Verdict {
        Verdict {
            schema: VERDICT_SCHEMA,
            status: Status::Unknown,
            launch: None,
            launches: Vec::new(),
            vllm_version: None,
            evidence: BTreeMap::new(),
            root_cause: None,
            meaning: None,
            fix: None,
            secondary: Vec::new(),
            stale: Stale {
                suspected: false,
                reason: None,
            },
            damage: Vec::new(),
            diagnostics: Vec::new(),
        }
    }
}

/// Worst exit code of several verdicts (`--launch all`): crash beats inconclusive beats ok.
pub fn worst(codes: impl IntoIterator<Item = ExitCode>) -> ExitCode {
    let rank = |c: ExitCode| match c {
        ExitCode::UnknownCrash => 4,
        ExitCode::KnownCrash => 3,
        ExitCode::Inconclusive => 2,
        ExitCode::Ok => 1,
        _ => 5,
    };
    codes
        .into_iter()
        .max_by_key(|c| rank(*c))
        .unwrap_or(ExitCode::Inconclusive)
}
