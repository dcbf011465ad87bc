//! Transactions: read-committed reads, X-locked writes, commit and rollback.
//!
//! A [`Trx`] reads the committed version of every row except the rows it
//! changed itself (non-locking consistent reads, as InnoDB's READ COMMITTED).
//! A write first takes the row's exclusive lock through [`LockSys`] — waiting
//! if another transaction holds it — and then installs or updates the
//! transaction's pending version of the row in the table. Locks are held
//! until the transaction ends.
//!
//! Ending a transaction is the engine's job:
//!
//! 1. [`Trx::encode_redo`] (or [`Trx::redo_record`]) serialises the
//!    after-images of the changed rows into one redo record — nothing if the
//!    transaction is read-only;
//! 2. once the record is in the redo log, [`Trx::apply_commit`] makes the
//!    pending versions committed and releases the locks;
//! 3. or [`Trx::rollback`] drops the pending versions and releases the locks.
//!
//! Dropping an unfinished transaction rolls it back.
//!
//! # Lock errors roll the transaction back
//!
//! As InnoDB does on a deadlock (and with `innodb_rollback_on_timeout=ON` on
//! a lock wait timeout), a [`TrxError::Deadlock`] or
//! [`TrxError::LockWaitTimeout`] rolls back the whole transaction at once:
//! its changes are dropped and its locks released before the error is
//! returned, so the transactions it blocked can proceed. Every later call on
//! it fails with [`TrxError::RolledBack`]; the caller must end it with
//! [`Trx::rollback`] (which is then cheap) and may restart the work in a new
//! transaction. Other errors ([`TrxError::DuplicateKey`],
//! [`TrxError::NoSuchTable`]) only fail the statement.

use std::collections::HashSet;
use std::sync::Arc;

use crate::data::catalog::Catalog;
use crate::data::lock_sys::{BuildKeyHasher, LockError, LockSys, RowKey};
use crate::data::record::{self, RedoRecord, RowOp};
use crate::data::table::{Row, Table, TableId, WriteResult};
use crate::throttle::ThrottleTimeout;

/// What ties a transaction to the engine's admission machinery: its place
/// at the concurrency gate, its entry in trx-sys and its place in the
/// throttle. Dropped (in this field order) when the transaction ends.
#[derive(Debug)]
pub struct EngineHooks {
    pub gate: crate::admission::GateSession,
    pub registered: crate::trx_sys::Registered,
    pub admitted: crate::throttle::Admitted,
}

/// Statement and transaction errors, worded as MySQL words them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TrxError {
    /// The statement names a table that does not exist.
    #[error("Table with id {0} doesn't exist")]
    NoSuchTable(TableId),
    /// `INSERT` of a primary key that is visible to the transaction.
    #[error("Duplicate entry '{id}' for key 'PRIMARY' in table with id {table}")]
    DuplicateKey { table: TableId, id: i64 },
    /// The transaction was chosen as a deadlock victim and rolled back.
    #[error("Deadlock found when trying to get lock; try restarting transaction")]
    Deadlock,
    /// A row lock was not granted in time; the transaction was rolled back.
    #[error("Lock wait timeout exceeded; try restarting transaction")]
    LockWaitTimeout,
    /// The transaction was already rolled back by a lock error.
    #[error("Transaction was rolled back by an earlier lock error; roll it back and restart it")]
    RolledBack,
    /// The transaction throttle did not let the transaction start in time.
    #[error(transparent)]
    Throttled(#[from] ThrottleTimeout),
    /// A value longer than a paged table's column holds (MySQL error 1406).
    #[error("Data too long for column '{column}' at row {id} in table with id {table}")]
    DataTooLong {
        table: TableId,
        id: i64,
        column: &'static str,
    },
    /// A primary key a paged table cannot hold (MySQL error 1264).
    #[error("Out of range value for column 'id' at row {id} in table with id {table}")]
    OutOfRange { table: TableId, id: i64 },
}

impl From<LockError> for TrxError {
    fn from(e: LockError) -> TrxError {
        match e {
            LockError::Deadlock => TrxError::Deadlock,
            LockError::LockWaitTimeout => TrxError::LockWaitTimeout,
        }
    }
}

/// Up to this many held locks are searched linearly; beyond, through a set.
const LINEAR_LOCK_SEARCH: usize = 16;

/// The row locks a transaction holds, in acquisition order.
#[derive(Default)]
struct HeldLocks {
    keys: Vec<RowKey>,
    /// Mirrors `keys` once it outgrows [`LINEAR_LOCK_SEARCH`].
    index: HashSet<RowKey, BuildKeyHasher>,
}

impl HeldLocks {
    fn contains(&self, key: RowKey) -> bool {
        if self.keys.len() <= LINEAR_LOCK_SEARCH {
            self.keys.contains(&key)
        } else {
            self.index.contains(&key)
        }
    }

