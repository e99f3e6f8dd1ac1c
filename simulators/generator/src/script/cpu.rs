//! The CPU platform: vLLM's CUDA wheel on a host without a GPU, with a platform plugin that
//! selects vLLM's own `CpuPlatform` (`host.platform = "cpu-plugin"`) or without one
//! (`"cpu"`: no device type can be inferred).
//!
//! Every process prints an import-time preamble before it decorates its streams
//! ([`import_preamble`]); the CPU workers then fail in `init_device` or while building the model
//! on an op that only vLLM's CPU build registers ([`v1_workers_fail`] for the V1 engine core,
//! [`v0_launch`] for releases that fall back to the V0 engine on CPU).

use super::{
    engine_failure, engine_failure_seen, engine_failure_with, spawn_v0_worker, uuid, Builder,
    LaunchLog, LaunchStatus, API,
};
use crate::clock::SimTime;
use crate::deploy::{CpuOp, Failure};
use crate::record::Body;
use crate::release::Switch;
use crate::scenario::{CpuIsa, Platform};
use crate::traceback::{exception_line_index, exception_message, Traceback};

/// Where a CPU worker's Python warnings (`cpu_worker_warnings`) fall among its platform records
/// (`cpu_worker_kernel_warnings`).
const PYTHON_WARNINGS: &str = "python-warnings";

/// What `import vllm._C` says on a host without the CUDA driver.
const LIBCUDA_MISSING: &str =
    "ImportError('libcuda.so.1: cannot open shared object file: No such file or directory')";

/// What every process prints while `import vllm` runs on a host without a GPU driver: the
/// platform plugins it loads (or that no platform was found), Triton finding no driver, and
/// `vllm._C` failing to load `libcuda.so.1`. Unprefixed: no process is decorated yet.
pub(super) fn import_preamble(b: &mut Builder<'_>, proc: usize) {
    if b.p.logging_from_args {
        // Logging is configured later (the API server: once its arguments are parsed; the
        // engine core and workers: as they start, where they log the platform's warnings):
        // only torch's own warnings and the API server's last-resort ones come out here.
        b.torch_import_warnings(proc);
        if proc == API {
            platform_warnings(b, API, true);
        }
        return;
    }
    let pre = b.prefixed[proc];
    b.prefixed[proc] = false;
    if b.d.platform == Platform::CpuPlugin {
        let (name, value) = b.d.host.platform_plugin.clone();
        b.log(proc, "plugins_available", &[]);
        b.log(
            proc,
            "plugin_entry",
            &[("name", name.clone()), ("value", value)],
        );
        b.log(proc, "plugins_all", &[]);
        b.log(proc, "plugins_env", &[]);
        b.log(proc, "plugin_loaded", &[("name", name.clone())]);
        b.advance_ms(proc, 0, 700);
        b.log(proc, "plugin_activated", &[("name", name)]);
    } else {
        b.log(proc, "no_platform_detected", &[]);
    }
    b.advance_ms(proc, 700, 4000);
    if !b.p.triton_on_worker_import {
        triton_lines(b, proc);
    }
    b.log(
        proc,
        "import_c_failed",
        &[("error", LIBCUDA_MISSING.to_string())],
    );
    b.prefixed[proc] = pre;
}

/// The platform's warnings on a host without a GPU toolkit (0.33): FlashInfer has neither its
/// prebuilt kernels nor `nvcc` to build them, and vLLM's kernels for the platform do not load.
/// `unconfigured`: logged before logging is set up (the bare message).
pub(super) fn platform_warnings(b: &mut Builder<'_>, proc: usize, unconfigured: bool) {
    let cpu = b.d.platform == Platform::CpuPlugin;
    let kernels = if cpu {
        "import_c_avx2_failed"
    } else {
        "import_c_failed"
    };
    log_platform_warnings(b, proc, &["flashinfer_disabled", kernels], unconfigured);
}

