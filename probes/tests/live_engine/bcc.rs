//! The probes against BCC's CO-RE tools (Debian's `libbpf-tools`), run on
//! the same engine over the same workload: `runqlat -p PID` (run-queue
//! latency: stamped at wakeup or preemption, ended when switched in) and
//! `syscount -p PID` (syscalls by name). The tools start before the probes'
//! window and stop after it; the engine is idle outside its workload, so
//! the tools' extra edges hold only its background ticks.
//!
//! runqlat's histogram has log2 buckets of microseconds and the probes'
//! log2 buckets of nanoseconds, so no bucket of one is a bucket of the
//! other: the totals are compared (within 2%), and each side's median
//! bucket must overlap the other's.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

use redoctor_probes::{AttachOptions, Probes, Profile, Sampler, Signals};

use crate::child::EngineChild;

/// A libbpf-tools program attached to the target, stopped with SIGINT
/// (on which it prints its summary and exits).
struct Tool {
    child: Child,
    name: &'static str,
}

impl Tool {
    /// Starts `name` and waits for the line saying it is tracing.
    fn start(name: &'static str, args: &[&str], ready: &str) -> Result<Tool, String> {
        let path = ["/usr/sbin", "/usr/bin", "/sbin"]
            .iter()
            .map(|d| std::path::Path::new(d).join(name))
            .find(|p| p.exists())
            .ok_or_else(|| {
                format!("{name} not found (apt-get install libbpf-tools; .ci/run does this)")
            })?;
        // Line-buffered: its stdout is a pipe, and the line saying it is
        // tracing must arrive before the workload starts.
        let mut child = Command::new("stdbuf")
            .arg("-oL")
            .arg(path)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{name}: {e}"))?;
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            let n = out.read_line(&mut line).map_err(|e| e.to_string())?;
            if n == 0 {
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                return Err(format!("{name} exited before tracing: {err}"));
            }
            if line.contains(ready) {
                break;
            }
        }
        child.stdout = Some(out.into_inner());
        Ok(Tool { child, name })
    }

    /// SIGINT, then everything it printed after starting.
    fn stop(mut self) -> Result<String, String> {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .map_err(|e| e.to_string())?;
        let st = self.child.wait().map_err(|e| e.to_string())?;
        if !st.success() && st.code().is_some() {
            return Err(format!("{} exited {st}: {out}", self.name));
        }
        Ok(out)
    }
}

impl Drop for Tool {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// runqlat's histogram rows: `lo -> hi : count` (microseconds).
fn runqlat_rows(out: &str) -> Vec<(u64, u64, u64)> {
    out.lines()
        .filter_map(|l| {
            let (range, rest) = l.split_once(':')?;
            let (lo, hi) = range.split_once("->")?;
            let count = rest.split_whitespace().next()?.parse().ok()?;
            Some((lo.trim().parse().ok()?, hi.trim().parse().ok()?, count))
        })
        .collect()
}

/// syscount's `NAME COUNT` rows.
fn syscount_rows(out: &str) -> BTreeMap<String, u64> {
    out.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?;
            let count = w.next()?.parse().ok()?;
            Some((name.to_string(), count))
        })
        .collect()
}

/// The bucket `[lo, hi]` (any unit) holding the median of `rows`.
fn median_bucket(rows: &[(u64, u64, u64)]) -> Option<(u64, u64)> {
    let total: u64 = rows.iter().map(|r| r.2).sum();
    let mut seen = 0;
    for &(lo, hi, n) in rows {
        seen += n;
        if n > 0 && seen * 2 >= total {
            return Some((lo, hi));
        }
    }
    None
}

fn within(a: u64, b: u64, pct: u64) -> bool {
    a.abs_diff(b) * 100 <= a.max(b) * pct
}

pub fn runqlat_and_syscount_agree() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let (mut child, _) = EngineChild::start(&exe, "rt1", 8, 2.0);
    let pid = child.pid().to_string();
    let probes = Probes::attach(&AttachOptions::new(child.pid())).map_err(|e| e.to_string())?;
    let runqlat = Tool::start("runqlat", &["-p", &pid, "3600", "1"], "Tracing")?;
    let syscount = Tool::start("syscount", &["-p", &pid, "-T", "64"], "Tracing")?;
    let mut sampler = Sampler::new(probes, Profile::builtin("redoctor-engine").unwrap())
        .map_err(|e| e.to_string())?;
    child.run_workload();
    let s: Signals = sampler.window().map_err(|e| e.to_string())?;
    let rq = runqlat.stop()?;
    let sc = syscount.stop()?;
    child.finish();

    // Run-queue latency.
    let rows = runqlat_rows(&rq);
    let theirs: u64 = rows.iter().map(|r| r.2).sum();
    let ours = s.cpu.runq_latency.count;
    if theirs < 1000 {
        return Err(format!("runqlat saw only {theirs} events:\n{rq}"));
    }
    if !within(ours, theirs, 2) {
        return Err(format!(
            "run-queue latency events: probes {ours}, runqlat {theirs}\n{rq}"
        ));
    }
    let (tlo, thi) = median_bucket(&rows).unwrap();
    let ns_rows: Vec<(u64, u64, u64)> = s
        .cpu
        .runq_latency
        .buckets
        .iter()
        .map(|b| (b.lo_ns, b.hi_ns, b.count))
        .collect();
    let (olo, ohi) = median_bucket(&ns_rows).unwrap();
    // runqlat's [lo, hi] µs bucket covers [lo, hi + 1) µs.
    if !(olo < (thi + 1) * 1000 && tlo * 1000 < ohi.max(olo + 1)) {
        return Err(format!(
            "median run-queue wait: probes {olo}..{ohi} ns, runqlat {tlo}..{thi} µs"
        ));
    }

    // Writes and fsyncs.
    let calls = syscount_rows(&sc);
    let sum = |names: &[&str]| -> u64 { names.iter().filter_map(|n| calls.get(*n)).sum() };
    let their_writes = sum(&["write", "pwrite64", "writev", "pwritev", "pwritev2"]);
    let their_fsyncs = sum(&["fsync", "fdatasync"]);
    let our_writes: u64 = s.io.values().map(|f| f.write_calls).sum();
    let our_fsyncs: u64 = s.io.values().map(|f| f.fsync_calls).sum();
    if their_fsyncs < 100 {
        return Err(format!("syscount saw only {their_fsyncs} fsyncs:\n{sc}"));
    }
    if !within(our_writes, their_writes, 2) || !within(our_fsyncs, their_fsyncs, 2) {
        return Err(format!(
            "writes: probes {our_writes}, syscount {their_writes}; \
             fsyncs: probes {our_fsyncs}, syscount {their_fsyncs}\n{sc}"
        ));
    }
    println!(
        "  runq events: probes {ours}, runqlat {theirs}; writes {our_writes}/{their_writes}, \
         fsyncs {our_fsyncs}/{their_fsyncs}"
    );
    Ok(())
}