    fn insert(&mut self, key: RowKey) {
        self.keys.push(key);
        if self.keys.len() > LINEAR_LOCK_SEARCH {
            if self.index.is_empty() {
                self.index.extend(self.keys.iter().copied());
            } else {
                self.index.insert(key);
            }
        }
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.index.clear();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Active,
    /// Rolled back by a lock error; waiting for the caller's rollback.
    RolledBack,
    /// Committed or rolled back by the caller.
    Finished,
}

/// A row this transaction changed: its table (index into `Trx::tables`),
/// its id, and the pending version the table holds for it (`None`: a
/// delete), shared with the table. The commit logs these images without
/// taking the table's latch again (the owner alone changes a pending
/// version, and each change hands back the new one).
struct Written {
    table: usize,
    id: i64,
    after: Option<Arc<Row>>,
    /// The committed version's `k` when the row was first changed (the X
    /// lock keeps it): where a paged table's index entry moves from.
    committed_k: Option<i32>,
}

/// A transaction.
pub struct Trx {
    id: u64,
    catalog: Arc<Catalog>,
    lock_sys: Arc<LockSys>,
    /// Tables this transaction used, in first-use order (a lookup cache).
    tables: Vec<Arc<Table>>,
    locks: HeldLocks,
    /// Rows with a pending change of this transaction, in the order they
    /// were first changed, with their latest after-image.
    writes: Vec<Written>,
    state: State,
    /// Set by the engine; None for a bare transaction (tests, tools).
    hooks: Option<EngineHooks>,
    /// Why the throttle refused to start this transaction.
    refusal: Option<ThrottleTimeout>,
}

impl std::fmt::Debug for Trx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trx")
            .field("id", &self.id)
            .field("state", &self.state)
            .field("locks", &self.locks.keys.len())
            .field("writes", &self.writes.len())
            .finish()
    }
}

impl Trx {
    /// Starts transaction `id`; ids must be unique among live transactions.
    pub fn new(id: u64, catalog: Arc<Catalog>, lock_sys: Arc<LockSys>) -> Trx {
        Trx {
            id,
            catalog,
            lock_sys,
            tables: Vec::new(),
            locks: HeldLocks::default(),
            writes: Vec::new(),
            state: State::Active,
            hooks: None,
            refusal: None,
        }
    }

    /// Starts transaction `id` tied to the engine's gate, trx-sys and throttle.
    pub fn with_hooks(
        id: u64,
        catalog: Arc<Catalog>,
        lock_sys: Arc<LockSys>,
        hooks: EngineHooks,
    ) -> Trx {
        let mut trx = Trx::new(id, catalog, lock_sys);
        trx.hooks = Some(hooks);
        trx
    }

    /// A transaction the throttle refused: every statement and the commit
    /// fail with [`TrxError::Throttled`]; roll it back.
    pub fn refused(
        id: u64,
        catalog: Arc<Catalog>,
        lock_sys: Arc<LockSys>,
        why: ThrottleTimeout,
    ) -> Trx {
        let mut trx = Trx::new(id, catalog, lock_sys);
        trx.state = State::RolledBack;
        trx.refusal = Some(why);
        trx
    }

    /// The error that ended this transaction before its commit: the
    /// throttle's refusal, or [`TrxError::RolledBack`].
    pub fn end_error(&self) -> TrxError {
        match &self.refusal {
            Some(r) => TrxError::Throttled(r.clone()),
            None => TrxError::RolledBack,
        }
    }

