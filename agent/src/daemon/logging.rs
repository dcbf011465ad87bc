//! The daemon's diagnostics through `tracing`: levels, `RUST_LOG`-style
//! filtering (`[agent.log] level`, the environment's `RUST_LOG` winning),
//! text lines for a terminal or JSON lines for journald and log shippers
//! (`[agent.log] format`). Written to stderr; a write that fails (stderr a
//! pipe whose reader has gone) drops the line, never the worker. The audit
//! log is separate: JSON lines in the state directory, always.

use anyhow::{Context, Result};
use tracing_subscriber::EnvFilter;

use super::config::{LogConfig, LogFormat};

/// The filter `cfg` and the environment ask for: `RUST_LOG` when set, else
/// `[agent.log] level`, else `info`.
pub fn filter(cfg: &LogConfig) -> Result<EnvFilter> {
    filter_from(std::env::var("RUST_LOG").ok(), cfg)
}

fn filter_from(env: Option<String>, cfg: &LogConfig) -> Result<EnvFilter> {
    let (spec, from) = match env {
        Some(v) if !v.trim().is_empty() => (v, "RUST_LOG"),
        _ => (
            cfg.level.clone().unwrap_or_else(|| "info".into()),
            "agent.log.level",
        ),
    };
    EnvFilter::try_new(&spec).with_context(|| {
        format!(
            "{from} = {spec:?} is not a log filter; use a level (error, warn, info, debug, trace) \
             or module=level pairs (redoctor::daemon=debug,info)"
        )
    })
}

/// Installs the subscriber for this process (once; a second call, as on a
/// configuration reload, keeps the first).
pub fn init(cfg: &LogConfig) -> Result<()> {
    // A failed write is dropped silently: the subscriber's own report of
    // it would go to the same stderr with eprintln!, which panics when
    // stderr is a pipe whose reader has gone.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(cfg)?)
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .with_ansi(false);
    let installed = match cfg.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // Already installed (a reload, or a test running several agents in one
    // process): the first subscriber stays.
    drop(installed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_level_is_refused_with_the_fix_and_the_environment_wins() {
        let bad = LogConfig {
            level: Some("redoctor=loud".into()),
            ..LogConfig::default()
        };
        let e = format!("{:#}", filter_from(None, &bad).unwrap_err());
        assert!(
            e.contains("agent.log.level") && e.contains("is not a log filter"),
            "{e}"
        );
        let ok = LogConfig {
            level: Some("redoctor::daemon=debug,warn".into()),
            ..LogConfig::default()
        };
        assert!(filter_from(None, &ok).is_ok());
        // RUST_LOG wins over the file, and is checked the same way.
        assert!(filter_from(Some("info".into()), &bad).is_ok());
        let e = format!("{:#}", filter_from(Some("x=loud".into()), &ok).unwrap_err());
        assert!(e.contains("RUST_LOG"), "{e}");
    }
}
