//! A fast path for the one statement clients send as text by the hundred
//! thousand: a plain `INSERT INTO t [(cols)] VALUES (..)[, (..)]` of integer,
//! string, NULL and `?` values (sysbench's oltp_insert sends one per
//! transaction, with two long quoted strings). sqlparser tokenizes every
//! character of those strings into owned tokens and builds a full AST: 14%
//! of the server's CPU under oltp_insert at 64 threads (engine/DESIGN.md).
//!
//! [`parse`] scans the text once and returns the same [`Parsed`] as the
//! general parser, or `None` for anything outside that exact shape (quoted
//! identifiers, escapes inside strings, comments, expressions, a column
//! count that does not match, an unknown column...): the general parser
//! then handles the statement and its errors, so the SQL surface and every
//! error message stay as they were. `tests` check both paths agree on
//! generated statements.

use sqlparser::keywords::ALL_KEYWORDS;

use super::{implicit_columns, Col, Lit, Operand, Parsed, Stmt};

/// The statement as the general parser would return it, when `sql` is a
/// plain INSERT this scanner understands; `None` otherwise.
pub fn parse(sql: &str) -> Option<Parsed> {
    let mut s = Scan {
        b: sql.as_bytes(),
        i: 0,
    };
    s.keyword("INSERT")?;
    s.keyword("INTO")?;
    let mut table = s.name()?;
    if s.eat(b'.') {
        table = s.name()?; // `db.table`: one schema, the last part names it
    }
    let named = s.eat(b'(');
    let cols: Vec<Col> = if named {
        let mut cols = Vec::with_capacity(4);
        loop {
            let c = Col::from_name(s.ident()?)?;
            if cols.contains(&c) {
                return None;
            }
            cols.push(c);
            if !s.eat(b',') {
                break;
            }
        }
        s.expect(b')')?;
        cols
    } else {
        Vec::new()
    };
    s.keyword("VALUES")?;
    // Without a column list, the first row's value count says which
    // columns the rows fill (all of a table's, for some shape).
    let (cols, implicit_cols) = if named {
        (cols, None)
    } else {
        let n = s.row_width()?;
        (implicit_columns(n)?.to_vec(), Some(n))
    };
    let mut params = 0;
    let mut rows = Vec::with_capacity(1);
    loop {
        s.expect(b'(')?;
        let mut out: [Option<Operand>; 4] = [None, None, None, None];
        for (n, col) in cols.iter().enumerate() {
            if n > 0 {
                s.expect(b',')?;
            }
            out[*col as usize] = Some(s.value(&mut params)?);
        }
        s.expect(b')')?;
        rows.push(out);
        if !s.eat(b',') {
            break;
        }
    }
    s.skip_ws();
    if s.i != s.b.len() {
        return None;
    }
    Some(Parsed {
        stmt: Stmt::Insert {
            table: table.to_owned(),
            rows,
            implicit_cols,
        },
        params,
    })
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn skip_ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    /// The punctuation byte `c` next (after whitespace): consumed.
    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        self.eat(c).then_some(())
    }

    /// An unquoted identifier: a letter or `_`, then letters, digits, `_`, `$`.
    fn ident(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let start = self.i;
        let first = *self.b.get(self.i)?;
        if !(first.is_ascii_alphabetic() || first == b'_') {
            return None;
        }
        self.i += 1;
        while self
            .b
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$')
        {
            self.i += 1;
        }
        // ASCII bytes only, so the slice is on character boundaries.
        std::str::from_utf8(&self.b[start..self.i]).ok()
    }

    /// An identifier that is no SQL keyword (`INSERT INTO values ..` and
    /// the like are the general parser's to judge).
    fn name(&mut self) -> Option<&'a str> {
        let w = self.ident()?;
        let upper = w.to_ascii_uppercase();
        ALL_KEYWORDS
            .binary_search(&upper.as_str())
            .is_err()
            .then_some(w)
    }

    /// The keyword `kw` (any case) as a whole word.
    fn keyword(&mut self, kw: &str) -> Option<()> {
        let save = self.i;
        match self.ident() {
            Some(w) if w.eq_ignore_ascii_case(kw) => Some(()),
            _ => {
                self.i = save;
                None
            }
        }
    }

    /// How many values the row starting here, `(v, v, ..)`, holds; reads
    /// nothing.
    fn row_width(&mut self) -> Option<usize> {
        let save = self.i;
        let mut params = 0;
        let mut n = 0;
        self.expect(b'(')?;
        let width = loop {
            self.value(&mut params)?;
            n += 1;
            if !self.eat(b',') {
                break self.expect(b')').map(|_| n);
            }
        };
        self.i = save;
        width
    }

    /// An integer (`-` allowed, no space after it), a single-quoted string
    /// without escapes, NULL, or `?`.
    fn value(&mut self, params: &mut usize) -> Option<Operand> {
        self.skip_ws();
        match *self.b.get(self.i)? {
            b'?' => {
                self.i += 1;
                *params += 1;
                Some(Operand::Param(*params - 1))
            }
            b'\'' => {
                let start = self.i + 1;
                let len = self.b[start..].iter().position(|c| *c == b'\'')?;
                let body = &self.b[start..start + len];
                self.i = start + len + 1;
                // `''` (a quote inside) and backslash escapes: the general parser.
                if body.contains(&b'\\') || self.b.get(self.i) == Some(&b'\'') {
                    return None;
                }
                let text = std::str::from_utf8(body).ok()?;
                Some(Operand::Lit(Lit::Str(text.to_owned())))
            }
            b'-' | b'0'..=b'9' => {
                let negative = self.b[self.i] == b'-';
                if negative {
                    self.i += 1;
                }
                let digits = self.i;
                while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
                // `1.5`, `1e3`, `0x1f`, `12abc`: not plain integers.
                if self.i == digits
                    || self
                        .b
                        .get(self.i)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'_')
                {
                    return None;
                }
                // As the general parser: the digits must fit an i64, then
                // the sign applies (so i64::MIN itself is refused there).
                let v: i64 = std::str::from_utf8(&self.b[digits..self.i])
                    .ok()?
                    .parse()
                    .ok()?;
                Some(Operand::Lit(Lit::Int(if negative { -v } else { v })))
            }
            _ => {
                let save = self.i;
                if self.keyword("NULL").is_some() {
                    Some(Operand::Lit(Lit::Null))
                } else {
                    self.i = save;
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    /// The general parser, without the fast path.
    fn general(q: &str) -> Option<Parsed> {
        sql::parse_general(q).ok()
    }

    #[test]
    fn sysbench_insert_takes_the_fast_path() {
        let q = "INSERT INTO sbtest3 (id, k, c, pad) VALUES (0, 5012, \
                 '68487932199-96439406143-93774651418', '22195207048-70116052123')";
        let fast = parse(q).expect("fast path");
        assert_eq!(Some(fast), general(q));
        let q = "insert into sbtest.sbtest1 values (?, ?, 'x', NULL), (-7, 3, '', 'é€')";
        let fast = parse(q).expect("fast path");
        assert_eq!(fast.params, 2);
        assert_eq!(Some(fast), general(q));
        // bulk_insert's rows for an (id, k) table.
        let q = "INSERT INTO sbtest2 VALUES(1,1),(2,2),(3,3)";
        let fast = parse(q).expect("fast path");
        assert!(matches!(
            fast.stmt,
            Stmt::Insert {
                implicit_cols: Some(2),
                ..
            }
        ));
        assert_eq!(Some(fast), general(q));
    }

    #[test]
    fn anything_else_goes_to_the_general_parser() {
        for q in [
            "INSERT INTO t (id, k) VALUES (1)", // count mismatch: its error
            "INSERT INTO t VALUES (1, 2, 3)",   // no table has 3 columns
            "INSERT INTO t VALUES (1, 2), (3, 4, 5, 6)",
            "INSERT INTO t (id, nope) VALUES (1, 2)", // unknown column: its error
            "INSERT INTO t (id, id) VALUES (1, 2)",
            "INSERT INTO `t` (id) VALUES (1)",
            "INSERT INTO t (id) VALUES (1.5)",
            "INSERT INTO t (id) VALUES (- 1)",
            "INSERT INTO t (id) VALUES (1+1)",
            "INSERT INTO t (c) VALUES ('it''s')",
            "INSERT INTO t (c) VALUES ('a\\'b')",
            "INSERT INTO t (c) VALUES (\"x\")",
            "INSERT INTO t (id) VALUES (1);",
            "INSERT INTO t (id) VALUES (1) -- comment",
            "INSERT IGNORE INTO t (id) VALUES (1)",
            "INSERT INTO t (id) VALUES (1) ON DUPLICATE KEY UPDATE k=1",
            "INSERT INTO t (id) SELECT 1",
            "INSERT INTO t SET id = 1",
            "INSERT INTO t (id) VALUES (99999999999999999999)",
            "INSERTINTO t (id) VALUES (1)",
            "SELECT 1",
        ] {
            assert_eq!(parse(q), None, "{q}");
        }
    }

    /// Mostly values the fast path takes, some it must leave alone.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => any::<i64>().prop_map(|v| v.to_string()),
            6 => "[a-zA-Z0-9 ,()é-]{0,40}".prop_map(|s| format!("'{s}'")),
            2 => Just("NULL".to_string()),
            2 => Just("?".to_string()),
            1 => Just("null".to_string()),
            1 => "[-]?[0-9]{1,3}(\\.[0-9])?".prop_map(|s| s),
            1 => "[a-z']{0,6}".prop_map(|s| format!("'{s}'")),
            1 => Just("- 4".to_string()),
            1 => Just("1e3".to_string()),
        ]
    }

    fn ws() -> impl Strategy<Value = &'static str> {
        prop_oneof![Just(" "), Just(""), Just("\n  "), Just("\t")]
    }

    /// A column list (possibly none, possibly with an unknown column) and
    /// rows whose length matches it, or is one off now and then (for all
    /// rows alike).
    fn insert() -> impl Strategy<Value = String> {
        let cols = proptest::sample::subsequence(vec!["id", "k", "c", "pad", "K", "nope"], 0..=4)
            .prop_shuffle();
        (cols, 0usize..10, any::<bool>()).prop_flat_map(|(cols, skew, narrow)| {
            // No column list: the values of all columns of an sbtest or an
            // (id, k) table.
            let want = match (cols.len(), narrow) {
                (0, false) => 4,
                (0, true) => 2,
                (n, _) => n,
            };
            let len = match skew {
                0 => want + 1,
                1 => want.saturating_sub(1),
                _ => want,
            };
            let row = proptest::collection::vec(value(), len..=len);
            (
                prop_oneof![
                    Just("INSERT INTO"),
                    Just("insert into"),
                    Just("Insert  Into")
                ],
                prop_oneof![
                    4 => Just("sbtest1"),
                    2 => Just("sbtest.sbtest2"),
                    1 => Just("`t`"),
                    1 => Just("t_$9"),
                    1 => Just("values")
                ],
                Just(cols),
                proptest::collection::vec(row, 1..=3),
                ws(),
                ws(),
                prop_oneof![4 => Just(""), 2 => Just(" "), 1 => Just(";"), 1 => Just(" x")],
            )
                .prop_map(|(kw, table, cols, rows, a, b, tail)| {
                    let cols = if cols.is_empty() {
                        String::new()
                    } else {
                        format!("({})", cols.join(&format!(",{a}")))
                    };
                    let rows: Vec<String> = rows
                        .iter()
                        .map(|r| format!("({})", r.join(&format!("{b},"))))
                        .collect();
                    format!("{kw} {table}{a}{cols} VALUES{b}{}{tail}", rows.join(","))
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Whenever the fast path answers, it answers what the general parser does.
        #[test]
        fn fast_path_agrees_with_the_general_parser(q in insert()) {
            if let Some(fast) = parse(&q) {
                prop_assert_eq!(Some(fast), general(&q), "{}", q);
            }
        }
    }

    /// The generator reaches the fast path often (the property is not vacuous).
    #[test]
    fn generated_statements_often_take_the_fast_path() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = insert();
        let mut fast = 0;
        for _ in 0..500 {
            let q = strategy.new_tree(&mut runner).unwrap().current();
            fast += parse(&q).is_some() as u32;
        }
        assert!(
            fast >= 50,
            "only {fast} of 500 generated statements took the fast path"
        );
    }
}
