//! A registry of typed, validated, live settings with MySQL names: the
//! mechanism, not the engine's settings.
//!
//! A setting is one [`Setting`] row of a table: its name, type and range
//! ([`Kind`]), default, whether it can change at run time, a doc line, and
//! three functions over a target `T` and its start-up options `O` — read
//! the live value, apply a new value to the running target, and
//! (optionally) apply it to the options before the target is built. The
//! engine's table is `engine::variables::SETTINGS` (`T` = the engine); this
//! module knows nothing of it, so the engine depends on the registry and
//! not the other way round.
//!
//! `SET GLOBAL` ([`Registry::set_global`]) parses and validates the value
//! first, so a refused value changes nothing; accepted changes are
//! serialised by one mutex and recorded (old, new, time) in a bounded
//! history. The current value is always read back from the target.

use std::collections::VecDeque;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// Changes kept in the history (oldest dropped first).
pub const HISTORY_LEN: usize = 256;

/// Why a setting was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("Unknown system variable '{name}'; Engine::variables() lists the known ones")]
    Unknown { name: String },
    #[error("Variable '{name}' can't be set to the value of '{value}'; allowed: {allowed}")]
    InvalidValue {
        name: &'static str,
        value: String,
        allowed: String,
    },
    #[error(
        "Variable '{name}' is a read only variable; set it at startup (EngineOptions::settings)"
    )]
    ReadOnly { name: &'static str },
    #[error("Variable '{name}' was not changed: {reason}")]
    Apply { name: &'static str, reason: String },
}

/// A setting's type and allowed values.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// ON/OFF (also accepts 1/0, TRUE/FALSE).
    Bool,
    /// An unsigned integer in `min..=max`, in `unit`.
    UInt {
        min: u64,
        max: u64,
        unit: &'static str,
    },
    /// One of the names (case-insensitive; also accepts the index).
    Enum(&'static [&'static str]),
    /// A directory: an absolute path, or empty for the default place.
    Path,
}

impl Kind {
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::Bool => "boolean",
            Kind::UInt { .. } => "integer",
            Kind::Enum(_) => "enumeration",
            Kind::Path => "path",
        }
    }

    /// The allowed values, as an error message states them.
    pub fn range_text(&self) -> String {
        match self {
            Kind::Bool => "ON|OFF (or 1|0)".into(),
            Kind::UInt { min, max, unit: "" } => format!("{min}..={max}"),
            Kind::UInt { min, max, unit } => format!("{min}..={max} ({unit})"),
            Kind::Enum(names) => names.join("|"),
            Kind::Path => "an absolute directory path, or empty".into(),
        }
    }

    /// `v` as a number for probes: ON = 1, OFF = 0, an enumeration value =
    /// its index.
    pub fn probe_value(&self, v: &Value) -> u64 {
        match (self, v) {
            (Kind::Enum(names), Value::Enum(n)) => {
                names.iter().position(|x| x == n).unwrap_or(0) as u64
            }
            _ => v.as_u64(),
        }
    }

    /// Whether `v` is of this kind and in its range (a typed value, as
    /// [`Registry::set_global_value`] takes it).
    pub fn admits(&self, v: &Value) -> bool {
        match (self, v) {
            (Kind::Bool, Value::Bool(_)) => true,
            (Kind::UInt { min, max, .. }, Value::UInt(x)) => (*min..=*max).contains(x),
            (Kind::Enum(names), Value::Enum(n)) => names.contains(n),
            (Kind::Path, Value::Text(t)) => t.is_empty() || t.starts_with('/'),
            _ => false,
        }
    }

    /// Parses a MySQL-style value.
    pub fn parse(&self, text: &str) -> Option<Value> {
        let t = text.trim();
        let t = t
            .strip_prefix('\'')
            .and_then(|s| s.strip_suffix('\''))
            .unwrap_or(t);
        match self {
            Kind::Bool => t
                .parse::<redoctor_args::OnOff>()
                .ok()
                .map(|v| Value::Bool(v.is_on())),
            Kind::UInt { min, max, .. } => {
                if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let v: u64 = t.parse().ok()?;
                (*min..=*max).contains(&v).then_some(Value::UInt(v))
            }
            Kind::Enum(names) => {
                let t = ENUM_ALIASES
                    .iter()
                    .find(|(old, new)| old.eq_ignore_ascii_case(t) && names.contains(new))
                    .map_or(t, |(_, new)| *new);
                if let Some(n) = names.iter().find(|n| n.eq_ignore_ascii_case(t)) {
                    return Some(Value::Enum(n));
                }
                let i: usize = t.parse().ok()?;
                names.get(i).map(|n| Value::Enum(n))
            }
            Kind::Path => {
                (t.is_empty() || t.starts_with('/')).then(|| Value::Text(std::sync::Arc::from(t)))
            }
        }
    }
}