    /// Runs one statement inside the concurrency gate.
    fn statement<R>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<R, TrxError>,
    ) -> Result<R, TrxError> {
        if let Some(h) = self.hooks.as_mut() {
            h.gate.enter_statement();
        }
        let r = f(self);
        if let Some(h) = self.hooks.as_mut() {
            h.gate.leave_statement();
        }
        r
    }

    /// The commit is a statement: enter the gate (ending the transaction
    /// leaves it).
    pub fn enter_commit(&mut self) {
        if let Some(h) = self.hooks.as_mut() {
            h.gate.enter_statement();
        }
    }

    /// Leaves the concurrency gate now, keeping the transaction open: a
    /// prepared transaction waiting in the binlog group commit holds no slot
    /// (InnoDB's prepare calls `srv_conc_force_exit_innodb` likewise).
    pub fn leave_gate(&mut self) {
        if let Some(h) = self.hooks.as_mut() {
            h.gate.force_exit();
        }
    }

    /// The transaction id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// True if the transaction changed no row (then it needs no redo).
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
    }

    /// True if a lock error rolled the transaction back; it must not be
    /// committed, only rolled back.
    pub fn is_rolled_back(&self) -> bool {
        self.state == State::RolledBack
    }

    /// Number of row locks held.
    pub fn lock_count(&self) -> usize {
        self.locks.keys.len()
    }

    /// Number of rows changed.
    pub fn write_count(&self) -> usize {
        self.writes.len()
    }

    fn check_active(&self) -> Result<(), TrxError> {
        match self.state {
            State::Active => Ok(()),
            State::RolledBack | State::Finished => Err(self.end_error()),
        }
    }

    /// Index of table `table` in `self.tables`, looking it up if needed.
    fn table_index(&mut self, table: TableId) -> Result<usize, TrxError> {
        if let Some(i) = self.tables.iter().position(|t| t.id() == table) {
            return Ok(i);
        }
        let t = self
            .catalog
            .table(table)
            .ok_or(TrxError::NoSuchTable(table))?;
        self.tables.push(t);
        Ok(self.tables.len() - 1)
    }

    fn readable(&mut self, table: TableId) -> Result<&Table, TrxError> {
        self.check_active()?;
        let i = self.table_index(table)?;
        Ok(&self.tables[i])
    }

    // ---- reads -------------------------------------------------------------

    /// `SELECT * FROM table WHERE id = ?` (non-locking; sees own changes).
    pub fn get(&mut self, table: TableId, id: i64) -> Result<Option<Row>, TrxError> {
        self.statement(|t| {
            let trx_id = t.id;
            Ok(t.readable(table)?.get(trx_id, id))
        })
    }

    /// `SELECT * FROM table WHERE id BETWEEN lo AND hi ORDER BY id`.
    pub fn range(&mut self, table: TableId, lo: i64, hi: i64) -> Result<Vec<(i64, Row)>, TrxError> {
        self.statement(|t| {
            let trx_id = t.id;
            Ok(t.readable(table)?.range(trx_id, lo, hi))
        })
    }

    /// Like [`range`](Self::range), but calls `f` for each row instead of
    /// cloning it (the rows visible at one instant; `f` runs with no latch
    /// held).
    pub fn range_with(
        &mut self,
        table: TableId,
        lo: i64,
        hi: i64,
        f: impl FnMut(i64, &Row),
    ) -> Result<(), TrxError> {
        self.statement(|t| {
            let trx_id = t.id;
            t.readable(table)?.scan_range(trx_id, lo, hi, f);
            Ok(())
        })
    }

    /// `SELECT * FROM table WHERE k = ?` through index `k_1`, ordered by id.
    pub fn get_by_k(&mut self, table: TableId, k: i32) -> Result<Vec<(i64, Row)>, TrxError> {
        self.statement(|t| {
            let trx_id = t.id;
            Ok(t.readable(table)?.get_by_k(trx_id, k))
        })
    }

    /// `SELECT * FROM table WHERE k BETWEEN lo AND hi` through index `k_1`,
    /// calling `f` for each row in `(k, id)` order instead of cloning it
    /// (as for [`range_with`](Self::range_with)).
    pub fn k_range_with(
        &mut self,
        table: TableId,
        lo: i32,
        hi: i32,
        f: impl FnMut(i64, &Row),
    ) -> Result<(), TrxError> {
        self.statement(|t| {
            let trx_id = t.id;
            t.readable(table)?.scan_k_range(trx_id, lo, hi, f);
            Ok(())
        })
    }

    // ---- writes ------------------------------------------------------------

    /// Takes the X lock on `(table, id)` unless already held. A lock error
    /// rolls the transaction back.
    fn lock_row(&mut self, table: TableId, id: i64) -> Result<(), TrxError> {
        let key = (table, id);
        if self.locks.contains(key) {
            return Ok(());
        }
        // A row-lock waiter gives its gate slot up for the wait.
        let result = match self.hooks.as_mut() {
            Some(h) => {
                let gate = &mut h.gate;
                self.lock_sys
                    .lock_with(self.id, key, &mut || gate.suspend_for_lock_wait())
            }
            None => self.lock_sys.lock(self.id, key),
        };
        match result {
            Ok(_) => {
                if let Some(h) = self.hooks.as_mut() {
                    h.gate.resume_after_lock_wait();
                }
                self.locks.insert(key);
                Ok(())
            }
            Err(e) => {
                self.end(None);
                self.state = State::RolledBack;
                Err(e.into())
            }
        }
    }

    /// Locks the row, then runs `write` on its table and records a first touch.
    fn write(
        &mut self,
        table: TableId,
        id: i64,
        write: impl FnOnce(&Table, u64) -> WriteResult,
    ) -> Result<WriteResult, TrxError> {
        self.statement(|t| {
            t.check_active()?;
            let i = t.table_index(table)?;
            t.lock_row(table, id)?;
            let result = write(&t.tables[i], t.id);
            match result {
                WriteResult::DataTooLong { column } => {
                    return Err(TrxError::DataTooLong { table, id, column })
                }
                WriteResult::OutOfRange => return Err(TrxError::OutOfRange { table, id }),
                _ => {}
            }
            if let WriteResult::Applied {
                first_touch,
                after,
                committed_k,
            } = &result
            {
                let after = after.clone();
                if *first_touch {
                    t.writes.push(Written {
                        table: i,
                        id,
                        after,
                        committed_k: *committed_k,
                    });
                } else if let Some(w) = t
                    .writes
                    .iter_mut()
                    .rev()
                    .find(|w| w.table == i && w.id == id)
                {
                    w.after = after;
                }
            }
            Ok(result)
        })
    }

    /// `UPDATE table SET k = k + delta WHERE id = ?` (wrapping); false if no
    /// row is visible.
    pub fn update_k(&mut self, table: TableId, id: i64, delta: i32) -> Result<bool, TrxError> {
        let r = self.write(table, id, |t, trx| t.update_k(trx, id, delta))?;
        Ok(matches!(r, WriteResult::Applied { .. }))
    }

    /// `UPDATE table SET c = ? WHERE id = ?`; false if no row is visible.
    pub fn update_c(&mut self, table: TableId, id: i64, c: String) -> Result<bool, TrxError> {
        let r = self.write(table, id, |t, trx| t.update_c(trx, id, c))?;
        Ok(matches!(r, WriteResult::Applied { .. }))
    }

    /// `DELETE FROM table WHERE id = ?`; false if no row is visible.
    pub fn delete(&mut self, table: TableId, id: i64) -> Result<bool, TrxError> {
        let r = self.write(table, id, |t, trx| t.delete(trx, id))?;
        Ok(matches!(r, WriteResult::Applied { .. }))
    }

    /// Writes `row` whether or not the row exists (a replica applying a
    /// row event's after-image).
    pub fn put(&mut self, table: TableId, id: i64, row: Row) -> Result<(), TrxError> {
        self.write(table, id, |t, trx| t.put(trx, id, row))?;
        Ok(())
    }

    /// `INSERT INTO table VALUES (id, ...)`; [`TrxError::DuplicateKey`] if a
    /// row with this id is visible (after waiting for any transaction that
    /// holds the row's lock, as InnoDB does).
    pub fn insert(&mut self, table: TableId, id: i64, row: Row) -> Result<(), TrxError> {
        match self.write(table, id, |t, trx| t.insert(trx, id, row))? {
            WriteResult::Duplicate => Err(TrxError::DuplicateKey { table, id }),
            _ => Ok(()),
        }
    }

    // ---- redo --------------------------------------------------------------

    /// Calls `f(table, rows)` for each table with changed rows, the rows in
    /// the order they were first changed.
    fn for_each_written_table(
        &self,
        mut f: impl FnMut(&Table, &mut dyn Iterator<Item = &Written>),
    ) {
        for (i, table) in self.tables.iter().enumerate() {
            if self.writes.iter().any(|w| w.table == i) {
                f(table, &mut self.writes.iter().filter(|w| w.table == i));
            }
        }
    }

    /// Calls `f(table, id, after_image)` for each changed row in redo
    /// order (grouped by table; `None`: a delete).
    fn for_each_logged(&self, mut f: impl FnMut(TableId, i64, Option<&Row>)) {
        self.for_each_written_table(|table, rows| {
            for w in rows {
                f(table.id(), w.id, w.after.as_deref());
            }
        });
    }

    /// Appends the body of this transaction's commit redo record (the
    /// after-image of every changed row, grouped by table; each row appears
    /// once) without copying rows. Returns false, appending nothing, if
    /// there is nothing to log.
    pub fn encode_redo(&self, out: &mut Vec<u8>) -> bool {
        if self.writes.is_empty() || self.state != State::Active {
            return false;
        }
        let header_at = out.len();
        record::encode_commit_header(self.id, 0, out);
        let mut n_ops: u32 = 0;
        self.for_each_logged(|table, id, after| {
            n_ops += 1;
            match after {
                Some(row) => record::encode_put(table, id, row, out),
                None => record::encode_delete(table, id, out),
            }
        });
        // Patch the operation count into the header (type byte, trx id, count).
        let count_at = header_at + 1 + 8;
        out[count_at..count_at + 4].copy_from_slice(&n_ops.to_le_bytes());
        true
    }

    /// The commit redo record [`encode_redo`](Self::encode_redo) encodes, or
    /// None if there is nothing to log. Copies the changed rows.
    pub fn redo_record(&self) -> Option<RedoRecord> {
        if self.writes.is_empty() || self.state != State::Active {
            return None;
        }
        let mut ops = Vec::with_capacity(self.writes.len());
        self.for_each_logged(|table, id, after| {
            ops.push(match after {
                Some(row) => RowOp::Put {
                    table,
                    id,
                    row: Row::clone(row),
                },
                None => RowOp::Delete { table, id },
            });
        });
        Some(RedoRecord::Commit {
            trx_id: self.id,
            ops,
        })
    }

    // ---- end ---------------------------------------------------------------

    /// Makes every pending change committed (each table's changes at once),
    /// then releases the locks. Call after the redo record is logged, with
    /// the record's lsn (a paged table's pages record it). A transaction
    /// rolled back by a lock error commits nothing.
    pub fn apply_commit(mut self, lsn: impl Into<crate::page_store::buffer_pool::ChangeLsn>) {
        self.end(Some(lsn.into()));
    }

    /// Drops every pending change and releases the locks.
    pub fn rollback(mut self) {
        self.end(None);
    }

    /// Commits (as of redo `commit_lsn`) or drops the pending changes,
    /// releases the locks and marks the transaction finished.
    fn end(&mut self, commit_lsn: Option<crate::page_store::buffer_pool::ChangeLsn>) {
        let trx_id = self.id;
        self.for_each_written_table(|table, rows| {
            if let Some(lsn) = commit_lsn {
                let images = rows.map(|w| (w.id, w.after.clone(), w.committed_k));
                table.commit_images(trx_id, images, lsn);
            } else {
                table.rollback_rows(trx_id, rows.map(|w| w.id));
            }
        });
        self.writes.clear();
        self.lock_sys.release_all(trx_id, &self.locks.keys);
        self.locks.clear();
        self.state = State::Finished;
        // Leave trx-sys, the throttle (admitting a waiter) and the gate.
        self.hooks = None;
    }
}

