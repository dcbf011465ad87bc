//! redoctor probes: eBPF programs (C, libbpf style, `src/bpf/`) loaded with
//! aya that turn one running database process into [`Signals`], one window
//! at a time.
//!
//! ```no_run
//! use redoctor_probes::{AttachOptions, Probes, Profile, Sampler};
//! let probes = Probes::attach(&AttachOptions::new(1234))?;
//! let mut sampler = Sampler::new(probes, Profile::builtin("redoctor-engine")?)?;
//! std::thread::sleep(std::time::Duration::from_secs(1));
//! let signals = sampler.window()?;
//! println!("{}", serde_json::to_string(&signals)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Only tracepoints, raw tracepoints and uprobes are used (no kprobes, no
//! fentry), every program filters on the target tgid first and aggregates
//! in kernel maps, which user space reads once per window.

mod attach;
mod batch;
pub mod bpf_stats;
pub mod error;
mod exit_watch;
mod file_index;
pub mod fsync_counters;
mod glob;
mod histogram;
mod links;
pub mod loader;
mod lock_waits;
pub mod map_reads;
pub mod mapped_array;
pub mod maps;
pub mod named_locks;
pub mod preflight;
pub mod procfs;
pub mod profile;
mod prune;
mod ring_hooks;
pub mod sampler;
pub use redoctor_probes_common::signals;
pub mod stack_roles;
mod syscall_hooks;
pub mod usdt;

pub use error::ProbeError;
pub use fsync_counters::{FsyncCounters, FsyncTotals};
pub use loader::{AttachOptions, Probes, SyscallHooks, Unavailable};
pub use profile::{FileKind, Profile, ProfileError, Role, WriterSide};
pub use sampler::Sampler;
pub use signals::Signals;
