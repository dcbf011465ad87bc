//! The agent's configuration file (TOML). Unknown keys, bad durations and
//! inconsistent values are errors that name the key and its line; nothing
//! starts on an invalid file. `AGENT.md` documents every key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};
use toml::Spanned;

use crate::admin::DURABILITY_SETTINGS;

/// What the agent does with a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Signals and metrics only.
    Observe,
    /// Advice logged and exported; nothing changed.
    #[default]
    Recommend,
    /// Closed loop: candidates tried live, kept only if better beyond noise.
    Apply,
}

/// What a sampled window costs the engine while it lasts, at the highest
/// event rate on 2 CPUs, measured in the daemon's own windows against the
/// seconds around them (`agent/bench/steady_local.py`): 13.8% ± 1.7 over
/// 28 windows, then 11.3% ± 2.9 over 16 once the scheduler hooks were
/// attached last and detached first; the higher is kept. The probes
/// attached for good cost ~6%: the rest is the loading, attaching and
/// first reads. The duty cycle times this must fit the TPS budget.
pub const ATTACHED_TPS_COST: f64 = 0.14;
/// How much longer than `warmup + window` a sampled window keeps the
/// probes loaded: loading, attaching, reading and detaching (the same
/// bench: 4.36 s, then 4.17 s, a window for 3 s configured).
pub const SAMPLE_OVERHEAD: Duration = Duration::from_millis(1400);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub agent: AgentSection,
    #[serde(rename = "target", default)]
    pub targets: Vec<Spanned<Target>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSection {
    /// Audit log, trial journal, status file.
    pub state_dir: PathBuf,
    /// Prometheus exposition address (loopback only), or "off".
    pub metrics: String,
    /// Extra rule directories (their rules replace shipped ones with the same id).
    pub rules: Vec<PathBuf>,
    /// The host's calibration file (default: the host's default calibration, else the priors).
    pub calibration: Option<PathBuf>,
    pub budget: Budget,
    pub audit: AuditConfig,
    /// How the daemon's diagnostics are written to stderr.
    pub log: LogConfig,
}

/// `[agent.log]`: the daemon's diagnostics (not the audit log, which is
/// always JSON lines in the state directory).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `text` (one line per event, for a terminal) or `json` (one JSON
    /// object per line with level, target, message and fields: journald,
    /// a log shipper).
    pub format: LogFormat,
    /// Which events, as `RUST_LOG` spells it (`info`, `warn`,
    /// `redoctor::daemon=debug`); `RUST_LOG` in the environment wins.
    pub level: Option<String>,
}

