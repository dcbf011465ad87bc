//! Futex waits of one window: per address (with the engine's lock name when
//! the address lies in a named range) and per named lock. The kernel records
//! one wait in `scale` per address, at random; the counts and
//! times here are scaled back up, so they are estimates (each role's and
//! thread's totals, counted in full, are in the scheduler signals).

use std::collections::{BTreeMap, HashMap};

use crate::maps::{FutexKey, FutexWait};
use crate::profile::Role;
use crate::signals::{LockWait, NamedLockWait};

/// Addresses listed in `futex_waits`.
const TOP_ADDRESSES: usize = 20;
/// Named locks listed in `named_lock_waits`.
const TOP_NAMES: usize = 30;

/// The window's futex waits (`cur - prev`), scaled to estimate all waits.
pub(crate) fn lock_waits(
    cur: &HashMap<FutexKey, FutexWait>,
    prev: &HashMap<FutexKey, FutexWait>,
    role_of_family: impl Fn(u32) -> Role,
    name_of: impl Fn(u64) -> Option<String>,
    scale: u64,
) -> (Vec<LockWait>, Vec<NamedLockWait>) {
    let mut locks: HashMap<u64, LockWait> = HashMap::new();
    for (k, now) in cur {
        let was = prev.get(k).copied().unwrap_or_default();
        let ns = now.wait_ns.saturating_sub(was.wait_ns) * scale;
        let n = now.waits.saturating_sub(was.waits) * scale;
        if n == 0 {
            continue;
        }
        let role = role_of_family(k.family);
        let l = locks.entry(k.uaddr).or_insert_with(|| LockWait {
            uaddr: format!("{:#x}", k.uaddr),
            wait_ns: 0,
            waits: 0,
            wait_ns_by_role: BTreeMap::new(),
            lock: name_of(k.uaddr),
        });
        l.wait_ns += ns;
        l.waits += n;
        *l.wait_ns_by_role.entry(role).or_default() += ns;
    }

    let mut by_name: BTreeMap<&str, NamedLockWait> = BTreeMap::new();
    for l in locks.values() {
        let Some(name) = l.lock.as_deref() else {
            continue;
        };
        let w = by_name.entry(name).or_insert_with(|| NamedLockWait {
            lock: name.to_string(),
            wait_ns: 0,
            waits: 0,
            addresses: 0,
            wait_ns_by_role: BTreeMap::new(),
        });
        w.wait_ns += l.wait_ns;
        w.waits += l.waits;
        w.addresses += 1;
        for (role, ns) in &l.wait_ns_by_role {
            *w.wait_ns_by_role.entry(*role).or_default() += ns;
        }
    }
    let mut named_waits: Vec<NamedLockWait> = by_name.into_values().collect();
    named_waits.sort_by_key(|w| std::cmp::Reverse(w.wait_ns));
    named_waits.truncate(TOP_NAMES);

    let mut futex_waits: Vec<LockWait> = locks.into_values().collect();
    futex_waits.sort_by_key(|l| std::cmp::Reverse(l.wait_ns));
    futex_waits.truncate(TOP_ADDRESSES);
    (futex_waits, named_waits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::named_locks::{NamedLocks, NamedRange};

    const FUTEX_SAMPLE: u64 = 8;

    fn key(uaddr: u64, family: u32) -> FutexKey {
        FutexKey {
            uaddr,
            family,
            pad: 0,
        }
    }

    #[test]
    fn waits_are_named_by_range_and_summed_per_name() {
        let named = NamedLocks {
            generation: 1,
            ranges: vec![
                NamedRange {
                    start: 0x1000,
                    len: 0x100,
                    name: "redo.flush_waits".into(),
                },
                NamedRange {
                    start: 0x2000,
                    len: 8,
                    name: "throttle".into(),
                },
            ],
        };
        let w = |wait_ns, waits| FutexWait { wait_ns, waits };
        let prev = HashMap::from([(key(0x1000, 1), w(100, 1))]);
        let cur = HashMap::from([
            (key(0x1000, 1), w(600, 3)), // +500 ns, 2 waits
            (key(0x1040, 2), w(300, 1)),
            (key(0x2004, 3), w(50, 1)),
            (key(0x9000, 3), w(70, 1)), // in no range
            (key(0x2008, 3), w(0, 0)),  // no wait in the window
        ]);
        let role = |family| {
            if family == 3 {
                Role::LogWriter
            } else {
                Role::User
            }
        };
        let (by_addr, by_name) = lock_waits(
            &cur,
            &prev,
            role,
            |a| named.lookup(a).map(|r| r.name.clone()),
            FUTEX_SAMPLE,
        );
        assert_eq!(by_addr.len(), 4);
        let lock_of = |a: &str| {
            by_addr
                .iter()
                .find(|l| l.uaddr == a)
                .and_then(|l| l.lock.clone())
        };
        assert_eq!(lock_of("0x1000").as_deref(), Some("redo.flush_waits"));
        assert_eq!(lock_of("0x2004").as_deref(), Some("throttle"));
        assert_eq!(lock_of("0x9000"), None);
        assert_eq!(by_name.len(), 2);
        assert_eq!(by_name[0].lock, "redo.flush_waits");
        assert_eq!(
            (by_name[0].wait_ns, by_name[0].waits, by_name[0].addresses),
            (800 * FUTEX_SAMPLE, 3 * FUTEX_SAMPLE, 2)
        );
        assert_eq!(by_name[0].wait_ns_by_role[&Role::User], 800 * FUTEX_SAMPLE);
        assert_eq!(
            (by_name[1].lock.as_str(), by_name[1].wait_ns),
            ("throttle", 50 * FUTEX_SAMPLE)
        );
    }
}
