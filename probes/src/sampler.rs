//! Turns two readings of the maps into one [`Signals`] window.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::bpf_stats::{CostMeter, DEFAULT_COST_EVERY};
use crate::error::ProbeError;
use crate::exit_watch::ExitWatch;
use crate::file_index::FileIndex;
use crate::histogram::{histogram, histogram_in};
use crate::loader::Probes;
use crate::lock_waits::lock_waits;
use crate::map_reads;
use crate::maps::{
    comm_family, point, FdIo, FileId, IoKey, MapsReading, NamedLocksTable, HIST_BUCKETS,
    READ_BUCKETS,
};
use crate::named_locks::{self, NamedLocks, TableError};
use crate::preflight;
use crate::procfs;
use crate::profile::{FileKind, Profile, Role, UsdtEvent};
use crate::prune;
use crate::signals::*;
use crate::stack_roles::StackRoles;

/// How often [`Sampler::wait_window_unless`] asks whether to give up.
pub const CANCEL_POLL: Duration = Duration::from_millis(100);

/// Reads the probes once per window and computes [`Signals`].
pub struct Sampler {
    probes: Probes,
    profile: Profile,
    prev: MapsReading,
    cost: CostMeter,
    /// Every thread name seen so far (threads that exited keep theirs).
    comms: HashMap<u32, String>,
    /// Path of each counted descriptor (and, with `follow_children`, file)
    /// as `/proc` last listed it.
    fd_paths: HashMap<IoKey, String>,
    /// Latest path of each file seen open in any process of the target
    /// (with `follow_children`): names a file a descriptor held between
    /// two listings of its own process.
    file_paths: HashMap<FileId, String>,
    /// Path behind each descriptor, per process, as last listed whatever
    /// the file: the last resort for a count whose file no listing named.
    fd_last_paths: HashMap<(u32, u32), String>,
    /// Files no listing named, found by inode ([`FileIndex`]).
    index: FileIndex,
    /// Counts pruned descriptors made after the last window's reading,
    /// with their kinds: added to the next window.
    late_io: Vec<(FileKind, prune::LateIo)>,
    /// Process of each thread seen (tid -> tgid).
    tid_pid: HashMap<u32, u32>,
    /// Title of each process of the target seen (exited ones keep theirs).
    titles: HashMap<u32, String>,
    affinity_cpus: u32,
    exited: bool,
    /// The engine's named locks, from the last table read.
    named: NamedLocks,
    /// The table before it: names objects that were dropped (a thread's
    /// wait condvar, say) after their waits were counted.
    named_prev: NamedLocks,
    /// Generation of the last table read (`None` before the first).
    named_read: Option<u64>,
    /// Why the newest table could not be read, if it could not.
    named_error: Option<String>,
    /// Ends a window early when the target exits.
    exit_watch: ExitWatch,
    /// Lock names the USDT probes could not read, by (process, address),
    /// as read from the process's memory.
    usdt_names: HashMap<(u32, u64), String>,
    /// Roles from the root process's thread stacks (the profile's
    /// `stack_roles`), or why they cannot be had.
    stack_roles: Option<Result<StackRoles, String>>,
    /// Roles from the server's own names for its threads (the profile's
    /// `server_threads`, [`Sampler::set_server_threads`]), or why they
    /// cannot be had.
    server_roles: Option<Result<HashMap<u32, Role>, String>>,
}

impl Sampler {
    /// Starts the first window now, once the target's threads have their
    /// roles and the background writers are marked (finding the roles
    /// may take a while: a stack-scanned profile reads the server's
    /// binary), so no write in it is counted by a role not yet known.
    pub fn new(probes: Probes, profile: Profile) -> Result<Sampler, ProbeError> {
        let prev = MapsReading::read(&probes)?;
        let pid = probes.pid();
        let cost = CostMeter::new(DEFAULT_COST_EVERY, &probes);
        let mut s = Sampler {
            affinity_cpus: 0,
            probes,
            profile,
            prev,
            cost,
            comms: HashMap::new(),
            fd_paths: HashMap::new(),
            file_paths: HashMap::new(),
            fd_last_paths: HashMap::new(),
            index: FileIndex::default(),
            late_io: Vec::new(),
            tid_pid: HashMap::new(),
            titles: HashMap::new(),
            exited: false,
            named: NamedLocks::default(),
            named_prev: NamedLocks::default(),
            named_read: None,
            named_error: None,
            exit_watch: ExitWatch::new(pid),
            usdt_names: HashMap::new(),
            stack_roles: None,
            server_roles: None,
        };
        s.stack_roles = s
            .profile
            .stack_roles
            .as_ref()
            .map(|rule| StackRoles::resolve(pid, rule).map_err(|e| e.to_string()));
        let (_, live) = s.refresh_proc();
        s.refresh_stack_roles(live.as_ref());
        s.mark_background_writers(live.as_ref());
        s.prev = MapsReading::read(&s.probes)?;
        Ok(s)
    }

    /// Drops the window under way and starts the next now, as
    /// [`Sampler::window`] would: for a caller whose observation begins
    /// later than the sampler did (after reading a server's counters to
    /// compare with it, say), so the first window covers the same span.
    pub fn restart(&mut self) -> Result<(), ProbeError> {
        self.window().map(drop)
    }