/// Logs the platform's messages `ids`: a kernel library that does not load names its module.
/// `import_c_avx2_failed` stands for the CPU platform's kernel library failing to load: the
/// host's processor decides which library that is ([`kernel_import_failed`]).
fn log_platform_warnings(b: &mut Builder<'_>, proc: usize, ids: &[&str], unconfigured: bool) {
    for &id in ids {
        let (id, module) = match id {
            "import_c_avx2_failed" => kernel_import_failed(b),
            "import_c_failed" => (id.to_string(), Some("vllm._C")),
            other => (other.to_string(), None),
        };
        let extra: Vec<(&str, String)> = module
            .map(|m| {
                (
                    "error",
                    format!("ModuleNotFoundError(\"No module named '{m}'\")"),
                )
            })
            .into_iter()
            .collect();
        if unconfigured {
            b.log_unconfigured(proc, &id, &extra);
        } else {
            b.log(proc, &id, &extra);
        }
    }
}

/// The message of the CPU platform's kernel library failing to load on this host's processor
/// (`import_c_<isa>_failed`, vllm/platforms/cpu.py `import_kernels`) and the module it names;
/// profiles that do not list the AVX-512 ones (before 0.31) print the AVX2 one.
fn kernel_import_failed(b: &Builder<'_>) -> (String, Option<&'static str>) {
    let isa = b.d.host.cpu_isa;
    let id = format!("import_c_{}_failed", isa.as_str());
    if b.p.msg(&id).is_some() {
        (id, Some(isa.kernel_module()))
    } else {
        (
            "import_c_avx2_failed".into(),
            Some(CpuIsa::Avx2.kernel_module()),
        )
    }
}

/// Triton is installed but finds no GPU driver.
pub(super) fn triton_lines(b: &mut Builder<'_>, proc: usize) {
    b.log(proc, "triton_no_driver", &[]);
    b.log(proc, "triton_unavailable", &[]);
}

/// Without a platform, releases whose CLI parser builds a `DeviceConfig` for its defaults fail
/// while building the parser, before anything else is logged. Returns whether this release does.
pub(super) fn no_platform_at_parser(b: &mut Builder<'_>) -> bool {
    let p = b.p;
    if !p.stack.contains_key("no_platform_parser") {
        return false;
    }
    b.advance_ms(API, 300, 1500);
    b.prefixed[API] = false;
    let tb = Traceback::new(p.error("no_platform")).with(p, "no_platform_parser");
    b.stderr_traceback(API, None, &tb, true);
    true
}

/// Without a platform, older releases get as far as building the engine config.
pub(super) fn no_platform_at_engine_args(b: &mut Builder<'_>) {
    let p = b.p;
    b.advance_ms(API, 300, 1500);
    let mut tb = Traceback::new(p.error("no_platform"))
        .with(p, "api_main")
        .with(p, "api_engine_client");
    if p.stack.contains_key("no_platform_engine_args") {
        tb = tb.with(p, "no_platform_engine_args");
    }
    b.stderr_traceback(API, None, &tb, true);
}

