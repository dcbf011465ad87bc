//! The registry of named address ranges, and the table it publishes for
//! the probes (`redoctor_named_locks`, see `engine/PROBES.md`).
//!
//! A named object registers `[start, start + len)` when it is created and
//! unregisters when it is dropped; locking and unlocking never touch the
//! registry. Every change bumps the generation. [`Registry::publish`]
//! turns the live ranges into a sorted `#[repr(C)]` table only when the
//! generation moved since the last table, and keeps the last
//! [`KEEP_TABLES`] tables allocated, so a table handed to the probe point
//! stays readable from outside the process until (at least) the next
//! table after it is published.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, PoisonError};

pub use redoctor_probes_common::abi::NamedLockEntry;

/// Published tables kept allocated (the newest and the one before it).
pub const KEEP_TABLES: usize = 2;

/// A table handed to the probe point: `count` entries at `table`, sorted by
/// start, for registry `generation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublishedTable {
    pub table: *const NamedLockEntry,
    pub count: u64,
    pub generation: u64,
}

struct Published {
    generation: u64,
    table: Box<[NamedLockEntry]>,
}

struct Inner {
    live: BTreeMap<u64, NamedLockEntry>,
    next_id: u64,
    generation: u64,
    published: VecDeque<Published>,
}

/// Named ranges, registered and unregistered by their owners.
pub struct Registry {
    inner: Mutex<Inner>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    pub const fn new() -> Registry {
        Registry {
            inner: Mutex::new(Inner {
                live: BTreeMap::new(),
                next_id: 0,
                generation: 0,
                published: VecDeque::new(),
            }),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `[start, start + len)` as `name` until the result is dropped.
    pub fn register(&self, name: &str, start: usize, len: usize) -> Registration<'_> {
        let mut inner = self.inner();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.generation += 1;
        inner.live.insert(id, NamedLockEntry::new(name, start, len));
        Registration { registry: self, id }
    }

    /// Registers the memory of `obj` (its `size_of_val` bytes) as `name`.
    pub fn register_object<T: ?Sized>(&self, name: &str, obj: &T) -> Registration<'_> {
        let start = obj as *const T as *const u8 as usize;
        self.register(name, start, std::mem::size_of_val(obj))
    }

    fn unregister(&self, id: u64) {
        let mut inner = self.inner();
        if inner.live.remove(&id).is_some() {
            inner.generation += 1;
        }
    }

    /// Bumped by every registration and unregistration.
    #[cfg(test)]
    pub fn generation(&self) -> u64 {
        self.inner().generation
    }

    /// The live ranges, sorted by start.
    pub fn snapshot(&self) -> Vec<NamedLockEntry> {
        sorted(&self.inner().live)
    }

    /// The table for the current generation: built when the generation
    /// moved since the last one, else the last one again. The memory stays
    /// allocated until [`KEEP_TABLES`] newer tables have been built.
    pub fn publish(&self) -> PublishedTable {
        let mut inner = self.inner();
        let generation = inner.generation;
        if inner.published.back().map(|p| p.generation) != Some(generation) {
            let table = sorted(&inner.live).into_boxed_slice();
            inner.published.push_back(Published { generation, table });
            while inner.published.len() > KEEP_TABLES {
                inner.published.pop_front();
            }
        }
        let last = inner.published.back().expect("a table was just published");
        PublishedTable {
            table: last.table.as_ptr(),
            count: last.table.len() as u64,
            generation,
        }
    }
}

fn sorted(live: &BTreeMap<u64, NamedLockEntry>) -> Vec<NamedLockEntry> {
    let mut v: Vec<NamedLockEntry> = live.values().copied().collect();
    v.sort_by_key(|e| (e.start, e.len));
    v
}

/// A live registration; dropping it removes the range.
pub struct Registration<'r> {
    registry: &'r Registry,
    id: u64,
}

impl std::fmt::Debug for Registration<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Registration({})", self.id)
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.registry.unregister(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redoctor_probes_common::abi::NAME_LEN;

    #[test]
    fn register_drop_and_generation() {
        let r = Registry::new();
        assert_eq!(r.generation(), 0);
        let a = r.register("redo.flusher", 0x2000, 40);
        let b = r.register("trx_sys.shard3", 0x1000, 8);
        assert_eq!(r.generation(), 2);
        let snap = r.snapshot();
        assert_eq!(
            snap.iter()
                .map(|e| (e.start, e.len, e.name()))
                .collect::<Vec<_>>(),
            [(0x1000, 8, "trx_sys.shard3"), (0x2000, 40, "redo.flusher")]
        );
        drop(a);
        assert_eq!(r.generation(), 3);
        assert_eq!(r.snapshot().len(), 1);
        drop(b);
        assert_eq!((r.generation(), r.snapshot().len()), (4, 0));
    }

    #[test]
    fn contains_is_half_open() {
        let e = NamedLockEntry::new("x", 100, 8);
        assert!(!e.contains(99));
        assert!(e.contains(100) && e.contains(107));
        assert!(!e.contains(108));
        assert!(!NamedLockEntry::new("y", 5, 0).contains(5));
    }

    #[test]
    fn long_names_are_cut_at_a_char_boundary_and_stay_nul_terminated() {
        let long = "é".repeat(40);
        let e = NamedLockEntry::new(&long, 0, 1);
        assert!(e.name[NAME_LEN - 1] == 0);
        assert_eq!(e.name(), "é".repeat(15));
    }

    #[test]
    fn published_table_is_rebuilt_only_after_a_change_and_kept_alive() {
        let r = Registry::new();
        let _a = r.register("a", 0x10, 4);
        let t1 = r.publish();
        assert_eq!((t1.count, t1.generation), (1, 1));
        assert_eq!(r.publish(), t1, "unchanged registry: the same table");
        let b = r.register("b", 0x20, 4);
        let t2 = r.publish();
        assert_eq!((t2.count, t2.generation), (2, 2));
        assert_ne!(t2.table, t1.table);
        // SAFETY: t1 is one of the KEEP_TABLES newest tables, still allocated.
        let old = unsafe { std::slice::from_raw_parts(t1.table, t1.count as usize) };
        assert_eq!(old[0].name(), "a");
        // SAFETY: t2 is the newest table.
        let new = unsafe { std::slice::from_raw_parts(t2.table, t2.count as usize) };
        assert_eq!(
            new.iter().map(NamedLockEntry::name).collect::<Vec<_>>(),
            ["a", "b"]
        );
        drop(b);
        let t3 = r.publish();
        assert_eq!((t3.count, t3.generation), (1, 3));
        assert_eq!(r.inner().published.len(), KEEP_TABLES);
        assert_eq!(r.inner().published[0].generation, 2);
    }
}
