//! The expected-state journal of the crash soak: what every transaction
//! wrote, and whether its commit was acknowledged.
//!
//! It generalises the insert workload's acknowledgement log ([`super::acks`])
//! to every workload. A user thread appends, with one `write(2)` per line to
//! a file opened with `O_APPEND` and no userspace buffering:
//!
//! ```text
//! I <trx> <op> <op> ... #<crc>   before the commit call, while the
//!                                transaction still holds its row locks;
//!                                op = <table>:<id>:<k>:<digest> (after-image)
//!                                   | <table>:<id>:-            (deleted)
//! A <trx> #<crc>                 after the commit returned: acknowledged
//! X <trx> #<crc>                 the commit failed with a retryable error
//!                                (the transaction was rolled back)
//! ```
//!
//! `<trx>` is the engine's transaction id, which is also the xid of its
//! binlog event (`log_bin=ON`); `<digest>` is [`row_digest`] of the row's
//! after-image; `<crc>` is the CRC-32 of the line's bytes before ` #`, in
//! hex. A `SIGKILL` can cut only the last line short; a reader ignores a last
//! line without its newline.
//!
//! Why the order of the lines matters: a transaction's intent is written
//! while it holds the X locks of every row it changed, and a later
//! transaction changing one of those rows can lock it only after this one
//! committed (or rolled back). So for each row, the intents that change it
//! appear in the file in the order the engine applied them, which is the
//! order their redo records (and binlog events) were written. A checker can
//! therefore name, for every row, each value it may hold after recovery.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use redoctor_engine::{Row, RowOp, TableId};

/// A stable 64-bit digest of a row (FNV-1a over `k`, `c` and `pad`), the
/// same in every process and build.
pub fn row_digest(row: &Row) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    };
    eat(&row.k.to_le_bytes());
    eat(&(row.c.len() as u64).to_le_bytes());
    eat(row.c.as_bytes());
    eat(&(row.pad.len() as u64).to_le_bytes());
    eat(row.pad.as_bytes());
    h
}

/// A row's value as the journal and the soak's state files record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowValue {
    /// The `k` column, kept readable for messages and the `update_index` check.
    pub k: i32,
    /// [`row_digest`] of the whole row.
    pub digest: u64,
}

impl RowValue {
    pub fn of(row: &Row) -> RowValue {
        RowValue {
            k: row.k,
            digest: row_digest(row),
        }
    }
}

/// One row change of a journaled transaction: `None` is a delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalOp {
    pub table: TableId,
    pub id: i64,
    pub after: Option<RowValue>,
}

impl JournalOp {
    pub fn of(op: &RowOp) -> JournalOp {
        match op {
            RowOp::Put { table, id, row } => JournalOp {
                table: *table,
                id: *id,
                after: Some(RowValue::of(row)),
            },
            RowOp::Delete { table, id } => JournalOp {
                table: *table,
                id: *id,
                after: None,
            },
        }
    }
}

/// One complete journal line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// About to commit transaction `trx`, which changed these rows.
    Intent { trx: u64, ops: Vec<JournalOp> },
    /// The commit of `trx` returned success.
    Ack { trx: u64 },
    /// The commit of `trx` failed with a retryable error: it was rolled back.
    Abort { trx: u64 },
}

/// Appends journal lines (shared by all user threads).
#[derive(Debug)]
pub struct JournalWriter {
    file: File,
}

impl JournalWriter {
    /// Opens (creating if needed) `path` for appending.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(JournalWriter { file })
    }

    /// `I <trx> <ops...>`: call before the commit, while the locks are held.
    pub fn intent(&self, trx: u64, ops: &[RowOp]) -> io::Result<()> {
        let ops: Vec<JournalOp> = ops.iter().map(JournalOp::of).collect();
        self.append(&Entry::Intent { trx, ops })
    }

    /// `A <trx>`: call after the commit returned success.
    pub fn ack(&self, trx: u64) -> io::Result<()> {
        self.append(&Entry::Ack { trx })
    }

    /// `X <trx>`: call after the commit failed with a retryable error.
    pub fn abort(&self, trx: u64) -> io::Result<()> {
        self.append(&Entry::Abort { trx })
    }

    /// Appends one entry with a single `write(2)`.
    pub fn append(&self, entry: &Entry) -> io::Result<()> {
        super::acks::write_line(&self.file, encode_line(entry).as_bytes())
    }
}

/// The text of one line, newline included.
pub fn encode_line(entry: &Entry) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(64);
    match entry {
        Entry::Intent { trx, ops } => {
            let _ = write!(s, "I {trx}");
            for op in ops {
                let _ = match op.after {
                    Some(v) => write!(s, " {}:{}:{}:{:x}", op.table, op.id, v.k, v.digest),
                    None => write!(s, " {}:{}:-", op.table, op.id),
                };
            }
        }
        Entry::Ack { trx } => {
            let _ = write!(s, "A {trx}");
        }
        Entry::Abort { trx } => {
            let _ = write!(s, "X {trx}");
        }
    }
    let crc = crc32fast::hash(s.as_bytes());
    let _ = writeln!(s, " #{crc:08x}");
    s
}