    /// The server's names for its threads (thread id, name), as read over
    /// its admin connection, or why it tells none: the profile's
    /// `server_threads` rules turn them into roles, which win over the
    /// stacks' and the names'. Without such rules nothing changes; without
    /// the names, every window says why under `unavailable`. The
    /// background writers are marked again at once, by the new roles.
    pub fn set_server_threads(&mut self, names: Result<Vec<(u32, String)>, String>) {
        if self.profile.server_threads.is_empty() {
            return;
        }
        self.server_roles = Some(names.map(|names| {
            names
                .into_iter()
                .filter_map(|(tid, n)| Some((tid, self.profile.server_thread_role(&n)?)))
                .collect()
        }));
        let (_, live) = self.refresh_proc();
        self.mark_background_writers(live.as_ref());
    }

    /// Measures the programs' own cost (`probe_cost`) in one window of
    /// every `every` (1 = all, 0 = never), starting with the current one;
    /// the default is [`DEFAULT_COST_EVERY`].
    pub fn set_cost_every(&mut self, every: u32) {
        self.cost = CostMeter::new(every, &self.probes);
    }

    pub fn probes(&self) -> &Probes {
        &self.probes
    }

    /// The engine's named locks as last read from its table.
    pub fn named_locks(&self) -> &NamedLocks {
        &self.named
    }

    /// Reads the engine's named-lock table when the engine published a new
    /// generation. The uprobe's record is read again after the table, and
    /// the table is used only if the record did not change meanwhile.
    fn refresh_named(&mut self, seen: NamedLocksTable) {
        if seen.calls == 0 || self.named_read == Some(seen.generation) {
            return;
        }
        let mut seen = seen;
        let mut result = Err(TableError::Changed);
        for _ in 0..3 {
            result = named_locks::read_table(self.probes.pid(), &seen);
            let again = match map_reads::read_named_locks(&self.probes) {
                Ok(t) => t,
                Err(e) => {
                    result = Err(TableError::Recheck(e.to_string()));
                    break;
                }
            };
            let same = (again.table, again.count, again.generation)
                == (seen.table, seen.count, seen.generation);
            if same {
                break;
            }
            result = Err(TableError::Changed);
            seen = again;
        }
        match result {
            Ok(ranges) => {
                let new = NamedLocks {
                    generation: seen.generation,
                    ranges,
                };
                self.named_prev = std::mem::replace(&mut self.named, new);
                self.named_read = Some(seen.generation);
                self.named_error = None;
            }
            // Keep the previous table: most ranges outlive a generation.
            Err(e) => self.named_error = Some(e.to_string()),
        }
    }

    /// The name of the lock holding futex word `addr`: from the newest
    /// table, else from the one before it.
    fn lock_name(&self, addr: u64) -> Option<String> {
        self.named
            .lookup(addr)
            .or_else(|| self.named_prev.lookup(addr))
            .map(|r| r.name.clone())
    }

    /// Whether a window already saw the target exit.
    pub fn target_exited(&self) -> bool {
        self.exited
    }

    /// Reads thread names, process titles and affinity from `/proc`.
    /// Returns whether the target still runs and, if it does, its live
    /// threads (`tid -> comm`; `None` when unreadable), read once per window.
    /// With `follow_children`, the live threads are those of every process
    /// of the target (`self.prev.processes`, the last reading's).
    fn refresh_proc(&mut self) -> (bool, Option<HashMap<u32, String>>) {
        let pid = self.probes.pid();
        if !preflight::pid_alive(pid) {
            return (false, None);
        }
        // The processes now (those forked in this window included).
        let mut pids: Vec<u32> = if self.probes.follows_children() {
            map_reads::read_processes(&self.probes)
                .map(|p| p.into_keys().collect())
                .unwrap_or_else(|_| self.prev.processes.keys().copied().collect())
        } else {
            vec![pid]
        };
        if !pids.contains(&pid) {
            pids.push(pid);
        }
        let mut live = HashMap::new();
        let mut root_ok = true;
        for &p in &pids {
            let threads = procfs::threads(p);
            match threads {
                Ok(t) => {
                    for (tid, comm) in t {
                        self.comms.insert(tid, comm.clone());
                        self.tid_pid.insert(tid, p);
                        live.insert(tid, comm);
                    }
                }
                // A child that exited meanwhile; the root must be readable.
                Err(_) if p != pid => continue,
                Err(_) => root_ok = false,
            }
            if self.probes.follows_children() {
                if let Some(t) = procfs::title(p) {
                    self.titles.insert(p, t);
                }
            }
        }
        if let Ok(n) = procfs::affinity_cpus(pid) {
            self.affinity_cpus = n;
        }
        if preflight::pid_alive(pid) {
            (true, root_ok.then_some(live))
        } else {
            (false, None)
        }
    }

