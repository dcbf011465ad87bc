//! Per-statement-kind timing: how many statements of each kind the server
//! ran and the wall time they took, shown by `SHOW GLOBAL STATUS` as
//! `Redoctor_stmt_<kind>_count` and `Redoctor_stmt_<kind>_us`.
//!
//! A statement is timed around its execution in the session (after parsing,
//! before its reply is written), and its time goes to the kind the
//! dispatcher runs it as ([`Kind::of`]); a statement that fails is counted
//! too. Three figures are parts of statements rather than statements:
//! `parse` (text queries and PREPARE), `reply` (encoding the result into
//! the connection's buffer; the final send follows the callback) and
//! `engine_commit` (time inside `Engine::commit` for every commit the
//! server makes: autocommit statements, COMMIT, and the implicit commits of
//! BEGIN, DDL and `SET autocommit=1`, so it is also inside their kinds'
//! time).
//!
//! Cost: two clock reads and two relaxed atomic adds per figure.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::sql::{Filter, Stmt};

/// What a timed span is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SELECT .. WHERE id = v.
    SelectPoint,
    /// SELECT .. WHERE id BETWEEN a AND b.
    SelectRange,
    /// SELECT through the index on k (k = v, k IN (..), k BETWEEN .. OR ..).
    SelectK,
    /// SELECT without a WHERE clause.
    SelectScan,
    Insert,
    Update,
    Delete,
    Begin,
    Commit,
    Rollback,
    /// CREATE TABLE, CREATE INDEX, DROP TABLE.
    Ddl,
    /// SET (autocommit, GLOBAL, session settings), USE.
    Set,
    /// SHOW VARIABLES / STATUS / TABLES.
    Show,
    /// Table-less SELECTs (`SELECT @@version`, `SELECT 1`).
    Other,
    /// Parsing a text query or a statement to prepare.
    Parse,
    /// Encoding a statement's reply.
    Reply,
    /// Inside `Engine::commit`.
    EngineCommit,
}

impl Kind {
    /// Every kind, in the order `SHOW GLOBAL STATUS` lists them before sorting.
    pub const ALL: [Kind; 17] = [
        Kind::SelectPoint,
        Kind::SelectRange,
        Kind::SelectK,
        Kind::SelectScan,
        Kind::Insert,
        Kind::Update,
        Kind::Delete,
        Kind::Begin,
        Kind::Commit,
        Kind::Rollback,
        Kind::Ddl,
        Kind::Set,
        Kind::Show,
        Kind::Other,
        Kind::Parse,
        Kind::Reply,
        Kind::EngineCommit,
    ];

    /// The `<kind>` of the status names.
    pub fn name(self) -> &'static str {
        match self {
            Kind::SelectPoint => "select_point",
            Kind::SelectRange => "select_range",
            Kind::SelectK => "select_k",
            Kind::SelectScan => "select_scan",
            Kind::Insert => "insert",
            Kind::Update => "update",
            Kind::Delete => "delete",
            Kind::Begin => "begin",
            Kind::Commit => "commit",
            Kind::Rollback => "rollback",
            Kind::Ddl => "ddl",
            Kind::Set => "set",
            Kind::Show => "show",
            Kind::Other => "other",
            Kind::Parse => "parse",
            Kind::Reply => "reply",
            Kind::EngineCommit => "engine_commit",
        }
    }

    /// The kind the session runs `stmt` as.
    pub fn of(stmt: &Stmt) -> Kind {
        match stmt {
            Stmt::Select(s) => match s.filter {
                Filter::IdEq(_) => Kind::SelectPoint,
                Filter::IdBetween(..) => Kind::SelectRange,
                Filter::KEq(_) | Filter::KIn(_) => Kind::SelectK,
                Filter::All => Kind::SelectScan,
            },
            Stmt::Insert { .. } => Kind::Insert,
            Stmt::Update { .. } => Kind::Update,
            Stmt::Delete { .. } => Kind::Delete,
            Stmt::Begin => Kind::Begin,
            Stmt::Commit => Kind::Commit,
            Stmt::Rollback => Kind::Rollback,
            Stmt::CreateTable { .. } | Stmt::CreateIndexK { .. } | Stmt::DropTable { .. } => {
                Kind::Ddl
            }
            Stmt::SetAutocommit(_) | Stmt::SetSessionIgnored | Stmt::SetGlobal(_) | Stmt::Use => {
                Kind::Set
            }
            Stmt::ShowVariables(_) | Stmt::ShowStatus(_) | Stmt::ShowTables => Kind::Show,
            Stmt::ShowReplicaStatus => Kind::Show,
            Stmt::SelectConst(_)
            | Stmt::ChangeSource(_)
            | Stmt::StartReplica
            | Stmt::StopReplica
            | Stmt::BinlogDump { .. }
            | Stmt::BinlogTable { .. } => Kind::Other,
        }
    }
}

