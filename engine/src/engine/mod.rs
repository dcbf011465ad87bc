//! The engine: ties tables, lock-sys, redo log, checkpoints and recovery together.
//!
//! Commit path (InnoDB's order): serialise the transaction's changes into one
//! redo record, copy it into the log buffer (one `fetch_add`, no lock), make
//! the changes visible and release row locks, mark the record applied
//! (`recent_closed`), then wait for the redo to be as durable as
//! `innodb_flush_log_at_trx_commit` says. Conflicting transactions are
//! ordered by their row locks, so their redo order equals their apply order.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::admission::{ConcurrencyGate, GateSession};
use crate::base_writer::BaseWriter;
use crate::binlog::file::BinlogPos;
use crate::binlog::group_commit::{BinlogSettings, GroupCommit};
use crate::binlog::published::{self, DumpEvent};
use crate::checkpoint;
use crate::counters::Counters;
use crate::data::catalog::Catalog;
use crate::data::lock_sys::LockSys;
use crate::data::record::{self, RedoRecord};
pub use crate::data::table::TableId;
use crate::data::table::{Row, Shape};
use crate::data::trx::{EngineHooks, Trx, TrxError};
use crate::debug_hooks::DebugHooks;
use crate::device_model::{DeviceModel, DeviceSpec};
use crate::error::EngineError;
use crate::page_store::store::PageStore;
use crate::paged_tables;
use crate::probe_points;
use crate::recovery::{self, RecoveryReport};
use crate::redo::{Lsn, RedoLog, RedoMode, RedoOptions};
use crate::replica_settings::ReplicaSettings;
use crate::settings::{self, Registry, Setting, SettingChange, SettingsError, Value, Variable};
use crate::throttle::{Admitted, Throttle};
use crate::trx_sys::{Registered, TrxSys};
use crate::vfs::{OsVfs, Vfs};

mod status;
mod variables;

pub use status::StatusSnapshot;
pub use variables::SETTINGS;

/// Looks one of the engine's settings up by its MySQL name
/// (case-insensitive).
pub fn find_setting(name: &str) -> Result<&'static Setting<Engine, EngineOptions>, SettingsError> {
    settings::find(SETTINGS, name)
}

#[derive(Clone)]
pub struct EngineOptions {
    /// Data directory (used when `vfs` is None).
    pub datadir: PathBuf,
    /// Storage backend; None = the real file system at `datadir`.
    pub vfs: Option<Arc<dyn Vfs>>,
    pub redo: RedoOptions,
    /// `innodb_lock_wait_timeout`.
    pub lock_wait_timeout: Duration,
    /// Take a checkpoint when the redo log is this full (percent).
    pub checkpoint_fill_pct: u32,
    /// Lock-sys shards (MySQL uses 512).
    pub lock_shards: usize,
    /// Startup `SET GLOBAL`s by MySQL name (see `crate::settings`), all
    /// validated before anything is created; later entries win.
    pub settings: Vec<(String, String)>,
    /// `log_bin` (startup only): two-phase commit with a binary log and
    /// ordered group commit (see `crate::binlog`).
    pub log_bin: bool,
    /// `sync_binlog`: fdatasync the binlog every N commit groups (0 = never).
    pub sync_binlog: u32,
    /// `binlog_group_commit_sync_delay` in µs (0..=1000000).
    pub binlog_group_commit_sync_delay_us: u64,
    /// `max_binlog_size`: rotate to a new binlog file past this many bytes.
    pub max_binlog_size: u64,
    /// `innodb_buffer_pool_size` and the page store's settings (startup
    /// only): with a pool, tables keep their committed rows on pages.
    pub pages: paged_tables::PageSettings,
    /// `log_replica_updates` (startup only): a replica writes the
    /// transactions it applies to its own binlog.
    pub log_replica_updates: bool,
    /// `redoctor_device_sync_latency_us` and `redoctor_device_sync_serial`
    /// (startup only): every sync of the data and doublewrite directories
    /// waits this much more, any number at once or one at a time
    /// (`crate::device_model`; zero latency: off).
    pub device_sync_latency: Duration,
    pub device_sync_serial: bool,
}

impl EngineOptions {
    pub fn new(datadir: impl Into<PathBuf>) -> Self {
        EngineOptions {
            datadir: datadir.into(),
            vfs: None,
            redo: RedoOptions::default(),
            lock_wait_timeout: Duration::from_secs(50),
            checkpoint_fill_pct: 50,
            lock_shards: 512,
            settings: Vec::new(),
            log_bin: false,
            sync_binlog: 1,
            binlog_group_commit_sync_delay_us: 0,
            max_binlog_size: 1 << 30,
            pages: paged_tables::PageSettings::default(),
            log_replica_updates: true,
            device_sync_latency: Duration::ZERO,
            device_sync_serial: false,
        }
    }
}

/// The background threads' stop flag and handles.
type Background = (Arc<AtomicBool>, Vec<JoinHandle<()>>);

/// The chain of checkpoint files, and the base being written in the
/// background (`crate::base_writer`).
struct Checkpoints {
    chain: checkpoint::Chain,
    writer: Option<BaseWriter>,
}

/// What one checkpoint writes.
enum CheckpointKind {
    /// A new base, written inline.
    Base,
    /// The next delta; with `then_base`, a base is then written in the
    /// background from this snapshot, taken after the delta took its changes.
    Delta {
        then_base: Option<crate::data::snapshot::Snapshot>,
    },
    /// The base written in the background, with every change since its
    /// snapshot as its first delta.
    Publish(checkpoint::PendingBase),
}

