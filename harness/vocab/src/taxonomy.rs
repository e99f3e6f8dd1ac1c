//! The root-cause ids of `taxonomy.toml` (shared with triage, which embeds the same file).

use std::sync::OnceLock;

/// Every root-cause id, in file order.
pub fn ids() -> &'static [String] {
    static IDS: OnceLock<Vec<String>> = OnceLock::new();
    IDS.get_or_init(|| {
        let table: toml::Table = toml::from_str(include_str!("../../../taxonomy.toml"))
            .expect("taxonomy.toml is valid (checked by tests)");
        table.keys().cloned().collect()
    })
}

pub fn contains(id: &str) -> bool {
    ids().iter().any(|i| i == id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn has_the_headline_id() {
        assert!(super::contains("fp8_kv_cache_unsupported_backend"));
        assert!(super::ids().len() >= 30);
    }
}