    /// Names the descriptors of the target's processes in reading `cur`
    /// from `/proc`, after the reading: a window's counts go to the file
    /// each was made on (with `follow_children` the kernel keys them by
    /// file), named as it is at the window's end (so a file written as a
    /// temporary and renamed into place, as PostgreSQL makes its WAL
    /// segments, gets its final name). Returns the descriptors open now
    /// (with their files) and the processes whose descriptors were listed.
    fn list_fds(&mut self, cur: &MapsReading) -> (HashSet<IoKey>, HashSet<u32>) {
        let follow = self.probes.follows_children();
        let pids: Vec<u32> = if follow {
            cur.processes.keys().copied().collect()
        } else {
            vec![self.probes.pid()]
        };
        let mut paths: HashMap<IoKey, String> = HashMap::new();
        let mut files: HashMap<FileId, String> = HashMap::new();
        let mut last: HashMap<(u32, u32), String> = HashMap::new();
        let mut listed = HashSet::new();
        for pid in pids {
            let Ok(found) = procfs::fd_listing(pid, follow) else {
                continue;
            };
            listed.insert(pid);
            for (fd, path, file) in found {
                self.index.note(&path);
                if file != FileId::default() {
                    files.insert(file, path.clone());
                }
                last.insert((pid, fd), path.clone());
                paths.insert(IoKey { pid, fd, file }, path);
            }
        }
        let open: HashSet<IoKey> = paths.keys().copied().collect();
        // Counted descriptors no longer open (closed, or their process
        // exited) keep the name they were last listed with.
        for k in cur.io.keys() {
            if let Some(p) = self.fd_paths.get(k) {
                paths.entry(*k).or_insert_with(|| p.clone());
            }
            if k.file != FileId::default() {
                if let Some(p) = self.file_paths.get(&k.file) {
                    files.entry(k.file).or_insert_with(|| p.clone());
                }
            }
            if let Some(p) = self.fd_last_paths.get(&(k.pid, k.fd)) {
                last.entry((k.pid, k.fd)).or_insert_with(|| p.clone());
            }
        }
        // A file in no listing (opened, used and closed between two): found
        // by inode where the listed files live, before a descriptor's last
        // path (which may have been another file) is taken for it.
        let unknown: HashSet<FileId> = cur
            .io
            .keys()
            .filter(|k| {
                k.file != FileId::default()
                    && !paths.contains_key(*k)
                    && !files.contains_key(&k.file)
            })
            .map(|k| k.file)
            .collect();
        if !unknown.is_empty() {
            files.extend(self.index.resolve(&unknown));
        }
        self.index.forget(|f| files.contains_key(f));
        self.fd_paths = paths;
        self.file_paths = files;
        self.fd_last_paths = last;
        (open, listed)
    }

    /// The path counts of `key` go to: its descriptor's as listed with
    /// that file, else (a file opened and closed between two listings of
    /// its process) the file's as listed in another process, else (no
    /// listing named the file, or stat(2) names it unlike the kernel, as a
    /// stacked file system may) the descriptor's last path.
    fn io_path(&self, key: &IoKey) -> Option<&String> {
        self.fd_paths
            .get(key)
            .or_else(|| {
                (key.file != FileId::default())
                    .then(|| self.file_paths.get(&key.file))
                    .flatten()
            })
            .or_else(|| self.fd_last_paths.get(&(key.pid, key.fd)))
    }

    /// The process of thread `tid`: as `/proc` listed it, else (a thread
    /// that lived and died within a window) itself when following
    /// processes (their threads are mostly their main thread), else the target.
    fn pid_of(&self, tid: u32) -> u32 {
        self.tid_pid
            .get(&tid)
            .copied()
            .unwrap_or(if self.probes.follows_children() {
                tid
            } else {
                self.probes.pid()
            })
    }

    /// Whether process `pid` is (part of) the target in reading `cur`.
    fn in_target(&self, cur: &MapsReading, pid: u32) -> bool {
        cur.processes.contains_key(&pid)
            || self.prev.processes.contains_key(&pid)
            || pid == self.probes.pid()
    }

    /// Sleeps until `interval` has passed since the window started, or the
    /// target exits, then closes the window.
    pub fn wait_window(&mut self, interval: Duration) -> Result<Signals, ProbeError> {
        self.exit_watch.wait_until(self.prev.at + interval);
        self.window()
    }

    /// As [`Sampler::wait_window`], but gives up when `cancel` returns true
    /// (asked every [`CANCEL_POLL`]): then `None`, and the window stays
    /// open. A caller that must stop promptly (a daemon on SIGTERM) need
    /// not wait out a long window.
    pub fn wait_window_unless(
        &mut self,
        interval: Duration,
        cancel: impl Fn() -> bool,
    ) -> Result<Option<Signals>, ProbeError> {
        let deadline = self.prev.at + interval;
        loop {
            if cancel() {
                return Ok(None);
            }
            let step = deadline.min(Instant::now() + CANCEL_POLL);
            if self.exit_watch.wait_until(step) || Instant::now() >= deadline {
                return self.window().map(Some);
            }
        }
    }

    /// Closes the current window now and starts the next.
    pub fn window(&mut self) -> Result<Signals, ProbeError> {
        let (alive, live) = self.refresh_proc();
        self.refresh_stack_roles(live.as_ref());
        self.mark_background_writers(live.as_ref());
        let cur = MapsReading::read(&self.probes)?;
        let (open_fds, listed) = self.list_fds(&cur);
        if alive {
            self.refresh_named(cur.named_locks);
        }
        // Names recorded by the kernel at each switch-out cover threads
        // that lived and died within the window.
        for (tid, t) in &cur.threads {
            let name = t.comm();
            if !name.is_empty() {
                self.comms.insert(*tid, name);
            }
        }
        self.read_usdt_names(&cur);
        let cost = self.cost.close(&self.probes);
        let sig = self.compute(&cur, cost, !alive, live.as_ref());
        self.late_io.clear();
        let mut cur = cur;
        if let Some(live) = &live {
            let open = prune::OpenFds {
                keys: &open_fds,
                listed: &listed,
            };
            let late = prune::dead_threads(&mut self.probes, &self.prev, &mut cur, live, open)?;
            // Named now, while the listing still has them.
            self.late_io = late
                .into_iter()
                .map(|l| {
                    let kind = self
                        .io_path(&l.key)
                        .map_or(FileKind::Other, |p| self.profile.kind_of(p));
                    (kind, l)
                })
                .collect();
        }
        self.prev = cur;
        self.exited |= !alive;
        Ok(sig)
    }

