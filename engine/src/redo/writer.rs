//! The log writer: copies complete bytes from the log buffer into redo
//! blocks and writes them with one pwrite (two when the circular file wraps).
//! Run by the `log_writer` thread (RT1) or by an RT0 write leader; always
//! under the writer mutex.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::log_file::{block_of, encode_block, BLOCK, PAYLOAD};
use super::{Lsn, RedoError, RedoLog};
use crate::failpoints::{self, Target};
use crate::probe_points;

/// At most this much is written per pwrite batch.
const MAX_WRITE: u64 = 4 << 20;

/// State owned by whoever holds the writer mutex.
pub struct WriterState {
    epoch: u32,
    /// Payload of the current, partially filled last block (rewritten as it fills).
    partial: Vec<u8>,
    /// What `partial` becomes once the write being made succeeds.
    next_partial: Vec<u8>,
    staging: Vec<u8>,
}

impl WriterState {
    pub fn new(epoch: u32, partial: Vec<u8>) -> Self {
        WriterState {
            epoch,
            partial,
            next_partial: Vec::new(),
            staging: Vec::new(),
        }
    }
}

impl RedoLog {
    /// Writes every complete byte not yet written (bounded by the checkpoint:
    /// never over log space that is still needed). Returns the range written.
    ///
    /// Refuses once the log has failed stop: a failed write may have reached
    /// the file in part (a torn write), and a later one would rewrite the
    /// partially filled block that holds the tail of acknowledged records.
    /// (The writer state stays as it was before the failed write, too.)
    pub(crate) fn write_ready(
        &self,
        st: &mut WriterState,
        by_user: bool,
    ) -> Result<Option<(Lsn, Lsn)>, RedoError> {
        self.check_failed()?;
        let ready = self.recent_written.advance_tail();
        let from = self.write_lsn();
        if ready <= from {
            return Ok(None);
        }
        let limit = self.layout.write_limit(self.checkpoint_lsn());
        let to = ready.min(limit).min(from + MAX_WRITE);
        if to <= from {
            self.counters
                .redo_log_full_waits
                .fetch_add(1, Ordering::Relaxed);
            self.checkpoint_request.notify();
            return Ok(None);
        }
        self.build_blocks(st, from, to);
        let b0 = block_of(from);
        let nb = st.staging.len() as u64 / BLOCK as u64;
        let first = (self.layout.nblocks - b0 % self.layout.nblocks).min(nb) as usize * BLOCK;
        let file = &*self.file;
        let res = failpoints::write_at(
            Target::Redo,
            file,
            &st.staging[..first],
            self.layout.offset_of_block(b0),
        )
        .and_then(|_| {
            if first < st.staging.len() {
                let at = self.layout.offset_of_block(0);
                failpoints::write_at(Target::Redo, file, &st.staging[first..], at)
            } else {
                Ok(())
            }
        });
        if let Err(e) = res {
            return Err(self.fail("write to", e));
        }
        std::mem::swap(&mut st.partial, &mut st.next_partial);
        self.write_lsn.store(to, Ordering::Release);
        self.counters.redo_writes.fetch_add(1, Ordering::Relaxed);
        probe_points::redoctor_log_write(from, to, by_user as u32);
        Ok(Some((from, to)))
    }

    /// Fills `st.staging` with the blocks covering `[from, to)`, and
    /// `st.next_partial` with the payload of its last block if that is not
    /// full.
    fn build_blocks(&self, st: &mut WriterState, from: Lsn, to: Lsn) {
        let p = PAYLOAD as u64;
        let (b0, b1) = (block_of(from), block_of(to - 1));
        st.staging.resize(((b1 - b0 + 1) as usize) * BLOCK, 0);
        let mut payload = [0u8; PAYLOAD];
        let mut last_len = 0;
        for (i, b) in (b0..=b1).enumerate() {
            let bs = b * p;
            let be = (bs + p).min(to);
            let mut filled = 0;
            if bs < from {
                filled = (from - bs) as usize;
                debug_assert_eq!(st.partial.len(), filled, "partial block out of step");
                payload[..filled].copy_from_slice(&st.partial[..filled]);
            }
            let n = (be - bs) as usize;
            // SAFETY: [from, to) is below the recent_written tail and above
            // write_lsn, so it is complete and cannot be reused yet.
            unsafe {
                self.buffer
                    .copy_out(bs + filled as u64, &mut payload[filled..n]);
            }
            encode_block(
                &mut st.staging[i * BLOCK..(i + 1) * BLOCK],
                b,
                st.epoch,
                &payload[..n],
            );
            last_len = n;
        }
        st.next_partial.clear();
        if !to.is_multiple_of(p) {
            st.next_partial.extend_from_slice(&payload[..last_len]);
        }
    }
}

/// Body of the `log_writer` thread. With every commit flushed, it leaves
/// the writing to the flusher while an fdatasync is in flight: bytes
/// written then wait for the next fdatasync anyway, and the flusher writes
/// everything ready just before it starts one (`flusher::flusher_loop`),
/// so a loaded log makes one write per fdatasync, not one per wakeup.
pub(crate) fn writer_loop(log: &RedoLog, stop: &crate::sync::AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        let behind_flush = || log.flush_at_commit() == 1 && log.flusher.is_locked();
        if !log.writable() {
            log.writer_event.wait(Duration::from_millis(10), || {
                stop.load(Ordering::Acquire) || log.writable()
            });
            continue;
        }
        if behind_flush() {
            log.flusher_idle_event.wait(Duration::from_millis(10), || {
                stop.load(Ordering::Acquire) || !behind_flush()
            });
            continue;
        }
        let wrote = {
            let mut st = log.writer.lock();
            log.write_ready(&mut st, false)
        };
        match wrote {
            Err(_) => return,
            Ok(Some(_)) => {
                log.wr_notifier_event.notify();
                if log.flush_at_commit() == 1
                    || log.flush_request.load(Ordering::Acquire) > log.flushed_lsn()
                {
                    log.flusher_event.notify();
                }
            }
            Ok(None) => {}
        }
    }
}

impl RedoLog {
    /// Bytes are ready to write and the log file has room for them.
    pub(crate) fn writable(&self) -> bool {
        self.recent_written.peek(self.write_lsn()).is_some()
            && self.layout.write_limit(self.checkpoint_lsn()) > self.write_lsn()
    }
}
