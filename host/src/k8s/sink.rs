//! Applies a cycle's decisions to the API server: binds through
//! `pods/binding`, evictions through the Eviction API (or a plain delete),
//! nominations through pod status.
//!
//! The Outcome holds only committed statements, so a gang reaches here whole.
//! Until the watch shows a bind or an eviction, the sink *assumes* it and
//! overlays it on the next cycle's view, so a slow watch never makes the
//! scheduler place the same pod twice. A failed bind drops the assumption and
//! resyncs the pod with a GET; the API server itself refuses a second binding
//! of a bound pod (409), so a bind can never land twice.

use super::events::{reference, Kind, Recorder};
use super::source::View;
use crate::session::{Decision, Outcome};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, EvictParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Client, ResourceExt};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an unconfirmed bind or eviction is assumed before the watch is trusted again.
const ASSUME_FOR: Duration = Duration::from_secs(30);

/// How pods are evicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EvictMode {
    /// `pods/eviction` (policy/v1): PodDisruptionBudgets are respected.
    Eviction,
    /// A plain DELETE, as Volcano does: no PodDisruptionBudget check.
    Delete,
}

/// Binds and evictions that were sent but are not yet in the watch cache.
#[derive(Default)]
pub struct Assumed {
    /// pod uid → (node, when).
    binds: HashMap<String, (String, Instant)>,
    /// pod uid → when.
    evictions: HashMap<String, Instant>,
}

impl Assumed {
    /// Lays unconfirmed binds and evictions over the view; drops the
    /// confirmed and the expired ones.
    pub fn overlay(&mut self, view: &mut View) {
        let now = Instant::now();
        self.binds.retain(|_, (_, t)| now.duration_since(*t) < ASSUME_FOR);
        self.evictions.retain(|_, t| now.duration_since(*t) < ASSUME_FOR);
        let mut live = HashSet::new();
        for p in view.cluster.pods.iter_mut() {
            let Some(uid) = view.pods.get(&p.key()).and_then(|o| o.metadata.uid.clone()) else { continue };
            if let Some((node, _)) = self.binds.get(&uid) {
                if p.node.is_some() {
                    self.binds.remove(&uid);
                } else {
                    p.node = Some(node.clone());
                    p.nominated_node = None;
                }
            }
            if self.evictions.contains_key(&uid) {
                if p.deleting {
                    self.evictions.remove(&uid);
                } else {
                    p.deleting = true;
                }
            }
            live.insert(uid);
        }
        self.binds.retain(|uid, _| live.contains(uid));
        self.evictions.retain(|uid, _| live.contains(uid));
    }

    /// Forgets everything (on losing leadership).
    pub fn clear(&mut self) {
        self.binds.clear();
        self.evictions.clear();
    }
}

/// What applying one Outcome did.
#[derive(Debug, Default)]
pub struct Applied {
    /// (pod key, node).
    pub bound: Vec<(String, String)>,
    /// (pod key, error).
    pub bind_failures: Vec<(String, String)>,
    pub evicted: Vec<String>,
    /// (pod key, error).
    pub evict_failures: Vec<(String, String)>,
}

/// Writes decisions to the API server.
pub struct Sink {
    client: Client,
    pub mode: EvictMode,
    /// Binds (and evictions) in flight at once.
    pub concurrency: usize,
    pub assumed: Assumed,
    scheduler_name: String,
}

fn pod_ref(p: &Pod) -> ObjectReference {
    reference("v1", "Pod", p.metadata.namespace.as_deref(), &p.name_any(), p.metadata.uid.as_deref().unwrap_or(""))
}

fn key(p: &Pod) -> String {
    format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any())
}

impl Sink {
    pub fn new(client: Client, mode: EvictMode, concurrency: usize, scheduler_name: &str) -> Self {
        Sink {
            client,
            mode,
            concurrency: concurrency.max(1),
            assumed: Assumed::default(),
            scheduler_name: scheduler_name.into(),
        }
    }

