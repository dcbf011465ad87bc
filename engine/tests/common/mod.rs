//! Shared by the integration tests: the engine fixtures (`fixtures.rs`,
//! also included by the engine's unit tests) and the load-and-crash harness.

pub mod load_crash;

use redoctor_engine as engine;

#[path = "fixtures.rs"]
mod fixtures;
#[allow(unused_imports)]
pub use fixtures::*;
