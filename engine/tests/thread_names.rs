//! The dedicated log threads carry exactly the documented OS thread names,
//! are parked (alive, never woken) while the mode is OFF, and end with the
//! engine. (Its own test binary: no other engine may run in this process
//! while it counts threads.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use redoctor_engine::vfs::{SimVfs, Vfs};
use redoctor_engine::{Engine, EngineOptions};
use redoctor_engine::{RedoMode, RedoOptions};

fn thread_names() -> Vec<String> {
    let mut v = vec![];
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let p = t.unwrap().path().join("comm");
        if let Ok(s) = std::fs::read_to_string(p) {
            v.push(s.trim().to_string());
        }
    }
    v
}

/// Each log thread's context switches so far (voluntary + involuntary),
/// by name.
fn switches(names: &[&str]) -> Vec<(String, u64)> {
    let mut v = vec![];
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = t.unwrap().path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        let comm = comm.trim().to_string();
        if !names.contains(&comm.as_str()) {
            continue;
        }
        let status = std::fs::read_to_string(dir.join("status")).unwrap();
        let n: u64 = status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .map(|l| l.split_whitespace().last().unwrap().parse::<u64>().unwrap())
            .sum();
        v.push((comm, n));
    }
    v.sort();
    v
}

/// The thread names once `done` holds for them, or after 5 s.
fn names_once(done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let t = Instant::now();
    let mut names = thread_names();
    while !done(&names) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
        names = thread_names();
    }
    names
}

/// The dedicated threads carry exactly the documented names, sleep without
/// waking while the mode is OFF, run again at ON, and end at shutdown.
#[test]
fn log_threads_are_named_and_parked_while_off() {
    const NAMES: [&str; 4] = [
        "log_writer",
        "log_flusher",
        "log_wr_notify",
        "log_fl_notify",
    ];
    let mut o = EngineOptions::new("unused");
    o.vfs = Some(Arc::new(SimVfs::new()) as Arc<dyn Vfs>);
    o.redo = RedoOptions {
        mode: RedoMode::On,
        log_buffer_size: 16 << 10,
        log_file_size: 128 << 10,
        link_slots: 4096,
        ..RedoOptions::default()
    };
    let e = Engine::open(o).unwrap();
    // A new thread names itself as it starts: give it a moment.
    let names = names_once(|names| {
        NAMES
            .iter()
            .chain(["log_checkpoint", "counters_tick"].iter())
            .all(|n| names.iter().any(|x| x == n))
    });
    for n in NAMES {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
    for n in ["log_checkpoint", "counters_tick"] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
    e.set_redo_mode(RedoMode::Off).unwrap();
    // Parked: `set_redo_mode` returned once none of them runs engine code,
    // and nothing wakes them until ON (the idle threads' timed waits do
    // while ON). A thread that has just left its body may still switch
    // once or twice on its way into the park (the park's mutex): let them
    // settle first.
    std::thread::sleep(Duration::from_millis(100));
    let before = switches(&NAMES);
    assert_eq!(before.len(), NAMES.len(), "parked, not ended: {before:?}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(switches(&NAMES), before, "a parked log thread woke");
    e.set_redo_mode(RedoMode::On).unwrap();
    let t = Instant::now();
    while switches(&NAMES) == before && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_ne!(switches(&NAMES), before, "resumed log threads never ran");
    e.shutdown().unwrap();
    // Shutdown joined the threads; the tasks leave /proc/self/task when
    // they are reaped a moment later. Poll for that, with a deadline.
    let names = names_once(|names| !NAMES.iter().any(|n| names.iter().any(|x| x == n)));
    for n in NAMES {
        assert!(
            !names.iter().any(|x| x == n),
            "{n} still running after shutdown"
        );
    }
}
