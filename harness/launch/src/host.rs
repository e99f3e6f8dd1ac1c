//! Is the host free for a launch? The port nobody listens on, GPUs with the memory the server
//! will ask for. Holders are listed (pid, command, memory) so the user can act; faultkit never
//! touches processes it did not start.
//!
//! Main type: [`Holder`].

use std::process::{Command, Stdio};

use serde::Serialize;

/// A process (or an unknown one) holding what a launch needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Holder {
    /// `port 8000`, `GPU 3`.
    pub resource: String,
    /// `None` when the holder is not visible (another user's process).
    pub pid: Option<u32>,
    pub command: String,
    pub memory_mib: Option<u64>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            Some(p) => write!(f, "{}: pid {p}", self.resource)?,
            None => write!(f, "{}: a process not visible to this user", self.resource)?,
        }
        if let Some(m) = self.memory_mib {
            write!(f, ", {m} MiB")?;
        }
        if !self.command.is_empty() {
            write!(f, ", {}", triage::render::escape_control(&self.command))?;
        }
        Ok(())
    }
}

/// Who listens on `port` (empty: free).
pub fn port_holders(port: u16) -> Vec<Holder> {
    let (listening, pids) = procfacts::listeners_on(port);
    if !listening {
        return Vec::new();
    }
    if pids.is_empty() {
        return vec![Holder {
            resource: format!("port {port}"),
            pid: None,
            command: String::new(),
            memory_mib: None,
        }];
    }
    pids.into_iter()
        .map(|pid| Holder {
            resource: format!("port {port}"),
            pid: Some(pid),
            command: procfacts::cmdline(pid),
            memory_mib: None,
        })
        .collect()
}

/// GPUs among `indices` on which others already use more than `(1 − utilization)` of the
/// memory — vLLM's own start-up check would fail there — with the processes on them. Empty
/// when the GPUs are free enough or nvidia-smi is not available.
pub fn gpu_holders(indices: &[u32], utilization: f64, env: &[(String, String)]) -> Vec<Holder> {
    let Some(gpus) = smi(
        env,
        &["--query-gpu=index,pci.bus_id,memory.used,memory.total"],
    ) else {
        return Vec::new();
    };
    let mut short: Vec<(u32, String)> = Vec::new();
    for row in &gpus {
        let (Some(i), Some(bus), Some(used), Some(total)) = (
            row.first().and_then(|v| v.parse::<u32>().ok()),
            row.get(1),
            row.get(2).and_then(|v| v.parse::<f64>().ok()),
            row.get(3).and_then(|v| v.parse::<f64>().ok()),
        ) else {
            continue;
        };
        if indices.contains(&i) && total - used < utilization * total {
            short.push((i, bus.clone()));
        }
    }
    if short.is_empty() {
        return Vec::new();
    }
    let apps = smi(env, &["--query-compute-apps=pid,used_memory,gpu_bus_id"]).unwrap_or_default();
    let mut out = Vec::new();
    for (i, bus) in short {
        let mut any = false;
        for a in apps.iter().filter(|a| a.get(2) == Some(&bus)) {
            let pid = a.first().and_then(|p| p.parse().ok());
            any = true;
            out.push(Holder {
                resource: format!("GPU {i}"),
                pid,
                command: pid.map(procfacts::cmdline).unwrap_or_default(),
                memory_mib: a.get(1).and_then(|m| m.parse().ok()),
            });
        }
        if !any {
            out.push(Holder {
                resource: format!("GPU {i}"),
                pid: None,
                command: String::new(),
                memory_mib: None,
            });
        }
    }
    out
}

/// `nvidia-smi` as the server would find it: on the `PATH` of its environment.
pub fn smi_command(env: &[(String, String)]) -> Command {
    let mut c = Command::new("nvidia-smi");
    c.envs(env.iter().map(|(k, v)| (k, v)));
    c
}

/// Runs nvidia-smi with a CSV query; rows of trimmed fields.
fn smi(env: &[(String, String)], query: &[&str]) -> Option<Vec<Vec<String>>> {
    let out = smi_command(env)
        .args(query)
        .arg("--format=csv,noheader,nounits")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
            .collect(),
    )
}
