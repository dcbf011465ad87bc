use super::*;
use crate::model::{Estimate, Model};

/// The priors' constants, as if calibrated (so a prior's measured model
/// error is used), with a held-out error of 0.2.
fn calibrated() -> Model {
    let mut m = Model::uncalibrated();
    m.calibrated = true;
    m.sigma = 0.2;
    m
}

fn rt(on: bool) -> Config {
    Config {
        redo_threads: on,
        cap: 0,
        throttle: 0,
    }
}

/// An RT1 observation on a disk at `users` users on 2 CPUs, its rate set
/// to the model's own level (so the regime check adds nothing).
fn inputs(model: &Model, users: f64, lock_waits: f64) -> Inputs {
    let mut i = Inputs {
        config: rt(true),
        cores: 2.0,
        users,
        commits_per_s: 10_000.0,
        window_rates: vec![],
        binlog: false,
        flush: 1,
        cpu_us: 40.0,
        log_cpu_us: 5.0,
        group: 4.0,
        fsync_us: 100.0,
        binlog_fsync_us: 0.0,
        lock_wait_us: 10.0 * lock_waits,
        lock_waits,
        futex_waits: 1.0,
        commit_wait_us: 0.0,
        cpu_share: 0.5,
    };
    i.commits_per_s = model.current(&i).commits_per_s;
    i
}

fn prediction(model: &Model, i: &Inputs, c: Config, ratio: f64) -> Prediction {
    Prediction {
        config: c,
        changes: Default::default(),
        ratio,
        ratio_low: ratio,
        ratio_high: ratio,
        sigma: 0.0,
        commits_per_s: i.commits_per_s * ratio,
        low: 0.0,
        high: 0.0,
        estimate: Estimate {
            config: c,
            ..model.current(i)
        },
    }
}

fn prior(t: Transition, regime: &str, mean: f64, spread: f64, model_error: f64) -> Prior {
    Prior {
        from: Start::RT1,
        transition: t,
        regime: regime.into(),
        mean,
        spread,
        n: 10,
        model_error: Some(model_error),
    }
}

fn priors(asymmetry: f64, list: Vec<Prior>) -> Priors {
    Priors {
        loss_asymmetry: asymmetry,
        min_utility: 0.0,
        source: "test".into(),
        priors: list,
        restart: vec![],
    }
}

#[test]
fn expected_utility_known_values() {
    // No uncertainty: a gain counts as itself, a loss λ times.
    assert_eq!(expected_utility(0.1, 0.0, 3.0), 0.1);
    assert_eq!(expected_utility(-0.1, 0.0, 3.0), -0.30000000000000004);
    // A symmetric loss: the mean.
    assert!((expected_utility(0.05, 0.3, 1.0) - 0.05).abs() < 1e-12);
    // Zero mean, sd s: −(λ−1)·s·φ(0).
    let want = -2.0 * 0.2 * (1.0 / (2.0 * std::f64::consts::PI).sqrt());
    assert!((expected_utility(0.0, 0.2, 3.0) - want).abs() < 1e-12);
}

#[test]
fn combine_weighs_by_precision() {
    let (m, s, w) = combine(Some((0.4, 0.2)), 0.0, 0.2);
    assert!((m - 0.2).abs() < 1e-12 && (w - 0.5).abs() < 1e-12);
    assert!((s - 0.2 / 2f64.sqrt()).abs() < 1e-12);
    assert_eq!(combine(None, 0.1, 0.3), (0.1, 0.3, 1.0));
    // A model four times as precise carries 16/17 of the weight.
    let (_, _, w) = combine(Some((0.0, 0.4)), 0.1, 0.1);
    assert!((w - 16.0 / 17.0).abs() < 1e-12);
}

/// Out of the model's range (its error in this regime is wide) a strong
/// prior decides: the model predicts RT0 10% slower, the sweeps say RT0 is
/// 60% faster in this regime with a small spread, so RT0 is advised;
/// without the prior it is not.
#[test]
fn an_out_of_range_strong_prior_flips_the_advice() {
    let model = calibrated();
    let i = inputs(&model, 4.0, 0.0);
    let key = Regime::of(&i).key(Transition::Mode);
    assert_eq!(key, "durable/upc<=2");
    let preds = vec![prediction(&model, &i, rt(false), 0.9)];
    let with = priors(
        3.0,
        vec![prior(Transition::Mode, &key, 0.6f64.ln_1p(), 0.15, 1.5)],
    );
    let d = decide(&model, &i, &preds, &with);
    assert_eq!(d.chosen, Some(rt(false)), "{:?}", d.assessments);
    let a = d.of(&rt(false)).unwrap();
    assert!(a.model_weight < 0.02, "the model weighs {}", a.model_weight);
    assert!(a.gain > 0.4 && a.p_worse < 0.01, "{a:?}");
    let without = decide(&model, &i, &preds, &priors(3.0, vec![]));
    assert_eq!(without.chosen, None);
    // An uncalibrated model keeps its own wide error, not the regime's.
    let a = decide(&Model::uncalibrated(), &i, &preds, &with);
    assert!(a.of(&rt(false)).unwrap().model_sigma >= 0.5);
    assert!(without.of(&rt(false)).unwrap().gain < 0.0);
}

