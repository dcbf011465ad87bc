//! The equations: a closed system of `U` users, each looping "work, then
//! commit and wait", on `N` CPUs (design and derivation: `advisor/MODEL.md`).
//!
//! For a configuration the model computes
//! - the CPU per commit: the observed work (observed CPU minus the observed
//!   configuration's commit-path and contention CPU) plus the commit-path CPU
//!   of the mode (a part per commit and a part per fsync group, and RT0's
//!   leader-election convoy above a users-per-core knee) plus contention and
//!   gate CPU;
//! - the commit latency: the fsync cycle (redo fsync, binlog fsync, and in
//!   RT1 with binlog the hand-offs inside the serial FLUSH stage), half a
//!   cycle more when groups form, plus the hand-offs on the waiter's path
//!   (RT1: user → writer → flusher → notifier → user; RT0: a follower is
//!   woken by its leader);
//! - throughput as a smooth minimum of its bounds: CPU supply over demand,
//!   users over unqueued response time, and the gate's or throttle's slots
//!   over the time a slot is held.
//!
//! The group size of another configuration follows from Little's law: the
//! commits that arrive during one fsync cycle.

use serde::{Deserialize, Serialize};

use super::config::Config;
use super::inputs::Inputs;

/// The mechanics' revision. Constants fitted under another revision
/// describe equations that no longer hold, so a calibration file fitted
/// under one is refitted from its points ([`crate::model::Calibration::refit_if_stale`]).
/// Bump on any change of what the equations predict for given constants.
/// - 1: before the revision was recorded (files without it read as 0);
/// - 2: no fsync on RT0's commit path at flush 0 or 2;
/// - 3: RT1's hand-offs leave the cycle when the flusher is busy.
pub const REVISION: u32 = 3;

/// Host constants (calibrated by `redoctor calibrate`; priors in [`PARAMS`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Latency of one cross-thread hand-off (wakeup to running), µs.
    pub hop_us: f64,
    /// CPU of one sleep and wakeup (a waiter's, a lock wait's, a gate
    /// wait's), µs: RT1 pays one per commit (every committer sleeps until
    /// notified), RT0 one per follower.
    pub switch_cpu_us: f64,
    /// RT1 CPU per fsync group: the writer's, flusher's and notifiers'
    /// rounds (their wakeups, spins, write and fsync calls), µs.
    pub rt1_group_cpu_us: f64,
    /// RT0 CPU per fsync group: the leader's write and fsync calls, µs.
    pub rt0_group_cpu_us: f64,
    /// RT0 convoy on a real fsync: extra CPU per commit per doubling of
    /// the users per core above the knee (an elected leader waits for a CPU
    /// behind hundreds of runnable threads while its followers pile up;
    /// waiters woken to find their data not yet durable, newcomers racing
    /// for the writer and flusher mutexes), µs. None on tmpfs: nobody waits.
    pub rt0_convoy_cpu_us: f64,
    /// Users per core above which RT0's leader election convoys.
    pub rt0_convoy_knee: f64,
    /// Time to hand a gate or throttle slot to the next queued thread (its
    /// wakeup and first run), µs: on every slot's critical path when the
    /// queue is long.
    pub gate_handoff_us: f64,
    /// Share of the CPUs the server can use.
    pub usable_cpu: f64,
    /// Sharpness of the smooth minimum of the bounds (higher: closer to `min`).
    pub sharpness: f64,
}

