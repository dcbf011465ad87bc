//! MySQL's ordered commit (`MYSQL_BIN_LOG::ordered_commit`) for `log_bin=ON`.
//!
//! A committing user thread first *prepares*: it appends a `Prepare` redo
//! record (its row changes, xid = trx id) without waiting for it. Then it
//! enters the FLUSH queue. Each of the three stages has a queue and a lock:
//! the first thread to enter an empty queue is the stage's leader; later
//! ones are followers and sleep until their transaction is done. A leader
//! takes the stage lock (waiting for the previous leader to leave the
//! stage), then takes the whole queue as its group:
//!
//! - **FLUSH**: one redo flush up to the group's last prepare record covers
//!   every prepare in the group (`innodb_flush_log_at_trx_commit` as usual:
//!   with dedicated log threads the leader waits for `log_writer` /
//!   `log_flusher`; without them the leader writes and fdatasyncs the redo
//!   itself), then one write of all the group's binlog events. Rotates the
//!   binlog at `max_binlog_size`.
//! - **SYNC**: after `binlog_group_commit_sync_delay` µs (more groups can
//!   queue meanwhile), one fdatasync of the binlog every `sync_binlog`
//!   groups (0 = never; the OS decides).
//! - **COMMIT**: in queue (= binlog) order, per transaction: append a
//!   `CommitMark` redo record, make its changes visible and release its row
//!   locks; then wake every follower.
//!
//! A leader enters the next stage's queue *before* it releases the current
//! stage's lock, so groups keep their order through all three stages and
//! binlog order equals commit order. A leader that finds the next queue
//! non-empty becomes a follower there: its group joins the next leader's.
//!
//! Prepared-but-undecided transactions are kept in `in_flight` by prepare
//! lsn; a checkpoint never starts above the oldest one (see
//! `Engine::checkpoint` and `engine/DESIGN.md`).
//!
//! Names (see [`crate::named_locks`]): the queues are
//! `binlog.flush_queue` / `binlog.sync_queue` / `binlog.commit_queue`, the
//! stage locks `binlog.flush_lock` / `binlog.sync_lock` /
//! `binlog.commit_lock`. Followers sleep in `std::thread::park`, whose
//! futex word belongs to the thread, so their waits stay unnamed.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::counters::Counters;
use crate::data::record;
use crate::data::trx::Trx;
use crate::failpoints::{self, Target};
use crate::file_error::FileError;
use crate::named_locks::{self, NamedMutex};
use crate::probe_points;
use crate::redo::{Lsn, RedoError, RedoLog};
use crate::vfs::{Vfs, VfsFile};

use super::file::{self, BinlogPos, BinlogWriter};
use super::published::Published;
use super::recover::RecoveredBinlog;
use super::{validate_sync_delay_us, BinlogError};

/// Live binlog settings (kept by the engine even with log_bin=OFF, as
/// MySQL shows and accepts them then too).
#[derive(Debug)]
pub struct BinlogSettings {
    /// `sync_binlog`: fdatasync the binlog every N groups (0 = never).
    sync_binlog: AtomicU32,
    /// `binlog_group_commit_sync_delay` (µs).
    sync_delay_us: AtomicU64,
}

impl BinlogSettings {
    /// Validated starting values.
    pub fn new(sync_binlog: u32, sync_delay_us: u64) -> Result<BinlogSettings, BinlogError> {
        validate_sync_delay_us(sync_delay_us)?;
        Ok(BinlogSettings {
            sync_binlog: AtomicU32::new(sync_binlog),
            sync_delay_us: AtomicU64::new(sync_delay_us),
        })
    }
    pub fn sync_binlog(&self) -> u32 {
        self.sync_binlog.load(Ordering::Relaxed)
    }
    /// `SET GLOBAL sync_binlog` (every u32 is valid, as in MySQL).
    pub fn set_sync_binlog(&self, n: u32) {
        self.sync_binlog.store(n, Ordering::Relaxed);
    }
    pub fn sync_delay_us(&self) -> u64 {
        self.sync_delay_us.load(Ordering::Relaxed)
    }
    /// `SET GLOBAL binlog_group_commit_sync_delay` (µs, 0..=1000000); a
    /// refused value changes nothing.
    pub fn set_sync_delay_us(&self, us: u64) -> Result<(), BinlogError> {
        validate_sync_delay_us(us)?;
        self.sync_delay_us.store(us, Ordering::Relaxed);
        Ok(())
    }
}

