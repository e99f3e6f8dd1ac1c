//! Faults a scenario adds to what its configuration decides: file faults (relaunch into the
//! same log, truncation, rotation, a partial line) and process faults (kill, hang, node loss,
//! orphans, held GPU memory), from the closed list in `scenarios/README.md`, and their parsing.

use toml::Spanned;

use super::raw::RawFault;
use super::{Located, ScenarioError};

/// A file or process fault, from the closed list in `scenarios/README.md`.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The server is started again with output redirected (`>`) into the same log.
    RelaunchIntoSameLog {
        after: RelaunchAfter,
        /// Lines the new launch has written when someone reads the file; `None`: all of them.
        new_launch_lines: Option<u32>,
        new_command: Option<String>,
    },
    /// The log is truncated with `>` by a relaunch while the old server still writes to it.
    TruncateWhileWriting {
        append: bool,
        new_command: Option<String>,
    },
    PartialLastLine,
    Rotate,
    Kill {
        process: String,
        signal: Signal,
        at: Phase,
    },
    /// Someone outside vLLM (a user, the OOM killer, a watchdog) sends `signal` to `process` of
    /// the ready server. The simulator writes vLLM's reaction as for `Kill` while serving; the
    /// process runner sends the signal itself and the fake server reacts unscripted.
    Signal {
        process: String,
        signal: Signal,
    },
    Hang {
        process: String,
        at: Phase,
    },
    OrphanWorkers,
    HoldGpuMemory {
        gib: f64,
    },
    ShmLeftover,
    NodeLoss {
        node: u32,
        at: Phase,
    },
    /// Earlier healthy launches of the same file before the scenario's launch.
    EarlierLaunches {
        count: u32,
    },
    /// The whole host (container) is killed at a phase: every process dies at once, the log
    /// just ends (`docker kill`, a power loss).
    HostKill {
        at: Phase,
    },
    /// The host restarts after the launch came up; pids are handed out again from the start.
    HostRestart,
}

/// What the log file goes through around the scenario's launch. The simulator writes this
/// story and the process runner re-enacts it, both from [`Scenario::file_story`].
#[derive(Clone, Debug, PartialEq)]
pub enum FileStory {
    /// One launch writes the file (after any earlier launches; perhaps rotated or cut short).
    Single,
    /// A relaunch truncates the file with `>` while the old server still writes.
    Truncated {
        append: bool,
        new_command: Option<String>,
    },
    /// A first launch ends (crash, `kill -9`, stop) and a relaunch writes into the same file.
    Relaunched {
        after: RelaunchAfter,
        new_launch_lines: Option<u32>,
        new_command: Option<String>,
    },
}

impl Fault {
    /// A fault of the file or the host around the server (relaunches, truncation, rotation,
    /// held GPUs, orphans, `/dev/shm` leftovers, host kill or restart): a host shows it for
    /// real, so the fake server does not play it from the scenario file.
    pub fn is_around_server(&self) -> bool {
        matches!(
            self,
            Fault::HoldGpuMemory { .. }
                | Fault::RelaunchIntoSameLog { .. }
                | Fault::TruncateWhileWriting { .. }
                | Fault::PartialLastLine
                | Fault::Rotate
                | Fault::EarlierLaunches { .. }
                | Fault::OrphanWorkers
                | Fault::ShmLeftover
                | Fault::HostKill { .. }
                | Fault::HostRestart
                | Fault::Signal { .. }
        )
    }

    /// Whether real processes on a fake host can re-enact the fault (the process runner);
    /// the others exist only as text.
    pub fn has_process_form(&self) -> bool {
        !matches!(
            self,
            Fault::PartialLastLine
                | Fault::Rotate
                | Fault::EarlierLaunches { .. }
                | Fault::NodeLoss { .. }
        )
    }
}

