//! Behaviour switches between vLLM releases ([`Switch`]): the code of each behaviour lives
//! where it acts (the selector, the deployment's checks, the script), the first release that
//! has it lives in `data/switches.toml`, read once. `version.has(Switch::CandidatesAsList)`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::version::Version;

/// A behaviour that changed in some vLLM release (see `data/switches.toml` for each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Switch {
    PortBoundBeforeEngine,
    ServeUsageOptionalModel,
    V0NamespaceArgs,
    Fp8QuantNeedsSm89,
    FlashAttnFp8KvAnyGpu,
    TpHeadsCheckedInVllmConfig,
    Sm120Kernels,
    SelectorPriorityLists,
    SelectorAnnouncesCandidates,
    Sm100MlaPreselectsCutlass,
    LoggingColorEnv,
    ModeloptKvSchemeForcesFp8,
    Sm100MlaFlashinferFirst,
    KvDtypeBfloat16,
    CandidatesAsList,
    WorkersWatchParent,
    TritonMlaFp8Kv,
    KvDtypeFloat16,
    WorldSizeCheckedAgainstGpus,
    WorldSizeErrorNamesBackends,
    RayPgTimeoutCountsGpus,
    KvDtypeCheckedByCacheConfig,
    CpuMpExecutorAtWorldOne,
    CpuOmpBoundByExecutor,
    CpuX86RequiresTriton,
}

impl Switch {
    /// Every switch, in file order.
    pub const ALL: [Switch; 25] = [
        Switch::PortBoundBeforeEngine,
        Switch::ServeUsageOptionalModel,
        Switch::V0NamespaceArgs,
        Switch::Fp8QuantNeedsSm89,
        Switch::FlashAttnFp8KvAnyGpu,
        Switch::TpHeadsCheckedInVllmConfig,
        Switch::Sm120Kernels,
        Switch::SelectorPriorityLists,
        Switch::SelectorAnnouncesCandidates,
        Switch::Sm100MlaPreselectsCutlass,
        Switch::LoggingColorEnv,
        Switch::ModeloptKvSchemeForcesFp8,
        Switch::Sm100MlaFlashinferFirst,
        Switch::KvDtypeBfloat16,
        Switch::CandidatesAsList,
        Switch::WorkersWatchParent,
        Switch::TritonMlaFp8Kv,
        Switch::KvDtypeFloat16,
        Switch::WorldSizeCheckedAgainstGpus,
        Switch::WorldSizeErrorNamesBackends,
        Switch::RayPgTimeoutCountsGpus,
        Switch::KvDtypeCheckedByCacheConfig,
        Switch::CpuMpExecutorAtWorldOne,
        Switch::CpuOmpBoundByExecutor,
        Switch::CpuX86RequiresTriton,
    ];

    /// The switch's key in `data/switches.toml`.
    pub fn key(self) -> &'static str {
        match self {
            Switch::PortBoundBeforeEngine => "port_bound_before_engine",
            Switch::ServeUsageOptionalModel => "serve_usage_optional_model",
            Switch::V0NamespaceArgs => "v0_namespace_args",
            Switch::Fp8QuantNeedsSm89 => "fp8_quant_needs_sm89",
            Switch::FlashAttnFp8KvAnyGpu => "flash_attn_fp8_kv_any_gpu",
            Switch::TpHeadsCheckedInVllmConfig => "tp_heads_checked_in_vllm_config",
            Switch::Sm120Kernels => "sm120_kernels",
            Switch::SelectorPriorityLists => "selector_priority_lists",
            Switch::SelectorAnnouncesCandidates => "selector_announces_candidates",
            Switch::Sm100MlaPreselectsCutlass => "sm100_mla_preselects_cutlass",
            Switch::LoggingColorEnv => "logging_color_env",
            Switch::ModeloptKvSchemeForcesFp8 => "modelopt_kv_scheme_forces_fp8",
            Switch::Sm100MlaFlashinferFirst => "sm100_mla_flashinfer_first",
            Switch::KvDtypeBfloat16 => "kv_dtype_bfloat16",
            Switch::CandidatesAsList => "candidates_as_list",
            Switch::WorkersWatchParent => "workers_watch_parent",
            Switch::TritonMlaFp8Kv => "triton_mla_fp8_kv",
            Switch::KvDtypeFloat16 => "kv_dtype_float16",
            Switch::WorldSizeCheckedAgainstGpus => "world_size_checked_against_gpus",
            Switch::WorldSizeErrorNamesBackends => "world_size_error_names_backends",
            Switch::RayPgTimeoutCountsGpus => "ray_pg_timeout_counts_gpus",
            Switch::KvDtypeCheckedByCacheConfig => "kv_cache_dtype_checked_by_cache_config",
            Switch::CpuMpExecutorAtWorldOne => "cpu_mp_executor_at_world_one",
            Switch::CpuOmpBoundByExecutor => "cpu_omp_bound_by_executor",
            Switch::CpuX86RequiresTriton => "cpu_x86_requires_triton",
        }
    }

    /// The switch whose `data/switches.toml` key is `key`.
    pub fn from_key(key: &str) -> Option<Switch> {
        Switch::ALL.into_iter().find(|s| s.key() == key)
    }

    /// The first release with this behaviour.
    pub fn since(self) -> Version {
        table()[self.key()]
    }
}

impl Version {
    /// This release has the behaviour `s` (it is not older than the release that brought it).
    pub fn has(self, s: Switch) -> bool {
        self >= s.since()
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    since: String,
    #[allow(dead_code)]
    what: String,
}

fn table() -> &'static BTreeMap<String, Version> {
    static T: OnceLock<BTreeMap<String, Version>> = OnceLock::new();
    T.get_or_init(|| {
        let raw: BTreeMap<String, RawSwitch> =
            toml::from_str(include_str!("../data/switches.toml"))
                .expect("data/switches.toml is valid (checked by tests)");
        raw.into_iter()
            .map(|(k, v)| {
                let since = Version::parse(&v.since)
                    .unwrap_or_else(|| panic!("data/switches.toml: {k}: bad version {}", v.since));
                (k, since)
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_switch_and_nothing_else() {
        let t = table();
        for s in Switch::ALL {
            assert!(
                t.contains_key(s.key()),
                "data/switches.toml lacks {}",
                s.key()
            );
        }
        assert_eq!(
            t.len(),
            Switch::ALL.len(),
            "data/switches.toml has unknown switches"
        );
    }

    #[test]
    fn a_switch_holds_from_its_release_on() {
        let s = Switch::CandidatesAsList;
        assert!(Version::new(0, 16, 0).has(s));
        assert!(!Version::new(0, 15, 1).has(s));
    }
}
