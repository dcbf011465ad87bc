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
    // threads in microseconds, but at the demo load switching them ON
    // costs ~12% of the rate for 50 ms and 3-5% until ~500 ms after (with
    // the threads parked at OFF; started anew they cost 11-14% for 300 ms).
    // At 4 users ON costs 20% for 50 ms, 10% to 150 ms, 1-2% to 300 ms,
    // and trials of OFF read RT0 3.6 points better with 200/100-ms periods
    // than with 600/300 (agent/bench/RESULTS.md, 2026-12-06 evening), and
    // on a later engine 400/200-ms periods read it 2.5 points worse (2026-12-06
    // third session): periods shorter than 600/300 move the estimate. On
    // disk the ramp is fewer, slower fdatasyncs (each 5-11% longer to
    // ~300 ms) and the flusher resuming, whether the waiters spin or not;
    // on tmpfs there is none (RESULTS.md, 2026-12-06 second session).
    ("innodb_log_writer_threads", Duration::from_millis(300)),
    // A gate or throttle change takes effect at the next admission; the
    // queue reshapes within ~150 ms (lifting a cap of 4: -12%).
    ("innodb_thread_concurrency", Duration::from_millis(200)),
    ("innodb_admission_policy", Duration::from_millis(200)),
    ("innodb_max_active_transactions", Duration::from_millis(200)),
    // The debug spin and sleep act on the next commit, but they change the
    // process's CPU use, which the spin gate re-reads (every 200 ms when
    // this was measured; 50 ms since, not yet shown to shorten it): where
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

/// The knob of `settings` with the longest known carryover, and that
/// carryover (the first such knob on a tie; none when no carryover is
/// known).
fn longest_carryover(settings: &Settings) -> Option<(&str, Duration)> {
    let mut longest: Option<(&str, Duration)> = None;
    for (knob, d) in settings
        .keys()
        .filter_map(|k| carryover(k).map(|d| (k.as_str(), d)))
    {
        if longest.is_none_or(|(_, l)| d > l) {
            longest = Some((knob, d));
        }
    }
    longest
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `base` stretched for the knobs of `settings` whose carryover is known:
/// the guard at least the longest of them, the period at least two guards.
/// Two guards, not more: the host's noise is flicker-like (a period's
/// spread hardly shrinks from 50 ms to 800 ms of measuring), so the number
/// of periods, not their length, sets the resolution, and a shorter period
/// buys more of them.
pub fn stretched(settings: &Settings, base: Switchback) -> Switchback {
    let guard = base
        .guard
        .max(longest_carryover(settings).map_or(Duration::ZERO, |(_, d)| d));
    Switchback {
        guard,
        period: base.period.max(guard * 2),
        ..base
    }
}

/// The switchback for a trial of `settings` from `base`, and its periods
/// in words: [`stretched`] to the knobs' carryovers, or, `as_given`, `base`
/// exactly as an operator gave it. A guard given shorter than a knob's
/// measured carryover is kept, and the words warn that the estimate may
/// be biased (the side just switched is measured before it has settled):
/// for measuring designs against each other (`agent/bench/meter_periods.py`)
/// or a load whose carryover is known to be shorter than the knob's listed
/// one.
pub fn switchback_for(
    settings: &Settings,
    base: Switchback,
    as_given: bool,
) -> (Switchback, String) {
    let sb = if as_given {
        base
    } else {
        stretched(settings, base)
    };
    let mut how = format!(
        "{:.0} ms periods with a {:.0} ms guard",
        ms(sb.period),
        ms(sb.guard)
    );
    if as_given {
        how.push_str(" as given");
        if let Some((knob, d)) = longest_carryover(settings).filter(|&(_, d)| sb.guard < d) {
            how.push_str(&format!(
                ", shorter than {knob}'s measured carryover ({:.0} ms): the estimate may be biased",
                ms(d)
            ));
        }
    }
    (sb, how)
}

/// The design for a trial of `settings`, and why: switchback
/// ([`switchback_for`] `base`) when every knob's carryover is known, else
/// the paired design.
pub fn design_for(settings: &Settings, base: Switchback, as_given: bool) -> (Design, String) {
    if let Some(k) = settings.keys().find(|k| carryover(k).is_none()) {
        return (
            Design::Pairs,
            format!(
                "paired windows: the carryover of {k} has not been measured, so each switch keeps a long warm-up"
            ),
        );
    }
    let (sb, how) = switchback_for(settings, base, as_given);
    let why = if as_given {
        format!("switchback: {how}")
    } else {
        format!(
            "switchback: {} settle{} within {:.0} ms of a switch, so {how}",
            settings.keys().cloned().collect::<Vec<_>>().join(", "),
            if settings.len() == 1 { "s" } else { "" },
            ms(longest_carryover(settings).map_or(Duration::ZERO, |(_, d)| d))
        )
    };
    (Design::Switchback(sb), why)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A switchback of `period_ms` periods with a `guard_ms` guard.
    fn sb(period_ms: u64, guard_ms: u64) -> Switchback {
        Switchback {
            period: Duration::from_millis(period_ms),
            guard: Duration::from_millis(guard_ms),
            ..Switchback::default()
        }
    }

    fn s(pairs: &[(&str, &str)]) -> Settings {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_guard_as_given_is_kept_and_a_short_one_is_flagged() {
        let knob = s(&[("redoctor_debug_commit_spin_ns", "300")]);
        let (given, why) = switchback_for(&knob, Switchback::default(), true);
        assert_eq!(given, Switchback::default());
        assert!(
            why.starts_with("50 ms periods with a 10 ms guard as given, shorter than redoctor_debug_commit_spin_ns's measured carryover (300 ms)"),
            "{why}"
        );
        let long = sb(600, 300);
        let (given, why) = switchback_for(&knob, long, true);
        assert_eq!(given, long);
        assert_eq!(why, "600 ms periods with a 300 ms guard as given");
    }

    #[test]
    fn measured_knobs_switch_back_and_others_pair() {
        let (d, why) = design_for(
            &s(&[("innodb_log_writer_threads", "OFF")]),
            Switchback::default(),
            false,
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
            false,
        );
        assert_eq!(d, Design::Pairs);
        assert!(
            why.contains("thread_pool_size has not been measured"),
            "{why}"
        );
        // A long carryover stretches the period to two guards.
        let (d, _) = design_for(
            &s(&[("innodb_max_active_transactions", "16")]),
            sb(40, 10),
            false,
        );
        let Design::Switchback(got) = d else { panic!() };
        assert_eq!(got.guard, Duration::from_millis(200));
        assert_eq!(got.period, Duration::from_millis(400));
        // A carryover within the base's guard keeps the base's period and
        // guard.
        let long = sb(1000, 500);
        let (d, _) = design_for(&s(&[("redoctor_debug_commit_spin_ns", "300")]), long, false);
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
