//! The server's admin interface over the MySQL protocol: read and set
//! global variables (`SHOW GLOBAL VARIABLES`, `SET GLOBAL`) through a Unix
//! socket, as any MySQL 8 client would.

use std::path::Path;

use anyhow::{bail, Context, Result};
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use redoctor_advisor::experiment::{ExperimentError, Settings};

/// Settings that trade durability for speed: never changed without an explicit flag.
pub const DURABILITY_SETTINGS: &[&str] = &["innodb_flush_log_at_trx_commit", "sync_binlog"];

/// Refuses, naming the first one, any of [`DURABILITY_SETTINGS`] among
/// `names` unless `allowed`; `action` is what would be done to it ("change", "trial").
pub fn guard_durability<'a>(
    names: impl IntoIterator<Item = &'a str>,
    allowed: bool,
    action: &str,
) -> Result<()> {
    if allowed {
        return Ok(());
    }
    if let Some(k) = names.into_iter().find(|k| DURABILITY_SETTINGS.contains(k)) {
        bail!("refusing to {action} {k}: it trades durability for speed; pass --allow-durability-changes if that is intended");
    }
    Ok(())
}

/// A connection to a server's admin interface.
pub struct Admin {
    conn: Conn,
    socket: String,
}

impl Admin {
    pub fn connect(socket: &Path, user: &str) -> Result<Admin> {
        let s = socket
            .to_str()
            .context("the socket path is not valid UTF-8")?
            .to_string();
        if !socket.exists() {
            bail!("no server socket at {s}: start one (`redoctor-engine serve --socket {s} ...`) or pass the right --socket");
        }
        let opts = OptsBuilder::new().socket(Some(s.clone())).user(Some(user));
        let conn = Conn::new(opts).with_context(|| format!("connecting to the server at {s}"))?;
        Ok(Admin { conn, socket: s })
    }

    pub fn socket(&self) -> &str {
        &self.socket
    }

    /// The current value of a global variable; an unknown name is an error.
    pub fn get(&mut self, name: &str) -> Result<String> {
        self.show("VARIABLES", "variable", name)
    }

    /// A status counter (`SHOW GLOBAL STATUS LIKE 'name'`); unknown is an error.
    pub fn status(&mut self, name: &str) -> Result<u64> {
        let v = self.show("STATUS", "status counter", name)?;
        v.trim()
            .parse()
            .with_context(|| format!("status {name} = {v:?} is not a counter"))
    }

    /// `SHOW GLOBAL {what} LIKE 'name'`: the value of the row named `name`.
    fn show(&mut self, what: &str, noun: &str, name: &str) -> Result<String> {
        check_name(name)?;
        let rows: Vec<(String, String)> = self
            .conn
            .query(format!("SHOW GLOBAL {what} LIKE '{name}'"))
            .with_context(|| format!("reading {noun} {name} from the server at {}", self.socket))?;
        match rows.into_iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some((_, v)) => Ok(v),
            None => bail!("the server at {} has no {noun} {name}", self.socket),
        }
    }

    /// Each of `names`' current values, as a trial's testbed reads them.
    pub fn read_settings(&mut self, names: &[String]) -> Result<Settings, ExperimentError> {
        names
            .iter()
            .map(|n| {
                let v = self
                    .get(n)
                    .map_err(|e| ExperimentError::read(names, format!("{e:#}")))?;
                Ok((n.clone(), v))
            })
            .collect()
    }

    /// Sets each of `settings`, as a trial's testbed applies them.
    pub fn apply_settings(&mut self, settings: &Settings) -> Result<(), ExperimentError> {
        for (k, v) in settings {
            self.set(k, v)
                .map_err(|e| ExperimentError::apply(settings, format!("{e:#}")))?;
        }
        Ok(())
    }

    /// `SET GLOBAL name = value`; the server validates (a refused value changes nothing).
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        check_name(name)?;
        let v = sql_value(value)?;
        self.conn
            .query_drop(format!("SET GLOBAL {name} = {v}"))
            .with_context(|| format!("SET GLOBAL {name} = {v} on the server at {}", self.socket))
    }
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bail!("`{name}` is not a variable name (letters, digits and _ only)");
    }
    Ok(())
}

/// A value as SQL: numbers and ON/OFF bare, anything else quoted.
fn sql_value(v: &str) -> Result<String> {
    if v.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
        && !v.is_empty()
    {
        if v.chars().all(|c| c.is_ascii_digit())
            || ["ON", "OFF"].contains(&v.to_ascii_uppercase().as_str())
        {
            return Ok(v.to_string());
        }
        return Ok(format!("'{v}'"));
    }
    bail!("`{v}` is not a setting value (letters, digits, _, . and - only)")
}
