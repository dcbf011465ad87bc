//! The redo log, built the way MySQL 8.0 builds it (WL#10310).
//!
//! - [`log_buffer`]: lsn space is reserved with one `fetch_add`; records are
//!   copied into a ring without locks.
//! - [`link_buffer`]: `recent_written` says up to where the ring is complete;
//!   `recent_closed` says up to where commits are applied to the tables
//!   (where a checkpoint may start).
//! - [`writer`], [`flusher`], [`notifiers`]: with dedicated log threads
//!   ([`RedoMode::On`], "RT1") `log_writer` writes, `log_flusher`
//!   fdatasyncs, `log_wr_notify`/`log_fl_notify` wake the waiters whose lsn is
//!   satisfied. With [`RedoMode::Off`] ("RT0") the committing user thread leads
//!   the write under the writer mutex, then the flush under the flusher mutex.
//! - [`log_file`]: the circular, block-checksummed redo file and its scanner.
//! - [`mode`]: switching between the two live; [`park`]: pausing the
//!   dedicated threads at OFF and resuming them at ON.
//! - [`self_write`]: with dedicated threads, a committer that finds the log
//!   idle writes and flushes its own record (`redoctor_log_idle_self_write`,
//!   off unless asked for).

pub mod event;
pub mod flusher;
pub mod link_buffer;
pub mod log_buffer;
pub mod log_file;
pub mod mode;
pub mod notifiers;
pub mod park;
pub mod self_write;
pub mod spin_gate;
pub mod writer;

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use redoctor_args::OnOff;
use serde::{Deserialize, Serialize};

use crate::counters::Counters;
use crate::file_error::FileError;
use crate::named_locks::{Named, NamedMutex};
use crate::probe_points;
use crate::vfs::VfsFile;
use event::Event;
use link_buffer::LinkBuffer;
use log_buffer::LogBuffer;
use log_file::{frame_header, Layout, REC_HDR};
use mode::LogThreads;
use notifiers::WaitSlots;
use spin_gate::SpinGate;
use writer::WriterState;

/// Log sequence number: payload bytes since the log was created.
pub type Lsn = u64;

/// `innodb_log_writer_threads`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RedoMode {
    /// RT0: user threads write and flush the log themselves.
    Off,
    /// RT1: dedicated log writer, flusher and notifier threads.
    On,
}

impl FromStr for RedoMode {
    type Err = String;
    /// On/off as every option spells it ([`OnOff`]), or the mode's names
    /// `rt1`/`rt0`.
    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(v) = s.parse::<OnOff>() {
            return Ok(v.into());
        }
        match s.trim().to_ascii_lowercase().as_str() {
            "rt1" => Ok(RedoMode::On),
            "rt0" => Ok(RedoMode::Off),
            _ => Err(format!("'{s}' is not a redo mode; use on or off")),
        }
    }
}

impl From<OnOff> for RedoMode {
    fn from(v: OnOff) -> RedoMode {
        match v {
            OnOff::On => RedoMode::On,
            OnOff::Off => RedoMode::Off,
        }
    }
}

impl From<RedoMode> for OnOff {
    fn from(m: RedoMode) -> OnOff {
        match m {
            RedoMode::On => OnOff::On,
            RedoMode::Off => OnOff::Off,
        }
    }
}

impl RedoMode {
    /// Logical CPUs from which MySQL 8.4 starts dedicated log threads by
    /// default (`innodb_log_writer_threads`: ON from 32, OFF below).
    pub const DEDICATED_THREADS_MIN_CPUS: usize = 32;

    /// MySQL 8.4's default for a host with `cpus` logical CPUs: below
    /// [`DEDICATED_THREADS_MIN_CPUS`](Self::DEDICATED_THREADS_MIN_CPUS) the
    /// user threads write the log themselves (RT0), from it on dedicated
    /// threads do (RT1). [`RedoOptions::default`] keeps MySQL 8.0's ON for
    /// every host; `redoctor-engine serve` starts with this one.
    pub fn host_default(cpus: usize) -> RedoMode {
        if cpus >= Self::DEDICATED_THREADS_MIN_CPUS {
            RedoMode::On
        } else {
            RedoMode::Off
        }
    }
}

