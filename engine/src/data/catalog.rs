//! The catalog: every table, by id and by name, plus checkpoint images.
//!
//! # Image format
//!
//! A checkpoint image holds the committed version of every table (pending
//! changes are never included; the redo log covers what commits later):
//!
//! ```text
//! magic "RDXIMAGE" | version:u32 | n_tables:u32 | table* | crc32:u32
//! table: id:u32 name:str shape:u8 n_rows:u64 row*   (tables in id order)
//! row:   id:i64 k:i32 c:str pad:str             (rows in ascending id order)
//! str:   len:u32 utf8-bytes
//! ```
//!
//! All integers are little-endian; the CRC-32 trailer covers every byte
//! before it. `shape` is [`Shape::code`]; version 1 images, written before
//! tables had shapes, have no `shape` byte and only sbtest-shaped tables.
//! [`Catalog::read_image`] rejects anything else.
//!
//! # Dropped tables
//!
//! `DROP TABLE` replaces the table by an empty *tombstone* under the same id,
//! named [`TOMBSTONE_PREFIX`]`<id>` (a name no client can create). Keeping the
//! id taken means ids are never reused, so a commit record of a transaction
//! that wrote to the table before the drop and committed after it replays
//! into the invisible tombstone, never into a later table. Tombstones are
//! hidden from names, [`Catalog::table_names`] and [`Catalog::dump`]; they
//! are kept in checkpoint images like any table (they hold no rows). A
//! dropped table on pages loses its tablespaces once the drop is durable
//! and nothing uses it ([`Catalog::release_dropped`]), or at the next
//! start ([`Catalog::remove_dropped_spaces`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::data::record::{Reader, RecordError, RedoRecord, RowOp};
use crate::data::table::paged_index::PagedIndex;
use crate::data::table::paged_rows::PagedRows;
use crate::data::table::{Row, Shape, Table, TableId};
use crate::page_store::store::PageStore;
use crate::page_store::tablespace::{self, SCRATCH_SPACE};
use crate::page_store::StoreError;

/// Name prefix of dropped-table tombstones; table names starting with it are refused.
pub const TOMBSTONE_PREFIX: &str = "#dropped-";

fn tombstone_name(id: TableId) -> String {
    format!("{TOMBSTONE_PREFIX}{id}")
}

fn is_tombstone(name: &str) -> bool {
    name.starts_with(TOMBSTONE_PREFIX)
}

pub(super) const IMAGE_MAGIC: &[u8; 8] = b"RDXIMAGE";
pub(super) const IMAGE_VERSION: u32 = 2;
/// The image version before tables had a shape byte.
const IMAGE_VERSION_SBTEST_ONLY: u32 = 1;
/// magic + version + table count + crc.
const IMAGE_MIN_LEN: usize = 8 + 4 + 4 + 4;

/// A checkpoint image or delta that failed validation, and why.
pub(super) fn corrupt(reason: String) -> DataError {
    DataError::CorruptImage(reason)
}

/// Checks a checkpoint image's or delta's length, magic and crc32 trailer
/// and that its format version is one of `versions` (`what` names it in
/// errors); returns the version and a reader positioned after it.
pub(super) fn checked_body<'a>(
    bytes: &'a [u8],
    magic: &[u8; 8],
    versions: std::ops::RangeInclusive<u32>,
    what: &str,
) -> Result<(u32, Reader<'a>), DataError> {
    if bytes.len() < IMAGE_MIN_LEN {
        return Err(corrupt(format!(
            "{what} is {} bytes, shorter than the {IMAGE_MIN_LEN}-byte minimum",
            bytes.len()
        )));
    }
    if &bytes[..8] != magic {
        return Err(corrupt(format!("bad magic: not a checkpoint {what}")));
    }
    let (body, trailer) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(trailer.try_into().expect("4-byte trailer"));
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(corrupt(format!(
            "checksum mismatch (stored {stored:#010x}, computed {computed:#010x}): \
             the {what} is damaged or truncated"
        )));
    }
    let mut r = Reader::new(body);
    r.bytes(magic.len(), "magic")?;
    let found = r.u32("format version")?;
    if !versions.contains(&found) {
        return Err(corrupt(format!(
            "unsupported format version {found} (expected {} to {})",
            versions.start(),
            versions.end()
        )));
    }
    Ok((found, r))
}

