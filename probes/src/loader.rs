//! Loads the BPF object for one target process and attaches its programs.
//!
//! [`Probes`] owns the loaded object: dropping it detaches every program and
//! frees every map (nothing is pinned), so probes never outlive the agent,
//! even when it is killed (the kernel closes its descriptors).
//!
//! Only tracepoints and uprobes are used: no kprobes, no fentry. The
//! scheduler's raw tracepoints attach by name through the bpf syscall and
//! are required. Writes and fsyncs are traced with the per-syscall
//! tracepoints when tracefs shows them, else with the raw syscall
//! tracepoints (see [`SyscallHooks`]). Uprobes need the probe symbols in the
//! target binary. Whatever is missing or degraded is listed in
//! [`Probes::unavailable`] with the reason while the rest keeps working.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use aya::programs::uprobe::UProbeScope;
use aya::programs::UProbe;
use aya::{Ebpf, EbpfLoader};

pub use crate::attach::Unavailable;
use crate::attach::{attach_raw, load_err, program, taken};
use crate::error::ProbeError;
use crate::links::Links;
use crate::mapped_array::MappedArray;
use crate::maps::{FdIo, ThreadSched};
use crate::preflight;
use crate::procfs;
use crate::profile::{Profile, TargetRules, UsdtEvent, UsdtRule, WriterSide};
pub use crate::syscall_hooks::{SyscallHooks, READ_SYSCALLS, TIMED_SYSCALLS, TRACED_SYSCALLS};
use crate::usdt::{self, Semaphores};
use crate::{ring_hooks, syscall_hooks};

/// The compiled BPF object (see build.rs).
static BPF_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/redoctor.bpf.o"));

/// Raw tracepoints: (program, tracepoint). Raw tracepoints need no tracefs
/// and build no per-event record, so they are the cheapest hooks here.
const SCHED_TRACEPOINTS: &[(&str, &str)] = &[
    ("sched_switch", "sched_switch"),
    ("sched_waking", "sched_waking"),
];

/// Raw tracepoints that stamp a woken thread, with
/// [`AttachOptions::runq_stamps`].
const RUNQ_STAMP_TRACEPOINTS: &[(&str, &str)] = &[
    ("runq_wakeup", "sched_wakeup"),
    ("runq_wakeup_new", "sched_wakeup_new"),
];

pub use redoctor_probes_common::abi::{BATCH_PROBE_POINTS, PROBE_POINTS};

