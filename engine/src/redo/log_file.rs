//! The redo file: a header, then a circular array of 512-byte checksummed blocks.
//!
//! ```text
//! offset 0     header copy A (HEADER_COPY bytes)   magic, version, file size, epoch, crc32
//! offset 2048  header copy B
//! offset 4096  block (b mod nblocks) for lsn block b = lsn / PAYLOAD
//!
//! block: block_no u64 | epoch u32 | data_len u16 | reserved u16 | payload [492] | crc32 u32
//! ```
//! The lsn counts payload bytes only, so block `b` holds lsns
//! `[b * PAYLOAD, (b + 1) * PAYLOAD)`. `data_len < PAYLOAD` marks the last,
//! partial block (rewritten in place as it fills). `epoch` is raised each time
//! the engine opens the log, so a block left behind by an earlier life (written
//! but never synced, then outlived by a crash) is recognised: epochs never
//! decrease along a valid log. A block from an earlier lap has the wrong
//! `block_no`. Records inside the payload stream are `len u32 | crc32 u32 | body`.

use std::io;

use crate::vfs::VfsFile;

use super::Lsn;

pub const BLOCK: usize = 512;
pub const BLOCK_HDR: usize = 16;
pub const BLOCK_TRL: usize = 4;
pub const PAYLOAD: usize = BLOCK - BLOCK_HDR - BLOCK_TRL;
pub const FILE_HDR: u64 = 4096;
const HEADER_COPY: u64 = 2048;
const MAGIC: &[u8; 8] = b"RDOCLOG1";
const VERSION: u32 = 1;
/// Record frame: body length and body checksum.
pub const REC_HDR: usize = 8;

pub fn block_of(lsn: Lsn) -> u64 {
    lsn / PAYLOAD as u64
}

/// Geometry of one redo file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub nblocks: u64,
}

impl Layout {
    pub fn for_file_size(size: u64) -> Layout {
        Layout {
            nblocks: (size - FILE_HDR) / BLOCK as u64,
        }
    }
    pub fn file_size(&self) -> u64 {
        FILE_HDR + self.nblocks * BLOCK as u64
    }
    pub fn offset_of_block(&self, b: u64) -> u64 {
        FILE_HDR + (b % self.nblocks) * BLOCK as u64
    }
    /// Payload bytes the file holds at once.
    pub fn capacity(&self) -> u64 {
        self.nblocks * PAYLOAD as u64
    }
    /// The highest lsn that may be written while the checkpoint is at `cp`:
    /// writing must never reach the block that holds `cp` on the next lap.
    pub fn write_limit(&self, cp: Lsn) -> Lsn {
        (block_of(cp) + self.nblocks) * PAYLOAD as u64
    }
}

/// Fills one block image. `payload` is the block's data (`data_len` bytes).
pub fn encode_block(out: &mut [u8], block_no: u64, epoch: u32, payload: &[u8]) {
    debug_assert_eq!(out.len(), BLOCK);
    out[0..8].copy_from_slice(&block_no.to_le_bytes());
    out[8..12].copy_from_slice(&epoch.to_le_bytes());
    out[12..14].copy_from_slice(&(payload.len() as u16).to_le_bytes());
    out[14..16].fill(0);
    out[BLOCK_HDR..BLOCK_HDR + payload.len()].copy_from_slice(payload);
    out[BLOCK_HDR + payload.len()..BLOCK - BLOCK_TRL].fill(0);
    let crc = crc32fast::hash(&out[..BLOCK - BLOCK_TRL]);
    out[BLOCK - BLOCK_TRL..].copy_from_slice(&crc.to_le_bytes());
}

/// A block as read back, if its checksum holds.
pub struct BlockView<'a> {
    pub block_no: u64,
    pub epoch: u32,
    pub payload: &'a [u8],
}

pub fn decode_block(buf: &[u8]) -> Option<BlockView<'_>> {
    let crc = u32::from_le_bytes(buf[BLOCK - BLOCK_TRL..].try_into().ok()?);
    if crc32fast::hash(&buf[..BLOCK - BLOCK_TRL]) != crc {
        return None;
    }
    let len = u16::from_le_bytes(buf[12..14].try_into().ok()?) as usize;
    if len > PAYLOAD {
        return None;
    }
    Some(BlockView {
        block_no: u64::from_le_bytes(buf[0..8].try_into().ok()?),
        epoch: u32::from_le_bytes(buf[8..12].try_into().ok()?),
        payload: &buf[BLOCK_HDR..BLOCK_HDR + len],
    })
}

/// Frames a record body.
pub fn frame_header(body: &[u8]) -> [u8; REC_HDR] {
    let mut h = [0u8; REC_HDR];
    h[0..4].copy_from_slice(&(body.len() as u32).to_le_bytes());
    h[4..8].copy_from_slice(&crc32fast::hash(body).to_le_bytes());
    h
}

