//! Transaction throttle (`innodb_max_active_transactions`): FIFO admission,
//! one waiter per finishing transaction, clean timeouts, the limit never
//! exceeded under stress, live limit changes.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redoctor_engine::EngineError;
use redoctor_engine::TrxError;

use common::{sbtest_engine as engine, wait_until};

#[test]
fn waiters_start_in_arrival_order_one_per_finish() {
    let (e, table) = engine(10);
    e.set_global("innodb_max_active_transactions", "2").unwrap();
    let a = e.begin();
    let b = e.begin();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut hs = Vec::new();
    let mut release = Vec::new();
    for i in 1..=6u64 {
        let (e2, order) = (e.clone(), order.clone());
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        release.push(tx);
        hs.push(std::thread::spawn(move || {
            let mut t = e2.try_begin().unwrap();
            order.lock().unwrap().push(i);
            t.update_k(table, i as i64, 1).unwrap();
            rx.recv().unwrap(); // stay active until the test says so
            e2.commit(t).unwrap();
        }));
        // The next one arrives only after this one is queued.
        wait_until("queued", || e.throttle().stats().queued == i);
    }
    let admitted = |n: usize| {
        wait_until("admitted", || order.lock().unwrap().len() == n);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(order.lock().unwrap().len(), n, "one admission per finish");
        assert_eq!(e.trx_sys().active_count(), 2, "never over the limit");
    };
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        order.lock().unwrap().is_empty(),
        "nobody passed a full throttle"
    );
    e.rollback(a);
    admitted(1);
    e.commit(b).unwrap();
    admitted(2);
    for (n, tx) in release.into_iter().enumerate() {
        tx.send(()).unwrap();
        if n + 3 <= 6 {
            admitted(n + 3);
        }
    }
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [1, 2, 3, 4, 5, 6]);
    let st = e.throttle().stats();
    assert_eq!(
        (st.waits, st.timeouts, st.queued, st.active),
        (6, 0, 0, 0),
        "{st:?}"
    );
    e.shutdown().unwrap();
}

#[test]
fn a_waiter_times_out_cleanly() {
    let (e, table) = engine(10);
    e.set_global("innodb_max_active_transactions", "1").unwrap();
    e.set_global("innodb_max_active_transactions_wait_timeout", "100")
        .unwrap();
    let mut a = e.begin();
    a.update_k(table, 1, 1).unwrap();
    let t0 = Instant::now();
    let err = e.try_begin().unwrap_err();
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert!(err.is_retryable());
    let msg = err.to_string();
    assert!(
        msg.contains("innodb_max_active_transactions=1") && msg.contains("1 transactions active"),
        "{msg}"
    );
    // begin() never fails: the refusal surfaces at the first statement and
    // at the commit; rolling back is clean.
    let mut r = e.begin();
    assert!(matches!(r.get(table, 1), Err(TrxError::Throttled(_))));
    let err = e.commit(r).unwrap_err();
    assert!(
        matches!(err, EngineError::Trx(TrxError::Throttled(_))),
        "{err}"
    );
    let r = e.begin();
    e.rollback(r);
    let st = e.throttle().stats();
    assert_eq!((st.timeouts, st.queued, st.active), (3, 0, 1), "{st:?}");
    assert_eq!(e.trx_sys().active_count(), 1);
    // The running transaction is untouched and, once it ends, a start is immediate.
    e.commit(a).unwrap();
    let t0 = Instant::now();
    let t = e.try_begin().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "no wait once a place is free"
    );
    e.commit(t).unwrap();
    assert_eq!(e.throttle().stats().active, 0);
    e.shutdown().unwrap();
}

#[test]
fn raising_the_limit_admits_waiters_at_once() {
    let (e, _table) = engine(10);
    e.set_global("innodb_max_active_transactions", "1").unwrap();
    let a = e.begin();
    let started = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let (e2, started) = (e.clone(), started.clone());
            std::thread::spawn(move || {
                let t = e2.try_begin().unwrap();
                started.fetch_add(1, Ordering::SeqCst);
                t
            })
        })
        .collect();
    wait_until("3 queued", || e.throttle().stats().queued == 3);
    e.set_global("innodb_max_active_transactions", "3").unwrap();
    wait_until("2 admitted", || started.load(Ordering::SeqCst) == 2);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(started.load(Ordering::SeqCst), 2, "limit 3 with `a` active");
    e.set_global("innodb_max_active_transactions", "0").unwrap();
    for h in hs {
        e.rollback(h.join().unwrap());
    }
    e.rollback(a);
    assert_eq!(e.throttle().stats().active, 0);
    e.shutdown().unwrap();
}

#[test]
fn the_limit_is_never_exceeded_under_stress() {
    const USERS: usize = 48;
    const LIMIT: u64 = 4;
    let (e, table) = engine(100);
    e.set_global("innodb_max_active_transactions", &LIMIT.to_string())
        .unwrap();
    let active = Arc::new(AtomicU64::new(0));
    let max = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(AtomicU64::new(0));
    // Hold every slot until the first users queue, so the run is sure to
    // wait: on 2 CPUs, 48 short transactions need not overlap by themselves.
    let held: Vec<_> = (0..LIMIT).map(|_| e.try_begin().unwrap()).collect();
    let hs: Vec<_> = (0..USERS)
        .map(|u| {
            let (e, active, max, acked) = (e.clone(), active.clone(), max.clone(), acked.clone());
            std::thread::spawn(move || {
                for i in 0..80i64 {
                    let mut t = e.try_begin().unwrap();
                    let n = active.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(n, Ordering::Relaxed);
                    let sys = e.trx_sys().active_count();
                    assert!(sys <= LIMIT, "{sys} in trx-sys");
                    t.update_k(table, (u as i64 * 7 + i) % 100 + 1, 1).unwrap();
                    active.fetch_sub(1, Ordering::SeqCst);
                    e.commit(t).unwrap();
                    acked.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    wait_until("users queued behind the held slots", || {
        e.throttle().stats().queued > 0
    });
    for t in held {
        e.rollback(t);
    }
    for h in hs {
        h.join().unwrap();
    }
    let st = e.throttle().stats();
    eprintln!(
        "throttle {LIMIT}, {USERS} users: max active {}, {st:?}",
        max.load(Ordering::Relaxed)
    );
    assert!(max.load(Ordering::Relaxed) <= LIMIT);
    assert!(st.waits > 0, "{st:?}");
    assert_eq!((st.active, st.queued, st.timeouts), (0, 0, 0));
    assert_eq!(acked.load(Ordering::Relaxed), (USERS * 80) as u64);
    assert_eq!(e.trx_sys().active_count(), 0);
    e.shutdown().unwrap();
}
