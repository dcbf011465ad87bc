//! Advice-quality evaluation, scored on scenarios the model was not fitted
//! to (advisor/bench/README.md).
//!
//! ```sh
//! cargo run --release -p redoctor-advisor --example advice_eval -- score DATA.jsonl[,LATER.jsonl] [--trials TRIALS.jsonl]
//! cargo run --release -p redoctor-advisor --example advice_eval -- folds DATA.jsonl OUTDIR
//! ```
//! `DATA.jsonl` comes from `advisor/bench/eval/measure.py`: per scenario,
//! every configuration's commits/s over repeats and one probed observation
//! in RT1 and in RT0. `score` fits the model once per family with that
//! family left out and replays the advisor's diagnosis (`diagnose_summary`:
//! the same code as `redoctor diagnose`) on the family's scenarios; the
//! advised configuration is scored by the commits/s the repeats measured
//! for it, against the oracle's best and the static policies. `folds`
//! writes each family's held-out calibration file, for live `--trial` runs
//! (`advisor/bench/eval/trials.py`), which `score --trials` then scores.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;
use redoctor_advisor::model::calibration::{Calibration, HostFacts};
use redoctor_advisor::model::{fit, Config, Model};
use redoctor_advisor::{diagnose_summary, RuleSet};
use serde::Deserialize;

mod decision;
mod priors;
mod records;
use records::*;

/// The configuration the advisor leaves the server in, starting from `obs`.
fn advised(r: &Record, obs: &str, rules: &RuleSet, model: &Model) -> Option<String> {
    let o = r.observations.get(obs)?;
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
    let start = parse_config(obs)?;
    Some(start.with(&d.proposed_settings()).to_string())
}

fn model_without(records: &[Record], family: Option<&str>) -> Model {
    let train: Vec<&Record> = records
        .iter()
        .filter(|r| family.is_none_or(|f| !r.families().iter().any(|x| x == f)))
        .collect();
    let pts = points(&train);
    match fit(&pts) {
        Ok(f) => Model::from_fitted(
            &f,
            format!(
                "fitted on {} scenarios{}",
                train.len(),
                family.map_or(String::new(), |f| format!(" without {f}"))
            ),
        ),
        Err(e) => {
            eprintln!("advice_eval: fit without {family:?} failed ({e}); using priors");
            Model::uncalibrated()
        }
    }
}

/// Scores of one scenario.
struct Row {
    key: String,
    best: String,
    best_tps: f64,
    advised: String,
    pct: Option<f64>,
    gap_beyond_noise: Option<bool>,
    below_baseline_beyond_noise: bool,
    statics: [Option<f64>; 3],
    from_rt0: Option<f64>,
    /// Advised from the RT0 observation, and measured below RT0 beyond noise.
    from_rt0_below_beyond_noise: bool,
    /// The model's point pick from RT1 (its best predicted configuration,
    /// no interval asked), as a share of the oracle's best, and whether it
    /// measured below RT1 beyond noise: what the advice could reach with
    /// the model's point accuracy if its error were no obstacle.
    point_pick: Option<f64>,
    point_pick_below_beyond_noise: bool,
}

/// The configuration the model predicts best from `obs` among those the
/// scenario measured (`obs` itself when none is predicted above it).
fn point_pick(r: &Record, obs: &str, model: &Model) -> Option<String> {
    let (inputs, _) = r.inputs(obs)?;
    let configs: Vec<Config> = r.cells.keys().filter_map(|k| parse_config(k)).collect();
    let best = model
        .predict(&inputs, &configs, &Default::default())
        .into_iter()
        .next()
        .filter(|p| p.ratio > 1.0)
        .map_or_else(|| obs.to_string(), |p| p.config.to_string());
    Some(r.canonical(&best))
}

/// Whether `advised`, a change from `start`, measured below `start` beyond
/// noise (Welch's t-test on the logs of the repeats, alpha 0.05).
fn below_beyond_noise(r: &Record, start: &str, advised: &str) -> bool {
    advised != start
        && r.median(advised) < r.median(start)
        && welch(&r.samples(start), &r.samples(advised)).is_some_and(|p| p < 0.05)
}