/// Name, prior, lower and upper bound, unit and meaning of each parameter,
/// in the order of [`Params::to_vec`].
pub const PARAMS: &[(&str, f64, f64, f64, &str, &str)] = &[
    (
        "hop_us",
        20.0,
        1.0,
        500.0,
        "us",
        "latency of one cross-thread hand-off",
    ),
    (
        "switch_cpu_us",
        5.0,
        0.2,
        50.0,
        "us",
        "CPU of one sleep and wakeup",
    ),
    (
        "rt1_group_cpu_us",
        80.0,
        0.0,
        1000.0,
        "us",
        "RT1 log threads' CPU per fsync group",
    ),
    (
        "rt0_group_cpu_us",
        10.0,
        0.0,
        1000.0,
        "us",
        "RT0 leader's CPU per fsync group",
    ),
    (
        "rt0_convoy_cpu_us",
        2.0,
        0.0,
        100.0,
        "us",
        "RT0 convoy CPU per commit per doubling of the users per CPU above the knee",
    ),
    (
        "rt0_convoy_knee",
        32.0,
        2.0,
        4096.0,
        "users/CPU",
        "users per CPU where RT0's convoy starts",
    ),
    (
        "gate_handoff_us",
        40.0,
        1.0,
        5000.0,
        "us",
        "handing a gate or throttle slot to the next waiter",
    ),
    (
        "usable_cpu",
        0.95,
        0.5,
        1.0,
        "",
        "share of the CPUs the server can use",
    ),
    ("sharpness", 3.0, 1.0, 10.0, "", "smooth-minimum sharpness"),
];

impl Params {
    /// The priors: what the mechanics suggest before any calibration.
    pub fn prior() -> Params {
        Params::from_vec(&PARAMS.iter().map(|p| p.1).collect::<Vec<_>>())
    }

    pub fn to_vec(&self) -> Vec<f64> {
        vec![
            self.hop_us,
            self.switch_cpu_us,
            self.rt1_group_cpu_us,
            self.rt0_group_cpu_us,
            self.rt0_convoy_cpu_us,
            self.rt0_convoy_knee,
            self.gate_handoff_us,
            self.usable_cpu,
            self.sharpness,
        ]
    }

    pub fn from_vec(v: &[f64]) -> Params {
        Params {
            hop_us: v[0],
            switch_cpu_us: v[1],
            rt1_group_cpu_us: v[2],
            rt0_group_cpu_us: v[3],
            rt0_convoy_cpu_us: v[4],
            rt0_convoy_knee: v[5],
            gate_handoff_us: v[6],
            usable_cpu: v[7],
            sharpness: v[8],
        }
    }
}

/// The model's account of one configuration under the observed load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub config: Config,
    /// The model's own commits/s (before anchoring on the observation).
    pub commits_per_s: f64,
    /// CPU per commit, µs.
    pub cpu_us: f64,
    /// Of it, the commit path's (mode overhead), µs.
    pub commit_path_cpu_us: f64,
    /// Commit latency (fsync cycle and hand-offs), µs.
    pub commit_latency_us: f64,
    /// Unqueued time per transaction outside the commit wait, µs.
    pub work_us: f64,
    /// Commits per fsync group.
    pub group: f64,
    /// Bound from CPU supply: usable CPUs / CPU per commit, commits/s.
    pub cpu_bound: f64,
    /// Bound from the users: users / (work + commit latency), commits/s.
    pub latency_bound: f64,
    /// Bound from the gate's or throttle's slots, commits/s (none when unlimited).
    pub slot_bound: Option<f64>,
}

/// What the observation says independently of any configuration.
struct Load {
    users: f64,
    cores: f64,
    /// CPU per commit of the work itself, µs.
    work_cpu_us: f64,
    /// Lock waits (count and µs) per commit at the observed concurrency inside.
    lock_waits: f64,
    lock_wait_us: f64,
    inside: f64,
    /// The observed configuration's commit-path CPU per commit, µs.
    observed_path_cpu_us: f64,
}

/// A redo fsync this slow (µs) costs half the CPU of a slow device's: the
/// CPU of an fsync call grows with the work the device does (on tmpfs it
/// is a few hundred ns).
const FSYNC_CPU_HALF_US: f64 = 20.0;

/// The futex waits per commit of an RT0 observation beyond one per
/// follower and the lock waits: its election convoy as observed (waiters
/// woken to find their data not yet durable, waiting again). Collapsed at
/// 1024 users on a disk, update_index showed 13.9 futex waits per commit
/// against 1.2 at 128 users.
fn convoy_waits(i: &Inputs) -> f64 {
    let follower = 1.0 - 1.0 / i.group.max(1.0);
    (i.futex_waits - follower - i.lock_waits).max(0.0)
}

