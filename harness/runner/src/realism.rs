//! How much a simulated log looks like the real one: line-template coverage of the real vLLM
//! captures under `scenarios/real/vllm-<version>/` by the simulator's output for the same
//! scenario and version.
//!
//! Main function: [`measure`]. A line's template is the line with what legitimately differs
//! between two runs masked: ANSI escapes, timestamps, pids and other numbers, hex ids, install
//! paths. Recall (coverage) of a capture = the share of its distinct templates that the simulated
//! log also has; precision = the share of the simulated log's distinct templates that the real one
//! printed (an invented line costs precision).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use generator::{Seed, SimOptions, Version};
use serde::Deserialize;

use crate::catalog::ScenarioDir;

/// Recall or precision below this fails the realism test.
pub const COVERAGE_MIN: f64 = 0.90;

/// One capture and how well the simulator covers it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Coverage {
    pub version: String,
    pub file: String,
    pub scenario: String,
    /// Distinct templates of the real capture.
    pub templates: usize,
    /// Of them, those the simulated log also has.
    pub covered: usize,
    /// Distinct templates of the simulated log.
    pub simulated: usize,
    /// Templates of the capture the simulation lacks.
    pub missing: Vec<String>,
    /// Templates of the simulation the capture lacks (invented, or from another path).
    pub invented: Vec<String>,
    /// Distinct source locations of the capture: `[file.py:N]` of its records and
    /// `package/…/file.py:N` of its traceback frames (which templates mask).
    pub locations: usize,
    /// Of them, those the simulated log also names.
    pub locations_covered: usize,
    /// The capture's locations the simulation lacks or puts at another line.
    pub missing_locations: Vec<String>,
}

impl Coverage {
    /// Recall: the share of the real templates the simulation has.
    pub fn ratio(&self) -> f64 {
        share(self.covered, self.templates)
    }

    /// Precision: the share of the simulated templates real vLLM printed.
    pub fn precision(&self) -> f64 {
        share(self.covered, self.simulated)
    }

    /// The share of the capture's source locations (`file:line`) the simulation names.
    pub fn location_ratio(&self) -> f64 {
        share(self.locations_covered, self.locations)
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

#[derive(Deserialize)]
struct Labels {
    #[serde(default)]
    log: Vec<Label>,
}

#[derive(Deserialize)]
struct Label {
    file: String,
    vllm_version: String,
    #[serde(default)]
    scenario: Option<String>,
    /// The capturing machine's processor (`avx2` when the label does not say: the captures
    /// before 0.34.0 were made on one).
    #[serde(default)]
    cpu_isa: Option<String>,
}

/// Every capture under `real_dir` (`scenarios/real`) whose label names a scenario of `dir`.
pub fn measure(real_dir: &Path, dir: &ScenarioDir) -> Result<Vec<Coverage>, String> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(real_dir)
        .map_err(|e| format!("{}: {e}", real_dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vllm-"))
        })
        .collect();
    dirs.sort();
    for d in dirs {
        let labels_path = d.join("labels.toml");
        let Ok(text) = std::fs::read_to_string(&labels_path) else {
            continue;
        };
        let labels: Labels =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", labels_path.display()))?;
        for l in labels.log {
            let Some(name) = l.scenario.clone() else {
                continue;
            };
            let mut scenario = dir.find(&name).map_err(|e| {
                format!(
                    "{}: {} names scenario `{name}`: {e}",
                    labels_path.display(),
                    l.file
                )
            })?;
            if !scenario.tags.iter().any(|t| t == "capturable") {
                continue;
            }
            if let Some(isa) = &l.cpu_isa {
                scenario.host.cpu_isa =
                    generator::scenario::CpuIsa::parse(isa).ok_or_else(|| {
                        format!(
                            "{}: {}: unknown cpu_isa `{isa}` (known: {})",
                            labels_path.display(),
                            l.file,
                            generator::scenario::CpuIsa::NAMES.join(", ")
                        )
                    })?;
            }
            let real = std::fs::read(d.join(&l.file))
                .map_err(|e| format!("{}: {e}", d.join(&l.file).display()))?;
            let version = Version::parse(&l.vllm_version)
                .ok_or_else(|| format!("{}: bad version {}", l.file, l.vllm_version))?;
            if let Some(why) = scenario.at_version(version).unmodelled(version) {
                return Err(format!("{}: {why}", l.file));
            }
            let opts = SimOptions {
                seed: Seed(0),
                size_bytes: None,
                vllm: Some(version),
            };
            let (sim, _) = generator::simulate_to_vec(&scenario, &opts);
            let want = templates(&real);
            let have = templates(&sim);
            let missing: Vec<String> = want.difference(&have).cloned().collect();
            let invented: Vec<String> = have.difference(&want).cloned().collect();
            let real_locations = locations(&real);
            let missing_locations: Vec<String> = real_locations
                .difference(&locations(&sim))
                .cloned()
                .collect();
            out.push(Coverage {
                version: l.vllm_version.clone(),
                file: l.file.clone(),
                scenario: name,
                templates: want.len(),
                covered: want.len() - missing.len(),
                simulated: have.len(),
                missing,
                invented,
                locations: real_locations.len(),
                locations_covered: real_locations.len() - missing_locations.len(),
                missing_locations,
            });
        }
    }
    Ok(out)
}

/// A public real log and how much of it its twin scenario reproduces.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PublicCoverage {
    /// The real log, relative to `scenarios/real/`.
    pub real: String,
    /// The twin scenario (`group/name`).
    pub scenario: String,
    pub version: String,
    /// Distinct templates of the real log's vLLM lines.
    pub templates: usize,
    /// Of them, those the twin's simulated log also has.
    pub covered: usize,
    /// The real log's vLLM line templates the twin lacks.
    pub missing: Vec<String>,
}

