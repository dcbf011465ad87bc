//! Shared by the engine's unit tests: the engine fixtures, the same file the
//! integration tests include (`engine/tests/common/fixtures.rs`).

use crate as engine;

#[path = "../../tests/common/fixtures.rs"]
mod fixtures;
#[allow(unused_imports)]
pub use fixtures::*;
