//! Storage backends.
//!
//! Everything the engine persists goes through [`Vfs`]: the real one ([`OsVfs`])
//! uses `pwrite` and `fdatasync`; the simulated one ([`SimVfs`]) keeps, for each
//! file, the bytes that are durable apart from the bytes only written, so a
//! test can "crash" it and lose exactly what was never synced (in the style of
//! redb's crash-test backend). Directory operations (create, rename, remove)
//! become durable only at [`Vfs::sync_dir`], as on a real file system.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rand::Rng;

/// One open file.
pub trait VfsFile: Send + Sync {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Reads up to `buf.len()` bytes; returns how many were read (short at EOF).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// `fdatasync`: everything written so far becomes durable.
    fn sync_data(&self) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A directory of files.
pub trait Vfs: Send + Sync {
    /// Opens `name` in the directory, creating it (empty) when `create` is set.
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn VfsFile>>;
    fn exists(&self, name: &str) -> bool;
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    fn remove(&self, name: &str) -> io::Result<()>;
    fn list(&self) -> io::Result<Vec<String>>;
    /// Makes creates, renames and removes durable (`fsync` of the directory).
    fn sync_dir(&self) -> io::Result<()>;
    /// Where the files live, for messages.
    fn describe(&self) -> String;
}

/// The real file system, rooted at one directory.
pub struct OsVfs {
    dir: PathBuf,
}

impl OsVfs {
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(OsVfs { dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

struct OsFile(File);

impl VfsFile for OsFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match FileExt::read_at(&self.0, &mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

impl Vfs for OsVfs {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn VfsFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(self.path(name))?;
        Ok(Arc::new(OsFile(f)))
    }
    fn exists(&self, name: &str) -> bool {
        self.path(name).exists()
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.path(from), self.path(to))
    }
    fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.path(name))
    }
    fn list(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.dir)? {
            let e = e?;
            if e.file_type()?.is_file() {
                out.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        out.sort();
        Ok(out)
    }
    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
    fn describe(&self) -> String {
        self.dir.display().to_string()
    }
}

/// The unit a simulated crash keeps or drops: a disk sector, written atomically.
pub const SECTOR: usize = 512;

#[derive(Default)]
struct SimFileState {
    /// What survives a crash.
    durable: Vec<u8>,
    /// What readers see now.
    current: Vec<u8>,
    /// Sectors written since the last sync (indexes into `current`).
    dirty: std::collections::BTreeSet<u64>,
}

struct SimFile {
    state: Mutex<SimFileState>,
    shared: Arc<SimShared>,
    /// Every write tears (`SimVfs::tear_writes`).
    tear: AtomicBool,
}

#[derive(Default)]
struct SimShared {
    /// Number of `sync_data` calls that may still succeed; `u64::MAX` = unlimited.
    syncs_left: AtomicU64,
    syncs: AtomicU64,
    /// How long each `sync_data` takes, in microseconds (0: instant).
    sync_delay_us: AtomicU64,
    written_bytes: AtomicU64,
}

impl SimFile {
    fn write_whole(&self, buf: &[u8], offset: u64) {
        let mut s = self.state.lock();
        let end = offset as usize + buf.len();
        if s.current.len() < end {
            s.current.resize(end, 0);
        }
        s.current[offset as usize..end].copy_from_slice(buf);
        let first = offset / SECTOR as u64;
        let last = (end as u64 - 1) / SECTOR as u64;
        for sec in first..=last {
            s.dirty.insert(sec);
        }
        self.shared
            .written_bytes
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
    }
}

/// Where a torn write of `len` bytes at `offset` is cut: after the first
/// `ceil(n/2)` of the `n` sectors it touches. None when it touches one
/// sector (a sector write is atomic: it cannot tear).
pub(crate) fn torn_cut(offset: u64, len: usize) -> Option<u64> {
    if len == 0 {
        return None;
    }
    let sector = SECTOR as u64;
    let first = offset / sector;
    let n = (offset + len as u64 - 1) / sector - first + 1;
    (n >= 2).then(|| (first + n.div_ceil(2)) * sector)
}

impl VfsFile for SimFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.tear.load(Ordering::SeqCst) {
            if let Some(cut) = torn_cut(offset, buf.len()) {
                self.write_whole(&buf[..(cut - offset) as usize], offset);
            }
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        self.write_whole(buf, offset);
        Ok(())
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let s = self.state.lock();
        let off = offset as usize;
        if off >= s.current.len() {
            return Ok(0);
        }
        let n = buf.len().min(s.current.len() - off);
        buf[..n].copy_from_slice(&s.current[off..off + n]);
        Ok(n)
    }
    fn sync_data(&self) -> io::Result<()> {
        let left = self.shared.syncs_left.load(Ordering::SeqCst);
        if left == 0 {
            return Err(io::Error::other("simulated fdatasync failure (EIO)"));
        }
        if left != u64::MAX {
            self.shared.syncs_left.fetch_sub(1, Ordering::SeqCst);
        }
        // Like a device's flush: writes may go on meanwhile, so no lock is
        // held while it takes its time.
        let delay = self.shared.sync_delay_us.load(Ordering::Relaxed);
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_micros(delay));
        }
        let mut guard = self.state.lock();
        let s = &mut *guard;
        // Copy only the sectors written since the last sync.
        if s.durable.len() != s.current.len() {
            s.durable.resize(s.current.len(), 0);
        }
        for &sec in &s.dirty {
            let start = sec as usize * SECTOR;
            let end = (start + SECTOR).min(s.current.len());
            s.durable[start..end].copy_from_slice(&s.current[start..end]);
        }
        s.dirty.clear();
        self.shared.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.state.lock().current.len() as u64)
    }
}

