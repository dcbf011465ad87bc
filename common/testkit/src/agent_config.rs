//! The daemon's TOML configuration, built in a test instead of pasted.
//!
//! ```
//! use redoctor_testkit::agent_config::{AgentConfig, Target};
//! let toml = AgentConfig::new("/var/lib/redoctor")
//!     .metrics("off")
//!     .budget("tps_percent", 5.0)
//!     .target(
//!         Target::pid("engine", 42)
//!             .set("mode", "observe")
//!             .sampling("30s", "0s", "1s"),
//!     )
//!     .render();
//! assert!(toml.contains("[[target]]") && toml.contains("pid = 42"));
//! ```
//!
//! Values keep their TOML types (a number stays a number); the rendering is
//! `toml`'s, so a key or a table the daemon does not know is the test's
//! choice, not a typo in a pasted string.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// `[agent]` with its sub-tables, and the `[[target]]`s.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    agent: Table,
    targets: Vec<Target>,
}

impl AgentConfig {
    /// An `[agent]` with `state_dir`.
    pub fn new(state_dir: impl AsRef<Path>) -> AgentConfig {
        let mut agent = Table::new();
        agent.insert("state_dir".into(), path_value(state_dir.as_ref()));
        AgentConfig {
            agent,
            targets: vec![],
        }
    }

    /// `[agent] metrics`: `"off"` or `"127.0.0.1:PORT"`.
    pub fn metrics(self, at: impl Into<String>) -> AgentConfig {
        self.agent_key("metrics", at.into())
    }

    /// A key of `[agent]`.
    pub fn agent_key(mut self, key: &str, value: impl Into<Value>) -> AgentConfig {
        self.agent.insert(key.into(), value.into());
        self
    }

    /// A key of `[agent.budget]`.
    pub fn budget(mut self, key: &str, value: impl Into<Value>) -> AgentConfig {
        sub_table(&mut self.agent, "budget").insert(key.into(), value.into());
        self
    }

    /// A key of `[agent.log]`.
    pub fn log(mut self, key: &str, value: impl Into<Value>) -> AgentConfig {
        sub_table(&mut self.agent, "log").insert(key.into(), value.into());
        self
    }

    /// Adds a `[[target]]`.
    pub fn target(mut self, t: Target) -> AgentConfig {
        self.targets.push(t);
        self
    }

    /// The TOML text.
    pub fn render(&self) -> String {
        let mut doc = Table::new();
        doc.insert("agent".into(), Value::Table(self.agent.clone()));
        if !self.targets.is_empty() {
            let targets = self
                .targets
                .iter()
                .map(|t| Value::Table(t.0.clone()))
                .collect();
            doc.insert("target".into(), Value::Array(targets));
        }
        toml::to_string(&doc).expect("a TOML table renders")
    }

    /// Writes the text to `dir/agent.toml` and returns its path.
    pub fn write(&self, dir: impl AsRef<Path>) -> PathBuf {
        let p = dir.as_ref().join("agent.toml");
        std::fs::write(&p, self.render()).expect("writing the agent's config");
        p
    }
}

/// One `[[target]]`.
#[derive(Clone, Debug)]
pub struct Target(Table);

impl Target {
    /// A target named `name` found by its pid.
    pub fn pid(name: &str, pid: u32) -> Target {
        Target::named(name).set("pid", i64::from(pid))
    }

    /// A target named `name` found by its process name.
    pub fn process(name: &str, process: &str) -> Target {
        Target::named(name).set("process", process)
    }

    /// A target named `name` found by the pid its pidfile holds.
    pub fn pidfile(name: &str, pidfile: impl AsRef<Path>) -> Target {
        Target::named(name).set("pidfile", path_value(pidfile.as_ref()))
    }

    fn named(name: &str) -> Target {
        let mut t = Table::new();
        t.insert("name".into(), name.into());
        Target(t)
    }

