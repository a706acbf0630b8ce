//! What a session needs beyond its snapshot to become the next one: where
//! its cluster stood, and what its build decided per object.

use crate::rules::LabelKeys;
use std::collections::BTreeMap;
use tephra_contract::TaskStatus;
use tephra_model::cluster::{Claim, Cluster, PriorityClass, Volume};
use tephra_model::cluster::{StorageCapacity, StorageClass};
use tephra_model::devices::{DeviceClass, ResourceClaim, ResourceSlice};
use tephra_model::tracked::Mark;

/// Where a session's cluster stood: nodes, queues, PodGroups, pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marks(pub(crate) [Option<Mark>; 4]);

impl Marks {
    /// Where `c`'s object lists stand now.
    pub fn of(c: &Cluster) -> Marks {
        Marks([Some(c.nodes.mark()), Some(c.queues.mark()), Some(c.podgroups.mark()), Some(c.pods.mark())])
    }
}

/// What a session needs beyond its snapshot to become the next one.
#[derive(Clone, Debug, Default)]
pub struct Basis {
    pub(crate) marks: Marks,
    pub(crate) classes: BTreeMap<String, PriorityClass>,
    pub(crate) namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// What pods' volumes resolve to.
    pub(crate) storage: Storage,
    /// The HyperNodes the topology columns were built from.
    pub(crate) hypernodes: BTreeMap<String, tephra_model::topology::HyperNode>,
    pub(crate) topology_error: Option<String>,
    /// The label keys selectors read (what classes cover of labels).
    pub(crate) selector_keys: LabelKeys,
    /// Whether status overrides applied (a scenario's session: never kept).
    pub(crate) overrides: bool,
    /// Per job, its signature (`job_signature`).
    pub(crate) job_sig: Vec<u64>,
    /// Per PodGroup, its job (`NONE`: its queue does not exist).
    pub(crate) pg_job: Vec<u32>,
    /// Per pod, its task (`NONE`: not a task).
    pub(crate) pod_task: Vec<u32>,
    /// Per pod that is not a task, the node and status its usage counts on.
    pub(crate) pod_node: Vec<u32>,
    pub(crate) pod_status: Vec<TaskStatus>,
    /// Per pod, its resident (`NONE`: a task).
    pub(crate) pod_resident: Vec<u32>,
    /// Tasks the session moved.
    pub touched: Vec<u32>,
    /// The session's id (set when it is assembled).
    pub session: u64,
}

/// A cluster's claims, volumes, storage classes, CSI drivers and
/// capacities, attach limits, and DRA classes, slices and claims, as a
/// session saw them.
#[derive(Clone, Debug, Default)]
pub struct Storage {
    claims: BTreeMap<String, Claim>,
    volumes: BTreeMap<String, Volume>,
    classes: BTreeMap<String, StorageClass>,
    drivers: BTreeMap<String, bool>,
    capacities: BTreeMap<String, StorageCapacity>,
    attach_limits: BTreeMap<String, BTreeMap<String, u32>>,
    device_classes: BTreeMap<String, DeviceClass>,
    slices: BTreeMap<String, ResourceSlice>,
    resource_claims: BTreeMap<String, ResourceClaim>,
}

impl Storage {
    /// What `c` has of all these now.
    pub fn of(c: &Cluster) -> Storage {
        Storage {
            claims: c.claims.clone(),
            volumes: c.volumes.clone(),
            classes: c.storage_classes.clone(),
            drivers: c.csi_drivers.clone(),
            capacities: c.storage_capacities.clone(),
            attach_limits: c.attach_limits.clone(),
            device_classes: c.device_classes.clone(),
            slices: c.resource_slices.clone(),
            resource_claims: c.resource_claims.clone(),
        }
    }

    /// Whether `c` still has these.
    pub(crate) fn is(&self, c: &Cluster) -> bool {
        self.claims == c.claims
            && self.volumes == c.volumes
            && self.classes == c.storage_classes
            && self.drivers == c.csi_drivers
            && self.capacities == c.storage_capacities
            && self.attach_limits == c.attach_limits
            && self.device_classes == c.device_classes
            && self.slices == c.resource_slices
            && self.resource_claims == c.resource_claims
    }
}

impl Basis {
    /// Per job, its signature (what its tasks' classes depend on).
    pub fn job_signatures(&self) -> &[u64] {
        &self.job_sig
    }

    /// Per pod that is not a task, the node its usage counts on.
    pub fn pod_nodes(&self) -> &[u32] {
        &self.pod_node
    }
}
