//! A set of rules from directories: the shipped `rules/` plus user
//! directories (a later directory's rule replaces an earlier one with the
//! same id), minus rules disabled by id.

use std::path::{Path, PathBuf};

use crate::decision::Priors;
use crate::error::AdvisorError;
use crate::rule::{parse_file, Rule};

/// The loaded rules, in load order.
#[derive(Debug)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    /// Ids disabled on request.
    pub disabled: Vec<String>,
    /// The decision rule's priors and loss (`rules/priors/`; the shipped
    /// ones unless replaced).
    pub priors: Priors,
}

impl Default for RuleSet {
    fn default() -> RuleSet {
        RuleSet {
            rules: vec![],
            disabled: vec![],
            priors: Priors::shipped(),
        }
    }
}

/// The shipped rule files (`rules/` in the repository), built into the
/// library so the agent needs no installed rule directory. A new file in
/// `rules/` is added here.
pub const SHIPPED: &[(&str, &str)] = &[
    ("rules/redo.toml", include_str!("../../rules/redo.toml")),
    (
        "rules/admission.toml",
        include_str!("../../rules/admission.toml"),
    ),
    (
        "rules/postgresql.toml",
        include_str!("../../rules/postgresql.toml"),
    ),
    (
        "rules/mariadb.toml",
        include_str!("../../rules/mariadb.toml"),
    ),
    (
        "rules/doublewrite.toml",
        include_str!("../../rules/doublewrite.toml"),
    ),
    (
        "rules/replica.toml",
        include_str!("../../rules/replica.toml"),
    ),
];

impl RuleSet {
    /// The shipped rules, then each user directory's (same override rules as [`RuleSet::load`]).
    pub fn shipped_and(dirs: &[PathBuf]) -> Result<RuleSet, AdvisorError> {
        let mut set = RuleSet::default();
        let mut shipped = Vec::new();
        for (name, text) in SHIPPED {
            shipped.extend(parse_file(Path::new(name), text)?);
        }
        set.merge(shipped);
        let user = RuleSet::load(dirs)?;
        set.merge(user.rules);
        Ok(set)
    }

    fn merge(&mut self, rules: Vec<Rule>) {
        for rule in rules {
            self.rules.retain(|r| r.id != rule.id);
            self.rules.push(rule);
        }
    }

    /// Loads every `*.toml` file of each directory, in name order. A rule id
    /// defined twice in the same directory is an error (file and line of the
    /// second); in a later directory it replaces the earlier rule.
    pub fn load(dirs: &[PathBuf]) -> Result<RuleSet, AdvisorError> {
        let mut set = RuleSet::default();
        for dir in dirs {
            let mut this_dir: Vec<Rule> = Vec::new();
            for file in toml_files(dir)? {
                let text = std::fs::read_to_string(&file).map_err(|source| AdvisorError::Io {
                    path: file.clone(),
                    source,
                })?;
                for rule in parse_file(&file, &text)? {
                    if let Some(first) = this_dir.iter().find(|r| r.id == rule.id) {
                        let (f, line) = split_origin(&rule.origin);
                        return Err(AdvisorError::RuleFile {
                            file: f.into(),
                            line,
                            reason: format!(
                                "rule id '{}' is already defined at {}",
                                rule.id, first.origin
                            ),
                        });
                    }
                    this_dir.push(rule);
                }
            }
            set.merge(this_dir);
        }
        Ok(set)
    }

    /// Removes the rule with this id; an unknown id is an error.
    pub fn disable(&mut self, id: &str) -> Result<(), AdvisorError> {
        let before = self.rules.len();
        self.rules.retain(|r| r.id != id);
        if self.rules.len() == before {
            return Err(AdvisorError::UnknownRule(id.to_string()));
        }
        self.disabled.push(id.to_string());
        Ok(())
    }
}

fn split_origin(origin: &str) -> (&str, usize) {
    match origin.rsplit_once(':') {
        Some((f, l)) => (f, l.parse().unwrap_or(0)),
        None => (origin, 0),
    }
}

fn toml_files(dir: &Path) -> Result<Vec<PathBuf>, AdvisorError> {
    let io = |source| AdvisorError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let p = entry.map_err(io)?.path();
        if p.extension().is_some_and(|e| e == "toml") && p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}
