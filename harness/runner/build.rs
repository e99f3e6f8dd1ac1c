//! Embeds the scenario catalog (`scenarios/<group>/*.toml` and their `.report` snapshots, not
//! `real/`) in the crate, so an installed `faultkit` runs its scenarios without the source tree.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../scenarios");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    if let Ok(groups) = std::fs::read_dir(&root) {
        for g in groups.flatten() {
            let gp = g.path();
            let gname = g.file_name().to_string_lossy().into_owned();
            if !gp.is_dir() || gname == "real" || gname.starts_with('.') {
                continue;
            }
            println!("cargo:rerun-if-changed={}", gp.display());
            for f in std::fs::read_dir(&gp).into_iter().flatten().flatten() {
                let p = f.path();
                let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
                if ext == "toml" || ext == "report" {
                    let rel = format!("{gname}/{}", f.file_name().to_string_lossy());
                    files.push((rel, p.canonicalize().unwrap()));
                }
            }
        }
    }
    files.sort();
    let mut out = String::from("/// `(group/file, contents)` of every embedded scenario file and snapshot, sorted.\npub static FILES: &[(&str, &str)] = &[\n");
    for (rel, p) in &files {
        writeln!(
            out,
            "    ({rel:?}, include_str!({:?})),",
            p.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("embedded_scenarios.rs");
    std::fs::write(dest, out).unwrap();
}