/// The program that counts hits of a profile's commit point (its slot in
/// `engine_probe_point_hits`): it adds one to the slot's `hits` atomically
/// per call and ignores the arguments, so any function can feed it. The
/// bundled engine's checkpoint point is reused: a profile with commit
/// points is for a target without the `redoctor_*` points.
pub const COMMIT_POINT_PROGRAM: (&str, usize) = ("checkpoint", crate::maps::point::CHECKPOINT);

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
    /// Which syscall tracepoints trace them (when `syscalls`).
    pub syscall_hooks: SyscallHooks,
    /// With `syscalls`, also count the writes (off: fsyncs alone, the two
    /// per-syscall hooks of each fsync call and nothing else).
    pub writes: bool,
    /// Attach the scheduler hooks (on-CPU time, run-queue waits, wakeups,
    /// futex waits): one program run per context switch and wakeup, the
    /// probes' main cost. Off for a cheap set kept attached for good.
    pub scheduler: bool,
    /// Also attach the per-batch probe points ([`BATCH_PROBE_POINTS`]).
    pub batch_points: bool,
    /// Futex waits by address record one wait in this many, at random
    /// (a power of two; 1 = every wait). Per-thread and per-role totals are
    /// always exact.
    pub futex_sample: u32,
    /// Entries of the direct-mapped per-thread array (a power of two);
    /// threads whose entry is taken go to a hash map, at ~55 ns more per
    /// event. Tests shrink it to exercise that path.
    pub thread_slots: u32,
    /// Capacity of the wakeups-by-thread-pair hash map (`wakeups_by_pair`).
    /// A wakeup between a pair that finds the map full is not recorded and
    /// is counted as a lost event (`Signals::events_lost`). Exited threads'
    /// pairs are pruned after each window, so only a window with more live
    /// pairs than this loses any.
    pub wake_pairs: u32,
    /// A bench control: the scheduler and syscall programs return at once,
    /// so what remains is the cost of their dispatch by the kernel (and of
    /// the agent). Every hook is attached as usual; the signals stay empty.
    pub empty_programs: bool,
    /// Count the run-queue histogram in microseconds (BCC runqlat's log2
    /// buckets) instead of nanoseconds, for a bucket-by-bucket cross-check.
    pub runq_hist_us: bool,
    /// Time run-queue waits with the probes' own clock stamps (at
    /// `sched_wakeup`/`sched_wakeup_new` or when a runnable thread is
    /// switched out, until it is switched in), as BCC's runqlat does,
    /// instead of from the kernel's schedstat (`sched_info.run_delay`).
    /// Schedstat reads a wait that follows a preempting wakeup as ~0 (the
    /// kernel skips that run-queue clock update), so below a few
    /// microseconds the two histograms differ. Costs two more tracepoint
    /// hooks and a hash-map update per switch-in of a target thread; the
    /// total run-queue wait stays schedstat's either way.
    pub runq_stamps: bool,
    /// Watch the target and every process it forks, before or after the
    /// probes attach (a PostgreSQL cluster from its postmaster). Off, the
    /// programs compare the tgid with the target's and nothing more.
    pub follow_children: bool,
    /// Count the writes of threads not marked yet (born since the last
    /// window) as the background's, not the foreground's (the profile's
    /// `new_threads`).
    pub unmarked_background: bool,
    /// USDT probes of the target's binary to attach, and what each counts.
    pub usdt: Vec<UsdtRule>,
    /// What the target process must be (a profile's `[target]`), checked
    /// before anything loads, and the profile's name for the message.
    pub target: Option<(String, TargetRules)>,
    /// Symbols of a function the target calls once per commit, tried in
    /// order ([`crate::Profile::commit_points`]); the first the binary has
    /// is probed and its hits are the commits. Non-empty means the target
    /// is not the bundled engine: its `redoctor_*` points are not tried,
    /// and a target with none of these symbols is refused
    /// ([`ProbeError::NoCommitPoint`]). Needs `uprobes`.
    pub commit_points: Vec<String>,
}

impl AttachOptions {
    /// Checks the options that have a valid range (before anything loads).
    pub fn validate(&self) -> Result<(), ProbeError> {
        if !self.futex_sample.is_power_of_two() {
            return Err(ProbeError::BadOption {
                what: format!(
                    "futex sample {} is not a power of two (1, 2, 4, 8, ...)",
                    self.futex_sample
                ),
            });
        }
        if !self.thread_slots.is_power_of_two() || self.thread_slots > MAX_THREAD_SLOTS {
            return Err(ProbeError::BadOption {
                what: format!(
                    "thread slots {} is not a power of two from 1 to {MAX_THREAD_SLOTS}",
                    self.thread_slots
                ),
            });
        }
        if self.wake_pairs == 0 || self.wake_pairs > MAX_WAKE_PAIRS {
            return Err(ProbeError::BadOption {
                what: format!(
                    "wake pairs {} is not from 1 to {MAX_WAKE_PAIRS}",
                    self.wake_pairs
                ),
            });
        }
        Ok(())
    }

    pub fn new(pid: u32) -> Self {
        AttachOptions {
            pid,
            uprobes: true,
            syscalls: true,
            syscall_hooks: SyscallHooks::Auto,
            writes: true,
            scheduler: true,
            batch_points: false,
            futex_sample: DEFAULT_FUTEX_SAMPLE,
            thread_slots: DEFAULT_THREAD_SLOTS,
            wake_pairs: DEFAULT_WAKE_PAIRS,
            empty_programs: false,
            runq_hist_us: false,
            runq_stamps: false,
            follow_children: false,
            unmarked_background: false,
            usdt: Vec::new(),
            target: None,
            commit_points: Vec::new(),
        }
    }