fn score_record(r: &Record, rules: &RuleSet, model: &Model) -> Row {
    let (best, best_tps) = r.best();
    let pct = |c: &str| r.median(c).map(|m| m / best_tps);
    let adv = advised(r, "RT1", rules, model).map_or_else(|| "n/a".into(), |a| r.canonical(&a));
    let gap = if adv == best {
        Some(false)
    } else {
        welch(&r.samples(&best), &r.samples(&adv)).map(|p| p < 0.05)
    };
    let below = below_beyond_noise(r, "RT1", &adv);
    let seed000 = if r.binlog && r.cores <= 16 {
        "RT0"
    } else {
        "RT1"
    };
    let m84 = if r.cores < 32 { "RT0" } else { "RT1" };
    let adv0 = advised(r, "RT0", rules, model).map(|a| r.canonical(&a));
    let from_rt0 = adv0.as_deref().and_then(pct);
    let from_rt0_below = adv0
        .as_deref()
        .is_some_and(|a| below_beyond_noise(r, "RT0", a));
    let pick = point_pick(r, "RT1", model);
    Row {
        key: r.key.clone(),
        best: best.clone(),
        best_tps,
        pct: pct(&adv),
        advised: adv,
        gap_beyond_noise: gap,
        below_baseline_beyond_noise: below,
        statics: [pct("RT1"), pct(m84), pct(seed000)],
        from_rt0,
        from_rt0_below_beyond_noise: from_rt0_below,
        point_pick: pick.as_deref().and_then(pct),
        point_pick_below_beyond_noise: pick
            .as_deref()
            .is_some_and(|p| below_beyond_noise(r, "RT1", p)),
    }
}

fn f(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |x| format!("{:.0}%", x * 100.0))
}

#[derive(Deserialize)]
struct TrialRun {
    key: String,
    /// The configuration the server was left in.
    final_config: String,
    verdict: String,
    /// Time the trial itself took (its windows).
    #[serde(default)]
    trial_s: f64,
}

