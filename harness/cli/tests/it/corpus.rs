//! Triage accuracy on real vLLM logs: the public-thread corpus, the GPU-side captures and the
//! logs captured from real vLLM releases (`scenarios/real/*/labels.toml`). Prints a table; fails
//! unless the root-cause id is right on ≥ 95% and the quoted line on ≥ 90% of the logs.

use std::path::{Path, PathBuf};

use triage::{self, grammar::strip_ansi, Options, Output};

#[derive(serde::Deserialize)]
struct Labels {
    log: Vec<Label>,
}

#[derive(serde::Deserialize)]
struct Label {
    file: String,
    root_cause: String,
    root_cause_line: String,
}

fn real_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/real")
}

struct Row {
    file: String,
    want_id: String,
    got_id: String,
    id_ok: bool,
    text_ok: bool,
}

fn run_all() -> Vec<Row> {
    let mut rows = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(real_dir())
        .expect("scenarios/real exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("labels.toml").exists())
        .collect();
    dirs.sort();
    for dir in dirs {
        let labels: Labels =
            toml::from_str(&std::fs::read_to_string(dir.join("labels.toml")).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for l in labels.log {
            let bytes = std::fs::read(dir.join(&l.file)).unwrap();
            let out = triage::triage(&bytes, &Options::default());
            let Output::One(v) = out else {
                panic!("one verdict")
            };
            let (got_id, got_text) = v
                .root_cause
                .as_ref()
                .map(|r| (r.id.clone(), r.text.clone()))
                .unwrap_or(("-".into(), String::new()));
            let want_text = strip_ansi(&l.root_cause_line).trim_end().to_string();
            rows.push(Row {
                file: format!("{}/{}", dir.file_name().unwrap().to_string_lossy(), l.file),
                id_ok: got_id == l.root_cause,
                text_ok: got_text.trim() == want_text.trim(),
                want_id: l.root_cause,
                got_id,
            });
        }
    }
    rows
}

#[test]
fn triage_accuracy_on_real_logs() {
    let rows = run_all();
    let n = rows.len();
    let ids = rows.iter().filter(|r| r.id_ok).count();
    let texts = rows.iter().filter(|r| r.text_ok).count();
    println!("{:<78} {:<5} {:<5} expected → got", "log", "id", "line");
    for r in &rows {
        println!(
            "{:<78} {:<5} {:<5} {}",
            r.file,
            if r.id_ok { "ok" } else { "MISS" },
            if r.text_ok { "ok" } else { "MISS" },
            if r.id_ok {
                r.want_id.clone()
            } else {
                format!("{} → {}", r.want_id, r.got_id)
            }
        );
    }
    let id_pct = 100.0 * ids as f64 / n as f64;
    let text_pct = 100.0 * texts as f64 / n as f64;
    println!("{n} logs: root-cause id {ids}/{n} ({id_pct:.1}%), root-cause line {texts}/{n} ({text_pct:.1}%)");
    assert!(n >= 60, "expected the whole corpus, found {n} logs");
    assert!(id_pct >= 95.0, "root-cause id accuracy {id_pct:.1}% < 95%");
    assert!(
        text_pct >= 90.0,
        "root-cause line accuracy {text_pct:.1}% < 90%"
    );
}
