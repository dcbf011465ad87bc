//! Process statistics from `/proc` (context switches, CPU time) and CPU affinity.
//!
//! Context switches are summed over `/proc/self/task/*/status`, i.e. over the
//! threads alive at the moment of reading: a thread that exits between two
//! samples takes its counts with it (the delta then undercounts, or even goes
//! backwards, which [`CtxSwitches::delta_since`] clamps to 0). Read both samples
//! while the threads of interest are running. CPU time comes from
//! `/proc/self/stat` (`utime + stime`), which does include exited threads, in
//! clock ticks (usually 10 ms).

use std::fs;
use std::io;
use std::time::Duration;

use serde::Serialize;

/// Context switches summed over the threads of this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CtxSwitches {
    /// `voluntary_ctxt_switches`: the thread blocked (futex wait, I/O, sleep).
    pub voluntary: u64,
    /// `nonvoluntary_ctxt_switches`: the thread was preempted.
    pub involuntary: u64,
    /// Threads that were read.
    pub tasks: usize,
}

impl CtxSwitches {
    /// Switches since `earlier` (each counter clamped at 0; `tasks` is this sample's).
    pub fn delta_since(&self, earlier: &CtxSwitches) -> CtxSwitches {
        CtxSwitches {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
            tasks: self.tasks,
        }
    }
}

/// Sums the context switch counters of every live thread of this process.
pub fn ctx_switches() -> io::Result<CtxSwitches> {
    let mut total = CtxSwitches::default();
    for entry in fs::read_dir("/proc/self/task")? {
        let path = entry?.path().join("status");
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            // The thread exited after the directory was listed.
            Err(e)
                if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        let (v, n) = parse_status_ctx(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} has no *_ctxt_switches lines", path.display()),
            )
        })?;
        total.voluntary += v;
        total.involuntary += n;
        total.tasks += 1;
    }
    Ok(total)
}

/// `(voluntary, nonvoluntary)` from the text of a `/proc/.../status` file.
pub fn parse_status_ctx(status: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((
        field("voluntary_ctxt_switches")?,
        field("nonvoluntary_ctxt_switches")?,
    ))
}

/// User + system CPU time of the whole process so far (exited threads included).
pub fn cpu_time() -> io::Result<Duration> {
    stat_cpu_time("/proc/self/stat")
}

/// [`cpu_time`] of process `pid` (all its threads, exited ones included).
pub fn cpu_time_of(pid: u32) -> io::Result<Duration> {
    stat_cpu_time(&format!("/proc/{pid}/stat"))
}

fn stat_cpu_time(path: &str) -> io::Result<Duration> {
    let stat = fs::read_to_string(path)?;
    let ticks = parse_stat_cpu_ticks(&stat).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot parse utime/stime in {path}"),
        )
    })?;
    Ok(ticks_to_duration(ticks, clock_ticks_per_sec()))
}

/// `utime + stime` (clock ticks) from the text of `/proc/<pid>/stat`.
///
/// The command name (field 2) is in parentheses and may contain spaces, so
/// fields are counted from the last `)`: state is field 3, utime 14, stime 15.
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// `sysconf(_SC_CLK_TCK)`, 100 if unavailable.
pub fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

fn ticks_to_duration(ticks: u64, hz: u64) -> Duration {
    Duration::from_secs(ticks / hz) + Duration::from_nanos((ticks % hz) * 1_000_000_000 / hz)
}

/// Why the process could not be pinned to CPUs.
#[derive(Debug, thiserror::Error)]
pub enum AffinityError {
    #[error("cannot run on 0 CPUs: ask for at least 1")]
    Zero,
    #[error("cannot pin to {requested} CPUs: only {} are available to this process (CPUs {})", available.len(), cpu_list(available))]
    TooMany {
        requested: usize,
        available: Vec<usize>,
    },
    #[error("sched_{op}affinity failed: {source}")]
    Sys {
        op: &'static str,
        #[source]
        source: io::Error,
    },
}

/// `[0, 1, 2, 5]` → `"0,1,2,5"`.
pub fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The CPUs the calling thread may run on (its affinity mask).
pub fn allowed_cpus() -> Result<Vec<usize>, AffinityError> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is a valid (empty) set,
    // and sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(AffinityError::Sys {
                op: "get",
                source: io::Error::last_os_error(),
            });
        }
        set
    };
    // SAFETY: CPU_ISSET reads the bit for a CPU index below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Restricts the calling thread — and every thread it starts afterwards — to
/// the first `k` CPUs of its current affinity mask. Call it before any other
/// thread exists to pin the whole process. Returns the CPUs chosen.
pub fn pin_to_first_cpus(k: usize) -> Result<Vec<usize>, AffinityError> {
    if k == 0 {
        return Err(AffinityError::Zero);
    }
    let available = allowed_cpus()?;
    if k > available.len() {
        return Err(AffinityError::TooMany {
            requested: k,
            available,
        });
    }
    let chosen = available[..k].to_vec();
    // SAFETY: as in `allowed_cpus`; CPU_SET writes the bit of an index below CPU_SETSIZE.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in &chosen {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(AffinityError::Sys {
            op: "set",
            source: io::Error::last_os_error(),
        });
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_switches() {
        let s = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(parse_status_ctx(s), Some((12, 3)));
        assert_eq!(parse_status_ctx("Name:\tx\n"), None);
    }

    #[test]
    fn parses_stat_with_spaces_in_comm() {
        let s = "4242 (user/1 (x) y) S 1 2 3 4 5 6 7 8 9 10 250 17 0 0 20 0 9 0 100 0 0";
        assert_eq!(parse_stat_cpu_ticks(s), Some(267));
        assert_eq!(parse_stat_cpu_ticks("1 (a) S 1"), None);
    }

    #[test]
    fn reads_this_process() {
        // Other tests' threads come and go, so only the shape can be checked.
        let a = ctx_switches().unwrap();
        assert!(a.tasks >= 1);
        cpu_time().unwrap();
        cpu_time_of(std::process::id()).unwrap();
        assert!(cpu_time_of(u32::MAX - 1).unwrap_err().kind() == std::io::ErrorKind::NotFound);
        assert!(!allowed_cpus().unwrap().is_empty());
        assert_eq!(ticks_to_duration(250, 100), Duration::from_millis(2500));
    }

    #[test]
    fn refuses_more_cpus_than_available() {
        let n = allowed_cpus().unwrap().len();
        let err = pin_to_first_cpus(n + 1).unwrap_err();
        assert!(matches!(err, AffinityError::TooMany { requested, .. } if requested == n + 1));
        assert!(err.to_string().contains("only"), "{err}");
        assert!(matches!(pin_to_first_cpus(0), Err(AffinityError::Zero)));
    }
}
