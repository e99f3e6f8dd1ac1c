//! The harness's integration tests, one binary (matklad: "Delete Cargo Integration Tests").

mod bad_input;
mod cli;
mod container;
mod corpus;
mod launch;
mod metamorphic;
mod properties;
mod realism;
mod tidy;
