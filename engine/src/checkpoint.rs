//! Checkpoint files: a base image of every table, then deltas on top of it.
//!
//! Base `checkpoint-<lsn, 20 digits>.img`:
//! `magic "RDOCCKPT" | lsn u64 | max_trx_id u64 | catalog image | crc32 u32`
//! (the catalog image carries its own checksum too).
//!
//! Delta `checkpoint-<base lsn, 20 digits>-<seq, 6 digits>.delta`:
//! `magic "RDOCDLTA" | base_lsn u64 | base_crc u32 | seq u32 | lsn u64 |
//! max_trx_id u64 | catalog delta | crc32 u32`: the rows changed since the
//! checkpoint before it (`crate::data::delta`). `base_crc` is the base
//! file's crc32 trailer, so a delta never applies to another base written
//! at the same lsn; `seq` counts from 1 on each base.
//!
//! Every file is written to `checkpoint.tmp`, fdatasync'd, renamed into place
//! and the directory synced; only then may redo space below its lsn be
//! reused. The state at a checkpoint is its base plus its deltas 1..=seq in
//! order. A new base removes every delta (they belong to older bases); the
//! two newest bases are kept.
//!
//! A base can also be written in the background ([`write_pending_base`]):
//! from a snapshot of the tables taken right after delta `s` took its
//! changes, to `checkpoint-base.tmp`, in synced pieces, while deltas
//! `s+1..` go on freeing log space on the current base and record what they
//! take. It is published by the first delta written after it is durable
//! ([`publish_pending_base`]): that delta holds every change since the
//! snapshot and is written as delta 1 of the new base (named after the
//! lsn of delta `s`), then the base is renamed into place. A crash before
//! the rename leaves the old chain whole (the new delta names a base that
//! does not exist and is removed as stale); after it, the new chain is
//! whole and the old deltas are stale.
//!
//! Each file is fuzzy: rows are copied table by table while commits go on.
//! Its lsn is the `recent_closed` tail taken *before* copying, so every
//! commit below it is in the file; commits above it may or may not be, and
//! replaying them (full after-images, idempotent) yields the exact state.
//! Before a file is published, the redo log is flushed past every commit
//! it may contain, so a checkpoint never holds a commit the log lost.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use std::sync::Arc;

use crate::data::catalog::Catalog;
use crate::data::snapshot::Snapshot;
use crate::failpoints::{self, Target};
use crate::file_error::{path_in, FileError};
use crate::page_store::store::PageStore;
use crate::redo::Lsn;
use crate::vfs::Vfs;

const MAGIC: &[u8; 8] = b"RDOCCKPT";
const DELTA_MAGIC: &[u8; 8] = b"RDOCDLTA";
const PREFIX: &str = "checkpoint-";
const SUFFIX: &str = ".img";
const DELTA_SUFFIX: &str = ".delta";
/// Delta header: magic, base lsn, base crc, seq, lsn, max trx id.
const DELTA_HEADER: usize = 8 + 8 + 4 + 4 + 8 + 8;
const TMP: &str = "checkpoint.tmp";
/// Where a base written in the background waits to be published.
pub const PENDING: &str = "checkpoint-base.tmp";
const KEEP: usize = 2;

pub fn file_name(lsn: Lsn) -> String {
    format!("{PREFIX}{lsn:020}{SUFFIX}")
}

/// The file name of delta `seq` on the base at `base_lsn`.
pub fn delta_file_name(base_lsn: Lsn, seq: u32) -> String {
    format!("{PREFIX}{base_lsn:020}-{seq:06}{DELTA_SUFFIX}")
}

fn lsn_of(name: &str) -> Option<Lsn> {
    name.strip_prefix(PREFIX)?
        .strip_suffix(SUFFIX)?
        .parse()
        .ok()
}

/// The base lsn and seq a delta's file name carries.
fn delta_of(name: &str) -> Option<(Lsn, u32)> {
    let (lsn, seq) = name
        .strip_prefix(PREFIX)?
        .strip_suffix(DELTA_SUFFIX)?
        .split_once('-')?;
    Some((lsn.parse().ok()?, seq.parse().ok()?))
}

