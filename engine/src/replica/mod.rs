//! A replica of another engine (seed 003, MySQL's receiver and applier).
//!
//! - [`receiver`]: the receiver thread; fetches the source's binlog events
//!   (through a [`Source`]) into the relay log.
//! - [`relay_log`]: the relay log files.
//! - [`arbitration`]: how receiver and applier share the hot relay log:
//!   `lock` (before MySQL 8.0.1) or `position` (8.0.1), switchable live.
//! - [`applier`]: the applier thread (the coordinator with workers).
//! - [`workers`]: applying one transaction; the worker threads.
//! - [`worker_queue`]: one worker's queue, and how a sleeping worker is woken.
//! - [`schedule`]: tickets, the low-water mark, `LOGICAL_CLOCK` and
//!   commit order.
//! - [`applied`]: the applied position, in the replica's own table.
//! - [`status`]: what `SHOW REPLICA STATUS` reports.
//! - the live settings are `crate::replica_settings` (the engine holds them).
//!
//! Crash safety is MySQL's `relay_log_recovery=ON`: at every start the
//! relay log is discarded and the receiver fetches again from the applied
//! low-water mark; the applier skips what the applied table says is done.

pub mod applied;
pub mod applier;
pub mod arbitration;
pub mod receiver;
pub mod relay_log;
pub mod schedule;
pub mod status;
pub mod worker_queue;
pub mod workers;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::binlog::file::BinlogPos;
use crate::binlog::published::DumpEvent;
use crate::data::table::Shape;
use crate::engine::Engine;
use crate::error::EngineError;

use self::arbitration::{Arbitration, HotLog};
use self::schedule::Progress;
use self::status::Status;