    /// [`AttachOptions::new`] with what `profile` asks: its processes, its
    /// USDT probes and its commit points.
    pub fn for_profile(pid: u32, profile: &Profile) -> Self {
        AttachOptions {
            // A server with its own USDT probes has none of the bundled
            // engine's `redoctor_*` probe points.
            uprobes: profile.usdt.is_empty(),
            follow_children: profile.target.follow_children,
            unmarked_background: profile.new_threads == WriterSide::Background,
            usdt: profile.usdt.clone(),
            target: Some((profile.name.clone(), profile.target.clone())),
            commit_points: profile.commit_symbols(),
            ..Self::new(pid)
        }
    }

    /// The cheap set for `profile`'s target, meant to stay attached: the
    /// fsync and fdatasync calls of its processes (count, time, latency
    /// histogram per descriptor) through their per-syscall tracepoints,
    /// and the fork and exit hooks where the profile follows children.
    /// No scheduler hook, no write hook, no uprobe: BPF runs only when the
    /// target's machine calls fsync. Needs tracefs (the raw syscall hooks
    /// would run on every syscall, which is not cheap).
    pub fn fsync_counters(pid: u32, profile: &Profile) -> Self {
        AttachOptions {
            uprobes: false,
            usdt: Vec::new(),
            commit_points: Vec::new(),
            syscall_hooks: SyscallHooks::PerSyscall,
            writes: false,
            scheduler: false,
            ..Self::for_profile(pid, profile)
        }
    }
}

/// Capacity of `tracked_tgids` (`MAX_TRACKED` in the BPF source): the
/// processes a target may have at once.
pub const MAX_TRACKED: usize = 16384;

/// Default of [`AttachOptions::futex_sample`].
pub const DEFAULT_FUTEX_SAMPLE: u32 = 32;

/// Default of [`AttachOptions::wake_pairs`] (`MAX_PAIRS` in the BPF
/// source): 65536 entries of 24 bytes of key and value.
pub const DEFAULT_WAKE_PAIRS: u32 = 65536;

/// Largest [`AttachOptions::wake_pairs`] accepted.
pub const MAX_WAKE_PAIRS: u32 = 1 << 22;

/// Default of [`AttachOptions::thread_slots`] (`THREAD_SLOTS_DEFAULT` in
/// the BPF source): 8192 entries of 128 bytes, 1 MiB.
pub const DEFAULT_THREAD_SLOTS: u32 = 8192;

/// Largest [`AttachOptions::thread_slots`] accepted (128 MiB of entries).
pub const MAX_THREAD_SLOTS: u32 = 1 << 20;

/// The loaded and attached probes for one process.
pub struct Probes {
    /// Every attachment, detached together and first on drop.
    links: Links,
    /// `thread_sched_slots` and `io_by_fd_slots`, mapped (declared before
    /// `bpf` so they are unmapped first).
    pub(crate) thread_slots: MappedArray<ThreadSched>,
    pub(crate) fd_slots: MappedArray<FdIo>,
    pub(crate) bpf: Ebpf,
    pid: u32,
    futex_sample: u32,
    syscall_hooks: Option<SyscallHooks>,
    unavailable: Vec<Unavailable>,
    attached_points: Vec<String>,
    commit_point: Option<String>,
    follow_children: bool,
    /// The run-queue histogram's unit: 1 (ns) or 1000 (µs, `runq_hist_us`).
    runq_hist_unit_ns: u64,
    /// USDT probes attached (`provider:name`), with what each counts.
    attached_usdt: Vec<(String, UsdtEvent)>,
    /// USDT semaphores raised in the target's processes (lowered on drop).
    semaphores: Semaphores,
}

