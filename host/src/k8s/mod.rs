//! `tephra run`: tephra as a Kubernetes scheduler.
//!
//! Each period, the leader builds a [`Cluster`](crate::model::Cluster) from
//! its watch caches ([`source`]), lays the binds and evictions it sent but
//! has not seen back yet over it ([`sink::Assumed`]), runs one
//! [`Scheduler::cycle`], and applies the Outcome: binds and evictions
//! ([`sink`]), then statuses and Events ([`status`]). A standby replica keeps
//! its caches warm and does nothing else ([`leader`]).

pub mod controller;
pub mod events;
pub mod leader;
pub mod sink;
pub mod source;
pub mod status;

use crate::admin::Admin;
use crate::config::SchedulerConfig;
use crate::report::QueueRow;
use crate::scheduler::Scheduler;
use anyhow::{anyhow, Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How `tephra run` runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// A kubeconfig file; in-cluster config (or $KUBECONFIG) when unset.
    pub kubeconfig: Option<PathBuf>,
    /// The scheduler config file, re-read when it changes (a mounted ConfigMap).
    pub config_path: Option<PathBuf>,
    /// `spec.schedulerName` of the pods to schedule.
    pub scheduler_name: String,
    pub admin: Option<String>,
    /// Time between cycles.
    pub period: Duration,
    /// Campaign for a Lease (namespace, name) before scheduling.
    pub leader_elect: Option<(String, String)>,
    pub lease: leader::Timing,
    /// This replica's name in the Lease (the pod name in a Deployment).
    pub identity: String,
    pub evict_mode: sink::EvictMode,
    /// API writes in flight at once: binds, evictions, Scheduled Events,
    /// PodGroup and pod statuses (0 counts as 1).
    pub bind_concurrency: usize,
}

/// Parses "500ms", "2s", "1m" or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("{s:?} is not a duration (like 500ms, 2s, 1m)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m)")),
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("{s:?} must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

async fn client(kubeconfig: Option<&PathBuf>) -> Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).with_context(|| format!("kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))?
        }
        None => Config::infer().await.context("no kubeconfig given and no in-cluster config found")?,
    };
    // No client-side retries: a 429 from a PodDisruptionBudget (with
    // Retry-After) would otherwise hold the whole cycle for minutes; the
    // next cycle is the retry, and the watches back off by themselves.
    let mut config = config;
    config.default_retry = false;
    Client::try_from(config).context("building the Kubernetes client")
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// Runs the scheduler until SIGTERM/SIGINT.
pub fn run(opts: Options, scheduler: Scheduler) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(run_async(opts, scheduler))
}

fn read_config(path: &PathBuf) -> Result<SchedulerConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    SchedulerConfig::parse(&text, &path.display().to_string())
}