impl fmt::Display for RedoMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RedoMode::On => "on",
            RedoMode::Off => "off",
        })
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum RedoError {
    #[error(
        "{cause}; the engine stopped accepting commits (fail-stop): this commit and every later \
         one fail, and nothing is retried. {fix}, then restart: recovery replays what is durable",
        fix = .cause.fix()
    )]
    FailStop { cause: FileError },
    #[error(
        "a redo record of {size} bytes exceeds the largest allowed ({max} bytes, a quarter of \
         the log buffer); commit smaller transactions or raise the log buffer size"
    )]
    RecordTooLarge { size: usize, max: usize },
    #[error("invalid redo setting: {0}")]
    InvalidOption(String),
}

/// Redo log settings (MySQL names in the docs of each field).
#[derive(Clone, Debug)]
pub struct RedoOptions {
    /// `innodb_log_writer_threads`.
    pub mode: RedoMode,
    /// `innodb_flush_log_at_trx_commit`: 1 write+fdatasync at commit, 2 write
    /// at commit and fdatasync about once a second, 0 both about once a second.
    pub flush_at_commit: u8,
    /// `innodb_log_buffer_size` (power of two).
    pub log_buffer_size: usize,
    /// Size of the circular redo file (`innodb_redo_log_capacity`).
    pub log_file_size: u64,
    /// Slots in `recent_written` / `recent_closed` (power of two).
    pub link_slots: usize,
    /// Wait slots for write and flush waiters (`innodb_log_events`, power of two).
    pub wait_slots: usize,
    /// `innodb_log_spin_cpu_pct_hwm`: no spinning above this CPU use (% of usable CPUs).
    pub spin_cpu_pct_hwm: u32,
    /// `innodb_log_wait_for_flush_spin_hwm` (µs): no spinning when flushes take longer.
    pub wait_for_flush_spin_hwm_us: u64,
    /// `redoctor_spin_gate_window_ms` (not a MySQL setting): the spin
    /// gate's CPU measurement window.
    pub spin_gate_window_ms: u32,
    /// `redoctor_spin_min_success_pct` (not a MySQL setting): no spinning
    /// while fewer recent spins than this ended with the wait satisfied.
    pub spin_min_success_pct: u32,
    /// How long a waiter spins before sleeping, when spinning is allowed (µs).
    pub spin_delay_us: u64,
    /// `redoctor_log_idle_self_write` (not a MySQL setting; see
    /// [`self_write`]): with dedicated threads, a committer that finds the
    /// log idle writes and flushes its own record. Off by default.
    pub idle_self_write: bool,
}

impl Default for RedoOptions {
    fn default() -> Self {
        RedoOptions {
            mode: RedoMode::On,
            flush_at_commit: 1,
            log_buffer_size: 16 << 20,
            log_file_size: 128 << 20,
            link_slots: 1 << 20,
            wait_slots: 2048,
            spin_cpu_pct_hwm: 50,
            wait_for_flush_spin_hwm_us: 400,
            spin_gate_window_ms: spin_gate::WINDOW_MS,
            spin_min_success_pct: spin_gate::MIN_SUCCESS_PCT,
            spin_delay_us: 20,
            idle_self_write: false,
        }
    }
}

