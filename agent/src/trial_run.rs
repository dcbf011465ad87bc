//! `redoctor diagnose --trial --socket S`: tries the recommendations live
//! with `redoctor_advisor::experiment` (ABBA-paired windows, a sequential
//! paired t-test, a floor guard, a time bound) on the server's admin
//! connection and the probes. One candidate is one trial; several are a
//! search, best first. A kept change is recorded in the state file, so
//! `redoctor revert` can still undo it.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use redoctor_advisor::advice::Status;
use redoctor_advisor::experiment::{
    design_for, pct, run_trial, search, show, Candidate, Design, Experiment, ExperimentError, Plan,
    Sample, Settings, Switchback, Testbed,
};
use redoctor_advisor::model::Prediction;
use redoctor_advisor::Diagnosis;
use redoctor_probes::Sampler;

use crate::admin::{guard_durability, Admin};
use crate::disk_latency;
use crate::state::State;
use crate::status_counter::StatusCounter;

/// How a trial reads each window's commits/s.
pub enum Meter<'a> {
    /// The probes' commit count, the probes attached throughout.
    Probes(&'a mut Sampler),
    /// A `SHOW GLOBAL STATUS` counter read over the admin connection at
    /// each window's ends, the probes detached. The probes cost the
    /// configurations a trial compares unequally: on 2 CPUs at 256 users
    /// they took 20% of RT0's commits/s and 13% of RT1's, which turned
    /// RT0's lead of 6% into a loss (`advisor/bench/RESULTS.md`).
    Counter { counter: StatusCounter, pid: u32 },
}

impl Meter<'_> {
    pub fn describe(&self) -> String {
        match self {
            Meter::Probes(_) => "the probes' commit count (probes attached)".into(),
            Meter::Counter { counter, .. } => {
                format!(
                    "the server's status counter {} (probes detached)",
                    counter.name()
                )
            }
        }
    }
}

/// A live server as a [`Testbed`]: settings through the admin connection,
/// commits/s by the [`Meter`].
pub struct Live<'a> {
    pub admin: &'a mut Admin,
    pub meter: Meter<'a>,
}

impl Testbed for Live<'_> {
    fn read(&mut self, names: &[String]) -> Result<Settings, ExperimentError> {
        self.admin.read_settings(names)
    }

    fn apply(&mut self, settings: &Settings) -> Result<(), ExperimentError> {
        self.admin.apply_settings(settings)
    }

    fn measure(&mut self, len: Duration) -> Result<Sample, ExperimentError> {
        match &mut self.meter {
            Meter::Probes(sampler) => probe_window(sampler, len),
            Meter::Counter { counter, pid } => {
                let pid = *pid;
                counter.window(self.admin, len, || target_alive(pid))
            }
        }
    }
}

fn probe_window(sampler: &mut Sampler, len: Duration) -> Result<Sample, ExperimentError> {
    let disk = disk_latency::mark();
    let w = sampler
        .wait_window(len)
        .map_err(|e| ExperimentError::measure(format!("reading the probes' maps: {e}")))?;
    if w.target_exited {
        return Err(ExperimentError::measure(
            "the target process exited during the window",
        ));
    }
    let commits = w.engine.commits.ok_or_else(|| {
        ExperimentError::measure(
            "the engine's commit counter is not visible (no probe points on the target): a trial needs commits/s",
        )
    })?;
    let secs = w.window_ns as f64 / 1e9;
    Ok(Sample {
        commits_per_s: commits as f64 / secs,
        secs,
        covariate: disk_latency::covariate(disk, disk_latency::mark()),
    })
}

/// The target process is still there.
fn target_alive(pid: u32) -> Result<(), ExperimentError> {
    if crate::find::alive(pid) {
        Ok(())
    } else {
        Err(ExperimentError::measure(
            "the target process exited during the window",
        ))
    }
}

/// Most single-knob candidates one `--trial` tries (each needs at least
/// `min_pairs` pairs); the model's best combination, and after it the
/// second, may come before them.
pub const MAX_CANDIDATES: usize = 3;

