//! The acknowledgement log of the crash test.
//!
//! After every acknowledged commit of an `insert` transaction, the user thread
//! appends `<table_id> <id>\n` to a file opened with `O_APPEND`, in one
//! `write(2)` and without userspace buffering: a line present in the file
//! means the engine had acknowledged that commit before the line was written,
//! so after a crash the recovered table must contain the row. A `SIGKILL`
//! cannot leave a torn line in the middle of the file, but a reader ignores a
//! trailing line without its newline all the same.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use redoctor_engine::TableId;

/// Appends acknowledgement lines to the file (shared by all user threads).
#[derive(Debug)]
pub struct AckWriter {
    file: File,
}

impl AckWriter {
    /// Opens (creating if needed) `path` for appending.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AckWriter { file })
    }

    /// Appends `<table> <id>\n` with a single `write(2)`.
    pub fn append(&self, table: TableId, id: i64) -> io::Result<()> {
        let mut buf = [0u8; 40];
        let len = {
            let mut cursor = &mut buf[..];
            writeln!(cursor, "{table} {id}")?;
            40 - cursor.len()
        };
        write_line(&self.file, &buf[..len])
    }
}

/// Appends `line` to `file` with a single `write(2)`; a short write is an
/// error (the line would be torn in the middle of the file).
pub(crate) fn write_line(mut file: &File, line: &[u8]) -> io::Result<()> {
    let written = file.write(line)?;
    if written != line.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!(
                "short write to the acknowledgement file: {written} of {} bytes",
                line.len()
            ),
        ));
    }
    Ok(())
}

/// The complete lines of an acknowledgement file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedAcks {
    /// `(table_id, id)` in file order (duplicates kept).
    pub acks: Vec<(TableId, i64)>,
    /// The file ended in a line without its newline, which was ignored.
    pub partial_tail: bool,
}

/// A complete line that is not `<table_id> <id>`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("line {line}: expected `<table_id> <id>`, found {text:?}")]
pub struct AckParseError {
    pub line: usize,
    pub text: String,
}

/// Parses acknowledgement lines, ignoring a trailing partial line.
pub fn parse_acks(bytes: &[u8]) -> Result<ParsedAcks, AckParseError> {
    let mut out = ParsedAcks::default();
    let mut lines = bytes.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if lines.peek().is_none() {
            // Text after the last newline (empty when the file ends in one).
            out.partial_tail = !line.is_empty();
            break;
        }
        let bad = || AckParseError {
            line: n + 1,
            text: String::from_utf8_lossy(line).into_owned(),
        };
        let text = std::str::from_utf8(line).map_err(|_| bad())?;
        let mut parts = text.split(' ');
        let (Some(t), Some(id), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        out.acks.push((
            t.parse().map_err(|_| bad())?,
            id.parse().map_err(|_| bad())?,
        ));
    }
    Ok(out)
}

/// What [`check_acks`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckCheck {
    /// Acknowledgement lines checked (duplicates included).
    pub lines: usize,
    /// Distinct `(table, id)` pairs.
    pub distinct: usize,
    /// Distinct pairs found in the recovered tables.
    pub present: usize,
    /// Distinct pairs not found, in `(table, id)` order.
    pub missing: Vec<(TableId, i64)>,
}

impl AckCheck {
    pub fn ok(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Checks that every acknowledged `(table_id, id)` is present.
///
/// `table_names` maps table ids to names, `ids_by_table` holds the recovered
/// ids by table name (e.g. from [`redoctor_engine::Engine::dump`]). An ack naming an
/// unknown table counts as missing.
pub fn check_acks(
    acks: &[(TableId, i64)],
    table_names: &HashMap<TableId, String>,
    ids_by_table: &BTreeMap<String, BTreeSet<i64>>,
) -> AckCheck {
    let distinct: BTreeSet<(TableId, i64)> = acks.iter().copied().collect();
    let missing: Vec<(TableId, i64)> = distinct
        .iter()
        .copied()
        .filter(|(t, id)| {
            !table_names
                .get(t)
                .and_then(|name| ids_by_table.get(name))
                .is_some_and(|ids| ids.contains(id))
        })
        .collect();
    AckCheck {
        lines: acks.len(),
        distinct: distinct.len(),
        present: distinct.len() - missing.len(),
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_parses_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acks");
        let w = AckWriter::open(&path).unwrap();
        w.append(3, 1001).unwrap();
        w.append(4, i64::MAX).unwrap();
        drop(w);
        AckWriter::open(&path).unwrap().append(1, -5).unwrap();
        let parsed = parse_acks(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(parsed.acks, vec![(3, 1001), (4, i64::MAX), (1, -5)]);
        assert!(!parsed.partial_tail);
    }

    #[test]
    fn ignores_a_partial_tail_only() {
        let p = parse_acks(b"1 2\n1 3\n2 1").unwrap();
        assert_eq!(p.acks, vec![(1, 2), (1, 3)]);
        assert!(p.partial_tail);
        assert_eq!(parse_acks(b"").unwrap(), ParsedAcks::default());
        let err = parse_acks(b"1 2\nx y\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(parse_acks(b"1 2 3\n").is_err());
        assert!(parse_acks(b"1\n").is_err());
    }

    #[test]
    fn finds_missing_rows() {
        let names: HashMap<TableId, String> =
            [(1, "sbtest1".to_string()), (2, "sbtest2".to_string())].into();
        let ids: BTreeMap<String, BTreeSet<i64>> = [
            ("sbtest1".to_string(), [1, 2, 3].into()),
            ("sbtest2".to_string(), [7].into()),
        ]
        .into();
        let c = check_acks(&[(1, 2), (1, 2), (2, 7), (2, 8), (9, 1)], &names, &ids);
        assert_eq!(c.lines, 5);
        assert_eq!(c.distinct, 4);
        assert_eq!(c.present, 2);
        assert_eq!(c.missing, vec![(2, 8), (9, 1)]);
        assert!(!c.ok());
    }
}