/// Replica errors: each names the cause and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    #[error("relay log I/O error ({what} {file}): {source}; check free space and permissions in the data directory, then START REPLICA (it fetches again from the applied position)")]
    RelayIo {
        what: &'static str,
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("relay log {file} is corrupt at offset {offset} ({why}); START REPLICA again (the relay log is discarded and fetched again)")]
    RelayCorrupt {
        file: String,
        offset: u64,
        why: String,
    },
    #[error("cannot reach the source ({source_name}): {why}; check that the source runs with log_bin=ON and that SOURCE_SOCKET names its socket")]
    Source { source_name: String, why: String },
    #[error("the source's binlog event ending at {}:{} is not valid ({why}); the source and replica versions differ or the binlog is damaged", .at.file, .at.offset)]
    BadEvent { at: BinlogPos, why: String },
    #[error("table {name} exists on the source but not on the replica: provision the replica from the source (same tables and rows) before START REPLICA")]
    MissingTable { name: String },
    #[error("table {name} has a different shape on the replica than on the source: provision the replica again from the source")]
    TableShape { name: String },
    #[error("applying the source transaction ending at {}:{} failed: {source}; fix the cause, then START REPLICA (it resumes at the applied position)", .at.file, .at.offset)]
    Apply {
        at: BinlogPos,
        #[source]
        source: EngineError,
    },
    #[error("cannot start thread {name}: {source}")]
    Thread {
        name: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the replica is already running: STOP REPLICA first")]
    Running,
    #[error("no source is configured: run CHANGE REPLICATION SOURCE TO SOURCE_SOCKET='...' (or start with --source-socket) first")]
    NoSource,
    #[error("replica stopped")]
    Stopped,
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Where the receiver gets the source's events.
pub trait Source: Send {
    /// Up to `max` events after `from`, waiting up to `wait` when there
    /// are none yet (then returns none).
    fn read_after(
        &mut self,
        from: BinlogPos,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<DumpEvent>, ReplicaError>;
    /// The name and shape of the source's table `id`.
    fn table(&mut self, id: u32) -> Result<(String, Shape), ReplicaError>;
}

/// A source engine in the same process (tests, benches; the server's
/// sessions use the same engine calls for `BINLOG DUMP`).
pub struct LocalSource(pub Arc<Engine>);

impl Source for LocalSource {
    fn read_after(
        &mut self,
        from: BinlogPos,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<DumpEvent>, ReplicaError> {
        self.0
            .binlog_dump(from, max, wait)
            .map_err(|e| ReplicaError::Source {
                source_name: "local engine".into(),
                why: e.to_string(),
            })
    }
    fn table(&mut self, id: u32) -> Result<(String, Shape), ReplicaError> {
        self.0.table_info(id).ok_or_else(|| ReplicaError::Source {
            source_name: "local engine".into(),
            why: format!("it has no table with id {id}"),
        })
    }
}

struct Running {
    stop: Arc<AtomicBool>,
    receiver: JoinHandle<()>,
    applier: JoinHandle<()>,
    progress: Arc<Progress>,
    space: Arc<receiver::Space>,
}

/// A replica: `START REPLICA` / `STOP REPLICA` / `SHOW REPLICA STATUS`.
pub struct Replica {
    engine: Arc<Engine>,
    status: Arc<Status>,
    running: Mutex<Option<Running>>,
}

/// `SHOW REPLICA STATUS`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicaStatus {
    pub state: status::Snapshot,
    pub relay_log_space: u64,
    pub workers: u32,
    pub arbitration: Arbitration,
}

impl Replica {
    pub fn new(engine: Arc<Engine>) -> Replica {
        Replica {
            engine,
            status: Arc::new(Status::default()),
            running: Mutex::new(None),
        }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// `CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE/POS`: the next start
    /// fetches after `at` (refused while running).
    pub fn change_position(&self, at: BinlogPos) -> Result<(), ReplicaError> {
        if self.is_running() {
            return Err(ReplicaError::Running);
        }
        applied::reset(&self.engine, at)?;
        self.status.start_at(at);
        Ok(())
    }

    pub fn is_running(&self) -> bool {
        crate::named_locks::lock(&self.running).is_some()
    }

    /// `START REPLICA`: discards the relay log, reads the applied record,
    /// starts the receiver (`rpl_receiver`) and the applier (`rpl_applier`).
    pub fn start(&self, source: Box<dyn Source>) -> Result<(), ReplicaError> {
        let mut running = crate::named_locks::lock(&self.running);
        if running.is_some() {
            return Err(ReplicaError::Running);
        }
        let e = &self.engine;
        let settings = e.replica_settings().clone();
        let table = applied::ensure_table(e)?;
        let rec = applied::load(e)?.unwrap_or(applied::Applied {
            low_water: applied::binlog_start(),
            above: Default::default(),
        });
        let vfs = e.vfs().clone();
        relay_log::discard_all(vfs.as_ref())?;
        let writer = relay_log::RelayWriter::create(vfs.clone(), 1, e.max_binlog_size())?;
        let hot = Arc::new(HotLog::new(settings.clone(), writer.position()));
        let stop = Arc::new(AtomicBool::new(false));
        let progress = Arc::new(Progress::new(rec.low_water));
        let space = Arc::new(receiver::Space::default());
        let workers = settings.parallel_workers();
        let ctx = Arc::new(workers::ApplyCtx {
            engine: e.clone(),
            applied_table: table,
            log_updates: settings.log_replica_updates,
            progress: progress.clone(),
            stop: stop.clone(),
        });
        let applier = applier::Applier {
            ctx,
            hot: hot.clone(),
            vfs,
            first_relay_file: 1,
            skip: rec.above,
            start: rec.low_water,
            workers,
            space: space.clone(),
            status: self.status.clone(),
        };
        let receiver = receiver::Receiver {
            source,
            writer,
            hot: hot.clone(),
            settings,
            counters: e.counters().clone(),
            space: space.clone(),
            status: self.status.clone(),
            stop: stop.clone(),
            pos: rec.low_water,
        };
        self.status.start_at(rec.low_water);
        self.status.set_running(true, true);
        let st = self.status.clone();
        let hot2 = hot.clone();
        let receiver = spawn("rpl_receiver", move || {
            let r = receiver.run();
            hot2.close();
            st.io_stopped(r.err().map(|e| e.to_string()));
        })?;
        let st = self.status.clone();
        let applier = spawn("rpl_applier", move || {
            let r = applier.run();
            st.sql_stopped(match r {
                Err(ReplicaError::Stopped) | Ok(()) => None,
                Err(e) => Some(e.to_string()),
            });
        })?;
        *running = Some(Running {
            stop,
            receiver,
            applier,
            progress,
            space,
        });
        Ok(())
    }

    /// `STOP REPLICA`: stops both threads and waits for them.
    pub fn stop(&self) {
        let Some(r) = crate::named_locks::lock(&self.running).take() else {
            return;
        };
        r.stop.store(true, Ordering::Relaxed);
        let _ = r.receiver.join();
        let _ = r.applier.join();
        let _ = relay_log::discard_all(self.engine.vfs().as_ref());
    }

    /// `SHOW REPLICA STATUS`.
    pub fn status(&self) -> ReplicaStatus {
        let running = crate::named_locks::lock(&self.running);
        let (applied, space) = match running.as_ref() {
            Some(r) => (r.progress.low_water(), r.space.used()),
            None => (
                applied::load(&self.engine)
                    .ok()
                    .flatten()
                    .map_or(applied::binlog_start(), |a| a.low_water),
                0,
            ),
        };
        let workers = self.engine.replica_settings().parallel_workers();
        ReplicaStatus {
            state: self.status.snapshot(applied),
            relay_log_space: space,
            workers,
            arbitration: self.engine.replica_settings().arbitration(),
        }
    }

    /// Waits until the applier has applied everything up to `at` (or
    /// `timeout` passes, or the applier stopped); true when it has.
    pub fn wait_applied(&self, at: BinlogPos, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let s = self.status();
            if s.state.applied >= at {
                return true;
            }
            if !s.state.sql_running || std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(
    name: &'static str,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, ReplicaError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|source| ReplicaError::Thread { name, source })
}
