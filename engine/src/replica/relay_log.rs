//! The relay log: the source's events as the receiver queued them.
//!
//! ```text
//! relay.NNNNNN   header: magic "RDOCRLY1" | seq u64 | crc32 u32   (20 bytes)
//!                records: len u32 | kind u8 | body[len] | crc32 u32
//!                (crc32 over len, kind and body)
//!   kind 1  TableMap:  source_table u32 | shape u8 | name (len u32 + utf8)
//!   kind 2  Trx:       source_file u64 | source_end u64 | xid u64 |
//!                      last_committed u64 | sequence u64 | payload
//! ```
//!
//! A relay file is written by the receiver only and read by the applier
//! only up to the last fully queued record (see [`super::arbitration`]).
//! It is not crash-safe on purpose and needs not be: the replica behaves as
//! MySQL with `relay_log_recovery=ON`, discarding every relay file at
//! start and fetching again from the applied position, which is recorded
//! in the replica's own tables with each applied transaction (see
//! [`super::applied`]). The receiver rotates at `max_binlog_size`; the
//! applier removes a file once it has read all of it.

use std::io;
use std::sync::Arc;

use crate::binlog::file::{BinlogPos, LogicalClock};
use crate::data::table::Shape;
use crate::failpoints::{self, Target};
use crate::vfs::{Vfs, VfsFile};

use super::ReplicaError;

const PREFIX: &str = "relay.";
const MAGIC: &[u8; 8] = b"RDOCRLY1";
/// Bytes of a relay file header (laid out as the binlog's).
pub const FILE_HDR: u64 = crate::binlog::file::FILE_HDR;
const REC_HDR: usize = 5;
const REC_TRL: usize = 4;
const KIND_TABLE_MAP: u8 = 1;
const KIND_TRX: u8 = 2;
const MAX_BODY: usize = 64 << 20;

/// The name of relay file number `seq`.
pub fn file_name(seq: u64) -> String {
    format!("{PREFIX}{seq:06}")
}

fn is_relay_file(name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .is_some_and(|d| d.len() >= 6 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// One relay-log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelayRecord {
    /// The source's table `source_table` is `name` of `shape`.
    TableMap {
        source_table: u32,
        shape: Shape,
        name: String,
    },
    /// One source transaction (a binlog event) and where it ends there.
    Trx {
        source_end: BinlogPos,
        xid: u64,
        clock: LogicalClock,
        payload: Vec<u8>,
    },
}

impl RelayRecord {
    /// Appends the framed record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        match self {
            RelayRecord::TableMap {
                source_table,
                shape,
                name,
            } => {
                out.push(KIND_TABLE_MAP);
                out.extend_from_slice(&source_table.to_le_bytes());
                out.push(shape.code());
                out.extend_from_slice(&(name.len() as u32).to_le_bytes());
                out.extend_from_slice(name.as_bytes());
            }
            RelayRecord::Trx {
                source_end,
                xid,
                clock,
                payload,
            } => {
                out.push(KIND_TRX);
                for v in [
                    source_end.file,
                    source_end.offset,
                    *xid,
                    clock.last_committed,
                    clock.sequence,
                ] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(payload);
            }
        }
        let body = (out.len() - at - REC_HDR) as u32;
        out[at..at + 4].copy_from_slice(&body.to_le_bytes());
        let crc = crc32fast::hash(&out[at..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }

    fn decode(kind: u8, b: &[u8]) -> Option<RelayRecord> {
        let u64_at = |i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
        };
        match kind {
            KIND_TABLE_MAP => {
                let source_table = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
                let shape = Shape::from_code(*b.get(4)?)?;
                let len = u32::from_le_bytes(b.get(5..9)?.try_into().ok()?) as usize;
                let name = std::str::from_utf8(b.get(9..9 + len)?).ok()?.to_string();
                Some(RelayRecord::TableMap {
                    source_table,
                    shape,
                    name,
                })
            }
            KIND_TRX => Some(RelayRecord::Trx {
                source_end: BinlogPos {
                    file: u64_at(0)?,
                    offset: u64_at(8)?,
                },
                xid: u64_at(16)?,
                clock: LogicalClock {
                    last_committed: u64_at(24)?,
                    sequence: u64_at(32)?,
                },
                payload: b.get(40..)?.to_vec(),
            }),
            _ => None,
        }
    }
}

