//! How long each knob's switch takes to settle (its carryover), and so
//! which trial design it gets: switchback periods where the carryover is
//! short and known, paired long windows otherwise. The guards come from
//! the knobs' measured mean trajectories after a switch (`redoctor meter
//! --knob`, `agent/bench/spectrum.py`, results in `agent/bench/RESULTS.md`):
//! the time until the mean rate is back within a few percent of the new
//! setting's steady state, rounded up. A knob not listed gets the paired
//! design.

use std::time::Duration;

use super::Design;
use super::Settings;
use super::Switchback;

/// Knob, and the time after a switch until its rate's distribution is the
/// new setting's steady state.
pub const CARRYOVER: &[(&str, Duration)] = &[
    // The bundled engine: a redo mode switch pauses or resumes its log
    // threads in microseconds, but switching them ON costs 10-20% of the
    // rate for ~250 ms (the committers' spin gate re-reads the CPU every
    // 200 ms and the log threads' first batches are small).
    ("innodb_log_writer_threads", Duration::from_millis(300)),
    // A gate or throttle change takes effect at the next admission; the
    // queue reshapes within ~150 ms (lifting a cap of 4: -12%).
    ("innodb_thread_concurrency", Duration::from_millis(200)),
    ("innodb_admission_policy", Duration::from_millis(200)),
    ("innodb_max_active_transactions", Duration::from_millis(200)),
    // The debug spin and sleep act on the next commit, but they change the
    // process's CPU use, which the spin gate re-reads every 200 ms: where
    // its decision is marginal (4 users on 2 CPUs), the gate answers the
    // switch one window later. Measured there (two runs of three): 50-ms
    // periods with a 10-ms guard read a spin of 8 µs as -1.4%, periods of
    // 250 ms to 2 s as -0.2% to +1.1%; with the gate held shut the designs
    // agree (-5%). Where the CPUs are saturated (the demo load) the gate
    // stays shut and all periods agree, but the design is chosen per knob,
    // not per load.
    ("redoctor_debug_commit_spin_ns", Duration::from_millis(300)),
    ("redoctor_debug_commit_sleep_us", Duration::from_millis(300)),
];

/// The carryover of `knob`, when known.
pub fn carryover(knob: &str) -> Option<Duration> {
    CARRYOVER.iter().find(|(k, _)| *k == knob).map(|(_, d)| *d)
}

/// The longest known carryover among the knobs of `settings` (zero when
/// none is known).
fn longest_carryover(settings: &Settings) -> Duration {
    settings
        .keys()
        .filter_map(|k| carryover(k))
        .max()
        .unwrap_or_default()
}

/// `base` stretched for the knobs of `settings` whose carryover is known:
/// the guard at least the longest of them, the period at least two guards.
/// Two guards, not more: the host's noise is flicker-like (a period's
/// spread hardly shrinks from 50 ms to 800 ms of measuring), so the number
/// of periods, not their length, sets the resolution, and a shorter period
/// buys more of them.
pub fn stretched(settings: &Settings, base: Switchback) -> Switchback {
    let guard = base.guard.max(longest_carryover(settings));
    Switchback {
        guard,
        period: base.period.max(guard * 2),
        ..base
    }
}

/// `base` exactly as an operator gave it, and what that means: where its
/// guard is shorter than a knob's measured carryover the label warns that
/// the estimate may be biased (the side just switched is measured before
/// it has settled). For measuring designs against each other
/// (`agent/bench/meter_periods.py`) or a load whose carryover is known to
/// be shorter than the knob's listed one.
pub fn as_given(settings: &Settings, base: Switchback) -> (Switchback, String) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut why = format!(
        "{:.0} ms periods with a {:.0} ms guard as given",
        ms(base.period),
        ms(base.guard)
    );
    let longest = longest_carryover(settings);
    if base.guard < longest {
        let knob = settings
            .keys()
            .find(|k| carryover(k) == Some(longest))
            .map_or("", String::as_str);
        why.push_str(&format!(
            ", shorter than {knob}'s measured carryover ({:.0} ms): the estimate may be biased",
            ms(longest)
        ));
    }
    (base, why)
}

