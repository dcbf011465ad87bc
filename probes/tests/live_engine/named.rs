//! Live check of lock names: futex waits attributed to the engine's named
//! locks through the `redoctor_named_locks` table read from its memory.

use std::collections::BTreeMap;
use std::time::Duration;

use redoctor_probes::{AttachOptions, Probes, Profile, Role, Sampler, Signals};

use crate::child::{EngineChild, LOCKS_ENV, ROWS_ENV};

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        let ok: bool = $cond;
        if !ok {
            return Err(format!($($fmt)*));
        }
    };
}

/// Names that exist once per thread (its own wait condvar) and disappear
/// with the thread, so they are absent from the engine's list after the run.
const PER_THREAD: &[&str] = &["lock_sys.row_wait", "throttle.wait"];

/// Futex wait time of `role` over `windows`: (total, attributed to a named
/// lock).
fn role_wait_ns(windows: &[&Signals], role: Role) -> (u64, u64) {
    let total = windows
        .iter()
        .map(|s| s.roles.get(&role).map_or(0, |r| r.futex_wait_ns))
        .sum();
    let named = windows
        .iter()
        .flat_map(|s| &s.named_lock_waits)
        .filter_map(|w| w.wait_ns_by_role.get(&role))
        .sum();
    (total, named)
}

fn named_ns(windows: &[&Signals], lock: &str, role: Role) -> u64 {
    windows
        .iter()
        .flat_map(|s| &s.named_lock_waits)
        .filter(|w| w.lock == lock)
        .filter_map(|w| w.wait_ns_by_role.get(&role).copied())
        .sum()
}

/// The top addresses `role` waited on that carry no name: (address, ns).
fn unnamed(s: &Signals, role: Role) -> Vec<(String, u64)> {
    s.futex_waits
        .iter()
        .filter(|w| w.lock.is_none())
        .filter_map(|w| Some((w.uaddr.clone(), *w.wait_ns_by_role.get(&role)?)))
        .collect()
}

fn show(s: &Signals) -> String {
    let names: Vec<String> = s
        .named_lock_waits
        .iter()
        .map(|w| {
            format!(
                "{} {} waits {:.1} ms",
                w.lock,
                w.waits,
                w.wait_ns as f64 / 1e6
            )
        })
        .collect();
    let roles: BTreeMap<String, u64> = s
        .roles
        .iter()
        .map(|(r, v)| (r.to_string(), v.futex_wait_ns))
        .collect();
    format!("named: {names:?}; futex ns by role: {roles:?}")
}

