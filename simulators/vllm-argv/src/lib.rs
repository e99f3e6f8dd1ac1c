//! The vLLM command line a scenario (or a user, through the fake server) runs: `vllm serve MODEL
//! [flags]` or `python -m vllm.entrypoints.openai.api_server --model MODEL [flags]`.
//!
//! Main type: [`ServeArgs`]. Parsing never fails on an odd flag: argparse's verdict on it is part
//! of the simulation ([`CliProblem`]), because vLLM prints it as its own crash.

/// How the server was invoked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entrypoint {
    /// `vllm serve MODEL …`
    Serve,
    /// `python -m vllm.entrypoints.openai.api_server --model MODEL …`
    ApiServerModule,
}

/// A flag vLLM's argparse rejects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CliProblem {
    /// `unrecognized arguments: --temperature 0.8`
    Unrecognized(Vec<String>),
    /// `argument --tensor-parallel-size/-tp: invalid int value: 'abc'`
    InvalidValue {
        flag: String,
        kind: &'static str,
        value: String,
    },
    /// `argument --kv-cache-dtype: invalid choice: 'fp9' (choose from …)`
    InvalidChoice {
        flag: String,
        value: String,
        choices: &'static [&'static str],
    },
    /// A flag that needs a value was last.
    MissingValue { flag: String },
}

/// The parsed command line with vLLM's defaults filled in.
#[derive(Clone, Debug)]
pub struct ServeArgs {
    pub entrypoint: Entrypoint,
    /// The argv as given (program first).
    pub argv: Vec<String>,
    pub model: String,
    pub tensor_parallel_size: u32,
    pub pipeline_parallel_size: u32,
    pub data_parallel_size: u32,
    pub kv_cache_dtype: String,
    pub kv_cache_dtype_explicit: bool,
    pub host: String,
    pub port: u16,
    pub max_model_len: Option<u64>,
    pub gpu_memory_utilization: f64,
    pub quantization: Option<String>,
    pub dtype: String,
    pub attention_backend: Option<String>,
    pub distributed_executor_backend: Option<String>,
    pub trust_remote_code: bool,
    pub enforce_eager: bool,
    pub enable_expert_parallel: bool,
    pub max_num_seqs: Option<u64>,
    pub max_num_batched_tokens: Option<u64>,
    pub served_model_name: Option<String>,
    /// Non-default arguments in argparse definition order, as `non-default args` prints them.
    pub non_default: Vec<(String, ArgValue)>,
    pub problem: Option<CliProblem>,
}

/// A value in the `non-default args` dict.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl ArgValue {
    /// Python `repr` of the value.
    pub fn repr(&self) -> String {
        match self {
            ArgValue::Str(s) => format!("'{s}'"),
            ArgValue::Int(i) => i.to_string(),
            ArgValue::Float(f) => format!("{f}"),
            ArgValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        }
    }
}

/// `--kv-cache-dtype` values some release accepts (0.15's list first, then later releases'
/// additions: `float16` from 0.18, per-token-head, NVFP4 and TurboQuant caches by 0.24, more by 0.33).
/// Which ones a given release takes is its profile's list: the simulator refuses the others
/// as that release does.
pub const KV_CACHE_DTYPES: &[&str] = &[
    "auto",
    "bfloat16",
    "fp8",
    "fp8_ds_mla",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "float16",
    "fp8_per_token_head",
    "int8_per_token_head",
    "nvfp4",
    "turboquant_3bit_nc",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_k8v4",
    "int4_per_token_head",
    "nvfp4_4over6",
    "nvfp4_ds_mla",
    "octave_k3v3",
    "octave_k3v3_compact",
    "octave_k3v4",
    "ultraquant_4bit",
];