impl super::Scenario {
    /// The story of the log file: truncation by a relaunch, a relaunch into the same file
    /// (`orphan_workers` is one after `kill -9`), or a single launch.
    pub fn file_story(&self) -> FileStory {
        if let Some(story) = self.fault(|f| match f {
            Fault::TruncateWhileWriting {
                append,
                new_command,
            } => Some(FileStory::Truncated {
                append: *append,
                new_command: new_command.clone(),
            }),
            _ => None,
        }) {
            return story;
        }
        if let Some(story) = self.fault(|f| match f {
            Fault::RelaunchIntoSameLog {
                after,
                new_launch_lines,
                new_command,
            } => Some(FileStory::Relaunched {
                after: *after,
                new_launch_lines: *new_launch_lines,
                new_command: new_command.clone(),
            }),
            _ => None,
        }) {
            return story;
        }
        if self.faults.contains(&Fault::OrphanWorkers) {
            return FileStory::Relaunched {
                after: RelaunchAfter::Kill9,
                new_launch_lines: None,
                new_command: None,
            };
        }
        FileStory::Single
    }

    /// How many healthy launches wrote the file before the scenario's launch.
    pub fn earlier_launches(&self) -> u32 {
        self.fault(|f| match f {
            Fault::EarlierLaunches { count } => Some(*count),
            _ => None,
        })
        .unwrap_or(0)
    }

    /// GiB per GPU another process holds before the launch.
    pub fn held_gpu_gib(&self) -> Option<f64> {
        self.fault(|f| match f {
            Fault::HoldGpuMemory { gib } => Some(*gib),
            _ => None,
        })
    }

    /// The phase at which the whole host is killed.
    pub fn host_kill(&self) -> Option<Phase> {
        self.fault(|f| match f {
            Fault::HostKill { at } => Some(*at),
            _ => None,
        })
    }

    /// The node that is lost, if one is.
    pub fn node_loss(&self) -> Option<u32> {
        self.fault(|f| match f {
            Fault::NodeLoss { node, .. } => Some(*node),
            _ => None,
        })
    }

