//! Log2 histograms as the kernel keeps them, turned into [`Histogram`]s.

use crate::maps::HIST_BUCKETS;
use crate::signals::{Bucket, Histogram};

/// Builds a [`Histogram`] from log2 bucket counts (bucket i = [2^i, 2^(i+1)) ns).
pub fn histogram(counts: &[u64; HIST_BUCKETS]) -> Histogram {
    histogram_in(counts, 1)
}

/// Like [`histogram`], for buckets counted in units of `unit_ns`
/// nanoseconds (bucket i = [2^i, 2^(i+1)) units), bounds given in ns.
pub fn histogram_in(counts: &[u64; HIST_BUCKETS], unit_ns: u64) -> Histogram {
    let count: u64 = counts.iter().sum();
    // Edge j of the buckets, in ns: bucket i spans [edge(i), edge(i + 1)),
    // bucket 0 starts at 0 and the last one is open.
    let edge = |j: usize| match j {
        0 => 0,
        64.. => u64::MAX,
        _ => (1u64 << j).saturating_mul(unit_ns),
    };
    let buckets = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, c)| Bucket {
            lo_ns: edge(i),
            hi_ns: edge(i + 1),
            count: *c,
        })
        .collect();
    let pct = |q: f64| {
        if count == 0 {
            return 0;
        }
        let want = ((count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return edge(i + 1);
            }
        }
        0
    };
    Histogram {
        count,
        buckets,
        p50_ns_le: pct(0.5),
        p99_ns_le: pct(0.99),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles_use_bucket_upper_bounds() {
        let mut c = [0u64; HIST_BUCKETS];
        c[10] = 98; // [1024, 2048)
        c[20] = 2; // [1Mi, 2Mi)
        let h = histogram(&c);
        assert_eq!(h.count, 100);
        assert_eq!(h.p50_ns_le, 2048);
        assert_eq!(h.p99_ns_le, 2 << 20);
        assert_eq!(h.buckets.len(), 2);
        assert_eq!(h.buckets[0].lo_ns, 1024);
        assert_eq!(histogram(&[0; HIST_BUCKETS]).p99_ns_le, 0);
    }

    #[test]
    fn microsecond_buckets_report_nanosecond_bounds() {
        let mut c = [0u64; HIST_BUCKETS];
        c[0] = 1; // [0, 2) us
        c[3] = 3; // [8, 16) us
        let h = histogram_in(&c, 1000);
        assert_eq!((h.buckets[0].lo_ns, h.buckets[0].hi_ns), (0, 2000));
        assert_eq!((h.buckets[1].lo_ns, h.buckets[1].hi_ns), (8000, 16000));
        assert_eq!(h.p50_ns_le, 16000);
    }
}
