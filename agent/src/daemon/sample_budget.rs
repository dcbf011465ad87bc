//! The TPS budget in seconds of attached probes: a token bucket that
//! bounds the extra samples a phase change asks for.
//!
//! The config check fits the regular schedule (a span every
//! `sampling.every`) into `agent.budget.tps_percent`. A phase change brings
//! a sample forward, at most every `sampling.min_gap`: a load that keeps
//! changing could otherwise keep the probes loaded a third of the time and
//! cost several percent of TPS. The bucket fills at what the budget buys,
//! `(tps_percent - fsync counters' cost) / ATTACHED_TPS_COST` seconds of
//! attached probes per second, holds at most two spans, and every sample
//! spends the seconds it kept the probes loaded. Regular samples always
//! run (the bucket may go into debt, down to minus two spans); an extra one
//! runs only when the bucket holds a whole span, else it waits until it
//! would.

use std::time::{Duration, Instant};

use super::config::ATTACHED_TPS_COST;

#[derive(Debug, Clone)]
pub struct SampleBudget {
    /// Seconds of attached probes one sample costs (its expected span).
    span: f64,
    /// Seconds held, at most `2 span`, at least `-2 span`.
    tokens: f64,
    at: Instant,
}

impl SampleBudget {
    /// A full bucket (two spans of `span`).
    pub fn new(span: Duration, now: Instant) -> SampleBudget {
        let span = span.as_secs_f64();
        SampleBudget {
            span,
            tokens: 2.0 * span,
            at: now,
        }
    }

    /// Attached seconds per second that `tps_percent` buys once the fsync
    /// counters have taken `fsync_cost` percent.
    pub fn rate(tps_percent: f64, fsync_cost: f64) -> f64 {
        ((tps_percent - fsync_cost) / (ATTACHED_TPS_COST * 100.0)).max(0.0)
    }

    /// Adds what `rate` earned since the last call.
    pub fn refill(&mut self, rate: f64, now: Instant) {
        let secs = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now.max(self.at);
        self.tokens = (self.tokens + secs * rate).min(2.0 * self.span);
    }

    /// A sample kept the probes loaded for `attached`.
    pub fn spend(&mut self, attached: Duration) {
        self.tokens = (self.tokens - attached.as_secs_f64()).max(-2.0 * self.span);
    }

    /// How long until an extra sample fits at `rate` (zero: now); `None`
    /// when the budget buys nothing (the fsync counters take it all).
    pub fn wait_for_extra(&self, rate: f64) -> Option<Duration> {
        let short = self.span - self.tokens;
        if short <= 0.0 {
            return Some(Duration::ZERO);
        }
        (rate > 0.0).then(|| Duration::from_secs_f64(short / rate))
    }

    #[cfg(test)]
    pub fn tokens(&self) -> f64 {
        self.tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPAN: Duration = Duration::from_millis(4400);

    #[test]
    fn the_default_budget_buys_the_schedule_and_about_as_much_again() {
        // 1% at 14% a loaded second: 0.071 s a second, 8.6 s per 120 s,
        // of which the regular span takes 4.4 s.
        let r = SampleBudget::rate(1.0, 0.0);
        assert!((r * 120.0 - 8.57).abs() < 0.01, "{r}");
        // The fsync counters' cost comes off first; past the budget, nothing.
        assert!(SampleBudget::rate(1.0, 0.4) < r);
        assert_eq!(SampleBudget::rate(1.0, 1.5), 0.0);
    }

    #[test]
    fn extra_samples_come_no_faster_than_the_budget_refills() {
        let t0 = Instant::now();
        let mut b = SampleBudget::new(SPAN, t0);
        let rate = SampleBudget::rate(1.0, 0.0);
        // A full bucket allows two extra spans back to back, then a wait.
        assert_eq!(b.wait_for_extra(rate), Some(Duration::ZERO));
        b.spend(SPAN);
        assert_eq!(b.wait_for_extra(rate), Some(Duration::ZERO));
        b.spend(SPAN);
        let wait = b.wait_for_extra(rate).unwrap();
        assert!((wait.as_secs_f64() - 4.4 / rate).abs() < 0.01, "{wait:?}");
        // Phase changes every 10 s (min_gap) for an hour: the spans the
        // bucket allows keep the duty cycle, and so the cost, in budget.
        let mut now = t0 + Duration::from_secs(1);
        let mut attached = 0.0;
        let end = t0 + Duration::from_secs(3600);
        while now < end {
            b.refill(rate, now);
            if b.wait_for_extra(rate) == Some(Duration::ZERO) {
                b.spend(SPAN);
                attached += SPAN.as_secs_f64();
            }
            now += Duration::from_secs(10);
        }
        let cost = attached / 3600.0 * ATTACHED_TPS_COST * 100.0;
        assert!(cost <= 1.0 + 0.05, "{cost}% of TPS");
        assert!(cost > 0.8, "the bucket should not starve them: {cost}%");
    }

    #[test]
    fn regular_samples_may_run_into_debt_but_not_without_bound() {
        let t0 = Instant::now();
        let mut b = SampleBudget::new(SPAN, t0);
        for _ in 0..10 {
            b.spend(SPAN);
        }
        assert!((b.tokens() + 8.8).abs() < 1e-9, "{}", b.tokens());
        // No refill (the fsync counters take the budget): never.
        assert_eq!(b.wait_for_extra(0.0), None);
        // Refilling never passes two spans.
        b.refill(1.0, t0 + Duration::from_secs(3600));
        assert!((b.tokens() - 8.8).abs() < 1e-9, "{}", b.tokens());
    }
}