/// The exception and frames (below `init_device` / `load_model` of the worker) of a CPU failure.
fn cpu_exception(b: &Builder<'_>) -> (String, Vec<&'static str>) {
    let p = b.p;
    match b.d.failure.clone() {
        Some(Failure::CpuNumaBind { world, nodes }) => {
            let list: Vec<String> = (0..nodes).map(|n| n.to_string()).collect();
            (
                b.fill(
                    p.error("cpu_numa_bind"),
                    &[
                        ("world", world.to_string()),
                        ("nodes", format!("[{}]", list.join(", "))),
                    ],
                ),
                vec!["cpu_autobind"],
            )
        }
        Some(Failure::CpuMissingOps { op }) => {
            let (ns, name) = op.name();
            let exc = b.fill(
                p.error("cpu_missing_op"),
                &[("ns", ns.to_string()), ("op", name.to_string())],
            );
            let frames = match op {
                CpuOp::ThreadsEnv => vec!["cpu_threads_env", "torch_op_getattr"],
                CpuOp::ShmManager => vec!["cpu_init_shm", "torch_op_getattr"],
                CpuOp::MemoryEnv => vec!["cpu_memory_env", "torch_op_getattr"],
                CpuOp::SiluAndMul => vec![
                    "model_init",
                    "llama_layers",
                    "llama_mlp",
                    "silu_op",
                    "torch_op_getattr",
                ],
            };
            (exc, frames)
        }
        Some(Failure::CpuHeadSize { head_size }) => (
            b.fill(
                p.error("cpu_head_size"),
                &[("head_size", head_size.to_string())],
            ),
            vec!["model_init", "llama_layers", "llama_attn", "sdpa_head_size"],
        ),
        Some(Failure::UnsupportedArchEngine) => {
            let arch =
                b.d.model
                    .map(|m| m.architecture().to_string())
                    .unwrap_or_default();
            (
                b.fill(p.error("unsupported_arch_engine"), &[("arch", arch)]),
                vec!["transformers_arch"],
            )
        }
        other => unreachable!("not a CPU platform failure: {other:?}"),
    }
}

fn in_init_device(d: &crate::deploy::Deployment) -> bool {
    match &d.failure {
        Some(Failure::CpuMissingOps { op }) => op.in_init_device(),
        Some(Failure::CpuNumaBind { .. }) => true,
        _ => false,
    }
}

/// `auto thread-binding list (id, physical core): [(0, 0), (1, 1)]`: one logical CPU per core,
/// minus one reserved for other processes when there are several workers.
fn bind_list(b: &Builder<'_>) -> String {
    let cores = b.d.host.cpus / b.d.host.numa_nodes.max(1);
    let reserve = u32::from(b.d.world > 1);
    let list: Vec<String> = (0..cores.saturating_sub(reserve).max(1))
        .map(|c| format!("({c}, {c})"))
        .collect();
    format!("[{}]", list.join(", "))
}

