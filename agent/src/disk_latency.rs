//! The host disks' mean write latency over a window: the covariate a live
//! trial reads beside each window's commit count (the experiment's
//! `covariate` module says how it is used). On a host whose disk speeds up
//! and slows down second to second, it explains most of the rate's spread
//! at the demo load (`agent/bench/RESULTS.md`).
//!
//! Read from `/proc/diskstats` (writes completed and milliseconds spent
//! writing, summed over the physical disks: those under `/sys/block` that
//! are not virtual, so no loop, zram or device-mapper double counting). A
//! read costs one small file read; a host without the file, or a window
//! with too few writes to time, has no covariate and the trial runs
//! unadjusted.

use std::path::Path;
use std::sync::OnceLock;

/// Writes a window needs before their mean latency is used.
const MIN_WRITES: u64 = 4;

/// Cumulative write counters of the physical disks at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    writes: u64,
    write_ms: u64,
}

/// The physical disks' names, found once.
fn disks() -> &'static [String] {
    static DISKS: OnceLock<Vec<String>> = OnceLock::new();
    DISKS.get_or_init(|| physical_disks(Path::new("/sys/block")))
}

/// Entries of `sys_block` that resolve outside `/sys/devices/virtual`.
fn physical_disks(sys_block: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(sys_block) else {
        return vec![];
    };
    let mut out: Vec<String> = dir
        .flatten()
        .filter(|e| {
            std::fs::canonicalize(e.path())
                .map(|p| !p.to_string_lossy().contains("/devices/virtual/"))
                .unwrap_or(false)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// The counters now; None on a host without `/proc/diskstats` or disks.
pub fn mark() -> Option<Mark> {
    let names = disks();
    if names.is_empty() {
        return None;
    }
    let text = std::fs::read_to_string("/proc/diskstats").ok()?;
    parse(&text, names)
}

/// Sums writes (field 8) and write milliseconds (field 11) of `names`.
fn parse(text: &str, names: &[String]) -> Option<Mark> {
    let mut m = Mark {
        writes: 0,
        write_ms: 0,
    };
    let mut found = false;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 11 || !names.iter().any(|n| n == f[2]) {
            continue;
        }
        m.writes += f[7].parse::<u64>().ok()?;
        m.write_ms += f[10].parse::<u64>().ok()?;
        found = true;
    }
    found.then_some(m)
}

/// `ln` of the mean write latency in µs between two marks; None when too
/// few writes completed to time (or the counters went backwards).
pub fn covariate(from: Option<Mark>, to: Option<Mark>) -> Option<f64> {
    let (a, b) = (from?, to?);
    let writes = b.writes.checked_sub(a.writes)?;
    let ms = b.write_ms.checked_sub(a.write_ms)?;
    (writes >= MIN_WRITES && ms > 0).then(|| (ms as f64 * 1000.0 / writes as f64).ln())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATS: &str = "\
 254       0 vda 805981 53354 83287410 1129755 140163023 2062347 2922035696 17372715 0 6200812 21573098 166899 77 1075199592 115008 53168286 2955618
 253       0 zram0 0 0 0 0 10 0 0 50 0 0 0 0 0 0 0 0 0
   7       0 loop0 5 0 10 1 0 0 0 0 0 1 1 0 0 0 0 0 0
";

    #[test]
    fn sums_the_named_disks_only() {
        let m = parse(STATS, &["vda".to_string()]).unwrap();
        assert_eq!(m.writes, 140163023);
        assert_eq!(m.write_ms, 17372715);
        assert_eq!(parse(STATS, &["sdz".to_string()]), None);
    }

    #[test]
    fn the_covariate_is_the_log_of_microseconds_per_write() {
        let a = Mark {
            writes: 100,
            write_ms: 10,
        };
        let b = Mark {
            writes: 300,
            write_ms: 30,
        };
        // 20 ms over 200 writes: 100 µs each.
        let c = covariate(Some(a), Some(b)).unwrap();
        assert!((c - 100f64.ln()).abs() < 1e-12);
        assert_eq!(covariate(Some(a), Some(a)), None);
        assert_eq!(covariate(Some(b), Some(a)), None);
        assert_eq!(covariate(None, Some(b)), None);
    }

    #[test]
    fn finds_this_hosts_physical_disks_and_reads_them() {
        // Every host the tests run on has a disk under /sys/block that is
        // not virtual; a host without one would run trials unadjusted.
        let d = physical_disks(Path::new("/sys/block"));
        assert!(
            !d.is_empty(),
            "no physical disk under /sys/block: the trial's covariate cannot be read here"
        );
        assert!(d
            .iter()
            .all(|n| !n.starts_with("loop") && !n.starts_with("zram")));
        assert!(mark().is_some(), "/proc/diskstats has none of {d:?}");
    }
}
