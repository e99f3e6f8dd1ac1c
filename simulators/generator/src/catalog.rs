//! Hardware and model catalogs, kept as data (`data/gpus.toml`, `data/models.toml`).
//!
//! Main types: [`GpuSpec`] (name, compute capability, memory, interconnect) and [`ModelPreset`]
//! (the `config.json` / `hf_quant_config.json` facts that decide how vLLM starts a checkpoint).

use std::sync::OnceLock;

use serde::Deserialize;

use crate::version::Version;

/// One GPU model.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    pub id: String,
    pub name: String,
    pub capability: [u32; 2],
    pub memory_mib: u64,
    pub torch_total_gib: f64,
    pub interconnect: Interconnect,
    pub power_w: u32,
    pub bus_base: u32,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Interconnect {
    Pcie,
    Nvlink,
}

impl GpuSpec {
    /// Compute capability as vLLM compares it: `major * 10 + minor` (120 for SM120).
    pub fn capability_int(&self) -> u32 {
        self.capability[0] * 10 + self.capability[1]
    }

    pub fn major(&self) -> u32 {
        self.capability[0]
    }
}

/// One checkpoint preset.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPreset {
    pub id: String,
    pub repo: String,
    pub weights_gib: f64,
    pub shards: u32,
    pub min_vllm: String,
    pub custom_code: bool,
    #[serde(default)]
    pub moe_experts: u32,
    #[serde(default)]
    pub sinks: bool,
    #[serde(default)]
    pub generation_sampling: bool,
    pub config: toml::Table,
    #[serde(default)]
    pub hf_quant_config: Option<toml::Table>,
}

/// Attention geometry of a model, derived from its config.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionShape {
    pub heads: u64,
    pub kv_heads: u64,
    pub layers: u64,
    pub head_size: u64,
    /// Multi-head latent attention (DeepSeek-V2/V3 family): `kv_lora_rank + qk_rope_head_dim`.
    pub mla: bool,
    pub qk_nope_head_dim: u64,
    pub sparse: bool,
}

impl ModelPreset {
    /// The config that describes the language model (`text_config` for multimodal wrappers).
    fn text_config(&self) -> &toml::Table {
        match self.config.get("text_config") {
            Some(toml::Value::Table(t)) => t,
            _ => &self.config,
        }
    }

    fn int(&self, key: &str) -> Option<u64> {
        self.text_config()
            .get(key)
            .or_else(|| self.config.get(key))
            .and_then(|v| v.as_integer())
            .and_then(|v| u64::try_from(v).ok())
    }

    pub fn architecture(&self) -> &str {
        self.config
            .get("architectures")
            .and_then(|v| v.as_array())
            .and_then(|a| a.first())
            .and_then(|v| v.as_str())
            .unwrap_or("LlamaForCausalLM")
    }

    pub fn max_position_embeddings(&self) -> u64 {
        self.int("max_position_embeddings").unwrap_or(4096)
    }

    pub fn attention(&self) -> AttentionShape {
        let heads = self.int("num_attention_heads").unwrap_or(32);
        let kv_heads = self.int("num_key_value_heads").unwrap_or(heads);
        let layers = self.int("num_hidden_layers").unwrap_or(32);
        let hidden = self.int("hidden_size").unwrap_or(4096);
        let kv_lora = self.int("kv_lora_rank");
        let rope = self.int("qk_rope_head_dim").unwrap_or(64);
        let mla = kv_lora.is_some();
        let head_size = match kv_lora {
            Some(r) => r + rope,
            None => self.int("head_dim").unwrap_or(hidden / heads.max(1)),
        };
        AttentionShape {
            heads,
            kv_heads,
            layers,
            head_size,
            mla,
            qk_nope_head_dim: self.int("qk_nope_head_dim").unwrap_or(128),
            sparse: self.int("index_topk").is_some(),
        }
    }

    /// `quantization_config.quant_method`, or `modelopt` when only `hf_quant_config.json` exists.
    pub fn quant_method(&self) -> Option<String> {
        if let Some(m) = self
            .config
            .get("quantization_config")
            .and_then(|q| q.get("quant_method"))
            .and_then(|m| m.as_str())
        {
            return Some(m.to_string());
        }
        self.hf_quant_config
            .as_ref()
            .map(|_| "modelopt".to_string())
    }

    /// The quantization algorithm (`NVFP4`, `FP8`) for ModelOpt checkpoints.
    pub fn quant_algo(&self) -> Option<String> {
        let from_config = self
            .config
            .get("quantization_config")
            .and_then(|q| q.get("quant_algo"))
            .and_then(|m| m.as_str());
        let from_file = self
            .hf_quant_config
            .as_ref()
            .and_then(|h| h.get("quantization"))
            .and_then(|q| q.get("quant_algo"))
            .and_then(|m| m.as_str());
        from_config.or(from_file).map(str::to_string)
    }

