//! Events that processes write, and how one event becomes bytes in the log file.
//!
//! Main types: [`Event`] (what one process writes at one instant), [`Body`] (a logging record, a
//! stream write through the decorated `sys.stdout`/`sys.stderr`, or raw C++ output), and
//! [`Renderer`], which applies a [`Profile`]'s header, prefix and colour rules exactly as
//! vLLM's `NewLineFormatter` and `_add_prefix` do.

use crate::clock::SimTime;
use crate::profile::{HeaderStyle, PrefixColor, Profile};

/// A process that writes to the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proc {
    /// The name in the `(NAME pid=N)` prefix, `None` for unprefixed processes.
    pub name: Option<String>,
    pub pid: u32,
    /// A stable label for truth and seeds (`APIServer`, `EngineCore`, `Worker3`, `shell`).
    pub role: String,
    /// A Ray actor: its output reaches the file through the Ray driver's stdout.
    pub ray: Option<RayActor>,
}

/// How Ray forwards an actor's output: the driver (vLLM's engine core, whose own prefix comes
/// first) prints `(RayWorkerWrapper pid=N, ip=A.B.C.D)` before each line; `ip` only for actors
/// on another node than the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RayActor {
    pub driver_name: String,
    pub driver_pid: u32,
    pub ip: Option<String>,
}

/// What is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// A vLLM logging record; `text` may span lines (`\n`), each becoming `\r\n` + header.
    Log {
        level: String,
        file: String,
        line: String,
        text: String,
    },
    /// Text written through Python's `sys.stdout`/`sys.stderr` (tracebacks, uvicorn, tqdm):
    /// prefixed per line when the process is decorated, no header.
    Stream(String),
    /// Text written by C/C++ straight to the file descriptor: never prefixed.
    Raw(String),
}

/// One write by one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub t: SimTime,
    pub proc: usize,
    /// Whether the process's streams carry the prefix at this point (decoration happens after
    /// device init for workers).
    pub prefixed: bool,
    pub body: Body,
    /// Index of the physical line in this event that states the root cause, if any.
    pub mark: Option<usize>,
}

/// Turns events into bytes for one profile and environment.
#[derive(Clone, Debug)]
pub struct Renderer<'a> {
    pub profile: &'a Profile,
    pub no_color: bool,
    /// `VLLM_LOGGING_COLOR=1`: coloured formatter even into a file (v0.13+).
    pub force_color: bool,
    /// `VLLM_LOGGING_PREFIX`: literal text before the level.
    pub logging_prefix: String,
    /// Ray colours its prefixes even into files unless `RAY_COLOR_PREFIX=0`.
    pub ray_color: bool,
    /// Render a Ray actor's lines as they reach the file (driver prefix included). The fake
    /// server's actors write only Ray's prefix: their driver adds its own as it forwards them.
    pub ray_driver_prefix: bool,
}

/// Bytes of one event and where its marked line starts.
#[derive(Clone, Debug, Default)]
pub struct Rendered {
    pub bytes: Vec<u8>,
    pub mark_offset: Option<usize>,
}

impl<'a> Renderer<'a> {
    /// The renderer for a scenario's environment — `NO_COLOR`, `VLLM_LOGGING_COLOR`,
    /// `VLLM_LOGGING_PREFIX`, `RAY_COLOR_PREFIX` — in `profile`'s formats. `ray_driver_prefix`:
    /// whether a Ray actor's lines carry the driver's prefix (the file's view) or only Ray's (an
    /// actor process of the fake server, whose driver adds its prefix as it forwards them).
    pub fn for_scenario(
        profile: &'a Profile,
        s: &crate::scenario::Scenario,
        ray_driver_prefix: bool,
    ) -> Renderer<'a> {
        Renderer {
            profile,
            no_color: s.no_color(),
            force_color: s.env.get("VLLM_LOGGING_COLOR").is_some_and(|v| v == "1"),
            logging_prefix: s
                .env
                .get("VLLM_LOGGING_PREFIX")
                .cloned()
                .unwrap_or_default(),
            ray_color: s.env.get("RAY_COLOR_PREFIX").is_none_or(|v| v != "0"),
            ray_driver_prefix,
        }
    }
}

