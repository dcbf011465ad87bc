//! Signals windows built field by field, as the probes would report them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use redoctor_probes_common::signals::*;
use redoctor_probes_common::{FileKind, Role};

/// What a test window should show.
#[derive(Clone, Copy)]
pub struct Shape {
    pub secs: f64,
    pub cores: u32,
    pub commits: u64,
    pub cpus_busy: f64,
    pub runnable: f64,
    pub users: u32,
    pub log_threads: u32,
    pub commit_path_wakeups: u64,
    pub redo_fsyncs: u64,
    pub fsync_bucket_hi_ns: u64,
    pub binlog_bytes: u64,
    pub user_futex_share: f64,
    /// User futex waits per commit (outside the redo log's locks: contention).
    pub lock_waits_per_commit: u64,
    /// Share of the users' time waiting on the doublewrite buffer's named
    /// locks (`dblwr.slot_free`).
    pub dblwr_wait_share: f64,
    /// Fsyncs of the doublewrite buffer's files per window (tables on
    /// pages).
    pub dblwr_fsyncs: u64,
    /// Page syncs as the engine timed them (`redoctor_page_syncs`): the
    /// device's latency per sync, and how much longer a sync that began
    /// beside another took than one that began alone (1: the device serves
    /// them side by side); `None`: no page syncs seen.
    pub page_sync: Option<(std::time::Duration, f64)>,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            secs: 1.0,
            cores: 2,
            commits: 5_000,
            cpus_busy: 1.0,
            runnable: 1.0,
            users: 16,
            log_threads: 4,
            commit_path_wakeups: 20_000,
            redo_fsyncs: 1_000,
            fsync_bucket_hi_ns: 131_072,
            binlog_bytes: 0,
            user_futex_share: 0.1,
            lock_waits_per_commit: 1,
            dblwr_wait_share: 0.0,
            dblwr_fsyncs: 0,
            page_sync: None,
        }
    }
}

fn dblwr_waits(s: &Shape, window_ns: u64) -> Vec<NamedLockWait> {
    if s.dblwr_wait_share <= 0.0 {
        return vec![];
    }
    let ns = (s.dblwr_wait_share * f64::from(s.users) * window_ns as f64) as u64;
    vec![NamedLockWait {
        lock: "dblwr.slot_free".into(),
        wait_ns: ns,
        waits: s.commits / 5,
        addresses: 1,
        wait_ns_by_role: [(Role::User, ns)].into_iter().collect(),
    }]
}

/// 400 page syncs in a window, half doublewrite and half data, 300 of them
/// begun beside another: those take `overlap` times as long as the rest.
fn page_syncs((latency, overlap): (std::time::Duration, f64)) -> PageSyncs {
    let ns = latency.as_nanos() as u64;
    let (alone, beside) = (100, 300);
    let beside_ns = (ns as f64 * overlap) as u64;
    let total = alone * ns + beside * beside_ns;
    PageSyncs {
        doublewrite_syncs: 200,
        doublewrite_ns: total / 2,
        data_syncs: 200,
        data_ns: total / 2,
        overlapped_syncs: beside,
        overlapped_ns: beside * beside_ns,
    }
}

