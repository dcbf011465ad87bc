//! A read-side guard between the socket and `msql_srv`.
//!
//! It reassembles the client's packets (3-byte length, 1-byte sequence) and
//! hands them on whole, looking only at the command header, and:
//!
//! - refuses a packet longer than `max_allowed_packet` as soon as its header
//!   arrives (the protocol crate would otherwise buffer it whole), and an
//!   empty or unknown command (the crate panics on those): the read fails,
//!   so the connection closes, as MySQL closes it on a framing error;
//! - flips the case of a query's first letter when it is `S`/`s`, because
//!   msql-srv 0.11 answers queries starting with `SELECT @@` itself (an
//!   empty result for every variable but max_allowed_packet); SQL keywords
//!   are case-insensitive, so the statement means the same and reaches the
//!   session, which answers `SELECT @@name` from the settings registry;
//! - works around msql-srv 0.11 mis-reading repeated COM_STMT_EXECUTEs (see
//!   [`Guard::fix_execute`]).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::net_spin::Spinner;

/// Commands msql-srv 0.11 handles.
const KNOWN_COMMANDS: &[u8] = &[
    0x01, // COM_QUIT
    0x02, // COM_INIT_DB
    0x03, // COM_QUERY
    0x04, // COM_FIELD_LIST
    0x0e, // COM_PING
    0x16, // COM_STMT_PREPARE
    0x17, // COM_STMT_EXECUTE
    0x18, // COM_STMT_SEND_LONG_DATA
    0x19, // COM_STMT_CLOSE
];
const COM_QUERY: u8 = 0x03;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;
const MAX_CHUNK: usize = 0xff_ffff;

/// Parameter counts of the connection's prepared statements (kept by the session).
pub type StmtParams = Arc<Mutex<HashMap<u32, usize>>>;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

pub struct Guard<S> {
    inner: S,
    max_packet: usize,
    params: StmtParams,
    /// Raw bytes read, not yet a whole packet.
    raw: Vec<u8>,
    /// Checked packets ready for the protocol crate, and how far it read them.
    ready: Vec<u8>,
    ready_at: usize,
    /// Parameter types each statement was last executed with.
    types: HashMap<u32, Vec<u8>>,
    /// Bytes written, not yet sent: msql-srv writes every protocol packet
    /// (each row of a result set) with its own `write_all` and flushes once
    /// per reply, so without this buffer a 100-row result is ~100 send()
    /// syscalls. Sent on flush, or once it holds `SEND_AT` bytes.
    out: Vec<u8>,
    /// Polls the socket before blocking on it ([`crate::net_spin`]).
    spin: Option<Spinner>,
}

/// Send buffered output once it reaches this size, even before the flush.
const SEND_AT: usize = 64 << 10;

impl<S> Guard<S> {
    pub fn new(inner: S, max_packet: usize, params: StmtParams) -> Guard<S> {
        Guard {
            inner,
            max_packet,
            params,
            raw: Vec::new(),
            ready: Vec::new(),
            ready_at: 0,
            types: HashMap::new(),
            out: Vec::new(),
            spin: None,
        }
    }

    /// Polls the socket before blocking on it, as `spin` allows.
    pub fn with_spin(mut self, spin: Spinner) -> Guard<S> {
        self.spin = Some(spin);
        self
    }

    /// Moves every whole packet from `raw` to `ready`, checked and patched.
    fn process(&mut self) -> io::Result<()> {
        loop {
            if self.raw.len() < 4 {
                return Ok(());
            }
            let len = u32::from_le_bytes([self.raw[0], self.raw[1], self.raw[2], 0]) as usize;
            let seq = self.raw[3];
            if len > self.max_packet {
                return Err(invalid(format!(
                    "packet of {len} bytes exceeds max_allowed_packet ({} bytes); connection closed",
                    self.max_packet
                )));
            }
            if self.raw.len() < 4 + len {
                return Ok(());
            }
            let mut payload: Vec<u8> = self.raw[4..4 + len].to_vec();
            self.raw.drain(..4 + len);
            if seq == 0 && len < MAX_CHUNK {
                self.check_command(&mut payload)?;
            }
            let n = payload.len() as u32;
            self.ready.extend_from_slice(&n.to_le_bytes()[..3]);
            self.ready.push(seq);
            self.ready.extend_from_slice(&payload);
        }
    }