fn err(op: &'static str, path: String) -> impl FnOnce(io::Error) -> FileError {
    move |e: io::Error| FileError::new(op, path, e)
}

/// Creates the temporary file `name` empty (a leftover of an interrupted
/// write is removed first); returns it with its path for errors.
fn create_fresh(
    vfs: &dyn Vfs,
    name: &str,
) -> Result<(std::sync::Arc<dyn crate::vfs::VfsFile>, String), FileError> {
    let path = path_in(vfs, name);
    if vfs.exists(name) {
        vfs.remove(name).map_err(err("removal of", path.clone()))?;
    }
    let f = vfs
        .open(name, true)
        .map_err(err("creation of", path.clone()))?;
    Ok((f, path))
}

/// Writes `buf` durably as `name`: to the temporary file, fdatasync,
/// rename into place, fsync of the directory.
fn publish(vfs: &dyn Vfs, name: &str, buf: &[u8]) -> Result<(), FileError> {
    let (f, tmp) = create_fresh(vfs, TMP)?;
    failpoints::write_at(Target::Checkpoint, f.as_ref(), buf, 0)
        .map_err(err("write to", tmp.clone()))?;
    failpoints::sync_data(Target::Checkpoint, f.as_ref())
        .map_err(err("fdatasync of", tmp.clone()))?;
    vfs.rename(TMP, name)
        .map_err(err("rename into place of", tmp))?;
    vfs.sync_dir()
        .map_err(err("fsync of the directory", vfs.describe()))
}

/// Where the chain of checkpoint files stands: its base, and the deltas
/// written on it so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    pub base_lsn: Lsn,
    /// The base file's crc32 trailer (each delta names it).
    pub base_crc: u32,
    pub base_bytes: u64,
    /// Deltas on this base so far (the next one is `deltas + 1`).
    pub deltas: u32,
    /// Their bytes, summed.
    pub delta_bytes: u64,
    /// The newest checkpoint's lsn (the base's, or its last delta's).
    pub lsn: Lsn,
}

impl Chain {
    /// The chain a base starts: no deltas yet.
    fn on_base(lsn: Lsn, crc: u32, bytes: u64) -> Chain {
        Chain {
            base_lsn: lsn,
            base_crc: crc,
            base_bytes: bytes,
            deltas: 0,
            delta_bytes: 0,
            lsn,
        }
    }

    /// Whether the next checkpoint should be a new base: once the deltas
    /// add up to the base's size, recovery reads as much of them as of the
    /// base, and a new base keeps the cost of a change O(1) amortised.
    pub fn wants_base(&self) -> bool {
        self.delta_bytes >= self.base_bytes
    }
}

/// Writes and publishes a base image durably; then removes every delta
/// (they belong to older bases) and the bases older than the newest `KEEP`.
/// Returns the chain it starts. An error names the file and what was done
/// to it; the files published before are untouched by it.
pub fn write(
    vfs: &dyn Vfs,
    lsn: Lsn,
    max_trx_id: u64,
    catalog_image: &[u8],
) -> Result<Chain, FileError> {
    let mut buf = Vec::with_capacity(catalog_image.len() + 32);
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&lsn.to_le_bytes());
    buf.extend_from_slice(&max_trx_id.to_le_bytes());
    buf.extend_from_slice(catalog_image);
    let crc = crc32fast::hash(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    publish(vfs, &file_name(lsn), &buf)?;
    prune(vfs, None)?;
    Ok(Chain::on_base(lsn, crc, buf.len() as u64))
}

