//! From configuration to outcome: hardware × model × flags × host → what vLLM does.
//!
//! Main function: [`Deployment::derive`]. It walks vLLM's startup in order (argparse, socket,
//! config, registry, parallel checks, device init, model construction and attention-backend
//! selection, weight loading, KV cache sizing, CUDA graphs) and stops at the first check that
//! fails, exactly as vLLM would. The result, [`Outcome`], names the failure, where it happens
//! and the numbers that appear in its message; the script turns it into lines.

use crate::catalog::{GpuSpec, ModelPreset};
use crate::profile::{Engine, Profile};
use crate::release::Switch;
use crate::scenario::{Fault, Host, NcclFault, Phase, Platform, Scenario, Signal};
use crate::selector::{self, Selection, SelectorInput};
use crate::version::Version;
use vllm_argv::{CliProblem, ServeArgs};

/// Why a launch fails, with the facts its messages need.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    Cli(CliProblem),
    PortInUse,
    ModelPathMissing,
    TrustRemoteCode,
    UnsupportedArch,
    MaxLenExceeds {
        requested: u64,
        derived: u64,
    },
    /// `CacheConfig` refuses an unknown `--kv-cache-dtype` (releases that no longer leave the
    /// check to argparse).
    KvCacheDtypeInvalid {
        value: String,
    },
    TpHeads {
        heads: u64,
    },
    /// More ranks than the GPUs this machine shows (`CUDA_VISIBLE_DEVICES` counted) and no
    /// executor backend named: `ParallelConfig` refuses (0.12+).
    WorldExceedsGpus {
        world: u32,
        gpus: u32,
    },
    /// Ray runs the workers (named, or picked by releases before 0.12 when the world exceeds the
    /// machine) and the cluster has fewer GPUs than ranks: the placement group never forms.
    RayPlacement {
        world: u32,
        gpus: u32,
    },
    QuantCapability {
        quant: String,
        min: u32,
    },
    Bf16Capability,
    MissingModule {
        module: String,
    },
    NoKernelImage,
    FreeMemory {
        free_gib: f64,
        requested_gib: f64,
    },
    Nccl(NcclFault),
    /// /dev/shm too small; `visible` when NCCL_DEBUG makes NCCL say so (otherwise the log shows
    /// only a generic NCCL system error).
    ShmInsufficient {
        visible: bool,
    },
    /// No attention backend; `kv_caused` when the same model would start with a 16-bit KV cache.
    Selector {
        selection: Selection,
        kv_caused: bool,
    },
    WeightsOom {
        alloc_gib: f64,
        free_mib: f64,
        used_gib: f64,
    },
    HostOomKilled,
    KvNoMemory {
        available_gib: f64,
    },
    KvTooSmall {
        needed_gib: f64,
        available_gib: f64,
        estimated: u64,
    },
    GraphCaptureOom,
    /// No GPU and no platform plugin.
    NoPlatform,
    /// The CUDA wheel on the CPU platform: an op that only a CPU build registers is missing.
    CpuMissingOps {
        op: CpuOp,
    },
    /// CPU workers bind their OpenMP threads one NUMA node each; the host has fewer.
    CpuNumaBind {
        world: u32,
        nodes: u32,
    },
    /// The CPU attention backend (V0 Torch SDPA) does not support the model's head size.
    CpuHeadSize {
        head_size: u64,
    },
    /// An architecture neither vLLM nor transformers knows, found only when the engine builds
    /// the model (releases that fall back to the Transformers backend first).
    UnsupportedArchEngine,
    /// transformers 5 next to a vLLM that reads an attribute it removed.
    TransformersTooNew,
    /// A process fault from the scenario.
    Killed {
        process: String,
        signal: Signal,
        at: Phase,
    },
    Hang {
        process: String,
        at: Phase,
    },
    NodeLoss {
        node: u32,
        at: Phase,
    },
}

impl Failure {
    /// The taxonomy id of this failure.
    pub fn id(&self) -> &'static str {
        match self {
            Failure::Cli(_) => "cli_argument_error",
            Failure::PortInUse => "port_in_use",
            Failure::ModelPathMissing => "model_path_not_found",
            Failure::TrustRemoteCode => "trust_remote_code_required",
            Failure::UnsupportedArch => "unsupported_model_arch",
            Failure::MaxLenExceeds { .. } | Failure::KvCacheDtypeInvalid { .. } => {
                "config_validation_error"
            }
            Failure::TpHeads { .. } => "tp_size_invalid_for_model",
            Failure::WorldExceedsGpus { .. } => "world_size_exceeds_local_gpus",
            Failure::RayPlacement { .. } => "ray_insufficient_gpus",
            Failure::QuantCapability { .. } => "unsupported_quantization",
            Failure::Bf16Capability => "bf16_unsupported_on_gpu",
            Failure::MissingModule { .. } => "missing_module",
            Failure::NoKernelImage => "no_kernel_image",
            Failure::FreeMemory { .. } => "gpu_memory_already_in_use",
            Failure::Nccl(_) => "nccl_error",
            Failure::ShmInsufficient { visible: true } => "shm_insufficient",
            Failure::ShmInsufficient { visible: false } => "nccl_error",
            Failure::Selector {
                kv_caused: true, ..
            } => "fp8_kv_cache_unsupported_backend",
            Failure::Selector { .. } => "attention_backend_unsupported",
            Failure::WeightsOom { .. } => "cuda_oom_model_load",
            Failure::HostOomKilled => "host_oom_killed",
            Failure::KvNoMemory { .. } => "kv_cache_no_memory",
            Failure::KvTooSmall { .. } => "kv_cache_insufficient_for_max_model_len",
            Failure::GraphCaptureOom => "cuda_oom_cudagraph_capture",
            Failure::NoPlatform => "no_gpu_visible",
            Failure::CpuMissingOps { .. } => "wrong_platform_build",
            Failure::CpuNumaBind { .. } => "config_validation_error",
            Failure::CpuHeadSize { .. } => "attention_backend_unsupported",
            Failure::UnsupportedArchEngine => "unsupported_model_arch",
            Failure::TransformersTooNew => "dependency_version_mismatch",
            Failure::Killed { .. } => "worker_killed_by_signal",
            Failure::Hang { .. } => "nccl_collective_timeout",
            Failure::NodeLoss { .. } => "node_lost",
        }
    }

    /// Whether the failure happens after the server became ready (runtime).
    pub fn at_runtime(&self) -> bool {
        matches!(
            self,
            Failure::Killed {
                at: Phase::Serving,
                ..
            } | Failure::Hang {
                at: Phase::Serving,
                ..
            } | Failure::NodeLoss {
                at: Phase::Serving,
                ..
            }
        )
    }
}

