//! The signal tables shared by every human-readable format: rows of cells.

use redoctor_probes::Role;

use crate::advice::Diagnosis;
use crate::evaluate::fmt_num;
use crate::summary::{ratio, SIGNAL_DOCS};

/// A table: title, header, rows.
pub struct Table {
    pub title: &'static str,
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

/// Summary signals, per-role and per-file-kind tables.
pub fn tables(d: &Diagnosis) -> Vec<Table> {
    let mut out = Vec::new();
    out.push(Table {
        title: "Signals (all windows)",
        header: vec!["signal", "value", "unit", "meaning"],
        rows: SIGNAL_DOCS
            .iter()
            .map(|(k, unit, doc)| {
                let v = d.summary.get(*k).copied().unwrap_or(0.0);
                vec![k.to_string(), fmt_num(v), unit.to_string(), doc.to_string()]
            })
            .collect(),
    });
    let secs = d.summary.get("window_s").copied().unwrap_or(1.0).max(1e-9);
    let mut roles: std::collections::BTreeMap<Role, [f64; 6]> = Default::default();
    for w in &d.windows {
        for (r, s) in &w.roles {
            let e = roles.entry(*r).or_default();
            e[0] = e[0].max(f64::from(s.threads));
            e[1] += s.oncpu_ns as f64;
            e[2] += (s.voluntary_switches + s.involuntary_switches) as f64;
            e[3] += s.runq_wait_ns as f64;
            e[4] += s.wakeups_sent as f64;
            e[5] += s.futex_wait_ns as f64;
        }
    }
    out.push(Table {
        title: "Roles",
        header: vec![
            "role",
            "threads",
            "CPUs busy",
            "switches/s",
            "runq wait share",
            "wakeups sent/s",
            "futex wait (threads blocked)",
        ],
        rows: roles
            .iter()
            .map(|(r, e)| {
                vec![
                    r.to_string(),
                    fmt_num(e[0]),
                    fmt_num(e[1] / 1e9 / secs),
                    fmt_num(e[2] / secs),
                    fmt_num(ratio(e[3], e[1] + e[3])),
                    fmt_num(e[4] / secs),
                    fmt_num(e[5] / 1e9 / secs),
                ]
            })
            .collect(),
    });
    let mut io: std::collections::BTreeMap<String, [f64; 4]> = Default::default();
    for w in &d.windows {
        for (k, f) in &w.io {
            let e = io.entry(k.to_string()).or_default();
            e[0] += f.write_calls as f64;
            e[1] += f.write_bytes as f64;
            e[2] += f.fsync_calls as f64;
            e[3] += f.fsync_ns as f64;
        }
    }
    out.push(Table {
        title: "I/O by file kind",
        header: vec![
            "kind",
            "writes/s",
            "MB written/s",
            "fsyncs/s",
            "mean fsync us",
        ],
        rows: io
            .iter()
            .map(|(k, e)| {
                vec![
                    k.clone(),
                    fmt_num(e[0] / secs),
                    fmt_num(e[1] / 1e6 / secs),
                    fmt_num(e[2] / secs),
                    fmt_num(ratio(e[3], e[2]) / 1e3),
                ]
            })
            .collect(),
    });
    out
}
