//! Outside commands with a bound: `sh -c SCRIPT`, stdin closed, stdout captured, stopped with
//! SIGKILL when the time runs out ([`run_shell`]); a child the caller spawned, waited for with a
//! bound ([`wait_or_kill`]). The runner's adapters (`--triage-cmd`, the baselines) run
//! through here, so the process they start is signalled by the launch crate and nothing else.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why a bounded command gave no output.
#[derive(Debug, thiserror::Error)]
pub enum BoundedError {
    #[error("running `{script}`: {source}")]
    Spawn {
        script: String,
        source: std::io::Error,
    },
    #[error("waiting for `{script}`: {source}")]
    Wait {
        script: String,
        source: std::io::Error,
    },
    #[error("`{script}` did not finish within {} s", .timeout.as_secs())]
    TimedOut { script: String, timeout: Duration },
}

/// Runs `sh -c script` with stdin closed, stderr discarded and `env` added to the environment;
/// returns what it wrote to stdout. The shell runs in a process group of its own; when it is still
/// running at `timeout` the whole group is killed (it is ours: we spawned it, and whatever it
/// started stays in its group unless it left on purpose) and the shell reaped.
pub fn run_shell(
    script: &str,
    env: &[(&str, String)],
    timeout: Duration,
) -> Result<Vec<u8>, BoundedError> {
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| BoundedError::Spawn {
            script: script.into(),
            source,
        })?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let group = rustix::process::Pid::from_child(&child);
    let exited = wait_or_kill(&mut child, timeout).map_err(|source| BoundedError::Wait {
        script: script.into(),
        source,
    })?;
    if !exited {
        // The shell is gone; what it left running in its group would hold stdout open.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        return Err(BoundedError::TimedOut {
            script: script.into(),
            timeout,
        });
    }
    Ok(reader.join().unwrap_or_default())
}

/// Waits for `child` (a process the caller spawned) up to `timeout`; kills and reaps it when the
/// time runs out. Returns whether it exited by itself.
pub fn wait_or_kill(child: &mut Child, timeout: Duration) -> std::io::Result<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        if child.try_wait()?.is_some() {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(false);
        }
        std::thread::park_timeout(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_stdout_and_closes_stdin() {
        let out = run_shell(
            "printf 'a=1\\n'; cat; echo \"$FAULTKIT_X\"",
            &[("FAULTKIT_X", "done".into())],
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(out, b"a=1\ndone\n");
    }

    #[test]
    fn a_command_past_its_bound_is_stopped() {
        let e = run_shell("exec sleep 30", &[], Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, BoundedError::TimedOut { .. }), "{e}");
        // A child the shell started in the background goes with it.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > '{}'; wait", pidfile.display());
        run_shell(&script, &[], Duration::from_millis(300)).unwrap_err();
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut gone = false;
        for _ in 0..100 {
            // A killed child of a reaped shell is reparented and reaped; until then it is a zombie.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty() || stat.contains(") Z ") {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone, "the background sleep {pid} outlived the bound");
    }
}
