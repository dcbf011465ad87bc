//! Checks made before loading anything, each with a precise error:
//! the target exists, we hold the capabilities, the kernel has BTF,
//! tracefs is mounted (mounting it when it is not).

use std::fs;
use std::path::Path;

use crate::error::ProbeError;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Fails with [`ProbeError::NoSuchProcess`] unless `pid` is a live process
/// (a zombie counts as gone). Threads ids are refused too: give the process id.
pub fn check_pid(pid: u32) -> Result<(), ProbeError> {
    let status = match fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(s) => s,
        Err(_) => return Err(ProbeError::NoSuchProcess { pid }),
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let zombie = field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X'));
    let tgid = field("Tgid:").and_then(|t| t.parse::<u32>().ok());
    if zombie || tgid != Some(pid) {
        return Err(ProbeError::NoSuchProcess { pid });
    }
    Ok(())
}

/// Whether `pid` is still a live process.
pub fn pid_alive(pid: u32) -> bool {
    check_pid(pid).is_ok()
}

/// Effective capability set of this process.
fn effective_caps() -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

/// Fails with [`ProbeError::NotPrivileged`] unless this process may load
/// tracing BPF programs: CAP_SYS_ADMIN, or CAP_BPF together with CAP_PERFMON.
pub fn check_privileges() -> Result<(), ProbeError> {
    let caps = effective_caps();
    let has = |c: u32| caps & (1u64 << c) != 0;
    if has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON)) {
        return Ok(());
    }
    let mut missing = Vec::new();
    if !has(CAP_BPF) {
        missing.push("CAP_BPF");
    }
    if !has(CAP_PERFMON) {
        missing.push("CAP_PERFMON");
    }
    Err(ProbeError::NotPrivileged {
        missing: format!("{} (and CAP_SYS_ADMIN)", missing.join(" and ")),
    })
}

/// Fails with [`ProbeError::BtfUnavailable`] when the kernel has no BTF.
pub fn check_btf() -> Result<(), ProbeError> {
    if Path::new("/sys/kernel/btf/vmlinux").exists() {
        Ok(())
    } else {
        Err(ProbeError::BtfUnavailable)
    }
}

/// Makes sure tracefs is mounted at `dir` (normally `/sys/kernel/tracing`),
/// mounting it when it is empty. Tracepoints (syscalls, futex) need it;
/// raw tracepoints and uprobes do not. Returns why it is unusable otherwise.
pub fn ensure_tracefs(dir: &Path) -> Result<(), String> {
    let fix = format!("mount it with `mount -t tracefs tracefs {}`", dir.display());
    mount_tracefs(dir).map_err(|why| format!("{why}: {fix}"))
}

fn mount_tracefs(dir: &Path) -> Result<(), String> {
    if dir.join("events").is_dir() {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let target = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{} contains a NUL byte", dir.display()))?;
    let fstype = c"tracefs";
    // SAFETY: every pointer is a valid NUL-terminated string; no data argument.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        return Err(format!(
            "tracefs is not mounted at {} and mounting it failed ({err})",
            dir.display()
        ));
    }
    if dir.join("events").is_dir() {
        Ok(())
    } else {
        Err(format!(
            "mounted tracefs at {} but it has no events/ directory (kernel without CONFIG_FTRACE?)",
            dir.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_pid_is_alive_and_thread_ids_and_absent_pids_are_refused() {
        check_pid(std::process::id()).unwrap();
        // A thread id that is not the process id.
        let tid = std::thread::spawn(|| unsafe { libc::gettid() } as u32)
            .join()
            .unwrap();
        // The thread has exited, but even a live one would not be a process.
        assert!(check_pid(tid).is_err());
        let e = check_pid(u32::MAX - 1).unwrap_err().to_string();
        assert!(e.contains("no process with pid"), "{e}");
    }

    #[test]
    fn tracefs_on_a_plain_file_is_reported_unusable() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let e = ensure_tracefs(f.path()).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
    }
}
