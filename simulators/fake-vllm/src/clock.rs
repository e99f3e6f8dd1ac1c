//! The one place the fake server reads the real clock: its runtime is real time scaled by
//! `FAULTKIT_TIME_SCALE`, rendered as the generator's [`SimTime`] (never used for generated text).

use generator::clock::SimTime;

/// The real clock, as an instant the generator's renderings print.
#[allow(clippy::disallowed_methods)]
pub fn wall_now() -> SimTime {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    SimTime(d.as_micros() as u64)
}

/// A monotonic instant for the fake server's scaled sleeps.
#[allow(clippy::disallowed_methods)]
pub fn monotonic_now() -> std::time::Instant {
    std::time::Instant::now()
}