pub fn window(s: Shape) -> Signals {
    let window_ns = (s.secs * 1e9) as u64;
    let oncpu_ns = (s.cpus_busy * window_ns as f64) as u64;
    let runq_wait_ns = ((s.runnable - s.cpus_busy).max(0.0) * window_ns as f64) as u64;
    let mut roles = BTreeMap::new();
    roles.insert(
        Role::User,
        RoleSignals {
            threads: s.users,
            oncpu_ns,
            voluntary_switches: s.commits * 2,
            futex_wait_ns: (s.user_futex_share * f64::from(s.users) * window_ns as f64) as u64,
            futex_waits: s.commits * s.lock_waits_per_commit,
            wakeups_sent: s.commit_path_wakeups / 2,
            ..Default::default()
        },
    );
    if s.log_threads > 0 {
        roles.insert(
            Role::LogWriter,
            RoleSignals {
                threads: 1,
                wakeups_sent: s.commit_path_wakeups / 2,
                ..Default::default()
            },
        );
        roles.insert(
            Role::LogNotifier,
            RoleSignals {
                threads: s.log_threads - 1,
                ..Default::default()
            },
        );
    }
    let hist = Histogram {
        count: s.redo_fsyncs,
        buckets: vec![Bucket {
            lo_ns: s.fsync_bucket_hi_ns / 2,
            hi_ns: s.fsync_bucket_hi_ns,
            count: s.redo_fsyncs,
        }],
        p50_ns_le: s.fsync_bucket_hi_ns,
        p99_ns_le: s.fsync_bucket_hi_ns,
    };
    let mut io = BTreeMap::new();
    io.insert(
        FileKind::Redo,
        FileIo {
            write_calls: s.redo_fsyncs,
            write_bytes: s.commits * 200,
            write_bytes_per_s: s.commits as f64 * 200.0 / s.secs,
            fsync_calls: s.redo_fsyncs,
            fsync_ns: s.redo_fsyncs * s.fsync_bucket_hi_ns * 3 / 4,
            fsync_latency: hist,
            ..Default::default()
        },
    );
    if s.binlog_bytes > 0 {
        io.insert(
            FileKind::Binlog,
            FileIo {
                write_calls: 10,
                write_bytes: s.binlog_bytes,
                ..Default::default()
            },
        );
    }
    if s.dblwr_fsyncs > 0 {
        io.insert(
            FileKind::Doublewrite,
            FileIo {
                write_calls: s.dblwr_fsyncs,
                write_bytes: s.dblwr_fsyncs * 16384 * 8,
                write_bytes_per_s: (s.dblwr_fsyncs * 16384 * 8) as f64 / s.secs,
                fsync_calls: s.dblwr_fsyncs,
                fsync_ns: s.dblwr_fsyncs * 500_000,
                ..Default::default()
            },
        );
    }
    let by_role = vec![WakeEdge {
        waker: Role::User,
        wakee: Role::LogWriter,
        count: s.commit_path_wakeups,
    }];
    Signals {
        schema_version: SCHEMA_VERSION,
        pid: 4242,
        profile: "redoctor-engine".into(),
        end_unix_ms: 0,
        window_ns,
        target_exited: false,
        cpu: Cpu {
            oncpu_ns,
            cpus_busy: s.cpus_busy,
            voluntary_switches: s.commits * 3,
            involuntary_switches: s.commits / 10,
            runq_wait_ns,
            avg_runnable_threads: s.runnable,
            affinity_cpus: s.cores,
            saturation: s.runnable / f64::from(s.cores),
            runq_latency: Histogram {
                count: 10,
                buckets: vec![Bucket {
                    lo_ns: 1024,
                    hi_ns: 2048,
                    count: 10,
                }],
                p50_ns_le: 2048,
                p99_ns_le: 2048,
            },
            idle_poll_ns: 0,
        },
        roles,
        threads: vec![],
        wakeups: Wakeups {
            internal: s.commit_path_wakeups,
            commit_path: s.commit_path_wakeups,
            commit_path_per_commit: None,
            by_role,
            ..Default::default()
        },
        io,
        futex_waits: vec![],
        named_lock_waits: dblwr_waits(&s, window_ns),
        processes: vec![],
        engine: EngineEvents {
            commits: Some(s.commits),
            commits_per_s: Some(s.commits as f64 / s.secs),
            page_syncs: s.page_sync.map(page_syncs),
            ..Default::default()
        },
        probe_cost: vec![],
        unavailable: vec![],
        events_lost: 0,
    }
}

pub fn windows(n: usize, s: Shape) -> Vec<Signals> {
    (0..n).map(|_| window(s)).collect()
}

/// The shipped rule directory.
pub fn shipped_rules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rules")
}

/// The model's priors with a small error: predictions decide (the tests
/// check the advisor's logic, not the constants).
pub fn confident_model() -> redoctor_advisor::model::Model {
    let mut m = redoctor_advisor::model::Model::uncalibrated();
    m.sigma = 0.05;
    m.calibrated = true;
    m.source = "test: priors with a 5% error".into();
    m
}

/// 4 users committing small groups on a disk: the commit path is most of a
/// transaction's time (37.5 µs of CPU, groups of 2.5, 98 µs fsyncs).
pub fn small_groups() -> Shape {
    Shape {
        users: 4,
        commits: 10_000,
        cpus_busy: 0.375,
        runnable: 0.5,
        redo_fsyncs: 4_000,
        commit_path_wakeups: 30_000,
        ..Shape::default()
    }
}
