//! The `mysql8` profile against a process laid out as MySQL 8 lays out its
//! commit path (no MySQL binary can be had here). Run with
//! `REDOCTOR_FAKE_MYSQL8=<dir>` this binary is that process: a main thread
//! named `mysqld`, three connection threads (`connection`), and InnoDB's
//! redo threads under the names MySQL 8.0.30+ gives them
//! (`ib_log_writer`, `ib_log_flush`, `ib_log_wr_notif`, `ib_log_fl_notif`,
//! `ib_log_checkpt`), handing each commit along the chain
//! connection → writer → flusher → flush notifier → connection, with the
//! writes and fsyncs on `#innodb_redo/#ib_redo6` as 8.0.30+ names its redo
//! files. Without the variable it attaches the probes to such a child with
//! the shipped profile and checks the roles, the wakeup chain and the redo
//! file kind. Needs root and a kernel with BPF; prints SKIP (and passes)
//! only when the kernel lacks a feature.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use redoctor_probes::{AttachOptions, FileKind, Probes, Profile, Role, Sampler, Signals};

const CHILD_ENV: &str = "REDOCTOR_FAKE_MYSQL8";

/// One stage's hand-off: a sequence number and the condition its waiters sleep on.
#[derive(Default)]
struct Stage {
    seq: Mutex<u64>,
    moved: Condvar,
}

impl Stage {
    fn advance_to(&self, v: u64) {
        let mut s = self.seq.lock().unwrap();
        if v > *s {
            *s = v;
            self.moved.notify_all();
        }
    }

    /// Waits until the stage is past `seen`; returns its value.
    fn wait_past(&self, seen: u64) -> u64 {
        let mut s = self.seq.lock().unwrap();
        while *s <= seen {
            s = self.moved.wait(s).unwrap();
        }
        *s
    }
}

#[derive(Default)]
struct Chain {
    requested: Stage,
    written: Stage,
    flushed: Stage,
    notified: Stage,
}

fn named(name: &str, f: impl FnOnce() + Send + 'static) {
    thread::Builder::new().name(name.into()).spawn(f).unwrap();
}

fn fake_mysqld(dir: &Path) {
    // The main thread's comm, as MySQL's.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"mysqld".as_ptr()) };
    std::fs::create_dir_all(dir.join("#innodb_redo")).unwrap();
    let redo = Arc::new(File::create(dir.join("#innodb_redo/#ib_redo6")).unwrap());
    let c = Arc::new(Chain::default());
    let next = Arc::new(Mutex::new(0u64));
    for _ in 0..3 {
        let (c, next) = (c.clone(), next.clone());
        named("connection", move || loop {
            let mine = {
                let mut n = next.lock().unwrap();
                *n += 1;
                *n
            };
            c.requested.advance_to(mine);
            let mut seen = 0;
            while seen < mine {
                seen = c.notified.wait_past(seen);
            }
        });
    }
    let (cw, r) = (c.clone(), redo.clone());
    named("ib_log_writer", move || {
        let (mut seen, mut off) = (0, 0);
        loop {
            seen = cw.requested.wait_past(seen);
            r.write_all_at(&[7u8; 512], off).unwrap();
            off = (off + 512) % (1 << 20);
            cw.written.advance_to(seen);
        }
    });
    let (cf, r) = (c.clone(), redo);
    named("ib_log_flush", move || {
        let mut seen = 0;
        loop {
            seen = cf.written.wait_past(seen);
            r.sync_data().unwrap();
            cf.flushed.advance_to(seen);
        }
    });
    let cn = c.clone();
    named("ib_log_fl_notif", move || {
        let mut seen = 0;
        loop {
            seen = cn.flushed.wait_past(seen);
            cn.notified.advance_to(seen);
        }
    });
    // Present in MySQL 8 but idle here (acks for innodb_flush_log_at_trx_commit=2,
    // checkpoints): they must still get their roles.
    named("ib_log_wr_notif", || loop {
        thread::park()
    });
    named("ib_log_checkpt", || loop {
        thread::park()
    });
    println!("READY");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    std::process::exit(0);
}

fn edge(s: &Signals, waker: Role, wakee: Role) -> u64 {
    s.wakeups
        .by_role
        .iter()
        .filter(|e| e.waker == waker && e.wakee == wakee)
        .map(|e| e.count)
        .sum()
}

fn check(s: &Signals) -> Result<(), String> {
    let threads = |r: Role| s.roles.get(&r).map_or(0, |x| x.threads);
    let want = [
        (Role::User, 3),
        (Role::LogWriter, 1),
        (Role::LogFlusher, 1),
        (Role::LogNotifier, 2),
    ];
    for (role, n) in want {
        if threads(role) != n {
            return Err(format!(
                "{role:?}: {} threads, expected {n}; threads: {:?}",
                threads(role),
                s.threads
                    .iter()
                    .map(|t| (&t.comm, t.role))
                    .collect::<Vec<_>>()
            ));
        }
    }
    // ib_log_checkpt takes checkpoints; the main thread is `other`.
    if threads(Role::Checkpointer) != 1 || threads(Role::Other) < 1 {
        return Err(format!(
            "checkpointer: {} threads (expected 1), other: {}",
            threads(Role::Checkpointer),
            threads(Role::Other)
        ));
    }
    for (a, b) in [
        (Role::User, Role::LogWriter),
        (Role::LogWriter, Role::LogFlusher),
        (Role::LogFlusher, Role::LogNotifier),
        (Role::LogNotifier, Role::User),
    ] {
        if edge(s, a, b) == 0 {
            return Err(format!(
                "no {a:?} -> {b:?} wakeups: {:?}",
                s.wakeups.by_role
            ));
        }
    }
    if s.wakeups.commit_path == 0 {
        return Err("no commit-path wakeups".into());
    }
    let redo = s.io.get(&FileKind::Redo).cloned().unwrap_or_default();
    if redo.fsync_calls == 0 || redo.write_calls == 0 {
        return Err(format!(
            "redo file not recognised: {:?}",
            s.io.keys().collect::<Vec<_>>()
        ));
    }
    Ok(())
}

fn main() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        fake_mysqld(Path::new(&dir));
        return;
    }
    if redoctor_testkit::skip_if_missing("mysql8_profile", redoctor_testkit::bpf_missing()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "READY");
    let pid = child.id();
    let result = (|| {
        let probes = Probes::attach(&AttachOptions::new(pid)).map_err(|e| e.to_string())?;
        let profile = Profile::builtin("mysql8").map_err(|e| e.to_string())?;
        let mut sampler = Sampler::new(probes, profile).map_err(|e| e.to_string())?;
        thread::sleep(Duration::from_millis(1500));
        let s = sampler.window().map_err(|e| e.to_string())?;
        check(&s)?;
        println!(
            "test mysql8_profile ... ok ({} commit-path wakeups, {} redo fsyncs)",
            s.wakeups.commit_path,
            s.io[&FileKind::Redo].fsync_calls
        );
        Ok::<(), String>(())
    })();
    let _ = child.kill();
    let _ = child.wait();
    if let Err(e) = result {
        panic!("mysql8 profile: {e}");
    }
}
