//! Advice-quality benchmark: for each scenario of a sweep results file, run
//! `redoctor diagnose --demo` on the engine in its default configuration
//! (the scenario's workload, users, cores, binlog and flush setting), take
//! the advice, and compare the TPS the sweep measured for the advised
//! configuration with the oracle's best and with three static policies:
//! always ON (MySQL 8.0), OFF below 32 CPUs (MySQL 8.4), and seed 000's
//! "OFF when binlog ON and <= 16 cores". Prints a table and geometric means.
//!
//! ```sh
//! cargo build --release -p redoctor-engine -p redoctor-agent
//! cargo run --release -p redoctor-advisor --example advice_quality -- RESULTS.json \
//!     [--duration 3s] [--only WORKLOAD/USERS/CORES/BINLOG ...] [--redoctor PATH]
//! ```
//! Needs root (the probes). TPS are the sweep's medians; the advised
//! configuration must be one of the sweep's configurations (the grid's
//! settings are matched against the engine defaults plus the advice); when
//! none matches exactly, the closest (most advised settings in common, the
//! redo mode first) is used and marked `~`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use redoctor_advisor::facts::DEFAULT_SETTINGS;
use redoctor_advisor::Diagnosis;
use redoctor_engine::sweep::oracle::ScenarioVerdict;
use redoctor_engine::sweep::{oracle, SweepResults};

type Settings = BTreeMap<String, String>;

struct Opts {
    results: PathBuf,
    redoctor: PathBuf,
    duration: String,
    only: Vec<String>,
}

fn opts() -> Result<Opts, String> {
    let mut args = std::env::args().skip(1);
    let mut o = Opts {
        results: PathBuf::new(),
        redoctor: std::env::current_exe()
            .map_err(|e| e.to_string())?
            .parent()
            .and_then(|p| p.parent())
            .ok_or("no target directory")?
            .join("redoctor"),
        duration: "3s".into(),
        only: vec![],
    };
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--redoctor" => o.redoctor = val()?.into(),
            "--duration" => o.duration = val()?,
            "--only" => o.only.push(val()?),
            _ if o.results.as_os_str().is_empty() && !a.starts_with("--") => o.results = a.into(),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.results.as_os_str().is_empty() {
        return Err("usage: advice_quality RESULTS.json [--duration 3s] [--only WORKLOAD/USERS/CORES/BINLOG] [--redoctor PATH]".into());
    }
    Ok(o)
}

fn defaults() -> Settings {
    DEFAULT_SETTINGS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Value of `k` in a configuration, the default when it does not set it.
fn value(c: &Settings, k: &str) -> String {
    c.get(k)
        .cloned()
        .unwrap_or_else(|| defaults().get(k).cloned().unwrap_or_default())
}

/// The grid configuration equal to defaults + `advice` (exact), or the closest.
fn match_config(grid: &BTreeMap<String, Settings>, advice: &Settings) -> (String, bool) {
    let mut keys: Vec<String> = advice.keys().cloned().collect();
    for c in grid.values() {
        keys.extend(c.keys().cloned());
    }
    let want = |k: &str| {
        advice
            .get(k)
            .cloned()
            .unwrap_or_else(|| value(&BTreeMap::new(), k))
    };
    let score = |c: &Settings| {
        let redo = value(c, "innodb_log_writer_threads") == want("innodb_log_writer_threads");
        let same = keys.iter().filter(|k| value(c, k) == want(k)).count();
        (redo, same)
    };
    let exact = grid
        .iter()
        .find(|(_, c)| keys.iter().all(|k| value(c, k) == want(k)));
    if let Some((name, _)) = exact {
        return (name.clone(), true);
    }
    let best = grid
        .iter()
        .max_by_key(|(_, c)| score(c))
        .map(|(n, _)| n.clone())
        .unwrap_or_default();
    (best, false)
}

/// The configuration that only sets the redo mode to `on`.
fn redo_only(grid: &BTreeMap<String, Settings>, on: bool) -> Option<String> {
    let want: Settings = BTreeMap::from([(
        "innodb_log_writer_threads".to_string(),
        if on { "ON" } else { "OFF" }.to_string(),
    )]);
    match match_config(grid, &want) {
        (n, true) => Some(n),
        _ => None,
    }
}

/// Whether `config`'s gap to the best is beyond noise (the oracle's Welch test).
fn gap(s: &ScenarioVerdict, config: &str) -> &'static str {
    match s.configs.iter().find(|c| c.config == config) {
        _ if s.best == config => "best",
        Some(c) => match c.beyond_noise {
            Some(true) => "yes",
            Some(false) => "no",
            None => "?",
        },
        None => "n/a",
    }
}

fn tps(s: &ScenarioVerdict, config: &str) -> Option<f64> {
    s.configs
        .iter()
        .find(|c| c.config == config)
        .map(|c| c.median_tps)
}

