//! What `/proc` says about the target: its threads' names, the files behind
//! its descriptors, the CPUs it may run on.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::ProbeError;

/// `tid -> comm` for every live thread of `pid`.
pub fn threads(pid: u32) -> Result<HashMap<u32, String>, ProbeError> {
    numbered_entries(format!("/proc/{pid}/task"), |task| {
        Ok(fs::read_to_string(task.join("comm"))?
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

/// `N -> read(dir/N)` for every numeric entry of `dir`.
fn numbered_entries(
    dir: String,
    read: impl Fn(&Path) -> io::Result<String>,
) -> Result<HashMap<u32, String>, ProbeError> {
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
        let n = affinity_cpus(me).unwrap();
        assert!(n >= 1);
    }
}
