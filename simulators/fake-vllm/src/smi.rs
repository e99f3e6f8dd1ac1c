//! `nvidia-smi` over the fake GPU state: the table view, `-L`, and the CSV query forms that
//! launch scripts use (`--query-gpu=…`, `--query-compute-apps=…` with `--format=csv[,noheader][,nounits]`,
//! `-i`/`--id` to pick GPUs).

use std::path::PathBuf;

use super::gpu::{CsvFormat, GpuState};
use super::{default_gpu_state, parse_gpus, ENV_GPUS, ENV_GPU_STATE};
use crate::clock;

/// Runs `nvidia-smi ARGS`; returns the exit code (2 for bad arguments, 9 when the state is
/// unreadable, as nvidia-smi does when it cannot talk to the driver).
pub fn main(args: &[String]) -> i32 {
    let path = std::env::var_os(ENV_GPU_STATE)
        .map(PathBuf::from)
        .unwrap_or_else(default_gpu_state);
    let state = match GpuState::load(&path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let (spec, count) = match std::env::var(ENV_GPUS) {
                Ok(v) => match parse_gpus(&v) {
                    Ok(x) => x,
                    Err(e) => {
                        eprintln!("{e}");
                        return 2;
                    }
                },
                Err(_) => (
                    generator::catalog::gpu("h100").expect("h100 is in the catalog"),
                    8,
                ),
            };
            GpuState::new(&spec.id, count)
        }
        Err(e) => {
            println!("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. ({e})");
            return 9;
        }
    };
    match run(&state, args) {
        Ok(out) => {
            print!("{out}");
            0
        }
        Err(msg) => {
            println!("{msg}");
            2
        }
    }
}

fn run(state: &GpuState, args: &[String]) -> Result<String, String> {
    let mut query_gpu: Option<String> = None;
    let mut query_apps: Option<String> = None;
    let mut format: Option<String> = None;
    let mut ids: Option<Vec<u32>> = None;
    let mut list = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("Option \"{name}\" requires a value."))
        };
        match key {
            "--query-gpu" => query_gpu = Some(value(key)?),
            "--query-compute-apps" => query_apps = Some(value(key)?),
            "--format" => format = Some(value(key)?),
            "-i" | "--id" => {
                let v = value(key)?;
                let parsed: Result<Vec<u32>, _> = v.split(',').map(|x| x.trim().parse()).collect();
                ids = Some(parsed.map_err(|_| format!("Invalid GPU index \"{v}\"."))?);
            }
            "-L" | "--list-gpus" => list = true,
            "-h" | "--help" => return Ok(HELP.to_string()),
            "--version" => {
                return Ok(format!(
                    "NVIDIA-SMI version  : {}\nDriver Version     : {}\nCUDA Version       : {}\n",
                    super::gpu::DRIVER_VERSION,
                    super::gpu::DRIVER_VERSION,
                    super::gpu::CUDA_VERSION
                ))
            }
            _ => return Err(invalid()),
        }
    }
    let mut view = state.clone();
    if let Some(ids) = &ids {
        if ids.iter().any(|&i| i >= state.count) {
            return Err("No devices were found".to_string());
        }
        // A GPU subset keeps its indices; the views below read `count` GPUs from 0, so
        // restrict by filtering rows afterwards.
        view.users.retain(|u| ids.contains(&u.gpu));
    }
    let keep_row = |i: u32| ids.as_ref().is_none_or(|ids| ids.contains(&i));
    if list {
        let name = state.spec().map_or("NVIDIA GPU", |g| g.name.as_str());
        let gpu = state.query_gpu(
            &["uuid"],
            CsvFormat {
                header: false,
                units: true,
            },
        )?;
        return Ok(gpu
            .lines()
            .enumerate()
            .filter(|(i, _)| keep_row(*i as u32))
            .map(|(i, uuid)| format!("GPU {i}: {name} (UUID: {uuid})\n"))
            .collect());
    }
    match (query_gpu, query_apps) {
        (Some(_), Some(_)) => Err(invalid()),
        (Some(q), None) => {
            let fmt = CsvFormat::parse(format.as_deref().ok_or_else(missing_format)?)?;
            let fields: Vec<&str> = q.split(',').map(str::trim).collect();
            let out = view.query_gpu(&fields, fmt)?;
            let skip = usize::from(fmt.header);
            Ok(out
                .lines()
                .enumerate()
                .filter(|(n, _)| *n < skip || keep_row((n - skip) as u32))
                .map(|(_, l)| format!("{l}\n"))
                .collect())
        }
        (None, Some(q)) => {
            let fmt = CsvFormat::parse(format.as_deref().ok_or_else(missing_format)?)?;
            let fields: Vec<&str> = q.split(',').map(str::trim).collect();
            view.query_apps(&fields, fmt)
        }
        (None, None) if format.is_some() => Err(invalid()),
        (None, None) => Ok(view.table(clock::wall_now())),
    }
}

fn invalid() -> String {
    "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.".to_string()
}

fn missing_format() -> String {
    "--format must be specified with --query-gpu / --query-compute-apps (e.g. --format=csv)"
        .to_string()
}

const HELP: &str = "NVIDIA System Management Interface -- faultkit's fake, over a GPU state file.

    nvidia-smi                       the table view
    nvidia-smi -L                    list GPUs
    nvidia-smi --query-gpu=index,name,compute_cap,memory.used,memory.total,memory.free,uuid,pci.bus_id,utilization.gpu --format=csv[,noheader][,nounits]
    nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_bus_id --format=csv[,noheader][,nounits]
    -i, --id=ID[,ID…]                only these GPUs

The state file is $FAULTKIT_GPU_STATE; without one, $FAULTKIT_GPUS (e.g. 8xh100) names the GPUs.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn query_forms() {
        let st = GpuState::new("h200", 2);
        assert_eq!(
            run(
                &st,
                &args("--query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits")
            )
            .unwrap(),
            "0, 0, 143771\n1, 0, 143771\n"
        );
        assert_eq!(
            run(&st, &args("--query-gpu=index,name --format=csv -i 1")).unwrap(),
            "index, name\n1, NVIDIA H200\n"
        );
        assert_eq!(
            run(
                &st,
                &args("--query-compute-apps=pid,used_memory --format=csv")
            )
            .unwrap(),
            "pid, used_gpu_memory [MiB]\n"
        );
        assert!(run(&st, &args("-L"))
            .unwrap()
            .starts_with("GPU 0: NVIDIA H200 (UUID: GPU-"));
        assert!(run(&st, &args("--bogus")).is_err());
        assert!(run(&st, &args("--query-gpu=index")).is_err());
        assert!(run(&st, &args("--query-gpu=nope --format=csv"))
            .unwrap_err()
            .contains("not a valid field"));
        assert!(run(&st, &args("-i 7")).is_err());
    }
}