impl Drop for Probes {
    fn drop(&mut self) {
        self.links.detach_all();
        if self.semaphores.is_empty() {
            return;
        }
        // Processes forked since attach inherited the raised semaphores.
        let now: Vec<u32> = match self.bpf.map("tracked_tgids") {
            Some(m) => aya::maps::HashMap::<_, u32, u32>::try_from(m)
                .map(|h| h.keys().flatten().collect())
                .unwrap_or_default(),
            None => Vec::new(),
        };
        self.semaphores.lower(&now);
    }
}

impl Probes {
    /// Checks the target and privileges, loads the object with the target's
    /// tgid baked in, and attaches every program it can.
    pub fn attach(opts: &AttachOptions) -> Result<Probes, ProbeError> {
        preflight::check_pid(opts.pid)?;
        if let Some((name, target)) = &opts.target {
            preflight::check_target(opts.pid, name, target)?;
        }
        preflight::check_privileges()?;
        preflight::check_btf()?;
        opts.validate()?;
        let mask = opts.futex_sample - 1;
        let slot_mask = opts.thread_slots - 1;
        let start_ns = monotonic_ns();
        let empty = u8::from(opts.empty_programs); // a C `bool`
        let follow = u8::from(opts.follow_children);
        let runq_us = u8::from(opts.runq_hist_us);
        let stamps = u8::from(opts.runq_stamps);
        let unmarked = u8::from(opts.unmarked_background);
        let mut bpf = EbpfLoader::new()
            .override_global("target_tgid", &opts.pid, true)
            .override_global("follow_children", &follow, true)
            .override_global("futex_sample_mask", &mask, true)
            .override_global("probes_start_ns", &start_ns, true)
            .override_global("thread_slot_mask", &slot_mask, true)
            .override_global("empty_programs", &empty, true)
            .override_global("runq_hist_us", &runq_us, true)
            .override_global("runq_stamps", &stamps, true)
            .override_global("unmarked_background", &unmarked, true)
            .map_max_entries("thread_sched_slots", opts.thread_slots)
            .map_max_entries("wakeups_by_pair", opts.wake_pairs)
            .load(BPF_OBJECT)
            .map_err(|e| ProbeError::Load {
                source: Box::new(e),
            })?;
        let thread_slots = mapped(&bpf, "thread_sched_slots")?;
        let fd_slots: MappedArray<FdIo> = mapped(&bpf, "io_by_fd_slots")?;
        if fd_slots.len() != crate::maps::FD_SLOTS {
            return Err(ProbeError::MapLayout {
                map: "io_by_fd_slots",
                why: format!(
                    "{} entries, user space expects {}",
                    fd_slots.len(),
                    crate::maps::FD_SLOTS
                ),
            });
        }
        let mut unavailable = Vec::new();
        let mut links = Links::default();

        if opts.follow_children {
            track_process_tree(&mut bpf, &mut links, opts.pid)?;
        }
        let syscall_hooks = if opts.syscalls {
            Some(syscall_hooks::attach(
                &mut bpf,
                &mut links,
                opts.syscall_hooks,
                opts.writes,
                &mut unavailable,
            )?)
        } else {
            unavailable.push(Unavailable {
                what: "io".into(),
                why: "syscall tracepoints not attached (asked for)".into(),
            });
            None
        };
        if opts.syscalls && opts.writes {
            ring_hooks::attach(
                &mut bpf,
                &mut links,
                syscall_hooks::TRACEFS,
                &mut unavailable,
            )?;
        }

        let mut attached_points = Vec::new();
        let mut commit_point = None;
        if opts.uprobes {
            let exe = PathBuf::from(format!("/proc/{}/exe", opts.pid));
            let scope = UProbeScope::OneProcess(
                NonZeroU32::new(opts.pid).ok_or(ProbeError::NoSuchProcess { pid: 0 })?,
            );
            if !opts.commit_points.is_empty() {
                commit_point = Some(attach_commit_point(
                    &mut bpf,
                    &mut links,
                    &exe,
                    scope,
                    opts.pid,
                    &opts.commit_points,
                )?);
            }
            let engine_points = if opts.commit_points.is_empty() {
                PROBE_POINTS
            } else {
                &[]
            };
            for (prog, sym) in engine_points {
                if !opts.batch_points && BATCH_PROBE_POINTS.contains(sym) {
                    continue;
                }
                let p: &mut UProbe = program(&mut bpf, prog)?;
                p.load().map_err(|e| load_err(prog, e))?;
                match p.attach(*sym, &exe, scope) {
                    Ok(id) => {
                        links.push(p.take_link(id).map_err(|e| taken(prog, e))?);
                        attached_points.push(sym.to_string());
                    }
                    Err(e) => unavailable.push(Unavailable {
                        what: format!("probe point {sym}"),
                        why: uprobe_why(&exe, &e),
                    }),
                }
            }
        }
        let (attached_usdt, semaphores) = if opts.usdt.is_empty() {
            (Vec::new(), Semaphores::default())
        } else {
            attach_usdt(&mut bpf, &mut links, opts, &mut unavailable)?
        };
        // The scheduler hooks last (and first off on drop, with the raw
        // syscall hooks of the fallback, attached above): the uprobes'
        // attach takes a few hundred ms, which the target need not pay for
        // at every context switch.
        if opts.scheduler {
            for (prog, tp) in SCHED_TRACEPOINTS {
                links.push_busy(attach_raw(&mut bpf, prog, tp)?);
            }
        } else {
            unavailable.push(Unavailable {
                what: "scheduler".into(),
                why: "scheduler tracepoints not attached (asked for)".into(),
            });
        }
        if opts.scheduler && opts.runq_stamps {
            for (prog, tp) in RUNQ_STAMP_TRACEPOINTS {
                links.push_busy(attach_raw(&mut bpf, prog, tp)?);
            }
        }
        Ok(Probes {
            links,
            thread_slots,
            fd_slots,
            bpf,
            pid: opts.pid,
            futex_sample: opts.futex_sample,
            syscall_hooks,
            unavailable,
            attached_points,
            follow_children: opts.follow_children,
            runq_hist_unit_ns: if opts.runq_hist_us { 1000 } else { 1 },
            attached_usdt,
            semaphores,
            commit_point,
        })
    }

