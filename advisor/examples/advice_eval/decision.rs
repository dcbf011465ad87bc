//! Scoring the decision rule without a trial, with the model a
//! `redoctor calibrate` file gives (never one fitted on the scenarios):
//!
//! - `tune SPEC --calibration 2=FILE[,1=FILE]`: on the tuning scenarios,
//!   each family left out of the priors in turn (the priors learned on the
//!   others, the family's scenarios advised with them);
//! - `frozen DATA --calibration ... --priors FILE`: the frozen held-out set,
//!   scored once with the shipped priors.
//!
//! A scenario's advice starts from RT1 (the engine's and MySQL 8.0's
//! default) and is scored by the median its repeats measured for the
//! advised configuration over the oracle's best. "Harmful": the advice
//! measured at least 5% below the current configuration, beyond noise
//! (Welch's t-test on the logs of the repeats, alpha 0.05).

use std::collections::BTreeMap;
use std::path::Path;

use redoctor_advisor::decision::Priors;

use redoctor_advisor::model::calibration::Calibration;
use redoctor_advisor::model::Model;
use redoctor_advisor::{diagnose_summary, RuleSet};

use crate::records::{geomean, parse_config, welch, Record};

/// The models of a calibration per CPU count: `2=FILE,1=FILE`.
pub fn models(spec: &str) -> BTreeMap<u32, Model> {
    spec.split(',')
        .map(|kv| {
            let (cpus, path) = kv.split_once('=').unwrap_or_else(|| {
                eprintln!("advice_eval: --calibration takes CPUS=FILE[,CPUS=FILE], not {kv}");
                std::process::exit(2)
            });
            let path = Path::new(path);
            let mut c = Calibration::load(path).unwrap_or_else(|e| {
                eprintln!("advice_eval: {e}");
                std::process::exit(1)
            });
            match c.refit_if_stale() {
                Err(e) => {
                    eprintln!("advice_eval: refitting {}: {e}", path.display());
                    std::process::exit(1)
                }
                Ok(was) => {
                    if std::env::var_os("ADVICE_EVAL_DETAIL").is_some() {
                        for r in &c.fitted.residuals {
                            eprintln!(
                                "  {:<40} {:>8} -> {:<16} measured {:>6.3} fitted {:>6.3} held-out {}",
                                r.label,
                                r.from.to_string(),
                                r.to.to_string(),
                                r.measured,
                                r.fitted,
                                r.held_out.map_or("-".into(), |h| format!("{h:.3}"))
                            );
                        }
                        eprintln!("  params {:?}", c.fitted.params);
                    }
                    eprintln!(
                    "advice_eval: {}{}: held-out error {:.3} log (as measured {:.3}, outcome noise {:.3}), in-sample {:.3}",
                    path.display(),
                    was.map_or(String::new(), |w| format!(" (refitted from revision {w})")),
                    c.fitted.sigma,
                    c.fitted.sigma_raw,
                    c.fitted.outcome_noise,
                    c.fitted.in_sample_rms
                    )
                }
            }
            (
                cpus.parse().expect("CPUS is a number"),
                Model::from_calibration(&c, path),
            )
        })
        .collect()
}

/// One scenario, advised without a trial.
#[derive(Clone)]
pub struct Scored {
    pub key: String,
    pub families: Vec<String>,
    pub best: String,
    pub advised: String,
    /// Share of the oracle's best.
    pub pct: f64,
    pub harmful: bool,
    /// Static policies: always ON (8.0), OFF below 32 CPUs (8.4), seed
    /// 000's (OFF with the binlog on at most 16 cores).
    pub statics: [f64; 3],
    /// The expected gain and P(worse) the advice carried (None: no change).
    pub expected: Option<(f64, f64)>,
    /// Every candidate as the decision saw it, compactly (model, prior,
    /// posterior, risk, utility): printed with ADVICE_EVAL_DETAIL=1.
    pub detail: String,
}

