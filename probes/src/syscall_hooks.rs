//! How the write, fsync and positional-read syscalls are hooked: the per-syscall
//! tracepoints where tracefs lists them, else the raw `sys_enter` and
//! `sys_exit`, and why a fallback happened.

use std::path::Path;
use std::str::FromStr;

use aya::programs::TracePoint;
use aya::Ebpf;
use serde::{Deserialize, Serialize};

use crate::attach::{attach_raw, load_err, program, taken, Unavailable};
use crate::error::ProbeError;
use crate::links::Links;

/// Raw syscall tracepoints (writes and fsyncs; futex waits come from `sched_switch`).
const SYSCALL_TRACEPOINTS: &[(&str, &str)] =
    &[("sys_enter", "sys_enter"), ("sys_exit", "sys_exit")];

/// The syscalls traced through per-syscall tracepoints (`syscalls/sys_enter_*`
/// and `syscalls/sys_exit_*`): the ones `call_kind_of` in the BPF source knows.
pub const TRACED_SYSCALLS: &[&str] = &[
    "write",
    "pwrite64",
    "writev",
    "pwritev",
    "pwritev2",
    "fsync",
    "fdatasync",
];

/// The traced syscalls whose entry is hooked too (to time them); a write
/// is counted at its exit alone.
pub const TIMED_SYSCALLS: &[&str] = &["fsync", "fdatasync"];

/// Positional reads (a page read on a buffer-pool miss), timed like the
/// fsyncs and traced with the writes (never by the fsync-only set): the
/// ones `call_kind_of` in the BPF source names `CALL_READ`. Plain read(2)
/// is left out: sockets and pipes use it.
pub const READ_SYSCALLS: &[&str] = &["pread64", "preadv", "preadv2"];

/// The per-syscall tracepoints attached: `(direction, syscall)`.
fn per_syscall_events() -> impl Iterator<Item = (&'static str, &'static str)> {
    let timed = TIMED_SYSCALLS.iter().chain(READ_SYSCALLS);
    timed.clone().map(|c| ("enter", *c)).chain(
        TRACED_SYSCALLS
            .iter()
            .chain(READ_SYSCALLS)
            .map(|c| ("exit", *c)),
    )
}

/// Whether the tracepoint of `call` is attached: every traced call with
/// `writes`, else the fsyncs alone.
fn wanted(call: &str, writes: bool) -> bool {
    writes || TIMED_SYSCALLS.contains(&call)
}

/// How the write and fsync syscalls are hooked. Both give the same numbers;
/// they differ in what they cost the rest of the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyscallHooks {
    /// Per-syscall tracepoints when tracefs shows them, else raw.
    Auto,
    /// `syscalls/sys_{enter,exit}_<call>` for the traced calls only: no BPF
    /// runs for any other syscall (futex, the busiest, above all). Needs
    /// tracefs mounted and a kernel with CONFIG_FTRACE_SYSCALLS.
    PerSyscall,
    /// Raw `sys_enter`/`sys_exit`: no tracefs needed, but a program runs
    /// (and returns at once) on every syscall of every process.
    Raw,
}

impl FromStr for SyscallHooks {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(SyscallHooks::Auto),
            "per-syscall" => Ok(SyscallHooks::PerSyscall),
            "raw" => Ok(SyscallHooks::Raw),
            _ => Err(format!(
                "unknown syscall hooks `{s}`: use auto, per-syscall or raw"
            )),
        }
    }
}

/// Chooses the hooks for `asked` and attaches them; a fallback from
/// per-syscall to raw is listed in `unavailable` with the reason.
pub(crate) fn attach(
    bpf: &mut Ebpf,
    links: &mut Links,
    asked: SyscallHooks,
    writes: bool,
    unavailable: &mut Vec<Unavailable>,
) -> Result<SyscallHooks, ProbeError> {
    let hooks = choose_syscall_hooks(asked, TRACEFS, unavailable)?;
    match hooks {
        SyscallHooks::PerSyscall => attach_per_syscall(bpf, links, writes)?,
        SyscallHooks::Raw if !writes => {
            // Fsyncs alone are asked for to be cheap; the raw hooks run on
            // every syscall of the machine.
            return Err(ProbeError::Tracefs {
                why: "fsyncs alone are traced only through the per-syscall tracepoints \
                      (the raw syscall hooks run on every syscall)"
                    .into(),
            });
        }
        _ => {
            // On every syscall of the machine.
            for (prog, tp) in SYSCALL_TRACEPOINTS {
                links.push_busy(attach_raw(bpf, prog, tp)?);
            }
        }
    }
    Ok(hooks)
}

