//! Realism of the simulator, kept as a regression test: every real vLLM capture under
//! `scenarios/real/vllm-<version>/` is covered, line template by line template, by the simulated
//! log of its scenario at the same version (recall), and the simulated log prints little real vLLM
//! did not (precision); `runner::realism`, and `cargo xtask realism` prints the table. Runs on the
//! fixtures only: capturing needs vLLM and never runs here.

use std::collections::BTreeSet;
use std::path::Path;

use runner::catalog::ScenarioDir;
use runner::realism::{self, COVERAGE_MIN};

/// Templates of a failing capture (missing or invented) printed with the failure.
const MISSING_SHOWN: usize = 12;

/// Every capture of `scenarios/real/vllm-*/` against the simulation of its scenario.
fn captures() -> Vec<realism::Coverage> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = ScenarioDir {
        root: root.join("scenarios"),
    };
    realism::measure(&root.join("scenarios/real"), &dir).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_capture_is_covered_by_the_simulator_and_nothing_invented() {
    let covs = captures();

    let versions: BTreeSet<&str> = covs.iter().map(|c| c.version.as_str()).collect();
    assert!(
        versions.len() >= 3,
        "captures of at least 3 vLLM releases, found {versions:?}"
    );

    let mut report = String::new();
    let mut below = 0;
    for c in &covs {
        let ok = c.ratio() >= COVERAGE_MIN && c.precision() >= COVERAGE_MIN;
        report.push_str(&format!(
            "{} vllm-{}/{}: recall {}/{} ({:.1}%), precision {}/{} ({:.1}%)\n",
            if ok { "ok  " } else { "LOW " },
            c.version,
            c.file,
            c.covered,
            c.templates,
            c.ratio() * 100.0,
            c.covered,
            c.simulated,
            c.precision() * 100.0
        ));
        if !ok {
            below += 1;
            for m in c.missing.iter().take(MISSING_SHOWN) {
                report.push_str(&format!("        missing: {m}\n"));
            }
            for m in c.invented.iter().take(MISSING_SHOWN) {
                report.push_str(&format!("        invented: {m}\n"));
            }
        }
    }
    eprint!("{report}");
    assert_eq!(
        below,
        0,
        "{below} of {} captures below {:.0}% template recall or precision (cargo xtask realism --verbose):\n{report}",
        covs.len(),
        COVERAGE_MIN * 100.0
    );
}

/// Per release, the simulated logs name the source locations real vLLM printed — `[file.py:N]` of
/// its records, `path:N` of its traceback frames — at the same lines (templates mask numbers, so
/// this is where a profile's line numbers are measured against real output).
#[test]
fn every_release_prints_its_records_and_frames_at_real_vllm_lines() {
    let covs = captures();
    let mut per_release: std::collections::BTreeMap<&str, (usize, usize, Vec<String>)> =
        Default::default();
    for c in &covs {
        let e = per_release.entry(c.version.as_str()).or_default();
        e.0 += c.locations;
        e.1 += c.locations_covered;
        e.2.extend(
            c.missing_locations
                .iter()
                .map(|m| format!("{}: {m}", c.file)),
        );
    }
    assert!(per_release.values().all(|(all, _, _)| *all > 0));
    for (version, (all, covered, missing)) in &per_release {
        let share = *covered as f64 / *all as f64;
        eprintln!(
            "vllm-{version}: {covered} of {all} source locations ({:.1}%)",
            share * 100.0
        );
        assert!(
            share >= COVERAGE_MIN,
            "vllm-{version}: the simulation names {covered} of the {all} source locations real \
             vLLM printed (below {:.0}%; cargo xtask realism --verbose, cargo xtask wheel-check):\n{}",
            COVERAGE_MIN * 100.0,
            missing.join("\n")
        );
    }
}

/// Every twin scenario (`real = …`) names a labelled public log whose labelled root cause is the
/// one the twin expects, and shares vLLM lines with it; `cargo xtask realism --public` prints how
/// many.
#[test]
fn every_twin_names_a_labelled_public_log_of_its_failure() {
    #[derive(serde::Deserialize)]
    struct Labels {
        log: Vec<Label>,
    }
    #[derive(serde::Deserialize)]
    struct Label {
        file: String,
        root_cause: String,
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = ScenarioDir {
        root: root.join("scenarios"),
    };
    let real_dir = root.join("scenarios/real");
    let covs = realism::measure_public(&real_dir, &dir).unwrap_or_else(|e| panic!("{e}"));
    let twins: Vec<_> = dir
        .load_all()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|s| s.real.is_some())
        .collect();
    assert_eq!(covs.len(), twins.len());
    for s in &twins {
        let real = s.real.as_deref().unwrap_or_default();
        let (folder, file) = real.rsplit_once('/').unwrap_or(("", real));
        let text = std::fs::read_to_string(real_dir.join(folder).join("labels.toml"))
            .unwrap_or_else(|e| panic!("{}: {real}: {e}", s.name));
        let labels: Labels = toml::from_str(&text).unwrap_or_else(|e| panic!("{folder}: {e}"));
        let label = labels
            .log
            .iter()
            .find(|l| l.file == file)
            .unwrap_or_else(|| panic!("{}: {real} has no label", s.name));
        assert!(
            !folder.starts_with("vllm-"),
            "{}: a twin names a public log, not a capture ({real})",
            s.name
        );
        assert_eq!(
            s.expect.root_cause.as_deref(),
            Some(label.root_cause.as_str()),
            "{}: the twin of {real} must fail as its label says",
            s.name
        );
    }
    for c in &covs {
        assert!(
            c.covered > 0,
            "{} shares no vLLM line with its twin {} (cargo xtask realism --public)",
            c.real,
            c.scenario
        );
    }
}