impl RedoOptions {
    pub fn validate(&self) -> Result<(), RedoError> {
        let bad = |m: String| Err(RedoError::InvalidOption(m));
        if !self.log_buffer_size.is_power_of_two() || self.log_buffer_size < 4096 {
            return bad(format!(
                "log buffer size {} must be a power of two >= 4096",
                self.log_buffer_size
            ));
        }
        let cap = Layout::for_file_size(self.log_file_size).capacity();
        if cap < 4 * self.log_buffer_size as u64 {
            return bad(format!(
                "log file size {} must hold at least 4x the log buffer ({} bytes)",
                self.log_file_size, self.log_buffer_size
            ));
        }
        if !self.link_slots.is_power_of_two() || self.link_slots < 1024 {
            return bad("link slots must be a power of two >= 1024".into());
        }
        if !self.wait_slots.is_power_of_two() {
            return bad("wait slots must be a power of two".into());
        }
        if self.flush_at_commit > 2 {
            return bad(format!(
                "innodb_flush_log_at_trx_commit={} (allowed: 0, 1, 2)",
                self.flush_at_commit
            ));
        }
        if self.spin_cpu_pct_hwm > 100 {
            return bad("innodb_log_spin_cpu_pct_hwm must be 0..=100".into());
        }
        if !(10..=1000).contains(&self.spin_gate_window_ms) {
            return bad("redoctor_spin_gate_window_ms must be 10..=1000".into());
        }
        if self.spin_min_success_pct > 100 {
            return bad("redoctor_spin_min_success_pct must be 0..=100".into());
        }
        Ok(())
    }

    /// The largest record body accepted.
    pub fn max_record(&self) -> usize {
        (self.log_buffer_size / 4).min(self.link_slots / 2) - REC_HDR
    }
}

/// Where the log resumes after recovery.
pub struct ResumePoint {
    pub file: Arc<dyn VfsFile>,
    /// The file's path, for messages.
    pub path: String,
    pub layout: Layout,
    /// The epoch this life writes blocks with (already durable in the header).
    pub epoch: u32,
    /// End of the recovered log.
    pub lsn: Lsn,
    /// Payload of `lsn`'s block before `lsn`.
    pub partial_block: Vec<u8>,
    pub checkpoint_lsn: Lsn,
}

/// The redo log.
pub struct RedoLog {
    layout: Layout,
    max_record: usize,
    file: Arc<dyn VfsFile>,
    /// `file`'s path, for messages.
    path: String,
    buffer: LogBuffer,
    /// Reserved up to (MySQL's `sn`).
    sn: CachePadded<AtomicU64>,
    recent_written: LinkBuffer,
    recent_closed: LinkBuffer,
    write_lsn: CachePadded<AtomicU64>,
    flushed_lsn: CachePadded<AtomicU64>,
    /// The highest lsn an explicit durable wait (`wait_flushed`: a
    /// checkpoint, DDL, a binlog FLUSH stage) asked the RT1 flusher for; it
    /// flushes at once for it even when flush_at_commit is 0 or 2.
    pub(crate) flush_request: AtomicU64,
    checkpoint_lsn: AtomicU64,
    /// Held while writing: by `log_writer`, or an RT0 leader. Users only
    /// try it and sleep on `write_waits` while `is_locked()`, so it stays a
    /// parking_lot mutex (unnamed): an exact `is_locked` needs its state,
    /// which `std` does not expose, and users never block on it.
    pub(crate) writer: Mutex<WriterState>,
    /// Held while fdatasyncing (like `writer`: unnamed, users only try it).
    flusher: Mutex<()>,
    /// Waiters for written lsns (`redo.write_waits`, MySQL's write_events).
    pub(crate) write_waits: WaitSlots,
    /// Waiters for durable lsns (`redo.flush_waits`, MySQL's flush_events).
    pub(crate) flush_waits: WaitSlots,
    pub(crate) writer_event: Named<Event>,
    pub(crate) flusher_event: Named<Event>,
    /// Signalled when the `log_flusher` thread leaves its mutex to sleep
    /// (the writer waits for it while an fdatasync is in flight).
    pub(crate) flusher_idle_event: Named<Event>,
    pub(crate) wr_notifier_event: Named<Event>,
    pub(crate) fl_notifier_event: Named<Event>,
    /// Signalled when a checkpoint frees log file space.
    space_event: Named<Event>,
    /// Signalled when the log wants a checkpoint.
    checkpoint_request: Named<Event>,
    mode: AtomicU8,
    /// `redoctor_log_idle_self_write` (see [`self_write`]).
    idle_self_write: AtomicBool,
    flush_at_commit: AtomicU8,
    threads: NamedMutex<Option<LogThreads>>,
    pub spin: SpinGate,
    spin_delay_us: u64,
    /// Why the engine stopped accepting commits (the first cause).
    failed: OnceLock<FileError>,
    last_background_flush: NamedMutex<Instant>,
    pub(crate) counters: Arc<Counters>,
}