/// The V1 engine core's CPU workers fail: in the engine core itself (one rank, the uniproc
/// executor), or in worker processes that die before they decorate their output (v0.11+) or
/// just after (v0.10).
pub(super) fn v1_workers_fail(b: &mut Builder<'_>, workers: &[usize], eng: usize, api_pid: u32) {
    let p = b.p;
    let d = b.d;
    let (exc, frames) = cpu_exception(b);
    let init = in_init_device(d);
    let bind_logged = d.cpu_threads_bind == "auto"
        && matches!(
            d.failure,
            Some(Failure::CpuMissingOps {
                op: CpuOp::ThreadsEnv
            })
        );
    let uniproc = workers.len() == 1 && workers[0] == eng;
    if d.version.has(Switch::CpuOmpBoundByExecutor) && !uniproc {
        executor_workers_fail(b, workers, eng, api_pid, exc, frames);
        return;
    }
    if uniproc {
        b.advance_ms(eng, 100, 900);
        if bind_logged {
            b.log(eng, "cpu_bind_list", &[("list", bind_list(b))]);
        }
        let mut tb = Traceback::new(exc).with(p, "engine_core_init");
        if p.stack.contains_key("engine_core_uni") {
            tb = tb.with(p, "engine_core_uni");
        } else {
            tb.frames
                .extend(p.stack("engine_core_executor")[..2].iter().cloned());
        }
        tb = tb.with(
            p,
            if init {
                "uni_init_device"
            } else {
                "uni_load_model"
            },
        );
        tb = tb.with(
            p,
            if init {
                "worker_init_device"
            } else {
                "worker_load_model"
            },
        );
        for f in frames {
            tb = tb.with(p, f);
        }
        engine_failure(b, workers, eng, api_pid, tb);
        return;
    }

    // Worker processes: the import preamble, then (v0.10) the prefix and the worker's own
    // message queue, then init_device.
    let mut ready: Vec<SimTime> = Vec::new();
    for &w in workers {
        let named = b.prefixed[w];
        b.prefixed[w] = false;
        import_preamble(b, w);
        if p.triton_on_worker_import {
            b.advance_ms(w, 500, 2500);
            triton_lines(b, w);
        }
        b.prefixed[w] = named;
        b.advance_ms(w, 300, 3000);
        if named {
            // The worker's response queue to the engine core (releases that log it at INFO).
            let psm = format!("{:08x}", b.rng.next_u64() as u32);
            let id = uuid(&mut b.d_rng());
            if b.log(
                w,
                "worker_shm_handle",
                &[("psm", psm.clone()), ("uuid", id)],
            )
            .is_some()
            {
                b.shm_names.push(format!("psm_{psm}"));
            }
        }
        ready.push(b.now(w));
    }
    // The ranks reach the same failure one after another; the engine core tears the others
    // down once it sees the first: a rank still initialising then only says its parent exited.
    let mut order: Vec<usize> = (0..workers.len()).collect();
    b.rng.shuffle(&mut order);
    let t0 = ready
        .iter()
        .copied()
        .max()
        .unwrap_or_default()
        .plus_ms(b.rng.range(100, 800));
    let teardown = t0.plus_ms(b.rng.range(300, 1500));
    let mut first: Option<(SimTime, usize)> = None;
    for (k, &r) in order.iter().enumerate() {
        let w = workers[r];
        let t = t0.plus_us(k as u64 * b.rng.range(50_000, 900_000));
        if k > 0 && t > teardown {
            continue;
        }
        b.set_time(w, t);
        let mut tb = Traceback::new(exc.clone())
            .with(p, "worker_main")
            .with(
                p,
                if init {
                    "mp_init_device"
                } else {
                    "mp_load_model"
                },
            )
            .with(
                p,
                if init {
                    "worker_init_device"
                } else {
                    "worker_load_model"
                },
            );
        for f in &frames {
            tb = tb.with(p, f);
        }
        if let Some(idx) = b.log_exception(w, "worker_failed_start", &tb, false) {
            if first.is_none_or(|(ft, _)| t < ft) {
                first = Some((t, idx));
            }
        }
    }
    if let Some((_, idx)) = first {
        let line = match &b.events[idx].body {
            Body::Log { text, .. } => exception_line_index(text, &exc),
            _ => 0,
        };
        b.mark_root(idx, line);
    }
    // Every rank sees the engine core close its death pipe.
    for &w in workers {
        let t = b.now(w).max(teardown);
        b.set_time(w, t.plus_us(b.rng.range(100, 5000)));
        b.log(w, "parent_exited", &[]);
    }
    let t_eng = workers.iter().map(|&w| b.now(w)).max().unwrap_or_default();
    b.set_time(eng, t_eng.plus_ms(b.rng.range(1500, 4000)));
    let tb = Traceback::new(p.error("worker_init_failed").to_string())
        .with(p, "engine_core_init")
        .with(p, "engine_core_executor");
    engine_failure_with(b, eng, api_pid, tb, false);
}