impl PublicCoverage {
    /// Recall: the share of the real log's vLLM line templates the twin has.
    pub fn ratio(&self) -> f64 {
        share(self.covered, self.templates)
    }
}

/// Every scenario of `dir` that names a public real log (`real = …`), simulated at its own
/// release and seed 0, against that log. Only the real log's vLLM lines count — records with a
/// vLLM header or a process prefix, read after any collector prefix — so a thread's shell
/// prompts and prose cost nothing; precision is not measured, as an excerpt shows a fraction of
/// what vLLM printed.
pub fn measure_public(real_dir: &Path, dir: &ScenarioDir) -> Result<Vec<PublicCoverage>, String> {
    let mut out = Vec::new();
    let scenarios = dir.load_all().map_err(|e| e.to_string())?;
    for s in scenarios {
        let Some(real) = s.real.clone() else {
            continue;
        };
        let path = real_dir.join(&real);
        let bytes = std::fs::read(&path)
            .map_err(|e| format!("{}: `real = {real:?}`: {:?}: {e}", s.path.display(), path))?;
        let want = vllm_templates(&bytes);
        let opts = SimOptions {
            seed: Seed(0),
            size_bytes: None,
            vllm: None,
        };
        let (sim, _) = generator::simulate_to_vec(&s, &opts);
        let have = vllm_templates(&sim);
        let missing: Vec<String> = want.difference(&have).cloned().collect();
        out.push(PublicCoverage {
            real,
            scenario: format!("{}/{}", s.group, s.name),
            version: s.vllm.to_string(),
            templates: want.len(),
            covered: want.len() - missing.len(),
            missing,
        });
    }
    Ok(out)
}

/// The distinct templates of a log's vLLM lines (a vLLM header or a process prefix; torch's glog
/// and c10 records only with a process prefix), each read from where the vLLM text starts
/// (collector prefixes dropped).
pub fn vllm_templates(bytes: &[u8]) -> BTreeSet<String> {
    let layers = triage::layers::Layers::learn(bytes);
    physical_lines(bytes)
        .filter_map(|l| {
            let p = triage::grammar::parse_line_in(l, &layers);
            // vLLM's own records and what its processes print: not torch's glog or c10 lines.
            let vllm = p.process.is_some() || p.header == triage::grammar::HeaderKind::Vllm;
            vllm.then(|| template(&l[p.container_prefix.min(l.len())..]))
        })
        .filter(|t| !t.trim().is_empty())
        .collect()
}

/// A log's lines as a terminal shows them: split at `\n` and at `\r`.
fn physical_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|&b| b == b'\n')
        .flat_map(|l| l.split(|&b| b == b'\r'))
}