    /// Applies the decisions of `out`, taken on `view`.
    pub async fn apply(&mut self, out: &Outcome, view: &View, rec: &Recorder) -> Applied {
        let mut applied = Applied::default();
        let pod_of = |task: u32| -> Option<Arc<Pod>> {
            let p = view.cluster.pods.get(*out.extra.task_pod.get(task as usize)?)?;
            view.pods.get(&p.key()).cloned()
        };
        let (mut binds, mut evictions, mut nominations) = (Vec::new(), Vec::new(), Vec::new());
        for d in &out.decisions {
            match d {
                Decision::Bind { task, node } => {
                    if let Some(p) = pod_of(*task) {
                        binds.push((p, out.names.nodes[*node as usize].clone()));
                    }
                }
                Decision::Evict { task, reason } => {
                    if let Some(p) = pod_of(*task) {
                        let group = out.names.jobs[out.task_job[*task as usize] as usize].clone();
                        evictions.push((p, reason.clone(), group));
                    }
                }
                Decision::Nominate { task, node } => {
                    if let Some(p) = pod_of(*task) {
                        nominations.push((p, out.names.nodes[*node as usize].clone()));
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
            match r {
                Ok(()) => {
                    rec.write(&pod_ref(&pod), Kind::Warning, "Evict", &format!("Pod is evicted, because of {reason}"))
                        .await;
                    if let Some(g) = view.podgroups.get(&group) {
                        let gref = reference(
                            super::source::VOLCANO_API,
                            "PodGroup",
                            g.metadata.namespace.as_deref(),
                            &g.name_any(),
                            g.metadata.uid.as_deref().unwrap_or(""),
                        );
                        rec.write(&gref, Kind::Normal, "Evict", &format!("Evicted {}: {reason}", key(&pod))).await;
                    }
                    if let Some(uid) = pod.metadata.uid.clone() {
                        self.assumed.evictions.insert(uid, Instant::now());
                    }
                    tracing::info!("evicted {} ({reason})", key(&pod));
                    applied.evicted.push(key(&pod));
                }
                Err(e) => {
                    tracing::warn!("evict {}: {e}", key(&pod));
                    rec.emit(&pod_ref(&pod), Kind::Warning, "EvictFailed", &e).await;
                    applied.evict_failures.push((key(&pod), e));
                }
            }
        }
        let results: Vec<_> = futures::stream::iter(binds)
            .map(|(pod, node)| async move {
                let r = bind(client, &pod, &node).await;
                (pod, node, r)
            })
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        let mut scheduled = Vec::new();
        for (pod, node, r) in results {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            match r {
                Ok(()) => {
                    scheduled.push((pod_ref(&pod), format!("Successfully assigned {} to {node}", key(&pod))));
                    self.assumed.binds.insert(uid, (node.clone(), Instant::now()));
                    applied.bound.push((key(&pod), node));
                }
                Err(e) => {
                    // Resync: what the API server holds now decides the next cycle.
                    self.assumed.binds.remove(&uid);
                    let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace().unwrap_or_default());
                    let now = api.get_opt(&pod.name_any()).await;
                    let resync = match &now {
                        Ok(Some(p)) => match p.spec.as_ref().and_then(|s| s.node_name.clone()) {
                            Some(n) if p.metadata.uid.as_deref() == Some(uid.as_str()) => {
                                self.assumed.binds.insert(uid.clone(), (n.clone(), Instant::now()));
                                format!("it is bound to {n}")
                            }
                            _ => "it is still unbound".to_string(),
                        },
                        Ok(None) => "it is gone".to_string(),
                        Err(e) => format!("resync failed: {e}"),
                    };
                    tracing::warn!("bind {} to {node}: {e}; {resync}", key(&pod));
                    if !e.contains("409") {
                        let _ = set_condition(
                            &self.client,
                            &pod,
                            json!({"type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": e}),
                        )
                        .await;
                    }
                    applied.bind_failures.push((key(&pod), format!("{e}; {resync}")));
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
            let current = pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref());
            if current != Some(node.as_str()) {
                let api: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace().unwrap_or_default());
                let patch = json!({"status": {"nominatedNodeName": node}});
                if let Err(e) = api.patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await
                {
                    tracing::warn!("nominate {} on {node}: {e}", key(&pod));
                }
            }
        }
        applied
    }
}

fn api_error(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
        e => e.to_string(),
    }
}

async fn bind(client: &Client, pod: &Pod, node: &str) -> Result<(), String> {
    let ns = pod.namespace().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(pod.name_any()),
            namespace: Some(ns),
            // Only this incarnation of the pod: a recreated pod of the same name is refused.
            uid: pod.metadata.uid.clone(),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.into()),
            ..Default::default()
        },
    };
    api.create_subresource::<Binding, serde_json::Value>("binding", &pod.name_any(), &PostParams::default(), &binding)
        .await
        .map(|_| ())
        .map_err(api_error)
}

