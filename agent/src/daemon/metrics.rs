//! Prometheus exposition (OpenMetrics text, `prometheus-client`) on a
//! loopback address: per target its state, counters, last sampled signals,
//! advice, settings and trial outcomes; and the agent's own cost. The
//! Grafana dashboard `agent/grafana/redoctor-agent.json` charts them.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response};
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use redoctor_probes::maps::HIST_BUCKETS;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct T {
    pub target: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TSignal {
    pub target: String,
    pub signal: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TSetting {
    pub target: String,
    pub setting: String,
    pub value: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TAdvice {
    pub target: String,
    pub setting: String,
    pub current: String,
    pub proposed: String,
    pub rule: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TOutcome {
    pub target: String,
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Resource {
    pub resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TMode {
    pub target: String,
    pub mode: String,
}

/// A target and one kind of file (redo, binlog, data, other).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TFile {
    pub target: String,
    pub file: String,
}

/// The exported histogram's smallest bound: 2^10 ns (about 1 µs); faster
/// calls count in its bucket.
const FIRST_BOUND_LOG2: usize = 10;
/// Its largest finite bound: 2^33 ns (about 8.6 s); slower calls count in +Inf.
const LAST_BOUND_LOG2: usize = 33;

/// A latency histogram fed with the kernel's log2 buckets (bucket i =
/// [2^i, 2^(i+1)) ns), exported in seconds with bounds 2^10 ns .. 2^33 ns.
#[derive(Debug, Clone, Default)]
pub struct Log2Histogram {
    inner: Arc<std::sync::Mutex<(f64, u64, Vec<u64>)>>,
}

impl Log2Histogram {
    /// Adds `counts` (log2 buckets of ns) whose values sum to `sum_ns`.
    pub fn add(&self, sum_ns: u64, counts: &[u64; HIST_BUCKETS]) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.2.is_empty() {
            g.2 = vec![0; HIST_BUCKETS];
        }
        g.0 += sum_ns as f64 / 1e9;
        g.1 += counts.iter().sum::<u64>();
        for (slot, c) in g.2.iter_mut().zip(counts) {
            *slot += c;
        }
    }

    /// `(upper bound in seconds, count in that bucket)`, the last +Inf.
    fn buckets(counts: &[u64]) -> Vec<(f64, u64)> {
        let at = |i: usize| counts.get(i).copied().unwrap_or(0);
        let mut out = Vec::new();
        // Bound 2^j ns holds bucket j - 1, i.e. [2^(j-1), 2^j); the first
        // also holds everything below.
        out.push((
            (1u64 << FIRST_BOUND_LOG2) as f64 / 1e9,
            (0..FIRST_BOUND_LOG2).map(at).sum(),
        ));
        for j in FIRST_BOUND_LOG2 + 1..=LAST_BOUND_LOG2 {
            out.push(((1u64 << j) as f64 / 1e9, at(j - 1)));
        }
        out.push((f64::MAX, (LAST_BOUND_LOG2..HIST_BUCKETS).map(at).sum()));
        out
    }
}

impl TypedMetric for Log2Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Log2Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, counts) = self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &Self::buckets(&counts), None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

type G = Family<T, Gauge<f64, AtomicU64>>;
type C = Family<T, Counter<f64, AtomicU64>>;

/// Every metric the agent exports.
#[derive(Default)]
pub struct Metrics {
    pub up: G,
    pub pid: G,
    pub mode: Family<TMode, Gauge>,
    pub attaches: C,
    pub commits_per_second: G,
    pub users: G,
    pub fsyncs: Family<TFile, Counter>,
    pub fsyncs_per_second: Family<TFile, Gauge<f64, AtomicU64>>,
    pub fsync_latency: Family<TFile, Log2Histogram>,
    pub commits_per_fsync: G,
    pub fsync_counters_attached: G,
    pub fsync_counters_cost: G,
    pub signal: Family<TSignal, Gauge<f64, AtomicU64>>,
    pub setting: Family<TSetting, Gauge>,
    pub advice: Family<TAdvice, Gauge>,
    pub advice_changes: G,
    pub samples: C,
    pub phase_changes: C,
    pub trials: Family<TOutcome, Counter>,
    pub changes_kept: C,
    pub restores: C,
    pub probes_attached: G,
    pub duty_cycle: G,
    pub tps_cost: G,
    pub bpf_run_seconds: C,
    pub bpf_events: C,
    pub bpf_events_per_second: G,
    pub lost_events: C,
    pub cpu_seconds: Gauge<f64, AtomicU64>,
    pub rss_bytes: Gauge<f64, AtomicU64>,
    pub over_budget: Family<Resource, Gauge>,
    pub sampling_backoff: Gauge,
}

impl Metrics {
    pub fn registry(self: &Arc<Self>) -> Registry {
        let mut r = Registry::with_prefix("redoctor");
        let m = self.as_ref();
        r.register(
            "target_up",
            "1 while the target process is found and attached",
            m.up.clone(),
        );
        r.register(
            "target_pid",
            "The target's current process id",
            m.pid.clone(),
        );
        r.register(
            "target_mode",
            "1 for the target's mode (observe, recommend, apply)",
            m.mode.clone(),
        );
        r.register(
            "target_attaches",
            "Times the agent attached to a (new) target process",
            m.attaches.clone(),
        );
        r.register(
            "target_commits_per_second",
            "Commits/s over the last second (status counter)",
            m.commits_per_second.clone(),
        );
        r.register(
            "target_users",
            "Connected users (status counter)",
            m.users.clone(),
        );
        r.register(
            "target_fsyncs",
            "fsync and fdatasync calls of the target by file kind (the fsync counters)",
            m.fsyncs.clone(),
        );
        r.register(
            "target_fsyncs_per_second",
            "fsync and fdatasync calls/s over the last second, by file kind",
            m.fsyncs_per_second.clone(),
        );
        r.register(
            "target_fsync_latency_seconds",
            "Time inside each fsync or fdatasync call, by file kind",
            m.fsync_latency.clone(),
        );
        r.register(
            "target_commits_per_fsync",
            "Commits per redo-log fsync over the last second (status counter over the fsync counters)",
            m.commits_per_fsync.clone(),
        );
        r.register(
            "agent_fsync_counters_attached",
            "1 while the fsync counters are attached to the target",
            m.fsync_counters_attached.clone(),
        );
        r.register(
            "agent_fsync_counters_cost_percent",
            "The fsync counters' estimated cost at the rate they count, % of the target's CPUs",
            m.fsync_counters_cost.clone(),
        );
        r.register(
            "signal",
            "The last sampled observation's signals (names as in the diagnosis summary)",
            m.signal.clone(),
        );
        r.register(
            "setting_info",
            "1 for each knob's current value",
            m.setting.clone(),
        );
        r.register(
            "advice_info",
            "1 for each change the current advice proposes",
            m.advice.clone(),
        );
        r.register(
            "advice_changes",
            "Changes the current advice proposes",
            m.advice_changes.clone(),
        );
        r.register(
            "samples",
            "Sampled observations, counted once their signals and advice are exported",
            m.samples.clone(),
        );
        r.register(
            "phase_changes",
            "Workload phase changes detected",
            m.phase_changes.clone(),
        );
        r.register(
            "trials",
            "Live trials by outcome (kept, rolled_back_worse, inconclusive, aborted_floor, failed, not_run)",
            m.trials.clone(),
        );
        r.register(
            "changes_kept",
            "Changes kept after a trial",
            m.changes_kept.clone(),
        );
        r.register(
            "restores",
            "Settings restored after an interrupted trial (at start or re-attach)",
            m.restores.clone(),
        );
        r.register(
            "agent_probes_attached",
            "1 while the scheduler/I/O probes are attached to the target",
            m.probes_attached.clone(),
        );
        r.register(
            "agent_probe_duty_cycle",
            "Fraction of the time the probes were attached since the agent started",
            m.duty_cycle.clone(),
        );
        r.register(
            "agent_tps_cost_percent",
            "Estimated cost of the observation, % of the target's TPS: the duty cycle times a loaded window's measured cost, plus the fsync counters' cost",
            m.tps_cost.clone(),
        );
        r.register(
            "agent_bpf_run_seconds",
            "CPU time the probes' BPF programs ran (kernel run-time statistics)",
            m.bpf_run_seconds.clone(),
        );
        r.register(
            "agent_bpf_events",
            "Events the probes' BPF programs handled",
            m.bpf_events.clone(),
        );
        r.register(
            "agent_bpf_events_per_second",
            "Events/s in the last sampled window",
            m.bpf_events_per_second.clone(),
        );
        r.register(
            "agent_lost_events",
            "Events the probes could not record (a full map)",
            m.lost_events.clone(),
        );
        r.register(
            "agent_cpu_seconds",
            "CPU time used by the agent process (user + system), cumulative",
            m.cpu_seconds.clone(),
        );
        r.register(
            "agent_rss_bytes",
            "Resident memory of the agent process",
            m.rss_bytes.clone(),
        );
        r.register(
            "agent_over_budget",
            "1 while the agent's own use of a resource (cpu, rss) is over agent.budget",
            m.over_budget.clone(),
        );
        r.register(
            "agent_sampling_backoff",
            "Factor stretching sampling.every while the agent's CPU is over budget (1 = none)",
            m.sampling_backoff.clone(),
        );
        r
    }

    pub fn t(target: &str) -> T {
        T {
            target: target.to_string(),
        }
    }

    /// Removes the label sets a target showed last (settings and advice),
    /// so a stale value does not linger.
    pub fn clear_values(&self, settings: &[TSetting], advice: &[TAdvice]) {
        for s in settings {
            self.setting.remove(s);
        }
        for a in advice {
            self.advice.remove(a);
        }
    }

    /// Removes a target's fsync rate gauges (their counters and latency
    /// histograms stay: they only ever grow).
    pub fn forget_fsync_rates(&self, target: &str) {
        for kind in redoctor_probes::FileKind::ALL {
            self.fsyncs_per_second.remove(&TFile {
                target: target.to_string(),
                file: kind.to_string(),
            });
        }
    }

    /// Reads the agent's CPU time and RSS from /proc/self.
    pub fn update_self(&self) {
        if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
            // Fields after the command's closing parenthesis; utime, stime are 14, 15.
            if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
                let f: Vec<&str> = rest.split_whitespace().collect();
                let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
                if let (Some(u), Some(s)) = (f.get(11), f.get(12)) {
                    if let (Ok(u), Ok(s)) = (u.parse::<f64>(), s.parse::<f64>()) {
                        self.cpu_seconds.set((u + s) / tick.max(1.0));
                    }
                }
            }
        }
        if let Ok(statm) = std::fs::read_to_string("/proc/self/statm") {
            if let Some(Ok(pages)) = statm.split_whitespace().nth(1).map(str::parse::<f64>) {
                let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as f64;
                self.rss_bytes.set(pages * page);
            }
        }
    }
}

/// Binds `addr` (loopback, checked by the config) and serves `/metrics`
/// until the runtime stops.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
) -> Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("binding the metrics endpoint {addr} (agent.metrics; is another agent running?)")
    })?;
    Ok(tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let registry = registry.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let registry = registry.clone();
                    async move { Ok::<_, std::convert::Infallible>(respond(&req, &registry)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    }))
}

