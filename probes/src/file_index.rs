//! Names a file the probes counted by its identity (device and inode) when
//! no descriptor listing named it.
//!
//! With `follow_children` the kernel keys each write and fsync by the file
//! it was made on, and user space names files from `/proc/PID/fd` listings.
//! A file opened, synced and closed between two listings (a PostgreSQL
//! backend that finished a WAL segment and moved to the next) is in no
//! listing. Its inode usually still sits in a directory the target keeps
//! files in (WAL segments are recycled by renaming, not deleted), so the
//! directories of every file ever listed are remembered, and an unknown
//! file is looked up there by `stat`: the name it has now, in the directory
//! that gives its kind.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::maps::FileId;
use crate::procfs::file_id;

/// At most this many entries are read from one directory per lookup: a
/// bound on the cost of one unknown file in a huge directory.
const MAX_ENTRIES: usize = 8192;
/// At most this many directories are remembered.
const MAX_DIRS: usize = 256;

/// The directories the target's files were listed in, and the files found
/// in them by identity.
#[derive(Debug, Default)]
pub struct FileIndex {
    dirs: BTreeSet<PathBuf>,
    found: HashMap<FileId, String>,
}

impl FileIndex {
    /// Remembers the directory of `path` (an absolute path from a listing;
    /// `socket:[..]`, `pipe:[..]` and the like are not files in a directory).
    pub fn note(&mut self, path: &str) {
        if !path.starts_with('/') || self.dirs.len() >= MAX_DIRS {
            return;
        }
        if let Some(dir) = Path::new(path).parent() {
            if !self.dirs.contains(dir) {
                self.dirs.insert(dir.to_path_buf());
            }
        }
    }

    /// The paths of `wanted` files, by a scan of the remembered directories
    /// (one pass for all of them); files not found are left out. A file
    /// found once keeps its name until [`FileIndex::forget`].
    pub fn resolve(&mut self, wanted: &HashSet<FileId>) -> HashMap<FileId, String> {
        let mut out: HashMap<FileId, String> = HashMap::new();
        let mut missing: HashSet<FileId> = HashSet::new();
        for f in wanted {
            match self.found.get(f) {
                Some(p) => {
                    out.insert(*f, p.clone());
                }
                None => {
                    missing.insert(*f);
                }
            }
        }
        for dir in &self.dirs {
            if missing.is_empty() {
                break;
            }
            let Ok(rd) = fs::read_dir(dir) else {
                continue;
            };
            for e in rd.flatten().take(MAX_ENTRIES) {
                let Ok(meta) = e.metadata() else {
                    continue;
                };
                let id = file_id(meta.dev(), meta.ino());
                if missing.remove(&id) {
                    let path = e.path().to_string_lossy().into_owned();
                    self.found.insert(id, path.clone());
                    out.insert(id, path);
                }
            }
        }
        out
    }

    /// Drops the names found for files no longer counted.
    pub fn forget(&mut self, keep: impl Fn(&FileId) -> bool) {
        self.found.retain(|f, _| keep(f));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(p: &Path) -> FileId {
        let m = fs::metadata(p).unwrap();
        file_id(m.dev(), m.ino())
    }

    #[test]
    fn a_file_renamed_after_its_listing_is_found_by_inode() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("000000010000000000000001");
        fs::write(&a, b"wal").unwrap();
        let id = id_of(&a);
        let mut ix = FileIndex::default();
        ix.note(a.to_str().unwrap());
        ix.note("socket:[1234]");
        // Recycled as PostgreSQL does: renamed to a future segment name.
        let b = dir.path().join("000000010000000000000009");
        fs::rename(&a, &b).unwrap();
        let other = FileId { dev: 0, ino: 1 };
        let got = ix.resolve(&[id, other].into_iter().collect());
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[&id], b.to_str().unwrap());
        // Found once, named again without a scan; forgotten on request.
        fs::remove_file(&b).unwrap();
        assert_eq!(ix.resolve(&[id].into_iter().collect()).len(), 1);
        ix.forget(|_| false);
        assert!(ix.resolve(&[id].into_iter().collect()).is_empty());
    }

    #[test]
    fn only_absolute_paths_name_a_directory() {
        let mut ix = FileIndex::default();
        for p in ["pipe:[1]", "anon_inode:[eventfd]", "relative/file"] {
            ix.note(p);
        }
        assert!(ix.dirs.is_empty());
    }
}