pub struct Engine {
    vfs: Arc<dyn Vfs>,
    redo: Arc<RedoLog>,
    catalog: Arc<Catalog>,
    lock_sys: Arc<LockSys>,
    counters: Arc<Counters>,
    trx_sys: Arc<TrxSys>,
    gate: Arc<ConcurrencyGate>,
    throttle: Arc<Throttle>,
    settings: Registry,
    report: RecoveryReport,
    /// Serialises checkpoints; holds the chain of checkpoint files and the
    /// base being written in the background, if any.
    checkpoint_lock: Mutex<Checkpoints>,
    ddl_lock: Mutex<()>,
    /// The background threads (`log_checkpoint`, `counters_tick`) and
    /// their stop flag.
    background: Mutex<Option<Background>>,
    checkpoint_fill_pct: u32,
    shut: AtomicBool,
    /// The binlog and ordered group commit, when log_bin=ON.
    binlog: Option<GroupCommit>,
    binlog_settings: Arc<BinlogSettings>,
    /// Commit-path regressions on purpose, for the CI gate's tests.
    debug: DebugHooks,
    /// Where tables keep their committed rows when they are on pages.
    store: Option<Arc<PageStore>>,
    page_settings: paged_tables::PageSettings,
    /// `redoctor_device_sync_latency_us`, `redoctor_device_sync_serial`.
    device: DeviceSpec,
    /// What the doublewrite buffer restored at startup (tables on pages).
    page_recovery: Option<crate::page_store::doublewrite::Recovered>,
    /// The replica settings (live; see `crate::replica`).
    replica_settings: Arc<ReplicaSettings>,
    max_binlog_size: u64,
}

thread_local! {
    static REDO_BODY: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(1024));
}

impl Engine {
    /// Opens the data directory (creating it when new), recovers, and starts
    /// the log threads and the background checkpoint thread.
    pub fn open(mut opts: EngineOptions) -> Result<Arc<Engine>, EngineError> {
        let startup =
            settings::Startup::prepare(SETTINGS, &std::mem::take(&mut opts.settings), &mut opts)?;
        opts.redo.validate()?;
        let binlog_settings = Arc::new(BinlogSettings::new(
            opts.sync_binlog,
            opts.binlog_group_commit_sync_delay_us,
        )?);
        crate::binlog::validate_max_binlog_size(opts.max_binlog_size)?;
        let vfs: Arc<dyn Vfs> = match &opts.vfs {
            Some(v) => v.clone(),
            None => Arc::new(OsVfs::new(&opts.datadir).map_err(|source| {
                EngineError::Recovery(recovery::RecoveryError::Io {
                    dir: opts.datadir.display().to_string(),
                    what: "creating the data directory",
                    source,
                })
            })?),
        };
        let device = DeviceSpec::new(opts.device_sync_latency, opts.device_sync_serial);
        let vfs = DeviceModel::wrap(vfs, &device);
        let (store, page_recovery) = paged_tables::open(&vfs, &opts.pages, &device)?.unzip();
        let rec = recovery::recover_with(vfs.as_ref(), &opts.redo, store.as_ref())?;
        // Tablespaces of tables dropped (durably) whose files remain.
        rec.catalog
            .remove_dropped_spaces()
            .map_err(|e| EngineError::Pages(crate::paged_tables::PagesError::Store(e)))?;
        let counters = Arc::new(Counters::default());
        let redo = RedoLog::start(&opts.redo, rec.resume, counters.clone())?;
        if let Some(s) = &store {
            // The write-ahead rule: a page is written once its redo is durable.
            let r = redo.clone();
            s.set_redo_hook(Box::new(move |lsn| {
                r.wait_flushed(lsn)
                    .map_err(|e| std::io::Error::other(e.to_string()))
            }));
        }
        let binlog = if opts.log_bin {
            Some(GroupCommit::open(
                vfs.clone(),
                rec.binlog.as_ref(),
                opts.max_binlog_size,
                binlog_settings.clone(),
                redo.clone(),
                counters.clone(),
            )?)
        } else {
            None
        };
        let engine = Arc::new(Engine {
            vfs,
            redo,
            catalog: Arc::new(rec.catalog),
            lock_sys: Arc::new(LockSys::new(opts.lock_shards, opts.lock_wait_timeout)),
            counters,
            trx_sys: Arc::new(TrxSys::new(rec.report.max_trx_id + 1)),
            gate: Arc::new(ConcurrencyGate::default()),
            throttle: Arc::new(Throttle::new(0, Duration::from_secs(50))),
            settings: Registry::default(),
            report: rec.report,
            checkpoint_lock: Mutex::new(Checkpoints {
                chain: rec.chain,
                writer: None,
            }),
            ddl_lock: Mutex::new(()),
            background: Mutex::new(None),
            checkpoint_fill_pct: opts.checkpoint_fill_pct,
            shut: AtomicBool::new(false),
            binlog,
            binlog_settings,
            debug: DebugHooks::default(),
            store,
            page_settings: opts.pages,
            device,
            page_recovery,
            replica_settings: Arc::new(ReplicaSettings::new(opts.log_replica_updates)),
            max_binlog_size: opts.max_binlog_size,
        });
        if let Err(e) = startup.apply_live(&engine) {
            let _ = engine.shutdown();
            return Err(e.into());
        }
        engine.start_background();
        // A prepared transaction decided without its commit mark (committed
        // because its binlog event is durable, or rolled back) is undecided
        // in the redo log still: a later transaction of this life may change
        // its rows, and the next recovery would replay the decision at the
        // end of the log, after them. A checkpoint now puts the decision in
        // the image and the prepare record behind the replay start.
        // Tables on pages: the checkpoint is fuzzy (never above the oldest
        // dirty page), and the decided rows are dirty as of their prepare
        // record, so it would stay below it; every page is written first.
        // (The soak's torn-page trials found it: a re-recovery replayed
        // the decision after this life's changes to the same rows.)
        let xa = &engine.report.xa;
        if xa.committed_without_mark > 0 || xa.rolled_back > 0 {
            if let Some(store) = &engine.store {
                store
                    .pool()
                    .flush_all()
                    .map_err(|e| EngineError::Pages(crate::paged_tables::PagesError::Store(e)))?;
            }
            engine.checkpoint()?;
        }
        Ok(engine)
    }

