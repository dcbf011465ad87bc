//! Sysbench-shaped tables held in memory.
//!
//! A [`Table`] mirrors sysbench's `sbtest` table:
//!
//! ```sql
//! CREATE TABLE sbtest (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60), KEY k_1 (k));
//! ```
//!
//! It holds a primary index (`id` → [`RowSlot`]) and a secondary index on `k`
//! (`(k, id)` pairs) behind one [`RwLock`] that is only ever held for the
//! duration of a single index operation.
//!
//! A row version is immutable once a transaction commits it and is shared
//! ([`Arc`]): a range scan takes the versions it sees under the read latch
//! (one reference count each) and hands them to its caller after releasing
//! it, so a scan's view is as atomic as before while writers wait only for
//! the index walk, not for what the caller does with each row (InnoDB
//! likewise copies rows out of a page before it releases the page latch).
//!
//! # Versions and visibility
//!
//! Visibility is read-committed with in-place pending versions, a simplified
//! form of InnoDB's clustered-index records plus undo:
//!
//! * a slot's *committed* version is what every transaction sees;
//! * a slot may carry one *pending* change, owned by the transaction holding
//!   the row's X lock (see [`crate::data::lock_sys`]); only that transaction
//!   sees it.
//!
//! The secondary index holds an entry for the committed `k` and for the
//! pending `k` of every row, so a reader must check the `k` of the version
//! visible to it before reporting a row. Commit turns the pending change into
//! the committed version, rollback drops it; both prune index entries no
//! version refers to any more and remove slots that hold no version at all.
//!
//! The write-path methods (`update_k`, `update_c`, `delete`, `insert`,
//! `commit_rows`, `rollback_rows`) assume the caller holds the row's X lock;
//! [`crate::data::trx::Trx`] guarantees it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

/// Identifies a table in the catalog (sequential from 1).
pub type TableId = u32;

/// One `sbtest` row without its primary key `id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// `k INT`, indexed by the secondary index `k_1`.
    pub k: i32,
    /// `c CHAR(120)`.
    pub c: String,
    /// `pad CHAR(60)`.
    pub pad: String,
}

/// The columns a table has. Every table has `id` (the primary key) and `k`
/// (indexed); the rows of an [`Shape::IdK`] table keep `c` and `pad` empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `(id, k, c, pad)`: sysbench's `sbtest` table.
    #[default]
    Sbtest,
    /// `(id, k)`: the table of sysbench's `bulk_insert`.
    IdK,
}

impl Shape {
    /// The byte that stands for the shape in redo records, checkpoint
    /// images and deltas.
    pub fn code(self) -> u8 {
        match self {
            Shape::Sbtest => 0,
            Shape::IdK => 1,
        }
    }

    /// The shape written as `code`, if any.
    pub fn from_code(code: u8) -> Option<Shape> {
        match code {
            0 => Some(Shape::Sbtest),
            1 => Some(Shape::IdK),
            _ => None,
        }
    }

    /// Whether the table has the columns `c` and `pad`.
    pub fn has_c_pad(self) -> bool {
        self == Shape::Sbtest
    }
}

/// An uncommitted change to a row, owned by the transaction holding its X lock.
#[derive(Clone, Debug)]
struct Pending {
    trx_id: u64,
    /// The row as the owner sees it; `None` is a pending delete.
    row: Option<Arc<Row>>,
}

/// A row's versions in the primary index.
#[derive(Clone, Debug, Default)]
pub struct RowSlot {
    /// The committed version; `None` if the row does not exist committed.
    committed: Option<Arc<Row>>,
    /// The pending change of the transaction holding the row's X lock.
    pending: Option<Pending>,
}

impl RowSlot {
    /// The version `trx_id` sees.
    fn visible(&self, trx_id: u64) -> Option<&Arc<Row>> {
        match &self.pending {
            Some(p) if p.trx_id == trx_id => p.row.as_ref(),
            _ => self.committed.as_ref(),
        }
    }

    /// The `k` values the secondary index must hold for this slot.
    fn index_keys(&self) -> [Option<i32>; 2] {
        [
            self.committed.as_ref().map(|r| r.k),
            self.pending
                .as_ref()
                .and_then(|p| p.row.as_ref())
                .map(|r| r.k),
        ]
    }

    fn is_empty(&self) -> bool {
        self.committed.is_none() && self.pending.is_none()
    }

