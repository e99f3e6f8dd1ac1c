//! One `Seed(u64)` from which every random choice of a simulated run derives.
//!
//! The generator is a SplitMix64 stream. It is written here rather than taken from a crate so
//! that the output for a given seed can never change with a dependency update: byte-identical
//! logs for the same (scenario, seed, commit) are an invariant, not a hope.

use std::fmt;

/// The root of all randomness in a simulated run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Seed(pub u64);

impl Seed {
    /// A child seed for one named purpose (and index), independent of every other purpose.
    ///
    /// Deriving instead of drawing keeps streams stable: adding a draw for workers does not shift
    /// the timestamps of the API server.
    pub fn derive(self, purpose: &str, index: u64) -> Seed {
        let mut h = self.0 ^ 0x9E37_79B9_7F4A_7C15;
        for b in purpose.bytes() {
            h = mix(h ^ u64::from(b));
        }
        Seed(mix(h ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03)))
    }

    /// A random stream for this seed.
    pub fn rng(self) -> Rng {
        Rng { state: self.0 }
    }
}

impl fmt::Display for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A small deterministic random stream (SplitMix64).
#[derive(Clone, Copy, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }

    /// A value in `lo..=hi` (inclusive). `lo <= hi` is a programmer's promise.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        lo + self.next_u64() % (span + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.range(0, 99) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        assert!(!items.is_empty(), "pick from an empty slice");
        &items[self.range(0, items.len() as u64 - 1) as usize]
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.range(0, i as u64) as usize;
            items.swap(i, j);
        }
    }
}

/// A random stream usable through a shared reference (for builders whose methods take the
/// stream and `&mut self` in one call).
#[derive(Debug)]
pub struct SharedRng(std::cell::Cell<Rng>);

impl SharedRng {
    pub fn new(rng: Rng) -> SharedRng {
        SharedRng(std::cell::Cell::new(rng))
    }
    fn with<T>(&self, f: impl FnOnce(&mut Rng) -> T) -> T {
        let mut r = self.0.get();
        let out = f(&mut r);
        self.0.set(r);
        out
    }
    pub fn next_u64(&self) -> u64 {
        self.with(Rng::next_u64)
    }
    pub fn range(&self, lo: u64, hi: u64) -> u64 {
        self.with(|r| r.range(lo, hi))
    }
    pub fn chance(&self, percent: u64) -> bool {
        self.with(|r| r.chance(percent))
    }
    pub fn pick<'a, T>(&self, items: &'a [T]) -> &'a T {
        self.with(|r| r.pick(items))
    }
    pub fn shuffle<T>(&self, items: &mut [T]) {
        self.with(|r| r.shuffle(items))
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_streams_are_stable_and_distinct() {
        let s = Seed(7);
        assert_eq!(s.derive("worker", 1), s.derive("worker", 1));
        assert_ne!(s.derive("worker", 1), s.derive("worker", 2));
        assert_ne!(s.derive("worker", 1), s.derive("api", 1));
        // Pinned value: a change here changes every simulated log.
        assert_eq!(Seed(0).rng().next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn range_stays_inside() {
        let mut r = Seed(3).rng();
        for _ in 0..1000 {
            let v = r.range(5, 9);
            assert!((5..=9).contains(&v));
        }
    }
}