/// The executor's OpenMP plan (0.33): `OMPProcessManager` binds each rank to CPUs of its own
/// NUMA node and logs the plan, or fails in the engine core when there are too few nodes; each
/// worker then fails in its CPU worker's constructor, and the executor waits for the others: they
/// exit within its five-second grace, or (`cpu_workers_outlive_grace`) it sends them SIGTERM.
fn executor_workers_fail(
    b: &mut Builder<'_>,
    workers: &[usize],
    eng: usize,
    api_pid: u32,
    exc: String,
    frames: Vec<&'static str>,
) {
    let p = b.p;
    let d = b.d;
    let n = workers.len();
    if let Some(Failure::CpuNumaBind { .. }) = d.failure {
        b.log(eng, "executor_waiting_workers", &[("count", "0".into())]);
        b.log(eng, "executor_workers_exited", &[]);
        let tb = Traceback::new(exc)
            .with(p, "engine_core_init")
            .with(p, "cpu_executor_autobind");
        engine_failure_seen(b, eng, api_pid, tb, true, Some(false));
        return;
    }
    b.log(eng, "omp_binding_info", &[("info", omp_plan(b, n))]);
    // They fail in their constructor, before they decorate their logs: their records carry the
    // process's multiprocessing name (0.31+) or no prefix at all.
    let workers: Vec<usize> = workers
        .iter()
        .enumerate()
        .map(|(r, &w)| match &p.worker_mp_name {
            Some(name) => {
                let name = b.fill(name, &[("rank", r.to_string())]);
                b.decorate(w, name)
            }
            None => b.undecorated(w),
        })
        .collect();
    let workers = workers.as_slice();
    let mut t_fail = Vec::new();
    for &w in workers {
        import_preamble(b, w);
        b.advance_ms(w, 7000, 11000);
        // The platform's records in order; the Python warnings where the list says
        // (`python-warnings`), else after them.
        let ids: Vec<&str> = p
            .cpu_worker_kernel_warnings
            .iter()
            .map(String::as_str)
            .collect();
        let at = ids.iter().position(|&id| id == PYTHON_WARNINGS);
        let (before, after) = ids.split_at(at.unwrap_or(ids.len()));
        log_platform_warnings(b, w, before, false);
        for text in &p.cpu_worker_warnings {
            let text = b.fill(text, &[]);
            b.raw(w, text);
        }
        log_platform_warnings(b, w, after.get(1..).unwrap_or_default(), false);
        b.advance_ms(w, 2500, 4000);
        t_fail.push(b.now(w));
    }
    let mut first: Option<(SimTime, usize)> = None;
    for (k, &w) in workers.iter().enumerate() {
        let mut tb = Traceback::new(exc.clone())
            .with(p, "worker_main")
            .with(p, "mp_init_worker");
        for f in &frames {
            tb = tb.with(p, f);
        }
        b.set_time(w, t_fail[k]);
        if let Some(idx) = b.log_exception(w, "worker_failed_start", &tb, false) {
            if first.is_none_or(|(ft, _)| t_fail[k] < ft) {
                first = Some((t_fail[k], idx));
            }
        }
    }
    let Some((t0, idx)) = first else {
        return;
    };
    let line = match &b.events[idx].body {
        Body::Log { text, .. } => exception_line_index(text, &exc),
        _ => 0,
    };
    b.mark_root(idx, line);
    b.set_time(eng, t0.plus_ms(b.rng.range(5, 60)));
    b.log(eng, "executor_waiting_workers", &[("count", n.to_string())]);
    if p.cpu_workers_outlive_grace {
        b.set_time(eng, t0.plus_ms(5000 + b.rng.range(5, 60)));
        b.log(eng, "executor_workers_sigterm", &[("count", n.to_string())]);
    } else {
        b.set_time(eng, t0.plus_ms(b.rng.range(1000, 3000)));
        b.log(eng, "executor_workers_exited", &[]);
    }
    let tb = Traceback::new(p.error("worker_init_failed").to_string())
        .with(p, "engine_core_init")
        .with(p, "engine_core_executor");
    engine_failure_seen(b, eng, api_pid, tb, false, Some(true));
}

