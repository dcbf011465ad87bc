//! Rule files: TOML, one `[[rule]]` table per rule (format: `rules/README.md`).
//! Parsing checks every field and compiles both CEL expressions, so a
//! malformed file fails at load time with its file, line and reason.

use std::collections::BTreeMap;
use std::path::Path;

use cel_interpreter::Program;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::AdvisorError;

/// How serious a finding is; ranks rules of equal priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: Spanned<String>,
    severity: Severity,
    setting: String,
    #[serde(default)]
    group: Option<String>,
    priority: i64,
    condition: Spanned<String>,
    recommend: Spanned<String>,
    #[serde(default)]
    thresholds: BTreeMap<String, f64>,
    confidence: Spanned<f64>,
    min_seconds: f64,
    min_commits: u64,
    rationale: String,
    sources: Vec<String>,
    expected_effect: String,
    #[serde(default)]
    mysql: Option<String>,
    #[serde(default)]
    postgresql: Option<String>,
    #[serde(default)]
    basis: RuleBasis,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    restart: bool,
}

/// What decides whether a firing rule's proposal is advised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleBasis {
    /// The what-if model ranks it (and files it as not modelled when it
    /// has no mechanics for the setting).
    #[default]
    Model,
    /// The rule's evidence alone: for settings of servers the model does
    /// not cover (PostgreSQL); a live trial is the judge of the gain.
    Evidence,
}

/// One loaded rule with its compiled expressions.
#[derive(Debug)]
pub struct Rule {
    pub id: String,
    pub severity: Severity,
    /// The setting the rule recommends a value for.
    pub setting: String,
    /// Rules of one group are alternatives: only the best firing one is kept.
    pub group: Option<String>,
    /// Higher wins a conflict.
    pub priority: i64,
    pub condition_src: String,
    pub recommend_src: String,
    pub condition: Program,
    pub recommend: Program,
    /// Named thresholds, `t.NAME` in the expressions.
    pub thresholds: BTreeMap<String, f64>,
    /// Base confidence (0..1) when the rule fires with ample evidence.
    pub confidence: f64,
    pub min_seconds: f64,
    pub min_commits: u64,
    pub rationale: String,
    pub sources: Vec<String>,
    pub expected_effect: String,
    /// How to apply on MySQL 8 (`{value}` is replaced); none: no MySQL equivalent.
    pub mysql: Option<String>,
    /// How to apply on PostgreSQL (`{value}` is replaced); none: not a PostgreSQL setting.
    pub postgresql: Option<String>,
    /// What decides whether its proposal is advised.
    pub basis: RuleBasis,
    /// Ids of rules that must also be recommended for this one to be kept.
    pub requires: Vec<String>,
    /// The setting is static: only a server restart changes it, so its
    /// proposal is reported as `needs_restart`, never applied live or tried.
    pub restart: bool,
    /// Every `signals.*`, `facts.*` and `t.*` path its expressions read
    /// (from their syntax trees): the evidence a recommendation shows.
    pub reads: Vec<String>,
    /// File and line the rule was defined at.
    pub origin: String,
}

impl Rule {
    /// A durability change: the rule fires only with the user's consent
    /// (its condition reads `facts.allow_durability`), so its proposal
    /// states what it risks wherever it is shown.
    pub fn risks_durability(&self) -> bool {
        self.reads.iter().any(|r| r == "facts.allow_durability")
    }
}

/// Line (1-based) of byte offset `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// Compiles a CEL expression. The parser panics on some malformed input
/// instead of returning an error; that panic is caught (and its message
/// kept off stderr) and reported as a syntax error.
pub fn compile_cel(src: &str) -> Result<Program, String> {
    static HOOK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = HOOK.lock().unwrap_or_else(|p| p.into_inner());
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(|| Program::compile(src));
    std::panic::set_hook(hook);
    match r {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(e.to_string().trim().to_string()),
        Err(_) => Err("syntax error (the CEL parser could not parse it)".into()),
    }
}

/// Parses and compiles every rule of one file's text.
pub fn parse_file(path: &Path, text: &str) -> Result<Vec<Rule>, AdvisorError> {
    let err = |at: usize, reason: String| AdvisorError::RuleFile {
        file: path.to_path_buf(),
        line: line_of(text, at),
        reason,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        err(at, e.message().to_string())
    })?;
    let mut rules = Vec::new();
    for spanned in raw.rule {
        let at = spanned.span().start;
        let r = spanned.into_inner();
        let id = r.id.get_ref().clone();
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(err(
                r.id.span().start,
                format!("rule id '{id}' must be non-empty letters, digits, '-' or '_'"),
            ));
        }
        let conf = *r.confidence.get_ref();
        if !(0.0..=1.0).contains(&conf) {
            return Err(err(
                r.confidence.span().start,
                format!("rule '{id}': confidence {conf} must be between 0 and 1"),
            ));
        }
        if r.sources.is_empty() || r.rationale.trim().is_empty() {
            return Err(err(
                at,
                format!("rule '{id}': rationale and sources must cite where it comes from"),
            ));
        }
        let compile = |s: &Spanned<String>, what: &str| {
            compile_cel(s.get_ref()).map_err(|e| {
                err(
                    s.span().start,
                    format!("rule '{id}': {what} is not a valid CEL expression: {e}"),
                )
            })
        };
        let condition = compile(&r.condition, "condition")?;
        let recommend = compile(&r.recommend, "recommend")?;
        let mut reads = crate::reads::reads(r.condition.get_ref());
        reads.extend(crate::reads::reads(r.recommend.get_ref()));
        reads.sort();
        reads.dedup();
        rules.push(Rule {
            origin: format!("{}:{}", path.display(), line_of(text, at)),
            id,
            severity: r.severity,
            setting: r.setting,
            group: r.group,
            priority: r.priority,
            condition_src: r.condition.into_inner(),
            recommend_src: r.recommend.into_inner(),
            condition,
            recommend,
            thresholds: r.thresholds,
            confidence: conf,
            min_seconds: r.min_seconds,
            min_commits: r.min_commits,
            rationale: r.rationale,
            sources: r.sources,
            expected_effect: r.expected_effect,
            mysql: r.mysql,
            postgresql: r.postgresql,
            basis: r.basis,
            requires: r.requires,
            restart: r.restart,
            reads,
        });
    }
    Ok(rules)
}
