//! The simulated GPUs of one host: a JSON state file shared by `fake-vllm` and
//! `fake-nvidia-smi`, and the `nvidia-smi` views of it.
//!
//! Main types: [`GpuState`] (inventory plus the processes that hold memory) and [`GpuUser`]. A
//! user is a (pid, start time) pair: memory held by a process that has exited — or whose pid
//! now names another process — is free again, exactly as the driver frees a dead context. So
//! `kill -9` of a worker frees its GPU; a worker that survives its API server keeps its memory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use generator::catalog::{self, GpuSpec};
use generator::clock::SimTime;

/// The driver the table view reports (as in a real capture).
pub const DRIVER_VERSION: &str = "580.159.04";
pub const CUDA_VERSION: &str = "13.0";

/// The state file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GpuState {
    /// A GPU id from the catalog (`h100`, `rtx-pro-6000-blackwell`).
    pub model: String,
    pub count: u32,
    #[serde(default)]
    pub users: Vec<GpuUser>,
}

/// Memory one process holds on one GPU.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct GpuUser {
    pub gpu: u32,
    pub pid: u32,
    pub start_time: u64,
    pub used_mib: u64,
    pub name: String,
}

impl GpuState {
    pub fn new(model: &str, count: u32) -> GpuState {
        GpuState {
            model: model.to_string(),
            count,
            users: Vec::new(),
        }
    }

