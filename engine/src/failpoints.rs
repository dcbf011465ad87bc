//! Failpoints on the engine's durable I/O, for fault-injection tests and
//! soaks, in the style of TiKV (its `fail` crate). With the `failpoints`
//! cargo feature each point costs a read lock and a hash lookup when it is
//! reached; without it, `fail_point!` expands to nothing.
//!
//! Names are `file::op::error`, for the kinds of file the engine makes
//! durable: `redo` (the log writer's block writes and the log flusher's
//! fdatasync of `redo.log`), `binlog` (the FLUSH stage's event writes, the
//! SYNC stage's fdatasync, the fdatasync before a rotation and the one a
//! checkpoint does) and `checkpoint` (the write and fdatasync of
//! `checkpoint.tmp`) have four points each; `page` (a data page written to
//! its place in a tablespace, after its doublewrite copy) has one,
//! `page::write::short`, for the torn page the doublewrite buffer exists
//! for. The four:
//!
//! - `::write::eio`, `::write::enospc`: the write fails with `EIO` /
//!   `ENOSPC`, nothing written;
//! - `::write::short`: a torn write. The write is cut at a 512-byte sector
//!   boundary of the file (a sector write is atomic, so that is where a
//!   short write or a crash cuts it): of the `n` sectors it touches the first
//!   `ceil(n/2)` are written, then it fails with `EIO` (action `return`) or
//!   the process kills itself with `SIGKILL` (action `return(kill)`), which
//!   is what a crash in the middle of the write leaves on disk. A write
//!   inside one sector cannot tear, so the point is not evaluated for it
//!   (counts such as `3*return` count only writes that can tear); a write
//!   of the bytes the file already holds is written whole and the action
//!   stays for the next one (`N*off->return` still counts it among the N);
//! - `::fsync::eio`: the fdatasync fails with `EIO` without syncing.
//!
//! The points sit where the engine knows which file it is writing — these
//! helpers are called by the log writer and flusher, the binlog stages and
//! the checkpoint writer — rather than in a [`Vfs`](crate::vfs::Vfs)
//! wrapper that would have to guess a file's role from its name; so the
//! header writes at recovery and the formatting of a new redo file are not
//! points, and the points work on any backend (real files or simulated).
//!
//! Switch them on with `fail::cfg(name, actions)` in a test (inside a
//! `fail::FailScenario`, which serializes tests), or in the
//! `redoctor-engine` binary with `FAILPOINTS='name=actions;...'` or
//! `--failpoint name=actions`. Actions are the `fail` crate's, e.g.
//! `return`, `1*return`, `200*off->return` (fire from the 201st call on),
//! `10%return`.

use std::io;

#[cfg(feature = "failpoints")]
use crate::vfs::torn_cut;
use crate::vfs::VfsFile;

/// Which of the engine's durable files an I/O is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Redo,
    Binlog,
    Checkpoint,
    /// A data page's write to its tablespace (only `page::write::short`).
    Page,
    /// A replica's relay log.
    Relay,
}

/// The points of one target (`None`: the target has no such point).
#[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
struct Points {
    write_eio: Option<&'static str>,
    write_enospc: Option<&'static str>,
    write_short: &'static str,
    fsync_eio: Option<&'static str>,
}

impl Target {
    #[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
    fn points(self) -> Points {
        match self {
            Target::Redo => Points {
                write_eio: Some("redo::write::eio"),
                write_enospc: Some("redo::write::enospc"),
                write_short: "redo::write::short",
                fsync_eio: Some("redo::fsync::eio"),
            },
            Target::Binlog => Points {
                write_eio: Some("binlog::write::eio"),
                write_enospc: Some("binlog::write::enospc"),
                write_short: "binlog::write::short",
                fsync_eio: Some("binlog::fsync::eio"),
            },
            Target::Checkpoint => Points {
                write_eio: Some("checkpoint::write::eio"),
                write_enospc: Some("checkpoint::write::enospc"),
                write_short: "checkpoint::write::short",
                fsync_eio: Some("checkpoint::fsync::eio"),
            },
            Target::Page => Points {
                write_eio: None,
                write_enospc: None,
                write_short: "page::write::short",
                fsync_eio: None,
            },
            Target::Relay => Points {
                write_eio: Some("relay::write::eio"),
                write_enospc: None,
                write_short: "relay::write::short",
                fsync_eio: Some("relay::fsync::eio"),
            },
        }
    }
}

