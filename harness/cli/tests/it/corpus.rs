//! Triage accuracy on real vLLM logs (`scenarios/real/*/labels.toml`, scored by
//! `runner::corpus`). Every labelled log together must score ≥ 95 % exact root-cause lines and
//! ≥ 95 % root-cause ids. While a new batch of real logs holds the whole corpus below that bar,
//! `floors.toml`'s `[all]` is its ratchet (the totals may not fall below it), and it must go once
//! the bar is met again. Directories at the corpus bar — the public-thread dev corpus, the
//! GPU-side captures and the captures of real releases — must also keep ≥ 95 % of ids and ≥ 90 %
//! of lines on their own; each batch listed in `floors.toml` must keep at least its floor (a
//! ratchet: it only moves up). Prints every log's result.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use runner::corpus::{self, Score};

#[derive(serde::Deserialize)]
struct Floor {
    line: usize,
    id: usize,
    status: usize,
}

/// The floor of every labelled log together, in `floors.toml`.
const ALL: &str = "all";

fn real_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/real")
}

#[test]
fn triage_accuracy_on_real_logs() {
    let floors: BTreeMap<String, Floor> =
        toml::from_str(&std::fs::read_to_string(real_dir().join("floors.toml")).unwrap()).unwrap();
    let scores: Vec<Score> = corpus::labelled_dirs(&real_dir())
        .unwrap()
        .iter()
        .map(|d| corpus::score_dir(d).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    for s in &scores {
        print!("{}", corpus::table(s));
    }
    let (mut n, mut ids, mut lines) = (0, 0, 0);
    let (mut all, mut all_ids, mut all_lines) = (0, 0, 0);
    let mut below = Vec::new();
    for s in &scores {
        println!("{}", s.summary());
        all += s.n();
        all_ids += s.ids();
        all_lines += s.lines();
        match floors.get(&s.dir) {
            Some(f) => {
                if s.lines() < f.line || s.ids() < f.id || s.statuses() < f.status {
                    below.push(format!(
                        "{} is below its floor (line {}, id {}, status {})",
                        s.summary(),
                        f.line,
                        f.id,
                        f.status
                    ));
                }
            }
            None => {
                n += s.n();
                ids += s.ids();
                lines += s.lines();
            }
        }
    }
    for name in floors.keys().filter(|k| *k != ALL) {
        assert!(
            scores.iter().any(|s| &s.dir == name),
            "floors.toml names {name}, which has no labels.toml"
        );
    }
    let id_pct = 100.0 * ids as f64 / n as f64;
    let line_pct = 100.0 * lines as f64 / n as f64;
    println!("at the bar: {n} logs, root-cause id {ids}/{n} ({id_pct:.1}%), line {lines}/{n} ({line_pct:.1}%)");
    let all_id_pct = 100.0 * all_ids as f64 / all as f64;
    let all_line_pct = 100.0 * all_lines as f64 / all as f64;
    println!("every labelled log: {all} logs, root-cause id {all_ids}/{all} ({all_id_pct:.1}%), line {all_lines}/{all} ({all_line_pct:.1}%)");
    assert!(below.is_empty(), "{}", below.join("\n"));
    let at_bar = all_id_pct >= 95.0 && all_line_pct >= 95.0;
    match floors.get(ALL) {
        Some(f) => {
            assert!(
                !at_bar,
                "every labelled log is at the bar (id {all_id_pct:.1}%, line {all_line_pct:.1}%): remove [{ALL}] from floors.toml"
            );
            assert!(
                all_lines >= f.line && all_ids >= f.id,
                "every labelled log: line {all_lines}, id {all_ids} of {all}, below the [{ALL}] floor (line {}, id {})",
                f.line,
                f.id
            );
            println!("every labelled log: below the 95% bar, at or above its floor (line {}, id {})", f.line, f.id);
        }
        None => assert!(
            at_bar,
            "every labelled log: root-cause id {all_id_pct:.1}%, line {all_line_pct:.1}%; both must be ≥ 95%"
        ),
    }
    assert!(n >= 60, "expected the whole corpus, found {n} logs");
    assert!(id_pct >= 95.0, "root-cause id accuracy {id_pct:.1}% < 95%");
    assert!(
        line_pct >= 90.0,
        "root-cause line accuracy {line_pct:.1}% < 90%"
    );
}