/// One SVG: per scenario, the share of the oracle's best reached by the
/// advice without trial, with --trial, and MySQL 8.4's and 8.0's defaults.
fn chart(rows: &[(String, [Option<f64>; 4])], path: &Path) {
    let names = [
        "advised (no trial)",
        "with --trial",
        "8.4 OFF<32",
        "8.0 always ON",
    ];
    let colours = [
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(150, 150, 150),
    ];
    let n = rows.len().max(1);
    let width = (60 + 22 * n as u32).max(800);
    let root = SVGBackend::new(path, (width, 520)).into_drawing_area();
    root.fill(&WHITE).expect("drawing");
    let mut c = ChartBuilder::on(&root)
        .caption(
            "Share of the oracle's best, per scenario (held out by workload)",
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(200)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..n as f64, 0f64..1.05)
        .expect("drawing");
    let label = |v: &f64| {
        let i = v.floor() as usize;
        if (v - v.floor() - 0.5).abs() < 1e-6 {
            rows.get(i).map(|r| r.0.clone()).unwrap_or_default()
        } else {
            String::new()
        }
    };
    c.configure_mesh()
        .x_labels(2 * n + 1)
        .x_label_formatter(&label)
        .x_label_style(
            ("sans-serif", 10)
                .into_font()
                .transform(FontTransform::Rotate90),
        )
        .y_desc("commits/s / oracle best")
        .draw()
        .expect("drawing");
    for (k, colour) in colours.iter().enumerate() {
        let bars = rows.iter().enumerate().filter_map(|(i, r)| {
            r.1[k].map(|v| {
                let x0 = i as f64 + 0.1 + 0.2 * k as f64;
                Rectangle::new([(x0, 0.0), (x0 + 0.2, v.min(1.05))], colour.filled())
            })
        });
        c.draw_series(bars)
            .expect("drawing")
            .label(names[k])
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .expect("drawing");
    root.present().expect("writing the chart");
}

fn score(records: &[Record], trials: Option<&Path>, svg: Option<&Path>) {
    let rules = RuleSet::shipped_and(&[]).expect("the shipped rules load");
    let families = all_families(records);
    let in_sample = model_without(records, None);
    // Each scenario is scored with the model fitted without its workload.
    let mut by_workload: BTreeMap<String, Model> = BTreeMap::new();
    let mut by_other_family: BTreeMap<String, Model> = BTreeMap::new();
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    println!("## Held-out score per family\n");
    println!("| family left out | scenarios | advised geomean | min | < 95% | below RT1 beyond noise | in-sample geomean | 8.0 ON | 8.4 OFF<32 | seed 000 | from RT0: geomean | from RT0: below RT0 beyond noise |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut all_held = Vec::new();
    for fam in &families {
        let model = model_without(records, Some(fam));
        let test: Vec<&Record> = records
            .iter()
            .filter(|r| r.families().contains(fam))
            .collect();
        let scored: Vec<Row> = test
            .iter()
            .map(|r| score_record(r, &rules, &model))
            .collect();
        let ins: Vec<f64> = test
            .iter()
            .filter_map(|r| score_record(r, &rules, &in_sample).pct)
            .collect();
        let adv: Vec<f64> = scored.iter().filter_map(|r| r.pct).collect();
        let st = |i: usize| {
            geomean(
                &scored
                    .iter()
                    .filter_map(|r| r.statics[i])
                    .collect::<Vec<_>>(),
            )
        };
        let rt0: Vec<f64> = scored.iter().filter_map(|r| r.from_rt0).collect();
        println!(
            "| {fam} | {} | {:.1}% | {:.0}% | {} | {} | {:.1}% | {:.1}% | {:.1}% | {:.1}% | {:.1}% | {} |",
            test.len(),
            geomean(&adv) * 100.0,
            adv.iter().cloned().fold(f64::INFINITY, f64::min) * 100.0,
            adv.iter().filter(|x| **x < 0.95).count(),
            scored.iter().filter(|r| r.below_baseline_beyond_noise).count(),
            geomean(&ins) * 100.0,
            st(0) * 100.0,
            st(1) * 100.0,
            st(2) * 100.0,
            geomean(&rt0) * 100.0,
            scored.iter().filter(|r| r.from_rt0_below_beyond_noise).count(),
        );
        if fam.starts_with("workload:") {
            for r in scored {
                rows.insert(r.key.clone(), r);
            }
            by_workload.insert(fam.clone(), model);
        } else {
            by_other_family.insert(fam.clone(), model);
        }
    }
    for r in rows.values() {
        if let Some(p) = r.pct {
            all_held.push(p);
        }
    }
    let statics: Vec<Vec<f64>> = (0..3)
        .map(|i| rows.values().filter_map(|r| r.statics[i]).collect())
        .collect();
    println!(
        "\nAll {} scenarios, each scored with the model fitted without its workload: advised geomean {:.1}%, always ON (8.0) {:.1}%, OFF below 32 CPUs (8.4) {:.1}%, seed 000 {:.1}%; below 95% of the oracle: {} ({} of them beyond noise); advised below the RT1 baseline beyond noise: {}.",
        all_held.len(),
        geomean(&all_held) * 100.0,
        geomean(&statics[0]) * 100.0,
        geomean(&statics[1]) * 100.0,
        geomean(&statics[2]) * 100.0,
        all_held.iter().filter(|x| **x < 0.95).count(),
        rows.values().filter(|r| r.pct.is_some_and(|p| p < 0.95) && r.gap_beyond_noise == Some(true)).count(),
        rows.values().filter(|r| r.below_baseline_beyond_noise).count(),
    );
    let picks: Vec<f64> = rows.values().filter_map(|r| r.point_pick).collect();
    println!(
        "The same models' point pick (the best predicted configuration, no interval asked): geomean {:.1}%; below 95% of the oracle: {}; measured below the RT1 baseline beyond noise: {}.",
        geomean(&picks) * 100.0,
        picks.iter().filter(|x| **x < 0.95).count(),
        rows.values().filter(|r| r.point_pick_below_beyond_noise).count(),
    );
    let from_rt0: Vec<f64> = rows.values().filter_map(|r| r.from_rt0).collect();
    let below_rt0: Vec<&str> = rows
        .values()
        .filter(|r| r.from_rt0_below_beyond_noise)
        .map(|r| r.key.as_str())
        .collect();
    println!(
        "From the RT0 observations: advised geomean {:.1}%; advised below the RT0 baseline beyond noise: {}{}.",
        geomean(&from_rt0) * 100.0,
        below_rt0.len(),
        if below_rt0.is_empty() {
            String::new()
        } else {
            format!(" ({})", below_rt0.join(", "))
        }
    );
    coverage(records, &by_workload, "held out by workload");
    coverage(records, &by_other_family, "held out by the other families");
    let trial_runs: BTreeMap<String, TrialRun> = trials
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<TrialRun>(l).ok())
                .map(|t| (t.key.clone(), t))
                .collect()
        })
        .unwrap_or_default();
    println!("\n## Per scenario (held out by workload)\n");
    println!("| scenario | oracle best (commits/s) | advised (no trial) | % of best | gap beyond noise | with --trial | % | trial s | 8.0 ON | 8.4 OFF<32 | seed 000 |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut trial_pcts = Vec::new();
    let mut trial_bad = 0;
    let mut trial_gap = 0;
    let mut trial_by_family: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut bars = Vec::new();
    for (k, r) in &rows {
        let rec = records
            .iter()
            .find(|x| &x.key == k)
            .expect("scored from records");
        let t = trial_runs.get(k);
        let tp = t.and_then(|t| rec.median(&t.final_config).map(|m| m / r.best_tps));
        bars.push((k.clone(), [r.pct, tp, r.statics[1], r.statics[0]]));
        if let (Some(t), Some(p)) = (t, tp) {
            trial_pcts.push(p);
            for fam in rec.families() {
                trial_by_family.entry(fam).or_default().push(p);
            }
            let fc = rec.canonical(&t.final_config);
            let worse = fc != "RT1"
                && rec.median(&fc) < rec.median("RT1")
                && welch(&rec.samples("RT1"), &rec.samples(&fc)).is_some_and(|p| p < 0.05);
            if worse {
                trial_bad += 1;
            }
            if p < 0.98
                && fc != r.best
                && welch(&rec.samples(&r.best), &rec.samples(&fc)).is_some_and(|p| p < 0.05)
            {
                trial_gap += 1;
            }
        }
        println!(
            "| {k} | {:.0} ({}) | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.best_tps,
            r.best,
            r.advised,
            f(r.pct),
            match r.gap_beyond_noise {
                Some(true) => "yes",
                Some(false) if r.advised == r.best => "best",
                Some(false) => "no",
                None => "?",
            },
            t.map_or("".into(), |t| format!("{} ({})", t.final_config, t.verdict)),
            f(tp),
            t.map_or("".into(), |t| format!("{:.0}", t.trial_s)),
            f(r.statics[0]),
            f(r.statics[1]),
            f(r.statics[2]),
        );
    }
    if !trial_by_family.is_empty() {
        println!("\n## With --trial, per family\n");
        println!("| family | scenarios | geomean of oracle | min | below 98% |");
        println!("|---|---|---|---|---|");
        for (fam, v) in &trial_by_family {
            println!(
                "| {fam} | {} | {:.1}% | {:.0}% | {} |",
                v.len(),
                geomean(v) * 100.0,
                v.iter().cloned().fold(f64::INFINITY, f64::min) * 100.0,
                v.iter().filter(|x| **x < 0.98).count()
            );
        }
    }
    if !trial_pcts.is_empty() {
        println!(
            "\nWith --trial ({} scenarios): geomean {:.1}% of the oracle, min {:.0}%, below 98%: {} ({} of them beyond noise); kept a configuration measured below RT1 beyond noise: {}.",
            trial_pcts.len(),
            geomean(&trial_pcts) * 100.0,
            trial_pcts.iter().cloned().fold(f64::INFINITY, f64::min) * 100.0,
            trial_pcts.iter().filter(|x| **x < 0.98).count(),
            trial_gap,
            trial_bad
        );
    }
    if let Some(path) = svg {
        chart(&bars, path);
        println!("\nChart: {}", path.display());
    }
    let p = in_sample.params.to_vec();
    println!(
        "\nIn-sample model ({}; held-out error {:.1}%):",
        in_sample.source,
        (in_sample.sigma.exp() - 1.0) * 100.0
    );
    for ((name, ..), x) in redoctor_advisor::model::mechanics::PARAMS.iter().zip(p) {
        println!("  {name} = {x:.3}");
    }
}

