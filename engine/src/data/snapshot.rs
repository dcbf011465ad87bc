//! A catalog's committed rows as of one instant per table, held by
//! reference, and their checkpoint image written from it in chunks.
//!
//! Taking a snapshot holds each table's read lock only while one reference
//! count per row is taken (row versions are immutable once committed, see
//! `crate::data::table`); serialising it afterwards holds no lock at all, so
//! a base image can be written in the background while commits go on. The
//! image's format is `Catalog::write_image`'s (module docs of
//! `crate::data::catalog`): tables in id order, rows in id order, a crc32
//! trailer over every byte before it.

use std::sync::Arc;

use crate::data::catalog::{Catalog, IMAGE_MAGIC, IMAGE_VERSION};
use crate::data::record;
use crate::data::table::{Row, Shape, TableId};

/// One table's committed rows.
struct TableSnapshot {
    id: TableId,
    name: String,
    shape: Shape,
    rows: Vec<(i64, Arc<Row>)>,
}

/// Every table's committed rows, each table taken under one hold of its
/// read lock (see [`Catalog::snapshot`]).
pub struct Snapshot {
    tables: Vec<TableSnapshot>,
}

impl Catalog {
    /// Takes every table's committed rows by reference, one table at a
    /// time. Like an image, the snapshot is fuzzy across tables: a commit
    /// touching two tables may show in one and not yet in the other, which
    /// the redo replay from the checkpoint's lsn makes exact.
    pub fn snapshot(&self) -> Snapshot {
        let tables = self
            .tables()
            .iter()
            .map(|t| TableSnapshot {
                id: t.id(),
                name: t.name().to_owned(),
                shape: t.shape(),
                // A paged table's rows are on its pages, not in images.
                rows: if t.is_paged() {
                    Vec::new()
                } else {
                    t.committed_snapshot()
                },
            })
            .collect();
        Snapshot { tables }
    }
}

impl Snapshot {
    /// Committed rows held, over every table.
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows.len() as u64).sum()
    }

    /// Serialises the checkpoint image, handing it to `emit` in pieces of
    /// about `chunk` bytes (the last piece ends with the crc32 trailer).
    /// Stops at `emit`'s first error and returns it.
    pub fn write_image<E>(
        &self,
        chunk: usize,
        mut emit: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut crc = crc32fast::Hasher::new();
        let mut buf = Vec::with_capacity(chunk.min(1 << 20) + 512);
        let mut flush = |buf: &mut Vec<u8>, crc: &mut crc32fast::Hasher| {
            crc.update(buf);
            let r = emit(buf);
            buf.clear();
            r
        };
        buf.extend_from_slice(IMAGE_MAGIC);
        buf.extend_from_slice(&IMAGE_VERSION.to_le_bytes());
        let n_tables = u32::try_from(self.tables.len()).expect("table ids are u32");
        buf.extend_from_slice(&n_tables.to_le_bytes());
        for t in &self.tables {
            buf.extend_from_slice(&t.id.to_le_bytes());
            record::put_str(&t.name, &mut buf);
            buf.push(t.shape.code());
            buf.extend_from_slice(&(t.rows.len() as u64).to_le_bytes());
            for (id, row) in &t.rows {
                buf.extend_from_slice(&id.to_le_bytes());
                record::put_row(row, &mut buf);
                if buf.len() >= chunk {
                    flush(&mut buf, &mut crc)?;
                }
            }
        }
        if !buf.is_empty() {
            flush(&mut buf, &mut crc)?;
        }
        emit(&crc.finalize().to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::table::Row;

    fn row(k: i32) -> Row {
        Row {
            k,
            c: format!("c{k}"),
            pad: "p".into(),
        }
    }

    fn image_in_chunks(snap: &Snapshot, chunk: usize) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        let mut pieces = 0;
        snap.write_image(chunk, |b| {
            pieces += 1;
            out.extend_from_slice(b);
            Ok::<(), ()>(())
        })
        .unwrap();
        (out, pieces)
    }

    #[test]
    fn the_image_in_chunks_is_the_image_and_reads_back() {
        let cat = Catalog::new();
        let a = cat.create_table("a").unwrap();
        cat.create_shaped_table("b", Shape::IdK).unwrap();
        cat.bulk_insert(a, (0..500).map(|i| (i, row(i as i32))))
            .unwrap();
        cat.drop_table("b").unwrap();
        let snap = cat.snapshot();
        assert_eq!(snap.rows(), 500);
        let (whole, _) = image_in_chunks(&snap, usize::MAX);
        let (small, pieces) = image_in_chunks(&snap, 64);
        assert!(pieces > 100, "{pieces} pieces");
        assert_eq!(small, whole);
        let mut direct = Vec::new();
        cat.write_image(&mut direct);
        assert_eq!(whole, direct);
        assert_eq!(Catalog::read_image(&whole).unwrap().dump(), cat.dump());
    }

    #[test]
    fn the_snapshot_keeps_the_versions_it_took() {
        let cat = Catalog::new();
        let a = cat.create_table("a").unwrap();
        cat.bulk_insert(a, (0..10).map(|i| (i, row(1)))).unwrap();
        let before = cat.dump();
        let snap = cat.snapshot();
        cat.bulk_insert(a, (5..20).map(|i| (i, row(2)))).unwrap();
        cat.table(a).unwrap().remove_committed(0);
        let (img, _) = image_in_chunks(&snap, 100);
        assert_eq!(Catalog::read_image(&img).unwrap().dump(), before);
    }

    #[test]
    fn an_error_stops_the_image_at_once() {
        let cat = Catalog::new();
        let a = cat.create_table("a").unwrap();
        cat.bulk_insert(a, (0..1000).map(|i| (i, row(1)))).unwrap();
        let mut calls = 0;
        let r = cat.snapshot().write_image(100, |_| {
            calls += 1;
            if calls == 3 {
                Err("disk full")
            } else {
                Ok(())
            }
        });
        assert_eq!((r, calls), (Err("disk full"), 3));
    }
}