/// Old spellings of enumeration values, still accepted on input (the
/// new name is what SHOW reports).
const ENUM_ALIASES: &[(&str, &str)] = &[("seed001", "soft")];

/// A parsed setting value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Bool(bool),
    UInt(u64),
    Enum(&'static str),
    /// A path ([`Kind::Path`]).
    Text(std::sync::Arc<str>),
}

impl Value {
    pub fn as_bool(&self) -> bool {
        matches!(self, Value::Bool(true))
    }
    pub fn as_u64(&self) -> u64 {
        match *self {
            Value::UInt(v) => v,
            Value::Bool(b) => b as u64,
            Value::Enum(_) | Value::Text(_) => 0,
        }
    }
    pub fn as_str(&self) -> &str {
        match self {
            Value::Enum(s) => s,
            Value::Text(t) => t,
            Value::Bool(true) => "ON",
            Value::Bool(false) => "OFF",
            Value::UInt(_) => "",
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Bool(b) => f.write_str(if *b { "ON" } else { "OFF" }),
            Value::UInt(v) => write!(f, "{v}"),
            Value::Enum(s) => f.write_str(s),
            Value::Text(t) => f.write_str(t),
        }
    }
}

/// Applies a value to the running target.
pub type ApplyLive<T> = fn(&T, &Value) -> Result<(), SettingsError>;
/// Applies a value to the options before the target is built.
pub type ApplyAtStartup<O> = fn(&mut O, &Value);

/// One row of a settings table, over a target `T` built from options `O`.
pub struct Setting<T: 'static, O: 'static> {
    pub name: &'static str,
    pub kind: Kind,
    /// MySQL-style default text (must parse under `kind`).
    pub default: &'static str,
    pub doc: &'static str,
    /// The live value.
    pub get: fn(&T) -> Value,
    /// None = read-only at run time (settable only at startup).
    pub set: Option<ApplyLive<T>>,
    /// Used at open instead of `set`, when the value has an options field.
    pub at_startup: Option<ApplyAtStartup<O>>,
}

impl<T, O> Setting<T, O> {
    pub fn dynamic(&self) -> bool {
        self.set.is_some()
    }

    /// Parses `value`, or says what is allowed.
    pub fn parse(&self, value: &str) -> Result<Value, SettingsError> {
        self.kind
            .parse(value)
            .ok_or_else(|| SettingsError::InvalidValue {
                name: self.name,
                value: value.to_string(),
                allowed: self.kind.range_text(),
            })
    }
}

/// Looks a setting of `table` up by name (case-insensitive).
pub fn find<T, O>(
    table: &'static [Setting<T, O>],
    name: &str,
) -> Result<&'static Setting<T, O>, SettingsError> {
    let n = name.trim();
    table
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(n))
        .ok_or_else(|| SettingsError::Unknown {
            name: name.to_string(),
        })
}

/// One row of `SHOW GLOBAL VARIABLES`, with its metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variable {
    pub name: String,
    pub value: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub range: String,
    pub default: String,
    pub dynamic: bool,
    pub doc: String,
}

/// One accepted `SET GLOBAL`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingChange {
    pub name: String,
    pub old: String,
    pub new: String,
    /// Unix time of the change, in milliseconds.
    pub unix_ms: u64,
}

