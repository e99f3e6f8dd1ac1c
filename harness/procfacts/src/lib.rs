//! What `/proc` says about a process: its start time, parent, group, session, command line and
//! the `/dev/shm` files it holds.
//!
//! Main type: [`ProcInfo`]. A pid alone names nothing for long (pids are reused); a pid with its
//! start time (clock ticks since boot, field 22 of `/proc/<pid>/stat`) names one process for
//! its whole life. The fake server records GPU users this way, and the launcher identifies the
//! processes it started this way before it signals anything.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A snapshot of one process from `/proc/<pid>/stat`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    /// `comm`, at most 15 bytes.
    pub comm: String,
    /// `R`, `S`, `D`, `Z` (zombie) …
    pub state: char,
    pub ppid: u32,
    pub pgid: u32,
    pub sid: u32,
    /// Clock ticks after boot at which the process started.
    pub start_time: u64,
}

impl ProcInfo {
    /// Reads `/proc/<pid>/stat`; `None` if the process does not exist (or is unreadable).
    pub fn read(pid: u32) -> Option<ProcInfo> {
        let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        ProcInfo::parse(pid, &text)
    }

    /// Parses the text of `/proc/<pid>/stat`. `comm` may contain spaces and parentheses, so the
    /// fields after it are found from the last `)`.
    pub fn parse(pid: u32, text: &str) -> Option<ProcInfo> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let comm = text.get(open + 1..close)?.to_string();
        let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        // rest[0] is field 3 (state); field N is rest[N - 3].
        let field = |n: usize| rest.get(n - 3).copied();
        Some(ProcInfo {
            pid,
            comm,
            state: field(3)?.chars().next()?,
            ppid: field(4)?.parse().ok()?,
            pgid: field(5)?.parse().ok()?,
            sid: field(6)?.parse().ok()?,
            start_time: field(22)?.parse().ok()?,
        })
    }

    /// Still running (a zombie has exited: it holds no memory and no files).
    pub fn alive(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// The process `pid` exists, is not a zombie, and started at `start_time`: the same process.
pub fn same_process(pid: u32, start_time: u64) -> bool {
    ProcInfo::read(pid).is_some_and(|p| p.alive() && p.start_time == start_time)
}

/// Every process visible in `/proc`.
pub fn all_processes() -> Vec<ProcInfo> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<ProcInfo> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(ProcInfo::read)
        .collect();
    out.sort_by_key(|p| p.pid);
    out
}

/// The command line of `pid`, arguments joined by spaces (empty if gone or a kernel thread).
pub fn cmdline(pid: u32) -> String {
    let Ok(raw) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return String::new();
    };
    raw.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Files under `dir` (e.g. `/dev/shm`) that `pid` holds open or has mapped.
pub fn files_held_under(pid: u32, dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    if let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.filter_map(|e| e.ok()) {
            if let Ok(target) = fs::read_link(fd.path()) {
                if target.starts_with(dir) {
                    out.insert(strip_deleted(target));
                }
            }
        }
    }
    if let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) {
        for line in maps.lines() {
            // address perms offset dev inode pathname
            if let Some(path) = line.split_whitespace().nth(5) {
                let p = Path::new(path);
                if p.starts_with(dir) {
                    out.insert(strip_deleted(p.to_path_buf()));
                }
            }
        }
    }
    out
}

/// Whether `pid` started with `key=value` in its environment (readable for own processes).
pub fn environ_has(pid: u32, key: &str, value: &str) -> bool {
    let Ok(raw) = fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{key}={value}");
    raw.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
}

/// Pids of processes with a listening TCP socket on `port` (IPv4 or IPv6, any address).
/// Sockets of other users' processes are found in the tables but their pids stay hidden.
pub fn listeners_on(port: u16) -> (bool, Vec<u32>) {
    let mut inodes = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let listening = *state == "0A";
            let p = local
                .rsplit(':')
                .next()
                .and_then(|h| u16::from_str_radix(h, 16).ok());
            if listening && p == Some(port) {
                inodes.insert(format!("socket:[{inode}]"));
            }
        }
    }
    if inodes.is_empty() {
        return (false, Vec::new());
    }
    let mut pids = Vec::new();
    for p in all_processes() {
        let Ok(fds) = fs::read_dir(format!("/proc/{}/fd", p.pid)) else {
            continue;
        };
        let holds = fds.filter_map(|e| e.ok()).any(|fd| {
            fs::read_link(fd.path())
                .ok()
                .and_then(|t| t.to_str().map(|s| inodes.contains(s)))
                .unwrap_or(false)
        });
        if holds {
            pids.push(p.pid);
        }
    }
    (true, pids)
}

fn strip_deleted(p: PathBuf) -> PathBuf {
    match p.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
        Some(s) => PathBuf::from(s),
        None => p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comm_with_spaces_and_parens() {
        let stat = "4242 (python3 (x) y) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 1 18446744073709551615";
        let p = ProcInfo::parse(4242, stat).unwrap();
        assert_eq!(p.comm, "python3 (x) y");
        assert_eq!((p.ppid, p.pgid, p.sid), (1, 4242, 4242));
        assert_eq!(p.start_time, 987654);
        assert!(p.alive());
    }

    #[test]
    fn reads_own_process() {
        let me = ProcInfo::read(std::process::id()).unwrap();
        assert!(me.alive());
        assert!(same_process(me.pid, me.start_time));
        assert!(!same_process(me.pid, me.start_time + 1));
        assert!(!cmdline(me.pid).is_empty());
        assert!(environ_has(me.pid, "PATH", &std::env::var("PATH").unwrap()));
        assert!(!environ_has(me.pid, "FAULTKIT_NO_SUCH_VARIABLE", "1"));
    }

    #[test]
    fn finds_the_listener_of_a_port() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (listening, pids) = listeners_on(port);
        assert!(listening);
        assert_eq!(pids, vec![std::process::id()]);
        drop(l);
        assert!(!listeners_on(port).0);
    }
}
