//! A tablespace file: pages at `page_no * page_size`, read with `pread`
//! and written with `pwrite` through the engine's [`Vfs`].

use std::sync::Arc;

use crate::failpoints::{self, Target};
use crate::sync_timing::{self, SyncKind};
use crate::vfs::{Vfs, VfsFile};

use super::page::{self, PageCorrupt, PageId, PageState};
use super::StoreError;

/// One tablespace file, `space-<id>.ibd`.
pub struct Tablespace {
    pub(super) space: u32,
    pub(super) page_size: usize,
    pub(super) file: Arc<dyn VfsFile>,
    name: String,
}

/// The file name of tablespace `space`.
pub fn file_name(space: u32) -> String {
    format!("space-{space:05}.ibd")
}

/// The file name of scratch tablespace `space` (`name` says what it holds;
/// see `PageStore::open_scratch_space`).
pub fn scratch_file_name(space: u32, name: &str) -> String {
    format!("space-{:05}.{name}.ibt", space & !SCRATCH_SPACE)
}

/// The space id a tablespace file's name stands for (`space-00012.ibd`:
/// 12; `space-00012.k_1.ibt`: 12 with [`SCRATCH_SPACE`] set); `None` for
/// any other file.
pub fn space_of_file(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("space-")?;
    let (digits, tail) = rest.split_once('.')?;
    let space: u32 = digits.parse().ok()?;
    if space & SCRATCH_SPACE != 0 {
        return None;
    }
    if name == file_name(space) {
        return Some(space);
    }
    let kind = tail.strip_suffix(".ibt")?;
    (name == scratch_file_name(space | SCRATCH_SPACE, kind)).then_some(space | SCRATCH_SPACE)
}

/// The bit that marks a scratch tablespace's id (a table's id with it set
/// is its secondary index's space): never a table's own id.
pub const SCRATCH_SPACE: u32 = 1 << 31;

impl Tablespace {
    /// Opens (creating when `create`) the file of `space`.
    pub fn open(
        vfs: &dyn Vfs,
        space: u32,
        page_size: usize,
        create: bool,
    ) -> Result<Tablespace, StoreError> {
        Tablespace::open_as(vfs, space, file_name(space), page_size, create)
    }

    /// Opens (creating when `create`) the file `name` as tablespace `space`.
    pub fn open_as(
        vfs: &dyn Vfs,
        space: u32,
        name: String,
        page_size: usize,
        create: bool,
    ) -> Result<Tablespace, StoreError> {
        let created = create && !vfs.exists(&name);
        let file = vfs
            .open(&name, create)
            .map_err(|e| StoreError::io(&name, "opening", e))?;
        if created {
            // The new name is durable before any page is acknowledged.
            vfs.sync_dir()
                .map_err(|e| StoreError::io(&name, "creating", e))?;
        }
        Ok(Tablespace {
            space,
            page_size,
            file,
            name,
        })
    }

    pub fn space(&self) -> u32 {
        self.space
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Pages the file holds (whole pages only).
    pub fn pages(&self) -> Result<u32, StoreError> {
        let len = self
            .file
            .len()
            .map_err(|e| StoreError::io(&self.name, "sizing", e))?;
        Ok((len / self.page_size as u64) as u32)
    }

    fn offset(&self, page_no: u32) -> u64 {
        u64::from(page_no) * self.page_size as u64
    }

    /// Reads page `page_no` into `buf` as it is on disk (past the end of
    /// the file: zeros). Not verified: [`Tablespace::read_verified`].
    pub fn read_raw(&self, page_no: u32, buf: &mut [u8]) -> Result<(), StoreError> {
        let n = self
            .file
            .read_at(buf, self.offset(page_no))
            .map_err(|e| StoreError::io(&self.name, "reading", e))?;
        buf[n..].fill(0);
        Ok(())
    }

    /// Reads page `page_no` and checks it: a page that fails is an error,
    /// never handed on.
    pub fn read_verified(&self, page_no: u32, buf: &mut [u8]) -> Result<PageState, StoreError> {
        self.read_raw(page_no, buf)?;
        page::verify(buf, self.id(page_no), self.page_size).map_err(StoreError::Corrupt)
    }

    /// Writes a sealed page to its place: a data page through the
    /// `page::write::short` failpoint, which tears it (a torn page recovery
    /// must restore or report). A scratch space's page (a rebuilt index,
    /// [`SCRATCH_SPACE`]) is written directly: recovery discards the whole
    /// file, and the crash tests' power cuts tear its unsynced writes.
    pub fn write(&self, page_no: u32, buf: &[u8]) -> Result<(), StoreError> {
        debug_assert_eq!(buf.len(), self.page_size);
        let at = self.offset(page_no);
        let done = if self.space & SCRATCH_SPACE != 0 {
            self.file.write_at(buf, at)
        } else {
            failpoints::write_at(Target::Page, self.file.as_ref(), buf, at)
        };
        done.map_err(|e| StoreError::io(&self.name, "writing", e))
    }

    /// `fdatasync`, timed for the probes ([`crate::sync_timing`]).
    pub fn sync(&self) -> Result<(), StoreError> {
        sync_timing::timed(SyncKind::Data, || self.file.sync_data())
            .map_err(|e| StoreError::io(&self.name, "syncing", e))
    }

    pub fn id(&self, page_no: u32) -> PageId {
        PageId {
            space: self.space,
            page_no,
        }
    }

    /// Every page that fails its check, with why; a page cut short at the
    /// end of the file (its first write, torn) is checked too.
    pub fn scan(&self) -> Result<Vec<PageCorrupt>, StoreError> {
        let mut bad = vec![];
        let mut buf = vec![0u8; self.page_size];
        let len = self
            .file
            .len()
            .map_err(|e| StoreError::io(&self.name, "sizing", e))?;
        let pages = len.div_ceil(self.page_size as u64) as u32;
        for p in 0..pages {
            match self.read_verified(p, &mut buf) {
                Ok(_) => {}
                Err(StoreError::Corrupt(c)) => bad.push(c),
                Err(e) => return Err(e),
            }
        }
        Ok(bad)
    }
}
