//! Volumes bound with a placement, as kube-scheduler's VolumeBinding binds
//! them before a pod's binding: a chosen PersistentVolume gets the claim as
//! its `claimRef` (the volume controller then binds the claim), a claim to
//! provision gets its node as `volume.kubernetes.io/selected-node` (the
//! provisioner then makes the volume there). Devices are allocated as
//! DynamicResources allocates them: the claim gets kube-scheduler's
//! finalizer, then its allocation and the pod in `reservedFor`. Should the
//! pod's binding fail, all are taken back, unless something changed them since.

use super::events::refusal;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimConsumerReference};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};
use tephra_model::allocation::Grant;
use tephra_model::devices::Allocation;
use tephra_model::node::MatchExpr;
use tephra_model::storage::{Bind, SELECTED_NODE};

/// What keeps an allocated claim from being deleted (kube-scheduler's).
const DELETE_PROTECTION: &str = "resource.kubernetes.io/delete-protection";

/// What the volume controller's binder marks a volume it bound with.
const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";

/// One bind the API server accepted, at the resourceVersion it gave.
#[derive(Clone, Debug)]
pub struct Written {
    /// The bind.
    pub bind: Bind,
    version: String,
}

/// A claim's `namespace/name` as its two parts.
fn parts(claim: &str) -> (&str, &str) {
    claim.split_once('/').unwrap_or(("default", claim))
}

/// Writes `binds` for the pod with UID `pod_uid`; `version` gives a
/// volume's resourceVersion as last seen (the write is refused if it
/// changed since: another binder was faster). All or none: what was written
/// before a refusal is taken back.
pub async fn write(
    client: &Client,
    binds: &[Bind],
    pod_uid: &str,
    version: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Written>, String> {
    let mut written = Vec::new();
    for b in binds {
        let r = match b {
            Bind::Volume { claim, volume } => {
                let (ns, name) = parts(claim);
                let mut patch = json!({
                    "metadata": {"annotations": {BOUND_BY_CONTROLLER: "yes"}},
                    "spec": {"claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": ns, "name": name}},
                });
                if let Some(rv) = version(volume) {
                    patch["metadata"]["resourceVersion"] = json!(rv);
                }
                let api: Api<PersistentVolume> = Api::all(client.clone());
                api.patch(volume, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|v| v.resource_version().unwrap_or_default())
                    .map_err(|e| format!("binding persistentvolume {volume} to claim {claim}: {}", refusal(e)))
            }
            Bind::Provision { claim, node } => {
                let (ns, name) = parts(claim);
                let patch = json!({"metadata": {"annotations": {SELECTED_NODE: node}}});
                let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
                api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|v| v.resource_version().unwrap_or_default())
                    .map_err(|e| format!("selecting node {node} for claim {claim}: {}", refusal(e)))
            }
            Bind::Devices(g) => reserve(client, g, pod_uid).await,
        };
        match r {
            Ok(version) => written.push(Written { bind: b.clone(), version }),
            Err(e) => {
                undo(client, &written).await;
                return Err(e);
            }
        }
    }
    Ok(written)
}