/// How real the commit's fsync is: ~0 on tmpfs, ~1 on a device, and 0 when
/// commits do not wait for one (an RT0 leader then only writes).
fn device(i: &Inputs) -> f64 {
    if !i.waits_for_fsync() {
        return 0.0;
    }
    i.fsync_us / (i.fsync_us + FSYNC_CPU_HALF_US)
}

/// RT0's convoy CPU per commit at `users` committers, as modelled.
fn convoy_cpu(p: &Params, i: &Inputs, users: f64) -> f64 {
    let doublings = (users / i.cores / p.rt0_convoy_knee).log2().max(0.0);
    p.rt0_convoy_cpu_us * doublings * device(i)
}

fn commit_path_cpu(p: &Params, i: &Inputs, redo_threads: bool, group: f64, users: f64) -> f64 {
    let g = group.max(1.0);
    if redo_threads {
        p.switch_cpu_us + p.rt1_group_cpu_us / g
    } else {
        p.switch_cpu_us * (1.0 - 1.0 / g)
            + p.rt0_group_cpu_us * device(i) / g
            + convoy_cpu(p, i, users)
    }
}

/// One sleep and hand-off per commit when the gate or throttle is full.
fn slot_cpu(p: &Params, c: &Config, users: f64) -> f64 {
    if c.inside(users) < users {
        p.switch_cpu_us
    } else {
        0.0
    }
}

/// The share of RT1's rounds whose hand-offs lie on the cycle: a round
/// that finds the flusher idle starts with the writer waking it, and its
/// notification precedes the next round; a flusher with a backlog starts
/// the next fsync at once and notifies while it runs. The flusher is busy
/// about as often as the device is (`fsyncs/s × fsync latency` observed),
/// so an arrival finds it idle `1 - ρ` of the time. Observed on a disk: at
/// 16-256 users with the device ≥ 88% busy, RT1's cycle (commits per fsync
/// / commits/s) exceeded the fsync by 7-14 µs, not by two hand-offs; at one
/// user by 43-142 µs against RT0's 8-78 (`advisor/bench/RESULTS.md`,
/// "ninth").
fn chain_on_cycle(i: &Inputs) -> f64 {
    if !i.waits_for_fsync() || i.commits_per_s <= 0.0 {
        return 1.0;
    }
    let rho = i.commits_per_s / i.group.max(1.0) * i.fsync_us / 1e6;
    (1.0 - rho).clamp(0.0, 1.0)
}

/// The cycle a commit group waits for, µs: the redo fsync (when commits
/// wait for it), the binlog fsync, and in RT1 the hand-offs that start each
/// round (the writer waking the flusher, the flusher the notifier; with the
/// binlog the group's leader asks for the flush through writer, flusher and
/// notifier inside the serial FLUSH stage), where they are not overlapped
/// by a busy flusher ([`chain_on_cycle`]). An RT0 leader writes and
/// flushes itself.
fn cycle_us(p: &Params, i: &Inputs, redo_threads: bool) -> f64 {
    let redo = if i.waits_for_fsync() { i.fsync_us } else { 0.0 };
    let binlog = if i.binlog { i.binlog_fsync_us } else { 0.0 };
    let chain = match (redo_threads, i.binlog) {
        (false, _) => 0.0,
        (true, true) => 3.0 * p.hop_us,
        (true, false) => 2.0 * p.hop_us * chain_on_cycle(i),
    };
    redo + binlog + chain
}

/// Hand-offs on a waiter's own path, outside the cycle: in RT1 the user
/// waking the writer and the notifier waking the user (only the first when
/// the commit waits for the write alone); in RT0 a follower is woken by its
/// leader (the leader by nobody); with the binlog the COMMIT stage's leader
/// wakes its group.
fn hops(i: &Inputs, redo_threads: bool, group: f64) -> f64 {
    if i.flush == 0 && !i.binlog {
        0.0
    } else if i.binlog {
        1.0
    } else if redo_threads {
        if i.waits_for_fsync() {
            2.0
        } else {
            1.0
        }
    } else {
        1.0 - 1.0 / group.max(1.0)
    }
}

