//! What `/proc` says about the target: its threads' names, the files behind
//! its descriptors, the CPUs it may run on.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::ProbeError;
use crate::maps::FileId;

/// `tid -> comm` for every live thread of `pid` (a name cut inside a
/// character ends in U+FFFD).
pub fn threads(pid: u32) -> Result<HashMap<u32, String>, ProbeError> {
    numbered_entries(format!("/proc/{pid}/task"), |task| {
        Ok(String::from_utf8_lossy(&fs::read(task.join("comm"))?)
            .trim_end_matches('\n')
            .to_string())
    })
}

/// `fd -> path` (the `readlink` of `/proc/PID/fd/N`: a path, or e.g. `socket:[123]`).
pub fn fds(pid: u32) -> Result<HashMap<u32, String>, ProbeError> {
    numbered_entries(format!("/proc/{pid}/fd"), |fd| {
        Ok(fs::read_link(fd)?.to_string_lossy().into_owned())
    })
}

/// `fd -> (path, file)`: [`fds`] with the device and inode of each file
/// (`stat` through the link), as the kernel names them to the probes.
pub fn fd_files(pid: u32) -> Result<HashMap<u32, (String, FileId)>, ProbeError> {
    numbered_entries(format!("/proc/{pid}/fd"), |fd| {
        let path = fs::read_link(fd)?.to_string_lossy().into_owned();
        let meta = fs::metadata(fd)?;
        Ok((path, file_id(meta.dev(), meta.ino())))
    })
}

/// `(fd, path, file)` of each descriptor of `pid`, as the probes key I/O:
/// with `by_file` (the probes follow a process tree, where the kernel keys
/// counts by file) [`fd_files`], else [`fds`] with no file.
pub fn fd_listing(pid: u32, by_file: bool) -> Result<Vec<(u32, String, FileId)>, ProbeError> {
    Ok(if by_file {
        fd_files(pid)?
            .into_iter()
            .map(|(fd, (path, file))| (fd, path, file))
            .collect()
    } else {
        fds(pid)?
            .into_iter()
            .map(|(fd, path)| (fd, path, FileId::default()))
            .collect()
    })
}

/// A file as the kernel names it: `stat`'s `st_dev` re-encoded as the
/// kernel's `dev_t` (`major << 20 | minor`, what `inode->i_sb->s_dev` holds).
pub fn file_id(st_dev: u64, ino: u64) -> FileId {
    let (major, minor) = (libc::major(st_dev), libc::minor(st_dev));
    FileId {
        dev: (major << 20) | minor,
        ino,
    }
}

/// `N -> read(dir/N)` for every numeric entry of `dir`.
fn numbered_entries<T>(
    dir: String,
    read: impl Fn(&Path) -> io::Result<T>,
) -> Result<HashMap<u32, T>, ProbeError> {
    let dir = PathBuf::from(dir);
    let rd = fs::read_dir(&dir).map_err(|source| ProbeError::Proc { path: dir, source })?;
    Ok(rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.parse::<u32>().ok()?;
            // An entry may go away (a thread exits, an fd closes) between
            // listing and reading: skip it.
            Some((n, read(&e.path()).ok()?))
        })
        .collect())
}

/// `/proc/PID/stat` after the process name: field 3 (the state) on. The
/// name is in parentheses and may hold spaces, `)` or any bytes (a long
/// name cut inside a character is not UTF-8), so this starts after the
/// last `)`.
pub fn stat_fields(pid: u32) -> Option<String> {
    let stat = fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|b| *b == b')')?;
    Some(String::from_utf8_lossy(&stat[close + 1..]).into_owned())
}

/// The parent of process `pid` (`/proc/PID/stat`, field 4).
pub fn parent(pid: u32) -> Option<u32> {
    stat_fields(pid)?.split_whitespace().nth(1)?.parse().ok()
}

/// `pid`'s descendants (children, their children...) as `(pid, parent)`,
/// from one scan of `/proc`.
pub fn descendants(root: u32) -> Vec<(u32, u32)> {
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(pp) = parent(pid) {
            children.entry(pp).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            out.push((c, p));
            todo.push(c);
        }
    }
    out
}

/// The process title: `/proc/PID/cmdline` with its NUL separators as
/// spaces, trailing padding removed (a server that rewrites its argv, as
/// PostgreSQL does, shows its role there); `None` when unreadable or
/// empty (a zombie, a kernel thread, an exec not done yet).
pub fn title(pid: u32) -> Option<String> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let text: String = String::from_utf8_lossy(&raw)
        .chars()
        .map(|c| if c == '\0' { ' ' } else { c })
        .collect();
    let text = text.trim_end();
    // Empty: a zombie, a kernel thread, or an exec not done yet: unknown.
    (!text.is_empty()).then(|| text.to_string())
}

/// The file name of the executable `pid` runs (`/proc/PID/exe`).
pub fn exe_name(pid: u32) -> Option<String> {
    let p = fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let name = p.file_name()?.to_string_lossy().into_owned();
    Some(name.trim_end_matches(" (deleted)").to_string())
}

/// Number of CPUs in the affinity mask of `pid` (its main thread).
pub fn affinity_cpus(pid: u32) -> Result<u32, ProbeError> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::sched_getaffinity(
            pid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        )
    };
    if rc != 0 {
        return Err(ProbeError::Proc {
            path: PathBuf::from(format!("/proc/{pid} (sched_getaffinity)")),
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: `set` was filled in by the kernel.
    Ok(unsafe { libc::CPU_COUNT(&set) } as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_threads_fds_and_affinity() {
        let me = std::process::id();
        let t = threads(me).unwrap();
        assert!(t.contains_key(&me));
        let f = fds(me).unwrap();
        assert!(!f.is_empty());
        // A file this process holds open, named with its device and inode
        // as stat(2) gives them.
        let file = tempfile::NamedTempFile::new().unwrap();
        let meta = file.as_file().metadata().unwrap();
        let listed = fd_files(me).unwrap();
        let (_, id) = listed
            .values()
            .find(|(p, _)| Path::new(p) == file.path())
            .expect("the temporary file is listed");
        assert_eq!(*id, file_id(meta.dev(), meta.ino()));
        assert_eq!(id.ino, meta.ino());
        assert_eq!(
            file_id(libc::makedev(8, 1), 7),
            FileId {
                dev: (8 << 20) | 1,
                ino: 7
            }
        );
        let n = affinity_cpus(me).unwrap();
        assert!(n >= 1);
    }

    #[test]
    fn reads_the_process_tree_titles_and_exe() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        assert_eq!(parent(child.id()), Some(me));
        assert!(descendants(me).contains(&(child.id(), me)));
        // Until the child's exec has set up its arguments its cmdline is
        // ours or empty (unknown: `None`): wait for it, bounded.
        let t = std::time::Instant::now();
        while title(child.id()).as_deref() != Some("sleep 5")
            && t.elapsed() < std::time::Duration::from_secs(5)
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(title(child.id()).as_deref(), Some("sleep 5"));
        assert_eq!(exe_name(child.id()).as_deref(), Some("sleep"));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