/// What to try, among the configurations whose predicted interval reaches
/// [`WORTH_TRYING`](redoctor_advisor::WORTH_TRYING) (the model's
/// point estimate may be below 1: its held-out error is wide, and the
/// trial is the judge):
/// - the model's best configuration, when it changes more than one knob:
///   knobs interact (on 2 CPUs at 128 users, RT0 alone measured 0.90× RT1
///   and RT0 with the cap 1.52×), so one knob at a time can reject a knob
///   that only pays together with another;
/// - the model's second best combination, when it also beats every single
///   knob and holds a different knob (RT0 with the cap after RT0 with the
///   throttle), tried only once the first is kept: it resets what the
///   first changed and it does not, so its trial is a head-to-head of the
///   two configurations the model ranked, not the second stacked on the
///   first. The model rarely separates its two best (read_write at 64
///   users: +22.9% and +22.3%) where the host does (1.36× between them).
///   Where the first is not kept the model's direction failed, and the
///   single knobs get the time (tried unconditionally, the second locked
///   in the first's redo mode in an offline replay and lost 0.5 points);
/// - then, for each knob — the redo mode, the concurrency cap (with its
///   admission policy), the throttle — its best single-knob configuration,
///   at most [`MAX_CANDIDATES`]. The search tries them best predicted
///   first on top of what was kept, so a kept combination makes its own
///   knobs "already in effect";
/// - then each proposal the model does not cover (advised on a rule's
///   evidence, or `not_modelled`: only a trial can judge it).
pub fn candidates(d: &Diagnosis) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    if let Some(m) = &d.model {
        let worth = || {
            m.predictions
                .iter()
                .filter(|p| p.ratio_high >= redoctor_advisor::WORTH_TRYING)
        };
        let (singles, combos): (Vec<_>, Vec<_>) =
            worth().partition(|p| knobs_of(&p.changes).len() == 1);
        // Predictions come best first: the first of equals, and a
        // combination only where it beats every single knob.
        let beats_singles = |c: &Prediction| singles.first().is_none_or(|s| c.ratio > s.ratio);
        if let Some(best) = combos.first().filter(|c| beats_singles(c)) {
            out.push(from_prediction(best, "the model's best combination"));
            let second = combos[1..]
                .iter()
                .find(|c| knobs_of(&c.changes) != knobs_of(&best.changes))
                .filter(|c| beats_singles(c));
            if let Some(second) = second {
                let mut c = from_prediction(second, "the model's second combination");
                for k in best.changes.keys() {
                    if let Some(now) = d.facts.settings.get(k) {
                        c.settings.entry(k.clone()).or_insert_with(|| now.clone());
                    }
                }
                c.label = format!(
                    "{} (the model's second combination: {} at {}; against the first)",
                    show(&c.settings),
                    second.config,
                    pct(second.ratio)
                );
                c.requires = best.changes.clone();
                out.push(c);
            }
        }
        let mut knobs_seen: Vec<&'static str> = Vec::new();
        for p in worth() {
            let knobs = knobs_of(&p.changes);
            let [knob] = knobs.as_slice() else { continue };
            if knobs_seen.contains(knob) || knobs_seen.len() >= MAX_CANDIDATES {
                continue;
            }
            knobs_seen.push(knob);
            out.push(from_prediction(p, "the model"));
        }
    }
    // Proposals the model does not cover: advised on a rule's evidence
    // alone, or not modelled. Only the trial can measure them.
    let unmodelled = d
        .recommendations
        .iter()
        .filter(|r| r.predicted.is_none())
        .map(|r| (&r.rule, &r.setting, &r.proposed, "on its evidence"))
        .chain(d.not_applied.iter().filter_map(|n| {
            let v = n.proposed.as_ref()?;
            (n.status == Status::NotModelled).then_some((&n.rule, &n.setting, v, "not modelled"))
        }));
    for (rule, setting, value, why) in unmodelled {
        if out.iter().any(|c| c.settings.contains_key(setting))
            || d.facts.settings.get(setting) == Some(value)
        {
            continue;
        }
        let settings = Settings::from([(setting.clone(), value.clone())]);
        out.push(Candidate::new(
            format!("{} ({rule}, {why})", show(&settings)),
            settings,
            0.0,
        ));
    }
    out
}

/// A prediction as a candidate, named by its change: the search applies
/// it on top of what was kept, which may not be the configuration the
/// model predicted it from.
pub(crate) fn from_prediction(p: &Prediction, what: &str) -> Candidate {
    Candidate::new(
        format!(
            "{} ({what}: {} at {})",
            show(&p.changes),
            p.config,
            pct(p.ratio)
        ),
        p.changes.clone(),
        p.ratio - 1.0,
    )
}

/// The knobs a change touches (a cap and its admission policy are one knob).
fn knobs_of(changes: &Settings) -> Vec<&'static str> {
    use redoctor_advisor::model::config::{CAP, POLICY, REDO_THREADS, THROTTLE};
    let mut knobs: Vec<&'static str> = changes
        .keys()
        .map(|k| match k.as_str() {
            REDO_THREADS => "redo",
            CAP | POLICY => "cap",
            THROTTLE => "throttle",
            _ => "other",
        })
        .collect();
    knobs.sort_unstable();
    knobs.dedup();
    knobs
}