    /// The quantization name vLLM reports (`modelopt_fp4`, `fp8`, `compressed-tensors`, `mxfp4`).
    pub fn vllm_quantization(&self) -> Option<String> {
        let method = self.quant_method()?;
        if method == "modelopt" {
            return Some(match self.quant_algo().as_deref() {
                Some("NVFP4") => "modelopt_fp4".to_string(),
                _ => "modelopt".to_string(),
            });
        }
        Some(method)
    }

    /// Whether the checkpoint declares an FP8 KV cache (ModelOpt `kv_cache_scheme` /
    /// `kv_cache_quant_algo`, or a compressed-tensors `kv_cache_scheme`), and where.
    pub fn kv_cache_declaration(&self) -> Option<KvDeclaration> {
        let q = self.config.get("quantization_config");
        let scheme_in_config = q.and_then(|q| q.get("kv_cache_scheme")).is_some();
        let algo_in_file = self
            .hf_quant_config
            .as_ref()
            .and_then(|h| h.get("quantization"))
            .and_then(|q| q.get("kv_cache_quant_algo"))
            .is_some();
        let method = self.quant_method()?;
        if method == "compressed-tensors" && scheme_in_config {
            return Some(KvDeclaration::CompressedTensorsScheme);
        }
        if method == "modelopt" && (scheme_in_config || algo_in_file) {
            return Some(KvDeclaration::ModelOpt {
                in_config: scheme_in_config,
                in_hf_quant_config: algo_in_file,
            });
        }
        None
    }

    /// Whether the registry of vLLM `version` has this architecture.
    pub fn supported_by(&self, version: Version) -> bool {
        Version::parse(&self.min_vllm).is_some_and(|min| version >= min)
    }

    /// config.json as JSON text.
    pub fn config_json(&self) -> String {
        to_json(&self.config)
    }

    /// hf_quant_config.json as JSON text, when the checkpoint has one.
    pub fn hf_quant_config_json(&self) -> Option<String> {
        self.hf_quant_config.as_ref().map(to_json)
    }
}

/// Where a checkpoint declares its FP8 KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvDeclaration {
    ModelOpt {
        in_config: bool,
        in_hf_quant_config: bool,
    },
    CompressedTensorsScheme,
}

fn to_json(t: &toml::Table) -> String {
    let v = serde_json::to_value(t).unwrap_or(serde_json::Value::Null);
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

#[derive(Deserialize)]
struct GpuFile {
    gpu: Vec<GpuSpec>,
}

#[derive(Deserialize)]
struct ModelFile {
    model: Vec<ModelPreset>,
}

/// Every GPU in the catalog.
pub fn gpus() -> &'static [GpuSpec] {
    static GPUS: OnceLock<Vec<GpuSpec>> = OnceLock::new();
    GPUS.get_or_init(|| {
        let f: GpuFile = toml::from_str(include_str!("../data/gpus.toml"))
            .expect("data/gpus.toml is valid (checked by tests)");
        f.gpu
    })
}

/// Every model preset in the catalog.
pub fn models() -> &'static [ModelPreset] {
    static MODELS: OnceLock<Vec<ModelPreset>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let f: ModelFile = toml::from_str(include_str!("../data/models.toml"))
            .expect("data/models.toml is valid (checked by tests)");
        f.model
    })
}

pub fn gpu(id: &str) -> Option<&'static GpuSpec> {
    gpus().iter().find(|g| g.id == id)
}

pub fn model(id: &str) -> Option<&'static ModelPreset> {
    models().iter().find(|m| m.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogs_parse_and_ids_are_unique() {
        let g = gpus();
        assert!(g.len() >= 8);
        let m = models();
        assert!(m.len() >= 8);
        let mut ids: Vec<_> = m.iter().map(|m| &m.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), m.len());
        for p in m {
            assert!(Version::parse(&p.min_vllm).is_some(), "{}", p.id);
        }
    }

    #[test]
    fn kimi_declares_fp8_kv_and_is_mla() {
        let k = model("kimi-k2.5-nvfp4").unwrap();
        assert_eq!(k.attention().head_size, 576);
        assert!(k.attention().mla);
        assert_eq!(k.vllm_quantization().as_deref(), Some("modelopt_fp4"));
        assert!(matches!(
            k.kv_cache_declaration(),
            Some(KvDeclaration::ModelOpt { .. })
        ));
        assert!(k.config_json().contains("kv_cache_scheme"));
        assert!(k
            .hf_quant_config_json()
            .unwrap()
            .contains("kv_cache_quant_algo"));
        assert_eq!(gpu("rtx-pro-6000-blackwell").unwrap().capability_int(), 120);
    }
}