/// How the held-out RT1 -> RT0 predictions fare inside and outside the
/// range of inputs their model was fitted on: RMS log error and how often
/// the 95% interval (widened outside the range) holds the measured ratio.
/// `models` maps a family to the model fitted without it; each scenario is
/// predicted by the model of every family of it that `models` has.
fn coverage(records: &[Record], models: &BTreeMap<String, Model>, how: &str) {
    let rt0 = parse_config("RT0").expect("a configuration");
    // (inside?, log error, covered?)
    let mut seen: Vec<(bool, f64, bool)> = Vec::new();
    for (r, model) in records.iter().flat_map(|r| {
        r.families()
            .into_iter()
            .filter_map(|f| models.get(&f))
            .map(move |m| (r, m))
    }) {
        let (Some((inputs, o)), Some(a), Some(b)) =
            (r.inputs("RT1"), r.median("RT0"), r.median("RT1"))
        else {
            continue;
        };
        let current = o
            .facts
            .as_ref()
            .map(|f| f.settings.clone())
            .unwrap_or_default();
        let Some(p) = model.predict(&inputs, &[rt0], &current).into_iter().next() else {
            continue;
        };
        let measured = a / b;
        seen.push((
            model.outside(&inputs).is_empty(),
            (p.ratio / measured).ln(),
            p.ratio_low <= measured && measured <= p.ratio_high,
        ));
    }
    for (inside, name) in [(true, "inside the calibrated range"), (false, "outside it")] {
        let v: Vec<&(bool, f64, bool)> = seen.iter().filter(|x| x.0 == inside).collect();
        if v.is_empty() {
            continue;
        }
        let rms = (v.iter().map(|x| x.1 * x.1).sum::<f64>() / v.len() as f64).sqrt();
        println!(
            "RT1 -> RT0 predictions {how}, {name}: {} scenarios, RMS log error {:.2}, the 95% interval holds the measured ratio in {} of {}.",
            v.len(),
            rms,
            v.iter().filter(|x| x.2).count(),
            v.len()
        );
    }
}

