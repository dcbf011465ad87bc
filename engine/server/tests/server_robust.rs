//! The server under hostile or broken clients: random bytes, malformed and
//! oversized packets, abrupt disconnects mid-transaction, and graceful
//! shutdown with a transaction open. Other connections keep working and
//! nothing committed is lost.

mod server_util;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use mysql::prelude::Queryable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use server_util::{connect, load, start_in, TestServer};

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    v.push(seq);
    v.extend_from_slice(payload);
    v
}

/// Reads one packet's payload.
fn read_packet(s: &mut UnixStream) -> Vec<u8> {
    let mut hdr = [0u8; 4];
    s.read_exact(&mut hdr).unwrap();
    let len = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], 0]) as usize;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).unwrap();
    payload
}

/// Reads the server greeting, then sends a minimal 4.1 handshake response.
fn raw_login(socket: &std::path::Path) -> UnixStream {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let greeting = read_packet(&mut s);
    assert_eq!(greeting[0], 10, "protocol version 10");
    let mut resp = Vec::new();
    resp.extend_from_slice(&(0x0200u32 | 0x8000).to_le_bytes()); // PROTOCOL_41 | SECURE_CONNECTION
    resp.extend_from_slice(&(1u32 << 24).to_le_bytes());
    resp.push(33);
    resp.extend_from_slice(&[0u8; 23]);
    resp.extend_from_slice(b"root\0");
    resp.push(0);
    s.write_all(&packet(1, &resp)).unwrap();
    let ok = read_packet(&mut s);
    assert_eq!(ok[0], 0, "OK packet after login");
    s
}

/// Reads until the server closes the connection (or the timeout).
fn drain(s: &mut UnixStream) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

fn assert_healthy(c: &mut mysql::Conn, rows: i64) {
    let n: i64 = c
        .query_first("SELECT COUNT(*) FROM sbtest1")
        .unwrap()
        .unwrap();
    assert_eq!(n, rows);
}