    /// Scans the stacks of the root process's live threads (the profile's
    /// `stack_roles`).
    fn refresh_stack_roles(&mut self, live: Option<&HashMap<u32, String>>) {
        let (Some(Ok(roles)), Some(live)) = (&mut self.stack_roles, live) else {
            return;
        };
        let pid = self.probes.pid();
        let mine = live
            .keys()
            .copied()
            .filter(|t| self.tid_pid.get(t) == Some(&pid));
        roles.refresh(mine);
    }

    /// Marks, in the programs' per-thread entries, which live threads write
    /// in the background: every thread whose role is not one of the
    /// profile's `foreground_roles` (a page cleaner, a checkpointer, a task
    /// pool's thread, a thread no rule names); their data-file writes are
    /// then counted apart from the foreground's (a user thread's
    /// single-page flush, PostgreSQL's backend writes). Each window marks
    /// again, so a thread whose role changed is counted by its new one.
    fn mark_background_writers(&self, live: Option<&HashMap<u32, String>>) {
        if let Some(live) = live {
            let marks = live.keys().map(|&t| {
                let background = !self.profile.foreground_roles.contains(&self.role(t));
                (t, background)
            });
            map_reads::mark_background_writers(&self.probes, marks);
        }
    }

    /// Name last seen for thread `tid` (empty if none).
    fn comm(&self, tid: u32) -> String {
        self.comms.get(&tid).cloned().unwrap_or_default()
    }

    fn role(&self, tid: u32) -> Role {
        if let Some(Ok(roles)) = &self.server_roles {
            if let Some(r) = roles.get(&tid) {
                return *r;
            }
        }
        if let Some(Ok(roles)) = &self.stack_roles {
            if let Some(r) = roles.role(tid) {
                return r;
            }
        }
        let title = self.titles.get(&self.pid_of(tid)).map(String::as_str);
        match self.comms.get(&tid) {
            Some(c) => self.profile.role_in(title, c),
            None => title
                .and_then(|t| self.profile.process_role(t))
                .unwrap_or(Role::Other),
        }
    }

    /// `live`: the target's threads now (`None` when it exited or they
    /// could not be read).
    fn compute(
        &self,
        cur: &MapsReading,
        probe_cost: Option<Vec<ProgramCost>>,
        exited: bool,
        live: Option<&HashMap<u32, String>>,
    ) -> Signals {
        let pid = self.probes.pid();
        let window_ns = cur.at.duration_since(self.prev.at).as_nanos().max(1) as u64;
        let secs = window_ns as f64 / 1e9;
        let mut roles: BTreeMap<Role, RoleSignals> = BTreeMap::new();

        // Threads alive now, per role.
        for tid in live.into_iter().flat_map(HashMap::keys) {
            roles.entry(self.role(*tid)).or_default().threads += 1;
        }
        let (mut cpu, threads) = self.scheduler(cur, window_ns, &mut roles);
        let mut wakeups = self.wakeups(cur, &mut roles);
        let io = self.io(cur, secs);

        // Engine events: commits are needed per wakeup and per fsync.
        let redo_fsync_calls = io
            .get(&FileKind::Redo)
            .map_or(0, |f: &FileIo| f.fsync_calls);
        let engine = self.engine_events(cur, secs, redo_fsync_calls);
        take_out_idle_polling(&mut cpu, &mut roles, engine.idle_poll_ns, window_ns);
        wakeups.commit_path_per_commit = engine
            .commits
            .filter(|c| *c > 0)
            .map(|c| wakeups.commit_path as f64 / c as f64);

        // Futex waits by address and by named lock; the kernel keys them by
        // thread family (the name without digits), whose role any thread
        // of that family tells.
        let family_roles: HashMap<u32, Role> = self
            .comms
            .values()
            .map(|c| (comm_family(c), self.profile.role_of(c)))
            .collect();
        let (futex_waits, named_lock_waits) = lock_waits(
            &cur.futex,
            &self.prev.futex,
            |family| family_roles.get(&family).copied().unwrap_or(Role::Other),
            |addr| self.lock_name(addr),
            u64::from(self.probes.futex_sample()),
        );

        let named_lock_waits = if self.probes.has_usdt_lock_waits() {
            self.usdt_lock_waits(cur)
        } else {
            named_lock_waits
        };
        let processes = self.processes(cur, live);
        let mut unavailable = self.probes.unavailable().to_vec();
        if let Some(why) = &self.named_error {
            unavailable.push(crate::attach::Unavailable {
                what: "lock names (named_lock_waits, futex_waits[].lock)".into(),
                why: why.clone(),
            });
        }
        if let Some(Err(why)) = &self.stack_roles {
            unavailable.push(crate::attach::Unavailable {
                what: "roles by stack (stack_roles)".into(),
                why: format!("{why}: every thread has the role its name gives"),
            });
        }
        if let Some(Err(why)) = &self.server_roles {
            unavailable.push(crate::attach::Unavailable {
                what: "roles by the server's thread names (server_threads)".into(),
                why: format!(
                    "{why}; the threads only those names tell apart (e.g. InnoDB's page \
                     cleaner) keep the role their stack or name gives"
                ),
            });
        }
        if self.cost.refused() {
            unavailable.push(crate::attach::Unavailable {
                what: "probe_cost".into(),
                why: "the kernel refused BPF_ENABLE_STATS; set sysctl kernel.bpf_stats_enabled=1"
                    .into(),
            });
        }
        Signals {
            schema_version: SCHEMA_VERSION,
            pid,
            profile: self.profile.name.clone(),
            end_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            window_ns,
            target_exited: exited,
            cpu,
            roles,
            threads,
            wakeups,
            io,
            futex_waits,
            named_lock_waits,
            processes,
            engine,
            probe_cost: probe_cost.unwrap_or_default(),
            unavailable,
            events_lost: cur.events_lost.saturating_sub(self.prev.events_lost),
        }
    }