/// The default plan with `max_pairs` (and at most as many `min_pairs`),
/// `window`, the total bound `max_total` and the guard's `floor`.
pub fn plan(max_pairs: usize, window: Duration, max_total: Duration, floor: f64) -> Plan {
    let d = Plan::default();
    Plan {
        window,
        max_pairs,
        min_pairs: d.min_pairs.min(max_pairs),
        max_total,
        floor,
        ..d
    }
}

/// How a trial's sides alternate, as an operator chooses it
/// (`diagnose --trial-design`, the daemon's `trial.design`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DesignChoice {
    /// Switchback periods for knobs whose carryover is known and short,
    /// paired windows with a warm-up for the others.
    #[default]
    Auto,
    /// Switchback periods for every candidate.
    Switchback,
    /// Paired windows for every candidate.
    Pairs,
}

/// Gives each candidate its trial design: with `choice` `Auto`,
/// switchback (from `base`) where every knob's carryover is known and
/// short, paired windows otherwise
/// (`redoctor_advisor::experiment::design_for`); the same for all
/// otherwise. A switchback's period and guard are stretched to the knobs'
/// measured carryovers, unless `as_given` (the operator named the guard):
/// then they are kept, and the label warns where the guard is shorter
/// than a carryover. The label says which design and why.
pub fn assign_designs(
    candidates: &mut [Candidate],
    choice: DesignChoice,
    base: Switchback,
    as_given: bool,
) {
    for c in candidates {
        let (design, why) = match choice {
            DesignChoice::Pairs => (Design::Pairs, "paired windows (chosen)".to_string()),
            DesignChoice::Switchback => {
                let (sb, how) =
                    redoctor_advisor::experiment::switchback_for(&c.settings, base, as_given);
                (
                    Design::Switchback(sb),
                    format!("switchback (chosen): {how}"),
                )
            }
            DesignChoice::Auto => design_for(&c.settings, base, as_given),
        };
        c.design = Some(design);
        c.label = format!("{}; trial design: {why}", c.label);
    }
}

/// Tries `candidates` (one: a trial; several: a search) within the plan;
/// records kept changes in the state file at `state_path`.
pub fn run(
    meter: Meter<'_>,
    admin: &mut Admin,
    candidates: Vec<Candidate>,
    plan: &Plan,
    allow_durability: bool,
    state_path: &Path,
) -> Result<Experiment> {
    guard_durability(
        candidates
            .iter()
            .flat_map(|c| c.settings.keys().map(String::as_str)),
        allow_durability,
        "trial",
    )?;
    plan.validate()?;
    // Fail before changing anything if the state file is unusable.
    let mut state = State::load(state_path)?;
    let socket = admin.socket().to_string();
    let mut tb = Live { admin, meter };
    let (experiment, before, after) = if let [c] = candidates.as_slice() {
        let names: Vec<String> = c.settings.keys().cloned().collect();
        let baseline = tb.read(&names).context("reading the baseline settings")?;
        let own = Plan {
            design: c.design.unwrap_or(plan.design),
            ..plan.clone()
        };
        let t = run_trial(&mut tb, &baseline, &c.settings, &own, plan.max_total);
        let after = if t.outcome.kept() {
            c.settings.clone()
        } else {
            baseline.clone()
        };
        (Experiment::Trial(t), baseline, after)
    } else {
        let r = search(&mut tb, candidates, plan);
        let (before, after) = (r.start_settings.clone(), r.final_settings.clone());
        (Experiment::Search(r), before, after)
    };
    let changed: Vec<(&String, &String)> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(v))
        .collect();
    if !changed.is_empty() {
        for (k, v) in &changed {
            state.record(&socket, k, &before[*k], v);
        }
        if let Err(e) = state.save(state_path) {
            tb.apply(&before)
                .context("restoring the baseline after the state file could not be written")?;
            return Err(e.context("recording the kept change; the baseline was restored"));
        }
    }
    Ok(experiment)
}

#[cfg(test)]
mod tests {
    use super::{candidates, plan};
    use redoctor_advisor::experiment::{
        search, ExperimentError, Sample, SearchReport, Settings, StepResult, Testbed,
    };
    use redoctor_advisor::model::config::Config;
    use redoctor_advisor::Diagnosis;
    use std::time::Duration;

    /// A live diagnosis of read_write at 128 users on 2 CPUs (RT1, no cap,
    /// no throttle; windows left out), whose model predicts RT0 with the
    /// throttle and RT0 with the cap above every single knob.
    fn diagnosis() -> Diagnosis {
        Diagnosis::from_json(include_str!("../tests/data/diagnosis-read_write-128u.json")).unwrap()
    }

