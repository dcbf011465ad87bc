//! Waiting for a client's next request by polling the socket before
//! blocking on it, while the CPUs have room.
//!
//! A connection thread that blocks in `recv` after each reply sleeps, and
//! the client's next request must wake it: on a virtual machine whose other
//! CPU went idle, that wakeup is an interrupt to a halted vCPU, and at one
//! client it was most of a point select's round trip (`engine/DESIGN.md`,
//! "Polling for the next request"). So a connection thread first polls its
//! socket (`recv` with `MSG_DONTWAIT`) for up to [`NetSpin::spin`], and
//! blocks only if nothing came.
//!
//! Polling burns a CPU that other threads may need, so an [`IdleGate`]
//! allows it only while the CPUs have room, measured over the last
//! [`SAMPLE_PERIOD`]:
//! - no thread waited for a CPU for more than [`MAX_PRESSURE`] of the
//!   period (the kernel's CPU pressure, `/proc/pressure/cpu`, "some");
//! - and then at most as many pollers at once as whole idle CPUs among
//!   those this process may run on (`/proc/stat`), never all of them, so
//!   one CPU always stays for the clients and the engine's own threads.
//!   Time spent polling counts as idle here: the pressure test is what
//!   tells whether a poller kept a runnable thread off its CPU (counted as
//!   busy, polling would switch itself off and on again every period).
//!
//! On a saturated host nothing polls, and the path is as before; so it is
//! on a kernel without pressure stall information.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use redoctor_workload::procstat;

/// How often the gate re-reads the CPUs' idle time and pressure.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(250);

/// Nobody polls in a period in which some thread waited for a CPU longer
/// than this share of it. Measured here (2 vCPUs, sysbench point selects):
/// 1 client 1-6% with or without polling, 4 clients 100%.
pub const MAX_PRESSURE: f64 = 0.10;

/// The server's polling policy and its counters (shared by every connection).
pub struct NetSpin {
    spin: Duration,
    gate: IdleGate,
    pollers: AtomicU32,
    /// Waits that polled and got the request while polling.
    pub hits: AtomicU64,
    /// Waits that polled for the whole time and then blocked.
    pub timeouts: AtomicU64,
    /// Nanoseconds spent polling.
    pub spun_ns: AtomicU64,
}

impl NetSpin {
    /// Polls for up to `spin` (zero: never) when `gate` allows it.
    pub fn new(spin: Duration, gate: IdleGate) -> NetSpin {
        NetSpin {
            spin,
            gate,
            pollers: AtomicU32::new(0),
            hits: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            spun_ns: AtomicU64::new(0),
        }
    }

    pub fn spin(&self) -> Duration {
        self.spin
    }

    /// Reads what arrives on `fd` within the spin into `buf`: `Some(n)` as
    /// `recv` returned it (0 at the end of the stream), or `None` when
    /// nothing came or polling is not allowed now (the caller blocks).
    pub fn poll(&self, fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
        if self.spin.is_zero() {
            return Ok(None);
        }
        let allowed = self.gate.allowed(self.spun_ns.load(Relaxed));
        if self.pollers.fetch_add(1, Relaxed) >= allowed {
            self.pollers.fetch_sub(1, Relaxed);
            return Ok(None);
        }
        let start = Instant::now();
        let r = loop {
            // SAFETY: `buf` is valid for writes of its length; recv writes at most that.
            let n =
                unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
            if n >= 0 {
                self.hits.fetch_add(1, Relaxed);
                break Ok(Some(n as usize));
            }
            let e = io::Error::last_os_error();
            if !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) {
                break Err(e);
            }
            if start.elapsed() >= self.spin {
                self.timeouts.fetch_add(1, Relaxed);
                break Ok(None);
            }
            std::hint::spin_loop();
        };
        let spun = start.elapsed().as_nanos() as u64;
        self.spun_ns.fetch_add(spun, Relaxed);
        // On a CPU, but not work: the probes take it out of the CPU time.
        redoctor_engine::idle_poll::add(spun);
        self.pollers.fetch_sub(1, Relaxed);
        r
    }
}

/// A connection's handle on the shared policy.
#[derive(Clone)]
pub struct Spinner {
    pub fd: RawFd,
    pub policy: Arc<NetSpin>,
}

impl Spinner {
    pub fn poll(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.policy.poll(self.fd, buf)
    }
}