/// The tracefs mount points aya looks at, in its order.
pub(crate) const TRACEFS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Why the per-syscall tracepoints cannot be attached here, or `None` when
/// tracefs lists every one of them.
fn per_syscall_missing(tracefs: &[&str]) -> Option<String> {
    let mut denied = None;
    let Some(events) = tracefs
        .iter()
        .map(|m| Path::new(m).join("events"))
        .find(|e| match std::fs::metadata(e) {
            Ok(m) => m.is_dir(),
            Err(err) => {
                if err.kind() == std::io::ErrorKind::PermissionDenied {
                    denied.get_or_insert_with(|| e.parent().unwrap_or(e).display().to_string());
                }
                false
            }
        })
    else {
        if let Some(m) = denied {
            // Mounted, but mode 0700 root (the default) and this is not root.
            return Some(format!(
                "tracefs at {m} is not readable by this user (permission denied): run as \
                 root, or make it readable (`chmod 0755 {m}`, or mount it with `-o mode=0755`)"
            ));
        }
        return Some(
            "tracefs is not mounted (mount it: `mount -t tracefs tracefs /sys/kernel/tracing`)"
                .into(),
        );
    };
    for (dir, call) in per_syscall_events() {
        let id = events.join(format!("syscalls/sys_{dir}_{call}/id"));
        if !id.exists() {
            return Some(format!(
                "the kernel has no tracepoint syscalls/sys_{dir}_{call} ({} is missing; \
                 per-syscall tracepoints need CONFIG_FTRACE_SYSCALLS=y)",
                id.display()
            ));
        }
    }
    None
}

/// The hooks to use for `asked`, given the tracefs mount points to look
/// at; a fallback from per-syscall to raw is listed in `unavailable` with
/// the reason.
fn choose_syscall_hooks(
    asked: SyscallHooks,
    tracefs: &[&str],
    unavailable: &mut Vec<Unavailable>,
) -> Result<SyscallHooks, ProbeError> {
    if asked == SyscallHooks::Raw {
        return Ok(SyscallHooks::Raw);
    }
    match (per_syscall_missing(tracefs), asked) {
        (None, _) => Ok(SyscallHooks::PerSyscall),
        (Some(why), SyscallHooks::PerSyscall) => Err(ProbeError::Tracefs { why }),
        (Some(why), _) => {
            unavailable.push(Unavailable {
                what: "per-syscall tracepoints".into(),
                why: format!(
                    "{why}; writes and fsyncs are traced with the raw syscall tracepoints \
                     instead, which run a BPF program on every syscall of every process"
                ),
            });
            Ok(SyscallHooks::Raw)
        }
    }
}