/// The product's own path: the model from a `redoctor calibrate` file
/// (fitted on the bundled engine's calibration runs only), scored on every
/// scenario, none of which it saw.
fn score_calibration(records: &[Record], path: &Path) {
    let rules = RuleSet::shipped_and(&[]).expect("the shipped rules load");
    let c = Calibration::load(path).unwrap_or_else(|e| {
        eprintln!("advice_eval: {e}");
        std::process::exit(1)
    });
    let model = Model::from_calibration(&c, path);
    let rows: Vec<Row> = records
        .iter()
        .map(|r| score_record(r, &rules, &model))
        .collect();
    let adv: Vec<f64> = rows.iter().filter_map(|r| r.pct).collect();
    let st = |i: usize| geomean(&rows.iter().filter_map(|r| r.statics[i]).collect::<Vec<_>>());
    println!(
        "Model from {} ({} points, held-out error {:.1}%), on {} scenarios it never saw: advised geomean {:.1}% of the oracle (min {:.0}%, below 95%: {}, below RT1 beyond noise: {}); always ON {:.1}%, 8.4 {:.1}%, seed 000 {:.1}%; advised a change in {} scenarios.",
        path.display(),
        c.fitted.points,
        (c.fitted.sigma.exp() - 1.0) * 100.0,
        rows.len(),
        geomean(&adv) * 100.0,
        adv.iter().cloned().fold(f64::INFINITY, f64::min) * 100.0,
        adv.iter().filter(|x| **x < 0.95).count(),
        rows.iter().filter(|r| r.below_baseline_beyond_noise).count(),
        st(0) * 100.0,
        st(1) * 100.0,
        st(2) * 100.0,
        rows.iter().filter(|r| r.advised != "RT1").count(),
    );
    for r in rows.iter().filter(|r| r.advised != "RT1") {
        println!("  {}: advised {} at {}", r.key, r.advised, f(r.pct));
    }
}