/// Sets one pod condition (merged by type) through the status subresource.
pub async fn set_condition(client: &Client, pod: &Pod, mut condition: serde_json::Value) -> Result<(), String> {
    condition["lastTransitionTime"] = json!(Timestamp::now().to_string());
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    let patch = json!({"status": {"conditions": [condition]}});
    api.patch_status(&pod.name_any(), &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .map(|_| ())
        .map_err(api_error)
}

async fn evict(client: &Client, pod: &Pod, reason: &str, mode: EvictMode, scheduler: &str) -> Result<(), String> {
    let condition = json!({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                           "message": format!("{scheduler}: {reason}")});
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    // Only this incarnation of the pod: a recreated pod of the same name is left alone.
    let uid_guard = pod.metadata.uid.clone().map(|uid| Preconditions { uid: Some(uid), resource_version: None });
    match mode {
        EvictMode::Eviction => {
            let ep = EvictParams {
                delete_options: Some(DeleteParams { preconditions: uid_guard, ..Default::default() }),
                ..Default::default()
            };
            // A PodDisruptionBudget may refuse (429): then the pod keeps no
            // DisruptionTarget, so the condition is written only after the
            // API server accepted, over the one it sets itself.
            api.evict(&pod.name_any(), &ep).await.map_err(api_error)?;
            if let Err(e) = set_condition(client, pod, condition).await {
                tracing::warn!("DisruptionTarget on evicted pod {}: {e}", key(pod));
            }
            Ok(())
        }
        EvictMode::Delete => {
            // As Volcano: the condition first, so the pod's owner sees why it goes.
            set_condition(client, pod, condition).await?;
            let dp = DeleteParams { preconditions: uid_guard, ..Default::default() };
            api.delete(&pod.name_any(), &dp).await.map(|_| ()).map_err(api_error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Pod as ModelPod;

    fn view(node: Option<&str>, deleting: bool) -> View {
        let mut v = View::default();
        let obj = Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        v.pods.insert("ns/p".into(), Arc::new(obj));
        v.cluster.pods.push(ModelPod {
            namespace: "ns".into(),
            name: "p".into(),
            node: node.map(Into::into),
            deleting,
            ..Default::default()
        });
        v
    }

    #[test]
    fn assumed_binds_and_evictions_cover_a_slow_watch() {
        let mut a = Assumed::default();
        a.binds.insert("u1".into(), ("n1".into(), Instant::now()));
        // The watch has not shown the bind yet: the view gets it.
        let mut v = view(None, false);
        a.overlay(&mut v);
        assert_eq!(v.cluster.pods[0].node.as_deref(), Some("n1"));
        // The watch shows it: the assumption is dropped.
        let mut v = view(Some("n1"), false);
        a.overlay(&mut v);
        assert!(a.binds.is_empty());
        a.evictions.insert("u1".into(), Instant::now());
        let mut v = view(Some("n1"), false);
        a.overlay(&mut v);
        assert!(v.cluster.pods[0].deleting);
        // A pod gone from the cache takes its assumptions with it.
        let mut v = View::default();
        a.overlay(&mut v);
        assert!(a.evictions.is_empty());
    }
}
