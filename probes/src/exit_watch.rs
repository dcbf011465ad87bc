//! Waiting for the target process to exit without polling `/proc`.
//!
//! A pidfd (Linux 5.3+) becomes readable when its process exits, so the
//! sampler sleeps in `poll(2)` until its window ends or the target is gone:
//! no wakeups in between, and the exit is seen at once. Where pidfds are
//! unavailable it falls back to checking `/proc/PID/status` every 50 ms.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::preflight;

/// Between liveness checks when there is no pidfd.
const LIVENESS_POLL: Duration = Duration::from_millis(50);

/// Watches one process for its exit.
pub struct ExitWatch {
    pid: u32,
    pidfd: Option<OwnedFd>,
}

impl ExitWatch {
    pub fn new(pid: u32) -> ExitWatch {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        let pidfd = (fd >= 0).then(|| {
            // SAFETY: a descriptor we just opened and own alone.
            unsafe { OwnedFd::from_raw_fd(fd as i32) }
        });
        ExitWatch { pid, pidfd }
    }

    /// Whether exits are seen through a pidfd (else by polling `/proc`).
    #[cfg(test)]
    pub fn uses_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }

    /// Sleeps until `deadline` or until the process has exited, whichever
    /// comes first; returns whether it has exited.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let exited = match &self.pidfd {
                Some(fd) => {
                    let mut p = libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // Rounded up, so the wait does not end just short of
                    // the deadline and spin.
                    let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
                    // SAFETY: one valid pollfd. r < 0 (EINTR): go round.
                    unsafe { libc::poll(&mut p, 1, ms) > 0 }
                }
                None => {
                    let gone = !preflight::pid_alive(self.pid);
                    if !gone && !left.is_zero() {
                        std::thread::sleep(left.min(LIVENESS_POLL));
                    }
                    gone
                }
            };
            if exited || Instant::now() >= deadline {
                return exited;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};

    /// `w` watches a child that exits after 0.3 s: a short wait times out
    /// while it runs, and a long one ends soon after it exits (a zombie
    /// counts as exited).
    fn times_out_then_sees_the_exit(w: &ExitWatch, mut child: Child, short: Duration) {
        let t = Instant::now();
        assert!(!w.wait_until(t + short));
        assert!(t.elapsed() >= short);
        let t = Instant::now();
        assert!(w.wait_until(t + Duration::from_secs(30)));
        assert!(t.elapsed() < Duration::from_secs(10));
        child.wait().unwrap();
    }

    fn short_lived() -> Child {
        Command::new("sleep").arg("0.3").spawn().unwrap()
    }

    #[test]
    fn a_live_process_times_out_and_an_exit_is_seen_at_once() {
        let child = short_lived();
        let w = ExitWatch::new(child.id());
        assert!(w.uses_pidfd(), "this kernel has pidfds (5.3+)");
        times_out_then_sees_the_exit(&w, child, Duration::from_millis(50));
    }

    #[test]
    fn without_a_pidfd_proc_is_polled() {
        let child = short_lived();
        let w = ExitWatch {
            pid: child.id(),
            pidfd: None,
        };
        times_out_then_sees_the_exit(&w, child, Duration::from_millis(120));
    }
}
