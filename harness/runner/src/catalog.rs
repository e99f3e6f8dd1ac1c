//! Finding scenario files: by name (`fp8-kv-sm120`), by `group/name`, by glob, or by path.
//!
//! Main type: [`ScenarioDir`]. The directory is `$FAULTKIT_SCENARIOS`, else `./scenarios`, else the
//! `scenarios/` folder of the source tree faultkit was built from.

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

impl ScenarioDir {
    /// The default scenario directory.
    pub fn discover() -> ScenarioDir {
        if let Some(d) = std::env::var_os("FAULTKIT_SCENARIOS") {
            return ScenarioDir { root: d.into() };
        }
        let cwd = PathBuf::from("scenarios");
        if cwd.is_dir() {
            return ScenarioDir { root: cwd };
        }
        ScenarioDir {
            root: Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios"),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("crash/*", "crash/fp8-kv-sm120"));
        assert!(glob_match("fp8-*", "fp8-kv-sm120"));
        assert!(!glob_match("fp8-*", "crash/fp8-kv-sm120"));
        assert!(glob_match("*sm120", "crash/fp8-kv-sm120"));
    }
}