/// The design for a trial of `settings`, and why: switchback (`base`
/// [`stretched`] for the knobs) when every knob's carryover is known, else
/// the paired design.
pub fn design_for(settings: &Settings, base: Switchback) -> (Design, String) {
    if let Some(k) = settings.keys().find(|k| carryover(k).is_none()) {
        return (
            Design::Pairs,
            format!(
                "paired windows: the carryover of {k} has not been measured, so each switch keeps a long warm-up"
            ),
        );
    }
    let longest = longest_carryover(settings);
    let sb = stretched(settings, base);
    (
        Design::Switchback(sb),
        format!(
            "switchback: {} settle{} within {:.0} ms of a switch, so {:.0} ms periods with a {:.0} ms guard",
            settings.keys().cloned().collect::<Vec<_>>().join(", "),
            if settings.len() == 1 { "s" } else { "" },
            longest.as_secs_f64() * 1e3,
            sb.period.as_secs_f64() * 1e3,
            sb.guard.as_secs_f64() * 1e3
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(pairs: &[(&str, &str)]) -> Settings {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_guard_as_given_is_kept_and_a_short_one_is_flagged() {
        let knob = s(&[("redoctor_debug_commit_spin_ns", "300")]);
        let (sb, why) = as_given(&knob, Switchback::default());
        assert_eq!(sb, Switchback::default());
        assert!(
            why.starts_with("50 ms periods with a 10 ms guard as given, shorter than redoctor_debug_commit_spin_ns's measured carryover (300 ms)"),
            "{why}"
        );
        let long = Switchback {
            guard: Duration::from_millis(300),
            period: Duration::from_millis(600),
            ..Switchback::default()
        };
        let (sb, why) = as_given(&knob, long);
        assert_eq!(sb, long);
        assert_eq!(why, "600 ms periods with a 300 ms guard as given");
    }

    #[test]
    fn measured_knobs_switch_back_and_others_pair() {
        let (d, why) = design_for(
            &s(&[("innodb_log_writer_threads", "OFF")]),
            Switchback::default(),
        );
        assert!(
            matches!(d, Design::Switchback(sb)
                if sb.guard == Duration::from_millis(300) && sb.period == Duration::from_millis(600)),
            "{d:?}"
        );
        assert!(why.starts_with("switchback"), "{why}");
        let (d, why) = design_for(
            &s(&[
                ("innodb_log_writer_threads", "OFF"),
                ("thread_pool_size", "4"),
            ]),
            Switchback::default(),
        );
        assert_eq!(d, Design::Pairs);
        assert!(
            why.contains("thread_pool_size has not been measured"),
            "{why}"
        );
        // A long carryover stretches the period to two guards.
        let base = Switchback {
            guard: Duration::from_millis(10),
            period: Duration::from_millis(40),
            ..Switchback::default()
        };
        let (d, _) = design_for(&s(&[("innodb_max_active_transactions", "16")]), base);
        let Design::Switchback(sb) = d else { panic!() };
        assert_eq!(sb.guard, Duration::from_millis(200));
        assert_eq!(sb.period, Duration::from_millis(400));
        // A carryover within the base's guard keeps the base's period and
        // guard.
        let long = Switchback {
            guard: Duration::from_millis(500),
            period: Duration::from_millis(1000),
            ..Switchback::default()
        };
        let (d, _) = design_for(&s(&[("redoctor_debug_commit_spin_ns", "300")]), long);
        assert_eq!(d, Design::Switchback(long));
        // Every knob of the bundled engine changes its CPU use, which the
        // spin gate answers a 200-ms window later: none keeps the default
        // 10-ms guard (at 4 users the debug spin read -1.4% with it and
        // +0.9% with 250-ms periods).
        for (knob, _) in CARRYOVER {
            assert!(
                carryover(knob).unwrap() >= Duration::from_millis(200),
                "{knob}"
            );
        }
    }
}
