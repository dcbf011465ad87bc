//! Files written whole or not at all, for every file redoctor writes that a
//! reader may open at any moment or a crash may interrupt: reports, gate
//! baselines, the daemon's journal and status. [`write_atomic`] writes a
//! temporary file beside the target, fsyncs it, renames it over the target
//! and fsyncs the directory, so a reader sees the old file or the new one,
//! never a part, and an error leaves the old file as it was.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` atomically (see the crate docs). The error
/// says which step failed; `path` is as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename is durable once the directory is.
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_a_failure_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.json");
        write_atomic(&p, b"old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        // A target that is a directory cannot be replaced: the error is
        // returned and nothing is left beside it.
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        assert!(write_atomic(&d, b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // No directory to write in.
        assert!(write_atomic(&dir.path().join("no/such/f"), b"x").is_err());
    }
}
