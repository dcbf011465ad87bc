//! A server's commit counter (`SHOW GLOBAL STATUS LIKE 'NAME'`) read at
//! the boundaries of a trial's windows, so that each window's commits/s is
//! the counter's change over the time between two readings.
//!
//! - **Contiguous windows.** A window that starts within [`CONTIGUOUS`] of
//!   the last one's end starts at that reading: one read per boundary, not
//!   two, and the time a switch takes (the `SET GLOBAL` between two
//!   periods) falls inside the next window, the guard that follows a
//!   switch, instead of outside every window. A switchback trial's periods
//!   then tile its time: at 50-ms periods a read and a switch cost ~1 ms
//!   each, which two reads a window and a switch between windows added to
//!   the trial's wall time (~3%) and to nothing it measured.
//! - **When a reading was taken.** A read takes 0.3-0.6 ms at the median
//!   and up to 3-7 ms at the 99th percentile (`agent/bench/RESULTS.md`,
//!   2026-12-02); the server reads its counter somewhere inside it. The
//!   reading is placed at the read's midpoint, so a slow read moves the
//!   boundary by half its length, not all of it (the old window started
//!   its clock after its first read returned and stopped it after its
//!   last one returned: each slow read lengthened or shortened a window by
//!   its whole length).

use std::time::{Duration, Instant};

use redoctor_advisor::experiment::{ExperimentError, Sample};

use crate::admin::Admin;
use crate::disk_latency;

/// A window that starts within this of the last reading starts at it.
/// Longer than a switch over the admin socket (the bundled engine's
/// `SET GLOBAL` ~0.5 ms, MariaDB's ~1 ms), shorter than any period.
pub const CONTIGUOUS: Duration = Duration::from_millis(20);

/// How often a window asks its `check` (the target alive, the caller not
/// stopping) while it waits.
const CHECK_EVERY: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy)]
struct Reading {
    count: u64,
    /// The read's midpoint.
    at: Instant,
    /// When the window that ended with this reading was due to end: the
    /// next contiguous window is due `len` after it, not after the
    /// reading, so that a read's lateness does not add up over a trial's
    /// periods (at 50-ms periods ~0.7 ms each, 2.4% of a 90-s trial).
    due: Instant,
    disk: Option<disk_latency::Mark>,
}

/// The counter `name` and its last reading.
#[derive(Debug)]
pub struct StatusCounter {
    name: String,
    last: Option<Reading>,
}

impl StatusCounter {
    pub fn new(name: impl Into<String>) -> StatusCounter {
        StatusCounter {
            name: name.into(),
            last: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn read(&self, admin: &mut Admin) -> Result<Reading, ExperimentError> {
        let before = Instant::now();
        let count = admin
            .status(&self.name)
            .map_err(|e| ExperimentError::measure(format!("{e:#}")))?;
        let after = Instant::now();
        let at = before + (after - before) / 2;
        Ok(Reading {
            count,
            at,
            due: at,
            disk: disk_latency::mark(),
        })
    }

    /// One window of about `len`: from the last reading when it is fresh
    /// (within [`CONTIGUOUS`]), else from a new one, to a reading taken
    /// when the window is due to end (`len` after the last window was due
    /// to end, or after the new reading). `check` is asked every 100 ms meanwhile and its error ends
    /// the window (the target exited, the caller is stopping).
    pub fn window(
        &mut self,
        admin: &mut Admin,
        len: Duration,
        mut check: impl FnMut() -> Result<(), ExperimentError>,
    ) -> Result<Sample, ExperimentError> {
        let start = match self.last.take() {
            Some(r) if r.at.elapsed() <= CONTIGUOUS => r,
            _ => self.read(admin)?,
        };
        let end_at = due(start.due, start.at, len);
        loop {
            let now = Instant::now();
            if now >= end_at {
                break;
            }
            check()?;
            std::thread::sleep((end_at - now).min(CHECK_EVERY));
        }
        let end = Reading {
            due: end_at,
            ..self.read(admin)?
        };
        self.last = Some(end);
        let secs = (end.at - start.at).as_secs_f64();
        Ok(Sample {
            commits_per_s: end.count.saturating_sub(start.count) as f64 / secs,
            secs,
            covariate: disk_latency::covariate(start.disk, end.disk),
        })
    }
}

/// When a window of `len` that starts at a reading taken at `at`, due at
/// `was_due`, is due to end: `len` after `was_due`, so that the readings'
/// lateness does not add up over contiguous windows; but a reading later
/// than half a window re-anchors the timeline at it, so that no window is
/// cut short by more than half.
fn due(was_due: Instant, at: Instant, len: Duration) -> Instant {
    (was_due + len).max(at + len / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Contiguous windows whose readings each come 0.7 ms late (a read's
    /// length at 50-ms periods) stay on the nominal timeline: the
    /// thousandth ends where a thousand periods end, not 0.7 s later.
    #[test]
    fn late_readings_do_not_add_up() {
        let t0 = Instant::now();
        let len = Duration::from_millis(50);
        let late = Duration::from_micros(700);
        let (mut was_due, mut at) = (t0, t0);
        let mut lengths = vec![];
        for _ in 0..1000 {
            let end = due(was_due, at, len);
            let read_at = end + late;
            lengths.push(read_at - at);
            (was_due, at) = (end, read_at);
        }
        assert_eq!(was_due, t0 + len * 1000);
        assert_eq!(at, t0 + len * 1000 + late);
        // The first window is long by one lateness, the others exact.
        assert_eq!(lengths[0], len + late);
        assert!(lengths[1..].iter().all(|&l| l == len));
    }

    /// A reading later than half a window (a stalled read) re-anchors the
    /// timeline: the next window runs at least half its length.
    #[test]
    fn a_stalled_reading_re_anchors() {
        let t0 = Instant::now();
        let len = Duration::from_millis(10);
        let at = t0 + Duration::from_millis(15);
        assert_eq!(due(t0, at, len), at + len / 2);
        let at = t0 + Duration::from_millis(4);
        assert_eq!(due(t0, at, len), t0 + len);
    }
}
