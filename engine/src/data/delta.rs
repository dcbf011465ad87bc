//! Checkpoint deltas: the committed rows that changed since the last
//! checkpoint, so a checkpoint costs what the load changed, not the size of
//! the database (see `crate::checkpoint` for the chain of files).
//!
//! # Delta format
//!
//! ```text
//! magic "RDXDELTA" | version:u32 | n_tables:u32 | table* | crc32:u32
//! table: id:u32 name:str shape:u8 whole:u8 n:u64 entry*   (tables in id order)
//! entry: id:i64 present:u8 [k:i32 c:str pad:str]   (ids ascending)
//! ```
//!
//! Every table of the catalog is listed, so a delta carries the names of
//! tables created since the last checkpoint. `whole = 1` means the entries
//! are all of the table's rows and replace it (a table created, or dropped
//! and turned into a tombstone, since the last checkpoint); otherwise each
//! entry is a row's committed version (`present = 1`) or its removal.
//! `shape` is the table's `Shape::code`; version 1 deltas, written before
//! tables had shapes, have no `shape` byte and only sbtest-shaped tables.
//! Integers are little-endian; the CRC-32 trailer covers every byte before it.

use crate::data::catalog::{checked_body, corrupt, read_shape, Catalog, DataError};
use crate::data::record;
use std::collections::BTreeMap;

use crate::data::table::{Dirty, Row, Shape, TableId};

const DELTA_MAGIC: &[u8; 8] = b"RDXDELTA";
const DELTA_VERSION: u32 = 2;
/// The delta version before tables had a shape byte.
const DELTA_VERSION_SBTEST_ONLY: u32 = 1;

/// What a delta holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeltaStats {
    pub tables: u32,
    /// Tables written whole (new or dropped since the last checkpoint).
    pub whole_tables: u32,
    /// Rows written (whole tables' rows included).
    pub rows: u64,
    /// Rows removed.
    pub removed: u64,
}

impl Catalog {
    /// Forgets every table's changes: a full image is about to be copied
    /// (call before copying it, so changes made meanwhile are marked again).
    pub fn take_all_dirty(&self) {
        for t in self.tables() {
            t.take_dirty();
        }
    }

    /// Marks every table clean: its contents came from the checkpoint
    /// chain (recovery, before the log is replayed over it).
    pub fn mark_clean(&self) {
        for t in self.tables() {
            t.mark_clean();
        }
    }

    /// Appends a delta of what changed since the last checkpoint took the
    /// changes, and starts new change sets. Each change set holds the rows'
    /// committed versions as of when it was taken (immutable, shared with
    /// the table), so they are serialised without any table lock: looking
    /// them up under each table's read lock stopped most tpcc transactions
    /// for 300-400 ms per checkpoint (engine/bench/RESULTS.md).
    pub fn write_delta(&self, out: &mut Vec<u8>) -> DeltaStats {
        self.write_delta_of(out, |_, dirty| dirty)
    }

    /// [`write_delta`](Self::write_delta), also adding what it takes to
    /// `carried`: the changes a base being written in the background from
    /// an older snapshot lacks.
    pub fn write_delta_recording(&self, out: &mut Vec<u8>, carried: &mut Carried) -> DeltaStats {
        self.write_delta_of(out, |id, dirty| {
            carried.add(id, &dirty);
            dirty
        })
    }

    /// A delta of what changed since the last checkpoint *and* of every
    /// change in `carried`: the first delta on a base written from a
    /// snapshot, which holds every change made since that snapshot's deltas.
    pub fn write_delta_with_carried(&self, out: &mut Vec<u8>, mut carried: Carried) -> DeltaStats {
        self.write_delta_of(out, |id, dirty| carried.merge_into(id, dirty))
    }

