//! Kept settings that someone else changed since.
//!
//! At each sample the server's current values are compared with the last
//! value the agent kept for each setting (the journal's kept changes). A
//! difference is logged once (`setting_changed_externally`), so the audit
//! log tells apart what the agent changed back (a rolled-back trial, a
//! `reconciled` restore) from what an operator or another tool did. The
//! agent does not fight it: the server's value is the new baseline, and the
//! setting is reported again only if it later returns to the kept value and
//! leaves it once more.

use std::collections::BTreeMap;

use serde::Serialize;

use super::journal::Journal;

/// A kept setting the server no longer has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub setting: String,
    /// The value the agent kept.
    pub kept: String,
    /// When it was kept.
    pub kept_unix_ms: u64,
    /// The server's value now.
    pub now: String,
}

/// The last kept value of each setting, and when it was kept.
fn kept_values(j: &Journal) -> BTreeMap<&str, (&str, u64)> {
    let mut out: BTreeMap<&str, (&str, u64)> = BTreeMap::new();
    for c in &j.changes {
        for (k, v) in &c.after {
            let newer = out
                .get(k.as_str())
                .is_none_or(|(_, at)| c.at_unix_ms >= *at);
            if newer {
                out.insert(k, (v, c.at_unix_ms));
            }
        }
    }
    out
}

/// Settings of `now` (the server's values) that differ from their last
/// kept value; a setting the server did not report is not compared.
/// Values compare without regard to case (`OFF` and `off`).
pub fn drifts(j: &Journal, now: &[(String, String)]) -> Vec<Drift> {
    let kept = kept_values(j);
    now.iter()
        .filter_map(|(k, v)| {
            let (kv, at) = kept.get(k.as_str())?;
            (!kv.eq_ignore_ascii_case(v)).then(|| Drift {
                setting: k.clone(),
                kept: kv.to_string(),
                kept_unix_ms: *at,
                now: v.clone(),
            })
        })
        .collect()
}

/// Reports each drift once.
#[derive(Debug, Default)]
pub struct ExternalWatch {
    /// Setting -> the value it was reported at.
    reported: BTreeMap<String, String>,
}

impl ExternalWatch {
    /// The drifts not reported yet; a setting back at its kept value is
    /// forgotten, so a later change is reported again.
    pub fn check(&mut self, j: &Journal, now: &[(String, String)]) -> Vec<Drift> {
        let all = drifts(j, now);
        self.reported
            .retain(|k, _| all.iter().any(|d| &d.setting == k));
        let mut new = Vec::new();
        for d in all {
            if self.reported.get(&d.setting) != Some(&d.now) {
                self.reported.insert(d.setting.clone(), d.now.clone());
                new.push(d);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::super::journal::KeptChange;
    use super::*;
    use redoctor_advisor::experiment::Settings;

    fn journal(changes: &[(u64, &str, &str)]) -> Journal {
        let mut j = Journal::empty("db");
        for (at, k, v) in changes {
            j.changes.push(KeptChange {
                at_unix_ms: *at,
                before: Settings::new(),
                after: Settings::from([(k.to_string(), v.to_string())]),
            });
        }
        j
    }

    fn now(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_last_kept_value_of_each_setting_is_compared() {
        let j = journal(&[
            (1, "innodb_log_writer_threads", "OFF"),
            (2, "innodb_thread_concurrency", "16"),
            (3, "innodb_log_writer_threads", "ON"),
        ]);
        // Kept ON last: ON (any case) is no drift, OFF is.
        assert!(drifts(&j, &now(&[("innodb_log_writer_threads", "on")])).is_empty());
        let d = drifts(
            &j,
            &now(&[
                ("innodb_log_writer_threads", "OFF"),
                ("innodb_thread_concurrency", "16"),
                ("innodb_max_concurrency_tickets", "5000"),
            ]),
        );
        assert_eq!(
            d,
            vec![Drift {
                setting: "innodb_log_writer_threads".into(),
                kept: "ON".into(),
                kept_unix_ms: 3,
                now: "OFF".into(),
            }]
        );
        // Nothing kept: nothing to compare.
        assert!(drifts(&Journal::empty("db"), &now(&[("a", "1")])).is_empty());
    }

    #[test]
    fn each_drift_is_reported_once_until_it_returns() {
        let j = journal(&[(1, "innodb_thread_concurrency", "16")]);
        let mut w = ExternalWatch::default();
        let changed = now(&[("innodb_thread_concurrency", "0")]);
        assert_eq!(w.check(&j, &changed).len(), 1);
        assert!(w.check(&j, &changed).is_empty());
        // Changed again, to another value: reported again.
        let again = now(&[("innodb_thread_concurrency", "8")]);
        assert_eq!(w.check(&j, &again)[0].now, "8");
        // Back at the kept value, then away once more: reported again.
        assert!(w
            .check(&j, &now(&[("innodb_thread_concurrency", "16")]))
            .is_empty());
        assert_eq!(w.check(&j, &again).len(), 1);
    }
}
