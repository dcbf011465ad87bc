//! Shell-style wildcard matching for thread names and file paths:
//! `*` any run of characters (including `/`), `?` one character,
//! `[a-z0-9]` one character from a set (`[!...]` negates).

/// Whether `text` matches `pattern` as a whole.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    match_from(&p, &t)
}

fn match_from(p: &[char], t: &[char]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    // Position after the last `*` and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi + 1, ti));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((hit, len)) = class(&p[pi..], t[ti]) {
                        if hit {
                            pi += len;
                            ti += 1;
                            continue;
                        }
                    } else if t[ti] == '[' {
                        pi += 1;
                        ti += 1;
                        continue;
                    }
                }
                c if c == t[ti] => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class opening `p` (which starts with `[`);
/// returns (matched, pattern length of the class), or None if unclosed.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = p.get(1) == Some(&'!');
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if p[i] <= c && c <= p[i + 2] {
                hit = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                hit = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn wildcards() {
        assert!(matches("user/*", "user/12"));
        assert!(!matches("user/*", "users/1"));
        assert!(matches("log_*_notify", "log_fl_notify"));
        assert!(!matches("log_*_notify", "log_flusher"));
        assert!(matches("*/redo.log", "/data/x/redo.log"));
        assert!(matches("ib_log_flush", "ib_log_flush"));
        assert!(!matches("ib_log_flush", "ib_log_flusher"));
        assert!(matches("binlog.[0-9]*", "binlog.000012"));
        assert!(!matches("binlog.[0-9]*", "binlog.index"));
        assert!(matches("[!a]?", "bc"));
        assert!(!matches("[!a]?", "ac"));
        assert!(matches("*", ""));
        assert!(!matches("?", ""));
    }
}
