//! Redo record bodies.
//!
//! The redo log frames and checksums records; this module only encodes and
//! decodes a record's body. Bodies are compact little-endian binary:
//!
//! ```text
//! Commit:      0x01 trx_id:u64 n_ops:u32 op*
//!   Put:       0x01 table:u32 id:i64 k:i32 c:str pad:str
//!   Delete:    0x02 table:u32 id:i64
//! CreateTable: 0x02 table:u32 name:str            (an sbtest-shaped table)
//!              0x06 table:u32 name:str shape:u8   (any other shape)
//! Prepare:     0x03 trx_id:u64 n_ops:u32 op*     (log_bin=ON: phase one of two)
//! CommitMark:  0x04 trx_id:u64                   (log_bin=ON: phase two, the xid)
//! DropTable:   0x05 table:u32
//! str:         len:u32 utf8-bytes
//! ```
//!
//! With the binary log on, a transaction writes a `Prepare` record (its row
//! changes, laid out exactly like `Commit`) before its binlog event, and a
//! `CommitMark` after it; recovery decides a `Prepare` without a durable
//! binlog event by rolling it back (see `crate::binlog::xa`).
//!
//! Row operations carry after-images, so replaying a record twice leaves the
//! same state as replaying it once.

use crate::data::table::{Row, Shape, TableId};

const TYPE_COMMIT: u8 = 0x01;
const TYPE_CREATE_TABLE: u8 = 0x02;
const TYPE_PREPARE: u8 = 0x03;
const TYPE_COMMIT_MARK: u8 = 0x04;
const TYPE_DROP_TABLE: u8 = 0x05;
const TYPE_CREATE_SHAPED_TABLE: u8 = 0x06;
const OP_PUT: u8 = 0x01;
const OP_DELETE: u8 = 0x02;

/// Smallest encoded operation (a delete), used to bound pre-allocation.
const MIN_OP_LEN: usize = 1 + 4 + 8;

/// One row change of a committed transaction, as an after-image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowOp {
    /// The row now is `row` (insert or update).
    Put { table: TableId, id: i64, row: Row },
    /// The row no longer exists.
    Delete { table: TableId, id: i64 },
}

/// A redo record body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedoRecord {
    /// A committed transaction's row changes.
    Commit { trx_id: u64, ops: Vec<RowOp> },
    /// `CREATE TABLE name` with the id it was given.
    CreateTable {
        table: TableId,
        name: String,
        shape: Shape,
    },
    /// Phase one of a two-phase commit (log_bin=ON): the transaction's row
    /// changes, not yet decided. `trx_id` is the xid in the binary log.
    Prepare { trx_id: u64, ops: Vec<RowOp> },
    /// Phase two: the prepared transaction `trx_id` committed.
    CommitMark { trx_id: u64 },
    /// `DROP TABLE` of the table with this id (see `Catalog::drop_table`).
    DropTable { table: TableId },
}

/// Why a record body could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The body has no bytes at all.
    #[error("empty redo record body")]
    Empty,
    /// The first byte is not a known record type.
    #[error("unknown redo record type {0:#04x}")]
    UnknownType(u8),
    /// An operation of a commit record has an unknown tag.
    #[error("unknown row operation {tag:#04x} (operation {index} of the commit record)")]
    UnknownOp { index: u32, tag: u8 },
    /// The body ends in the middle of a field.
    #[error(
        "redo record truncated: {what} at byte {offset} needs {needed} bytes, {available} left"
    )]
    Truncated {
        what: &'static str,
        offset: usize,
        needed: usize,
        available: usize,
    },
    /// A string field is not valid UTF-8.
    #[error("redo record field {what} at byte {offset} is not valid UTF-8")]
    InvalidUtf8 { what: &'static str, offset: usize },
    /// A table shape code no version of the engine wrote.
    #[error("unknown table shape {0} in a CREATE TABLE record")]
    UnknownShape(u8),
    /// Bytes follow the end of the record.
    #[error("{0} unexpected bytes after the end of the redo record")]
    TrailingBytes(usize),
    /// A known record that carries no row changes where a transaction's
    /// were expected (a binlog event must be one).
    #[error("redo record type {0:#04x} is not a transaction's row changes")]
    NotATransaction(u8),
}