impl Drop for Trx {
    /// An unfinished transaction rolls back.
    fn drop(&mut self) {
        if self.state != State::Finished {
            self.end(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::lock_sys::LockStats;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use std::collections::btree_map::{BTreeMap, Entry};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    use std::thread;
    use std::time::{Duration, Instant};

    fn row(k: i32) -> Row {
        Row {
            k,
            c: format!("c{k}"),
            pad: "p".into(),
        }
    }

    struct Fixture {
        catalog: Arc<Catalog>,
        lock_sys: Arc<LockSys>,
        table: TableId,
        next_trx: AtomicU64,
    }

    impl Fixture {
        fn new(rows: i64, timeout: Duration) -> Fixture {
            let catalog = Arc::new(Catalog::new());
            let table = catalog.create_table("sbtest1").unwrap();
            catalog
                .bulk_insert(table, (1..=rows).map(|i| (i, row(100))))
                .unwrap();
            Fixture {
                catalog,
                lock_sys: Arc::new(LockSys::new(16, timeout)),
                table,
                next_trx: AtomicU64::new(1),
            }
        }

        fn begin(&self) -> Trx {
            let id = self.next_trx.fetch_add(1, Relaxed);
            Trx::new(id, Arc::clone(&self.catalog), Arc::clone(&self.lock_sys))
        }

        fn committed(&self) -> BTreeMap<i64, Row> {
            self.catalog.dump().remove("sbtest1").unwrap()
        }

        fn check(&self) {
            self.catalog
                .table(self.table)
                .unwrap()
                .check_invariants()
                .unwrap();
        }
    }

    fn wait_until(cond: impl Fn() -> bool) {
        let start = Instant::now();
        while !cond() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "condition never held"
            );
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn pending_changes_are_private_until_commit() {
        let f = Fixture::new(3, Duration::from_secs(5));
        let t = f.table;
        let mut a = f.begin();
        let mut b = f.begin();
        assert!(a.update_k(t, 1, 5).unwrap());
        assert!(a.update_c(t, 2, "new".into()).unwrap());
        assert!(a.delete(t, 3).unwrap());
        a.insert(t, 4, row(7)).unwrap();

        assert_eq!(a.get(t, 1).unwrap().unwrap().k, 105);
        assert_eq!(b.get(t, 1).unwrap().unwrap().k, 100);
        assert_eq!(a.get(t, 2).unwrap().unwrap().c, "new");
        assert_eq!(b.get(t, 2).unwrap().unwrap().c, "c100");
        assert_eq!(a.get(t, 3).unwrap(), None);
        assert!(b.get(t, 3).unwrap().is_some());
        assert_eq!(a.get(t, 4).unwrap(), Some(row(7)));
        assert_eq!(b.get(t, 4).unwrap(), None);
        let ids = |rows: Vec<(i64, Row)>| rows.into_iter().map(|r| r.0).collect::<Vec<_>>();
        assert_eq!(ids(a.range(t, 1, 10).unwrap()), [1, 2, 4]);
        assert_eq!(ids(b.range(t, 1, 10).unwrap()), [1, 2, 3]);
        assert_eq!(ids(a.get_by_k(t, 100).unwrap()), [2]);
        assert_eq!(ids(b.get_by_k(t, 100).unwrap()), [1, 2, 3]);
        assert_eq!(ids(a.get_by_k(t, 105).unwrap()), [1]);
        assert_eq!(ids(b.get_by_k(t, 105).unwrap()), Vec::<i64>::new());
        assert!(!a.is_read_only());
        assert!(b.is_read_only());
        f.check();

        a.apply_commit(0);
        // Read committed: b sees a's commit at once.
        assert_eq!(b.get(t, 1).unwrap().unwrap().k, 105);
        assert_eq!(ids(b.range(t, 1, 10).unwrap()), [1, 2, 4]);
        b.rollback();
        f.check();
        assert!(f.lock_sys.is_idle());
    }

    #[test]
    fn rollback_and_drop_discard_changes() {
        let f = Fixture::new(3, Duration::from_secs(5));
        let before = f.committed();
        let mut a = f.begin();
        a.update_k(f.table, 1, 1).unwrap();
        a.insert(f.table, 9, row(1)).unwrap();
        a.rollback();
        let mut b = f.begin();
        b.delete(f.table, 2).unwrap();
        drop(b);
        assert_eq!(f.committed(), before);
        assert!(f.lock_sys.is_idle());
        f.check();
    }

    #[test]
    fn statement_errors_keep_the_transaction_usable() {
        let f = Fixture::new(3, Duration::from_secs(5));
        let mut a = f.begin();
        assert_eq!(
            a.insert(f.table, 1, row(1)),
            Err(TrxError::DuplicateKey {
                table: f.table,
                id: 1
            })
        );
        assert_eq!(a.get(99, 1), Err(TrxError::NoSuchTable(99)));
        assert_eq!(a.update_k(99, 1, 1), Err(TrxError::NoSuchTable(99)));
        assert!(!a.update_k(f.table, 50, 1).unwrap());
        assert!(!a.delete(f.table, 50).unwrap());
        assert!(a.is_read_only());
        assert!(a.delete(f.table, 1).unwrap());
        a.insert(f.table, 1, row(3)).unwrap();
        a.apply_commit(0);
        assert_eq!(f.committed()[&1], row(3));
        assert!(f.lock_sys.is_idle());
    }

    #[test]
    fn conflicting_writers_wait_and_see_the_commit() {
        let f = Arc::new(Fixture::new(3, Duration::from_secs(10)));
        let mut a = f.begin();
        a.update_k(f.table, 1, 10).unwrap();
        a.insert(f.table, 7, row(7)).unwrap();
        let f2 = Arc::clone(&f);
        let b = thread::spawn(move || {
            let mut b = f2.begin();
            assert!(b.update_k(f2.table, 1, 1).unwrap());
            let dup = b.insert(f2.table, 7, row(8));
            b.apply_commit(0);
            dup
        });
        wait_until(|| f.lock_sys.stats().waits == 1);
        a.apply_commit(0);
        assert_eq!(
            b.join().unwrap(),
            Err(TrxError::DuplicateKey { table: 1, id: 7 })
        );
        assert_eq!(f.committed()[&1].k, 111);
        assert_eq!(f.committed()[&7], row(7));
        f.check();
    }

    #[test]
    fn deadlock_rolls_the_victim_back() {
        let f = Arc::new(Fixture::new(3, Duration::from_secs(10)));
        let t = f.table;
        let mut a = f.begin();
        let mut b = f.begin();
        a.update_k(t, 1, 1).unwrap();
        b.update_k(t, 2, 1).unwrap();
        b.insert(t, 9, row(9)).unwrap();
        let a = thread::spawn(move || {
            let r = a.update_k(t, 2, 1);
            a.apply_commit(0);
            r
        });
        wait_until(|| f.lock_sys.stats().waits == 1);
        assert_eq!(b.update_k(t, 1, 1), Err(TrxError::Deadlock));
        assert!(b.is_rolled_back());
        assert_eq!(b.get(t, 1), Err(TrxError::RolledBack));
        assert!(!b.encode_redo(&mut Vec::new()));
        assert_eq!(a.join().unwrap(), Ok(true));
        b.rollback();
        let rows = f.committed();
        assert_eq!((rows[&1].k, rows[&2].k), (101, 101));
        assert!(!rows.contains_key(&9));
        assert_eq!(
            f.lock_sys.stats(),
            LockStats {
                waits: 1,
                deadlocks: 1,
                timeouts: 0
            }
        );
        assert!(f.lock_sys.is_idle());
        f.check();
    }

    #[test]
    fn lock_wait_timeout_rolls_back() {
        let f = Fixture::new(3, Duration::from_millis(30));
        let mut a = f.begin();
        let mut b = f.begin();
        a.update_k(f.table, 1, 1).unwrap();
        b.update_k(f.table, 2, 1).unwrap();
        assert_eq!(b.delete(f.table, 1), Err(TrxError::LockWaitTimeout));
        assert_eq!(b.update_k(f.table, 3, 1), Err(TrxError::RolledBack));
        b.rollback();
        a.apply_commit(0);
        assert_eq!(f.committed()[&2].k, 100);
        assert_eq!(f.committed()[&1].k, 101);
        assert_eq!(f.lock_sys.stats().timeouts, 1);
        assert!(f.lock_sys.is_idle());
    }

    #[test]
    fn redo_record_matches_encoding() {
        let f = Fixture::new(40, Duration::from_secs(5));
        let ro = f.begin();
        assert!(ro.redo_record().is_none());
        let mut buf = Vec::new();
        assert!(!ro.encode_redo(&mut buf));
        assert!(buf.is_empty());
        drop(ro);

        let other = f.catalog.create_table("sbtest2").unwrap();
        let mut a = f.begin();
        // More than LINEAR_LOCK_SEARCH rows, revisiting some.
        for id in 1..=30 {
            a.update_k(f.table, id, 1).unwrap();
        }
        for id in 1..=30 {
            a.update_c(f.table, id, format!("x{id}")).unwrap();
        }
        a.delete(f.table, 31).unwrap();
        a.insert(other, 5, row(5)).unwrap();
        a.update_k(other, 5, 1).unwrap();
        assert_eq!(a.lock_count(), 32);
        assert_eq!(a.write_count(), 32);

        let rec = a.redo_record().unwrap();
        buf.push(0xEE); // encoding appends
        assert!(a.encode_redo(&mut buf));
        assert_eq!(record::decode(&buf[1..]), Ok(rec.clone()));
        let RedoRecord::Commit { trx_id, ops } = &rec else {
            panic!("not a commit")
        };
        assert_eq!(*trx_id, a.id());
        assert_eq!(ops.len(), 32);
        assert!(ops.contains(&RowOp::Delete {
            table: f.table,
            id: 31
        }));
        assert!(ops.contains(&RowOp::Put {
            table: other,
            id: 5,
            row: Row { k: 6, ..row(5) }
        }));

        // Replaying the record on the pre-commit state yields the committed state.
        let mut image = Vec::new();
        f.catalog.write_image(&mut image);
        let replica = Catalog::read_image(&image).unwrap();
        a.apply_commit(0);
        replica.apply(&rec).unwrap();
        assert_eq!(replica.dump(), f.catalog.dump());
    }

    // ---- model-based property test ------------------------------------------

    #[derive(Clone, Debug)]
    enum Op {
        Insert(i64, i32),
        UpdateK(i64, i32),
        UpdateC(i64, u8),
        Delete(i64),
        Get(i64),
        Range(i64, i64),
        GetByK(i32),
    }

    #[derive(Clone, Debug)]
    enum End {
        Commit,
        Rollback,
        Drop,
    }

    fn op_strategy() -> impl Strategy<Value = Op> {
        let id = 0i64..12;
        let k = 0i32..5;
        prop_oneof![
            (id.clone(), k.clone()).prop_map(|(i, k)| Op::Insert(i, k)),
            (id.clone(), -2i32..=2).prop_map(|(i, d)| Op::UpdateK(i, d)),
            (id.clone(), any::<u8>()).prop_map(|(i, c)| Op::UpdateC(i, c)),
            id.clone().prop_map(Op::Delete),
            id.clone().prop_map(Op::Get),
            (id.clone(), id).prop_map(|(a, b)| Op::Range(a.min(b), a.max(b))),
            k.prop_map(Op::GetByK),
        ]
    }

    fn trx_strategy() -> impl Strategy<Value = (Vec<Op>, End)> {
        (
            prop::collection::vec(op_strategy(), 0..12),
            prop_oneof![3 => Just(End::Commit), 1 => Just(End::Rollback), 1 => Just(End::Drop)],
        )
    }

    type Model = BTreeMap<i64, Row>;

    fn model_range(m: &Model, lo: i64, hi: i64) -> Vec<(i64, Row)> {
        m.range(lo..=hi).map(|(&i, r)| (i, r.clone())).collect()
    }

    fn model_by_k(m: &Model, k: i32) -> Vec<(i64, Row)> {
        m.iter()
            .filter(|(_, r)| r.k == k)
            .map(|(&i, r)| (i, r.clone()))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn transactions_match_a_btreemap_model(trxs in prop::collection::vec(trx_strategy(), 1..12)) {
            let f = Fixture::new(0, Duration::from_millis(10));
            let t = f.table;
            // The redo records of committed transactions, replayed on a replica.
            let replica = Catalog::new();
            replica.create_table_with_id(t, "sbtest1", crate::data::table::Shape::Sbtest).unwrap();
            let mut model = Model::new();
            for (ops, end) in trxs {
                let mut trx = f.begin();
                let mut observer = f.begin();
                let mut view = model.clone();
                for op in ops {
                    match op {
                        Op::Insert(id, k) => {
                            let r = trx.insert(t, id, row(k));
                            let expected = match view.entry(id) {
                                Entry::Occupied(_) => Err(TrxError::DuplicateKey { table: t, id }),
                                Entry::Vacant(slot) => {
                                    slot.insert(row(k));
                                    Ok(())
                                }
                            };
                            prop_assert_eq!(r, expected);
                        }
                        Op::UpdateK(id, d) => {
                            let r = trx.update_k(t, id, d).unwrap();
                            prop_assert_eq!(r, view.contains_key(&id));
                            if let Some(row) = view.get_mut(&id) {
                                row.k += d;
                            }
                        }
                        Op::UpdateC(id, c) => {
                            let r = trx.update_c(t, id, format!("c{c}")).unwrap();
                            prop_assert_eq!(r, view.contains_key(&id));
                            if let Some(row) = view.get_mut(&id) {
                                row.c = format!("c{c}");
                            }
                        }
                        Op::Delete(id) => {
                            prop_assert_eq!(trx.delete(t, id).unwrap(), view.remove(&id).is_some());
                        }
                        Op::Get(id) => {
                            prop_assert_eq!(trx.get(t, id).unwrap(), view.get(&id).cloned());
                            prop_assert_eq!(observer.get(t, id).unwrap(), model.get(&id).cloned());
                        }
                        Op::Range(lo, hi) => {
                            prop_assert_eq!(trx.range(t, lo, hi).unwrap(), model_range(&view, lo, hi));
                            prop_assert_eq!(observer.range(t, lo, hi).unwrap(), model_range(&model, lo, hi));
                        }
                        Op::GetByK(k) => {
                            prop_assert_eq!(trx.get_by_k(t, k).unwrap(), model_by_k(&view, k));
                            prop_assert_eq!(observer.get_by_k(t, k).unwrap(), model_by_k(&model, k));
                        }
                    }
                    f.check();
                }
                prop_assert_eq!(trx.range(t, i64::MIN, i64::MAX).unwrap(), model_range(&view, i64::MIN, i64::MAX));
                prop_assert_eq!(observer.range(t, i64::MIN, i64::MAX).unwrap(), model_range(&model, i64::MIN, i64::MAX));
                observer.apply_commit(0);
                match end {
                    End::Commit => {
                        let mut body = Vec::new();
                        if trx.encode_redo(&mut body) {
                            replica.apply(&record::decode(&body).unwrap()).unwrap();
                        }
                        trx.apply_commit(0);
                        model = view;
                    }
                    End::Rollback => trx.rollback(),
                    End::Drop => drop(trx),
                }
                f.check();
                prop_assert_eq!(&f.committed(), &model);
                prop_assert_eq!(&replica.dump()["sbtest1"], &model);
                prop_assert!(f.lock_sys.is_idle());
                let table = f.catalog.table(t).unwrap();
                prop_assert_eq!(table.len_committed(), model.len());
                for (id, r) in &model {
                    prop_assert!(table.get_by_k(0, r.k).iter().any(|(i, _)| i == id));
                }
            }
        }
    }

    // ---- concurrency -------------------------------------------------------

    /// Runs `threads` threads of random transfers of `k` between `rows` rows
    /// (random lock order) plus two readers checking that every range scan
    /// sees the same total. Returns the lock stats.
    fn transfer_stress(threads: u64, rows: i64, per_thread: u64, timeout: Duration) -> LockStats {
        let f = Arc::new(Fixture::new(rows, timeout));
        let total: i64 = 100 * rows;
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (f, stop) = (Arc::clone(&f), Arc::clone(&stop));
                thread::spawn(move || {
                    let mut scans = 0u64;
                    while !stop.load(Relaxed) || scans == 0 {
                        let mut trx = f.begin();
                        let mut sum = 0i64;
                        trx.range_with(f.table, 1, rows, |_, r| sum += i64::from(r.k))
                            .unwrap();
                        assert_eq!(sum, total, "a range scan saw a partial commit");
                        scans += 1;
                    }
                })
            })
            .collect();
        let errors = Arc::new(AtomicU64::new(0));
        let writers: Vec<_> = (0..threads)
            .map(|seed| {
                let f = Arc::clone(&f);
                let errors = Arc::clone(&errors);
                thread::spawn(move || {
                    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
                    for _ in 0..per_thread {
                        let from = rng.gen_range(1..=rows);
                        let to = rng.gen_range(1..=rows);
                        let amount = rng.gen_range(1..10);
                        let mut trx = f.begin();
                        let result = (|| {
                            trx.update_k(f.table, from, -amount)?;
                            if rng.gen_bool(0.3) {
                                thread::yield_now();
                            }
                            trx.update_c(f.table, to, format!("from {from}"))?;
                            trx.update_k(f.table, to, amount)?;
                            Ok::<_, TrxError>(())
                        })();
                        match result {
                            Ok(()) => {
                                let mut body = Vec::new();
                                assert!(trx.encode_redo(&mut body));
                                trx.apply_commit(0);
                            }
                            Err(e) => {
                                assert!(
                                    matches!(e, TrxError::Deadlock | TrxError::LockWaitTimeout),
                                    "{e}"
                                );
                                assert!(trx.is_rolled_back());
                                errors.fetch_add(1, Relaxed);
                                trx.rollback();
                            }
                        }
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        let committed = f.committed();
        assert_eq!(committed.len() as i64, rows);
        assert_eq!(
            committed.values().map(|r| i64::from(r.k)).sum::<i64>(),
            total
        );
        assert!(f.lock_sys.is_idle());
        f.check();
        let stats = f.lock_sys.stats();
        assert_eq!(errors.load(Relaxed), stats.deadlocks + stats.timeouts);
        stats
    }

    #[test]
    fn stress_transfers_detect_deadlocks() {
        let stats = transfer_stress(16, 12, 400, Duration::from_secs(20));
        assert!(stats.waits > 0 && stats.deadlocks > 0, "{stats:?}");
        assert_eq!(stats.timeouts, 0, "a deadlock went undetected: {stats:?}");
    }

    #[test]
    fn stress_transfers_with_short_timeouts() {
        let stats = transfer_stress(16, 6, 200, Duration::from_micros(300));
        assert!(stats.waits > 0, "{stats:?}");
    }
}
