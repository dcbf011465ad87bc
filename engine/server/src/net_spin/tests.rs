use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

/// A gate over `cpus` CPUs that reads them `idle_share` idle, with some
/// thread waiting for a CPU `pressure` of the time.
fn gate_with(cpus: u32, idle_share: f64, pressure: f64) -> IdleGate {
    let start = Instant::now();
    let src: IdleSource = Box::new(move || {
        let ns = start.elapsed().as_nanos() as f64;
        Some(CpuTimes {
            idle_ns: (ns * cpus as f64 * idle_share) as u64,
            pressure_ns: (ns * pressure) as u64,
        })
    });
    IdleGate::new(cpus, src, Duration::from_millis(2))
}

fn gate(cpus: u32, idle_share: f64) -> IdleGate {
    gate_with(cpus, idle_share, 0.0)
}

/// Takes the gate's first two samples, so it has measured a period.
fn warm(g: &IdleGate) -> u32 {
    g.allowed(0);
    std::thread::sleep(Duration::from_millis(5));
    g.allowed(0)
}

#[test]
fn pollers_follow_whole_idle_cpus_and_leave_one_cpu() {
    assert_eq!(pollers_for(0.0, 2), 0);
    assert_eq!(pollers_for(0.4, 2), 0);
    assert_eq!(pollers_for(0.6, 2), 1);
    assert_eq!(pollers_for(2.0, 2), 1, "never every CPU");
    assert_eq!(pollers_for(3.2, 8), 3);
    assert_eq!(pollers_for(1.0, 1), 0, "one CPU: never poll");
    assert_eq!(pollers_for(-0.3, 4), 0);
}

#[test]
fn idle_ticks_sum_idle_and_iowait_of_the_cpus_asked_for() {
    let stat = "cpu  10 0 10 500 5 0 0 0 0 0\n\
                cpu0 5 0 5 200 2 0 0 0 0 0\n\
                cpu1 5 0 5 300 3 0 0 0 0 0\n\
                intr 1 2 3\n";
    assert_eq!(idle_ticks(stat, &[0, 1]), Some(505));
    assert_eq!(idle_ticks(stat, &[1]), Some(303));
    assert_eq!(idle_ticks(stat, &[2]), None, "a CPU without a line");
    assert_eq!(idle_ticks("garbage", &[0]), None);
}

#[test]
fn pressure_is_the_some_lines_total() {
    let text = "some avg10=1.59 avg60=37.60 avg300=55.71 total=21822021766\n\
                full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    assert_eq!(some_pressure_us(text), Some(21822021766));
    assert_eq!(some_pressure_us("full total=5\n"), None);
    assert_eq!(some_pressure_us("some avg10=1 total=x\n"), None);
}

#[test]
fn this_hosts_gate_reads_its_sources_or_says_why_not() {
    let g = IdleGate::host();
    assert!(g.cpus >= 1);
    match std::fs::read_to_string("/proc/pressure/cpu") {
        Ok(_) => assert!(
            (g.source)().is_some(),
            "/proc/stat and /proc/pressure/cpu read"
        ),
        Err(e) => {
            // Without pressure stall information nothing polls.
            eprintln!("SKIP the host check: /proc/pressure/cpu: {e} (kernel without PSI)");
            assert!((g.source)().is_none());
        }
    }
}

#[test]
fn gate_allows_pollers_only_with_idle_cpus() {
    assert_eq!(warm(&gate(2, 1.0)), 1, "two idle CPUs: one poller");
    assert_eq!(warm(&gate(4, 1.0)), 3);
    assert_eq!(warm(&gate(2, 0.0)), 0, "saturated: nobody polls");
    assert_eq!(warm(&gate(2, 0.1)), 0);
    let unknown = IdleGate::new(2, Box::new(|| None), Duration::from_millis(1));
    assert_eq!(warm(&unknown), 0, "idle time unknown: nobody polls");
}

