//! Tidy checks (STYLE.md): architecture invariants and conventions, enforced as tests.
//!
//! Crate edges come from `cargo metadata`, not from reading manifests by hand; imports are read
//! as `use` trees (grouped imports expanded) plus fully qualified paths in code, so
//! `use std::time::{Duration, SystemTime}` is seen as importing `std::time::SystemTime`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
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

/// The library and binary sources of every workspace crate (not their tests).
fn sources() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for c in workspace().values() {
        rust_files(&c.dir.join("src"), &mut v);
    }
    v
}

fn rel(f: &Path) -> String {
    f.strip_prefix(root())
        .unwrap_or(f)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Code of a line: without its `//` comment (a `//` inside a string literal cuts the line short,
/// which only ever hides text, never invents it).
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

struct Crate {
    dir: PathBuf,
    /// Workspace and registry crates this crate depends on (normal and build edges, every
    /// feature a workspace member turns on), by package name.
    deps: BTreeSet<String>,
    /// Declared optional dependencies.
    optional: BTreeSet<String>,
}

/// The workspace's crates from `cargo metadata`, by package name.
fn workspace() -> &'static BTreeMap<String, Crate> {
    static W: std::sync::OnceLock<BTreeMap<String, Crate>> = std::sync::OnceLock::new();
    W.get_or_init(|| {
        let (m, edges) = metadata();
        let members: BTreeSet<&str> = m["workspace_members"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|id| {
                m["packages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["id"] == *id)
            })
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        m["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| members.contains(p["name"].as_str().unwrap()))
            .map(|p| {
                let name = p["name"].as_str().unwrap().to_string();
                let dir = Path::new(p["manifest_path"].as_str().unwrap())
                    .parent()
                    .unwrap()
                    .to_path_buf();
                let optional = p["dependencies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|d| d["optional"] == true)
                    .map(|d| d["name"].as_str().unwrap().to_string())
                    .collect();
                let deps = edges.get(&name).cloned().unwrap_or_default();
                (
                    name,
                    Crate {
                        dir,
                        deps,
                        optional,
                    },
                )
            })
            .collect()
    })
}

/// `cargo metadata`, and the normal (and build) edges of every package in its resolve, by
/// package name: members and registry crates alike, with the features the workspace turns on.
fn metadata() -> &'static (serde_json::Value, BTreeMap<String, BTreeSet<String>>) {
    static M: std::sync::OnceLock<(serde_json::Value, BTreeMap<String, BTreeSet<String>>)> =
        std::sync::OnceLock::new();
    M.get_or_init(|| {
        let out = std::process::Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1"])
            .current_dir(root())
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let name_of: BTreeMap<&str, &str> = m["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
            .collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for n in m["resolve"]["nodes"].as_array().unwrap() {
            let from = name_of[n["id"].as_str().unwrap()];
            for d in n["deps"].as_array().unwrap() {
                let normal = d["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null() || k["kind"] == "build");
                if normal {
                    edges
                        .entry(from.to_string())
                        .or_default()
                        .insert(name_of[d["pkg"].as_str().unwrap()].to_string());
                }
            }
        }
        (m.clone(), edges)
    })
}

/// Every crate `name` reaches through normal edges; `skip_optional` leaves `name`'s own
/// optional dependencies out (the crate built without its features).
fn closure(name: &str, skip_optional: bool) -> BTreeSet<String> {
    let w = workspace();
    let graph = &metadata().1;
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = graph
        .get(name)
        .into_iter()
        .flatten()
        .filter(|d| !(skip_optional && w[name].optional.contains(*d)))
        .cloned()
        .collect();
    while let Some(n) = todo.pop() {
        if seen.insert(n.clone()) {
            todo.extend(graph.get(&n).into_iter().flatten().cloned());
        }
    }
    seen
}

/// `use` trees expanded to full paths, with the 1-based line each starts on:
/// `use a::{b, c::{d, e as f}};` → `a::b`, `a::c::d`, `a::c::e`.
fn use_paths(text: &str) -> Vec<(usize, String)> {
    let renames = regex::Regex::new(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*").unwrap();
    let mut out = Vec::new();
    let mut stmt = String::new();
    let mut start = 0;
    for (n, line) in text.lines().enumerate() {
        let c = code(line).trim();
        if stmt.is_empty() {
            let body = c
                .strip_prefix("pub use ")
                .or_else(|| c.strip_prefix("pub(crate) use "))
                .or_else(|| c.strip_prefix("use "));
            let Some(body) = body else { continue };
            start = n + 1;
            stmt.push_str(body);
        } else {
            stmt.push(' ');
            stmt.push_str(c);
        }
        if let Some(end) = stmt.find(';') {
            let tree: String = renames
                .replace_all(&stmt[..end], "")
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            expand("", &tree, &mut |p| out.push((start, p)));
            stmt.clear();
        }
    }
    out
}

fn expand(prefix: &str, tree: &str, emit: &mut dyn FnMut(String)) {
    let tree = tree.trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let head = format!("{prefix}{}", &tree[..open]);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut part = String::new();
        for ch in inner.chars().chain(std::iter::once(',')) {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if ch == ',' && depth == 0 {
                if !part.is_empty() {
                    expand(&head, &part, emit);
                }
                part.clear();
            } else {
                part.push(ch);
            }
        }
    } else {
        let item = tree;
        let path = format!("{prefix}{item}");
        emit(path.trim_end_matches("::self").to_string());
    }
}

/// Paths a file uses: its `use` trees, and `a::b::c` paths written out in code.
fn paths_used(text: &str) -> Vec<(usize, String)> {
    let mut v = use_paths(text);
    let re = regex::Regex::new(r"\b[a-z_][a-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    for (n, line) in text.lines().enumerate() {
        let c = code(line);
        if c.trim_start().starts_with("use ") || c.trim_start().starts_with("pub use ") {
            continue;
        }
        for m in re.find_iter(c) {
            v.push((n + 1, m.as_str().to_string()));
        }
    }
    v
}

/// `path` is `banned` or lies below it.
fn under(path: &str, banned: &str) -> bool {
    path == banned || path.starts_with(&format!("{banned}::"))
}

const SIMULATOR_CRATES: [&str; 2] = ["generator", "fake_vllm"];

#[test]
fn use_trees_are_expanded() {
    let text = "use std::time::{Duration, SystemTime};\nuse std::{\n    net::TcpStream as T,\n    io::{self, Read},\n};\n";
    let p: Vec<String> = use_paths(text).into_iter().map(|(_, p)| p).collect();
    assert_eq!(
        p,
        [
            "std::time::Duration",
            "std::time::SystemTime",
            "std::net::TcpStream",
            "std::io",
            "std::io::Read"
        ]
    );
}

#[test]
fn crate_edges_point_one_way() {
    let w = workspace();
    for name in [
        "triage",
        "launch",
        "runner",
        "faultkit",
        "vocab",
        "procfacts",
        "generator",
        "fake-vllm",
        "vllm-argv",
    ] {
        assert!(w.contains_key(name), "workspace crate {name} is missing");
    }
    // (crate, what its closure must not contain)
    let forbidden: [(&str, &[&str]); 6] = [
        (
            "triage",
            &[
                "generator",
                "fake-vllm",
                "launch",
                "runner",
                "faultkit",
                "procfacts",
                "tokio",
                "testcontainers",
                "bollard",
                "hyper",
            ],
        ),
        (
            "launch",
            &["generator", "fake-vllm", "runner", "faultkit", "tokio"],
        ),
        (
            "generator",
            &[
                "triage",
                "launch",
                "runner",
                "faultkit",
                "fake-vllm",
                "procfacts",
            ],
        ),
        ("fake-vllm", &["triage", "launch", "runner", "faultkit"]),
        ("vocab", &["triage", "generator", "launch", "runner"]),
        ("procfacts", &["triage", "generator", "launch", "runner"]),
    ];
    for (name, banned) in forbidden {
        let reach = closure(name, false);
        for b in banned {
            assert!(
                !reach.contains(*b),
                "{name} reaches `{b}` (cargo metadata): arrows point cli → runner → {{launch, generator, fake-vllm}} → triage/shared"
            );
        }
    }
    // Only the container runner may bring in testcontainers, behind its cargo feature.
    assert!(w["runner"].optional.contains("testcontainers"));
    let runner_plain = closure("runner", true);
    assert!(
        !runner_plain.contains("testcontainers") && !runner_plain.contains("tokio"),
        "runner without the `container` feature reaches testcontainers/tokio"
    );
    for (name, c) in w {
        if name != "runner" {
            assert!(
                !c.deps.contains("testcontainers"),
                "{name} depends on testcontainers (only runner, behind `container`)"
            );
        }
    }
}

#[test]
fn triage_is_pure() {
    let w = workspace();
    let mut files = Vec::new();
    rust_files(&w["triage"].dir.join("src"), &mut files);
    assert!(files.len() > 5);
    let banned = [
        "std::process",
        "std::net",
        "std::time::SystemTime",
        "std::time::Instant",
        "std::env",
        "generator",
        "fake_vllm",
        "launch",
        "runner",
    ];
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, p) in paths_used(&text) {
            for b in banned {
                assert!(
                    !under(&p, b),
                    "{}:{n}: triage uses `{p}` (it is a pure function of bytes: no `{b}`)",
                    rel(&f)
                );
            }
        }
    }
}

#[test]
fn the_generator_reads_no_clock_and_starts_nothing() {
    let w = workspace();
    let mut files = Vec::new();
    rust_files(&w["generator"].dir.join("src"), &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, p) in paths_used(&text) {
            for b in [
                "std::time::SystemTime",
                "std::time::Instant",
                "std::process",
                "std::net",
                "std::env",
            ] {
                assert!(
                    !under(&p, b) || p == "std::process::id",
                    "{}:{n}: the generator uses `{p}` (same scenario and seed, same bytes)",
                    rel(&f)
                );
            }
            for b in SIMULATOR_CRATES.iter().skip(1) {
                assert!(!under(&p, b), "{}:{n}: generator uses `{p}`", rel(&f));
            }
        }
    }
}

/// A line that sends a signal: `kill(2)` through libc, rustix or nix, a `Child::kill`, a
/// `kill` program, a pidfd signal.
fn signals(line: &str) -> Option<&'static str> {
    let c = code(line);
    let re_method = regex::Regex::new(r"\.kill\(\s*\)").unwrap();
    if re_method.is_match(c) {
        return Some("Child::kill");
    }
    for (needle, what) in [
        ("libc::kill", "libc::kill"),
        ("libc::killpg", "libc::killpg"),
        ("rustix::process::kill", "rustix::process::kill*"),
        ("kill_process", "rustix::process::kill_process*"),
        ("kill_current_process_group", "rustix::process::kill*"),
        ("pidfd_send_signal", "pidfd_send_signal"),
        ("nix::sys::signal", "nix::sys::signal"),
        ("Command::new(\"kill\")", "the kill program"),
        ("Command::new(\"pkill\")", "the pkill program"),
    ] {
        if c.contains(needle) {
            return Some(what);
        }
    }
    None
}

#[test]
fn only_launch_and_the_fake_server_send_signals() {
    let w = workspace();
    let allowed = [w["launch"].dir.join("src"), w["fake-vllm"].dir.join("src")];
    for f in sources() {
        if allowed.iter().any(|a| f.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if let Some(what) = signals(line) {
                panic!(
                    "{}:{}: only the launch crate and the fake server signal processes ({what})",
                    rel(&f),
                    n + 1
                );
            }
        }
        for (n, p) in use_paths(&text) {
            for b in [
                "rustix::process::kill_process",
                "rustix::process::kill_process_group",
                "libc::kill",
            ] {
                assert!(
                    !under(&p, b),
                    "{}:{n}: only the launch crate and the fake server signal processes (`{p}`)",
                    rel(&f)
                );
            }
        }
    }
}

#[test]
fn the_signal_check_sees_what_it_bans() {
    for line in [
        "let _ = child.kill();",
        "unsafe { libc::kill(pid, 9) };",
        "rustix::process::kill_process(pid, Signal::KILL)",
        "kill_process_group(pg, sig)",
        "Command::new(\"kill\").arg(\"-9\")",
    ] {
        assert!(signals(line).is_some(), "{line}");
    }
    assert!(signals("// child.kill() in a comment").is_none());
    assert!(signals("let killed = report.killed.len();").is_none());
}

#[test]
fn every_module_says_what_it_is_for() {
    for f in sources() {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.trim_start().starts_with("//!"),
            "{} does not start with a `//!` module comment",
            rel(&f)
        );
    }
}