/// An op of vLLM's CPU build (`csrc/cpu`) that the CUDA wheel does not register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuOp {
    /// `torch.ops._C_utils.init_cpu_threads_env`: binding OpenMP threads in `init_device`.
    ThreadsEnv,
    /// `torch.ops._C.init_shm_manager`: the CPU communicator of a multi-rank `init_device`.
    ShmManager,
    /// `torch.ops._C.silu_and_mul`: the first CPU kernel a Llama model builds.
    SiluAndMul,
    /// `torch.ops._C.init_cpu_memory_env`: the CPU worker's constructor (0.33).
    MemoryEnv,
}

impl CpuOp {
    /// (`torch.ops` namespace, op name).
    pub fn name(self) -> (&'static str, &'static str) {
        match self {
            CpuOp::ThreadsEnv => ("_C_utils", "init_cpu_threads_env"),
            CpuOp::ShmManager => ("_C", "init_shm_manager"),
            CpuOp::SiluAndMul => ("_C", "silu_and_mul"),
            CpuOp::MemoryEnv => ("_C", "init_cpu_memory_env"),
        }
    }

    /// Whether the op is reached in `init_device` (else while building the model).
    pub fn in_init_device(self) -> bool {
        !matches!(self, CpuOp::SiluAndMul)
    }
}

/// GPUs a process sees on a machine with `per_node` of them: all, or the leading entries of
/// `CUDA_VISIBLE_DEVICES` that name one (an index below `per_node`, or a `GPU-`/`MIG-` UUID),
/// as CUDA stops at the first entry it cannot use.
pub fn visible_gpus(per_node: u32, cuda_visible_devices: Option<&str>) -> u32 {
    let Some(list) = cuda_visible_devices else {
        return per_node;
    };
    let usable = list
        .split(',')
        .map(str::trim)
        .take_while(|e| {
            e.starts_with("GPU-")
                || e.starts_with("MIG-")
                || e.parse::<u32>().is_ok_and(|i| i < per_node)
        })
        .count();
    (usable as u32).min(per_node)
}

/// CUDA graph memory of one rank, estimated from the model's depth and width: every captured
/// batch size keeps each layer's activations in the graph pool (~0.58 GiB for an 8B Llama,
/// as V1's `Graph capturing finished … took` reports for it).
pub fn graph_memory_gib(layers: u64, hidden: f64) -> f64 {
    0.2 + layers as f64 * hidden / 4096.0 * 0.012
}

/// Head sizes the V0 CPU attention backend (Torch SDPA with PagedAttention) supports.
pub const CPU_V0_HEAD_SIZES: &[u64] = &[32, 64, 80, 96, 112, 128, 192, 256];

/// Memory and size facts of a healthy start (also used for messages of failed ones).
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    pub total_gib: f64,
    pub budget_gib: f64,
    pub weights_per_rank_gib: f64,
    pub activation_gib: f64,
    pub kv_available_gib: f64,
    pub kv_bytes_per_token: f64,
    pub kv_tokens: u64,
    pub graph_gib: f64,
    pub held_gib: f64,
}

