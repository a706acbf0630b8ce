//! `tephra run`: tephra as a Kubernetes scheduler.
//!
//! [`Kube`] is a [`Driver`] for the one loop: before each cycle it applies
//! the watch events that arrived to the one long-lived cluster
//! ([`source`]); the loop runs a cycle; the driver applies the Outcome:
//! binds and evictions ([`sink`]), then statuses and Events ([`status`]).
//! What Volcano's controllers would write (PodGroups of plain pods, default
//! queues) goes out in the background ([`controller`]). A standby replica
//! keeps its cluster current and does nothing else ([`leader`]).

#![warn(missing_docs)]

pub mod controller;
pub mod decisions;
pub mod events;
pub mod kinds;
pub mod leader;
pub mod oci;
pub mod review;
pub mod rollout;
pub mod sink;
pub mod snapshot;
pub mod source;
pub mod status;
pub mod volumes;
pub mod watch;

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tephra_model::cluster::Cluster;
use tephra_model::tracked::Mark;
use tephra_scheduler::control::Figure;
use tephra_scheduler::scheduler::{Level, Notice};
use tephra_scheduler::{Cycle, Driver};

/// How `tephra run` runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// A kubeconfig file; in-cluster config (or $KUBECONFIG) when unset.
    pub kubeconfig: Option<PathBuf>,
    /// `spec.schedulerName` of the pods to schedule.
    pub scheduler_name: String,
    /// Time between cycles.
    pub period: Duration,
    /// Campaign for a Lease (namespace, name) before scheduling.
    pub leader_elect: Option<(String, String)>,
    /// Without leader election: the Lease (namespace, name) this replica
    /// announces itself on, to see another active one.
    pub presence: Option<(String, String)>,
    /// The Lease's timing.
    pub lease: leader::Timing,
    /// This replica's name in the Lease (the pod name in a Deployment).
    pub identity: String,
    /// How pods are evicted (the Eviction API, or delete).
    pub evict_mode: sink::EvictMode,
    /// API writes in flight at once: binds, evictions, Scheduled Events,
    /// PodGroup and pod statuses (0 counts as 1).
    pub bind_concurrency: usize,
    /// Node labels HyperNodes are discovered from, highest tier first
    /// (none: only the API's HyperNodes).
    pub hypernode_labels: Vec<String>,
    /// Where admin decisions on plugin versions are kept
    /// ([`decisions::NAME`]): the scheduler's own namespace.
    pub namespace: String,
}

/// An API error as one line an operator reads: `Reason (code): message`,
/// not the client's debug dump of the Status.
pub fn api_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => status_line(s),
        other => other.to_string().split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

fn status_line(s: &kube::core::Status) -> String {
    let reason = if s.reason.is_empty() { "Error" } else { s.reason.as_str() };
    format!("{reason} ({}): {}", s.code, s.message.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A watch's error as one line (see [`api_error`]).
pub fn watch_error(e: &kube::runtime::watcher::Error) -> String {
    use kube::runtime::watcher::Error as W;
    match e {
        W::InitialListFailed(c) | W::WatchStartFailed(c) | W::WatchFailed(c) => api_error(c),
        W::WatchError(s) => status_line(s),
        other => other.to_string(),
    }
}

/// How a watch that keeps failing is logged: the first failure once at
/// INFO with the retry (at start-up a CRD may still be being established),
/// WARN once if it has not recovered after [`Retrying::PATIENCE`], and a
/// line when it works again.
#[derive(Default)]
pub struct Retrying {
    since: Option<std::time::Instant>,
    warned: bool,
}

impl Retrying {
    /// How long a watch may keep failing before it is warned about.
    pub const PATIENCE: Duration = Duration::from_secs(30);

    /// A failure of watch `what`.
    pub fn failed(&mut self, what: &str, why: &str) {
        match self.since {
            None => {
                self.since = Some(std::time::Instant::now());
                tracing::info!("watch {what}: {why}; retrying with backoff");
            }
            Some(t) if !self.warned && t.elapsed() >= Self::PATIENCE => {
                self.warned = true;
                tracing::warn!("watch {what}: still failing after {}s: {why}; retrying", t.elapsed().as_secs());
            }
            Some(_) => tracing::debug!("watch {what}: {why}"),
        }
    }

    /// The watch delivered again.
    pub fn worked(&mut self, what: &str) {
        if self.since.take().is_some() {
            tracing::info!("watch {what}: working again");
        }
        self.warned = false;
    }
}

/// Parses a positive duration: Go-style `1m30s`, `2s`, `500ms`, or plain
/// seconds (the one parser the config and manifests use too).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    match tephra_model::duration::duration_ms(s) {
        Some(ms) if ms > 0 => Ok(Duration::from_millis(ms as u64)),
        Some(_) => Err(format!("{s:?} must be positive")),
        None => Err(format!("{s:?} is not a duration of at most a year (like 500ms, 2s, 1m30s)")),
    }
}