    /// On-CPU time, switches and run-queue waits: per thread, per role
    /// (into `roles`) and for the whole target.
    fn scheduler(
        &self,
        cur: &MapsReading,
        window_ns: u64,
        roles: &mut BTreeMap<Role, RoleSignals>,
    ) -> (Cpu, Vec<ThreadSignals>) {
        let prev = &self.prev;
        let mut cpu = Cpu {
            affinity_cpus: self.affinity_cpus,
            ..Cpu::default()
        };
        let mut threads = Vec::new();
        for (tid, now) in &cur.threads {
            let was = prev.threads.get(tid).copied().unwrap_or_default();
            let d = |a: u64, b: u64| a.saturating_sub(b);
            let t = ThreadSignals {
                tid: *tid,
                comm: self.comm(*tid),
                role: self.role(*tid),
                oncpu_ns: d(now.oncpu_ns, was.oncpu_ns),
                voluntary_switches: d(now.voluntary, was.voluntary),
                involuntary_switches: d(now.involuntary, was.involuntary),
                runq_wait_ns: d(now.runq_wait_ns, was.runq_wait_ns),
            };
            if t.oncpu_ns + t.voluntary_switches + t.involuntary_switches + t.runq_wait_ns == 0 {
                continue;
            }
            cpu.oncpu_ns += t.oncpu_ns;
            cpu.voluntary_switches += t.voluntary_switches;
            cpu.involuntary_switches += t.involuntary_switches;
            cpu.runq_wait_ns += t.runq_wait_ns;
            let r = roles.entry(t.role).or_default();
            r.oncpu_ns += t.oncpu_ns;
            r.voluntary_switches += t.voluntary_switches;
            r.involuntary_switches += t.involuntary_switches;
            r.runq_wait_ns += t.runq_wait_ns;
            // Futex totals per role are exact (counted per thread); the
            // per-address breakdown is sampled.
            r.futex_wait_ns += d(now.futex_wait_ns, was.futex_wait_ns);
            r.futex_waits += d(now.futex_waits, was.futex_waits);
            threads.push(t);
        }
        threads.sort_by_key(|t| std::cmp::Reverse(t.oncpu_ns));
        cpu.derive(window_ns);
        let mut hist = [0u64; HIST_BUCKETS];
        for (i, h) in hist.iter_mut().enumerate() {
            *h = cur.runq_hist[i].saturating_sub(prev.runq_hist[i]);
        }
        cpu.runq_latency = histogram_in(&hist, self.probes.runq_hist_unit_ns());
        (cpu, threads)
    }

    /// Who woke whom: by role pair, by thread pair, inside and across the
    /// target's boundary (sent and received counts go into `roles`).
    fn wakeups(&self, cur: &MapsReading, roles: &mut BTreeMap<Role, RoleSignals>) -> Wakeups {
        let mut wakeups = Wakeups::default();
        let mut by_role: BTreeMap<(Role, Role), u64> = BTreeMap::new();
        let mut by_thread = Vec::new();
        for (k, n) in &cur.wakeups {
            let n = n.saturating_sub(self.prev.wakeups.get(k).copied().unwrap_or(0));
            if n == 0 {
                continue;
            }
            let (wakee_pid, wakee_tid) = k.wakee_ids(&cur.tasks);
            // A task address names a thread of the target (whose process
            // /proc tells), else one outside it (0).
            let wakee_pid = if k.wakee_is_task() && wakee_tid != 0 {
                self.pid_of(wakee_tid)
            } else {
                wakee_pid
            };
            let waker_in = self.in_target(cur, k.waker_pid);
            let wakee_in = wakee_pid != 0 && self.in_target(cur, wakee_pid);
            let waker = if waker_in {
                self.role(k.waker_tid)
            } else {
                Role::External
            };
            let wakee = if wakee_in {
                self.role(wakee_tid)
            } else {
                Role::External
            };
            match (waker_in, wakee_in) {
                (true, true) => {
                    wakeups.internal += n;
                    if waker.on_commit_path() && wakee.on_commit_path() {
                        wakeups.commit_path += n;
                    }
                    by_thread.push(ThreadWakeEdge {
                        waker_tid: k.waker_tid,
                        waker_comm: self.comm(k.waker_tid),
                        wakee_tid,
                        wakee_comm: self.comm(wakee_tid),
                        count: n,
                    });
                }
                (false, true) => wakeups.from_outside += n,
                (true, false) => wakeups.to_outside += n,
                (false, false) => continue,
            }
            if waker_in {
                roles.entry(waker).or_default().wakeups_sent += n;
            }
            if wakee_in {
                roles.entry(wakee).or_default().wakeups_received += n;
            }
            *by_role.entry((waker, wakee)).or_default() += n;
        }
        let mut by_role: Vec<WakeEdge> = by_role
            .into_iter()
            .map(|((waker, wakee), count)| WakeEdge {
                waker,
                wakee,
                count,
            })
            .collect();
        by_role.sort_by_key(|e| std::cmp::Reverse(e.count));
        wakeups.by_role = by_role;
        by_thread.sort_by_key(|e| std::cmp::Reverse(e.count));
        by_thread.truncate(50);
        wakeups.by_thread = by_thread;
        wakeups
    }

