//! Pages on disk: the page format ([`page`]), tablespace files
//! ([`tablespace`]) and the doublewrite buffer in front of them
//! ([`doublewrite`], in its pre-8.0.20 and 8.0.20 designs), with the
//! recovery step that restores torn pages before redo applies.
//!
//! Seed 002. What this layer guarantees: a page read from a tablespace is
//! used only if it verifies ([`page::verify`]); with doublewrite on, a
//! page whose write a crash tore is restored from its copy
//! ([`doublewrite::recover`]); with it off, such a page is reported.
//! `engine/DESIGN.md` ("Pages and the doublewrite buffer") has the on-disk
//! layout and the failure analysis.

pub mod buffer_pool;
pub mod doublewrite;
mod lru;
pub mod page;
mod page_hash;
pub mod store;
pub mod tablespace;

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

use thiserror::Error;

use tablespace::Tablespace;

/// Why the page store failed.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{what} {file}: {source}")]
    Io {
        file: String,
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Corrupt(#[from] page::PageCorrupt),
    #[error("no tablespace {0} is open")]
    NoSpace(u32),
}

impl StoreError {
    pub(crate) fn io(file: &str, what: &'static str, source: io::Error) -> StoreError {
        StoreError::Io {
            file: file.to_string(),
            what,
            source,
        }
    }
}

/// The open tablespaces, by id. A table created while the engine runs
/// adds its tablespace; the pool and the doublewrite buffer look spaces up
/// on every write.
#[derive(Default)]
pub struct Spaces(parking_lot::RwLock<BTreeMap<u32, Arc<Tablespace>>>);

impl Spaces {
    pub fn new() -> Spaces {
        Spaces::default()
    }

    pub fn insert(&self, ts: Tablespace) -> Arc<Tablespace> {
        let ts = Arc::new(ts);
        self.0.write().insert(ts.space(), ts.clone());
        ts
    }

    pub fn get(&self, space: u32) -> Result<Arc<Tablespace>, StoreError> {
        self.0
            .read()
            .get(&space)
            .cloned()
            .ok_or(StoreError::NoSpace(space))
    }

    /// Closes tablespace `space` (its file is not touched).
    pub fn remove(&self, space: u32) -> Option<Arc<Tablespace>> {
        self.0.write().remove(&space)
    }

    /// Every open tablespace, by id.
    pub fn all(&self) -> Vec<Arc<Tablespace>> {
        self.0.read().values().cloned().collect()
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_pool;
