//! Log2 histograms as the kernel keeps them, turned into [`Histogram`]s.

use crate::maps::HIST_BUCKETS;
use crate::signals::{Bucket, Histogram};

/// Builds a [`Histogram`] from log2 bucket counts (bucket i = [2^i, 2^(i+1)) ns).
pub fn histogram(counts: &[u64; HIST_BUCKETS]) -> Histogram {
    let count: u64 = counts.iter().sum();
    let bound = |i: usize| if i >= 63 { u64::MAX } else { 1u64 << (i + 1) };
    let buckets = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, c)| Bucket {
            lo_ns: if i == 0 { 0 } else { 1u64 << i },
            hi_ns: bound(i),
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
                return bound(i);
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
}
