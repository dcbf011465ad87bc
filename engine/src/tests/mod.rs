//! Tests of the engine's internals (its public API is tested from
//! `engine/tests/`). The `loom_*` models check the lock-free and
//! `UnsafeCell` code under every interleaving loom explores; they exist only
//! in a `RUSTFLAGS="--cfg loom"` build, where the other tests are left out
//! (loom's primitives work only inside a model):
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_`.

#[cfg(not(loom))]
mod admission;
#[cfg(not(loom))]
mod binlog_crash;
#[cfg(not(loom))]
mod binlog_file;
#[cfg(not(loom))]
mod binlog_group_commit;
#[cfg(not(loom))]
mod checkpoint_chain;
#[cfg(not(loom))]
mod common;
#[cfg(not(loom))]
mod fuzzy_checkpoint;
#[cfg(not(loom))]
mod log_buffer;
#[cfg(not(loom))]
mod log_settings;
#[cfg(not(loom))]
mod redo_fail_stop;

#[cfg(loom)]
mod loom_buffer_pool;
#[cfg(loom)]
mod loom_event;
#[cfg(loom)]
mod loom_gate;
#[cfg(loom)]
mod loom_link_buffer;
#[cfg(loom)]
mod loom_log_buffer;
#[cfg(loom)]
mod loom_log_park;
#[cfg(loom)]
mod loom_relay_log;
#[cfg(loom)]
mod loom_throttle;
#[cfg(loom)]
mod loom_worker_queue;