#[derive(Default)]
struct SimDir {
    current: HashMap<String, Arc<SimFile>>,
    durable: HashMap<String, Arc<SimFile>>,
}

/// An in-memory directory that can crash.
pub struct SimVfs {
    dir: Mutex<SimDir>,
    shared: Arc<SimShared>,
}

impl Default for SimVfs {
    fn default() -> Self {
        Self::new()
    }
}

impl SimVfs {
    pub fn new() -> Self {
        let shared = SimShared::default();
        shared.syncs_left.store(u64::MAX, Ordering::SeqCst);
        SimVfs {
            dir: Mutex::new(SimDir::default()),
            shared: Arc::new(shared),
        }
    }

    /// After `n` more successful `sync_data` calls, every further one fails.
    pub fn fail_syncs_after(&self, n: u64) {
        self.shared.syncs_left.store(n, Ordering::SeqCst);
    }

    /// Makes every later `sync_data` take `d` (a slow device).
    pub fn set_sync_delay(&self, d: std::time::Duration) {
        self.shared
            .sync_delay_us
            .store(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// With `tear`, makes every later write to `name` (as it is named now)
    /// tear: the first half of the sectors it touches reach the file, then
    /// it fails with EIO (a write of one sector writes nothing and fails).
    /// Without, writes to it succeed again (a transient fault).
    pub fn tear_writes(&self, name: &str, tear: bool) -> io::Result<()> {
        let d = self.dir.lock();
        let f = d
            .current
            .get(name)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, name.to_string()))?;
        f.tear.store(tear, Ordering::SeqCst);
        Ok(())
    }

    pub fn sync_count(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }

    /// Simulates a power cut: returns the directory as it is found on restart.
    /// Unsynced directory operations are lost; each unsynced sector of each file
    /// is independently kept or lost (sector writes are atomic, nothing else is).
    pub fn crash(&self, rng: &mut impl Rng) -> SimVfs {
        let dir = self.dir.lock();
        let mut names: Vec<&String> = dir.durable.keys().collect();
        names.sort();
        let shared = SimShared::default();
        shared.syncs_left.store(u64::MAX, Ordering::SeqCst);
        let shared = Arc::new(shared);
        let mut out = SimDir::default();
        // Every file's state locked before any is copied: a power cut is
        // one instant for all files. (Copied one after another, a writer
        // could sync a doublewrite copy after the area was copied and
        // write its page before the tablespace was: a torn page whose copy
        // the "disk" never had.)
        let states: Vec<_> = names
            .iter()
            .map(|&name| (name, dir.durable[name].state.lock()))
            .collect();
        for (name, s) in states {
            let mut img = s.durable.clone();
            for &sec in &s.dirty {
                if rng.gen_bool(0.5) {
                    let start = sec as usize * SECTOR;
                    let end = (start + SECTOR).min(s.current.len());
                    if img.len() < end {
                        img.resize(end, 0);
                    }
                    img[start..end].copy_from_slice(&s.current[start..end]);
                }
            }
            let nf = Arc::new(SimFile {
                state: Mutex::new(SimFileState {
                    durable: img.clone(),
                    current: img,
                    dirty: Default::default(),
                }),
                shared: shared.clone(),
                tear: Default::default(),
            });
            out.current.insert(name.clone(), nf.clone());
            out.durable.insert(name.clone(), nf);
        }
        SimVfs {
            dir: Mutex::new(out),
            shared,
        }
    }
}

