//! A trace replayed on a live cluster, for the policy lab's fidelity check
//! (`tephra fidelity`): each job's PodGroup is created at its submit time,
//! the clock compressed by `speed` (trace seconds per wall second); its pods
//! once tephra admits the PodGroup, as Volcano's job controller makes a
//! Job's pods (and as the simulator replays a trace); a pod evicted before it
//! finished is made again. The pods carry their run time as
//! `tephra.io/duration` (compressed too), which the cluster's kubelets (kwok)
//! honour. What happened is read from the API server's watch: when each pod
//! ran, where, and when it ended, in trace seconds.

use anyhow::{anyhow, Context, Result};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tephra_kube::kinds::podgroup_resource;
use tephra_model::cluster::{Node, Queue};
use tephra_readers::trace::{TraceJob, GPU, TRACE_JOB};
use tokio::sync::mpsc;

/// How a replay runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The cluster's kubeconfig (none: as kube infers one).
    pub kubeconfig: Option<PathBuf>,
    /// Trace seconds per wall second.
    pub speed: f64,
    /// Give up (with what was seen) after this long.
    pub timeout: Duration,
}

/// Makes the nodes and queues of a workload on the cluster (kwok manages
/// every node, so they become Ready; the node lifecycle controller lifts
/// their not-ready taint) and waits until every node is Ready and
/// untainted. A cluster holding other nodes is refused: the comparison
/// needs the same nodes on both sides.
pub fn prepare(nodes: &[Node], queues: &[Queue], opts: &Options) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async {
        let client = tephra_kube::client(opts.kubeconfig.as_ref()).await?;
        let api: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
        let ours: BTreeSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        let existing = api.list(&Default::default()).await.map_err(|e| anyhow!("nodes: {}", tephra_kube::api_error(&e)))?;
        let others: Vec<String> =
            existing.items.iter().filter_map(|n| n.metadata.name.clone()).filter(|n| !ours.contains(n.as_str())).collect();
        if !others.is_empty() {
            return Err(anyhow!(
                "the cluster has {} nodes of its own ({}…): start an empty one (./dev cluster up 0)",
                others.len(),
                others[0]
            ));
        }
        let have: BTreeSet<String> = existing.items.iter().filter_map(|n| n.metadata.name.clone()).collect();
        for (i, n) in nodes.iter().enumerate().filter(|(_, n)| !have.contains(&n.name)) {
            let res: serde_json::Map<String, serde_json::Value> =
                n.allocatable.iter().map(|(k, v)| (k.clone(), json!(tephra_kube::kinds::quantity(k, *v)))).collect();
            let mut labels = n.labels.clone();
            labels.entry("kubernetes.io/hostname".into()).or_insert_with(|| n.name.clone());
            let taints: Vec<serde_json::Value> =
                n.taints.iter().map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect})).collect();
            let obj: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
                "metadata": {"name": n.name, "labels": labels},
                "spec": {"providerID": format!("kwok://{}", n.name), "taints": taints, "unschedulable": n.unschedulable},
                "status": {
                    "allocatable": res, "capacity": res,
                    "addresses": [{"type": "InternalIP", "address": format!("10.251.{}.{}", i / 250, i % 250 + 1)}],
                },
            }))?;
            api.create(&PostParams::default(), &obj).await.map_err(|e| anyhow!("node {}: {}", n.name, tephra_kube::api_error(&e)))?;
        }
        let qapi: Api<DynamicObject> = Api::all_with(client.clone(), &tephra_kube::kinds::queue_resource());
        for q in queues {
            let list = |r: &tephra_model::resource::ResourceList| -> serde_json::Map<String, serde_json::Value> {
                r.iter().map(|(k, v)| (k.clone(), json!(tephra_kube::kinds::quantity(k, *v)))).collect()
            };
            let mut spec = json!({"weight": q.weight, "reclaimable": q.reclaimable, "priority": q.priority});
            for (field, r) in [("capability", &q.capability), ("deserved", &q.deserved)] {
                if !r.is_empty() {
                    spec[field] = json!(list(r));
                }
            }
            if !q.guarantee.is_empty() {
                spec["guarantee"] = json!({"resource": list(&q.guarantee)});
            }
            if let Some(p) = &q.parent {
                spec["parent"] = json!(p);
            }
            let obj: DynamicObject = serde_json::from_value(json!({
                "apiVersion": tephra_kube::kinds::VOLCANO_API, "kind": "Queue",
                "metadata": {"name": q.name, "annotations": q.annotations}, "spec": spec,
            }))?;
            match qapi.create(&PostParams::default(), &obj).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => return Err(anyhow!("Queue {}: {}", q.name, tephra_kube::api_error(&e))),
            }
        }
        for _ in 0..1200 {
            let list = api.list(&Default::default()).await.map_err(|e| anyhow!("nodes: {}", tephra_kube::api_error(&e)))?;
            let ready = list
                .items
                .iter()
                .filter(|n| {
                    let st = n.status.as_ref();
                    let is_ready = st.and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
                        c.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                    });
                    let tainted = n.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some_and(|t| {
                        t.iter().any(|t| t.key == "node.kubernetes.io/not-ready")
                    });
                    is_ready && !tainted
                })
                .count();
            if ready >= nodes.len() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err(anyhow!("the nodes did not become Ready in 600 s (are kube-controller-manager and kwok running?)"))
    })
}

