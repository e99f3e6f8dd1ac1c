//! Bounded waiting: poll a condition until it gives a value or a bound passes, so a wait on
//! another process or a file cannot stall forever. (The launcher's own loops — `stop`'s
//! escalation, `follow` — keep their bounds inline: they act between polls.)

use std::time::{Duration, Instant};

/// Poll `f` every `poll` until it returns `Some`, at most `bound`; the error names `what`.
pub fn until<T>(
    bound: Duration,
    poll: Duration,
    what: &str,
    mut f: impl FnMut() -> Option<T>,
) -> Result<T, String> {
    let started = Instant::now();
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        if started.elapsed() >= bound {
            return Err(format!(
                "timed out after {} ms waiting for {what}",
                bound.as_millis()
            ));
        }
        std::thread::sleep(poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gives_the_value_or_names_what_it_waited_for() {
        let mut n = 0;
        let v = until(
            Duration::from_secs(5),
            Duration::ZERO,
            "three calls",
            || {
                n += 1;
                (n == 3).then_some(n)
            },
        );
        assert_eq!(v, Ok(3));
        let e = until(Duration::ZERO, Duration::ZERO, "never", || None::<()>).unwrap_err();
        assert_eq!(e, "timed out after 0 ms waiting for never");
    }
}