/// Everything the script needs about one launch.
#[derive(Clone, Debug)]
pub struct Deployment {
    pub version: Version,
    pub profile: &'static Profile,
    pub args: ServeArgs,
    pub gpu: &'static GpuSpec,
    pub gpu_count: u32,
    pub model: Option<&'static ModelPreset>,
    pub platform: Platform,
    pub tp: u32,
    pub pp: u32,
    pub world: u32,
    /// The KV cache dtype after resolution (`auto` may become `fp8_e4m3`).
    pub kv_cache_dtype: String,
    pub max_model_len: u64,
    pub max_num_batched_tokens: u64,
    pub quantization: Option<String>,
    pub dtype: String,
    pub selection: Option<Selection>,
    pub memory: Memory,
    pub failure: Option<Failure>,
    /// Which worker rank fails first when all ranks fail alike (seeded by the script).
    pub multi_gpu: bool,
    /// Workers are Ray actors (`--distributed-executor-backend ray`, or vLLM's own pick; V1).
    pub ray: bool,
    /// vLLM picked Ray itself (no backend named, more ranks than GPUs, releases before 0.12) and
    /// `ray.init()` starts a local instance.
    pub ray_fallback: bool,
    /// GPUs the launch sees on its machine: the machine's GPUs, or those `CUDA_VISIBLE_DEVICES`
    /// names.
    pub visible_gpus: u32,
    /// Machines of the deployment; ranks fill them in order.
    pub nodes: u32,
    /// The checkpoint's dtype (its config.json's `dtype` / `torch_dtype`), when it names one:
    /// vLLM logs a cast to `dtype` when they differ.
    pub config_dtype: Option<String>,
    /// The host the launch runs on (CPU cores, limits, installed packages).
    pub host: Host,
    /// The CPU platform's KV cache space when `VLLM_CPU_KVCACHE_SPACE` is unset (half the RAM).
    pub cpu_kv_gib: f64,
    /// `VLLM_CPU_OMP_THREADS_BIND` as the CPU worker reads it.
    pub cpu_threads_bind: String,
}

impl Deployment {
    /// GPUs per machine.
    pub fn gpus_per_node(&self) -> u32 {
        (self.gpu_count / self.nodes.max(1)).max(1)
    }

    /// The machine a rank runs on (0: the head, where the API server and engine core run).
    pub fn node_of(&self, rank: u32) -> u32 {
        (rank / self.gpus_per_node()).min(self.nodes.max(1) - 1)
    }
}

impl Deployment {
    /// Derive the outcome of running `args` (or the scenario's command) on the scenario's host.
    pub fn derive(s: &Scenario, args: &ServeArgs) -> Deployment {
        let version = s.vllm;
        let profile = Profile::for_host(version, &s.host);
        let tp = args.tensor_parallel_size.max(1);
        let pp = args.pipeline_parallel_size.max(1);
        let model = s.model;
        // transformers ≥ 4.56 writes `dtype`, older releases `torch_dtype`.
        let config_dtype = model.and_then(|m| {
            m.config
                .get("dtype")
                .or_else(|| m.config.get("torch_dtype"))
                .and_then(|v| v.as_str())
        });
        let dtype = match (args.dtype.as_str(), config_dtype) {
            ("auto", Some("float32")) => profile.float32_downcast.clone(),
            ("auto", Some(d)) => d.to_string(),
            ("half" | "float16", _) => "float16".to_string(),
            ("float" | "float32", _) => "float32".to_string(),
            ("auto", None) => "bfloat16".to_string(),
            (d, _) => d.to_string(),
        };
        let cpu = s.host.platform == Platform::CpuPlugin;
        let kv_cache_dtype = match model {
            Some(m) => selector::resolve_kv_cache_dtype(version, &args.kv_cache_dtype, m),
            None => args.kv_cache_dtype.clone(),
        };
        let derived_max = model.map_or(4096, |m| m.max_position_embeddings());
        let max_model_len = args.max_model_len.unwrap_or(derived_max);
        let max_num_batched_tokens = args.max_num_batched_tokens.unwrap_or(if cpu {
            // The CPU platform's default for the API server: 2048 per rank.
            u64::from(2048 * tp * pp)
        } else if s.gpu.torch_total_gib >= 70.0 {
            8192
        } else {
            2048
        });
        let quantization = args
            .quantization
            .clone()
            .or_else(|| model.and_then(|m| m.vllm_quantization()));
        let held_gib = s
            .fault(|f| match f {
                Fault::HoldGpuMemory { gib } => Some(*gib),
                _ => None,
            })
            .unwrap_or(0.0);
        let mut d = Deployment {
            version,
            profile,
            args: args.clone(),
            gpu: s.gpu,
            gpu_count: s.gpu_count,
            model,
            platform: s.host.platform,
            tp,
            pp,
            world: tp * pp,
            kv_cache_dtype,
            max_model_len,
            max_num_batched_tokens,
            quantization,
            dtype,
            selection: None,
            memory: Memory {
                total_gib: s.gpu.torch_total_gib,
                budget_gib: 0.0,
                weights_per_rank_gib: 0.0,
                activation_gib: 0.0,
                kv_available_gib: 0.0,
                kv_bytes_per_token: 0.0,
                kv_tokens: 0,
                graph_gib: 0.0,
                held_gib,
            },
            failure: None,
            multi_gpu: tp * pp > 1,
            ray: args.distributed_executor_backend.as_deref() == Some("ray")
                && profile.engine == Engine::V1,
            ray_fallback: false,
            // Set below, from the machine's GPUs.
            visible_gpus: 0,
            nodes: s.host.nodes.max(1),
            config_dtype: config_dtype.map(str::to_string),
            host: s.host.clone(),
            // psutil's total is a little below the nominal RAM; half of it per NUMA node.
            cpu_kv_gib: s.host.ram_gib.unwrap_or(32.0) * 0.981
                / 2.0
                / f64::from(s.host.numa_nodes.max(1)),
            cpu_threads_bind: s
                .env
                .get("VLLM_CPU_OMP_THREADS_BIND")
                .cloned()
                .unwrap_or_else(|| profile.cpu_threads_bind_default.clone()),
        };
        // Before 0.12, a world larger than the machine with no backend named makes vLLM pick Ray
        // (installed with the CUDA wheel); from 0.12 `ParallelConfig` refuses instead.
        d.visible_gpus = visible_gpus(
            d.gpus_per_node(),
            s.env.get("CUDA_VISIBLE_DEVICES").map(String::as_str),
        );
        d.ray_fallback = d.outgrows_machine() && !version.has(Switch::WorldSizeCheckedAgainstGpus);
        if d.ray_fallback && d.profile.engine == Engine::V1 {
            d.ray = true;
        }
        d.failure = d.first_failure(s, derived_max);
        d
    }

