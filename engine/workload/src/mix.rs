//! Statement mixes: what one sysbench-style transaction is made of.
//!
//! A [`Mix`] counts, per transaction, each [`Statement`] of sysbench's
//! `oltp_common.lua` vocabulary. The named sysbench workloads are fixed mixes
//! ([`super::WorkloadKind::mix`]); any other shape is written as text:
//!
//! ```text
//! point_select=10,update_index=1,insert=1
//! ```
//!
//! Separators are commas or newlines; blanks and `#` comments are ignored, so
//! the same syntax works for a flag and for a small file. Statements run in
//! sysbench's order (the order of [`Statement::ALL`]), whatever the order of
//! the text.

use std::fmt;
use std::str::FromStr;

/// One statement of the sysbench OLTP vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Statement {
    /// `SELECT c FROM sbtestN WHERE id=?`
    PointSelect,
    /// `SELECT c FROM sbtestN WHERE id BETWEEN ? AND ?`
    SimpleRange,
    /// `SELECT SUM(k) FROM sbtestN WHERE id BETWEEN ? AND ?`
    SumRange,
    /// `SELECT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c`
    OrderRange,
    /// `SELECT DISTINCT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c`
    DistinctRange,
    /// `UPDATE sbtestN SET k=k+1 WHERE id=?`
    UpdateIndex,
    /// `UPDATE sbtestN SET c=? WHERE id=?`
    UpdateNonIndex,
    /// `DELETE FROM sbtestN WHERE id=?` then `INSERT` of the same id.
    DeleteInsert,
    /// `INSERT` of a fresh id.
    Insert,
}

impl Statement {
    /// Every statement, in the order a transaction executes them.
    pub const ALL: [Statement; 9] = [
        Statement::PointSelect,
        Statement::SimpleRange,
        Statement::SumRange,
        Statement::OrderRange,
        Statement::DistinctRange,
        Statement::UpdateIndex,
        Statement::UpdateNonIndex,
        Statement::DeleteInsert,
        Statement::Insert,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Statement::PointSelect => "point_select",
            Statement::SimpleRange => "simple_range",
            Statement::SumRange => "sum_range",
            Statement::OrderRange => "order_range",
            Statement::DistinctRange => "distinct_range",
            Statement::UpdateIndex => "update_index",
            Statement::UpdateNonIndex => "update_non_index",
            Statement::DeleteInsert => "delete_insert",
            Statement::Insert => "insert",
        }
    }

    /// The position of `self` in [`Statement::ALL`].
    pub(crate) fn index(self) -> usize {
        Statement::ALL
            .iter()
            .position(|&s| s == self)
            .expect("ALL lists every statement")
    }

    /// True for statements that change rows.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Statement::UpdateIndex
                | Statement::UpdateNonIndex
                | Statement::DeleteInsert
                | Statement::Insert
        )
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Most statements of one kind a transaction may run (keeps a typo like
/// `point_select=1000000` from producing a transaction that never ends).
pub const MAX_PER_STATEMENT: u32 = 10_000;

/// Per-transaction statement counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Mix {
    counts: [u32; Statement::ALL.len()],
}

/// Why a mix text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MixError {
    #[error("the mix is empty: give at least one `statement=count`, e.g. `point_select=10,update_index=1`")]
    Empty,
    #[error("`{0}` is not `statement=count` (e.g. `update_index=1`)")]
    NotAPair(String),
    #[error("unknown statement `{0}`: use point_select, simple_range, sum_range, order_range, distinct_range, update_index, update_non_index, delete_insert or insert")]
    UnknownStatement(String),
    #[error("`{statement}={count}`: the count must be a whole number from 0 to {max}")]
    BadCount {
        statement: String,
        count: String,
        max: u32,
    },
    #[error("`{0}` is given twice; give each statement once")]
    Duplicate(String),
    #[error("every count is 0: a transaction must run at least one statement")]
    AllZero,
}

impl Mix {
    /// A mix from `(statement, count)` pairs (counts of a repeated statement add up).
    pub fn of(pairs: &[(Statement, u32)]) -> Mix {
        let mut m = Mix::default();
        for &(s, n) in pairs {
            m.counts[s.index()] += n;
        }
        m
    }

    /// How many `s` one transaction runs.
    pub fn count(&self, s: Statement) -> u32 {
        self.counts[s.index()]
    }

    /// `(statement, count)` for every statement with a count above 0, in execution order.
    pub fn statements(&self) -> impl Iterator<Item = (Statement, u32)> + '_ {
        Statement::ALL
            .into_iter()
            .map(|s| (s, self.count(s)))
            .filter(|&(_, n)| n > 0)
    }

    /// Statements per transaction.
    pub fn total(&self) -> u32 {
        self.counts.iter().sum()
    }

    /// True when no statement writes.
    pub fn is_read_only(&self) -> bool {
        self.statements().all(|(s, _)| !s.writes())
    }

    /// Parses `name=count` pairs separated by commas or newlines (`#` starts a comment).
    pub fn parse(text: &str) -> Result<Mix, MixError> {
        let mut mix = Mix::default();
        let mut seen = [false; Statement::ALL.len()];
        let mut any = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            for item in line.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (name, count) = item
                    .split_once('=')
                    .ok_or_else(|| MixError::NotAPair(item.to_string()))?;
                let (name, count) = (name.trim(), count.trim());
                let s = Statement::ALL
                    .into_iter()
                    .find(|s| s.name() == name)
                    .ok_or_else(|| MixError::UnknownStatement(name.to_string()))?;
                let n: u32 = count
                    .parse()
                    .ok()
                    .filter(|&n| n <= MAX_PER_STATEMENT)
                    .ok_or_else(|| MixError::BadCount {
                        statement: name.to_string(),
                        count: count.to_string(),
                        max: MAX_PER_STATEMENT,
                    })?;
                if std::mem::replace(&mut seen[s.index()], true) {
                    return Err(MixError::Duplicate(name.to_string()));
                }
                mix.counts[s.index()] = n;
                any = true;
            }
        }
        if !any {
            return Err(MixError::Empty);
        }
        if mix.total() == 0 {
            return Err(MixError::AllZero);
        }
        Ok(mix)
    }
}

impl FromStr for Mix {
    type Err = MixError;
    fn from_str(s: &str) -> Result<Mix, MixError> {
        Mix::parse(s)
    }
}

/// The canonical text: `name=count` pairs in execution order, comma-separated.
impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (s, n) in self.statements() {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{s}={n}")?;
        }
        Ok(())
    }
}
