//! The dedicated log threads carry exactly the documented OS thread names
//! and exist only while the mode is ON. (Its own test binary: no other engine
//! may run in this process while it counts threads.)

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

/// The dedicated threads carry exactly the documented names, and exist only
/// while the mode is ON.
#[test]
fn log_threads_are_named_and_follow_the_mode() {
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
    // `set_redo_mode` has joined the threads, so none of them runs engine
    // code any more; but join returns when the kernel clears the thread's
    // tid (early in its exit), and the task leaves /proc/self/task only
    // when it is reaped a moment later. Poll for that, with a deadline.
    let names = names_once(|names| !NAMES.iter().any(|n| names.iter().any(|x| x == n)));
    for n in NAMES {
        assert!(
            !names.iter().any(|x| x == n),
            "{n} still running in OFF mode"
        );
    }
    e.shutdown().unwrap();
}
