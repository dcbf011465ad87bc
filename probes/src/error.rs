//! Why probing could not start or go on.

use std::path::PathBuf;

/// Errors of the probe loader and the window sampler.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("no process with pid {pid}: check the pid (`pgrep -f <name>`) and that it still runs")]
    NoSuchProcess { pid: u32 },
    #[error("pid {pid} is not a {profile} server's root process: it is {what}; {hint}")]
    NotTheRoot {
        pid: u32,
        profile: String,
        what: String,
        hint: String,
    },
    #[error("invalid probe option: {what}")]
    BadOption { what: String },
    #[error(
        "not allowed to load BPF programs: this process lacks {missing}; run as root \
         (sudo) or grant the capabilities (setcap cap_bpf,cap_perfmon,cap_sys_resource+ep <binary>)"
    )]
    NotPrivileged { missing: String },
    #[error(
        "the kernel exposes no BTF at /sys/kernel/btf/vmlinux, which the probes need to adapt to \
         its struct layouts (CO-RE): use a kernel built with CONFIG_DEBUG_INFO_BTF=y"
    )]
    BtfUnavailable,
    #[error(
        "per-syscall tracepoints unavailable: {why}; or trace syscalls with the raw \
         tracepoints (`--syscall-hooks raw`)"
    )]
    Tracefs { why: String },
    #[error(
        "the fsync counters need the per-syscall tracepoints, and {why} \
         (the raw syscall hooks would run a program on every syscall of the machine)"
    )]
    FsyncCountersNeedTracefs { why: String },
    #[error("cannot load the BPF object into the kernel (is BPF enabled, CONFIG_BPF_SYSCALL=y?): {source}")]
    Load {
        #[source]
        source: Box<aya::EbpfError>,
    },
    #[error("the kernel rejected BPF program `{program}`: {source}")]
    ProgramLoad {
        program: String,
        #[source]
        source: Box<aya::programs::ProgramError>,
    },
    #[error("cannot attach `{program}` to {target}: {source}")]
    Attach {
        program: String,
        target: String,
        #[source]
        source: Box<aya::programs::ProgramError>,
    },
    #[error(
        "BPF object has no {what} `{name}` (the object and this binary do not match: rebuild)"
    )]
    Missing { what: &'static str, name: String },
    #[error("cannot read BPF map `{map}`: {source}")]
    Map {
        map: &'static str,
        #[source]
        source: Box<aya::maps::MapError>,
    },
    #[error(
        "BPF map `{map}` does not have the layout this binary expects ({why}); the object and \
         this binary do not match: rebuild"
    )]
    MapLayout { map: &'static str, why: String },
    #[error(
        "pid {pid} ({exe}) has none of the profile's commit points, so it is not the server \
         the profile is for ({tried}): pass the pid of that server (e.g. `pidof mariadbd`), or \
         the profile that matches this process (`--profile redoctor-engine` for the bundled engine)",
        exe = exe.display()
    )]
    NoCommitPoint {
        pid: u32,
        exe: PathBuf,
        tried: String,
    },
    #[error("cannot read {path}: {source}")]
    Proc {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
