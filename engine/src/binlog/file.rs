//! The binary log on disk: numbered files, an index naming them, and a reader.
//!
//! ```text
//! binlog.index      one file name per line, in order (replaced atomically:
//!                   written to binlog.index.tmp, synced, renamed, dir synced)
//! binlog.NNNNNN     header: magic "RDOCBIN2" | seq u64 | crc32 u32   (20 bytes)
//!                   events: len u32 | xid u64 | last_committed u64 |
//!                           sequence u64 | payload[len] | crc32 u32
//!                   (crc32 over everything before it)
//! ```
//!
//! `sequence` numbers the events of a file from 1; `last_committed` is the
//! sequence of the last event of the commit group before the event's own
//! (0 at the start of a file). Events of one group were prepared together,
//! so none waits for another's row locks: a replica may apply them in
//! parallel (MySQL's `LOGICAL_CLOCK`).
//!
//! A new file is created, its header written and synced and the directory
//! synced *before* the index names it; events go to a file only once the
//! index naming it is durable, so a crash during rotation leaves at most an
//! empty orphan, which recovery removes. Before rotating, the old file is
//! synced entirely: only the last file can have a torn tail. A file's events
//! end at the first event that is cut off, fails its checksum, or has a zero
//! length; recovery zero-fills and syncs a torn tail ([`repair_tail`]) so an
//! event written later can never be followed by stale bytes that look valid.

use std::io;
use std::sync::Arc;

use crate::failpoints::{self, Target};
use crate::vfs::{Vfs, VfsFile};

use super::BinlogError;

pub const INDEX: &str = "binlog.index";
const INDEX_TMP: &str = "binlog.index.tmp";
const PREFIX: &str = "binlog.";
const MAGIC: &[u8; 8] = b"RDOCBIN2";
/// Bytes of a file header.
pub const FILE_HDR: u64 = 20;
/// Bytes of an event's length, xid and logical clock.
pub const EVENT_HDR: usize = 28;
/// Bytes of an event's checksum.
pub const EVENT_TRL: usize = 4;
/// Largest payload accepted when reading (a sanity bound on the length field).
pub const MAX_PAYLOAD: usize = 64 << 20;

/// The name of binlog file number `seq`.
pub fn file_name(seq: u64) -> String {
    format!("{PREFIX}{seq:06}")
}

/// The number of a binlog file name, if it is one.
pub fn seq_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?;
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// An event's place among commit groups (MySQL's `LOGICAL_CLOCK`): events
/// with the same `last_committed` may be applied in parallel once every
/// event up to `last_committed` is applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogicalClock {
    pub last_committed: u64,
    pub sequence: u64,
}

/// The running checksum of a payload, computed where the payload is made
/// (the committing thread), so that framing it (the FLUSH stage's leader,
/// serially for its group) only checksums the 28-byte header.
pub fn payload_crc(payload: &[u8]) -> crc32fast::Hasher {
    let mut h = crc32fast::Hasher::new();
    h.update(payload);
    h
}

/// Appends one framed event to `out`; `crc` is [`payload_crc`] of `payload`.
pub fn encode_event(
    xid: u64,
    clock: LogicalClock,
    payload: &[u8],
    crc: &crc32fast::Hasher,
    out: &mut Vec<u8>,
) {
    let at = out.len();
    let len = u32::try_from(payload.len()).expect("binlog payload larger than 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&xid.to_le_bytes());
    out.extend_from_slice(&clock.last_committed.to_le_bytes());
    out.extend_from_slice(&clock.sequence.to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&out[at..]);
    h.combine(crc);
    out.extend_from_slice(payload);
    out.extend_from_slice(&h.finalize().to_le_bytes());
}

/// A file header: `magic | seq u64 | crc32` (the binlog's and the relay log's).
pub(crate) fn file_header(magic: &[u8; 8], seq: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(FILE_HDR as usize);
    h.extend_from_slice(magic);
    h.extend_from_slice(&seq.to_le_bytes());
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

fn header(seq: u64) -> Vec<u8> {
    file_header(MAGIC, seq)
}

pub(crate) fn io_err<'a>(
    what: &'static str,
    file: &'a str,
) -> impl Fn(io::Error) -> BinlogError + 'a {
    move |source| BinlogError::Io {
        what,
        file: file.to_string(),
        source,
    }
}

/// Creates binlog file `seq` with its header, durable (file and directory).
pub fn create_file(vfs: &dyn Vfs, seq: u64) -> Result<Arc<dyn VfsFile>, BinlogError> {
    let name = file_name(seq);
    if vfs.exists(&name) {
        vfs.remove(&name)
            .map_err(io_err("removing a stale file", &name))?;
    }
    let f = vfs
        .open(&name, true)
        .map_err(io_err("creating the file", &name))?;
    f.write_at(&header(seq), 0)
        .map_err(io_err("writing the header", &name))?;
    f.sync_data().map_err(io_err("syncing the header", &name))?;
    vfs.sync_dir()
        .map_err(io_err("syncing the directory", &name))?;
    Ok(f)
}

