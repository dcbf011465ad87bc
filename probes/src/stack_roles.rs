//! Roles from a thread's stack, for servers whose threads all keep the
//! process name (MariaDB: connection threads and InnoDB's background
//! threads are all `mariadbd`).
//!
//! A thread serving a client connection runs inside the server's command
//! function (MariaDB's `do_command`: it waits there for the client's next
//! packet, then executes it), so that function's return address sits on
//! its stack; a thread parked in the thread cache, or an idle pool worker,
//! does not. When a thread is blocked in a system call, `/proc/PID/task/TID/syscall`
//! gives its user stack pointer; the words from there to the end of the
//! stack's mapping are read through `/proc/PID/mem` and compared with the
//! functions' address ranges. No probe fires: the cost is one read per
//! thread per window, and nothing at all on the server's path.
//!
//! The scan is conservative: it cannot tell a live frame from a dead one,
//! so a thread that returned from the function keeps reading as inside it
//! until its stack is overwritten where that frame was (a connection
//! thread parked in the cache after its client left may read as serving
//! one for a while; it is idle, so its share of the events is small).
//!
//! Every live thread is scanned once per refresh, so the role follows the
//! thread (a pool worker that takes a request, a connection thread that
//! parks in the cache). A thread that runs, or waits for a CPU, has no
//! stack pointer to read (`/proc` reads any runnable thread as
//! "running"). One whose stack was found before is read from its
//! outermost frames, the top 64 KiB of that stack's mapping, where a
//! connection thread's command loop sits: a role decided once (say while
//! the thread was still in its connection's handshake, outside the loop)
//! must not stick while a busy thread on a saturated host is runnable at
//! every refresh. Those frames may be dead ones, so a thread that left
//! the function can read as inside it while it runs (never one that was
//! not). A thread never read yet is polled every 200 µs, up to 20 ms for
//! all of them, until it blocks; past that it keeps the role its name
//! gives. An exited thread is dropped at once.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use object::{Object, ObjectSymbol};

use crate::profile::{Role, StackRoleRule};
use crate::usdt::{mapped_address, FileOffsets};

/// Stack bytes read at most per thread (a connection loop sits a few
/// kilobytes above the stack pointer; deep InnoDB calls, tens).
const MAX_STACK_BYTES: u64 = 512 * 1024;

/// Bytes read from the top of a runnable thread's stack mapping (its
/// outermost frames: a connection thread's `do_command` sits a few
/// kilobytes below the top, under the thread's TLS).
const TOP_BYTES: u64 = 64 * 1024;

/// How often a refresh tries again a thread it could not scan (runnable,
/// its stack not found yet).
const POLL: std::time::Duration = std::time::Duration::from_micros(200);

/// How long a refresh keeps trying the threads it could not scan, all of
/// them together: up to about 100 tries each. A thread blocked a tenth of
/// the time is caught with near certainty. The bound is on the sampler's
/// time, whatever the thread count: at most ~20 ms of one CPU per window
/// (2% at 1-s windows), spent only while some thread stays runnable.
const POLL_BUDGET: std::time::Duration = std::time::Duration::from_millis(20);

/// Why a profile's stack roles cannot be used on a target.
#[derive(Debug, thiserror::Error)]
pub enum StackRolesError {
    #[error("cannot read the target's binary {path}: {why}")]
    Binary { path: String, why: String },
    #[error("{path} exports none of {symbols}")]
    NoSymbol { path: String, symbols: String },
    #[error("cannot find where {path} is mapped in pid {pid} (/proc/{pid}/maps)")]
    NotMapped { path: String, pid: u32 },
}

/// The stack-scanned roles of one process's threads.
#[derive(Debug)]
pub struct StackRoles {
    pid: u32,
    /// Runtime address ranges `[start, end)` of each match's functions,
    /// with its role, in priority order (the rule's `before` matches, then
    /// its own symbols).
    groups: Vec<(Vec<(u64, u64)>, Role)>,
    otherwise: Role,
    decided: HashMap<u32, Role>,
    /// Each thread's stack mapping `[start, end)`, from its last read
    /// while blocked: where to look while it runs.
    stacks: HashMap<u32, (u64, u64)>,
    /// The threads of the previous refresh: a thread that exited since
    /// keeps its role for one more window (its events are still counted),
    /// then is forgotten.
    last: HashSet<u32>,
}