/// `OMPProcessManager`'s plan as it logs it: the setting, then each local rank's cores (one per
/// physical core of its NUMA node, after the reserved ones), then the reserved CPUs.
fn omp_plan(b: &Builder<'_>, world: usize) -> String {
    let d = b.d;
    let bind = &d.cpu_threads_bind;
    let auto = bind == "auto";
    let cpus = d.host.cpus as usize;
    let mut lines = vec![format!(
        "\tVLLM_CPU_OMP_THREADS_BIND='{bind}', auto_setup={}, skip_setup=False",
        if auto { "True" } else { "False" }
    )];
    let (ranks, reserved): (Vec<Vec<usize>>, Vec<usize>) = if auto {
        // One CPU per rank's node is kept for other work.
        let usable = cpus.saturating_sub(world).max(1);
        let per = (usable / world).max(1);
        let ranks = (0..world)
            .map(|r| (r * per..(r + 1) * per).collect())
            .collect();
        (ranks, (usable..cpus).collect())
    } else {
        let ranks = bind
            .split('|')
            .map(|g| {
                g.split(',')
                    .filter_map(|c| c.trim().parse().ok())
                    .collect::<Vec<usize>>()
            })
            .collect();
        (ranks, Vec::new())
    };
    let reserve_n = if auto { reserved.len() } else { ranks.len() };
    lines.push(format!(
        "\tlocal_world_size={world}, reserve_cpu_num={reserve_n}"
    ));
    for (r, cores) in ranks.iter().enumerate() {
        let list: Vec<String> = cores.iter().map(usize::to_string).collect();
        lines.push(format!("\tlocal_rank={r}, core ids=[{}]", list.join(", ")));
    }
    let list: Vec<String> = reserved.iter().map(usize::to_string).collect();
    lines.push(format!("\treserved_cpus=[{}]", list.join(", ")));
    lines.join("\n")
}

/// A release that runs the CPU platform on the V0 engine (0.8.x): the API server starts an
/// `MQLLMEngine` process (`SpawnProcess-1`, unprefixed) whose `mp` executor drives rank 0 itself
/// and the other ranks as `VllmWorkerProcess` processes.
pub(super) fn v0_launch(mut b: Builder<'_>) -> LaunchLog {
    let p = b.p;
    let d = b.d;
    let failure = d.failure.clone();
    let api_pid = b.procs[API].pid;
    let status = LaunchStatus::Crashed;
    let eng_pid = api_pid + b.rng.range(60, 300) as u32;
    b.advance_ms(API, 5, 200);
    b.log(API, "v0_started_engine", &[("pid", eng_pid.to_string())]);
    let t = b.now(API).plus_ms(b.rng.range(3000, 6500));
    let eng = b.spawn(None, "EngineCore".into(), eng_pid, t, false);

    if let Some(Failure::TransformersTooNew) = &failure {
        // The API server's engine client builds its tokenizer while the engine process starts:
        // both fail on it, the API server first.
        b.advance_ms(API, 300, 2500);
        let tb = Traceback::new(p.error("tokenizer_attr_removed_top"))
            .with(p, "api_main")
            .with(p, "api_engine_client")
            .with(p, "api_tokenizer");
        b.stderr_traceback(API, None, &tb, true);
        import_preamble(&mut b, eng);
        b.advance_ms(eng, 2000, 4000);
        let config = super::engine_config(&b, d);
        b.log(eng, "engine_init", &[("config", config)]);
        let exc = p.error("tokenizer_attr_removed").to_string();
        let tb = Traceback::new(exc.clone())
            .with(p, "v0_engine_head")
            .with(p, "v0_engine_tokenizer");
        v0_engine_error(&mut b, eng, &exc, &tb, false);
        return b.finish(status, None);
    }

    import_preamble(&mut b, eng);
    b.advance_ms(eng, 2000, 4500);
    let config = super::engine_config(&b, d);
    b.log(eng, "engine_init", &[("config", config)]);
    b.log(eng, "v0_backend", &[]);
    let mut workers = Vec::new();
    for r in 1..d.world {
        let w = spawn_v0_worker(&mut b, eng, eng_pid, r, (3000, 6000));
        import_preamble(&mut b, w);
        b.advance_ms(w, 1500, 4000);
        b.log(w, "v0_worker_ready", &[]);
        b.log(w, "v0_backend", &[]);
        workers.push(w);
    }
    let (exc, frames) = cpu_exception(&b);
    let init = in_init_device(d);
    // The ranks' own workers fail first (they run init_device as soon as they are asked).
    let t_fail = workers
        .iter()
        .map(|&w| b.now(w))
        .max()
        .unwrap_or(b.now(eng))
        .plus_ms(b.rng.range(20, 400));
    if !init {
        b.advance_ms(eng, 5, 50);
        b.log(
            eng,
            "rank_assigned",
            &[
                ("rank", "0".into()),
                ("world", d.world.to_string()),
                ("pp_rank", "0".into()),
                ("tp_rank", "0".into()),
            ],
        );
    }
    let mut root_set = false;
    if init {
        for &w in &workers {
            b.set_time(w, t_fail.plus_us(b.rng.range(0, 3000)));
            let mut tb = Traceback::new(exc.clone())
                .with(p, "v0_worker_loop")
                .with(p, "worker_init_device");
            for f in &frames {
                tb = tb.with(p, f);
            }
            let spec = p.msg("v0_worker_exception").cloned();
            if let Some(spec) = spec {
                let msg = b.fill(&spec.text, &[("method", "init_device".into())]);
                let text = format!("{msg}\n{}", tb.render(p));
                let idx = b.push_exception_log(w, &spec, text, &exc, true);
                if !root_set {
                    b.root = Some(idx);
                    root_set = true;
                }
            }
        }
    }
    b.set_time(eng, t_fail.plus_ms(b.rng.range(5, 200)));
    // The engine process's `mp` executor runs rank 0 itself.
    let mut tb = Traceback::new(exc.clone())
        .with(p, "v0_engine_head")
        .with(p, "v0_engine_executor");
    tb = if init {
        tb.with(p, "v0_driver_init_device")
            .with(p, "worker_init_device")
    } else {
        tb.with(p, "v0_driver_load_model")
    };
    for f in &frames {
        tb = tb.with(p, f);
    }
    v0_engine_error(&mut b, eng, &exc, &tb, !root_set);
    b.finish(status, None)
}

