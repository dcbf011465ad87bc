//! Loads the BPF object for one target process and attaches its programs.
//!
//! [`Probes`] owns the loaded object: dropping it detaches every program and
//! frees every map (nothing is pinned), so probes never outlive the agent,
//! even when it is killed (the kernel closes its descriptors).
//!
//! Only raw tracepoints (scheduler, syscalls) and uprobes are used: no
//! kprobes, no fentry, and no tracefs (raw tracepoints attach by name through
//! the bpf syscall). The raw tracepoints are required; uprobes need the probe
//! symbols in the target binary, and when they are missing that is listed in
//! [`Probes::unavailable`] with the reason while the rest keeps working.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use aya::programs::uprobe::UProbeScope;
use aya::programs::{RawTracePoint, UProbe};
use aya::{Ebpf, EbpfLoader};
use serde::{Deserialize, Serialize};

use crate::error::ProbeError;
use crate::preflight;

/// The compiled BPF object (see build.rs).
static BPF_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/redoctor.bpf.o"));

/// Raw tracepoints: (program, tracepoint). Raw tracepoints need no tracefs
/// and build no per-event record, so they are the cheapest hooks here.
const SCHED_TRACEPOINTS: &[(&str, &str)] = &[
    ("sched_switch", "sched_switch"),
    ("sched_waking", "sched_waking"),
];

/// Raw syscall tracepoints (writes and fsyncs; futex waits come from `sched_switch`).
const SYSCALL_TRACEPOINTS: &[(&str, &str)] =
    &[("sys_enter", "sys_enter"), ("sys_exit", "sys_exit")];

/// Probe points called once per redo write/flush batch. At very high commit
/// rates a batch holds barely more than one commit, and each hit costs a
/// uprobe trap (~1.4 µs), so they are attached only on request
/// ([`AttachOptions::batch_points`]); the syscall tracepoints measure redo
/// writes and fsyncs without them.
pub const BATCH_PROBE_POINTS: &[&str] = &[
    "redoctor_log_write",
    "redoctor_log_flush",
    "redoctor_flush_notified",
];

/// Uprobes: (program, symbol in the target binary).
pub const PROBE_POINTS: &[(&str, &str)] = &[
    ("log_write", "redoctor_log_write"),
    ("log_flush", "redoctor_log_flush"),
    ("flush_notified", "redoctor_flush_notified"),
    ("mode_switch", "redoctor_mode_switch"),
    ("checkpoint", "redoctor_checkpoint"),
    ("fail_stop", "redoctor_fail_stop"),
    ("counters_tick", "redoctor_counters_tick"),
    ("named_locks", "redoctor_named_locks"),
];

/// How to attach.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// Target process id.
    pub pid: u32,
    /// Attach uprobes to the engine probe points (`redoctor_*` symbols).
    pub uprobes: bool,
    /// Attach the syscall tracepoints (write bytes, fsyncs).
    /// They fire on every syscall of every process, so they are the largest
    /// cost on syscall-heavy targets; without them `io` stays
    /// empty and is listed as unavailable.
    pub syscalls: bool,
    /// Also attach the per-batch probe points ([`BATCH_PROBE_POINTS`]).
    pub batch_points: bool,
    /// Futex waits by address record one wait in this many, at random
    /// (a power of two; 1 = every wait). Per-thread and per-role totals are
    /// always exact.
    pub futex_sample: u32,
}

impl AttachOptions {
    pub fn new(pid: u32) -> Self {
        AttachOptions {
            pid,
            uprobes: true,
            syscalls: true,
            batch_points: false,
            futex_sample: DEFAULT_FUTEX_SAMPLE,
        }
    }
}

/// A measurement that is not available in this run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unavailable {
    /// What is missing (a tracepoint group or a probe-point symbol).
    pub what: String,
    /// Why, and how to fix it.
    pub why: String,
}

/// Default of [`AttachOptions::futex_sample`].
pub const DEFAULT_FUTEX_SAMPLE: u32 = 8;

/// The loaded and attached probes for one process.
pub struct Probes {
    pub(crate) bpf: Ebpf,
    pid: u32,
    futex_sample: u32,
    unavailable: Vec<Unavailable>,
    attached_points: Vec<String>,
}