/// What a scan of one thread's stack found.
#[derive(Debug, PartialEq, Eq)]
enum Scan {
    /// Read: the role found (`None`: none of the rule's functions), and
    /// the thread's stack mapping when it was read blocked (`None`: read
    /// while it ran, from its outermost frames).
    Read(Option<Role>, Option<(u64, u64)>),
    /// Runnable, or its stack unreadable: ask again later.
    Unknown,
    /// Exited (its `/proc` entry is gone): not worth asking again.
    Gone,
    /// Its stack lies in no mapping of the refresh's `/proc/PID/maps`
    /// (a thread started since): read the maps again.
    Unmapped,
}

impl StackRoles {
    /// Resolves `rule`'s symbols in the binary process `pid` runs.
    pub fn resolve(pid: u32, rule: &StackRoleRule) -> Result<StackRoles, StackRolesError> {
        let exe = Path::new("/proc").join(pid.to_string()).join("exe");
        let real = std::fs::read_link(&exe).unwrap_or_else(|_| exe.clone());
        let path = real.display().to_string();
        let bin_err = |why: String| StackRolesError::Binary {
            path: path.clone(),
            why,
        };
        let data = std::fs::read(&exe).map_err(|e| bin_err(e.to_string()))?;
        let file = object::File::parse(&*data).map_err(|e| bin_err(e.to_string()))?;
        // Link-time address -> file offset -> where the process maps it.
        let offsets = FileOffsets::of(&file);
        let ranges_of = |symbols: &[String]| -> (usize, Vec<(u64, u64)>) {
            let mut found = 0;
            let mut ranges = Vec::new();
            for sym in file.dynamic_symbols().chain(file.symbols()) {
                if sym.size() > 0 && symbols.iter().any(|s| sym.name() == Ok(s)) {
                    found += 1;
                    let mapped = offsets
                        .get(sym.address())
                        .and_then(|off| mapped_address(pid, &real, off));
                    if let Some(at) = mapped {
                        ranges.push((at, at + sym.size()));
                    }
                }
            }
            ranges.sort_unstable();
            ranges.dedup();
            (found, ranges)
        };
        let mut groups = Vec::new();
        for m in &rule.before {
            let (_, ranges) = ranges_of(&m.symbols);
            if !ranges.is_empty() {
                groups.push((ranges, m.role));
            }
        }
        let (found, ranges) = ranges_of(&rule.symbols);
        if found == 0 {
            return Err(StackRolesError::NoSymbol {
                path,
                symbols: rule.symbols.join(", "),
            });
        }
        if ranges.is_empty() {
            return Err(StackRolesError::NotMapped { path, pid });
        }
        groups.push((ranges, rule.role));
        Ok(StackRoles {
            pid,
            groups,
            otherwise: rule.otherwise,
            decided: HashMap::new(),
            stacks: HashMap::new(),
            last: HashSet::new(),
        })
    }

    /// The role a scan decided for `tid`, if one did.
    pub fn role(&self, tid: u32) -> Option<Role> {
        self.decided.get(&tid).copied()
    }

    /// Scans the stacks of `tids` (the process's live threads). A runnable
    /// thread is read from its outermost frames if its stack was found
    /// before, else tried again every 200 µs, up to 20 ms for all of
    /// them, then keeps its last role.
    pub fn refresh(&mut self, tids: impl IntoIterator<Item = u32>) {
        let Some(mut maps) = self.mappings() else {
            return;
        };
        let Ok(mem) = File::open(format!("/proc/{}/mem", self.pid)) else {
            return;
        };
        let mut todo: Vec<u32> = tids.into_iter().collect();
        let now: HashSet<u32> = todo.iter().copied().collect();
        let last = std::mem::replace(&mut self.last, now);
        self.decided
            .retain(|t, _| self.last.contains(t) || last.contains(t));
        self.stacks.retain(|t, _| self.last.contains(t));
        let began = std::time::Instant::now();
        let mut maps_again = true;
        loop {
            let mut unmapped = false;
            todo.retain(|&tid| match self.scan(tid, &maps, &mem) {
                Scan::Read(role, stack) => {
                    if let Some(stack) = stack {
                        self.stacks.insert(tid, stack);
                    }
                    self.decided.insert(tid, role.unwrap_or(self.otherwise));
                    false
                }
                Scan::Gone => false,
                Scan::Unknown => true,
                Scan::Unmapped => {
                    unmapped = true;
                    true
                }
            });
            if todo.is_empty() || began.elapsed() >= POLL_BUDGET {
                break;
            }
            if unmapped && maps_again {
                // Once per refresh: a stack mapped since the maps were read.
                maps_again = false;
                match self.mappings() {
                    Some(m) => maps = m,
                    None => break,
                }
                continue;
            }
            std::thread::sleep(POLL);
        }
    }

