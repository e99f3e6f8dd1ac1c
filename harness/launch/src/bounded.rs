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

/// Runs `sh -c script` with stdin closed and stderr discarded; returns what it wrote to stdout.
/// A command still running at `timeout` is killed (it is ours: we spawned it) and reaped.
pub fn run_shell(script: &str, timeout: Duration) -> Result<Vec<u8>, BoundedError> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
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
    let exited = wait_or_kill(&mut child, timeout).map_err(|source| BoundedError::Wait {
        script: script.into(),
        source,
    })?;
    if !exited {
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
        let out = run_shell("printf 'a=1\\n'; cat; echo done", Duration::from_secs(10)).unwrap();
        assert_eq!(out, b"a=1\ndone\n");
    }

    #[test]
    fn a_command_past_its_bound_is_stopped() {
        let e = run_shell("exec sleep 30", Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, BoundedError::TimedOut { .. }), "{e}");
    }
}