#[test]
fn random_bytes_and_malformed_packets_leave_the_server_serving() {
    let t = TestServer::start();
    let mut good = t.conn();
    load(&mut good, 50);
    let mut rng = SmallRng::seed_from_u64(4);
    for round in 0..60 {
        let mut s = if round % 3 == 0 {
            // Garbage instead of a handshake.
            let s = UnixStream::connect(t.socket()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s
        } else {
            raw_login(&t.socket())
        };
        let n = rng.gen_range(1..600);
        let mut bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        match round % 6 {
            // Well-framed packets with random payloads, including known
            // commands followed by junk (COM_STMT_EXECUTE of garbage).
            1 => {
                bytes = packet(0, &bytes);
                bytes[4] = [0x03, 0x16, 0x17, 0x18, 0x19, 0x04][rng.gen_range(0..6)];
            }
            2 => bytes = packet(0, &bytes),
            _ => {}
        }
        let _ = s.write_all(&bytes);
        let _ = s.shutdown(std::net::Shutdown::Write);
        drain(&mut s);
        // The well-behaved connection is unaffected.
        assert_healthy(&mut good, 50);
    }
    // New connections still work.
    let mut fresh = t.conn();
    assert_healthy(&mut fresh, 50);
}

#[test]
fn oversized_packet_closes_only_that_connection() {
    let t = TestServer::start_with(|cfg| cfg.max_packet = 64 << 10);
    let mut good = t.conn();
    load(&mut good, 10);
    let mut s = raw_login(&t.socket());
    let mut q = b"\x03SELECT c FROM sbtest1 WHERE c = '".to_vec();
    q.extend(std::iter::repeat_n(b'x', 200 << 10));
    q.push(b'\'');
    // The server stops reading at the header; the write may fail part-way.
    let _ = s.write_all(&packet(0, &q));
    drain(&mut s);
    // Through the client library: an error, not a hang or a crash.
    let mut c = t.conn();
    let big = "y".repeat(100 << 10);
    assert!(c
        .query_drop(format!(
            "SELECT c FROM sbtest1 WHERE id = 1 AND c = '{big}'"
        ))
        .is_err());
    assert_healthy(&mut good, 10);
    let mut fresh = t.conn();
    assert_healthy(&mut fresh, 10);
}

#[test]
fn abrupt_disconnect_mid_transaction_rolls_back_only_its_changes() {
    let t = TestServer::start();
    let mut good = t.conn();
    load(&mut good, 10);
    for round in 0..5 {
        let mut doomed = t.conn();
        doomed.query_drop("BEGIN").unwrap();
        doomed
            .query_drop("UPDATE sbtest1 SET c='uncommitted' WHERE id=1")
            .unwrap();
        doomed
            .query_drop("INSERT INTO sbtest1 (id, k, c, pad) VALUES (1000, 1, 'x', 'y')")
            .unwrap();
        doomed.query_drop("DELETE FROM sbtest1 WHERE id=2").unwrap();
        // Committed by another connection meanwhile.
        good.query_drop(format!(
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES ({}, 1, 'kept', 'y')",
            2000 + round
        ))
        .unwrap();
        // Kill the connection without COM_QUIT.
        drop(doomed); // the mysql crate sends COM_QUIT: use a raw socket below too
        let mut raw = raw_login(&t.socket());
        raw.write_all(&packet(0, b"\x03BEGIN")).unwrap();
        let mut buf = [0u8; 64];
        let _ = raw.read(&mut buf).unwrap();
        raw.write_all(&packet(0, b"\x03UPDATE sbtest1 SET c='raw' WHERE id=3"))
            .unwrap();
        let _ = raw.read(&mut buf).unwrap();
        drop(raw); // RST/EOF mid-transaction
                   // The row locks are released: the good connection can write those rows.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            match good.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=3") {
                Ok(()) => break,
                Err(e) if std::time::Instant::now() < deadline => {
                    eprintln!("retrying: {e}");
                }
                Err(e) => panic!("row 3 still locked: {e}"),
            }
        }
        good.query_drop("UPDATE sbtest1 SET k=k+1 WHERE id=1")
            .unwrap();
    }
    let c1: String = good
        .query_first("SELECT c FROM sbtest1 WHERE id=1")
        .unwrap()
        .unwrap();
    assert_eq!(c1, "c1");
    let c3: String = good
        .query_first("SELECT c FROM sbtest1 WHERE id=3")
        .unwrap()
        .unwrap();
    assert_eq!(c3, "c3");
    let none: Option<i64> = good
        .query_first("SELECT id FROM sbtest1 WHERE id=1000")
        .unwrap();
    assert_eq!(none, None);
    assert_healthy(&mut good, 15);
}

#[test]
fn graceful_shutdown_rolls_back_open_transactions_and_keeps_commits() {
    let t = TestServer::start();
    let dir = t.dir.path().to_path_buf();
    let mut a = t.conn();
    load(&mut a, 10);
    let mode = std::fs::metadata(t.socket()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "socket is owner-only");
    let mut open = t.conn();
    open.query_drop("BEGIN").unwrap();
    open.query_drop("UPDATE sbtest1 SET c='open' WHERE id=1")
        .unwrap();
    a.query_drop("UPDATE sbtest1 SET c='committed' WHERE id=2")
        .unwrap();
    let mut t = t;
    let server = t.server.take().unwrap();
    let started = std::time::Instant::now();
    server.shutdown().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!t.socket().exists(), "socket file removed");
    // Both clients see the connection gone.
    assert!(open.query_drop("COMMIT").is_err());
    assert!(a.query_drop("SELECT 1").is_err());
    // Reopen: committed change kept, open one rolled back.
    let server = start_in(dir.clone(), |_| {});
    let mut c = connect(&dir.join("s.sock"));
    let c1: String = c
        .query_first("SELECT c FROM sbtest1 WHERE id=1")
        .unwrap()
        .unwrap();
    let c2: String = c
        .query_first("SELECT c FROM sbtest1 WHERE id=2")
        .unwrap()
        .unwrap();
    assert_eq!((c1.as_str(), c2.as_str()), ("c1", "committed"));
    drop(c);
    server.shutdown().unwrap();
}