    /// Reads the lock names the probes could not (see
    /// [`crate::maps::LockName::unread`]) from the waiting process, or else from the
    /// target's root (forked processes share its binary's addresses).
    fn read_usdt_names(&mut self, cur: &MapsReading) {
        for k in cur.usdt_lock_waits.keys() {
            let Some((tgid, addr)) = k.unread() else {
                continue;
            };
            if self.usdt_names.contains_key(&(tgid, addr)) {
                continue;
            }
            let name = [tgid, self.probes.pid()]
                .iter()
                .find_map(|&p| crate::usdt::read_string(p, addr, 32))
                .unwrap_or_else(|| format!("unreadable name at {addr:#x}"));
            self.usdt_names.insert((tgid, addr), name);
        }
    }

    /// Waits for the locks the server names through USDT (PostgreSQL's
    /// LWLock tranches), by name, largest total first (top 30).
    fn usdt_lock_waits(&self, cur: &MapsReading) -> Vec<NamedLockWait> {
        let mut by_name: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (k, now) in &cur.usdt_lock_waits {
            let was = self
                .prev
                .usdt_lock_waits
                .get(k)
                .copied()
                .unwrap_or_default();
            let waits = now.waits.saturating_sub(was.waits);
            if waits == 0 {
                continue;
            }
            let name = match k.unread() {
                Some(at) => self.usdt_names.get(&at).cloned().unwrap_or_default(),
                None => k.as_string(),
            };
            let e = by_name.entry(name).or_default();
            e.0 += waits;
            e.1 += now.wait_ns.saturating_sub(was.wait_ns);
        }
        let mut out: Vec<NamedLockWait> = by_name
            .into_iter()
            .map(|(lock, (waits, wait_ns))| NamedLockWait {
                lock,
                wait_ns,
                waits,
                addresses: 0,
                wait_ns_by_role: BTreeMap::new(),
            })
            .collect();
        out.sort_by_key(|w| std::cmp::Reverse(w.wait_ns));
        out.truncate(30);
        out
    }

    /// The target's processes at the window's end, with title and role
    /// (empty for a single-process target).
    fn processes(
        &self,
        cur: &MapsReading,
        live: Option<&HashMap<u32, String>>,
    ) -> Vec<ProcessSignals> {
        if !self.probes.follows_children() {
            return Vec::new();
        }
        let mut out: Vec<ProcessSignals> = cur
            .processes
            .iter()
            .filter(|(pid, _)| live.is_none_or(|l| l.contains_key(pid)))
            .map(|(&pid, &parent)| {
                let title = self.titles.get(&pid).cloned().unwrap_or_default();
                ProcessSignals {
                    pid,
                    parent,
                    role: self.role(pid),
                    title,
                }
            })
            .collect();
        out.sort_by_key(|p| p.pid);
        out
    }

    /// Writes, fsyncs and positional reads per file kind (kinds with no
    /// call are left out).
    fn io(&self, cur: &MapsReading, secs: f64) -> BTreeMap<FileKind, FileIo> {
        let mut io: BTreeMap<FileKind, IoSums> = BTreeMap::new();
        for (key, now) in &cur.io {
            let was = self.prev.io.get(key).copied().unwrap_or_default();
            let kind = self
                .io_path(key)
                .map_or(FileKind::Other, |p| self.profile.kind_of(p));
            add_io(&mut io, kind, now, &was);
        }
        // Counts of descriptors pruned last window made after its reading.
        for (kind, l) in &self.late_io {
            add_io(&mut io, *kind, &l.now, &l.was);
        }
        io.into_iter()
            .filter(|(_, (f, _, _))| f.write_calls + f.fsync_calls + f.read_calls > 0)
            .map(|(k, (mut f, fsyncs, reads))| {
                f.write_bytes_per_s = f.write_bytes as f64 / secs;
                f.reads_per_s = f.read_calls as f64 / secs;
                f.fsync_latency = histogram(&fsyncs);
                f.read_latency = histogram(&reads);
                (k, f)
            })
            .collect()
    }