// ---- encoding ----------------------------------------------------------------

/// Appends a `len:u32` + UTF-8 string — shared with checkpoint images.
pub(crate) fn put_str(s: &str, out: &mut Vec<u8>) {
    let len = u32::try_from(s.len()).expect("string field longer than 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Appends a row's fields (`k`, `c`, `pad`) — shared with checkpoint images.
pub(crate) fn put_row(row: &Row, out: &mut Vec<u8>) {
    out.extend_from_slice(&row.k.to_le_bytes());
    put_str(&row.c, out);
    put_str(&row.pad, out);
}

/// Appends the header of a commit record that `n_ops` encoded operations
/// ([`encode_put`], [`encode_delete`]) must follow.
pub fn encode_commit_header(trx_id: u64, n_ops: u32, out: &mut Vec<u8>) {
    out.push(TYPE_COMMIT);
    out.extend_from_slice(&trx_id.to_le_bytes());
    out.extend_from_slice(&n_ops.to_le_bytes());
}

/// Turns a commit body written by [`encode_commit_header`] and the op
/// encoders into the body of the equivalent [`RedoRecord::Prepare`] (the
/// layouts differ only in the type byte).
///
/// # Panics
/// If `body` is not a commit body.
pub fn commit_body_to_prepare(body: &mut [u8]) {
    assert_eq!(body.first(), Some(&TYPE_COMMIT), "not a commit record body");
    body[0] = TYPE_PREPARE;
}

/// Appends the body of a [`RedoRecord::CommitMark`].
pub fn encode_commit_mark(trx_id: u64, out: &mut Vec<u8>) {
    out.push(TYPE_COMMIT_MARK);
    out.extend_from_slice(&trx_id.to_le_bytes());
}

/// Appends a [`RowOp::Put`] without cloning the row.
pub fn encode_put(table: TableId, id: i64, row: &Row, out: &mut Vec<u8>) {
    out.push(OP_PUT);
    out.extend_from_slice(&table.to_le_bytes());
    out.extend_from_slice(&id.to_le_bytes());
    put_row(row, out);
}

/// Appends a [`RowOp::Delete`].
pub fn encode_delete(table: TableId, id: i64, out: &mut Vec<u8>) {
    out.push(OP_DELETE);
    out.extend_from_slice(&table.to_le_bytes());
    out.extend_from_slice(&id.to_le_bytes());
}

/// Appends the body of `rec` to `out`.
pub fn encode(rec: &RedoRecord, out: &mut Vec<u8>) {
    match rec {
        RedoRecord::Commit { trx_id, ops } => {
            let n_ops = u32::try_from(ops.len()).expect("more than 2^32 operations in one commit");
            encode_commit_header(*trx_id, n_ops, out);
            for op in ops {
                match op {
                    RowOp::Put { table, id, row } => encode_put(*table, *id, row, out),
                    RowOp::Delete { table, id } => encode_delete(*table, *id, out),
                }
            }
        }
        RedoRecord::CreateTable { table, name, shape } => {
            // sbtest-shaped tables keep the record older engines wrote.
            let sbtest = *shape == Shape::Sbtest;
            out.push(if sbtest {
                TYPE_CREATE_TABLE
            } else {
                TYPE_CREATE_SHAPED_TABLE
            });
            out.extend_from_slice(&table.to_le_bytes());
            put_str(name, out);
            if !sbtest {
                out.push(shape.code());
            }
        }
        RedoRecord::Prepare { trx_id, ops } => {
            let at = out.len();
            encode(
                &RedoRecord::Commit {
                    trx_id: *trx_id,
                    ops: ops.clone(),
                },
                out,
            );
            commit_body_to_prepare(&mut out[at..]);
        }
        RedoRecord::CommitMark { trx_id } => encode_commit_mark(*trx_id, out),
        RedoRecord::DropTable { table } => {
            out.push(TYPE_DROP_TABLE);
            out.extend_from_slice(&table.to_le_bytes());
        }
    }
}

// ---- decoding ----------------------------------------------------------------

/// A bounds-checked little-endian cursor; shared with checkpoint images.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The offset of the next byte.
    pub(crate) fn offset(&self) -> usize {
        self.pos
    }

    pub(crate) fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], RecordError> {
        if n > self.remaining() {
            return Err(RecordError::Truncated {
                what,
                offset: self.pos,
                needed: n,
                available: self.remaining(),
            });
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], RecordError> {
        let bytes = self.bytes(N, what)?;
        Ok(bytes.try_into().expect("slice has length N"))
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, RecordError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, RecordError> {
        self.array(what).map(u32::from_le_bytes)
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, RecordError> {
        self.array(what).map(i32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, RecordError> {
        self.array(what).map(u64::from_le_bytes)
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, RecordError> {
        self.array(what).map(i64::from_le_bytes)
    }

    /// A `len:u32` + UTF-8 string.
    pub(crate) fn string(&mut self, what: &'static str) -> Result<String, RecordError> {
        let len = self.u32(what)? as usize;
        let offset = self.pos;
        let bytes = self.bytes(len, what)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| RecordError::InvalidUtf8 { what, offset })
    }

    /// A row's fields as written by [`put_row`].
    pub(crate) fn row(&mut self) -> Result<Row, RecordError> {
        Ok(Row {
            k: self.i32("row k")?,
            c: self.string("row c")?,
            pad: self.string("row pad")?,
        })
    }

    /// Fails unless every byte was read.
    pub(crate) fn finish(&self) -> Result<(), RecordError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(RecordError::TrailingBytes(n)),
        }
    }
}

/// Decodes a record body written by [`encode`]. Never panics; any malformed
/// input yields a [`RecordError`].
pub fn decode(body: &[u8]) -> Result<RedoRecord, RecordError> {
    let mut r = Reader::new(body);
    if r.remaining() == 0 {
        return Err(RecordError::Empty);
    }
    let rec = match r.u8("record type")? {
        kind @ (TYPE_COMMIT | TYPE_PREPARE) => {
            let trx_id = r.u64("trx id")?;
            let n_ops = r.u32("operation count")?;
            let capacity = (n_ops as usize).min(r.remaining() / MIN_OP_LEN);
            let mut ops = Vec::with_capacity(capacity);
            for index in 0..n_ops {
                let op = match r.u8("operation tag")? {
                    OP_PUT => RowOp::Put {
                        table: r.u32("table id")?,
                        id: r.i64("row id")?,
                        row: r.row()?,
                    },
                    OP_DELETE => RowOp::Delete {
                        table: r.u32("table id")?,
                        id: r.i64("row id")?,
                    },
                    tag => return Err(RecordError::UnknownOp { index, tag }),
                };
                ops.push(op);
            }
            if kind == TYPE_COMMIT {
                RedoRecord::Commit { trx_id, ops }
            } else {
                RedoRecord::Prepare { trx_id, ops }
            }
        }
        TYPE_COMMIT_MARK => RedoRecord::CommitMark {
            trx_id: r.u64("trx id")?,
        },
        TYPE_CREATE_TABLE => RedoRecord::CreateTable {
            table: r.u32("table id")?,
            name: r.string("table name")?,
            shape: Shape::Sbtest,
        },
        TYPE_CREATE_SHAPED_TABLE => {
            let table = r.u32("table id")?;
            let name = r.string("table name")?;
            let code = r.u8("table shape")?;
            let shape = Shape::from_code(code).ok_or(RecordError::UnknownShape(code))?;
            RedoRecord::CreateTable { table, name, shape }
        }
        TYPE_DROP_TABLE => RedoRecord::DropTable {
            table: r.u32("table id")?,
        },
        other => return Err(RecordError::UnknownType(other)),
    };
    r.finish()?;
    Ok(rec)
}

/// The tables a transaction record's row operations touch, in first-seen
/// order, without decoding the rows: each row's strings are skipped by
/// their lengths (a replica's receiver needs only this per event; the
/// applier decodes the record in full, UTF-8 checks included). A record
/// that is not a transaction's, or is cut short, is an error.
pub fn table_ids(body: &[u8]) -> Result<Vec<u32>, RecordError> {
    let mut r = Reader::new(body);
    if r.remaining() == 0 {
        return Err(RecordError::Empty);
    }
    match r.u8("record type")? {
        TYPE_COMMIT | TYPE_PREPARE => {}
        t @ (TYPE_COMMIT_MARK | TYPE_CREATE_TABLE | TYPE_CREATE_SHAPED_TABLE | TYPE_DROP_TABLE) => {
            return Err(RecordError::NotATransaction(t))
        }
        other => return Err(RecordError::UnknownType(other)),
    }
    r.u64("trx id")?;
    let n_ops = r.u32("operation count")?;
    let mut out: Vec<u32> = Vec::new();
    for index in 0..n_ops {
        let tag = r.u8("operation tag")?;
        let table = r.u32("table id")?;
        r.i64("row id")?;
        match tag {
            OP_PUT => {
                r.i32("row k")?;
                for what in ["row c", "row pad"] {
                    let len = r.u32(what)? as usize;
                    r.bytes(len, what)?;
                }
            }
            OP_DELETE => {}
            tag => return Err(RecordError::UnknownOp { index, tag }),
        }
        if !out.contains(&table) {
            out.push(table);
        }
    }
    r.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row_strategy() -> impl Strategy<Value = Row> {
        (any::<i32>(), "\\PC{0,20}", ".{0,8}").prop_map(|(k, c, pad)| Row { k, c, pad })
    }

    fn op_strategy() -> impl Strategy<Value = RowOp> {
        prop_oneof![
            (any::<u32>(), any::<i64>(), row_strategy()).prop_map(|(table, id, row)| RowOp::Put {
                table,
                id,
                row
            }),
            (any::<u32>(), any::<i64>()).prop_map(|(table, id)| RowOp::Delete { table, id }),
        ]
    }

    fn record_strategy() -> impl Strategy<Value = RedoRecord> {
        prop_oneof![
            (any::<u64>(), prop::collection::vec(op_strategy(), 0..8))
                .prop_map(|(trx_id, ops)| RedoRecord::Commit { trx_id, ops }),
            (
                any::<u32>(),
                "\\PC{0,16}",
                prop_oneof![Just(Shape::Sbtest), Just(Shape::IdK)]
            )
                .prop_map(|(table, name, shape)| RedoRecord::CreateTable {
                    table,
                    name,
                    shape
                }),
            (any::<u64>(), prop::collection::vec(op_strategy(), 0..8))
                .prop_map(|(trx_id, ops)| RedoRecord::Prepare { trx_id, ops }),
            any::<u64>().prop_map(|trx_id| RedoRecord::CommitMark { trx_id }),
            any::<u32>().prop_map(|table| RedoRecord::DropTable { table }),
        ]
    }

    proptest! {
        #[test]
        fn roundtrip(rec in record_strategy()) {
            let mut buf = Vec::new();
            encode(&rec, &mut buf);
            prop_assert_eq!(decode(&buf), Ok(rec));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode(&bytes);
            let _ = table_ids(&bytes);
        }

        /// The walker finds the tables a full decode finds, in first-seen
        /// order, and refuses what decode refuses for its structure.
        #[test]
        fn table_ids_agree_with_decode(
            rec in record_strategy(),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut buf = Vec::new();
            encode(&rec, &mut buf);
            match &rec {
                RedoRecord::Commit { ops, .. } | RedoRecord::Prepare { ops, .. } => {
                    let mut want: Vec<u32> = Vec::new();
                    for op in ops {
                        let t = match op {
                            RowOp::Put { table, .. } | RowOp::Delete { table, .. } => *table,
                        };
                        if !want.contains(&t) {
                            want.push(t);
                        }
                    }
                    prop_assert_eq!(table_ids(&buf), Ok(want));
                    let short = &buf[..cut.index(buf.len())];
                    prop_assert!(table_ids(short).is_err());
                }
                _ => prop_assert!(table_ids(&buf).is_err()),
            }
        }

        #[test]
        fn mutated_records_never_panic(
            rec in record_strategy(),
            flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut buf = Vec::new();
            encode(&rec, &mut buf);
            for (at, value) in flips {
                let i = at.index(buf.len());
                buf[i] = value;
            }
            let _ = decode(&buf);
            let _ = decode(&buf[..cut.index(buf.len() + 1)]);
        }

        #[test]
        fn every_proper_prefix_is_rejected(rec in record_strategy()) {
            let mut buf = Vec::new();
            encode(&rec, &mut buf);
            for len in 0..buf.len() {
                prop_assert!(decode(&buf[..len]).is_err());
            }
        }
    }

    #[test]
    fn errors_are_specific() {
        assert_eq!(decode(&[]), Err(RecordError::Empty));
        assert_eq!(decode(&[0x7f]), Err(RecordError::UnknownType(0x7f)));
        let mut buf = Vec::new();
        encode_commit_header(7, 1, &mut buf);
        buf.push(0x09);
        assert_eq!(
            decode(&buf),
            Err(RecordError::UnknownOp {
                index: 0,
                tag: 0x09
            })
        );
        let mut buf = Vec::new();
        encode(
            &RedoRecord::CreateTable {
                table: 1,
                name: "ab".into(),
                shape: Shape::Sbtest,
            },
            &mut buf,
        );
        let last = buf.len() - 1;
        buf[last] = 0xff;
        assert!(matches!(decode(&buf), Err(RecordError::InvalidUtf8 { .. })));
        buf[last] = b'b';
        buf.push(0);
        assert_eq!(decode(&buf), Err(RecordError::TrailingBytes(1)));
        // A huge operation count must not allocate or panic.
        let mut buf = Vec::new();
        encode_commit_header(1, u32::MAX, &mut buf);
        assert!(matches!(decode(&buf), Err(RecordError::Truncated { .. })));
    }

    #[test]
    fn create_table_keeps_the_old_record_for_sbtest_tables() {
        let enc = |shape| {
            let mut buf = Vec::new();
            let name = "t".to_string();
            encode(
                &RedoRecord::CreateTable {
                    table: 3,
                    name,
                    shape,
                },
                &mut buf,
            );
            buf
        };
        let old = enc(Shape::Sbtest);
        assert_eq!(old, [0x02, 3, 0, 0, 0, 1, 0, 0, 0, b't']);
        let mut narrow = enc(Shape::IdK);
        assert_eq!(narrow[0], 0x06);
        assert_eq!(narrow[1..old.len()], old[1..]);
        assert_eq!(narrow[old.len()..], [1]);
        *narrow.last_mut().unwrap() = 9;
        assert_eq!(decode(&narrow), Err(RecordError::UnknownShape(9)));
    }

    #[test]
    fn prepare_is_a_commit_body_with_another_type() {
        let ops = vec![RowOp::Delete { table: 3, id: 9 }];
        let mut body = Vec::new();
        encode(
            &RedoRecord::Commit {
                trx_id: 5,
                ops: ops.clone(),
            },
            &mut body,
        );
        commit_body_to_prepare(&mut body);
        assert_eq!(decode(&body), Ok(RedoRecord::Prepare { trx_id: 5, ops }));
        let mut mark = Vec::new();
        encode_commit_mark(5, &mut mark);
        assert_eq!(mark.len(), 9);
        assert_eq!(decode(&mark), Ok(RedoRecord::CommitMark { trx_id: 5 }));
    }

    #[test]
    fn put_is_compact() {
        let row = Row {
            k: 1,
            c: "c".repeat(119),
            pad: "p".repeat(59),
        };
        let mut buf = Vec::new();
        encode_put(1, 2, &row, &mut buf);
        assert_eq!(buf.len(), 1 + 4 + 8 + 4 + 4 + 119 + 4 + 59);
    }
}
