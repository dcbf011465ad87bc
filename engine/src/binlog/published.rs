//! The end of the binlog that replicas may read, and the dump readers that
//! follow it.
//!
//! The group commit's SYNC stage publishes where its group's events end
//! (after the fdatasync when `sync_binlog` asks for one). A dump reader
//! (one per connected replica, as MySQL's `Binlog_sender`) reads events up
//! to the published end and otherwise sleeps on `binlog.published` until a
//! later group is published or its timeout passes.

use std::time::{Duration, Instant};

use crate::named_locks::{NamedCondvar, NamedMutex};
use crate::vfs::Vfs;

use super::file::{self, BinlogPos, EventView, LogicalClock};
use super::BinlogError;

/// The published end and its waiters.
pub struct Published {
    end: NamedMutex<BinlogPos>,
    grew: NamedCondvar,
}

impl Published {
    pub fn new(at: BinlogPos) -> Published {
        Published {
            end: NamedMutex::new("binlog.published", at),
            grew: NamedCondvar::new("binlog.published_grew"),
        }
    }

    /// Moves the end forward (never back) and wakes the waiters.
    pub fn publish(&self, at: BinlogPos) {
        let mut end = self.end.lock();
        if at > *end {
            *end = at;
            drop(end);
            self.grew.notify_all();
        }
    }

    /// The published end.
    pub fn end(&self) -> BinlogPos {
        *self.end.lock()
    }

    /// Waits until the end passes `from` or `timeout` passes; returns the end.
    pub fn wait_beyond(&self, from: BinlogPos, timeout: Duration) -> BinlogPos {
        let deadline = Instant::now() + timeout;
        let mut end = self.end.lock();
        while *end <= from {
            let (g, timed_out) = self.grew.wait_until(end, deadline);
            end = g;
            if timed_out {
                break;
            }
        }
        *end
    }
}

/// One event read for a replica, with where it ends in the source's binlog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpEvent {
    /// Where the event ends (the position a replica resumes from).
    pub end: BinlogPos,
    pub xid: u64,
    pub clock: LogicalClock,
    pub payload: Vec<u8>,
}

/// Reads up to `max` events after `from` (an event end, or a file's start
/// at `FILE_HDR`), never past `upto` (the published end). Moves on to the
/// next file when `from`'s file holds no more events and a later file
/// exists. Returns the events and the position after the last one.
pub fn read_after(
    vfs: &dyn Vfs,
    from: BinlogPos,
    upto: BinlogPos,
    max: usize,
) -> Result<(Vec<DumpEvent>, BinlogPos), BinlogError> {
    let mut out = Vec::new();
    let mut at = from;
    if at.file == 0 {
        at = BinlogPos {
            file: 1,
            offset: file::FILE_HDR,
        };
    }
    if at.offset < file::FILE_HDR {
        at.offset = file::FILE_HDR;
    }
    while at <= upto && out.len() < max {
        let name = file::file_name(at.file);
        if !vfs.exists(&name) {
            return Err(BinlogError::MissingFile { file: name });
        }
        let limit = if at.file == upto.file {
            upto.offset
        } else {
            u64::MAX
        };
        let file_no = at.file;
        let mut last = at;
        file::scan_file_from(vfs, &name, at.offset, limit, |e: EventView<'_>| {
            last = BinlogPos {
                file: file_no,
                offset: e.end,
            };
            out.push(DumpEvent {
                end: last,
                xid: e.xid,
                clock: e.clock,
                payload: e.payload.to_vec(),
            });
            out.len() < max
        })?;
        at = last;
        if out.len() >= max || at.file >= upto.file {
            break;
        }
        // Every event of an older file is published: go on to the next.
        at = BinlogPos {
            file: at.file + 1,
            offset: file::FILE_HDR,
        };
    }
    Ok((out, at))
}
