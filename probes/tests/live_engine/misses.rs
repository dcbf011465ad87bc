//! Events bpftrace's programs were not run for.
//!
//! bpftrace attaches perf-event tracepoint programs. The kernel runs those
//! only when no other such BPF program is running on the same CPU (the
//! per-CPU `bpf_prog_active`); when one is, as when a wakeup comes from an
//! interrupt that arrived during a program, it skips them all and counts a
//! recursion miss on each. So bpftrace's counts fall short by up to that
//! many events (misses are counted before its filters run), and the kernel
//! says how many (`bpf_prog_info.recursion_misses`). The probes' raw
//! tracepoint programs have a per-program guard instead and are not
//! skipped this way.

use std::os::fd::{AsFd, AsRawFd};

use aya_obj::generated::{bpf_attr, bpf_cmd, bpf_prog_info, bpf_prog_type};

/// Recursion misses of the loaded perf-event tracepoint programs named
/// `name` (each program on a tracepoint counts the same misses: the most).
pub fn tracepoint_misses(name: &str) -> Result<u64, String> {
    let mut most = 0;
    for info in aya::programs::loaded_programs() {
        let info = info.map_err(|e| format!("listing BPF programs: {e}"))?;
        if info.program_type() != bpf_prog_type::BPF_PROG_TYPE_TRACEPOINT
            || info.name_as_str() != Some(name)
        {
            continue;
        }
        let fd = info
            .fd()
            .map_err(|e| format!("BPF program {}: {e}", info.id()))?;
        most = most.max(recursion_misses(fd.as_fd().as_raw_fd())?);
    }
    Ok(most)
}

/// `BPF_OBJ_GET_INFO_BY_FD` for the one field aya 0.14 does not expose.
fn recursion_misses(fd: i32) -> Result<u64, String> {
    // SAFETY: both are plain C structs for which all-zero bytes are valid.
    let mut info: bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    attr.info.bpf_fd = fd as u32;
    attr.info.info_len = std::mem::size_of::<bpf_prog_info>() as u32;
    attr.info.info = &mut info as *mut bpf_prog_info as u64;
    // SAFETY: `attr` points at `info`, which outlives the call, with its size.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            bpf_cmd::BPF_OBJ_GET_INFO_BY_FD as libc::c_int,
            &mut attr as *mut bpf_attr,
            std::mem::size_of::<bpf_attr>() as u32,
        )
    };
    if rc < 0 {
        return Err(format!(
            "BPF_OBJ_GET_INFO_BY_FD: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(info.recursion_misses)
}