/// The distinct source locations a log names: `file.py:N` of a record header (`[file.py:N]`) and
/// `PATH:N` of a traceback frame (`File "…/PATH", line N, in …`), PATH read after
/// `site-packages/` or, outside it, the file's name.
pub fn locations(bytes: &[u8]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for l in physical_lines(bytes) {
        let text = String::from_utf8_lossy(l);
        let text = triage::grammar::strip_ansi(&text);
        let mut rest = text.as_ref();
        while let Some(i) = rest.find(".py:") {
            let start = rest[..i].rfind(['[', ' ']).map_or(0, |p| p + 1);
            let digits: String = rest[i + 4..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if rest[..start].ends_with('[')
                && !digits.is_empty()
                && rest[i + 4 + digits.len()..].starts_with(']')
            {
                out.insert(format!("{}.py:{digits}", &rest[start..i]));
            }
            rest = &rest[i + 4..];
        }
        if let Some(frame) = text.trim_start().strip_prefix("File \"") {
            if let Some((path, tail)) = frame.split_once("\", line ") {
                let line: String = tail.chars().take_while(char::is_ascii_digit).collect();
                let path = ["site-packages/", "dist-packages/"]
                    .iter()
                    .find_map(|m| path.split_once(m).map(|(_, p)| p))
                    .unwrap_or_else(|| path.rsplit('/').next().unwrap_or(path));
                if !line.is_empty() {
                    out.insert(format!("{path}:{line}"));
                }
            }
        }
    }
    out
}

/// The distinct line templates of a log.
pub fn templates(bytes: &[u8]) -> BTreeSet<String> {
    physical_lines(bytes)
        .map(template)
        .filter(|t| !t.trim().is_empty())
        .collect()
}

/// One line's template.
pub fn template(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = triage::grammar::strip_ansi(&text);
    let s = mask_paths(text.trim_end());
    let chars: Vec<char> = s.chars().collect();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '0' && chars.get(i + 1) == Some(&'x') {
            i += 2;
            while i < chars.len() && chars[i].is_ascii_hexdigit() {
                i += 1;
            }
            out.push('#');
            continue;
        }
        if (i == 0 || !word(chars[i - 1])) && c.is_ascii_hexdigit() {
            // A hex id (6+ hex digits with a digit among them) or a number.
            let mut j = i;
            while j < chars.len() && chars[j].is_ascii_hexdigit() {
                j += 1;
            }
            let tok = &chars[i..j];
            let ends = j == chars.len() || !word(chars[j]);
            if ends
                && tok.iter().any(char::is_ascii_digit)
                && (tok.len() >= 6 || tok.iter().all(char::is_ascii_digit))
            {
                out.push('#');
                i = j;
                continue;
            }
        }
        if c.is_ascii_digit() {
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            out.push('#');
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

fn mask_paths(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let site = ["site-packages/", "dist-packages/"]
            .iter()
            .filter_map(|m| rest.find(m).map(|i| (i, m.len())))
            .min();
        let Some((i, len)) = site else {
            out.push_str(rest);
            break;
        };
        // Back to the start of the path (a quote, space or '(').
        let start = rest[..i].rfind(['"', '\'', ' ', '(']).map_or(0, |p| p + 1);
        out.push_str(&rest[..start]);
        out.push_str("<site>/");
        rest = &rest[i + len..];
    }
    // The standard library: `/…/lib/python3.N/` (not followed by site-packages any more).
    let mut s2 = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find("/lib/python3.") {
        let start = rest[..i].rfind(['"', '\'', ' ', '(']).map_or(0, |p| p + 1);
        let after = &rest[i + "/lib/python3.".len()..];
        let end = after.find('/').map_or(after.len(), |p| p + 1);
        s2.push_str(&rest[..start]);
        s2.push_str("<stdlib>/");
        rest = &after[end..];
    }
    s2.push_str(rest);
    s2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_mask_what_differs_between_runs() {
        let a = template(b"\x1b[0;36m(APIServer pid=7534)\x1b[0;0m INFO 11-29 23:08:23 [utils.py:325] non-default args: {'port': 8000}");
        let b = template(b"(APIServer pid=12)\tINFO 01-02 03:04:05 [utils.py:325] non-default args: {'port': 8001}");
        assert_ne!(a, b, "a tab is not a space");
        let b = template(b"(APIServer pid=12) INFO 01-02 03:04:05 [utils.py:325] non-default args: {'port': 8001}");
        assert_eq!(a, b);
        let p1 = template(b"  File \"/srv/vllm/venv-0.15.1/lib/python3.11/site-packages/vllm/v1/engine/core.py\", line 937, in run_engine_core");
        let p2 = template(b"  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py\", line 12, in run_engine_core");
        assert_eq!(p1, p2);
        let s1 = template(b"  File \"/home/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/process.py\", line 314, in _bootstrap");
        let s2 = template(
            b"  File \"/usr/lib/python3.12/multiprocessing/process.py\", line 108, in _bootstrap",
        );
        assert_eq!(s1, s2);
        assert_eq!(
            template(b"id 6ead1cbc4a5f057f"),
            template(b"id 1f98ee754a5f0aaa")
        );
        assert_eq!(
            template("█ ▀▄▀ █  version 0.15.1".as_bytes()),
            template("█ ▀▄▀ █  version 0.10.2".as_bytes())
        );
    }

    #[test]
    fn a_public_logs_vllm_lines_are_its_records_after_any_collector_prefix() {
        let real = b"$ docker compose up\n\
vllm-1  | (APIServer pid=7) INFO 11-29 23:08:23 [utils.py:325] non-default args: {'port': 8000}\n\
vllm-1  | ERROR 11-29 23:08:40 [core.py:700] ValueError: No available memory for the cache blocks.\n\
Any idea what is wrong?\n";
        let t = vllm_templates(real);
        assert_eq!(t.len(), 2, "{t:?}");
        let sim = b"(APIServer pid=99) INFO 01-02 03:04:05 [utils.py:325] non-default args: {'port': 8001}\n";
        assert!(t.is_superset(&vllm_templates(sim)));
    }
}
