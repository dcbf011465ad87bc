//! `redoctor meter --socket S`: what a live trial can resolve on this
//! server, measured before trusting it. Reads the server's commit counter
//! (`SHOW GLOBAL STATUS`) every tick and reports
//!
//! - **the noise spectrum**: for windows of one tick to an eighth of the
//!   run, the spread of the rate between consecutive windows (the Allan
//!   deviation, relative to the mean) and the spread of one switchback
//!   pair (`ln` of consecutive windows' ratio): how far a trial with
//!   periods of that length can see;
//! - **a knob's carryover** (`--knob NAME --values A,B`): the knob
//!   alternates every `--every`; the rate after each switch, averaged over
//!   the switches and relative to the new setting's steady state (the
//!   second half of its phases), and the first time after which it stays
//!   within the steady state's noise: the guard a switchback trial needs.
//! - **the cost of a counter read** (median and 99th percentile).
//!
//! The server keeps the settings it had: the knob is restored at the end,
//! also after an error.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;

use crate::admin::Admin;

#[derive(Args, Debug)]
pub struct MeterArgs {
    /// The server's admin socket (the bundled engine's, MySQL's or MariaDB's).
    #[arg(long)]
    socket: PathBuf,
    /// User for the socket (default: root).
    #[arg(long, default_value = "")]
    user: String,
    /// The commit counter (SHOW GLOBAL STATUS).
    #[arg(long, default_value = "Com_commit")]
    counter: String,
    /// How long to read the spectrum (and, with --knob, the carryover).
    #[arg(long, default_value = "60s", value_parser = redoctor_args::positive_duration)]
    duration: Duration,
    /// Between counter reads.
    #[arg(long, default_value = "25ms", value_parser = redoctor_args::positive_duration)]
    tick: Duration,
    /// Measure this knob's carryover (SET GLOBAL), alternating --values.
    #[arg(long, requires = "values")]
    knob: Option<String>,
    /// The two values the knob alternates between, A,B.
    #[arg(long, value_delimiter = ',')]
    values: Vec<String>,
    /// Length of each phase of the knob's alternation.
    #[arg(long, default_value = "2s", value_parser = redoctor_args::positive_duration)]
    every: Duration,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// One window length of the spectrum.
#[derive(Debug, Serialize)]
pub struct Band {
    pub window_s: f64,
    pub windows: usize,
    /// Mean rate over these windows.
    pub mean: f64,
    /// Allan deviation over the mean: `sqrt(½ mean((r_{i+1} − r_i)²)) / mean`.
    pub allan: f64,
    /// Standard deviation of `ln(r_{i+1} / r_i)`: one switchback pair's spread.
    pub pair_sd: f64,
}

/// A knob's carryover.
#[derive(Debug, Serialize)]
pub struct Carryover {
    pub knob: String,
    pub to: String,
    pub switches: usize,
    /// Mean rate at each tick after the switch over the steady state's.
    pub trajectory: Vec<f64>,
    /// The steady state's relative noise per tick (standard error of the
    /// trajectory's points).
    pub noise: f64,
    /// First time after the switch from which the trajectory stays within
    /// two standard errors of the steady state.
    pub settles_s: f64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub counter: String,
    pub tick_s: f64,
    pub read_cost_p50_us: f64,
    pub read_cost_p99_us: f64,
    pub spectrum: Vec<Band>,
    pub carryover: Vec<Carryover>,
}

/// Counter readings: (seconds since start, value).
fn read_series(
    admin: &mut Admin,
    counter: &str,
    tick: Duration,
    until: Duration,
    start: Instant,
    costs: &mut Vec<f64>,
) -> Result<Vec<(f64, u64)>> {
    let mut out = Vec::new();
    let mut next = start.elapsed();
    while start.elapsed() < until {
        let t0 = Instant::now();
        let v = admin.status(counter)?;
        let cost = t0.elapsed();
        costs.push(cost.as_secs_f64() * 1e6);
        // The reading's time: the middle of the query.
        out.push(((t0.duration_since(start) + cost / 2).as_secs_f64(), v));
        next += tick;
        if let Some(wait) = next.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    Ok(out)
}

/// Per-tick rates between consecutive readings: (mid time, commits/s).
fn rates(series: &[(f64, u64)]) -> Vec<(f64, f64)> {
    series
        .windows(2)
        .filter_map(|w| {
            let dt = w[1].0 - w[0].0;
            (dt > 0.0).then(|| {
                (
                    (w[0].0 + w[1].0) / 2.0,
                    w[1].1.saturating_sub(w[0].1) as f64 / dt,
                )
            })
        })
        .collect()
}

/// The spectrum of per-tick `rates`: windows of 1, 2, 4, ... ticks.
pub fn spectrum(rates: &[f64], tick_s: f64) -> Vec<Band> {
    let mut out = Vec::new();
    let mut k = 1;
    while rates.len() / k >= 8 {
        let w: Vec<f64> = rates
            .chunks_exact(k)
            .map(|c| c.iter().sum::<f64>() / k as f64)
            .collect();
        let mean = w.iter().sum::<f64>() / w.len() as f64;
        let diffs: Vec<f64> = w.windows(2).map(|p| p[1] - p[0]).collect();
        let allan = (0.5 * diffs.iter().map(|d| d * d).sum::<f64>() / diffs.len() as f64).sqrt();
        let lr: Vec<f64> = w
            .windows(2)
            .filter(|p| p[0] > 0.0 && p[1] > 0.0)
            .map(|p| (p[1] / p[0]).ln())
            .collect();
        let m = lr.iter().sum::<f64>() / lr.len().max(1) as f64;
        let sd =
            (lr.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (lr.len().max(2) - 1) as f64).sqrt();
        out.push(Band {
            window_s: k as f64 * tick_s,
            windows: w.len(),
            mean,
            allan: if mean > 0.0 { allan / mean } else { f64::NAN },
            pair_sd: sd,
        });
        k *= 2;
    }
    out
}

/// The carryover into `to` from per-tick rates and the switch times into
/// it, each phase `every` long.
fn carryover_of(
    knob: &str,
    to: &str,
    rates: &[(f64, f64)],
    switches: &[f64],
    every: f64,
    tick: f64,
) -> Carryover {
    let ticks = (every / tick).floor() as usize;
    let mut sum = vec![0.0; ticks];
    let mut count = vec![0usize; ticks];
    let mut steady = Vec::new();
    for &s in switches {
        let phase: Vec<&(f64, f64)> = rates
            .iter()
            .filter(|(t, _)| *t >= s && *t < s + every)
            .collect();
        // The steady state: the phase's second half.
        let late: Vec<f64> = phase
            .iter()
            .filter(|(t, _)| *t >= s + every / 2.0)
            .map(|(_, r)| *r)
            .collect();
        if late.is_empty() {
            continue;
        }
        let level = late.iter().sum::<f64>() / late.len() as f64;
        if level <= 0.0 {
            continue;
        }
        steady.extend(late.iter().map(|r| r / level));
        for (t, r) in phase {
            let i = ((t - s) / tick).floor() as usize;
            if i < ticks {
                sum[i] += r / level;
                count[i] += 1;
            }
        }
    }
    let trajectory: Vec<f64> = sum
        .iter()
        .zip(&count)
        .map(|(s, c)| if *c > 0 { s / *c as f64 } else { f64::NAN })
        .collect();
    let n = switches.len().max(1) as f64;
    let sd = if steady.len() > 1 {
        let m = steady.iter().sum::<f64>() / steady.len() as f64;
        (steady.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (steady.len() - 1) as f64).sqrt()
    } else {
        f64::NAN
    };
    let se = sd / n.sqrt();
    // Settled: from this tick on, every point within 2 SE of 1.
    let within = |x: &f64| x.is_finite() && (x - 1.0).abs() <= 2.0 * se;
    let half = trajectory.len() / 2;
    let settled_at = (0..half)
        .find(|&i| trajectory[i..half].iter().all(within))
        .unwrap_or(half);
    Carryover {
        knob: knob.into(),
        to: to.into(),
        switches: switches.len(),
        trajectory,
        noise: se,
        settles_s: settled_at as f64 * tick,
    }
}

pub fn run(args: MeterArgs) -> Result<std::process::ExitCode> {
    if args.knob.is_some() && args.values.len() != 2 {
        bail!("--values takes two values, A,B (the knob alternates between them)");
    }
    let mut admin = Admin::connect(&args.socket, &args.user)?;
    admin
        .status(&args.counter)
        .with_context(|| format!("the counter {} (name another with --counter)", args.counter))?;
    let tick_s = args.tick.as_secs_f64();
    let mut costs = Vec::new();
    let start = Instant::now();
    let series = read_series(
        &mut admin,
        &args.counter,
        args.tick,
        args.duration,
        start,
        &mut costs,
    )?;
    let per_tick: Vec<f64> = rates(&series).into_iter().map(|(_, r)| r).collect();
    let spec = spectrum(&per_tick, tick_s);
    let mut carry = Vec::new();
    if let Some(knob) = &args.knob {
        let before = admin.get(knob)?;
        let result = alternate(&mut admin, &args, knob, &mut costs);
        let restored = admin.restore(knob, &before);
        let (series, switches) = result?;
        restored.with_context(|| format!("restoring {knob} to {before}"))?;
        let r = rates(&series);
        for (i, v) in args.values.iter().enumerate() {
            let at: Vec<f64> = switches
                .iter()
                .filter(|(k, _)| *k == i)
                .map(|(_, t)| *t)
                .collect();
            carry.push(carryover_of(
                knob,
                v,
                &r,
                &at,
                args.every.as_secs_f64(),
                tick_s,
            ));
        }
    }
    costs.sort_by(f64::total_cmp);
    let q = |p: f64| {
        costs
            .get(((costs.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let report = Report {
        counter: args.counter.clone(),
        tick_s,
        read_cost_p50_us: q(0.5),
        read_cost_p99_us: q(0.99),
        spectrum: spec,
        carryover: carry,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Alternates the knob every `--every` for `--duration`, reading the
/// counter; the readings and (value index, switch time) of each switch.
#[allow(clippy::type_complexity)]
fn alternate(
    admin: &mut Admin,
    args: &MeterArgs,
    knob: &str,
    costs: &mut Vec<f64>,
) -> Result<(Vec<(f64, u64)>, Vec<(usize, f64)>)> {
    let start = Instant::now();
    let mut series = Vec::new();
    let mut switches = Vec::new();
    let phases = redoctor_advisor::experiment::whole(args.duration, args.every);
    for p in 0..phases.max(2) {
        let i = p % 2;
        admin.set(knob, &args.values[i])?;
        switches.push((i, start.elapsed().as_secs_f64()));
        let until = args.every * (p as u32 + 1);
        series.extend(read_series(
            admin,
            &args.counter,
            args.tick,
            until,
            start,
            costs,
        )?);
    }
    Ok((series, switches))
}

fn print_text(r: &Report) {
    println!(
        "counter {} read every {:.0} ms (a read costs {:.0} us median, {:.0} us p99)",
        r.counter,
        r.tick_s * 1e3,
        r.read_cost_p50_us,
        r.read_cost_p99_us
    );
    println!("\nnoise spectrum (consecutive windows):");
    println!(
        "  {:>9}  {:>7}  {:>12}  {:>7}  {:>12}",
        "window", "windows", "mean/s", "allan", "pair sd"
    );
    for b in &r.spectrum {
        println!(
            "  {:>7.3} s  {:>7}  {:>12.0}  {:>6.1}%  {:>11.1}%",
            b.window_s,
            b.windows,
            b.mean,
            b.allan * 100.0,
            b.pair_sd * 100.0
        );
    }
    for c in &r.carryover {
        println!(
            "\ncarryover into {}={} ({} switches): settles after {:.0} ms (steady-state noise ±{:.1}% per tick)",
            c.knob,
            c.to,
            c.switches,
            c.settles_s * 1e3,
            2.0 * c.noise * 100.0
        );
        let shown: Vec<String> = c
            .trajectory
            .iter()
            .take(20)
            .map(|x| format!("{:.2}", x))
            .collect();
        println!("  after the switch, per tick: {}", shown.join(" "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spectrum_of_white_noise_falls_with_the_window() {
        // A rate alternating ±10% tick by tick: its spread halves and
        // vanishes as windows average it.
        let rates: Vec<f64> = (0..1024)
            .map(|i| if i % 2 == 0 { 110.0 } else { 90.0 })
            .collect();
        let s = spectrum(&rates, 0.01);
        assert!((s[0].mean - 100.0).abs() < 1e-9);
        assert!(
            (s[0].allan - 20.0 / 2f64.sqrt() / 100.0).abs() < 1e-9,
            "{:?}",
            s[0]
        );
        assert!(s[1].allan < 1e-12, "two ticks average it out: {:?}", s[1]);
        assert_eq!(s.last().unwrap().windows, 8);
    }

    #[test]
    fn a_carryover_is_found_where_the_rate_settles() {
        // 10-ms ticks, 1-s phases; after each switch the rate starts at half
        // and reaches its level after 100 ms.
        let tick = 0.01;
        let mut r = Vec::new();
        let mut switches = Vec::new();
        for p in 0..20 {
            let s = p as f64;
            switches.push(s);
            for k in 0..100 {
                let t = s + (k as f64 + 0.5) * tick;
                let x = if k < 10 { 0.5 } else { 1.0 };
                r.push((
                    t,
                    1000.0 * x * (1.0 + 0.01 * (((k * 7 + p * 3) % 5) as f64 - 2.0)),
                ));
            }
        }
        let c = carryover_of("k", "b", &r, &switches, 1.0, tick);
        assert!((c.settles_s - 0.1).abs() < 1e-9, "{c:?}");
        assert!((c.trajectory[0] - 0.5).abs() < 0.02);
    }
}
