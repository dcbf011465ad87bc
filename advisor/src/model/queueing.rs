//! Closed queueing networks solved by mean value analysis (MVA): the
//! solvers the mechanics put their per-commit costs into
//! (`advisor/MODEL.md`, "The queueing model").
//!
//! - [`inner`]: the users inside the engine: a multi-server CPU station
//!   (one server per CPU) and a delay (their lock waits, and anything else
//!   they wait for without a CPU), solved exactly for every population up
//!   to a limit (Reiser and Lavenberg's recursion, with the marginal
//!   probabilities a multi-server station needs);
//! - [`finite_source`]: the whole system as a flow-equivalent server (the
//!   inner network's throughput at each population, capped where a gate or
//!   throttle holds the users back) and a delay outside it (the commit
//!   wait), solved exactly as a birth-death chain. For a product-form
//!   network this decomposition is exact (Chandy, Herzog and Woo's
//!   theorem), so the uncapped case is the exact MVA of the whole network.
//!
//! Times are in any one unit (the mechanics use µs); rates are per that unit.

/// The inner network at one population.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inner {
    /// Users inside.
    pub n: usize,
    /// Throughput.
    pub x: f64,
    /// Residence time at the CPU per transaction (service and queueing).
    pub cpu_residence: f64,
    /// Mean users at the CPU station (running or runnable).
    pub cpu_queue: f64,
}

/// Exact MVA of populations 1..=`limit` of a closed network: a CPU
/// station of `servers` servers with `demand` per transaction, and a delay
/// of `delay` per transaction. `out[n - 1]` is population `n`. It stops
/// early at the population whose rate is within 1e-7 of the CPU's
/// saturation (`servers / demand`): beyond it the rate stays there.
pub fn inner(limit: usize, demand: f64, servers: usize, delay: f64) -> Vec<Inner> {
    let m = servers.max(1);
    let mut out = Vec::with_capacity(limit);
    // p[j]: probability of j users at the CPU, j < m (the rest above).
    let mut p = vec![0.0; m];
    p[0] = 1.0;
    let mut q = 0.0;
    for n in 1..=limit {
        // A multi-server station's residence: the m − 1 − j idle servers
        // when j are busy shorten the wait (Menascé, Almeida and Dowdy, 9.4).
        let idle: f64 = (0..m.saturating_sub(1))
            .map(|j| (m - 1 - j) as f64 * p[j])
            .sum();
        let r = demand / m as f64 * (1.0 + q + idle);
        let x = n as f64 / (r + delay).max(1e-300);
        q = x * r;
        // Marginals for the next population.
        let mut next = vec![0.0; m];
        for j in 1..m {
            next[j] = x * demand / j as f64 * p[j - 1];
        }
        let busy: f64 = (1..m).map(|j| (m - j) as f64 * next[j]).sum();
        next[0] = (1.0 - (x * demand + busy) / m as f64).max(0.0);
        p = next;
        out.push(Inner {
            n,
            x,
            cpu_residence: r,
            cpu_queue: q,
        });
        if x >= m as f64 / demand * (1.0 - 1e-7) {
            break;
        }
    }
    out
}

/// One closed station of `servers` servers (`demand` per transaction) and
/// a delay (`delay` per transaction) with `n` users, solved exactly as the
/// finite-source queue it is (a birth-death chain: `k` users at the
/// station, `p(k) ∝ p(k−1)·((n−k+1)/delay)·(demand/min(k, servers))`),
/// summed relative to the chain's mode, outward from it until the terms
/// fall below `e^-40` of it: stable where the multi-server MVA recursion's marginal
/// probabilities lose their precision, and as cheap when the system is
/// saturated (the mode near `n`) as when it is idle (near 0).
pub fn closed_station(n: usize, demand: f64, servers: usize, delay: f64) -> Inner {
    let m = servers.max(1);
    if n == 0 {
        return Inner {
            n,
            x: 0.0,
            cpu_residence: demand,
            cpu_queue: 0.0,
        };
    }
    if delay <= 0.0 {
        // Everyone at the station.
        let x = n.min(m) as f64 / demand;
        return Inner {
            n,
            x,
            cpu_residence: n as f64 / x,
            cpu_queue: n as f64,
        };
    }
    // The step p(k)/p(k−1), and its inverse (a product, not a division,
    // on the way down).
    let ratio = demand / delay;
    let (mut w, mut wx, mut wk) = (0.0, 0.0, 0.0);
    sum_unimodal(
        n,
        |k| (n - k + 1) as f64 * ratio / k.min(m) as f64,
        |k| k.min(m) as f64 / ((n - k + 1) as f64 * ratio),
        |k, e| {
            w += e;
            wx += e * k.min(m) as f64;
            wk += e * k as f64;
        },
    );
    let busy = wx / w;
    let q = wk / w;
    let x = busy / demand;
    Inner {
        n,
        x,
        cpu_residence: q / x.max(1e-300),
        cpu_queue: q,
    }
}

