//! The admin surface: `SET GLOBAL`, `SHOW GLOBAL VARIABLES/STATUS`, `SELECT @@name`.
//!
//! The session runs these on the engine's settings registry
//! (`Engine::set_global`, `Engine::variables`, `Engine::variable`,
//! `Engine::global_status`), which validates, applies and records each
//! change; a refused value returns an error and changes nothing. This module
//! holds the `LIKE` matching of `SHOW .. LIKE`.

/// SQL `LIKE` (`%`, `_`, `\` escape), case-insensitive as MySQL matches
/// variable names.
pub fn like(pattern: &str, s: &str) -> bool {
    fn go(p: &[char], s: &[char]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some(('%', rest)) => (0..=s.len()).any(|i| go(rest, &s[i..])),
            Some(('_', rest)) => !s.is_empty() && go(rest, &s[1..]),
            Some(('\\', rest)) if !rest.is_empty() => {
                !s.is_empty() && s[0] == rest[0] && go(&rest[1..], &s[1..])
            }
            Some((c, rest)) => !s.is_empty() && s[0] == *c && go(rest, &s[1..]),
        }
    }
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let s: Vec<char> = s.to_lowercase().chars().collect();
    go(&p, &s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_as_mysql_does() {
        assert!(like("innodb%", "InnoDB_log_writer_threads"));
        assert!(like("%log\\_writer%", "innodb_log_writer_threads"));
        assert!(!like("%log\\_writer%", "innodb_logXwriter_threads"));
        assert!(like("a_c", "abc"));
        assert!(!like("a_c", "ac"));
        assert!(like("%", ""));
        assert!(!like("x", "xy"));
    }
}