    /// The first fault the process runner cannot re-enact.
    pub fn text_only_fault(&self) -> Option<&Fault> {
        self.faults.iter().find(|f| !f.has_process_form())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelaunchAfter {
    /// The first launch crashed on its own.
    Crash,
    /// The first launch was killed with `kill -9` of the API server (workers may survive).
    Kill9,
    /// The first launch was running fine and was stopped.
    Ready,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Kill,
    Term,
    Segv,
    Bus,
}

impl Signal {
    pub fn number(self) -> i32 {
        match self {
            Signal::Kill => 9,
            Signal::Term => 15,
            Signal::Segv => 11,
            Signal::Bus => 7,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Signal::Kill => "SIGKILL",
            Signal::Term => "SIGTERM",
            Signal::Segv => "SIGSEGV",
            Signal::Bus => "SIGBUS",
        }
    }
}

/// When a process fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// During distributed init (before the worker prefix is set).
    InitDevice,
    /// While loading weights.
    LoadWeights,
    /// During torch.compile / CUDA graph capture.
    Compile,
    /// After `Application startup complete.`, while serving.
    Serving,
}

impl Phase {
    fn parse(s: &str) -> Option<Phase> {
        Some(match s {
            "init_device" => Phase::InitDevice,
            "load_weights" => Phase::LoadWeights,
            "compile" => Phase::Compile,
            "serving" => Phase::Serving,
            _ => return None,
        })
    }
}

pub(super) fn parse_fault(
    loc: &Located<'_>,
    f: &Spanned<RawFault>,
) -> Result<Fault, ScenarioError> {
    let r = f.get_ref();
    let need = |field: &Option<Spanned<String>>, name: &str| -> Result<String, ScenarioError> {
        field.as_ref().map(|s| s.get_ref().clone()).ok_or_else(|| {
            loc.at(
                f.span(),
                format!("fault `{}` needs `{name}`", r.kind.get_ref()),
            )
        })
    };
    let phase = |field: &Option<Spanned<String>>| -> Result<Phase, ScenarioError> {
        let s = field
            .as_ref()
            .ok_or_else(|| loc.at(f.span(), format!("fault `{}` needs `at`", r.kind.get_ref())))?;
        Phase::parse(s.get_ref()).ok_or_else(|| {
            loc.at(
                s.span(),
                format!(
                    "unknown phase `{}` (known: init_device, load_weights, compile, serving)",
                    s.get_ref()
                ),
            )
        })
    };
    let kind = r.kind.get_ref().as_str();
    Ok(match kind {
        "relaunch_into_same_log" => {
            let after = match r.after.as_ref().map(|a| a.get_ref().as_str()) {
                None | Some("crash") => RelaunchAfter::Crash,
                Some("kill9") => RelaunchAfter::Kill9,
                Some("ready") => RelaunchAfter::Ready,
                Some(other) => {
                    return Err(loc.at(
                        r.after.as_ref().map_or(f.span(), |a| a.span()),
                        format!("unknown `after` value `{other}` (known: crash, kill9, ready)"),
                    ))
                }
            };
            Fault::RelaunchIntoSameLog {
                after,
                new_launch_lines: r.new_launch_lines,
                new_command: r.new_command.as_ref().map(|c| c.get_ref().clone()),
            }
        }
        "truncate_while_writing" => Fault::TruncateWhileWriting {
            append: r.append.unwrap_or(false),
            new_command: r.new_command.as_ref().map(|c| c.get_ref().clone()),
        },
        "partial_last_line" => Fault::PartialLastLine,
        "rotate" => Fault::Rotate,
        "kill" | "signal" => {
            let signal = match r.signal.as_ref().map(|s| s.get_ref().as_str()) {
                None | Some("SIGKILL") | Some("KILL") | Some("9") => Signal::Kill,
                Some("SIGTERM") | Some("TERM") | Some("15") => Signal::Term,
                Some("SIGSEGV") | Some("SEGV") | Some("11") => Signal::Segv,
                Some("SIGBUS") | Some("BUS") | Some("7") => Signal::Bus,
                Some(other) => {
                    return Err(loc.at(
                        r.signal.as_ref().map_or(f.span(), |s| s.span()),
                        format!("unknown signal `{other}`"),
                    ))
                }
            };
            let process = need(&r.process, "process")?;
            if kind == "signal" {
                if let Some(at) = &r.at {
                    return Err(loc.at(
                        at.span(),
                        "fault `signal` is sent to a ready server: it takes no `at`",
                    ));
                }
                Fault::Signal { process, signal }
            } else {
                Fault::Kill {
                    process,
                    signal,
                    at: phase(&r.at)?,
                }
            }
        }
        "hang" => Fault::Hang {
            process: need(&r.process, "process")?,
            at: phase(&r.at)?,
        },
        "orphan_workers" => Fault::OrphanWorkers,
        "hold_gpu_memory" => Fault::HoldGpuMemory {
            gib: r
                .gib
                .ok_or_else(|| loc.at(f.span(), "fault `hold_gpu_memory` needs `gib`"))?,
        },
        "shm_leftover" => Fault::ShmLeftover,
        "node_loss" => Fault::NodeLoss {
            node: r.node.unwrap_or(1),
            at: phase(&r.at)?,
        },
        "earlier_launches" => Fault::EarlierLaunches {
            count: r.earlier_launches.unwrap_or(1),
        },
        "host_kill" => Fault::HostKill { at: phase(&r.at)? },
        "host_restart" => Fault::HostRestart,
        other => {
            return Err(loc.at(
                r.kind.span(),
                format!(
                    "unknown fault kind `{other}` (known: relaunch_into_same_log, truncate_while_writing, partial_last_line, rotate, kill, signal, hang, orphan_workers, hold_gpu_memory, shm_leftover, node_loss, earlier_launches, host_kill, host_restart)"
                ),
            ))
        }
    })
}
