//! Versions, visibility and the indexes of an in-memory table.

use super::*;

fn row(k: i32) -> Row {
    Row {
        k,
        c: format!("c{k}"),
        pad: "pad".into(),
    }
}

const A: u64 = 1;
const B: u64 = 2;

/// `first_touch` and the after-image's `k` (None: a delete) of a write
/// that applied.
fn applied(r: WriteResult) -> (bool, Option<i32>) {
    match r {
        WriteResult::Applied {
            first_touch, after, ..
        } => (first_touch, after.map(|r| r.k)),
        other => panic!("not applied: {other:?}"),
    }
}

#[test]
fn pending_changes_are_visible_only_to_their_owner() {
    let t = Table::new(1, "t", Shape::Sbtest);
    t.upsert_committed([(1, row(10)), (2, row(20))]);

    // Each write returns the owner's pending version (what it logs).
    assert_eq!(applied(t.update_k(A, 1, 5)), (true, Some(15)));
    assert_eq!(applied(t.update_k(A, 1, 1)), (false, Some(16)));
    assert_eq!(applied(t.delete(A, 2)), (true, None));
    assert_eq!(applied(t.insert(A, 3, row(30))), (true, Some(30)));

    assert_eq!(t.get(A, 1).unwrap().k, 16);
    assert_eq!(t.get(B, 1).unwrap().k, 10);
    assert_eq!(t.get(A, 2), None);
    assert_eq!(t.get(B, 2), Some(row(20)));
    assert_eq!(t.get(A, 3), Some(row(30)));
    assert_eq!(t.get(B, 3), None);

    assert_eq!(t.get_by_k(A, 10), vec![]);
    assert_eq!(t.get_by_k(A, 16).len(), 1);
    assert_eq!(t.get_by_k(B, 10).len(), 1);
    assert_eq!(t.get_by_k(B, 16), vec![]);
    assert_eq!(
        t.range(A, 0, 10).iter().map(|r| r.0).collect::<Vec<_>>(),
        [1, 3]
    );
    assert_eq!(
        t.range(B, 0, 10).iter().map(|r| r.0).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(t.len_committed(), 2);
    t.check_invariants().unwrap();

    t.commit_rows(A, [1, 2, 3], 0);
    t.check_invariants().unwrap();
    assert_eq!(t.get(B, 1).unwrap().k, 16);
    assert_eq!(t.get(B, 2), None);
    assert_eq!(t.get(B, 3), Some(row(30)));
    assert_eq!(t.get_by_k(B, 10), vec![]);
    assert_eq!(t.len_committed(), 2);
    assert_eq!(
        t.committed_rows()
            .into_iter()
            .map(|r| r.0)
            .collect::<Vec<_>>(),
        [1, 3]
    );
}

/// A change set holds each row's committed version as of the take
/// (the delta serialises it without the table lock): a later commit
/// is in the next set only.
#[test]
fn a_taken_change_set_keeps_the_versions_it_took() {
    let t = Table::new(1, "t", Shape::Sbtest);
    t.upsert_committed([(1, row(10)), (2, row(20))]);
    assert_eq!(t.take_dirty(), Dirty::All, "a new table is written whole");
    t.update_k(A, 1, 1);
    t.delete(A, 2);
    t.commit_rows(A, [1, 2], 0);
    let taken = t.take_dirty();
    t.update_k(B, 1, 5);
    t.commit_rows(B, [1], 0);
    let Dirty::Rows(rows) = taken else {
        panic!("{taken:?}")
    };
    let got: Vec<(i64, Option<i32>)> = rows
        .iter()
        .map(|(id, r)| (*id, r.as_ref().map(|r| r.k)))
        .collect();
    assert_eq!(got, [(1, Some(11)), (2, None)]);
    let Dirty::Rows(next) = t.take_dirty() else {
        panic!("rows expected")
    };
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].1.as_ref().unwrap().k, 16);
}

#[test]
fn rollback_restores_committed_view_and_index() {
    let t = Table::new(1, "t", Shape::Sbtest);
    t.upsert_committed([(1, row(10))]);
    t.update_k(A, 1, 1);
    t.insert(A, 2, row(20));
    t.delete(A, 2);
    assert_eq!(applied(t.insert(A, 2, row(21))), (false, Some(21)));
    assert_eq!(t.insert(A, 2, row(22)), WriteResult::Duplicate);
    t.check_invariants().unwrap();
    t.rollback_rows(A, [1, 2]);
    t.check_invariants().unwrap();
    assert_eq!(t.committed_rows(), vec![(1, row(10))]);
    assert_eq!(t.get_by_k(B, 10).len(), 1);
    assert_eq!(t.get_by_k(B, 11), vec![]);
    assert_eq!(t.get_by_k(B, 21), vec![]);
}