/// `MQLLMEngine` logs the exception (`ERROR … [engine.py:…] <message>` and the traceback), kills
/// the worker processes, and re-raises: `Process SpawnProcess-1:`; the API server then reports
/// that the engine process failed to start.
fn v0_engine_error(b: &mut Builder<'_>, eng: usize, exc: &str, tb: &Traceback, root: bool) {
    let p = b.p;
    let message = exception_message(exc);
    if let Some(spec) = p.msg("v0_engine_error").cloned() {
        let text = format!("{message}\n{}", tb.render(p));
        let idx = b.push_exception_log(eng, &spec, text, exc, root);
        if root {
            b.root = Some(idx);
        }
    }
    let workers: Vec<usize> = (0..b.procs.len())
        .filter(|&i| b.procs[i].role.starts_with("Worker"))
        .collect();
    for &w in &workers {
        let pid = b.procs[w].pid;
        b.advance_ms(eng, 1, 40);
        b.log(
            eng,
            "v0_worker_died",
            &[("pid", pid.to_string()), ("code", "-15".into())],
        );
    }
    if !workers.is_empty() {
        b.log(eng, "v0_killing_workers", &[]);
    }
    let mut boot = Traceback::new(exc.to_string()).with(p, "v0_bootstrap");
    boot.frames.extend(tb.frames.iter().cloned());
    b.stderr_traceback(eng, Some("Process SpawnProcess-1:"), &boot, false);
    if b.root
        .is_some_and(|r| b.procs[b.events[r].proc].role == "APIServer")
    {
        // The API server is already gone.
        return;
    }
    b.set_time(API, b.now(eng).plus_ms(b.rng.range(100, 900)));
    let api = Traceback::new(p.error("v0_engine_failed").to_string())
        .with(p, "api_main")
        .with(p, "api_engine_client")
        .with(p, "v0_api_engine_failed");
    b.stderr_traceback(API, None, &api, false);
}