/// The complete lines of a journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedJournal {
    /// Entries in file order.
    pub entries: Vec<Entry>,
    /// The file ended in a line without its newline, which was ignored.
    pub partial_tail: bool,
}

/// A complete line that is not a journal entry (the file is damaged or is
/// not a journal).
#[derive(Debug, Clone, thiserror::Error)]
#[error("journal line {line}: {why}: {text:?}")]
pub struct JournalParseError {
    pub line: usize,
    pub why: &'static str,
    pub text: String,
}

/// Parses a journal, ignoring a trailing partial line.
pub fn parse_journal(bytes: &[u8]) -> Result<ParsedJournal, JournalParseError> {
    let mut out = ParsedJournal::default();
    let mut lines = bytes.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if lines.peek().is_none() {
            out.partial_tail = !line.is_empty();
            break;
        }
        let bad = |why: &'static str| JournalParseError {
            line: n + 1,
            why,
            text: String::from_utf8_lossy(line).into_owned(),
        };
        let text = std::str::from_utf8(line).map_err(|_| bad("not UTF-8"))?;
        let (body, crc) = text.rsplit_once(" #").ok_or_else(|| bad("no checksum"))?;
        let crc = u32::from_str_radix(crc, 16).map_err(|_| bad("bad checksum field"))?;
        if crc32fast::hash(body.as_bytes()) != crc {
            return Err(bad("checksum mismatch"));
        }
        out.entries
            .push(parse_body(body).ok_or_else(|| bad("bad entry"))?);
    }
    Ok(out)
}

fn parse_body(body: &str) -> Option<Entry> {
    let mut parts = body.split(' ');
    let tag = parts.next()?;
    let trx: u64 = parts.next()?.parse().ok()?;
    match tag {
        "I" => {
            let ops = parts.map(parse_op).collect::<Option<Vec<_>>>()?;
            Some(Entry::Intent { trx, ops })
        }
        "A" if parts.next().is_none() => Some(Entry::Ack { trx }),
        "X" if parts.next().is_none() => Some(Entry::Abort { trx }),
        _ => None,
    }
}

fn parse_op(s: &str) -> Option<JournalOp> {
    let mut f = s.split(':');
    let table = f.next()?.parse().ok()?;
    let id = f.next()?.parse().ok()?;
    let after = match f.next()? {
        "-" => None,
        k => Some(RowValue {
            k: k.parse().ok()?,
            digest: u64::from_str_radix(f.next()?, 16).ok()?,
        }),
    };
    f.next().is_none().then_some(JournalOp { table, id, after })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(k: i32, c: &str) -> Row {
        Row {
            k,
            c: c.into(),
            pad: "p".into(),
        }
    }

    #[test]
    fn digests_are_stable_and_tell_rows_apart() {
        // Pinned: state files and journals of different builds must agree.
        assert_eq!(row_digest(&row(1, "a")), 0xa0db_01e0_d4af_bee7);
        assert_ne!(row_digest(&row(1, "a")), row_digest(&row(2, "a")));
        assert_ne!(row_digest(&row(1, "ab")), row_digest(&row(1, "a")));
        let split = Row {
            k: 1,
            c: "ab".into(),
            pad: String::new(),
        };
        let other = Row {
            k: 1,
            c: "a".into(),
            pad: "b".into(),
        };
        assert_ne!(row_digest(&split), row_digest(&other));
    }

    #[test]
    fn writes_and_parses_every_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        let w = JournalWriter::open(&path).unwrap();
        let ops = vec![
            RowOp::Put {
                table: 3,
                id: 17,
                row: row(-5, "x"),
            },
            RowOp::Delete { table: 4, id: -2 },
        ];
        w.intent(42, &ops).unwrap();
        w.ack(42).unwrap();
        w.abort(43).unwrap();
        drop(w);
        let parsed = parse_journal(&std::fs::read(&path).unwrap()).unwrap();
        assert!(!parsed.partial_tail);
        assert_eq!(
            parsed.entries,
            vec![
                Entry::Intent {
                    trx: 42,
                    ops: ops.iter().map(JournalOp::of).collect()
                },
                Entry::Ack { trx: 42 },
                Entry::Abort { trx: 43 },
            ]
        );
    }

    #[test]
    fn a_torn_tail_is_ignored_and_damage_elsewhere_is_not() {
        let a = encode_line(&Entry::Ack { trx: 1 });
        let b = encode_line(&Entry::Ack { trx: 2 });
        let mut bytes = format!("{a}{b}").into_bytes();
        bytes.truncate(bytes.len() - 3);
        let p = parse_journal(&bytes).unwrap();
        assert_eq!(p.entries, vec![Entry::Ack { trx: 1 }]);
        assert!(p.partial_tail);
        // A complete line with a wrong checksum is damage, not a torn tail.
        let flipped = a.replace("A 1", "A 7");
        let err = parse_journal(format!("{flipped}{b}").as_bytes()).unwrap_err();
        assert_eq!((err.line, err.why), (1, "checksum mismatch"));
        assert!(parse_journal(b"A 1\n").is_err());
    }
}