async fn run_async(opts: Options, mut scheduler: Scheduler) -> Result<()> {
    let client = client(opts.kubeconfig.as_ref()).await?;
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::warn!("shutting down");
        let _ = stop_tx.send(true);
    });
    let (leadership, elector) = match &opts.leader_elect {
        Some((ns, name)) => {
            let e = leader::Elector::new(client.clone(), ns, name, &opts.identity, opts.lease);
            let l = e.leadership();
            (l, Some(tokio::spawn(e.run(stop.clone()))))
        }
        None => (leader::Leadership::always(), None),
    };
    let admin = opts.admin.as_deref().map(Admin::serve).transpose()?;
    if let Some(a) = &admin {
        eprintln!("admin: listening on http://{}", a.addr);
    }
    let src = source::Source::start(&client, &opts.scheduler_name);
    let mut stopping = stop.clone();
    tokio::select! {
        r = src.ready() => r?,
        _ = stopping.changed() => return Ok(()),
    }
    eprintln!("tephra run: caches synced; scheduling pods with schedulerName {:?}", opts.scheduler_name);
    let rec = events::Recorder::new(client.clone(), &opts.scheduler_name, &opts.identity);
    let mut sink = sink::Sink::new(client.clone(), opts.evict_mode, opts.bind_concurrency, &opts.scheduler_name);
    let mut conv = source::Converter::default();
    let mut config_hash =
        opts.config_path.as_ref().and_then(|p| std::fs::read(p).ok()).map(|b| crate::wasm::content_hash(&b));
    let mut was_leader = false;
    let mut api_down = false;
    let mut counters = Counters::default();
    // The first cycle runs as soon as the caches are synced, then one per period.
    let mut first = true;
    loop {
        if !std::mem::replace(&mut first, false) {
            tokio::select! {
                _ = tokio::time::sleep(opts.period) => {}
                _ = stopping.changed() => {}
            }
        }
        if *stop.borrow() {
            break;
        }
        if let Some(path) = &opts.config_path {
            let hash = std::fs::read(path).ok().map(|b| crate::wasm::content_hash(&b));
            if hash != config_hash {
                config_hash = hash;
                match read_config(path) {
                    Ok(c) => {
                        scheduler.set_config(c);
                        tracing::warn!("reloaded {}", path.display());
                    }
                    Err(e) => tracing::warn!("kept the previous config: {e:#}"),
                }
            }
        }
        if let Some(a) = &admin {
            a.apply(&mut scheduler);
        }
        let mut view = conv.view(&src);
        for bad in &view.invalid {
            tracing::warn!("{}", bad.message);
        }
        if !leadership.is_leader() {
            if was_leader {
                sink.assumed.clear();
            }
            was_leader = false;
            if let Some(a) = &admin {
                a.update_with(&scheduler, &[], &counters.metrics(false, !api_down));
            }
            continue;
        }
        was_leader = true;
        // While the API server is away every write would fail; wait for it
        // (the watches relist by themselves when it is back).
        match client.apiserver_version().await {
            Ok(_) if api_down => {
                api_down = false;
                tracing::warn!("the API server answers again; scheduling resumes");
            }
            Ok(_) => {}
            Err(e) => {
                if !api_down {
                    tracing::warn!("the API server does not answer ({e}); cycles pause until it does");
                }
                api_down = true;
                if let Some(a) = &admin {
                    a.update_with(&scheduler, &[], &counters.metrics(true, false));
                }
                continue;
            }
        }
        report_invalid(&rec, &view).await;
        controller::ensure_queues(&client, &view).await;
        controller::podgroups_for_plain_pods(&client, &view).await;
        view.cluster.ensure_default_queues();
        sink.assumed.overlay(&mut view);
        let started = Instant::now();
        let out = tokio::task::block_in_place(|| scheduler.cycle(&view.cluster, &Default::default(), now_ms()));
        let decided = started.elapsed();
        for f in &out.faults {
            tracing::warn!("plugin {} {}: {}", f.plugin, f.point, f.message);
        }
        for n in std::mem::take(&mut scheduler.notices) {
            tracing::warn!("{n}");
        }
        // Leadership may have gone while the cycle ran; then nothing is applied.
        if !leadership.is_leader() {
            continue;
        }
        let applied = sink.apply(&out, &view, &rec).await;
        counters.add(&applied);
        for (pod, node) in &applied.bound {
            tracing::info!("bound {pod} to {node}");
        }
        let bound = started.elapsed();
        status::write(&client, &out, &view, &rec, opts.bind_concurrency.max(1)).await;
        if let Some(a) = &admin {
            a.update_with(&scheduler, &queue_rows(&view), &counters.metrics(true, true));
        }
        tracing::debug!(
            "cycle took {:?}: decided in {decided:?}, binds and evictions applied at {bound:?}",
            started.elapsed()
        );
    }
    drop(src);
    if let Some(e) = elector {
        let _ = e.await;
    }
    eprintln!("tephra run: stopped");
    Ok(())
}

/// One Warning event per bad object version, on the object itself.
async fn report_invalid(rec: &events::Recorder, view: &source::View) {
    for bad in &view.invalid {
        let mut words = bad.object.splitn(2, ' ');
        let (kind, rest) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let (ns, name) = match rest.split_once('/') {
            Some((ns, n)) => (Some(ns), n),
            None => (None, rest),
        };
        let api = match kind {
            "Queue" | "PodGroup" => source::VOLCANO_API,
            "PriorityClass" => "scheduling.k8s.io/v1",
            _ => "v1",
        };
        let r = events::reference(api, kind, ns, name, &bad.uid);
        rec.emit(&r, events::Kind::Warning, "InvalidObject", &bad.message).await;
    }
}

fn queue_rows(view: &source::View) -> Vec<QueueRow> {
    let mut allocated = status::allocated(view);
    view.cluster
        .queues
        .iter()
        .map(|q| QueueRow {
            name: q.name.clone(),
            allocated: allocated.remove(&q.name).unwrap_or_default(),
            deserved: None,
            share: None,
            jobs: view.cluster.podgroups.iter().filter(|g| g.queue == q.name).count(),
        })
        .collect()
}

/// What the API server accepted and refused, for /metrics.
#[derive(Default)]
struct Counters {
    binds: u64,
    bind_failures: u64,
    evictions: u64,
    eviction_failures: u64,
}

impl Counters {
    fn add(&mut self, a: &sink::Applied) {
        self.binds += a.bound.len() as u64;
        self.bind_failures += a.bind_failures.len() as u64;
        self.evictions += a.evicted.len() as u64;
        self.eviction_failures += a.evict_failures.len() as u64;
    }

    fn metrics(&self, leader: bool, api_up: bool) -> String {
        let mut out = String::new();
        for (name, help, v) in [
            ("tephra_leader", "1 while this replica holds the Lease (or runs without election)", u64::from(leader)),
            ("tephra_apiserver_up", "0 while the API server does not answer", u64::from(api_up)),
            ("tephra_api_binds_total", "pods/binding calls the API server accepted", self.binds),
            ("tephra_api_bind_failures_total", "pods/binding calls refused (409 included)", self.bind_failures),
            ("tephra_api_evictions_total", "evictions the API server accepted", self.evictions),
            (
                "tephra_api_eviction_failures_total",
                "evictions refused (PodDisruptionBudgets included)",
                self.eviction_failures,
            ),
        ] {
            let kind = if name.ends_with("_total") { "counter" } else { "gauge" };
            out += &format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("1h").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("fast").is_err());
    }
}
