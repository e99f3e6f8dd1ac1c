//! The attention-backend selector model: which backend vLLM picks for a model on a GPU with a KV
//! cache dtype, per release — or why none fits.
//!
//! Main function: [`select`]. Two regimes, as in vLLM: before 0.12 a hard-coded chain per
//! platform; from 0.12 validated priority lists where every backend reports why it is invalid.

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
    let major = input.gpu.major();
    let fp8 = is_fp8(input.kv_cache_dtype);
    // (backend, title, cuda.py line of the info_once call)
    let (backend, title, line) = if input.shape.mla {
        if major == 10 {
            ("CUTLASS_MLA", "Cutlass MLA", 242)
        } else if major == 9 {
            ("FLASHMLA", "FlashMLA", 250)
        } else {
            ("TRITON_MLA", "Triton MLA", 262)
        }
    } else if major >= 8 {
        ("FLASH_ATTN", "Flash Attention", 284)
    } else {
        ("FLEX_ATTENTION", "FlexAttention", 264)
    };
    if fp8 && backend == "TRITON_MLA" {
        return Selection::NotImplemented {
            error_id: "triton_mla_fp8",
        };
    }
    if fp8
        && backend == "FLASH_ATTN"
        && major != 9
        && !input.version.has(Switch::FlashAttnFp8KvAnyGpu)
    {
        return Selection::NotImplemented {
            error_id: "flash_attn_fp8",
        };
    }
    Selection::Chosen {
        backend: backend.to_string(),
        announce: Announce::V1Title { title, line },
        forced_block_size: None,
    }
}

fn mla_priorities(input: &SelectorInput<'_>) -> Vec<&'static str> {
    if input.gpu.major() == 10 {
        if input.version.has(Switch::Sm100MlaFlashinferFirst) {
            vec![
                "FLASHINFER_MLA",
                "CUTLASS_MLA",
                "FLASH_ATTN_MLA",
                "FLASHMLA",
                "TRITON_MLA",
                "FLASHMLA_SPARSE",
            ]
        } else {
            vec![
                "CUTLASS_MLA",
                "FLASHINFER_MLA",
                "FLASH_ATTN_MLA",
                "FLASHMLA",
                "TRITON_MLA",
                "FLASHMLA_SPARSE",
            ]
        }
    } else {
        vec![
            "FLASH_ATTN_MLA",
            "FLASHMLA",
            "FLASHINFER_MLA",
            "TRITON_MLA",
            "FLASHMLA_SPARSE",
        ]
    }
}

fn dense_priorities(input: &SelectorInput<'_>) -> Vec<&'static str> {
    if input.gpu.major() == 10 {
        vec!["FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION"]
    } else {
        vec!["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"]
    }
}

fn kv_dtypes(backend: &str, v: Version, major: u32) -> Vec<&'static str> {
    let triton_mla_fp8 = v.has(Switch::TritonMlaFp8Kv);
    let mut out: Vec<&'static str> = match backend {
        "CUTLASS_MLA" | "FLASHINFER_MLA" | "FLASHMLA" => vec!["auto", "fp8", "fp8_e4m3"],
        "FLASH_ATTN_MLA" => vec!["auto"],
        "TRITON_MLA" => {
            if triton_mla_fp8 {
                vec!["auto", "fp8", "fp8_e4m3"]
            } else {
                vec!["auto"]
            }
        }
        "FLASHMLA_SPARSE" => vec!["auto", "fp8_ds_mla"],
        "FLASH_ATTN" => {
            if major == 9 {
                vec!["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]
            } else {
                vec!["auto"]
            }
        }
        "FLASHINFER" | "TRITON_ATTN" => vec!["auto", "fp8", "fp8_e4m3", "fp8_e5m2"],
        _ => vec!["auto"],
    };
    if v.has(Switch::KvDtypeBfloat16) {
        out.push("bfloat16");
    }
    if v.has(Switch::KvDtypeFloat16) {
        out.push("float16");
    }
    out
}

fn capability_ok(backend: &str, major: u32, cap: u32) -> bool {
    match backend {
        "CUTLASS_MLA" | "FLASHINFER_MLA" => major == 10,
        "FLASH_ATTN_MLA" => major == 9,
        "FLASHMLA" | "FLASHMLA_SPARSE" => major == 9 || major == 10,
        "FLASH_ATTN" => major >= 8,
        "FLASHINFER" => (75..=121).contains(&cap),
        _ => true,
    }
}

/// Why `backend` cannot serve this configuration, in vLLM's `validate_configuration` order.
fn invalid_reasons(backend: &str, input: &SelectorInput<'_>) -> Vec<String> {
    let mla_backend = backend.ends_with("MLA") || backend == "FLASHMLA_SPARSE";
    let sparse_backend = backend == "FLASHMLA_SPARSE";
    let major = input.gpu.major();
    let mut r = Vec::new();
    if mla_backend && input.shape.head_size != 576 {
        r.push("head_size not supported".to_string());
    }
    if !kv_dtypes(backend, input.version, major).contains(&input.kv_cache_dtype) {
        r.push("kv_cache_dtype not supported".to_string());
    }
    if mla_backend && !input.shape.mla {
        r.push("non-MLA not supported".to_string());
    }
    if !mla_backend && input.shape.mla {
        r.push("MLA not supported".to_string());
    }
    let sink_ok = match backend {
        "TRITON_ATTN" => true,
        "FLASH_ATTN" => major == 9,
        "FLASHINFER" => major == 10,
        _ => false,
    };
    if input.has_sink && !sink_ok {
        r.push("sink setting not supported".to_string());
    }
    if sparse_backend && !input.shape.sparse {
        r.push("non-sparse not supported".to_string());
    }
    if !sparse_backend && mla_backend && input.shape.sparse {
        r.push("sparse not supported".to_string());
    }
    if !capability_ok(backend, major, input.gpu.capability_int()) {
        r.push("compute capability not supported".to_string());
    }
    match backend {
        "FLASH_ATTN_MLA" if major != 9 => {
            r.push("FlashAttention MLA not supported on this device".to_string())
        }
        "FLASHMLA" if major != 9 && major != 10 => {
            r.push("FlashMLA Dense is only supported on Hopper devices.".to_string())
        }
        "FLASHINFER_MLA" if input.shape.qk_nope_head_dim != 128 => r.push(format!(
            "FlashInfer MLA kernel requires qk_nope_head_dim == 128, but got {}",
            input.shape.qk_nope_head_dim
        )),
        _ => {}
    }
    r
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
            forced_block_size: match name {
                "CUTLASS_MLA" => Some(128),
                "FLASHMLA" => Some(64),
                _ => None,
            },
        };
    }
    let priorities = if mla {
        mla_priorities(input)
    } else {
        dense_priorities(input)
    };
    let mut valid = Vec::new();
    let mut reasons = Vec::new();
    for b in priorities {
        let r = invalid_reasons(b, input);
        if r.is_empty() {
            valid.push(b.to_string());
        } else {
            reasons.push((b.to_string(), r));
        }
    }
    match valid.first() {
        None => Selection::NoValid { reasons },
        Some(first) => Selection::Chosen {
            backend: first.clone(),
            forced_block_size: if first == "FLASHMLA" { Some(64) } else { None },
            announce: Announce::Auto { candidates: valid },
        },
    }
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