    fn engine_events(
        &self,
        cur: &MapsReading,
        secs: f64,
        redo_fsyncs_by_syscall: u64,
    ) -> EngineEvents {
        let prev = &self.prev;
        let d = |i: usize| {
            (
                cur.points[i].hits.saturating_sub(prev.points[i].hits),
                cur.points[i].sum.saturating_sub(prev.points[i].sum),
            )
        };
        // A cumulative value carried by a tick point: its growth in the
        // window (from the first value ever seen when the last reading had
        // no tick yet), None before the first tick.
        let grown = |slot: usize| {
            let (now, was) = (cur.points[slot], prev.points[slot]);
            (now.hits > 0).then(|| {
                let base = if was.hits > 0 { was.last } else { now.sum };
                now.last.saturating_sub(base)
            })
        };
        let usdt = |event: UsdtEvent, slot: usize| {
            self.probes
                .usdt_counts(event)
                .then(|| cur.points[slot].hits.saturating_sub(prev.points[slot].hits))
        };
        let usdt_commits = usdt(UsdtEvent::Commit, point::TXN_COMMIT);
        // A profile's commit point counts commits as hits of its slot
        // (that slot is not the checkpoint's then).
        let commit_point = self.probes.commit_point().is_some();
        let commits = if usdt_commits.is_some() {
            usdt_commits
        } else if commit_point {
            Some(d(crate::loader::COMMIT_POINT_PROGRAM.1).0)
        } else {
            grown(point::COUNTERS_TICK)
        };
        let batch = self
            .probes
            .attached_probe_points()
            .iter()
            .any(|p| p == "redoctor_log_flush");
        let on = |v: u64| batch.then_some(v);
        let (redo_writes, redo_bytes) = d(point::LOG_WRITE);
        let (redo_fsyncs, redo_fsync_ns) = d(point::LOG_FLUSH);
        let (_, woken) = d(point::FLUSH_NOTIFIED);
        let (mode_switches, _) = d(point::MODE_SWITCH);
        let checkpoints = if commit_point {
            0
        } else {
            d(point::CHECKPOINT).0
        };
        let (fail_stops, _) = d(point::FAIL_STOP);
        let fsyncs = if batch {
            redo_fsyncs
        } else {
            redo_fsyncs_by_syscall
        };
        let mut attached = self.probes.attached_probe_points().to_vec();
        attached.extend(self.probes.attached_usdt().iter().map(|(p, _)| p.clone()));
        attached.extend(self.probes.commit_point().map(str::to_string));
        EngineEvents {
            attached,
            aborts: usdt(UsdtEvent::Abort, point::TXN_ABORT),
            txn_ns: self
                .probes
                .usdt_counts(UsdtEvent::TxnStart)
                .then(|| d(point::TXN_COMMIT).1 + d(point::TXN_ABORT).1),
            wal_records: usdt(UsdtEvent::WalInsert, point::WAL_INSERT),
            wal_switches: usdt(UsdtEvent::WalSwitch, point::WAL_SWITCH),
            wal_buffer_full_writes: usdt(UsdtEvent::WalBufferFull, point::WAL_BUFFER_FULL),
            commits,
            commits_per_s: commits.map(|c| c as f64 / secs),
            redo_writes: on(redo_writes),
            redo_writes_by_user: on(d(point::LOG_WRITE_USER).0),
            redo_bytes: on(redo_bytes),
            redo_bytes_per_s: batch.then_some(redo_bytes as f64 / secs),
            redo_fsyncs: on(redo_fsyncs),
            redo_fsyncs_by_user: on(d(point::LOG_FLUSH_USER).0),
            redo_fsync_ns: on(redo_fsync_ns),
            commits_per_fsync: commits
                .filter(|_| fsyncs > 0)
                .map(|c| c as f64 / fsyncs as f64),
            flush_waiters_woken: on(woken),
            mode_switches,
            mode_after_switch: (mode_switches > 0).then(|| {
                if cur.points[point::MODE_SWITCH].last == 1 {
                    "on"
                } else {
                    "off"
                }
                .to_string()
            }),
            checkpoints,
            fail_stop_errno: (fail_stops > 0).then_some(cur.points[point::FAIL_STOP].last as i32),
            idle_poll_ns: grown(point::IDLE_POLL),
            page_syncs: grown(point::DBLWR_SYNCS).map(|doublewrite_syncs| PageSyncs {
                doublewrite_syncs,
                doublewrite_ns: grown(point::DBLWR_SYNC_NS).unwrap_or(0),
                data_syncs: grown(point::DATA_SYNCS).unwrap_or(0),
                data_ns: grown(point::DATA_SYNC_NS).unwrap_or(0),
                overlapped_syncs: grown(point::OVERLAPPED_SYNCS).unwrap_or(0),
                overlapped_ns: grown(point::OVERLAPPED_SYNC_NS).unwrap_or(0),
            }),
        }
    }
}

/// Takes the time the target's threads polled for work (`idle_poll_ns`,
/// from the engine's tick) out of the user role's on-CPU time and the
/// target's, at most what the role ran: a polling connection thread is on a
/// CPU, but the CPUs are idle for the work. A value no process could have
/// polled in the window (more than every allowed CPU for all of it: an
/// engine whose tick carries no such counter) is ignored.
fn take_out_idle_polling(
    cpu: &mut Cpu,
    roles: &mut BTreeMap<Role, RoleSignals>,
    idle_poll_ns: Option<u64>,
    window_ns: u64,
) {
    let Some(polled) = idle_poll_ns else { return };
    let most = window_ns.saturating_mul(u64::from(cpu.affinity_cpus.max(1)));
    if polled == 0 || polled > most {
        return;
    }
    let Some(user) = roles.get_mut(&Role::User) else {
        return;
    };
    let taken = polled.min(user.oncpu_ns).min(cpu.oncpu_ns);
    user.oncpu_ns -= taken;
    cpu.oncpu_ns -= taken;
    cpu.idle_poll_ns = taken;
    cpu.derive(window_ns);
}