    fn check_command(&mut self, p: &mut Vec<u8>) -> io::Result<()> {
        let Some(&cmd) = p.first() else {
            return Err(invalid("empty command packet; connection closed".into()));
        };
        if !KNOWN_COMMANDS.contains(&cmd) {
            return Err(invalid(format!(
                "unsupported command byte {cmd:#04x}; connection closed"
            )));
        }
        match cmd {
            COM_QUERY => match p.get(1) {
                Some(b'S') => p[1] = b's',
                Some(b's') => p[1] = b'S',
                _ => {}
            },
            COM_STMT_EXECUTE => self.fix_execute(p)?,
            // The statement is gone: so are the types it was bound with.
            COM_STMT_CLOSE => {
                if let Some(id) = p.get(1..5) {
                    let id = u32::from_le_bytes(id.try_into().expect("four bytes"));
                    self.types.remove(&id);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// msql-srv 0.11 mis-reads COM_STMT_EXECUTE when the client does not
    /// resend parameter types (new_params_bound_flag = 0, as libmysqlclient
    /// does from the second execution on): it leaves the flag byte in front
    /// of the values. Resend the types the statement was last bound with.
    fn fix_execute(&mut self, p: &mut Vec<u8>) -> io::Result<()> {
        if p.len() < 5 {
            return Err(invalid(
                "truncated COM_STMT_EXECUTE; connection closed".into(),
            ));
        }
        let stmt = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
        let Some(n) = self.params.lock().get(&stmt).copied() else {
            // Unknown statement: the session answers with an error.
            return Ok(());
        };
        if n == 0 {
            return Ok(());
        }
        let flag_at = 1 + 4 + 1 + 4 + n.div_ceil(8);
        let Some(&flag) = p.get(flag_at) else {
            return Err(invalid(
                "truncated COM_STMT_EXECUTE; connection closed".into(),
            ));
        };
        if flag != 0 {
            let types = p.get(flag_at + 1..flag_at + 1 + 2 * n).ok_or_else(|| {
                invalid("truncated COM_STMT_EXECUTE parameter types; connection closed".into())
            })?;
            self.types.insert(stmt, types.to_vec());
        } else {
            let types = self.types.get(&stmt).ok_or_else(|| {
                invalid(format!(
                    "COM_STMT_EXECUTE of statement {stmt} without parameter types, and none were sent before; connection closed"
                ))
            })?;
            p[flag_at] = 1;
            p.splice(flag_at + 1..flag_at + 1, types.iter().copied());
        }
        Ok(())
    }
}

impl<S: Read> Read for Guard<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.ready_at == self.ready.len() {
            self.ready.clear();
            self.ready_at = 0;
            let mut chunk = [0u8; 16 * 1024];
            let polled = match &self.spin {
                Some(sp) => sp.poll(&mut chunk)?,
                None => None,
            };
            let n = match polled {
                Some(n) => n,
                None => self.inner.read(&mut chunk)?,
            };
            if n == 0 {
                if self.raw.is_empty() {
                    return Ok(0);
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "connection closed inside a packet ({} bytes unread)",
                        self.raw.len()
                    ),
                ));
            }
            self.raw.extend_from_slice(&chunk[..n]);
            self.process()?;
        }
        let n = buf.len().min(self.ready.len() - self.ready_at);
        buf[..n].copy_from_slice(&self.ready[self.ready_at..self.ready_at + n]);
        self.ready_at += n;
        Ok(n)
    }
}

impl<S: Write> Guard<S> {
    fn send_out(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            let r = self.inner.write_all(&self.out);
            self.out.clear();
            r?;
        }
        Ok(())
    }
}