/// A client from `kubeconfig`, or as kube infers one when none is named
/// (`$KUBECONFIG`, `~/.kube/config`, then the in-cluster service account).
pub async fn client(kubeconfig: Option<&PathBuf>) -> Result<Client> {
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

/// The Kubernetes driver: watch caches in, binds, evictions, statuses and
/// Events out. Its async parts run on its own runtime; the loop stays
/// synchronous and calls in between cycles.
pub struct Kube {
    rt: tokio::runtime::Runtime,
    client: Client,
    opts: Options,
    stop: tokio::sync::watch::Receiver<bool>,
    leadership: leader::Leadership,
    elector: Option<tokio::task::JoinHandle<()>>,
    watches: source::Watches,
    /// What the driver keeps of the API objects behind the cluster.
    store: source::Store,
    writer: controller::Writer,
    rec: events::Recorder,
    sink: sink::Sink,
    leader: bool,
    /// Leadership was just taken: the reservations the last leader
    /// persisted are adopted before the next cycle.
    adopting: bool,
    /// Queues, PodGroups and pods as last checked for problems to report
    /// (broken queues, objects pointing at nothing): checked again only
    /// after more than a status changed.
    reported: Option<[Mark; 3]>,
    api_up: bool,
    counters: Counters,
    /// Unreadable objects not reported yet (a standby reports nothing).
    invalid: Vec<source::Invalid>,
    /// Controller writes of this cycle, sent after its binds.
    writes: Vec<controller::Write>,
    /// Plugin objects: declared plugin versions.
    rollouts: rollout::Rollouts,
    /// HyperNodes made from node labels (`--hypernode-labels`).
    discovered: std::collections::BTreeSet<String>,
    /// Admin decisions on plugin versions, kept in the API server.
    decisions: decisions::Decisions,
    /// Those standing at start, for the loop to adopt before its first cycle.
    startup: Vec<decisions::Stored>,
    /// When the current cycle was due to start (the next is a period later).
    cycle_started: Option<std::time::Instant>,
}

impl Kube {
    /// Connects, starts the watches (and the Lease campaign) and waits for
    /// their first lists, which make the cluster it returns; `None` when
    /// stopped (SIGTERM/SIGINT) before that.
    pub fn connect(opts: Options) -> Result<Option<(Kube, Cluster)>> {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let client = rt.block_on(client(opts.kubeconfig.as_ref()))?;
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        rt.spawn(async move {
            shutdown_signal().await;
            tracing::info!("shutting down");
            let _ = stop_tx.send(true);
        });
        // The watches and the elector spawn their tasks on this runtime.
        let guard = rt.enter();
        let (leadership, elector) = match &opts.leader_elect {
            Some((ns, name)) => {
                let e = leader::Elector::new(client.clone(), ns, name, &opts.identity, opts.lease);
                let l = e.leadership();
                (l, Some(rt.spawn(e.run(stop.clone()))))
            }
            None => {
                if let Some((ns, name)) = &opts.presence {
                    let p = leader::Presence::new(client.clone(), ns, name, &opts.identity, opts.lease);
                    rt.spawn(p.run(stop.clone()));
                }
                (leader::Leadership::always(), None)
            }
        };
        let mut watches = source::Watches::start(&client, &opts.scheduler_name);
        let plugins = watch_plugins(&client);
        let writer = controller::Writer::start(client.clone());
        let mut decisions = decisions::Decisions::start(&client, &opts.namespace);
        drop(guard);
        let startup = rt.block_on(decisions.load());
        let mut stopping = stop.clone();
        let (mut store, mut cluster) = (source::Store::default(), Cluster::default());
        let synced = rt.block_on(async {
            while !store.synced() {
                tokio::select! {
                    change = watches.next() => match change {
                        Some(c) => store.apply(&mut cluster, c),
                        None => anyhow::bail!("the watches stopped before their first lists"),
                    },
                    _ = stopping.changed() => return Ok(false),
                }
            }
            Ok(true)
        })?;
        if !synced {
            return Ok(None);
        }
        store.settle(&mut cluster);
        eprintln!("tephra run: caches synced; scheduling pods with schedulerName {:?}", opts.scheduler_name);
        let rec = events::Recorder::new(client.clone(), &opts.scheduler_name, &opts.identity);
        let sink = sink::Sink::new(client.clone(), opts.evict_mode, opts.bind_concurrency, &opts.scheduler_name);
        let rollouts = rollout::Rollouts::new(client.clone(), plugins);
        let kube = Kube {
            rt,
            client,
            opts,
            stop,
            leadership,
            elector,
            watches,
            store,
            writer,
            rec,
            sink,
            leader: false,
            adopting: false,
            reported: None,
            api_up: true,
            counters: Counters::default(),
            invalid: Vec::new(),
            writes: Vec::new(),
            rollouts,
            discovered: Default::default(),
            decisions,
            startup,
            cycle_started: None,
        };
        Ok(Some((kube, cluster)))
    }

    /// The admin decisions standing at start (from the API server), once:
    /// the caller adopts them before the first cycle, so a version rolled
    /// back never runs again after a restart.
    pub fn startup_decisions(&mut self) -> Vec<decisions::Stored> {
        std::mem::take(&mut self.startup)
    }

    /// A token reviewer on this driver's client, for the admin surface.
    /// Writes (or, with `None`, removes) each PodGroup's predicted start
    /// (`namespace/name`, annotation `tephra.io/estimated-start`); only the leader writes.
    pub fn annotate_estimates(&self, changes: &[(String, Option<String>)]) {
        if !self.leadership.is_leader() {
            return;
        }
        for (job, at) in changes {
            let Some((ns, name)) = job.split_once('/') else { continue };
            let api: kube::Api<kube::api::DynamicObject> =
                kube::Api::namespaced_with(self.client.clone(), ns, &kinds::podgroup_resource());
            let patch = serde_json::json!({"metadata": {"annotations": {"tephra.io/estimated-start": at}}});
            let params = kube::api::PatchParams::default();
            if let Err(e) = self.rt.block_on(api.patch(name, &params, &kube::api::Patch::Merge(&patch))) {
                tracing::debug!("estimated start of PodGroup {job}: {e}");
            }
        }
    }

    /// Asks the API server about admin callers, with this driver's client.
    pub fn reviewer(&self) -> review::Reviewer {
        review::Reviewer::new(self.client.clone())
    }

    /// Stops the Lease campaign (releasing the Lease) and the watches.
    pub fn shutdown(self) {
        let Kube { rt, elector, watches, .. } = self;
        drop(watches);
        if let Some(e) = elector {
            let _ = rt.block_on(e);
        }
        eprintln!("tephra run: stopped");
    }
}

impl Driver for Kube {
    type Report = ();

    fn prepare(&mut self, cluster: &mut Cluster) -> Option<i64> {
        if *self.stop.borrow() {
            return None;
        }
        for change in self.watches.drain() {
            self.store.apply(cluster, change);
        }
        self.store.settle(cluster);
        // Without the HyperNodes, topology jobs wait rather than run as if
        // the network were flat.
        let denied = self.watches.denied("hypernodes");
        if cluster.topology_error != denied {
            cluster.topology_error = denied;
        }
        if !self.opts.hypernode_labels.is_empty() {
            let nodes: Vec<_> = cluster.nodes.iter().collect();
            let labels = &self.opts.hypernode_labels;
            tephra_model::topology::refresh_discovered(&mut cluster.hypernodes, &mut self.discovered, &nodes, labels);
        }
        for bad in self.store.take_invalid() {
            tracing::warn!("{}", bad.message);
            self.invalid.push(bad);
        }
        for w in self.writer.failed() {
            self.store.write_failed(&w);
        }
        if !self.leadership.is_leader() {
            if self.leader {
                self.store.forget_assumptions(cluster);
            }
            self.leader = false;
            return None;
        }
        self.adopting |= !self.leader;
        self.leader = true;
        // While the API server is away every write would fail; wait for it
        // (the watches relist by themselves when it is back).
        match self.rt.block_on(self.client.apiserver_version()) {
            Ok(_) if !self.api_up => {
                self.api_up = true;
                tracing::warn!("the API server answers again; scheduling resumes");
            }
            Ok(_) => {}
            Err(e) => {
                if self.api_up {
                    tracing::warn!("the API server does not answer ({e}); cycles pause until it does");
                }
                self.api_up = false;
                return None;
            }
        }
        let invalid = std::mem::take(&mut self.invalid);
        self.rt.block_on(report_invalid(&self.rec, &invalid));
        let marks = [cluster.queues.mark(), cluster.podgroups.mark(), cluster.pods.mark()];
        let changed = self.reported.is_none_or(|[q, g, p]| {
            cluster.queues.changed_whole_since(q)
                || cluster.podgroups.changed_whole_since(g)
                || cluster.pods.changed_whole_since(p)
        });
        if changed {
            self.rt.block_on(report_problems(&self.client, &self.rec, cluster, &self.store));
            self.reported = Some(marks);
        }
        // Sent once this cycle's binds are in: they are what pods wait for.
        self.writes = self.store.take_writes();
        Some(now_ms())
    }

    fn apply(&mut self, cluster: &mut Cluster, cycle: Option<Cycle<'_>>, notices: Vec<Notice>) {
        for n in notices {
            match n.level {
                Level::Info => tracing::info!("{n}"),
                Level::Warn => tracing::warn!("{n}"),
            }
        }
        if let Some(c) = &cycle {
            self.rollouts.observe(c);
        }
        if self.leader && self.leadership.is_leader() {
            self.rt.block_on(self.rollouts.report(&self.rec));
        }
        let Some(cycle) = cycle else { return };
        let out = cycle.outcome;
        for f in &out.faults {
            tracing::warn!("plugin {} {}: {}", f.plugin, f.point, f.message);
        }
        for d in cycle.shadows.iter().filter(|d| d.count() > 0) {
            tracing::info!("shadow of plugin {}: {} decisions differ: {}", d.plugin, d.count(), d.summary(8));
        }
        // Leadership may have gone while the cycle ran; then nothing is applied.
        if !self.leadership.is_leader() {
            for w in std::mem::take(&mut self.writes) {
                self.store.write_failed(&w);
            }
            return;
        }
        let started = std::time::Instant::now();
        let applied = self.rt.block_on(self.sink.apply(out, cluster, &mut self.store, &self.rec));
        self.writer.send(std::mem::take(&mut self.writes));
        self.counters.add(&applied);
        for (pod, node) in &applied.bound {
            tracing::info!("bound {pod} to {node}");
        }
        let bound = started.elapsed();
        let writes = self.opts.bind_concurrency.max(1);
        self.rt.block_on(status::write(&self.client, out, cluster, &self.store, &self.rec, writes));
        tracing::debug!("binds and evictions applied in {bound:?}, statuses written in {:?}", started.elapsed());
    }

    fn wait(&mut self, _: &()) -> bool {
        let mut stopping = self.stop.clone();
        // Cycles start every period (a fixed rate, as the simulator's clock
        // ticks), not a period after the last one ended: a long cycle does
        // not push every later one back. One that overran starts the next
        // at once.
        let now = std::time::Instant::now();
        let due = self.cycle_started.map_or(now + self.opts.period, |t| t + self.opts.period);
        let due = if due <= now { now } else { due };
        self.rt.block_on(async {
            tokio::select! {
                _ = tokio::time::sleep_until(due.into()) => {}
                _ = stopping.changed() => {}
            }
        });
        self.cycle_started = Some(std::time::Instant::now());
        !*self.stop.borrow()
    }

    fn ready(&self) -> bool {
        // Connected means the caches are synced.
        true
    }

    fn rollouts(&mut self) -> Vec<tephra_scheduler::rollout::Rollout> {
        // Every replica fetches and compiles: a follower is warm when it takes over.
        let _in = self.rt.enter();
        let mut out = self.rollouts.sync(self.leadership.is_leader());
        // Every replica adopts the admin decisions another one made.
        for (act, bytes) in self.decisions.changes() {
            out.push(tephra_scheduler::rollout::Rollout {
                key: format!("decision/{}", act.plugin),
                plugin: act.plugin.clone(),
                origin: format!("ConfigMap {}/{}", self.opts.namespace, decisions::NAME),
                source: act.by.describe(),
                declaration: String::new(),
                change: tephra_scheduler::rollout::Change::Adopt { act, bytes },
            });
        }
        out
    }

    fn acted(&mut self, acts: &[tephra_scheduler::Act], scheduler: &tephra_scheduler::Scheduler) {
        self.rt.block_on(self.decisions.record(acts, scheduler));
    }

    fn rolled(&mut self, done: Vec<tephra_scheduler::rollout::Rolled>) {
        for d in done.iter().filter(|d| d.key.starts_with("decision/")) {
            if let Err(e) = &d.result {
                tracing::warn!("admin decision from ConfigMap {}/{}: {e}", self.opts.namespace, decisions::NAME);
            }
        }
        self.rollouts.rolled(done);
    }

    fn figures(&self) -> Vec<Figure> {
        self.counters.figures(self.leader && self.leadership.is_leader(), self.api_up)
    }

    fn record_usage(&mut self, cluster: &mut Cluster, queue: &str, value: String) {
        let api: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(self.client.clone(), &kinds::queue_resource());
        let patch = serde_json::json!({"metadata": {"annotations": {tephra_scheduler::usage::USAGE: value}}});
        let params = kube::api::PatchParams::default();
        if let Err(e) = self.rt.block_on(api.patch(queue, &params, &kube::api::Patch::Merge(&patch))) {
            tracing::warn!("usage of Queue {queue}: {e}");
            return;
        }
        tephra_scheduler::usage::annotate(cluster, queue, value);
    }

    fn adopt(&mut self, now_ms: i64) -> Option<tephra_session::reservation::Reservations> {
        if !std::mem::take(&mut self.adopting) {
            return None;
        }
        let r = self.store.persisted_reservations(now_ms);
        for (q, lock) in &r.queues {
            tracing::info!("adopted queue {q}'s reservation of {}", lock.nodes.join(", "));
        }
        for (job, nodes) in &r.targets {
            tracing::info!("adopted big job {job}'s reservation of [{}]", nodes.join(", "));
        }
        Some(r)
    }
}

/// A cache of the Plugin objects, kept by a watch on the current runtime. A
/// cluster without the CRD has none (one warning; the watch retries).
fn watch_plugins(client: &Client) -> kube::runtime::reflector::Store<kube::api::DynamicObject> {
    use futures::StreamExt;
    use kube::runtime::{reflector, watcher, WatchStreamExt};
    let ar = rollout::plugin_resource();
    let writer = reflector::store::Writer::new(ar.clone());
    let reader = writer.as_reader();
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(client.clone(), &ar);
    let stream = watcher(api, watcher::Config::default()).default_backoff().reflect(writer);
    tokio::spawn(async move {
        let mut retrying = Retrying::default();
        let mut stream = std::pin::pin!(stream);
        while let Some(r) = stream.next().await {
            match r {
                Err(e) => retrying.failed("Plugin objects (plugins.tephra.io)", &watch_error(&e)),
                Ok(watcher::Event::Init) => {}
                Ok(_) => retrying.worked("Plugin objects (plugins.tephra.io)"),
            }
        }
    });
    reader
}

/// One Warning event per bad object version, on the object itself.
async fn report_invalid(rec: &events::Recorder, invalid: &[source::Invalid]) {
    for bad in invalid {
        let mut words = bad.object.splitn(2, ' ');
        let (kind, rest) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let (ns, name) = match rest.split_once('/') {
            Some((ns, n)) => (Some(ns), n),
            None => (None, rest),
        };
        let api = match kind {
            "Queue" | "PodGroup" => kinds::VOLCANO_API,
            "PriorityClass" => "scheduling.k8s.io/v1",
            "HyperNode" => "topology.volcano.sh/v1alpha1",
            "Reservation" => tephra_model::window::API_VERSION,
            _ => "v1",
        };
        let r = events::reference(api, kind, ns, name, &bad.uid);
        rec.emit(&r, events::Kind::Warning, "InvalidObject", &bad.message).await;
    }
}

/// One Warning Event per problem, on the object, as long as it lasts
/// (repeated only when it changes): a queue problem (a broken hierarchy,
/// where the quota plugins refuse to schedule; a quota rule), and what the
/// simulator reports as waiting for a missing object — a pod of ours whose
/// PodGroup, or a PodGroup whose queue, does not exist. Such pods (a
/// PodGroup's: each of its waiting pods of ours) also get the reason as
/// their `PodScheduled=False` condition: no session sees them to give one.
async fn report_problems(client: &Client, rec: &events::Recorder, cluster: &Cluster, store: &source::Store) {
    let findings = tephra_readers::validate::rules(&cluster.queues);
    for (queue, problem) in findings.by_queue() {
        tracing::warn!("Queue {queue}: {problem}");
        let Some(meta) = store.queues.get(queue) else { continue };
        let r = events::reference(kinds::VOLCANO_API, "Queue", None, queue, &meta.uid);
        rec.emit(&r, events::Kind::Warning, "InvalidQueue", problem).await;
    }
    let dangling = cluster.dangling();
    let groups: HashMap<&str, &str> = dangling.iter().map(|(k, why)| (k.as_str(), why.as_str())).collect();
    for (key, why) in &dangling {
        tracing::warn!("{key}: {why}");
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        let r = match (store.pods.get(key), store.podgroups.get(key)) {
            (Some(p), _) if p.ours => events::reference("v1", "Pod", Some(ns), name, &p.uid),
            (None, Some(g)) => events::reference(kinds::VOLCANO_API, "PodGroup", Some(ns), name, &g.uid),
            _ => continue,
        };
        rec.emit(&r, events::Kind::Warning, "FailedScheduling", why).await;
    }
    for p in cluster.pods.iter().filter(|p| p.node.is_none() && !p.deleting) {
        let key = p.key();
        let group = p.group.as_ref().map(|g| format!("{}/{g}", p.namespace));
        let why = match (groups.get(key.as_str()), group.and_then(|g| Some((groups.get(g.as_str())?, g)))) {
            (Some(why), _) => why.to_string(),
            (None, Some((why, g))) => format!("PodGroup {g}: {why}"),
            (None, None) => continue,
        };
        let Some(meta) = store.pods.get(&key).filter(|m| m.ours) else { continue };
        if meta.scheduled.as_ref().is_some_and(|c| c.status == "False" && c.message.as_deref() == Some(&why)) {
            continue;
        }
        let pod = sink::PodRef::of(p, meta);
        if let Err(e) = sink::set_unschedulable(client, &pod, &why).await {
            tracing::warn!("condition of Pod {key}: {e}");
        }
    }
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

    fn figures(&self, leader: bool, api_up: bool) -> Vec<Figure> {
        let f = |name, help, counter, value: u64| Figure { name, help, counter, value: value as f64 };
        vec![
            f(
                "tephra_leader",
                "1 while this replica holds the Lease (or runs without election)",
                false,
                u64::from(leader),
            ),
            f("tephra_apiserver_up", "0 while the API server does not answer", false, u64::from(api_up)),
            f("tephra_api_binds_total", "pods/binding calls the API server accepted", true, self.binds),
            f("tephra_api_bind_failures_total", "pods/binding calls refused (409 included)", true, self.bind_failures),
            f("tephra_api_evictions_total", "evictions the API server accepted", true, self.evictions),
            f(
                "tephra_api_eviction_failures_total",
                "evictions refused (PodDisruptionBudgets included)",
                true,
                self.eviction_failures,
            ),
        ]
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
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("1d").unwrap_err().contains("is not a duration"));
        // Past a year (or u64 ms) is refused, not wrapped into a panic later.
        assert!(parse_duration("18446744073709551616s").unwrap_err().contains("at most a year"));
        assert!(parse_duration("NaN").is_err() && parse_duration("inf").is_err());
        assert!(parse_duration("fast").is_err());
    }
}
