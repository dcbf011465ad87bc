//! The named workloads: their names, labels and statement mixes.
//!
//! The sysbench workloads are fixed statement mixes ([`WorkloadKind::mix`]),
//! executed by [`super::txn_gen`]; TPCC-lite lives in [`super::tpcc`].

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::mix::{Mix, MixError, Statement};

/// A named workload (the original it imitates in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// `oltp_point_select`: one `SELECT c FROM sbtestN WHERE id=?` per transaction.
    PointSelect,
    /// `oltp_update_index`: one `UPDATE sbtestN SET k=k+1 WHERE id=?` ("UPDATEs bombarding").
    UpdateIndex,
    /// `oltp_update_non_index`: one `UPDATE sbtestN SET c=? WHERE id=?`.
    UpdateNonIndex,
    /// `oltp_insert`: one `INSERT` of a fresh id ("INSERTs bombarding"; ids never collide).
    Insert,
    /// `oltp_read_write` (OLTP_RW): 10 point selects, 4 kinds of 100-row ranges,
    /// an index update, a non-index update, and a delete + insert of the same id.
    ReadWrite,
    /// OLTP_RW+: `oltp_read_write` without the range selects.
    ReadWritePlus,
    /// OLTP_RW++: one point select plus the writes of `oltp_read_write`.
    ReadWritePlusPlus,
    /// TPCC-lite: new-order and payment in the standard mix (see [`super::tpcc`]).
    Tpcc,
    /// A statement mix given as text (see [`Mix`]).
    Custom,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 9] = [
        WorkloadKind::PointSelect,
        WorkloadKind::UpdateIndex,
        WorkloadKind::UpdateNonIndex,
        WorkloadKind::Insert,
        WorkloadKind::ReadWrite,
        WorkloadKind::ReadWritePlus,
        WorkloadKind::ReadWritePlusPlus,
        WorkloadKind::Tpcc,
        WorkloadKind::Custom,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::PointSelect => "point_select",
            WorkloadKind::UpdateIndex => "update_index",
            WorkloadKind::UpdateNonIndex => "update_non_index",
            WorkloadKind::Insert => "insert",
            WorkloadKind::ReadWrite => "read_write",
            WorkloadKind::ReadWritePlus => "read_write_plus",
            WorkloadKind::ReadWritePlusPlus => "read_write_plus_plus",
            WorkloadKind::Tpcc => "tpcc",
            WorkloadKind::Custom => "custom",
        }
    }

    /// The label the reference articles use (OLTP_RW, OLTP_RW+, ...).
    pub fn label(self) -> &'static str {
        match self {
            WorkloadKind::PointSelect => "point SELECTs",
            WorkloadKind::UpdateIndex => "UPDATEs",
            WorkloadKind::UpdateNonIndex => "UPDATEs (non-index)",
            WorkloadKind::Insert => "INSERTs",
            WorkloadKind::ReadWrite => "OLTP_RW",
            WorkloadKind::ReadWritePlus => "OLTP_RW+",
            WorkloadKind::ReadWritePlusPlus => "OLTP_RW++",
            WorkloadKind::Tpcc => "TPCC-lite",
            WorkloadKind::Custom => "custom mix",
        }
    }

    /// The statements of one transaction of a sysbench workload; None for
    /// TPCC-lite and for a custom mix (which brings its own).
    pub fn mix(self) -> Option<Mix> {
        use read_write_shape::*;
        use Statement as S;
        let writes = [
            (S::UpdateIndex, INDEX_UPDATES),
            (S::UpdateNonIndex, NON_INDEX_UPDATES),
            (S::DeleteInsert, DELETE_INSERTS),
        ];
        let ranges = [
            (S::SimpleRange, SIMPLE_RANGES),
            (S::SumRange, SUM_RANGES),
            (S::OrderRange, ORDER_RANGES),
            (S::DistinctRange, DISTINCT_RANGES),
        ];
        let pairs: Vec<(Statement, u32)> = match self {
            WorkloadKind::PointSelect => vec![(S::PointSelect, 1)],
            WorkloadKind::UpdateIndex => vec![(S::UpdateIndex, 1)],
            WorkloadKind::UpdateNonIndex => vec![(S::UpdateNonIndex, 1)],
            WorkloadKind::Insert => vec![(S::Insert, 1)],
            WorkloadKind::ReadWrite => [(S::PointSelect, POINT_SELECTS)]
                .into_iter()
                .chain(ranges)
                .chain(writes)
                .collect(),
            WorkloadKind::ReadWritePlus => [(S::PointSelect, POINT_SELECTS)]
                .into_iter()
                .chain(writes)
                .collect(),
            WorkloadKind::ReadWritePlusPlus => {
                [(S::PointSelect, 1)].into_iter().chain(writes).collect()
            }
            WorkloadKind::Tpcc | WorkloadKind::Custom => return None,
        };
        Some(Mix::of(&pairs))
    }

    /// True when no transaction of this kind writes.
    pub fn is_read_only(self) -> bool {
        self == WorkloadKind::PointSelect
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A workload name that is not one of [`WorkloadKind::ALL`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown workload `{0}`: choose one of point_select, update_index, update_non_index, insert, read_write (oltp_rw), read_write_plus (oltp_rw+), read_write_plus_plus (oltp_rw++), tpcc, or mix:STATEMENT=COUNT,...")]
pub struct UnknownWorkload(pub String);

impl FromStr for WorkloadKind {
    type Err = UnknownWorkload;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let alias = match s {
            "oltp_rw" | "oltp_read_write" => Some(WorkloadKind::ReadWrite),
            "oltp_rw+" => Some(WorkloadKind::ReadWritePlus),
            "oltp_rw++" => Some(WorkloadKind::ReadWritePlusPlus),
            "tpcc_lite" | "tpcc-lite" => Some(WorkloadKind::Tpcc),
            _ => None,
        };
        alias
            .or_else(|| WorkloadKind::ALL.into_iter().find(|k| k.name() == s))
            .ok_or_else(|| UnknownWorkload(s.to_string()))
    }
}

/// A workload as written on the command line or in a sweep grid: a name
/// (`read_write`, `oltp_rw+`, `tpcc`, ...) or `mix:` and a statement mix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkloadSpec {
    pub kind: WorkloadKind,
    /// The custom statement mix (only with [`WorkloadKind::Custom`]).
    pub mix: Option<Mix>,
}

