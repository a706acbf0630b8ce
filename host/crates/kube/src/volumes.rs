//! Volumes bound with a placement, as kube-scheduler's VolumeBinding binds
//! them before a pod's binding: a chosen PersistentVolume gets the claim as
//! its `claimRef` (the volume controller then binds the claim), a claim to
//! provision gets its node as `volume.kubernetes.io/selected-node` (the
//! provisioner then makes the volume there). Should the pod's binding fail,
//! both are taken back, unless something changed them since.

use super::events::refusal;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};
use tephra_model::storage::{Bind, SELECTED_NODE};

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

/// Writes `binds`; `version` gives a volume's resourceVersion as last seen
/// (the write is refused if it changed since: another binder was faster).
/// All or none: what was written before a refusal is taken back.
pub async fn write(
    client: &Client,
    binds: &[Bind],
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
        };
        if let Err(e) = r {
            tracing::warn!("taking back the binding of claim {}: {}", w.bind.claim(), refusal(e));
        }
    }
}