    fn labels(d: &Diagnosis) -> Vec<(String, f64)> {
        candidates(d)
            .into_iter()
            .map(|c| {
                (
                    redoctor_advisor::experiment::show(&c.settings),
                    c.predicted_gain,
                )
            })
            .collect()
    }

    #[test]
    fn the_best_combination_comes_before_the_single_knobs() {
        let d = diagnosis();
        let c = candidates(&d);
        assert!(c[0].label.contains("the model's best combination"), "{c:?}");
        assert_eq!(
            redoctor_advisor::experiment::show(&c[0].settings),
            "innodb_log_writer_threads=OFF, innodb_max_active_transactions=16"
        );
        // The second combination resets the throttle the first sets.
        assert!(
            c[1].label
                .contains("the model's second combination: RT0+cap4"),
            "{c:?}"
        );
        assert_eq!(c[1].requires, c[0].settings, "only after the first is kept");
        let rest: Vec<String> = labels(&d)[1..].iter().map(|(s, _)| s.clone()).collect();
        assert_eq!(
            rest,
            [
                "innodb_admission_policy=fifo, innodb_log_writer_threads=OFF, \
                 innodb_max_active_transactions=0, innodb_thread_concurrency=4",
                "innodb_log_writer_threads=OFF",
                "innodb_admission_policy=fifo, innodb_thread_concurrency=4",
                "innodb_max_active_transactions=16",
            ]
        );
        // Best predicted first: the search tries the combination first.
        let gains: Vec<f64> = labels(&d).iter().map(|(_, g)| *g).collect();
        assert!(gains.windows(2).all(|w| w[0] >= w[1]), "{gains:?}");
    }

    /// The diagnosis with RT0 alone predicted as its `rank`-th prediction is.
    fn redo_alone_as(rank: usize) -> Diagnosis {
        let mut d = diagnosis();
        let m = d.model.as_mut().unwrap();
        let ratio = m.predictions[rank].ratio;
        for p in &mut m.predictions {
            if p.changes.len() == 1 && p.changes.contains_key("innodb_log_writer_threads") {
                p.ratio = ratio;
            }
        }
        d
    }

    #[test]
    fn no_combination_where_a_single_knob_is_predicted_as_good() {
        let c = candidates(&redo_alone_as(0));
        assert_eq!(c.len(), 3, "{c:?}");
        assert!(c.iter().all(|c| !c.label.contains("combination")), "{c:?}");
    }

    #[test]
    fn a_second_combination_that_a_single_knob_matches_is_not_tried() {
        let c = candidates(&redo_alone_as(1));
        assert!(c[0].label.contains("the model's best combination"), "{c:?}");
        assert!(c.iter().all(|c| !c.label.contains("second")), "{c:?}");
        assert_eq!(c.len(), 4, "one combination and three single knobs: {c:?}");
    }

    #[test]
    fn where_the_first_combination_is_not_kept_the_second_is_not_tried() {
        let (_, rep) = search_scripted(6000.0, 11);
        let second = &rep.steps[1];
        assert!(
            second.label.contains("second combination"),
            "{}",
            second.label
        );
        match &second.result {
            StepResult::Skipped(why) => assert!(why.contains("only after"), "{why}"),
            r => panic!("tried: {r:?}"),
        }
        // The time went to the single knobs: the cap, with RT1, is kept.
        assert_eq!(
            Config::from_settings(&rep.final_settings).to_string(),
            "RT1+cap4",
            "{}",
            rep.summary()
        );
    }

    /// A server whose commits/s follows its configuration (the shape
    /// read_write at 64 users had on 2 CPUs on 2026-11-28: RT0 with the
    /// throttle 1.13x RT1, RT0 with the cap 1.53x, both together 1.2x),
    /// with ±3% of seeded noise per window.
    struct Scripted {
        now: Settings,
        seed: u64,
        /// RT0 with the throttle (7900 in the host's shape).
        rt0_throttle: f64,
    }

    /// The default `--trial` search of the diagnosis's candidates on a
    /// [`Scripted`] server with RT0 and the throttle at `rt0_throttle`.
    fn search_scripted(rt0_throttle: f64, seed: u64) -> (Scripted, SearchReport) {
        let d = diagnosis();
        let mut tb = Scripted {
            now: d.facts.settings.clone(),
            seed,
            rt0_throttle,
        };
        let rep = search(
            &mut tb,
            candidates(&d),
            &plan(10, Duration::from_secs(1), Duration::from_secs(60), 0.7),
        );
        (tb, rep)
    }

