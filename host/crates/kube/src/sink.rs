//! Applies a cycle's decisions to the API server: binds through
//! `pods/binding` (their claims' volumes first, see [`volumes`]), evictions
//! through the Eviction API (or a plain delete), nominations through pod
//! status.
//!
//! The Outcome holds only committed statements, so a gang reaches here whole.
//! Until the watch shows a bind or an eviction, the store *assumes* it (the
//! cluster shows it at once), so a slow watch never makes the scheduler place
//! the same pod twice. A failed bind resyncs the pod with a GET; the API
//! server itself refuses a second binding of a bound pod (409), so a bind can
//! never land twice.

use super::events::{reference, refusal, Kind, Recorder};
use super::kinds::{GROUP_ANNOTATION, VOLCANO_API};
use super::source::Store;
use super::volumes;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, EvictParams, Patch, PatchParams, PostParams, Preconditions};
use kube::Client;
use serde_json::json;
use std::collections::HashMap;
use tephra_model::cluster::Cluster;
use tephra_model::storage;
use tephra_session::session::{Decision, Outcome};

/// How pods are evicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EvictMode {
    /// `pods/eviction` (policy/v1): PodDisruptionBudgets are respected.
    Eviction,
    /// A plain DELETE, as Volcano does: no PodDisruptionBudget check.
    Delete,
}

/// What applying one Outcome did.
#[derive(Debug, Default)]
pub struct Applied {
    /// (pod key, node).
    pub bound: Vec<(String, String)>,
    /// (pod key, error).
    pub bind_failures: Vec<(String, String)>,
    /// Pod keys evicted.
    pub evicted: Vec<String>,
    /// (pod key, error).
    pub evict_failures: Vec<(String, String)>,
}