/// The daemon's diagnostics format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl Default for AgentSection {
    fn default() -> Self {
        AgentSection {
            state_dir: PathBuf::from("/var/lib/redoctor"),
            metrics: "127.0.0.1:9464".into(),
            rules: vec![],
            calibration: None,
            budget: Budget::default(),
            audit: AuditConfig::default(),
            log: LogConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budget {
    /// Most TPS the observation may cost, percent.
    pub tps_percent: f64,
    /// Most CPU the agent itself may use, percent of one CPU.
    pub cpu_percent: f64,
    /// Most resident memory, MiB.
    pub rss_mib: f64,
    /// How often the agent's own CPU (averaged over this span) and RSS are
    /// compared with the budget, and the sampling stretched or relaxed.
    #[serde(deserialize_with = "positive")]
    pub every: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            tps_percent: 1.0,
            cpu_percent: 1.0,
            rss_mib: 64.0,
            every: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// Rotate the audit log when it reaches this size, MiB.
    pub rotate_mib: f64,
    /// Rotated files kept (audit.jsonl.1 ... .N).
    pub keep: u32,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            rotate_mib: 16.0,
            keep: 5,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// A unique name (metrics label, journal file name).
    pub name: String,
    /// Exactly one of pid, process (name as in /proc/PID/comm) and pidfile.
    pub pid: Option<u32>,
    pub process: Option<String>,
    pub pidfile: Option<PathBuf>,
    /// The server's admin socket (MySQL protocol): settings and counters; required for apply.
    pub socket: Option<PathBuf>,
    #[serde(default = "root")]
    pub user: String,
    #[serde(default = "engine_profile")]
    pub profile: String,
    #[serde(default)]
    pub mode: Mode,
    /// The settings apply mode may change.
    #[serde(default = "default_knobs")]
    pub knobs: Vec<Spanned<String>>,
    /// Consent to change durability settings that `knobs` names.
    #[serde(default)]
    pub allow_durability: bool,
    /// Operator-proposed candidates, tried (apply mode) at each evaluation
    /// after the advisor's, when guardrails allow.
    #[serde(default)]
    pub candidates: Vec<BTreeMap<String, String>>,
    /// Status counters (SHOW GLOBAL STATUS) for commits and connected users.
    /// `commit_counter` defaults to the profile's (`Com_commit` for the
    /// bundled engine, `Handler_commit` for MariaDB and MySQL); [`Config::parse`]
    /// fills it in, so after parsing it is never empty.
    #[serde(default)]
    pub commit_counter: String,
    #[serde(default = "users_counter")]
    pub users_counter: String,
    #[serde(default)]
    pub sampling: Sampling,
    #[serde(default)]
    pub guardrails: Guardrails,
    #[serde(default)]
    pub trial: TrialConfig,
    #[serde(default)]
    pub phase: PhaseConfig,
}

fn root() -> String {
    "root".into()
}
fn engine_profile() -> String {
    "redoctor-engine".into()
}
fn users_counter() -> String {
    "Threads_connected".into()
}
fn default_knobs() -> Vec<Spanned<String>> {
    use redoctor_advisor::model::config::{CAP, POLICY, REDO_THREADS, THROTTLE};
    [REDO_THREADS, CAP, POLICY, THROTTLE]
        .iter()
        .map(|k| Spanned::new(0..0, k.to_string()))
        .collect()
}

/// How often the scheduler probes are attached, and for how long.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Sampling {
    /// A sampled observation starts this often.
    #[serde(deserialize_with = "positive")]
    pub every: Duration,
    /// Probes attached and discarded before the measured window.
    #[serde(deserialize_with = "any_duration")]
    pub warmup: Duration,
    /// The measured window.
    #[serde(deserialize_with = "positive")]
    pub window: Duration,
    /// The soonest an extra sample follows another when a phase change asks for evidence.
    #[serde(deserialize_with = "positive")]
    pub min_gap: Duration,
    /// Keep the fsync counters attached between windows (fsync and
    /// fdatasync calls and their latency per file kind, read every second).
    pub fsync_counters: bool,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            every: Duration::from_secs(120),
            warmup: Duration::from_secs(1),
            window: Duration::from_secs(2),
            min_gap: Duration::from_secs(10),
            fsync_counters: true,
        }
    }
}

impl Sampling {
    /// How long one sampled window keeps the probes loaded.
    pub fn span(&self) -> Duration {
        self.warmup + self.window + SAMPLE_OVERHEAD
    }

    /// Fraction of the time the probes are loaded in steady state.
    pub fn duty_cycle(&self) -> f64 {
        (self.span().as_secs_f64() / self.every.as_secs_f64()).min(1.0)
    }

    /// The steady-state TPS cost of sampling, in percent.
    pub fn tps_cost_percent(&self) -> f64 {
        self.duty_cycle() * ATTACHED_TPS_COST * 100.0
    }

