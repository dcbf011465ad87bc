//! Several candidates, best predicted gain first, one trial each against
//! the current baseline, within [`Plan::max_total`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::run_trial;
use super::trial::TrialRecord;
use super::{secs, show, Plan, Settings, Testbed};

/// One change to try: a knob, or a group of knobs that belong together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub label: String,
    /// The settings it changes.
    pub settings: Settings,
    /// Expected relative gain (e.g. 0.1 for +10%), or any score; only
    /// orders the candidates, highest first.
    pub predicted_gain: f64,
    /// Settings the search must be at for this candidate to be tried
    /// (empty: always). A candidate meant to be judged against an earlier
    /// one that was kept names that one's settings here; until they are
    /// in effect it is neither tried nor given a share of the time.
    #[serde(default, skip_serializing_if = "Settings::is_empty")]
    pub requires: Settings,
    /// Its own trial design (None: the plan's), e.g. switchback for a knob
    /// whose carryover is short ([`super::design_for`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<super::Design>,
}

impl Candidate {
    /// A candidate tried whenever its turn comes (nothing it `requires`).
    pub fn new(label: impl Into<String>, settings: Settings, predicted_gain: f64) -> Candidate {
        Candidate {
            label: label.into(),
            settings,
            predicted_gain,
            requires: Settings::new(),
            design: None,
        }
    }

    /// Whether the settings it `requires` are in effect in `current`.
    pub fn ready(&self, current: &Settings) -> bool {
        self.requires.iter().all(|(k, v)| current.get(k) == Some(v))
    }
}

/// What became of one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepResult {
    Tried(Box<TrialRecord>),
    /// Not tried, and why.
    Skipped(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub label: String,
    pub settings: Settings,
    pub predicted_gain: f64,
    pub result: StepResult,
}

/// Everything a search did, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    pub plan: Plan,
    /// Values of every candidate's knobs before the search.
    pub start_settings: Settings,
    /// One step per candidate, in the order tried.
    pub steps: Vec<Step>,
    /// Values after the search (the kept candidates applied).
    pub final_settings: Settings,
    /// Labels of the kept candidates, in order.
    pub kept: Vec<String>,
    /// Sum of the trials' elapsed times.
    pub elapsed_s: f64,
    /// Why nothing was tried (an invalid plan, or the starting values
    /// could not be read); nothing was changed then.
    pub error: Option<String>,
}

