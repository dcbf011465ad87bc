//! Durations on the command line: `500ms`, `1s`, `2.5s`, `1m`, or bare seconds.

use std::time::Duration;

pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration: use e.g. 500ms, 1s, 2.5s, 1m"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("unknown unit `{unit}` in `{s}`: use ms, s, m or h")),
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("`{s}` must be longer than 0"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::parse;
    use std::time::Duration;

    #[test]
    fn parses_units_and_refuses_nonsense() {
        assert_eq!(parse("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse("1m").unwrap(), Duration::from_secs(60));
        assert!(parse("0s").unwrap_err().contains("longer than 0"));
        assert!(parse("1x").unwrap_err().contains("unknown unit"));
        assert!(parse("abc").unwrap_err().contains("not a duration"));
    }
}