/// One run of a pod: where, from when to when (trace seconds).
#[derive(Clone, Debug, PartialEq)]
pub struct PodRun {
    /// The pod's name.
    pub pod: String,
    /// The task it was made for (its index in the job).
    pub task: u32,
    /// The node it ran on.
    pub node: String,
    /// When it started running.
    pub start: f64,
    /// When it ended (none while it runs).
    pub end: Option<f64>,
    /// Ended by an eviction, not by finishing.
    pub evicted: bool,
}

/// What became of one trace job on the cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// The trace job.
    pub job: String,
    /// Its queue.
    pub queue: String,
    /// When its PodGroup was created (trace seconds).
    pub arrived: f64,
    /// Its pods' runs.
    pub runs: Vec<PodRun>,
}

/// A job's state during the replay, by task (the pods made for a task carry
/// its index in the label [`TASK`]).
struct Job<'a> {
    spec: &'a TraceJob,
    arrived: Option<f64>,
    pods_made: bool,
    /// Per task: its open run (the index in `runs`), whether it finished,
    /// and how many pods were made for it.
    open: BTreeMap<u32, usize>,
    done: BTreeSet<u32>,
    made: BTreeMap<u32, u32>,
    runs: Vec<PodRun>,
}

/// The label naming a pod's task in its trace job.
const TASK: &str = "tephra.io/trace-task";

enum Seen {
    Pod(Box<Event<Pod>>),
    Group(Box<Event<DynamicObject>>),
}