/// A harmful candidate with a wide interval is not advised: the model
/// predicts +20% with an error of 0.5 in this regime, the sweeps saw no
/// effect on average with a spread of 0.3; the posterior leans to a gain
/// but its chance of a loss, weighed three times, outweighs it.
#[test]
fn a_wide_interval_candidate_is_not_advised() {
    let model = calibrated();
    let i = inputs(&model, 64.0, 0.0);
    let key = Regime::of(&i).key(Transition::Mode);
    let preds = vec![prediction(&model, &i, rt(false), 1.2)];
    let d = decide(
        &model,
        &i,
        &preds,
        &priors(3.0, vec![prior(Transition::Mode, &key, 0.0, 0.3, 0.5)]),
    );
    let a = d.of(&rt(false)).unwrap();
    assert!(a.gain > 0.0 && a.p_worse > 0.3, "{a:?}");
    assert!(a.utility < 0.0);
    assert_eq!(d.chosen, None);
    // With a symmetric loss the same posterior is advised.
    let d = decide(
        &model,
        &i,
        &preds,
        &priors(1.0, vec![prior(Transition::Mode, &key, 0.0, 0.3, 0.5)]),
    );
    assert_eq!(d.chosen, Some(rt(false)));
}

/// A heavier loss never advises more: over a grid of predictions and
/// priors, the changes advised at λ are a superset of those at λ' > λ, and
/// a chosen candidate's probability of being worse never grows with λ.
#[test]
fn advice_is_monotone_in_the_loss_asymmetry() {
    let model = calibrated();
    let i = inputs(&model, 64.0, 4.0);
    let cap = Config {
        redo_threads: true,
        cap: 4,
        throttle: 0,
    };
    let mut counts = vec![];
    for lambda in [1.0, 1.5, 2.0, 3.0, 5.0, 10.0] {
        let mut advised = 0;
        for m0 in [-0.3, -0.1, 0.0, 0.05, 0.1, 0.2, 0.4] {
            for m1 in [-0.2, 0.0, 0.1, 0.3] {
                for (mu, tau) in [(0.0, 0.3), (0.2, 0.2), (-0.1, 0.1)] {
                    let preds = vec![
                        prediction(&model, &i, rt(false), f64::exp(m0)),
                        prediction(&model, &i, cap, f64::exp(m1)),
                    ];
                    let r = Regime::of(&i);
                    let ps = priors(
                        lambda,
                        vec![
                            prior(Transition::Mode, &r.key(Transition::Mode), mu, tau, 0.25),
                            prior(Transition::Cap, &r.key(Transition::Cap), mu, tau, 0.25),
                        ],
                    );
                    if decide(&model, &i, &preds, &ps).chosen.is_some() {
                        advised += 1;
                    }
                }
            }
        }
        counts.push(advised);
    }
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "changes advised per λ: {counts:?}"
    );
    assert!(counts[0] > counts[counts.len() - 1], "{counts:?}");
}

#[test]
fn transitions_and_regimes() {
    let cap = |c: u32| Config {
        redo_threads: true,
        cap: c,
        throttle: 0,
    };
    let rt0thr = Config {
        redo_threads: false,
        cap: 0,
        throttle: 16,
    };
    assert_eq!(
        Transition::between(&rt(true), &rt(false), 64.0),
        Some(Transition::Mode)
    );
    assert_eq!(
        Transition::between(&rt(true), &cap(4), 64.0),
        Some(Transition::Cap)
    );
    assert_eq!(
        Transition::between(&rt(true), &rt0thr, 64.0),
        Some(Transition::ModeThrottle)
    );
    // A cap of at least the users holds nobody back: no change at all.
    assert_eq!(Transition::between(&rt(true), &cap(4), 4.0), None);
    // The sweeps never started from a capped configuration.
    assert_eq!(Transition::between(&cap(4), &rt(true), 64.0), None);
    let model = calibrated();
    let mut i = inputs(&model, 300.0, 4.0);
    assert_eq!(Regime::of(&i).key(Transition::Cap), "heavy");
    i.flush = 2;
    assert_eq!(Regime::of(&i).key(Transition::Mode), "fast/upc>128");
    i.flush = 1;
    i.binlog = true;
    assert_eq!(Regime::of(&i).key(Transition::Mode), "binlog/upc>128");
    i.fsync_us = 1.0;
    assert_eq!(Regime::of(&i).key(Transition::Mode), "fast/upc>128");
}