/// A target's registry state: the change history (whose mutex also
/// serialises changes).
#[derive(Default)]
pub struct Registry {
    history: Mutex<VecDeque<SettingChange>>,
}

impl Registry {
    /// `SET GLOBAL name = value` on `target`, a setting of `table`: the
    /// text parsed under the setting's kind, then applied as
    /// [`set_global_value`](Self::set_global_value) does.
    pub fn set_global<T, O>(
        &self,
        table: &'static [Setting<T, O>],
        target: &T,
        name: &str,
        value: &str,
    ) -> Result<(), SettingsError> {
        let s = find(table, name)?;
        let v = s.parse(value)?;
        self.apply(table, s, target, v)
    }

    /// `SET GLOBAL` with a typed value (the engine's own setters: no text
    /// to format and parse back); refused, changing nothing, when the value
    /// is not of the setting's kind or out of its range.
    pub fn set_global_value<T, O>(
        &self,
        table: &'static [Setting<T, O>],
        target: &T,
        name: &str,
        value: Value,
    ) -> Result<(), SettingsError> {
        let s = find(table, name)?;
        if !s.kind.admits(&value) {
            return Err(SettingsError::InvalidValue {
                name: s.name,
                value: value.to_string(),
                allowed: s.kind.range_text(),
            });
        }
        self.apply(table, s, target, value)
    }

    fn apply<T, O>(
        &self,
        table: &'static [Setting<T, O>],
        s: &'static Setting<T, O>,
        target: &T,
        v: Value,
    ) -> Result<(), SettingsError> {
        let Some(apply) = s.set else {
            return Err(SettingsError::ReadOnly { name: s.name });
        };
        let mut history = self.history.lock();
        let old = (s.get)(target);
        apply(target, &v)?;
        let new = (s.get)(target);
        let row = table.iter().position(|x| std::ptr::eq(x, s)).unwrap_or(0);
        crate::probe_points::redoctor_setting_change(
            row as u32,
            s.kind.probe_value(&old),
            s.kind.probe_value(&new),
        );
        if history.len() == HISTORY_LEN {
            history.pop_front();
        }
        history.push_back(SettingChange {
            name: s.name.to_string(),
            old: old.to_string(),
            new: new.to_string(),
            unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        });
        Ok(())
    }

    pub fn changes(&self) -> Vec<SettingChange> {
        self.history.lock().iter().cloned().collect()
    }
}

/// The live value and metadata of `s`.
pub fn variable<T, O>(target: &T, s: &Setting<T, O>) -> Variable {
    Variable {
        name: s.name.to_string(),
        value: (s.get)(target).to_string(),
        kind: s.kind.type_name().to_string(),
        range: s.kind.range_text(),
        default: s.default.to_string(),
        dynamic: s.dynamic(),
        doc: s.doc.to_string(),
    }
}

/// Startup settings, validated before anything is created.
pub struct Startup<T: 'static, O: 'static> {
    live: Vec<(&'static Setting<T, O>, Value)>,
}

impl<T, O> Startup<T, O> {
    /// Validates `settings` (of `table`) and applies those with an options
    /// field to `opts`; the rest are applied by
    /// [`apply_live`](Self::apply_live) once the target exists (before it
    /// is returned to the caller).
    pub fn prepare(
        table: &'static [Setting<T, O>],
        settings: &[(String, String)],
        opts: &mut O,
    ) -> Result<Startup<T, O>, SettingsError> {
        let mut parsed = Vec::with_capacity(settings.len());
        for (name, value) in settings {
            let s = find(table, name)?;
            let v = s.parse(value)?;
            if s.at_startup.is_none() && s.set.is_none() {
                return Err(SettingsError::ReadOnly { name: s.name });
            }
            parsed.push((s, v));
        }
        let mut live = Vec::new();
        for (s, v) in parsed {
            match s.at_startup {
                Some(f) => f(opts, &v),
                None => live.push((s, v)),
            }
        }
        Ok(Startup { live })
    }

    pub fn apply_live(self, target: &T) -> Result<(), SettingsError> {
        for (s, v) in self.live {
            (s.set.expect("checked in prepare"))(target, &v)?;
        }
        Ok(())
    }
}