/// A pod as the API calls need it.
#[derive(Clone, Debug)]
pub struct PodRef {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` (a precondition: a pod made again is not touched).
    pub uid: String,
    /// The PodGroup annotation the pod still lacks in the API
    /// ([`crate::source::PodMeta::group_note`]), written with its binding.
    pub group_note: Option<String>,
}

impl PodRef {
    /// The reference to `pod`, as the driver keeps it in `meta`.
    pub fn of(pod: &tephra_model::cluster::Pod, meta: &crate::source::PodMeta) -> PodRef {
        PodRef {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
            uid: meta.uid.clone(),
            group_note: meta.group_note.clone(),
        }
    }

    fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn object(&self) -> ObjectReference {
        reference("v1", "Pod", Some(&self.namespace), &self.name, &self.uid)
    }
}

/// Writes decisions to the API server.
pub struct Sink {
    client: Client,
    /// How pods are evicted.
    pub mode: EvictMode,
    /// Binds (and evictions) in flight at once.
    pub concurrency: usize,
    scheduler_name: String,
}

impl Sink {
    /// Writes through `client`, `concurrency` writes in flight, as `scheduler_name`.
    pub fn new(client: Client, mode: EvictMode, concurrency: usize, scheduler_name: &str) -> Self {
        Sink { client, mode, concurrency: concurrency.max(1), scheduler_name: scheduler_name.into() }
    }

    /// Applies the decisions of `out`, taken on `cluster`; what the API
    /// server accepted is assumed in `store` and shows in `cluster` at once.
    pub async fn apply(&self, out: &Outcome, cluster: &mut Cluster, store: &mut Store, rec: &Recorder) -> Applied {
        let mut applied = Applied::default();
        let pod_of = |task: u32| -> Option<PodRef> {
            let p = cluster.pods.get(*out.extra.task_pod.get(task as usize)?)?;
            let m = store.pods.get(&p.key())?;
            Some(PodRef::of(p, m))
        };
        let (mut binds, mut evictions, mut nominations) = (Vec::new(), Vec::new(), Vec::new());
        for d in &out.decisions {
            match d {
                Decision::Bind { task, node } => {
                    if let Some(p) = pod_of(*task) {
                        let (job, pod) = (out.task_job[*task as usize], out.extra.task_pod[*task as usize]);
                        binds.push((p, out.names.nodes[*node as usize].clone(), job, pod));
                    }
                }
                Decision::Evict { task, reason } => {
                    if let Some(p) = pod_of(*task) {
                        let group = out.names.jobs[out.task_job[*task as usize] as usize].clone();
                        evictions.push((p, reason.clone(), group));
                    }
                }
                Decision::Nominate { task, node } => {
                    let current =
                        cluster.pods.get(out.extra.task_pod[*task as usize]).and_then(|p| p.nominated_node.clone());
                    let node = out.names.nodes[*node as usize].clone();
                    if let Some(p) = pod_of(*task).filter(|_| current.as_deref() != Some(node.as_str())) {
                        nominations.push((p, node));
                    }
                }
            }
        }
        // Evictions first: the binds of this cycle never depend on them (a
        // pod placed on room being freed is pipelined, not bound).
        let client = &self.client;
        let mode = self.mode;
        let name = &self.scheduler_name;
        let results: Vec<_> = futures::stream::iter(evictions)
            .map(|(pod, reason, group)| async move {
                let r = evict(client, &pod, &reason, mode, name).await;
                (pod, reason, group, r)
            })
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        for (pod, reason, group, r) in results {
            let key = pod.key();
            match r {
                Ok(()) => {
                    rec.write(&pod.object(), Kind::Warning, "Evict", &format!("Pod is evicted, because of {reason}"))
                        .await;
                    if let Some(g) = store.podgroups.get(&group) {
                        let (ns, gname) = group.split_once('/').unwrap_or(("", &group));
                        let gref = reference(VOLCANO_API, "PodGroup", Some(ns), gname, &g.uid);
                        rec.write(&gref, Kind::Normal, "Evict", &format!("Evicted {key}: {reason}")).await;
                    }
                    store.assume_eviction(cluster, &key);
                    tracing::info!("evicted {key} ({reason})");
                    applied.evicted.push(key);
                }
                Err(e) => {
                    tracing::warn!("evict {key}: {e}");
                    rec.emit(&pod.object(), Kind::Warning, "EvictFailed", &e).await;
                    applied.evict_failures.push((key, e));
                }
            }
        }
        // Claims bound on first consumer get their volumes with the
        // placement, a job's all or none; a pod none is left for waits.
        let keys: Vec<(u32, usize, &str)> = binds.iter().map(|(_, n, job, pod)| (*job, *pod, n.as_str())).collect();
        let picks = storage::pick_binds(cluster, &keys);
        let mut versions = HashMap::new();
        let mut ready = Vec::new();
        for ((pod, node, ..), pick) in binds.into_iter().zip(picks) {
            match pick {
                Ok(writes) => {
                    for b in &writes {
                        if let storage::Bind::Volume { volume, .. } = b {
                            versions.insert(volume.clone(), store.version("persistentvolumes", volume));
                        }
                    }
                    ready.push((pod, node, writes));
                }
                Err(why) => {
                    let key = pod.key();
                    tracing::info!("not binding {key} to {node}: {why}");
                    let message = format!("binding volumes: {why}");
                    rec.emit(&pod.object(), Kind::Warning, "FailedScheduling", &message).await;
                    applied.bind_failures.push((key, message));
                }
            }
        }
        let versions = &versions;
        let results: Vec<_> = futures::stream::iter(ready)
            .map(|(pod, node, writes)| async move {
                let written =
                    match volumes::write(client, &writes, &pod.uid, |v| versions.get(v).cloned().flatten()).await {
                        Ok(w) => w,
                        Err(e) => return (pod, node, Vec::new(), Err(e)),
                    };
                let r = bind(client, &pod, &node).await;
                if r.is_err() {
                    volumes::undo(client, &written).await;
                }
                (pod, node, written, r)
            })
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        let mut scheduled = Vec::new();
        for (pod, node, written, r) in results {
            let key = pod.key();
            match r {
                Ok(()) => {
                    for w in &written {
                        storage::assume(cluster, &w.bind);
                    }
                    scheduled.push((pod.object(), format!("Successfully assigned {key} to {node}")));
                    store.assume_bind(cluster, &key, &node);
                    applied.bound.push((key, node));
                }
                Err(e) => {
                    // Resync: what the API server holds now decides the next cycle.
                    let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
                    let now = api.get_opt(&pod.name).await;
                    let resync = match &now {
                        Ok(Some(p)) => match p.spec.as_ref().and_then(|s| s.node_name.clone()) {
                            Some(n) if p.metadata.uid.as_deref() == Some(pod.uid.as_str()) => {
                                store.assume_bind(cluster, &key, &n);
                                format!("it is bound to {n}")
                            }
                            _ => "it is still unbound".to_string(),
                        },
                        Ok(None) => "it is gone".to_string(),
                        // The bind may have been applied with its answer
                        // lost (the API server going away): it is assumed
                        // until the watch says, never placed again meanwhile.
                        Err(e) => {
                            store.assume_bind(cluster, &key, &node);
                            format!("resync failed: {e}; assumed bound to {node} until the watch says")
                        }
                    };
                    tracing::warn!("bind {key} to {node}: {e}; {resync}");
                    if !e.contains("409") {
                        let _ = set_condition(
                            &self.client,
                            &pod,
                            json!({"type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": e}),
                        )
                        .await;
                    }
                    applied.bind_failures.push((key, format!("{e}; {resync}")));
                }
            }
        }
        // Scheduled Events once every bind is in (binds first: they are what
        // pods wait for), written concurrently: one by one, 5,000 took 10 s.
        futures::stream::iter(scheduled)
            .for_each_concurrent(self.concurrency, |(obj, msg)| async move {
                rec.write(&obj, Kind::Normal, "Scheduled", &msg).await;
            })
            .await;
        for (pod, node) in nominations {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
            let patch = json!({"status": {"nominatedNodeName": node}});
            if let Err(e) = api.patch_status(&pod.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                tracing::warn!("nominate {} on {node}: {e}", pod.key());
            }
        }
        applied
    }
}

async fn bind(client: &Client, pod: &PodRef, node: &str) -> Result<(), String> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(pod.name.clone()),
            namespace: Some(pod.namespace.clone()),
            // Only this incarnation of the pod: a recreated pod of the same name is refused.
            uid: Some(pod.uid.clone()),
            // The API server merges a binding's annotations into the pod.
            annotations: pod.group_note.as_ref().map(|g| [(GROUP_ANNOTATION.to_string(), g.clone())].into()),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.into()),
            ..Default::default()
        },
    };
    api.create_subresource::<Binding, serde_json::Value>("binding", &pod.name, &PostParams::default(), &binding)
        .await
        .map(|_| ())
        .map_err(refusal)
}

/// Marks a pod that waits `PodScheduled=False` (reason `Unschedulable`,
/// `message`), and writes the PodGroup annotation it still lacks.
pub async fn set_unschedulable(client: &Client, pod: &PodRef, message: &str) -> Result<(), String> {
    let cond = json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message});
    set_condition(client, pod, cond).await?;
    match &pod.group_note {
        Some(g) => super::controller::annotate(client, &pod.namespace, &pod.name, g).await,
        None => Ok(()),
    }
}

/// Sets one pod condition (merged by type) through the status subresource.
pub async fn set_condition(client: &Client, pod: &PodRef, mut condition: serde_json::Value) -> Result<(), String> {
    condition["lastTransitionTime"] = json!(Timestamp::now().to_string());
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
    let patch = json!({"status": {"conditions": [condition]}});
    api.patch_status(&pod.name, &PatchParams::default(), &Patch::Strategic(&patch)).await.map(|_| ()).map_err(refusal)
}

async fn evict(client: &Client, pod: &PodRef, reason: &str, mode: EvictMode, scheduler: &str) -> Result<(), String> {
    let condition = json!({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                           "message": format!("{scheduler}: {reason}")});
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
    // Only this incarnation of the pod: a recreated pod of the same name is left alone.
    let uid_guard = Some(Preconditions { uid: Some(pod.uid.clone()), resource_version: None });
    match mode {
        EvictMode::Eviction => {
            let ep = EvictParams {
                delete_options: Some(DeleteParams { preconditions: uid_guard, ..Default::default() }),
                ..Default::default()
            };
            // A PodDisruptionBudget may refuse (429): then the pod keeps no
            // DisruptionTarget, so the condition is written only after the
            // API server accepted, over the one it sets itself.
            api.evict(&pod.name, &ep).await.map_err(refusal)?;
            if let Err(e) = set_condition(client, pod, condition).await {
                tracing::warn!("DisruptionTarget on evicted pod {}: {e}", pod.key());
            }
            Ok(())
        }
        EvictMode::Delete => {
            // As Volcano: the condition first, so the pod's owner sees why it goes.
            set_condition(client, pod, condition).await?;
            let dp = DeleteParams { preconditions: uid_guard, ..Default::default() };
            api.delete(&pod.name, &dp).await.map(|_| ()).map_err(refusal)
        }
    }
}