    /// The background threads. `log_checkpoint` checkpoints when the log
    /// fills, and (RT0 with flush_at_commit 0/2) writes and flushes the log
    /// once a second. `counters_tick` publishes, every 100 ms, the
    /// cumulative commit and redo-byte counters through the
    /// `redoctor_counters_tick` probe point, the process's idle-poll time
    /// through `redoctor_idle_poll`, its page syncs' times through
    /// `redoctor_page_syncs`, and the table of named locks through
    /// `redoctor_named_locks`. They are two threads so that a checkpoint
    /// (seconds, under a heavy insert load) does not stop the counters: a
    /// window of the probes would read no commits, the next twice as many.
    fn start_background(self: &Arc<Self>) {
        /// The checkpointer's wait while the page cleaners flush toward the
        /// LSN it asked for.
        const CLEANER_WAIT: Duration = Duration::from_millis(10);
        let stop = Arc::new(AtomicBool::new(false));
        let weak: Weak<Engine> = Arc::downgrade(self);
        let redo = self.redo.clone();
        let pct = self.checkpoint_fill_pct;
        let s = stop.clone();
        let checkpoints = std::thread::Builder::new()
            .name("log_checkpoint".into())
            .spawn(move || {
                while !s.load(Ordering::Acquire) {
                    let wanted = redo.wait_checkpoint_request(Duration::from_millis(100), pct);
                    if s.load(Ordering::Acquire) {
                        break;
                    }
                    let Some(engine) = weak.upgrade() else { break };
                    if engine.fail_stop().is_some() {
                        break;
                    }
                    // A base written in the background is published as
                    // soon as it is durable, so recovery reads it rather than
                    // the old base and every delta since.
                    if engine.base_written() || (wanted && engine.fuzzy_checkpoint_due(pct)) {
                        if let Err(e) = engine.checkpoint_as(true) {
                            // Never a panic over a log line (stderr may be a closed pipe).
                            let _ = writeln!(std::io::stderr(), "redoctor-engine: background {e}");
                        }
                    } else if wanted {
                        // The page cleaners were asked to flush; a checkpoint
                        // per page they write would cost more than it frees.
                        // The once-a-second log flush below still runs.
                        drop(engine);
                        std::thread::park_timeout(CLEANER_WAIT);
                    }
                    if let Err(e) = redo.background_tick() {
                        let _ = writeln!(
                            std::io::stderr(),
                            "redoctor-engine: background log flush failed: {e}"
                        );
                    }
                }
            })
            .expect("spawning log_checkpoint");
        let weak: Weak<Engine> = Arc::downgrade(self);
        let s = stop.clone();
        let ticks = std::thread::Builder::new()
            .name("counters_tick".into())
            .spawn(move || {
                while !s.load(Ordering::Acquire) {
                    {
                        let Some(engine) = weak.upgrade() else { break };
                        if engine.fail_stop().is_some() {
                            break;
                        }
                        crate::probe_points::redoctor_counters_tick(
                            engine.counters.commits.load(Ordering::Relaxed),
                            engine.counters.redo_bytes.load(Ordering::Relaxed),
                        );
                    }
                    crate::probe_points::redoctor_idle_poll(crate::idle_poll::total_ns());
                    let p = crate::sync_timing::totals();
                    crate::probe_points::redoctor_page_syncs(
                        p.doublewrite_syncs,
                        p.doublewrite_ns,
                        p.data_syncs,
                        p.data_ns,
                        p.overlapped_syncs,
                        p.overlapped_ns,
                    );
                    crate::named_locks::publish();
                    // Woken early by the stop (`stop_background`).
                    std::thread::park_timeout(Duration::from_millis(100));
                }
            })
            .expect("spawning counters_tick");
        *self.background.lock() = Some((stop, vec![checkpoints, ticks]));
    }

    /// Stops the background threads; joins those that are not the caller
    /// (the last reference to the engine may be dropped on one of them).
    pub(crate) fn stop_background(&self) {
        if let Some((stop, threads)) = self.background.lock().take() {
            stop.store(true, Ordering::Release);
            for h in threads {
                h.thread().unpark();
                if h.thread().id() != std::thread::current().id() {
                    let _ = h.join();
                }
            }
        }
    }