/// The `--kv-cache-dtype` choices of v0.15 (the first seven above), the default list of a
/// release's profile.
pub const KV_CACHE_DTYPES_V0_15: &[&str] = KV_CACHE_DTYPES.split_at(7).0;
const ATTENTION_BACKENDS: &[&str] = &[
    "FLASH_ATTN",
    "TRITON_ATTN",
    "FLASHINFER",
    "FLASHINFER_MLA",
    "TRITON_MLA",
    "CUTLASS_MLA",
    "FLASHMLA",
    "FLASHMLA_SPARSE",
    "FLASH_ATTN_MLA",
    "FLEX_ATTENTION",
    "TREE_ATTN",
];

#[derive(Clone, Copy)]
enum Kind {
    Int,
    Float,
    Str,
    Choice(&'static [&'static str]),
    Flag,
}

/// Flags faultkit understands, in vLLM's argparse definition order (which is the order of the
/// `non-default args` dict): (long, short, dest, kind).
const FLAGS: &[(&str, Option<&str>, &str, Kind)] = &[
    ("--host", None, "host", Kind::Str),
    ("--port", None, "port", Kind::Int),
    ("--api-key", None, "api_key", Kind::Str),
    ("--chat-template", None, "chat_template", Kind::Str),
    ("--tool-call-parser", None, "tool_call_parser", Kind::Str),
    ("--model", None, "model", Kind::Str),
    ("--tokenizer", None, "tokenizer", Kind::Str),
    ("--trust-remote-code", None, "trust_remote_code", Kind::Flag),
    ("--dtype", None, "dtype", Kind::Str),
    ("--seed", None, "seed", Kind::Int),
    ("--max-model-len", None, "max_model_len", Kind::Int),
    ("--quantization", Some("-q"), "quantization", Kind::Str),
    ("--enforce-eager", None, "enforce_eager", Kind::Flag),
    ("--served-model-name", None, "served_model_name", Kind::Str),
    ("--download-dir", None, "download_dir", Kind::Str),
    ("--load-format", None, "load_format", Kind::Str),
    (
        "--distributed-executor-backend",
        None,
        "distributed_executor_backend",
        Kind::Str,
    ),
    (
        "--pipeline-parallel-size",
        Some("-pp"),
        "pipeline_parallel_size",
        Kind::Int,
    ),
    (
        "--tensor-parallel-size",
        Some("-tp"),
        "tensor_parallel_size",
        Kind::Int,
    ),
    (
        "--data-parallel-size",
        Some("-dp"),
        "data_parallel_size",
        Kind::Int,
    ),
    (
        "--enable-expert-parallel",
        None,
        "enable_expert_parallel",
        Kind::Flag,
    ),
    (
        "--disable-custom-all-reduce",
        None,
        "disable_custom_all_reduce",
        Kind::Flag,
    ),
    (
        "--attention-backend",
        None,
        "attention_backend",
        Kind::Choice(ATTENTION_BACKENDS),
    ),
    ("--block-size", None, "block_size", Kind::Int),
    (
        "--gpu-memory-utilization",
        None,
        "gpu_memory_utilization",
        Kind::Float,
    ),
    ("--swap-space", None, "swap_space", Kind::Float),
    (
        "--kv-cache-dtype",
        None,
        "kv_cache_dtype",
        Kind::Choice(KV_CACHE_DTYPES),
    ),
    (
        "--enable-prefix-caching",
        None,
        "enable_prefix_caching",
        Kind::Flag,
    ),
    (
        "--max-num-batched-tokens",
        None,
        "max_num_batched_tokens",
        Kind::Int,
    ),
    ("--max-num-seqs", None, "max_num_seqs", Kind::Int),
    ("--enable-lora", None, "enable_lora", Kind::Flag),
    ("--max-lora-rank", None, "max_lora_rank", Kind::Int),
    (
        "--disable-log-requests",
        None,
        "disable_log_requests",
        Kind::Flag,
    ),
    ("--disable-log-stats", None, "disable_log_stats", Kind::Flag),
    ("--generation-config", None, "generation_config", Kind::Str),
];