/// Reads table `name`'s shape byte (of an image or a delta).
pub(super) fn read_shape(r: &mut Reader<'_>, name: &str) -> Result<Shape, DataError> {
    let code = r.u8("table shape")?;
    Shape::from_code(code).ok_or_else(|| corrupt(format!("table {name:?}: unknown shape {code}")))
}

/// Errors of the catalog and of checkpoint images.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    /// `CREATE TABLE` of a name that exists.
    #[error("Table '{0}' already exists")]
    TableExists(String),
    /// A table id is taken by a table of another name.
    #[error("table id {id} is already used by table '{existing}', cannot give it to '{name}'")]
    TableIdConflict {
        id: TableId,
        name: String,
        existing: String,
    },
    /// A table name is taken under another id.
    #[error("Table '{name}' already exists with id {existing}, not {id}")]
    TableNameConflict {
        id: TableId,
        name: String,
        existing: TableId,
    },
    /// Table id 0 is reserved.
    #[error("table id 0 is reserved")]
    ReservedTableId,
    /// Every table id is in use.
    #[error("no table ids left")]
    TableIdsExhausted,
    /// No table has this id.
    #[error("Table with id {0} doesn't exist")]
    NoSuchTable(TableId),
    /// `DROP TABLE` of a name that does not exist.
    #[error("Unknown table '{0}'")]
    UnknownTable(String),
    /// A client asked for a table name reserved for dropped-table tombstones.
    #[error("table name '{0}' is reserved (names starting with '#dropped-' are internal); choose another name")]
    ReservedTableName(String),
    /// A checkpoint image failed validation.
    #[error("corrupt checkpoint image: {0}")]
    CorruptImage(String),
    /// A paged table's tablespace could not be opened or read.
    #[error("table '{name}' (id {id}): its pages cannot be read: {why}")]
    Pages {
        id: TableId,
        name: String,
        why: String,
    },
}

impl From<RecordError> for DataError {
    fn from(e: RecordError) -> DataError {
        DataError::CorruptImage(e.to_string())
    }
}

#[derive(Default)]
struct CatalogInner {
    tables: BTreeMap<TableId, Arc<Table>>,
    names: HashMap<String, TableId>,
    /// Where tables keep their committed rows; `None`: in memory.
    store: Option<Arc<PageStore>>,
}

impl CatalogInner {
    fn next_id(&self) -> Option<TableId> {
        match self.tables.last_key_value() {
            None => Some(1),
            Some((&id, _)) => id.checked_add(1),
        }
    }

    /// Adds table `name`: on pages of tablespace `id` when the catalog
    /// has a page store (its rows, if the tablespace has any, found again),
    /// else in memory. Tombstones are always in memory (they hold no rows).
    fn insert(&mut self, id: TableId, name: &str, shape: Shape) -> Result<Arc<Table>, DataError> {
        let table = match &self.store {
            Some(store) if !is_tombstone(name) => {
                let failed = |why: String| DataError::Pages {
                    id,
                    name: name.to_owned(),
                    why,
                };
                if id & SCRATCH_SPACE != 0 {
                    return Err(DataError::TableIdsExhausted);
                }
                let pages = store.open_space(id).map_err(|e| failed(e.to_string()))?;
                let page_size = store.options().page_size;
                let rows = PagedRows::new(store.pool().clone(), id, shape, page_size, pages);
                // Index k_1: a scratch space, rebuilt from the rows.
                let k_space = id | SCRATCH_SPACE;
                store
                    .open_scratch_space(k_space, "k_1")
                    .map_err(|e| failed(e.to_string()))?;
                let k_1 = PagedIndex::new(store.pool().clone(), k_space, page_size);
                Table::paged(id, name, shape, Arc::new(rows), k_1)
                    .map_err(|e| failed(e.to_string()))?
            }
            _ => Table::new(id, name, shape),
        };
        let table = Arc::new(table);
        self.tables.insert(id, Arc::clone(&table));
        self.names.insert(name.to_owned(), id);
        Ok(table)
    }
}

