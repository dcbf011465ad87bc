//! The trial decision: keep only when faster beyond noise (Welch's t-test).

use std::collections::BTreeMap;

use redoctor_advisor::trial::decide;

fn s(k: &str, v: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(k.to_string(), v.to_string())])
}

#[test]
fn clearly_faster_is_kept() {
    let t = decide(
        s("x", "ON"),
        s("x", "OFF"),
        vec![100.0, 104.0, 98.0, 101.0],
        vec![150.0, 149.0, 155.0, 152.0],
    );
    assert!(t.kept, "{}", t.reason);
    assert!(t.p_value.unwrap() < 0.05);
    assert_eq!(t.candidate_median, 151.0);
}

#[test]
fn within_noise_is_rolled_back() {
    let t = decide(
        s("x", "ON"),
        s("x", "OFF"),
        vec![100.0, 140.0, 90.0],
        vec![110.0, 95.0, 130.0],
    );
    assert!(!t.kept);
    assert!(
        t.reason.contains("no difference beyond noise"),
        "{}",
        t.reason
    );
}

#[test]
fn slower_is_rolled_back() {
    let t = decide(
        s("x", "ON"),
        s("x", "OFF"),
        vec![150.0, 149.0, 155.0],
        vec![100.0, 104.0, 98.0],
    );
    assert!(!t.kept);
    assert!(t.reason.contains("slower"), "{}", t.reason);
}

#[test]
fn too_few_windows_is_rolled_back() {
    let t = decide(s("x", "ON"), s("x", "OFF"), vec![100.0], vec![200.0]);
    assert!(!t.kept);
    assert!(t.p_value.is_none());
}