    pub fn spec(&self) -> Option<&'static GpuSpec> {
        catalog::gpu(&self.model)
    }

    /// Users whose process is still the one that registered.
    pub fn live_users(&self) -> Vec<&GpuUser> {
        self.users
            .iter()
            .filter(|u| procfacts::same_process(u.pid, u.start_time))
            .collect()
    }

    /// MiB in use on `gpu` by live processes.
    pub fn used_mib(&self, gpu: u32) -> u64 {
        self.live_users()
            .iter()
            .filter(|u| u.gpu == gpu)
            .map(|u| u.used_mib)
            .sum()
    }

    /// Reads the state file.
    pub fn load(path: &Path) -> io::Result<GpuState> {
        let text = fs::read_to_string(path)?;
        serde_json::from_str(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })
    }

    /// Writes the state file atomically (write a sibling, rename over).
    pub fn store(&self, path: &Path) -> io::Result<()> {
        let tmp = sibling(path, &format!("tmp.{}", std::process::id()));
        let mut f = File::create(&tmp)?;
        f.write_all(serde_json::to_string_pretty(self)?.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    }

    /// Read-modify-write under an exclusive lock on `<path>.lock`; drops dead users.
    pub fn update(path: &Path, f: impl FnOnce(&mut GpuState)) -> io::Result<GpuState> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(sibling(path, "lock"))?;
        lock.lock()?;
        let mut state = GpuState::load(path)?;
        state
            .users
            .retain(|u| procfacts::same_process(u.pid, u.start_time));
        f(&mut state);
        state.store(path)?;
        Ok(state)
    }

    /// `nvidia-smi` without arguments.
    pub fn table(&self, now: SimTime) -> String {
        let mut s = String::new();
        let spec = self.spec();
        let name = spec.map_or("NVIDIA GPU", |g| g.name.as_str());
        let total = spec.map_or(81_559, |g| g.memory_mib);
        let power = spec.map_or(300, |g| g.power_w);
        let bus = spec.map_or(6, |g| g.bus_base);
        let sep = "+-----------------------------------------+------------------------+----------------------+";
        s.push_str(&format!("{:<31}\n", now.ctime()));
        s.push_str("+-----------------------------------------------------------------------------------------+\n");
        s.push_str(&format!(
            "| NVIDIA-SMI {DRIVER_VERSION}             Driver Version: {DRIVER_VERSION}     CUDA Version: {CUDA_VERSION}     |\n"
        ));
        s.push_str(sep);
        s.push('\n');
        s.push_str("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n");
        s.push_str("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n");
        s.push_str("|                                         |                        |               MIG M. |\n");
        s.push_str("|=========================================+========================+======================|\n");
        for i in 0..self.count {
            let used = self.used_mib(i);
            let busy = used > 0;
            let short: String = name.chars().take(28).collect();
            s.push_str(&format!(
                "| {i:>3}  {short:<30} On  |   {} Off |                    0 |\n",
                bus_id(bus, i)
            ));
            let temp = if busy { 52 } else { 36 + i % 5 };
            let watts = if busy { power / 3 } else { power / 6 };
            let mem = format!("{used}MiB / {total}MiB");
            s.push_str(&format!(
                "| N/A   {temp:>2}C    P0{watts:>15}W / {power:>4}W | {mem:>22} | {:>6}%      Default |\n",
                if busy { 3 } else { 0 }
            ));
            s.push_str("|                                         |                        |             Disabled |\n");
            s.push_str(sep);
            s.push('\n');
        }
        s.push('\n');
        s.push_str("+-----------------------------------------------------------------------------------------+\n");
        s.push_str("| Processes:                                                                              |\n");
        s.push_str("|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n");
        s.push_str("|        ID   ID                                                               Usage      |\n");
        s.push_str("|=========================================================================================|\n");
        let users = self.live_users();
        if users.is_empty() {
            s.push_str("|  No running processes found                                                             |\n");
        }
        for u in users {
            let name: String = u.name.chars().take(34).collect();
            s.push_str(&format!(
                "|  {:>3}   N/A  N/A  {:>15}      C   {name:<34} {:>8}MiB |\n",
                u.gpu, u.pid, u.used_mib
            ));
        }
        s.push_str("+-----------------------------------------------------------------------------------------+\n");
        s
    }

    /// `--query-gpu=FIELDS --format=csv[,noheader][,nounits]`.
    pub fn query_gpu(&self, fields: &[&str], fmt: CsvFormat) -> Result<String, String> {
        let spec = self.spec();
        let total = spec.map_or(81_559, |g| g.memory_mib);
        let mut out = String::new();
        if fmt.header {
            let names: Result<Vec<String>, String> = fields
                .iter()
                .map(|f| gpu_field_header(f, fmt.units))
                .collect();
            out.push_str(&names?.join(", "));
            out.push('\n');
        }
        for i in 0..self.count {
            let used = self.used_mib(i);
            let mib = |v: u64| {
                if fmt.units {
                    format!("{v} MiB")
                } else {
                    v.to_string()
                }
            };
            let row: Result<Vec<String>, String> = fields
                .iter()
                .map(|f| {
                    Ok(match *f {
                        "index" => i.to_string(),
                        "name" => spec.map_or("NVIDIA GPU".into(), |g| g.name.clone()),
                        "compute_cap" => spec.map_or("0.0".into(), |g| {
                            format!("{}.{}", g.capability[0], g.capability[1])
                        }),
                        "memory.used" => mib(used),
                        "memory.total" => mib(total),
                        "memory.free" => mib(total.saturating_sub(used)),
                        "uuid" => gpu_uuid(&self.model, i),
                        "pci.bus_id" => bus_id(spec.map_or(6, |g| g.bus_base), i),
                        "utilization.gpu" => {
                            if fmt.units {
                                "0 %".into()
                            } else {
                                "0".into()
                            }
                        }
                        other => return Err(invalid_field(other)),
                    })
                })
                .collect();
            out.push_str(&row?.join(", "));
            out.push('\n');
        }
        Ok(out)
    }

    /// `--query-compute-apps=FIELDS --format=csv[,noheader][,nounits]`.
    pub fn query_apps(&self, fields: &[&str], fmt: CsvFormat) -> Result<String, String> {
        let mut out = String::new();
        if fmt.header {
            let names: Result<Vec<String>, String> = fields
                .iter()
                .map(|f| {
                    Ok(match *f {
                        "pid" => "pid".to_string(),
                        "process_name" | "name" => "process_name".to_string(),
                        "used_memory" | "used_gpu_memory" => if fmt.units {
                            "used_gpu_memory [MiB]"
                        } else {
                            "used_gpu_memory"
                        }
                        .to_string(),
                        "gpu_uuid" => "gpu_uuid".to_string(),
                        "gpu_bus_id" => "gpu_bus_id".to_string(),
                        other => return Err(invalid_field(other)),
                    })
                })
                .collect();
            out.push_str(&names?.join(", "));
            out.push('\n');
        }
        let bus = self.spec().map_or(6, |g| g.bus_base);
        for u in self.live_users() {
            let row: Result<Vec<String>, String> = fields
                .iter()
                .map(|f| {
                    Ok(match *f {
                        "pid" => u.pid.to_string(),
                        "process_name" | "name" => u.name.clone(),
                        "used_memory" | "used_gpu_memory" => {
                            if fmt.units {
                                format!("{} MiB", u.used_mib)
                            } else {
                                u.used_mib.to_string()
                            }
                        }
                        "gpu_uuid" => gpu_uuid(&self.model, u.gpu),
                        "gpu_bus_id" => bus_id(bus, u.gpu),
                        other => return Err(invalid_field(other)),
                    })
                })
                .collect();
            out.push_str(&row?.join(", "));
            out.push('\n');
        }
        Ok(out)
    }
}

