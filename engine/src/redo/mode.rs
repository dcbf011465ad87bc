//! Switching between dedicated log threads (RT1) and user-thread writes (RT0)
//! live, under load (`SET GLOBAL innodb_log_writer_threads`).
//!
//! To RT0: publish the mode (new waiters lead their own writes), stop and
//! join the log threads (each finishes its current write or fdatasync), then
//! wake every waiter so sleepers re-check in the new mode. To RT1: start the
//! threads first, then publish the mode and wake everyone. All writes happen
//! under the writer mutex and all fdatasyncs under the flusher mutex in
//! both modes, so the two may overlap safely during the hand-over; no waiter
//! can sleep through it because every wait condition includes the mode.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{flusher, notifiers, writer, RedoLog, RedoMode};
use crate::probe_points;

pub struct LogThreads {
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
}

type Body = fn(&RedoLog, &AtomicBool);

impl LogThreads {
    pub(super) fn start(log: &Arc<RedoLog>) -> LogThreads {
        let stop = Arc::new(AtomicBool::new(false));
        let bodies: [(&str, Body); 4] = [
            ("log_writer", writer::writer_loop),
            ("log_flusher", flusher::flusher_loop),
            ("log_wr_notify", notifiers::write_notifier_loop),
            ("log_fl_notify", notifiers::flush_notifier_loop),
        ];
        let handles = bodies
            .into_iter()
            .map(|(name, body)| {
                let (log, stop) = (log.clone(), stop.clone());
                std::thread::Builder::new()
                    .name(name.to_string())
                    .spawn(move || body(&log, &stop))
                    .expect("spawning a log thread")
            })
            .collect();
        LogThreads { stop, handles }
    }

    fn stop(self, log: &RedoLog) {
        self.stop.store(true, Ordering::Release);
        log.wake_everyone();
        for h in self.handles {
            let _ = h.join();
        }
    }
}

impl RedoLog {
    /// Switches the redo mode; returns the previous one.
    pub fn set_mode(self: &Arc<Self>, new: RedoMode) -> RedoMode {
        let mut threads = self.threads.lock();
        let old = self.mode();
        match new {
            RedoMode::On => {
                if threads.is_none() {
                    *threads = Some(LogThreads::start(self));
                }
                self.mode.store(RedoMode::On as u8, Ordering::Release);
            }
            RedoMode::Off => {
                self.mode.store(RedoMode::Off as u8, Ordering::Release);
                if let Some(t) = threads.take() {
                    t.stop(self);
                }
            }
        }
        self.wake_everyone();
        if old != new {
            self.counters
                .redo_mode_switches
                .fetch_add(1, Ordering::Relaxed);
            probe_points::redoctor_mode_switch(old as u32, new as u32);
        }
        old
    }

    /// Stops the dedicated threads (if any) without changing the configured
    /// mode, then makes everything appended durable. For shutdown.
    pub fn shutdown(self: &Arc<Self>) -> Result<(), super::RedoError> {
        let was = self.mode();
        self.set_mode(RedoMode::Off);
        let r = self.flush_all().map(|_| ());
        self.mode.store(was as u8, Ordering::Release);
        r
    }
}