    /// A key of the target (`mode`, `socket`, `knobs`, `profile`, ...).
    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Target {
        self.0.insert(key.into(), value.into());
        self
    }

    /// `socket`: the engine's or server's socket.
    pub fn socket(self, p: impl AsRef<Path>) -> Target {
        self.set("socket", path_value(p.as_ref()))
    }

    /// `knobs`: the settings the daemon may change.
    pub fn knobs(self, knobs: &[&str]) -> Target {
        let v: Vec<Value> = knobs.iter().map(|k| Value::from(*k)).collect();
        self.set("knobs", v)
    }

    /// `[target.sampling]`: how often, the warm-up and the window.
    pub fn sampling(self, every: &str, warmup: &str, window: &str) -> Target {
        self.sampling_key("every", every)
            .sampling_key("warmup", warmup)
            .sampling_key("window", window)
    }

    /// A key of `[target.sampling]`.
    pub fn sampling_key(self, key: &str, value: impl Into<Value>) -> Target {
        self.sub("sampling", key, value)
    }

    /// A key of `[target.trial]`.
    pub fn trial(self, key: &str, value: impl Into<Value>) -> Target {
        self.sub("trial", key, value)
    }

    /// `candidates`: the settings to try, each a table of `setting = "value"`.
    pub fn candidates(self, cands: &[&[(&str, &str)]]) -> Target {
        let v: Vec<Value> = cands
            .iter()
            .map(|c| {
                Value::Table(
                    c.iter()
                        .map(|(k, v)| (k.to_string(), Value::from(*v)))
                        .collect(),
                )
            })
            .collect();
        self.set("candidates", v)
    }

    /// A key of `[target.guardrails]`.
    pub fn guardrail(self, key: &str, value: impl Into<Value>) -> Target {
        self.sub("guardrails", key, value)
    }

    fn sub(mut self, table: &str, key: &str, value: impl Into<Value>) -> Target {
        sub_table(&mut self.0, table).insert(key.into(), value.into());
        self
    }
}

fn sub_table<'a>(t: &'a mut Table, name: &str) -> &'a mut Table {
    let v = t
        .entry(name.to_string())
        .or_insert_with(|| Value::Table(Table::new()));
    match v {
        Value::Table(t) => t,
        other => panic!("`{name}` is set to {other}, not a table"),
    }
}

fn path_value(p: &Path) -> Value {
    Value::from(p.to_str().expect("a UTF-8 path").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_typed_tables_the_daemon_reads() {
        let s = AgentConfig::new("/s")
            .metrics("127.0.0.1:9")
            .budget("tps_percent", 20.0)
            .target(
                Target::pid("engine", 7)
                    .socket("/x.sock")
                    .set("mode", "apply")
                    .knobs(&["redoctor_debug_commit_sleep_us"])
                    .sampling("4s", "500ms", "1s")
                    .trial("min_pairs", 40)
                    .candidates(&[&[("redoctor_debug_commit_sleep_us", "50")]])
                    .guardrail("floor", 0.0),
            )
            .target(Target::process("absent", "no-such-db").set("mode", "observe"))
            .render();
        let back: Table = s.parse().unwrap();
        assert_eq!(back["agent"]["state_dir"].as_str(), Some("/s"));
        assert_eq!(
            back["agent"]["budget"]["tps_percent"].as_float(),
            Some(20.0)
        );
        let t = back["target"].as_array().unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0]["pid"].as_integer(), Some(7));
        assert_eq!(t[0]["sampling"]["warmup"].as_str(), Some("500ms"));
        assert_eq!(t[0]["trial"]["min_pairs"].as_integer(), Some(40));
        assert_eq!(
            t[0]["candidates"][0]["redoctor_debug_commit_sleep_us"].as_str(),
            Some("50")
        );
        assert_eq!(t[0]["guardrails"]["floor"].as_float(), Some(0.0));
        assert_eq!(t[1]["process"].as_str(), Some("no-such-db"));
    }
}
