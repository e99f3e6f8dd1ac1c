//! Facts of the machine a scenario runs on that its configuration does not show: RAM,
//! `/dev/shm`, ports in use, missing modules, the platform (CUDA or the CPU platform), nodes,
//! the Python installation. Read by the scenario's validation and by the release profiles
//! (which derive paths and platform texts from them).

/// Facts of the host that configuration alone does not show.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// Host RAM; loading weights beyond it gets the process killed by the OOM killer.
    pub ram_gib: Option<f64>,
    /// Size of /dev/shm (docker's default is 64 MiB).
    pub shm_mib: Option<u64>,
    pub ports_in_use: Vec<u16>,
    pub missing_modules: Vec<String>,
    pub nccl: Option<NcclFault>,
    /// `cpu`: no GPU, vLLM's CPU platform plugin (realism captures).
    pub platform: Platform,
    /// Machines the GPUs are spread over (a Ray cluster when more than one).
    pub nodes: u32,
    /// The platform plugin's entry point (`name = module:attr`) for `cpu-plugin`.
    pub platform_plugin: (String, String),
    /// Physical cores and NUMA nodes the CPU platform sees.
    pub cpus: u32,
    pub numa_nodes: u32,
    /// The widest vector extensions of the CPU platform's processor: which of vLLM's CPU kernel
    /// libraries it imports (and names when that fails).
    pub cpu_isa: CpuIsa,
    /// Hard limit of open files (`ulimit -Hn`); below 65535 the API server warns.
    pub ulimit_nofile: Option<u64>,
    /// The Python installation vLLM runs in.
    pub install: Install,
    /// The installed transformers release (`None`: the one of the version profile's era).
    pub transformers: Option<(u32, u32)>,
}

/// An x86 processor's widest vector extensions, as vLLM's CPU platform tells them apart
/// (`CpuPlatform.import_kernels`, vllm/platforms/cpu.py): AVX-512 with BF16 loads `vllm._C`,
/// AVX-512 without it `vllm._C_AVX512`, anything else `vllm._C_AVX2`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CpuIsa {
    #[default]
    Avx2,
    Avx512,
    Avx512Bf16,
}

impl CpuIsa {
    pub const NAMES: [&'static str; 3] = ["avx2", "avx512", "avx512_bf16"];

    pub fn parse(s: &str) -> Option<CpuIsa> {
        match s {
            "avx2" => Some(CpuIsa::Avx2),
            "avx512" => Some(CpuIsa::Avx512),
            "avx512_bf16" => Some(CpuIsa::Avx512Bf16),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The kernel module vLLM's CPU platform imports on this processor.
    pub fn kernel_module(self) -> &'static str {
        match self {
            CpuIsa::Avx2 => "vllm._C_AVX2",
            CpuIsa::Avx512 => "vllm._C_AVX512",
            CpuIsa::Avx512Bf16 => "vllm._C",
        }
    }
}

/// Where vLLM is installed: the interpreter and the environment. `None` fields keep the version
/// profile's own (a container image's system Python).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Install {
    /// `3.11`: decides stdlib and uvloop frames, comprehension frames and carets.
    pub python: Option<(u32, u32)>,
    /// The interpreter's prefix (`/home/.pyenv/versions/3.11.7`); stdlib is `<home>/lib/pythonX.Y`.
    pub python_home: Option<String>,
    /// A virtualenv vLLM was pip-installed into; `{vllm}` stands for the release.
    pub venv: Option<String>,
}

/// The CPU platform plugin of the lab captures (`vllm-lab-cpu-plugin`).
pub const DEFAULT_PLATFORM_PLUGIN: (&str, &str) = ("lab_cpu", "vllm_lab_cpu_plugin:register");

impl Default for Host {
    fn default() -> Host {
        Host {
            ram_gib: None,
            shm_mib: None,
            ports_in_use: Vec::new(),
            missing_modules: Vec::new(),
            nccl: None,
            platform: Platform::default(),
            nodes: 1,
            platform_plugin: (
                DEFAULT_PLATFORM_PLUGIN.0.to_string(),
                DEFAULT_PLATFORM_PLUGIN.1.to_string(),
            ),
            cpus: 8,
            numa_nodes: 1,
            cpu_isa: CpuIsa::default(),
            ulimit_nofile: None,
            install: Install::default(),
            transformers: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Platform {
    #[default]
    Cuda,
    /// vLLM's CUDA wheel running on a CPU-only host through the CPU platform plugin.
    CpuPlugin,
    /// No GPU and no plugin: "Failed to infer device type".
    CpuNoPlugin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcclFault {
    /// Peer access between devices fails: `ncclUnhandledCudaError`.
    PeerAccess,
}