impl Vfs for SimVfs {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn VfsFile>> {
        let mut d = self.dir.lock();
        if let Some(f) = d.current.get(name) {
            return Ok(f.clone());
        }
        if !create {
            return Err(io::Error::new(io::ErrorKind::NotFound, name.to_string()));
        }
        let f = Arc::new(SimFile {
            state: Mutex::new(SimFileState::default()),
            shared: self.shared.clone(),
            tear: Default::default(),
        });
        d.current.insert(name.to_string(), f.clone());
        Ok(f)
    }
    fn exists(&self, name: &str) -> bool {
        self.dir.lock().current.contains_key(name)
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut d = self.dir.lock();
        let f = d
            .current
            .remove(from)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, from.to_string()))?;
        d.current.insert(to.to_string(), f);
        Ok(())
    }
    fn remove(&self, name: &str) -> io::Result<()> {
        self.dir
            .lock()
            .current
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, name.to_string()))
    }
    fn list(&self) -> io::Result<Vec<String>> {
        let mut v: Vec<String> = self.dir.lock().current.keys().cloned().collect();
        v.sort();
        Ok(v)
    }
    fn sync_dir(&self) -> io::Result<()> {
        let mut d = self.dir.lock();
        d.durable = d.current.clone();
        Ok(())
    }
    fn describe(&self) -> String {
        "simulated directory".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn crash_keeps_synced_and_drops_unsynced_directory_ops() {
        let vfs = SimVfs::new();
        let f = vfs.open("a", true).unwrap();
        f.write_at(&[1u8; 1024], 0).unwrap();
        f.sync_data().unwrap();
        vfs.sync_dir().unwrap();
        f.write_at(&[2u8; 1024], 0).unwrap();
        let g = vfs.open("b", true).unwrap();
        g.write_at(b"x", 0).unwrap();
        g.sync_data().unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let after = vfs.crash(&mut rng);
        assert!(!after.exists("b"), "unsynced create must be lost");
        let f2 = after.open("a", false).unwrap();
        let mut buf = [0u8; 1024];
        assert_eq!(f2.read_at(&mut buf, 0).unwrap(), 1024);
        for sec in buf.chunks(SECTOR) {
            assert!(sec.iter().all(|&b| b == 1) || sec.iter().all(|&b| b == 2));
        }
    }

    #[test]
    fn sync_failure_is_reported() {
        let vfs = SimVfs::new();
        let f = vfs.open("a", true).unwrap();
        vfs.fail_syncs_after(1);
        f.sync_data().unwrap();
        assert!(f.sync_data().is_err());
    }

    #[test]
    fn a_torn_write_keeps_the_first_half_of_its_sectors() {
        // One sector, aligned or not: atomic.
        assert_eq!(torn_cut(4096, 512), None);
        assert_eq!(torn_cut(100, 300), None);
        assert_eq!(torn_cut(0, 0), None);
        // Aligned redo writes of n blocks keep ceil(n/2).
        assert_eq!(torn_cut(4096, 2 * 512), Some(4096 + 512));
        assert_eq!(torn_cut(4096, 3 * 512), Some(4096 + 2 * 512));
        assert_eq!(torn_cut(4096, 9 * 512), Some(4096 + 5 * 512));
        // Unaligned (binlog appends): sectors 0..=2 touched, cut after two.
        assert_eq!(torn_cut(20, 1100), Some(1024));
        assert_eq!(torn_cut(20, 1000), Some(512));
        // Two sectors touched by a few bytes.
        assert_eq!(torn_cut(510, 4), Some(512));
    }

    #[test]
    fn a_torn_write_reaches_the_file_in_part_and_fails() {
        let vfs = SimVfs::new();
        let f = vfs.open("a", true).unwrap();
        f.write_at(&[1u8; 4 * SECTOR], 0).unwrap();
        vfs.tear_writes("a", true).unwrap();
        assert!(vfs.tear_writes("b", true).is_err());
        let e = f.write_at(&[2u8; 3 * SECTOR], 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        // One sector of a one-sector write: nothing is written.
        assert!(f.write_at(&[3u8; SECTOR], 3 * SECTOR as u64).is_err());
        let mut buf = [0u8; 4 * SECTOR];
        assert_eq!(f.read_at(&mut buf, 0).unwrap(), 4 * SECTOR);
        let firsts: Vec<u8> = buf.chunks(SECTOR).map(|c| c[0]).collect();
        assert_eq!(firsts, [2, 2, 1, 1]);
        vfs.tear_writes("a", false).unwrap();
        f.write_at(&[4u8; 2 * SECTOR], 0).unwrap();
    }
}