#[test]
fn threads_waiting_for_a_cpu_stop_polling() {
    assert_eq!(
        warm(&gate_with(2, 1.0, 0.05)),
        1,
        "a little pressure: still one"
    );
    assert_eq!(
        warm(&gate_with(2, 1.0, 0.5)),
        0,
        "threads waited: nobody polls"
    );
    // Polling that keeps the CPU busy still counts as idle, unless
    // threads wait meanwhile.
    let g = gate_with(2, 0.0, 0.6);
    let t = Instant::now();
    g.allowed(0);
    std::thread::sleep(Duration::from_millis(10));
    let spun = (t.elapsed().as_nanos() as f64 * 1.5) as u64;
    assert_eq!(g.allowed(spun), 0);
}

#[test]
fn polling_time_counts_as_idle() {
    let g = gate(2, 0.0);
    let t = Instant::now();
    g.allowed(0);
    std::thread::sleep(Duration::from_millis(10));
    // Polling filled more than a CPU's worth of the period.
    let spun = (t.elapsed().as_nanos() as f64 * 1.5) as u64;
    assert_eq!(g.allowed(spun), 1);
}

fn policy(spin: Duration, idle_share: f64) -> Arc<NetSpin> {
    let p = Arc::new(NetSpin::new(spin, gate(2, idle_share)));
    warm(&p.gate);
    p
}

#[test]
fn a_request_that_arrives_while_polling_is_read_without_blocking() {
    let (mut client, server) = UnixStream::pair().unwrap();
    let p = policy(Duration::from_secs(30), 1.0);
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        client.write_all(b"next request").unwrap();
        client
    });
    let mut buf = [0u8; 64];
    let n = p.poll(server.as_raw_fd(), &mut buf).unwrap();
    assert_eq!(n, Some(12));
    assert_eq!(&buf[..12], b"next request");
    assert_eq!(p.hits.load(Relaxed), 1);
    assert_eq!(p.timeouts.load(Relaxed), 0);
    assert!(p.spun_ns.load(Relaxed) > 0);
    drop(t.join().unwrap());
}

#[test]
fn polling_gives_up_after_the_spin_and_at_the_end_of_the_stream() {
    let (client, server) = UnixStream::pair().unwrap();
    let p = policy(Duration::from_millis(3), 1.0);
    let mut buf = [0u8; 8];
    let t = Instant::now();
    assert_eq!(p.poll(server.as_raw_fd(), &mut buf).unwrap(), None);
    assert!(t.elapsed() >= Duration::from_millis(3));
    assert_eq!(p.timeouts.load(Relaxed), 1);
    drop(client);
    assert_eq!(
        p.poll(server.as_raw_fd(), &mut buf).unwrap(),
        Some(0),
        "a closed peer reads as the end of the stream"
    );
}

#[test]
fn no_polling_when_saturated_or_switched_off() {
    let (mut client, server) = UnixStream::pair().unwrap();
    client.write_all(b"x").unwrap();
    let mut buf = [0u8; 8];
    for p in [
        policy(Duration::from_millis(50), 0.0),
        policy(Duration::ZERO, 1.0),
    ] {
        assert_eq!(p.poll(server.as_raw_fd(), &mut buf).unwrap(), None);
        assert_eq!(p.hits.load(Relaxed) + p.timeouts.load(Relaxed), 0);
    }
    // The byte is still there for the blocking read.
    let mut s = server;
    assert_eq!(s.read(&mut buf).unwrap(), 1);
}

#[test]
fn one_poller_at_a_time_on_two_cpus() {
    let p = policy(Duration::from_secs(30), 1.0);
    let (mut c1, s1) = UnixStream::pair().unwrap();
    let (_c2, s2) = UnixStream::pair().unwrap();
    let p2 = p.clone();
    let first = std::thread::spawn(move || {
        let mut buf = [0u8; 8];
        p2.poll(s1.as_raw_fd(), &mut buf).unwrap()
    });
    // Wait until the first poller is in.
    while p.pollers.load(Relaxed) == 0 {
        std::thread::yield_now();
    }
    let mut buf = [0u8; 8];
    assert_eq!(
        p.poll(s2.as_raw_fd(), &mut buf).unwrap(),
        None,
        "the second waiter blocks instead of polling"
    );
    assert_eq!(p.timeouts.load(Relaxed), 0, "it did not poll");
    c1.write_all(b"go").unwrap();
    assert_eq!(first.join().unwrap(), Some(2));
    assert_eq!(p.hits.load(Relaxed), 1);
}
