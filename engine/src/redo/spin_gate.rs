//! When may a waiter spin? Only when the process is not CPU-saturated and
//! flushes are quick — MySQL's `innodb_log_spin_cpu_pct_hwm` and
//! `innodb_log_wait_for_flush_spin_hwm`. CPU use is measured from
//! `getrusage(RUSAGE_SELF)` over the CPUs in the affinity mask, over
//! windows of `redoctor_spin_gate_window_ms` (50 ms by default; MySQL:
//! about once a second), and nobody spins before the first measurement. A
//! gate that started from "idle" and measured once a second let a fresh
//! engine under load spin through its first second, or a load that arrived
//! after a quiet second spin through that one (measured: update_index at
//! 64 users on 2 CPUs ran such a second at a third of its rate).
//!
//! The window is also how long the gate takes to answer a change in CPU
//! use, and so part of every knob's carryover: a setting that moves the
//! process's CPU use across the mark changes who spins one window later.
//! 200-ms windows made every knob of the engine carry over 200-300 ms,
//! which set the live trials' periods (`advisor/src/experiment/carryover.rs`).
//!
//! Both marks are proxies for whether spinning pays; the gate also
//! measures it (`redoctor_spin_min_success_pct`, not a MySQL setting): it
//! counts the spins that ended with the wait satisfied, and when fewer
//! than that share of the last windows' spins did, only one wait in
//! [`PROBE_EVERY`] spins (to keep measuring). A 20-µs spin behind a
//! 100-µs fdatasync almost never succeeds (measured on disk at 1 to 64
//! users: under 0.2% of spins), and the CPU mark reads this process's own
//! use, so a neighbour on the CPUs makes it look idle and lets every
//! waiter spin: there the wasted spins cost 12-20% of the rate, and one
//! user on a quiet host 13% (`engine/bench/RESULTS.md`). On tmpfs at one
//! user 40% of commits end in a successful spin, and the gate stays open.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::counters::Counters;

pub struct SpinGate {
    /// Spinning stops above this CPU use, percent of the usable CPUs.
    pub cpu_pct_hwm: AtomicU32,
    /// Spinning stops when the average flush takes longer (µs).
    pub flush_spin_hwm_us: AtomicU64,
    /// Last measured CPU use, percent of the usable CPUs (×100 fixed
    /// point); [`UNMEASURED`] until the first measurement.
    cpu_pct_x100: AtomicU32,
    /// Each CPU measurement covers at least this many milliseconds.
    pub window_ms: AtomicU32,
    /// Exponential average of flush time, ns.
    avg_flush_ns: AtomicU64,
    /// Spinning stops when fewer than this percent of recent spins ended
    /// with the wait satisfied (0: never on this account).
    pub min_success_pct: AtomicU32,
    /// Smoothed share of spins that succeeded, percent ×100; starts at
    /// 100% (a fresh engine spins until it learns otherwise).
    success_pct_x100: AtomicU32,
    /// The engine's counters; the gate reads its spins and successes
    /// (`redo_spins`, `redo_spin_successes`) from them.
    counters: Arc<Counters>,
    sample: Mutex<Sample>,
}

/// `cpu_pct_x100` before the first measurement.
const UNMEASURED: u32 = u32::MAX;
/// The default measurement window, ms (the first measurement too).
pub const WINDOW_MS: u32 = 50;
/// The default `redoctor_spin_min_success_pct`.
pub const MIN_SUCCESS_PCT: u32 = 5;
/// While spinning does not pay, one wait in this many spins anyway, so
/// the success share stays measured.
pub const PROBE_EVERY: u32 = 16;
/// Spins a success reading needs; fewer carry over to the next window.
const MIN_SPINS: u64 = 16;

thread_local! {
    /// This thread's waits refused on the success account (for the probes).
    static REFUSED: Cell<u32> = const { Cell::new(0) };
}

struct Sample {
    at: Instant,
    cpu_us: u64,
    spins: u64,
    spin_successes: u64,
}

