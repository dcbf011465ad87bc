//! Switching the engine's failpoints on from the command line: the
//! `FAILPOINTS` environment variable (`name=actions;name=actions`, the
//! `fail` crate's convention) and the hidden `--failpoint name=actions`
//! flag (repeatable, applied after the variable, so it wins). Unlike
//! `fail::FailScenario::setup`, an unknown name or a bad action is an
//! error, not a panic or a silently ignored point.

use anyhow::{anyhow, bail, Context, Result};
use redoctor_args::say;

use redoctor_engine::failpoints::{self, FAILPOINTS};

/// Applies `FAILPOINTS` and then `flags`; says on stderr which points are on.
pub fn setup(flags: &[String]) -> Result<()> {
    let mut specs: Vec<(&str, String)> = Vec::new();
    if let Some(env) = std::env::var_os("FAILPOINTS") {
        let env = env
            .into_string()
            .map_err(|_| anyhow!("FAILPOINTS is not valid UTF-8"))?;
        specs.extend(
            env.split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| ("FAILPOINTS", s.to_string())),
        );
    }
    specs.extend(flags.iter().map(|s| ("--failpoint", s.clone())));
    if specs.is_empty() {
        return Ok(());
    }
    if !failpoints::enabled() {
        bail!(
            "{} asks for failpoints, but this redoctor-engine was built without them; \
             build it with the default features of redoctor-engine-cli (feature `failpoints`)",
            specs[0].0
        );
    }
    for (source, spec) in specs {
        let (name, actions) = spec
            .split_once('=')
            .map(|(n, a)| (n.trim(), a.trim()))
            .with_context(|| format!("{source}: `{spec}` is not NAME=ACTIONS"))?;
        if !failpoints::is_known(name) {
            let known: Vec<&str> = FAILPOINTS.iter().map(|p| p.name).collect();
            bail!(
                "{source}: unknown failpoint `{name}`; the engine has {}",
                known.join(", ")
            );
        }
        fail::cfg(name, actions).map_err(|e| {
            anyhow!("{source}: `{spec}`: {e} (actions as in the fail crate: return, 1*return, 200*off->return, ...)")
        })?;
        say!("failpoint on: {name}={actions}");
    }
    Ok(())
}
