//! What one sampled window spends where: loading and attaching, the first
//! reading, a 1 s warm-up and a 2 s window (the daemon's defaults), and the
//! detach on drop; with this process's CPU time for the round. Run against
//! a loaded engine; pair it with `strace -f -T -e trace=bpf,close` to see
//! each link's detach.
//!
//! Usage: attach_cost PID [ROUNDS]   (root; ROUNDS defaults to 3)
use std::time::{Duration, Instant};

use redoctor_probes::{AttachOptions, Probes, Profile, Sampler, SyscallHooks};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let pid: u32 = args
        .next()
        .ok_or("usage: attach_cost PID [ROUNDS]")?
        .parse()?;
    let rounds: u32 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(3);
    let profile = Profile::resolve("redoctor-engine")?;
    for _ in 0..rounds {
        let mut opts = AttachOptions::for_profile(pid, &profile);
        opts.syscall_hooks = SyscallHooks::Auto;
        let c0 = cpu();
        let t0 = Instant::now();
        let p = Probes::attach(&opts)?;
        let links = p.link_count();
        let t1 = Instant::now();
        let mut s = Sampler::new(p, profile.clone())?;
        let t2 = Instant::now();
        s.wait_window(Duration::from_secs(1))?;
        let t3 = Instant::now();
        s.wait_window(Duration::from_secs(2))?;
        let t4 = Instant::now();
        drop(s);
        let t5 = Instant::now();
        println!(
            "attach {:?} ({links} links), first reading {:?}, warm-up {:?}, window {:?}, \
             detach {:?}; CPU {:?}",
            t1 - t0,
            t2 - t1,
            t3 - t2,
            t4 - t3,
            t5 - t4,
            cpu() - c0
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    Ok(())
}

/// This process's user + system CPU time so far.
fn cpu() -> Duration {
    // SAFETY: all zeroes is a valid rusage, and getrusage writes into
    // the one it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |v: libc::timeval| Duration::new(v.tv_sec as u64, v.tv_usec as u32 * 1000);
    t(ru.ru_utime) + t(ru.ru_stime)
}