/// The file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub file_size: u64,
    pub epoch: u32,
}

fn encode_header(h: &Header) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..20].copy_from_slice(&h.file_size.to_le_bytes());
    b[20..24].copy_from_slice(&h.epoch.to_le_bytes());
    let crc = crc32fast::hash(&b[..28]);
    b[28..32].copy_from_slice(&crc.to_le_bytes());
    b
}

fn decode_header(b: &[u8; 32]) -> Option<Header> {
    if &b[0..8] != MAGIC || u32::from_le_bytes(b[8..12].try_into().ok()?) != VERSION {
        return None;
    }
    if crc32fast::hash(&b[..28]) != u32::from_le_bytes(b[28..32].try_into().ok()?) {
        return None;
    }
    Some(Header {
        file_size: u64::from_le_bytes(b[12..20].try_into().ok()?),
        epoch: u32::from_le_bytes(b[20..24].try_into().ok()?),
    })
}

/// Writes both header copies, each made durable before the next is touched,
/// so a torn header write always leaves one valid copy.
pub fn write_header(file: &dyn VfsFile, h: &Header) -> io::Result<()> {
    let b = encode_header(h);
    file.write_at(&b, 0)?;
    file.sync_data()?;
    file.write_at(&b, HEADER_COPY)?;
    file.sync_data()
}

/// Seals the end of a recovered log for a new life writing with `epoch`:
/// rewrites the block holding `end` with its payload before `end` (empty
/// when `end` starts a block) and syncs it, before the new life appends.
///
/// Why: the dead life may have written that block further (records past
/// `end` that did not survive, or that recovery could not read whole), and
/// the new life's first rewrite of it may itself be lost in the next
/// crash. Then the dead version would come back, its epoch no higher than
/// the blocks after it, and a scan would splice the dead life's bytes with
/// the new life's into one record stream. Sealed, the block holding `end`
/// is of this life in every later image, and each dead block after it has
/// a lower epoch and stops the scan.
///
/// Nothing is written when that block's slot still holds the checkpoint's
/// block (a log full to the last block): no dead version of it can exist.
pub fn seal_end(
    file: &dyn VfsFile,
    layout: Layout,
    checkpoint: Lsn,
    epoch: u32,
    end: Lsn,
    partial: &[u8],
) -> io::Result<()> {
    if end >= layout.write_limit(checkpoint) {
        return Ok(());
    }
    let b = block_of(end);
    debug_assert_eq!(partial.len() as u64, end - b * PAYLOAD as u64);
    let mut buf = [0u8; BLOCK];
    encode_block(&mut buf, b, epoch, partial);
    file.write_at(&buf, layout.offset_of_block(b))?;
    file.sync_data()
}

/// Reads the valid header copy with the highest epoch.
pub fn read_header(file: &dyn VfsFile) -> io::Result<Option<Header>> {
    let mut best: Option<Header> = None;
    for off in [0, HEADER_COPY] {
        let mut b = [0u8; 32];
        if file.read_at(&mut b, off)? == 32 {
            if let Some(h) = decode_header(&b) {
                if best.is_none_or(|x| h.epoch > x.epoch) {
                    best = Some(h);
                }
            }
        }
    }
    Ok(best)
}

/// Creates a preallocated, zero-filled redo file (so later `fdatasync`s
/// need no metadata update) with a header at epoch 0.
pub fn format(file: &dyn VfsFile, size: u64) -> io::Result<Layout> {
    let layout = Layout::for_file_size(size);
    let zeros = vec![0u8; 1 << 20];
    let mut off = 0;
    while off < layout.file_size() {
        let n = (layout.file_size() - off).min(zeros.len() as u64) as usize;
        file.write_at(&zeros[..n], off)?;
        off += n as u64;
    }
    write_header(
        file,
        &Header {
            file_size: layout.file_size(),
            epoch: 0,
        },
    )?;
    Ok(layout)
}

/// Why a scan stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum StopReason {
    /// The last block was partial and its records all parsed: a clean end.
    CleanEnd,
    /// A block failed its checksum.
    CorruptBlock { block_no: u64 },
    /// A block belongs to an earlier lap of the circular file.
    StaleBlock { block_no: u64, found_no: u64 },
    /// A block was left by an earlier life of the log (lower epoch).
    OldEpoch { block_no: u64 },
    /// A record's checksum or length is wrong.
    CorruptRecord { lsn: Lsn },
    /// The log ends inside a record (a torn tail).
    TornRecord { lsn: Lsn },
    /// The consumer refused a record.
    Rejected { lsn: Lsn, reason: String },
}

