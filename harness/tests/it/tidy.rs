//! Tidy checks (STYLE.md): architecture invariants and conventions, enforced as tests.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name != "target" && !name.starts_with('.') {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for c in ["simulators/src", "harness/src", "xtask/src", "benches/src"] {
        rust_files(&root().join(c), &mut v);
    }
    v
}

#[test]
fn triage_is_pure() {
    let mut files = Vec::new();
    rust_files(&root().join("harness/src/triage"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for banned in [
            "simulators",
            "std::process",
            "std::net",
            "std::time::SystemTime",
            "Instant::now",
            "std::env::var",
        ] {
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                assert!(
                    !code.contains(banned),
                    "{}:{}: triage must not use `{banned}` (it is a pure function of bytes)",
                    f.display(),
                    n + 1
                );
            }
        }
    }
}

#[test]
fn only_launch_and_the_fake_server_send_signals() {
    let allowed = ["harness/src/launch/", "simulators/src/fake/"];
    for f in sources() {
        let rel = f
            .strip_prefix(root())
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        if allowed.iter().any(|a| rel.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for banned in [
            "kill_process",
            "libc::kill",
            "Command::new(\"kill\")",
            "nix::sys::signal",
        ] {
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                assert!(
                    !code.contains(banned),
                    "{rel}:{}: only harness::launch and the fake server signal processes (`{banned}`)",
                    n + 1
                );
            }
        }
    }
}

#[test]
fn every_module_says_what_it_is_for() {
    for f in sources() {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.trim_start().starts_with("//!"),
            "{} does not start with a `//!` module comment",
            f.display()
        );
    }
}

#[test]
fn no_grab_bag_modules() {
    for f in sources() {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            !["utils.rs", "helpers.rs", "common.rs", "misc.rs"].contains(&name),
            "{}: name modules by their job",
            f.display()
        );
    }
}

#[test]
fn no_stubs_or_hidden_failures() {
    let mut files = sources();
    for t in ["harness/tests", "simulators/tests", "benches/benches"] {
        rust_files(&root().join(t), &mut files);
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // Spelled in pieces, so this file does not contain what it bans.
        for banned in [
            concat!("todo", "!("),
            concat!("unimplemented", "!("),
            concat!("#[", "ignore"),
        ] {
            assert!(
                !text.contains(banned) || f.ends_with("tidy.rs"),
                "{} contains `{banned}`",
                f.display()
            );
        }
    }
}

#[test]
fn every_scenario_has_an_expectation_and_a_report() {
    let dir = harness::catalog::ScenarioDir {
        root: root().join("scenarios"),
    };
    let files = dir.files().unwrap();
    assert!(files.len() >= 25);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.contains("[expect]"), "{} has no [expect]", f.display());
        assert!(
            f.with_extension("report").exists(),
            "{} has no snapshot report (run --bless)",
            f.display()
        );
    }
}

#[test]
fn required_scenario_names_exist() {
    let dir = harness::catalog::ScenarioDir {
        root: root().join("scenarios"),
    };
    for name in ["fp8-kv-sm120", "serving-worker-killed"] {
        dir.find(name).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn rule_ids_are_in_the_taxonomy() {
    let tax = harness::triage::rules::taxonomy_ids();
    for r in harness::triage::RuleSet::builtin().rules() {
        assert!(
            r.id == "unknown" || tax.contains(&r.id),
            "rule id {} not in taxonomy.toml",
            r.id
        );
    }
}
