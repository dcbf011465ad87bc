//! The page store as the engine opens it: the data directory's
//! tablespaces, the doublewrite buffer (recovered first), and the buffer
//! pool with its page cleaners.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::buffer_pool::{BufferPool, PoolOptions, RedoHook};
use super::doublewrite::{
    self, Doublewrite, DoublewriteCounters, DoublewriteMode, DoublewriteOptions, DoublewriteStats,
    Recovered,
};
use super::page::PageCorrupt;
use super::tablespace::{self, Tablespace};
use super::{Spaces, StoreError};
use crate::vfs::Vfs;

/// The page store's startup settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// `innodb_page_size`.
    pub page_size: usize,
    pub pool: PoolOptions,
    pub doublewrite: DoublewriteOptions,
}

/// What opening the store found: the doublewrite buffer's repairs and,
/// with doublewrite off or detect-only, every page that fails its check
/// (found by a scan of every tablespace; never used).
#[derive(Debug, Default)]
pub struct OpenReport {
    pub doublewrite: Recovered,
    pub corrupt: Vec<PageCorrupt>,
}

/// Tablespaces, doublewrite buffer and buffer pool, open and running.
pub struct PageStore {
    data: Arc<dyn Vfs>,
    opts: StoreOptions,
    spaces: Arc<Spaces>,
    pool: Arc<BufferPool>,
    dblwr: Arc<DoublewriteCounters>,
    cleaners: Mutex<Vec<JoinHandle<Result<(), StoreError>>>>,
}

/// The space id of a data tablespace file (`space-00012.ibd`); scratch
/// files are not opened at start (their spaces are made anew).
fn space_of(name: &str) -> Option<u32> {
    tablespace::space_of_file(name).filter(|s| s & tablespace::SCRATCH_SPACE == 0)
}

impl PageStore {
    /// Opens every tablespace in `data`, restores torn pages from the
    /// doublewrite buffer in `dblwr_dir` (`innodb_doublewrite_dir`; the data
    /// directory by default) before anything reads them, and starts the
    /// page cleaners.
    pub fn open(
        data: Arc<dyn Vfs>,
        dblwr_dir: Arc<dyn Vfs>,
        opts: StoreOptions,
    ) -> Result<(PageStore, OpenReport), StoreError> {
        let spaces = Arc::new(Spaces::new());
        let names = data
            .list()
            .map_err(|e| StoreError::io("data directory", "listing", e))?;
        for space in names.iter().filter_map(|n| space_of(n)) {
            spaces.insert(Tablespace::open(
                data.as_ref(),
                space,
                opts.page_size,
                false,
            )?);
        }
        let mut report = OpenReport {
            doublewrite: doublewrite::recover(&dblwr_dir, &spaces, opts.page_size)?,
            corrupt: vec![],
        };
        if opts.doublewrite.mode != DoublewriteMode::On {
            for ts in spaces.all() {
                report.corrupt.extend(ts.scan()?);
            }
        }
        let dblwr = Arc::new(DoublewriteCounters::default());
        let dw = Doublewrite::open(dblwr_dir, opts.doublewrite, opts.page_size, dblwr.clone())?;
        let pool = BufferPool::new(opts.page_size, spaces.clone(), Arc::new(dw), opts.pool);
        let cleaners = Mutex::new(pool.start_cleaners());
        Ok((
            PageStore {
                data,
                opts,
                spaces,
                pool,
                dblwr,
                cleaners,
            },
            report,
        ))
    }

    pub fn options(&self) -> StoreOptions {
        self.opts
    }

    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// The doublewrite buffer's counters.
    pub fn doublewrite(&self) -> DoublewriteStats {
        self.dblwr.snapshot()
    }

    /// Sets the write-ahead hook ([`BufferPool::set_redo_hook`]).
    pub fn set_redo_hook(&self, hook: RedoHook) -> bool {
        self.pool.set_redo_hook(hook)
    }

    /// Opens tablespace `space`, creating its file if there is none;
    /// returns one past its highest written page.
    pub fn open_space(&self, space: u32) -> Result<u32, StoreError> {
        if let Ok(ts) = self.spaces.get(space) {
            return ts.pages();
        }
        let ts = self.spaces.insert(Tablespace::open(
            self.data.as_ref(),
            space,
            self.opts.page_size,
            true,
        )?);
        ts.pages()
    }

    /// Opens scratch tablespace `space` (its id has
    /// [`tablespace::SCRATCH_SPACE`] set) in a new, empty file named for
    /// `name`: what an earlier run left there is removed first. A scratch
    /// space holds derived pages the engine rebuilds at every start (a
    /// table's secondary index): its changes are unlogged
    /// ([`ChangeLsn::UNLOGGED`](super::buffer_pool::ChangeLsn::UNLOGGED)),
    /// and recovery never reads it (the doublewrite buffer's copies of its
    /// pages find no open space and are skipped; the scan at open looks at
    /// `.ibd` files only), as InnoDB's temporary tablespace is recreated at
    /// startup.
    pub fn open_scratch_space(&self, space: u32, name: &str) -> Result<(), StoreError> {
        assert!(
            space & tablespace::SCRATCH_SPACE != 0,
            "scratch space ids have the scratch bit"
        );
        let file = tablespace::scratch_file_name(space, name);
        if self.data.exists(&file) {
            self.data
                .remove(&file)
                .map_err(|e| StoreError::io(&file, "removing", e))?;
        }
        self.spaces.insert(Tablespace::open_as(
            self.data.as_ref(),
            space,
            file,
            self.opts.page_size,
            true,
        )?);
        Ok(())
    }