    /// Panics if a transaction other than `trx_id` owns the pending change:
    /// that would mean the caller wrote without holding the row's X lock.
    fn assert_writable_by(&self, trx_id: u64, id: i64) {
        if let Some(p) = &self.pending {
            assert_eq!(
                p.trx_id, trx_id,
                "row {id} has a pending change of trx {} but trx {trx_id} writes it without its X lock",
                p.trx_id
            );
        }
    }
}

/// What a write-path call did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteResult {
    /// The change was installed; `first_touch` is true if this created the
    /// transaction's pending change for the row (so it joins the write set).
    /// `after` is the pending version now (`None`: a delete), shared with
    /// the table, so the owner can log it without taking the latch again.
    Applied {
        first_touch: bool,
        after: Option<Arc<Row>>,
    },
    /// No row is visible to the transaction (update, delete).
    NotFound,
    /// A row is already visible to the transaction (insert).
    Duplicate,
}

struct TableInner {
    /// Primary index.
    rows: BTreeMap<i64, RowSlot>,
    /// Secondary index `k_1`: `(k, id)` for committed and pending versions.
    by_k: BTreeSet<(i32, i64)>,
    /// Number of slots with a committed version.
    committed: usize,
    /// Rows whose committed version changed since the last checkpoint took
    /// the set, each with that version (`None`: removed), so a checkpoint
    /// copies them without looking them up under the lock (see
    /// [`Table::take_dirty`]).
    dirty: BTreeMap<i64, Option<Arc<Row>>>,
    /// The whole table counts as changed: it is new since the last
    /// checkpoint, or a tombstone replacing a dropped table.
    all_dirty: bool,
}

impl Default for TableInner {
    fn default() -> Self {
        TableInner {
            rows: BTreeMap::new(),
            by_k: BTreeSet::new(),
            committed: 0,
            dirty: BTreeMap::new(),
            all_dirty: true,
        }
    }
}

/// What changed in a table since the last checkpoint took its changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dirty {
    /// The table is new (or a tombstone): a checkpoint must write all of it.
    All,
    /// These rows' committed versions changed: ids in ascending order, each
    /// with its committed version when the set was taken (`None`: removed).
    Rows(Vec<(i64, Option<Arc<Row>>)>),
}

impl TableInner {
    /// Brings the secondary index from the keys a slot had (`before`) to the
    /// keys it has now (`after`).
    fn reindex(&mut self, id: i64, before: [Option<i32>; 2], after: [Option<i32>; 2]) {
        for k in before.into_iter().flatten() {
            if !after.contains(&Some(k)) {
                self.by_k.remove(&(k, id));
            }
        }
        for k in after.into_iter().flatten() {
            if !before.contains(&Some(k)) {
                self.by_k.insert((k, id));
            }
        }
    }

    /// Applies `f` to the version of row `id` visible to `trx_id`, installing
    /// a pending copy of the committed version first if there is none.
    fn modify(&mut self, trx_id: u64, id: i64, f: impl FnOnce(&mut Row)) -> WriteResult {
        let Some(slot) = self.rows.get_mut(&id) else {
            return WriteResult::NotFound;
        };
        slot.assert_writable_by(trx_id, id);
        let before = slot.index_keys();
        let (first_touch, image) = match &mut slot.pending {
            Some(p) => match &mut p.row {
                Some(row) => {
                    // Copies the version only if the owner still holds it
                    // (its logged image, or a finished scan).
                    f(Arc::make_mut(row));
                    (false, row.clone())
                }
                None => return WriteResult::NotFound,
            },
            None => {
                let Some(committed) = &slot.committed else {
                    return WriteResult::NotFound;
                };
                let mut row = Row::clone(committed);
                f(&mut row);
                let image = Arc::new(row);
                slot.pending = Some(Pending {
                    trx_id,
                    row: Some(image.clone()),
                });
                (true, image)
            }
        };
        let after = slot.index_keys();
        self.reindex(id, before, after);
        WriteResult::Applied {
            first_touch,
            after: Some(image),
        }
    }

    /// Sets the pending change of row `id` to `row` (`None` = delete).
    /// Returns whether this created the pending change.
    fn set_pending(&mut self, trx_id: u64, id: i64, row: Option<Row>) -> WriteResult {
        let slot = self.rows.entry(id).or_default();
        slot.assert_writable_by(trx_id, id);
        let before = slot.index_keys();
        let first_touch = slot.pending.is_none();
        let image = row.map(Arc::new);
        slot.pending = Some(Pending {
            trx_id,
            row: image.clone(),
        });
        let after = slot.index_keys();
        self.reindex(id, before, after);
        WriteResult::Applied {
            first_touch,
            after: image,
        }
    }

