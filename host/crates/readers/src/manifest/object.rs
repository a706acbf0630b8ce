//! What a manifest holds: its objects, each at the second it appears.

use crate::config::SchedulerConfig;
use std::collections::BTreeMap;
use tephra_model::cluster::{Claim, Cluster, Node, Pod, PodGroup, PriorityClass, Queue, Volume, Workload};

/// Simulator annotation: the object appears this many seconds into the run.
pub const ARRIVE_AT: &str = "tephra.io/arrive-at";
/// Simulator annotation: a running pod completes after this many seconds.
pub const DURATION: &str = "tephra.io/duration";
/// Simulator annotation on a Node: this many identical nodes, named
/// `<name>-0`, `<name>-1`, … (a compact cluster).
pub const REPLICAS: &str = "tephra.io/replicas";
/// How long a pod is expected to run (big-job reservation orders nodes by it).
pub const ESTIMATE: &str = "tephra.io/estimated-running-duration";

/// One object read from a manifest.
#[derive(Clone, Debug)]
pub enum Object {
    /// A Node (one of the copies, with `tephra.io/replicas`).
    Node(Node),
    /// A Queue.
    Queue(Queue),
    /// A PodGroup, or a Volcano Job as its PodGroup with pod templates.
    PodGroup(PodGroup),
    /// Boxed: a pod with its placement rules is the largest object by far.
    Pod(Box<Pod>),
    /// A PriorityClass's name and value.
    PriorityClass(String, PriorityClass),
    /// A Namespace's name and labels.
    Namespace(String, BTreeMap<String, String>),
    /// A PersistentVolumeClaim's `namespace/name` and binding.
    Claim(String, Claim),
    /// A PersistentVolume's name and node affinity.
    Volume(String, Volume),
    /// A StorageClass's name and binding rules.
    StorageClass(String, tephra_model::cluster::StorageClass),
    /// A CSIDriver's name and whether it opts into storage capacity tracking.
    CsiDriver(String, bool),
    /// A CSIStorageCapacity's `namespace/name` and the room it publishes.
    StorageCapacity(String, tephra_model::cluster::StorageCapacity),
    /// A DeviceClass's name and selectors.
    DeviceClass(String, tephra_model::devices::DeviceClass),
    /// A ResourceSlice's name and devices.
    ResourceSlice(String, tephra_model::devices::ResourceSlice),
    /// A ResourceClaim's `namespace/name`, requests and allocation.
    ResourceClaim(String, tephra_model::devices::ResourceClaim),
    /// A ResourceClaimTemplate's `namespace/name` and the claim it makes.
    ClaimTemplate(String, tephra_model::devices::ResourceClaim),
    /// A CSINode's name (its node's) and per driver its attach limit.
    AttachLimits(String, BTreeMap<String, u32>),
    /// A HyperNode.
    HyperNode(tephra_model::topology::HyperNode),
    /// An advance reservation (`Reservation`, tephra.io/v1alpha1).
    Reservation(tephra_model::window::AdvanceReservation),
    /// Boxed: it carries a pod template.
    Workload(Box<Workload>),
    /// Volcano's scheduler config, from its ConfigMap.
    Config(SchedulerConfig),
}

impl Object {
    /// The object's kind and name (`namespace/name` when namespaced); the
    /// scheduler config has none.
    pub fn identity(&self) -> Option<(&'static str, String)> {
        Some(match self {
            Object::Node(n) => ("Node", n.name.clone()),
            Object::Queue(q) => ("Queue", q.name.clone()),
            Object::PodGroup(g) => ("PodGroup", g.key()),
            Object::Pod(p) => ("Pod", p.key()),
            Object::PriorityClass(n, _) => ("PriorityClass", n.clone()),
            Object::Namespace(n, _) => ("Namespace", n.clone()),
            Object::Claim(k, _) => ("PersistentVolumeClaim", k.clone()),
            Object::Volume(n, _) => ("PersistentVolume", n.clone()),
            Object::StorageClass(n, _) => ("StorageClass", n.clone()),
            Object::CsiDriver(n, _) => ("CSIDriver", n.clone()),
            Object::StorageCapacity(k, _) => ("CSIStorageCapacity", k.clone()),
            Object::DeviceClass(n, _) => ("DeviceClass", n.clone()),
            Object::ResourceSlice(n, _) => ("ResourceSlice", n.clone()),
            Object::ResourceClaim(k, _) => ("ResourceClaim", k.clone()),
            Object::ClaimTemplate(k, _) => ("ResourceClaimTemplate", k.clone()),
            Object::AttachLimits(n, _) => ("CSINode", n.clone()),
            Object::HyperNode(h) => ("HyperNode", h.name.clone()),
            Object::Reservation(r) => ("Reservation", r.name.clone()),
            Object::Workload(w) => (w.kind.name(), w.key()),
            Object::Config(_) => return None,
        })
    }

    /// Stores an object kept under its name (priority class, namespace,
    /// claim, volume, storage class, CSI driver, storage capacity, DRA
    /// class, slice, claim and template, attach limits) in `c`; any other
    /// comes back.
    pub fn keep_in(self, c: &mut Cluster) -> Option<Object> {
        match self {
            Object::PriorityClass(n, p) => {
                c.priority_classes.insert(n, p);
            }
            Object::Namespace(n, labels) => {
                c.namespaces.insert(n, labels);
            }
            Object::Claim(key, mut claim) => {
                // As the API server's DefaultStorageClass admission does.
                if claim.class.is_none() {
                    claim.class = c.storage_classes.iter().find(|(_, s)| s.default).map(|(n, _)| n.clone());
                }
                c.claims.insert(key, claim);
            }
            Object::Volume(name, volume) => {
                c.volumes.insert(name, volume);
            }
            Object::StorageClass(name, class) => {
                c.storage_classes.insert(name, class);
            }
            Object::CsiDriver(name, tracked) => {
                c.csi_drivers.insert(name, tracked);
            }
            Object::StorageCapacity(key, capacity) => {
                c.storage_capacities.insert(key, capacity);
            }
            Object::DeviceClass(name, class) => {
                c.device_classes.insert(name, class);
            }
            Object::ResourceSlice(name, slice) => {
                c.resource_slices.insert(name, slice);
            }
            Object::ResourceClaim(key, claim) => {
                c.resource_claims.insert(key, claim);
            }
            Object::ClaimTemplate(key, claim) => {
                c.claim_templates.insert(key, claim);
            }
            Object::AttachLimits(node, limits) => {
                c.attach_limits.insert(node, limits);
            }
            Object::HyperNode(h) => {
                c.hypernodes.insert(h.name.clone(), h);
            }
            Object::Reservation(r) => {
                c.reservations.insert(r.name.clone(), r);
            }
            Object::Workload(w) => {
                // A later version of the object (scaling) replaces it.
                match c.workloads.iter_mut().find(|x| x.kind == w.kind && x.key() == w.key()) {
                    Some(x) => *x = *w,
                    None => c.workloads.push(*w),
                }
            }
            other => return Some(other),
        }
        None
    }
}

/// An object and the simulated second at which it appears.
#[derive(Clone, Debug)]
pub struct Timed {
    /// Seconds into the run (`tephra.io/arrive-at`; 0 for the start).
    pub at: f64,
    /// The object.
    pub object: Object,
}