/// RT1, 16 users on two 20-row tables (row-lock waits guaranteed): user
/// threads' futex waits land on `redo.flush_waits` and `lock_sys.row_wait`,
/// each log thread's on its own event; every attributed address lies in a
/// range of that name in the engine's own registry; the table read from the
/// engine's memory after the run equals the engine's registry.
pub fn futex_waits_are_named_by_the_engine() -> Result<(), String> {
    let exe = std::env::current_exe().unwrap();
    let env = [(ROWS_ENV, "20"), (LOCKS_ENV, "1")];
    let (mut child, _) = EngineChild::start_with(&exe, "rt1", 16, 3.0, &env);
    // Every futex wait recorded by address: the shares below are exact.
    let mut opts = AttachOptions::new(child.pid());
    opts.futex_sample = 1;
    let probes = Probes::attach(&opts).map_err(|e| e.to_string())?;
    let profile = Profile::builtin("redoctor-engine").map_err(|e| e.to_string())?;
    let mut sampler = Sampler::new(probes, profile).map_err(|e| e.to_string())?;
    // The windows start and end while the engine is quiet: a role's total
    // and its per-address waits come from two maps read one after the
    // other, so a wait that ends between the two reads falls in different
    // windows. Summed over windows bounded by quiet, they agree exactly.
    sampler.window().map_err(|e| e.to_string())?;
    child.start_workload();
    // A window inside the run, while the user threads (and their per-thread
    // wait condvars) are alive.
    std::thread::sleep(Duration::from_millis(2000));
    let s = sampler.window().map_err(|e| e.to_string())?;
    let during = sampler.named_locks().clone();
    child.wait_done();
    let engine_locks = child.named_locks();
    let after = sampler.window().map_err(|e| e.to_string())?;
    let table = sampler.named_locks().clone();
    drop(sampler);
    child.finish();

    for w in [&s, &after] {
        ensure!(
            !w.unavailable
                .iter()
                .any(|u| u.what.contains("lock names") || u.what.contains("redoctor_named_locks")),
            "lock names unavailable: {:?}",
            w.unavailable
        );
    }
    ensure!(
        !during.ranges.is_empty() && during.generation > 0,
        "no named-lock table read during the run"
    );

    // The table read from memory equals the engine's registry.
    let read: Vec<(u64, u64, String)> = table
        .ranges
        .iter()
        .map(|r| (r.start, r.len, r.name.clone()))
        .collect();
    ensure!(
        read == engine_locks,
        "table read from memory ({} ranges, generation {}) != engine registry ({} ranges); \
         first difference: {:?}",
        read.len(),
        table.generation,
        engine_locks.len(),
        read.iter().zip(&engine_locks).find(|(a, b)| a != b)
    );
    for name in [
        "redo.flush_waits",
        "redo.write_waits",
        "trx_sys.shard0",
        "lock_sys.shard0",
    ] {
        ensure!(
            engine_locks.iter().any(|(_, _, n)| n == name),
            "engine registry lacks {name}"
        );
    }

    // Every attributed address lies in a range of its name: in the table
    // of the window, and (for objects that outlive the run) in the engine's
    // own registry.
    let mut attributed = 0;
    for l in &s.futex_waits {
        let Some(name) = &l.lock else { continue };
        attributed += 1;
        let addr = u64::from_str_radix(l.uaddr.trim_start_matches("0x"), 16)
            .map_err(|e| format!("uaddr {}: {e}", l.uaddr))?;
        ensure!(
            during
                .ranges
                .iter()
                .any(|r| &r.name == name && r.contains(addr)),
            "{} attributed to {name} but in no such range of the table",
            l.uaddr
        );
        if !PER_THREAD.contains(&name.as_str()) {
            ensure!(
                engine_locks
                    .iter()
                    .any(|(st, len, n)| n == name && addr >= *st && addr - st < *len),
                "{} attributed to {name}, which the engine does not place there",
                l.uaddr
            );
        }
    }
    ensure!(attributed > 0, "no futex address attributed: {}", show(&s));

    // Where each role waits, over the run (both windows).
    let run = [&s, &after];
    ensure!(
        named_ns(&run, "redo.flush_waits", Role::User) > 0,
        "users never waited on redo.flush_waits in RT1: {}",
        show(&s)
    );
    ensure!(
        named_ns(&run, "lock_sys.row_wait", Role::User) > 0,
        "no row-lock waits named on 20-row tables: {}",
        show(&s)
    );
    for (role, lock) in [
        (Role::LogWriter, "redo.writer_event"),
        (Role::LogFlusher, "redo.flusher_event"),
    ] {
        let (total, named) = role_wait_ns(&run, role);
        ensure!(
            named_ns(&run, lock, role) > 0 && named * 10 >= total * 9,
            "{role}: {named} of {total} futex ns named, {lock} {}; unnamed: {:?}; {}",
            named_ns(&run, lock, role),
            unnamed(&s, role),
            show(&s)
        );
    }
    let (total, named) = role_wait_ns(&run, Role::User);
    ensure!(
        total > 0 && named * 10 >= total * 8,
        "only {named} of the users' {total} futex ns attributed to named locks: {}",
        show(&s)
    );
    println!(
        "  users: {:.0}% of futex wait time named; {}",
        named as f64 * 100.0 / total as f64,
        show(&s)
    );
    Ok(())
}