/// One failpoint and what the engine does when it fires.
#[derive(Debug, Clone, Copy)]
pub struct Failpoint {
    pub name: &'static str,
    pub behaviour: &'static str,
}

const REDO_STOP: &str =
    "fail-stop: the committer and every later one get an error naming redo.log \
     and the errno; recovery keeps every acknowledged commit";
const BINLOG_STOP: &str = "fail-stop: the commit group and every later commit get an error naming \
     the binlog file and the errno; no checkpoint syncs the binlog again; recovery commits exactly \
     the prepared transactions whose events are durable";
const CHECKPOINT_STOP: &str =
    "fail-stop: the checkpoint fails with an error naming checkpoint.tmp \
     and the errno, and no later commit is acknowledged; the previous image stays valid and \
     recovery replays the redo log from it";

const RELAY_STOP: &str = "the receiver stops (Replica_IO_Running: No) with an error naming the \
     relay file and the errno; the applier applies what was queued; START REPLICA fetches the rest \
     again from the applied position, nothing lost or applied twice";

/// Every failpoint the engine has.
pub const FAILPOINTS: &[Failpoint] = &[
    Failpoint {
        name: "relay::write::eio",
        behaviour: RELAY_STOP,
    },
    Failpoint {
        name: "relay::write::short",
        behaviour: RELAY_STOP,
    },
    Failpoint {
        name: "relay::fsync::eio",
        behaviour: RELAY_STOP,
    },
    Failpoint {
        name: "redo::write::eio",
        behaviour: REDO_STOP,
    },
    Failpoint {
        name: "redo::write::enospc",
        behaviour: REDO_STOP,
    },
    Failpoint {
        name: "redo::write::short",
        behaviour: "torn write, then EIO (fail-stop) or, with return(kill), SIGKILL; recovery \
             stops at the last valid record and reports the bytes it dropped",
    },
    Failpoint {
        name: "redo::fsync::eio",
        behaviour: REDO_STOP,
    },
    Failpoint {
        name: "binlog::write::eio",
        behaviour: BINLOG_STOP,
    },
    Failpoint {
        name: "binlog::write::enospc",
        behaviour: BINLOG_STOP,
    },
    Failpoint {
        name: "binlog::write::short",
        behaviour: "torn event write, then EIO (fail-stop) or, with return(kill), SIGKILL; \
             recovery zero-fills the torn tail and reports the bytes it dropped",
    },
    Failpoint {
        name: "binlog::fsync::eio",
        behaviour: BINLOG_STOP,
    },
    Failpoint {
        name: "checkpoint::write::eio",
        behaviour: CHECKPOINT_STOP,
    },
    Failpoint {
        name: "checkpoint::write::enospc",
        behaviour: CHECKPOINT_STOP,
    },
    Failpoint {
        name: "checkpoint::write::short",
        behaviour: "torn checkpoint.tmp, then EIO (fail-stop) or, with return(kill), SIGKILL; \
             recovery ignores checkpoint.tmp",
    },
    Failpoint {
        name: "checkpoint::fsync::eio",
        behaviour: CHECKPOINT_STOP,
    },
    Failpoint {
        name: "page::write::short",
        behaviour: "torn data page write (tables on pages), then EIO or, with return(kill), \
             SIGKILL: the power cut the doublewrite buffer is for. On EIO the flush fails and \
             the engine stops (a user thread's flush panics, as InnoDB aborts on a failed page \
             write); at recovery the torn page is restored from its doublewrite copy \
             (innodb_doublewrite=ON), or named and refused (OFF, DETECT_ONLY)",
    },
];

/// Whether `name` is one of [`FAILPOINTS`].
pub fn is_known(name: &str) -> bool {
    FAILPOINTS.iter().any(|p| p.name == name)
}