    /// Whether the target is a tree of processes (see
    /// [`AttachOptions::follow_children`]).
    pub fn follows_children(&self) -> bool {
        self.follow_children
    }

    /// USDT probes attached (`provider:name`) and what each counts.
    pub fn attached_usdt(&self) -> &[(String, UsdtEvent)] {
        &self.attached_usdt
    }

    /// Whether a USDT probe counts this event.
    pub fn usdt_counts(&self, event: UsdtEvent) -> bool {
        self.attached_usdt.iter().any(|(_, e)| *e == event)
    }

    /// Whether lock waits by name are measured (both ends attached).
    pub(crate) fn has_usdt_lock_waits(&self) -> bool {
        self.usdt_counts(UsdtEvent::LockWaitStart) && self.usdt_counts(UsdtEvent::LockWaitDone)
    }

    /// The target process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// One futex wait in this many is recorded by address.
    pub fn futex_sample(&self) -> u32 {
        self.futex_sample
    }

    /// Nanoseconds per unit of the run-queue histogram's buckets: 1, or
    /// 1000 with [`AttachOptions::runq_hist_us`].
    pub fn runq_hist_unit_ns(&self) -> u64 {
        self.runq_hist_unit_ns
    }

    /// How writes and fsyncs are traced ([`SyscallHooks::PerSyscall`] or
    /// [`SyscallHooks::Raw`]); `None` when they are not.
    pub fn syscall_hooks(&self) -> Option<SyscallHooks> {
        self.syscall_hooks
    }