    /// The named locks of this process (every engine in it, and the
    /// threads' own wait condvars), sorted by start: what the next
    /// `redoctor_named_locks` table holds (see `crate::named_locks`).
    pub fn named_locks(&self) -> Vec<crate::named_locks::NamedLockEntry> {
        crate::named_locks::named_locks()
    }

    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.report
    }

    pub fn redo(&self) -> &Arc<RedoLog> {
        &self.redo
    }

    /// Why the engine stopped accepting commits (fail-stop), once an I/O
    /// error of the redo log, the binlog or a checkpoint stopped it.
    pub fn fail_stop(&self) -> Option<&crate::file_error::FileError> {
        self.redo
            .failure()
            .or_else(|| self.binlog.as_ref().and_then(|b| b.failure()))
    }

    /// The fail-stop error, if the engine is in fail-stop.
    fn check_fail_stop(&self) -> Result<(), EngineError> {
        self.redo.check_failed()?;
        if let Some(b) = &self.binlog {
            b.check_failed()?;
        }
        Ok(())
    }

    pub(crate) fn check_open(&self) -> Result<(), EngineError> {
        if self.shut.load(Ordering::Acquire) {
            return Err(EngineError::ShutDown);
        }
        Ok(())
    }

    /// Appends one record, applies it with `apply`, and waits per the flush setting.
    fn log_and_apply(
        &self,
        body: &[u8],
        apply: impl FnOnce(),
        wait: bool,
    ) -> Result<Lsn, EngineError> {
        let (start, end) = self.redo.append(body)?;
        apply();
        self.redo.mark_closed(start, end);
        if wait {
            self.redo.wait_for_commit(end)?;
        }
        Ok(end)
    }

    /// CREATE TABLE (sbtest shape), logged and durable on return.
    pub fn create_table(&self, name: &str) -> Result<TableId, EngineError> {
        self.create_shaped_table(name, Shape::Sbtest)
    }

    /// CREATE TABLE with the columns of `shape`, logged and durable on return.
    pub fn create_shaped_table(&self, name: &str, shape: Shape) -> Result<TableId, EngineError> {
        self.check_open()?;
        let _g = self.ddl_lock.lock();
        let id = self.catalog.create_shaped_table(name, shape)?;
        let mut body = Vec::new();
        record::encode(
            &RedoRecord::CreateTable {
                table: id,
                name: name.to_string(),
                shape,
            },
            &mut body,
        );
        let end = self.log_and_apply(&body, || {}, false)?;
        self.redo.wait_flushed(end)?;
        Ok(id)
    }

    /// DROP TABLE: logged and durable on return. The id is never reused
    /// (see `Catalog::drop_table`), so transactions that still commit
    /// changes to the dropped table replay harmlessly into its tombstone.
    pub fn drop_table(&self, name: &str) -> Result<TableId, EngineError> {
        self.check_open()?;
        let _g = self.ddl_lock.lock();
        let (id, dropped) = self.catalog.drop_table_taking(name)?;
        let mut body = Vec::new();
        record::encode(&RedoRecord::DropTable { table: id }, &mut body);
        let end = self.log_and_apply(&body, || {}, false)?;
        self.redo.wait_flushed(end)?;
        // Durable: its tablespaces can go (when no transaction uses it).
        self.catalog.release_dropped(dropped);
        Ok(id)
    }

    /// The highest committed row id of table `id` (None if empty or unknown);
    /// the SQL front end starts AUTO_INCREMENT above it.
    pub fn max_row_id(&self, id: TableId) -> Option<i64> {
        self.catalog.table(id)?.max_committed_id()
    }

    pub fn table_id(&self, name: &str) -> Option<TableId> {
        self.catalog.table_id(name)
    }

    /// The id and the columns of table `name`, in one lookup.
    pub fn table_id_shape(&self, name: &str) -> Option<(TableId, Shape)> {
        self.catalog.table_id_shape(name)
    }

    pub fn table_names(&self) -> Vec<String> {
        self.catalog.table_names()
    }

    /// Creates `sbtest1..=tables` with `rows` rows each, filled like sysbench's
    /// prepare (k uniform in 1..=rows, c and pad digit groups), for any table
    /// that is missing or empty, then checkpoints so the load is durable.
    /// Run it before starting load: the bulk load bypasses the redo log.
    pub fn prepare_sbtest(&self, tables: u32, rows: u64) -> Result<(), EngineError> {
        self.check_open()?;
        let mut loaded = false;
        for t in 1..=tables {
            let name = format!("sbtest{t}");
            let id = match self.table_id(&name) {
                Some(id) => id,
                None => self.create_table(&name)?,
            };
            let table = self.catalog.table(id).expect("table just created");
            if table.len_committed() > 0 {
                continue;
            }
            let mut rng = SmallRng::seed_from_u64(t as u64);
            let gen = (1..=rows as i64).map(|id| {
                (
                    id,
                    Row {
                        k: rng.gen_range(1..=rows.max(1) as i32),
                        c: sysbench_chars(&mut rng, 10),
                        pad: sysbench_chars(&mut rng, 5),
                    },
                )
            });
            self.catalog
                .bulk_insert_at(id, gen, self.redo.current_lsn())?;
            loaded = true;
        }
        if loaded {
            // The load bypassed the redo log: on pages, it is durable once
            // the pages are written (then the checkpoint moves past it).
            self.flush_pages()?;
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Starts a transaction, first waiting in the transaction throttle
    /// (`innodb_max_active_transactions`); fails with
    /// [`TrxError::Throttled`] if it is not admitted within
    /// `innodb_max_active_transactions_wait_timeout`.
    pub fn try_begin(&self) -> Result<Trx, EngineError> {
        let admitted = Admitted::wait(&self.throttle).map_err(TrxError::from)?;
        let id = self.trx_sys.assign_id();
        let hooks = EngineHooks {
            gate: GateSession::new(self.gate.clone()),
            registered: Registered::new(&self.trx_sys, id),
            admitted,
        };
        Ok(Trx::with_hooks(
            id,
            self.catalog.clone(),
            self.lock_sys.clone(),
            hooks,
        ))
    }

    /// Like [`try_begin`](Self::try_begin), but never fails: a transaction
    /// the throttle refused fails its first statement (and its commit) with
    /// [`TrxError::Throttled`], as InnoDB reports errors of a transaction's
    /// start at its first statement. Roll it back and retry.
    pub fn begin(&self) -> Trx {
        match self.try_begin() {
            Ok(trx) => trx,
            Err(EngineError::Trx(TrxError::Throttled(why))) => Trx::refused(
                self.trx_sys.assign_id(),
                self.catalog.clone(),
                self.lock_sys.clone(),
                why,
            ),
            Err(e) => unreachable!("try_begin fails only in the throttle: {e}"),
        }
    }

    /// Commits: returns the commit's end lsn once it is as durable as
    /// innodb_flush_log_at_trx_commit says. A read-only transaction writes no redo.
    pub fn commit(&self, trx: Trx) -> Result<Lsn, EngineError> {
        self.commit_ordered(trx, true, &|| {})
    }

    /// Commits through the redo log only, with log_bin=ON too: a replica's
    /// own bookkeeping, and its applied transactions with
    /// `log_replica_updates=OFF` (not written to its binlog).
    pub fn commit_unlogged(&self, trx: Trx) -> Result<Lsn, EngineError> {
        self.commit_ordered(trx, false, &|| {})
    }

    /// Commits as [`Engine::commit`] (`binlogged`, when log_bin=ON) or
    /// [`Engine::commit_unlogged`], calling `entered` once the commit's
    /// place among commits is fixed: in the binlog's FLUSH queue, or (redo
    /// only) once its changes are visible, before the wait for durability;
    /// or at once when it fails first. A replica's workers chain their
    /// commits through it (`replica_preserve_commit_order`) and still share
    /// commit groups, as MySQL's commit-order manager lets them.
    pub fn commit_ordered(
        &self,
        mut trx: Trx,
        binlogged: bool,
        entered: &dyn Fn(),
    ) -> Result<Lsn, EngineError> {
        if let Err(e) = self.check_open() {
            entered();
            self.rollback(trx);
            return Err(e);
        }
        if trx.is_rolled_back() {
            // A lock error (or the throttle) already ended it: nothing to commit.
            entered();
            let e = trx.end_error();
            self.rollback(trx);
            return Err(e.into());
        }
        // The commit is a statement inside the concurrency gate; applying
        // it ends the transaction and leaves the gate, so the wait for the
        // redo to become durable (below) holds no slot.
        trx.enter_commit();
        if trx.is_read_only() {
            trx.apply_commit(self.redo.current_lsn());
            entered();
            self.counters.commits.fetch_add(1, Ordering::Relaxed);
            return Ok(self.redo.current_lsn());
        }
        if let (Some(binlog), true) = (&self.binlog, binlogged) {
            let r = binlog.commit_enrolled(trx, entered);
            self.debug.after_commit();
            return Ok(r?);
        }
        self.commit_redo(trx, entered)
    }

    fn commit_redo(&self, trx: Trx, entered: &dyn Fn()) -> Result<Lsn, EngineError> {
        let r = REDO_BODY.with(|b| {
            let mut body = b.borrow_mut();
            body.clear();
            trx.encode_redo(&mut body);
            self.redo.append_own(&body)
        });
        let rec = match r {
            Ok(r) => r,
            Err(e) => {
                entered();
                self.rollback(trx);
                return Err(e.into());
            }
        };
        trx.apply_commit(crate::page_store::buffer_pool::ChangeLsn {
            start: rec.start,
            end: rec.end,
        });
        entered();
        self.redo.mark_closed(rec.start, rec.end);
        self.redo.wait_own(&rec)?;
        let end = rec.end;
        self.debug.after_commit();
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        Ok(end)
    }

    pub fn rollback(&self, trx: Trx) {
        trx.rollback();
        self.counters.rollbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// `SET GLOBAL innodb_log_writer_threads` (through the settings
    /// registry, so the change is recorded).
    pub fn set_redo_mode(&self, mode: RedoMode) -> Result<(), EngineError> {
        Ok(self.set_global_value(
            "innodb_log_writer_threads",
            Value::Bool(mode == RedoMode::On),
        )?)
    }

    /// `SET GLOBAL innodb_flush_log_at_trx_commit` (recorded).
    pub fn set_flush_at_commit(&self, v: u8) -> Result<(), EngineError> {
        Ok(self.set_global_value("innodb_flush_log_at_trx_commit", Value::UInt(v.into()))?)
    }

    /// `SET GLOBAL innodb_log_spin_cpu_pct_hwm` (0..=100; recorded).
    pub fn set_log_spin_cpu_pct_hwm(&self, pct: u32) -> Result<(), EngineError> {
        Ok(self.set_global_value("innodb_log_spin_cpu_pct_hwm", Value::UInt(pct.into()))?)
    }

    /// `SET GLOBAL innodb_log_wait_for_flush_spin_hwm` (µs; recorded).
    /// Values above `u32::MAX` are refused and change nothing.
    pub fn set_log_wait_for_flush_spin_hwm(&self, us: u64) {
        let _ = self.set_global_value("innodb_log_wait_for_flush_spin_hwm", Value::UInt(us));
    }

    /// The replica settings (every server has them, as in MySQL).
    pub fn replica_settings(&self) -> &Arc<ReplicaSettings> {
        &self.replica_settings
    }

    pub(crate) fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    pub(crate) fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.vfs
    }

    /// `max_binlog_size` (also the relay log's file size, as MySQL's
    /// `max_relay_log_size=0`).
    pub fn max_binlog_size(&self) -> u64 {
        self.max_binlog_size
    }

    /// The name and shape of table `id`.
    pub fn table_info(&self, id: TableId) -> Option<(String, Shape)> {
        self.catalog
            .table(id)
            .map(|t| (t.name().to_string(), t.shape()))
    }

    /// A replica's fetch (`BINLOG DUMP`): up to `max` binlog events after
    /// `from`, waiting up to `wait` for the next commit group when there
    /// are none. Errors when log_bin is OFF.
    pub fn binlog_dump(
        &self,
        from: BinlogPos,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<DumpEvent>, EngineError> {
        self.check_open()?;
        let Some(b) = &self.binlog else {
            return Err(crate::binlog::BinlogError::InvalidOption(
                "this server has no binlog to send (log_bin=OFF): start the source with --set log_bin=ON".into(),
            )
            .into());
        };
        let mut end = b.published().end();
        if end <= from {
            end = b.published().wait_beyond(from, wait);
        }
        if end <= from {
            return Ok(Vec::new());
        }
        let (events, _) = published::read_after(self.vfs.as_ref(), from, end, max)?;
        Ok(events)
    }

    /// The end of the binlog replicas may read (None with log_bin=OFF).
    pub fn binlog_end(&self) -> Option<BinlogPos> {
        self.binlog.as_ref().map(|b| b.published().end())
    }

    /// `log_bin` (fixed at startup).
    pub fn log_bin(&self) -> bool {
        self.binlog.is_some()
    }

    /// The live binlog settings (`sync_binlog`, `binlog_group_commit_sync_delay`).
    pub fn binlog_settings(&self) -> &BinlogSettings {
        &self.binlog_settings
    }

    /// `SET GLOBAL sync_binlog` (live, recorded; every u32 is valid, 0 =
    /// never sync, as in MySQL). Errors only when the engine is shut down.
    /// With log_bin=OFF the value is kept and has no effect, as in MySQL.
    pub fn set_sync_binlog(&self, n: u32) -> Result<(), EngineError> {
        Ok(self.set_global_value("sync_binlog", Value::UInt(n.into()))?)
    }

    /// `SET GLOBAL binlog_group_commit_sync_delay` (µs, 0..=1000000, live,
    /// recorded); a refused value changes nothing.
    pub fn set_binlog_group_commit_sync_delay(&self, us: u64) -> Result<(), EngineError> {
        Ok(self.set_global_value("binlog_group_commit_sync_delay", Value::UInt(us))?)
    }

    /// `SET GLOBAL innodb_lock_wait_timeout` with sub-second precision (for
    /// tests; not recorded: `set_global` takes whole seconds and records).
    pub(crate) fn set_lock_wait_timeout(&self, t: Duration) {
        self.lock_sys.set_wait_timeout(t);
    }

    pub fn lock_wait_timeout(&self) -> Duration {
        self.lock_sys.wait_timeout()
    }

    /// `SET GLOBAL name = value` (MySQL names and values, case-insensitive).
    /// A refused value changes nothing; an accepted one is applied live and
    /// recorded in [`setting_changes`](Self::setting_changes).
    pub fn set_global(&self, name: &str, value: &str) -> Result<(), SettingsError> {
        self.settings.set_global(SETTINGS, self, name, value)
    }

    /// [`set_global`](Self::set_global) with a typed value: refused,
    /// changing nothing, when it is not of the setting's kind or range.
    pub fn set_global_value(&self, name: &str, value: Value) -> Result<(), SettingsError> {
        self.settings.set_global_value(SETTINGS, self, name, value)
    }

    /// `SHOW GLOBAL VARIABLES`, with each setting's type, range, default,
    /// dynamic flag and doc line.
    pub fn variables(&self) -> Vec<Variable> {
        SETTINGS
            .iter()
            .map(|s| settings::variable(self, s))
            .collect()
    }

    /// One setting by name (case-insensitive).
    pub fn variable(&self, name: &str) -> Result<Variable, SettingsError> {
        Ok(settings::variable(self, find_setting(name)?))
    }

    /// Accepted `SET GLOBAL`s, oldest first (the last
    /// [`settings::HISTORY_LEN`]).
    pub fn setting_changes(&self) -> Vec<SettingChange> {
        self.settings.changes()
    }

    /// `SHOW GLOBAL STATUS`: (name, value) rows sorted by name.
    pub fn global_status(&self) -> Vec<(String, u64)> {
        status::global_status(self)
    }

    /// The `innodb_thread_concurrency` gate.
    pub fn concurrency_gate(&self) -> &Arc<ConcurrencyGate> {
        &self.gate
    }

    /// The transaction throttle (`innodb_max_active_transactions`).
    pub fn throttle(&self) -> &Arc<Throttle> {
        &self.throttle
    }

    /// The debug settings that slow the commit path on purpose.
    pub(crate) fn debug_hooks(&self) -> &DebugHooks {
        &self.debug
    }

    /// The transaction system (active transactions, id assignment).
    pub fn trx_sys(&self) -> &Arc<TrxSys> {
        &self.trx_sys
    }

    pub fn status(&self) -> StatusSnapshot {
        let mut counters = self.counters.values();
        let ls = self.lock_sys.stats();
        counters.lock_waits = ls.waits;
        counters.lock_deadlocks = ls.deadlocks;
        counters.lock_timeouts = ls.timeouts;
        StatusSnapshot {
            counters,
            lsn: self.redo.current_lsn(),
            write_lsn: self.redo.write_lsn(),
            flushed_lsn: self.redo.flushed_lsn(),
            checkpoint_lsn: self.redo.checkpoint_lsn(),
            redo_mode: self.redo.mode(),
            flush_at_commit: self.redo.flush_at_commit(),
            fail_stop: self.fail_stop().map(ToString::to_string),
        }
    }

    /// Takes a checkpoint (see `crate::checkpoint` for why it is exact):
    /// a delta of the rows changed since the last one, or a new base image
    /// once the deltas add up to the base's size. A base being written in
    /// the background is waited for and published by this checkpoint.
    /// In fail-stop it refuses: it would sync files whose last fdatasync
    /// failed. A failed checkpoint puts the engine in fail-stop.
    pub fn checkpoint(&self) -> Result<Lsn, EngineError> {
        self.checkpoint_as(false)
    }

    /// Where a checkpoint taken now could go: the closed LSN, held back
    /// by the oldest dirty page (tables on pages: the fuzzy checkpoint; the
    /// redo below the oldest dirty page is what the pages already hold) and
    /// (log_bin=ON) by the oldest prepared, undecided transaction's record
    /// (read after the closed lsn: a prepare is registered before it is
    /// closed), so recovery can still decide it.
    pub(crate) fn checkpoint_reach(&self) -> Lsn {
        let mut lsn = self.redo.closed_lsn();
        if let Some(oldest) = self
            .store
            .as_ref()
            .and_then(|s| s.pool().oldest_dirty_lsn())
        {
            lsn = lsn.min(oldest);
        }
        if let Some(oldest) = self.binlog.as_ref().and_then(|b| b.oldest_prepare()) {
            lsn = lsn.min(oldest);
        }
        lsn
    }

    /// Whether the log's request for a checkpoint (its fill passed `pct`%)
    /// is worth a checkpoint now ([`fuzzy_checkpoint`]); if not, the page
    /// cleaners are asked to flush up to where it would be.
    pub(crate) fn fuzzy_checkpoint_due(&self, pct: u32) -> bool {
        let Some(store) = self.store.as_ref() else {
            return true;
        };
        let r = &self.redo;
        match fuzzy_checkpoint(
            r.current_lsn(),
            r.checkpoint_lsn(),
            self.checkpoint_reach(),
            r.free_limit(),
            pct,
        ) {
            FuzzyCheckpoint::Write => true,
            FuzzyCheckpoint::FlushUpTo(lsn) => {
                store.pool().request_flush_up_to(lsn);
                false
            }
        }
    }

    /// A checkpoint as [`checkpoint`](Self::checkpoint) takes it, or, in
    /// the `background` (the `log_checkpoint` thread's), one that never
    /// waits for a base: a new base is written by `log_ckpt_base` after
    /// this checkpoint's delta, and published by the first checkpoint after
    /// it is durable (`crate::base_writer`).
    pub(crate) fn checkpoint_as(&self, background: bool) -> Result<Lsn, EngineError> {
        let mut st = self.checkpoint_lock.lock();
        self.check_fail_stop()?;
        let lsn = self.checkpoint_reach();
        // The closed tail only grows, and a prepare below it was registered
        // before the previous checkpoint read `in_flight`: never behind.
        debug_assert!(
            lsn >= st.chain.lsn,
            "checkpoint lsn {lsn} behind {}",
            st.chain.lsn
        );
        let fail = |cause: crate::file_error::FileError| {
            // Without checkpoints the log fills and commits would hang
            // without an error: stop them now, with this cause.
            self.redo.stop(cause.clone());
            EngineError::Checkpoint(cause)
        };
        let ready = match &st.writer {
            Some(w) if !background || w.is_finished() => st.writer.take(),
            _ => None,
        };
        let mut body = Vec::new();
        let kind = if let Some(writer) = ready {
            let (base, carried) = writer.finish();
            let base = base.map_err(fail)?;
            self.catalog.write_delta_with_carried(&mut body, carried);
            CheckpointKind::Publish(base)
        } else if let Some(writer) = st.writer.as_mut() {
            self.catalog
                .write_delta_recording(&mut body, writer.carried());
            CheckpointKind::Delta { then_base: None }
        } else if !st.chain.wants_base() || (background && lsn > st.chain.base_lsn) {
            self.catalog.write_delta(&mut body);
            // A base due in the background: a snapshot after the delta took
            // its change sets, so every change since is in the next deltas'
            // sets, which the writer's carry records.
            let then_base = st.chain.wants_base().then(|| self.catalog.snapshot());
            CheckpointKind::Delta { then_base }
        } else {
            // Changes made from here on are marked again for the next delta.
            self.catalog.take_all_dirty();
            self.catalog.write_image(&mut body);
            CheckpointKind::Base
        };
        let max_trx_id = self.trx_sys.peek_next_id();
        // WAL rule: nothing in the checkpoint may be missing from the durable log.
        self.redo.wait_flushed(self.redo.current_lsn())?;
        // ...nor from the durable binlog (every transaction in the image
        // wrote its event before it was applied).
        if let Some(b) = &self.binlog {
            b.sync_all()?;
        }
        let vfs = self.vfs.as_ref();
        let bytes = match kind {
            CheckpointKind::Base => {
                st.chain = checkpoint::write(vfs, lsn, max_trx_id, &body).map_err(fail)?;
                st.chain.base_bytes
            }
            CheckpointKind::Delta { then_base } => {
                let bytes = checkpoint::write_delta(vfs, &mut st.chain, lsn, max_trx_id, &body)
                    .map_err(fail)?;
                // A thread that cannot start leaves the base to a later
                // checkpoint (still wanted): the chain is whole without it.
                if let Some(snapshot) = then_base {
                    st.writer = BaseWriter::start(
                        self.vfs.clone(),
                        lsn,
                        max_trx_id,
                        snapshot,
                        checkpoint::Pace::default(),
                    )
                    .ok();
                }
                bytes
            }
            CheckpointKind::Publish(base) => {
                let bytes = checkpoint::publish_pending_base(
                    vfs,
                    &mut st.chain,
                    &base,
                    lsn,
                    max_trx_id,
                    &body,
                )
                .map_err(fail)?;
                self.counters
                    .checkpoint_bases_background
                    .fetch_add(1, Ordering::Relaxed);
                bytes
            }
        };
        self.redo.set_checkpoint_lsn(lsn);
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        probe_points::redoctor_checkpoint(lsn, bytes);
        Ok(lsn)
    }

    /// Whether a base written in the background is durable and waits for
    /// the checkpoint that publishes it.
    fn base_written(&self) -> bool {
        let st = self.checkpoint_lock.lock();
        st.writer.as_ref().is_some_and(BaseWriter::is_finished)
    }

    /// Stops a base being written in the background, if any (its file is
    /// left for the next one or recovery to remove).
    fn abort_base_writer(&self) {
        if let Some(w) = self.checkpoint_lock.lock().writer.take() {
            w.abort();
        }
    }

    /// Writes every dirty page (tables on pages; nothing otherwise).
    fn flush_pages(&self) -> Result<(), EngineError> {
        match &self.store {
            Some(s) => s
                .pool()
                .flush_all()
                .map_err(|e| paged_tables::PagesError::Store(e).into()),
            None => Ok(()),
        }
    }

    /// The page store, when tables are on pages.
    pub fn page_store(&self) -> Option<&Arc<PageStore>> {
        self.store.as_ref()
    }

    /// Pages the doublewrite buffer checked and restored at startup
    /// (tables on pages), as (checked, restored).
    pub fn pages_restored(&self) -> Option<(usize, usize)> {
        self.page_recovery
            .as_ref()
            .map(|r| (r.checked, r.restored.len()))
    }

    /// The page store's startup settings.
    pub fn page_settings(&self) -> &paged_tables::PageSettings {
        &self.page_settings
    }

    /// The modelled device's latency per sync (`crate::device_model`).
    pub fn device_sync_latency(&self) -> Duration {
        self.device.sync_latency
    }

    /// Whether the modelled device serves one sync at a time.
    pub fn device_sync_serial(&self) -> bool {
        self.device.serial.is_some()
    }

    /// The committed contents of every table (for tests and verification).
    pub fn dump(&self) -> BTreeMap<String, BTreeMap<i64, Row>> {
        self.catalog.dump()
    }

    /// Checks every table's indexes against its rows (the primary-key
    /// directory, `k_1` in memory or on pages, the row count): the first
    /// disagreement, named by table. For tests and the crash soak.
    pub fn check_tables(&self) -> Result<(), String> {
        for t in self.catalog.tables() {
            t.check_invariants()
                .map_err(|e| format!("table {}: {e}", t.name()))?;
        }
        Ok(())
    }

    /// Stops the background thread, takes a final checkpoint and stops the
    /// log threads. Later calls do nothing.
    pub fn shutdown(&self) -> Result<(), EngineError> {
        if self.shut.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.stop_background();
        // In fail-stop there is no final checkpoint (it would sync files
        // whose fdatasync failed): the stop's cause is the result. With
        // tables on pages, every page is written first, so the final
        // checkpoint is at the end of the log.
        let cp = self
            .check_fail_stop()
            .and_then(|()| self.flush_pages())
            .and_then(|()| self.checkpoint().map(|_| ()));
        self.abort_base_writer();
        let pages: Result<(), EngineError> = match &self.store {
            Some(s) => s
                .shutdown()
                .map_err(|e| paged_tables::PagesError::Store(e).into()),
            None => Ok(()),
        };
        let r = self.redo.shutdown();
        pages?;
        cp?;
        Ok(r?)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Log threads hold the redo log, not the engine: stop them.
        if !self.shut.load(Ordering::Acquire) {
            self.stop_background();
            self.abort_base_writer();
            self.redo.end_threads();
        }
    }
}

/// sysbench's `c`/`pad` values: groups of 11 random digits joined by '-' (10 for
/// `c`, 119 bytes of its CHAR(120); 5 for `pad`, 59 of CHAR(60)).
fn sysbench_chars(rng: &mut SmallRng, groups: usize) -> String {
    let mut s = String::with_capacity(groups * 12);
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..11 {
            s.push(char::from(b'0' + rng.gen_range(0..10u8)));
        }
    }
    s
}

/// What the background checkpointer does when the log asks for a
/// checkpoint with tables on pages ([`fuzzy_checkpoint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FuzzyCheckpoint {
    /// Write one: it moves the checkpoint enough, or the log needs any room.
    Write,
    /// Ask the page cleaners to flush up to this LSN and wait for them.
    FlushUpTo(Lsn),
}