/// Removes every delta except those of the base at `keep_deltas_of` (the
/// others belong to older bases) and the bases older than the newest `KEEP`.
fn prune(vfs: &dyn Vfs, keep_deltas_of: Option<Lsn>) -> Result<(), FileError> {
    let dir = vfs.describe();
    let names = vfs
        .list()
        .map_err(err("listing of the directory", dir.clone()))?;
    let mut images: Vec<Lsn> = names.iter().filter_map(|n| lsn_of(n)).collect();
    images.sort_unstable_by_key(|l| std::cmp::Reverse(*l));
    let mut old: Vec<String> = names
        .into_iter()
        .filter(|n| delta_of(n).is_some_and(|(base, _)| Some(base) != keep_deltas_of))
        .collect();
    old.extend(images.iter().skip(KEEP).map(|l| file_name(*l)));
    if !old.is_empty() {
        for name in &old {
            vfs.remove(name)
                .map_err(err("removal of", path_in(vfs, name)))?;
        }
        vfs.sync_dir().map_err(err("fsync of the directory", dir))?;
    }
    Ok(())
}

/// How a base written in the background shares the device with the redo
/// log: one fdatasync of hundreds of MB held the redo's fdatasyncs for
/// 20-150 ms (engine/bench/RESULTS.md, "Checkpoints under the insert load").
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Bytes written between two fdatasyncs.
    pub sync_every: usize,
    /// After each synced piece, stay idle for this multiple of the time the
    /// piece took (1.0: at most half the device's speed).
    pub idle_ratio: f64,
}

impl Default for Pace {
    fn default() -> Pace {
        Pace {
            sync_every: 4 << 20,
            idle_ratio: 1.0,
        }
    }
}

/// A base written and synced under [`PENDING`], waiting for the delta that
/// publishes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingBase {
    pub lsn: Lsn,
    pub crc: u32,
    pub bytes: u64,
}

/// A file written in synced pieces, keeping the crc32 of what it wrote.
struct PacedFile<'a> {
    f: std::sync::Arc<dyn crate::vfs::VfsFile>,
    path: String,
    pace: Pace,
    hurry: &'a AtomicBool,
    abort: &'a AtomicBool,
    crc: crc32fast::Hasher,
    at: u64,
    unsynced: usize,
    piece_start: Instant,
}

impl PacedFile<'_> {
    fn put(&mut self, buf: &[u8]) -> Result<(), FileError> {
        if self.abort.load(Ordering::Acquire) {
            return Err(FileError::new(
                "write to",
                self.path.clone(),
                io::Error::other("stopped: the engine is closing"),
            ));
        }
        self.crc.update(buf);
        failpoints::write_at(Target::Checkpoint, self.f.as_ref(), buf, self.at)
            .map_err(err("write to", self.path.clone()))?;
        self.at += buf.len() as u64;
        self.unsynced += buf.len();
        if self.unsynced >= self.pace.sync_every {
            self.sync()?;
            if !self.hurry.load(Ordering::Acquire) {
                let idle = self.piece_start.elapsed().mul_f64(self.pace.idle_ratio);
                std::thread::sleep(idle.min(Duration::from_millis(200)));
            }
            self.piece_start = Instant::now();
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), FileError> {
        self.unsynced = 0;
        failpoints::sync_data(Target::Checkpoint, self.f.as_ref())
            .map_err(err("fdatasync of", self.path.clone()))
    }
}

/// Writes a base of `snapshot` at `lsn` to [`PENDING`] and syncs it,
/// `pace.sync_every` bytes at a time. `hurry` (checked between pieces)
/// drops the idle time; `abort` stops the write with an error. Nothing is
/// published: see [`publish_pending_base`].
pub fn write_pending_base(
    vfs: &dyn Vfs,
    lsn: Lsn,
    max_trx_id: u64,
    snapshot: &Snapshot,
    pace: Pace,
    hurry: &AtomicBool,
    abort: &AtomicBool,
) -> Result<PendingBase, FileError> {
    let (f, path) = create_fresh(vfs, PENDING)?;
    let mut file = PacedFile {
        f,
        path,
        pace,
        hurry,
        abort,
        crc: crc32fast::Hasher::new(),
        at: 0,
        unsynced: 0,
        piece_start: Instant::now(),
    };
    let mut header = Vec::with_capacity(24);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&lsn.to_le_bytes());
    header.extend_from_slice(&max_trx_id.to_le_bytes());
    file.put(&header)?;
    snapshot.write_image(pace.sync_every.clamp(4096, 1 << 20), |b| file.put(b))?;
    let crc = file.crc.clone().finalize();
    file.put(&crc.to_le_bytes())?;
    file.sync()?;
    Ok(PendingBase {
        lsn,
        crc,
        bytes: file.at,
    })
}