    /// No executor backend named and more ranks (two or more: vLLM checks only then) than the
    /// CUDA GPUs this machine shows: vLLM refuses (0.12+) or turns to Ray (before).
    fn outgrows_machine(&self) -> bool {
        self.platform == Platform::Cuda
            && self.args.distributed_executor_backend.is_none()
            && self.world > 1
            && self.world > self.visible_gpus
    }

    /// GPUs the Ray cluster offers: this machine's visible ones and every other node's.
    pub fn cluster_gpus(&self) -> u32 {
        self.visible_gpus + self.gpus_per_node() * (self.nodes.max(1) - 1)
    }

    /// Process faults strike a worker rank of a multi-process V1 deployment, or a V1 engine core;
    /// a fault naming a rank that does not exist changes nothing.
    fn process_fault_applies(&self, process: &str) -> bool {
        if crate::script::names_engine_core(process) {
            return self.profile.engine == Engine::V1;
        }
        let digits: String = process
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let rank: u32 = digits.parse().unwrap_or(0);
        self.profile.engine == Engine::V1 && self.world > 1 && rank < self.world
    }

    /// vLLM's CPU platform running the CUDA wheel: the engine builds its workers, which reach a
    /// CPU-only op (or an earlier check) in vLLM's order.
    fn cpu_failure(&self, model: &ModelPreset, arch_in_engine: bool) -> Option<Failure> {
        let v0 = self.profile.engine == Engine::V0;
        let world = self.world;
        let bind = self.cpu_threads_bind.as_str();
        if self.version.has(Switch::CpuOmpBoundByExecutor) {
            // The executor plans the OpenMP binding before it starts any worker; each worker's
            // constructor then sets up its memory node.
            if bind == "auto" && self.host.numa_nodes < world {
                return Some(Failure::CpuNumaBind {
                    world,
                    nodes: self.host.numa_nodes,
                });
            }
            return Some(Failure::CpuMissingOps {
                op: CpuOp::MemoryEnv,
            });
        }
        // init_device: thread binding, then the distributed environment.
        if bind == "auto" {
            if self.host.numa_nodes < world {
                return Some(Failure::CpuNumaBind {
                    world,
                    nodes: self.host.numa_nodes,
                });
            }
            return Some(Failure::CpuMissingOps {
                op: CpuOp::ThreadsEnv,
            });
        }
        if bind != "all" && bind != "nobind" {
            return Some(Failure::CpuMissingOps {
                op: CpuOp::ThreadsEnv,
            });
        }
        if world > 1 {
            return Some(Failure::CpuMissingOps {
                op: CpuOp::ShmManager,
            });
        }
        // load_model: the model class, its attention layers, its MLP.
        if arch_in_engine && !model.supported_by(self.version) {
            return Some(Failure::UnsupportedArchEngine);
        }
        let head_size = model.attention().head_size;
        if v0 && !CPU_V0_HEAD_SIZES.contains(&head_size) {
            return Some(Failure::CpuHeadSize { head_size });
        }
        Some(Failure::CpuMissingOps {
            op: CpuOp::SiluAndMul,
        })
    }