/// One kind's figures, on a cache line of its own: every connection adds
/// to them once or more per statement, and kinds recorded together (a
/// point select and its reply) should not share a line.
#[derive(Default)]
#[repr(align(64))]
struct Slot {
    count: AtomicU64,
    ns: AtomicU64,
}

/// Counts and total time per [`Kind`], shared by every connection.
#[derive(Default)]
pub struct StmtTiming {
    slots: [Slot; Kind::ALL.len()],
}

impl StmtTiming {
    /// Adds one span of `kind` that took `elapsed`.
    pub fn record(&self, kind: Kind, elapsed: Duration) {
        let slot = &self.slots[kind as usize];
        slot.count.fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        slot.ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Runs `f` and records its time as one span of `kind`.
    pub fn time<R>(&self, kind: Kind, f: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let r = f();
        self.record(kind, start.elapsed());
        r
    }

    /// The count and the total microseconds of `kind`.
    pub fn get(&self, kind: Kind) -> (u64, u64) {
        let slot = &self.slots[kind as usize];
        (
            slot.count.load(Ordering::Relaxed),
            slot.ns.load(Ordering::Relaxed) / 1000,
        )
    }

    /// `Redoctor_stmt_<kind>_count` and `Redoctor_stmt_<kind>_us` of every kind.
    pub fn status(&self) -> Vec<(String, u64)> {
        Kind::ALL
            .iter()
            .flat_map(|&k| {
                let (count, us) = self.get(k);
                [
                    (format!("Redoctor_stmt_{}_count", k.name()), count),
                    (format!("Redoctor_stmt_{}_us", k.name()), us),
                ]
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse;

    #[test]
    fn all_lists_every_kind_once_at_its_index() {
        for (i, k) in Kind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{k:?}");
        }
        let mut names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Kind::ALL.len());
    }

    #[test]
    fn statements_map_to_the_kind_the_dispatcher_runs() {
        for (sql, kind) in [
            ("SELECT c FROM t WHERE id = ?", Kind::SelectPoint),
            (
                "SELECT c FROM t WHERE id BETWEEN 1 AND 5",
                Kind::SelectRange,
            ),
            ("SELECT id FROM t WHERE k = 3", Kind::SelectK),
            ("SELECT * FROM t WHERE k IN (1, 2)", Kind::SelectK),
            ("SELECT COUNT(*) FROM t", Kind::SelectScan),
            ("INSERT INTO t (k) VALUES (1)", Kind::Insert),
            ("UPDATE t SET k = k + 1 WHERE id = 2", Kind::Update),
            ("DELETE FROM t WHERE id = 2", Kind::Delete),
            ("BEGIN", Kind::Begin),
            ("COMMIT", Kind::Commit),
            ("ROLLBACK", Kind::Rollback),
            ("DROP TABLE IF EXISTS t", Kind::Ddl),
            ("SET autocommit = 0", Kind::Set),
            ("SHOW GLOBAL STATUS", Kind::Show),
            ("SELECT @@version", Kind::Other),
        ] {
            assert_eq!(Kind::of(&parse(sql).unwrap().stmt), kind, "{sql}");
        }
    }

    #[test]
    fn spans_add_up_per_kind() {
        let t = StmtTiming::default();
        t.record(Kind::Insert, Duration::from_micros(1500));
        t.record(Kind::Insert, Duration::from_nanos(700));
        assert_eq!(t.time(Kind::Commit, || 7), 7);
        assert_eq!(t.get(Kind::Insert), (2, 1500));
        assert_eq!(t.get(Kind::Commit).0, 1);
        assert_eq!(t.get(Kind::Delete), (0, 0));
        let status = t.status();
        assert_eq!(status.len(), 2 * Kind::ALL.len());
        assert!(status.contains(&("Redoctor_stmt_insert_count".into(), 2)));
        assert!(status.contains(&("Redoctor_stmt_insert_us".into(), 1500)));
    }
}
