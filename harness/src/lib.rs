//! `harness`: did it fail, and why. Triage of vLLM logs ([`triage`], pure), the scenario
//! catalog ([`catalog`]), and the `faultkit` command line.

pub mod catalog;
pub mod launch;
pub mod mapped;
pub mod runner;
pub mod triage;
pub mod wait;
