//! The attention-backend selector model: which backend vLLM picks for a model on a GPU with a KV
//! cache dtype, per release — or why none fits.
//!
//! Main function: [`select`]. Two regimes, as in vLLM: before 0.12 a hard-coded chain per
//! platform; from 0.12 validated priority lists where every backend reports why it is invalid.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::catalog::{AttentionShape, GpuSpec, KvDeclaration, ModelPreset};
use crate::release::Switch;
use crate::version::Version;

/// What the selector needs to know.
#[derive(Clone, Debug)]
pub struct SelectorInput<'a> {
    pub version: Version,
    pub gpu: &'a GpuSpec,
    pub shape: AttentionShape,
    pub dtype: &'a str,
    pub kv_cache_dtype: &'a str,
    pub has_sink: bool,
    pub forced: Option<&'a str>,
}

/// How the chosen backend is announced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Announce {
    /// `Using X attention backend out of potential backends: (…)` (v0.12+, automatic choice).
    Auto { candidates: Vec<String> },
    /// `Using AttentionBackendEnum.X backend.` (v0.12+, explicit or pre-selected).
    Forced,
    /// `Using <title> backend on V1 engine.` (v0.8 – v0.11).
    V1Title { title: &'static str, line: u32 },
}

/// The selector's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    Chosen {
        backend: String,
        announce: Announce,
        /// The APIServer forces this KV block size for the backend (MLA on SM100/SM90).
        forced_block_size: Option<u32>,
    },
    /// No backend of the priority list is valid; reasons per backend, in priority order.
    NoValid { reasons: Vec<(String, Vec<String>)> },
    /// `--attention-backend X` names a backend that is not valid here.
    InvalidSelected {
        backend: String,
        reasons: Vec<String>,
    },
    /// The chosen backend's implementation raises `NotImplementedError` (v0.8 – v0.11).
    NotImplemented { error_id: &'static str },
}

impl Selection {
    pub fn backend(&self) -> Option<&str> {
        match self {
            Selection::Chosen { backend, .. } => Some(backend),
            _ => None,
        }
    }
}

/// `--kv-cache-dtype` as vLLM resolves it: from v0.14 an `auto` value follows the checkpoint's
/// ModelOpt `kv_cache_scheme` / `kv_cache_quant_algo` (→ `fp8_e4m3`). An explicit value is never
/// overridden. Returns the resolved dtype.
pub fn resolve_kv_cache_dtype(version: Version, requested: &str, model: &ModelPreset) -> String {
    if requested != "auto" {
        return requested.to_string();
    }
    match model.kv_cache_declaration() {
        Some(KvDeclaration::ModelOpt { .. }) if version.has(Switch::ModeloptKvSchemeForcesFp8) => {
            "fp8_e4m3".to_string()
        }
        // compressed-tensors forces "fp8" on standard attention layers whatever the flag says.
        Some(KvDeclaration::CompressedTensorsScheme) if !model.attention().mla => "fp8".to_string(),
        _ => "auto".to_string(),
    }
}

fn is_fp8(kv: &str) -> bool {
    kv.starts_with("fp8")
}

/// Decide the attention backend.
pub fn select(input: &SelectorInput<'_>) -> Selection {
    if !input.version.has(Switch::SelectorPriorityLists) {
        select_chain(input)
    } else {
        select_validated(input)
    }
}

fn select_chain(input: &SelectorInput<'_>) -> Selection {
    let t = tables();
    let link = t
        .chain
        .iter()
        .find(|c| c.mla == input.shape.mla && c.gpu.holds(input.gpu))
        .expect("data/backends.toml: the chain ends with an entry for every GPU");
    if is_fp8(input.kv_cache_dtype) {
        if let Some(error_id) = &link.fp8_not_implemented {
            let ok_gpu = link.fp8_ok.as_ref().is_some_and(|g| g.holds(input.gpu));
            let ok_release = link.fp8_ok_switch.is_some_and(|s| input.version.has(s.0));
            if !ok_gpu && !ok_release {
                return Selection::NotImplemented {
                    error_id: error_id.as_str(),
                };
            }
        }
    }
    Selection::Chosen {
        backend: link.backend.clone(),
        announce: Announce::V1Title {
            title: link.title.as_str(),
            line: link.line,
        },
        forced_block_size: None,
    }
}

