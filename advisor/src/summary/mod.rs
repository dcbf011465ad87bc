//! The rules' vocabulary: one flat map of named numbers (`signals.*`)
//! computed from one or more [`Signals`] windows of the same process.
//!
//! Counts are summed over all windows ([`Totals`]) and ratios computed on
//! the sums, so a diagnosis over ten 1 s windows reads the same as one 10 s
//! window. Every value is a double (CEL `double`). Each signal is one row of
//! [`SIGNALS`]: its name, unit, meaning and the function that computes it,
//! so a name cannot be documented without being computed or the reverse.

mod table;
mod totals;

use std::collections::BTreeMap;

use redoctor_probes_common::signals::{Histogram, Signals};

pub use table::{SignalDef, SIGNALS};
pub use totals::Totals;

/// Named numbers summarising the windows.
pub type Summary = BTreeMap<String, f64>;

/// Summarises `windows` (at least one; an empty slice gives zeros): every
/// signal of [`SIGNALS`].
pub fn summarize(windows: &[Signals]) -> Summary {
    let t = Totals::of(windows);
    SIGNALS
        .iter()
        .map(|d| (d.name.to_string(), (d.compute)(&t)))
        .collect()
}

/// `a / b`, or 0 when `b` is not positive.
pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Sums histograms bucket by bucket (buckets are log2, so bounds match).
pub fn merge_hists<'a>(hists: impl Iterator<Item = &'a Histogram>) -> Histogram {
    let mut by: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut count = 0;
    for h in hists {
        count += h.count;
        for b in &h.buckets {
            *by.entry((b.lo_ns, b.hi_ns)).or_default() += b.count;
        }
    }
    let buckets = by
        .into_iter()
        .map(
            |((lo_ns, hi_ns), count)| redoctor_probes_common::signals::Bucket {
                lo_ns,
                hi_ns,
                count,
            },
        )
        .collect();
    let mut h = Histogram {
        count,
        buckets,
        p50_ns_le: 0,
        p99_ns_le: 0,
    };
    h.p50_ns_le = quantile_le(&h, 0.5) as u64;
    h.p99_ns_le = quantile_le(&h, 0.99) as u64;
    h
}

/// Upper bound (ns) of the bucket holding quantile `q`; 0 when empty.
pub fn quantile_le(h: &Histogram, q: f64) -> f64 {
    let total: u64 = h.buckets.iter().map(|b| b.count).sum();
    if total == 0 {
        return 0.0;
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for b in &h.buckets {
        seen += b.count;
        if seen >= rank {
            return b.hi_ns as f64;
        }
    }
    h.buckets.last().map_or(0.0, |b| b.hi_ns as f64)
}