fn respond(req: &Request<hyper::body::Incoming>, registry: &Registry) -> Response<Full<Bytes>> {
    let mut b = Response::builder();
    if req.uri().path() != "/metrics" {
        return b
            .status(404)
            .body(Full::new(Bytes::from(
                "not found: the metrics are at /metrics\n",
            )))
            .expect("a static response");
    }
    let mut text = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, registry) {
        return b
            .status(500)
            .body(Full::new(Bytes::from(format!(
                "encoding the metrics: {e}\n"
            ))))
            .expect("a static response");
    }
    b = b.header(
        "content-type",
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
    );
    b.body(Full::new(Bytes::from(text)))
        .expect("a static response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_map_to_bounds_in_seconds() {
        let mut c = [0u64; HIST_BUCKETS];
        c[3] = 2; // 8-15 ns: below the first bound
        c[10] = 5; // [1024, 2048) ns: bound 2^11 ns
        c[20] = 1; // about 1-2 ms: bound 2^21 ns
        c[40] = 1; // beyond the last bound
        let h = Log2Histogram::default();
        h.add(1_000_000, &c);
        let (sum, count, counts) = h.inner.lock().unwrap().clone();
        assert_eq!(count, 9);
        assert!((sum - 0.001).abs() < 1e-12);
        let b = Log2Histogram::buckets(&counts);
        assert_eq!(b.len(), LAST_BOUND_LOG2 - FIRST_BOUND_LOG2 + 2);
        assert_eq!(b[0], (1024e-9, 2));
        assert_eq!(b[1], (2048e-9, 5));
        let ms = b.iter().find(|(le, _)| *le == (1u64 << 21) as f64 / 1e9);
        assert_eq!(ms.map(|x| x.1), Some(1));
        assert_eq!(*b.last().unwrap(), (f64::MAX, 1));
        // Every call is in one bucket.
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), count);
    }
}