fn folds(records: &[Record], dir: &Path) {
    std::fs::create_dir_all(dir).expect("creating the output directory");
    for fam in all_families(records)
        .iter()
        .filter(|f| f.starts_with("workload:"))
    {
        let train: Vec<&Record> = records
            .iter()
            .filter(|r| !r.families().contains(fam))
            .collect();
        let pts = points(&train);
        let fitted = fit(&pts).expect("fitting a fold");
        let host = HostFacts {
            hostname: format!("evaluation fold without {fam}"),
            kernel: String::new(),
            cpu_model: String::new(),
            cpus_online: 0,
            cores: 0,
            storage: String::new(),
            fsync_us: 0.0,
        };
        let c = Calibration::new(host, pts, fitted);
        let name = fam.trim_start_matches("workload:");
        let path = dir.join(format!("{name}.json"));
        c.save(&path).expect("writing a fold's calibration");
        println!(
            "{} ({} points, held-out error {:.1}%)",
            path.display(),
            c.fitted.points,
            (c.fitted.sigma.exp() - 1.0) * 100.0
        );
    }
}

/// The fit on every scenario, and its worst residuals (a diagnostic).
fn residuals(records: &[Record]) {
    let all: Vec<&Record> = records.iter().collect();
    let f = fit(&points(&all)).expect("fitting");
    let mut r = f.residuals.clone();
    r.sort_by(|a, b| {
        (b.fitted / b.measured)
            .ln()
            .abs()
            .total_cmp(&(a.fitted / a.measured).ln().abs())
    });
    println!(
        "in-sample {:.1}%, held-out {:.1}%",
        (f.in_sample_rms.exp() - 1.0) * 100.0,
        (f.sigma.exp() - 1.0) * 100.0
    );
    for x in r {
        println!(
            "{:<52} {:>16} -> {:<16} measured {:>6.3} fitted {:>6.3} held-out {}",
            x.label,
            x.from.to_string(),
            x.to.to_string(),
            x.measured,
            x.fitted,
            x.held_out.map_or("-".into(), |h| format!("{h:.3}"))
        );
    }
}

/// The model fitted on every scenario, taken apart for one: the inputs it
/// reads from each observation and, for every measured configuration, its
/// estimate (bounds, CPU and latency per commit) against the measured ratio.
fn explain(records: &[Record], key: &str) {
    use redoctor_advisor::model::mechanics;
    let all: Vec<&Record> = records.iter().collect();
    let f = fit(&points(&all)).expect("fitting");
    println!("params: {:?}", f.params);
    let Some(r) = records.iter().find(|r| r.key == key) else {
        eprintln!("no scenario {key}");
        std::process::exit(2);
    };
    for obs in ["RT1", "RT0"] {
        let (Some((inputs, _)), Some(base)) = (r.inputs(obs), r.median(obs)) else {
            continue;
        };
        println!("\n@{obs} (measured {base:.0}/s): {inputs:#?}");
        println!(
            "observed: {:#?}",
            mechanics::estimate_observed(&f.params, &inputs)
        );
        for k in r.cells.keys().filter(|k| k.as_str() != obs) {
            let (Some(c), Some(m)) = (parse_config(k), r.median(k)) else {
                continue;
            };
            let e = mechanics::estimate(&f.params, &inputs, &c);
            println!(
                "{k:<16} measured {:.3} predicted {:.3}: {e:?}",
                m / base,
                mechanics::ratio(&f.params, &inputs, &c)
            );
        }
    }
}