/// Where a birth-death chain's sum stops: terms below e^-40 of the mode's
/// change no mean in the 17th digit.
const TAIL: f64 = 4.248354255291589e-18;

/// The weights of a unimodal birth-death chain over states 0..=`n`, whose
/// step p(k)/p(k−1) is `factor(k)` (`inverse(k)` its reciprocal), passed to
/// `add` relative to the mode's (the mode first, then down to 0, then up
/// to `n`, each the last times one step, so all are at most 1 and nothing
/// overflows), until they fall below [`TAIL`].
fn sum_unimodal(
    n: usize,
    factor: impl Fn(usize) -> f64,
    inverse: impl Fn(usize) -> f64,
    mut add: impl FnMut(usize, f64),
) {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if factor(mid) > 1.0 {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mode = lo;
    add(mode, 1.0);
    let mut e = 1.0;
    for k in (0..mode).rev() {
        e *= inverse(k + 1);
        if e < TAIL {
            break;
        }
        add(k, e);
    }
    e = 1.0;
    for k in mode + 1..=n {
        e *= factor(k);
        if e < TAIL {
            break;
        }
        add(k, e);
    }
}

/// The whole system at `users` users.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Solution {
    /// Throughput.
    pub x: f64,
    /// Mean users inside the flow-equivalent server (inside the engine,
    /// admitted or queued for admission).
    pub at_server: f64,
    /// Mean users admitted (at most the limit).
    pub admitted: f64,
}