/// Removes both tablespaces of paged table `id` (rows and index `k_1`).
fn discard_table_spaces(store: &PageStore, id: TableId) -> Result<(), StoreError> {
    store.discard_space(id, &tablespace::file_name(id))?;
    let k_space = id | SCRATCH_SPACE;
    store.discard_space(k_space, &tablespace::scratch_file_name(k_space, "k_1"))
}

/// All tables of the engine.
#[derive(Default)]
pub struct Catalog {
    inner: RwLock<CatalogInner>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tables()).finish()
    }
}

impl Catalog {
    /// An empty catalog of in-memory tables.
    pub fn new() -> Catalog {
        Catalog::default()
    }

    /// An empty catalog whose tables keep their committed rows in `store`.
    pub fn with_pages(store: Option<Arc<PageStore>>) -> Catalog {
        let c = Catalog::default();
        c.inner.write().store = store;
        c
    }

    /// The page store the tables are on, if any.
    pub fn store(&self) -> Option<Arc<PageStore>> {
        self.inner.read().store.clone()
    }

    /// Creates an empty sbtest-shaped table with the next id (ids are
    /// sequential from 1).
    pub fn create_table(&self, name: &str) -> Result<TableId, DataError> {
        self.create_shaped_table(name, Shape::Sbtest)
    }

    /// Creates an empty table of `shape` with the next id.
    pub fn create_shaped_table(&self, name: &str, shape: Shape) -> Result<TableId, DataError> {
        if is_tombstone(name) {
            return Err(DataError::ReservedTableName(name.to_owned()));
        }
        let mut inner = self.inner.write();
        if inner.names.contains_key(name) {
            return Err(DataError::TableExists(name.to_owned()));
        }
        let id = inner.next_id().ok_or(DataError::TableIdsExhausted)?;
        inner.insert(id, name, shape)?;
        Ok(id)
    }

    /// Creates table `name` of `shape` with id `id` (recovery replay).
    /// Succeeds without change if exactly that table exists; fails if the
    /// id or the name is taken otherwise. Later
    /// [`create_table`](Self::create_table) calls use ids above the highest
    /// one.
    pub fn create_table_with_id(
        &self,
        id: TableId,
        name: &str,
        shape: Shape,
    ) -> Result<(), DataError> {
        if id == 0 {
            return Err(DataError::ReservedTableId);
        }
        let mut inner = self.inner.write();
        if let Some(existing) = inner.tables.get(&id) {
            // A tombstone: the table was created and dropped after the
            // checkpoint lsn, and the image already saw the drop.
            return if existing.name() == name || is_tombstone(existing.name()) {
                Ok(())
            } else {
                Err(DataError::TableIdConflict {
                    id,
                    name: name.to_owned(),
                    existing: existing.name().to_owned(),
                })
            };
        }
        if let Some(&existing) = inner.names.get(name) {
            return Err(DataError::TableNameConflict {
                id,
                name: name.to_owned(),
                existing,
            });
        }
        inner.insert(id, name, shape)?;
        Ok(())
    }

    /// `DROP TABLE name`: replaces the table by an empty tombstone under the
    /// same id (see the module docs) and returns the id.
    pub fn drop_table(&self, name: &str) -> Result<TableId, DataError> {
        self.drop_table_taking(name).map(|(id, _)| id)
    }

    /// [`drop_table`](Self::drop_table), handing back the dropped table:
    /// once the drop is durable, [`release_dropped`](Self::release_dropped)
    /// removes its tablespaces (before that a crash must find them).
    pub fn drop_table_taking(&self, name: &str) -> Result<(TableId, Arc<Table>), DataError> {
        if is_tombstone(name) {
            return Err(DataError::UnknownTable(name.to_owned()));
        }
        let mut inner = self.inner.write();
        let id = inner
            .names
            .remove(name)
            .ok_or_else(|| DataError::UnknownTable(name.to_owned()))?;
        let table = inner.tables.remove(&id).expect("a named table has an id");
        inner
            .insert(id, &tombstone_name(id), Shape::Sbtest)
            .expect("a tombstone is in memory");
        Ok((id, table))
    }

