//! The checker can fail: one real trial is run and kept, its recovered
//! state passes `redoctor-soak check`, and then copies of it that are wrong
//! in one way each (written as state files, as the recovery child writes
//! them) are refused, each with the right reason:
//!
//! - an acknowledged commit is missing (one row of it reverted);
//! - a multi-row transaction is half-applied;
//! - an acknowledged transaction's xid is missing from the binlog;
//! - a transaction not in the binlog was applied;
//! - a row no transaction wrote changed, and a row holds a value nobody wrote.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use redoctor_soak::state::StateFile;
use redoctor_soak::trial::{Limits, TrialConfig, Workload};
use redoctor_workload::journal::{self, Entry, JournalOp, JournalWriter, RowValue};

const SOAK: &str = env!("CARGO_BIN_EXE_redoctor-soak");

type RowKey = (u32, i64);

/// A fresh read_write trial with the binlog on and a few users.
fn pick_trial() -> TrialConfig {
    let limits = Limits::default();
    (1..10_000u64)
        .map(|s| TrialConfig::from_seed(s * 2, &limits))
        .find(|c| {
            c.workload == Workload::ReadWrite
                && c.log_bin
                && (2..=16).contains(&c.users)
                && c.kill_after_ms >= 200
                && c.shape.table_size >= 1000
        })
        .expect("the matrix has such a trial")
}

/// Runs `cfg`'s trial with --keep; returns its directory.
fn run_kept(cfg: &TrialConfig, dir: &Path) -> PathBuf {
    let out = Command::new(SOAK)
        .args(["--replay", &cfg.seed.to_string(), "--keep", "--json"])
        .arg("--dir")
        .arg(dir)
        .output()
        .expect("run redoctor-soak");
    assert!(
        out.status.success(),
        "the trial itself failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join(format!("trial-{:016x}", cfg.seed))
}

/// `redoctor-soak check` on files; (passed, report).
fn check(trial: &Path, journal: &Path, state: &Path) -> (bool, serde_json::Value) {
    let out = Command::new(SOAK)
        .args(["check", "--workload", "read_write", "--log-bin", "--json"])
        .arg("--base")
        .arg(trial.join("base.json"))
        .arg("--journal")
        .arg(journal)
        .arg("--state")
        .arg(state)
        .output()
        .expect("run redoctor-soak check");
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), report)
}