fn priorities(input: &SelectorInput<'_>) -> &'static [String] {
    &tables()
        .priority
        .iter()
        .find(|p| {
            p.mla == input.shape.mla
                && p.gpu.holds(input.gpu)
                && p.switch.is_none_or(|s| input.version.has(s.0))
        })
        .expect("data/backends.toml: the priority lists end with an entry for every GPU")
        .order
}

/// Why `backend` cannot serve this configuration, in vLLM's `validate_configuration` order.
fn invalid_reasons(name: &str, input: &SelectorInput<'_>) -> Vec<String> {
    let unlisted;
    let backend = match tables().backend.get(name) {
        Some(b) => b,
        None => {
            unlisted = Backend::unlisted(name);
            &unlisted
        }
    };
    let gpu = input.gpu;
    let mut r = Vec::new();
    if !backend.head_sizes.is_empty() && !backend.head_sizes.contains(&input.shape.head_size) {
        r.push("head_size not supported".to_string());
    }
    if !backend
        .kv_cache_dtypes(input)
        .any(|d| d == input.kv_cache_dtype)
    {
        r.push("kv_cache_dtype not supported".to_string());
    }
    if backend.mla && !input.shape.mla {
        r.push("non-MLA not supported".to_string());
    }
    if !backend.mla && input.shape.mla {
        r.push("MLA not supported".to_string());
    }
    if input.has_sink && !backend.sinks.as_ref().is_some_and(|g| g.holds(gpu)) {
        r.push("sink setting not supported".to_string());
    }
    if backend.sparse && !input.shape.sparse {
        r.push("non-sparse not supported".to_string());
    }
    if !backend.sparse && backend.mla && input.shape.sparse {
        r.push("sparse not supported".to_string());
    }
    if !backend.capability.holds(gpu) {
        r.push("compute capability not supported".to_string());
    }
    if let Some(d) = &backend.device {
        if !d.gpus.holds(gpu) {
            r.push(d.reason.clone());
        }
    }
    if let Some(q) = &backend.qk_nope_head_dim {
        if input.shape.qk_nope_head_dim != q.equals {
            r.push(
                q.reason
                    .replace("{got}", &input.shape.qk_nope_head_dim.to_string()),
            );
        }
    }
    r
}

fn block_size(name: &str, forced: bool) -> Option<u32> {
    let b = tables().backend.get(name)?;
    if forced {
        b.forced_block_size.or(b.block_size)
    } else {
        b.block_size
    }
}

fn select_validated(input: &SelectorInput<'_>) -> Selection {
    let major = input.gpu.major();
    let mla = input.shape.mla;
    // SM100 pre-selection: MLA and not sparse → CUTLASS_MLA, block size 128 (v0.13+).
    let preselected = if mla
        && !input.shape.sparse
        && major == 10
        && input.forced.is_none()
        && input.version.has(Switch::Sm100MlaPreselectsCutlass)
    {
        Some("CUTLASS_MLA")
    } else {
        None
    };
    if let Some(name) = input.forced.or(preselected) {
        let reasons = invalid_reasons(name, input);
        if !reasons.is_empty() {
            return Selection::InvalidSelected {
                backend: name.to_string(),
                reasons,
            };
        }
        return Selection::Chosen {
            backend: name.to_string(),
            announce: Announce::Forced,
            forced_block_size: block_size(name, true),
        };
    }
    let mut valid = Vec::new();
    let mut reasons = Vec::new();
    for b in priorities(input) {
        let r = invalid_reasons(b, input);
        if r.is_empty() {
            valid.push(b.clone());
        } else {
            reasons.push((b.clone(), r));
        }
    }
    match valid.first() {
        None => Selection::NoValid { reasons },
        Some(first) => Selection::Chosen {
            backend: first.clone(),
            forced_block_size: block_size(first, false),
            announce: Announce::Auto { candidates: valid },
        },
    }
}

// ---- data/backends.toml ----

/// A set of GPUs: compute-capability majors, a capability range, or every GPU.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Gpus {
    major: Option<Vec<u32>>,
    min: Option<u32>,
    max: Option<u32>,
}

impl Gpus {
    fn holds(&self, gpu: &GpuSpec) -> bool {
        let cap = gpu.capability_int();
        self.major.as_ref().is_none_or(|m| m.contains(&gpu.major()))
            && self.min.is_none_or(|m| cap >= m)
            && self.max.is_none_or(|m| cap <= m)
    }
}