/// Replaces the index with `names`, atomically and durably.
pub fn write_index(vfs: &dyn Vfs, names: &[String]) -> Result<(), BinlogError> {
    let mut text = String::new();
    for n in names {
        text.push_str(n);
        text.push('\n');
    }
    if vfs.exists(INDEX_TMP) {
        vfs.remove(INDEX_TMP)
            .map_err(io_err("removing the old temporary index", INDEX_TMP))?;
    }
    let f = vfs
        .open(INDEX_TMP, true)
        .map_err(io_err("creating", INDEX_TMP))?;
    f.write_at(text.as_bytes(), 0)
        .map_err(io_err("writing", INDEX_TMP))?;
    f.sync_data().map_err(io_err("syncing", INDEX_TMP))?;
    vfs.rename(INDEX_TMP, INDEX)
        .map_err(io_err("renaming into place", INDEX))?;
    vfs.sync_dir()
        .map_err(io_err("syncing the directory", INDEX))?;
    Ok(())
}

/// The file names the index lists, or None when there is no index.
pub fn read_index(vfs: &dyn Vfs) -> Result<Option<Vec<String>>, BinlogError> {
    if !vfs.exists(INDEX) {
        return Ok(None);
    }
    let f = vfs.open(INDEX, false).map_err(io_err("opening", INDEX))?;
    let len = f.len().map_err(io_err("reading the length of", INDEX))? as usize;
    let mut buf = vec![0u8; len];
    let n = f.read_at(&mut buf, 0).map_err(io_err("reading", INDEX))?;
    let text = String::from_utf8(buf[..n].to_vec()).map_err(|_| BinlogError::BadIndex {
        why: "it is not UTF-8 text".into(),
    })?;
    let mut names = Vec::new();
    for line in text.lines() {
        if seq_of(line).is_none() {
            return Err(BinlogError::BadIndex {
                why: format!("line '{line}' is not a binlog file name"),
            });
        }
        if !vfs.exists(line) {
            return Err(BinlogError::MissingFile {
                file: line.to_string(),
            });
        }
        names.push(line.to_string());
    }
    if names.is_empty() {
        return Err(BinlogError::BadIndex {
            why: "it lists no file".into(),
        });
    }
    Ok(Some(names))
}

/// How a file's events end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileEnd {
    /// End of file, or zero bytes only after the last event.
    Clean,
    /// Bytes after the last valid event that are not an event.
    Torn { offset: u64, why: String },
}

/// What [`scan_file`] found.
#[derive(Clone, Debug)]
pub struct FileScan {
    pub name: String,
    pub events: u64,
    /// Offset just after the last valid event.
    pub valid_end: u64,
    pub len: u64,
    pub end: FileEnd,
}

/// Reads `file` in 64 KiB windows.
struct Window<'a> {
    file: &'a dyn VfsFile,
    start: u64,
    buf: Vec<u8>,
}

impl Window<'_> {
    /// Bytes `[off, off + n)`, or fewer when the file ends first.
    fn get(&mut self, off: u64, n: usize) -> io::Result<&[u8]> {
        let end = off + n as u64;
        if off < self.start || end > self.start + self.buf.len() as u64 {
            let want = n.max(64 << 10);
            self.buf.resize(want, 0);
            let got = self.file.read_at(&mut self.buf, off)?;
            self.buf.truncate(got);
            self.start = off;
        }
        let from = (off - self.start) as usize;
        let to = (from + n).min(self.buf.len());
        Ok(&self.buf[from.min(to)..to])
    }
}

/// One valid event as a scan sees it.
#[derive(Clone, Copy, Debug)]
pub struct EventView<'a> {
    /// Where the event starts in its file.
    pub offset: u64,
    /// Where the next event starts.
    pub end: u64,
    pub xid: u64,
    pub clock: LogicalClock,
    pub payload: &'a [u8],
}