/// `[--asymmetry L] [--min-utility U]` (defaults 3 and 0.01).
fn decision_args(rest: &[&str]) -> (f64, f64) {
    let mut out = (3.0, 0.01);
    for pair in rest.chunks(2) {
        match pair {
            ["--asymmetry", v] => out.0 = v.parse().expect("a number"),
            ["--min-utility", v] => out.1 = v.parse().expect("a number"),
            _ => {
                eprintln!("advice_eval: unknown arguments {pair:?}");
                std::process::exit(2)
            }
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["score", data] => score(&load_all(data), None, None),
        ["score", data, "--trials", t] => score(&load_all(data), Some(Path::new(t)), None),
        ["score", data, "--trials", t, "--svg", f] => {
            score(&load_all(data), Some(Path::new(t)), Some(Path::new(f)))
        }
        ["score", data, "--svg", f] => score(&load_all(data), None, Some(Path::new(f))),
        ["score", data, "--calibration", c] => score_calibration(&load_all(data), Path::new(c)),
        ["folds", data, dir] => folds(&load_all(data), Path::new(dir)),
        ["residuals", data] => residuals(&load_all(data)),
        ["explain", data, key] => explain(&load_all(data), key),
        ["tune", data, "--calibration", c, rest @ ..] => {
            let ablation = if rest.contains(&"--no-priors") {
                decision::Ablation::NoPriors
            } else if rest.contains(&"--no-model") {
                decision::Ablation::NoModel
            } else {
                decision::Ablation::None
            };
            let rest: Vec<&str> = rest
                .iter()
                .copied()
                .filter(|a| !a.starts_with("--no-"))
                .collect();
            let (lambda, min_u) = decision_args(&rest);
            decision::tune(
                &load_all(data),
                &decision::models(c),
                lambda,
                min_u,
                ablation,
            )
        }
        ["errors", data, "--calibration", c] => {
            decision::errors(&load_all(data), &decision::models(c))
        }
        ["whatif", data, "--calibration", c, "--priors", p] => {
            let priors =
                redoctor_advisor::decision::Priors::load(Path::new(p)).unwrap_or_else(|e| {
                    eprintln!("advice_eval: {e}");
                    std::process::exit(1)
                });
            decision::whatif(&load_all(data), &decision::models(c), &priors)
        }
        ["priors", data, "--calibration", c, rest @ ..] => {
            let (lambda, min_u) = decision_args(rest);
            let records = load_all(data);
            let all: Vec<&Record> = records.iter().collect();
            let models = decision::models(c);
            let p = priors::learn(
                &all,
                &models,
                lambda,
                min_u,
                format!(
                    "advice_eval priors over {} scenarios of {data}, model errors of {c}",
                    records.len()
                ),
            );
            print!("{}", p.to_toml());
        }
        ["frozen", data, "--calibration", c, "--priors", p] => {
            let priors =
                redoctor_advisor::decision::Priors::load(Path::new(p)).unwrap_or_else(|e| {
                    eprintln!("advice_eval: {e}");
                    std::process::exit(1)
                });
            decision::frozen(&load_all(data), &decision::models(c), priors)
        }
        _ => {
            eprintln!("usage (DATA: FILE.jsonl[,LATER.jsonl...], a later file's scenarios replacing the same keys): advice_eval score DATA.jsonl [--trials TRIALS.jsonl] [--svg FILE] | score DATA.jsonl --calibration FILE | folds DATA.jsonl OUTDIR | residuals DATA.jsonl | explain DATA.jsonl KEY | tune DATA --calibration CPUS=FILE[,CPUS=FILE] [--asymmetry L] [--min-utility U] [--no-priors | --no-model] | priors DATA --calibration CPUS=FILE [--asymmetry L] [--min-utility U] | frozen DATA --calibration CPUS=FILE[,...] --priors FILE | errors DATA --calibration CPUS=FILE[,...] | whatif DATA --calibration 1=FILE,2=FILE --priors FILE");
            std::process::exit(2);
        }
    }
}
