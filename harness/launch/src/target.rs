//! Where a launch runs: here, on another host over ssh, or inside a container.
//!
//! Main trait: [`Target`]. A remote target runs the same `faultkit` steps there: the local
//! faultkit only wraps the command line. Over ssh the remote side gets one string that a shell
//! will split, so every argument is quoted exactly; `docker exec` takes an argv and needs none.

/// Where to run.
pub trait Target: std::fmt::Debug {
    /// The argv that runs `argv` on the target.
    fn wrap(&self, argv: &[String]) -> Result<Vec<String>, String>;
    /// `local`, `ssh:HOST`, `docker:NAME`.
    fn name(&self) -> String;
}

/// This machine.
#[derive(Debug)]
pub struct Local;

/// `ssh HOST 'quoted command'`.
#[derive(Debug)]
pub struct Ssh {
    pub host: String,
}

/// `docker exec CONTAINER argv…`.
#[derive(Debug)]
pub struct Docker {
    pub container: String,
}

impl Target for Local {
    fn wrap(&self, argv: &[String]) -> Result<Vec<String>, String> {
        Ok(argv.to_vec())
    }
    fn name(&self) -> String {
        "local".into()
    }
}

impl Target for Ssh {
    fn wrap(&self, argv: &[String]) -> Result<Vec<String>, String> {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        let remote =
            shlex::try_join(words).map_err(|e| format!("cannot quote the command for ssh: {e}"))?;
        // `--` ends ssh's own options: a host name cannot be taken for one.
        Ok(vec![
            "ssh".into(),
            "-o".into(),
            "BatchMode=yes".into(),
            "--".into(),
            self.host.clone(),
            remote,
        ])
    }
    fn name(&self) -> String {
        format!("ssh:{}", self.host)
    }
}

impl Target for Docker {
    fn wrap(&self, argv: &[String]) -> Result<Vec<String>, String> {
        let mut v = vec!["docker".into(), "exec".into(), self.container.clone()];
        v.extend(argv.iter().cloned());
        Ok(v)
    }
    fn name(&self) -> String {
        format!("docker:{}", self.container)
    }
}

/// Parses `local`, `ssh:HOST`, `docker:CONTAINER`.
pub fn parse(s: &str) -> Result<Box<dyn Target>, String> {
    let bad = |what: &str| format!("--target {s}: {what}");
    match s.split_once(':') {
        None if s == "local" => Ok(Box::new(Local)),
        Some(("ssh", h)) if !h.is_empty() && !h.starts_with('-') => {
            Ok(Box::new(Ssh { host: h.into() }))
        }
        Some(("docker", c)) if !c.is_empty() && !c.starts_with('-') => Ok(Box::new(Docker {
            container: c.into(),
        })),
        Some(("ssh" | "docker", _)) => Err(bad("needs a host or container name")),
        _ => Err(bad("expected local, ssh:HOST or docker:CONTAINER")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_quotes_every_argument() {
        let t = parse("ssh:gpu1").unwrap();
        let argv: Vec<String> = [
            "faultkit",
            "launch",
            "--",
            "vllm",
            "serve",
            "a b",
            "it's",
            "$(rm -rf /)",
            ";",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let w = t.wrap(&argv).unwrap();
        assert_eq!(&w[..5], ["ssh", "-o", "BatchMode=yes", "--", "gpu1"]);
        // A shell splitting the remote string gets the argv back exactly.
        assert_eq!(shlex::split(&w[5]).unwrap(), argv);
    }

    #[test]
    fn targets_parse() {
        assert_eq!(parse("local").unwrap().name(), "local");
        assert_eq!(parse("docker:c1").unwrap().name(), "docker:c1");
        assert!(parse("ssh:").is_err());
        assert!(parse("ssh:-oProxyCommand=x").is_err());
        assert!(parse("ftp:x").is_err());
    }
}
