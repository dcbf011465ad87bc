//! Checkpoint images: a consistent image of every table at a redo lsn.
//!
//! File `checkpoint-<lsn, 20 digits>.img`:
//! `magic "RDOCCKPT" | lsn u64 | max_trx_id u64 | catalog image | crc32 u32`
//! (the catalog image carries its own checksum too). An image is written to
//! `checkpoint.tmp`, fdatasync'd, renamed into place and the directory synced;
//! only then may redo space below its lsn be reused. The two newest images
//! are kept.
//!
//! The image is fuzzy: rows are copied table by table while commits go on.
//! Its lsn is the `recent_closed` tail taken *before* copying, so every
//! commit below it is in the image; commits above it may or may not be, and
//! replaying them (full after-images, idempotent) yields the exact state.
//! Before the image is published, the redo log is flushed past every commit
//! the image may contain, so an image never holds a commit the log lost.

use std::io;

use crate::data::catalog::Catalog;
use crate::error::{path_in, FileError};
use crate::failpoints::{self, Target};
use crate::redo::Lsn;
use crate::vfs::Vfs;

const MAGIC: &[u8; 8] = b"RDOCCKPT";
const PREFIX: &str = "checkpoint-";
const SUFFIX: &str = ".img";
const TMP: &str = "checkpoint.tmp";
const KEEP: usize = 2;

pub fn file_name(lsn: Lsn) -> String {
    format!("{PREFIX}{lsn:020}{SUFFIX}")
}

fn lsn_of(name: &str) -> Option<Lsn> {
    name.strip_prefix(PREFIX)?
        .strip_suffix(SUFFIX)?
        .parse()
        .ok()
}

/// Writes and publishes an image durably; removes images older than the
/// newest `KEEP`. Returns the image size. An error names the file and what
/// was done to it; the images published before are untouched by it.
pub fn write(
    vfs: &dyn Vfs,
    lsn: Lsn,
    max_trx_id: u64,
    catalog_image: &[u8],
) -> Result<u64, FileError> {
    let mut buf = Vec::with_capacity(catalog_image.len() + 32);
    buf.extend_from_slice(MAGIC);
    buf.extend_from_slice(&lsn.to_le_bytes());
    buf.extend_from_slice(&max_trx_id.to_le_bytes());
    buf.extend_from_slice(catalog_image);
    let crc = crc32fast::hash(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    let tmp = path_in(vfs, TMP);
    let err = |op: &'static str, path: &str| {
        let path = path.to_string();
        move |e: io::Error| FileError::new(op, path, e)
    };
    if vfs.exists(TMP) {
        vfs.remove(TMP).map_err(err("removal of", &tmp))?;
    }
    let f = vfs.open(TMP, true).map_err(err("creation of", &tmp))?;
    failpoints::write_at(Target::Checkpoint, f.as_ref(), &buf, 0).map_err(err("write to", &tmp))?;
    failpoints::sync_data(Target::Checkpoint, f.as_ref()).map_err(err("fdatasync of", &tmp))?;
    let name = file_name(lsn);
    vfs.rename(TMP, &name)
        .map_err(err("rename into place of", &tmp))?;
    let dir = vfs.describe();
    vfs.sync_dir()
        .map_err(err("fsync of the directory", &dir))?;
    let mut images: Vec<Lsn> = vfs
        .list()
        .map_err(err("listing of the directory", &dir))?
        .iter()
        .filter_map(|n| lsn_of(n))
        .collect();
    images.sort_unstable_by_key(|l| std::cmp::Reverse(*l));
    if images.len() > KEEP {
        for old in &images[KEEP..] {
            let name = file_name(*old);
            vfs.remove(&name)
                .map_err(err("removal of", &path_in(vfs, &name)))?;
        }
        vfs.sync_dir()
            .map_err(err("fsync of the directory", &dir))?;
    }
    Ok(buf.len() as u64)
}

/// A loaded image.
pub struct Image {
    pub file: String,
    pub lsn: Lsn,
    pub max_trx_id: u64,
    pub catalog: Catalog,
}

fn read_one(vfs: &dyn Vfs, name: &str) -> Result<Image, String> {
    let f = vfs.open(name, false).map_err(|e| e.to_string())?;
    let len = f.len().map_err(|e| e.to_string())? as usize;
    let mut buf = vec![0u8; len];
    if f.read_at(&mut buf, 0).map_err(|e| e.to_string())? != len || len < 8 + 16 + 4 {
        return Err("truncated".into());
    }
    let (body, crc) = buf.split_at(len - 4);
    if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
        return Err("checksum mismatch".into());
    }
    if &body[..8] != MAGIC {
        return Err("not a checkpoint image".into());
    }
    let lsn = u64::from_le_bytes(body[8..16].try_into().unwrap());
    let max_trx_id = u64::from_le_bytes(body[16..24].try_into().unwrap());
    if Some(lsn) != lsn_of(name) {
        return Err(format!("lsn {lsn} inside does not match the file name"));
    }
    let catalog = Catalog::read_image(&body[24..]).map_err(|e| e.to_string())?;
    Ok(Image {
        file: name.to_string(),
        lsn,
        max_trx_id,
        catalog,
    })
}

/// The newest valid image, and the newer ones that were skipped (with why).
/// Image files that failed validation: (file name, why).
pub type Skipped = Vec<(String, String)>;

pub fn load_newest(vfs: &dyn Vfs) -> io::Result<(Option<Image>, Skipped)> {
    let mut names: Vec<(Lsn, String)> = vfs
        .list()?
        .into_iter()
        .filter_map(|n| lsn_of(&n).map(|l| (l, n)))
        .collect();
    names.sort_unstable_by_key(|n| std::cmp::Reverse(n.0));
    let mut skipped = Vec::new();
    for (_, name) in names {
        match read_one(vfs, &name) {
            Ok(img) => return Ok((Some(img), skipped)),
            Err(why) => skipped.push((name, why)),
        }
    }
    Ok((None, skipped))
}
