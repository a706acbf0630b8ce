//! The objects of Dynamic Resource Allocation (`resource.k8s.io/v1`) with
//! structured parameters: devices drivers publish in ResourceSlices,
//! DeviceClasses, and the claims pods make of them. How claims are
//! allocated is [`crate::allocation`]'s.

use crate::node::MatchExpr;
use std::collections::BTreeMap;

/// The resource a device class is counted as (Kubernetes' implicit
/// extended resource name of a class), followed by the class's name.
pub const CLASS_RESOURCE: &str = "deviceclass.resource.kubernetes.io/";

/// A DeviceClass: the selectors every device of the class satisfies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceClass {
    /// `spec.selectors[].cel.expression`, ANDed.
    pub selectors: Vec<String>,
}

/// A device attribute's value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Attr {
    /// `int`.
    Int(i64),
    /// `bool`.
    Bool(bool),
    /// `string`.
    Str(String),
    /// `version` (semantic version, compared as written).
    Version(String),
}

/// One device a ResourceSlice publishes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Device {
    /// Its name, unique in its pool.
    pub name: String,
    /// `attributes`, by name as written (qualified or the driver's).
    pub attributes: BTreeMap<String, Attr>,
    /// `capacity[].value`, by name as written.
    pub capacity: BTreeMap<String, f64>,
    /// It has a `NoSchedule` or `NoExecute` taint: tolerations are not
    /// evaluated yet, so it is never allocated.
    pub tainted: bool,
}

/// A ResourceSlice: devices of one driver's pool and where they are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceSlice {
    /// `spec.driver`.
    pub driver: String,
    /// `spec.pool.name`.
    pub pool: String,
    /// `spec.nodeName`: the devices are that node's.
    pub node: Option<String>,
    /// `spec.nodeSelector` terms (ORed): the devices reach those nodes.
    pub node_selector: Vec<Vec<MatchExpr>>,
    /// `spec.allNodes`.
    pub all_nodes: bool,
    /// `spec.devices`.
    pub devices: Vec<Device>,
}

/// One request of a claim (`spec.devices.requests[].exactly`).
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct DeviceRequest {
    /// `name`.
    pub name: String,
    /// `deviceClassName`.
    pub class: String,
    /// `selectors[].cel.expression`, ANDed with the class's.
    pub selectors: Vec<String>,
    /// `allocationMode: All`: every matching device of the node.
    pub all: bool,
    /// `count` with `ExactCount` (1 when unset).
    pub count: u32,
}

/// A `matchAttribute` constraint: the devices of its requests share the attribute's value.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct MatchAttribute {
    /// `requests` (empty: every request of the claim).
    pub requests: Vec<String>,
    /// The fully qualified attribute (`domain/name`).
    pub attribute: String,
}

/// One device an allocation hands out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceResult {
    /// The request it serves.
    pub request: String,
    /// The driver, pool and device name.
    pub driver: String,
    /// The pool.
    pub pool: String,
    /// The device.
    pub device: String,
    /// `adminAccess`: held for monitoring, not taken from others.
    pub admin_access: bool,
}

/// A claim's `status.allocation`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocation {
    /// `nodeSelector.nodeSelectorTerms` (ORed): the nodes its devices
    /// reach; none: every node.
    pub node_selector: Vec<Vec<MatchExpr>>,
    /// `devices.results`.
    pub results: Vec<DeviceResult>,
}

impl Allocation {
    /// Devices of node `node` only: a selector naming it (`matchFields`).
    pub fn on_node(node: &str, results: Vec<DeviceResult>) -> Allocation {
        let name =
            MatchExpr { key: "metadata.name".into(), operator: "In".into(), values: vec![node.into()], field: true };
        Allocation { node_selector: vec![vec![name]], results }
    }
}

/// A ResourceClaim, or a ResourceClaimTemplate's claim spec.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceClaim {
    /// `spec.devices.requests`.
    pub requests: Vec<DeviceRequest>,
    /// `spec.devices.constraints`.
    pub constraints: Vec<MatchAttribute>,
    /// Spec fields tephra does not evaluate yet (`firstAvailable`, …): its
    /// pods wait, with them named.
    pub unevaluated: Vec<String>,
    /// `status.allocation`.
    pub allocation: Option<Allocation>,
    /// `status.reservedFor`: the pods (names, in its namespace) using it.
    pub reserved_for: Vec<String>,
    /// The pod it was made for (its owner), if any.
    pub owner: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

/// A pod's `spec.resourceClaims` entry.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct PodClaim {
    /// `name`, as containers refer to it.
    pub name: String,
    /// The ResourceClaim's name: `resourceClaimName`, or for a template
    /// the claim made for the pod (`status.resourceClaimStatuses`) once it is.
    pub claim: Option<String>,
    /// `resourceClaimTemplateName`.
    pub template: Option<String>,
}

/// The resource a class's devices count as.
pub fn resource_of(class: &str) -> String {
    format!("{CLASS_RESOURCE}{class}")
}