/// Cumulative CPU times the gate decides from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuTimes {
    /// Idle (and iowait) time of the CPUs the process may run on, ns.
    pub idle_ns: u64,
    /// Time during which some thread waited for a CPU, ns.
    pub pressure_ns: u64,
}

/// Reads the [`CpuTimes`] (None: unknown, and nobody polls).
pub type IdleSource = Box<dyn Fn() -> Option<CpuTimes> + Send + Sync>;

/// How many pollers the CPUs have room for, from their idle time.
pub struct IdleGate {
    cpus: u32,
    source: IdleSource,
    period: Duration,
    sample: Mutex<Option<Sample>>,
    allowed: AtomicU32,
}

struct Sample {
    at: Instant,
    times: CpuTimes,
    spun_ns: u64,
}

impl IdleGate {
    /// The CPUs this process may run on: their idle time from
    /// `/proc/stat`, the host's CPU pressure from `/proc/pressure/cpu`.
    pub fn host() -> IdleGate {
        let set = procstat::allowed_cpus().unwrap_or_else(|_| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        });
        let cpus = set.len() as u32;
        let tick_ns = 1_000_000_000 / procstat::clock_ticks_per_sec();
        IdleGate::new(
            cpus,
            Box::new(move || {
                let stat = std::fs::read_to_string("/proc/stat").ok()?;
                let idle = idle_ticks(&stat, &set)? * tick_ns;
                let pressure = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
                Some(CpuTimes {
                    idle_ns: idle,
                    pressure_ns: some_pressure_us(&pressure)? * 1000,
                })
            }),
            SAMPLE_PERIOD,
        )
    }

    /// `cpus` CPUs whose idle time `source` reads; re-read every `period`.
    pub fn new(cpus: u32, source: IdleSource, period: Duration) -> IdleGate {
        IdleGate {
            cpus,
            source,
            period,
            sample: Mutex::new(None),
            allowed: AtomicU32::new(0),
        }
    }

    /// Pollers allowed now; `spun_ns` is the policy's total polling time.
    pub fn allowed(&self, spun_ns: u64) -> u32 {
        if let Some(mut s) = self.sample.try_lock() {
            let now = Instant::now();
            let due = s.as_ref().is_none_or(|s| now - s.at >= self.period);
            if due {
                match (self.source)() {
                    Some(times) => {
                        if let Some(prev) = s.as_ref() {
                            let wall = (now - prev.at).as_nanos() as f64;
                            let idle = times.idle_ns.saturating_sub(prev.times.idle_ns) as f64
                                + spun_ns.saturating_sub(prev.spun_ns) as f64;
                            let waited =
                                times.pressure_ns.saturating_sub(prev.times.pressure_ns) as f64;
                            let n = if waited / wall > MAX_PRESSURE {
                                0
                            } else {
                                pollers_for(idle / wall, self.cpus)
                            };
                            self.allowed.store(n, Relaxed);
                        }
                        *s = Some(Sample {
                            at: now,
                            times,
                            spun_ns,
                        });
                    }
                    None => self.allowed.store(0, Relaxed),
                }
            }
        }
        self.allowed.load(Relaxed)
    }
}

/// Pollers for `idle_cpus` CPUs' worth of idle time on `cpus` CPUs: the
/// whole idle CPUs (rounded to the nearest), never all `cpus`.
pub fn pollers_for(idle_cpus: f64, cpus: u32) -> u32 {
    let whole = (idle_cpus + 0.5).floor().max(0.0) as u32;
    whole.min(cpus.saturating_sub(1))
}

/// The "some" line's `total=` (µs) of a `/proc/pressure/cpu` text.
pub fn some_pressure_us(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_ascii_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// Idle + iowait ticks of the `cpuN` lines of `stat` whose N is in `cpus`
/// (None when one of them is missing).
pub fn idle_ticks(stat: &str, cpus: &[usize]) -> Option<u64> {
    let mut total = 0;
    let mut seen = 0;
    for line in stat.lines() {
        let mut f = line.split_ascii_whitespace();
        let Some(n) = f.next().and_then(|c| c.strip_prefix("cpu")) else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else { continue };
        if !cpus.contains(&n) {
            continue;
        }
        let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
        total += v.get(3)? + v.get(4).copied().unwrap_or(0);
        seen += 1;
    }
    (seen == cpus.len()).then_some(total)
}

#[cfg(test)]
mod tests;