#[test]
fn shutdown_lets_a_transaction_that_commits_in_the_grace_period_finish() {
    let t = TestServer::start_with(|cfg| cfg.shutdown_grace = Duration::from_secs(3));
    let dir = t.dir.path().to_path_buf();
    let mut a = t.conn();
    load(&mut a, 5);
    a.query_drop("BEGIN").unwrap();
    a.query_drop("UPDATE sbtest1 SET c='finished' WHERE id=1")
        .unwrap();
    let mut t = t;
    let server = t.server.take().unwrap();
    let h = std::thread::spawn(move || server.shutdown());
    std::thread::sleep(Duration::from_millis(300));
    // New transactions are refused, the open one may commit.
    a.query_drop("COMMIT").unwrap();
    h.join().unwrap().unwrap();
    let server = start_in(dir.clone(), |_| {});
    let mut c = connect(&dir.join("s.sock"));
    let c1: String = c
        .query_first("SELECT c FROM sbtest1 WHERE id=1")
        .unwrap()
        .unwrap();
    assert_eq!(c1, "finished");
    drop(c);
    server.shutdown().unwrap();
}

#[test]
fn concurrent_transfers_with_disconnects_conserve_the_sum() {
    let mut t = TestServer::start();
    let mut c = t.conn();
    load(&mut c, 40);
    let sum = |c: &mut mysql::Conn| -> i64 {
        c.query_first("SELECT SUM(k) FROM sbtest1")
            .unwrap()
            .unwrap()
    };
    let before = sum(&mut c);
    let socket = t.socket();
    let workers: Vec<_> = (0..12u64)
        .map(|w| {
            let socket = socket.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(w);
                let mut conn = connect(&socket);
                let mut committed = 0;
                for _ in 0..150 {
                    let a = rng.gen_range(1..=40);
                    let b = rng.gen_range(1..=40);
                    let r: mysql::Result<()> = (|| {
                        conn.query_drop("BEGIN")?;
                        conn.exec_drop("UPDATE sbtest1 SET k=k+? WHERE id=?", (5, a))?;
                        conn.exec_drop("UPDATE sbtest1 SET k=k-? WHERE id=?", (5, b))?;
                        Ok(())
                    })();
                    match r {
                        Ok(()) if rng.gen_bool(0.1) => {
                            // Vanish mid-transaction: it must roll back.
                            conn = connect(&socket);
                        }
                        Ok(()) => {
                            conn.query_drop("COMMIT").unwrap();
                            committed += 1;
                        }
                        Err(mysql::Error::MySqlError(e)) if e.code == 1213 || e.code == 1205 => {
                            conn.query_drop("ROLLBACK").unwrap();
                        }
                        Err(e) => panic!("worker {w}: {e}"),
                    }
                }
                committed
            })
        })
        .collect();
    let committed: u32 = workers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(committed > 0);
    assert_eq!(sum(&mut c), before, "a transfer was half applied");
    drop(c);
    t.restart();
    let mut c = t.conn();
    assert_eq!(sum(&mut c), before, "after restart");
}

#[test]
fn a_client_that_never_logs_in_is_dropped_after_connect_timeout() {
    let t = TestServer::start_with(|cfg| cfg.connect_timeout = Duration::from_millis(300));
    let mut silent = UnixStream::connect(t.socket()).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = std::time::Instant::now();
    drain(&mut silent); // greeting, then EOF when the server gives up
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
        "closed after {waited:?}"
    );
    // A logged-in connection may stay idle longer than connect_timeout.
    let mut c = t.conn();
    std::thread::sleep(Duration::from_millis(600));
    let v: i64 = c.query_first("SELECT 1").unwrap().unwrap();
    assert_eq!(v, 1);
}