/// The `--format=csv,…` options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsvFormat {
    pub header: bool,
    pub units: bool,
}

impl CsvFormat {
    /// Parses `csv`, `csv,noheader`, `csv,noheader,nounits` …
    pub fn parse(s: &str) -> Result<CsvFormat, String> {
        let mut parts = s.split(',').map(str::trim);
        if parts.next() != Some("csv") {
            return Err(format!("\"{s}\" is not a valid format."));
        }
        let mut f = CsvFormat {
            header: true,
            units: true,
        };
        for p in parts {
            match p {
                "noheader" => f.header = false,
                "nounits" => f.units = false,
                other => return Err(format!("\"{other}\" is not a valid format option.")),
            }
        }
        Ok(f)
    }
}

fn gpu_field_header(f: &str, units: bool) -> Result<String, String> {
    let u = |name: &str, unit: &str| {
        if units {
            format!("{name} [{unit}]")
        } else {
            name.to_string()
        }
    };
    Ok(match f {
        "index" | "name" | "compute_cap" | "uuid" | "pci.bus_id" => f.to_string(),
        "memory.used" | "memory.total" | "memory.free" => u(f, "MiB"),
        "utilization.gpu" => u(f, "%"),
        other => return Err(invalid_field(other)),
    })
}

fn invalid_field(f: &str) -> String {
    format!("Field \"{f}\" is not a valid field to query.")
}

fn bus_id(base: u32, i: u32) -> String {
    format!("00000000:00:{:02X}.0", base + i)
}

fn gpu_uuid(model: &str, i: u32) -> String {
    let h = model
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
        .wrapping_add(u64::from(i));
    format!(
        "GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xffff,
        (h >> 48) & 0xffff,
        h & 0xffff_ffff_ffff
    )
}

fn sibling(path: &Path, ext: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with_me(used: u64) -> GpuState {
        let me = procfacts::ProcInfo::read(std::process::id()).unwrap();
        let mut s = GpuState::new("h200", 2);
        s.users.push(GpuUser {
            gpu: 1,
            pid: me.pid,
            start_time: me.start_time,
            used_mib: used,
            name: "python3".into(),
        });
        // A dead registration: pid 1 never has this start time.
        s.users.push(GpuUser {
            gpu: 0,
            pid: 1,
            start_time: u64::MAX,
            used_mib: 999,
            name: "python3".into(),
        });
        s
    }

    #[test]
    fn table_matches_real_layout() {
        let s = GpuState::new("h200", 2);
        let t = s.table(SimTime::from_secs(1_795_989_630));
        let real = include_str!("../../../scenarios/real/corpus-gpu/nvidia-smi.txt");
        // Same frame, line for line, up to the power and temperature readings.
        for (a, b) in t.lines().zip(real.lines()).take(9) {
            assert_eq!(a.trim_end(), b.trim_end());
        }
        assert!(t.contains("No running processes found"));
        for l in t
            .lines()
            .skip(1)
            .filter(|l| l.starts_with('|') || l.starts_with('+'))
        {
            assert_eq!(l.chars().count(), 91, "{l:?}");
        }
    }

    #[test]
    fn dead_users_hold_nothing() {
        let s = state_with_me(70_000);
        assert_eq!(s.used_mib(0), 0);
        assert_eq!(s.used_mib(1), 70_000);
        let csv = s
            .query_gpu(
                &["index", "memory.used", "memory.total"],
                CsvFormat::parse("csv,noheader,nounits").unwrap(),
            )
            .unwrap();
        assert_eq!(csv, "0, 0, 143771\n1, 70000, 143771\n");
        let apps = s
            .query_apps(&["pid", "used_memory"], CsvFormat::parse("csv").unwrap())
            .unwrap();
        assert_eq!(
            apps,
            format!(
                "pid, used_gpu_memory [MiB]\n{}, 70000 MiB\n",
                std::process::id()
            )
        );
        assert!(s
            .query_gpu(&["bogus"], CsvFormat::parse("csv").unwrap())
            .is_err());
    }
}
