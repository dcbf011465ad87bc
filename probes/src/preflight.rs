//! Checks made before loading anything, each with a precise error:
//! the target exists, we hold the capabilities, the kernel has BTF.

use std::fs;
use std::path::Path;

use crate::error::ProbeError;
use crate::glob;
use crate::procfs;
use crate::profile::TargetRules;

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

/// Fails with [`ProbeError::NotTheRoot`] unless `pid` is what profile
/// `profile`'s `[target]` asks for: an executable of that name, and not
/// one of the server's child processes (by its title).
pub fn check_target(pid: u32, profile: &str, target: &TargetRules) -> Result<(), ProbeError> {
    let title = procfs::title(pid).unwrap_or_default();
    let refuse = |what: String| ProbeError::NotTheRoot {
        pid,
        profile: profile.to_string(),
        what,
        hint: target.root_hint.clone(),
    };
    if !target.exe.is_empty() {
        let exe = procfs::exe_name(pid).unwrap_or_default();
        if !target.exe.contains(&exe) {
            return Err(refuse(format!(
                "runs `{exe}` (`{title}`), not {}",
                target.exe.join(" or ")
            )));
        }
    }
    if let Some(child) = &target.child_title {
        if glob::matches(child, &title) {
            let parent = procfs::parent(pid)
                .map(|p| format!(" (its parent is pid {p})"))
                .unwrap_or_default();
            return Err(refuse(format!(
                "one of the server's child processes, `{title}`{parent}"
            )));
        }
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
}