fn latency_us(p: &Params, i: &Inputs, redo_threads: bool, group: f64) -> f64 {
    if i.flush == 0 && !i.binlog {
        return 0.0;
    }
    let t = cycle_us(p, i, redo_threads);
    let queue = 0.5 * (1.0 - 1.0 / group.max(1.0));
    t * (1.0 + queue) + hops(i, redo_threads, group) * p.hop_us
}

fn smooth_min(bounds: &[f64], k: f64) -> f64 {
    let s: f64 = bounds.iter().map(|b| b.max(1e-9).powf(-k)).sum();
    s.powf(-1.0 / k)
}

/// The observed waits per commit outside the commit path that are
/// contention (count, µs): the probes count every futex wait there, the
/// queue of a full gate or throttle included. Where the observed
/// configuration holds users back, those waiting for a slot (the users
/// not inside, by Little's law `(users - inside) / rate` per commit, and
/// one wait per commit) are the gate's, not contention; the gate's own
/// cost is [`slot_cpu`] and its bound. Users in their commit wait are
/// counted among those held back, so this takes at most a little too much
/// where the users barely exceed the cap.
fn contention_waits(i: &Inputs) -> (f64, f64) {
    let held_back = (i.users - i.config.inside(i.users)).max(0.0);
    if held_back <= 0.0 || i.commits_per_s <= 0.0 {
        return (i.lock_waits, i.lock_wait_us);
    }
    let gate_us = held_back / i.commits_per_s * 1e6;
    (
        (i.lock_waits - 1.0).max(0.0),
        (i.lock_wait_us - gate_us).max(0.0),
    )
}

fn load(p: &Params, i: &Inputs) -> Load {
    let c = &i.config;
    // The observed commit path: in RT1 the log threads' CPU as measured plus
    // the committer's own sleep; in RT0 the mechanics' estimate, with the
    // convoy as observed where it shows.
    let path = if c.redo_threads && i.log_cpu_us > 0.0 {
        i.log_cpu_us + p.switch_cpu_us
    } else {
        // RT0's observed convoy where it exceeds the modelled one.
        let seen_convoy = if c.redo_threads {
            0.0
        } else {
            (p.switch_cpu_us * convoy_waits(i) - convoy_cpu(p, i, i.users)).max(0.0)
        };
        commit_path_cpu(p, i, c.redo_threads, i.group, i.users) + seen_convoy
    };
    let (lock_waits, lock_wait_us) = contention_waits(i);
    let contention = p.switch_cpu_us * lock_waits;
    let work = (i.cpu_us - path - contention - slot_cpu(p, c, i.users)).max(0.05 * i.cpu_us);
    Load {
        users: i.users,
        cores: i.cores,
        work_cpu_us: work.max(0.1),
        lock_waits,
        lock_wait_us,
        inside: c.inside(i.users),
        observed_path_cpu_us: path,
    }
}

