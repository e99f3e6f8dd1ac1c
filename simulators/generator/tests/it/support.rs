//! Loading the project's scenario files for tests.

use std::path::{Path, PathBuf};

use generator::Scenario;

pub fn scenario_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut out = Vec::new();
    for g in std::fs::read_dir(&root).expect("scenarios/") {
        let g = g.unwrap().path();
        if !g.is_dir() || g.ends_with("real") {
            continue;
        }
        for f in std::fs::read_dir(&g).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "toml") {
                out.push(f);
            }
        }
    }
    out.sort();
    assert!(
        out.len() >= 25,
        "expected at least 25 scenario files, found {}",
        out.len()
    );
    out
}

pub fn scenarios() -> Vec<Scenario> {
    scenario_files()
        .iter()
        .map(|f| Scenario::load(f).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}