impl Probes {
    /// Checks the target and privileges, loads the object with the target's
    /// tgid baked in, and attaches every program it can.
    pub fn attach(opts: &AttachOptions) -> Result<Probes, ProbeError> {
        preflight::check_pid(opts.pid)?;
        preflight::check_privileges()?;
        preflight::check_btf()?;
        if !opts.futex_sample.is_power_of_two() {
            return Err(ProbeError::BadOption {
                what: format!(
                    "futex sample {} is not a power of two (1, 2, 4, 8, ...)",
                    opts.futex_sample
                ),
            });
        }
        let mask = opts.futex_sample - 1;
        let mut bpf = EbpfLoader::new()
            .override_global("target_tgid", &opts.pid, true)
            .override_global("futex_sample_mask", &mask, true)
            .load(BPF_OBJECT)
            .map_err(|e| ProbeError::Load {
                source: Box::new(e),
            })?;
        let mut unavailable = Vec::new();

        let mut raw: Vec<(&str, &str)> = SCHED_TRACEPOINTS.to_vec();
        if opts.syscalls {
            raw.extend_from_slice(SYSCALL_TRACEPOINTS);
        } else {
            unavailable.push(Unavailable {
                what: "io".into(),
                why: "syscall tracepoints not attached (asked for)".into(),
            });
        }
        for (prog, tp) in raw {
            let p: &mut RawTracePoint = program(&mut bpf, prog)?;
            p.load().map_err(|e| load_err(prog, e))?;
            p.attach(tp).map_err(|e| ProbeError::Attach {
                program: prog.to_string(),
                target: format!("raw tracepoint {tp}"),
                source: Box::new(e),
            })?;
        }

        let mut attached_points = Vec::new();
        if opts.uprobes {
            let exe = PathBuf::from(format!("/proc/{}/exe", opts.pid));
            let scope = UProbeScope::OneProcess(
                NonZeroU32::new(opts.pid).ok_or(ProbeError::NoSuchProcess { pid: 0 })?,
            );
            for (prog, sym) in PROBE_POINTS {
                if !opts.batch_points && BATCH_PROBE_POINTS.contains(sym) {
                    continue;
                }
                let p: &mut UProbe = program(&mut bpf, prog)?;
                p.load().map_err(|e| load_err(prog, e))?;
                match p.attach(*sym, &exe, scope) {
                    Ok(_) => attached_points.push(sym.to_string()),
                    Err(e) => unavailable.push(Unavailable {
                        what: format!("probe point {sym}"),
                        why: uprobe_why(&exe, &e),
                    }),
                }
            }
        }
        Ok(Probes {
            bpf,
            pid: opts.pid,
            futex_sample: opts.futex_sample,
            unavailable,
            attached_points,
        })
    }

    /// The target process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// One futex wait in this many is recorded by address.
    pub fn futex_sample(&self) -> u32 {
        self.futex_sample
    }

    /// Measurements that could not be attached, with reasons.
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// Kernel ids of the loaded programs (to check they are gone after drop).
    pub fn program_ids(&self) -> Vec<u32> {
        self.bpf
            .programs()
            .filter_map(|(_, p)| p.info().ok().map(|i| i.id()))
            .collect()
    }

    /// Probe-point symbols with an attached uprobe.
    pub fn attached_probe_points(&self) -> &[String] {
        &self.attached_points
    }
}

fn program<'a, T>(bpf: &'a mut Ebpf, name: &str) -> Result<&'a mut T, ProbeError>
where
    &'a mut T: TryFrom<&'a mut aya::programs::Program>,
{
    bpf.program_mut(name)
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| ProbeError::Missing {
            what: "program",
            name: name.to_string(),
        })
}

fn load_err(prog: &str, e: aya::programs::ProgramError) -> ProbeError {
    ProbeError::ProgramLoad {
        program: prog.to_string(),
        source: Box::new(e),
    }
}

fn uprobe_why(exe: &Path, e: &aya::programs::ProgramError) -> String {
    let target = std::fs::read_link(exe).unwrap_or_else(|_| exe.to_path_buf());
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    format!(
        "{msg} (in {}); the binary may be stripped of its probe symbols or be another program: \
         keep the `redoctor_*` symbols (do not strip them) to get engine events",
        target.display()
    )
}