    /// Writes a delta of each table's taken changes as `pick` maps them.
    fn write_delta_of(
        &self,
        out: &mut Vec<u8>,
        mut pick: impl FnMut(TableId, Dirty) -> Dirty,
    ) -> DeltaStats {
        let start = out.len();
        let tables = self.tables();
        let mut stats = DeltaStats {
            tables: u32::try_from(tables.len()).expect("table ids are u32"),
            ..DeltaStats::default()
        };
        out.extend_from_slice(DELTA_MAGIC);
        out.extend_from_slice(&DELTA_VERSION.to_le_bytes());
        out.extend_from_slice(&stats.tables.to_le_bytes());
        for table in &tables {
            out.extend_from_slice(&table.id().to_le_bytes());
            record::put_str(table.name(), out);
            out.push(table.shape().code());
            let dirty = pick(table.id(), table.take_dirty());
            out.push(u8::from(matches!(dirty, Dirty::All)));
            let count_at = out.len();
            out.extend_from_slice(&0u64.to_le_bytes());
            let mut n = 0u64;
            let mut put = |id: i64, row: Option<&Row>| {
                n += 1;
                out.extend_from_slice(&id.to_le_bytes());
                match row {
                    Some(row) => {
                        out.push(1);
                        record::put_row(row, out);
                        stats.rows += 1;
                    }
                    None => {
                        out.push(0);
                        stats.removed += 1;
                    }
                }
            };
            match dirty {
                Dirty::All => {
                    stats.whole_tables += 1;
                    // A paged table's rows are on its pages: its section
                    // only says the table exists (applied, the table is
                    // rebuilt from its pages).
                    if !table.is_paged() {
                        // One hold for references, serialised without the lock.
                        for (id, row) in table.committed_snapshot() {
                            put(id, Some(&row));
                        }
                    }
                }
                Dirty::Rows(rows) => {
                    for (id, row) in &rows {
                        put(*id, row.as_deref());
                    }
                }
            }
            out[count_at..count_at + 8].copy_from_slice(&n.to_le_bytes());
        }
        let crc = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        stats
    }

    /// Applies a delta written by [`write_delta`](Self::write_delta) on top
    /// of this catalog (an image, and the deltas before this one).
    pub fn apply_delta(&self, delta: &[u8]) -> Result<DeltaStats, DataError> {
        self.apply_parsed(parse(delta)?)
    }

    /// Applies a delta [`parse`]d before. An error here (a table the
    /// checkpoint it applies to does not have) means the delta belongs to
    /// another chain; the catalog may then be partly changed.
    pub fn apply_parsed(&self, delta: ParsedDelta) -> Result<DeltaStats, DataError> {
        let tables = delta.0;
        let mut stats = DeltaStats {
            tables: tables.len() as u32,
            ..DeltaStats::default()
        };
        for t in tables {
            let table = if t.whole {
                stats.whole_tables += 1;
                self.replace_table(t.id, &t.name, t.shape)
                    .map_err(|e| corrupt(format!("table section {:?}: {e}", t.name)))?
            } else {
                match self.table(t.id) {
                    Some(table) if table.name() == t.name && table.shape() == t.shape => table,
                    Some(table) => {
                        return Err(corrupt(format!(
                            "table {} is {:?} ({:?}) in the delta but {:?} ({:?}) in the \
                             checkpoint it applies to",
                            t.id,
                            t.name,
                            t.shape,
                            table.name(),
                            table.shape()
                        )))
                    }
                    None => {
                        return Err(corrupt(format!(
                            "table {} ({:?}) changes rows but the checkpoint it applies \
                             to has no such table",
                            t.id, t.name
                        )))
                    }
                }
            };
            let mut puts = Vec::new();
            for (id, row) in t.entries {
                match row {
                    Some(row) => puts.push((id, row)),
                    None => {
                        stats.removed += 1;
                        table.remove_committed(id);
                    }
                }
            }
            stats.rows += puts.len() as u64;
            table.upsert_committed(puts);
        }
        Ok(stats)
    }
}

/// The changes the deltas took since a snapshot was taken for a base
/// written in the background, per table (see `crate::checkpoint`).
#[derive(Debug, Default)]
pub struct Carried(BTreeMap<TableId, Dirty>);

impl Carried {
    fn add(&mut self, id: TableId, dirty: &Dirty) {
        let merged = self.merge_into(id, dirty.clone());
        self.0.insert(id, merged);
    }

    /// `dirty` with what was carried for table `id`.
    fn merge_into(&mut self, id: TableId, dirty: Dirty) -> Dirty {
        match self.0.remove(&id) {
            None => dirty,
            Some(old) => union(old, dirty),
        }
    }