    /// Every tablespace file in the data directory, with its space id
    /// ([`tablespace::space_of_file`]), open or not.
    pub fn space_files(&self) -> Result<Vec<(u32, String)>, StoreError> {
        let names = self
            .data
            .list()
            .map_err(|e| StoreError::io("data directory", "listing", e))?;
        Ok(names
            .into_iter()
            .filter_map(|n| Some((tablespace::space_of_file(&n)?, n)))
            .collect())
    }

    /// Removes tablespace `space` (file `file`, whether open or not): its
    /// pages leave the pool unwritten, the space closes, the file is
    /// deleted and the deletion made durable. For a dropped table's
    /// spaces once the drop is durable and nothing uses the table, as
    /// InnoDB's DROP TABLE removes the pages of the space from its pool
    /// without writing them and deletes the file.
    pub fn discard_space(&self, space: u32, file: &str) -> Result<(), StoreError> {
        self.pool.discard(space);
        self.spaces.remove(space);
        if self.data.exists(file) {
            self.data
                .remove(file)
                .map_err(|e| StoreError::io(file, "removing", e))?;
            self.data
                .sync_dir()
                .map_err(|e| StoreError::io(file, "removing", e))?;
        }
        Ok(())
    }

    /// Writes every dirty page and stops the page cleaners (a clean
    /// shutdown); a cleaner's error is returned.
    pub fn shutdown(&self) -> Result<(), StoreError> {
        let flushed = self.pool.flush_all();
        self.stop_cleaners()?;
        flushed
    }

    /// Stops and joins the page cleaners; the first cleaner error.
    fn stop_cleaners(&self) -> Result<(), StoreError> {
        self.pool.stop();
        let handles = std::mem::take(&mut *self.cleaners.lock().expect("cleaner list"));
        let mut first = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|_| {
                Err(StoreError::io(
                    "page cleaner",
                    "running",
                    std::io::Error::other("the thread panicked"),
                ))
            });
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

impl Drop for PageStore {
    fn drop(&mut self) {
        let _ = self.stop_cleaners();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page_store::page::{PageId, HEADER};
    use crate::vfs::SimVfs;

    const PS: usize = 4096;

    fn opts(mode: DoublewriteMode) -> StoreOptions {
        StoreOptions {
            page_size: PS,
            pool: PoolOptions {
                frames: 32,
                ..PoolOptions::default()
            },
            doublewrite: DoublewriteOptions {
                mode,
                ..DoublewriteOptions::default()
            },
        }
    }

    #[test]
    fn tablespace_names_parse_back() {
        assert_eq!(space_of(&tablespace::file_name(12)), Some(12));
        assert_eq!(space_of("space-12.ibd"), None);
        assert_eq!(space_of("space-00012.ibd.tmp"), None);
        assert_eq!(space_of("redo.log"), None);
        assert_eq!(space_of("space-00012.k_1.ibt"), None);
    }

    /// Spaces created while the store runs are found again when it is
    /// opened once more, with what was written to them; with doublewrite
    /// off a damaged page is reported at open.
    #[test]
    fn spaces_made_at_run_time_are_found_at_the_next_open() {
        let sim = Arc::new(SimVfs::new());
        let vfs: Arc<dyn Vfs> = sim.clone();
        let (store, report) =
            PageStore::open(vfs.clone(), vfs.clone(), opts(DoublewriteMode::On)).unwrap();
        assert!(report.doublewrite.restored.is_empty() && report.corrupt.is_empty());
        // Space 3's page is written last, so its copy is the newest in the
        // doublewrite files (a later batch may reuse an earlier segment).
        for space in [9, 3] {
            assert_eq!(store.open_space(space).unwrap(), 0);
            let id = PageId { space, page_no: 4 };
            store.pool().modify(id, 5, |b| b[0] = space as u8).unwrap();
            store.pool().flush_all().unwrap();
        }
        store.shutdown().unwrap();
        assert!(store.doublewrite().pages_written >= 2);
        drop(store);

        let (again, _) =
            PageStore::open(vfs.clone(), vfs.clone(), opts(DoublewriteMode::Off)).unwrap();
        assert_eq!(again.open_space(9).unwrap(), 5);
        let id = PageId {
            space: 9,
            page_no: 4,
        };
        assert_eq!(again.pool().read(id, |p| p[HEADER]).unwrap(), 9);
        drop(again);

        // Two pages damaged on disk: the one the doublewrite files still
        // hold a copy of is restored; the other, with doublewrite off, is
        // reported at open.
        let f = vfs.open(&tablespace::file_name(3), false).unwrap();
        for page_no in [4u64, 2] {
            f.write_at(&[0xFF; 16], page_no * PS as u64 + 100).unwrap();
        }
        f.sync_data().unwrap();
        let (_, report) = PageStore::open(vfs.clone(), vfs, opts(DoublewriteMode::Off)).unwrap();
        assert_eq!(
            report.doublewrite.restored,
            vec![PageId {
                space: 3,
                page_no: 4
            }],
            "{report:?}"
        );
        assert_eq!(report.corrupt.len(), 1, "{report:?}");
        assert!(
            report.corrupt[0].to_string().contains("space 3, page 2"),
            "{report:?}"
        );
    }
}
