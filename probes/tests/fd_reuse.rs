//! A descriptor number that names another file at a window's end: the
//! window's fdatasyncs stay with the file they were made on. PostgreSQL
//! does this at every WAL segment switch: it closes the full segment,
//! zero-fills the next one as `pg_wal/xlogtemp.PID` on the same descriptor
//! number, renames it into place and reopens it there. A window closing
//! while the temporary is open put all its WAL fdatasyncs (~500 ms worth of
//! one backend's) under `other`.
//!
//! The child is this test binary, re-run with `FD_REUSE_DIR` set
//! (`child_makes_wal_like_files`), driven step by step over its stdin so
//! each window boundary falls where the test wants it.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{ChildStdout, Command, Stdio};

use redoctor_testkit::KillOnDrop;

use redoctor_probes::{AttachOptions, FileKind, Probes, Profile, Sampler, Signals};

const DIR_ENV: &str = "FD_REUSE_DIR";

fn fdatasyncs(f: &File, n: u32) {
    for _ in 0..n {
        f.sync_data().unwrap();
    }
}

/// One WAL page of zeros at the file's start.
fn fill(f: &File) {
    use std::os::unix::fs::FileExt;
    f.write_all_at(&[0u8; 8192], 0).unwrap();
}

fn step(lines: &mut impl Iterator<Item = std::io::Result<String>>, expect: &str) {
    assert_eq!(lines.next().unwrap().unwrap(), expect);
}

/// The child: runs only when the parent test re-executes the binary.
#[test]
fn child_makes_wal_like_files() {
    let Some(dir) = std::env::var_os(DIR_ENV) else {
        return;
    };
    let wal = Path::new(&dir).join("pg_wal");
    std::fs::create_dir_all(&wal).unwrap();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout();
    let mut say = |s: String| {
        writeln!(out, "{s}").unwrap();
        out.flush().unwrap();
    };
    let seg1 = wal.join("000000010000000000000001");
    let seg2 = wal.join("000000010000000000000002");
    let open = |p: &Path| {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(p)
            .unwrap()
    };
    say("ready".into());
    step(&mut lines, "go1");
    let f = open(&seg1);
    let fd = f.as_raw_fd();
    fill(&f);
    fdatasyncs(&f, 50);
    say(format!("seg1 {fd}"));
    step(&mut lines, "go2");
    fdatasyncs(&f, 30);
    drop(f);
    // The next segment is made as a temporary on the same descriptor number.
    let tmp = wal.join(format!("xlogtemp.{}", std::process::id()));
    let t = open(&tmp);
    assert_eq!(t.as_raw_fd(), fd, "the descriptor number is reused");
    fill(&t);
    t.sync_all().unwrap();
    say(format!("temp {}", t.as_raw_fd()));
    step(&mut lines, "go3");
    // Renamed into place (PostgreSQL then reopens it, on the same number).
    std::fs::rename(&tmp, &seg2).unwrap();
    fdatasyncs(&t, 20);
    say("seg2".into());
    step(&mut lines, "end");
}

struct Driven {
    child: KillOnDrop,
    out: std::io::Lines<BufReader<ChildStdout>>,
}

impl Driven {
    fn send(&mut self, line: &str) -> String {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        self.out.next().unwrap().unwrap()
    }
}

fn syncs(w: &Signals, kind: FileKind) -> u64 {
    w.io.get(&kind).map_or(0, |f| f.fdatasync_calls)
}

#[test]
fn syncs_stay_with_their_file_when_the_descriptor_is_reused() {
    if std::env::var_os(DIR_ENV).is_some() {
        return; // the child's own run
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_makes_wal_like_files",
            "--nocapture",
            "--quiet",
        ])
        .env(DIR_ENV, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut c = Driven {
        child: KillOnDrop(child),
        out,
    };
    // The harness may print before the test runs: skip to the child's line.
    loop {
        let l = c.out.next().expect("the child's output").unwrap();
        if l == "ready" {
            break;
        }
    }
    let profile = Profile::builtin("postgresql").unwrap();
    let opts = AttachOptions {
        uprobes: false,
        follow_children: true,
        ..AttachOptions::new(c.child.id())
    };
    let mut s = Sampler::new(Probes::attach(&opts).expect("attach"), profile).unwrap();

    // Window 1: the segment is open when /proc is listed.
    let fd = c.send("go1");
    let w1 = s.window().unwrap();
    assert_eq!(syncs(&w1, FileKind::Redo), 50, "{fd}: {:?}", w1.io);
    // Window 2: 30 more on the segment, then its descriptor number names
    // the temporary when the window closes.
    let temp = c.send("go2");
    let w2 = s.window().unwrap();
    assert_eq!(
        (syncs(&w2, FileKind::Redo), syncs(&w2, FileKind::Other)),
        (30, 0),
        "{temp}: {:?}",
        w2.io
    );
    // Window 3: the temporary, renamed into place, is the next segment.
    assert_eq!(c.send("go3"), "seg2");
    let w3 = s.window().unwrap();
    assert_eq!(
        (syncs(&w3, FileKind::Redo), syncs(&w3, FileKind::Other)),
        (20, 0),
        "{:?}",
        w3.io
    );
    let stdin = c.child.stdin.as_mut().unwrap();
    writeln!(stdin, "end").unwrap();
    assert!(c.child.wait().unwrap().success());
}