    /// The shortest `every` whose cost fits `tps_percent`.
    pub fn min_every(&self, tps_percent: f64) -> Duration {
        self.span().mul_f64(ATTACHED_TPS_COST * 100.0 / tps_percent)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Guardrails {
    /// A changed setting is not changed again before this.
    #[serde(deserialize_with = "any_duration")]
    pub min_dwell: Duration,
    /// At most one kept change per window of this length.
    #[serde(deserialize_with = "any_duration")]
    pub stabilization: Duration,
    /// Numeric knobs (caps, throttle) move by at most this factor per change.
    pub max_step: f64,
    /// A candidate window below this fraction of the baseline restores it at
    /// once; a second in a row aborts the trial.
    pub floor: f64,
    /// Most kept changes per target in any 24 hours.
    pub daily_budget: u32,
    /// A candidate that lost a trial is tried again after this, twice this
    /// after a second loss, and so on up to a day; or after a phase change.
    #[serde(deserialize_with = "positive")]
    pub retry_after: Duration,
}

impl Default for Guardrails {
    fn default() -> Self {
        Guardrails {
            min_dwell: Duration::from_secs(600),
            stabilization: Duration::from_secs(300),
            max_step: 4.0,
            floor: 0.7,
            daily_budget: 12,
            retry_after: Duration::from_secs(1800),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrialConfig {
    #[serde(deserialize_with = "positive")]
    pub window: Duration,
    #[serde(deserialize_with = "any_duration")]
    pub warmup: Duration,
    pub min_pairs: usize,
    pub max_pairs: usize,
    /// Time bound of one evaluation's trials together.
    #[serde(deserialize_with = "positive")]
    pub max_total: Duration,
    /// How baseline and candidate alternate: `auto` (switchback periods
    /// where every knob's carryover is known and short, the paired
    /// `window`s otherwise), `switchback` or `pairs`.
    pub design: crate::trial_run::DesignChoice,
    /// A switchback period, its guard included.
    #[serde(deserialize_with = "positive")]
    pub period: Duration,
    /// Discarded after each switch of a switchback trial (at least the
    /// knob's known carryover).
    #[serde(deserialize_with = "any_duration")]
    pub guard: Duration,
    /// Decide switchback trials on the blocks adjusted by the disks' write
    /// latency (`redoctor diagnose --trial-covariate`); off by default.
    pub covariate: bool,
}

impl Default for TrialConfig {
    fn default() -> Self {
        let sb = redoctor_advisor::experiment::Switchback::default();
        TrialConfig {
            window: Duration::from_secs(1),
            warmup: Duration::from_secs(1),
            min_pairs: 3,
            max_pairs: 10,
            max_total: Duration::from_secs(45),
            design: crate::trial_run::DesignChoice::Auto,
            period: sb.period,
            guard: sb.guard,
            covariate: sb.covariate,
        }
    }
}

impl TrialConfig {
    /// The switchback parameters the trials start from.
    pub fn switchback(&self) -> redoctor_advisor::experiment::Switchback {
        redoctor_advisor::experiment::Switchback {
            period: self.period,
            guard: self.guard,
            covariate: self.covariate,
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PhaseConfig {
    /// Relative change of commits/s that counts as a new phase.
    pub rate_change: f64,
    /// Factor of connected users that counts as a new phase.
    pub users_factor: f64,
    /// Relative change of a sampled signal (CPU, wakeups, switches per commit) that counts.
    pub signal_change: f64,
    /// How long a change must hold.
    #[serde(deserialize_with = "positive")]
    pub hold: Duration,
}

impl Default for PhaseConfig {
    fn default() -> Self {
        PhaseConfig {
            rate_change: 0.4,
            users_factor: 2.0,
            signal_change: 0.5,
            hold: Duration::from_secs(3),
        }
    }
}

fn any_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    redoctor_args::duration(&s).map_err(serde::de::Error::custom)
}

fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    redoctor_args::positive_duration(&s).map_err(serde::de::Error::custom)
}

/// A configuration error: the file, and what is wrong where.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {msg}")]
pub struct ConfigError {
    pub path: String,
    pub msg: String,
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

impl Config {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let err = |msg: String| ConfigError {
            path: path.display().to_string(),
            msg,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        Config::parse(&text).map_err(err)
    }

    /// Parses and validates `text`; the error names the key and line.
    pub fn parse(text: &str) -> Result<Config, String> {
        let c: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            let msg = e.message().trim().to_string();
            match line {
                Some(l) => format!("line {l}: {msg}"),
                None => msg,
            }
        })?;
        let mut c: Config = c;
        let counters = c.validate(text)?;
        for (st, counter) in c.targets.iter_mut().zip(counters) {
            st.get_mut().commit_counter = counter;
        }
        Ok(c)
    }

    /// Checks every field; returns each target's commit counter (its own,
    /// else its profile's; empty only for a target without a socket).
    fn validate(&self, text: &str) -> Result<Vec<String>, String> {
        let a = &self.agent;
        if a.metrics != "off" {
            let addr: SocketAddr = a.metrics.parse().map_err(|_| {
                format!(
                    "agent.metrics = {:?}: not an address (e.g. 127.0.0.1:9464, or \"off\")",
                    a.metrics
                )
            })?;
            if !addr.ip().is_loopback() {
                return Err(format!(
                    "agent.metrics = {:?}: the metrics endpoint binds to loopback only (127.0.0.1 or ::1); expose it through a proxy if needed",
                    a.metrics
                ));
            }
        }
        if let Some(level) = &a.log.level {
            tracing_subscriber::EnvFilter::try_new(level).map_err(|_| {
                format!(
                    "agent.log.level = {level:?}: not a log filter; use a level (error, warn, \
                     info, debug, trace) or module=level pairs (redoctor::daemon=debug,info)"
                )
            })?;
        }
        let b = &a.budget;
        for (k, v) in [
            ("agent.budget.tps_percent", b.tps_percent),
            ("agent.budget.cpu_percent", b.cpu_percent),
            ("agent.budget.rss_mib", b.rss_mib),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{k} = {v}: must be above 0"));
            }
        }
        if b.every < Duration::from_secs(1) {
            return Err(format!(
                "agent.budget.every = {:?}: the agent's CPU is read once a second; use at least 1s",
                b.every
            ));
        }
        if !(a.audit.rotate_mib.is_finite() && a.audit.rotate_mib > 0.0) || a.audit.keep == 0 {
            return Err("agent.audit: rotate_mib must be above 0 and keep at least 1".into());
        }
        if self.targets.is_empty() {
            return Err("no [[target]]: name at least one process to observe".into());
        }
        let mut names: Vec<&str> = Vec::new();
        let mut counters = Vec::with_capacity(self.targets.len());
        for st in &self.targets {
            let line = line_of(text, st.span().start);
            let t = st.get_ref();
            let at = |msg: String| format!("line {line}: target {:?}: {msg}", t.name);
            if t.name.is_empty()
                || !t
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(at("name: letters, digits, '-', '_' and '.' only".into()));
            }
            if names.contains(&t.name.as_str()) {
                return Err(at("a second target with this name".into()));
            }
            names.push(&t.name);
            let ways = [t.pid.is_some(), t.process.is_some(), t.pidfile.is_some()];
            if ways.iter().filter(|w| **w).count() != 1 {
                return Err(at(
                    "unknown target: give exactly one of pid, process or pidfile".into(),
                ));
            }
            if t.process.as_deref() == Some("") {
                return Err(at("process: empty name".into()));
            }
            let profile = redoctor_probes::Profile::resolve(&t.profile)
                .map_err(|e| at(format!("profile = {:?}: {e}", t.profile)))?;
            counters.push(
                match (&t.commit_counter, profile.commit_counter, &t.socket) {
                    (own, _, _) if !own.is_empty() => own.clone(),
                    (_, Some(name), _) => name,
                    (_, None, None) => String::new(),
                    (_, None, Some(_)) => {
                        return Err(at(format!(
                            "profile `{}` names no status counter for commits: set commit_counter",
                            profile.name
                        )))
                    }
                },
            );
            if t.mode == Mode::Apply && t.socket.is_none() {
                return Err(at(
                    "mode = \"apply\" changes settings over the server's admin socket: set socket"
                        .into(),
                ));
            }
            for k in &t.knobs {
                let line = if k.span().is_empty() {
                    line
                } else {
                    line_of(text, k.span().start)
                };
                if DURABILITY_SETTINGS.contains(&k.get_ref().as_str()) && !t.allow_durability {
                    return Err(format!(
                        "line {line}: target {:?}: knobs names {}, a durability setting: set allow_durability = true to consent, or remove it",
                        t.name,
                        k.get_ref()
                    ));
                }
            }
            for c in &t.candidates {
                for name in c.keys() {
                    if !t.knobs.iter().any(|k| k.get_ref() == name) {
                        return Err(at(format!(
                            "candidates sets {name}, which knobs does not list"
                        )));
                    }
                }
            }
            let g = &t.guardrails;
            if !(g.max_step.is_finite() && g.max_step > 1.0) {
                return Err(at(format!(
                    "guardrails.max_step = {}: must be above 1 (a factor)",
                    g.max_step
                )));
            }
            if !(0.0..1.0).contains(&g.floor) {
                return Err(at(format!(
                    "guardrails.floor = {}: must be in [0, 1)",
                    g.floor
                )));
            }
            let p = &t.phase;
            if !(p.rate_change > 0.0 && p.users_factor > 1.0 && p.signal_change > 0.0) {
                return Err(at(
                    "phase: rate_change and signal_change must be above 0, users_factor above 1"
                        .into(),
                ));
            }
            self.trial_plan(t)
                .validate()
                .map_err(|e| at(format!("trial: {e}")))?;
            t.trial
                .switchback()
                .validate()
                .map_err(|e| at(format!("trial: {e}")))?;
            let s = &t.sampling;
            if s.window + s.warmup > s.every {
                return Err(at(format!(
                    "sampling: warmup + window ({:?}) exceed every ({:?})",
                    s.warmup + s.window,
                    s.every
                )));
            }
            let cost = s.tps_cost_percent();
            if cost > b.tps_percent {
                let min_every = s.min_every(b.tps_percent).as_secs_f64();
                return Err(at(format!(
                    "sampling: the probes loaded {:.1}% of the time cost up to {cost:.2}% of TPS (at {:.0}% while attached), above agent.budget.tps_percent = {}: set sampling.every to at least {:.0}s",
                    s.duty_cycle() * 100.0,
                    ATTACHED_TPS_COST * 100.0,
                    b.tps_percent,
                    min_every.ceil()
                )));
            }
        }
        Ok(counters)
    }

    /// The experiment plan of a target's trials.
    pub fn trial_plan(&self, t: &Target) -> redoctor_advisor::experiment::Plan {
        redoctor_advisor::experiment::Plan {
            window: t.trial.window,
            warmup: t.trial.warmup,
            min_pairs: t.trial.min_pairs,
            max_pairs: t.trial.max_pairs,
            max_total: t.trial.max_total,
            floor: t.guardrails.floor,
            ..Default::default()
        }
    }
}

impl Target {
    pub fn allows(&self, setting: &str) -> bool {
        self.knobs.iter().any(|k| k.get_ref() == setting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[agent]
state_dir = "/tmp/x"

[[target]]
name = "db"
process = "redoctor-engine"
socket = "/tmp/db.sock"
mode = "apply"
"#;

    #[test]
    fn a_minimal_file_gets_safe_defaults() {
        let c = Config::parse(GOOD).unwrap();
        let t = c.targets[0].get_ref();
        assert_eq!(t.mode, Mode::Apply);
        assert!(!t.allows("innodb_flush_log_at_trx_commit"));
        assert!(t.allows("innodb_log_writer_threads"));
        assert_eq!(c.agent.metrics, "127.0.0.1:9464");
        assert!(t.sampling.tps_cost_percent() <= 1.0);
        assert!(t.sampling.fsync_counters);
        assert_eq!(t.commit_counter, "Com_commit");
        assert_eq!(c.agent.budget.every, Duration::from_secs(60));
    }

    #[test]
    fn the_budget_check_span_is_a_duration_of_at_least_a_second() {
        let with = |every: &str| {
            GOOD.replace("[agent]\n", &format!("[agent]\nbudget.every = {every:?}\n"))
        };
        let c = Config::parse(&with("5s")).unwrap();
        assert_eq!(c.agent.budget.every, Duration::from_secs(5));
        let e = err(&with("300ms"));
        assert!(
            e.contains("agent.budget.every") && e.contains("at least 1s"),
            "{e}"
        );
        let e = err(&with("soon"));
        assert!(e.contains("soon"), "{e}");
    }

    #[test]
    fn the_commit_counter_comes_from_the_profile_unless_named() {
        let maria = GOOD.replace(
            "mode = \"apply\"",
            "mode = \"apply\"\nprofile = \"mariadb\"",
        );
        let c = Config::parse(&maria).unwrap();
        assert_eq!(c.targets[0].get_ref().commit_counter, "Handler_commit");
        let named = format!("{maria}commit_counter = \"Com_update\"\n");
        let c = Config::parse(&named).unwrap();
        assert_eq!(c.targets[0].get_ref().commit_counter, "Com_update");
        let pg = GOOD.replace(
            "mode = \"apply\"",
            "mode = \"observe\"\nprofile = \"postgresql\"",
        );
        let e = err(&pg);
        assert!(
            e.contains("names no status counter") && e.contains("set commit_counter"),
            "{e}"
        );
    }

    #[test]
    fn the_fsync_counters_can_be_turned_off() {
        let c = Config::parse(&format!(
            "{GOOD}[target.sampling]\nfsync_counters = false\n"
        ))
        .unwrap();
        assert!(!c.targets[0].get_ref().sampling.fsync_counters);
        let e = err(&format!(
            "{GOOD}[target.sampling]\nfsync_counters = \"yes\"\n"
        ));
        assert!(e.contains("line 11") && e.contains("bool"), "{e}");
    }

    fn err(text: &str) -> String {
        Config::parse(text).unwrap_err()
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let e = err(&format!("{GOOD}colour = \"red\"\n"));
        assert!(e.contains("line 10") && e.contains("colour"), "{e}");
    }

    #[test]
    fn a_bad_duration_is_named_with_its_line() {
        let e = err(&format!(
            "{GOOD}[target.sampling]\nevery = \"5 fortnights\"\n"
        ));
        assert!(e.contains("line 11") && e.contains("fortnights"), "{e}");
    }

    #[test]
    fn a_target_needs_one_way_to_find_it() {
        let e = err("[[target]]\nname = \"a\"\n");
        assert!(
            e.contains("line 1") && e.contains("exactly one of pid"),
            "{e}"
        );
        let e = err("[[target]]\nname = \"a\"\npid = 1\nprocess = \"x\"\n");
        assert!(e.contains("exactly one"), "{e}");
    }

    #[test]
    fn a_durability_knob_needs_consent() {
        let text = "[[target]]\nname = \"a\"\npid = 1\nknobs = [\n  \"innodb_log_writer_threads\",\n  \"sync_binlog\",\n]\n";
        let e = err(text);
        assert!(
            e.contains("line 6") && e.contains("sync_binlog") && e.contains("allow_durability"),
            "{e}"
        );
        let ok = text.replace("pid = 1\n", "pid = 1\nallow_durability = true\n");
        Config::parse(&ok).unwrap();
    }

    #[test]
    fn apply_needs_a_socket_and_metrics_stay_on_loopback() {
        let e = err("[[target]]\nname = \"a\"\npid = 1\nmode = \"apply\"\n");
        assert!(e.contains("socket"), "{e}");
        let e = err(&GOOD.replace("[agent]\n", "[agent]\nmetrics = \"0.0.0.0:9464\"\n"));
        assert!(e.contains("loopback"), "{e}");
    }

    #[test]
    fn sampling_beyond_the_budget_is_refused_with_the_fix() {
        let e = err(&format!(
            "{GOOD}[target.sampling]\nevery = \"10s\"\nwindow = \"3s\"\n"
        ));
        assert!(e.contains("sampling.every to at least 76s"), "{e}");
    }

    #[test]
    fn candidates_must_stay_within_the_knobs() {
        let e = err(&format!(
            "{GOOD}candidates = [{{ innodb_adaptive_hash_index = \"OFF\" }}]\n"
        ));
        assert!(e.contains("knobs does not list"), "{e}");
    }
}
