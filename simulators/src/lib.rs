//! `simulators`: make a vLLM launch failure happen — as text (a log file and its truth) and, in
//! the `fake-vllm` binary, as a real process tree.
//!
//! Data flow: a [`scenario::Scenario`] names hardware, model, flags and faults;
//! [`deploy::Deployment::derive`] decides what vLLM would do; [`script`] turns that into
//! per-process event streams for one launch, in the words of a [`profile::Profile`];
//! [`interleave`] merges them the way concurrent writers share a file; [`simulate`] assembles
//! launches, file faults and padding into a log and its [`truth::Truth`].
//!
//! Everything random derives from one [`seed::Seed`]; nothing here reads the wall clock except
//! [`clock::wall_now`], which only the fake server's runtime uses.

pub mod catalog;
pub mod clock;
pub mod command;
pub mod deploy;
pub mod fake;
pub mod interleave;
pub mod procfs;
pub mod profile;
pub mod record;
pub mod scenario;
pub mod script;
pub mod seed;
pub mod selector;
pub mod simulate;
pub mod taxonomy;
pub mod traceback;
pub mod traffic;
pub mod truth;
pub mod version;

pub use scenario::{Scenario, ScenarioError};
pub use seed::Seed;
pub use simulate::{simulate, simulate_to_vec, SimOptions};
pub use truth::Truth;
pub use version::Version;