    /// Measurements that could not be attached, with reasons.
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// How many attachments (links) the programs have.
    pub fn link_count(&self) -> usize {
        self.links.len()
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

    /// The commit point probed (a symbol of [`AttachOptions::commit_points`]),
    /// if any.
    pub fn commit_point(&self) -> Option<&str> {
        self.commit_point.as_deref()
    }
}

/// Attaches [`COMMIT_POINT_PROGRAM`] to the first of `symbols` the binary
/// at `exe` has; none is an error naming the binary and the symbols tried.
fn attach_commit_point(
    bpf: &mut Ebpf,
    links: &mut Links,
    exe: &Path,
    scope: UProbeScope,
    pid: u32,
    symbols: &[String],
) -> Result<String, ProbeError> {
    let prog = COMMIT_POINT_PROGRAM.0;
    let p: &mut UProbe = program(bpf, prog)?;
    p.load().map_err(|e| load_err(prog, e))?;
    let mut first_error = None;
    for sym in symbols {
        match p.attach(sym.as_str(), exe, scope) {
            Ok(id) => {
                links.push(p.take_link(id).map_err(|e| taken(prog, e))?);
                return Ok(sym.clone());
            }
            Err(e) => {
                first_error.get_or_insert_with(|| error_chain(&e));
            }
        }
    }
    let target = std::fs::read_link(exe).unwrap_or_else(|_| exe.to_path_buf());
    let first = first_error.unwrap_or_default();
    // A symbol the binary lacks is the expected failure; anything else
    // (permissions, a vanished binary) is worth its own words.
    let why = if first.contains("error resolving symbol") {
        String::new()
    } else {
        format!("; attaching failed: {first}")
    };
    Err(ProbeError::NoCommitPoint {
        pid,
        exe: target,
        tried: format!("symbols tried: {}{why}", symbols.join(", ")),
    })
}

/// An error and its sources, `: `-joined.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

/// Maps array `name` of the loaded object into this process.
fn mapped<T: aya::Pod>(bpf: &Ebpf, name: &'static str) -> Result<MappedArray<T>, ProbeError> {
    let map = bpf.map(name).ok_or(ProbeError::Missing {
        what: "map",
        name: name.into(),
    })?;
    MappedArray::new(name, map)
}

/// CLOCK_MONOTONIC now, in ns (the clock of a task's `start_time`).
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Fills `tracked_tgids` with `root` and its descendants and attaches the
/// fork and exit tracepoints that keep it current. The fork hook goes in
/// before the scan of `/proc`, so a process forked during the scan is
/// either found by it or added by the hook.
fn track_process_tree(bpf: &mut Ebpf, links: &mut Links, root: u32) -> Result<(), ProbeError> {
    let name = "tracked_tgids";
    let insert = |bpf: &mut Ebpf, pid: u32, parent: u32| -> Result<(), ProbeError> {
        let m = bpf.map_mut(name).ok_or(ProbeError::Missing {
            what: "map",
            name: name.into(),
        })?;
        let mut h: aya::maps::HashMap<_, u32, u32> =
            aya::maps::HashMap::try_from(m).map_err(|e| ProbeError::Map {
                map: name,
                source: Box::new(e),
            })?;
        h.insert(pid, parent, 0).map_err(|e| ProbeError::Map {
            map: name,
            source: Box::new(e),
        })
    };
    insert(bpf, root, procfs::parent(root).unwrap_or(0))?;
    links.push(attach_raw(bpf, "process_fork", "sched_process_fork")?);
    links.push(attach_raw(bpf, "process_exit", "sched_process_exit")?);
    for (pid, parent) in procfs::descendants(root) {
        insert(bpf, pid, parent)?;
    }
    Ok(())
}

/// The BPF program and attach cookie for a USDT site counting `event`, or
/// why it cannot be attached.
fn usdt_program(event: UsdtEvent, site: &usdt::UsdtSite) -> Result<(&'static str, u64), String> {
    use crate::maps::point;
    let count = |slot: usize| Ok(("usdt_count", slot as u64));
    match event {
        UsdtEvent::TxnStart => Ok(("usdt_txn_start", 0)),
        UsdtEvent::Commit => Ok(("usdt_txn_end", point::TXN_COMMIT as u64)),
        UsdtEvent::Abort => Ok(("usdt_txn_end", point::TXN_ABORT as u64)),
        UsdtEvent::WalInsert => count(point::WAL_INSERT),
        UsdtEvent::WalSwitch => count(point::WAL_SWITCH),
        UsdtEvent::WalBufferFull => count(point::WAL_BUFFER_FULL),
        UsdtEvent::LockWaitStart => Ok(("usdt_lock_wait_start", 0)),
        UsdtEvent::LockWaitDone => {
            let arg = site.arg(1).unwrap_or("");
            match usdt::register_arg(arg) {
                Some(reg) => Ok(("usdt_lock_wait_done", u64::from(reg))),
                None => Err(format!(
                    "its lock name (argument 1, `{arg}`) is not in a register at the site at \
                     {:#x}; only register arguments are decoded",
                    site.address
                )),
            }
        }
    }
}

/// Attaches the USDT probes `opts.usdt` names at every site of the
/// target's binary (all processes that run it, filtered in the programs on
/// the target's tgids) and raises their semaphores in the target's
/// processes. What cannot be attached goes to `unavailable`.
fn attach_usdt(
    bpf: &mut Ebpf,
    links: &mut Links,
    opts: &AttachOptions,
    unavailable: &mut Vec<Unavailable>,
) -> Result<(Vec<(String, UsdtEvent)>, Semaphores), ProbeError> {
    let exe = PathBuf::from(format!("/proc/{}/exe", opts.pid));
    let real = std::fs::read_link(&exe).unwrap_or_else(|_| exe.clone());
    let sites = match usdt::read_sites(&exe) {
        Ok(s) => s,
        Err(e) => {
            unavailable.push(Unavailable {
                what: "usdt".into(),
                why: e.to_string(),
            });
            return Ok((Vec::new(), Semaphores::default()));
        }
    };
    if sites.is_empty() {
        unavailable.push(Unavailable {
            what: "usdt".into(),
            why: format!(
                "{} has no USDT probes (no .note.stapsdt section: built without \
                 --enable-dtrace, or stripped of its notes): {} unavailable; the rest \
                 (scheduler, WAL writes and fsyncs) is measured. Use a build with USDT probes \
                 (Debian's and PGDG's packages have them) for commits",
                real.display(),
                describe_events(&opts.usdt)
            ),
        });
        return Ok((Vec::new(), Semaphores::default()));
    }
    for prog in [
        "usdt_count",
        "usdt_txn_start",
        "usdt_txn_end",
        "usdt_lock_wait_start",
        "usdt_lock_wait_done",
    ] {
        let p: &mut UProbe = program(bpf, prog)?;
        p.load().map_err(|e| load_err(prog, e))?;
    }
    let mut attached = Vec::new();
    let mut semaphores = Vec::new();
    for rule in &opts.usdt {
        let mine: Vec<&usdt::UsdtSite> = sites.iter().filter(|s| s.probe() == rule.probe).collect();
        if mine.is_empty() {
            unavailable.push(Unavailable {
                what: format!("usdt {}", rule.probe),
                why: format!("{} has no such USDT probe", real.display()),
            });
            continue;
        }
        let mut n = 0;
        for site in &mine {
            let (prog, cookie) = match usdt_program(rule.event, site) {
                Ok(pc) => pc,
                Err(why) => {
                    unavailable.push(Unavailable {
                        what: format!("usdt {} at {:#x}", rule.probe, site.address),
                        why,
                    });
                    continue;
                }
            };
            let p: &mut UProbe = program(bpf, prog)?;
            let point = aya::programs::uprobe::UProbeAttachPoint {
                location: aya::programs::uprobe::UProbeAttachLocation::AbsoluteOffset(
                    site.file_offset,
                ),
                cookie: Some(cookie),
            };
            match p.attach(point, &exe, UProbeScope::AllProcesses) {
                Ok(id) => {
                    links.push(p.take_link(id).map_err(|e| taken(prog, e))?);
                    n += 1;
                    semaphores.extend(site.semaphore_file_offset);
                }
                Err(e) => unavailable.push(Unavailable {
                    what: format!("usdt {} at {:#x}", rule.probe, site.address),
                    why: uprobe_why(&exe, &e),
                }),
            }
        }
        if n > 0 {
            attached.push((rule.probe.clone(), rule.event));
        }
    }
    semaphores.sort_unstable();
    semaphores.dedup();
    let mut pids = vec![opts.pid];
    if opts.follow_children {
        pids.extend(procfs::descendants(opts.pid).into_iter().map(|(p, _)| p));
    }
    let (raised, failed) = Semaphores::raise(&real, &semaphores, &pids);
    for (pid, why) in failed {
        // Its child processes that start later inherit the root's value.
        unavailable.push(Unavailable {
            what: format!("usdt semaphores in pid {pid}"),
            why: format!("{why}; probes guarded by a semaphore stay silent in that process"),
        });
    }
    Ok((attached, raised))
}

/// "commits, aborts, ..." for the events `rules` count.
fn describe_events(rules: &[UsdtRule]) -> String {
    let mut names: Vec<&str> = rules
        .iter()
        .map(|r| match r.event {
            UsdtEvent::TxnStart => "transactions in flight",
            UsdtEvent::Commit => "commits",
            UsdtEvent::Abort => "aborts",
            UsdtEvent::WalInsert | UsdtEvent::WalSwitch => "WAL records and switches",
            UsdtEvent::WalBufferFull => "WAL-buffer-full writes",
            UsdtEvent::LockWaitStart | UsdtEvent::LockWaitDone => "lock waits by name",
        })
        .collect();
    names.dedup();
    names.join(", ")
}

fn uprobe_why(exe: &Path, e: &aya::programs::ProgramError) -> String {
    let target = std::fs::read_link(exe).unwrap_or_else(|_| exe.to_path_buf());
    let msg = error_chain(e);
    format!(
        "{msg} (in {}); the binary may be stripped of its probe symbols or be another program: \
         keep the `redoctor_*` symbols (do not strip them) to get engine events",
        target.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_ranges_are_checked_before_loading() {
        let ok = AttachOptions::new(1);
        assert!(ok.validate().is_ok());
        for (futex, slots, says) in [
            (3, DEFAULT_THREAD_SLOTS, "futex sample 3"),
            (0, DEFAULT_THREAD_SLOTS, "futex sample 0"),
            (8, 0, "thread slots 0"),
            (8, 1000, "thread slots 1000"),
            (8, MAX_THREAD_SLOTS * 2, "thread slots 2097152"),
        ] {
            let mut o = ok.clone();
            o.futex_sample = futex;
            o.thread_slots = slots;
            let err = o.validate().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        for (pairs, says) in [
            (0, "wake pairs 0"),
            (MAX_WAKE_PAIRS + 1, "wake pairs 4194305"),
        ] {
            let mut o = ok.clone();
            o.wake_pairs = pairs;
            let err = o.validate().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        let mut one = ok;
        one.thread_slots = 1;
        assert!(one.validate().is_ok());
    }

    #[test]
    fn new_threads_write_where_the_profile_says() {
        for (name, background) in [
            ("mariadb", true),
            ("redoctor-engine", false),
            ("postgresql", false),
            ("mysql8", false),
        ] {
            let p = Profile::builtin(name).unwrap();
            let o = AttachOptions::for_profile(1, &p);
            assert_eq!(o.unmarked_background, background, "{name}");
        }
    }
}