/// Replays `jobs` on the cluster and returns what each did.
pub fn replay(jobs: &[TraceJob], opts: &Options) -> Result<Vec<Observed>> {
    if opts.speed <= 0.0 {
        return Err(anyhow!("--speed must be positive"));
    }
    if let Some(j) = jobs.iter().find(|j| j.priority != 0) {
        return Err(anyhow!("job {}: priorities are not replayed on a cluster yet", j.job));
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(run(jobs, opts))
}

async fn run(jobs: &[TraceJob], opts: &Options) -> Result<Vec<Observed>> {
    let client = tephra_kube::client(opts.kubeconfig.as_ref()).await?;
    for ns in jobs.iter().map(|j| j.namespace.as_str()).collect::<BTreeSet<_>>() {
        namespace(&client, ns).await?;
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let pods: Api<Pod> = Api::all(client.clone());
    let groups: Api<DynamicObject> = Api::all_with(client.clone(), &podgroup_resource());
    let config = watcher::Config::default().labels(TRACE_JOB);
    for task in [
        tokio::spawn(forward(watcher::watcher(pods, config.clone()).default_backoff(), tx.clone(), |e| {
            Seen::Pod(Box::new(e))
        })),
        tokio::spawn(forward(watcher::watcher(groups, config).default_backoff(), tx, |e| Seen::Group(Box::new(e)))),
    ] {
        drop(task);
    }
    // Objects are created on tasks of their own: a burst of arrivals must
    // not hold up the clock or the watch; a failure ends the replay.
    let (failures, mut errors) = mpsc::unbounded_channel::<anyhow::Error>();
    let t0 = Instant::now();
    let now = || t0.elapsed().as_secs_f64() * opts.speed;
    let mut order: Vec<&TraceJob> = jobs.iter().collect();
    order.sort_by(|a, b| a.submit.total_cmp(&b.submit));
    let mut state: BTreeMap<String, Job> = order
        .iter()
        .map(|j| {
            let job = Job {
                spec: j,
                arrived: None,
                pods_made: false,
                open: BTreeMap::new(),
                done: BTreeSet::new(),
                made: BTreeMap::new(),
                runs: Vec::new(),
            };
            (j.job.clone(), job)
        })
        .collect();
    let total: usize = jobs.iter().map(|j| j.tasks as usize).sum();
    let mut next = 0;
    let deadline = t0 + opts.timeout;
    while state.values().map(|j| j.done.len()).sum::<usize>() < total {
        if Instant::now() > deadline {
            tracing::warn!("replay: gave up after {}s with jobs unfinished", opts.timeout.as_secs());
            break;
        }
        // The next arrival is due: its PodGroup.
        if let Some(j) = order.get(next) {
            let due = t0 + Duration::from_secs_f64(j.submit / opts.speed);
            if Instant::now() >= due {
                spawn(&failures, create_group(client.clone(), (*j).clone(), opts.speed));
                if let Some(s) = state.get_mut(&j.job) {
                    s.arrived = Some(now());
                }
                next += 1;
                continue;
            }
        }
        let wake = order.get(next).map_or(deadline, |j| t0 + Duration::from_secs_f64(j.submit / opts.speed));
        let seen = tokio::select! {
            s = rx.recv() => s,
            Some(e) = errors.recv() => return Err(e),
            _ = tokio::time::sleep_until(wake.min(deadline).into()) => continue,
        };
        let Some(seen) = seen else { return Err(anyhow!("replay: the watches stopped")) };
        let t = now();
        match seen {
            Seen::Group(e) => {
                let (Event::Apply(g) | Event::InitApply(g)) = *e else { continue };
                let name = g.metadata.name.clone().unwrap_or_default();
                let phase = g.data["status"]["phase"].as_str().unwrap_or("");
                let Some(s) = state.get_mut(&name) else { continue };
                if !s.pods_made && matches!(phase, "Inqueue" | "Running") {
                    s.pods_made = true;
                    for i in 0..s.spec.tasks {
                        s.made.insert(i, 1);
                        spawn(&failures, create_pod(client.clone(), s.spec.clone(), i, 0, opts.speed));
                    }
                }
            }
            Seen::Pod(e) => match *e {
                Event::Apply(p) | Event::InitApply(p) => {
                    let Some((job, task)) = task_of(&p) else { continue };
                    let Some(s) = state.get_mut(&job) else { continue };
                    let pod = p.metadata.name.clone().unwrap_or_default();
                    let phase = p.status.as_ref().and_then(|st| st.phase.clone()).unwrap_or_default();
                    let node = p.spec.as_ref().and_then(|sp| sp.node_name.clone()).unwrap_or_default();
                    if s.done.contains(&task) {
                        continue;
                    }
                    let deleting = p.metadata.deletion_timestamp.is_some();
                    match (phase.as_str(), s.open.get(&task).copied()) {
                        ("Running", None) if !deleting => {
                            s.runs.push(PodRun { pod, task, node, start: t, end: None, evicted: false });
                            s.open.insert(task, s.runs.len() - 1);
                        }
                        ("Succeeded", Some(r)) if s.runs[r].pod == pod => {
                            s.runs[r].end = Some(t);
                            s.open.remove(&task);
                            s.done.insert(task);
                        }
                        ("Succeeded", None) => {
                            // Ran and finished between two events seen.
                            s.runs.push(PodRun { pod, task, node, start: t, end: Some(t), evicted: false });
                            s.done.insert(task);
                        }
                        (_, Some(r)) if s.runs[r].pod == pod && (deleting || phase == "Failed") => {
                            s.runs[r].end.get_or_insert(t);
                            s.runs[r].evicted = true;
                            s.open.remove(&task);
                        }
                        _ => {}
                    }
                }
                Event::Delete(p) => {
                    let Some((job, task)) = task_of(&p) else { continue };
                    let Some(s) = state.get_mut(&job) else { continue };
                    let pod = p.metadata.name.clone().unwrap_or_default();
                    if let Some(r) = s.open.get(&task).copied().filter(|&r| s.runs[r].pod == pod) {
                        s.runs[r].end.get_or_insert(t);
                        s.runs[r].evicted = true;
                        s.open.remove(&task);
                    }
                    // Evicted: made again (under a new name, so nothing meant
                    // for the old pod reaches the new one), as Volcano's job
                    // controller makes an evicted task's pod again.
                    let latest = s.made.get(&task).copied().unwrap_or(1);
                    let is_latest = pod == pod_name(&s.spec.job, task, latest - 1);
                    if !s.done.contains(&task) && is_latest {
                        s.made.insert(task, latest + 1);
                        spawn(&failures, create_pod(client.clone(), s.spec.clone(), task, latest, opts.speed));
                    }
                }
                _ => {}
            },
        }
    }
    Ok(state
        .into_values()
        .map(|s| Observed {
            job: s.spec.job.clone(),
            queue: s.spec.queue.clone(),
            arrived: s.arrived.unwrap_or(s.spec.submit),
            runs: s.runs,
        })
        .collect())
}

/// Runs `create` on a task of its own; an error goes to `failures`.
fn spawn(
    failures: &mpsc::UnboundedSender<anyhow::Error>,
    create: impl std::future::Future<Output = Result<()>> + Send + 'static,
) {
    let failures = failures.clone();
    tokio::spawn(async move {
        if let Err(e) = create.await {
            let _ = failures.send(e);
        }
    });
}

/// Sends a watch's events on, tagged.
async fn forward<K, S>(stream: S, tx: mpsc::UnboundedSender<Seen>, tag: impl Fn(Event<K>) -> Seen)
where
    S: futures::Stream<Item = Result<Event<K>, watcher::Error>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut retrying = tephra_kube::Retrying::default();
    while let Some(e) = stream.next().await {
        match e {
            Ok(ev) => {
                if tx.send(tag(ev)).is_err() {
                    return;
                }
            }
            Err(e) => retrying.failed("replay", &tephra_kube::watch_error(&e)),
        }
    }
}

/// The trace job and task a pod was made for.
fn task_of(p: &Pod) -> Option<(String, u32)> {
    let labels = p.metadata.labels.as_ref()?;
    Some((labels.get(TRACE_JOB)?.clone(), labels.get(TASK)?.parse().ok()?))
}

/// The pod made for `task` the `attempt`-th time (0: `job-3`, then `job-3-r1`, …).
fn pod_name(job: &str, task: u32, attempt: u32) -> String {
    match attempt {
        0 => format!("{job}-{task}"),
        n => format!("{job}-{task}-r{n}"),
    }
}

/// `s` trace seconds as a Go duration on the compressed clock.
fn wall(s: f64, speed: f64) -> String {
    format!("{}ms", ((s / speed) * 1000.0).round().max(1.0) as u64)
}

/// The namespace, and its default ServiceAccount (the ServiceAccount
/// admission plugin refuses pods until the controller made it).
async fn namespace(client: &kube::Client, ns: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let obj: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(anyhow!("namespace {ns}: {}", tephra_kube::api_error(&e))),
    }
    let sa: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    for _ in 0..300 {
        if sa.get_opt("default").await.ok().flatten().is_some() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(anyhow!("namespace {ns}: no default ServiceAccount after 60 s (is kube-controller-manager running?)"))
}

/// Each task's requests, as the trace writes them.
fn requests(j: &TraceJob) -> serde_json::Map<String, serde_json::Value> {
    [("cpu", &j.cpu), ("memory", &j.memory), (GPU, &j.gpu)]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), json!(v.as_ref()?))))
        .collect()
}

