//! What a rule's expressions read: every `signals.NAME`, `facts.NAME`,
//! `facts.settings.NAME` and `t.NAME` path, found by walking the CEL
//! syntax tree (the `cel-parser` crate) rather than searching the text. The
//! evidence of a recommendation is these paths with their values.

use cel_parser::ast::{EntryExpr, Expr, IdedExpr};

/// The roots a rule may read from.
const ROOTS: &[&str] = &["signals", "facts", "t"];

/// Dotted paths rooted at [`ROOTS`] that `src` reads, sorted and unique.
/// An expression that does not parse reads nothing (compiling it reports
/// the error).
pub fn reads(src: &str) -> Vec<String> {
    let Ok(expr) = cel_parser::Parser::new().parse(src) else {
        return vec![];
    };
    let mut out = Vec::new();
    walk(&expr, &mut out);
    out.sort();
    out.dedup();
    out
}

/// `a.b.c` when `e` is a chain of field selections on an identifier.
fn path(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(s) => path(&s.operand).map(|p| format!("{p}.{}", s.field)),
        _ => None,
    }
}

fn walk(e: &IdedExpr, out: &mut Vec<String>) {
    if let Some(p) = path(e) {
        let root = p.split('.').next().unwrap_or_default();
        if ROOTS.contains(&root) && p.contains('.') {
            out.push(p);
            return;
        }
    }
    match &e.expr {
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                walk(t, out);
            }
            for a in &c.args {
                walk(a, out);
            }
        }
        Expr::Select(s) => walk(&s.operand, out),
        Expr::List(l) => l.elements.iter().for_each(|x| walk(x, out)),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    walk(&me.key, out);
                    walk(&me.value, out);
                }
            }
        }
        Expr::Struct(st) => {
            for entry in &st.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    walk(&f.value, out);
                }
            }
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                walk(x, out);
            }
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

#[cfg(test)]
mod tests {
    use super::reads;

    #[test]
    fn finds_every_path_and_nothing_else() {
        let r = reads(
            "facts.settings.innodb_log_writer_threads == 'ON' && signals.commits_per_fsync >= t.min_group \
             && facts.cores * 2 > 4 ? size([signals.saturation]) > 0 : signals_like.x > 1.0",
        );
        assert_eq!(
            r,
            vec![
                "facts.cores",
                "facts.settings.innodb_log_writer_threads",
                "signals.commits_per_fsync",
                "signals.saturation",
                "t.min_group",
            ]
        );
        // A name inside a string is not read; a longer name is not its prefix.
        assert!(reads("'signals.cpu_share' == 'x'").is_empty());
        assert_eq!(
            reads("signals.cpu_share_x > 1.0"),
            vec!["signals.cpu_share_x"]
        );
    }
}
