//! The fsync counters the daemon keeps attached between its windows
//! (`FsyncCounters`), on their own: attaches them to PID and prints one
//! JSON line a second with the fsyncs per file kind over that second
//! (calls/s, mean µs) until the target exits or SIGTERM. A demo of the
//! cheap set, and the agent `probes/bench/fsync-agent.sh` hands to
//! `alternating.py` to measure what keeping it attached costs.
//!
//! Usage: fsync_counters PID [PROFILE]   (root; PROFILE defaults to redoctor-engine)
use std::time::{Duration, Instant};

use redoctor_probes::{FsyncCounters, Profile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let pid: u32 = args
        .next()
        .ok_or("usage: fsync_counters PID [PROFILE]")?
        .parse()?;
    let profile = Profile::resolve(&args.next().unwrap_or("redoctor-engine".into()))?;
    let mut c = FsyncCounters::attach(pid, &profile)?;
    let mut last = c.read()?.clone();
    let mut at = Instant::now();
    while redoctor_probes::preflight::pid_alive(pid) {
        std::thread::sleep(Duration::from_secs(1).saturating_sub(at.elapsed()));
        let now = c.read()?.clone();
        let secs = at.elapsed().as_secs_f64();
        at = Instant::now();
        let mut line = serde_json::Map::new();
        for (kind, t) in &now {
            let d = t.since(&last.get(kind).copied().unwrap_or_default());
            let (calls, ns) = (d.calls, d.ns);
            line.insert(
                kind.to_string(),
                serde_json::json!({
                    "per_s": calls as f64 / secs,
                    "mean_us": (calls > 0).then(|| ns as f64 / calls as f64 / 1e3),
                }),
            );
        }
        println!("{}", serde_json::Value::Object(line));
        last = now;
    }
    Ok(())
}
