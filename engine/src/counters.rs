//! The engine's own counters, readable by tests and (later) SHOW GLOBAL STATUS,
//! so probe measurements can be cross-checked against them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// Live counters (relaxed atomics; each is monotonic).
        #[derive(Default, Debug)]
        pub struct Counters { $( $(#[$doc])* pub $name: AtomicU64, )* }

        /// A copy of every counter at one moment, plus log positions.
        /// Reports written before a counter existed read it as 0.
        #[derive(Default, Debug, Clone, Serialize, Deserialize, PartialEq)]
        #[serde(default)]
        pub struct CounterValues { $( $(#[$doc])* pub $name: u64, )* }

        impl Counters {
            pub fn values(&self) -> CounterValues {
                CounterValues { $( $name: self.$name.load(Relaxed), )* }
            }
        }
    };
}

counters! {
    /// Transactions committed (acknowledged to the caller).
    commits,
    /// Transactions rolled back (explicitly, or after a lock error).
    rollbacks,
    /// Payload bytes appended to the redo log (record headers included).
    redo_bytes,
    /// Redo records appended.
    redo_records,
    /// pwrite calls on the redo file.
    redo_writes,
    /// fdatasync calls on the redo file.
    redo_fsyncs,
    /// Total nanoseconds spent in redo fdatasync.
    redo_fsync_ns,
    /// Times a committer had to wait for the log writer (write lsn).
    redo_write_waits,
    /// Times a committer had to wait for the log flusher (flushed lsn).
    redo_flush_waits,
    /// Waits that spun before sleeping (the spin gate allowed it).
    redo_spins,
    /// Waits that ended while spinning (no sleep).
    redo_spin_successes,
    /// Times a user thread led a write (RT0).
    redo_write_leads,
    /// Times a user thread led an fdatasync (RT0).
    redo_flush_leads,
    /// Commits whose RT0 committer found an fdatasync in flight and left its
    /// record for the next flush leader to write, instead of writing it.
    redo_writes_deferred,
    /// Times a committer waited for free space in the log buffer.
    redo_buffer_waits,
    /// Times a committer or the writer waited for a checkpoint to free log file space.
    redo_log_full_waits,
    /// Redo mode switches performed.
    redo_mode_switches,
    /// Checkpoints completed.
    checkpoints,
    /// Checkpoint bases written in the background (`log_ckpt_base`) and
    /// published.
    checkpoint_bases_background,
    /// Row lock waits.
    lock_waits,
    /// Deadlocks detected (the requester is rolled back).
    lock_deadlocks,
    /// Lock wait timeouts.
    lock_timeouts,
    /// Bytes written to the binary log (framed events).
    binlog_bytes,
    /// Binlog events written (one per transaction committed with log_bin=ON).
    binlog_events,
    /// fdatasync calls on the binlog (SYNC stage and checkpoints).
    binlog_fsyncs,
    /// Total nanoseconds spent in binlog fdatasync.
    binlog_fsync_ns,
    /// Group commits: FLUSH-stage groups (one redo flush and one binlog
    /// write each; = hits of `redoctor_binlog_flush`).
    binlog_groups,
    /// Sum of the sizes of those groups (mean size = sum / groups).
    binlog_group_size_sum,
    /// Times a committer waited as a follower in a group-commit stage.
    binlog_stage_waits,
    /// Replica: records the receiver appended to the relay log.
    relay_log_writes,
    /// Replica: relay-log bytes appended.
    relay_log_bytes,
    /// Replica: fdatasync calls on the relay log (`sync_relay_log`).
    relay_log_fsyncs,
    /// Replica: nanoseconds spent in relay-log fdatasync.
    relay_log_fsync_ns,
    /// Replica: times the receiver or the applier found the relay log's
    /// lock held (`lock` arbitration) and waited for it.
    relay_log_lock_waits,
    /// Replica: nanoseconds spent waiting for the relay log's lock.
    relay_log_lock_wait_ns,
    /// Replica: times the applier slept because nothing was queued.
    applier_waits,
    /// Replica: times the receiver woke a sleeping applier.
    receiver_applier_wakeups,
    /// Replica: times the receiver waited for `relay_log_space_limit`.
    receiver_space_waits,
    /// Replica: source transactions applied (committed on the replica).
    replica_trx_applied,
    /// Replica: source transactions skipped as already applied (recovery).
    replica_trx_skipped,
    /// Replica: times the coordinator woke a sleeping worker.
    applier_worker_wakeups,
    /// Replica: times the coordinator waited for a worker (a full queue, a
    /// commit-group barrier or a file boundary).
    applier_worker_waits,
    /// Replica: times a worker waited for its turn to commit
    /// (`replica_preserve_commit_order`).
    worker_commit_order_waits,
    /// Writes a committer made itself with dedicated threads on
    /// (`redoctor_log_idle_self_write`).
    redo_self_writes,
    /// fdatasyncs a committer made itself likewise.
    redo_self_flushes,
}