    /// Ends `trx_id`'s pending change of row `id`: makes it the committed
    /// version (`commit`) or drops it.
    fn finish(&mut self, trx_id: u64, id: i64, commit: bool) {
        let Some(slot) = self.rows.get_mut(&id) else {
            return;
        };
        if !matches!(&slot.pending, Some(p) if p.trx_id == trx_id) {
            return;
        }
        let before = slot.index_keys();
        let pending = slot.pending.take().expect("checked above");
        if commit {
            match (slot.committed.is_some(), pending.row.is_some()) {
                (false, true) => self.committed += 1,
                (true, false) => self.committed -= 1,
                _ => {}
            }
            slot.committed = pending.row;
        }
        let now = commit.then(|| slot.committed.clone());
        let after = slot.index_keys();
        let empty = slot.is_empty();
        if empty {
            self.rows.remove(&id);
        }
        self.reindex(id, before, after);
        if let Some(now) = now {
            self.mark_dirty(id, now);
        }
    }

    /// Sets the committed version of row `id` directly (bulk load, recovery).
    fn set_committed(&mut self, id: i64, row: Option<Row>) {
        let slot = self.rows.entry(id).or_default();
        let before = slot.index_keys();
        match (slot.committed.is_some(), row.is_some()) {
            (false, true) => self.committed += 1,
            (true, false) => self.committed -= 1,
            _ => {}
        }
        slot.committed = row.map(Arc::new);
        let now = slot.committed.clone();
        let after = slot.index_keys();
        if slot.is_empty() {
            self.rows.remove(&id);
        }
        self.reindex(id, before, after);
        self.mark_dirty(id, now);
    }

    fn mark_dirty(&mut self, id: i64, committed: Option<Arc<Row>>) {
        if !self.all_dirty {
            self.dirty.insert(id, committed);
        }
    }
}

/// An in-memory `sbtest`-shaped table.
pub struct Table {
    id: TableId,
    name: String,
    shape: Shape,
    inner: RwLock<TableInner>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("shape", &self.shape)
            .field("committed_rows", &self.len_committed())
            .finish()
    }
}

impl Table {
    /// An empty table.
    pub fn new(id: TableId, name: impl Into<String>, shape: Shape) -> Table {
        Table {
            id,
            name: name.into(),
            shape,
            inner: RwLock::new(TableInner::default()),
        }
    }