/// The totals of one file kind, with its fsync and read latency buckets.
type IoSums = (FileIo, [u64; HIST_BUCKETS], [u64; HIST_BUCKETS]);

/// Adds what descriptor counts `was` -> `now` wrote, synced and read to
/// `kind`.
fn add_io(io: &mut BTreeMap<FileKind, IoSums>, kind: FileKind, now: &FdIo, was: &FdIo) {
    let (f, h, r) = io
        .entry(kind)
        .or_insert_with(|| (FileIo::default(), [0; HIST_BUCKETS], [0; HIST_BUCKETS]));
    f.write_calls += now.write_calls().saturating_sub(was.write_calls());
    f.write_bytes += now.write_bytes().saturating_sub(was.write_bytes());
    f.fsync_calls += now.fsync_calls.saturating_sub(was.fsync_calls);
    f.fsync_ns += now.fsync_ns.saturating_sub(was.fsync_ns);
    f.fdatasync_calls += now.fdatasync_calls.saturating_sub(was.fdatasync_calls);
    for (i, slot) in h.iter_mut().enumerate() {
        *slot += now.fsync_ns_log2[i].saturating_sub(was.fsync_ns_log2[i]);
    }
    f.background_write_calls += now
        .background_write_calls
        .saturating_sub(was.background_write_calls);
    f.background_write_bytes += now
        .background_write_bytes
        .saturating_sub(was.background_write_bytes);
    f.read_calls += now.read_calls.saturating_sub(was.read_calls);
    f.read_bytes += now.read_bytes.saturating_sub(was.read_bytes);
    f.read_ns += now.read_ns.saturating_sub(was.read_ns);
    // The read buckets are the first READ_BUCKETS of the histogram's.
    for (i, slot) in r.iter_mut().take(READ_BUCKETS).enumerate() {
        *slot += now.read_ns_log2[i].saturating_sub(was.read_ns_log2[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(user_ns: u64, other_ns: u64, cpus: u32) -> (Cpu, BTreeMap<Role, RoleSignals>) {
        let mut roles = BTreeMap::new();
        roles.insert(
            Role::User,
            RoleSignals {
                oncpu_ns: user_ns,
                ..RoleSignals::default()
            },
        );
        roles.insert(
            Role::LogWriter,
            RoleSignals {
                oncpu_ns: other_ns,
                ..RoleSignals::default()
            },
        );
        let mut cpu = Cpu {
            oncpu_ns: user_ns + other_ns,
            runq_wait_ns: 100_000_000,
            affinity_cpus: cpus,
            ..Cpu::default()
        };
        cpu.derive(1_000_000_000);
        (cpu, roles)
    }

    #[test]
    fn idle_polling_leaves_the_user_role_and_the_saturation() {
        let (mut cpu, mut roles) = observed(900_000_000, 300_000_000, 2);
        assert!((cpu.saturation - 0.65).abs() < 1e-9);
        take_out_idle_polling(&mut cpu, &mut roles, Some(600_000_000), 1_000_000_000);
        assert_eq!(cpu.idle_poll_ns, 600_000_000);
        assert_eq!(roles[&Role::User].oncpu_ns, 300_000_000);
        assert_eq!(roles[&Role::LogWriter].oncpu_ns, 300_000_000);
        assert_eq!(cpu.oncpu_ns, 600_000_000);
        assert!((cpu.cpus_busy - 0.6).abs() < 1e-9);
        assert!((cpu.avg_runnable_threads - 0.7).abs() < 1e-9);
        assert!((cpu.saturation - 0.35).abs() < 1e-9);
    }

    #[test]
    fn idle_polling_is_at_most_what_the_user_role_ran() {
        // The tick is up to 100 ms late: a window can be handed more
        // polling than its user threads ran.
        let (mut cpu, mut roles) = observed(200_000_000, 300_000_000, 2);
        take_out_idle_polling(&mut cpu, &mut roles, Some(250_000_000), 1_000_000_000);
        assert_eq!(cpu.idle_poll_ns, 200_000_000);
        assert_eq!(roles[&Role::User].oncpu_ns, 0);
        assert_eq!(cpu.oncpu_ns, 300_000_000);
    }

    #[test]
    fn an_impossible_or_absent_poll_time_changes_nothing() {
        for polled in [None, Some(0), Some(2_000_000_001)] {
            let (mut cpu, mut roles) = observed(900_000_000, 300_000_000, 2);
            let before = (cpu.clone(), roles.clone());
            take_out_idle_polling(&mut cpu, &mut roles, polled, 1_000_000_000);
            assert_eq!((cpu, roles), before, "{polled:?}");
        }
        // No user role: nothing to take it from.
        let (mut cpu, mut roles) = observed(900_000_000, 300_000_000, 2);
        roles.remove(&Role::User);
        let before = cpu.clone();
        take_out_idle_polling(&mut cpu, &mut roles, Some(100), 1_000_000_000);
        assert_eq!(cpu, before);
    }
}