/// How long a sleeping waiter waits before re-checking on its own; wakeups
/// normally come sooner. Bounds the cost of any missed hand-off.
const RECHECK: Duration = Duration::from_millis(2);

impl RedoLog {
    /// Starts the log at `resume` (see `crate::recovery`).
    pub fn start(
        opts: &RedoOptions,
        resume: ResumePoint,
        counters: Arc<Counters>,
    ) -> Result<Arc<RedoLog>, RedoError> {
        opts.validate()?;
        let lsn = resume.lsn;
        let log = Arc::new(RedoLog {
            layout: resume.layout,
            max_record: opts.max_record(),
            file: resume.file,
            path: resume.path,
            buffer: LogBuffer::new(opts.log_buffer_size),
            sn: CachePadded::new(AtomicU64::new(lsn)),
            recent_written: LinkBuffer::new(opts.link_slots, lsn),
            recent_closed: LinkBuffer::new(opts.link_slots, lsn),
            write_lsn: CachePadded::new(AtomicU64::new(lsn)),
            flushed_lsn: CachePadded::new(AtomicU64::new(lsn)),
            flush_request: AtomicU64::new(lsn),
            checkpoint_lsn: AtomicU64::new(resume.checkpoint_lsn),
            writer: Mutex::new(WriterState::new(resume.epoch, resume.partial_block)),
            flusher: Mutex::new(()),
            write_waits: WaitSlots::new("redo.write_waits", opts.wait_slots),
            flush_waits: WaitSlots::new("redo.flush_waits", opts.wait_slots),
            writer_event: Named::new("redo.writer_event", Event::new()),
            flusher_event: Named::new("redo.flusher_event", Event::new()),
            flusher_idle_event: Named::new("redo.flusher_idle_event", Event::new()),
            wr_notifier_event: Named::new("redo.wr_notifier_event", Event::new()),
            fl_notifier_event: Named::new("redo.fl_notifier_event", Event::new()),
            space_event: Named::new("redo.space_event", Event::new()),
            checkpoint_request: Named::new("redo.checkpoint_request", Event::new()),
            mode: AtomicU8::new(RedoMode::Off as u8),
            idle_self_write: AtomicBool::new(opts.idle_self_write),
            flush_at_commit: AtomicU8::new(opts.flush_at_commit),
            threads: NamedMutex::new("redo.threads", None),
            spin: SpinGate::new(
                opts.spin_cpu_pct_hwm,
                opts.wait_for_flush_spin_hwm_us,
                opts.spin_gate_window_ms,
                opts.spin_min_success_pct,
                counters.clone(),
            ),
            spin_delay_us: opts.spin_delay_us,
            failed: OnceLock::new(),
            last_background_flush: NamedMutex::new("redo.background_flush", Instant::now()),
            counters,
        });
        if opts.mode == RedoMode::On {
            *log.threads.lock() = Some(LogThreads::start(&log));
            log.mode.store(RedoMode::On as u8, Ordering::Release);
        }
        Ok(log)
    }

    // ---- positions -------------------------------------------------------

    pub fn current_lsn(&self) -> Lsn {
        self.sn.load(Ordering::Acquire)
    }
    pub fn write_lsn(&self) -> Lsn {
        self.write_lsn.load(Ordering::Acquire)
    }
    pub fn flushed_lsn(&self) -> Lsn {
        self.flushed_lsn.load(Ordering::Acquire)
    }
    pub fn checkpoint_lsn(&self) -> Lsn {
        self.checkpoint_lsn.load(Ordering::Acquire)
    }
    /// The lsn below which every record has been applied to the tables.
    pub fn closed_lsn(&self) -> Lsn {
        self.recent_closed.advance_tail()
    }
    pub fn layout(&self) -> Layout {
        self.layout
    }
    pub fn max_record(&self) -> usize {
        self.max_record
    }