    /// The table's columns.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The table's id.
    pub fn id(&self) -> TableId {
        self.id
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    // ---- reads -------------------------------------------------------------

    /// `SELECT * WHERE id = ?` as transaction `trx_id` sees it.
    pub fn get(&self, trx_id: u64, id: i64) -> Option<Row> {
        let inner = self.inner.read();
        inner.rows.get(&id)?.visible(trx_id).map(|r| Row::clone(r))
    }

    /// Calls `f` for every row with `lo <= id <= hi` visible to `trx_id`, in
    /// `id` order. The rows are the versions visible at one instant (taken
    /// under one hold of the table's read latch); `f` runs after the latch
    /// is released, so it may take its time. Rows are not cloned.
    pub fn scan_range(&self, trx_id: u64, lo: i64, hi: i64, f: impl FnMut(i64, &Row)) {
        if lo > hi {
            return;
        }
        let seen: Vec<(i64, Arc<Row>)> = {
            let inner = self.inner.read();
            inner
                .rows
                .range(lo..=hi)
                .filter_map(|(&id, slot)| Some((id, Arc::clone(slot.visible(trx_id)?))))
                .collect()
        };
        report(seen, f);
    }

    /// `SELECT * WHERE id BETWEEN lo AND hi ORDER BY id` as `trx_id` sees it.
    pub fn range(&self, trx_id: u64, lo: i64, hi: i64) -> Vec<(i64, Row)> {
        let mut out = Vec::new();
        self.scan_range(trx_id, lo, hi, |id, row| out.push((id, row.clone())));
        out
    }

    /// `SELECT * WHERE k = ?` (through index `k_1`, ordered by `id`) as
    /// `trx_id` sees it.
    pub fn get_by_k(&self, trx_id: u64, k: i32) -> Vec<(i64, Row)> {
        let inner = self.inner.read();
        inner
            .by_k
            .range((k, i64::MIN)..=(k, i64::MAX))
            .filter_map(|&(_, id)| {
                let row = inner.rows.get(&id)?.visible(trx_id)?;
                (row.k == k).then(|| (id, Row::clone(row)))
            })
            .collect()
    }

    /// Calls `f` for every row whose `k` is in `lo..=hi` and visible to
    /// `trx_id`, in `(k, id)` order through index `k_1`. As for
    /// [`scan_range`](Self::scan_range), the rows are taken under one hold
    /// of the read latch and `f` runs after it is released.
    pub fn scan_k_range(&self, trx_id: u64, lo: i32, hi: i32, f: impl FnMut(i64, &Row)) {
        if lo > hi {
            return;
        }
        let seen: Vec<(i64, Arc<Row>)> = {
            let inner = self.inner.read();
            inner
                .by_k
                .range((lo, i64::MIN)..=(hi, i64::MAX))
                .filter_map(|&(k, id)| {
                    // The index holds the committed and the pending k of a
                    // row: it is reported at the k of the version `trx_id`
                    // sees, once.
                    let row = inner.rows.get(&id)?.visible(trx_id)?;
                    (row.k == k).then(|| (id, Arc::clone(row)))
                })
                .collect()
        };
        report(seen, f);
    }

    // ---- write path (caller holds the row's X lock) -------------------------

    /// `UPDATE SET k = k + delta WHERE id = ?` (wrapping on overflow).
    pub fn update_k(&self, trx_id: u64, id: i64, delta: i32) -> WriteResult {
        self.inner
            .write()
            .modify(trx_id, id, |row| row.k = row.k.wrapping_add(delta))
    }

    /// `UPDATE SET c = ? WHERE id = ?`.
    pub fn update_c(&self, trx_id: u64, id: i64, c: String) -> WriteResult {
        self.inner.write().modify(trx_id, id, |row| row.c = c)
    }

    /// `DELETE WHERE id = ?`.
    pub fn delete(&self, trx_id: u64, id: i64) -> WriteResult {
        let mut inner = self.inner.write();
        if inner
            .rows
            .get(&id)
            .and_then(|s| s.visible(trx_id))
            .is_none()
        {
            return WriteResult::NotFound;
        }
        inner.set_pending(trx_id, id, None)
    }

    /// `INSERT (id, k, c, pad)`; [`WriteResult::Duplicate`] if a row with this
    /// `id` is visible to `trx_id`.
    pub fn insert(&self, trx_id: u64, id: i64, row: Row) -> WriteResult {
        let mut inner = self.inner.write();
        if inner
            .rows
            .get(&id)
            .and_then(|s| s.visible(trx_id))
            .is_some()
        {
            return WriteResult::Duplicate;
        }
        inner.set_pending(trx_id, id, Some(row))
    }

    /// Makes `trx_id`'s pending changes of rows `ids` committed, all under one
    /// hold of the write lock (so readers see them atomically).
    pub fn commit_rows(&self, trx_id: u64, ids: impl IntoIterator<Item = i64>) {
        let mut inner = self.inner.write();
        for id in ids {
            inner.finish(trx_id, id, true);
        }
    }

    /// Drops `trx_id`'s pending changes of rows `ids`.
    pub fn rollback_rows(&self, trx_id: u64, ids: impl IntoIterator<Item = i64>) {
        let mut inner = self.inner.write();
        for id in ids {
            inner.finish(trx_id, id, false);
        }
    }

    // ---- committed view (bulk load, recovery, checkpoints) ------------------

    /// Inserts or replaces committed rows directly, under one write lock hold.
    pub fn upsert_committed(&self, rows: impl IntoIterator<Item = (i64, Row)>) {
        let mut inner = self.inner.write();
        for (id, row) in rows {
            inner.set_committed(id, Some(row));
        }
    }

    /// Removes the committed version of row `id`, if any.
    pub fn remove_committed(&self, id: i64) {
        self.inner.write().set_committed(id, None);
    }

    /// Calls `f` for every committed row in `id` order under the read lock.
    pub fn for_each_committed(&self, mut f: impl FnMut(i64, &Row)) {
        let inner = self.inner.read();
        for (&id, slot) in &inner.rows {
            if let Some(row) = &slot.committed {
                f(id, row);
            }
        }
    }

    /// The committed versions of every row in `id` order, taken under one
    /// hold of the read lock: one reference count per row, no copy, so a
    /// checkpoint base can be serialised later without holding the lock.
    /// (Taken in chunks instead, the snapshot queued behind the writers at
    /// each chunk: 1-2.3 s instead of ~0.1 s under the insert load, which
    /// made commits wait for a full log; engine/bench/RESULTS.md.)
    pub fn committed_snapshot(&self) -> Vec<(i64, Arc<Row>)> {
        let inner = self.inner.read();
        let mut out = Vec::with_capacity(inner.committed);
        for (&id, slot) in &inner.rows {
            if let Some(row) = &slot.committed {
                out.push((id, Arc::clone(row)));
            }
        }
        out
    }

    /// Takes what changed since the last call (a new table starts as
    /// [`Dirty::All`]) and starts a new, empty set: a checkpoint calls it
    /// after reading its lsn, so every commit below that lsn is in what it
    /// takes, and every later change is marked again for the next one.
    pub fn take_dirty(&self) -> Dirty {
        // The set is swapped out under the write lock and turned into a
        // list after it: walking hundreds of thousands of rows under the
        // lock held the table's writers for tens of ms.
        let (all, taken) = {
            let mut inner = self.inner.write();
            (
                std::mem::take(&mut inner.all_dirty),
                std::mem::take(&mut inner.dirty),
            )
        };
        if all {
            Dirty::All
        } else {
            Dirty::Rows(taken.into_iter().collect())
        }
    }

    /// Forgets what changed: the table's contents are in the checkpoint
    /// chain just loaded (recovery, before it replays the log).
    pub fn mark_clean(&self) {
        let mut inner = self.inner.write();
        inner.all_dirty = false;
        inner.dirty.clear();
    }

    /// A copy of the committed rows in `id` order.
    pub fn committed_rows(&self) -> Vec<(i64, Row)> {
        self.committed_snapshot()
            .into_iter()
            .map(|(id, row)| (id, Row::clone(&row)))
            .collect()
    }

    /// The highest id with a committed version, if any.
    pub fn max_committed_id(&self) -> Option<i64> {
        let inner = self.inner.read();
        inner
            .rows
            .iter()
            .rev()
            .find(|(_, slot)| slot.committed.is_some())
            .map(|(&id, _)| id)
    }

    /// Number of committed rows.
    pub fn len_committed(&self) -> usize {
        self.inner.read().committed
    }

    /// Checks the indexes agree: the secondary index holds exactly the `k` of
    /// every committed and pending version, no slot is empty, and the
    /// committed-row count is right. Returns a description of the first
    /// inconsistency. For tests and verification.
    pub fn check_invariants(&self) -> Result<(), String> {
        let inner = self.inner.read();
        let mut expected = BTreeSet::new();
        let mut committed = 0;
        for (&id, slot) in &inner.rows {
            if slot.is_empty() {
                return Err(format!("row {id}: empty slot left in the primary index"));
            }
            committed += usize::from(slot.committed.is_some());
            for k in slot.index_keys().into_iter().flatten() {
                expected.insert((k, id));
            }
        }
        if committed != inner.committed {
            return Err(format!(
                "committed count {} but {committed} committed rows",
                inner.committed
            ));
        }
        if let Some(missing) = expected.difference(&inner.by_k).next() {
            return Err(format!("k_1 lacks entry {missing:?}"));
        }
        if let Some(phantom) = inner.by_k.difference(&expected).next() {
            return Err(format!("k_1 has phantom entry {phantom:?}"));
        }
        Ok(())
    }
}

/// Hands the rows a scan took to its caller, latch released.
fn report(seen: Vec<(i64, Arc<Row>)>, mut f: impl FnMut(i64, &Row)) {
    for (id, row) in &seen {
        f(*id, row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(k: i32) -> Row {
        Row {
            k,
            c: format!("c{k}"),
            pad: "pad".into(),
        }
    }

    const A: u64 = 1;
    const B: u64 = 2;

    /// `first_touch` and the after-image's `k` (None: a delete) of a write
    /// that applied.
    fn applied(r: WriteResult) -> (bool, Option<i32>) {
        match r {
            WriteResult::Applied { first_touch, after } => (first_touch, after.map(|r| r.k)),
            other => panic!("not applied: {other:?}"),
        }
    }

    #[test]
    fn pending_changes_are_visible_only_to_their_owner() {
        let t = Table::new(1, "t", Shape::Sbtest);
        t.upsert_committed([(1, row(10)), (2, row(20))]);

        // Each write returns the owner's pending version (what it logs).
        assert_eq!(applied(t.update_k(A, 1, 5)), (true, Some(15)));
        assert_eq!(applied(t.update_k(A, 1, 1)), (false, Some(16)));
        assert_eq!(applied(t.delete(A, 2)), (true, None));
        assert_eq!(applied(t.insert(A, 3, row(30))), (true, Some(30)));

        assert_eq!(t.get(A, 1).unwrap().k, 16);
        assert_eq!(t.get(B, 1).unwrap().k, 10);
        assert_eq!(t.get(A, 2), None);
        assert_eq!(t.get(B, 2), Some(row(20)));
        assert_eq!(t.get(A, 3), Some(row(30)));
        assert_eq!(t.get(B, 3), None);

        assert_eq!(t.get_by_k(A, 10), vec![]);
        assert_eq!(t.get_by_k(A, 16).len(), 1);
        assert_eq!(t.get_by_k(B, 10).len(), 1);
        assert_eq!(t.get_by_k(B, 16), vec![]);
        assert_eq!(
            t.range(A, 0, 10).iter().map(|r| r.0).collect::<Vec<_>>(),
            [1, 3]
        );
        assert_eq!(
            t.range(B, 0, 10).iter().map(|r| r.0).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(t.len_committed(), 2);
        t.check_invariants().unwrap();

        t.commit_rows(A, [1, 2, 3]);
        t.check_invariants().unwrap();
        assert_eq!(t.get(B, 1).unwrap().k, 16);
        assert_eq!(t.get(B, 2), None);
        assert_eq!(t.get(B, 3), Some(row(30)));
        assert_eq!(t.get_by_k(B, 10), vec![]);
        assert_eq!(t.len_committed(), 2);
        assert_eq!(
            t.committed_rows()
                .into_iter()
                .map(|r| r.0)
                .collect::<Vec<_>>(),
            [1, 3]
        );
    }

    /// A change set holds each row's committed version as of the take
    /// (the delta serialises it without the table lock): a later commit
    /// is in the next set only.
    #[test]
    fn a_taken_change_set_keeps_the_versions_it_took() {
        let t = Table::new(1, "t", Shape::Sbtest);
        t.upsert_committed([(1, row(10)), (2, row(20))]);
        assert_eq!(t.take_dirty(), Dirty::All, "a new table is written whole");
        t.update_k(A, 1, 1);
        t.delete(A, 2);
        t.commit_rows(A, [1, 2]);
        let taken = t.take_dirty();
        t.update_k(B, 1, 5);
        t.commit_rows(B, [1]);
        let Dirty::Rows(rows) = taken else {
            panic!("{taken:?}")
        };
        let got: Vec<(i64, Option<i32>)> = rows
            .iter()
            .map(|(id, r)| (*id, r.as_ref().map(|r| r.k)))
            .collect();
        assert_eq!(got, [(1, Some(11)), (2, None)]);
        let Dirty::Rows(next) = t.take_dirty() else {
            panic!("rows expected")
        };
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].1.as_ref().unwrap().k, 16);
    }

    #[test]
    fn rollback_restores_committed_view_and_index() {
        let t = Table::new(1, "t", Shape::Sbtest);
        t.upsert_committed([(1, row(10))]);
        t.update_k(A, 1, 1);
        t.insert(A, 2, row(20));
        t.delete(A, 2);
        assert_eq!(applied(t.insert(A, 2, row(21))), (false, Some(21)));
        assert_eq!(t.insert(A, 2, row(22)), WriteResult::Duplicate);
        t.check_invariants().unwrap();
        t.rollback_rows(A, [1, 2]);
        t.check_invariants().unwrap();
        assert_eq!(t.committed_rows(), vec![(1, row(10))]);
        assert_eq!(t.get_by_k(B, 10).len(), 1);
        assert_eq!(t.get_by_k(B, 11), vec![]);
        assert_eq!(t.get_by_k(B, 21), vec![]);
    }

    /// A writer commits while a range scan hands rows to its caller: the
    /// commit does not wait for the caller (the latch is not held across
    /// it), and the scan still reports the versions of the instant it
    /// took them, the old ones on both sides of the commit.
    #[test]
    fn scans_hold_no_latch_while_their_caller_works() {
        use std::sync::mpsc;
        use std::time::Duration;

        let t = Arc::new(Table::new(1, "t", Shape::Sbtest));
        t.upsert_committed((1..=4).map(|id| (id, row(id as i32))));
        for scan in 0..2 {
            let mut seen = Vec::new();
            let mut writer = None;
            let mut on_row = |id: i64, r: &Row| {
                if id == 2 {
                    let (done, wait) = mpsc::channel();
                    let t = Arc::clone(&t);
                    let trx = 100 + scan;
                    writer = Some(std::thread::spawn(move || {
                        t.update_k(trx, 1, 100);
                        t.update_k(trx, 4, 100);
                        t.commit_rows(trx, [1, 4]);
                        done.send(()).unwrap();
                    }));
                    let committed = wait.recv_timeout(Duration::from_secs(10));
                    assert!(committed.is_ok(), "the commit waited for the scan's caller");
                }
                seen.push((id, r.k));
            };
            if scan == 0 {
                t.scan_range(A, 1, 4, &mut on_row);
            } else {
                t.scan_k_range(A, i32::MIN, i32::MAX, &mut on_row);
            }
            writer.take().unwrap().join().unwrap();
            // Rows 1 and 4 as they were before the commit, in id order for
            // the first scan and in k order (their k is 101 and 104 since
            // the first commit) for the second.
            let expected: &[(i64, i32)] = if scan == 0 {
                &[(1, 1), (2, 2), (3, 3), (4, 4)]
            } else {
                &[(2, 2), (3, 3), (1, 101), (4, 104)]
            };
            assert_eq!(seen, expected);
            assert_eq!(t.get(B, 1).unwrap().k, 101 + 100 * scan as i32);
            t.check_invariants().unwrap();
        }
    }

    #[test]
    fn missing_rows_are_reported() {
        let t = Table::new(1, "t", Shape::Sbtest);
        assert_eq!(t.update_k(A, 1, 1), WriteResult::NotFound);
        assert_eq!(t.update_c(A, 1, "x".into()), WriteResult::NotFound);
        assert_eq!(t.delete(A, 1), WriteResult::NotFound);
        t.upsert_committed([(1, row(1))]);
        t.delete(A, 1);
        assert_eq!(t.update_k(A, 1, 1), WriteResult::NotFound);
        assert_eq!(t.delete(A, 1), WriteResult::NotFound);
        t.check_invariants().unwrap();
    }

    #[test]
    #[should_panic(expected = "without its X lock")]
    fn writing_a_row_pending_for_another_trx_panics() {
        let t = Table::new(1, "t", Shape::Sbtest);
        t.upsert_committed([(1, row(1))]);
        t.update_k(A, 1, 1);
        t.update_k(B, 1, 1);
    }

    #[test]
    fn committed_maintenance_keeps_index_in_step() {
        let t = Table::new(1, "t", Shape::Sbtest);
        t.upsert_committed([(1, row(1)), (2, row(2))]);
        t.upsert_committed([(1, row(3))]);
        t.remove_committed(2);
        t.remove_committed(7);
        t.check_invariants().unwrap();
        assert_eq!(t.len_committed(), 1);
        assert_eq!(t.get_by_k(0, 3), vec![(1, row(3))]);
        assert_eq!(t.get_by_k(0, 1), vec![]);
    }

    #[test]
    fn k_ranges_report_each_visible_row_once_in_k_order() {
        let t = Table::new(1, "t", Shape::Sbtest);
        t.upsert_committed([(1, row(5)), (2, row(3)), (3, row(5)), (4, row(9))]);
        // A moves row 1 from k 5 to 7 and row 4 from 9 to 4: the index
        // holds both ks of each until A ends.
        t.update_k(A, 1, 2);
        t.update_k(A, 4, -5);
        let scan = |trx, lo, hi| {
            let mut seen = Vec::new();
            t.scan_k_range(trx, lo, hi, |id, r| seen.push((r.k, id)));
            seen
        };
        assert_eq!(scan(A, 0, 10), [(3, 2), (4, 4), (5, 3), (7, 1)]);
        assert_eq!(scan(B, 0, 10), [(3, 2), (5, 1), (5, 3), (9, 4)]);
        assert_eq!(scan(A, 5, 5), [(5, 3)]);
        assert_eq!(scan(B, 6, 8), []);
        assert_eq!(scan(B, 9, 3), []);
        assert_eq!(scan(B, i32::MIN, i32::MAX).len(), 4);
    }
}
