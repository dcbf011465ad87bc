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
/// - 3: RT1's hand-offs leave the cycle when the flusher is busy;
/// - 4: throughput from a queueing network (MVA) instead of a smooth
///   minimum of bounds; hand-offs pay a share of the run-queue wait.
pub const REVISION: u32 = 4;

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
    /// Share of a CPU's mean run-queue wait that a woken hand-off pays
    /// before it runs (the scheduler favours a thread that slept, so less
    /// than a runnable user's; 1 would be first come, first served).
    /// Files fitted before revision 4 lack it (and are refitted): its
    /// prior then.
    #[serde(default = "prior_runq_handoff")]
    pub runq_handoff: f64,
}

fn prior_runq_handoff() -> f64 {
    PARAMS[8].1
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
    (
        "runq_handoff",
        0.3,
        0.0,
        1.0,
        "",
        "share of the run-queue wait a woken hand-off pays",
    ),
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
            self.runq_handoff,
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
            runq_handoff: v[8],
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
    /// A runnable user's modelled wait for a CPU per transaction, µs.
    #[serde(default)]
    pub runq_wait_us: f64,
    /// A hand-off's latency with its run-queue wait, µs.
    #[serde(default)]
    pub hop_us: f64,
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
#[cfg(test)]
fn cycle_us(p: &Params, i: &Inputs, redo_threads: bool) -> f64 {
    cycle_at(i, redo_threads, p.hop_us)
}

/// [`cycle_us`] with hand-offs of `hop` µs each (the calibrated hand-off
/// plus the run-queue wait a woken thread pays).
pub(crate) fn cycle_at(i: &Inputs, redo_threads: bool, hop: f64) -> f64 {
    let redo = if i.waits_for_fsync() { i.fsync_us } else { 0.0 };
    let binlog = if i.binlog { i.binlog_fsync_us } else { 0.0 };
    let chain = match (redo_threads, i.binlog) {
        (false, _) => 0.0,
        (true, true) => 3.0 * hop,
        (true, false) => 2.0 * hop * chain_on_cycle(i),
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

/// Commit latency with hand-offs of `hop` µs: the cycle, half a cycle
/// more when groups form (the flush in flight when a commit arrives), and
/// the hand-offs on the waiter's own path.
fn latency_at(i: &Inputs, redo_threads: bool, group: f64, hop: f64) -> f64 {
    if i.flush == 0 && !i.binlog {
        return 0.0;
    }
    let t = cycle_at(i, redo_threads, hop);
    let queue = 0.5 * (1.0 - 1.0 / group.max(1.0));
    t * (1.0 + queue) + hops(i, redo_threads, group) * hop
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

/// The per-commit costs of configuration `c` under the observed load, with
/// groups of `group` commits: what the queueing network is solved for.
struct Costs {
    /// CPU per commit of every thread (users and log threads), µs.
    cpu: f64,
    /// Of it, the dedicated log threads' (RT1), µs.
    log_cpu: f64,
    /// Commit-path CPU per commit, µs.
    path: f64,
    /// Unqueued time per transaction outside the commit wait: CPU work
    /// and lock waits, µs.
    work: f64,
    /// Lock waits per transaction, µs (a delay inside the engine).
    lock_wait: f64,
    /// CPU bursts per transaction (each lock wait splits one).
    visits: f64,
}

fn costs(p: &Params, i: &Inputs, l: &Load, c: &Config, group: f64) -> Costs {
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
    // RT1's log threads spend the path beyond the committer's own sleep.
    let log_cpu = if c.redo_threads {
        (path - p.switch_cpu_us).max(0.0)
    } else {
        0.0
    };
    let cpu =
        l.work_cpu_us + path + p.switch_cpu_us * l.lock_waits * scale + slot_cpu(p, c, l.users);
    let lock_wait = l.lock_wait_us * scale;
    Costs {
        cpu,
        log_cpu,
        path,
        work: l.work_cpu_us + lock_wait,
        lock_wait,
        visits: 1.0 + l.lock_waits * scale,
    }
}

/// The network solved at one hand-off cost.
struct Solved {
    /// Commits/s.
    x: f64,
    /// A runnable user's wait for a CPU per transaction, µs.
    runq_wait: f64,
    /// Runnable threads waiting for a CPU, per CPU (those at the CPU
    /// station beyond its servers).
    waiting_per_cpu: f64,
    /// Commit latency, µs.
    latency: f64,
}

/// Solves the queueing network of `c` (`advisor/MODEL.md`, "The queueing
/// model"): the users' CPU demand on `cores` servers slowed by the log
/// threads' share of them (an open class), lock waits as a delay inside
/// the engine, the commit wait as a delay outside it (inside a throttle's
/// slot), a cap or throttle as the limit of users admitted.
/// The callers iterate it to a fixed point with the group and the
/// hand-offs.
#[allow(clippy::too_many_arguments)]
fn solve(
    p: &Params,
    i: &Inputs,
    k: &Costs,
    c: &Config,
    users: f64,
    group: f64,
    hop: f64,
) -> Solved {
    let servers = i.cores.round().max(1.0) as usize;
    let capacity = p.usable_cpu * i.cores / servers as f64;
    let latency = latency_at(i, c.redo_threads, group, hop);
    let n = users.round().max(1.0) as usize;
    let limit = (c.inside(users).round().max(1.0) as usize).min(n);
    let held_back = limit < n;
    let gate = if held_back { p.gate_handoff_us } else { 0.0 };
    // A throttle holds its place through the commit wait; a cap does not.
    let throttled = c.throttle > 0 && f64::from(c.throttle) < users;
    let (inner_delay, outer) = if throttled {
        (k.lock_wait + latency + gate, 0.0)
    } else {
        (k.lock_wait + gate, latency)
    };
    let user_cpu = (k.cpu - k.log_cpu).max(1e-3);
    let at = |u_log: f64| {
        let demand = user_cpu / capacity / (1.0 - u_log);
        let (rate_us, at_cpu) = network(limit, n, demand, servers, inner_delay, outer);
        (rate_us, at_cpu, demand)
    };
    // The log threads' utilisation of the servers at the rate they serve,
    // at most their share of saturated CPUs (`log / cpu`: the users need
    // the rest), so the solution never exceeds the CPUs' supply. The rate
    // falls as their share rises, so the share has one fixed point,
    // bracketed by none and the saturated share.
    let saturated_share = k.log_cpu / k.cpu.max(1e-9);
    let share_at =
        |rate_us: f64| (rate_us * k.log_cpu / (servers as f64 * capacity)).min(saturated_share);
    let u_log = if k.log_cpu > 0.0 {
        fixed_share(|u| share_at(at(u).0) - u, saturated_share)
    } else {
        0.0
    };
    let (rate_us, at_cpu, demand) = at(u_log);
    let queue = rate_us * at_cpu;
    Solved {
        x: rate_us * 1e6,
        runq_wait: (at_cpu - demand).max(0.0),
        waiting_per_cpu: ((queue - servers as f64) / servers as f64).max(0.0),
        latency,
    }
}

/// The root in `[0, hi]` of `gap`, a decreasing function with
/// `gap(0) ≥ 0 ≥ gap(hi)`: the log threads' share of the CPUs at which
/// the rate it allows makes that share. Regula falsi with the Illinois
/// halving (superlinear, and never leaves the bracket), to 1e-12 of a CPU
/// (the gap, a falling share less the share, falls at least as fast as
/// the share rises, so its size bounds the distance to the root); the
/// point evaluated closest to the root.
fn fixed_share(gap: impl Fn(f64) -> f64, hi: f64) -> f64 {
    let (mut a, mut b) = (0.0, hi);
    // The ends' values as the secant sees them (Illinois halves the one
    // kept twice in a row), and the best point evaluated.
    let (mut ga, mut gb) = (gap(a), gap(b));
    if ga <= 0.0 {
        return a;
    }
    if gb >= 0.0 {
        return b;
    }
    let mut best = if ga < -gb { (ga, a) } else { (-gb, b) };
    // Which end the last step moved (true: the lower).
    let mut moved_low = None;
    for _ in 0..100 {
        let c = (a * gb - b * ga) / (gb - ga);
        if b - a <= 1e-12 || !c.is_finite() {
            break;
        }
        let gc = gap(c);
        if gc.abs() < best.0 {
            best = (gc.abs(), c);
        }
        if gc.abs() <= 1e-12 {
            break;
        }
        // The root lies above c where the gap is still positive.
        let low = gc > 0.0;
        if low {
            (a, ga) = (c, gc);
            if moved_low == Some(true) {
                gb *= 0.5;
            }
        } else {
            (b, gb) = (c, gc);
            if moved_low == Some(false) {
                ga *= 0.5;
            }
        }
        moved_low = Some(low);
    }
    best.1
}

/// Throughput (per µs) and a transaction's CPU residence of `n` users with
/// at most `limit` admitted. Without a limit: the whole network (the CPU
/// station, the delays inside and outside) solved exactly at `n` users.
/// With one: the admitted users' network solved for 1 to `limit` users,
/// then the whole as a flow-equivalent server with `outer` outside (a
/// birth-death chain over the users at the server).
fn network(
    limit: usize,
    n: usize,
    demand: f64,
    servers: usize,
    inner_delay: f64,
    outer: f64,
) -> (f64, f64) {
    use super::queueing::{closed_station, finite_source};
    if limit >= n {
        let s = closed_station(n, demand, servers, inner_delay + outer.max(0.0));
        return (s.x, s.cpu_residence);
    }
    let inner: Vec<_> = (1..=limit)
        .map(|k| closed_station(k, demand, servers, inner_delay))
        .collect();
    let residence_at = |admitted: f64| {
        let k = (admitted.round().max(1.0) as usize).min(limit);
        inner[k - 1].cpu_residence
    };
    if outer <= 0.0 {
        return (inner[limit - 1].x, residence_at(limit as f64));
    }
    let rates: Vec<f64> = inner.iter().map(|p| p.x).collect();
    let s = finite_source(n, outer, &rates, limit);
    (s.x, residence_at(s.admitted))
}

/// The scheduler's time slice, µs: a runnable thread runs at most about
/// this long before the next gets the CPU (EEVDF's base slice, 3 ms).
pub const SLICE_US: f64 = 3000.0;

/// Hand-off cost with the run-queue wait a woken thread pays: a share
/// (`runq_handoff`) of waiting behind the runnable threads queued per CPU,
/// each for its CPU burst or a time slice, whichever is shorter.
fn hop_with_wait(p: &Params, k: &Costs, s: &Solved) -> f64 {
    let burst = (k.cpu / k.visits.max(1.0)).min(SLICE_US);
    p.hop_us + p.runq_handoff * s.waiting_per_cpu * burst
}

fn evaluate(p: &Params, i: &Inputs, l: &Load, c: &Config, group: f64) -> Estimate {
    let k = costs(p, i, l, c, group);
    let mut hop = p.hop_us;
    let mut s = solve(p, i, &k, c, l.users, group, hop);
    for _ in 0..5 {
        let next = 0.5 * hop + 0.5 * hop_with_wait(p, &k, &s);
        if (next - hop).abs() <= 1e-9 * hop {
            break;
        }
        hop = next;
        s = solve(p, i, &k, c, l.users, group, hop);
    }
    estimate_of(p, i, l, c, group, &k, &s, hop)
}

#[allow(clippy::too_many_arguments)]
fn estimate_of(
    p: &Params,
    i: &Inputs,
    l: &Load,
    c: &Config,
    group: f64,
    k: &Costs,
    s: &Solved,
    hop: f64,
) -> Estimate {
    let cpu_bound = p.usable_cpu * l.cores * 1e6 / k.cpu;
    let latency_bound = l.users * 1e6 / (k.work + s.latency);
    let mut slot_bound = None;
    if c.cap > 0 && f64::from(c.cap) < l.users {
        slot_bound = Some(f64::from(c.cap) * 1e6 / (k.work + p.gate_handoff_us));
    }
    if c.throttle > 0 && f64::from(c.throttle) < l.users {
        let b = f64::from(c.throttle) * 1e6
            / (k.work
                + cycle_at(i, c.redo_threads, hop)
                + hops(i, c.redo_threads, group) * hop
                + p.gate_handoff_us);
        slot_bound = Some(slot_bound.map_or(b, |s: f64| s.min(b)));
    }
    Estimate {
        config: *c,
        commits_per_s: s.x,
        cpu_us: k.cpu,
        commit_path_cpu_us: k.path,
        commit_latency_us: s.latency,
        work_us: k.work,
        group,
        cpu_bound,
        latency_bound,
        slot_bound,
        runq_wait_us: s.runq_wait,
        hop_us: hop,
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
/// between the modes; at most the users who can be waiting. The group,
/// the rate and the hand-offs' run-queue wait are iterated together to a
/// fixed point (damped): group commit is a load-dependent batch delay.
pub fn estimate(p: &Params, i: &Inputs, c: &Config) -> Estimate {
    if *c == i.config {
        return estimate_observed(p, i);
    }
    estimate_on(p, i, c, i.cores)
}

/// Configuration `c` under the observed load on a host with `cores` CPUs
/// (the what-if for another host size): the load's work per commit as
/// observed, the queueing network and the group's fixed point solved with
/// `cores` servers. On the observed host's CPU count and for another
/// configuration this is [`estimate`].
pub fn estimate_on(p: &Params, i: &Inputs, c: &Config, cores: f64) -> Estimate {
    estimate_from(p, i, &estimate_observed(p, i), c, cores)
}

/// [`estimate_on`] given the observed configuration's estimate.
fn estimate_from(p: &Params, i: &Inputs, observed: &Estimate, c: &Config, cores: f64) -> Estimate {
    let mut at = i.clone();
    at.cores = cores;
    let l = Load {
        cores,
        ..load(p, i)
    };
    let max_group = if c.throttle > 0 {
        l.users.min(f64::from(c.throttle))
    } else {
        l.users
    }
    .max(1.0);
    let cycle_seen = if i.commits_per_s > 0.0 {
        i.group / i.commits_per_s * 1e6
    } else {
        cycle_at(i, i.config.redo_threads, observed.hop_us)
    };
    // The model's rates scaled to the observed level.
    let level = i.commits_per_s / observed.commits_per_s.max(1e-9);
    let mut group = i.group.clamp(1.0, max_group);
    let mut hop = observed.hop_us;
    let mut k = costs(p, &at, &l, c, group);
    let mut s = solve(p, &at, &k, c, l.users, group, hop);
    if i.commits_per_s > 0.0 {
        for _ in 0..12 {
            let cycle_model = cycle_at(&at, c.redo_threads, hop);
            let cycle = (cycle_seen + cycle_model
                - cycle_at(i, i.config.redo_threads, observed.hop_us))
            .max(cycle_model);
            if cycle > 0.0 {
                let want = (s.x * level * cycle / 1e6).clamp(1.0, max_group);
                group = (group * want).sqrt();
            }
            let before = (group, hop);
            k = costs(p, &at, &l, c, group);
            hop = 0.5 * hop + 0.5 * hop_with_wait(p, &k, &s);
            if (group - before.0).abs() <= 1e-9 * group && (hop - before.1).abs() <= 1e-9 * hop {
                break;
            }
            s = solve(p, &at, &k, c, l.users, group, hop);
        }
    }
    estimate_of(p, &at, &l, c, group, &k, &s, hop)
}

/// Predicted commits/s of `c` over the observed configuration's, as the
/// model's ratio: the observation anchors the level, the model the change.
pub fn ratio(p: &Params, i: &Inputs, c: &Config) -> f64 {
    let base = estimate_observed(p, i).commits_per_s;
    estimate(p, i, c).commits_per_s / base
}

/// [`ratio`] of each of `configs`, the observed configuration estimated once.
pub fn ratios(p: &Params, i: &Inputs, configs: &[Config]) -> Vec<f64> {
    let observed = estimate_observed(p, i);
    configs
        .iter()
        .map(|c| {
            if *c == i.config {
                1.0
            } else {
                estimate_from(p, i, &observed, c, i.cores).commits_per_s / observed.commits_per_s
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