/// One committing transaction in the stages.
struct Ticket {
    xid: u64,
    /// Its binlog event's payload (framed by the flush stage) and the
    /// payload's checksum, computed by the committing thread.
    payload: Vec<u8>,
    payload_crc: crc32fast::Hasher,
    /// Set on the last ticket of a flush group: where its events end.
    end: OnceLock<BinlogPos>,
    prepare_start: Lsn,
    prepare_end: Lsn,
    /// Per-commit hand-offs between owner and leader (unnamed: one per
    /// commit would make the registry change at the commit rate).
    trx: Mutex<Option<Trx>>,
    thread: Thread,
    done: AtomicBool,
    result: Mutex<Option<Result<Lsn, StageError>>>,
}

type Group = Vec<Arc<Ticket>>;

/// Why a stage failed, handed to every transaction of the group.
#[derive(Clone, Debug)]
enum StageError {
    /// The redo log is in fail-stop.
    Redo(RedoError),
    /// A binlog write or fdatasync failed (the cause).
    Binlog(FileError),
}

/// Why a commit through the group commit failed: the redo log's error
/// (its fail-stop) or the binlog's. The engine's top-level error wraps it.
#[derive(Debug)]
pub enum CommitError {
    Redo(RedoError),
    Binlog(BinlogError),
}

impl From<StageError> for CommitError {
    fn from(e: StageError) -> Self {
        match e {
            StageError::Redo(e) => CommitError::Redo(e),
            StageError::Binlog(cause) => CommitError::Binlog(BinlogError::FailStop { cause }),
        }
    }
}

impl From<BinlogError> for CommitError {
    fn from(e: BinlogError) -> Self {
        CommitError::Binlog(e)
    }
}

impl From<RedoError> for CommitError {
    fn from(e: RedoError) -> Self {
        CommitError::Redo(e)
    }
}

/// A stage's queue: the thread that finds it empty leads.
struct StageQueue(NamedMutex<Group>);

impl StageQueue {
    fn new(name: &str) -> StageQueue {
        StageQueue(NamedMutex::new(name, Group::new()))
    }
    /// Appends `group`; true if the queue was empty (the caller leads).
    fn enroll(&self, group: Group) -> bool {
        let mut q = self.0.lock();
        let leader = q.is_empty();
        q.extend(group);
        leader
    }
    fn take(&self) -> Group {
        std::mem::take(&mut *self.0.lock())
    }
}

#[derive(Default)]
struct SyncState {
    /// Groups written since the last binlog fdatasync.
    unsynced_groups: u32,
}

/// The ordered group commit.
pub struct GroupCommit {
    redo: Arc<RedoLog>,
    counters: Arc<Counters>,
    settings: Arc<BinlogSettings>,
    flush_queue: StageQueue,
    sync_queue: StageQueue,
    commit_queue: StageQueue,
    /// The FLUSH stage lock (MySQL's LOCK_log): owns the writer.
    flush_lock: NamedMutex<BinlogWriter>,
    /// The SYNC stage lock (LOCK_sync).
    sync_lock: NamedMutex<SyncState>,
    /// The COMMIT stage lock (LOCK_commit).
    commit_lock: NamedMutex<()>,
    /// The file the SYNC stage syncs (replaced at rotation, after the old
    /// one was synced entirely).
    current_file: NamedMutex<CurrentFile>,
    /// Prepare lsns of transactions prepared but not yet committed.
    in_flight: NamedMutex<BTreeSet<Lsn>>,
    /// The data directory, for messages.
    dir: String,
    /// Why group commit stopped (the first cause).
    failed: OnceLock<FileError>,
    /// The end of the events replicas may read.
    published: Arc<Published>,
}

/// The binlog file being appended to, and its path (for messages).
#[derive(Clone)]
struct CurrentFile {
    path: String,
    file: Arc<dyn VfsFile>,
}

impl CurrentFile {
    fn of(dir: &str, writer: &BinlogWriter) -> CurrentFile {
        CurrentFile {
            path: format!("{dir}/{}", writer.current_name()),
            file: writer.file(),
        }
    }
}