    impl Testbed for Scripted {
        fn read(&mut self, names: &[String]) -> Result<Settings, ExperimentError> {
            Ok(names
                .iter()
                .map(|n| (n.clone(), self.now.get(n).cloned().unwrap_or_default()))
                .collect())
        }
        fn apply(&mut self, s: &Settings) -> Result<(), ExperimentError> {
            self.now.extend(s.clone());
            Ok(())
        }
        fn measure(&mut self, len: Duration) -> Result<Sample, ExperimentError> {
            let c = Config::from_settings(&self.now);
            let base = match (c.redo_threads, c.cap > 0, c.throttle > 0) {
                (true, false, false) => 7000.0,
                (false, false, true) => self.rt0_throttle,
                (false, true, false) => 10700.0,
                (false, true, true) => 8400.0,
                (false, false, false) => 6600.0,
                (true, true, _) => 9300.0,
                (true, false, true) => 9000.0,
            };
            self.seed = self
                .seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (self.seed >> 11) as f64 / (1u64 << 53) as f64;
            Ok(Sample {
                commits_per_s: base * (1.0 + 0.06 * (u - 0.5)),
                secs: len.as_secs_f64(),
                covariate: None,
            })
        }
    }

    #[test]
    fn after_a_kept_combination_the_second_is_tried_head_to_head() {
        let (tb, rep) = search_scripted(7900.0, 7);
        assert_eq!(rep.kept.len(), 2, "{}", rep.summary());
        let end = Config::from_settings(&rep.final_settings);
        assert_eq!(end.to_string(), "RT0+cap4", "{}", rep.summary());
        assert_eq!(tb.now["innodb_max_active_transactions"], "0");
    }

    #[test]
    fn a_combination_out_of_reach_is_not_tried() {
        let mut d = diagnosis();
        for p in &mut d.model.as_mut().unwrap().predictions {
            if p.changes.len() > 1 && p.changes.contains_key("innodb_log_writer_threads") {
                p.ratio_high = 1.0;
            }
        }
        let c = candidates(&d);
        assert!(c.iter().all(|c| !c.label.contains("combination")), "{c:?}");
        assert_eq!(c.len(), 3, "{c:?}");
    }

    #[test]
    fn the_flags_make_a_valid_plan() {
        let p = plan(2, Duration::from_millis(500), Duration::from_secs(20), 0.0);
        p.validate().unwrap();
        assert_eq!(p.floor, 0.0);
        assert_eq!((p.min_pairs, p.max_pairs), (2, 2));
        assert_eq!(p.window, Duration::from_millis(500));
        assert_eq!(p.max_total, Duration::from_secs(20));
        let p = plan(10, Duration::from_secs(1), Duration::from_secs(60), 0.7);
        assert_eq!((p.min_pairs, p.max_pairs), (3, 10));
        assert_eq!(p.floor, 0.7);
    }

    /// A guard the operator gave is kept (with a warning below the knob's
    /// carryover); otherwise the design is stretched to the carryover.
    #[test]
    fn a_given_guard_is_kept_and_a_default_one_stretched() {
        use super::{assign_designs, DesignChoice};
        use redoctor_advisor::experiment::{Candidate, Design, Switchback};
        let spin = || {
            let s: Settings = [("redoctor_debug_commit_spin_ns".to_string(), "8000".into())]
                .into_iter()
                .collect();
            vec![Candidate::new("spin", s, 0.0)]
        };
        let base = Switchback::default();
        for choice in [DesignChoice::Auto, DesignChoice::Switchback] {
            let mut c = spin();
            assign_designs(&mut c, choice, base, true);
            assert_eq!(c[0].design, Some(Design::Switchback(base)), "{choice:?}");
            assert!(
                c[0].label.contains("10 ms guard as given, shorter than")
                    && c[0].label.contains("may be biased"),
                "{}",
                c[0].label
            );
            let mut c = spin();
            assign_designs(&mut c, choice, base, false);
            let Some(Design::Switchback(sb)) = c[0].design else {
                panic!("{:?}", c[0].design)
            };
            assert_eq!(
                (sb.period, sb.guard),
                (Duration::from_millis(600), Duration::from_millis(300)),
                "{choice:?}"
            );
            assert!(!c[0].label.contains("as given"), "{}", c[0].label);
        }
        // Pairs stay pairs, given guard or not.
        let mut c = spin();
        assign_designs(&mut c, DesignChoice::Pairs, base, true);
        assert_eq!(c[0].design, Some(Design::Pairs));
    }
}
