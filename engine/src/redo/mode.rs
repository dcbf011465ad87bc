//! Switching between dedicated log threads (RT1) and user-thread writes (RT0)
//! live, under load (`SET GLOBAL innodb_log_writer_threads`).
//!
//! To RT0: publish the mode (new waiters lead their own writes), pause the
//! log threads ([`super::park`]: each finishes its current write or
//! fdatasync and blocks, holding nothing), then wake every waiter so
//! sleepers re-check in the new mode. To RT1: resume the threads (start
//! them the first time), then publish the mode and wake everyone. All
//! writes happen under the writer mutex and all fdatasyncs under the
//! flusher mutex in both modes, so the two may overlap safely during the
//! hand-over; no waiter can sleep through it because every wait condition
//! includes the mode. The threads end only at shutdown
//! ([`RedoLog::end_threads`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::park::Park;
use super::{flusher, notifiers, writer, RedoLog, RedoMode};
use crate::probe_points;
use crate::sync::AtomicBool;

pub struct LogThreads {
    park: Arc<Park>,
    handles: Vec<JoinHandle<()>>,
}

type Body = fn(&RedoLog, &AtomicBool);

impl LogThreads {
    pub(super) fn start(log: &Arc<RedoLog>) -> LogThreads {
        let park = Arc::new(Park::new(true));
        let bodies: [(&str, Body); 4] = [
            ("log_writer", writer::writer_loop),
            ("log_flusher", flusher::flusher_loop),
            ("log_wr_notify", notifiers::write_notifier_loop),
            ("log_fl_notify", notifiers::flush_notifier_loop),
        ];
        let handles = bodies
            .into_iter()
            .map(|(name, body)| {
                let (log, park) = (log.clone(), park.clone());
                std::thread::Builder::new()
                    .name(name.to_string())
                    .spawn(move || park.live(|stop| body(&log, stop)))
                    .expect("spawning a log thread")
            })
            .collect();
        LogThreads { park, handles }
    }

    fn end(self, log: &RedoLog) {
        self.park.exit(|| log.wake_everyone());
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
                match &*threads {
                    Some(t) => t.park.resume(),
                    None => *threads = Some(LogThreads::start(self)),
                }
                self.mode.store(RedoMode::On as u8, Ordering::Release);
            }
            RedoMode::Off => {
                self.mode.store(RedoMode::Off as u8, Ordering::Release);
                if let Some(t) = &*threads {
                    t.park.pause(|| self.wake_everyone());
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

    /// Switches to user-thread writes and ends the dedicated threads (they
    /// hold the log, so it is not freed while they live). For shutdown and
    /// for an engine dropped without one.
    pub fn end_threads(self: &Arc<Self>) {
        self.set_mode(RedoMode::Off);
        if let Some(t) = self.threads.lock().take() {
            t.end(self);
        }
    }

    /// Ends the dedicated threads (if any) without changing the configured
    /// mode, then makes everything appended durable. For shutdown.
    pub fn shutdown(self: &Arc<Self>) -> Result<(), super::RedoError> {
        let was = self.mode();
        self.end_threads();
        let r = self.flush_all().map(|_| ());
        self.mode.store(was as u8, Ordering::Release);
        r
    }
}