/// Whether this build evaluates failpoints (the `failpoints` feature).
pub const fn enabled() -> bool {
    fail::has_failpoints()
}

/// `file.write_at(buf, offset)` for `target`, through its write failpoints.
#[cfg_attr(not(feature = "failpoints"), allow(unused_variables))]
pub(crate) fn write_at(
    target: Target,
    file: &dyn VfsFile,
    buf: &[u8],
    offset: u64,
) -> io::Result<()> {
    #[cfg(feature = "failpoints")]
    {
        let p = target.points();
        if let Some(name) = p.write_eio {
            fail::fail_point!(name, |_| Err(errno(libc::EIO)));
        }
        if let Some(name) = p.write_enospc {
            fail::fail_point!(name, |_| Err(errno(libc::ENOSPC)));
        }
        if let Some(cut) = torn_cut(offset, buf.len()) {
            fail::fail_point!(p.write_short, |arg| torn_write(
                p.write_short,
                file,
                buf,
                offset,
                cut,
                arg
            ));
        }
    }
    file.write_at(buf, offset)
}

/// `file.sync_data()` for `target`, through its fsync failpoint; in flight
/// for the page syncs beside it (`crate::sync_timing`).
#[cfg_attr(not(feature = "failpoints"), allow(unused_variables))]
pub(crate) fn sync_data(target: Target, file: &dyn VfsFile) -> io::Result<()> {
    if let Some(name) = target.points().fsync_eio {
        fail::fail_point!(name, |_| Err(errno(libc::EIO)));
    }
    crate::sync_timing::timed(crate::sync_timing::SyncKind::Other, || file.sync_data())
}

#[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
fn errno(e: i32) -> io::Error {
    io::Error::from_raw_os_error(e)
}

/// What a tearing failpoint with `return(kill)` prints on stderr just
/// before it tears the write and kills the process.
pub const TORN_KILL_MARK: &str = "failpoint: tearing a write, then SIGKILL";

/// Writes `buf` up to file offset `cut`, then fails with EIO, or with
/// `arg` "kill" sends this process SIGKILL.
#[cfg(feature = "failpoints")]
fn torn_write(
    name: &str,
    file: &dyn VfsFile,
    buf: &[u8],
    offset: u64,
    cut: u64,
    arg: Option<String>,
) -> io::Result<()> {
    let kill = match arg.as_deref() {
        None | Some("") => false,
        Some("kill") => true,
        Some(other) => {
            return Err(io::Error::other(format!(
                "failpoint {name}: unknown argument `{other}` (use `return` or `return(kill)`)"
            )))
        }
    };
    // A write of what the file already holds there cannot tear (both
    // halves are the same): written whole, and a later write is torn (the
    // action stays on). Recovery rewrites pages it replays this way.
    let mut old = vec![0u8; buf.len()];
    if file.read_at(&mut old, offset)? == buf.len() && old == buf {
        return file.write_at(buf, offset);
    }
    if kill {
        // Said before the tear, on stderr (unbuffered): whoever watches the
        // process can tell this death from a kill of its own that came at
        // the same moment.
        eprintln!("{TORN_KILL_MARK} ({name}, offset {offset})");
    }
    file.write_at(&buf[..(cut - offset) as usize], offset)?;
    if kill {
        // Nothing after this runs: no destructor, no flush, no further
        // write, as when the process is killed in the middle of the write.
        // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    Err(errno(libc::EIO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_its_points_listed() {
        let mut n = 0;
        for t in [
            Target::Redo,
            Target::Binlog,
            Target::Checkpoint,
            Target::Page,
            Target::Relay,
        ] {
            let p = t.points();
            for name in [
                p.write_eio,
                p.write_enospc,
                Some(p.write_short),
                p.fsync_eio,
            ]
            .into_iter()
            .flatten()
            {
                assert!(is_known(name), "{name} is not in FAILPOINTS");
                n += 1;
            }
        }
        assert_eq!(FAILPOINTS.len(), n);
        assert_eq!(n, 16);
    }
}
