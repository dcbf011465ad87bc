//! The closed loop's guardrails: whether a change may be tried now, and
//! what of a candidate may be tried. Each one is a config key
//! (`[target.guardrails]`); the abort-and-restore floor is the trial's
//! (`Plan::floor`).

use redoctor_advisor::experiment::{pct, show, Candidate, Settings};
use redoctor_advisor::model::config::{CAP, THROTTLE};
use redoctor_advisor::model::Model;
use redoctor_advisor::Diagnosis;
use redoctor_advisor::WORTH_TRYING;

use super::config::Target;
use super::journal::Journal;

/// Why no change may be tried now.
#[derive(Debug, Clone, PartialEq)]
pub enum Closed {
    /// A change was kept less than `stabilization` ago.
    Stabilizing { wait_s: u64 },
    /// `daily_budget` changes were kept in the last 24 hours.
    Budget { used: usize, budget: u32 },
}

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Closed::Stabilizing { wait_s } => write!(
                f,
                "stabilization window: the last kept change is recent ({wait_s} s to wait)"
            ),
            Closed::Budget { used, budget } => write!(
                f,
                "daily change budget spent ({used} of {budget} in the last 24 h)"
            ),
        }
    }
}

/// Whether the stabilization window and the daily budget allow a change at `now`.
pub fn window(t: &Target, j: &Journal, now: u64) -> Result<(), Closed> {
    let g = &t.guardrails;
    if let Some(last) = j.last_change() {
        let until = last + g.stabilization.as_millis() as u64;
        if now < until {
            return Err(Closed::Stabilizing {
                wait_s: (until - now).div_ceil(1000),
            });
        }
    }
    let used = j.changes_in_day(now);
    if used >= g.daily_budget as usize {
        return Err(Closed::Budget {
            used,
            budget: g.daily_budget,
        });
    }
    Ok(())
}