    /// The target's mappings `[start, end)`, in address order, from
    /// `/proc/PID/maps`: parsed once per refresh, not once per thread.
    fn mappings(&self) -> Option<Vec<(u64, u64)>> {
        let text = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)).ok()?;
        Some(parse_mappings(&text))
    }

    fn scan(&self, tid: u32, maps: &[(u64, u64)], mem: &File) -> Scan {
        let path = format!("/proc/{}/task/{tid}/syscall", self.pid);
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Scan::Gone,
            Err(_) => return Scan::Unknown,
        };
        let Some(sp) = stack_pointer(&text) else {
            // Runnable: its outermost frames, where a stack read before
            // placed it, are read as they are (a frame there is live, or
            // was: a thread that left `do_command` may read as inside it
            // while it runs, never one that was not).
            let Some(&(start, end)) = self.stacks.get(&tid) else {
                return Scan::Unknown;
            };
            let from = start.max(end.saturating_sub(TOP_BYTES));
            return match self.read_role(mem, from, end) {
                Some(role) => Scan::Read(role, None),
                None => Scan::Unknown,
            };
        };
        let Some((start, end)) = mapping(maps, sp) else {
            return Scan::Unmapped;
        };
        match self.read_role(mem, sp, end.min(sp + MAX_STACK_BYTES)) {
            Some(role) => Scan::Read(role, Some((start, end))),
            None => Scan::Unknown,
        }
    }

    /// The role `[from, to)` of the target's memory shows (`Some(None)`:
    /// none), or `None` when it cannot be read.
    fn read_role(&self, mem: &File, from: u64, to: u64) -> Option<Option<Role>> {
        let mut buf = vec![0u8; to.saturating_sub(from) as usize];
        let n = mem.read_at(&mut buf, from).ok()?;
        Some(self.role_on(&buf[..n]))
    }

    /// The role of the first group with a return address on `stack`.
    fn role_on(&self, stack: &[u8]) -> Option<Role> {
        let mut best: Option<usize> = None;
        for w in stack.chunks_exact(8) {
            let v = u64::from_le_bytes(w.try_into().unwrap());
            let hit = self.groups[..best.unwrap_or(self.groups.len())]
                .iter()
                .position(|(ranges, _)| ranges.iter().any(|(a, b)| v > *a && v <= *b));
            if let Some(g) = hit {
                best = Some(g);
                if g == 0 {
                    break;
                }
            }
        }
        best.map(|g| self.groups[g].1)
    }
}

/// The user stack pointer of a thread blocked in a system call, from
/// `/proc/PID/task/TID/syscall` ("NR ARG1 .. ARG6 SP PC"); `None` while it
/// runs ("running") or outside a call ("-1 SP PC": no arguments, but the
/// stack pointer is still there).
fn stack_pointer(text: &str) -> Option<u64> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    if fields.len() < 3 || fields[0] == "running" {
        return None;
    }
    let sp = fields[fields.len() - 2];
    u64::from_str_radix(sp.trim_start_matches("0x"), 16).ok()
}

/// The mappings `[start, end)` of a `/proc/PID/maps` text (the kernel
/// lists them in address order).
fn parse_mappings(maps: &str) -> Vec<(u64, u64)> {
    maps.lines()
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect()
}