    /// Rows carried over every table (a whole table counts as one).
    pub fn len(&self) -> usize {
        self.0
            .values()
            .map(|d| match d {
                Dirty::All => 1,
                Dirty::Rows(rows) => rows.len(),
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Both change sets, `b` taken after `a`: a whole table absorbs any rows;
/// a row in both keeps `b`'s (newer) version; ids stay ascending.
/// (Off the commit path: the checkpoint thread, once per delta.)
fn union(a: Dirty, b: Dirty) -> Dirty {
    match (a, b) {
        (Dirty::All, _) | (_, Dirty::All) => Dirty::All,
        (Dirty::Rows(a), Dirty::Rows(b)) => {
            // A linear merge of two ascending lists: the carried set grows
            // to every row changed while a base is written (millions under
            // the insert load), and each delta merges into it.
            let mut rows = Vec::with_capacity(a.len() + b.len());
            let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
            loop {
                let next = match (a.peek(), b.peek()) {
                    (None, None) => break,
                    (Some(_), None) => a.next(),
                    (None, Some(_)) => b.next(),
                    (Some(x), Some(y)) if x.0 < y.0 => a.next(),
                    (Some(x), Some(y)) if x.0 > y.0 => b.next(),
                    (Some(_), Some(_)) => {
                        a.next();
                        b.next()
                    }
                };
                rows.extend(next);
            }
            Dirty::Rows(rows)
        }
    }
}

/// A delta whose format and checksum were checked (see [`parse`]).
pub struct ParsedDelta(Vec<TableDelta>);

struct TableDelta {
    id: u32,
    name: String,
    shape: Shape,
    whole: bool,
    entries: Vec<(i64, Option<Row>)>,
}

/// Checks a delta's format and checksum and decodes it, changing nothing:
/// a damaged or truncated delta is [`DataError::CorruptImage`].
pub fn parse(delta: &[u8]) -> Result<ParsedDelta, DataError> {
    let (version, mut r) = checked_body(
        delta,
        DELTA_MAGIC,
        DELTA_VERSION_SBTEST_ONLY..=DELTA_VERSION,
        "delta",
    )?;
    let n_tables = r.u32("table count")?;
    let mut out = Vec::new();
    let mut last_table = 0;
    for _ in 0..n_tables {
        let offset = r.offset();
        let id = r.u32("table id")?;
        if id <= last_table {
            return Err(corrupt(format!(
                "table ids out of order at byte {offset} ({id} after {last_table})"
            )));
        }
        last_table = id;
        let name = r.string("table name")?;
        let shape = match version {
            DELTA_VERSION_SBTEST_ONLY => Shape::Sbtest,
            _ => read_shape(&mut r, &name)?,
        };
        let whole = match r.u8("whole-table flag")? {
            0 => false,
            1 => true,
            other => return Err(corrupt(format!("table {name:?}: whole-table flag {other}"))),
        };
        let n = r.u64("entry count")?;
        let mut entries = Vec::with_capacity(n.min(r.remaining() as u64 / 9) as usize);
        let mut last_id = None;
        for _ in 0..n {
            let offset = r.offset();
            let row_id = r.i64("row id")?;
            if last_id.is_some_and(|last| row_id <= last) {
                return Err(corrupt(format!(
                    "table {name:?}: row ids out of order at byte {offset}"
                )));
            }
            last_id = Some(row_id);
            let row = match r.u8("row presence")? {
                0 if !whole => None,
                1 => Some(r.row()?),
                other => {
                    return Err(corrupt(format!(
                        "table {name:?}: row {row_id} has presence byte {other}"
                    )))
                }
            };
            entries.push((row_id, row));
        }
        out.push(TableDelta {
            id,
            name,
            shape,
            whole,
            entries,
        });
    }
    r.finish()
        .map_err(|e| corrupt(format!("after the last table: {e}")))?;
    Ok(ParsedDelta(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Create(u8),
        Drop(u8),
        /// Insert or update row `id` of table `t` through a transaction.
        Commit {
            t: u8,
            id: i64,
            k: i32,
        },
        /// A pending change that is rolled back (changes nothing).
        Rollback {
            t: u8,
            id: i64,
        },
        Delete {
            t: u8,
            id: i64,
        },
        /// Bulk load (bypasses transactions, as `sysbench prepare` does).
        Bulk {
            t: u8,
            id: i64,
            k: i32,
        },
        Checkpoint {
            base: bool,
        },
        /// A delta, then a snapshot for a base written aside (as the
        /// background checkpoints of `crate::base_writer` do).
        Aside,
        /// The base written aside published with a delta of every change
        /// since its snapshot.
        Publish,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => (0..3u8).prop_map(Op::Create),
            1 => (0..3u8).prop_map(Op::Drop),
            8 => (0..3u8, 0..30i64, any::<i32>()).prop_map(|(t, id, k)| Op::Commit { t, id, k }),
            2 => (0..3u8, 0..30i64).prop_map(|(t, id)| Op::Rollback { t, id }),
            3 => (0..3u8, 0..30i64).prop_map(|(t, id)| Op::Delete { t, id }),
            2 => (0..3u8, 0..30i64, any::<i32>()).prop_map(|(t, id, k)| Op::Bulk { t, id, k }),
            3 => any::<bool>().prop_map(|base| Op::Checkpoint { base }),
            1 => Just(Op::Aside),
            1 => Just(Op::Publish),
        ]
    }

    fn row(k: i32) -> Row {
        Row {
            k,
            c: format!("c{k}"),
            pad: "p".into(),
        }
    }

    /// A table's id, name, shape and committed rows.
    type TableState = (u32, String, Shape, Vec<(i64, Row)>);

    /// Every table with its id, name and shape, tombstones included.
    fn tables(cat: &Catalog) -> Vec<TableState> {
        cat.tables()
            .iter()
            .map(|t| {
                let rows = t.committed_rows();
                (t.id(), t.name().to_owned(), t.shape(), rows)
            })
            .collect()
    }

    /// A base image and its deltas, as the checkpoint files hold them; and
    /// a base being written aside, from a snapshot, with the changes the
    /// deltas took since.
    struct Chain {
        base: Vec<u8>,
        deltas: Vec<Vec<u8>>,
        aside: Option<(crate::data::snapshot::Snapshot, Carried)>,
    }

    impl Chain {
        fn take(cat: &Catalog, base: bool, chain: &mut Option<Chain>) {
            match chain {
                Some(c) if c.aside.is_some() && base => Chain::publish(cat, c),
                Some(c) if !base => {
                    let mut d = Vec::new();
                    match &mut c.aside {
                        Some((_, carried)) => cat.write_delta_recording(&mut d, carried),
                        None => cat.write_delta(&mut d),
                    };
                    c.deltas.push(d);
                }
                _ => {
                    cat.take_all_dirty();
                    let mut b = Vec::new();
                    cat.write_image(&mut b);
                    *chain = Some(Chain {
                        base: b,
                        deltas: Vec::new(),
                        aside: None,
                    });
                }
            }
        }

        fn aside(cat: &Catalog, chain: &mut Option<Chain>) {
            match chain {
                Some(c) if c.aside.is_none() => {
                    Chain::take(cat, false, chain);
                    let c = chain.as_mut().expect("a chain");
                    c.aside = Some((cat.snapshot(), Carried::default()));
                }
                _ => Chain::take(cat, false, chain),
            }
        }

        fn publish(cat: &Catalog, c: &mut Chain) {
            let (snapshot, carried) = c.aside.take().expect("a base aside");
            let mut base = Vec::new();
            snapshot
                .write_image(1 << 10, |b| {
                    base.extend_from_slice(b);
                    Ok::<(), ()>(())
                })
                .unwrap();
            let mut d = Vec::new();
            cat.write_delta_with_carried(&mut d, carried);
            *c = Chain {
                base,
                deltas: vec![d],
                aside: None,
            };
            assert_eq!(tables(&c.load()), tables(cat), "the published base");
        }

        fn load(&self) -> Catalog {
            let cat = Catalog::read_image(&self.base).unwrap();
            cat.mark_clean();
            for d in &self.deltas {
                cat.apply_delta(d).unwrap();
            }
            cat
        }
    }

    fn run(cat: &Catalog, ops: &[Op], chain: &mut Option<Chain>) {
        let mut trx = 1;
        for op in ops {
            let table = |t: u8| cat.table_id(&format!("t{t}")).and_then(|id| cat.table(id));
            match op.clone() {
                Op::Create(t) => {
                    // Table t2 is (id, k): shapes must survive the chain too.
                    let shape = if t == 2 { Shape::IdK } else { Shape::Sbtest };
                    let _ = cat.create_shaped_table(&format!("t{t}"), shape);
                }
                Op::Drop(t) => {
                    let _ = cat.drop_table(&format!("t{t}"));
                }
                Op::Commit { t, id, k } => {
                    if let Some(tb) = table(t) {
                        trx += 1;
                        if tb.update_k(trx, id, k) == crate::data::table::WriteResult::NotFound {
                            tb.insert(trx, id, row(k));
                        }
                        tb.commit_rows(trx, [id], 0);
                    }
                }
                Op::Rollback { t, id } => {
                    if let Some(tb) = table(t) {
                        trx += 1;
                        tb.update_k(trx, id, 1);
                        tb.rollback_rows(trx, [id]);
                    }
                }
                Op::Delete { t, id } => {
                    if let Some(tb) = table(t) {
                        trx += 1;
                        tb.delete(trx, id);
                        tb.commit_rows(trx, [id], 0);
                    }
                }
                Op::Bulk { t, id, k } => {
                    if let Some(tb) = table(t) {
                        tb.upsert_committed([(id, row(k))]);
                    }
                }
                Op::Checkpoint { base } => Chain::take(cat, base, chain),
                Op::Aside => Chain::aside(cat, chain),
                Op::Publish => match chain {
                    Some(c) if c.aside.is_some() => Chain::publish(cat, c),
                    _ => Chain::take(cat, false, chain),
                },
            }
        }
    }

    proptest! {
        /// Model-based: at every checkpoint, the base plus its deltas give
        /// back exactly the tables (ids, names, tombstones, rows) the live
        /// catalog had; also after a restart that continues the chain.
        #[test]
        fn base_plus_deltas_is_the_catalog(
            before in prop::collection::vec(op(), 0..60),
            after in prop::collection::vec(op(), 0..60),
        ) {
            let cat = Catalog::new();
            let mut chain = None;
            run(&cat, &before, &mut chain);
            Chain::take(&cat, false, &mut chain);
            let chain_now = chain.as_ref().unwrap();
            let loaded = chain_now.load();
            prop_assert_eq!(tables(&loaded), tables(&cat));
            // A restart: the loaded catalog goes on, and its deltas extend
            // the same chain; a base being written aside is lost.
            chain.as_mut().unwrap().aside = None;
            run(&loaded, &after, &mut chain);
            Chain::take(&loaded, false, &mut chain);
            prop_assert_eq!(tables(&chain.as_ref().unwrap().load()), tables(&loaded));
        }
    }

    #[test]
    fn a_delta_holds_only_what_changed() {
        let cat = Catalog::new();
        let t = cat.create_table("t").unwrap();
        cat.bulk_insert(t, (1..=1000).map(|id| (id, row(id as i32))))
            .unwrap();
        let mut first = Vec::new();
        let s = cat.write_delta(&mut first);
        assert_eq!(
            (s.whole_tables, s.rows),
            (1, 1000),
            "a new table goes whole"
        );
        let tb = cat.table(t).unwrap();
        tb.update_k(7, 5, 1);
        tb.commit_rows(7, [5], 0);
        tb.delete(8, 6);
        tb.commit_rows(8, [6], 0);
        tb.update_k(9, 7, 1);
        tb.rollback_rows(9, [7]);
        let mut second = Vec::new();
        let s = cat.write_delta(&mut second);
        assert_eq!((s.whole_tables, s.rows, s.removed), (0, 1, 1));
        assert!(
            second.len() * 100 < first.len(),
            "{} vs {}",
            second.len(),
            first.len()
        );
        let mut third = Vec::new();
        assert_eq!(cat.write_delta(&mut third).rows, 0, "nothing changed since");
    }

    #[test]
    fn a_damaged_delta_is_refused_and_changes_nothing() {
        let cat = Catalog::new();
        let t = cat.create_table("t").unwrap();
        cat.bulk_insert(t, [(1, row(1))]).unwrap();
        let mut img = Vec::new();
        cat.take_all_dirty();
        cat.write_image(&mut img);
        cat.bulk_insert(t, [(2, row(2))]).unwrap();
        let mut d = Vec::new();
        cat.write_delta(&mut d);
        let base = Catalog::read_image(&img).unwrap();
        let before = base.dump();
        for cut in [0, 10, d.len() - 1] {
            let e = base.apply_delta(&d[..cut]).unwrap_err();
            assert!(matches!(e, DataError::CorruptImage(_)), "{e}");
        }
        let mut flipped = d.clone();
        flipped[20] ^= 1;
        let e = base.apply_delta(&flipped).unwrap_err().to_string();
        assert!(e.contains("checksum mismatch"), "{e}");
        assert_eq!(base.dump(), before);
        base.apply_delta(&d).unwrap();
        assert_eq!(base.dump(), cat.dump());
    }

    #[test]
    fn version_1_deltas_hold_sbtest_tables() {
        let cat = Catalog::new();
        cat.create_table("t").unwrap();
        let mut body = Vec::new();
        body.extend_from_slice(DELTA_MAGIC);
        body.extend_from_slice(&DELTA_VERSION_SBTEST_ONLY.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        record::put_str("t", &mut body);
        body.push(0); // not whole
        body.extend_from_slice(&1u64.to_le_bytes());
        body.extend_from_slice(&4i64.to_le_bytes());
        body.push(1);
        record::put_row(&row(9), &mut body);
        let crc = crc32fast::hash(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        cat.apply_delta(&body).unwrap();
        assert_eq!(cat.dump()["t"][&4], row(9));
        // The same table as (id, k) in a later delta: another chain's.
        let narrow = Catalog::new();
        narrow.create_shaped_table("t", Shape::IdK).unwrap();
        narrow.take_all_dirty();
        narrow.bulk_insert(1, [(5, row(1))]).unwrap();
        let mut d = Vec::new();
        narrow.write_delta(&mut d);
        let e = cat.apply_delta(&d).unwrap_err().to_string();
        assert!(e.contains("IdK"), "{e}");
    }

    #[test]
    fn a_delta_of_another_chain_is_refused() {
        let cat = Catalog::new();
        cat.create_table("a").unwrap();
        let mut d = Vec::new();
        cat.write_delta(&mut d);
        cat.bulk_insert(1, [(1, row(1))]).unwrap();
        let mut rows = Vec::new();
        cat.write_delta(&mut rows);
        // Applied to a catalog without table 1, the row delta is refused.
        let e = Catalog::new().apply_delta(&rows).unwrap_err().to_string();
        assert!(e.contains("has no such table"), "{e}");
    }

    /// A table on pages made after the base: the first delta says it
    /// exists (no rows: they are on its pages), so the delta applies over
    /// the base and the table comes back from its pages.
    #[test]
    fn a_paged_table_made_after_the_base_is_in_the_next_delta() {
        use crate::page_store::buffer_pool::PoolOptions;
        use crate::page_store::doublewrite::DoublewriteOptions;
        use crate::page_store::store::{PageStore, StoreOptions};
        use crate::vfs::{SimVfs, Vfs};
        use std::sync::Arc;
        let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new());
        let opts = StoreOptions {
            page_size: 4096,
            pool: PoolOptions {
                frames: 16,
                ..PoolOptions::default()
            },
            doublewrite: DoublewriteOptions::default(),
        };
        let (store, _) = PageStore::open(vfs.clone(), vfs.clone(), opts).unwrap();
        let store = Arc::new(store);
        let cat = Catalog::with_pages(Some(store.clone()));
        let mut base = Vec::new();
        cat.write_image(&mut base);
        let t = cat.create_table("a").unwrap();
        cat.bulk_insert(t, (1..=50).map(|i| (i, row(i as i32))))
            .unwrap();
        let mut d = Vec::new();
        let stats = cat.write_delta(&mut d);
        assert_eq!((stats.whole_tables, stats.rows), (1, 0), "{stats:?}");
        store.pool().flush_all().unwrap();
        let again = Catalog::read_image_with(&base, Some(store.clone())).unwrap();
        again.apply_delta(&d).unwrap();
        assert_eq!(again.dump(), cat.dump());
        store.shutdown().unwrap();
    }
}
