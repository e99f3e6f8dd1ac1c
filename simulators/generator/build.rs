//! Lists the release profiles (`data/profiles/*.toml`) at build time, so adding a release is
//! adding a data file: `profile.rs` embeds whatever this folder holds.

// Cargo hands a build script its directories through the environment; what it writes does not
// depend on anything else.
#![allow(clippy::disallowed_methods)]

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("data/profiles");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("data/profiles exists")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    let mut out = String::from("/// `(file name, contents)` of every release profile, by file name.\nconst PROFILE_FILES: &[(&str, &str)] = &[\n");
    for n in &names {
        let p = dir.join(n).canonicalize().unwrap();
        writeln!(
            out,
            "    ({n:?}, include_str!({:?})),",
            p.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("profile_files.rs");
    std::fs::write(dest, out).unwrap();
}
