//! Binlog crash recovery: validate every indexed file, repair the last
//! file's torn tail (zero-filled and synced before anything else is
//! written, so the decision it leads to is the same after another crash),
//! remove orphan files left by an interrupted creation or rotation, and
//! collect the transaction ids (xids) whose events are durable.

use std::collections::HashSet;

use serde::Serialize;

use crate::vfs::Vfs;

use super::file::{self, io_err, FileEnd};
use super::BinlogError;

/// The binlog as recovery found it.
#[derive(Debug, Clone)]
pub struct RecoveredBinlog {
    /// Xids of every valid event.
    pub xids: HashSet<u64>,
    /// Indexed files, oldest first.
    pub files: Vec<String>,
    /// Where the next event goes in the last file.
    pub end_offset: u64,
    /// The sequence of the last file's last event (0: none).
    pub last_sequence: u64,
    pub report: BinlogRecoveryReport,
}

/// What binlog recovery did, for the operator.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BinlogRecoveryReport {
    pub files: usize,
    pub events: u64,
    /// Why the last file's events ended, when not cleanly.
    pub torn_tail: Option<String>,
    /// Bytes zeroed after the last valid event.
    pub truncated_bytes: u64,
    /// Orphan files removed (created but never indexed).
    pub removed_orphans: Vec<String>,
}

/// Recovers the binlog in `vfs`; None when the directory has no binlog.
pub fn recover(vfs: &dyn Vfs) -> Result<Option<RecoveredBinlog>, BinlogError> {
    let names = file::read_index(vfs)?;
    let listed: HashSet<&str> = names.iter().flatten().map(String::as_str).collect();
    let mut report = BinlogRecoveryReport::default();
    let all = vfs
        .list()
        .map_err(io_err("listing", "the data directory"))?;
    for name in all {
        let orphan = file::seq_of(&name).is_some() && !listed.contains(name.as_str());
        if orphan || name == "binlog.index.tmp" {
            vfs.remove(&name)
                .map_err(io_err("removing orphan", &name))?;
            report.removed_orphans.push(name);
        }
    }
    if !report.removed_orphans.is_empty() {
        vfs.sync_dir()
            .map_err(io_err("syncing", "the data directory"))?;
    }
    let Some(names) = names else {
        return Ok(None);
    };
    let mut xids = HashSet::new();
    let mut end_offset = file::FILE_HDR;
    let mut last_sequence = 0;
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        last_sequence = 0;
        let scan = file::scan_file(vfs, name, |e| {
            xids.insert(e.xid);
            last_sequence = e.clock.sequence;
            true
        })?;
        file::check_not_torn_inside(&scan, last)?;
        report.events += scan.events;
        if last {
            if let FileEnd::Torn { offset, why } = &scan.end {
                report.torn_tail = Some(format!("{name} at offset {offset}: {why}"));
            }
            report.truncated_bytes = file::repair_tail(vfs, &scan)?;
            end_offset = scan.valid_end;
        }
    }
    report.files = names.len();
    Ok(Some(RecoveredBinlog {
        xids,
        files: names,
        end_offset,
        last_sequence,
        report,
    }))
}
