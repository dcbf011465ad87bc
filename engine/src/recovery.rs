//! Crash recovery: load the newest valid checkpoint image, replay the redo
//! log from its lsn up to the first torn or corrupt record, report what was
//! truncated, and hand the log a place to resume (with a new epoch).
//!
//! With a binary log in the directory, the binlog is recovered first (its
//! torn tail repaired) and each prepared transaction in the redo log is
//! committed iff its binlog event is durable (`crate::binlog::xa`).
//!
//! A new data directory is created the same way it is recovered: the redo
//! file is formatted under a temporary name, an empty checkpoint at lsn 0 is
//! written, and the rename of the redo file into place is the commit point.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::binlog::recover::{BinlogRecoveryReport, RecoveredBinlog};
use crate::binlog::xa::{XaReplay, XaReport};
use crate::binlog::{self, BinlogError};
use crate::checkpoint;
use crate::data::catalog::Catalog;
use crate::data::record::{self, RedoRecord};
use crate::file_error::{path_in, FileError};
use crate::page_store::store::PageStore;
use crate::redo::log_file::{self, Header, Layout, ScanReport, StopReason, PAYLOAD};
use crate::redo::{Lsn, RedoOptions, ResumePoint};
use crate::vfs::Vfs;

pub const REDO_FILE: &str = "redo.log";
const REDO_TMP: &str = "redo.log.tmp";

#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    #[error("I/O error during recovery in {dir} ({what}): {source}; check the data directory's permissions and free space")]
    Io {
        dir: String,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{dir}/{REDO_FILE} has no valid header (both copies corrupt); it is not a redoctor redo log or it is damaged — restore the data directory from a backup")]
    BadRedoHeader { dir: String },
    #[error("{dir} has a redo log but no valid checkpoint image ({skipped}); restore the data directory from a backup")]
    NoCheckpoint { dir: String, skipped: String },
    #[error("the redo log in {dir} does not reach back to checkpoint lsn {lsn} ({why}): log and checkpoint do not belong together — restore the data directory from a backup")]
    LogBehindCheckpoint { dir: String, lsn: Lsn, why: String },
    #[error("I/O error during recovery ({what}): {cause}. {fix}", fix = .cause.fix())]
    File {
        what: &'static str,
        cause: FileError,
    },
    #[error(transparent)]
    Binlog(#[from] BinlogError),
}

/// What recovery did, for the operator.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryReport {
    /// The data directory was new and has been created.
    pub created: bool,
    pub checkpoint_file: String,
    pub checkpoint_lsn: Lsn,
    /// Newer checkpoint images that were invalid and skipped, with why.
    pub skipped_checkpoints: Vec<(String, String)>,
    pub redo_start_lsn: Lsn,
    pub redo_end_lsn: Lsn,
    pub records_replayed: u64,
    pub commits_replayed: u64,
    /// Why replay stopped (a clean end, or what was torn/corrupt).
    pub stop: StopReason,
    /// Bytes after the last valid record that were discarded.
    pub truncated_bytes: u64,
    /// Epoch this life of the log writes with.
    pub epoch: u32,
    pub max_trx_id: u64,
    pub duration_ms: u64,
    /// What binlog recovery did (None: the directory has no binlog).
    pub binlog: Option<BinlogRecoveryReport>,
    /// How prepared transactions (log_bin=ON) were decided.
    pub xa: XaReport,
}

impl RecoveryReport {
    /// Bytes recovery discarded at the end of the redo log and the binlog:
    /// what a torn write left after the last valid record or event.
    pub fn dropped_bytes(&self) -> u64 {
        self.truncated_bytes + self.binlog.as_ref().map_or(0, |b| b.truncated_bytes)
    }