thread_local! {
    static BODY: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(1024));
}

impl GroupCommit {
    /// Opens the binlog where recovery left it (or creates it).
    pub fn open(
        vfs: Arc<dyn Vfs>,
        recovered: Option<&RecoveredBinlog>,
        max_binlog_size: u64,
        settings: Arc<BinlogSettings>,
        redo: Arc<RedoLog>,
        counters: Arc<Counters>,
    ) -> Result<GroupCommit, BinlogError> {
        super::validate_max_binlog_size(max_binlog_size)?;
        let (names, offset, last_sequence) = match recovered {
            Some(r) => (r.files.clone(), r.end_offset, r.last_sequence),
            None => (Vec::new(), file::FILE_HDR, 0),
        };
        let dir = vfs.describe();
        let writer = BinlogWriter::open(vfs, names, offset, last_sequence, max_binlog_size)?;
        let published = Arc::new(Published::new(writer.position()));
        Ok(GroupCommit {
            redo,
            counters,
            settings,
            flush_queue: StageQueue::new("binlog.flush_queue"),
            sync_queue: StageQueue::new("binlog.sync_queue"),
            commit_queue: StageQueue::new("binlog.commit_queue"),
            current_file: NamedMutex::new("binlog.current_file", CurrentFile::of(&dir, &writer)),
            flush_lock: NamedMutex::new("binlog.flush_lock", writer),
            sync_lock: NamedMutex::new("binlog.sync_lock", SyncState::default()),
            commit_lock: NamedMutex::new("binlog.commit_lock", ()),
            in_flight: NamedMutex::new("binlog.in_flight", BTreeSet::new()),
            dir,
            failed: OnceLock::new(),
            published,
        })
    }

    /// The end of the binlog events replicas may read, and its waiters.
    pub fn published(&self) -> &Arc<Published> {
        &self.published
    }

    /// The lsn of the oldest prepared, undecided transaction's record.
    pub fn oldest_prepare(&self) -> Option<Lsn> {
        self.in_flight.lock().first().copied()
    }

    /// Makes every binlog event written so far durable (for checkpoints:
    /// nothing in a checkpoint image may be missing from the durable binlog).
    /// After a failure it refuses: a retried fdatasync may "succeed" on
    /// pages the kernel dropped, and the checkpoint would then publish an
    /// image whose binlog events are not on disk.
    pub fn sync_all(&self) -> Result<(), BinlogError> {
        self.check_failed()?;
        let f = self.current_file.lock().clone();
        self.timed_sync(&f).map_err(|cause| BinlogError::FailStop {
            cause: self.fail_cause(cause),
        })
    }

    /// Why group commit stopped, once an I/O error stopped it.
    pub fn failure(&self) -> Option<&FileError> {
        self.failed.get()
    }

    /// Enters fail-stop (the first cause is kept; the `redoctor_fail_stop`
    /// probe point fires once); returns the cause for the group's tickets.
    fn fail_cause(&self, cause: FileError) -> FileError {
        if self.failed.set(cause.clone()).is_ok() {
            probe_points::redoctor_fail_stop(cause.raw_os_error().unwrap_or(-1));
        }
        cause
    }

    pub(crate) fn check_failed(&self) -> Result<(), BinlogError> {
        match self.failed.get() {
            Some(c) => Err(BinlogError::FailStop { cause: c.clone() }),
            None => Ok(()),
        }
    }

    fn check_failed_stage(&self) -> Result<(), StageError> {
        match self.failed.get() {
            Some(c) => Err(StageError::Binlog(c.clone())),
            None => Ok(()),
        }
    }

