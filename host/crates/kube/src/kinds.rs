//! The kinds tephra reads and writes beyond Kubernetes' own: their API
//! resources, and the annotations and quantities it writes on objects.

use kube::api::{ApiResource, GroupVersionKind};

/// Volcano's API group and version for Queue and PodGroup.
pub const VOLCANO_API: &str = "scheduling.volcano.sh/v1beta1";

/// `scheduling.volcano.sh/v1beta1` Queue (cluster-scoped).
pub fn queue_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("scheduling.volcano.sh", "v1beta1", "Queue"), "queues")
}

/// `scheduling.volcano.sh/v1beta1` PodGroup (namespaced).
pub fn podgroup_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("scheduling.volcano.sh", "v1beta1", "PodGroup"),
        "podgroups",
    )
}

/// `topology.volcano.sh/v1alpha1` HyperNode (cluster-scoped).
pub fn hypernode_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("topology.volcano.sh", "v1alpha1", "HyperNode"),
        "hypernodes",
    )
}

/// `tephra.io/v1alpha1` Reservation (cluster-scoped): advance reservations.
pub fn reservation_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("tephra.io", "v1alpha1", "Reservation"), "reservations")
}

/// The PodGroup annotation that keeps a big-job reservation across leaders
/// (`{"rank":0,"nodes":["n1"]}`): Volcano's PodGroup status schema has no
/// place for it, so the API server would prune a status field.
pub const TARGET_ANNOTATION: &str = "tephra.io/reservation";

/// A PodGroup's big-job reservation, as kept in [`TARGET_ANNOTATION`].
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    /// Its place in the election order.
    pub rank: usize,
    /// The nodes locked for it.
    pub nodes: Vec<String>,
}

/// The pod annotation naming its PodGroup.
pub const GROUP_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// The pod annotation naming the queue of a generated PodGroup.
pub const QUEUE_ANNOTATION: &str = "scheduling.volcano.sh/queue-name";
/// A quantity as the API writes it, exact: memory and pods in units, others in milli-units.
pub fn quantity(name: &str, v: f64) -> String {
    match name {
        "memory" | "pods" => format!("{:.0}", v),
        _ if (v % 1000.0).abs() < 1e-9 => format!("{:.0}", v / 1000.0),
        _ => format!("{:.0}m", v),
    }
}