    /// Removes the tablespaces of `table`, dropped durably, when the last
    /// transaction that used it lets go (now, if none does). A failure to
    /// remove leaves the files to the next start
    /// ([`remove_dropped_spaces`](Self::remove_dropped_spaces)).
    pub fn release_dropped(&self, table: Arc<Table>) {
        let Some(store) = self.store() else { return };
        if !table.is_paged() {
            return;
        }
        let id = table.id();
        table.when_released(move || {
            let _ = discard_table_spaces(&store, id);
        });
    }

    /// Removes every tablespace file whose table is not a live one (dropped
    /// by a drop that recovery replayed, or whose removal a crash or an
    /// error cut short); returns how many files went. Run at open, after
    /// recovery.
    pub fn remove_dropped_spaces(&self) -> Result<usize, StoreError> {
        let Some(store) = self.store() else {
            return Ok(0);
        };
        let live: Vec<TableId> = {
            let inner = self.inner.read();
            inner
                .names
                .iter()
                .filter(|(name, _)| !is_tombstone(name))
                .map(|(_, id)| *id)
                .collect()
        };
        let mut removed = 0;
        for (space, file) in store.space_files()? {
            if !live.contains(&(space & !SCRATCH_SPACE)) {
                store.discard_space(space, &file)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Replays a drop of table `id`: idempotent, and it also takes the id
    /// when the table is unknown (so the id is never given out again).
    fn drop_table_id(&self, id: TableId) {
        let mut inner = self.inner.write();
        if let Some(t) = inner.tables.get(&id) {
            if is_tombstone(t.name()) {
                return;
            }
            let name = t.name().to_owned();
            inner.names.remove(&name);
            inner.tables.remove(&id);
        }
        inner
            .insert(id, &tombstone_name(id), Shape::Sbtest)
            .expect("a tombstone is in memory");
    }

    /// Puts a new, empty table `name` under id `id` in place of whatever
    /// held the id (a checkpoint delta that rewrites a whole table).
    pub(super) fn replace_table(
        &self,
        id: TableId,
        name: &str,
        shape: Shape,
    ) -> Result<Arc<Table>, DataError> {
        if id == 0 {
            return Err(DataError::ReservedTableId);
        }
        let mut inner = self.inner.write();
        if let Some(&other) = inner.names.get(name) {
            if other != id {
                return Err(DataError::TableNameConflict {
                    id,
                    name: name.to_owned(),
                    existing: other,
                });
            }
        }
        if let Some(old) = inner.tables.remove(&id) {
            inner.names.remove(old.name());
        }
        inner.insert(id, name, shape)
    }

    /// The table with id `id`.
    pub fn table(&self, id: TableId) -> Option<Arc<Table>> {
        self.inner.read().tables.get(&id).cloned()
    }

    /// The id of table `name`.
    pub fn table_id(&self, name: &str) -> Option<TableId> {
        self.inner.read().names.get(name).copied()
    }

    /// The id and the shape of table `name`, in one lookup.
    pub fn table_id_shape(&self, name: &str) -> Option<(TableId, Shape)> {
        let inner = self.inner.read();
        let id = *inner.names.get(name)?;
        Some((id, inner.tables.get(&id)?.shape()))
    }

    /// Table names in id order (dropped tables excluded).
    pub fn table_names(&self) -> Vec<String> {
        let inner = self.inner.read();
        inner
            .tables
            .values()
            .map(|t| t.name().to_owned())
            .filter(|n| !is_tombstone(n))
            .collect()
    }

    /// All tables in id order.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.inner.read().tables.values().cloned().collect()
    }

    fn existing(&self, id: TableId) -> Result<Arc<Table>, DataError> {
        self.table(id).ok_or(DataError::NoSuchTable(id))
    }

    /// Inserts (or replaces) committed rows directly, bypassing transactions
    /// and the redo log (`sysbench prepare`, followed by a checkpoint).
    pub fn bulk_insert(
        &self,
        table: TableId,
        rows: impl IntoIterator<Item = (i64, Row)>,
    ) -> Result<(), DataError> {
        self.bulk_insert_at(table, rows, 0)
    }

    /// [`bulk_insert`](Self::bulk_insert) as of redo `lsn` (a paged
    /// table's pages record it).
    pub fn bulk_insert_at(
        &self,
        table: TableId,
        rows: impl IntoIterator<Item = (i64, Row)>,
        lsn: u64,
    ) -> Result<(), DataError> {
        self.existing(table)?.upsert_committed_at(rows, lsn);
        Ok(())
    }

    /// Replays a redo record: `Put` upserts the committed row, `Delete`
    /// removes it, `CreateTable` creates the table. Idempotent.
    pub fn apply(&self, rec: &RedoRecord) -> Result<(), DataError> {
        self.apply_at(rec, 0)
    }

    /// [`apply`](Self::apply) of the record at redo `lsn` (a paged table's
    /// pages record it).
    pub fn apply_at(&self, rec: &RedoRecord, lsn: u64) -> Result<(), DataError> {
        match rec {
            RedoRecord::CreateTable { table, name, shape } => {
                self.create_table_with_id(*table, name, *shape)
            }
            RedoRecord::DropTable { table } => {
                self.drop_table_id(*table);
                Ok(())
            }
            RedoRecord::Commit { ops, .. } => {
                let mut cached: Option<Arc<Table>> = None;
                for op in ops {
                    let (RowOp::Put { table, .. } | RowOp::Delete { table, .. }) = op;
                    let t = match cached.take() {
                        Some(t) if t.id() == *table => t,
                        _ => self.existing(*table)?,
                    };
                    match op {
                        RowOp::Put { id, row, .. } => {
                            t.upsert_committed_at([(*id, row.clone())], lsn)
                        }
                        RowOp::Delete { id, .. } => t.remove_committed_at(*id, lsn),
                    }
                    cached = Some(t);
                }
                Ok(())
            }
            // Two-phase records change nothing by themselves: recovery
            // decides each prepared transaction (`crate::binlog::xa`) and
            // applies the decided ones as a `Commit`.
            RedoRecord::Prepare { .. } | RedoRecord::CommitMark { .. } => Ok(()),
        }
    }

    /// The committed contents of every table, by name (dropped tables excluded).
    pub fn dump(&self) -> BTreeMap<String, BTreeMap<i64, Row>> {
        self.tables()
            .into_iter()
            .filter(|t| !is_tombstone(t.name()))
            .map(|t| {
                let mut rows = BTreeMap::new();
                t.for_each_committed(|id, row| {
                    rows.insert(id, row.clone());
                });
                (t.name().to_owned(), rows)
            })
            .collect()
    }

    /// Appends a checkpoint image of the committed rows of every table (see
    /// the module docs). Each table's rows are taken by reference under one
    /// hold of its read lock ([`Catalog::snapshot`]) and serialised after it
    /// is released: copied in chunks, with writers queued between them, the
    /// copy of a large table took so long that the log filled before the
    /// checkpoint ended (engine/bench/RESULTS.md).
    pub fn write_image(&self, out: &mut Vec<u8>) {
        self.snapshot()
            .write_image(usize::MAX, |b| {
                out.extend_from_slice(b);
                Ok::<(), std::convert::Infallible>(())
            })
            .unwrap_or_else(|e| match e {});
    }

    /// Rebuilds a catalog from an image written by
    /// [`write_image`](Self::write_image). Any corruption or truncation is
    /// reported as [`DataError::CorruptImage`] with the reason.
    pub fn read_image(image: &[u8]) -> Result<Catalog, DataError> {
        Catalog::read_image_with(image, None)
    }

    /// [`read_image`](Self::read_image) into a catalog whose tables are in
    /// `store` (a paged table's image holds no rows: they are on its pages).
    pub fn read_image_with(
        image: &[u8],
        store: Option<Arc<PageStore>>,
    ) -> Result<Catalog, DataError> {
        let (version, mut r) = checked_body(
            image,
            IMAGE_MAGIC,
            IMAGE_VERSION_SBTEST_ONLY..=IMAGE_VERSION,
            "image",
        )?;
        let catalog = Catalog::with_pages(store);
        let n_tables = r.u32("table count")?;
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
                IMAGE_VERSION_SBTEST_ONLY => Shape::Sbtest,
                _ => read_shape(&mut r, &name)?,
            };
            catalog
                .create_table_with_id(id, &name, shape)
                .map_err(|e| corrupt(format!("table section {name:?}: {e}")))?;
            let table = catalog.table(id).expect("just created");
            let n_rows = r.u64("row count")?;
            let mut rows = Vec::with_capacity(n_rows.min(r.remaining() as u64 / 20) as usize);
            let mut last_id = None;
            for _ in 0..n_rows {
                let offset = r.offset();
                let row_id = r.i64("row id")?;
                if last_id.is_some_and(|last| row_id <= last) {
                    return Err(corrupt(format!(
                        "table {name:?}: row ids out of order at byte {offset}"
                    )));
                }
                last_id = Some(row_id);
                rows.push((row_id, r.row()?));
            }
            table.upsert_committed(rows);
        }
        r.finish()
            .map_err(|e| corrupt(format!("after the last table: {e}")))?;
        Ok(catalog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::record;
    use proptest::prelude::*;

    fn row(k: i32) -> Row {
        Row {
            k,
            c: format!("c-{k}"),
            pad: "pad".into(),
        }
    }

    #[test]
    fn drop_table_leaves_a_hidden_tombstone_and_never_reuses_the_id() {
        let cat = sample();
        let id = cat.table_id("empty").unwrap();
        assert_eq!(cat.drop_table("empty"), Ok(id));
        assert_eq!(cat.table_id("empty"), None);
        assert!(!cat.table_names().contains(&"empty".to_string()));
        assert!(!cat.dump().contains_key("empty"));
        assert_eq!(
            cat.drop_table("empty"),
            Err(DataError::UnknownTable("empty".into()))
        );
        let again = cat.create_table("empty").unwrap();
        assert!(again > id, "id {id} reused");
        assert!(matches!(
            cat.create_table("#dropped-99"),
            Err(DataError::ReservedTableName(_))
        ));
        // The image keeps the tombstone, so the id stays taken after a restart.
        let mut img = Vec::new();
        cat.write_image(&mut img);
        let back = Catalog::read_image(&img).unwrap();
        assert_eq!(back.dump(), cat.dump());
        assert_eq!(back.create_table("x").unwrap(), again + 1);
    }

    #[test]
    fn drop_replay_is_idempotent_and_tolerates_a_later_image() {
        let cat = Catalog::new();
        let id = cat.create_table("t").unwrap();
        cat.bulk_insert(id, [(1, row(1))]).unwrap();
        // Records replayed over an image that already saw the drop.
        cat.drop_table("t").unwrap();
        let create = RedoRecord::CreateTable {
            table: id,
            name: "t".into(),
            shape: Shape::Sbtest,
        };
        let put = RedoRecord::Commit {
            trx_id: 9,
            ops: vec![RowOp::Put {
                table: id,
                id: 2,
                row: row(2),
            }],
        };
        let drop = RedoRecord::DropTable { table: id };
        for rec in [&create, &put, &drop, &drop] {
            cat.apply(rec).unwrap();
        }
        assert!(cat.dump().is_empty());
        // Replaying onto an empty catalog gives the same visible state.
        let fresh = Catalog::new();
        for rec in [&create, &put, &drop] {
            fresh.apply(rec).unwrap();
        }
        assert!(fresh.dump().is_empty());
        assert_eq!(fresh.create_table("t").unwrap(), id + 1);
    }

    fn sample() -> Catalog {
        let cat = Catalog::new();
        let a = cat.create_table("sbtest1").unwrap();
        let b = cat.create_table("sbtest2").unwrap();
        cat.create_table("empty").unwrap();
        cat.bulk_insert(a, (1..=50).map(|i| (i, row(i as i32 % 7))))
            .unwrap();
        cat.bulk_insert(b, [(-5, row(-1)), (i64::MAX, row(i32::MIN))])
            .unwrap();
        cat
    }

    #[test]
    fn table_ids_are_sequential_and_names_unique() {
        let cat = Catalog::new();
        assert_eq!(cat.create_table("a"), Ok(1));
        assert_eq!(cat.create_table("b"), Ok(2));
        assert_eq!(
            cat.create_table("a"),
            Err(DataError::TableExists("a".into()))
        );
        assert_eq!(cat.table_id("b"), Some(2));
        assert_eq!(cat.table_id("c"), None);
        assert_eq!(cat.table(2).unwrap().name(), "b");
        assert!(cat.table(3).is_none());

        assert_eq!(cat.create_table_with_id(2, "b", Shape::Sbtest), Ok(()));
        assert!(matches!(
            cat.create_table_with_id(2, "x", Shape::Sbtest),
            Err(DataError::TableIdConflict { .. })
        ));
        assert!(matches!(
            cat.create_table_with_id(9, "a", Shape::Sbtest),
            Err(DataError::TableNameConflict { .. })
        ));
        assert_eq!(
            cat.create_table_with_id(0, "z", Shape::Sbtest),
            Err(DataError::ReservedTableId)
        );
        assert_eq!(cat.create_table_with_id(7, "g", Shape::Sbtest), Ok(()));
        assert_eq!(cat.create_table("h"), Ok(8));
        assert_eq!(cat.table_names(), ["a", "b", "g", "h"]);
        assert_eq!(cat.bulk_insert(99, []), Err(DataError::NoSuchTable(99)));
    }

    #[test]
    fn apply_replays_idempotently() {
        let cat = Catalog::new();
        let recs = [
            RedoRecord::CreateTable {
                table: 1,
                name: "t".into(),
                shape: Shape::Sbtest,
            },
            RedoRecord::Commit {
                trx_id: 5,
                ops: vec![
                    RowOp::Put {
                        table: 1,
                        id: 1,
                        row: row(1),
                    },
                    RowOp::Put {
                        table: 1,
                        id: 2,
                        row: row(2),
                    },
                ],
            },
            RedoRecord::Commit {
                trx_id: 6,
                ops: vec![
                    RowOp::Delete { table: 1, id: 1 },
                    RowOp::Put {
                        table: 1,
                        id: 2,
                        row: row(3),
                    },
                ],
            },
        ];
        for rec in &recs {
            cat.apply(rec).unwrap();
        }
        let once = cat.dump();
        for rec in &recs {
            cat.apply(rec).unwrap();
        }
        assert_eq!(cat.dump(), once);
        assert_eq!(once["t"], BTreeMap::from([(2, row(3))]));
        cat.table(1).unwrap().check_invariants().unwrap();
        assert_eq!(
            cat.apply(&RedoRecord::Commit {
                trx_id: 7,
                ops: vec![RowOp::Delete { table: 4, id: 1 }]
            }),
            Err(DataError::NoSuchTable(4))
        );
    }

    #[test]
    fn image_roundtrip() {
        let cat = sample();
        let mut image = vec![0xAA; 3]; // images may be appended to a buffer
        cat.write_image(&mut image);
        let restored = Catalog::read_image(&image[3..]).unwrap();
        assert_eq!(restored.dump(), cat.dump());
        assert_eq!(restored.table_names(), cat.table_names());
        assert_eq!(restored.create_table("next"), Ok(4));
        for t in restored.tables() {
            t.check_invariants().unwrap();
        }
        assert_eq!(restored.table(1).unwrap().get_by_k(0, 3).len(), 7);

        let mut empty = Vec::new();
        Catalog::new().write_image(&mut empty);
        assert!(Catalog::read_image(&empty).unwrap().tables().is_empty());
    }

    #[test]
    fn shapes_survive_images_and_replay() {
        let cat = sample();
        let narrow = cat.create_shaped_table("bulk", Shape::IdK).unwrap();
        assert_eq!(cat.table_id_shape("bulk"), Some((narrow, Shape::IdK)));
        assert_eq!(cat.table_id_shape("sbtest1"), Some((1, Shape::Sbtest)));
        assert_eq!(cat.table_id_shape("nope"), None);
        let mut image = Vec::new();
        cat.write_image(&mut image);
        let restored = Catalog::read_image(&image).unwrap();
        assert_eq!(restored.table_id_shape("bulk"), Some((narrow, Shape::IdK)));
        assert_eq!(restored.table_id_shape("empty"), Some((3, Shape::Sbtest)));
        let replayed = Catalog::new();
        replayed
            .apply(&RedoRecord::CreateTable {
                table: 5,
                name: "bulk".into(),
                shape: Shape::IdK,
            })
            .unwrap();
        assert_eq!(replayed.table_id_shape("bulk"), Some((5, Shape::IdK)));
        // An unknown shape byte is refused.
        // The last table, "bulk", holds no rows: its shape byte is followed
        // by its row count and the image's crc.
        let at = image.len() - 4 - 8 - 1;
        assert_eq!(image[at], Shape::IdK.code(), "shape byte of the last table");
        let mut body = image[..image.len() - 4].to_vec();
        body[at] = 7;
        let err = Catalog::read_image(&seal(body)).unwrap_err().to_string();
        assert!(err.contains("unknown shape 7"), "{err}");
    }

    #[test]
    fn version_1_images_hold_sbtest_tables() {
        let mut body = Vec::new();
        body.extend_from_slice(IMAGE_MAGIC);
        body.extend_from_slice(&IMAGE_VERSION_SBTEST_ONLY.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&4u32.to_le_bytes());
        record::put_str("old", &mut body);
        body.extend_from_slice(&1u64.to_le_bytes());
        body.extend_from_slice(&7i64.to_le_bytes());
        record::put_row(&row(3), &mut body);
        let cat = Catalog::read_image(&seal(body)).unwrap();
        assert_eq!(cat.table_id_shape("old"), Some((4, Shape::Sbtest)));
        assert_eq!(cat.dump()["old"], BTreeMap::from([(7, row(3))]));
    }

    #[test]
    fn image_excludes_pending_changes() {
        let cat = sample();
        let t = cat.table(1).unwrap();
        t.update_k(42, 1, 100);
        t.insert(42, 1000, row(5));
        let mut image = Vec::new();
        cat.write_image(&mut image);
        t.rollback_rows(42, [1, 1000]);
        assert_eq!(Catalog::read_image(&image).unwrap().dump(), cat.dump());
    }

    #[test]
    fn image_corruption_is_rejected() {
        let mut image = Vec::new();
        sample().write_image(&mut image);
        for i in 0..image.len() {
            let mut bad = image.clone();
            bad[i] ^= 0x01;
            assert!(
                matches!(Catalog::read_image(&bad), Err(DataError::CorruptImage(_))),
                "flip at byte {i} accepted"
            );
        }
        for len in 0..image.len() {
            assert!(
                matches!(
                    Catalog::read_image(&image[..len]),
                    Err(DataError::CorruptImage(_))
                ),
                "truncation to {len} bytes accepted"
            );
        }
        let mut longer = image.clone();
        longer.push(0);
        assert!(Catalog::read_image(&longer).is_err());
        let err = Catalog::read_image(&image[..image.len() - 1]).unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
    }

    /// Re-seals a modified image body with a valid checksum.
    fn seal(mut body: Vec<u8>) -> Vec<u8> {
        let crc = crc32fast::hash(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        body
    }

    #[test]
    fn structurally_bad_images_are_rejected_with_reasons() {
        let mut image = Vec::new();
        sample().write_image(&mut image);
        let body = image[..image.len() - 4].to_vec();

        let mut v3 = body.clone();
        v3[8] = 3;
        let err = Catalog::read_image(&seal(v3)).unwrap_err().to_string();
        assert!(err.contains("unsupported format version 3"), "{err}");

        let mut extra = body.clone();
        extra.push(0);
        let err = Catalog::read_image(&seal(extra)).unwrap_err().to_string();
        assert!(err.contains("unexpected bytes"), "{err}");

        let mut more_tables = body.clone();
        more_tables[12] = 4;
        let err = Catalog::read_image(&seal(more_tables))
            .unwrap_err()
            .to_string();
        assert!(err.contains("truncated"), "{err}");

        let mut magic = image.clone();
        magic[0] = b'X';
        let err = Catalog::read_image(&magic).unwrap_err().to_string();
        assert!(err.contains("bad magic"), "{err}");
    }

    proptest! {
        #[test]
        fn resealed_garbage_never_panics(
            bytes in prop::collection::vec(any::<u8>(), 0..200),
            flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        ) {
            let _ = Catalog::read_image(&bytes);
            let mut image = Vec::new();
            sample().write_image(&mut image);
            let mut body = image[..image.len() - 4].to_vec();
            for (at, value) in flips {
                let i = 8 + at.index(body.len() - 8);
                body[i] = value;
            }
            let _ = Catalog::read_image(&seal(body));
        }
    }
}
