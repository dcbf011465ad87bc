//! The signal tables shared by every human-readable format: rows of cells.

use redoctor_probes_common::Role;

use crate::advice::Diagnosis;
use crate::model::inputs::NOT_READ_BY_THE_MODEL;
use crate::num::fmt_num;
use crate::summary::{ratio, SIGNALS};

/// A table: title, header, rows.
pub struct Table {
    pub title: &'static str,
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

/// The model's predictions for every candidate and the inputs they rest on.
pub fn model_tables(d: &Diagnosis) -> Vec<Table> {
    let Some(m) = &d.model else { return vec![] };
    let mut out = Vec::new();
    let pct = |r: f64| format!("{:+.0}%", (r - 1.0) * 100.0);
    let mut rows = Vec::new();
    if let (Some(i), Some(c)) = (&m.inputs, &m.current) {
        rows.push(vec![
            format!("{} (current)", i.config),
            fmt_num(i.commits_per_s.round()),
            "observed".into(),
            String::new(),
            fmt_num(c.cpu_us),
            fmt_num(c.commit_latency_us),
            fmt_num(c.group),
            String::new(),
        ]);
    }
    for p in &m.predictions {
        let e = &p.estimate;
        let bound = if e
            .slot_bound
            .is_some_and(|s| s <= e.cpu_bound.min(e.latency_bound))
        {
            "slots"
        } else if e.cpu_bound <= e.latency_bound {
            "CPU"
        } else {
            "latency"
        };
        rows.push(vec![
            format!(
                "{}{}",
                p.config,
                if m.chosen.as_deref() == Some(p.config.to_string().as_str()) {
                    " (advised)"
                } else {
                    ""
                }
            ),
            fmt_num(p.commits_per_s.round()),
            format!("{} .. {}", fmt_num(p.low.round()), fmt_num(p.high.round())),
            format!(
                "{} [{}, {}]",
                pct(p.ratio),
                pct(p.ratio_low),
                pct(p.ratio_high)
            ),
            fmt_num(e.cpu_us),
            fmt_num(e.commit_latency_us),
            fmt_num(e.group),
            bound.into(),
        ]);
    }
    out.push(Table {
        title: "Model: predicted commits/s per candidate (95% interval)",
        header: vec![
            "configuration",
            "commits/s",
            "interval",
            "vs current",
            "CPU us/commit",
            "commit latency us",
            "group",
            "limited by",
        ],
        rows,
    });
    if let Some(dec) = &m.decision {
        let rows = dec
            .assessments
            .iter()
            .map(|a| {
                vec![
                    a.config.to_string(),
                    pct(a.model_log_ratio.exp()),
                    format!("{:.2}", a.model_sigma),
                    a.prior.as_ref().map_or("none".into(), |p| {
                        format!(
                            "{} {} (n {}): {}",
                            p.transition,
                            p.regime,
                            p.n,
                            pct(p.mean.exp())
                        )
                    }),
                    format!("{:.0}%", a.model_weight * 100.0),
                    format!(
                        "{} [{}, {}]",
                        pct(1.0 + a.gain),
                        pct(1.0 + a.low),
                        pct(1.0 + a.high)
                    ),
                    format!("{:.0}%", a.p_worse * 100.0),
                    format!("{:+.3}", a.utility),
                ]
            })
            .collect();
        out.push(Table {
            title: "Decision: each candidate's prediction combined with its prior (a loss weighed loss_asymmetry x a gain)",
            header: vec![
                "configuration",
                "model",
                "model error (log)",
                "prior",
                "model weight",
                "expected [95%]",
                "P(worse)",
                "expected utility",
            ],
            rows,
        });
    }
    if let Some(w) = m.what_if.as_ref().map(|w| &w.host) {
        let rows = w
            .predictions
            .iter()
            .map(|p| {
                vec![
                    p.config.to_string(),
                    fmt_num(p.commits_per_s.round()),
                    format!(
                        "{} [{}, {}]",
                        pct(p.ratio),
                        pct(p.ratio_low),
                        pct(p.ratio_high)
                    ),
                ]
            })
            .collect();
        out.push(Table {
            title: "What if: every candidate on a host of another CPU count (vs the rate observed here)",
            header: vec!["configuration", "commits/s", "vs observed here [95%]"],
            rows,
        });
    }
    let mut inputs = vec![
        vec!["constants from".to_string(), m.source.clone()],
        vec![
            "model error (held out)".to_string(),
            format!("{:.1}%", (m.sigma.exp() - 1.0) * 100.0),
        ],
    ];
    if !m.outside.is_empty() {
        inputs.push(vec![
            "outside the calibrated range".to_string(),
            format!(
                "{}: intervals widened to {:.0}% error",
                m.outside
                    .iter()
                    .map(|o| o.describe())
                    .collect::<Vec<_>>()
                    .join("; "),
                (m.sigma_used.exp() - 1.0) * 100.0
            ),
        ]);
    }
    if let Some(n) = &m.note {
        inputs.push(vec!["note".into(), n.clone()]);
    }
    if let Some(i) = &m.inputs {
        let v = serde_json::to_value(i).unwrap_or_default();
        if let Some(o) = v.as_object() {
            for (k, x) in o {
                if k == "window_rates" {
                    continue;
                }
                let val = match x {
                    serde_json::Value::Number(n) => fmt_num(n.as_f64().unwrap_or(0.0)),
                    serde_json::Value::Object(_) if k == "config" => i.config.to_string(),
                    other => other.to_string(),
                };
                let name = if NOT_READ_BY_THE_MODEL.contains(&k.as_str()) {
                    format!("{k} (observed, not read by the model)")
                } else {
                    k.clone()
                };
                inputs.push(vec![name, val]);
            }
        }
    }
    out.push(Table {
        title: "Model: inputs and constants",
        header: vec!["input", "value"],
        rows: inputs,
    });
    out
}

/// Model, summary signals, per-role and per-file-kind tables.
pub fn tables(d: &Diagnosis) -> Vec<Table> {
    let mut out = model_tables(d);
    out.push(Table {
        title: "Signals (all windows)",
        header: vec!["signal", "value", "unit", "meaning"],
        rows: SIGNALS
            .iter()
            .map(|s| {
                let v = d.summary.get(s.name).copied().unwrap_or(0.0);
                vec![
                    s.name.to_string(),
                    fmt_num(v),
                    s.unit.to_string(),
                    s.meaning.to_string(),
                ]
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