/// What a scan found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ScanReport {
    pub start_lsn: Lsn,
    /// End of the last valid record: the log continues from here.
    pub end_lsn: Lsn,
    pub records: u64,
    pub stop: StopReason,
    /// Bytes in valid blocks past `end_lsn` that were discarded.
    pub truncated_bytes: u64,
    /// The payload of `end_lsn`'s block before `end_lsn`, for the writer to
    /// rewrite that block with.
    #[serde(skip)]
    pub partial_block: Vec<u8>,
}

/// Reads records from `start` (a record boundary) until the first torn or
/// corrupt one, handing each body to `apply(start_lsn, body)`.
pub fn scan(
    file: &dyn VfsFile,
    layout: Layout,
    start: Lsn,
    max_record: usize,
    mut apply: impl FnMut(Lsn, &[u8]) -> Result<(), String>,
) -> io::Result<ScanReport> {
    let p = PAYLOAD as u64;
    let mut stream: Vec<u8> = Vec::new(); // payload bytes from `stream_lsn`
    let mut stream_lsn = start;
    let mut records = 0;
    let mut prev_epoch = 0u32;
    let mut buf = vec![0u8; BLOCK];
    let mut valid_end = start; // end of payload in valid blocks
    let mut stop = StopReason::CleanEnd;
    let mut rejected = None;
    let first_block = block_of(start);
    'blocks: for b in first_block..first_block + layout.nblocks {
        if file.read_at(&mut buf, layout.offset_of_block(b))? != BLOCK {
            stop = StopReason::CorruptBlock { block_no: b };
            break;
        }
        let Some(v) = decode_block(&buf) else {
            // A zero block was never written (a new file): the log ends here.
            if buf.iter().all(|&x| x == 0) {
                stop = StopReason::CleanEnd;
            } else {
                stop = StopReason::CorruptBlock { block_no: b };
            }
            break;
        };
        if v.block_no != b {
            stop = StopReason::StaleBlock {
                block_no: b,
                found_no: v.block_no,
            };
            break;
        }
        if v.epoch < prev_epoch {
            stop = StopReason::OldEpoch { block_no: b };
            break;
        }
        prev_epoch = v.epoch;
        let block_start = b * p;
        let from = start.saturating_sub(block_start) as usize;
        if v.payload.len() < from {
            // The checkpoint's block never got as far as the checkpoint: nothing after it.
            stop = StopReason::CleanEnd;
            break;
        }
        stream.extend_from_slice(&v.payload[from..]);
        valid_end = block_start + v.payload.len() as u64;
        // Parse every complete record in the stream.
        loop {
            let avail = &stream[(stream_lsn - (valid_end - stream.len() as u64)) as usize..];
            if avail.len() < REC_HDR {
                break;
            }
            let len = u32::from_le_bytes(avail[0..4].try_into().unwrap()) as usize;
            let crc = u32::from_le_bytes(avail[4..8].try_into().unwrap());
            if len == 0 || len > max_record {
                stop = StopReason::CorruptRecord { lsn: stream_lsn };
                break 'blocks;
            }
            if avail.len() < REC_HDR + len {
                break;
            }
            let body = &avail[REC_HDR..REC_HDR + len];
            if crc32fast::hash(body) != crc {
                stop = StopReason::CorruptRecord { lsn: stream_lsn };
                break 'blocks;
            }
            if let Err(reason) = apply(stream_lsn, body) {
                rejected = Some(StopReason::Rejected {
                    lsn: stream_lsn,
                    reason,
                });
                break 'blocks;
            }
            records += 1;
            stream_lsn += (REC_HDR + len) as u64;
        }
        // Drop consumed bytes to keep the stream small.
        let keep_from = (stream_lsn - (valid_end - stream.len() as u64)) as usize;
        stream.drain(..keep_from);
        if v.payload.len() < PAYLOAD {
            break; // the last, partial block
        }
    }
    if let Some(r) = rejected {
        stop = r;
    }
    if stop == StopReason::CleanEnd && stream_lsn < valid_end {
        stop = StopReason::TornRecord { lsn: stream_lsn };
    }
    // The payload of end's block before `end`, re-read for the writer.
    let end = stream_lsn;
    let eb = block_of(end);
    let mut partial = Vec::new();
    if !end.is_multiple_of(p) {
        file.read_at(&mut buf, layout.offset_of_block(eb))?;
        if let Some(v) = decode_block(&buf) {
            let n = (end - eb * p) as usize;
            if v.block_no == eb && v.payload.len() >= n {
                partial.extend_from_slice(&v.payload[..n]);
            }
        }
        if partial.len() != (end - eb * p) as usize {
            return Err(io::Error::other(format!(
                "redo block {eb} changed while recovery read it"
            )));
        }
    }
    Ok(ScanReport {
        start_lsn: start,
        end_lsn: end,
        records,
        stop,
        truncated_bytes: valid_end.saturating_sub(end),
        partial_block: partial,
    })
}