fn header(seq: u64) -> Vec<u8> {
    crate::binlog::file::file_header(MAGIC, seq)
}

fn io_err<'a>(what: &'static str, file: &'a str) -> impl Fn(io::Error) -> ReplicaError + 'a {
    move |source| ReplicaError::RelayIo {
        what,
        file: file.to_string(),
        source,
    }
}

/// Removes every relay file (the start of a replica: relay-log recovery).
pub fn discard_all(vfs: &dyn Vfs) -> Result<usize, ReplicaError> {
    let mut n = 0;
    for name in vfs
        .list()
        .map_err(io_err("listing", "the data directory"))?
    {
        if is_relay_file(&name) {
            vfs.remove(&name).map_err(io_err("removing", &name))?;
            n += 1;
        }
    }
    Ok(n)
}

/// A position in the relay log: file number and offset.
pub type RelayPos = BinlogPos;

/// The receiver's end of the relay log.
pub struct RelayWriter {
    vfs: Arc<dyn Vfs>,
    file: Arc<dyn VfsFile>,
    seq: u64,
    offset: u64,
    max_size: u64,
    /// Records since the last fdatasync.
    unsynced: u32,
}

impl RelayWriter {
    /// Creates relay file `seq` (after [`discard_all`]).
    pub fn create(vfs: Arc<dyn Vfs>, seq: u64, max_size: u64) -> Result<RelayWriter, ReplicaError> {
        let file = new_file(vfs.as_ref(), seq)?;
        Ok(RelayWriter {
            vfs,
            file,
            seq,
            offset: FILE_HDR,
            max_size,
            unsynced: 0,
        })
    }

    /// Writes framed records at the end of the current file; returns the
    /// bytes written.
    pub fn append(&mut self, records: &[u8]) -> Result<u64, ReplicaError> {
        let name = file_name(self.seq);
        failpoints::write_at(Target::Relay, self.file.as_ref(), records, self.offset)
            .map_err(io_err("write to", &name))?;
        self.offset += records.len() as u64;
        Ok(records.len() as u64)
    }

    /// Counts `n` queued records and fdatasyncs when `sync_every` (>0) of
    /// them are unsynced; returns whether it synced.
    pub fn maybe_sync(&mut self, n: u32, sync_every: u32) -> Result<bool, ReplicaError> {
        self.unsynced = self.unsynced.saturating_add(n);
        if sync_every == 0 || self.unsynced < sync_every {
            return Ok(false);
        }
        let name = file_name(self.seq);
        failpoints::sync_data(Target::Relay, self.file.as_ref())
            .map_err(io_err("fdatasync of", &name))?;
        self.unsynced = 0;
        Ok(true)
    }

    /// True once the current file reached its size limit.
    pub fn needs_rotation(&self) -> bool {
        self.offset >= self.max_size
    }

    /// True when the current file holds no record.
    pub fn is_empty(&self) -> bool {
        self.offset == FILE_HDR
    }

    /// Starts the next file (the applier moves on once it read this one).
    pub fn rotate(&mut self) -> Result<(), ReplicaError> {
        let seq = self.seq + 1;
        self.file = new_file(self.vfs.as_ref(), seq)?;
        self.seq = seq;
        self.offset = FILE_HDR;
        self.unsynced = 0;
        Ok(())
    }

    /// The end of the last record written.
    pub fn position(&self) -> RelayPos {
        BinlogPos {
            file: self.seq,
            offset: self.offset,
        }
    }
}

fn new_file(vfs: &dyn Vfs, seq: u64) -> Result<Arc<dyn VfsFile>, ReplicaError> {
    let name = file_name(seq);
    let f = vfs.open(&name, true).map_err(io_err("creating", &name))?;
    f.write_at(&header(seq), 0)
        .map_err(io_err("writing the header of", &name))?;
    Ok(f)
}

