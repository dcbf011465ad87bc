//! Finding a process: by pidfile or by name (`/proc/PID/comm`), for the
//! gate's command targets and the agent's targets.

use std::path::Path;

/// Whether `pid` is a live process (not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// The live pid a pidfile names.
pub fn read_pidfile(p: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(p).ok()?.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

/// The newest live process whose `comm` is `name` (the kernel keeps 15
/// bytes of it, so a longer name matches on its first 15).
pub fn newest_process(name: &str) -> Option<u32> {
    let want: String = name.chars().take(15).collect();
    let me = std::process::id();
    let mut best: Option<(u64, u32)> = None;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim_end_matches('\n') != want || pid == me || !alive(pid) {
            continue;
        }
        // Field 22 of /proc/PID/stat: start time in clock ticks.
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let start = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(19))
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
        if best.is_none_or(|(s, _)| start > s) {
            best = Some((start, pid));
        }
    }
    best.map(|(_, pid)| pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_child_by_name_and_pidfile_and_not_after_it_exits() {
        let mut c = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = c.id();
        assert!(alive(pid));
        let dir = tempfile::tempdir().unwrap();
        let pf = dir.path().join("p.pid");
        std::fs::write(&pf, format!("{pid}\n")).unwrap();
        assert_eq!(read_pidfile(&pf), Some(pid));
        assert!(newest_process("sleep").is_some());
        c.kill().unwrap();
        c.wait().unwrap();
        assert!(!alive(pid));
        assert_eq!(read_pidfile(&pf), None);
    }
}