/// A switch named by its `data/switches.toml` key.
#[derive(Clone, Copy, Debug)]
struct SwitchKey(Switch);

impl<'de> Deserialize<'de> for SwitchKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = String::deserialize(d)?;
        Switch::from_key(&key)
            .map(SwitchKey)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown switch `{key}`")))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Priority {
    mla: bool,
    #[serde(default)]
    gpu: Gpus,
    switch: Option<SwitchKey>,
    order: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChainLink {
    mla: bool,
    #[serde(default)]
    gpu: Gpus,
    backend: String,
    title: String,
    line: u32,
    fp8_not_implemented: Option<String>,
    fp8_ok: Option<Gpus>,
    fp8_ok_switch: Option<SwitchKey>,
}

/// KV cache dtypes a backend accepts on some GPUs or from a release on.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KvExtra {
    #[serde(default)]
    gpu: Gpus,
    switch: Option<SwitchKey>,
    add: Vec<String>,
}

impl KvExtra {
    fn applies(&self, input: &SelectorInput<'_>) -> bool {
        self.gpu.holds(input.gpu) && self.switch.is_none_or(|s| input.version.has(s.0))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceCheck {
    gpus: Gpus,
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeadDimCheck {
    equals: u64,
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Backend {
    #[serde(default)]
    mla: bool,
    #[serde(default)]
    sparse: bool,
    #[serde(default)]
    head_sizes: Vec<u64>,
    kv_cache_dtypes: Vec<String>,
    #[serde(default)]
    kv_extra: Vec<KvExtra>,
    capability: Gpus,
    sinks: Option<Gpus>,
    device: Option<DeviceCheck>,
    qk_nope_head_dim: Option<HeadDimCheck>,
    block_size: Option<u32>,
    forced_block_size: Option<u32>,
}

impl Backend {
    /// A backend `--attention-backend` names that the tables do not list: plain dtypes, every
    /// GPU, no sinks; MLA when its name says so.
    fn unlisted(name: &str) -> Backend {
        let mla = name.ends_with("MLA");
        Backend {
            mla,
            sparse: false,
            head_sizes: if mla { vec![576] } else { Vec::new() },
            kv_cache_dtypes: vec!["auto".to_string()],
            kv_extra: Vec::new(),
            capability: Gpus::default(),
            sinks: None,
            device: None,
            qk_nope_head_dim: None,
            block_size: None,
            forced_block_size: None,
        }
    }

    fn kv_cache_dtypes<'a>(
        &'a self,
        input: &'a SelectorInput<'_>,
    ) -> impl Iterator<Item = &'a str> {
        let extra = self
            .kv_extra
            .iter()
            .chain(&tables().all_kv_extra)
            .filter(|e| e.applies(input))
            .flat_map(|e| &e.add);
        self.kv_cache_dtypes.iter().chain(extra).map(String::as_str)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tables {
    priority: Vec<Priority>,
    chain: Vec<ChainLink>,
    all_kv_extra: Vec<KvExtra>,
    backend: BTreeMap<String, Backend>,
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        let t: Tables = toml::from_str(include_str!("../data/backends.toml"))
            .unwrap_or_else(|e| panic!("data/backends.toml is invalid: {e}"));
        for name in t.priority.iter().flat_map(|p| &p.order) {
            assert!(
                t.backend.contains_key(name),
                "data/backends.toml: priority list names unknown backend {name}"
            );
        }
        t
    })
}

/// `{NAME: [r1, r2], NAME2: [r3]}` without the braces, as vLLM prints the reasons.
pub fn reasons_repr(reasons: &[(String, Vec<String>)]) -> String {
    reasons
        .iter()
        .map(|(b, r)| format!("{b}: [{}]", r.join(", ")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The candidate list of the success line: a tuple before v0.16, a list from v0.16.
pub fn candidates_repr(version: Version, candidates: &[String]) -> String {
    let quoted: Vec<String> = candidates.iter().map(|c| format!("'{c}'")).collect();
    if version.has(Switch::CandidatesAsList) {
        format!("[{}]", quoted.join(", "))
    } else if quoted.len() == 1 {
        format!("({},)", quoted[0])
    } else {
        format!("({})", quoted.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    fn input<'a>(v: &str, gpu: &'a GpuSpec, model: &ModelPreset, kv: &'a str) -> SelectorInput<'a> {
        SelectorInput {
            version: Version::parse(v).unwrap(),
            gpu,
            shape: model.attention(),
            dtype: "bfloat16",
            kv_cache_dtype: kv,
            has_sink: model.sinks,
            forced: None,
        }
    }

    #[test]
    fn kimi_on_sm120_with_fp8_has_no_backend_on_0_15() {
        let gpu = catalog::gpu("rtx-pro-6000-blackwell").unwrap();
        let kimi = catalog::model("kimi-k2.5-nvfp4").unwrap();
        let v = Version::parse("0.15.1").unwrap();
        let kv = resolve_kv_cache_dtype(v, "auto", kimi);
        assert_eq!(kv, "fp8_e4m3");
        let s = select(&input("0.15.1", gpu, kimi, &kv));
        let Selection::NoValid { reasons } = s else {
            panic!("{s:?}")
        };
        assert_eq!(
            reasons_repr(&reasons),
            "FLASH_ATTN_MLA: [kv_cache_dtype not supported, compute capability not supported, FlashAttention MLA not supported on this device], FLASHMLA: [compute capability not supported, FlashMLA Dense is only supported on Hopper devices.], FLASHINFER_MLA: [compute capability not supported], TRITON_MLA: [kv_cache_dtype not supported], FLASHMLA_SPARSE: [kv_cache_dtype not supported, non-sparse not supported, compute capability not supported]"
        );
        // The workaround: an explicit bfloat16 KV cache is never overridden.
        let s = select(&input("0.15.1", gpu, kimi, "bfloat16"));
        assert_eq!(s.backend(), Some("TRITON_MLA"));
        // v0.18 TRITON_MLA accepts fp8.
        let s = select(&input("0.18.1", gpu, kimi, "fp8_e4m3"));
        assert_eq!(s.backend(), Some("TRITON_MLA"));
    }

    #[test]
    fn older_chains() {
        let gpu = catalog::gpu("rtx-pro-6000-blackwell").unwrap();
        let ds = catalog::model("deepseek-r1-0528-nvfp4").unwrap();
        let v = Version::parse("0.11.0").unwrap();
        assert_eq!(resolve_kv_cache_dtype(v, "auto", ds), "auto");
        assert_eq!(
            select(&input("0.11.0", gpu, ds, "auto")).backend(),
            Some("TRITON_MLA")
        );
        assert_eq!(
            select(&input("0.11.0", gpu, ds, "fp8")),
            Selection::NotImplemented {
                error_id: "triton_mla_fp8"
            }
        );
        let b200 = catalog::gpu("b200").unwrap();
        let kimi = catalog::model("kimi-k2.5-nvfp4").unwrap();
        assert_eq!(
            select(&input("0.15.1", b200, kimi, "fp8_e4m3")).backend(),
            Some("CUTLASS_MLA")
        );
        let h200 = catalog::gpu("h200").unwrap();
        assert_eq!(
            select(&input("0.15.1", h200, kimi, "fp8_e4m3")).backend(),
            Some("FLASHMLA")
        );
    }

    #[test]
    fn the_backend_tables_cover_every_gpu_and_release() {
        // Every priority list and chain ends with an entry for any GPU, and every backend they
        // name is described (checked when the tables load).
        for gpu in catalog::gpus() {
            for v in crate::profile::Profile::releases() {
                for model in catalog::models() {
                    for kv in ["auto", "fp8", "fp8_e4m3", "bfloat16"] {
                        let mut i = input("0.15.1", gpu, model, kv);
                        i.version = v;
                        let _ = select(&i);
                    }
                }
            }
        }
        let t = tables();
        for mla in [true, false] {
            assert!(t.priority.iter().any(|p| p.mla == mla
                && p.switch.is_none()
                && p.gpu.major.is_none()
                && p.gpu.min.is_none()
                && p.gpu.max.is_none()));
            assert!(t.chain.iter().any(|c| c.mla == mla
                && c.gpu.major.is_none()
                && c.gpu.min.is_none()
                && c.gpu.max.is_none()));
        }
    }

    #[test]
    fn candidates_format() {
        let v = Version::parse("0.15.1").unwrap();
        assert_eq!(
            candidates_repr(v, &["TRITON_MLA".into()]),
            "('TRITON_MLA',)"
        );
        let v = Version::parse("0.18.1").unwrap();
        assert_eq!(candidates_repr(v, &["TRITON_MLA".into()]), "['TRITON_MLA']");
    }
}