/// The exit program on every traced syscall (the fsyncs alone without
/// `writes`), the enter program on the timed ones.
fn attach_per_syscall(bpf: &mut Ebpf, links: &mut Links, writes: bool) -> Result<(), ProbeError> {
    for (prog, dir) in [("sys_enter_traced", "enter"), ("sys_exit_traced", "exit")] {
        let p: &mut TracePoint = program(bpf, prog)?;
        p.load().map_err(|e| load_err(prog, e))?;
        for (_, call) in per_syscall_events().filter(|(d, c)| *d == dir && wanted(c, writes)) {
            let name = format!("sys_{dir}_{call}");
            let id = p
                .attach("syscalls", &name)
                .map_err(|e| ProbeError::Attach {
                    program: prog.to_string(),
                    target: format!("tracepoint syscalls/{name}"),
                    source: Box::new(e),
                })?;
            links.push(p.take_link(id).map_err(|e| taken(prog, e))?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_tracefs(calls: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for call in calls {
            for d in ["enter", "exit"] {
                let ev = dir.path().join(format!("events/syscalls/sys_{d}_{call}"));
                std::fs::create_dir_all(&ev).unwrap();
                std::fs::write(ev.join("id"), "1\n").unwrap();
            }
        }
        std::fs::create_dir_all(dir.path().join("events")).unwrap();
        dir
    }

    fn choose(
        asked: SyscallHooks,
        root: &Path,
    ) -> (Result<SyscallHooks, ProbeError>, Vec<Unavailable>) {
        let mut unavailable = Vec::new();
        let r = choose_syscall_hooks(asked, &[root.to_str().unwrap()], &mut unavailable);
        (r, unavailable)
    }

    #[test]
    fn per_syscall_hooks_are_used_when_tracefs_lists_every_call() {
        let all: Vec<&str> = TRACED_SYSCALLS
            .iter()
            .chain(READ_SYSCALLS)
            .copied()
            .collect();
        let fs = fake_tracefs(&all);
        for asked in [SyscallHooks::Auto, SyscallHooks::PerSyscall] {
            let (r, u) = choose(asked, fs.path());
            assert_eq!(r.unwrap(), SyscallHooks::PerSyscall);
            assert!(u.is_empty(), "{u:?}");
        }
        // Raw is taken as asked, whatever tracefs shows.
        assert_eq!(
            choose(SyscallHooks::Raw, fs.path()).0.unwrap(),
            SyscallHooks::Raw
        );
    }

    #[test]
    fn auto_falls_back_to_raw_and_says_why() {
        let unmounted = tempfile::tempdir().unwrap();
        let (r, u) = choose(SyscallHooks::Auto, unmounted.path());
        assert_eq!(r.unwrap(), SyscallHooks::Raw);
        assert_eq!(u.len(), 1);
        assert!(u[0].why.contains("tracefs is not mounted"), "{u:?}");
        assert!(u[0].why.contains("mount -t tracefs"), "{u:?}");

        // A kernel without one of the events (no CONFIG_FTRACE_SYSCALLS).
        let partial = fake_tracefs(&[
            "write",
            "fsync",
            "fdatasync",
            "pread64",
            "preadv",
            "preadv2",
        ]);
        let (r, u) = choose(SyscallHooks::Auto, partial.path());
        assert_eq!(r.unwrap(), SyscallHooks::Raw);
        assert!(u[0].why.contains("syscalls/sys_exit_pwrite64"), "{u:?}");
        assert!(u[0].why.contains("CONFIG_FTRACE_SYSCALLS"), "{u:?}");
        // The positional reads are hooked too: a kernel without them falls
        // back as well, and says which one is missing.
        let no_reads = fake_tracefs(TRACED_SYSCALLS);
        let (r, u) = choose(SyscallHooks::Auto, no_reads.path());
        assert_eq!(r.unwrap(), SyscallHooks::Raw);
        assert!(u[0].why.contains("syscalls/sys_enter_pread64"), "{u:?}");
    }

    #[test]
    fn per_syscall_asked_without_tracefs_is_an_error_naming_the_fix() {
        let unmounted = tempfile::tempdir().unwrap();
        let (r, u) = choose(SyscallHooks::PerSyscall, unmounted.path());
        let e = r.unwrap_err().to_string();
        assert!(e.contains("tracefs is not mounted"), "{e}");
        assert!(e.contains("--syscall-hooks raw"), "{e}");
        assert!(u.is_empty());
    }

    #[test]
    fn syscall_hooks_parse_from_their_names() {
        assert_eq!("auto".parse::<SyscallHooks>(), Ok(SyscallHooks::Auto));
        assert_eq!(
            "per-syscall".parse::<SyscallHooks>(),
            Ok(SyscallHooks::PerSyscall)
        );
        assert_eq!("raw".parse::<SyscallHooks>(), Ok(SyscallHooks::Raw));
        assert!("fast"
            .parse::<SyscallHooks>()
            .unwrap_err()
            .contains("auto, per-syscall or raw"));
    }
}
