//! The replication statements, parsed before sqlparser (which knows none
//! of them):
//!
//! ```text
//! CHANGE REPLICATION SOURCE TO SOURCE_SOCKET = '/path' [, SOURCE_LOG_FILE = 'binlog.000001'] [, SOURCE_LOG_POS = 20]
//! START REPLICA | STOP REPLICA | SHOW REPLICA STATUS      (SLAVE also accepted)
//! BINLOG DUMP <file number> <offset> LIMIT <n>             (a replica's fetch)
//! BINLOG TABLE <source table id>                          (its table map)
//! ```

use super::Stmt;
use crate::error::SqlError;

/// `CHANGE REPLICATION SOURCE TO` options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeSource {
    pub socket: Option<String>,
    pub log_file: Option<u64>,
    pub log_pos: Option<u64>,
}

fn words(sql: &str) -> Vec<String> {
    sql.trim()
        .trim_end_matches(';')
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

fn upper(ws: &[String], n: usize) -> Vec<String> {
    ws.iter().take(n).map(|w| w.to_ascii_uppercase()).collect()
}

/// The statement, when `sql` is one of these; None otherwise.
pub fn parse(sql: &str) -> Option<Result<Stmt, SqlError>> {
    let ws = words(sql);
    let head = upper(&ws, 3);
    let h: Vec<&str> = head.iter().map(String::as_str).collect();
    match h.as_slice() {
        ["START", "REPLICA" | "SLAVE", ..] if ws.len() == 2 => Some(Ok(Stmt::StartReplica)),
        ["STOP", "REPLICA" | "SLAVE", ..] if ws.len() == 2 => Some(Ok(Stmt::StopReplica)),
        ["SHOW", "REPLICA" | "SLAVE", "STATUS"] if ws.len() == 3 => {
            Some(Ok(Stmt::ShowReplicaStatus))
        }
        ["BINLOG", "DUMP", ..] => Some(dump(&ws)),
        ["BINLOG", "TABLE", ..] => Some(table(&ws)),
        ["CHANGE", "REPLICATION" | "MASTER", ..] => Some(change(sql)),
        _ => None,
    }
}

fn num(w: Option<&String>, what: &str) -> Result<u64, SqlError> {
    w.and_then(|w| w.parse().ok())
        .ok_or_else(|| SqlError::parse(format!("{what} must be a non-negative integer")))
}

fn dump(ws: &[String]) -> Result<Stmt, SqlError> {
    let usage = "BINLOG DUMP <file number> <offset> LIMIT <n>";
    if ws.len() != 6 || !ws[4].eq_ignore_ascii_case("LIMIT") {
        return Err(SqlError::parse(format!("expected {usage}")));
    }
    Ok(Stmt::BinlogDump {
        file: num(ws.get(2), "the file number")?,
        offset: num(ws.get(3), "the offset")?,
        limit: num(ws.get(5), "LIMIT")?.clamp(1, 10_000) as usize,
    })
}

fn table(ws: &[String]) -> Result<Stmt, SqlError> {
    if ws.len() != 3 {
        return Err(SqlError::parse("expected BINLOG TABLE <id>"));
    }
    let id = num(ws.get(2), "the table id")?;
    let id = u32::try_from(id).map_err(|_| SqlError::parse("table id out of range"))?;
    Ok(Stmt::BinlogTable { id })
}

fn change(sql: &str) -> Result<Stmt, SqlError> {
    let usage = "CHANGE REPLICATION SOURCE TO SOURCE_SOCKET = '/path' [, SOURCE_LOG_FILE = 'binlog.NNNNNN', SOURCE_LOG_POS = n]";
    let upper = sql.to_ascii_uppercase();
    let Some(at) = upper.find(" TO ") else {
        return Err(SqlError::parse(format!("expected {usage}")));
    };
    let mut out = ChangeSource::default();
    for part in split_options(&sql[at + 4..]) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(SqlError::parse(format!(
                "'{part}' is not name = value; expected {usage}"
            )));
        };
        let (k, v) = (k.trim().to_ascii_uppercase(), v.trim());
        let text = || -> Result<String, SqlError> {
            let q = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\''));
            q.map(str::to_string)
                .ok_or_else(|| SqlError::parse(format!("{k} takes a quoted string")))
        };
        match k.as_str() {
            "SOURCE_SOCKET" | "MASTER_SOCKET" => out.socket = Some(text()?),
            "SOURCE_LOG_FILE" | "MASTER_LOG_FILE" => {
                let f = text()?;
                let n = f
                    .strip_prefix("binlog.")
                    .and_then(|d| d.parse().ok())
                    .ok_or_else(|| {
                        SqlError::parse(format!("'{f}' is not a binlog file name (binlog.NNNNNN)"))
                    })?;
                out.log_file = Some(n);
            }
            "SOURCE_LOG_POS" | "MASTER_LOG_POS" => {
                out.log_pos = Some(num(Some(&v.to_string()), "SOURCE_LOG_POS")?)
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "CHANGE REPLICATION SOURCE option {other}"
                )))
            }
        }
    }
    if out.log_pos.is_some() != out.log_file.is_some() {
        return Err(SqlError::parse(
            "give SOURCE_LOG_FILE and SOURCE_LOG_POS together",
        ));
    }
    Ok(Stmt::ChangeSource(out))
}

/// Splits `a = 'x', b = 1` at the commas outside quotes.
fn split_options(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.trim().trim_end_matches(';').chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                cur.push(c);
            }
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Stmt {
        parse(s).expect("a replication statement").expect("parses")
    }

    #[test]
    fn statements_parse_in_both_spellings() {
        assert_eq!(p("START REPLICA"), Stmt::StartReplica);
        assert_eq!(p("stop slave;"), Stmt::StopReplica);
        assert_eq!(p("SHOW REPLICA STATUS"), Stmt::ShowReplicaStatus);
        assert_eq!(
            p("BINLOG DUMP 2 120 LIMIT 50"),
            Stmt::BinlogDump {
                file: 2,
                offset: 120,
                limit: 50
            }
        );
        assert_eq!(p("BINLOG TABLE 7"), Stmt::BinlogTable { id: 7 });
        assert_eq!(
            p("CHANGE REPLICATION SOURCE TO SOURCE_SOCKET = '/tmp/a, b.sock', SOURCE_LOG_FILE='binlog.000003', SOURCE_LOG_POS=20"),
            Stmt::ChangeSource(ChangeSource {
                socket: Some("/tmp/a, b.sock".into()),
                log_file: Some(3),
                log_pos: Some(20),
            })
        );
        assert!(parse("SELECT 1").is_none());
    }

    #[test]
    fn bad_statements_say_what_is_expected() {
        for bad in [
            "BINLOG DUMP x 1 LIMIT 2",
            "BINLOG DUMP 1 2",
            "CHANGE REPLICATION SOURCE TO SOURCE_SOCKET=/no/quotes",
            "CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE='binlog.000001'",
            "CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE='relay.1', SOURCE_LOG_POS=4",
            "CHANGE REPLICATION SOURCE TO SOURCE_HOST='x'",
        ] {
            let e = parse(bad).expect("recognised").unwrap_err();
            assert!(!e.message.is_empty(), "{bad}");
        }
    }
}