fn diagnose(o: &Opts, s: &ScenarioVerdict) -> Result<Diagnosis, String> {
    let sc = &s.scenario;
    let out = Command::new(&o.redoctor)
        .args([
            "diagnose",
            "--demo",
            "--format",
            "json",
            "--duration",
            &o.duration,
        ])
        .args(["--workload", &sc.workload, "--users", &sc.users.to_string()])
        .args(["--cpus", &sc.cores.to_string()])
        .args([
            "--engine-set",
            &format!("log_bin={}", if sc.binlog { "ON" } else { "OFF" }),
        ])
        .args([
            "--engine-set",
            &format!("innodb_flush_log_at_trx_commit={}", sc.flush),
        ])
        .output()
        .map_err(|e| format!("running {}: {e}", o.redoctor.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Diagnosis::from_json(&String::from_utf8_lossy(&out.stdout))
}

fn geomean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.max(1e-9).ln()).sum::<f64>() / v.len() as f64).exp()
}

fn main() {
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("advice_quality: {e}");
            std::process::exit(2);
        }
    };
    let results = match SweepResults::load(&o.results) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("advice_quality: {e}");
            std::process::exit(1);
        }
    };
    let grid = &results.grid.configurations;
    let (on, off) = (redo_only(grid, true), redo_only(grid, false));
    let (Some(on), Some(off)) = (on, off) else {
        eprintln!("advice_quality: the grid needs a configuration setting only innodb_log_writer_threads=ON and one =OFF (the static policies)");
        std::process::exit(1);
    };
    let report = oracle(&results);
    println!("| scenario | oracle best (TPS) | advice | advised config | advised % | gap beyond noise | 8.0 ON % | 8.4 OFF<32 % | seed000 % |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut ratios: [Vec<f64>; 4] = Default::default();
    let mut misses = Vec::new();
    for s in &report.scenarios {
        let sc = &s.scenario;
        let name = format!(
            "{}/{}/{}/{}",
            sc.workload,
            sc.users,
            sc.cores,
            if sc.binlog { "binlog" } else { "nobinlog" }
        );
        let key = format!("{}/{}/{}/{}", sc.workload, sc.users, sc.cores, sc.binlog);
        if !o.only.is_empty() && !o.only.contains(&key) {
            continue;
        }
        let d = match diagnose(&o, s) {
            Ok(d) => d,
            Err(e) => {
                println!(
                    "| {name} | {:.0} ({}) | diagnose failed: {} | | | | | | |",
                    s.best_tps,
                    s.best,
                    e.replace('|', "/")
                );
                continue;
            }
        };
        let advice = d.proposed_settings();
        let (cfg, exact) = match_config(grid, &advice);
        let pct = |c: &str| tps(s, c).map(|t| t / s.best_tps);
        let seed000 = if sc.binlog && sc.cores <= 16 {
            &off
        } else {
            &on
        };
        let m84 = if sc.cores < 32 { &off } else { &on };
        let row = [pct(&cfg), pct(&on), pct(m84), pct(seed000)];
        let advice_txt = if advice.is_empty() {
            format!("no change ({:?})", d.verdict.kind)
        } else {
            advice
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let f = |x: Option<f64>| x.map_or("n/a".to_string(), |x| format!("{:.0}%", x * 100.0));
        println!(
            "| {name} | {:.0} ({}) | {} | {}{} | {} | {} | {} | {} | {} |",
            s.best_tps,
            s.best,
            advice_txt,
            if exact { "" } else { "~" },
            cfg,
            f(row[0]),
            gap(s, &cfg),
            f(row[1]),
            f(row[2]),
            f(row[3])
        );
        if let Some(a) = row[0] {
            if a < 0.95 {
                misses.push(format!(
                    "{name}: advised {cfg} at {:.0}% of {} (gap beyond noise: {})",
                    a * 100.0,
                    s.best,
                    gap(s, &cfg)
                ));
            }
        }
        if row.iter().all(|x| x.is_some()) {
            for (i, x) in row.iter().enumerate() {
                ratios[i].push(x.unwrap());
            }
        }
    }
    println!();
    println!(
        "geometric mean of TPS / oracle best over {} scenarios: advised {:.1}%, always ON (8.0) {:.1}%, OFF below 32 CPUs (8.4) {:.1}%, seed 000 {:.1}%",
        ratios[0].len(),
        geomean(&ratios[0]) * 100.0,
        geomean(&ratios[1]) * 100.0,
        geomean(&ratios[2]) * 100.0,
        geomean(&ratios[3]) * 100.0
    );
    let real = misses.iter().filter(|m| m.ends_with("yes)")).count();
    println!(
        "scenarios where the advice is below 95% of the oracle: {} ({} of them beyond noise by the oracle's Welch test)",
        misses.len(),
        real
    );
    for m in misses {
        println!("  {m}");
    }
}