    /// Where replay stopped and what was dropped, in words (one or two lines).
    pub fn tail_summary(&self) -> String {
        let why = match &self.stop {
            StopReason::CleanEnd => "at its clean end".to_string(),
            StopReason::TornRecord { lsn } => {
                format!("at a record cut off at lsn {lsn} (a torn write)")
            }
            StopReason::CorruptBlock { block_no } => {
                format!("at block {block_no}, which fails its checksum (a torn or lost write)")
            }
            StopReason::StaleBlock { block_no, found_no } => {
                format!("at block {block_no}, which still holds block {found_no} of an earlier lap")
            }
            StopReason::OldEpoch { block_no } => {
                format!("at block {block_no}, left by an earlier life of the log")
            }
            StopReason::CorruptRecord { lsn } => {
                format!("at lsn {lsn}, a record that fails its checksum")
            }
            StopReason::Rejected { lsn, reason } => {
                format!("at lsn {lsn}, a record that could not be applied ({reason})")
            }
        };
        let mut s = format!(
            "redo log: replayed {} records from lsn {} to {}; it ended {why}; dropped {} bytes \
             after the last valid record",
            self.records_replayed, self.redo_start_lsn, self.redo_end_lsn, self.truncated_bytes
        );
        if let Some(b) = &self.binlog {
            match &b.torn_tail {
                Some(t) => s.push_str(&format!(
                    "\nbinlog: torn tail in {t}; dropped (zero-filled) {} bytes after the last \
                     valid event",
                    b.truncated_bytes
                )),
                None => s.push_str(&format!(
                    "\nbinlog: {} events in {} files, ended cleanly",
                    b.events, b.files
                )),
            }
        }
        s
    }
}

pub struct Recovered {
    pub catalog: Catalog,
    /// The checkpoint chain recovery started from (the next checkpoint
    /// continues it).
    pub chain: checkpoint::Chain,
    pub resume: ResumePoint,
    pub report: RecoveryReport,
    /// The binlog as found (None: the directory has none).
    pub binlog: Option<RecoveredBinlog>,
}

fn io_err<'a>(
    vfs: &'a dyn Vfs,
    what: &'static str,
) -> impl Fn(std::io::Error) -> RecoveryError + 'a {
    move |source| RecoveryError::Io {
        dir: vfs.describe(),
        what,
        source,
    }
}

/// Creates a new log and an empty checkpoint, unless a log exists.
fn create_if_missing(vfs: &dyn Vfs, opts: &RedoOptions) -> Result<bool, RecoveryError> {
    if vfs.exists(REDO_FILE) {
        return Ok(false);
    }
    // Leftovers of an interrupted creation are garbage.
    for name in vfs.list().map_err(io_err(vfs, "listing"))? {
        let binlog_file = name.starts_with("binlog.");
        if name == REDO_TMP || name.starts_with("checkpoint") || binlog_file {
            vfs.remove(&name)
                .map_err(io_err(vfs, "removing leftovers"))?;
        }
    }
    let f = vfs
        .open(REDO_TMP, true)
        .map_err(io_err(vfs, "creating the redo log"))?;
    log_file::format(f.as_ref(), opts.log_file_size)
        .map_err(io_err(vfs, "formatting the redo log"))?;
    let mut img = Vec::new();
    Catalog::new().write_image(&mut img);
    checkpoint::write(vfs, 0, 0, &img).map_err(|cause| RecoveryError::File {
        what: "writing the first checkpoint",
        cause,
    })?;
    vfs.rename(REDO_TMP, REDO_FILE)
        .map_err(io_err(vfs, "renaming the redo log"))?;
    vfs.sync_dir()
        .map_err(io_err(vfs, "syncing the directory"))?;
    Ok(true)
}

/// Opens (creating if new) and recovers the data directory (the tests'
/// shorthand; the loom build compiles only the model checks).
#[cfg(all(test, not(loom)))]
pub fn recover(vfs: &dyn Vfs, opts: &RedoOptions) -> Result<Recovered, RecoveryError> {
    recover_with(vfs, opts, None)
}