/// Why a workload text was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkloadSpecError {
    #[error(transparent)]
    Unknown(#[from] UnknownWorkload),
    #[error("invalid statement mix `{text}`: {source}")]
    Mix {
        text: String,
        #[source]
        source: MixError,
    },
    #[error("`custom` needs its statements: write `mix:point_select=10,update_index=1` (or pass a mix file)")]
    CustomWithoutMix,
}

impl WorkloadSpec {
    pub fn named(kind: WorkloadKind) -> WorkloadSpec {
        WorkloadSpec { kind, mix: None }
    }

    pub fn custom(mix: Mix) -> WorkloadSpec {
        WorkloadSpec {
            kind: WorkloadKind::Custom,
            mix: Some(mix),
        }
    }
}

impl FromStr for WorkloadSpec {
    type Err = WorkloadSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(text) = s.strip_prefix("mix:") {
            let mix = Mix::parse(text).map_err(|source| WorkloadSpecError::Mix {
                text: text.to_string(),
                source,
            })?;
            return Ok(WorkloadSpec::custom(mix));
        }
        match s.parse::<WorkloadKind>()? {
            WorkloadKind::Custom => Err(WorkloadSpecError::CustomWithoutMix),
            kind => Ok(WorkloadSpec::named(kind)),
        }
    }
}

/// The name of a named workload, `mix:...` for a custom one (parses back).
impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.mix {
            Some(mix) => write!(f, "mix:{mix}"),
            None => f.write_str(self.kind.name()),
        }
    }
}

/// sysbench `oltp_read_write` defaults.
pub mod read_write_shape {
    pub const POINT_SELECTS: u32 = 10;
    pub const SIMPLE_RANGES: u32 = 1;
    pub const SUM_RANGES: u32 = 1;
    pub const ORDER_RANGES: u32 = 1;
    pub const DISTINCT_RANGES: u32 = 1;
    pub const RANGE_SIZE: i64 = 100;
    pub const INDEX_UPDATES: u32 = 1;
    pub const NON_INDEX_UPDATES: u32 = 1;
    pub const DELETE_INSERTS: u32 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in WorkloadKind::ALL {
            assert_eq!(k.name().parse::<WorkloadKind>().unwrap(), k);
            assert_eq!(k.to_string(), k.name());
        }
        let err = "oltp_insert".parse::<WorkloadKind>().unwrap_err();
        assert!(err.to_string().contains("read_write"), "{err}");
        assert_eq!(
            "oltp_rw++".parse::<WorkloadKind>().unwrap(),
            WorkloadKind::ReadWritePlusPlus
        );
        for text in ["read_write", "tpcc", "mix:point_select=10,insert=1"] {
            let spec: WorkloadSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
        }
        assert!(matches!(
            "custom".parse::<WorkloadSpec>(),
            Err(WorkloadSpecError::CustomWithoutMix)
        ));
        assert!(matches!(
            "mix:point_select=x".parse::<WorkloadSpec>(),
            Err(WorkloadSpecError::Mix { .. })
        ));
    }
}