/// Whether a value equals the flag's argparse default (`--port 8000`, `-tp 1`).
fn is_default(dest: &str, v: &ArgValue) -> bool {
    match (dest, v) {
        ("port", ArgValue::Int(8000)) => true,
        (
            "tensor_parallel_size" | "pipeline_parallel_size" | "data_parallel_size",
            ArgValue::Int(1),
        ) => true,
        ("kv_cache_dtype" | "dtype" | "load_format", ArgValue::Str(s)) => s == "auto",
        ("gpu_memory_utilization", ArgValue::Float(f)) => (*f - 0.9).abs() < 1e-12,
        ("swap_space", ArgValue::Float(f)) => (*f - 4.0).abs() < 1e-12,
        _ => false,
    }
}

impl ServeArgs {
    /// Parses a command string (shell words) into arguments. `Err` only when the string is not a
    /// vLLM server command at all.
    pub fn parse_command(command: &str) -> Result<ServeArgs, String> {
        let argv =
            shlex::split(command).ok_or_else(|| "unbalanced quotes in command".to_string())?;
        ServeArgs::parse_argv(&argv)
    }

    /// Parses an argv (program first).
    pub fn parse_argv(argv: &[String]) -> Result<ServeArgs, String> {
        let prog = argv.first().ok_or("empty command")?;
        let base = prog.rsplit('/').next().unwrap_or(prog);
        let (entrypoint, rest) = if base == "vllm" {
            match argv.get(1).map(String::as_str) {
                Some("serve") => (Entrypoint::Serve, &argv[2..]),
                other => {
                    return Err(format!(
                        "expected `vllm serve …`, found `vllm {}`",
                        other.unwrap_or("")
                    ))
                }
            }
        } else if base.starts_with("python") {
            let m = argv
                .iter()
                .position(|a| a == "-m")
                .ok_or("expected `python -m …`")?;
            match argv.get(m + 1).map(String::as_str) {
                Some("vllm.entrypoints.openai.api_server") => {
                    (Entrypoint::ApiServerModule, &argv[m + 2..])
                }
                Some("vllm.entrypoints.cli.main")
                    if argv.get(m + 2).map(String::as_str) == Some("serve") =>
                {
                    (Entrypoint::Serve, &argv[m + 3..])
                }
                other => return Err(format!("unsupported module {:?}", other.unwrap_or(""))),
            }
        } else {
            return Err(format!("`{prog}` is not a vLLM server command"));
        };

        let mut args = ServeArgs {
            entrypoint,
            argv: argv.to_vec(),
            model: String::new(),
            tensor_parallel_size: 1,
            pipeline_parallel_size: 1,
            data_parallel_size: 1,
            kv_cache_dtype: "auto".into(),
            kv_cache_dtype_explicit: false,
            host: "0.0.0.0".into(),
            port: 8000,
            max_model_len: None,
            gpu_memory_utilization: 0.9,
            quantization: None,
            dtype: "auto".into(),
            attention_backend: None,
            distributed_executor_backend: None,
            trust_remote_code: false,
            enforce_eager: false,
            enable_expert_parallel: false,
            max_num_seqs: None,
            max_num_batched_tokens: None,
            served_model_name: None,
            non_default: Vec::new(),
            problem: None,
        };
        let mut positional: Vec<String> = Vec::new();
        let mut unrecognized: Vec<String> = Vec::new();
        let mut given: Vec<(usize, String, ArgValue)> = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            let a = &rest[i];
            i += 1;
            if !a.starts_with('-') || a == "-" {
                positional.push(a.clone());
                continue;
            }
            let (name, inline) = match a.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (a.clone(), None),
            };
            let Some((idx, spec)) = FLAGS
                .iter()
                .enumerate()
                .find(|(_, (long, short, _, _))| *long == name || *short == Some(name.as_str()))
            else {
                unrecognized.push(a.clone());
                // argparse reports the flag and the value that follows it.
                if inline.is_none() {
                    if let Some(next) = rest.get(i) {
                        if !next.starts_with('-') {
                            unrecognized.push(next.clone());
                            i += 1;
                        }
                    }
                }
                continue;
            };
            let (long, short, dest, kind) = *spec;
            let shown = match short {
                Some(s) => format!("{long}/{s}"),
                None => long.to_string(),
            };
            if let Kind::Flag = kind {
                given.push((idx, dest.to_string(), ArgValue::Bool(true)));
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => match rest.get(i) {
                    Some(v) => {
                        i += 1;
                        v.clone()
                    }
                    None => {
                        args.problem
                            .get_or_insert(CliProblem::MissingValue { flag: shown });
                        continue;
                    }
                },
            };
            let parsed = match kind {
                Kind::Int => value.parse::<i64>().map(ArgValue::Int).map_err(|_| "int"),
                Kind::Float => value
                    .parse::<f64>()
                    .map(ArgValue::Float)
                    .map_err(|_| "float"),
                Kind::Str => Ok(ArgValue::Str(value.clone())),
                Kind::Choice(choices) => {
                    if choices.contains(&value.as_str()) {
                        Ok(ArgValue::Str(value.clone()))
                    } else {
                        // Refused by argparse where the release lists the choices; kept as given
                        // for the releases that take any string and check it later (0.33's
                        // `CacheConfig`), whose `non-default args` shows it.
                        args.problem.get_or_insert(CliProblem::InvalidChoice {
                            flag: shown.clone(),
                            value: value.clone(),
                            choices,
                        });
                        Ok(ArgValue::Str(value.clone()))
                    }
                }
                Kind::Flag => unreachable!("flags handled above"),
            };
            match parsed {
                Ok(v) => given.push((idx, dest.to_string(), v)),
                Err(kind) => {
                    args.problem.get_or_insert(CliProblem::InvalidValue {
                        flag: shown,
                        kind,
                        value,
                    });
                }
            }
        }
        if !unrecognized.is_empty() && args.problem.is_none() {
            args.problem = Some(CliProblem::Unrecognized(unrecognized));
        }

        for (_, dest, v) in &given {
            args.apply(dest, v);
        }
        if entrypoint == Entrypoint::Serve {
            if let Some(m) = positional.first() {
                args.model = m.clone();
            }
        }
        if args.model.is_empty() {
            args.model = "Qwen/Qwen3-0.6B".into();
        }
        // The non-default dict in parser order: `vllm serve` adds model_tag and api_server_count
        // first, and sets `model` from the positional (the first engine argument, after the
        // frontend's own options).
        if entrypoint == Entrypoint::Serve {
            args.non_default
                .push(("model_tag".into(), ArgValue::Str(args.model.clone())));
            args.non_default
                .push(("api_server_count".into(), ArgValue::Int(1)));
            given.retain(|(_, dest, _)| dest != "model");
            let model_idx = FLAGS
                .iter()
                .position(|(_, _, dest, _)| *dest == "model")
                .unwrap_or(0);
            given.push((model_idx, "model".into(), ArgValue::Str(args.model.clone())));
        }
        given.sort_by_key(|(idx, _, _)| *idx);
        for (_, dest, v) in given {
            // argparse keeps a flag given with its default value out of the dict.
            if is_default(&dest, &v) {
                continue;
            }
            args.non_default.push((dest, v));
        }
        Ok(args)
    }

    fn apply(&mut self, dest: &str, v: &ArgValue) {
        let int = |v: &ArgValue| match v {
            ArgValue::Int(i) => *i,
            _ => 0,
        };
        let s = |v: &ArgValue| match v {
            ArgValue::Str(s) => s.clone(),
            _ => String::new(),
        };
        match dest {
            "model" => self.model = s(v),
            "port" => self.port = u16::try_from(int(v)).unwrap_or(8000),
            "host" => self.host = s(v),
            "tensor_parallel_size" => self.tensor_parallel_size = int(v).clamp(0, 1024) as u32,
            "pipeline_parallel_size" => self.pipeline_parallel_size = int(v).clamp(0, 1024) as u32,
            "data_parallel_size" => self.data_parallel_size = int(v).clamp(0, 1024) as u32,
            "kv_cache_dtype" => {
                self.kv_cache_dtype = s(v);
                self.kv_cache_dtype_explicit = self.kv_cache_dtype != "auto";
            }
            "max_model_len" => self.max_model_len = u64::try_from(int(v)).ok(),
            "gpu_memory_utilization" => {
                if let ArgValue::Float(f) = v {
                    self.gpu_memory_utilization = *f;
                }
            }
            "quantization" => self.quantization = Some(s(v)),
            "dtype" => self.dtype = s(v),
            "attention_backend" => self.attention_backend = Some(s(v)),
            "distributed_executor_backend" => self.distributed_executor_backend = Some(s(v)),
            "trust_remote_code" => self.trust_remote_code = true,
            "enforce_eager" => self.enforce_eager = true,
            "enable_expert_parallel" => self.enable_expert_parallel = true,
            "max_num_seqs" => self.max_num_seqs = u64::try_from(int(v)).ok(),
            "max_num_batched_tokens" => self.max_num_batched_tokens = u64::try_from(int(v)).ok(),
            "served_model_name" => self.served_model_name = Some(s(v)),
            _ => {}
        }
    }

    /// TP × PP: the number of GPUs (and worker processes) one engine core uses.
    pub fn world_size(&self) -> u32 {
        self.tensor_parallel_size.max(1) * self.pipeline_parallel_size.max(1)
    }

    /// The `non-default args: {…}` dict as Python prints it.
    pub fn non_default_repr(&self) -> String {
        let items: Vec<String> = self
            .non_default
            .iter()
            .map(|(k, v)| format!("'{k}': {}", v.repr()))
            .collect();
        format!("{{{}}}", items.join(", "))
    }

    /// The served model name (what `/v1/models` lists).
    pub fn served_name(&self) -> &str {
        self.served_model_name.as_deref().unwrap_or(&self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_form_and_non_default_order() {
        let a = ServeArgs::parse_command(
            "vllm serve nvidia/Kimi-K2.5-NVFP4 --tensor-parallel-size 8 --trust-remote-code",
        )
        .unwrap();
        assert_eq!(a.tensor_parallel_size, 8);
        assert!(a.trust_remote_code);
        assert_eq!(
            a.non_default_repr(),
            "{'model_tag': 'nvidia/Kimi-K2.5-NVFP4', 'api_server_count': 1, 'model': 'nvidia/Kimi-K2.5-NVFP4', 'trust_remote_code': True, 'tensor_parallel_size': 8}"
        );
        assert!(a.problem.is_none());
    }

    #[test]
    fn module_form() {
        let a = ServeArgs::parse_command(
            "python3 -m vllm.entrypoints.openai.api_server --model /m --port 9000 -tp 2",
        )
        .unwrap();
        assert_eq!(a.model, "/m");
        assert_eq!(a.port, 9000);
        assert_eq!(a.tensor_parallel_size, 2);
        assert_eq!(a.entrypoint, Entrypoint::ApiServerModule);
    }

    #[test]
    fn problems_are_data() {
        let a = ServeArgs::parse_command("vllm serve m --temperature 0.8").unwrap();
        assert_eq!(
            a.problem,
            Some(CliProblem::Unrecognized(vec![
                "--temperature".into(),
                "0.8".into()
            ]))
        );
        let a = ServeArgs::parse_command("vllm serve m -tp abc").unwrap();
        assert!(matches!(a.problem, Some(CliProblem::InvalidValue { .. })));
        let a = ServeArgs::parse_command("vllm serve m --kv-cache-dtype fp9").unwrap();
        assert!(matches!(a.problem, Some(CliProblem::InvalidChoice { .. })));
        assert!(ServeArgs::parse_command("ls -l").is_err());
    }
}