/// Publishes a base written by [`write_pending_base`] with its first delta
/// (`catch_up`: every change since the base's snapshot): the delta as delta
/// 1 of the new base, then the base renamed into place, then the old
/// chain's files removed. On success `chain` is the new chain; on an error
/// it is unchanged, and recovery finds either the old chain or the new one
/// whole (module docs).
pub fn publish_pending_base(
    vfs: &dyn Vfs,
    chain: &mut Chain,
    pending: &PendingBase,
    lsn: Lsn,
    max_trx_id: u64,
    catch_up: &[u8],
) -> Result<u64, FileError> {
    let mut next = Chain::on_base(pending.lsn, pending.crc, pending.bytes);
    let bytes = write_delta(vfs, &mut next, lsn, max_trx_id, catch_up)?;
    let name = file_name(pending.lsn);
    vfs.rename(PENDING, &name)
        .map_err(err("rename into place of", path_in(vfs, PENDING)))?;
    vfs.sync_dir()
        .map_err(err("fsync of the directory", vfs.describe()))?;
    prune(vfs, Some(pending.lsn))?;
    *chain = next;
    Ok(bytes)
}

/// Writes and publishes the next delta of `chain` durably and advances the
/// chain. On an error the chain is unchanged and so are the files
/// published before.
pub fn write_delta(
    vfs: &dyn Vfs,
    chain: &mut Chain,
    lsn: Lsn,
    max_trx_id: u64,
    catalog_delta: &[u8],
) -> Result<u64, FileError> {
    let seq = chain.deltas + 1;
    let mut buf = Vec::with_capacity(catalog_delta.len() + DELTA_HEADER + 4);
    buf.extend_from_slice(DELTA_MAGIC);
    buf.extend_from_slice(&chain.base_lsn.to_le_bytes());
    buf.extend_from_slice(&chain.base_crc.to_le_bytes());
    buf.extend_from_slice(&seq.to_le_bytes());
    buf.extend_from_slice(&lsn.to_le_bytes());
    buf.extend_from_slice(&max_trx_id.to_le_bytes());
    buf.extend_from_slice(catalog_delta);
    let crc = crc32fast::hash(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    publish(vfs, &delta_file_name(chain.base_lsn, seq), &buf)?;
    chain.deltas = seq;
    chain.delta_bytes += buf.len() as u64;
    chain.lsn = lsn;
    Ok(buf.len() as u64)
}

/// A loaded checkpoint: a base image with the deltas that chain on it.
pub struct Image {
    /// The newest file applied (the base, or its last delta).
    pub file: String,
    pub lsn: Lsn,
    pub max_trx_id: u64,
    pub catalog: Catalog,
    pub chain: Chain,
    /// Delta files that are not part of the chain loaded (of an older base,
    /// or after a gap or a damaged delta): never to be applied again; and a
    /// base written in the background that was never published.
    pub stale: Vec<String>,
}

fn read_file(vfs: &dyn Vfs, name: &str) -> Result<Vec<u8>, String> {
    let f = vfs.open(name, false).map_err(|e| e.to_string())?;
    let len = f.len().map_err(|e| e.to_string())? as usize;
    let mut buf = vec![0u8; len];
    if f.read_at(&mut buf, 0).map_err(|e| e.to_string())? != len {
        return Err("truncated".into());
    }
    Ok(buf)
}

/// Checks a file's crc32 trailer; returns the body and the crc.
fn checked(buf: &[u8], min: usize) -> Result<(&[u8], u32), String> {
    if buf.len() < min + 4 {
        return Err("truncated".into());
    }
    let (body, crc) = buf.split_at(buf.len() - 4);
    let crc = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    if crc32fast::hash(body) != crc {
        return Err("checksum mismatch".into());
    }
    Ok((body, crc))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn read_one(vfs: &dyn Vfs, name: &str, store: Option<&Arc<PageStore>>) -> Result<Image, String> {
    let buf = read_file(vfs, name)?;
    let (body, crc) = checked(&buf, 8 + 16)?;
    if &body[..8] != MAGIC {
        return Err("not a checkpoint image".into());
    }
    let lsn = u64_at(body, 8);
    let max_trx_id = u64_at(body, 16);
    if Some(lsn) != lsn_of(name) {
        return Err(format!("lsn {lsn} inside does not match the file name"));
    }
    let catalog =
        Catalog::read_image_with(&body[24..], store.cloned()).map_err(|e| e.to_string())?;
    Ok(Image {
        file: name.to_string(),
        lsn,
        max_trx_id,
        catalog,
        chain: Chain::on_base(lsn, crc, buf.len() as u64),
        stale: Vec::new(),
    })
}

/// Reads delta `seq` of `image`'s chain and applies it. `Ok(false)`: the
/// delta is damaged or not of this chain (the reason is in `skipped`),
/// and nothing was changed.
fn apply_delta(
    vfs: &dyn Vfs,
    image: &mut Image,
    name: &str,
    seq: u32,
    skipped: &mut Skipped,
) -> io::Result<bool> {
    let parsed = read_file(vfs, name).and_then(|buf| {
        let (body, _) = checked(&buf, DELTA_HEADER)?;
        if &body[..8] != DELTA_MAGIC {
            return Err("not a checkpoint delta".into());
        }
        let base_lsn = u64_at(body, 8);
        let base_crc = u32::from_le_bytes(body[16..20].try_into().expect("4 bytes"));
        let inner_seq = u32::from_le_bytes(body[20..24].try_into().expect("4 bytes"));
        let lsn = u64_at(body, 24);
        let max_trx_id = u64_at(body, 32);
        if (base_lsn, inner_seq) != (image.chain.base_lsn, seq) {
            return Err(format!(
                "base lsn {base_lsn} and seq {inner_seq} inside do not match the file name"
            ));
        }
        if base_crc != image.chain.base_crc {
            return Err(format!(
                "written on another base at lsn {base_lsn} (base crc {base_crc:#010x}, \
                 found {:#010x})",
                image.chain.base_crc
            ));
        }
        if lsn < image.lsn {
            return Err(format!(
                "lsn {lsn} is below its predecessor's {}",
                image.lsn
            ));
        }
        let delta = crate::data::delta::parse(&body[DELTA_HEADER..]).map_err(|e| e.to_string())?;
        Ok((lsn, max_trx_id, delta, buf.len() as u64))
    });
    let (lsn, max_trx_id, delta, bytes) = match parsed {
        Ok(p) => p,
        Err(why) => {
            skipped.push((name.to_string(), why));
            return Ok(false);
        }
    };
    image
        .catalog
        .apply_parsed(delta)
        .map_err(|e| io::Error::other(format!("checkpoint delta {name} does not apply: {e}")))?;
    image.file = name.to_string();
    image.lsn = lsn;
    image.max_trx_id = image.max_trx_id.max(max_trx_id);
    image.chain.deltas = seq;
    image.chain.delta_bytes += bytes;
    image.chain.lsn = lsn;
    Ok(true)
}

/// Files that failed validation and were skipped: (file name, why).
pub type Skipped = Vec<(String, String)>;

/// The newest valid base with every delta that chains on it, in order, up
/// to the first missing or damaged one; and the newer files that were
/// skipped (with why). The catalog comes back marked clean: the next
/// delta holds only what changes after this.
#[cfg(test)]
pub fn load_newest(vfs: &dyn Vfs) -> io::Result<(Option<Image>, Skipped)> {
    load_newest_with(vfs, None)
}

/// [`load_newest`] into catalogs whose tables keep their rows in `store`.
pub fn load_newest_with(
    vfs: &dyn Vfs,
    store: Option<&Arc<PageStore>>,
) -> io::Result<(Option<Image>, Skipped)> {
    let all = vfs.list()?;
    let mut names: Vec<(Lsn, String)> = all
        .iter()
        .filter_map(|n| lsn_of(n).map(|l| (l, n.clone())))
        .collect();
    names.sort_unstable_by_key(|n| std::cmp::Reverse(n.0));
    let mut skipped = Vec::new();
    for (base_lsn, name) in names {
        let mut image = match read_one(vfs, &name, store) {
            Ok(img) => img,
            Err(why) => {
                skipped.push((name, why));
                continue;
            }
        };
        let mut deltas: Vec<(u32, String)> = all
            .iter()
            .filter_map(|n| {
                delta_of(n)
                    .filter(|d| d.0 == base_lsn)
                    .map(|d| (d.1, n.clone()))
            })
            .collect();
        deltas.sort_unstable();
        let mut applied = 0;
        for (seq, delta) in &deltas {
            if *seq != applied + 1 || !apply_delta(vfs, &mut image, delta, *seq, &mut skipped)? {
                break;
            }
            applied += 1;
        }
        let chain: Vec<&String> = deltas.iter().take(applied as usize).map(|d| &d.1).collect();
        image.stale = all
            .iter()
            .filter(|n| (delta_of(n).is_some() && !chain.contains(n)) || *n == PENDING)
            .cloned()
            .collect();
        image.catalog.mark_clean();
        return Ok((Some(image), skipped));
    }
    Ok((None, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::table::Row;
    use crate::vfs::SimVfs;

    fn row(k: i32) -> Row {
        Row {
            k,
            c: format!("c{k}"),
            pad: "p".into(),
        }
    }

    fn base(vfs: &SimVfs, cat: &Catalog, lsn: Lsn) -> Chain {
        cat.take_all_dirty();
        let mut img = Vec::new();
        cat.write_image(&mut img);
        write(vfs, lsn, lsn, &img).unwrap()
    }

    fn delta(vfs: &SimVfs, cat: &Catalog, chain: &mut Chain, lsn: Lsn) {
        let mut d = Vec::new();
        cat.write_delta(&mut d);
        write_delta(vfs, chain, lsn, lsn, &d).unwrap();
    }

    /// The checkpoint that loads from `vfs` (there must be one).
    fn newest(vfs: &SimVfs) -> Image {
        load_newest(vfs).unwrap().0.expect("a checkpoint")
    }

    fn names(vfs: &SimVfs) -> Vec<String> {
        let mut n = vfs.list().unwrap();
        n.sort();
        n
    }

    #[test]
    fn the_newest_base_and_its_deltas_load_in_order() {
        let vfs = SimVfs::new();
        let cat = Catalog::new();
        let t = cat.create_table("t").unwrap();
        let mut chain = base(&vfs, &cat, 100);
        for (i, lsn) in [200, 300, 300].into_iter().enumerate() {
            cat.bulk_insert(t, [(i as i64, row(i as i32))]).unwrap();
            delta(&vfs, &cat, &mut chain, lsn);
        }
        cat.table(t).unwrap().remove_committed(0);
        delta(&vfs, &cat, &mut chain, 400);
        let (img, skipped) = load_newest(&vfs).unwrap();
        let img = img.unwrap();
        assert!(skipped.is_empty(), "{skipped:?}");
        assert_eq!(img.catalog.dump(), cat.dump());
        assert_eq!((img.lsn, img.max_trx_id), (400, 400));
        assert_eq!(img.file, delta_file_name(100, 4));
        assert_eq!(img.chain, chain);
        // The chain continues where it stopped: the loaded catalog is clean.
        let mut d = Vec::new();
        assert_eq!(img.catalog.write_delta(&mut d).rows, 0);
    }

    /// A base written aside from a snapshot taken after delta 1: two more
    /// deltas record what they take; returns the chain, the pending base
    /// and the changes carried.
    fn aside_with_two_deltas(
        vfs: &SimVfs,
        cat: &Catalog,
        t: crate::data::table::TableId,
    ) -> (Chain, PendingBase, crate::data::delta::Carried) {
        let mut chain = base(vfs, cat, 10);
        cat.bulk_insert(t, (0..50).map(|i| (i, row(1)))).unwrap();
        delta(vfs, cat, &mut chain, 20);
        let snap = cat.snapshot();
        let mut carried = crate::data::delta::Carried::default();
        cat.bulk_insert(t, (40..60).map(|i| (i, row(2)))).unwrap();
        let no = AtomicBool::new(false);
        let pace = Pace {
            sync_every: 64,
            idle_ratio: 0.0,
        };
        let pending = write_pending_base(vfs, 20, 20, &snap, pace, &no, &no).unwrap();
        for (lsn, id) in [(30, 0), (40, 1)] {
            cat.table(t).unwrap().remove_committed(id);
            let mut d = Vec::new();
            cat.write_delta_recording(&mut d, &mut carried);
            write_delta(vfs, &mut chain, lsn, lsn, &d).unwrap();
        }
        assert_eq!(carried.len(), 22);
        (chain, pending, carried)
    }

    #[test]
    fn a_base_written_aside_is_published_by_a_delta_of_everything_since() {
        let vfs = SimVfs::new();
        let cat = Catalog::new();
        let t = cat.create_table("t").unwrap();
        let (mut chain, pending, carried) = aside_with_two_deltas(&vfs, &cat, t);
        // Written, not published: the old chain is what loads.
        let img = newest(&vfs);
        assert_eq!((img.chain.base_lsn, img.chain.deltas), (10, 3));
        assert_eq!(img.catalog.dump(), cat.dump());
        assert_eq!(img.stale, [PENDING.to_string()]);

        cat.bulk_insert(t, [(99, row(3))]).unwrap();
        let mut d = Vec::new();
        cat.write_delta_with_carried(&mut d, carried);
        publish_pending_base(&vfs, &mut chain, &pending, 50, 50, &d).unwrap();
        assert_eq!(
            names(&vfs),
            [file_name(10), delta_file_name(20, 1), file_name(20)]
        );
        assert_eq!((chain.base_lsn, chain.deltas, chain.lsn), (20, 1, 50));
        let (img, skipped) = load_newest(&vfs).unwrap();
        let img = img.unwrap();
        assert!(skipped.is_empty() && img.stale.is_empty(), "{skipped:?}");
        assert_eq!(img.catalog.dump(), cat.dump());
        assert_eq!(img.chain, chain);
    }

    #[test]
    fn a_crash_while_publishing_leaves_one_whole_chain() {
        let cat = Catalog::new();
        let vfs = SimVfs::new();
        let t = cat.create_table("t").unwrap();
        let (_, pending, carried) = aside_with_two_deltas(&vfs, &cat, t);
        let want = cat.dump();
        let mut d = Vec::new();
        cat.write_delta_with_carried(&mut d, carried);
        // The new chain's first delta is durable, the rename is not done:
        // the delta names a base that does not exist, so the old chain loads
        // and the new delta is stale.
        let mut next = Chain::on_base(pending.lsn, pending.crc, pending.bytes);
        write_delta(&vfs, &mut next, 50, 50, &d).unwrap();
        let img = newest(&vfs);
        assert_eq!((img.chain.base_lsn, img.chain.deltas), (10, 3));
        assert_eq!(img.catalog.dump(), want);
        let mut stale = img.stale.clone();
        stale.sort();
        assert_eq!(stale, [delta_file_name(20, 1), PENDING.to_string()]);
        // Renamed, the old deltas not yet removed: the new chain loads and
        // the old deltas are stale.
        vfs.rename(PENDING, &file_name(20)).unwrap();
        let img = newest(&vfs);
        assert_eq!((img.chain.base_lsn, img.chain.deltas), (20, 1));
        assert_eq!(img.catalog.dump(), want);
        let mut stale = img.stale.clone();
        stale.sort();
        assert_eq!(
            stale,
            [
                delta_file_name(10, 1),
                delta_file_name(10, 2),
                delta_file_name(10, 3)
            ]
        );
    }

    #[test]
    fn a_base_written_aside_stops_when_told() {
        let vfs = SimVfs::new();
        let cat = Catalog::new();
        let t = cat.create_table("t").unwrap();
        cat.bulk_insert(t, (0..100).map(|i| (i, row(1)))).unwrap();
        let (no, yes) = (AtomicBool::new(false), AtomicBool::new(true));
        let e = write_pending_base(&vfs, 1, 1, &cat.snapshot(), Pace::default(), &no, &yes)
            .unwrap_err();
        assert!(e.to_string().contains("closing"), "{e}");
    }

    #[test]
    fn a_new_base_removes_the_deltas_and_keeps_two_bases() {
        let vfs = SimVfs::new();
        let cat = Catalog::new();
        cat.create_table("t").unwrap();
        let mut chain = base(&vfs, &cat, 10);
        delta(&vfs, &cat, &mut chain, 20);
        base(&vfs, &cat, 30);
        let mut chain = base(&vfs, &cat, 40);
        delta(&vfs, &cat, &mut chain, 50);
        assert_eq!(
            names(&vfs),
            [file_name(30), delta_file_name(40, 1), file_name(40)]
        );
    }

    #[test]
    fn deltas_of_another_base_at_the_same_lsn_are_never_applied() {
        let vfs = SimVfs::new();
        let cat = Catalog::new();
        let t = cat.create_table("t").unwrap();
        let mut chain = base(&vfs, &cat, 10);
        cat.bulk_insert(t, [(1, row(1))]).unwrap();
        delta(&vfs, &cat, &mut chain, 10);
        let old = read_file(&vfs, &delta_file_name(10, 1)).unwrap();
        // A bulk load and a new base at the same lsn; then a crash left the
        // old delta behind (here: put back after the base removed it).
        cat.bulk_insert(t, [(2, row(2))]).unwrap();
        base(&vfs, &cat, 10);
        vfs.open(&delta_file_name(10, 1), true)
            .unwrap()
            .write_at(&old, 0)
            .unwrap();
        let (img, skipped) = load_newest(&vfs).unwrap();
        let img = img.unwrap();
        assert_eq!(img.file, file_name(10));
        assert_eq!(img.catalog.dump(), cat.dump());
        assert!(skipped[0].1.contains("another base"), "{skipped:?}");
        assert_eq!(img.stale, [delta_file_name(10, 1)]);
    }

    #[test]
    fn the_chain_stops_at_a_damaged_delta_and_what_follows_is_stale() {
        let vfs = SimVfs::new();
        let cat = Catalog::new();
        let t = cat.create_table("t").unwrap();
        let mut chain = base(&vfs, &cat, 10);
        for lsn in [20, 30, 40] {
            cat.bulk_insert(t, [(lsn as i64, row(1))]).unwrap();
            delta(&vfs, &cat, &mut chain, lsn);
        }
        let f = vfs.open(&delta_file_name(10, 2), false).unwrap();
        f.write_at(&[0xff], 50).unwrap();
        let (img, skipped) = load_newest(&vfs).unwrap();
        let img = img.unwrap();
        assert_eq!((img.lsn, img.chain.deltas), (20, 1));
        assert_eq!(img.catalog.dump()["t"].len(), 1);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].1.contains("checksum"), "{skipped:?}");
        assert_eq!(img.stale, [delta_file_name(10, 2), delta_file_name(10, 3)]);
    }
}