/// The background checkpointer's choice, with the log's tail at `current`,
/// its checkpoint at `last`, a checkpoint now able to reach `reach` (the
/// oldest dirty page holds it back), `free` usable bytes of log, and the
/// request's fill threshold `pct`%. In memory a checkpoint reaches the
/// closed LSN; on pages only the oldest dirty page, which the cleaners move
/// a few pages at a time: a checkpoint (a redo flush, a file written, two
/// fsyncs) per few pages cost the commits more than the room it made
/// (~700 a second under an update load). So one is written when it moves
/// the checkpoint by at least 1/16 of the log, or by anything when the log
/// is 3/4 full (any room helps); otherwise the cleaners flush up to where the log's
/// fill would be half the threshold (as InnoDB's checkpointer asks for a
/// flush up to an LSN when the checkpoint age is high).
pub(crate) fn fuzzy_checkpoint(
    current: Lsn,
    last: Lsn,
    reach: Lsn,
    free: u64,
    pct: u32,
) -> FuzzyCheckpoint {
    let moves = reach.saturating_sub(last);
    if moves * 16 >= free || (moves > 0 && current.saturating_sub(last) * 4 >= free * 3) {
        FuzzyCheckpoint::Write
    } else {
        FuzzyCheckpoint::FlushUpTo(current.saturating_sub(free * u64::from(pct) / 200))
    }
}
