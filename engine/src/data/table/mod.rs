//! Sysbench-shaped tables, held in memory or with their committed rows on pages.
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

pub mod paged_index;
pub mod paged_rows;

use crate::page_store::buffer_pool::ChangeLsn;
use crate::page_store::StoreError;
use paged_index::PagedIndex;
use paged_rows::{PagedError, PagedRows};

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

/// A committed version: the row itself (an in-memory table) or, in a
/// paged table, the `k` the index holds (the row is on its page).
#[derive(Clone, Debug)]
enum Committed {
    Row(Arc<Row>),
    Paged(i32),
}

impl Committed {
    fn k(&self) -> i32 {
        match self {
            Committed::Row(r) => r.k,
            Committed::Paged(k) => *k,
        }
    }

    fn row(&self) -> Option<&Arc<Row>> {
        match self {
            Committed::Row(r) => Some(r),
            Committed::Paged(_) => None,
        }
    }
}

/// The version a transaction sees: in memory, or on its page (with the
/// `k` the index holds for it).
enum Version<'a> {
    Row(&'a Arc<Row>),
    Paged(i32),
}

impl Version<'_> {
    fn k(&self) -> i32 {
        match self {
            Version::Row(r) => r.k,
            Version::Paged(k) => *k,
        }
    }
}

/// A row's versions in the primary index.
#[derive(Clone, Debug, Default)]
pub struct RowSlot {
    /// The committed version; `None` if the row does not exist committed.
    committed: Option<Committed>,
    /// The pending change of the transaction holding the row's X lock.
    pending: Option<Pending>,
}

