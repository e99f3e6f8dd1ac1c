//! vLLM release numbers (`0.15.1`, `0.8.5.post1`, `0.10.1.1`) as comparable values.

use std::fmt;

/// A vLLM release: up to four numeric parts; `.postN` and local suffixes are kept for display
/// but do not change ordering against the base release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    parts: [u32; 4],
    post: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version {
            parts: [major, minor, patch, 0],
            post: 0,
        }
    }

    /// Parses `0.15.1`, `v0.15.1`, `0.8.5.post1`, `0.10.1.1`, `0.11.0+cu128`.
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.trim().trim_start_matches('v');
        let s = s.split('+').next()?;
        let (base, post) = match s.split_once(".post") {
            Some((b, p)) => (b, p.parse().ok()?),
            None => (s, 0),
        };
        let mut parts = [0u32; 4];
        let mut n = 0;
        for piece in base.split('.') {
            if n == 4 {
                return None;
            }
            parts[n] = piece.parse().ok()?;
            n += 1;
        }
        if n < 2 {
            return None;
        }
        Some(Version { parts, post })
    }

    pub fn minor(self) -> u32 {
        self.parts[1]
    }

    /// Whether both name the same release line `major.minor.patch` (`0.8.5.post1` and `0.8.5`,
    /// `0.10.1.1` and `0.10.1`: a post or hotfix release prints what its release does).
    pub fn same_release(self, other: Version) -> bool {
        self.parts[..3] == other.parts[..3]
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.parts[0], self.parts[1], self.parts[2])?;
        if self.parts[3] != 0 {
            write!(f, ".{}", self.parts[3])?;
        }
        if self.post != 0 {
            write!(f, ".post{}", self.post)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        let v = |s| Version::parse(s).unwrap();
        assert!(v("0.8.5.post1") > v("0.8.5"));
        assert!(v("0.10.1.1") > v("0.10.1"));
        assert!(v("0.15.1") > v("0.10.2"));
        assert_eq!(v("v0.11.0+cu128"), v("0.11.0"));
        assert_eq!(v("0.8.5.post1").to_string(), "0.8.5.post1");
        assert_eq!(v("0.10.1.1").to_string(), "0.10.1.1");
        assert!(Version::parse("abc").is_none());
        assert!(Version::parse("1").is_none());
    }
}