impl SearchReport {
    /// One sentence: what was kept.
    pub fn summary(&self) -> String {
        if let Some(e) = &self.error {
            return format!("search not run: {e}");
        }
        let tried = self
            .steps
            .iter()
            .filter(|s| matches!(s.result, StepResult::Tried(_)))
            .count();
        let changed: Settings = self
            .final_settings
            .iter()
            .filter(|(k, v)| self.start_settings.get(*k) != Some(v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        format!(
            "{tried} of {} candidate(s) tried in {:.1}s; kept: {}",
            self.steps.len(),
            self.elapsed_s,
            if self.kept.is_empty() {
                "none (all settings as before)".to_string()
            } else {
                format!("{} ({})", self.kept.join(", "), show(&changed))
            }
        )
    }
}

/// Tries `candidates` best predicted gain first, each within its
/// [`share`] of the time left (see the module docs of [`super`]). A failed
/// trial ends the search: the rest are skipped.
pub fn search(tb: &mut dyn Testbed, mut candidates: Vec<Candidate>, plan: &Plan) -> SearchReport {
    let mut rep = SearchReport {
        plan: plan.clone(),
        start_settings: Settings::new(),
        steps: vec![],
        final_settings: Settings::new(),
        kept: vec![],
        elapsed_s: 0.0,
        error: None,
    };
    if let Err(e) = plan.validate() {
        rep.error = Some(e.to_string());
        return rep;
    }
    let mut names: Vec<String> = candidates
        .iter()
        .flat_map(|c| c.settings.keys().chain(c.requires.keys()).cloned())
        .collect();
    names.sort();
    names.dedup();
    match tb.read(&names) {
        Ok(s) => match names.iter().find(|n| !s.contains_key(*n)) {
            Some(n) => {
                rep.error = Some(format!("reading {n}: the testbed returned no value"));
                return rep;
            }
            None => rep.start_settings = s,
        },
        Err(e) => {
            rep.error = Some(e.to_string());
            return rep;
        }
    }
    let mut current = rep.start_settings.clone();
    candidates.sort_by(|a, b| b.predicted_gain.total_cmp(&a.predicted_gain));
    let mut failed = false;
    for (i, c) in candidates.iter().enumerate() {
        let own;
        let plan = match c.design {
            Some(design) => {
                own = Plan {
                    design,
                    ..plan.clone()
                };
                &own
            }
            None => plan,
        };
        let baseline = values_of(&c.settings, &current);
        let left = plan.max_total.saturating_sub(secs(rep.elapsed_s));
        let skip = if failed {
            Some("an earlier trial failed: the testbed's state is uncertain".to_string())
        } else if !c.ready(&current) {
            Some(format!("tried only after {} is kept", show(&c.requires)))
        } else if baseline == c.settings {
            Some("already in effect".to_string())
        } else if !plan.fits(plan.min_time(), left) {
            Some(format!(
                "does not fit the time budget: a decision needs {:.1}s, {:.1}s of {:.1}s left",
                plan.min_time().as_secs_f64(),
                left.as_secs_f64(),
                plan.max_total.as_secs_f64()
            ))
        } else {
            None
        };
        let result = match skip {
            Some(why) => StepResult::Skipped(why),
            None => {
                let to_try = candidates[i..]
                    .iter()
                    .filter(|c| applicable(c, &current))
                    .count();
                let t = run_trial(tb, &baseline, &c.settings, plan, share(left, to_try, plan));
                rep.elapsed_s += t.elapsed_s;
                if t.outcome.kept() {
                    current.extend(c.settings.clone());
                    rep.kept.push(c.label.clone());
                }
                failed = t.outcome == super::Outcome::Failed;
                StepResult::Tried(Box::new(t))
            }
        };
        rep.steps.push(Step {
            label: c.label.clone(),
            settings: c.settings.clone(),
            predicted_gain: c.predicted_gain,
            result,
        });
    }
    rep.final_settings = current;
    rep
}

/// The time one trial of a search may take: what is `left`, less
/// `min_pairs` pairs for each candidate still to try after it (`to_try`
/// counts this one), but at least `min_pairs` pairs and at most what is
/// left. The best predicted candidate keeps the power of a full trial;
/// the ones after it keep a look that settles a large effect. First come,
/// first served let two candidates with no effect (each running to
/// `max_pairs`) spend a 60 s budget before a third, better one was
/// reached; even shares cost the first candidates the pairs a moderate
/// effect needs.
pub fn share(left: Duration, to_try: usize, plan: &Plan) -> Duration {
    let reserved = plan.min_time() * u32::try_from(to_try.saturating_sub(1)).unwrap_or(u32::MAX);
    left.saturating_sub(reserved).max(plan.min_time()).min(left)
}

/// Whether `c` would be tried from `current`: its requirement holds and
/// it changes something.
fn applicable(c: &Candidate, current: &Settings) -> bool {
    c.ready(current) && values_of(&c.settings, current) != c.settings
}

/// `current`'s values of the knobs `settings` names.
fn values_of(settings: &Settings, current: &Settings) -> Settings {
    settings
        .keys()
        .map(|k| (k.clone(), current[k].clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_reserves_a_decision_for_each_later_candidate() {
        let p = Plan::default(); // 3 pairs of 3 s: 9 s at least
        let s = |x| Duration::from_secs(x);
        assert_eq!(share(s(60), 3, &p), s(42));
        assert_eq!(share(s(60), 1, &p), s(60));
        assert_eq!(share(s(20), 4, &p), s(9), "at least min_pairs");
        assert_eq!(share(s(5), 2, &p), s(5), "at most what is left");
        assert_eq!(share(s(30), 0, &p), s(30));
    }
}
