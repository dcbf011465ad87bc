//! Finding a process: by pidfile or by name (`/proc/PID/comm`), for the
//! gate's command targets and the agent's targets.

use std::path::Path;

use redoctor_probes::procfs::stat_fields;

/// Whether `stat_fields` describe a live process (not a zombie).
fn live(fields: &str) -> bool {
    fields
        .split_whitespace()
        .next()
        .is_some_and(|state| state != "Z" && state != "X")
}

/// Whether `pid` is a live process (not a zombie).
pub fn alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| live(&f))
}

/// The live pid a pidfile names.
pub fn read_pidfile(p: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(p).ok()?.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

/// Field 22 of `/proc/PID/stat` (given from field 3 on, as
/// [`stat_fields`] returns it): the start time in clock ticks since boot.
fn start_ticks(fields: &str) -> Option<u64> {
    fields.split_whitespace().nth(19)?.parse().ok()
}

/// How long process `pid` has been running: its start time (field 22 of
/// `/proc/PID/stat`, in clock ticks since boot) against the uptime.
pub fn age(pid: u32) -> Option<std::time::Duration> {
    let ticks = start_ticks(&stat_fields(pid)?)?;
    // SAFETY: sysconf reads a constant of the running system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    (hz > 0).then(|| {
        let started = ticks as f64 / hz as f64;
        std::time::Duration::from_secs_f64((uptime - started).max(0.0))
    })
}

/// The first 15 bytes of `name`: what the kernel keeps of a process name.
fn comm_of(name: &str) -> &[u8] {
    &name.as_bytes()[..name.len().min(15)]
}

/// Whether process `pid`'s `comm` is `want` (already cut to 15 bytes).
fn comm_is(pid: u32, want: &[u8]) -> bool {
    let comm = std::fs::read(format!("/proc/{pid}/comm")).unwrap_or_default();
    comm.strip_suffix(b"\n").unwrap_or(&comm) == want
}

/// Whether `pid` is alive and named `name` (its first 15 bytes).
pub fn is_named(pid: u32, name: &str) -> bool {
    comm_is(pid, comm_of(name)) && alive(pid)
}

/// The newest live process whose `comm` is `name` (the kernel keeps 15
/// bytes of it, so a longer name matches on its first 15 bytes, even where
/// they end inside a character).
pub fn newest_process(name: &str) -> Option<u32> {
    let want = comm_of(name);
    let me = std::process::id();
    let mut best: Option<(u64, u32)> = None;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me || !comm_is(pid, want) {
            continue;
        }
        let Some(fields) = stat_fields(pid).filter(|f| live(f)) else {
            continue;
        };
        let start = start_ticks(&fields).unwrap_or(0);
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

    #[test]
    fn a_new_process_is_young_and_init_is_not() {
        let mut c = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let young = age(c.id()).expect("a live child's age");
        c.kill().unwrap();
        c.wait().unwrap();
        assert!(young < std::time::Duration::from_secs(1), "{young:?}");
        let init = age(1).expect("pid 1's age");
        assert!(init > std::time::Duration::from_secs(5), "{init:?}");
        assert_eq!(age(0x7fff_fff0), None);
    }

    /// A name longer than the kernel's 15 bytes, cut inside a character.
    #[test]
    fn finds_a_process_whose_name_is_cut_inside_a_character() {
        let dir = tempfile::tempdir().unwrap();
        let name = "redoctor-xééé-sleep"; // "redoctor-xéé" and one byte of "é"
        assert!(name.len() > 15 && !name.is_char_boundary(15));
        let bin = dir.path().join(name);
        std::fs::copy("/bin/sleep", &bin).unwrap();
        // A fork in another test while the copy was open holds it for
        // writing until that child execs (ETXTBSY).
        let mut c = (0..50)
            .find_map(
                |_| match std::process::Command::new(&bin).arg("30").spawn() {
                    Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                        std::thread::sleep(std::time::Duration::from_millis(100));
                        None
                    }
                    r => Some(r.unwrap()),
                },
            )
            .expect("the copied binary stayed busy");
        // spawn returns once exec has released the parent, a moment before
        // the kernel renames the child: until then its comm is this test
        // thread's name (also 15 bytes). Wait for the new name.
        let want = &name.as_bytes()[..15];
        let t = std::time::Instant::now();
        let comm = loop {
            let comm = std::fs::read(format!("/proc/{}/comm", c.id())).unwrap();
            if comm.strip_suffix(b"\n") == Some(want)
                || t.elapsed() > std::time::Duration::from_secs(5)
            {
                break comm;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(comm.len(), 16, "{comm:?}");
        assert!(is_named(c.id(), name), "{comm:?}");
        assert_eq!(newest_process(name), Some(c.id()));
        c.kill().unwrap();
        c.wait().unwrap();
    }
}