impl<S: Write> Write for Guard<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.extend_from_slice(buf);
        if self.out.len() >= SEND_AT {
            self.send_out()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_out()?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        v.push(seq);
        v.extend_from_slice(payload);
        v
    }

    fn feed(bytes: &[u8], chunk: usize) -> io::Result<Vec<u8>> {
        let mut g = Guard::new(io::Cursor::new(bytes.to_vec()), 1024, StmtParams::default());
        let mut out = Vec::new();
        let mut buf = vec![0; chunk];
        loop {
            let n = g.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    #[test]
    fn flips_select_case_in_any_chunking_and_leaves_the_rest() {
        let mut input = packet(1, b"handshake SELECT");
        input.extend(packet(0, b"\x03SELECT @@x"));
        input.extend(packet(0, b"\x03select 1"));
        input.extend(packet(0, b"\x16SELECT c FROM t"));
        for chunk in [1, 2, 3, 5, 7, 4096] {
            let out = feed(&input, chunk).unwrap();
            let mut want = packet(1, b"handshake SELECT");
            want.extend(packet(0, b"\x03sELECT @@x"));
            want.extend(packet(0, b"\x03Select 1"));
            want.extend(packet(0, b"\x16SELECT c FROM t"));
            assert_eq!(out, want, "chunk {chunk}");
        }
    }

    #[test]
    fn refuses_oversized_empty_and_unknown_commands() {
        let big = packet(0, &vec![3u8; 2000]);
        let e = feed(&big[..4], 4).unwrap_err();
        assert!(e.to_string().contains("max_allowed_packet"));
        assert!(feed(&packet(0, b""), 16).is_err());
        let e = feed(&packet(0, b"\x1fxx"), 16).unwrap_err();
        assert!(e.to_string().contains("0x1f"));
        // A zero-length continuation packet (seq > 0) is fine.
        assert!(feed(&packet(1, b""), 16).is_ok());
        // A connection that ends inside a packet is an error, not a clean close.
        assert!(feed(&packet(0, b"\x03SELECT 1")[..6], 16).is_err());
    }

    #[test]
    fn resends_parameter_types_the_client_left_out() {
        let params = StmtParams::default();
        params.lock().insert(7, 2);
        let mut first = vec![0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0b00, 1, 3, 0, 254, 0];
        first.extend_from_slice(&[5, 0, 0, 0, 1, b'x']);
        let mut again = vec![0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0b00, 0];
        again.extend_from_slice(&[6, 0, 0, 0, 1, b'y']);
        let mut input = packet(0, &first);
        input.extend(packet(0, &again));
        let mut g = Guard::new(io::Cursor::new(input), 1024, params);
        let mut out = Vec::new();
        g.read_to_end(&mut out).unwrap();
        let mut want = packet(0, &first);
        let mut fixed = vec![0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0b00, 1, 3, 0, 254, 0];
        fixed.extend_from_slice(&[6, 0, 0, 0, 1, b'y']);
        want.extend(packet(0, &fixed));
        assert_eq!(out, want);
    }

    #[test]
    fn a_polling_guard_reads_what_a_blocking_one_reads() {
        use crate::net_spin::{CpuTimes, IdleGate, NetSpin};
        use std::os::fd::AsRawFd;
        use std::os::unix::net::UnixStream;
        use std::time::{Duration, Instant};

        // Two CPUs, always idle, no pressure: one poller allowed.
        let start = Instant::now();
        let gate = IdleGate::new(
            2,
            Box::new(move || {
                Some(CpuTimes {
                    idle_ns: 2 * start.elapsed().as_nanos() as u64,
                    pressure_ns: 0,
                })
            }),
            Duration::ZERO,
        );
        gate.allowed(0);
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(gate.allowed(0), 1);
        let policy = Arc::new(NetSpin::new(Duration::from_secs(30), gate));

        let (mut client, server) = UnixStream::pair().unwrap();
        let fd = server.as_raw_fd();
        let mut g = Guard::new(server, 1024, StmtParams::default()).with_spin(Spinner {
            fd,
            policy: policy.clone(),
        });
        let mut input = packet(0, b"\x03SELECT 1");
        input.extend(packet(0, b"\x03select 2"));
        input.extend(packet(0, b"\x0e"));
        let sent = input.clone();
        let writer = std::thread::spawn(move || {
            // In pieces, with pauses: some reads find nothing yet.
            for part in sent.chunks(5) {
                client.write_all(part).unwrap();
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let mut out = vec![0u8; 64];
        let mut got = Vec::new();
        while got.len() < input.len() {
            let n = g.read(&mut out).unwrap();
            got.extend_from_slice(&out[..n]);
        }
        writer.join().unwrap();
        let mut want = packet(0, b"\x03sELECT 1");
        want.extend(packet(0, b"\x03Select 2"));
        want.extend(packet(0, b"\x0e"));
        assert_eq!(got, want);
        assert!(policy.hits.load(std::sync::atomic::Ordering::Relaxed) > 0);
        assert_eq!(g.read(&mut out).unwrap(), 0, "the writer hung up");
    }

    #[test]
    fn writes_are_sent_on_flush_or_when_the_buffer_fills() {
        let mut g = Guard::new(Vec::new(), 1024, StmtParams::default());
        g.write_all(b"row 1").unwrap();
        g.write_all(b"row 2").unwrap();
        assert!(g.inner.is_empty(), "nothing is sent before the flush");
        g.flush().unwrap();
        assert_eq!(g.inner, b"row 1row 2");
        let big = vec![7u8; SEND_AT];
        g.write_all(&big).unwrap();
        assert_eq!(g.inner.len(), 10 + SEND_AT, "a full buffer is sent at once");
        g.flush().unwrap();
        assert_eq!(g.inner.len(), 10 + SEND_AT);
    }
}