impl RowSlot {
    /// The version `trx_id` sees.
    fn visible(&self, trx_id: u64) -> Option<Version<'_>> {
        match &self.pending {
            Some(p) if p.trx_id == trx_id => p.row.as_ref().map(Version::Row),
            _ => self.committed.as_ref().map(|c| match c {
                Committed::Row(r) => Version::Row(r),
                Committed::Paged(k) => Version::Paged(*k),
            }),
        }
    }

    /// The `k` values the secondary index must hold for this slot.
    fn index_keys(&self) -> [Option<i32>; 2] {
        [
            self.committed.as_ref().map(Committed::k),
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
    /// the table, so the owner can log it without taking the latch again;
    /// `committed_k` is the committed version's `k` (`None`: no committed
    /// row), which the row's X lock keeps until the owner ends, so its
    /// commit knows where index `k_1` moves from ([`Table::commit_images`]).
    Applied {
        first_touch: bool,
        after: Option<Arc<Row>>,
        committed_k: Option<i32>,
    },
    /// No row is visible to the transaction (update, delete).
    NotFound,
    /// A row is already visible to the transaction (insert).
    Duplicate,
    /// A paged table's slot cannot hold the value of `column`.
    DataTooLong { column: &'static str },
    /// A paged table cannot address this primary key.
    OutOfRange,
}

struct TableInner {
    /// Primary index.
    rows: BTreeMap<i64, RowSlot>,
    /// Secondary index `k_1`: `(k, id)` for committed and pending versions
    /// (a paged table: for pending versions only; the committed ones are
    /// on pages, [`Table::k_pages`]).
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
    /// The committed rows are on pages: nothing for a checkpoint to copy.
    paged: bool,
}

impl Default for TableInner {
    fn default() -> Self {
        TableInner {
            rows: BTreeMap::new(),
            by_k: BTreeSet::new(),
            committed: 0,
            dirty: BTreeMap::new(),
            all_dirty: true,
            paged: false,
        }
    }
}

/// A committed version's `k` moving in index `k_1` (from, to; `None`: no
/// entry), for a paged table to make on its pages; `None`: nothing moves.
type KeyMove = Option<(Option<i32>, Option<i32>)>;

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
    /// keys it has now (`after`), each `[committed, pending]`. In a paged
    /// table the committed keys are on pages: their move, `(from, to)`, is
    /// returned for the caller to make in [`Table::k_pages`].
    fn reindex(&mut self, id: i64, before: [Option<i32>; 2], after: [Option<i32>; 2]) -> KeyMove {
        if !self.paged {
            self.reindex_memory(id, before, after);
            return None;
        }
        self.reindex_memory(id, [None, before[1]], [None, after[1]]);
        (before[0] != after[0]).then_some((before[0], after[0]))
    }

    fn reindex_memory(&mut self, id: i64, before: [Option<i32>; 2], after: [Option<i32>; 2]) {
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
    /// a pending copy of the committed version first if there is none (in a
    /// paged table, `base`: the committed row read from its page).
    fn modify(
        &mut self,
        trx_id: u64,
        id: i64,
        base: Option<Row>,
        f: impl FnOnce(&mut Row),
    ) -> WriteResult {
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
                let mut row = match (&slot.committed, base) {
                    (Some(Committed::Row(c)), _) => Row::clone(c),
                    (Some(Committed::Paged(_)), Some(b)) => b,
                    _ => return WriteResult::NotFound,
                };
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
        self.reindex_pending(id, before, after);
        WriteResult::Applied {
            first_touch,
            after: Some(image),
            committed_k: before[0],
        }
    }

    /// [`reindex`](Self::reindex) for a change of the pending version only
    /// (the committed key stays where it is).
    fn reindex_pending(&mut self, id: i64, before: [Option<i32>; 2], after: [Option<i32>; 2]) {
        let moved = self.reindex(id, before, after);
        debug_assert!(moved.is_none(), "a pending change leaves the committed key");
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
        self.reindex_pending(id, before, after);
        WriteResult::Applied {
            first_touch,
            after: image,
            committed_k: before[0],
        }
    }

    /// Ends `trx_id`'s pending change of row `id`: makes it the committed
    /// version (`commit`) or drops it.
    /// The committed key's move in a paged table ([`reindex`](Self::reindex)).
    fn finish(&mut self, trx_id: u64, id: i64, commit: bool) -> KeyMove {
        let slot = self.rows.get_mut(&id)?;
        if !matches!(&slot.pending, Some(p) if p.trx_id == trx_id) {
            return None;
        }
        let before = slot.index_keys();
        let pending = slot.pending.take().expect("checked above");
        if commit {
            match (slot.committed.is_some(), pending.row.is_some()) {
                (false, true) => self.committed += 1,
                (true, false) => self.committed -= 1,
                _ => {}
            }
            slot.committed = pending.row.map(|r| match self.paged {
                true => Committed::Paged(r.k),
                false => Committed::Row(r),
            });
        }
        let now =
            (commit && !self.paged).then(|| slot.committed.as_ref().and_then(|c| c.row().cloned()));
        let after = slot.index_keys();
        let empty = slot.is_empty();
        if empty {
            self.rows.remove(&id);
        }
        let moved = self.reindex(id, before, after);
        if let Some(now) = now {
            self.mark_dirty(id, now);
        }
        moved
    }

    /// Sets the committed version of row `id` directly (bulk load, recovery).
    /// The committed key's move in a paged table ([`reindex`](Self::reindex)).
    fn set_committed(&mut self, id: i64, row: Option<Row>) -> KeyMove {
        let slot = self.rows.entry(id).or_default();
        let before = slot.index_keys();
        match (slot.committed.is_some(), row.is_some()) {
            (false, true) => self.committed += 1,
            (true, false) => self.committed -= 1,
            _ => {}
        }
        slot.committed = row.map(|r| match self.paged {
            true => Committed::Paged(r.k),
            false => Committed::Row(Arc::new(r)),
        });
        let now = slot.committed.as_ref().and_then(|c| c.row().cloned());
        let after = slot.index_keys();
        if slot.is_empty() {
            self.rows.remove(&id);
        }
        let moved = self.reindex(id, before, after);
        if !self.paged {
            self.mark_dirty(id, now);
        }
        moved
    }

    fn mark_dirty(&mut self, id: i64, committed: Option<Arc<Row>>) {
        if !self.all_dirty {
            self.dirty.insert(id, committed);
        }
    }
}

/// An `sbtest`-shaped table: in memory, or with its committed rows on
/// pages ([`Table::paged`]).
pub struct Table {
    id: TableId,
    name: String,
    shape: Shape,
    inner: RwLock<TableInner>,
    /// Where a paged table's committed rows are.
    pages: Option<Arc<PagedRows>>,
    /// Run when the last reference to the table goes (a dropped paged
    /// table's: removes its tablespaces, [`Table::when_released`]).
    on_release: parking_lot::Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// A paged table's index `k_1` for its committed versions, on pages.
    /// Latch order: `inner` before `k_pages` (a reader holds both; a
    /// commit takes them one at a time, see [`Table::commit_rows`]).
    k_pages: Option<RwLock<PagedIndex>>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("shape", &self.shape)
            .field("paged", &self.pages.is_some())
            .field("committed_rows", &self.len_committed())
            .finish()
    }
}

/// A row a commit makes committed: its id, its pending version (`None`: a
/// delete) and the `k` of the committed version it replaces (`None`: none).
pub type Committing = (i64, Option<Arc<Row>>, Option<i32>);

/// A rows taken under the latch: in memory, or to be read from its page
/// (with the `k` the index gave).
type Taken = (i64, Result<Arc<Row>, i32>);

/// A page of a table's rows could not be read or written. The engine
/// stops, as InnoDB stops on a failed page read: no answer comes from a
/// page it cannot trust, and a commit already logged cannot be undone.
fn page_failed(table: &str, e: PagedError) -> ! {
    panic!(
        "table {table}: {e}; the engine stops: restart it, and recovery restores a torn page \
         from the doublewrite buffer (or reports it)"
    )
}

impl Table {
    /// An empty in-memory table.
    pub fn new(id: TableId, name: impl Into<String>, shape: Shape) -> Table {
        Table {
            id,
            name: name.into(),
            shape,
            inner: RwLock::new(TableInner::default()),
            pages: None,
            k_pages: None,
            on_release: parking_lot::Mutex::new(None),
        }
    }

    /// A table whose committed rows live in `pages`: its primary-key
    /// directory (in memory) and index `k_1` (in the pages of `k_1`, an
    /// empty scratch space) are rebuilt from them (one scan).
    pub fn paged(
        id: TableId,
        name: impl Into<String>,
        shape: Shape,
        pages: Arc<PagedRows>,
        mut k_1: PagedIndex,
    ) -> Result<Table, PagedError> {
        // Written whole by the next checkpoint delta, as a new in-memory
        // table is: the section holds no rows (they are on the pages) but
        // says the table exists, so a delta over a base made before the
        // table applies (recovery marks a table it loaded clean).
        let mut inner = TableInner {
            all_dirty: true,
            paged: true,
            ..TableInner::default()
        };
        let mut keys = Vec::new();
        pages.for_each(|id, row| {
            inner.rows.insert(
                id,
                RowSlot {
                    committed: Some(Committed::Paged(row.k)),
                    pending: None,
                },
            );
            keys.push((row.k, id));
            inner.committed += 1;
        })?;
        keys.sort_unstable();
        k_1.build(&keys)?;
        Ok(Table {
            id,
            name: name.into(),
            shape,
            inner: RwLock::new(inner),
            pages: Some(pages),
            k_pages: Some(RwLock::new(k_1)),
            on_release: parking_lot::Mutex::new(None),
        })
    }

    /// Runs `f` when the last reference to the table is dropped (a
    /// transaction that used it before a DROP TABLE may still commit to
    /// it: its files go when it lets go).
    pub fn when_released(&self, f: impl FnOnce() + Send + 'static) {
        *self.on_release.lock() = Some(Box::new(f));
    }

    /// Moves committed keys in the index on pages (a paged table; the
    /// caller holds no latch, or `inner`'s before this one).
    fn move_keys(&self, moves: impl IntoIterator<Item = (i64, KeyMove)>, add: bool, drop: bool) {
        let Some(tree) = &self.k_pages else { return };
        // A commit that moves no key (its rows kept their `k`) takes no
        // latch on the index.
        let mut moves = moves
            .into_iter()
            .filter_map(|(id, m)| Some((id, m?)))
            .peekable();
        if moves.peek().is_none() {
            return;
        }
        let mut tree = tree.write();
        for (id, (from, to)) in moves {
            let done = (|| {
                if let (true, Some(k)) = (add, to) {
                    tree.insert((k, id))?;
                }
                if let (true, Some(k)) = (drop, from) {
                    tree.remove((k, id))?;
                }
                Ok(())
            })();
            done.unwrap_or_else(|e: StoreError| page_failed(&self.name, e.into()));
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

    /// Whether the committed rows are on pages.
    pub fn is_paged(&self) -> bool {
        self.pages.is_some()
    }

    fn rows_on_pages(&self) -> &PagedRows {
        self.pages
            .as_deref()
            .expect("only a paged table has rows on pages")
    }

    /// Row `id` read from its page.
    fn page_row(&self, id: i64) -> Option<Row> {
        self.rows_on_pages()
            .get(id)
            .unwrap_or_else(|e| page_failed(&self.name, e))
    }

    /// The rows `taken` under the latch, those on pages read after it
    /// (`contiguous`: `taken` is in id order, from a walk by id, and one
    /// scan of the ids' range reads them; else, from a walk of index
    /// `k_1`, one read each). A row read from its page is the committed
    /// version at the read: one committed since the latch shows its new
    /// version and one deleted since is gone; from a walk of `k_1`, one
    /// whose `k` moved from the `k` the index gave is left out too (the
    /// walk would not have found it there). A row read from a page is
    /// handed on as read, not shared: no copy and no count per row beyond
    /// its decoding.
    fn resolve(&self, taken: Vec<Taken>, contiguous: bool) -> Vec<(i64, Seen)> {
        let mut on_pages = taken.iter().filter(|(_, r)| r.is_err()).map(|(id, _)| *id);
        let (Some(lo), Some(hi)) = (on_pages.clone().next(), on_pages.next_back()) else {
            return taken
                .into_iter()
                .filter_map(|(id, r)| Some((id, Seen::Shared(r.ok()?))))
                .collect();
        };
        let matching = |row: Row, k: i32| (row.k == k).then_some(Seen::Owned(row));
        if !contiguous {
            return taken
                .into_iter()
                .filter_map(|(id, r)| match r {
                    Ok(row) => Some((id, Seen::Shared(row))),
                    Err(k) => Some((id, matching(self.page_row(id)?, k)?)),
                })
                .collect();
        }
        let mut read: Vec<(i64, Row)> = Vec::with_capacity(taken.len());
        self.rows_on_pages()
            .scan(lo, hi, |id, row| read.push((id, row)))
            .unwrap_or_else(|e| page_failed(&self.name, e));
        // Both in id order: one walk.
        let mut read = read.into_iter().peekable();
        taken
            .into_iter()
            .filter_map(|(id, r)| match r {
                Ok(row) => Some((id, Seen::Shared(row))),
                Err(_) => {
                    while read.next_if(|(at, _)| *at < id).is_some() {}
                    let (_, row) = read.next_if(|(at, _)| *at == id)?;
                    Some((id, Seen::Owned(row)))
                }
            })
            .collect()
    }

    // ---- reads -------------------------------------------------------------

    /// `SELECT * WHERE id = ?` as transaction `trx_id` sees it.
    pub fn get(&self, trx_id: u64, id: i64) -> Option<Row> {
        {
            let inner = self.inner.read();
            match inner.rows.get(&id)?.visible(trx_id)? {
                Version::Row(r) => return Some(Row::clone(r)),
                Version::Paged(_) => {}
            }
        }
        self.page_row(id)
    }

    /// Calls `f` for every row with `lo <= id <= hi` visible to `trx_id`, in
    /// `id` order. The rows are the versions visible at one instant (taken
    /// under one hold of the table's read latch; in a paged table, the
    /// committed ones read from their pages right after); `f` runs after
    /// the latch is released, so it may take its time. Rows are not cloned.
    pub fn scan_range(&self, trx_id: u64, lo: i64, hi: i64, f: impl FnMut(i64, &Row)) {
        if lo > hi {
            return;
        }
        let taken = self.take_range(trx_id, lo, hi);
        report(self.resolve(taken, true), f);
    }

    /// The versions of rows `lo..=hi` visible to `trx_id`, taken under one
    /// hold of the read latch, in id order.
    fn take_range(&self, trx_id: u64, lo: i64, hi: i64) -> Vec<Taken> {
        let inner = self.inner.read();
        inner
            .rows
            .range(lo..=hi)
            .filter_map(|(&id, slot)| Some((id, taken(slot.visible(trx_id)?))))
            .collect()
    }

    /// `SELECT * WHERE id BETWEEN lo AND hi ORDER BY id` as `trx_id` sees it.
    pub fn range(&self, trx_id: u64, lo: i64, hi: i64) -> Vec<(i64, Row)> {
        if lo > hi {
            return Vec::new();
        }
        let taken = self.take_range(trx_id, lo, hi);
        self.resolve(taken, true)
            .into_iter()
            .map(|(id, seen)| (id, seen.into_row()))
            .collect()
    }

    /// `SELECT * WHERE k = ?` (through index `k_1`, ordered by `id`) as
    /// `trx_id` sees it.
    pub fn get_by_k(&self, trx_id: u64, k: i32) -> Vec<(i64, Row)> {
        let taken = self.take_k_range(trx_id, k, k);
        self.resolve(taken, false)
            .into_iter()
            .map(|(id, seen)| (id, seen.into_row()))
            .collect()
    }

    /// Calls `f` for every row whose `k` is in `lo..=hi` and visible to
    /// `trx_id`, in `(k, id)` order through index `k_1`. As for
    /// [`scan_range`](Self::scan_range), the rows are taken under one hold
    /// of the read latch and `f` runs after it is released.
    pub fn scan_k_range(&self, trx_id: u64, lo: i32, hi: i32, f: impl FnMut(i64, &Row)) {
        let taken = self.take_k_range(trx_id, lo, hi);
        report(self.resolve(taken, false), f);
    }

    /// The versions visible to `trx_id` of the rows whose `k` is in
    /// `lo..=hi`, in `(k, id)` order, taken under one hold of the read
    /// latch.
    fn take_k_range(&self, trx_id: u64, lo: i32, hi: i32) -> Vec<Taken> {
        if lo > hi {
            return Vec::new();
        }
        let inner = self.inner.read();
        let span = (lo, i64::MIN)..=(hi, i64::MAX);
        let pending = inner.by_k.range(span.clone()).copied();
        let keys: Vec<(i32, i64)> = match &self.k_pages {
            None => pending.collect(),
            Some(tree) => {
                // Committed entries from the pages, pending ones from
                // memory: merged, once each. Under `inner`'s read
                // latch, so the directory says which `k` each row has
                // (a commit adds its new entries before it turns the
                // slot and drops the old ones after).
                let on_pages = tree
                    .read()
                    .range(*span.start(), *span.end())
                    .unwrap_or_else(|e| page_failed(&self.name, e.into()));
                let mut all: BTreeSet<(i32, i64)> = on_pages.into_iter().collect();
                all.extend(pending);
                all.into_iter().collect()
            }
        };
        keys.into_iter()
            .filter_map(|(k, id)| {
                // The index holds the committed and the pending k of a
                // row: it is reported at the k of the version `trx_id`
                // sees, once.
                let v = inner.rows.get(&id)?.visible(trx_id)?;
                (v.k() == k).then(|| (id, taken(v)))
            })
            .collect()
    }

    // ---- write path (caller holds the row's X lock) -------------------------

    /// Applies `f` to the version of `id` that `trx_id` sees (see
    /// [`TableInner::modify`]). In a paged table the committed row is read
    /// from its page first, outside the latch (the caller's X lock keeps it
    /// from changing meanwhile), whether or not the change needs it: one
    /// hold of the latch per change, as in memory. (Asking the directory
    /// first under a read latch took the table's latch twice per change;
    /// with 16 users a table, its spinning was most of the `sched_yield`s
    /// that paged tables made beyond memory's, engine/bench/RESULTS.md.)
    fn modify(&self, trx_id: u64, id: i64, f: impl FnOnce(&mut Row)) -> WriteResult {
        let base = match &self.pages {
            Some(pages) => match pages.get(id) {
                Ok(row) => row,
                // No page can hold it, so no slot does: not found below.
                Err(PagedError::NegativeId { .. } | PagedError::TooFar { .. }) => None,
                Err(e) => page_failed(&self.name, e),
            },
            None => None,
        };
        self.inner.write().modify(trx_id, id, base, f)
    }

    /// Whether row `id` can hold `row` (`None`: a delete): always in
    /// memory; on pages, within the slot's sizes.
    fn fits(&self, id: i64, row: Option<&Row>) -> Option<WriteResult> {
        let pages = self.pages.as_ref()?;
        match pages.check(id, row) {
            Ok(()) => None,
            Err(PagedError::TooLong { column, .. }) => Some(WriteResult::DataTooLong { column }),
            Err(_) => Some(WriteResult::OutOfRange),
        }
    }

    /// `UPDATE SET k = k + delta WHERE id = ?` (wrapping on overflow).
    pub fn update_k(&self, trx_id: u64, id: i64, delta: i32) -> WriteResult {
        self.modify(trx_id, id, |row| row.k = row.k.wrapping_add(delta))
    }

    /// `UPDATE SET c = ? WHERE id = ?`.
    pub fn update_c(&self, trx_id: u64, id: i64, c: String) -> WriteResult {
        let probe = Row {
            k: 0,
            c,
            pad: String::new(),
        };
        if let Some(refused) = self.fits(id, Some(&probe)) {
            return refused;
        }
        self.modify(trx_id, id, |row| row.c = probe.c)
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

    /// Writes `row` as the row's after-image, whether or not a row is
    /// visible (a replica applying a row event).
    pub fn put(&self, trx_id: u64, id: i64, row: Row) -> WriteResult {
        if let Some(refused) = self.fits(id, Some(&row)) {
            return refused;
        }
        self.inner.write().set_pending(trx_id, id, Some(row))
    }

    /// `INSERT (id, k, c, pad)`; [`WriteResult::Duplicate`] if a row with this
    /// `id` is visible to `trx_id`.
    pub fn insert(&self, trx_id: u64, id: i64, row: Row) -> WriteResult {
        if let Some(refused) = self.fits(id, Some(&row)) {
            return refused;
        }
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
    /// hold of the write lock (so readers see them atomically). `lsn` is
    /// the commit's redo record. A paged table reads each row's pending
    /// version under the read latch first; a transaction, which holds them,
    /// commits through [`commit_images`](Self::commit_images) instead.
    pub fn commit_rows(
        &self,
        trx_id: u64,
        ids: impl IntoIterator<Item = i64>,
        lsn: impl Into<ChangeLsn>,
    ) {
        if self.pages.is_none() {
            return self.commit_images(trx_id, ids.into_iter().map(|id| (id, None, None)), lsn);
        }
        let images: Vec<Committing> = {
            let inner = self.inner.read();
            ids.into_iter()
                .filter_map(|id| {
                    let slot = inner.rows.get(&id)?;
                    match &slot.pending {
                        Some(p) if p.trx_id == trx_id => {
                            Some((id, p.row.clone(), slot.committed.as_ref().map(Committed::k)))
                        }
                        _ => None,
                    }
                })
                .collect()
        };
        self.commit_images(trx_id, images, lsn);
    }

    /// [`commit_rows`](Self::commit_rows) with each row's pending version
    /// and committed `k` as its owner holds them ([`WriteResult::Applied`]):
    /// a paged table changes its pages as of `lsn` first, outside the
    /// latch (a reader may see a page's new row a moment before the slot
    /// turns; the commit is logged by then), then turns the slots under one
    /// hold of the write latch. In memory only the ids are read.
    pub fn commit_images(
        &self,
        trx_id: u64,
        rows: impl IntoIterator<Item = Committing>,
        lsn: impl Into<ChangeLsn>,
    ) {
        let Some(pages) = &self.pages else {
            let mut inner = self.inner.write();
            for (id, _, _) in rows {
                inner.finish(trx_id, id, true);
            }
            return;
        };
        let lsn = lsn.into();
        let rows: Vec<Committing> = rows.into_iter().collect();
        for (id, row, _) in &rows {
            pages
                .put(*id, row.as_deref(), lsn)
                .unwrap_or_else(|e| page_failed(&self.name, e));
        }
        // Index k_1 on pages, outside `inner`'s latch: the new entries
        // before the slots turn, the old ones after, so a reader under
        // `inner` finds each row at the `k` the directory gives it.
        let moves = || {
            rows.iter().map(|(id, row, from)| {
                let to = row.as_ref().map(|r| r.k);
                (*id, (*from != to).then_some((*from, to)))
            })
        };
        self.move_keys(moves(), true, false);
        {
            let mut inner = self.inner.write();
            for (id, _, _) in &rows {
                inner.finish(trx_id, *id, true);
            }
        }
        self.move_keys(moves(), false, true);
    }

    /// Drops `trx_id`'s pending changes of rows `ids`.
    pub fn rollback_rows(&self, trx_id: u64, ids: impl IntoIterator<Item = i64>) {
        let mut inner = self.inner.write();
        for id in ids {
            let moved = inner.finish(trx_id, id, false);
            debug_assert!(moved.is_none(), "a rollback leaves the committed key");
        }
    }

    // ---- committed view (bulk load, recovery, checkpoints) ------------------

    /// Inserts or replaces committed rows directly, under one write lock hold.
    pub fn upsert_committed(&self, rows: impl IntoIterator<Item = (i64, Row)>) {
        self.upsert_committed_at(rows, 0);
    }

    /// [`upsert_committed`](Self::upsert_committed) as of redo `lsn` (a
    /// paged table's pages record it).
    pub fn upsert_committed_at(
        &self,
        rows: impl IntoIterator<Item = (i64, Row)>,
        lsn: impl Into<ChangeLsn>,
    ) {
        let lsn = lsn.into();
        let mut inner = self.inner.write();
        for (id, row) in rows {
            if let Some(pages) = &self.pages {
                pages
                    .put(id, Some(&row), lsn)
                    .unwrap_or_else(|e| page_failed(&self.name, e));
            }
            let moved = inner.set_committed(id, Some(row));
            self.move_keys([(id, moved)], true, true);
        }
    }

    /// Removes the committed version of row `id`, if any.
    pub fn remove_committed(&self, id: i64) {
        self.remove_committed_at(id, 0);
    }

    /// [`remove_committed`](Self::remove_committed) as of redo `lsn`.
    pub fn remove_committed_at(&self, id: i64, lsn: u64) {
        let mut inner = self.inner.write();
        if let Some(pages) = &self.pages {
            pages
                .put(id, None, lsn)
                .unwrap_or_else(|e| page_failed(&self.name, e));
        }
        let moved = inner.set_committed(id, None);
        self.move_keys([(id, moved)], true, true);
    }

    /// Calls `f` for every committed row in `id` order (under the read
    /// lock; a paged table's from its pages).
    pub fn for_each_committed(&self, mut f: impl FnMut(i64, &Row)) {
        if let Some(pages) = &self.pages {
            return pages
                .for_each(|id, row| f(id, &row))
                .unwrap_or_else(|e| page_failed(&self.name, e));
        }
        let inner = self.inner.read();
        for (&id, slot) in &inner.rows {
            if let Some(row) = slot.committed.as_ref().and_then(Committed::row) {
                f(id, row);
            }
        }
    }

    /// The committed versions of every row in `id` order, taken under one
    /// hold of the read lock: one reference count per row, no copy, so a
    /// checkpoint base can be serialised later without holding the lock.
    /// (Taken in chunks instead, the snapshot queued behind the writers at
    /// each chunk: 1-2.3 s instead of ~0.1 s under the insert load, which
    /// made commits wait for a full log; engine/bench/RESULTS.md.) A paged
    /// table's are read from its pages.
    pub fn committed_snapshot(&self) -> Vec<(i64, Arc<Row>)> {
        if self.pages.is_some() {
            let mut out = Vec::new();
            self.for_each_committed(|id, row| out.push((id, Arc::new(row.clone()))));
            return out;
        }
        let inner = self.inner.read();
        let mut out = Vec::with_capacity(inner.committed);
        for (&id, slot) in &inner.rows {
            if let Some(row) = slot.committed.as_ref().and_then(Committed::row) {
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
    /// every committed and pending version (a paged table: the committed
    /// ones on its pages, the pending ones in memory), no slot is empty,
    /// and the committed-row count is right. Returns a description of the
    /// first inconsistency. For tests and verification.
    pub fn check_invariants(&self) -> Result<(), String> {
        let inner = self.inner.read();
        // [committed, pending] keys the index must hold.
        let mut expected = [BTreeSet::new(), BTreeSet::new()];
        let mut committed = 0;
        for (&id, slot) in &inner.rows {
            if slot.is_empty() {
                return Err(format!("row {id}: empty slot left in the primary index"));
            }
            committed += usize::from(slot.committed.is_some());
            for (i, k) in slot.index_keys().into_iter().enumerate() {
                if let Some(k) = k {
                    expected[i].insert((k, id));
                }
            }
        }
        if committed != inner.committed {
            return Err(format!(
                "committed count {} but {committed} committed rows",
                inner.committed
            ));
        }
        let [on_commit, pending] = expected;
        let checks = match &self.k_pages {
            None => vec![(
                "k_1",
                on_commit.union(&pending).copied().collect(),
                inner.by_k.clone(),
            )],
            Some(tree) => {
                let on_pages = tree.read().entries().map_err(|e| e.to_string())?;
                vec![
                    ("k_1 on pages", on_commit, on_pages.into_iter().collect()),
                    ("k_1's pending entries", pending, inner.by_k.clone()),
                ]
            }
        };
        for (what, want, held) in checks {
            let want: BTreeSet<(i32, i64)> = want;
            if let Some(missing) = want.difference(&held).next() {
                return Err(format!("{what} lacks entry {missing:?}"));
            }
            if let Some(phantom) = held.difference(&want).next() {
                return Err(format!("{what} has phantom entry {phantom:?}"));
            }
        }
        Ok(())
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if let Some(f) = self.on_release.get_mut().take() {
            f();
        }
    }
}

/// What a version taken under the latch becomes: its row, or a read of
/// its page to come.
fn taken(v: Version<'_>) -> Result<Arc<Row>, i32> {
    match v {
        Version::Row(r) => Ok(Arc::clone(r)),
        Version::Paged(k) => Err(k),
    }
}

/// A row a read hands on: a version shared with the table (in memory, or
/// pending), or one decoded from its page for this read alone.
enum Seen {
    Shared(Arc<Row>),
    Owned(Row),
}

impl Seen {
    fn row(&self) -> &Row {
        match self {
            Seen::Shared(r) => r,
            Seen::Owned(r) => r,
        }
    }

    /// The row, copied only if the table shares it.
    fn into_row(self) -> Row {
        match self {
            Seen::Shared(r) => Arc::unwrap_or_clone(r),
            Seen::Owned(r) => r,
        }
    }
}

/// Hands the rows a scan took to its caller, latch released.
fn report(seen: Vec<(i64, Seen)>, mut f: impl FnMut(i64, &Row)) {
    for (id, row) in &seen {
        f(*id, row.row());
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_paged;