async fn create_group(client: kube::Client, j: TraceJob, speed: f64) -> Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(client, &j.namespace, &podgroup_resource());
    let per: BTreeMap<String, f64> = requests(&j)
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), tephra_model::resource::parse_resource(k, v.as_str()?).ok()?)))
        .collect();
    let min: serde_json::Map<String, serde_json::Value> = per
        .iter()
        .map(|(k, v)| (k.clone(), json!(tephra_kube::kinds::quantity(k, v * f64::from(j.min_available)))))
        .collect();
    let mut annotations = serde_json::Map::new();
    if let Some(limit) = &j.time_limit {
        let secs = tephra_model::duration::duration_ms(limit).map(|ms| ms as f64 / 1000.0).unwrap_or(0.0);
        annotations.insert(tephra_model::timelimit::TIME_LIMIT.into(), json!(wall(secs, speed)));
    }
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": tephra_kube::kinds::VOLCANO_API, "kind": "PodGroup",
        "metadata": {"name": j.job, "namespace": j.namespace, "labels": {TRACE_JOB: j.job}, "annotations": annotations},
        "spec": {"minMember": j.min_available, "queue": j.queue, "minResources": min},
    }))?;
    api.create(&PostParams::default(), &obj)
        .await
        .map_err(|e| anyhow!("PodGroup {}/{}: {}", j.namespace, j.job, tephra_kube::api_error(&e)))
        .map(|_| ())
}

async fn create_pod(client: kube::Client, j: TraceJob, i: u32, attempt: u32, speed: f64) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(client, &j.namespace);
    let name = pod_name(&j.job, i, attempt);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": j.namespace, "labels": {TRACE_JOB: j.job, TASK: i.to_string()},
            "annotations": {
                "scheduling.k8s.io/group-name": j.job,
                tephra_readers::manifest::DURATION: wall(j.duration, speed),
            },
        },
        "spec": {
            "schedulerName": "volcano", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "task", "image": "trace", "resources": {"requests": requests(&j)}}],
        },
    }))?;
    // A pod made again right after its eviction may still be going.
    for attempt in 0..100 {
        match api.create(&PostParams::default(), &pod).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < 99 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => {
                return Err(anyhow!("pod {}/{name}: {}", j.namespace, tephra_kube::api_error(&e))).context("replay")
            }
        }
    }
    Ok(())
}