/// The mapping of `maps` (in address order) that holds `addr`.
fn mapping(maps: &[(u64, u64)], addr: u64) -> Option<(u64, u64)> {
    let i = maps.partition_point(|&(_, end)| end <= addr);
    maps.get(i).copied().filter(|&(start, _)| start <= addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_pointer_is_the_second_last_field() {
        let blocked = "202 0x562e11f3b9cc 0x189 0x0 0x7f5258c2ed50 0x0 0xffffffff \
                       0x7f5243fffcd0 0x7f52594699f7\n";
        assert_eq!(stack_pointer(blocked), Some(0x7f5243fffcd0));
        assert_eq!(
            stack_pointer("-1 0x7ffd4a3c 0x7f52594699f7\n"),
            Some(0x7ffd4a3c)
        );
        assert_eq!(stack_pointer("running\n"), None);
    }

    #[test]
    fn the_first_match_in_order_wins_wherever_it_sits_on_the_stack() {
        let roles = StackRoles {
            pid: 0,
            groups: vec![
                (vec![(0x1000, 0x1100)], Role::Receiver),
                (vec![(0x2000, 0x2100), (0x3000, 0x3100)], Role::Applier),
                (vec![(0x9000, 0x9100)], Role::User),
            ],
            otherwise: Role::Other,
            decided: HashMap::new(),
            stacks: HashMap::new(),
            last: HashSet::new(),
        };
        let stack =
            |words: &[u64]| -> Vec<u8> { words.iter().flat_map(|w| w.to_le_bytes()).collect() };
        assert_eq!(
            roles.role_on(&stack(&[5, 0x9010, 0x3008])),
            Some(Role::Applier)
        );
        assert_eq!(
            roles.role_on(&stack(&[0x9010, 0x3008, 0x1001])),
            Some(Role::Receiver)
        );
        assert_eq!(roles.role_on(&stack(&[0x9100])), Some(Role::User));
        // A function's start is not a return address into it.
        assert_eq!(roles.role_on(&stack(&[0x9000, 7])), None);
    }

    #[test]
    fn mapping_finds_the_range() {
        let maps = "5600-5700 r-xp 00000000 08:01 1 /usr/sbin/x\n\
                    7f00-7f80 rw-p 00000000 00:00 0 \n";
        let maps = parse_mappings(maps);
        assert_eq!(mapping(&maps, 0x7f10), Some((0x7f00, 0x7f80)));
        assert_eq!(mapping(&maps, 0x7f80), None);
    }

    /// A thread parked inside a function of this binary is found by its
    /// stack; once it returns and waits elsewhere, it is not; a thread that
    /// never entered it is not.
    #[test]
    fn a_thread_inside_a_function_is_found_by_its_stack() {
        use std::sync::mpsc;
        use std::time::{Duration, Instant};
        let (leave, leave_rx) = mpsc::channel::<()>();
        let (end, end_rx) = mpsc::channel::<()>();
        let (ready, ready_rx) = mpsc::channel::<u32>();
        let ready2 = ready.clone();
        let worker = std::thread::spawn(move || {
            stack_role_marker(ready, leave_rx, &std::sync::atomic::AtomicBool::new(false));
            // The scan is conservative: a return address left in a dead
            // frame below this one still counts until something overwrites
            // it (whether the next call does depends on code layout), as it
            // would for a server thread that left its command loop.
            scrub_dead_frames();
            end_rx.recv().unwrap();
        });
        let tid = ready_rx.recv().unwrap();
        let (end2, end2_rx) = mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            ready2.send(gettid()).unwrap();
            end2_rx.recv().unwrap();
        });
        let tid_other = ready_rx.recv().unwrap();
        let rule = marker_rule();
        let mut roles = StackRoles::resolve(std::process::id(), &rule).unwrap();
        // Each blocks in recv (a futex wait) once it has sent its tid.
        let until = |roles: &mut StackRoles, tid: u32, want: Role| {
            let deadline = Instant::now() + Duration::from_secs(5);
            while roles.role(tid) != Some(want) && Instant::now() < deadline {
                roles.refresh([tid, tid_other]);
                std::thread::sleep(Duration::from_millis(10));
            }
            roles.role(tid)
        };
        assert_eq!(until(&mut roles, tid, Role::User), Some(Role::User));
        assert_eq!(roles.role(tid_other), Some(Role::Other));
        leave.send(()).unwrap();
        assert_eq!(until(&mut roles, tid, Role::Other), Some(Role::Other));
        end.send(()).unwrap();
        end2.send(()).unwrap();
        worker.join().unwrap();
        // An exited thread keeps its role one refresh, then is forgotten.
        roles.refresh([tid_other]);
        assert_eq!(roles.role(tid), Some(Role::Other));
        roles.refresh([tid_other]);
        assert_eq!(roles.role(tid), None);
        other.join().unwrap();

        let missing = StackRoleRule {
            symbols: vec!["no_such_function_anywhere".into()],
            ..rule
        };
        let e = StackRoles::resolve(std::process::id(), &missing).unwrap_err();
        assert!(e.to_string().contains("exports none of"), "{e}");
    }

    fn gettid() -> u32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as u32 }
    }

    /// Parks its thread in a frame of its own (not inlined, exported so
    /// the test binary's symbol table names it) until `rx` says go.
    /// It runs while `spin` holds first (inside the frame, never
    /// blocking), then blocks.
    #[no_mangle]
    #[inline(never)]
    extern "Rust" fn redoctor_stack_role_marker(
        ready: std::sync::mpsc::Sender<u32>,
        rx: std::sync::mpsc::Receiver<()>,
        spin: &std::sync::atomic::AtomicBool,
    ) {
        ready.send(gettid()).unwrap();
        spin_while(spin);
        rx.recv().unwrap();
        std::hint::black_box(&rx);
    }

    fn spin_while(flag: &std::sync::atomic::AtomicBool) {
        while flag.load(std::sync::atomic::Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    }

    fn spin_for(d: std::time::Duration) {
        let began = std::time::Instant::now();
        while began.elapsed() < d {
            std::hint::spin_loop();
        }
    }

    /// Overwrites the stack below the caller's frame.
    #[inline(never)]
    fn scrub_dead_frames() {
        let mut zeroes = [0u8; 64 * 1024];
        std::hint::black_box(&mut zeroes);
    }

    fn stack_role_marker(
        ready: std::sync::mpsc::Sender<u32>,
        rx: std::sync::mpsc::Receiver<()>,
        spin: &std::sync::atomic::AtomicBool,
    ) {
        redoctor_stack_role_marker(ready, rx, spin)
    }

    fn marker_rule() -> StackRoleRule {
        StackRoleRule {
            symbols: vec!["redoctor_stack_role_marker".into()],
            role: Role::User,
            otherwise: Role::Other,
            before: Vec::new(),
        }
    }

    /// A thread that runs for longer than a few quick tries when first
    /// seen is still scanned in that refresh, once it blocks.
    #[test]
    fn a_thread_never_scanned_is_scanned_once_it_blocks() {
        use std::sync::mpsc;
        let mut roles = StackRoles::resolve(std::process::id(), &marker_rule()).unwrap();
        let (ready, ready_rx) = mpsc::channel::<u32>();
        let (end, end_rx) = mpsc::channel::<()>();
        let busy = std::thread::spawn(move || {
            ready.send(gettid()).unwrap();
            spin_for(std::time::Duration::from_millis(3));
            end_rx.recv().unwrap();
        });
        let tid = ready_rx.recv().unwrap();
        roles.refresh([tid]);
        assert_eq!(roles.role(tid), Some(Role::Other));
        end.send(()).unwrap();
        busy.join().unwrap();
    }

    /// A role decided once (here: blocked outside the function, as a
    /// connection thread is in its handshake) does not stick while the
    /// thread runs and never blocks: its outermost frames are read where
    /// its stack was found before. A thread running outside the function
    /// still reads as outside it.
    #[test]
    fn a_running_thread_is_read_from_its_outermost_frames() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{mpsc, Arc};
        let mut roles = StackRoles::resolve(std::process::id(), &marker_rule()).unwrap();
        let (ready, ready_rx) = mpsc::channel::<u32>();
        let (go, go_rx) = mpsc::channel::<()>();
        let (leave, leave_rx) = mpsc::channel::<()>();
        let spin = Arc::new(AtomicBool::new(true));
        let (inner, flag) = (ready.clone(), spin.clone());
        let worker = std::thread::spawn(move || {
            ready.send(gettid()).unwrap();
            go_rx.recv().unwrap();
            stack_role_marker(inner, leave_rx, &flag);
        });
        let tid = ready_rx.recv().unwrap();
        let (ready2, ready2_rx) = mpsc::channel::<u32>();
        let (go2, go2_rx) = mpsc::channel::<()>();
        let flag2 = spin.clone();
        let outside = std::thread::spawn(move || {
            ready2.send(gettid()).unwrap();
            go2_rx.recv().unwrap();
            spin_while(&flag2);
        });
        let tid2 = ready2_rx.recv().unwrap();
        // Both blocked outside the function: read as the rule's otherwise.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while [tid, tid2]
            .iter()
            .any(|t| roles.role(*t) != Some(Role::Other))
            && std::time::Instant::now() < deadline
        {
            roles.refresh([tid, tid2]);
        }
        assert_eq!(roles.role(tid), Some(Role::Other));
        assert_eq!(roles.role(tid2), Some(Role::Other));
        // Both running now, one inside the function, until told to stop.
        go.send(()).unwrap();
        assert_eq!(ready_rx.recv().unwrap(), tid);
        go2.send(()).unwrap();
        roles.refresh([tid, tid2]);
        let (inside, beside) = (roles.role(tid), roles.role(tid2));
        spin.store(false, Ordering::Relaxed);
        leave.send(()).unwrap();
        worker.join().unwrap();
        outside.join().unwrap();
        assert_eq!(inside, Some(Role::User));
        assert_eq!(beside, Some(Role::Other));
    }
}