/// The kinds of the report's violations (`LostAcknowledged`, ...).
fn kinds(report: &serde_json::Value) -> Vec<String> {
    report["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v {
            serde_json::Value::Object(m) => m.keys().next().unwrap().clone(),
            other => other.as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

/// Sets row `key` of `state` to `value` (None: removes it).
fn set_row(state: &mut StateFile, (t, id): RowKey, value: Option<RowValue>) {
    let rows = &mut state.tables.get_mut(&t).expect("table").rows;
    rows.retain(|r| r.0 != id);
    if let Some(v) = value {
        rows.push((id, v.k, v.digest));
        rows.sort_unstable();
    }
}

struct Txn {
    trx: u64,
    ops: Vec<JournalOp>,
    acked: bool,
}

#[test]
fn the_checker_refuses_wrong_recovered_states() {
    let cfg = pick_trial();
    println!("trial {}: {}", cfg.seed, cfg.describe());
    let tmp = tempfile::tempdir().unwrap();
    let trial = run_kept(&cfg, tmp.path());
    let journal_path = trial.join("journal-0");
    let state_path = trial.join("state-0.json");
    let (ok, report) = check(&trial, &journal_path, &state_path);
    assert!(ok, "the real recovered state must pass: {report}");
    assert!(report["acknowledged"].as_u64().unwrap() > 0, "{report}");

    let recovered = StateFile::read(&state_path).unwrap();
    let base = StateFile::read(&trial.join("base.json")).unwrap();
    let parsed = journal::parse_journal(&std::fs::read(&journal_path).unwrap()).unwrap();
    let mut txns: Vec<Txn> = Vec::new();
    let mut at: HashMap<u64, usize> = HashMap::new();
    for e in &parsed.entries {
        match e {
            Entry::Intent { trx, ops } => {
                at.insert(*trx, txns.len());
                txns.push(Txn {
                    trx: *trx,
                    ops: ops.clone(),
                    acked: false,
                });
            }
            Entry::Ack { trx } => txns[at[trx]].acked = true,
            Entry::Abort { .. } => {}
        }
    }
    // Each row's writers in order, and the value before each write.
    let base_rows = base.rows();
    let mut last_writer: BTreeMap<RowKey, usize> = BTreeMap::new();
    let mut before: HashMap<(usize, RowKey), Option<RowValue>> = HashMap::new();
    let mut current: HashMap<RowKey, Option<RowValue>> = HashMap::new();
    for (i, t) in txns.iter().enumerate() {
        for op in &t.ops {
            let key = (op.table, op.id);
            let prev = current
                .get(&key)
                .copied()
                .unwrap_or_else(|| base_rows.get(&key).copied());
            before.insert((i, key), prev);
            current.insert(key, op.after);
            last_writer.insert(key, i);
        }
    }
    // An acknowledged transaction that is the last writer of all its rows
    // (three rows: read_write changes an index, a non-index and a
    // deleted-and-reinserted row, sometimes the same one).
    let (victim, vt) = txns
        .iter()
        .enumerate()
        .rev()
        .find(|(i, t)| {
            t.acked && t.ops.len() >= 2 && t.ops.iter().all(|o| last_writer[&(o.table, o.id)] == *i)
        })
        .expect("an acknowledged multi-row transaction");
    let write_state = |name: &str, s: &StateFile| {
        let p = trial.join(name);
        s.write(&p).unwrap();
        p
    };

    // 1. A lost acknowledged commit: every row of it reverted.
    let mut lost = recovered.clone();
    for op in &vt.ops {
        let key = (op.table, op.id);
        set_row(&mut lost, key, before[&(victim, key)]);
    }
    let (ok, r) = check(&trial, &journal_path, &write_state("lost.json", &lost));
    assert!(!ok);
    assert!(kinds(&r).contains(&"LostAcknowledged".into()), "{r}");

    // 2. Half-applied: one row of it reverted, the others kept.
    let mut half = recovered.clone();
    let op = &vt.ops[0];
    let key = (op.table, op.id);
    set_row(&mut half, key, before[&(victim, key)]);
    let (ok, r) = check(&trial, &journal_path, &write_state("half.json", &half));
    assert!(!ok);
    assert!(kinds(&r).contains(&"HalfApplied".into()), "{r}");
    let half_trx = r["violations"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|v| v.get("HalfApplied"))
        .unwrap()["trx"]
        .as_u64();
    assert_eq!(half_trx, Some(vt.trx));

    // 3. The binlog lost an acknowledged transaction's event.
    let mut nobin = recovered.clone();
    nobin
        .binlog_xids
        .as_mut()
        .expect("the trial ran with the binlog on")
        .retain(|&x| x != vt.trx);
    let (ok, r) = check(&trial, &journal_path, &write_state("nobin.json", &nobin));
    assert!(!ok);
    assert!(kinds(&r).contains(&"AckNotInBinlog".into()), "{r}");

    // 4. A prepared transaction without a binlog event was committed: add
    //    one to a copy of the journal, and its write to the state.
    let ghost = txns.iter().map(|t| t.trx).max().unwrap() + 1_000;
    let journal2 = trial.join("journal-ghost");
    std::fs::copy(&journal_path, &journal2).unwrap();
    let (&gkey, _) = last_writer.iter().next().unwrap();
    let gval = RowValue {
        k: 7,
        digest: 0x0123_4567_89ab_cdef,
    };
    JournalWriter::open(&journal2)
        .unwrap()
        .append(&Entry::Intent {
            trx: ghost,
            ops: vec![JournalOp {
                table: gkey.0,
                id: gkey.1,
                after: Some(gval),
            }],
        })
        .unwrap();
    let mut applied = recovered.clone();
    set_row(&mut applied, gkey, Some(gval));
    let (ok, r) = check(&trial, &journal2, &write_state("ghost.json", &applied));
    assert!(!ok);
    assert_eq!(kinds(&r), vec!["AppliedWithoutBinlog".to_string()], "{r}");

    // 5. A row nobody wrote changed; a written row holds a foreign value.
    let untouched = base_rows
        .keys()
        .find(|k| !last_writer.contains_key(k))
        .copied()
        .expect("an unwritten row");
    let mut foreign = recovered.clone();
    set_row(&mut foreign, untouched, Some(gval));
    set_row(&mut foreign, gkey, Some(gval));
    let (ok, r) = check(
        &trial,
        &journal_path,
        &write_state("foreign.json", &foreign),
    );
    assert!(!ok);
    let k = kinds(&r);
    assert!(k.contains(&"UntouchedChanged".into()), "{r}");
    assert!(k.contains(&"UnknownValue".into()), "{r}");
}
