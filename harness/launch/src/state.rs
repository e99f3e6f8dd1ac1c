//! The launcher's state directory: one record per launch, the per-launch logs, and the lock
//! that makes concurrent `launch` calls start exactly one server.
//!
//! Layout: `<state>/launches/<id>.json` (a [`Record`]), `<state>/current` (the id of the newest
//! launch), `<state>/logs/<UTC time>-<id>.log` and `<state>/logs/latest.log` (a link to it),
//! `<state>/lock`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Schema name of a record.
pub const RECORD_SCHEMA: &str = "faultkit.launch-record/1";
/// The environment variable every process of a launch inherits; with the start time it is how
/// the launcher recognises its own processes.
pub const LAUNCH_ID_ENV: &str = "FAULTKIT_LAUNCH_ID";

/// What the launcher remembers about one launch.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub schema: String,
    pub id: String,
    pub argv: Vec<String>,
    /// The process faultkit started (session and group leader).
    pub pid: u32,
    /// Its start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
    /// Unix seconds.
    pub started_at: u64,
    pub log: PathBuf,
    pub port: u16,
    pub health_url: String,
    /// `/dev/shm` entries that existed before the launch: never removed by it.
    pub shm_before: Vec<String>,
    /// `/dev/shm` entries seen held by the launch's processes.
    #[serde(default)]
    pub shm_seen: Vec<String>,
    /// `ready`, `crashed`, `hung`, `timeout`, `interrupted`, `stopped`, `starting`.
    pub state: String,
    /// Environment the server got on top of faultkit's (also used for its nvidia-smi checks).
    #[serde(default)]
    pub env: Vec<(String, String)>,
}

/// An open state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    pub root: PathBuf,
}

/// Held while a launch or stop works on the state directory.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl StateDir {
    /// `--state-dir`, else `$FAULTKIT_STATE_DIR`, else `$XDG_STATE_HOME/faultkit`, else
    /// `~/.local/state/faultkit`.
    pub fn resolve(explicit: Option<&Path>) -> io::Result<StateDir> {
        let root = if let Some(p) = explicit {
            p.to_path_buf()
        } else if let Some(p) = std::env::var_os("FAULTKIT_STATE_DIR").filter(|v| !v.is_empty()) {
            PathBuf::from(p)
        } else if let Some(p) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            PathBuf::from(p).join("faultkit")
        } else if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            PathBuf::from(h).join(".local/state/faultkit")
        } else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no state directory: set --state-dir, FAULTKIT_STATE_DIR or HOME",
            ));
        };
        fs::create_dir_all(root.join("launches"))?;
        fs::create_dir_all(root.join("logs"))?;
        Ok(StateDir { root })
    }

    /// Takes the lock without waiting; `Ok(None)` when another faultkit holds it.
    pub fn try_lock(&self) -> io::Result<Option<Lock>> {
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(self.root.join("lock"))?;
        match f.try_lock() {
            Ok(()) => {
                f.set_len(0)?;
                let _ = writeln!(f, "{}", std::process::id());
                Ok(Some(Lock { _file: f }))
            }
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// The pid written by the holder of the lock (for the error message).
    pub fn lock_holder(&self) -> Option<u32> {
        fs::read_to_string(self.root.join("lock"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    pub fn record_path(&self, id: &str) -> PathBuf {
        self.root.join("launches").join(format!("{id}.json"))
    }

    pub fn save(&self, r: &Record) -> io::Result<()> {
        let path = self.record_path(&r.id);
        let tmp = path.with_extension("json.tmp");
        fs::write(&tmp, serde_json::to_string_pretty(r)?)?;
        fs::rename(&tmp, &path)?;
        fs::write(self.root.join("current"), format!("{}\n", r.id))
    }

    pub fn load(&self, id: &str) -> io::Result<Record> {
        let text = fs::read_to_string(self.record_path(id))?;
        serde_json::from_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// The newest launch, if any.
    pub fn current(&self) -> Option<Record> {
        let id = fs::read_to_string(self.root.join("current")).ok()?;
        self.load(id.trim()).ok()
    }

    /// Every record, oldest first.
    pub fn all(&self) -> Vec<Record> {
        let Ok(dir) = fs::read_dir(self.root.join("launches")) else {
            return Vec::new();
        };
        let mut out: Vec<Record> = dir
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| fs::read_to_string(e.path()).ok())
            .filter_map(|t| serde_json::from_str(&t).ok())
            .collect();
        out.sort_by(|a: &Record, b| (a.started_at, &a.id).cmp(&(b.started_at, &b.id)));
        out
    }

    /// A new log file for launch `id`, and `latest.log` pointing at it.
    pub fn new_log(&self, id: &str, stamp: &str) -> io::Result<(PathBuf, File)> {
        let name = format!("{stamp}-{id}.log");
        let path = self.root.join("logs").join(&name);
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)?;
        let latest = self.root.join("logs").join("latest.log");
        let tmp = self.root.join("logs").join(format!(".latest.{id}"));
        let _ = fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&name, &tmp)?;
        fs::rename(&tmp, &latest)?;
        Ok((path, file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_lock_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let st = StateDir::resolve(Some(dir.path())).unwrap();
        let lock = st.try_lock().unwrap().expect("free");
        // flock locks belong to the open file description: a second open conflicts.
        assert!(st.try_lock().unwrap().is_none());
        assert_eq!(st.lock_holder(), Some(std::process::id()));
        drop(lock);
        assert!(st.try_lock().unwrap().is_some());

        let (log, _f) = st.new_log("abc", "20261130T000000Z").unwrap();
        let r = Record {
            schema: RECORD_SCHEMA.into(),
            id: "abc".into(),
            argv: vec!["vllm".into(), "serve".into()],
            pid: 1,
            start_time: 2,
            started_at: 3,
            log: log.clone(),
            port: 8000,
            health_url: "http://127.0.0.1:8000/health".into(),
            shm_before: vec![],
            shm_seen: vec![],
            state: "starting".into(),
            env: vec![],
        };
        st.save(&r).unwrap();
        assert_eq!(st.current(), Some(r.clone()));
        assert_eq!(st.all(), vec![r]);
        let latest = st.root.join("logs/latest.log");
        assert_eq!(
            fs::canonicalize(latest).unwrap(),
            fs::canonicalize(log).unwrap()
        );
    }
}