/// [`recover`], the tables' rows kept in `store` (its doublewrite recovery
/// done when it was opened): the redo is replayed into their pages.
pub fn recover_with(
    vfs: &dyn Vfs,
    opts: &RedoOptions,
    store: Option<&Arc<PageStore>>,
) -> Result<Recovered, RecoveryError> {
    let t0 = Instant::now();
    let created = create_if_missing(vfs, opts)?;
    let binlog = binlog::recover::recover(vfs)?;
    let dir = vfs.describe();
    let file = vfs
        .open(REDO_FILE, false)
        .map_err(io_err(vfs, "opening the redo log"))?;
    let header = log_file::read_header(file.as_ref())
        .map_err(io_err(vfs, "reading the redo header"))?
        .ok_or(RecoveryError::BadRedoHeader { dir: dir.clone() })?;
    let layout = Layout::for_file_size(header.file_size);

    let (image, mut skipped) =
        checkpoint::load_newest_with(vfs, store).map_err(io_err(vfs, "reading checkpoints"))?;
    let Some(image) = image else {
        let skipped = skipped
            .iter()
            .map(|(n, w)| format!("{n}: {w}"))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(RecoveryError::NoCheckpoint {
            dir,
            skipped: if skipped.is_empty() {
                "none found".into()
            } else {
                skipped
            },
        });
    };
    // Deltas outside the chain loaded (an older base's, left by a crash
    // before their removal, or after a damaged one) must never join a
    // later chain: remove them now, durably.
    if !image.stale.is_empty() {
        for name in &image.stale {
            vfs.remove(name)
                .map_err(io_err(vfs, "removing stale checkpoint deltas"))?;
            skipped.push((
                name.clone(),
                "not part of the checkpoint chain recovered; removed".into(),
            ));
        }
        vfs.sync_dir()
            .map_err(io_err(vfs, "syncing the directory"))?;
    }
    let catalog = image.catalog;
    let mut max_trx_id = image.max_trx_id;
    let mut commits = 0u64;
    let max_record = opts.max_record().max(layout.capacity() as usize / 4);
    let mut xa = XaReplay::new(&catalog, binlog.as_ref().map(|b| &b.xids));
    let scan: ScanReport =
        log_file::scan(file.as_ref(), layout, image.lsn, max_record, |lsn, body| {
            let rec = record::decode(body).map_err(|e| e.to_string())?;
            match &rec {
                RedoRecord::Commit { trx_id, .. } => {
                    max_trx_id = max_trx_id.max(*trx_id);
                    commits += 1;
                }
                RedoRecord::Prepare { trx_id, .. } => max_trx_id = max_trx_id.max(*trx_id),
                _ => {}
            }
            xa.record(rec, lsn).map_err(|e| e.to_string())
        })
        .map_err(io_err(vfs, "scanning the redo log"))?;
    let xa = xa.finish().map_err(|e| {
        io_err(vfs, "applying decided prepared transactions")(std::io::Error::other(e))
    })?;
    commits += xa.committed;
    // Transaction ids double as binlog xids: never reuse one the binlog
    // holds (with innodb_flush_log_at_trx_commit != 1 a binlog event can
    // outlive its prepare record).
    if let Some(b) = &binlog {
        max_trx_id = max_trx_id.max(b.xids.iter().copied().max().unwrap_or(0));
    }

    // The checkpoint's own block must be there, unless the checkpoint sits
    // on a block boundary (that block may never have been written).
    if image.lsn % PAYLOAD as u64 != 0 {
        let first = log_file::block_of(image.lsn);
        let bad_first = match &scan.stop {
            StopReason::StaleBlock { block_no, .. }
            | StopReason::CorruptBlock { block_no }
            | StopReason::OldEpoch { block_no } => *block_no == first,
            _ => false,
        };
        if bad_first {
            return Err(RecoveryError::LogBehindCheckpoint {
                dir,
                lsn: image.lsn,
                why: format!("{:?}", scan.stop),
            });
        }
    }

    // This life writes with a new epoch, durable before any block is written.
    let epoch = header.epoch + 1;
    log_file::write_header(
        file.as_ref(),
        &Header {
            file_size: header.file_size,
            epoch,
        },
    )
    .map_err(io_err(vfs, "writing the redo header"))?;
    // ...and owns the block it resumes in, durably (see `seal_end`).
    log_file::seal_end(
        file.as_ref(),
        layout,
        image.lsn,
        epoch,
        scan.end_lsn,
        &scan.partial_block,
    )
    .map_err(io_err(vfs, "sealing the end of the recovered redo log"))?;

    let report = RecoveryReport {
        created,
        checkpoint_file: image.file,
        checkpoint_lsn: image.lsn,
        skipped_checkpoints: skipped,
        redo_start_lsn: scan.start_lsn,
        redo_end_lsn: scan.end_lsn,
        records_replayed: scan.records,
        commits_replayed: commits,
        stop: scan.stop.clone(),
        truncated_bytes: scan.truncated_bytes,
        epoch,
        max_trx_id,
        duration_ms: t0.elapsed().as_millis() as u64,
        binlog: binlog.as_ref().map(|b| b.report.clone()),
        xa,
    };
    Ok(Recovered {
        catalog,
        chain: image.chain,
        resume: ResumePoint {
            file,
            path: path_in(vfs, REDO_FILE),
            layout,
            epoch,
            lsn: scan.end_lsn,
            partial_block: scan.partial_block,
            checkpoint_lsn: image.lsn,
        },
        report,
        binlog,
    })
}