/// `users` users alternating between a flow-equivalent server whose
/// throughput with `j` users is `rates[min(j, rates.len()) - 1]` (at most
/// `limit` of them admitted, the others queued for admission) and a delay
/// of `think` outside it: a birth-death chain, solved exactly (summed
/// relative to its mode, so nothing overflows).
pub fn finite_source(users: usize, think: f64, rates: &[f64], limit: usize) -> Solution {
    assert!(!rates.is_empty(), "a flow-equivalent server has a rate");
    let rate = |j: usize| rates[j.min(rates.len()) - 1].max(1e-300);
    if users == 0 {
        return Solution {
            x: 0.0,
            at_server: 0.0,
            admitted: 0.0,
        };
    }
    if think <= 0.0 {
        // Nobody is ever outside: every user at the server.
        return Solution {
            x: rate(users),
            at_server: users as f64,
            admitted: users.min(limit) as f64,
        };
    }
    // The step p(j)/p(j−1) = ((U − j + 1) / think) / rate(j); the rates
    // grow with j, so the steps fall: the chain is unimodal.
    let (mut total, mut x, mut at, mut adm) = (0.0, 0.0, 0.0, 0.0);
    sum_unimodal(
        users,
        |j| (users - j + 1) as f64 / think / rate(j),
        |j| rate(j) * think / (users - j + 1) as f64,
        |j, e| {
            total += e;
            if j > 0 {
                x += e * rate(j);
                at += e * j as f64;
                adm += e * j.min(limit) as f64;
            }
        },
    );
    let (x, at, adm) = (x / total, at / total, adm / total);
    Solution {
        x,
        at_server: at,
        admitted: adm,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machine-repairman model (M/M/1//N): `n` machines, each failing
    /// after an exponential `z` and repaired by one server in `s`:
    /// `p0 = 1 / Σ_k N!/(N−k)! (s/z)^k`, throughput `(1 − p0)/s`.
    fn repairman(n: usize, s: f64, z: f64) -> f64 {
        let mut term = 1.0;
        let mut sum = 1.0;
        for k in 1..=n {
            term *= (n - k + 1) as f64 * s / z;
            sum += term;
        }
        (1.0 - 1.0 / sum) / s
    }

    /// M/M/m//N with m servers: p(k) ∝ C(N,k)(s/z)^k / (k! for k ≤ m, m! m^(k−m) beyond)
    /// times k!: the standard finite-source multi-server result.
    fn repairmen(n: usize, m: usize, s: f64, z: f64) -> f64 {
        let r = s / z;
        let mut p = vec![1.0];
        for k in 1..=n {
            let prev = p[k - 1];
            p.push(prev * (n - k + 1) as f64 * r / k.min(m) as f64);
        }
        let total: f64 = p.iter().sum();
        p.iter()
            .enumerate()
            .map(|(k, pk)| pk / total * k.min(m) as f64 / s)
            .sum()
    }

    /// The birth-death solution agrees with exact MVA where MVA is stable
    /// (one server), and with the finite-source formula with several.
    #[test]
    fn the_closed_station_is_exact() {
        for (n, s, z) in [
            (1, 1.0, 1.0),
            (5, 2.0, 7.0),
            (40, 0.3, 5.0),
            (1000, 1.0, 20.0),
        ] {
            let mva = inner(n, s, 1, z).last().unwrap().x;
            let bd = closed_station(n, s, 1, z);
            assert!((bd.x / mva - 1.0).abs() < 1e-6, "N={n}: {} vs {mva}", bd.x);
            let want = repairman(n, s, z);
            assert!((bd.x / want - 1.0).abs() < 1e-9);
            // Little's law at the station.
            assert!((bd.cpu_queue - bd.x * bd.cpu_residence).abs() < 1e-6 * n as f64);
        }
        for (n, m, s, z) in [
            (3, 2, 1.0, 2.0),
            (16, 2, 1.0, 4.0),
            (64, 4, 2.0, 30.0),
            (2000, 3, 1.0, 10.0),
            (5, 8, 1.0, 0.5),
        ] {
            let got = closed_station(n, s, m, z).x;
            let want = repairmen(n.min(300), m, s, z);
            if n <= 300 {
                assert!(
                    (got / want - 1.0).abs() < 1e-9,
                    "N={n} m={m}: {got} vs {want}"
                );
            } else {
                assert!(
                    (got / (m as f64 / s) - 1.0).abs() < 1e-9,
                    "saturated: {got}"
                );
            }
        }
        // Nobody thinking: all at the station.
        assert_eq!(closed_station(10, 1.0, 2, 0.0).x, 2.0);
    }

    #[test]
    fn exact_mva_matches_the_machine_repairman() {
        for (n, s, z) in [
            (1, 1.0, 1.0),
            (5, 2.0, 7.0),
            (40, 0.3, 5.0),
            (200, 1.0, 20.0),
        ] {
            let got = inner(n, s, 1, z).last().unwrap().x;
            let want = repairman(n, s, z);
            assert!((got / want - 1.0).abs() < 1e-6, "N={n}: {got} vs {want}");
        }
    }

    #[test]
    fn multi_server_mva_matches_the_finite_source_queue() {
        for (n, m, s, z) in [
            (3, 2, 1.0, 2.0),
            (16, 2, 1.0, 4.0),
            (64, 4, 2.0, 30.0),
            (128, 2, 1.0, 10.0),
        ] {
            let got = inner(n, s, m, z).last().unwrap().x;
            let want = repairmen(n, m, s, z);
            assert!(
                (got / want - 1.0).abs() < 1e-6,
                "N={n} m={m}: {got} vs {want}"
            );
        }
    }

    /// The flow-equivalent server of an exact inner network, with the
    /// delay moved outside, gives the whole network's exact throughput.
    #[test]
    fn the_flow_equivalent_server_is_exact_without_a_limit() {
        for (n, m, s, z) in [(10, 2, 1.0, 5.0), (100, 2, 0.5, 20.0), (300, 1, 1.0, 50.0)] {
            let whole = inner(n, s, m, z).last().unwrap().x;
            let rates: Vec<f64> = inner(n, s, m, 0.0).iter().map(|p| p.x).collect();
            let fes = finite_source(n, z, &rates, n);
            assert!((fes.x / whole - 1.0).abs() < 1e-6, "{} vs {whole}", fes.x);
        }
    }

    /// A limit of `c` admitted users bounds the throughput by the inner
    /// network's at `c`, and with no delay outside everyone waits inside.
    #[test]
    fn a_limit_bounds_throughput() {
        let rates: Vec<f64> = inner(4, 1.0, 2, 3.0).iter().map(|p| p.x).collect();
        let s = finite_source(500, 100.0, &rates, 4);
        assert!(s.x <= rates[3] * (1.0 + 1e-12));
        assert!(s.admitted <= 4.0 + 1e-9 && s.at_server > 4.0);
        let s = finite_source(500, 0.0, &rates, 4);
        assert_eq!(s.x, rates[3]);
        assert_eq!(s.at_server, 500.0);
    }
}