/// Validates the header of `name` and calls `f` for each valid event, in
/// order, up to the first invalid one.
pub fn scan_file(
    vfs: &dyn Vfs,
    name: &str,
    f: impl FnMut(EventView<'_>) -> bool,
) -> Result<FileScan, BinlogError> {
    scan_file_from(vfs, name, FILE_HDR, u64::MAX, f)
}

/// Like [`scan_file`], from the event at `from` and before `upto`; stops
/// early when `f` returns false (the scan's `valid_end` is then the end of
/// the last event `f` accepted).
pub fn scan_file_from(
    vfs: &dyn Vfs,
    name: &str,
    from: u64,
    upto: u64,
    mut f: impl FnMut(EventView<'_>) -> bool,
) -> Result<FileScan, BinlogError> {
    let file = vfs.open(name, false).map_err(io_err("opening", name))?;
    let len = file.len().map_err(io_err("reading the length of", name))?;
    let mut w = Window {
        file: file.as_ref(),
        start: 0,
        buf: Vec::new(),
    };
    let expect = seq_of(name).map(header);
    let hdr = w
        .get(0, FILE_HDR as usize)
        .map_err(io_err("reading the header of", name))?;
    if Some(hdr) != expect.as_deref() {
        return Err(BinlogError::BadHeader {
            file: name.to_string(),
        });
    }
    let mut off = from.max(FILE_HDR);
    let mut events = 0;
    let end = loop {
        if off >= upto {
            break FileEnd::Clean;
        }
        let h = w.get(off, EVENT_HDR).map_err(io_err("reading", name))?;
        if h.is_empty() {
            break FileEnd::Clean;
        }
        let torn = |why: &str| FileEnd::Torn {
            offset: off,
            why: why.to_string(),
        };
        if h.len() < EVENT_HDR {
            break torn("event header cut off");
        }
        let plen = u32::from_le_bytes(h[0..4].try_into().unwrap()) as usize;
        let xid = u64::from_le_bytes(h[4..12].try_into().unwrap());
        let clock = LogicalClock {
            last_committed: u64::from_le_bytes(h[12..20].try_into().unwrap()),
            sequence: u64::from_le_bytes(h[20..28].try_into().unwrap()),
        };
        if plen == 0 {
            let rest = w
                .get(off, (len - off) as usize)
                .map_err(io_err("reading", name))?;
            if rest.iter().all(|&b| b == 0) {
                break FileEnd::Clean;
            }
            break torn("zero-length event followed by data");
        }
        if plen > MAX_PAYLOAD {
            break torn("event length out of range");
        }
        let total = EVENT_HDR + plen + EVENT_TRL;
        let ev = w.get(off, total).map_err(io_err("reading", name))?;
        if ev.len() < total {
            break torn("event cut off");
        }
        let (body, crc) = ev.split_at(EVENT_HDR + plen);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            break torn("event checksum mismatch");
        }
        let view = EventView {
            offset: off,
            end: off + total as u64,
            xid,
            clock,
            payload: &body[EVENT_HDR..],
        };
        if !f(view) {
            break FileEnd::Clean;
        }
        events += 1;
        off += total as u64;
    };
    Ok(FileScan {
        name: name.to_string(),
        events,
        valid_end: off,
        len,
        end,
    })
}

/// Overwrites `[valid_end, len)` of `name` with zeros and syncs it: the
/// torn tail is gone for good, and later appends start at `valid_end`.
pub fn repair_tail(vfs: &dyn Vfs, scan: &FileScan) -> Result<u64, BinlogError> {
    if scan.end == FileEnd::Clean {
        return Ok(0);
    }
    let name = scan.name.as_str();
    let file = vfs.open(name, false).map_err(io_err("opening", name))?;
    let zeros = vec![0u8; 64 << 10];
    let mut off = scan.valid_end;
    while off < scan.len {
        let n = ((scan.len - off) as usize).min(zeros.len());
        file.write_at(&zeros[..n], off)
            .map_err(io_err("zeroing the torn tail of", name))?;
        off += n as u64;
    }
    file.sync_data()
        .map_err(io_err("syncing the repaired tail of", name))?;
    Ok(scan.len - scan.valid_end)
}

/// One event as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub file: String,
    pub offset: u64,
    pub xid: u64,
    pub clock: LogicalClock,
    pub payload: Vec<u8>,
}

/// Every valid event of every indexed file, in binlog order, without
/// changing anything. Errors on a torn event in any file but the last one
/// (only the last file may end torn).
pub fn read_all(vfs: &dyn Vfs) -> Result<Vec<Event>, BinlogError> {
    let Some(names) = read_index(vfs)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let scan = scan_file(vfs, name, |e| {
            out.push(Event {
                file: name.clone(),
                offset: e.offset,
                xid: e.xid,
                clock: e.clock,
                payload: e.payload.to_vec(),
            });
            true
        })?;
        check_not_torn_inside(&scan, i + 1 == names.len())?;
    }
    Ok(out)
}

/// The xid of every valid event of the binlog in `vfs`, in binlog order,
/// without changing anything; None when there is no binlog (no index). For
/// crash checks that compare the binlog with what recovery kept.
pub fn read_xids(vfs: &dyn Vfs) -> Result<Option<Vec<u64>>, BinlogError> {
    if read_index(vfs)?.is_none() {
        return Ok(None);
    }
    Ok(Some(read_all(vfs)?.into_iter().map(|e| e.xid).collect()))
}