/// A cell the sweeps never saw falls back to its commit path's prior, then
/// to the transition's pooled one.
#[test]
fn an_unseen_regime_takes_the_pooled_prior() {
    let model = calibrated();
    let i = inputs(&model, 64.0, 0.0);
    let ps = priors(
        3.0,
        vec![
            prior(Transition::Mode, "fast/upc<=2", 1.0, 0.2, 0.3),
            prior(Transition::Mode, "*", 0.1, 0.3, 0.3),
        ],
    );
    let got = ps
        .get(Start::RT1, Transition::Mode, &Regime::of(&i))
        .unwrap();
    assert_eq!(got.regime, "*");
    assert!(ps
        .get(Start::RT0, Transition::Mode, &Regime::of(&i))
        .is_none());
    // With its path's group, the group's prior; another path's is not it.
    let regime = Regime::of(&i);
    let group = regime.group_key(Transition::Mode).unwrap();
    assert_eq!(group, "durable/*");
    let ps = priors(
        3.0,
        vec![
            prior(Transition::Mode, "fast/*", 1.0, 0.2, 0.3),
            prior(Transition::Mode, "durable/*", -0.2, 0.2, 0.3),
            prior(Transition::Mode, "*", 0.1, 0.3, 0.3),
        ],
    );
    let got = ps.get(Start::RT1, Transition::Mode, &regime).unwrap();
    assert_eq!(got.regime, "durable/*");
    // A cap's priors have one level below the transition.
    assert_eq!(regime.group_key(Transition::Cap), None);
}

#[test]
fn the_shipped_priors_parse_and_bad_files_are_refused() {
    let p = Priors::shipped();
    assert!(p.loss_asymmetry >= 1.0);
    assert!(p
        .restart
        .iter()
        .any(|r| r.setting == "innodb_doublewrite_design" && r.to == "files"));
    let path = std::path::Path::new("x.toml");
    for (text, says) in [
        ("loss_asymmetry = 0.5\nsource = \"x\"\n", "at least 1"),
        ("loss_asymmetry = 2\nmin_utility = -1\nsource = \"x\"\n", "zero or above"),
        (
            "loss_asymmetry = 2\nsource = \"x\"\n[[prior]]\nfrom = \"RT1\"\ntransition = \"mode\"\nregime = \"*\"\nmean = 0.1\nspread = 0\nn = 3\n",
            "spread",
        ),
        ("loss_asymmetry = \"a\"\n", "invalid type"),
        (
            "loss_asymmetry = 2\nsource = \"x\"\n[[restart_prior]]\nsetting = \"s\"\nfrom = \"a\"\nto = \"b\"\nregime = \"*\"\nmean = 0.1\nspread = 0.1\nn = 0\nsource = \"m\"\n",
            "n at least 1",
        ),
    ] {
        let e = Priors::parse(path, text).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains(says), "{e}");
    }
}

/// The what-if's decision takes the prior of the regime the load would be
/// in on the other host: 64 users are 32 per CPU on 2 CPUs, 2 per CPU on
/// 32, where the sweeps saw RT0 well ahead.
#[test]
fn the_what_if_decides_in_the_regime_of_the_other_host() {
    let model = calibrated();
    let i = inputs(&model, 64.0, 0.0);
    let ps = priors(
        3.0,
        vec![
            prior(Transition::Mode, "durable/upc<=128", -0.1, 0.1, 0.3),
            prior(Transition::Mode, "durable/upc<=2", 0.4, 0.1, 0.3),
        ],
    );
    let host = model.what_if(&i, &[rt(false)], 32);
    let d = what_if(&model, &i, &host, &ps);
    let a = d.of(&rt(false)).unwrap();
    assert_eq!(a.regime.as_deref(), Some("durable/upc<=2"));
    assert_eq!(d.chosen, Some(rt(false)), "{a:?}");
    // On its own host the other prior holds, and nothing is advised.
    let here = model.what_if(&i, &[rt(false)], 2);
    let d = what_if(&model, &i, &here, &ps);
    assert_eq!(
        d.of(&rt(false)).unwrap().regime.as_deref(),
        Some("durable/upc<=128")
    );
    assert_eq!(d.chosen, None);
}
