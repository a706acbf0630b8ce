//! The parts of Volcano's controllers a scheduler cannot do without: the
//! `default` and `root` Queues, and a PodGroup for every pod of ours that has
//! none (Volcano's podgroup controller), so plain pods, Deployments and
//! StatefulSets schedule unchanged.
//!
//! The scheduler does not wait for these: a plain pod is a job of its own
//! from its first event ([`implicit_group`]), and the objects are written by
//! a [`Writer`] in the background, a few at a time, so they never hold up a
//! cycle or crowd out its binds.

use crate::kinds::{podgroup_resource, quantity, queue_resource, GROUP_ANNOTATION, QUEUE_ANNOTATION, VOLCANO_API};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;
use std::collections::BTreeMap;
use tephra_model::cluster::{Pod as ModelPod, PodGroup};
use tokio::sync::mpsc;

/// Controller writes in flight at once (binds go first: they are what pods wait for).
const IN_FLIGHT: usize = 4;

/// One write on behalf of Volcano's controllers.
#[derive(Clone, Debug)]
pub enum Write {
    /// A Queue Volcano's scheduler would create (`root`, `default`).
    Queue {
        /// Its name.
        name: String,
        /// `spec.reclaimable`.
        reclaimable: bool,
    },
    /// A plain pod's PodGroup, which the API does not have yet (the pod's
    /// annotation naming it goes with its binding or its Unschedulable
    /// condition: see [`crate::source::PodMeta::group_note`]).
    PlainPod {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        pod: String,
        /// The pod's uid.
        pod_uid: String,
        /// The pod's controller (the PodGroup's owner), else the pod.
        owner: Option<OwnerReference>,
        /// The PodGroup's name (`podgroup-<owner uid>`).
        group_name: String,
        /// The PodGroup to create.
        group: Box<PodGroup>,
    },
}

impl Write {
    /// What the store remembers the write by.
    pub fn key(&self) -> String {
        match self {
            Write::Queue { name, .. } => format!("queue {name}"),
            Write::PlainPod { namespace, pod, .. } => format!("{namespace}/{pod}"),
        }
    }
}

/// The PodGroup Volcano's podgroup controller makes for a plain pod:
/// minMember 1 (or `scheduling.volcano.sh/group-min-member`), minResources
/// its requests that many times, its queue annotation or `default`, its
/// priority class.
pub fn implicit_group(pod: &ModelPod, name: &str) -> PodGroup {
    let min: u32 =
        pod.annotations.get("scheduling.volcano.sh/group-min-member").and_then(|v| v.parse().ok()).unwrap_or(1);
    PodGroup {
        namespace: pod.namespace.clone(),
        name: name.into(),
        queue: pod.annotations.get(QUEUE_ANNOTATION).cloned().unwrap_or_else(|| "default".into()),
        min_member: min,
        min_resources: Some(pod.requests.iter().map(|(k, v)| (k.clone(), v * f64::from(min))).collect()),
        priority_class: pod.priority_class.clone(),
        created: pod.created,
        network_topology: tephra_model::topology::NetworkTopology::from_annotations(&pod.annotations),
        ..Default::default()
    }
}

fn ok_or_exists<T>(r: kube::Result<T>, what: &str) -> Result<(), String> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(format!("{what}: {e}")),
    }
}

/// Performs one write.
pub async fn perform(client: &Client, w: &Write) -> Result<(), String> {
    match w {
        Write::Queue { name, reclaimable } => {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &queue_resource());
            let q: DynamicObject = serde_json::from_value(json!({
                "apiVersion": VOLCANO_API, "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": 1, "reclaimable": reclaimable},
            }))
            .map_err(|e| e.to_string())?;
            ok_or_exists(api.create(&PostParams::default(), &q).await, &format!("creating Queue {name}"))?;
            tracing::info!("created Queue {name}");
            Ok(())
        }
        Write::PlainPod { namespace, pod, pod_uid, owner, group_name, group: g } => {
            let owner_ref = match owner {
                Some(o) => json!(o),
                None => json!({"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": pod_uid, "controller": true}),
            };
            let min_resources: BTreeMap<String, String> =
                g.min_resources.iter().flatten().map(|(k, v)| (k.clone(), quantity(k, *v))).collect();
            let mut spec = json!({"minMember": g.min_member, "minResources": min_resources, "queue": g.queue});
            if let Some(pc) = &g.priority_class {
                spec["priorityClassName"] = json!(pc);
            }
            let pg: DynamicObject = serde_json::from_value(json!({
                "apiVersion": VOLCANO_API, "kind": "PodGroup",
                "metadata": {"name": group_name, "namespace": namespace, "ownerReferences": [owner_ref]},
                "spec": spec,
            }))
            .map_err(|e| e.to_string())?;
            let pgs: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &podgroup_resource());
            ok_or_exists(
                pgs.create(&PostParams::default(), &pg).await,
                &format!("creating PodGroup for {namespace}/{pod}"),
            )
        }
    }
}

/// Writes a waiting plain pod's annotation naming its PodGroup (a pod
/// placed gets it with its binding).
pub async fn annotate(client: &Client, namespace: &str, pod: &str, group_name: &str) -> Result<(), String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let patch = json!({"metadata": {"annotations": {GROUP_ANNOTATION: group_name}}});
    match pods.patch(pod, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        // The pod is gone: nothing left to annotate.
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(format!("annotating Pod {namespace}/{pod}: {e}")),
    }
}

/// Performs writes in the background, [`IN_FLIGHT`] at a time; failed ones
/// come back on [`Writer::failed`] to be tried again.
pub struct Writer {
    tx: mpsc::UnboundedSender<Write>,
    failed: mpsc::UnboundedReceiver<Write>,
}

impl Writer {
    /// Starts the writer on the current runtime.
    pub fn start(client: Client) -> Writer {
        use futures::StreamExt;
        let (tx, rx) = mpsc::unbounded_channel::<Write>();
        let (failed_tx, failed) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let writes = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|w| (w, rx)) });
            writes
                .for_each_concurrent(IN_FLIGHT, |w| {
                    let (client, failed_tx) = (client.clone(), failed_tx.clone());
                    async move {
                        if let Err(e) = perform(&client, &w).await {
                            tracing::warn!("{e}");
                            let _ = failed_tx.send(w);
                        }
                    }
                })
                .await;
        });
        Writer { tx, failed }
    }

    /// Queues writes.
    pub fn send(&self, writes: Vec<Write>) {
        for w in writes {
            let _ = self.tx.send(w);
        }
    }

    /// Writes that failed since the last call.
    pub fn failed(&mut self) -> Vec<Write> {
        let mut out = Vec::new();
        while let Ok(w) = self.failed.try_recv() {
            out.push(w);
        }
        out
    }
}