fn process_cpu_us() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPUs this process may run on.
pub fn usable_cpus() -> u32 {
    // SAFETY: sched_getaffinity fills the set we pass.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let n = libc::CPU_COUNT(&set);
            if n > 0 {
                return n as u32;
            }
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

impl SpinGate {
    pub fn new(
        cpu_pct_hwm: u32,
        flush_spin_hwm_us: u64,
        window_ms: u32,
        min_success_pct: u32,
        counters: Arc<Counters>,
    ) -> Self {
        SpinGate {
            cpu_pct_hwm: AtomicU32::new(cpu_pct_hwm),
            flush_spin_hwm_us: AtomicU64::new(flush_spin_hwm_us),
            window_ms: AtomicU32::new(window_ms),
            cpu_pct_x100: AtomicU32::new(UNMEASURED),
            avg_flush_ns: AtomicU64::new(0),
            min_success_pct: AtomicU32::new(min_success_pct),
            success_pct_x100: AtomicU32::new(100 * 100),
            sample: Mutex::new(Sample {
                at: Instant::now(),
                cpu_us: process_cpu_us(),
                spins: counters.redo_spins.load(Relaxed),
                spin_successes: counters.redo_spin_successes.load(Relaxed),
            }),
            counters,
        }
    }

    /// Records how a spin that [`Self::allows_spin`] allowed ended.
    pub fn record_spin(&self, satisfied: bool) {
        self.counters.redo_spins.fetch_add(1, Relaxed);
        if satisfied {
            self.counters.redo_spin_successes.fetch_add(1, Relaxed);
        }
    }

    /// Smoothed share of recent spins that ended with the wait satisfied,
    /// percent.
    pub fn success_pct(&self) -> f64 {
        self.success_pct_x100.load(Relaxed) as f64 / 100.0
    }

    /// Records one flush's duration.
    pub fn record_flush(&self, ns: u64) {
        let old = self.avg_flush_ns.load(Relaxed);
        let new = if old == 0 { ns } else { (old * 7 + ns) / 8 };
        self.avg_flush_ns.store(new, Relaxed);
    }

    pub fn avg_flush_us(&self) -> u64 {
        self.avg_flush_ns.load(Relaxed) / 1000
    }

    /// Last CPU measurement, percent of usable CPUs (None before the first).
    pub fn cpu_pct(&self) -> Option<f64> {
        match self.cpu_pct_x100.load(Relaxed) {
            UNMEASURED => None,
            v => Some(v as f64 / 100.0),
        }
    }

    fn refresh(&self) {
        let Some(mut s) = self.sample.try_lock() else {
            return;
        };
        let el = s.at.elapsed();
        if el.as_millis() < u128::from(self.window_ms.load(Relaxed)) {
            return;
        }
        let now = process_cpu_us();
        let pct = (now - s.cpu_us) as f64 / el.as_micros() as f64 / usable_cpus() as f64 * 100.0;
        self.cpu_pct_x100.store((pct * 100.0) as u32, Relaxed);
        s.at = Instant::now();
        s.cpu_us = now;
        let c = &self.counters;
        let (spins, ok) = (
            c.redo_spins.load(Relaxed),
            c.redo_spin_successes.load(Relaxed),
        );
        if spins - s.spins >= MIN_SPINS {
            let pct = (ok - s.spin_successes) as f64 / (spins - s.spins) as f64 * 100.0;
            let old = self.success_pct();
            self.success_pct_x100
                .store(((old + 3.0 * pct) / 4.0 * 100.0) as u32, Relaxed);
            (s.spins, s.spin_successes) = (spins, ok);
        }
    }

    /// Whether a waiter may spin now; a waiter that spins reports how it
    /// ended with [`Self::record_spin`].
    pub fn allows_spin(&self) -> bool {
        self.refresh();
        let hwm = self.cpu_pct_hwm.load(Relaxed) as f64;
        self.cpu_pct().is_some_and(|pct| pct < hwm)
            && self.avg_flush_us() <= self.flush_spin_hwm_us.load(Relaxed)
            && (self.success_pct() >= self.min_success_pct.load(Relaxed) as f64
                || REFUSED.with(|n| {
                    // Per thread: no shared line written on the commit path.
                    let k = n.get();
                    n.set(k.wrapping_add(1));
                    k.is_multiple_of(PROBE_EVERY)
                }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_follows_both_high_water_marks() {
        let g = SpinGate::new(100, 400, 200, 0, Arc::default());
        assert!(!g.allows_spin(), "CPU use not measured yet: no spinning");
        std::thread::sleep(std::time::Duration::from_millis(250));
        assert!(
            g.allows_spin(),
            "measured below 100% of the CPUs, no flushes yet: spinning allowed"
        );
        g.cpu_pct_hwm.store(0, Relaxed);
        assert!(!g.allows_spin(), "cpu hwm 0: never spin");
        g.cpu_pct_hwm.store(100, Relaxed);
        g.record_flush(2_000_000); // 2 ms flushes
        assert!(!g.allows_spin(), "flushes slower than the hwm: no spinning");
        g.flush_spin_hwm_us.store(5_000, Relaxed);
        assert!(g.allows_spin());
    }

    #[test]
    fn spinning_that_does_not_pay_stops_but_keeps_probing() {
        let g = SpinGate::new(100, 400, 10, 5, Arc::default());
        let window = || std::thread::sleep(std::time::Duration::from_millis(15));
        window();
        assert!(
            g.allows_spin(),
            "success not measured yet: spinning allowed"
        );
        let mut windows = 0;
        while g.success_pct() >= 5.0 {
            for _ in 0..MIN_SPINS * 4 {
                g.record_spin(false);
            }
            window();
            g.allows_spin();
            windows += 1;
            assert!(
                windows <= 3,
                "still {}% after {windows} windows",
                g.success_pct()
            );
        }
        let allowed = (0..PROBE_EVERY * 10).filter(|_| g.allows_spin()).count();
        assert_eq!(allowed, 10, "one wait in {PROBE_EVERY} probes");
        g.min_success_pct.store(0, Relaxed);
        assert!(
            g.allows_spin() && g.allows_spin(),
            "0: the share is not asked"
        );
        g.min_success_pct.store(5, Relaxed);
        for _ in 0..MIN_SPINS - 1 {
            g.record_spin(true);
        }
        window();
        g.allows_spin();
        assert!(
            g.success_pct() < 5.0,
            "fewer than {MIN_SPINS} spins: no reading"
        );
        g.record_spin(true);
        window();
        assert!(g.allows_spin(), "spins that pay reopen the gate");
        assert!(g.success_pct() >= 70.0, "{}", g.success_pct());
    }

    #[test]
    fn the_window_sets_when_the_gate_first_answers() {
        let short = SpinGate::new(100, 400, 20, 0, Arc::default());
        let long = SpinGate::new(100, 400, 500, 0, Arc::default());
        std::thread::sleep(std::time::Duration::from_millis(60));
        assert!(short.allows_spin(), "a 20-ms window has measured by 60 ms");
        assert!(!long.allows_spin(), "a 500-ms window has not measured yet");
        long.window_ms.store(20, Relaxed);
        assert!(long.allows_spin(), "a shorter window applies at once");
    }

    #[test]
    fn cpu_use_is_measured_over_usable_cpus() {
        // Compare with our own reading of the same process-wide counters over
        // (almost) the same interval, so a busy machine, which gives this
        // process less CPU per wall second, cannot fail the test.
        let cpu0 = process_cpu_us();
        let t0 = Instant::now();
        let g = SpinGate::new(50, 400, WINDOW_MS, 0, Arc::default());
        // Burn CPU until over a second has passed and we got at least 200 ms.
        let mut x = 0u64;
        while t0.elapsed().as_millis() < 1100 || process_cpu_us() - cpu0 < 200_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let cpu1 = process_cpu_us();
        let wall = t0.elapsed();
        g.refresh();
        let ours = (cpu1 - cpu0) as f64 / wall.as_micros() as f64 / usable_cpus() as f64 * 100.0;
        assert!(ours > 0.0);
        let measured = g.cpu_pct().expect("measured after over a second");
        assert!(
            (measured - ours).abs() <= ours * 0.25 + 1.0,
            "measured {measured}% of usable CPUs, expected about {ours}%"
        );
    }
}
