//! `generator`: make a vLLM launch failure happen — as text (a log file and its truth) and, in
//! the `fake-vllm` binary, as a real process tree.
//!
//! Data flow: a [`scenario::Scenario`] names hardware, model, flags and faults;
//! [`deploy::Deployment::derive`] decides what vLLM would do; [`script`] turns that into
//! per-process event streams for one launch, in the words of a [`profile::Profile`];
//! [`interleave`] merges them the way concurrent writers share a file; [`simulate`] assembles
//! launches, file faults and padding into a log and its `vocab::Truth`.
//!
//! Everything random derives from one [`seed::Seed`]; nothing here reads the wall clock (the
//! crate's `clippy.toml` bans it). The truth's types are shared with the runner (`vocab`).

pub mod catalog;
pub mod clock;
pub mod deploy;
pub mod host;
pub mod interleave;
pub mod profile;
pub mod record;
pub mod release;
pub mod render;
pub mod scenario;
pub mod script;
pub mod seed;
pub mod selector;
pub mod simulate;
pub mod traceback;
pub mod traffic;
pub mod version;

pub use scenario::{Scenario, ScenarioError};
pub use seed::Seed;
pub use simulate::{simulate, simulate_to_vec, SimOptions};
pub use version::Version;