    // ---- settings --------------------------------------------------------

    pub fn mode(&self) -> RedoMode {
        if self.mode.load(Ordering::Acquire) == RedoMode::On as u8 {
            RedoMode::On
        } else {
            RedoMode::Off
        }
    }
    pub fn flush_at_commit(&self) -> u8 {
        self.flush_at_commit.load(Ordering::Acquire)
    }
    pub fn set_flush_at_commit(&self, v: u8) -> Result<(), RedoError> {
        if v > 2 {
            return Err(RedoError::InvalidOption(format!(
                "innodb_flush_log_at_trx_commit={v} (allowed: 0, 1, 2)"
            )));
        }
        self.flush_at_commit.store(v, Ordering::Release);
        self.flusher_event.notify();
        Ok(())
    }

    // ---- failure ---------------------------------------------------------

    /// Why the engine stopped accepting commits, once an I/O error (of the
    /// log, or of a checkpoint: see `stop`) has stopped it.
    pub fn failure(&self) -> Option<&FileError> {
        self.failed.get()
    }

    pub(crate) fn check_failed(&self) -> Result<(), RedoError> {
        match self.failed.get() {
            Some(cause) => Err(RedoError::FailStop {
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Enters fail-stop after `op` ("write to", "fdatasync of") of the redo
    /// file failed: no further commit is acknowledged, every waiter is woken
    /// to see the error. An fdatasync error is never retried: after a failed
    /// fsync the kernel may have dropped the dirty pages, so a retry that
    /// "succeeds" would acknowledge data that is not on disk.
    pub(crate) fn fail(&self, op: &'static str, e: std::io::Error) -> RedoError {
        self.stop(FileError::new(op, self.path.clone(), e))
    }

    /// Enters fail-stop for `cause`, an I/O error on any file the engine
    /// needs to go on (the redo log, or a checkpoint image: without
    /// checkpoints the log fills and commits would hang instead of failing).
    /// The first cause is kept and reported to every later committer; the
    /// `redoctor_fail_stop` probe point fires once.
    pub(crate) fn stop(&self, cause: FileError) -> RedoError {
        let errno = cause.raw_os_error().unwrap_or(-1);
        if self.failed.set(cause.clone()).is_ok() {
            probe_points::redoctor_fail_stop(errno);
        }
        self.wake_everyone();
        RedoError::FailStop { cause }
    }

    pub(crate) fn wake_everyone(&self) {
        self.write_waits.notify_all();
        self.flush_waits.notify_all();
        for ev in [
            &self.writer_event,
            &self.flusher_event,
            &self.flusher_idle_event,
            &self.wr_notifier_event,
            &self.fl_notifier_event,
            &self.space_event,
        ] {
            ev.notify();
        }
    }

    // ---- appending -------------------------------------------------------

    /// Copies one record into the log buffer and links it; returns its lsn range.
    pub fn append(&self, body: &[u8]) -> Result<(Lsn, Lsn), RedoError> {
        self.append_inner(body, true, false).map(|(s, e, _)| (s, e))
    }

    /// Like [`append`](Self::append) but never waits for log file space: for
    /// the small commit marks of prepared transactions (log_bin=ON), which a
    /// checkpoint may be waiting on (it cannot move past a prepared
    /// transaction's record until the transaction commits). They are a few
    /// dozen bytes per in-flight transaction, well inside the two log
    /// buffers of margin [`free_limit`](Self::free_limit) keeps.
    pub fn append_without_space_wait(&self, body: &[u8]) -> Result<(Lsn, Lsn), RedoError> {
        self.append_inner(body, false, false)
            .map(|(s, e, _)| (s, e))
    }

    /// Appends `body`; `own`: the caller waits for this record right after
    /// ([`self_write`]), so an idle log need not wake the writer. Returns the
    /// range and whether the writer was left asleep for the caller to write.
    pub(crate) fn append_inner(
        &self,
        body: &[u8],
        space_wait: bool,
        own: bool,
    ) -> Result<(Lsn, Lsn, bool), RedoError> {
        self.check_failed()?;
        if body.len() > self.max_record {
            return Err(RedoError::RecordTooLarge {
                size: body.len(),
                max: self.max_record,
            });
        }
        let total = (REC_HDR + body.len()) as u64;
        if space_wait {
            self.free_check()?;
        }
        let start = self.sn.fetch_add(total, Ordering::AcqRel);
        let end = start + total;
        self.wait_buffer_space(end)?;
        // SAFETY: [start, end) was reserved by the fetch_add above and is
        // within write_lsn + buffer size, so no one else touches it.
        unsafe {
            self.buffer.copy_in(start, &frame_header(body));
            self.buffer.copy_in(start + REC_HDR as u64, body);
        }
        while !self.recent_written.has_space(start) {
            self.recent_written.advance_tail();
            std::thread::yield_now();
        }
        self.recent_written.add_link(start, end);
        let mut left_to_caller = false;
        if self.mode() == RedoMode::On {
            left_to_caller = own && self.idle_for(start);
            if !left_to_caller {
                self.writer_event.notify();
            }
        }
        self.counters.redo_bytes.fetch_add(total, Ordering::Relaxed);
        self.counters.redo_records.fetch_add(1, Ordering::Relaxed);
        Ok((start, end, left_to_caller))
    }

    /// Marks `[start, end)` as applied to the tables (`recent_closed`).
    pub fn mark_closed(&self, start: Lsn, end: Lsn) {
        while !self.recent_closed.has_space(start) {
            self.recent_closed.advance_tail();
            std::thread::yield_now();
        }
        self.recent_closed.add_link(start, end);
    }

    /// Reservable lsns before the log counts as full. The margin of two log
    /// buffers absorbs threads that passed the check together and the
    /// commit marks appended without a space wait
    /// ([`append_without_space_wait`](Self::append_without_space_wait)).
    pub(crate) fn free_limit(&self) -> u64 {
        self.layout.capacity() - 2 * self.buffer.size()
    }

    /// Waits (before reserving) while the log file has no room: a full log
    /// makes committers wait for a checkpoint, it is never overwritten.
    fn free_check(&self) -> Result<(), RedoError> {
        let full = || self.current_lsn() - self.checkpoint_lsn() > self.free_limit();
        if !full() {
            return Ok(());
        }
        self.counters
            .redo_log_full_waits
            .fetch_add(1, Ordering::Relaxed);
        while full() {
            self.check_failed()?;
            self.checkpoint_request.notify();
            self.space_event.wait(Duration::from_millis(10), || {
                !full() || self.failed.get().is_some()
            });
        }
        Ok(())
    }

    /// Waits until the ring has room for `[.., end)`.
    fn wait_buffer_space(&self, end: Lsn) -> Result<(), RedoError> {
        let size = self.buffer.size();
        let fits = || end <= self.write_lsn() + size;
        if fits() {
            return Ok(());
        }
        self.counters
            .redo_buffer_waits
            .fetch_add(1, Ordering::Relaxed);
        while !fits() {
            self.check_failed()?;
            if self.mode() == RedoMode::Off {
                if let Some(mut st) = self.writer.try_lock() {
                    if let Some((from, to)) = self.write_ready(&mut st, true)? {
                        drop(st);
                        self.after_user_write(from, to);
                    }
                    continue;
                }
            } else {
                self.writer_event.notify();
            }
            self.write_waits.wait(end - size, RECHECK, || {
                fits()
                    || (self.mode() == RedoMode::Off && !self.writer.is_locked())
                    || self.failed.get().is_some()
            });
        }
        Ok(())
    }

    // ---- waiting for commits --------------------------------------------

    /// Returns once the record ending at `end` is as durable as
    /// `innodb_flush_log_at_trx_commit` requires.
    pub fn wait_for_commit(&self, end: Lsn) -> Result<(), RedoError> {
        match self.flush_at_commit() {
            1 => self.wait_flushed(end),
            2 => self.wait_written(end),
            _ => self.check_failed(),
        }
    }

    /// Returns once everything below `lsn` is written to the OS.
    pub fn wait_written(&self, lsn: Lsn) -> Result<(), RedoError> {
        if self.write_lsn() >= lsn {
            return Ok(());
        }
        self.counters
            .redo_write_waits
            .fetch_add(1, Ordering::Relaxed);
        let mut spun = false;
        loop {
            self.check_failed()?;
            if self.write_lsn() >= lsn {
                return Ok(());
            }
            match self.mode() {
                RedoMode::On => {
                    self.wait_rt1(&self.write_waits, lsn, &mut spun, || self.write_lsn())
                }
                RedoMode::Off => self.rt0_write_step(lsn)?,
            }
        }
    }

    /// Returns once everything below `lsn` is durable.
    pub fn wait_flushed(&self, lsn: Lsn) -> Result<(), RedoError> {
        if self.flushed_lsn() >= lsn {
            return Ok(());
        }
        self.counters
            .redo_flush_waits
            .fetch_add(1, Ordering::Relaxed);
        let mut spun = false;
        let mut deferred = false;
        loop {
            self.check_failed()?;
            if self.flushed_lsn() >= lsn {
                return Ok(());
            }
            match self.mode() {
                RedoMode::On => {
                    self.request_flush(lsn);
                    self.wait_rt1(&self.flush_waits, lsn, &mut spun, || self.flushed_lsn())
                }
                RedoMode::Off => {
                    if self.write_lsn() >= lsn {
                        self.rt0_flush_step(lsn)?;
                    } else if self.flusher.is_locked() {
                        // An fdatasync is in flight and cannot cover this
                        // record: the next flush leader writes it together
                        // with everything else ready, in one write.
                        if !deferred {
                            deferred = true;
                            self.counters
                                .redo_writes_deferred
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        self.rt0_sleep_behind_flush(lsn);
                    } else {
                        self.rt0_write_step(lsn)?;
                    }
                }
            }
        }
    }

    /// RT1: asks the flusher for `lsn`, waking it only when the request
    /// grows.
    fn request_flush(&self, lsn: Lsn) {
        if self.flush_request.fetch_max(lsn, Ordering::AcqRel) < lsn {
            self.flusher_event.notify();
        }
    }

    /// RT1: spin briefly when the spin gate allows, then sleep on the slot.
    fn wait_rt1(&self, slots: &WaitSlots, lsn: Lsn, spun: &mut bool, pos: impl Fn() -> Lsn) {
        if !*spun {
            *spun = true;
            let budget = self.spin_delay_us;
            if budget > 0 && self.spin.allows_spin() {
                let t = Instant::now();
                while t.elapsed().as_micros() < budget as u128 {
                    if pos() >= lsn {
                        self.spin.record_spin(true);
                        return;
                    }
                    std::hint::spin_loop();
                }
                self.spin.record_spin(false);
            }
        }
        slots.wait(lsn, Duration::from_millis(10), || {
            pos() >= lsn || self.mode() != RedoMode::On || self.failed.get().is_some()
        });
    }

    /// RT0: lead the write if nobody is writing, otherwise wait for the leader.
    fn rt0_write_step(&self, lsn: Lsn) -> Result<(), RedoError> {
        if let Some(mut st) = self.writer.try_lock() {
            if let Some((from, to)) = self.write_ready(&mut st, true)? {
                drop(st);
                self.after_user_write(from, to);
            }
            return Ok(());
        }
        self.write_waits.wait(lsn, RECHECK, || {
            self.write_lsn() >= lsn
                || !self.writer.is_locked()
                || self.mode() != RedoMode::Off
                || self.failed.get().is_some()
        });
        Ok(())
    }

    /// RT0: lead the flush if nobody is flushing (re-checking the flushed
    /// lsn under the mutex), otherwise wait for the leader.
    fn rt0_flush_step(&self, lsn: Lsn) -> Result<(), RedoError> {
        if let Some(g) = self.flusher.try_lock() {
            if self.flushed_lsn() < lsn {
                let done = self.flush_once(true)?;
                drop(g);
                if let Some((old, new)) = done {
                    self.after_user_flush(old, new);
                }
            }
            return Ok(());
        }
        self.rt0_sleep_behind_flush(lsn);
        Ok(())
    }

    /// RT0: sleeps until `lsn` is durable or the flush leader is done (it
    /// wakes the owner of the first record it did not cover, who leads next).
    fn rt0_sleep_behind_flush(&self, lsn: Lsn) {
        self.flush_waits.wait(lsn, RECHECK, || {
            self.flushed_lsn() >= lsn
                || !self.flusher.is_locked()
                || self.mode() != RedoMode::Off
                || self.failed.get().is_some()
        });
    }

    /// After an RT0 leader's write: wake the waiters it satisfied, and the
    /// owner of the next record (it becomes the next leader) so nobody sleeps
    /// on a leader that is gone.
    fn after_user_write(&self, from: Lsn, to: Lsn) {
        self.counters
            .redo_write_leads
            .fetch_add(1, Ordering::Relaxed);
        self.write_waits.notify_range(from, to);
        if let Some(next_end) = self.recent_written.peek(to) {
            self.write_waits.notify_lsn(next_end);
        }
        self.flusher_event.notify();
    }

    fn after_user_flush(&self, old: Lsn, new: Lsn) {
        self.counters
            .redo_flush_leads
            .fetch_add(1, Ordering::Relaxed);
        let woke = self.flush_waits.notify_range(old, new);
        probe_points::redoctor_flush_notified(old, new, woke as u64);
        if let Some(next_end) = self.recent_written.peek(new) {
            self.flush_waits.notify_lsn(next_end);
        }
    }

    /// Makes everything appended so far durable (any mode, any flush setting).
    pub fn flush_all(&self) -> Result<Lsn, RedoError> {
        let lsn = self.current_lsn();
        // Wait for in-flight copies to link, then write and flush.
        self.wait_flushed(lsn)?;
        Ok(lsn)
    }

    /// Once a second, with innodb_flush_log_at_trx_commit 0 or 2 and no
    /// dedicated threads, write and fdatasync the log (MySQL's master thread
    /// does this). Called by the engine's background thread.
    pub fn background_tick(&self) -> Result<(), RedoError> {
        if self.mode() == RedoMode::On || self.flush_at_commit() == 1 {
            return Ok(());
        }
        let mut last = self.last_background_flush.lock();
        if last.elapsed() < Duration::from_secs(1) {
            return Ok(());
        }
        *last = Instant::now();
        drop(last);
        let target = self.recent_written.advance_tail();
        if self.flushed_lsn() < target {
            self.wait_flushed(target)?;
        }
        Ok(())
    }

    // ---- checkpoints -----------------------------------------------------

    /// Whether the log is fuller than `pct` percent of its free limit.
    pub fn checkpoint_wanted(&self, pct: u32) -> bool {
        let used = self.current_lsn() - self.checkpoint_lsn();
        used * 100 >= self.free_limit() * pct as u64
    }

    /// Sleeps until the log asks for a checkpoint or `timeout` passes.
    pub fn wait_checkpoint_request(&self, timeout: Duration, pct: u32) -> bool {
        self.checkpoint_request
            .wait(timeout, || self.checkpoint_wanted(pct))
    }

    /// Records a durable checkpoint at `lsn`: log space below it may be reused.
    pub fn set_checkpoint_lsn(&self, lsn: Lsn) {
        self.checkpoint_lsn.fetch_max(lsn, Ordering::AcqRel);
        self.space_event.notify();
        self.writer_event.notify();
        self.write_waits.notify_all();
    }
}