/// What `settings` would change from `current`: a setting at its current
/// value (a candidate that resets what an earlier one in its search
/// changed) is no change, so no guardrail applies to it.
pub fn changes_only(current: &Settings, settings: &Settings) -> Settings {
    settings
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The part of `c` the guardrails allow, or why none of it: every setting
/// it changes must be a configured knob (durability ones need consent,
/// checked when the config is loaded), none changed within `min_dwell`,
/// and caps and the throttle move by at most `max_step` (0, unlimited,
/// counts as the connected `users`).
pub fn admit(
    t: &Target,
    j: &Journal,
    current: &Settings,
    users: f64,
    mut c: Candidate,
    now: u64,
) -> Result<Candidate, String> {
    let g = &t.guardrails;
    c.settings = changes_only(current, &c.settings);
    let asked = c.settings.clone();
    for (k, v) in c.settings.iter_mut() {
        if !t.allows(k) {
            return Err(format!("{k} is not among the target's knobs"));
        }
        if let Some(at) = j.last_change_of(k) {
            let until = at + g.min_dwell.as_millis() as u64;
            if now < until {
                return Err(format!(
                    "{k} changed {} s ago (min_dwell {} s)",
                    (now - at) / 1000,
                    g.min_dwell.as_secs()
                ));
            }
        }
        if k == CAP || k == THROTTLE {
            if let Some(old) = current.get(k) {
                *v = clamp_step(old, v, users, g.max_step)?;
            }
        }
    }
    c.settings.retain(|k, v| current.get(k) != Some(v));
    if c.settings.is_empty() {
        return Err("nothing left to change after the step limit".into());
    }
    if c.settings != asked {
        c.label = format!(
            "{} as {} (max_step {})",
            c.label,
            redoctor_advisor::experiment::show(&c.settings),
            g.max_step
        );
    }
    Ok(c)
}

/// A candidate of the model's that [`admit`] changed (a cap or throttle
/// limited by `max_step`) is a configuration the model did not rank: it is
/// predicted again as it will be tried, and refused when its interval no
/// longer reaches [`WORTH_TRYING`]. Otherwise its label and predicted gain
/// are the new prediction's (named as `diagnose --trial` names the model's
/// candidates), so the audit log states what is tried. Other
/// candidates (a rule's, the config's, or unchanged) pass as they are.
pub fn repredict(
    model: &Model,
    d: &Diagnosis,
    asked: &Settings,
    mut c: Candidate,
) -> Result<Candidate, String> {
    let Some(report) = &d.model else {
        return Ok(c);
    };
    let Some(inputs) = &report.inputs else {
        return Ok(c);
    };
    if !report.predictions.iter().any(|p| &p.changes == asked) {
        return Ok(c);
    }
    let stepped = inputs.config.with(&c.settings);
    if stepped == inputs.config.with(asked) {
        return Ok(c);
    }
    let Some(p) = model
        .predict(inputs, &[stepped], &d.facts.settings)
        .into_iter()
        .next()
    else {
        return Err(format!(
            "the step limit leaves {} at the current configuration",
            show(&c.settings)
        ));
    };
    if p.ratio_high < WORTH_TRYING {
        return Err(format!(
            "the step limit allows {} ({}), which the model predicts at {} ({}..{}): not worth a trial",
            show(&c.settings),
            p.config,
            pct(p.ratio),
            pct(p.ratio_low),
            pct(p.ratio_high)
        ));
    }
    let named =
        crate::trial_run::from_prediction(&p, &format!("the model, stepped from {}", show(asked)));
    c.label = named.label;
    c.predicted_gain = named.predicted_gain;
    Ok(c)
}

/// `new` limited to within `max_step` times `old` (0 = unlimited, taken as `users`).
fn clamp_step(old: &str, new: &str, users: f64, max_step: f64) -> Result<String, String> {
    let parse = |s: &str| {
        s.parse::<f64>()
            .map_err(|_| format!("`{s}` is not a number"))
    };
    let eff = |x: f64| if x == 0.0 { users.max(1.0) } else { x };
    let (o, n) = (eff(parse(old)?), parse(new)?);
    let want = eff(n);
    let lo = (o / max_step).ceil().max(1.0);
    let hi = (o * max_step).floor();
    if want >= lo && want <= hi {
        return Ok(new.to_string());
    }
    Ok(format!("{}", want.clamp(lo, hi) as u64))
}

#[cfg(test)]
mod tests {
    use super::super::config::Config;
    use super::super::journal::KeptChange;
    use super::*;

    fn target(extra: &str) -> Target {
        let c = Config::parse(&format!(
            "[[target]]\nname = \"t\"\npid = 1\nsocket = \"/s\"\nmode = \"apply\"\n{extra}"
        ))
        .unwrap();
        c.targets[0].get_ref().clone()
    }

    fn cand(k: &str, v: &str) -> Candidate {
        Candidate::new(
            format!("{k}={v}"),
            Settings::from([(k.into(), v.into())]),
            0.1,
        )
    }

    fn kept(at: u64, k: &str) -> KeptChange {
        KeptChange {
            at_unix_ms: at,
            before: Settings::new(),
            after: Settings::from([(k.into(), "x".into())]),
        }
    }

    #[test]
    fn the_stabilization_window_and_the_budget_close_the_loop() {
        let t = target("[target.guardrails]\nstabilization = \"60s\"\ndaily_budget = 2\n");
        let mut j = Journal::empty("t");
        let now = 100_000_000;
        assert_eq!(window(&t, &j, now), Ok(()));
        j.changes.push(kept(now - 30_000, "a"));
        assert_eq!(window(&t, &j, now), Err(Closed::Stabilizing { wait_s: 30 }));
        assert_eq!(window(&t, &j, now + 30_000), Ok(()));
        j.changes.push(kept(now - 3_600_000, "a"));
        assert_eq!(
            window(&t, &j, now + 60_000),
            Err(Closed::Budget { used: 2, budget: 2 })
        );
        assert_eq!(window(&t, &j, now + 24 * 3_600_000), Ok(()));
    }

    #[test]
    fn dwell_knobs_and_steps_shape_a_candidate() {
        let t = target("knobs = [\"innodb_thread_concurrency\", \"innodb_log_writer_threads\"]\n[target.guardrails]\nmin_dwell = \"10m\"\nmax_step = 4.0\n");
        let mut j = Journal::empty("t");
        let now = 100_000_000;
        let cur = Settings::from([
            ("innodb_thread_concurrency".into(), "32".into()),
            ("innodb_log_writer_threads".into(), "ON".into()),
        ]);
        let e = admit(
            &t,
            &j,
            &cur,
            64.0,
            cand("innodb_max_active_transactions", "8"),
            now,
        )
        .unwrap_err();
        assert!(e.contains("not among"), "{e}");
        // 32 -> 2 is a factor 16: limited to 8.
        let c = admit(
            &t,
            &j,
            &cur,
            64.0,
            cand("innodb_thread_concurrency", "2"),
            now,
        )
        .unwrap();
        assert_eq!(c.settings["innodb_thread_concurrency"], "8");
        // 32 -> 0 (unlimited, 256 users): limited to 128.
        let c = admit(
            &t,
            &j,
            &cur,
            256.0,
            cand("innodb_thread_concurrency", "0"),
            now,
        )
        .unwrap();
        assert_eq!(c.settings["innodb_thread_concurrency"], "128");
        // Unlimited with 16 users -> 4 is within 4x.
        let cur0 = Settings::from([("innodb_thread_concurrency".into(), "0".into())]);
        let c = admit(
            &t,
            &j,
            &cur0,
            16.0,
            cand("innodb_thread_concurrency", "4"),
            now,
        )
        .unwrap();
        assert_eq!(c.settings["innodb_thread_concurrency"], "4");
        j.changes
            .push(kept(now - 60_000, "innodb_log_writer_threads"));
        let e = admit(
            &t,
            &j,
            &cur,
            64.0,
            cand("innodb_log_writer_threads", "OFF"),
            now,
        )
        .unwrap_err();
        assert!(e.contains("min_dwell"), "{e}");
        let c = admit(
            &t,
            &j,
            &cur,
            64.0,
            cand("innodb_log_writer_threads", "OFF"),
            now + 600_000,
        )
        .unwrap();
        assert_eq!(c.settings["innodb_log_writer_threads"], "OFF");
        assert!(admit(
            &t,
            &j,
            &cur,
            64.0,
            cand("innodb_thread_concurrency", "32"),
            now
        )
        .is_err());
        // A setting at its current value is no change: a knob outside the
        // list, or one within its dwell, does not refuse the candidate.
        let reset = || {
            let mut c = cand("innodb_log_writer_threads", "OFF");
            c.settings
                .insert("innodb_max_active_transactions".into(), "0".into());
            c.settings
                .insert("innodb_thread_concurrency".into(), "32".into());
            c
        };
        let with_throttle = {
            let mut c = cur.clone();
            c.insert("innodb_max_active_transactions".into(), "0".into());
            c
        };
        j.changes
            .push(kept(now + 500_000, "innodb_thread_concurrency"));
        let c = admit(&t, &j, &with_throttle, 64.0, reset(), now).unwrap_err();
        assert!(c.contains("innodb_log_writer_threads changed"), "{c}");
        let c = admit(&t, &j, &with_throttle, 64.0, reset(), now + 600_000).unwrap();
        assert_eq!(
            show(&c.settings),
            "innodb_log_writer_threads=OFF",
            "{}",
            c.label
        );
        assert!(!c.label.contains("max_step"), "{}", c.label);
    }

    fn diagnosis() -> Diagnosis {
        let mut d = Diagnosis::from_json(include_str!(
            "../../tests/data/diagnosis-read_write-128u.json"
        ))
        .unwrap();
        // A steady rate, so the intervals are the model's error alone.
        let i = d.model.as_mut().unwrap().inputs.as_mut().unwrap();
        i.window_rates = vec![i.commits_per_s; 3];
        d
    }

    fn model() -> Model {
        Model {
            sigma: 0.01,
            ..Model::uncalibrated()
        }
    }

    fn predicted(d: &Diagnosis, m: &Model, settings: &Settings) -> f64 {
        let i = d.model.as_ref().unwrap().inputs.as_ref().unwrap();
        m.predict(i, &[i.config.with(settings)], &d.facts.settings)[0].ratio
    }

    #[test]
    fn a_stepped_candidate_is_predicted_as_it_will_be_tried() {
        let (d, m) = (diagnosis(), model());
        let t = target("[target.guardrails]\nmax_step = 4.0\n");
        let j = Journal::empty("t");
        let cur = d.facts.settings.clone();
        // The model's RT0 with a cap of 4 at 128 users: a factor 32 from
        // unlimited, stepped to a cap of 32.
        let p = d.model.as_ref().unwrap().predictions[1].clone();
        assert_eq!(p.config.to_string(), "RT0+cap4");
        let c = Candidate::new("asked", p.changes.clone(), p.ratio - 1.0);
        let c = admit(&t, &j, &cur, 128.0, c, 0).unwrap();
        assert_eq!(c.settings[CAP], "32");
        let c = repredict(&m, &d, &p.changes, c).unwrap();
        let want = predicted(&d, &m, &c.settings);
        assert_ne!(want, predicted(&d, &m, &p.changes));
        assert!((c.predicted_gain - (want - 1.0)).abs() < 1e-12);
        assert!(
            c.label.contains("RT0+cap32") && c.label.contains("stepped from"),
            "{}",
            c.label
        );
        // Not stepped: as it was.
        let alone = Settings::from([("innodb_log_writer_threads".to_string(), "OFF".to_string())]);
        let c = cand("innodb_log_writer_threads", "OFF");
        assert_eq!(repredict(&m, &d, &alone, c.clone()), Ok(c));
    }

    #[test]
    fn a_stepped_candidate_predicted_worse_is_refused() {
        let (mut d, m) = (diagnosis(), model());
        let t = target("[target.guardrails]\nmax_step = 32.0\n");
        let j = Journal::empty("t");
        let cur = d.facts.settings.clone();
        // Say the model ranked a throttle of 1 well: 128 users and
        // max_step 32 step it to 4, which the model predicts well below
        // the current rate.
        let asked = Settings::from([(THROTTLE.to_string(), "1".to_string())]);
        let mut p = d.model.as_ref().unwrap().predictions[0].clone();
        p.changes = asked.clone();
        d.model.as_mut().unwrap().predictions.push(p);
        let c = Candidate::new("asked", asked.clone(), 0.3);
        let c = admit(&t, &j, &cur, 128.0, c, 0).unwrap();
        assert_eq!(c.settings[THROTTLE], "4");
        assert!(predicted(&d, &m, &c.settings) < 0.9);
        let e = repredict(&m, &d, &asked, c.clone()).unwrap_err();
        assert!(
            e.contains("RT1+throttle4") && e.contains("not worth"),
            "{e}"
        );
        // A candidate the model did not rank (a rule's, the config's) is
        // not the model's to refuse.
        let other = Settings::from([(THROTTLE.to_string(), "2".to_string())]);
        assert_eq!(repredict(&m, &d, &other, c.clone()), Ok(c));
    }
}
