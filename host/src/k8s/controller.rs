//! The parts of Volcano's controllers a scheduler cannot do without: the
//! `default` and `root` Queues, and a PodGroup for every pod of ours that has
//! none (Volcano's podgroup controller), so plain pods, Deployments and
//! StatefulSets schedule unchanged.

use super::source::{podgroup_resource, queue_resource, View, VOLCANO_API};
use super::status::quantity;
use crate::model::Pod as ModelPod;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;

/// The pod annotation naming its PodGroup.
pub const GROUP_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// The pod annotation naming the queue of a generated PodGroup.
pub const QUEUE_ANNOTATION: &str = "scheduling.volcano.sh/queue-name";

fn ok_or_exists<T>(r: kube::Result<T>, what: &str) -> bool {
    match r {
        Ok(_) => true,
        Err(kube::Error::Api(e)) if e.code == 409 => true,
        Err(e) => {
            tracing::warn!("{what}: {e}");
            false
        }
    }
}

/// Creates the `root` and `default` Queues when the cache has none of that name.
pub async fn ensure_queues(client: &Client, view: &View) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &queue_resource());
    for (name, reclaimable) in [("root", false), ("default", true)] {
        if view.queues.contains_key(name) {
            continue;
        }
        let q: DynamicObject = match serde_json::from_value(json!({
            "apiVersion": VOLCANO_API, "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": reclaimable},
        })) {
            Ok(q) => q,
            Err(e) => {
                tracing::warn!("queue {name}: {e}");
                continue;
            }
        };
        if ok_or_exists(api.create(&PostParams::default(), &q).await, &format!("creating Queue {name}")) {
            tracing::info!("created Queue {name}");
        }
    }
}

/// The PodGroup Volcano's podgroup controller makes for a plain pod: named
/// after the pod's controller (so a ReplicaSet's pods share one) or the pod.
fn podgroup_for(obj: &Pod, pod: &ModelPod) -> Option<(String, serde_json::Value)> {
    let owner = obj.owner_references().iter().find(|o| o.controller == Some(true)).cloned();
    let uid = owner.as_ref().map(|o| o.uid.clone()).or_else(|| obj.metadata.uid.clone())?;
    let name = format!("podgroup-{uid}");
    let owner_ref = match owner {
        Some(o) => json!(o),
        None => json!({"apiVersion": "v1", "kind": "Pod", "name": obj.name_any(), "uid": uid, "controller": true}),
    };
    let min: u32 =
        pod.annotations.get("scheduling.volcano.sh/group-min-member").and_then(|v| v.parse().ok()).unwrap_or(1);
    let min_resources: BTreeMap<String, String> =
        pod.requests.iter().map(|(k, v)| (k.clone(), quantity(k, v * f64::from(min)))).collect();
    let mut spec = json!({
        "minMember": min,
        "minResources": min_resources,
        "queue": pod.annotations.get(QUEUE_ANNOTATION).cloned().unwrap_or_else(|| "default".into()),
    });
    if let Some(pc) = &pod.priority_class {
        spec["priorityClassName"] = json!(pc);
    }
    let pg = json!({
        "apiVersion": VOLCANO_API, "kind": "PodGroup",
        "metadata": {"name": name, "namespace": pod.namespace, "ownerReferences": [owner_ref]},
        "spec": spec,
    });
    Some((name, pg))
}

/// Gives every unbound pod of ours without a PodGroup one, and annotates the
/// pod with its name. Returns how many pods were annotated.
pub async fn podgroups_for_plain_pods(client: &Client, view: &View) -> usize {
    let mut done = 0;
    for pod in &view.cluster.pods {
        if pod.group.is_some() || pod.node.is_some() || pod.deleting {
            continue;
        }
        let Some(obj) = view.pods.get(&pod.key()) else { continue };
        let Some((name, pg)) = podgroup_for(obj, pod) else { continue };
        if !view.podgroups.contains_key(&format!("{}/{name}", pod.namespace)) {
            let pgs: Api<DynamicObject> = Api::namespaced_with(client.clone(), &pod.namespace, &podgroup_resource());
            let Ok(pg) = serde_json::from_value::<DynamicObject>(pg) else { continue };
            if !ok_or_exists(
                pgs.create(&PostParams::default(), &pg).await,
                &format!("creating PodGroup for {}", pod.key()),
            ) {
                continue;
            }
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
        let patch = json!({"metadata": {"annotations": {GROUP_ANNOTATION: name}}});
        match pods.patch(&pod.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => done += 1,
            Err(e) => tracing::warn!("annotating Pod {}: {e}", pod.key()),
        }
    }
    done
}
