//! The evaluation's data: one record per scenario (every configuration's
//! commits/s over repeats, and one probed observation in RT1 and in RT0),
//! read from `advisor/bench/eval/measure.py`'s JSON lines.

use std::collections::BTreeMap;
use std::path::Path;

use redoctor_advisor::model::{CalibrationPoint, Config, Inputs, Outcome};
use redoctor_advisor::{Facts, Summary};
use redoctor_stats::{median, welch_p_value};
use serde::Deserialize;

#[derive(Deserialize)]
pub struct Cell {
    pub tps: Option<f64>,
}

#[derive(Deserialize)]
pub struct Obs {
    pub summary: Option<Summary>,
    pub facts: Option<Facts>,
    #[serde(default)]
    pub window_rates: Vec<f64>,
}

#[derive(Deserialize)]
pub struct Record {
    pub key: String,
    pub workload: String,
    pub users: u32,
    pub cores: u32,
    pub binlog: bool,
    pub flush: u8,
    pub storage: String,
    /// Key access when skewed (`pareto:0.2`, `zipf:0.8`); None: uniform.
    #[serde(default)]
    pub access: Option<String>,
    pub cells: BTreeMap<String, Vec<Cell>>,
    pub observations: BTreeMap<String, Obs>,
}

impl Record {
    /// The configuration `label` is in effect under this load: a cap or a
    /// throttle at least as large as the users never holds anyone back, so
    /// `RT0+cap4` at 1 user is `RT0`, and their repeats measure the same
    /// thing.
    pub fn canonical(&self, label: &str) -> String {
        let mut parts = label.split('+');
        let mut out = parts.next().unwrap_or_default().to_string();
        for p in parts {
            let limit = p
                .strip_prefix("cap")
                .or_else(|| p.strip_prefix("throttle"))
                .and_then(|n| n.parse::<u32>().ok());
            if limit.is_some_and(|n| self.users <= n) {
                continue;
            }
            out.push('+');
            out.push_str(p);
        }
        out
    }
    /// Every repeat of the configurations equivalent to `config`.
    pub fn samples(&self, config: &str) -> Vec<f64> {
        let want = self.canonical(config);
        self.cells
            .iter()
            .filter(|(k, _)| self.canonical(k) == want)
            .flat_map(|(_, v)| v.iter().filter_map(|c| c.tps))
            .collect()
    }
    pub fn median(&self, config: &str) -> Option<f64> {
        median(&self.samples(config))
    }
    /// The best configuration by median (equivalent configurations pooled).
    pub fn best(&self) -> (String, f64) {
        self.cells
            .keys()
            .map(|k| self.canonical(k))
            .filter_map(|k| self.median(&k).map(|m| (k, m)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or_default()
    }
    /// Families it belongs to: its workload plus the cross-cutting sets.
    pub fn families(&self) -> Vec<String> {
        let mut f = vec![format!("workload:{}", self.workload)];
        if self.users >= 1024 {
            f.push("users>=1024".into());
        }
        if self.storage == "tmpfs" {
            f.push("tmpfs".into());
        }
        if self.cores == 1 {
            f.push("1cpu".into());
        }
        if self.binlog {
            f.push("binlog".into());
        }
        if self.flush != 1 {
            f.push("flush2".into());
        }
        if self.access.is_some() {
            f.push("skew".into());
        }
        f
    }
    pub fn inputs(&self, obs: &str) -> Option<(Inputs, &Obs)> {
        let o = self.observations.get(obs)?;
        let i = Inputs::from_summary(
            o.summary.as_ref()?,
            o.facts.as_ref()?,
            o.window_rates.clone(),
        )
        .ok()?;
        Some((i, o))
    }
}

/// Welch's two-sided p-value on the logs of two samples.
pub fn welch(a: &[f64], b: &[f64]) -> Option<f64> {
    let ln = |x: &[f64]| x.iter().map(|v| v.max(1e-9).ln()).collect::<Vec<f64>>();
    welch_p_value(&ln(a), &ln(b))
}

/// Noise of ln(median) from the repeats' spread (standard error, normal approx.).
pub fn log_se(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.2;
    }
    let l: Vec<f64> = v.iter().map(|x| x.max(1e-9).ln()).collect();
    let n = l.len() as f64;
    let m = l.iter().sum::<f64>() / n;
    let sd = (l.iter().map(|y| (y - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    1.25 * sd / n.sqrt()
}

/// Calibration points from records: each observation paired with every
/// other configuration's measured median.
pub fn points(records: &[&Record]) -> Vec<CalibrationPoint> {
    let mut out = Vec::new();
    for r in records {
        for obs in ["RT1", "RT0"] {
            let Some((inputs, _)) = r.inputs(obs) else {
                continue;
            };
            let Some(base) = r.median(obs) else { continue };
            let base_se = log_se(&r.samples(obs));
            let outcomes = r
                .cells
                .keys()
                .filter(|k| k.as_str() != obs)
                .filter_map(|k| {
                    let config = parse_config(k)?;
                    let m = r.median(k)?;
                    Some(Outcome {
                        config,
                        ratio: m / base,
                        noise: Some(
                            (base_se.powi(2) + log_se(&r.samples(k)).powi(2))
                                .sqrt()
                                .max(0.02),
                        ),
                    })
                })
                .collect();
            out.push(CalibrationPoint {
                label: format!("{}@{obs}", r.key),
                load: r.key.clone(),
                inputs,
                outcomes,
            });
        }
    }
    out
}

/// `RT0+cap4+throttle16` -> Config.
pub fn parse_config(label: &str) -> Option<Config> {
    let mut parts = label.split('+');
    let redo_threads = match parts.next()? {
        "RT1" => true,
        "RT0" => false,
        _ => return None,
    };
    let mut c = Config {
        redo_threads,
        cap: 0,
        throttle: 0,
    };
    for p in parts {
        if let Some(n) = p.strip_prefix("cap") {
            c.cap = n.parse().ok()?;
        } else if let Some(n) = p.strip_prefix("throttle") {
            c.throttle = n.parse().ok()?;
        } else {
            return None;
        }
    }
    Some(c)
}

pub fn geomean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.max(1e-9).ln()).sum::<f64>() / v.len() as f64).exp()
}

/// `DATA` may name several files, comma-separated: a scenario in a later
/// file replaces the one with the same key in an earlier file (a family
/// measured again on another day), in the earlier file's order.
pub fn load_all(spec: &str) -> Vec<Record> {
    let mut records: Vec<Record> = Vec::new();
    for path in spec.split(',') {
        for r in load(Path::new(path)) {
            match records.iter_mut().find(|x| x.key == r.key) {
                Some(old) => *old = r,
                None => records.push(r),
            }
        }
    }
    records
}

pub fn load(path: &Path) -> Vec<Record> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("advice_eval: reading {}: {e}", path.display());
        std::process::exit(1)
    });
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                eprintln!("advice_eval: {}:{}: {e}", path.display(), i + 1);
                std::process::exit(1)
            })
        })
        .collect()
}

pub fn all_families(records: &[Record]) -> Vec<String> {
    let mut f: Vec<String> = records.iter().flat_map(|r| r.families()).collect();
    f.sort();
    f.dedup();
    f
}
