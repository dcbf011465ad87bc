//! The contracts on both sides of the probes, in one small crate without
//! aya (the pattern of aya's `-common` crates):
//!
//! - [`abi`]: what the bundled engine exposes to the probes, the
//!   probe-point symbols and the named-lock table's layout, compiled by
//!   both the engine and the probes;
//! - [`signals`]: what the probes hand to the rules, [`Signals`] per
//!   window, keyed by [`Role`] and [`FileKind`] ([`kinds`]).

pub mod abi;
pub mod kinds;
pub mod signals;

pub use kinds::{FileKind, Role};
pub use signals::{Signals, Unavailable};
