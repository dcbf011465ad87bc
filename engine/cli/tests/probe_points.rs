//! The engine's probe points, as they are in the `redoctor-engine` binary
//! (see `engine/PROBES.md`): each starts with `push %rbp` (a cheap, emulated
//! uprobe), not with a LOCK-prefixed atomic (uprobes fail on those).

/// Each probe point starts with `push %rbp` (cheap, emulated uprobe) and not
/// with a LOCK-prefixed atomic (uprobes fail on those).
#[test]
fn probe_points_start_with_push_rbp() {
    let bin = env!("CARGO_BIN_EXE_redoctor-engine");
    let Ok(out) = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", bin])
        .output()
    else {
        assert!(redoctor_testkit::skip_if_missing(
            "probe_points_start_with_push_rbp",
            Some("objdump is not installed (apt-get install binutils)".into())
        ));
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    for sym in [
        "redoctor_log_write",
        "redoctor_log_flush",
        "redoctor_flush_notified",
        "redoctor_mode_switch",
        "redoctor_checkpoint",
        "redoctor_fail_stop",
        "redoctor_binlog_flush",
        "redoctor_binlog_sync",
        "redoctor_group_commit",
        "redoctor_counters_tick",
        "redoctor_idle_poll",
        "redoctor_page_syncs",
    ] {
        let header = format!("<{sym}>:");
        let at = text
            .find(&header)
            .unwrap_or_else(|| panic!("{sym} not in the binary"));
        let first = text[at..].lines().nth(1).unwrap_or_default();
        assert!(
            first.contains("push") && first.contains("%rbp"),
            "{sym} starts with: {first}"
        );
        assert!(
            !first.contains("lock"),
            "{sym} starts with an atomic: {first}"
        );
    }
}

/// The setting-change probe point is in the binary and starts with
/// `push %rbp` like the others (see `engine/PROBES.md`).
#[test]
fn setting_change_probe_point_is_in_the_binary() {
    let bin = env!("CARGO_BIN_EXE_redoctor-engine");
    let Ok(out) = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", bin])
        .output()
    else {
        assert!(redoctor_testkit::skip_if_missing(
            "setting_change_probe_point_is_in_the_binary",
            Some("objdump is not installed (apt-get install binutils)".into())
        ));
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text
        .find("<redoctor_setting_change>:")
        .expect("redoctor_setting_change not in the binary");
    let first = text[at..].lines().nth(1).unwrap_or_default();
    assert!(
        first.contains("push") && first.contains("%rbp"),
        "starts with: {first}"
    );
}