/// A writer commits while a range scan hands rows to its caller: the
/// commit does not wait for the caller (the latch is not held across
/// it), and the scan still reports the versions of the instant it
/// took them, the old ones on both sides of the commit.
#[test]
fn scans_hold_no_latch_while_their_caller_works() {
    use std::sync::mpsc;
    use std::time::Duration;

    let t = Arc::new(Table::new(1, "t", Shape::Sbtest));
    t.upsert_committed((1..=4).map(|id| (id, row(id as i32))));
    for scan in 0..2 {
        let mut seen = Vec::new();
        let mut writer = None;
        let mut on_row = |id: i64, r: &Row| {
            if id == 2 {
                let (done, wait) = mpsc::channel();
                let t = Arc::clone(&t);
                let trx = 100 + scan;
                writer = Some(std::thread::spawn(move || {
                    t.update_k(trx, 1, 100);
                    t.update_k(trx, 4, 100);
                    t.commit_rows(trx, [1, 4], 0);
                    done.send(()).unwrap();
                }));
                let committed = wait.recv_timeout(Duration::from_secs(10));
                assert!(committed.is_ok(), "the commit waited for the scan's caller");
            }
            seen.push((id, r.k));
        };
        if scan == 0 {
            t.scan_range(A, 1, 4, &mut on_row);
        } else {
            t.scan_k_range(A, i32::MIN, i32::MAX, &mut on_row);
        }
        writer.take().unwrap().join().unwrap();
        // Rows 1 and 4 as they were before the commit, in id order for
        // the first scan and in k order (their k is 101 and 104 since
        // the first commit) for the second.
        let expected: &[(i64, i32)] = if scan == 0 {
            &[(1, 1), (2, 2), (3, 3), (4, 4)]
        } else {
            &[(2, 2), (3, 3), (1, 101), (4, 104)]
        };
        assert_eq!(seen, expected);
        assert_eq!(t.get(B, 1).unwrap().k, 101 + 100 * scan as i32);
        t.check_invariants().unwrap();
    }
}

#[test]
fn missing_rows_are_reported() {
    let t = Table::new(1, "t", Shape::Sbtest);
    assert_eq!(t.update_k(A, 1, 1), WriteResult::NotFound);
    assert_eq!(t.update_c(A, 1, "x".into()), WriteResult::NotFound);
    assert_eq!(t.delete(A, 1), WriteResult::NotFound);
    t.upsert_committed([(1, row(1))]);
    t.delete(A, 1);
    assert_eq!(t.update_k(A, 1, 1), WriteResult::NotFound);
    assert_eq!(t.delete(A, 1), WriteResult::NotFound);
    t.check_invariants().unwrap();
}

#[test]
#[should_panic(expected = "without its X lock")]
fn writing_a_row_pending_for_another_trx_panics() {
    let t = Table::new(1, "t", Shape::Sbtest);
    t.upsert_committed([(1, row(1))]);
    t.update_k(A, 1, 1);
    t.update_k(B, 1, 1);
}

#[test]
fn committed_maintenance_keeps_index_in_step() {
    let t = Table::new(1, "t", Shape::Sbtest);
    t.upsert_committed([(1, row(1)), (2, row(2))]);
    t.upsert_committed([(1, row(3))]);
    t.remove_committed(2);
    t.remove_committed(7);
    t.check_invariants().unwrap();
    assert_eq!(t.len_committed(), 1);
    assert_eq!(t.get_by_k(0, 3), vec![(1, row(3))]);
    assert_eq!(t.get_by_k(0, 1), vec![]);
}

#[test]
fn k_ranges_report_each_visible_row_once_in_k_order() {
    let t = Table::new(1, "t", Shape::Sbtest);
    t.upsert_committed([(1, row(5)), (2, row(3)), (3, row(5)), (4, row(9))]);
    // A moves row 1 from k 5 to 7 and row 4 from 9 to 4: the index
    // holds both ks of each until A ends.
    t.update_k(A, 1, 2);
    t.update_k(A, 4, -5);
    let scan = |trx, lo, hi| {
        let mut seen = Vec::new();
        t.scan_k_range(trx, lo, hi, |id, r| seen.push((r.k, id)));
        seen
    };
    assert_eq!(scan(A, 0, 10), [(3, 2), (4, 4), (5, 3), (7, 1)]);
    assert_eq!(scan(B, 0, 10), [(3, 2), (5, 1), (5, 3), (9, 4)]);
    assert_eq!(scan(A, 5, 5), [(5, 3)]);
    assert_eq!(scan(B, 6, 8), []);
    assert_eq!(scan(B, 9, 3), []);
    assert_eq!(scan(B, i32::MIN, i32::MAX).len(), 4);
}
