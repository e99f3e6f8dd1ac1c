//! Finding scenario files: by name (`fp8-kv-sm120`), by `group/name`, by glob, or by path.
//!
//! Main type: [`ScenarioDir`]. The directory is the one named (`--scenarios DIR`), else
//! `$FAULTKIT_SCENARIOS`, else `./scenarios`, else the catalog embedded in the binary at build
//! time ([`embedded`]), written out once under the user's cache directory — so an installed
//! `faultkit` needs no source tree.

use std::path::{Path, PathBuf};

use generator::{Scenario, ScenarioError};

/// Where scenario files live.
#[derive(Clone, Debug)]
pub struct ScenarioDir {
    pub root: PathBuf,
}

/// A scenario name that matched nothing, or matched a bad file.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("no scenario named `{name}` in {dir} (list them with `faultkit simulate --list`)")]
    NotFound { name: String, dir: String },
    #[error("{0}")]
    Invalid(#[from] ScenarioError),
    #[error("{0}")]
    Usage(String),
    #[error("cannot read scenario directory {dir}: {source}")]
    Io {
        dir: String,
        #[source]
        source: std::io::Error,
    },
}

/// The environment variable naming a scenario directory.
pub const SCENARIOS_ENV: &str = "FAULTKIT_SCENARIOS";

impl ScenarioDir {
    /// The scenario directory: `explicit` (a `--scenarios` option), else `$FAULTKIT_SCENARIOS`,
    /// else `./scenarios` when it exists, else the embedded catalog.
    pub fn discover(explicit: Option<&Path>) -> Result<ScenarioDir, FindError> {
        let named = explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(SCENARIOS_ENV).map(PathBuf::from));
        if let Some(root) = named {
            if !root.is_dir() {
                return Err(FindError::Usage(format!(
                    "scenario directory {}: not a directory",
                    root.display()
                )));
            }
            return Ok(ScenarioDir { root });
        }
        let cwd = PathBuf::from("scenarios");
        if cwd.is_dir() {
            return Ok(ScenarioDir { root: cwd });
        }
        embedded::extract().map(|root| ScenarioDir { root })
    }

    /// Every scenario file (`<group>/<name>.toml`), sorted by `group/name`.
    pub fn files(&self) -> Result<Vec<PathBuf>, FindError> {
        let io = |source| FindError::Io {
            dir: self.root.display().to_string(),
            source,
        };
        let mut out = Vec::new();
        for group in std::fs::read_dir(&self.root).map_err(io)? {
            let group = group.map_err(io)?.path();
            if !group.is_dir() {
                continue;
            }
            let name = group.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // `real/` holds captured logs, not scenario files.
            if name == "real" || name.starts_with('.') {
                continue;
            }
            for f in std::fs::read_dir(&group).map_err(io)? {
                let f = f.map_err(io)?.path();
                if f.extension().is_some_and(|e| e == "toml") {
                    out.push(f);
                }
            }
        }
        out.sort_by_key(|p| id_of(p));
        Ok(out)
    }

    /// Load every scenario; the first invalid file is an error.
    pub fn load_all(&self) -> Result<Vec<Scenario>, FindError> {
        self.files()?
            .iter()
            .map(|f| Scenario::load(f).map_err(FindError::from))
            .collect()
    }

    /// Resolve a name, `group/name`, or a path to a `.toml` file.
    pub fn find(&self, name: &str) -> Result<Scenario, FindError> {
        let as_path = Path::new(name);
        if name.ends_with(".toml") && as_path.exists() {
            return Ok(Scenario::load(as_path)?);
        }
        for f in self.files()? {
            let id = id_of(&f);
            let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if id == name || stem == name {
                return Ok(Scenario::load(&f)?);
            }
        }
        Err(FindError::NotFound {
            name: name.to_string(),
            dir: self.root.display().to_string(),
        })
    }

    /// Scenarios whose name or `group/name` matches a glob (`crash/*`, `fp8-*`).
    pub fn matching(&self, pattern: &str) -> Result<Vec<PathBuf>, FindError> {
        Ok(self
            .files()?
            .into_iter()
            .filter(|f| {
                let id = id_of(f);
                let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                glob_match(pattern, &id) || glob_match(pattern, stem)
            })
            .collect())
    }
}

/// `group/name` of a scenario file path.
pub fn id_of(p: &Path) -> String {
    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let group = p
        .parent()
        .and_then(|g| g.file_name())
        .and_then(|s| s.to_str())
        .unwrap_or("");
    format!("{group}/{stem}")
}

/// Shell-style glob with `*` and `?`.
pub fn glob_match(pattern: &str, s: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], s) || (!s.is_empty() && go(p, &s[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &s[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), s.as_bytes())
}

/// The scenario catalog compiled into the binary (`build.rs`), and its copy on disk.
pub mod embedded {
    use std::path::{Path, PathBuf};

    use super::FindError;

    include!(concat!(env!("OUT_DIR"), "/embedded_scenarios.rs"));

    /// Writes the embedded catalog once to `<cache>/faultkit/scenarios-<hash>/` (the hash of its
    /// contents, so a newer binary never reads an older copy) and returns that directory.
    pub fn extract() -> Result<PathBuf, FindError> {
        let dir = cache_dir().join(format!("scenarios-{:016x}", content_hash()));
        if dir.join(".complete").is_file() {
            return Ok(dir);
        }
        let io = |p: &Path| {
            let dir = p.display().to_string();
            move |source| FindError::Io { dir, source }
        };
        // Written beside, then renamed into place: a concurrent run never sees half a catalog.
        let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
        for (rel, text) in FILES {
            let path = tmp.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::write(&path, text).map_err(io(&path))?;
        }
        std::fs::write(tmp.join(".complete"), "").map_err(io(&tmp))?;
        if std::fs::rename(&tmp, &dir).is_err() {
            // Another run put it there first; ours is the same bytes.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        if dir.join(".complete").is_file() {
            Ok(dir)
        } else {
            Err(FindError::Usage(format!(
                "could not write the embedded scenarios to {}",
                dir.display()
            )))
        }
    }

    fn cache_dir() -> PathBuf {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir)
            .join("faultkit")
    }

    /// FNV-1a over every path and text: stable across builds and platforms.
    fn content_hash() -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for (rel, text) in FILES {
            for b in rel.bytes().chain([0]).chain(text.bytes()).chain([0]) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_embedded_with_its_snapshots() {
        let names: Vec<&str> = embedded::FILES.iter().map(|(n, _)| *n).collect();
        assert!(names.contains(&"crash/fp8-kv-sm120.toml"), "{names:?}");
        assert!(names.contains(&"crash/fp8-kv-sm120.report"));
        assert!(names.iter().all(|n| !n.starts_with("real/")));
    }

    #[test]
    fn globs() {
        assert!(glob_match("crash/*", "crash/fp8-kv-sm120"));
        assert!(glob_match("fp8-*", "fp8-kv-sm120"));
        assert!(!glob_match("fp8-*", "crash/fp8-kv-sm120"));
        assert!(glob_match("*sm120", "crash/fp8-kv-sm120"));
    }
}