/// Takes back what [`write`] wrote, where nothing changed it since (the
/// volume controller may have completed the binding already: then it stays).
pub async fn undo(client: &Client, written: &[Written]) {
    for w in written {
        let r = match &w.bind {
            Bind::Volume { volume, .. } => {
                let patch: Value = json!({
                    "metadata": {"resourceVersion": w.version, "annotations": {BOUND_BY_CONTROLLER: null}},
                    "spec": {"claimRef": null},
                });
                let api: Api<PersistentVolume> = Api::all(client.clone());
                api.patch(volume, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
            }
            Bind::Provision { claim, .. } => {
                let (ns, name) = parts(claim);
                let patch = json!({"metadata": {"resourceVersion": w.version, "annotations": {SELECTED_NODE: null}}});
                let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
                api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
            }
            Bind::Devices(g) => release(client, g, &w.version).await,
        };
        if let Err(e) = r {
            tracing::warn!("taking back the binding of claim {}: {}", w.bind.claim(), refusal(e));
        }
    }
}

/// The claim's status as the API server holds it in JSON.
fn allocation_json(a: &Allocation) -> Value {
    let results: Vec<Value> = a
        .results
        .iter()
        .map(|r| json!({"request": r.request, "driver": r.driver, "pool": r.pool, "device": r.device}))
        .collect();
    let mut out = json!({"devices": {"results": results}});
    if !a.node_selector.is_empty() {
        let terms: Vec<Value> = a
            .node_selector
            .iter()
            .map(|t| {
                let expr = |e: &&MatchExpr| json!({"key": e.key, "operator": e.operator, "values": e.values});
                let fields: Vec<Value> = t.iter().filter(|e| e.field).map(|e| expr(&e)).collect();
                let labels: Vec<Value> = t.iter().filter(|e| !e.field).map(|e| expr(&e)).collect();
                let mut term = json!({});
                if !fields.is_empty() {
                    term["matchFields"] = json!(fields);
                }
                if !labels.is_empty() {
                    term["matchExpressions"] = json!(labels);
                }
                term
            })
            .collect();
        out["nodeSelector"] = json!({"nodeSelectorTerms": terms});
    }
    out
}

/// A claim's `reservedFor` as JSON for a merge patch (which replaces the
/// list whole), but the pod named `but`.
fn reservations(list: Option<Vec<ResourceClaimConsumerReference>>, but: &str) -> Vec<Value> {
    list.unwrap_or_default()
        .iter()
        .filter(|r| r.name != but)
        .map(|r| json!({"resource": r.resource, "name": r.name, "uid": r.uid}))
        .collect()
}

/// Allocates a claim (if the grant does) and reserves it for the pod; the
/// claim's resourceVersion after the write.
async fn reserve(client: &Client, g: &Grant, pod_uid: &str) -> Result<String, String> {
    let (ns, name) = parts(&g.claim);
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), ns);
    let failed = |e: kube::Error| format!("allocating resourceclaim {}: {}", g.claim, refusal(e));
    let mut claim = api.get(name).await.map_err(failed)?;
    let status = claim.status.clone().unwrap_or_default();
    if g.allocation.is_some() && status.allocation.is_some() {
        return Err(format!("allocating resourceclaim {}: it was allocated since", g.claim));
    }
    if g.allocation.is_some() && !claim.finalizers().iter().any(|f| f == DELETE_PROTECTION) {
        let mut finalizers = claim.finalizers().to_vec();
        finalizers.push(DELETE_PROTECTION.to_string());
        let patch = json!({"metadata": {"resourceVersion": claim.resource_version(), "finalizers": finalizers}});
        claim = api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(failed)?;
    }
    let mut reserved = reservations(status.reserved_for, "");
    if !reserved.iter().any(|r| r["uid"] == pod_uid) {
        reserved.push(json!({"resource": "pods", "name": g.pod, "uid": pod_uid}));
    }
    let mut patch =
        json!({"metadata": {"resourceVersion": claim.resource_version()}, "status": {"reservedFor": reserved}});
    if let Some(a) = &g.allocation {
        patch["status"]["allocation"] = allocation_json(a);
    }
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|c| c.resource_version().unwrap_or_default())
        .map_err(failed)
}

/// Takes a reservation back (and the allocation the grant made, which no
/// other pod uses then), at the resourceVersion [`reserve`] left.
async fn release(client: &Client, g: &Grant, version: &str) -> Result<(), kube::Error> {
    let (ns, name) = parts(&g.claim);
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), ns);
    let claim = api.get(name).await?;
    let reserved = reservations(claim.status.and_then(|s| s.reserved_for), &g.pod);
    let mut patch = json!({"metadata": {"resourceVersion": version}, "status": {"reservedFor": reserved}});
    if g.allocation.is_some() && reserved.is_empty() {
        patch["status"]["allocation"] = Value::Null;
    }
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
}
