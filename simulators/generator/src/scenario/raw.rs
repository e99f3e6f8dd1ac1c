//! The scenario TOML mirrored field for field (serde, unknown keys are errors): the first of the
//! two phases. Nothing here is checked; `Scenario::from_toml` validates.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// The scenario TOML, field for field.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub summary: Spanned<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub runners: Option<Spanned<Vec<String>>>,
    pub vllm: Spanned<String>,
    pub command: Spanned<String>,
    pub gpus: Spanned<RawGpus>,
    #[serde(default)]
    pub model: Option<Spanned<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub host: Option<Spanned<RawHost>>,
    #[serde(default)]
    pub faults: Vec<Spanned<RawFault>>,
    #[serde(default)]
    pub variant: Vec<Spanned<RawVariant>>,
    /// Renderings applied to the simulated log, in order (`render = ["kubectl-prefix"]`).
    #[serde(default)]
    pub render: Option<Spanned<Vec<String>>>,
    /// The public real log this scenario is the twin of (`batch-07/408-….log` under
    /// `scenarios/real/`): `cargo xtask realism --public` compares the two.
    #[serde(default)]
    pub real: Option<Spanned<String>>,
    pub expect: Spanned<RawExpect>,
}

/// `[[variant]]`: the same case as it was run on older releases (another command or model).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    pub before: Spanned<String>,
    #[serde(default)]
    pub command: Option<Spanned<String>>,
    #[serde(default)]
    pub model: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGpus {
    pub model: Spanned<String>,
    pub count: Spanned<u32>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawHost {
    #[serde(default)]
    pub ram_gib: Option<f64>,
    #[serde(default)]
    pub shm_mib: Option<u64>,
    #[serde(default)]
    pub ports_in_use: Vec<u16>,
    #[serde(default)]
    pub missing_modules: Vec<String>,
    #[serde(default)]
    pub nccl: Option<Spanned<String>>,
    #[serde(default)]
    pub platform: Option<Spanned<String>>,
    #[serde(default)]
    pub nodes: Option<Spanned<u32>>,
    #[serde(default)]
    pub platform_plugin: Option<Spanned<String>>,
    #[serde(default)]
    pub cpus: Option<u32>,
    #[serde(default)]
    pub numa_nodes: Option<u32>,
    #[serde(default)]
    pub cpu_isa: Option<Spanned<String>>,
    #[serde(default)]
    pub ulimit_nofile: Option<u64>,
    #[serde(default)]
    pub python: Option<Spanned<String>>,
    #[serde(default)]
    pub python_home: Option<String>,
    #[serde(default)]
    pub venv: Option<String>,
    #[serde(default)]
    pub transformers: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFault {
    pub kind: Spanned<String>,
    #[serde(default)]
    pub after: Option<Spanned<String>>,
    #[serde(default)]
    pub new_launch_lines: Option<u32>,
    #[serde(default)]
    pub new_command: Option<Spanned<String>>,
    #[serde(default)]
    pub append: Option<bool>,
    #[serde(default)]
    pub process: Option<Spanned<String>>,
    #[serde(default)]
    pub signal: Option<Spanned<String>>,
    #[serde(default)]
    pub at: Option<Spanned<String>>,
    #[serde(default)]
    pub gib: Option<f64>,
    #[serde(default)]
    pub node: Option<u32>,
    #[serde(default)]
    pub earlier_launches: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    pub status: Spanned<String>,
    #[serde(default)]
    pub root_cause: Option<Spanned<String>>,
    #[serde(default)]
    pub process: Option<String>,
    #[serde(default)]
    pub stale: Option<bool>,
    #[serde(default)]
    pub damage: Option<Vec<Spanned<String>>>,
}