/// Advises `r` from its RT1 observation with `rules` (and their priors)
/// and the model for its CPU count.
pub fn score(r: &Record, rules: &RuleSet, models: &BTreeMap<u32, Model>) -> Option<Scored> {
    let model = models.get(&r.cores).or_else(|| models.values().next())?;
    let o = r.observations.get("RT1")?;
    let d = diagnose_summary(
        0,
        o.summary.clone()?,
        o.window_rates.clone(),
        vec![],
        o.facts.clone()?,
        rules,
        model,
    )
    .ok()?;
    let start = parse_config("RT1")?;
    let advised = r.canonical(&start.with(&d.proposed_settings()).to_string());
    let (best, best_tps) = r.best();
    let pct = |c: &str| r.median(c).map_or(0.0, |m| m / best_tps);
    let harmful = advised != "RT1"
        && r.median(&advised).unwrap_or(0.0) <= 0.95 * r.median("RT1").unwrap_or(0.0)
        && welch(&r.samples("RT1"), &r.samples(&advised)).is_some_and(|p| p < 0.05);
    let m84 = if r.cores < 32 { "RT0" } else { "RT1" };
    let seed000 = if r.binlog && r.cores <= 16 {
        "RT0"
    } else {
        "RT1"
    };
    let expected = d
        .recommendations
        .first()
        .and_then(|rec| rec.predicted.as_ref())
        .map(|p| {
            (
                p.commits_per_s / p.current_commits_per_s - 1.0,
                p.p_worse.unwrap_or(0.0),
            )
        });
    let detail = d
        .model
        .as_ref()
        .and_then(|m| m.decision.as_ref())
        .map(|dec| {
            dec.assessments
                .iter()
                .map(|a| {
                    format!(
                        "{} m{:+.0}%/{:.2} p{} -> {:+.0}% P{:.0}% u{:+.3} (measured {})",
                        a.config,
                        (a.model_log_ratio.exp() - 1.0) * 100.0,
                        a.model_sigma,
                        a.prior.as_ref().map_or("-".into(), |p| format!(
                            "{:+.0}%/{:.2}[{} n{}]",
                            (p.mean.exp() - 1.0) * 100.0,
                            p.spread,
                            p.regime,
                            p.n
                        )),
                        a.gain * 100.0,
                        a.p_worse * 100.0,
                        a.utility,
                        r.median(&r.canonical(&a.config.to_string()))
                            .zip(r.median("RT1"))
                            .map_or("?".into(), |(m, b)| format!(
                                "{:+.0}%",
                                (m / b - 1.0) * 100.0
                            ))
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default();
    Some(Scored {
        detail,
        key: r.key.clone(),
        families: r.families(),
        best,
        pct: pct(&advised),
        advised,
        harmful,
        statics: [pct("RT1"), pct(m84), pct(seed000)],
        expected,
    })
}

/// Per family and overall: advised geomean, min, below 90%, harmful, the
/// static policies.
pub fn table(rows: &[Scored]) {
    let mut fams: Vec<String> = rows.iter().flat_map(|r| r.families.clone()).collect();
    fams.sort();
    fams.dedup();
    println!("| family | scenarios | advised | min | < 90% | harmful | always ON (8.0) | OFF < 32 CPUs (8.4) | seed 000 |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let line = |name: &str, v: Vec<&Scored>| {
        let g = |f: &dyn Fn(&Scored) -> f64| geomean(&v.iter().map(|r| f(r)).collect::<Vec<_>>());
        println!(
            "| {name} | {} | {:.1}% | {:.0}% | {} | {} | {:.1}% | {:.1}% | {:.1}% |",
            v.len(),
            g(&|r| r.pct) * 100.0,
            v.iter().map(|r| r.pct).fold(f64::INFINITY, f64::min) * 100.0,
            v.iter().filter(|r| r.pct < 0.90).count(),
            v.iter().filter(|r| r.harmful).count(),
            g(&|r| r.statics[0]) * 100.0,
            g(&|r| r.statics[1]) * 100.0,
            g(&|r| r.statics[2]) * 100.0,
        );
    };
    for f in &fams {
        line(f, rows.iter().filter(|r| r.families.contains(f)).collect());
    }
    if !fams.iter().any(|f| f == "**all**") {
        line("**all**", rows.iter().collect());
    }
}

pub fn per_scenario(rows: &[Scored]) {
    println!(
        "\n| scenario | oracle best | advised | % of best | expected (P worse) | harmful | 8.4 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {:.0}% | {} | {} | {:.0}% |",
            r.key,
            r.best,
            r.advised,
            r.pct * 100.0,
            r.expected.map_or(String::new(), |(g, p)| format!(
                "{:+.0}% ({:.0}%)",
                g * 100.0,
                p * 100.0
            )),
            if r.harmful { "yes" } else { "" },
            r.statics[1] * 100.0
        );
        if std::env::var_os("ADVICE_EVAL_DETAIL").is_some() {
            println!("    {}", r.detail);
        }
    }
}

/// What the tuning evaluation leaves out, to show what each part brings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ablation {
    /// Priors and model together (the product).
    None,
    /// The model alone (with the loss asymmetry).
    NoPriors,
    /// The priors alone (the model's error taken as unbounded).
    NoModel,
}

/// The tuning evaluation: each family's priors learned without it.
pub fn tune(
    records: &[Record],
    models: &BTreeMap<u32, Model>,
    lambda: f64,
    min_utility: f64,
    ablation: Ablation,
) {
    let mut rules = RuleSet::shipped_and(&[]).expect("the shipped rules load");
    let mut per_family: Vec<Scored> = Vec::new();
    let mut by_workload: Vec<Scored> = Vec::new();
    for fam in &crate::records::all_families(records) {
        let train: Vec<&Record> = records
            .iter()
            .filter(|r| !r.families().contains(fam))
            .collect();
        rules.priors = crate::priors::learn(
            &train,
            models,
            lambda,
            min_utility,
            format!("without {fam}"),
        );
        match ablation {
            Ablation::None => {}
            Ablation::NoPriors => rules.priors.priors.clear(),
            Ablation::NoModel => {
                for p in &mut rules.priors.priors {
                    p.model_error = Some(1e3);
                }
            }
        }
        for r in records.iter().filter(|r| r.families().contains(fam)) {
            if let Some(s) = score(r, &rules, models) {
                if fam.starts_with("workload:") {
                    by_workload.push(s.clone());
                }
                per_family.push(Scored {
                    families: vec![fam.clone()],
                    ..s
                });
            }
        }
    }
    println!("## Tuning set, each family left out of the priors (λ = {lambda}, min utility {min_utility}, {ablation:?})\n");
    println!("Each family's scenarios advised with priors learned without it; **all**: every scenario once, with the priors learned without its workload.\n");
    let mut all = per_family;
    all.extend(by_workload.iter().cloned().map(|s| Scored {
        families: vec!["**all**".into()],
        ..s
    }));
    table(&all);
    per_scenario(&by_workload);
}

/// The frozen set, scored once with `priors`.
pub fn frozen(records: &[Record], models: &BTreeMap<u32, Model>, priors: Priors) {
    let mut rules = RuleSet::shipped_and(&[]).expect("the shipped rules load");
    println!(
        "## Frozen set: {} scenarios, priors `{}` (λ = {}, min utility {})\n",
        records.len(),
        priors.source,
        priors.loss_asymmetry,
        priors.min_utility
    );
    rules.priors = priors;
    for (cpus, m) in models {
        println!("- {cpus} CPU(s): {}", m.source);
    }
    println!();
    let rows: Vec<Scored> = records
        .iter()
        .filter_map(|r| score(r, &rules, models))
        .collect();
    table(&rows);
    per_scenario(&rows);
}

/// The model's error on measured scenarios (`errors DATA --calibration`):
/// per family, the RMS log error of every prediction from the RT1
/// observation against the measured ratio, as measured and with the
/// ground truth's own noise taken out (`model_error`), per transition kind.
pub fn errors(records: &[Record], models: &BTreeMap<u32, Model>) {
    use redoctor_advisor::decision::Transition;
    use redoctor_advisor::model::fit::model_error;
    // (family, "mode" | "cap/throttle") -> (squared errors, noise variances)
    type Errors = (Vec<f64>, Vec<f64>);
    let mut acc: BTreeMap<(String, &str), Errors> = BTreeMap::new();
    for r in records {
        let Some(model) = models.get(&r.cores).or_else(|| models.values().next()) else {
            continue;
        };
        let (Some((inputs, o)), Some(base)) = (r.inputs("RT1"), r.median("RT1")) else {
            continue;
        };
        let current = o
            .facts
            .as_ref()
            .map(|f| f.settings.clone())
            .unwrap_or_default();
        let mut seen = Vec::new();
        for label in r.cells.keys() {
            let canon = r.canonical(label);
            if canon == "RT1" || seen.contains(&canon) {
                continue;
            }
            seen.push(canon.clone());
            let (Some(to), Some(m)) = (parse_config(&canon), r.median(&canon)) else {
                continue;
            };
            let Some(t) = Transition::between(&inputs.config, &to, inputs.users) else {
                continue;
            };
            let Some(p) = model.predict(&inputs, &[to], &current).into_iter().next() else {
                continue;
            };
            let e2 = (p.ratio / (m / base)).ln().powi(2);
            let n2 = crate::records::log_se(&r.samples("RT1")).powi(2)
                + crate::records::log_se(&r.samples(&canon)).powi(2);
            let kind = if t == Transition::Mode {
                "mode"
            } else {
                "cap/throttle"
            };
            for fam in r.families().into_iter().chain(["**all**".to_string()]) {
                let e = acc.entry((fam, kind)).or_default();
                e.0.push(e2);
                e.1.push(n2);
            }
        }
    }
    // A few cells whose ground truth collapsed (RT0 at 1024 users on one
    // CPU) have a noise larger than any model error and swamp the
    // subtraction; the last two columns keep only the cells measured to
    // within WELL_MEASURED (log) and take the median, which they cannot move.
    const WELL_MEASURED: f64 = 0.1;
    println!("| family | change | predictions | RMS log error (measured) | ground truth noise (RMS) | model's own error (noise out) | well-measured cells | their RMS error | median abs error |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for ((fam, kind), (e, n)) in &acc {
        let rms = |v: &[f64]| (v.iter().sum::<f64>() / v.len() as f64).sqrt();
        let well: Vec<f64> = e
            .iter()
            .zip(n)
            .filter(|(_, n2)| n2.sqrt() < WELL_MEASURED)
            .map(|(e2, _)| *e2)
            .collect();
        let abs: Vec<f64> = e.iter().map(|e2| e2.sqrt()).collect();
        println!(
            "| {fam} | {kind} | {} | {:.3} | {:.3} | {:.3} | {} | {:.3} | {:.3} |",
            e.len(),
            rms(e),
            rms(n),
            model_error(rms(e), rms(n)),
            well.len(),
            if well.is_empty() {
                f64::NAN
            } else {
                rms(&well)
            },
            redoctor_stats::median(&abs).unwrap_or(f64::NAN)
        );
    }
}

/// The what-if across CPU counts (`whatif DATA --calibration 1=F,2=F`):
/// every pair of scenarios that differ only in their CPUs; from one's RT1
/// observation and its CPU count's calibration, the model predicts every
/// configuration the other measured on the other CPU count
/// (`Model::what_if`). Scored: whether the predicted best is the measured
/// best (or within its noise), the RMS log error of the predicted ratios
/// to RT1 there, and of the scaling (RT1 there over RT1 here).
pub fn whatif(records: &[Record], models: &BTreeMap<u32, Model>, priors: &Priors) {
    let same_load = |a: &Record, b: &Record| {
        a.workload == b.workload
            && a.users == b.users
            && a.binlog == b.binlog
            && a.flush == b.flush
            && a.storage == b.storage
            && a.access == b.access
            && a.cores != b.cores
    };
    println!("| from | to CPUs | predicted best | model's best | best expected | measured best | match | within noise | RMS log error of ratios to RT1 | scaling predicted / measured |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let (mut n, mut hits, mut near, mut model_hits, mut expected_hits) = (0, 0, 0, 0, 0);
    let mut distinct = 0;
    let (mut ratio_sq, mut scale_sq) = (Vec::new(), Vec::new());
    for a in records {
        let Some(model) = models.get(&a.cores) else {
            continue;
        };
        let Some((inputs, _)) = a.inputs("RT1") else {
            continue;
        };
        for b in records.iter().filter(|b| same_load(a, b)) {
            let configs: Vec<_> = b.cells.keys().filter_map(|k| parse_config(k)).collect();
            let w = model.what_if(&inputs, &configs, b.cores);
            let rt1 = parse_config("RT1").expect("a configuration");
            let Some(pred_rt1) = w.predictions.iter().find(|p| p.config == rt1) else {
                continue;
            };
            // The model alone: its best; with the priors: the decision's.
            let model_best = b.canonical(&w.predictions[0].config.to_string());
            let dec = redoctor_advisor::decision::what_if(model, &inputs, &w, priors);
            let pred_best = b.canonical(&dec.chosen.unwrap_or(rt1).to_string());
            let (best, best_tps) = b.best();
            // The posterior's best expected (no loss, no bar): the ranking
            // a what-if reports, beside the decision it would take.
            let expected_best = dec
                .assessments
                .iter()
                .filter(|x| x.log_ratio > 0.0)
                .max_by(|x, y| x.log_ratio.total_cmp(&y.log_ratio))
                .map_or(rt1, |x| x.config);
            let expected_best = b.canonical(&expected_best.to_string());
            expected_hits += usize::from(expected_best == best);
            model_hits += usize::from(model_best == best);
            // Whether the measured best stands apart from the runner-up
            // (Welch p < 0.05): where it does not, which one is "best" is
            // the repeats' draw, and no prediction can match it reliably.
            let runner_up = b
                .cells
                .keys()
                .map(|k| b.canonical(k))
                .filter(|k| *k != best)
                .filter_map(|k| b.median(&k).map(|m| (k, m)))
                .max_by(|x, y| x.1.total_cmp(&y.1));
            let apart = runner_up.is_none_or(|(k, _)| {
                welch(&b.samples(&best), &b.samples(&k)).is_some_and(|p| p < 0.05)
            });
            distinct += usize::from(apart);
            let hit = pred_best == best;
            let within = hit
                || welch(&b.samples(&best), &b.samples(&pred_best)).is_some_and(|p| p >= 0.05)
                || b.median(&pred_best).is_some_and(|m| m >= 0.98 * best_tps);
            let mut sq = Vec::new();
            let mut seen = Vec::new();
            for p in &w.predictions {
                let c = b.canonical(&p.config.to_string());
                if c == "RT1" || seen.contains(&c) {
                    continue;
                }
                seen.push(c.clone());
                if let (Some(m), Some(base)) = (b.median(&c), b.median("RT1")) {
                    sq.push((p.ratio / pred_rt1.ratio / (m / base)).ln().powi(2));
                }
            }
            let scale = match (b.median("RT1"), a.median("RT1")) {
                (Some(there), Some(here)) => Some(pred_rt1.ratio / (there / here)),
                _ => None,
            };
            let rms = (sq.iter().sum::<f64>() / sq.len().max(1) as f64).sqrt();
            n += 1;
            hits += usize::from(hit);
            near += usize::from(within);
            ratio_sq.extend(sq);
            if let Some(s) = scale {
                scale_sq.push(s.ln().powi(2));
            }
            println!(
                "| {} | {} | {pred_best} | {model_best} | {expected_best} | {best} | {} | {} | {rms:.3} | {} |",
                a.key,
                b.cores,
                if hit { "yes" } else { "no" },
                if within { "yes" } else { "no" },
                scale.map_or("?".into(), |s| format!("{s:.2}"))
            );
        }
    }
    let rms = |v: &[f64]| (v.iter().sum::<f64>() / v.len().max(1) as f64).sqrt();
    println!(
        "\n{n} predictions across CPU counts: the decision's pick there (model and priors) is the measured best in {hits} ({:.0}%), within the measured best's noise in {near} ({:.0}%); the model's own best is in {model_hits} ({:.0}%), the posterior's best expected in {expected_hits} ({:.0}%); RMS log error of the model's ratios to RT1 {:.3}, of the scaling {:.3}. The measured best stands apart from its runner-up (Welch p < 0.05) in {distinct} of {n}.",
        100.0 * hits as f64 / n.max(1) as f64,
        100.0 * near as f64 / n.max(1) as f64,
        100.0 * model_hits as f64 / n.max(1) as f64,
        100.0 * expected_hits as f64 / n.max(1) as f64,
        rms(&ratio_sq),
        rms(&scale_sq)
    );
}
