//! `vocab`: the words triage, the generator and the runner share — the root-cause ids of
//! `taxonomy.toml` ([`taxonomy`]) and the simulator's truth schema ([`truth::Truth`]).

pub mod taxonomy;
pub mod truth;

pub use truth::Truth;