/// The applier's end: reads whole records of one file, buffered.
pub struct RelayReader {
    vfs: Arc<dyn Vfs>,
    file: Arc<dyn VfsFile>,
    seq: u64,
    offset: u64,
    buf: Vec<u8>,
    buf_start: u64,
}

impl RelayReader {
    /// Opens relay file `seq` at its first record.
    pub fn open(vfs: Arc<dyn Vfs>, seq: u64) -> Result<RelayReader, ReplicaError> {
        let name = file_name(seq);
        let file = vfs.open(&name, false).map_err(io_err("opening", &name))?;
        let mut h = vec![0u8; FILE_HDR as usize];
        let n = file
            .read_at(&mut h, 0)
            .map_err(io_err("reading the header of", &name))?;
        if n != h.len() || h != header(seq) {
            return Err(ReplicaError::RelayCorrupt {
                file: name,
                offset: 0,
                why: "bad header".into(),
            });
        }
        Ok(RelayReader {
            vfs,
            file,
            seq,
            offset: FILE_HDR,
            buf: Vec::new(),
            buf_start: FILE_HDR,
        })
    }

    /// The file's length (a complete file: the receiver moved on).
    pub fn file_len(&self) -> Result<u64, ReplicaError> {
        self.file
            .len()
            .map_err(io_err("reading the length of", &file_name(self.seq)))
    }

    /// Where the next record starts.
    pub fn position(&self) -> RelayPos {
        BinlogPos {
            file: self.seq,
            offset: self.offset,
        }
    }

    fn bytes(&mut self, off: u64, n: usize, upto: u64) -> Result<&[u8], ReplicaError> {
        let end = off + n as u64;
        if off < self.buf_start || end > self.buf_start + self.buf.len() as u64 {
            let want = ((upto - off) as usize).clamp(n, (256 << 10).max(n));
            self.buf.resize(want, 0);
            let got = self
                .file
                .read_at(&mut self.buf, off)
                .map_err(io_err("reading", &file_name(self.seq)))?;
            self.buf.truncate(got);
            self.buf_start = off;
        }
        let from = (off - self.buf_start) as usize;
        if from + n > self.buf.len() {
            return Err(self.corrupt(off, "record cut off before the queued end"));
        }
        Ok(&self.buf[from..from + n])
    }

    fn corrupt(&self, offset: u64, why: &str) -> ReplicaError {
        ReplicaError::RelayCorrupt {
            file: file_name(self.seq),
            offset,
            why: why.into(),
        }
    }

    /// The next record, if one ends at or before `upto` (the queued end in
    /// this file).
    pub fn next(&mut self, upto: u64) -> Result<Option<RelayRecord>, ReplicaError> {
        let off = self.offset;
        if off + (REC_HDR + REC_TRL) as u64 > upto {
            return Ok(None);
        }
        let h = self.bytes(off, REC_HDR, upto)?;
        let len = u32::from_le_bytes(h[0..4].try_into().expect("4 bytes")) as usize;
        let kind = h[4];
        if len > MAX_BODY {
            return Err(self.corrupt(off, "record length out of range"));
        }
        let total = REC_HDR + len + REC_TRL;
        if off + total as u64 > upto {
            return Err(self.corrupt(off, "record crosses the queued end"));
        }
        let rec = self.bytes(off, total, upto)?;
        let (body, crc) = rec.split_at(REC_HDR + len);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err(self.corrupt(off, "checksum mismatch"));
        }
        let decoded = RelayRecord::decode(kind, &body[REC_HDR..]);
        let Some(r) = decoded else {
            return Err(self.corrupt(off, "unknown record"));
        };
        self.offset += total as u64;
        Ok(Some(r))
    }

    /// Removes this reader's file (read entirely) and opens the next.
    pub fn next_file(self) -> Result<(RelayReader, u64), ReplicaError> {
        let name = file_name(self.seq);
        let size = self
            .file
            .len()
            .map_err(io_err("reading the length of", &name))?;
        self.vfs.remove(&name).map_err(io_err("purging", &name))?;
        Ok((RelayReader::open(self.vfs.clone(), self.seq + 1)?, size))
    }
}