#[test]
fn no_grab_bag_modules_or_crates() {
    for name in workspace().keys() {
        assert!(
            !["utils", "helpers", "common", "misc"].contains(&name.as_str()),
            "crate {name}: name crates by their job"
        );
    }
    for f in sources() {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            !["utils.rs", "helpers.rs", "common.rs", "misc.rs"].contains(&name),
            "{}: name modules by their job",
            rel(&f)
        );
    }
}

#[test]
fn no_stubs_or_hidden_failures() {
    let mut files = sources();
    for c in workspace().values() {
        rust_files(&c.dir.join("tests"), &mut files);
        rust_files(&c.dir.join("benches"), &mut files);
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
                rel(&f)
            );
        }
    }
}

#[test]
fn every_scenario_has_an_expectation_and_a_report() {
    let dir = runner::catalog::ScenarioDir {
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
    let dir = runner::catalog::ScenarioDir {
        root: root().join("scenarios"),
    };
    for name in ["fp8-kv-sm120", "serving-worker-killed"] {
        dir.find(name).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn rule_ids_are_in_the_taxonomy() {
    let tax = triage::rules::taxonomy_ids();
    for r in triage::RuleSet::builtin().rules() {
        assert!(
            r.id == "unknown" || tax.contains(&r.id),
            "rule id {} not in taxonomy.toml",
            r.id
        );
    }
}