    fn first_failure(&mut self, s: &Scenario, derived_max: u64) -> Option<Failure> {
        let mut args = self.args.clone();
        // A `--kv-cache-dtype` value another release takes is refused as this one refuses it.
        if args.problem.is_none()
            && args.kv_cache_dtype_explicit
            && !Profile::for_version(self.version)
                .kv_cache_dtypes
                .contains(&args.kv_cache_dtype)
        {
            args.problem = Some(CliProblem::InvalidChoice {
                flag: "--kv-cache-dtype".into(),
                value: args.kv_cache_dtype.clone(),
                choices: vllm_argv::KV_CACHE_DTYPES,
            });
        }
        // An unknown `--kv-cache-dtype` reaches `CacheConfig` in releases whose argparse no
        // longer lists the choices.
        let kv_dtype_in_config = match &args.problem {
            Some(CliProblem::InvalidChoice { flag, value, .. })
                if flag == "--kv-cache-dtype"
                    && self.version.has(Switch::KvDtypeCheckedByCacheConfig) =>
            {
                Some(value.clone())
            }
            Some(p) => return Some(Failure::Cli(p.clone())),
            None => None,
        };
        match self.platform {
            Platform::CpuNoPlugin => return Some(Failure::NoPlatform),
            Platform::CpuPlugin | Platform::Cuda => {}
        }
        // The API server binds its port before it builds the engine (0.8+).
        if s.host.ports_in_use.contains(&args.port)
            && self.version.has(Switch::PortBoundBeforeEngine)
        {
            return Some(Failure::PortInUse);
        }
        let Some(model) = self.model else {
            return Some(Failure::ModelPathMissing);
        };
        if model.custom_code && !args.trust_remote_code {
            return Some(Failure::TrustRemoteCode);
        }
        let cpu = self.platform == Platform::CpuPlugin;
        // Releases that fall back to the Transformers backend find an unknown architecture only
        // when the engine builds the model (seen on the CPU platform's V0 engine).
        let arch_in_engine = cpu
            && self.profile.engine == Engine::V0
            && self.profile.error.contains_key("unsupported_arch_engine");
        if !model.supported_by(self.version) && !arch_in_engine {
            return Some(Failure::UnsupportedArch);
        }
        if let Some(req) = args.max_model_len {
            if req > derived_max {
                return Some(Failure::MaxLenExceeds {
                    requested: req,
                    derived: derived_max,
                });
            }
        }
        if let Some(value) = kv_dtype_in_config {
            return Some(Failure::KvCacheDtypeInvalid { value });
        }
        // `ParallelConfig` (built after the model and cache configs, before `VllmConfig`).
        if self.outgrows_machine() && self.version.has(Switch::WorldSizeCheckedAgainstGpus) {
            return Some(Failure::WorldExceedsGpus {
                world: self.world,
                gpus: self.visible_gpus,
            });
        }
        let shape = model.attention();
        if shape.heads % u64::from(self.tp) != 0 {
            return Some(Failure::TpHeads { heads: shape.heads });
        }
        // The tokenizer wrapper of these releases reads an attribute transformers 5 removed.
        if s.host.transformers.is_some_and(|(major, _)| major >= 5)
            && self.profile.error.contains_key("tokenizer_attr_removed")
        {
            return Some(Failure::TransformersTooNew);
        }
        if cpu {
            return self.cpu_failure(model, arch_in_engine);
        }
        if let Some(q) = &self.quantization {
            let min = match q.as_str() {
                "modelopt" | "fp8" if self.version.has(Switch::Fp8QuantNeedsSm89) => 89,
                "modelopt_fp4" => 75,
                "compressed-tensors" => 80,
                "mxfp4" => 80,
                "awq" | "gptq" => 75,
                _ => 0,
            };
            // Block-wise FP8 falls back to Marlin on Ampere; the check applies below that.
            let min = if q == "fp8" { 80 } else { min };
            if self.gpu.capability_int() < min {
                return Some(Failure::QuantCapability {
                    quant: q.clone(),
                    min,
                });
            }
        }
        if let Some(m) = s.host.missing_modules.first() {
            return Some(Failure::MissingModule { module: m.clone() });
        }
        // The executor: Ray's placement group must find a GPU for every rank.
        let on_ray =
            self.ray_fallback || args.distributed_executor_backend.as_deref() == Some("ray");
        if on_ray && self.world > self.cluster_gpus() {
            return Some(Failure::RayPlacement {
                world: self.world,
                gpus: self.cluster_gpus(),
            });
        }
        // Device init in each worker.
        if self.dtype == "bfloat16" && self.gpu.capability[0] < 8 {
            return Some(Failure::Bf16Capability);
        }
        let total = self.gpu.torch_total_gib;
        let util = args.gpu_memory_utilization;
        let requested = util * total;
        let free = total - self.memory.held_gib - 0.45;
        if free < requested && self.profile.engine == Engine::V1 {
            return Some(Failure::FreeMemory {
                free_gib: free,
                requested_gib: requested,
            });
        }
        if self.world > 1 {
            if let Some(n) = s.host.nccl {
                return Some(Failure::Nccl(n));
            }
            if s.host.shm_mib.is_some_and(|m| m < 256) {
                return Some(Failure::ShmInsufficient {
                    visible: s.env.contains_key("NCCL_DEBUG") && self.profile.engine == Engine::V1,
                });
            }
        }
        if self.gpu.capability_int() >= 120 && !self.version.has(Switch::Sm120Kernels) {
            return Some(Failure::NoKernelImage);
        }
        for f in &s.faults {
            match f {
                Fault::Kill {
                    process,
                    signal,
                    at: at @ (Phase::InitDevice | Phase::LoadWeights),
                } if self.process_fault_applies(process)
                    && !crate::script::names_engine_core(process) =>
                {
                    return Some(Failure::Killed {
                        process: process.clone(),
                        signal: *signal,
                        at: *at,
                    })
                }
                Fault::Hang {
                    process,
                    at: at @ (Phase::InitDevice | Phase::LoadWeights),
                } if self.process_fault_applies(process)
                    && !crate::script::names_engine_core(process) =>
                {
                    return Some(Failure::Hang {
                        process: process.clone(),
                        at: *at,
                    })
                }
                _ => {}
            }
        }
        // Model construction: the attention backend.
        if self.profile.engine == Engine::V1 {
            let sel = selector::select(&SelectorInput {
                version: self.version,
                gpu: self.gpu,
                shape,
                dtype: &self.dtype,
                kv_cache_dtype: &self.kv_cache_dtype,
                has_sink: model.sinks,
                forced: args.attention_backend.as_deref(),
            });
            self.selection = Some(sel.clone());
            if !matches!(sel, Selection::Chosen { .. }) {
                let kv_caused = self.kv_cache_dtype.starts_with("fp8")
                    && matches!(
                        selector::select(&SelectorInput {
                            version: self.version,
                            gpu: self.gpu,
                            shape,
                            dtype: &self.dtype,
                            kv_cache_dtype: "auto",
                            has_sink: model.sinks,
                            forced: args.attention_backend.as_deref(),
                        }),
                        Selection::Chosen { .. }
                    );
                return Some(Failure::Selector {
                    selection: sel,
                    kv_caused,
                });
            }
        }
        // Weights.
        let weights_per_rank = model.weights_gib / f64::from(self.world);
        self.memory.weights_per_rank_gib = weights_per_rank;
        self.memory.budget_gib = requested;
        if let Some(ram) = s.host.ram_gib {
            if model.weights_gib * 0.55 > ram {
                return Some(Failure::HostOomKilled);
            }
        }
        // Weights load whatever the utilization asks: only the device's free memory limits them
        // (a small utilization fails later, when the KV cache is sized from what is left).
        if weights_per_rank > free {
            let used = (free - 1.0).max(0.5);
            return Some(Failure::WeightsOom {
                alloc_gib: (weights_per_rank / f64::from(model.shards.max(1)) * 4.0)
                    .clamp(0.25, 8.0),
                free_mib: 512.0 + (total - used).fract() * 300.0,
                used_gib: used,
            });
        }
        // Profiling and the KV cache.
        let hidden = model
            .config
            .get("hidden_size")
            .or_else(|| {
                model
                    .config
                    .get("text_config")
                    .and_then(|t| t.get("hidden_size"))
            })
            .and_then(|v| v.as_integer())
            .unwrap_or(4096) as f64;
        let activation = 0.6 + hidden * self.max_num_batched_tokens as f64 * 2.0 * 12.0 / 1e9;
        self.memory.activation_gib = activation;
        let kv_avail = requested - weights_per_rank - activation;
        self.memory.kv_available_gib = kv_avail;
        let kv_elem = if self.kv_cache_dtype.starts_with("fp8") {
            1.0
        } else {
            2.0
        };
        let per_token = if shape.mla {
            shape.layers as f64 * shape.head_size as f64 * kv_elem / f64::from(self.pp)
        } else {
            let kv_heads = (shape.kv_heads as f64 / f64::from(self.tp)).max(1.0);
            shape.layers as f64 * 2.0 * kv_heads * shape.head_size as f64 * kv_elem
                / f64::from(self.pp)
        };
        self.memory.kv_bytes_per_token = per_token;
        if kv_avail <= 0.0 {
            return Some(Failure::KvNoMemory {
                available_gib: kv_avail,
            });
        }
        let tokens = (kv_avail * 1024.0 * 1024.0 * 1024.0 / per_token) as u64;
        let tokens = tokens / 16 * 16;
        self.memory.kv_tokens = tokens;
        if tokens < self.max_model_len {
            let needed = self.max_model_len as f64 * per_token / (1024.0 * 1024.0 * 1024.0);
            return Some(Failure::KvTooSmall {
                needed_gib: needed,
                available_gib: kv_avail,
                estimated: tokens,
            });
        }
        self.memory.graph_gib = if args.enforce_eager {
            0.0
        } else {
            graph_memory_gib(shape.layers, hidden)
        };
        // V1 captures CUDA graphs after the KV cache has taken the whole budget (gpu_worker.py:
        // `compile_or_warm_up_model` after `initialize_from_config`; 0.18 counts them in the budget
        // only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1): they need what is left outside it.
        let headroom = free - requested;
        if self.profile.engine == Engine::V1 && self.memory.graph_gib > headroom {
            return Some(Failure::GraphCaptureOom);
        }
        for f in &s.faults {
            match f {
                Fault::Kill {
                    process,
                    signal,
                    at,
                } if self.process_fault_applies(process)
                    && (*at == Phase::Serving || !crate::script::names_engine_core(process)) =>
                {
                    return Some(Failure::Killed {
                        process: process.clone(),
                        signal: *signal,
                        at: *at,
                    })
                }
                // A signal from outside the ready server: vLLM reacts as to any death.
                Fault::Signal { process, signal } if self.process_fault_applies(process) => {
                    return Some(Failure::Killed {
                        process: process.clone(),
                        signal: *signal,
                        at: Phase::Serving,
                    })
                }
                Fault::Hang { process, at }
                    if self.process_fault_applies(process)
                        && !crate::script::names_engine_core(process) =>
                {
                    return Some(Failure::Hang {
                        process: process.clone(),
                        at: *at,
                    })
                }
                Fault::NodeLoss { node, at }
                    if self.world > 1 && self.profile.engine == Engine::V1 =>
                {
                    return Some(Failure::NodeLoss {
                        node: *node,
                        at: *at,
                    })
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario(
        extra: &str,
        command: &str,
        gpu: &str,
        count: u32,
        model: &str,
        v: &str,
    ) -> Scenario {
        let text = format!(
            "summary = \"t\"\nvllm = \"{v}\"\ncommand = \"{command}\"\ngpus = {{ model = \"{gpu}\", count = {count} }}\nmodel = \"{model}\"\n{extra}\n[expect]\nstatus = \"crashed\"\n"
        );
        Scenario::from_toml(Path::new("g/t.toml"), &text).unwrap()
    }

    fn id(s: &Scenario) -> Option<&'static str> {
        Deployment::derive(s, &s.args).failure.map(|f| f.id())
    }

    #[test]
    fn a_kv_cache_dtype_is_taken_or_refused_as_its_release_does() {
        let run = |kv: &str, v: &str| {
            let cmd = format!("vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype {kv}");
            id(&scenario("", &cmd, "h100", 1, "llama-3.1-8b", v))
        };
        // float16 from 0.18, nvfp4 by 0.24, octave_* at 0.33 (CacheConfig's own check there). A
        // value the release takes passes the command line (what the attention backends make
        // of it is the selector's business).
        let cli = Some("cli_argument_error");
        assert_eq!(run("float16", "0.16.0"), cli);
        assert_ne!(run("float16", "0.18.1"), cli);
        assert_eq!(run("nvfp4", "0.18.1"), cli);
        assert_ne!(run("nvfp4", "0.24.0"), cli);
        assert_eq!(run("octave_k3v4", "0.24.0"), cli);
        let at_033 = run("octave_k3v4", "0.33.0");
        assert!(at_033 != cli && at_033 != Some("config_validation_error"));
        assert_eq!(run("nonsense", "0.33.0"), Some("config_validation_error"));
    }

    #[test]
    fn headline_and_workaround() {
        let cmd = "vllm serve nvidia/Kimi-K2.5-NVFP4 --tensor-parallel-size 8 --trust-remote-code";
        let s = scenario(
            "",
            cmd,
            "rtx-pro-6000-blackwell",
            8,
            "kimi-k2.5-nvfp4",
            "0.15.1",
        );
        assert_eq!(id(&s), Some("fp8_kv_cache_unsupported_backend"));
        let s = scenario(
            "",
            &format!("{cmd} --kv-cache-dtype auto"),
            "rtx-pro-6000-blackwell",
            8,
            "kimi-k2.5-nvfp4",
            "0.15.1",
        );
        assert_eq!(id(&s), Some("fp8_kv_cache_unsupported_backend"));
        let s = scenario(
            "",
            &format!("{cmd} --kv-cache-dtype bfloat16"),
            "rtx-pro-6000-blackwell",
            8,
            "kimi-k2.5-nvfp4",
            "0.15.1",
        );
        assert_eq!(id(&s), None);
        let s = scenario("", cmd, "b200", 8, "kimi-k2.5-nvfp4", "0.15.1");
        assert_eq!(id(&s), None);
    }

    #[test]
    fn configuration_failures() {
        let s = scenario("", "vllm serve m -tp 8", "h100", 8, "qwen2.5-7b", "0.15.1");
        assert_eq!(id(&s), Some("tp_size_invalid_for_model"));
        let s = scenario("", "vllm serve m", "h100", 1, "llama-3.1-70b", "0.15.1");
        assert_eq!(id(&s), Some("cuda_oom_model_load"));
        let s = scenario("", "vllm serve m", "h100", 1, "internlm2.5-7b", "0.15.1");
        assert_eq!(id(&s), Some("trust_remote_code_required"));
        let s = scenario("", "vllm serve m", "h100", 1, "kimi-k2.5-nvfp4", "0.11.0");
        assert_eq!(id(&s), Some("trust_remote_code_required"));
        let s = scenario("", "vllm serve m", "h100", 1, "qwen3-8b", "0.6.4");
        assert_eq!(id(&s), Some("unsupported_model_arch"));
        let s = scenario("", "vllm serve m", "h100", 1, "llama-3.1-8b", "0.15.1");
        assert_eq!(id(&s), None);
        let s = scenario(
            "[[faults]]\nkind = \"hold_gpu_memory\"\ngib = 40\n",
            "vllm serve m",
            "h100",
            1,
            "llama-3.1-8b",
            "0.15.1",
        );
        assert_eq!(id(&s), Some("gpu_memory_already_in_use"));
        let s = scenario(
            "",
            "vllm serve m --gpu-memory-utilization 0.2",
            "h100",
            1,
            "llama-3.1-8b",
            "0.15.1",
        );
        assert_eq!(id(&s), Some("kv_cache_no_memory"));
        let s = scenario(
            "",
            "vllm serve m -tp 8",
            "h100",
            8,
            "gpt-oss-120b",
            "0.15.1",
        );
        assert_eq!(id(&s), None);
    }

    #[test]
    fn more_ranks_than_visible_gpus() {
        let tp2 = "vllm serve m -tp 2";
        for (v, want) in [
            ("0.15.1", "world_size_exceeds_local_gpus"),
            ("0.18.1", "world_size_exceeds_local_gpus"),
            ("0.13.0", "world_size_exceeds_local_gpus"),
            // Before 0.12 vLLM picks Ray, whose placement group never forms.
            ("0.11.0", "ray_insufficient_gpus"),
            ("0.10.2", "ray_insufficient_gpus"),
            ("0.8.5", "ray_insufficient_gpus"),
            ("0.6.4", "ray_insufficient_gpus"),
        ] {
            let s = scenario("", tp2, "h100", 1, "llama-3.1-8b", v);
            assert_eq!(id(&s), Some(want), "{v}");
        }
        // CUDA_VISIBLE_DEVICES hides GPUs the machine has.
        let env = |list: &str| format!("env = {{ CUDA_VISIBLE_DEVICES = \"{list}\" }}\n");
        let s = scenario(&env("0"), tp2, "h100", 8, "llama-3.1-8b", "0.15.1");
        assert_eq!(id(&s), Some("world_size_exceeds_local_gpus"));
        let s = scenario(&env("2,3"), tp2, "h100", 8, "llama-3.1-8b", "0.15.1");
        assert_eq!(id(&s), None);
        // Naming Ray skips the check; the placement group then waits in vain.
        let s = scenario(
            "",
            &format!("{tp2} --distributed-executor-backend ray"),
            "h100",
            1,
            "llama-3.1-8b",
            "0.15.1",
        );
        assert_eq!(id(&s), Some("ray_insufficient_gpus"));
        assert_eq!(visible_gpus(8, Some("0,1,9,2")), 2);
        assert_eq!(visible_gpus(8, Some("")), 0);
        assert_eq!(visible_gpus(4, Some("GPU-5ab3e1c2,GPU-77f0")), 2);
        assert_eq!(visible_gpus(4, None), 4);
    }

    #[test]
    fn memory_follows_arithmetic_not_thresholds() {
        let at = |util: f64, gpu: &str| {
            let s = scenario(
                "",
                &format!("vllm serve m --max-model-len 8192 --gpu-memory-utilization {util}"),
                gpu,
                1,
                "llama-3.1-8b",
                "0.15.1",
            );
            id(&s)
        };
        // The weights load at any utilization; what is left for the KV cache is what fails.
        assert_eq!(at(0.1, "h100"), Some("kv_cache_no_memory"));
        // CUDA graphs need room outside the budget: 1 % of an H100 is too little, 2 % is not.
        assert_eq!(at(0.99, "h100"), Some("cuda_oom_cudagraph_capture"));
        assert_eq!(at(0.98, "h100"), None);
        assert_eq!(at(0.97, "h100"), None);
        // Same utilization, smaller card: less room outside the budget.
        assert_eq!(at(0.97, "rtx-3090"), Some("cuda_oom_cudagraph_capture"));
        assert_eq!(at(0.92, "rtx-3090"), None);
    }

    mod monotonic {
        use super::*;
        use proptest::prelude::*;

        const MODELS: [&str; 4] = [
            "llama-3.1-8b",
            "qwen2.5-7b",
            "llama-3.1-70b",
            "gpt-oss-120b",
        ];
        const RELEASES: [&str; 4] = ["0.8.5", "0.10.2", "0.15.1", "0.18.1"];

        fn outcome(
            v: &str,
            gpu: &'static GpuSpec,
            count: u32,
            model: &str,
            flags: &str,
        ) -> Option<&'static str> {
            let mut s = scenario(
                "",
                &format!("vllm serve m {flags}"),
                "h100",
                count,
                model,
                v,
            );
            s.gpu = gpu;
            id(&s)
        }

        fn with_memory(gib: f64) -> &'static GpuSpec {
            let h100 = crate::catalog::gpu("h100").expect("h100 in the catalog");
            Box::leak(Box::new(GpuSpec {
                torch_total_gib: gib,
                ..h100.clone()
            }))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]

            /// More GPU memory never turns a ready launch into an out-of-memory one.
            #[test]
            fn more_memory_never_breaks_a_ready_launch(
                v in 0..RELEASES.len(), m in 0..MODELS.len(), tp in 0u32..4,
                util in 50u32..100, gib in 8.0f64..160.0, more in 0.0f64..80.0,
            ) {
                let flags = format!("-tp {} --gpu-memory-utilization {}", 1 << tp, f64::from(util) / 100.0);
                let count = 1 << tp;
                if outcome(RELEASES[v], with_memory(gib), count, MODELS[m], &flags).is_none() {
                    prop_assert_eq!(
                        outcome(RELEASES[v], with_memory(gib + more), count, MODELS[m], &flags),
                        None
                    );
                }
            }

            /// Fewer GPUs never turn a failing launch into a ready one.
            #[test]
            fn fewer_gpus_never_fix_a_launch(
                v in 0..RELEASES.len(), m in 0..MODELS.len(), tp in 0u32..4, count in 1u32..9, fewer in 1u32..8,
            ) {
                let flags = format!("-tp {}", 1 << tp);
                let h100 = crate::catalog::gpu("h100").expect("h100 in the catalog");
                if outcome(RELEASES[v], h100, count, MODELS[m], &flags).is_some() && count > fewer {
                    prop_assert!(outcome(RELEASES[v], h100, count - fewer, MODELS[m], &flags).is_some());
                }
            }

            /// A smaller max_model_len never turns a ready launch into a KV-cache failure.
            #[test]
            fn a_shorter_context_never_breaks_the_kv_cache(
                v in 0..RELEASES.len(), m in 0..MODELS.len(), tp in 0u32..4,
                util in 50u32..100, len in 1024u64..131072, shorter in 1u64..131072,
            ) {
                let h100 = crate::catalog::gpu("h100").expect("h100 in the catalog");
                let count = 1 << tp;
                let flags = |len: u64| format!(
                    "-tp {} --gpu-memory-utilization {} --max-model-len {len}",
                    1 << tp, f64::from(util) / 100.0
                );
                if outcome(RELEASES[v], h100, count, MODELS[m], &flags(len)).is_none() {
                    let short = len.saturating_sub(shorter).max(16);
                    prop_assert_eq!(outcome(RELEASES[v], h100, count, MODELS[m], &flags(short)), None);
                }
            }
        }
    }
}