    /// Two-phase commit of a transaction with changes: prepare, then the
    /// ordered FLUSH / SYNC / COMMIT stages. Returns its commit mark's end
    /// lsn. Calls `enrolled` once the transaction is in the FLUSH queue (its binlog and commit order are fixed from then
    /// on) or has failed before: a replica's worker lets the next one in
    /// commit order go then, as MySQL's commit-order manager does, so the
    /// two can still share a group.
    pub fn commit_enrolled(&self, mut trx: Trx, enrolled: &dyn Fn()) -> Result<Lsn, CommitError> {
        if let Err(e) = self.check_failed() {
            enrolled();
            self.rollback(trx);
            return Err(e.into());
        }
        let xid = trx.id();
        let prepared = BODY.with(|b| {
            let mut body = b.borrow_mut();
            body.clear();
            trx.encode_redo(&mut body);
            let payload = body.clone();
            let crc = file::payload_crc(&payload);
            record::commit_body_to_prepare(&mut body);
            let r = self.redo.append(&body)?;
            // Registered before it is closed: a checkpoint that sees the
            // record closed also sees it in flight.
            self.in_flight.lock().insert(r.0);
            self.redo.mark_closed(r.0, r.1);
            Ok::<_, crate::redo::RedoError>((r.0, r.1, payload, crc))
        });
        let (prepare_start, prepare_end, payload, payload_crc) = match prepared {
            Ok(r) => r,
            Err(e) => {
                enrolled();
                self.rollback(trx);
                return Err(e.into());
            }
        };
        // Prepared: leave the concurrency gate before queueing for the
        // group commit, as InnoDB's prepare does, so a small
        // innodb_thread_concurrency cannot cap the group size.
        trx.leave_gate();
        let ticket = Arc::new(Ticket {
            xid,
            payload,
            payload_crc,
            end: OnceLock::new(),
            prepare_start,
            prepare_end,
            trx: Mutex::new(Some(trx)),
            thread: std::thread::current(),
            done: AtomicBool::new(false),
            result: Mutex::new(None),
        });
        self.ordered_commit(&ticket, enrolled);
        let result = named_locks::lock(&ticket.result)
            .take()
            .expect("a finished ticket has a result");
        result.map_err(Into::into)
    }