fn evaluate(p: &Params, i: &Inputs, l: &Load, c: &Config, group: f64) -> Estimate {
    // Contention scales with the other transactions inside.
    let inside = c.inside(l.users);
    let scale = if l.inside > 1.0 {
        ((inside - 1.0) / (l.inside - 1.0)).clamp(0.0, 10.0)
    } else {
        1.0
    };
    // Same redo mode: the observed path, moved by what the model says the
    // new group and concurrency change; the other mode: the model's.
    // RT0's committers are everyone waiting for the flush (a cap does not
    // limit them: the commit leaves the gate first); a throttle does.
    let committers = if c.throttle > 0 {
        l.users.min(f64::from(c.throttle))
    } else {
        l.users
    };
    let model_path = commit_path_cpu(p, i, c.redo_threads, group, committers);
    let path = if c.redo_threads == i.config.redo_threads {
        let seen = commit_path_cpu(p, i, c.redo_threads, i.group, l.users);
        (l.observed_path_cpu_us + model_path - seen).max(0.0)
    } else {
        model_path
    };
    let cpu =
        l.work_cpu_us + path + p.switch_cpu_us * l.lock_waits * scale + slot_cpu(p, c, l.users);
    let work = l.work_cpu_us + l.lock_wait_us * scale;
    let lat = latency_us(p, i, c.redo_threads, group);
    let cpu_bound = p.usable_cpu * l.cores * 1e6 / cpu;
    let latency_bound = l.users * 1e6 / (work + lat);
    let mut bounds = vec![cpu_bound, latency_bound];
    let mut slot_bound = None;
    if c.cap > 0 && f64::from(c.cap) < l.users {
        // A slot is held for the work, then handed to the next waiter, who
        // must be woken (the commit leaves the gate before its flush wait).
        let b = f64::from(c.cap) * 1e6 / (work + p.gate_handoff_us);
        bounds.push(b);
        slot_bound = Some(b);
    }
    if c.throttle > 0 && f64::from(c.throttle) < l.users {
        // Throttled transactions move in step with the flush cycle: each
        // waits one cycle (no half cycle of a random arrival).
        let b = f64::from(c.throttle) * 1e6
            / (work
                + cycle_us(p, i, c.redo_threads)
                + hops(i, c.redo_threads, group) * p.hop_us
                + p.gate_handoff_us);
        bounds.push(b);
        slot_bound = Some(slot_bound.map_or(b, |s: f64| s.min(b)));
    }
    Estimate {
        config: *c,
        commits_per_s: smooth_min(&bounds, p.sharpness),
        cpu_us: cpu,
        commit_path_cpu_us: path,
        commit_latency_us: lat,
        work_us: work,
        group,
        cpu_bound,
        latency_bound,
        slot_bound,
    }
}

/// The observed configuration as the model sees it (the observed group size).
pub fn estimate_observed(p: &Params, i: &Inputs) -> Estimate {
    let l = load(p, i);
    evaluate(p, i, &l, &i.config, i.group)
}

/// Configuration `c` under the observed load. Its group size follows from
/// Little's law: the commits that arrive during one cycle. The observed
/// cycle (group / rate) anchors it, the model gives the change of cycle
/// between the modes; at most the users who can be waiting. Iterated to a
/// fixed point (damped), since the rate depends on the group.
pub fn estimate(p: &Params, i: &Inputs, c: &Config) -> Estimate {
    let l = load(p, i);
    let observed = evaluate(p, i, &l, &i.config, i.group);
    if *c == i.config {
        return observed;
    }
    let max_group = if c.throttle > 0 {
        l.users.min(f64::from(c.throttle))
    } else {
        l.users
    }
    .max(1.0);
    let cycle_model = cycle_us(p, i, c.redo_threads);
    let cycle_seen = if i.commits_per_s > 0.0 {
        i.group / i.commits_per_s * 1e6
    } else {
        cycle_us(p, i, i.config.redo_threads)
    };
    let cycle = (cycle_seen + cycle_model - cycle_us(p, i, i.config.redo_threads)).max(cycle_model);
    // The model's rates scaled to the observed level.
    let level = i.commits_per_s / observed.commits_per_s.max(1e-9);
    let mut group = i.group.clamp(1.0, max_group);
    let mut e = evaluate(p, i, &l, c, group);
    if cycle <= 0.0 || i.commits_per_s <= 0.0 {
        return e;
    }
    for _ in 0..16 {
        let want = (e.commits_per_s * level * cycle / 1e6).clamp(1.0, max_group);
        group = (group * want).sqrt();
        e = evaluate(p, i, &l, c, group);
    }
    e
}

/// Predicted commits/s of `c` over the observed configuration's, as the
/// model's ratio: the observation anchors the level, the model the change.
pub fn ratio(p: &Params, i: &Inputs, c: &Config) -> f64 {
    let base = estimate_observed(p, i).commits_per_s;
    estimate(p, i, c).commits_per_s / base
}

#[cfg(test)]
mod tests;