impl Renderer<'_> {
    /// The `(NAME pid=N) ` prefix of a process, with the profile's colour rule. A Ray actor's
    /// lines carry the driver's prefix, then Ray's.
    pub fn prefix(&self, proc: &Proc) -> String {
        if let Some(ray) = &proc.ray {
            if !self.ray_driver_prefix {
                return self.ray_prefix(proc);
            }
            let driver = Proc {
                name: Some(ray.driver_name.clone()),
                pid: ray.driver_pid,
                role: String::new(),
                ray: None,
            };
            return format!("{}{}", self.prefix(&driver), self.ray_prefix(proc));
        }
        let Some(name) = &proc.name else {
            return String::new();
        };
        let colored = match self.profile.prefix_color {
            PrefixColor::BoldCyanAlways => {
                return format!("\x1b[1;36m({name} pid={})\x1b[0;0m ", proc.pid)
            }
            PrefixColor::CyanUnlessNoColor => !self.no_color,
            PrefixColor::CyanIfTty => !self.no_color && self.force_color,
        };
        if colored {
            format!("\x1b[0;36m({name} pid={})\x1b[0;0m ", proc.pid)
        } else {
            format!("({name} pid={}) ", proc.pid)
        }
    }

    /// Ray's own prefix of an actor's lines (`print_worker_logs`), cyan unless disabled.
    pub fn ray_prefix(&self, proc: &Proc) -> String {
        let name = proc.name.as_deref().unwrap_or("RayWorkerWrapper");
        let ip = proc
            .ray
            .as_ref()
            .and_then(|r| r.ip.as_ref())
            .map_or(String::new(), |ip| format!(", ip={ip}"));
        let inner = format!("({name} pid={}{ip})", proc.pid);
        if self.ray_color {
            format!("\x1b[36m{inner}\x1b[0m ")
        } else {
            format!("{inner} ")
        }
    }

    fn formatter_color(&self) -> bool {
        self.force_color
            && !self.no_color
            && self
                .profile
                .version
                .has(crate::release::Switch::LoggingColorEnv)
    }

    /// `LEVEL MM-DD HH:MM:SS [file:line] `.
    pub fn header(&self, level: &str, t: SimTime, file: &str, line: &str) -> String {
        let stamp = t.log_stamp();
        let loc = match self.profile.header {
            HeaderStyle::Bracket => format!("[{file}:{line}]"),
            HeaderStyle::Plain => format!("{file}:{line}]"),
        };
        if self.formatter_color() {
            let lc = match level {
                "DEBUG" => "\x1b[37m",
                "INFO" => "\x1b[32m",
                "WARNING" => "\x1b[33m",
                "ERROR" => "\x1b[31m",
                _ => "\x1b[35m",
            };
            format!(
                "{}{lc}{level}\x1b[0m \x1b[90m{stamp}\x1b[0m \x1b[90m{loc}\x1b[0m ",
                self.logging_prefix
            )
        } else {
            format!("{}{level} {stamp} {loc} ", self.logging_prefix)
        }
    }

    /// Render one event.
    pub fn render(&self, ev: &Event, proc: &Proc) -> Rendered {
        let prefix = if ev.prefixed {
            self.prefix(proc)
        } else {
            String::new()
        };
        let mut out = Rendered::default();
        match &ev.body {
            Body::Log {
                level,
                file,
                line,
                text,
            } => {
                let header = self.header(level, ev.t, file, line);
                let n = text.split('\n').count();
                for (i, l) in text.split('\n').enumerate() {
                    if ev.mark == Some(i) {
                        out.mark_offset = Some(out.bytes.len());
                    }
                    out.bytes.extend_from_slice(prefix.as_bytes());
                    out.bytes.extend_from_slice(header.as_bytes());
                    out.bytes.extend_from_slice(l.as_bytes());
                    if i + 1 < n {
                        out.bytes.extend_from_slice(b"\r\n");
                    } else {
                        out.bytes.push(b'\n');
                    }
                }
            }
            Body::Stream(text) | Body::Raw(text) => {
                let prefix = if matches!(ev.body, Body::Raw(_)) {
                    ""
                } else {
                    prefix.as_str()
                };
                for (i, l) in text.split_inclusive('\n').enumerate() {
                    if ev.mark == Some(i) {
                        out.mark_offset = Some(out.bytes.len());
                    }
                    out.bytes.extend_from_slice(prefix.as_bytes());
                    out.bytes.extend_from_slice(l.as_bytes());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::Version;

    #[test]
    fn multi_line_record_repeats_header_with_cr() {
        let p = Profile::for_version(Version::parse("0.15.1").unwrap());
        let r = Renderer {
            profile: p,
            no_color: true,
            force_color: false,
            logging_prefix: String::new(),
            ray_color: true,
            ray_driver_prefix: true,
        };
        let proc = Proc {
            name: Some("Worker_TP4".into()),
            pid: 7,
            role: "Worker4".into(),
            ray: None,
        };
        let ev = Event {
            t: SimTime::from_secs(0),
            proc: 0,
            prefixed: true,
            body: Body::Log {
                level: "ERROR".into(),
                file: "multiproc_executor.py".into(),
                line: "772".into(),
                text:
                    "WorkerProc failed to start.\nTraceback (most recent call last):\nValueError: x"
                        .into(),
            },
            mark: Some(2),
        };
        let out = r.render(&ev, &proc);
        let s = String::from_utf8(out.bytes.clone()).unwrap();
        let h = "(Worker_TP4 pid=7) ERROR 01-01 00:00:00 [multiproc_executor.py:772] ";
        assert_eq!(
            s,
            format!("{h}WorkerProc failed to start.\r\n{h}Traceback (most recent call last):\r\n{h}ValueError: x\n")
        );
        assert!(s[out.mark_offset.unwrap()..].starts_with(&format!("{h}ValueError")));
    }
}
