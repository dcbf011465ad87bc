//! The background base writer (`log_ckpt_base`): writes a new checkpoint
//! base from a snapshot of the tables while the `log_checkpoint` thread
//! goes on writing deltas, so a new base no longer stalls commits.
//!
//! A base written inline costs what the database weighs, while the log
//! fills at the commit rate: under the insert load a 439 MB base took
//! 460 ms of whole-table copies and a 2.4 s write, and the redo's
//! fdatasyncs queued behind its flush (engine/bench/RESULTS.md). Here the
//! copy is a reference per row ([`Catalog::snapshot`]), the write is paced
//! ([`checkpoint::Pace`]) and, until the base is durable, deltas keep
//! freeing log space; each records what it took ([`Carried`]) so the delta
//! that publishes the base holds every change since the snapshot
//! ([`checkpoint::publish_pending_base`]).
//!
//! [`Catalog::snapshot`]: crate::data::catalog::Catalog::snapshot

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::checkpoint::{self, Pace, PendingBase};
use crate::data::delta::Carried;
use crate::data::snapshot::Snapshot;
use crate::file_error::FileError;
use crate::redo::Lsn;
use crate::vfs::Vfs;

/// The thread's name (15 bytes at most, the kernel's limit).
pub const THREAD_NAME: &str = "log_ckpt_base";

/// A base being written in the background, and the changes the deltas
/// took since its snapshot.
pub(crate) struct BaseWriter {
    carried: Carried,
    hurry: Arc<AtomicBool>,
    abort: Arc<AtomicBool>,
    thread: JoinHandle<Result<PendingBase, FileError>>,
}

impl BaseWriter {
    /// Starts writing a base of `snapshot` at `lsn`: the lsn of the delta
    /// whose change sets were taken just before the snapshot.
    pub(crate) fn start(
        vfs: Arc<dyn Vfs>,
        lsn: Lsn,
        max_trx_id: u64,
        snapshot: Snapshot,
        pace: Pace,
    ) -> std::io::Result<BaseWriter> {
        let hurry = Arc::new(AtomicBool::new(false));
        let abort = Arc::new(AtomicBool::new(false));
        let (h, a) = (hurry.clone(), abort.clone());
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || {
                checkpoint::write_pending_base(
                    vfs.as_ref(),
                    lsn,
                    max_trx_id,
                    &snapshot,
                    pace,
                    &h,
                    &a,
                )
            })?;
        Ok(BaseWriter {
            carried: Carried::default(),
            hurry,
            abort,
            thread,
        })
    }

    /// Whether the base is written (or failed): [`finish`](Self::finish)
    /// will not wait.
    pub(crate) fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Where the deltas written meanwhile record what they take.
    pub(crate) fn carried(&mut self) -> &mut Carried {
        &mut self.carried
    }

    /// Waits for the base, without pacing from now on; returns it (or the
    /// error that stopped it) with the changes carried since its snapshot.
    pub(crate) fn finish(self) -> (Result<PendingBase, FileError>, Carried) {
        self.hurry.store(true, Ordering::Release);
        let r = self.thread.join().unwrap_or_else(|_| {
            Err(FileError::new(
                "write to",
                checkpoint::PENDING,
                std::io::Error::other("the base writer panicked"),
            ))
        });
        (r, self.carried)
    }

    /// Stops the writer and waits for it. Its file stays until the next
    /// base written in the background replaces it, or recovery removes it.
    pub(crate) fn abort(self) {
        self.abort.store(true, Ordering::Release);
        let _ = self.thread.join();
    }
}
