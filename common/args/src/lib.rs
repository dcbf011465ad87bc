//! One command-line grammar for every redoctor binary (`redoctor`,
//! `redoctor-engine`, `redoctor-sweep`): the value parsers and the small
//! value types their options share, so that `--duration 500ms` means the
//! same everywhere.
//!
//! - durations: a number with a unit `ms`, `s`, `m` or `h`, or bare seconds;
//!   fractions allowed (`50us`, `500ms`, `2.5s`, `2.5`, `1m`);
//! - sizes in MiB: fractions allowed (`16`, `0.5`);
//! - on/off values: `on`/`off` (also `true`/`false`, `1`/`0`);
//! - settings: `NAME=VALUE`.
//!
//! And their one way to write a line to stderr: [`say!`] (see [`say`]).

pub mod say;

use std::fmt;
use std::time::Duration;

/// A duration ≥ 0 (see the module docs), for clap's `value_parser`.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration: use e.g. 50us, 500ms, 1s, 2.5s, 1m"))?;
    let secs = match unit {
        "us" => v / 1e6,
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "unknown unit `{unit}` in `{s}`: use us, ms, s, m or h"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{s}`: a duration must be finite and not negative"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("`{s}`: {e}"))
}

/// A duration > 0 (see [`duration`]).
pub fn positive_duration(s: &str) -> Result<Duration, String> {
    match duration(s)? {
        d if d.is_zero() => Err(format!("`{s}` must be longer than 0")),
        d => Ok(d),
    }
}

/// A size in MiB, fractions allowed, as bytes (at least 1 byte, at most 1 PiB).
pub fn mib(s: &str) -> Result<u64, String> {
    let mb: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of MiB (e.g. 16 or 0.5)"))?;
    let bytes = (mb * 1048576.0).round();
    if !bytes.is_finite() || bytes < 1.0 || bytes > (1u64 << 50) as f64 {
        return Err(format!("`{s}` MiB is out of range (1 byte to 1 PiB)"));
    }
    Ok(bytes as u64)
}

/// `NAME=VALUE`, both non-empty, trimmed.
pub fn setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() && !v.trim().is_empty() => {
            Ok((n.trim().to_string(), v.trim().to_string()))
        }
        _ => Err(format!(
            "`{s}` is not NAME=VALUE (e.g. innodb_log_writer_threads=OFF)"
        )),
    }
}

/// An on/off option value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    pub fn is_on(self) -> bool {
        self == OnOff::On
    }
}

impl From<bool> for OnOff {
    fn from(on: bool) -> OnOff {
        if on {
            OnOff::On
        } else {
            OnOff::Off
        }
    }
}

impl std::str::FromStr for OnOff {
    type Err = String;
    fn from_str(s: &str) -> Result<OnOff, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "on" | "true" | "1" => Ok(OnOff::On),
            "off" | "false" | "0" => Ok(OnOff::Off),
            _ => Err(format!("`{s}` is not on or off")),
        }
    }
}

impl fmt::Display for OnOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_on() { "on" } else { "off" })
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for OnOff {
    fn value_variants<'a>() -> &'a [OnOff] {
        &[OnOff::On, OnOff::Off]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(match self {
            OnOff::On => clap::builder::PossibleValue::new("on").aliases(["true", "1"]),
            OnOff::Off => clap::builder::PossibleValue::new("off").aliases(["false", "0"]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_fractions_and_bare_seconds() {
        assert_eq!(duration("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(duration("50us").unwrap(), Duration::from_micros(50));
        assert_eq!(duration("2.5s").unwrap(), Duration::from_millis(2500));
        assert_eq!(duration("2.5").unwrap(), Duration::from_millis(2500));
        assert_eq!(duration(" 2 ").unwrap(), Duration::from_secs(2));
        assert_eq!(duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(duration("0").unwrap(), Duration::ZERO);
        assert!(duration("-1s").unwrap_err().contains("not negative"));
        assert!(duration("1x").unwrap_err().contains("unknown unit"));
        assert!(duration("abc").unwrap_err().contains("not a duration"));
        assert!(duration("inf").is_err());
        assert!(positive_duration("0s")
            .unwrap_err()
            .contains("longer than 0"));
        assert_eq!(positive_duration("1ms").unwrap(), Duration::from_millis(1));
    }

    #[test]
    fn sizes_settings_and_on_off() {
        assert_eq!(mib("16").unwrap(), 16 << 20);
        assert_eq!(mib("0.5").unwrap(), 1 << 19);
        assert!(mib("0").is_err() && mib("x").is_err());
        assert_eq!(
            setting(" a = B ").unwrap(),
            ("a".to_string(), "B".to_string())
        );
        assert!(setting("a=").is_err() && setting("=1").is_err() && setting("a").is_err());
        assert_eq!("ON".parse::<OnOff>().unwrap(), OnOff::On);
        assert_eq!("0".parse::<OnOff>().unwrap(), OnOff::Off);
        assert!("maybe".parse::<OnOff>().is_err());
        assert_eq!(OnOff::Off.to_string(), "off");
    }
}
