//! The kinds a manifest may hold: one entry each, naming its apiVersion and
//! its reader. A new kind is one entry here and its reader.

use super::fields::{At, Doc};
use super::object::Object;
use super::{core, devices, storage, volcano, window, workloads};
use anyhow::{bail, Result};

/// The apiVersion a kind is read under.
#[derive(Clone, Copy)]
pub(super) enum Api {
    /// Exactly this one.
    Is(&'static str),
    /// Any version of this one's group (it is the version listed).
    Group(&'static str),
    /// Listed as this one, but any is read (kinds whose other versions
    /// read the same).
    Loose(&'static str),
}

impl Api {
    fn admits(self, api: &str) -> bool {
        match self {
            Api::Is(want) => api == want,
            Api::Group(listed) => api.split_once('/').map(|(g, _)| g) == listed.split_once('/').map(|(g, _)| g),
            Api::Loose(_) => true,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Api::Is(a) | Api::Group(a) | Api::Loose(a) => a,
        }
    }
}

/// One kind a manifest may hold.
pub(super) struct Kind {
    pub(super) kind: &'static str,
    pub(super) api: Api,
    pub(super) read: fn(Doc) -> Result<Object>,
}

/// Every kind tephra reads, in the order its error message lists them.
pub(super) const KINDS: &[Kind] = &[
    Kind { kind: "Node", api: Api::Is("v1"), read: core::node },
    Kind { kind: "Pod", api: Api::Is("v1"), read: core::pod },
    Kind { kind: "Namespace", api: Api::Is("v1"), read: core::namespace },
    Kind { kind: "PersistentVolumeClaim", api: Api::Is("v1"), read: storage::claim },
    Kind { kind: "PersistentVolume", api: Api::Is("v1"), read: storage::volume },
    Kind { kind: "ConfigMap", api: Api::Loose("v1"), read: core::config_map },
    Kind { kind: "Deployment", api: Api::Is("apps/v1"), read: workloads::read },
    Kind { kind: "ReplicaSet", api: Api::Is("apps/v1"), read: workloads::read },
    Kind { kind: "StatefulSet", api: Api::Is("apps/v1"), read: workloads::read },
    // A Volcano Job before a batch/v1 one: the first entry admitting the
    // apiVersion reads it.
    Kind { kind: "Job", api: Api::Group("batch.volcano.sh/v1alpha1"), read: volcano::job },
    Kind { kind: "Job", api: Api::Is("batch/v1"), read: workloads::read },
    Kind { kind: "CronJob", api: Api::Is("batch/v1"), read: workloads::read },
    Kind { kind: "StorageClass", api: Api::Is("storage.k8s.io/v1"), read: storage::storage_class },
    Kind { kind: "CSIDriver", api: Api::Is("storage.k8s.io/v1"), read: storage::csi_driver },
    Kind { kind: "CSIStorageCapacity", api: Api::Is("storage.k8s.io/v1"), read: storage::storage_capacity },
    Kind { kind: "DeviceClass", api: Api::Is("resource.k8s.io/v1"), read: devices::device_class },
    Kind { kind: "ResourceSlice", api: Api::Is("resource.k8s.io/v1"), read: devices::resource_slice },
    Kind { kind: "ResourceClaim", api: Api::Is("resource.k8s.io/v1"), read: devices::resource_claim },
    Kind { kind: "ResourceClaimTemplate", api: Api::Is("resource.k8s.io/v1"), read: devices::claim_template },
    Kind { kind: "CSINode", api: Api::Is("storage.k8s.io/v1"), read: core::attach_limits },
    Kind { kind: "Queue", api: Api::Is("scheduling.volcano.sh/v1beta1"), read: volcano::queue },
    Kind { kind: "PodGroup", api: Api::Is("scheduling.volcano.sh/v1beta1"), read: volcano::podgroup },
    Kind { kind: "HyperNode", api: Api::Is("topology.volcano.sh/v1alpha1"), read: volcano::hypernode },
    Kind { kind: "PriorityClass", api: Api::Loose("scheduling.k8s.io/v1"), read: core::priority_class },
    Kind { kind: "Reservation", api: Api::Is(tephra_model::window::API_VERSION), read: window::read },
];

/// The reader of `kind` under `api`, or an error naming what is read.
pub(super) fn reader(at: &At, kind: &str, api: &str) -> Result<fn(Doc) -> Result<Object>> {
    let mut named = KINDS.iter().filter(|k| k.kind == kind).peekable();
    if named.peek().is_none() {
        bail!(
            "{}: {}: kind {kind:?} of apiVersion {api:?} is not supported (supported: {})",
            at.origin,
            at.object,
            supported()
        );
    }
    let mut wanted = Vec::new();
    for k in named {
        if k.api.admits(api) {
            return Ok(k.read);
        }
        wanted.push(k.api.name());
    }
    bail!("{}: {}: apiVersion: expected {}, got {api:?}", at.origin, at.object, wanted.join(" or "))
}

/// "v1 Node, Pod; apps/v1 Deployment; …": each apiVersion with its kinds.
fn supported() -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for k in KINDS {
        let api = k.api.name();
        match groups.iter_mut().find(|(a, _)| *a == api) {
            Some((_, kinds)) => kinds.push(k.kind),
            None => groups.push((api, vec![k.kind])),
        }
    }
    groups.iter().map(|(api, kinds)| format!("{api} {}", kinds.join(", "))).collect::<Vec<_>>().join("; ")
}
