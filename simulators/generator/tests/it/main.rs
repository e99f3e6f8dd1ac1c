//! The simulator's integration tests, one binary.

mod determinism;
mod grammar;
mod support;