    fn rollback(&self, trx: Trx) {
        trx.rollback();
        self.counters.rollbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// Follower: sleeps until a leader finished `t`.
    fn wait_done(&self, t: &Ticket) {
        self.counters
            .binlog_stage_waits
            .fetch_add(1, Ordering::Relaxed);
        while !t.done.load(Ordering::Acquire) {
            std::thread::park();
        }
    }

    fn ordered_commit(&self, me: &Arc<Ticket>, enrolled: &dyn Fn()) {
        // FLUSH
        let leader = self.flush_queue.enroll(vec![me.clone()]);
        enrolled();
        if !leader {
            return self.wait_done(me);
        }
        let mut writer = self.flush_lock.lock();
        let group = self.flush_queue.take();
        if let Err(e) = self.flush_stage(&mut writer, &group) {
            drop(writer);
            return self.finish_failed(group, e);
        }
        // SYNC
        if !self.sync_queue.enroll(group) {
            drop(writer);
            return self.wait_done(me);
        }
        drop(writer);
        let mut sync = self.sync_lock.lock();
        let delay = self.settings.sync_delay_us();
        if delay > 0 {
            std::thread::sleep(Duration::from_micros(delay));
        }
        let group = self.sync_queue.take();
        if let Err(e) = self.sync_stage(&mut sync) {
            drop(sync);
            return self.finish_failed(group, e);
        }
        // Replicas may read the group's events now (after the fdatasync
        // when sync_binlog says so, as MySQL's dump threads do).
        if let Some(end) = group.iter().filter_map(|t| t.end.get()).max() {
            self.published.publish(*end);
        }
        // COMMIT
        if !self.commit_queue.enroll(group) {
            drop(sync);
            return self.wait_done(me);
        }
        drop(sync);
        let _commit = self.commit_lock.lock();
        let group = self.commit_queue.take();
        self.commit_stage(group);
    }

    /// One redo flush for the group's prepares, then one binlog write.
    fn flush_stage(&self, writer: &mut BinlogWriter, group: &Group) -> Result<(), StageError> {
        self.check_failed_stage()?;
        let upto = group.iter().map(|t| t.prepare_end).max().unwrap_or(0);
        self.redo.wait_for_commit(upto).map_err(StageError::Redo)?;
        let bytes: usize = group
            .iter()
            .map(|t| t.payload.len() + file::EVENT_HDR + file::EVENT_TRL)
            .sum();
        let mut buf = Vec::with_capacity(bytes);
        writer.frame_group(
            group
                .iter()
                .map(|t| (t.xid, t.payload.as_slice(), &t.payload_crc)),
            &mut buf,
        );
        let write = writer.append(&buf).and_then(|()| {
            if let Some(last) = group.last() {
                let _ = last.end.set(writer.position());
            }
            if writer.needs_rotation() {
                writer.rotate()?;
                *self.current_file.lock() = CurrentFile::of(&self.dir, writer);
            }
            Ok(())
        });
        write.map_err(|e| StageError::Binlog(self.fail_cause(e.into_file_error(&self.dir))))?;
        let c = &self.counters;
        c.binlog_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        c.binlog_events
            .fetch_add(group.len() as u64, Ordering::Relaxed);
        c.binlog_groups.fetch_add(1, Ordering::Relaxed);
        c.binlog_group_size_sum
            .fetch_add(group.len() as u64, Ordering::Relaxed);
        probe_points::redoctor_binlog_flush(group.len() as u64, bytes as u64);
        Ok(())
    }

    fn timed_sync(&self, f: &CurrentFile) -> Result<(), FileError> {
        let t = Instant::now();
        failpoints::sync_data(Target::Binlog, f.file.as_ref())
            .map_err(|e| FileError::new("fdatasync of", f.path.clone(), e))?;
        let ns = t.elapsed().as_nanos() as u64;
        self.counters.binlog_fsyncs.fetch_add(1, Ordering::Relaxed);
        self.counters
            .binlog_fsync_ns
            .fetch_add(ns, Ordering::Relaxed);
        probe_points::redoctor_binlog_sync(ns);
        Ok(())
    }

    /// fdatasync every `sync_binlog` groups.
    fn sync_stage(&self, st: &mut SyncState) -> Result<(), StageError> {
        self.check_failed_stage()?;
        st.unsynced_groups = st.unsynced_groups.saturating_add(1);
        let every = self.settings.sync_binlog();
        if every != 0 && st.unsynced_groups >= every {
            let f = self.current_file.lock().clone();
            self.timed_sync(&f)
                .map_err(|e| StageError::Binlog(self.fail_cause(e)))?;
            st.unsynced_groups = 0;
        }
        Ok(())
    }

    /// Commits the group in order, then wakes the followers.
    fn commit_stage(&self, group: Group) {
        let mut mark = Vec::with_capacity(16);
        for t in &group {
            let trx = named_locks::lock(&t.trx)
                .take()
                .expect("each ticket is committed once");
            mark.clear();
            record::encode_commit_mark(t.xid, &mut mark);
            let r = match self.redo.append_without_space_wait(&mark) {
                Ok((start, end)) => {
                    // Pages: the rows are in the prepare record (the
                    // checkpoint may not pass it while they are unwritten);
                    // the log durable past the mark before they are.
                    trx.apply_commit(crate::page_store::buffer_pool::ChangeLsn {
                        start: t.prepare_start,
                        end,
                    });
                    self.redo.mark_closed(start, end);
                    self.counters.commits.fetch_add(1, Ordering::Relaxed);
                    Ok(end)
                }
                Err(e) => {
                    self.rollback(trx);
                    Err(StageError::Redo(e))
                }
            };
            *named_locks::lock(&t.result) = Some(r);
        }
        self.leave_in_flight(&group);
        probe_points::redoctor_group_commit(group.len() as u64);
        Self::wake(group);
    }

    /// A stage failed: every transaction of the group is rolled back in
    /// memory and gets the error (its prepare may still be decided either
    /// way by recovery, as for any commit whose outcome the client never saw).
    fn finish_failed(&self, group: Group, cause: StageError) {
        for t in &group {
            if let Some(trx) = named_locks::lock(&t.trx).take() {
                self.rollback(trx);
            }
            *named_locks::lock(&t.result) = Some(Err(cause.clone()));
        }
        self.leave_in_flight(&group);
        Self::wake(group);
    }

    /// The group's transactions are decided: one `in_flight` lock for the
    /// whole group (the mutex every prepare takes too). Until then a
    /// checkpoint only stays lower than it needs to.
    fn leave_in_flight(&self, group: &Group) {
        let mut in_flight = self.in_flight.lock();
        for t in group {
            in_flight.remove(&t.prepare_start);
        }
    }

    fn wake(group: Group) {
        let me = std::thread::current().id();
        for t in group {
            t.done.store(true, Ordering::Release);
            if t.thread.id() != me {
                t.thread.unpark();
            }
        }
    }
}