/// Only the last file may end torn: earlier ones were synced before rotation.
pub(crate) fn check_not_torn_inside(scan: &FileScan, is_last: bool) -> Result<(), BinlogError> {
    match &scan.end {
        FileEnd::Torn { offset, why } if !is_last => Err(BinlogError::Corrupt {
            file: scan.name.clone(),
            offset: *offset,
            why: why.clone(),
        }),
        _ => Ok(()),
    }
}

/// Appends events to the newest file and rotates at a size limit.
pub struct BinlogWriter {
    vfs: Arc<dyn Vfs>,
    names: Vec<String>,
    file: Arc<dyn VfsFile>,
    seq: u64,
    offset: u64,
    max_size: u64,
    /// The sequence of the last event in the current file (0: none yet).
    sequence: u64,
}

/// Where an event ends in the binlog: file number and offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct BinlogPos {
    pub file: u64,
    pub offset: u64,
}

impl BinlogWriter {
    /// Continues `names`' last file at `offset` (after recovery), whose last
    /// event has sequence `last_sequence`, or creates the first file and the
    /// index when `names` is empty.
    pub fn open(
        vfs: Arc<dyn Vfs>,
        names: Vec<String>,
        offset: u64,
        last_sequence: u64,
        max_size: u64,
    ) -> Result<BinlogWriter, BinlogError> {
        if names.is_empty() {
            let file = create_file(vfs.as_ref(), 1)?;
            let names = vec![file_name(1)];
            write_index(vfs.as_ref(), &names)?;
            return Ok(BinlogWriter {
                vfs,
                names,
                file,
                seq: 1,
                offset: FILE_HDR,
                max_size,
                sequence: 0,
            });
        }
        let last = names.last().expect("non-empty").clone();
        let seq = seq_of(&last).ok_or_else(|| BinlogError::BadIndex {
            why: format!("'{last}' is not a binlog file name"),
        })?;
        let file = vfs.open(&last, false).map_err(io_err("opening", &last))?;
        Ok(BinlogWriter {
            vfs,
            names,
            file,
            seq,
            offset,
            max_size,
            sequence: last_sequence,
        })
    }

    /// Frames one commit group's `(xid, payload, payload_crc)` events into `out`, giving
    /// them the group's logical clock. Call [`BinlogWriter::append`] with
    /// `out` next, before any other group is framed.
    pub fn frame_group<'a>(
        &mut self,
        events: impl IntoIterator<Item = (u64, &'a [u8], &'a crc32fast::Hasher)>,
        out: &mut Vec<u8>,
    ) {
        let last_committed = self.sequence;
        for (xid, payload, crc) in events {
            self.sequence += 1;
            let clock = LogicalClock {
                last_committed,
                sequence: self.sequence,
            };
            encode_event(xid, clock, payload, crc, out);
        }
    }

    /// The end of the last event written.
    pub fn position(&self) -> BinlogPos {
        BinlogPos {
            file: self.seq,
            offset: self.offset,
        }
    }

    /// Writes `events` (framed by [`encode_event`]) at the end of the current file.
    pub fn append(&mut self, events: &[u8]) -> Result<(), BinlogError> {
        let name = self.current_name();
        failpoints::write_at(Target::Binlog, self.file.as_ref(), events, self.offset)
            .map_err(io_err("write to", name))?;
        self.offset += events.len() as u64;
        Ok(())
    }

    /// True once the current file reached `max_binlog_size`.
    pub fn needs_rotation(&self) -> bool {
        self.offset >= self.max_size
    }

    /// Syncs the current file, creates the next one and names it in the index.
    pub fn rotate(&mut self) -> Result<(), BinlogError> {
        let name = self.current_name().to_string();
        failpoints::sync_data(Target::Binlog, self.file.as_ref())
            .map_err(io_err("fdatasync (before rotation) of", &name))?;
        let seq = self.seq + 1;
        let file = create_file(self.vfs.as_ref(), seq)?;
        let mut names = self.names.clone();
        names.push(file_name(seq));
        write_index(self.vfs.as_ref(), &names)?;
        self.names = names;
        self.file = file;
        self.seq = seq;
        self.offset = FILE_HDR;
        self.sequence = 0;
        Ok(())
    }

    /// The file events are appended to now.
    pub fn file(&self) -> Arc<dyn VfsFile> {
        self.file.clone()
    }

    /// The name of the file events are appended to now.
    pub fn current_name(&self) -> &str {
        &self.names[self.names.len() - 1]
    }

    /// Indexed file names, oldest first.
    #[cfg(all(test, not(loom)))]
    pub fn names(&self) -> &[String] {
        &self.names
    }
}
