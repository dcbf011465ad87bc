//! Reads and writes submitted through an io_uring (a server's native
//! asynchronous IO: MariaDB's InnoDB on liburing writes and reads its pages
//! so, never through write or pread syscalls). Three tracepoints follow a
//! request from submission through the lookup of its file to completion
//! (`ring_*` in the BPF source); the counts join the file's totals beside
//! the syscalls'. The BPF programs read the tracepoints' records at fixed
//! offsets, so the loader checks each event's tracefs format first and
//! goes without (saying why) when the kernel lays a record out otherwise.

use std::path::Path;

use aya::programs::TracePoint;
use aya::Ebpf;

use crate::attach::{load_err, program, taken, Unavailable};
use crate::error::ProbeError;
use crate::links::Links;

/// What the run goes without when the ring hooks cannot be attached.
pub const WHAT: &str = "io_uring reads and writes";

/// A record's field as a program reads it: `(name, offset, size)`.
type Field = (&'static str, usize, usize);

/// `(program, event, the record's fields the program reads)`.
const RING_EVENTS: &[(&str, &str, &[Field])] = &[
    (
        "ring_submit",
        "io_uring_submit_req",
        &[("req", 16, 8), ("opcode", 32, 1)],
    ),
    (
        "ring_file_get",
        "io_uring_file_get",
        &[("req", 16, 8), ("fd", 32, 4)],
    ),
    (
        "ring_complete",
        "io_uring_complete",
        &[("req", 16, 8), ("res", 32, 4)],
    ),
];

/// `(offset, size)` of field `name` in a tracefs `format` file.
fn field(format: &str, name: &str) -> Option<(usize, usize)> {
    format.lines().find_map(|l| {
        let mut parts = l.trim().split(';').map(str::trim);
        let decl = parts.next()?.strip_prefix("field:")?;
        let field_name = decl.rsplit([' ', '*']).next()?;
        if field_name != name {
            return None;
        }
        let mut offset = None;
        let mut size = None;
        for p in parts {
            if let Some(v) = p.strip_prefix("offset:") {
                offset = v.parse().ok();
            } else if let Some(v) = p.strip_prefix("size:") {
                size = v.parse().ok();
            }
        }
        Some((offset?, size?))
    })
}

/// Why the ring events under `events` (a tracefs `events` directory) do not
/// fit the programs, or `None` when every one is there as they expect.
fn mismatch(events: &Path) -> Option<String> {
    for (_, event, fields) in RING_EVENTS {
        let path = events.join("io_uring").join(event).join("format");
        let format = match std::fs::read_to_string(&path) {
            Ok(f) => f,
            Err(e) => {
                return Some(format!(
                    "the kernel has no tracepoint io_uring/{event} ({}: {e}; it needs \
                     CONFIG_IO_URING and kernel 5.18 or later)",
                    path.display()
                ))
            }
        };
        for (name, offset, size) in *fields {
            match field(&format, name) {
                Some(got) if got == (*offset, *size) => {}
                got => {
                    return Some(format!(
                        "io_uring/{event} lays out its field `{name}` as {} where the probes \
                         read offset {offset}, size {size} (another kernel's record)",
                        got.map_or("absent".to_string(), |(o, s)| format!(
                            "offset {o}, size {s}"
                        ))
                    ))
                }
            }
        }
    }
    None
}

/// Attaches the three ring programs when the kernel's events fit them;
/// otherwise lists [`WHAT`] in `unavailable` with the reason. `tracefs`:
/// the mount points to look at, in order.
pub(crate) fn attach(
    bpf: &mut Ebpf,
    links: &mut Links,
    tracefs: &[&str],
    unavailable: &mut Vec<Unavailable>,
) -> Result<bool, ProbeError> {
    let events = tracefs
        .iter()
        .map(|m| Path::new(m).join("events"))
        .find(|e| e.is_dir());
    let why = match &events {
        None => Some(
            "tracefs is not mounted (mount it: `mount -t tracefs tracefs /sys/kernel/tracing`)"
                .to_string(),
        ),
        Some(e) => mismatch(e),
    };
    if let Some(why) = why {
        unavailable.push(Unavailable {
            what: WHAT.into(),
            why: format!(
                "{why}; a server's reads and writes through an io_uring (native asynchronous \
                 IO, as MariaDB's page writes) are not counted"
            ),
        });
        return Ok(false);
    }
    for (prog, event, _) in RING_EVENTS {
        let p: &mut TracePoint = program(bpf, prog)?;
        p.load().map_err(|e| load_err(prog, e))?;
        let id = p
            .attach("io_uring", event)
            .map_err(|e| ProbeError::Attach {
                program: prog.to_string(),
                target: format!("tracepoint io_uring/{event}"),
                source: Box::new(e),
            })?;
        links.push(p.take_link(id).map_err(|e| taken(prog, e))?);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three formats as kernel 6.18 prints them (abridged to the
    /// fields before and at the ones read).
    fn formats(opcode_offset: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let common = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
                      \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
                      \tfield:void * ctx;\toffset:8;\tsize:8;\tsigned:0;\n\
                      \tfield:void * req;\toffset:16;\tsize:8;\tsigned:0;\n\
                      \tfield:unsigned long long user_data;\toffset:24;\tsize:8;\tsigned:0;\n";
        for (event, last) in [
            (
                "io_uring_submit_req",
                format!("\tfield:u8 opcode;\toffset:{opcode_offset};\tsize:1;\tsigned:0;\n"),
            ),
            (
                "io_uring_file_get",
                "\tfield:int fd;\toffset:32;\tsize:4;\tsigned:1;\n".to_string(),
            ),
            (
                "io_uring_complete",
                "\tfield:int res;\toffset:32;\tsize:4;\tsigned:1;\n".to_string(),
            ),
        ] {
            let d = dir.path().join("events/io_uring").join(event);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("format"),
                format!("name: {event}\nID: 1\nformat:\n{common}{last}"),
            )
            .unwrap();
        }
        dir
    }

    #[test]
    fn a_format_as_the_programs_read_it_fits() {
        let fs = formats(32);
        assert_eq!(mismatch(&fs.path().join("events")), None);
        let f =
            std::fs::read_to_string(fs.path().join("events/io_uring/io_uring_submit_req/format"))
                .unwrap();
        assert_eq!(field(&f, "req"), Some((16, 8)));
        assert_eq!(field(&f, "opcode"), Some((32, 1)));
        assert_eq!(field(&f, "flags"), None);
    }

    #[test]
    fn another_layout_or_a_missing_event_is_named() {
        let fs = formats(36);
        let why = mismatch(&fs.path().join("events")).unwrap();
        assert!(
            why.contains("io_uring_submit_req")
                && why.contains("`opcode`")
                && why.contains("offset 36"),
            "{why}"
        );
        std::fs::remove_dir_all(fs.path().join("events/io_uring/io_uring_file_get")).unwrap();
        let fs2 = formats(32);
        std::fs::remove_dir_all(fs2.path().join("events/io_uring/io_uring_complete")).unwrap();
        let why = mismatch(&fs2.path().join("events")).unwrap();
        assert!(
            why.contains("no tracepoint io_uring/io_uring_complete"),
            "{why}"
        );
    }
}
