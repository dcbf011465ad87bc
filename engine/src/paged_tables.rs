//! Tables on pages (seed 002), as the engine opens them: the startup
//! settings (`innodb_buffer_pool_size` and the doublewrite buffer's), the
//! page store opened before recovery, and the data directory's marker that
//! says its tables live on pages.

use std::sync::Arc;

use crate::page_store::buffer_pool::PoolOptions;
use crate::page_store::doublewrite::{DoublewriteOptions, Recovered};
use crate::page_store::page::{self, PageCorrupt};
use crate::page_store::store::{PageStore, StoreOptions};
use crate::page_store::StoreError;
use crate::vfs::Vfs;

/// The file whose presence says the directory's tables are on pages.
pub const MARKER: &str = "pages.on";

/// The page store's startup settings; `pool_bytes` 0 keeps tables in
/// memory (the engine's default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageSettings {
    /// `innodb_buffer_pool_size` (bytes; 0: tables in memory).
    pub pool_bytes: u64,
    /// `innodb_page_size`.
    pub page_size: u64,
    /// `innodb_doublewrite`, `innodb_doublewrite_design`,
    /// `innodb_doublewrite_files`, `innodb_doublewrite_pages`.
    pub doublewrite: DoublewriteOptions,
    /// `innodb_page_cleaners`.
    pub page_cleaners: u64,
    /// `innodb_io_capacity`.
    pub io_capacity: u64,
    /// `innodb_lru_scan_depth`.
    pub lru_scan_depth: u64,
    /// `innodb_doublewrite_dir` (None: the data directory).
    pub doublewrite_dir: Option<std::path::PathBuf>,
}

impl Default for PageSettings {
    fn default() -> Self {
        let pool = PoolOptions::default();
        PageSettings {
            pool_bytes: 0,
            page_size: page::DEFAULT_PAGE_SIZE as u64,
            doublewrite: DoublewriteOptions::default(),
            page_cleaners: pool.page_cleaners as u64,
            io_capacity: u64::from(pool.io_capacity),
            lru_scan_depth: pool.lru_scan_depth as u64,
            doublewrite_dir: None,
        }
    }
}

/// Why tables on pages cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum PagesError {
    #[error("innodb_page_size={0} is not a power of two from 4096 to 65536")]
    PageSize(u64),
    #[error("innodb_buffer_pool_size={bytes} holds {frames} pages of {page_size} bytes; give it at least 16 pages ({min} bytes)")]
    PoolTooSmall {
        bytes: u64,
        frames: u64,
        page_size: u64,
        min: u64,
    },
    #[error("innodb_doublewrite_files={0} must be even (flush-list and LRU files in pairs) and at least 2")]
    DoublewriteFiles(u64),
    #[error("opening the page store: {0}")]
    Store(#[from] StoreError),
    #[error("{} page(s) fail their checksum and innodb_doublewrite is not ON, so no copy can restore them (first: {}); the engine does not use a torn page: restore the data directory from a backup", .0.len(), .0[0])]
    Torn(Vec<PageCorrupt>),
    #[error("this data directory keeps its tables on pages ({MARKER}): start it with innodb_buffer_pool_size set (its tables would read as empty without)")]
    NeedsPool,
    #[error("this data directory's tables are in memory (checkpoint images); innodb_buffer_pool_size can be set only on a new data directory")]
    InMemoryTables,
    #[error("writing {MARKER}: {0}")]
    Marker(std::io::Error),
    #[error("innodb_doublewrite_dir={dir}: {source}; give a directory this process can create and write")]
    DoublewriteDir { dir: String, source: std::io::Error },
}

impl PageSettings {
    /// The store's options, or `None` for tables in memory.
    pub fn store_options(&self) -> Result<Option<StoreOptions>, PagesError> {
        if self.pool_bytes == 0 {
            return Ok(None);
        }
        let ps = self.page_size;
        if !page::valid_size(ps as usize) || ps > 65536 {
            return Err(PagesError::PageSize(ps));
        }
        let frames = self.pool_bytes / ps;
        if frames < 16 {
            return Err(PagesError::PoolTooSmall {
                bytes: self.pool_bytes,
                frames,
                page_size: ps,
                min: 16 * ps,
            });
        }
        let files = u64::from(self.doublewrite.files);
        if files < 2 || files % 2 != 0 {
            return Err(PagesError::DoublewriteFiles(files));
        }
        Ok(Some(StoreOptions {
            page_size: ps as usize,
            pool: PoolOptions {
                frames: frames as usize,
                page_cleaners: self.page_cleaners as usize,
                io_capacity: self.io_capacity.min(u64::from(u32::MAX)) as u32,
                lru_scan_depth: self.lru_scan_depth as usize,
                ..PoolOptions::default()
            },
            doublewrite: self.doublewrite,
        }))
    }
}

/// Opens the page store of `data` when `settings` ask for one (torn pages
/// restored, or refused with doublewrite off), checking the directory's
/// marker against the setting: tables on pages only in a directory made
/// with them (a new one is marked before anything else is written), and
/// such a directory only with them.
pub fn open(
    data: &Arc<dyn Vfs>,
    settings: &PageSettings,
    device: &crate::device_model::DeviceSpec,
) -> Result<Option<(Arc<PageStore>, Recovered)>, PagesError> {
    let marked = data.exists(MARKER);
    let Some(opts) = settings.store_options()? else {
        return if marked {
            Err(PagesError::NeedsPool)
        } else {
            Ok(None)
        };
    };
    if !marked {
        if data.exists(crate::recovery::REDO_FILE) {
            return Err(PagesError::InMemoryTables);
        }
        mark(data.as_ref())?;
    }
    let dblwr: Arc<dyn Vfs> = match &settings.doublewrite_dir {
        None => data.clone(),
        Some(dir) => {
            let bad = |source| PagesError::DoublewriteDir {
                dir: dir.display().to_string(),
                source,
            };
            std::fs::create_dir_all(dir).map_err(bad)?;
            crate::device_model::DeviceModel::wrap(
                Arc::new(crate::vfs::OsVfs::new(dir.clone()).map_err(bad)?),
                device,
            )
        }
    };
    let (store, report) = PageStore::open(data.clone(), dblwr, opts)?;
    if !report.corrupt.is_empty() {
        return Err(PagesError::Torn(report.corrupt));
    }
    Ok(Some((Arc::new(store), report.doublewrite)))
}

/// Writes the marker, durably.
fn mark(data: &dyn Vfs) -> Result<(), PagesError> {
    let f = data.open(MARKER, true).map_err(PagesError::Marker)?;
    f.write_at(b"tables on pages\n", 0)
        .and_then(|_| f.sync_data())
        .and_then(|_| data.sync_dir())
        .map_err(PagesError::Marker)
}

/// `innodb_doublewrite`'s names (the setting's enumeration).
pub const DOUBLEWRITE_MODES: &[&str] = &["OFF", "ON", "DETECT_ONLY"];
