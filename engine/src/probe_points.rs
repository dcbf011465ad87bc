//! Probe points: empty, never-inlined, unmangled functions that the engine
//! calls once per batch (a write, a flush, a switch), never per row or per
//! commit, so uprobes on them cost little (see `engine/PROBES.md`).
//!
//! Each body hands its arguments and a distinct tag to `black_box`, so the
//! compiler can neither drop the call nor merge two probes into one address.
//! With frame pointers on, each begins with `push %rbp`, which the kernel
//! emulates cheaply; none begins with an atomic (uprobes fail on those).

use std::hint::black_box;

/// The log writer (thread `log_writer`, or an RT0 write leader) wrote
/// lsns `[from, to)` to the redo file with one or two pwrites.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_log_write(from: u64, to: u64, leader_is_user: u32) {
    black_box((0x01u8, from, to, leader_is_user));
}

/// An fdatasync of the redo file completed: durable up to `upto`, it took `ns`.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_log_flush(upto: u64, ns: u64, leader_is_user: u32) {
    black_box((0x02u8, upto, ns, leader_is_user));
}

/// Waiters for flushed lsns in `(from, to]` were woken; `woken` counts the
/// sleeping threads in the slots that were signalled.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_flush_notified(from: u64, to: u64, woken: u64) {
    black_box((0x03u8, from, to, woken));
}

/// The redo mode changed (`1` = dedicated log threads, `0` = user threads write).
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_mode_switch(old: u32, new: u32) {
    black_box((0x04u8, old, new));
}

/// A checkpoint became durable at `lsn`; `bytes` is the image size.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_checkpoint(lsn: u64, bytes: u64) {
    black_box((0x05u8, lsn, bytes));
}

/// The engine stopped acknowledging commits after an I/O error (`errno`).
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_fail_stop(errno: i32) {
    black_box((0x06u8, errno));
}

/// FLUSH-stage leader (a user thread): the group's `group_size` binlog
/// events, `bytes` in all, were written after one redo flush covering
/// their prepare records. Once per group.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_binlog_flush(group_size: u64, bytes: u64) {
    black_box((0x07u8, group_size, bytes));
}

/// A binlog fdatasync completed in `ns` (SYNC-stage leader, or a checkpoint).
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_binlog_sync(ns: u64) {
    black_box((0x08u8, ns));
}

/// COMMIT-stage leader (a user thread): committed `group_size`
/// transactions in binlog order and is about to wake the followers.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_group_commit(group_size: u64) {
    black_box((0x09u8, group_size));
}

/// A `SET GLOBAL` was applied: `setting` is the row of the setting in
/// `Engine::variables()` (rows are only ever appended), `old`/`new` its
/// values as numbers (ON = 1, OFF = 0, an enumeration value = its index).
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_setting_change(setting: u32, old: u64, new: u64) {
    black_box((0x20u8, setting, old, new));
}

/// Periodic tick (thread `counters_tick`, every 100 ms): the
/// cumulative `commits` and `redo_bytes` counters, so probes count commits
/// exactly without a probe on the per-commit path.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_counters_tick(commits: u64, redo_bytes: u64) {
    black_box((0x0au8, commits, redo_bytes));
}

/// Periodic tick (thread `counters_tick`, right after
/// `redoctor_counters_tick`): `total_ns`, the time this process's threads
/// have spent polling for work instead of sleeping (`crate::idle_poll`), so
/// probes can take it out of the on-CPU time.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_idle_poll(total_ns: u64) {
    black_box((0x0cu8, total_ns));
}

/// The table of named locks (thread `counters_tick`, with
/// `redoctor_counters_tick`): `count` entries of
/// `{start: u64, len: u64, name: [u8; 32]}` (NUL-padded UTF-8) at `table`,
/// sorted by start, describing registry `generation`. A futex word inside
/// `[start, start + len)` belongs to the lock `name`. The table stays
/// allocated and unchanged until at least the next table (next generation)
/// is published; the same pointer is passed again while nothing changed.
/// (The rows are `named_locks`' `NamedLockEntry`; the pointer is untyped
/// here so that this leaf of probe points depends on no engine module.)
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_named_locks(
    table: *const std::ffi::c_void,
    count: u64,
    generation: u64,
) {
    black_box((0x0bu8, table, count, generation));
}

/// Replica: a thread woke the one it hands work to. `kind` 0: the
/// receiver woke the sleeping applier (a record queued); 1: the applier
/// (coordinator) woke a sleeping worker (a transaction assigned).
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_replica_wakeup(kind: u64) {
    black_box((0x0du8, kind));
}

/// Replica: a relay-log fdatasync completed in `ns` (receiver).
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_relay_sync(ns: u64) {
    black_box((0x0eu8, ns));
}

/// Replica: the applier or a worker committed the source transaction that
/// ends at `source_offset` of source binlog file `source_file`.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_replica_applied(source_file: u64, source_offset: u64) {
    black_box((0x0fu8, source_file, source_offset));
}

/// Periodic tick (thread `counters_tick`, right after
/// `redoctor_idle_poll`): the process's page syncs as the engine timed them
/// (`crate::sync_timing`), cumulative: doublewrite syncs and their ns,
/// tablespace syncs and their ns, and of either kind those that began while
/// another page sync was in flight, and their ns. A modelled device's wait
/// (`crate::device_model`) is in these times, not in the syscalls'.
#[no_mangle]
#[inline(never)]
pub extern "C" fn redoctor_page_syncs(
    doublewrite_syncs: u64,
    doublewrite_ns: u64,
    data_syncs: u64,
    data_ns: u64,
    overlapped_syncs: u64,
    overlapped_ns: u64,
) {
    black_box((
        0x10u8,
        doublewrite_syncs,
        doublewrite_ns,
        data_syncs,
        data_ns,
        overlapped_syncs,
        overlapped_ns,
    ));
}

#[cfg(test)]
mod tests {
    /// Every probe point the probes attach to (the shared probe
    /// interface, `redoctor_probes_common::abi`) is defined here with C
    /// linkage and its exact name.
    #[test]
    fn every_probe_point_the_probes_attach_to_is_defined() {
        let src = include_str!("probe_points.rs");
        for (_, sym) in redoctor_probes_common::abi::PROBE_POINTS {
            let def = format!("#[no_mangle]\n#[inline(never)]\npub extern \"C\" fn {sym}(");
            assert!(
                src.contains(&def),
                "{sym} is in the probe interface but not defined as `{def}`"
            );
        }
    }
}
