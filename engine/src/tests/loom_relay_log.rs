//! Model checking of the replica's hot relay log (seed 003) with loom:
//! every interleaving of the receiver queueing records and the applier
//! waiting for them, in both arbitration designs, on the real
//! [`HotLog`] code (its atomics, lock and condvar are loom's in this
//! build). A wait has no timeout in a model, so a lost notification is a
//! deadlock loom reports. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p redoctor-engine --lib tests::loom_relay_log`.

use std::sync::Arc;
use std::time::Duration;

use loom::thread;

use crate::counters::Counters;
use crate::replica::arbitration::{Arbitration, HotLog};
use crate::replica::relay_log::RelayPos;
use crate::replica_settings::ReplicaSettings;

fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

fn pos(offset: u64) -> RelayPos {
    RelayPos { file: 1, offset }
}

fn hot_log(design: Arbitration) -> Arc<(HotLog, Counters)> {
    let settings = Arc::new(ReplicaSettings::default());
    settings.set_arbitration(design);
    Arc::new((HotLog::new(settings, pos(4)), Counters::default()))
}

/// The applier as the engine runs it: wait (with a timeout that never
/// passes in a model) until `want` is queued, reading each record found.
fn apply_until(s: &(HotLog, Counters), want: RelayPos) {
    let mut at = pos(4);
    while at < want {
        let q = s.0.wait_beyond(&s.1, at, Duration::from_secs(3600));
        if q > at {
            s.0.read(&s.1, true, || ());
            at = q;
        }
    }
}

#[test]
fn a_queued_record_always_reaches_a_waiting_applier() {
    for design in [Arbitration::Position, Arbitration::Lock] {
        model(3, move || {
            let s = hot_log(design);
            let r = s.clone();
            let receiver = thread::spawn(move || {
                r.0.queue::<()>(&r.1, || Ok(pos(100))).unwrap();
            });
            apply_until(&s, pos(100));
            receiver.join().unwrap();
        });
    }
}

#[test]
fn two_records_in_a_row_are_both_seen() {
    // The second queue may find the applier between its two checks (it
    // said it waits but has not slept yet): the store-then-load on both
    // sides must still leave one of them seeing the other.
    for design in [Arbitration::Position, Arbitration::Lock] {
        model(2, move || {
            let s = hot_log(design);
            let r = s.clone();
            let receiver = thread::spawn(move || {
                r.0.queue::<()>(&r.1, || Ok(pos(50))).unwrap();
                r.0.queue::<()>(&r.1, || Ok(pos(100))).unwrap();
            });
            apply_until(&s, pos(100));
            receiver.join().unwrap();
        });
    }
}

#[test]
fn close_wakes_a_waiting_applier() {
    model(3, || {
        let s = hot_log(Arbitration::Position);
        let r = s.clone();
        let receiver = thread::spawn(move || r.0.close());
        while !s.0.is_closed() {
            s.0.wait_beyond(&s.1, pos(4), Duration::from_secs(3600));
        }
        receiver.join().unwrap();
    });
}
