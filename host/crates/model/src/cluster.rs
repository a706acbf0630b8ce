//! The cluster as the scheduler's cache holds it: nodes, queues, PodGroups
//! (jobs), pods (tasks) and priority classes, in Volcano's units.

use crate::resource::ResourceList;
use crate::tracked::{Status, Tracked};
use std::collections::BTreeMap;

pub use crate::node::{HostPort, MatchExpr, Node, PodTerm, Selector, Spread, Taint, Toleration};

/// Queue lifecycle state (maintained by Volcano's queue controller).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueState {
    /// Jobs may be submitted and scheduled.
    #[default]
    Open,
    /// No new job is admitted.
    Closed,
    /// Closing: no new job, the running ones finish.
    Closing,
    /// The controller could not tell.
    Unknown,
}

/// A Volcano Queue (`scheduling.volcano.sh/v1beta1`): who shares the cluster, and by what rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Queue {
    /// Its name (queues are cluster-scoped).
    pub name: String,
    /// `spec.weight`: its share under proportion.
    pub weight: f64,
    /// `spec.priority`: queues of higher priority go first.
    pub priority: i32,
    /// `spec.parent`; `None` means `root` (or no hierarchy).
    pub parent: Option<String>,
    /// `spec.reclaimable`: whether others may reclaim what it holds beyond its share.
    pub reclaimable: bool,
    /// `status.state`.
    pub state: QueueState,
    /// `spec.capability`: the most it may hold (empty: no limit).
    pub capability: ResourceList,
    /// `spec.deserved`: its share under capacity.
    pub deserved: ResourceList,
    /// `spec.guarantee.resource`: what is kept for it whatever others want.
    pub guarantee: ResourceList,
    /// `spec.guarantee.policy: Guaranteed` (default Best-Effort): a
    /// reservation evicts other queues' pods from the queue's locked nodes.
    pub guaranteed: bool,
    /// `spec.guarantee.percentage`: the share of the cluster to reserve, per
    /// listed dimension.
    pub reserve_percentage: BTreeMap<String, f64>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// Node-group affinity lists by kind ("required", "preferred",
    /// "anti-required", "anti-preferred").
    pub affinity: BTreeMap<String, Vec<String>>,
    /// Creation order: earlier queues win order ties.
    pub created: i64,
}

/// PodGroup phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// Not admitted yet.
    #[default]
    Pending,
    /// Admitted: its pods may be placed.
    Inqueue,
    /// At least its minimum of pods runs.
    Running,
    /// Some of its pods run, fewer than its minimum.
    Unknown,
    /// Its pods finished.
    Completed,
}

impl Phase {
    /// A `status.phase` (empty: Pending); `None` for another word.
    pub fn parse(s: &str) -> Option<Phase> {
        Some(match s {
            "" | "Pending" => Phase::Pending,
            "Inqueue" => Phase::Inqueue,
            "Running" => Phase::Running,
            "Unknown" => Phase::Unknown,
            "Completed" => Phase::Completed,
            _ => return None,
        })
    }

    /// The name in `status.phase`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Inqueue => "Inqueue",
            Phase::Running => "Running",
            Phase::Unknown => "Unknown",
            Phase::Completed => "Completed",
        }
    }
}

impl From<tephra_contract::JobPhase> for Phase {
    fn from(p: tephra_contract::JobPhase) -> Phase {
        use tephra_contract::JobPhase as J;
        match p {
            J::Pending => Phase::Pending,
            J::Inqueue => Phase::Inqueue,
            J::Running => Phase::Running,
            J::Unknown => Phase::Unknown,
            J::Completed => Phase::Completed,
        }
    }
}

/// A PodGroup status condition (`Scheduled` or `Unschedulable`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Condition {
    /// `type`.
    pub kind: String,
    /// `reason`: one word.
    pub reason: String,
    /// `message`: why, for a person.
    pub message: String,
}

/// A PodGroup: the unit of gang scheduling (a Volcano "job").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodGroup {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.queue` (default: `default`).
    pub queue: String,
    /// `spec.minMember`: the gang's minimum of pods placed together.
    pub min_member: u32,
    /// `spec.minTaskMember`: the minimum per role (task spec).
    pub min_task_member: BTreeMap<String, u32>,
    /// `spec.minResources`: what admission asks the queue for.
    pub min_resources: Option<ResourceList>,
    /// `spec.priorityClassName`.
    pub priority_class: Option<String>,
    /// An explicit job priority (scenario files); overrides the class.
    pub priority: Option<i32>,
    /// `status.phase`.
    pub phase: Phase,
    /// Creation time in ms (or the document's position when a file gives none).
    pub created: i64,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// The latest scheduling condition written at session close.
    pub condition: Option<Condition>,
    /// Set for PodGroups of a Volcano Job: pods are created from these
    /// templates once the group leaves Pending.
    pub job_templates: Vec<Pod>,
    /// `spec.networkTopology`: how close in the network its tasks must sit.
    pub network_topology: Option<crate::topology::NetworkTopology>,
    /// `spec.subGroupPolicy`: partitions, each a gang of its own.
    pub subgroups: Vec<crate::topology::SubGroupPolicy>,
}

/// `namespace/name`, built without the formatting machinery: the snapshot
/// names every pod and group each cycle.
fn key(namespace: &str, name: &str) -> String {
    let mut k = String::with_capacity(namespace.len() + 1 + name.len());
    k.push_str(namespace);
    k.push('/');
    k.push_str(name);
    k
}

impl PodGroup {
    /// `namespace/name`, Volcano's JobID.
    pub fn key(&self) -> String {
        key(&self.namespace, &self.name)
    }

    /// Whether `other` differs from this group in its status fields only.
    pub fn same_spec(&self, other: &PodGroup) -> bool {
        let mut o = other.clone();
        let s = o.status_fields();
        *s.phase = self.phase;
        *s.condition = self.condition.clone();
        *self == o
    }
}

/// Pod phase as Kubernetes reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PodPhase {
    /// Not running yet (waiting for a node, or starting on one).
    #[default]
    Pending,
    /// Running on its node.
    Running,
    /// Finished well.
    Succeeded,
    /// Finished badly.
    Failed,
    /// Its node does not say.
    Unknown,
}

impl PodPhase {
    /// A `status.phase` (empty: Pending); `None` for another word.
    pub fn parse(s: &str) -> Option<PodPhase> {
        Some(match s {
            "" | "Pending" => PodPhase::Pending,
            "Running" => PodPhase::Running,
            "Succeeded" => PodPhase::Succeeded,
            "Failed" => PodPhase::Failed,
            "Unknown" => PodPhase::Unknown,
            _ => return None,
        })
    }
}

/// A pod: a task of its PodGroup, or another scheduler's pod taking room on its node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pod {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// PodGroup name (annotation `scheduling.k8s.io/group-name`).
    pub group: Option<String>,
    /// `spec.schedulerName`: tephra places only its own pods.
    pub scheduler_name: String,
    /// What it asks for: its containers' requests (limits where none), the
    /// largest init container's, and the pod overhead.
    pub requests: ResourceList,
    /// `spec.nodeName`: where it is bound.
    pub node: Option<String>,
    /// `status.nominatedNodeName`: where preemption made room for it.
    pub nominated_node: Option<String>,
    /// `status.phase`.
    pub phase: PodPhase,
    /// `metadata.deletionTimestamp` is set: it is going away.
    pub deleting: bool,
    /// `spec.priority`.
    pub priority: Option<i32>,
    /// `spec.priorityClassName`.
    pub priority_class: Option<String>,
    /// Whether preemption may evict it (`volcano.sh/preemptable`, default true).
    pub preemptable: bool,
    /// `spec.preemptionPolicy: Never`: it waits rather than preempt.
    pub preempt_never: bool,
    /// Its role in its job (`volcano.sh/task-spec`).
    pub task_spec: String,
    /// `spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// `spec.tolerations`.
    pub tolerations: Vec<Toleration>,
    /// Required node-affinity terms (ORed), each a list of ANDed expressions.
    pub affinity: Vec<Vec<MatchExpr>>,
    /// Preferred node-affinity terms with their weights.
    pub preferred: Vec<(i32, Vec<MatchExpr>)>,
    /// Pod affinity and anti-affinity terms, required and preferred.
    pub pod_terms: Vec<PodTerm>,
    /// `spec.topologySpreadConstraints`.
    pub spread: Vec<Spread>,
    /// Host ports its containers bind.
    pub ports: Vec<HostPort>,
    /// The image of every container, init containers first, normalized as
    /// kube-scheduler does (`:latest` when neither tag nor digest).
    pub images: Vec<String>,
    /// PersistentVolumeClaims the pod mounts, by name in its namespace
    /// (an ephemeral volume's claim is `<pod>-<volume>`).
    pub claims: Vec<String>,
    /// Generic ephemeral volumes: (volume name, the claim made for it from
    /// its `volumeClaimTemplate`).
    pub ephemeral: Vec<(String, Claim)>,
    /// `spec.resourceClaims`: its DRA claims.
    pub device_claims: Vec<crate::devices::PodClaim>,
    /// The devices its claims take, per class, as they are in `requests`
    /// (see [`crate::allocation::account`]).
    pub devices: ResourceList,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// Creation time in ms (or the document's position when a file gives none).
    pub created: i64,
    /// When the pod started running (ms since the epoch).
    pub started: Option<i64>,
    /// Annotation `tephra.io/estimated-running-duration`, in ms.
    pub estimated_ms: Option<i64>,
    /// `spec.activeDeadlineSeconds`, in ms: the kubelet ends the pod this
    /// long after it starts.
    pub active_deadline_ms: Option<i64>,
    /// Spec fields that constrain placement and tephra does not evaluate
    /// yet (`spec.affinity.podAntiAffinity`, …): the pod waits, with them
    /// named as the reason, rather than being placed as if they were absent.
    pub unevaluated: Vec<String>,
}

impl Pod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        key(&self.namespace, &self.name)
    }

    /// Whether `other` differs from this pod in its status fields only
    /// (so the change can go through [`Tracked::status_mut`]).
    pub fn same_spec(&self, other: &Pod) -> bool {
        let mut o = other.clone();
        let s = o.status_fields();
        *s.node = self.node.clone();
        *s.nominated_node = self.nominated_node.clone();
        *s.phase = self.phase;
        *s.deleting = self.deleting;
        *s.started = self.started;
        *self == o
    }
}

/// A PriorityClass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriorityClass {
    /// `value`: the priority its pods get.
    pub value: i32,
    /// `globalDefault`: pods naming no class get this one.
    pub global_default: bool,
    /// `preemptionPolicy: Never`.
    pub preempt_never: bool,
}

/// Everything the scheduler knows about the cluster. The object lists
/// remember how they changed (see [`Tracked`]), so a session can start from
/// the last one.
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    /// The nodes, sorted by name.
    pub nodes: Tracked<Node>,
    /// The queues, in creation order.
    pub queues: Tracked<Queue>,
    /// The PodGroups (jobs), in creation order.
    pub podgroups: Tracked<PodGroup>,
    /// The pods (tasks, and other schedulers' pods), in creation order.
    pub pods: Tracked<Pod>,
    /// PriorityClasses by name.
    pub priority_classes: BTreeMap<String, PriorityClass>,
    /// Namespace labels, for pod affinity's `namespaceSelector`.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// PersistentVolumeClaims by `namespace/name`: the volume each is bound to.
    pub claims: BTreeMap<String, Claim>,
    /// PersistentVolumes by name: their required node affinity.
    pub volumes: BTreeMap<String, Volume>,
    /// StorageClasses by name: how their claims are bound.
    pub storage_classes: BTreeMap<String, StorageClass>,
    /// CSIDrivers by name: whether each opts into storage capacity tracking.
    pub csi_drivers: BTreeMap<String, bool>,
    /// CSIStorageCapacities by `namespace/name`.
    pub storage_capacities: BTreeMap<String, StorageCapacity>,
    /// DeviceClasses by name.
    pub device_classes: BTreeMap<String, crate::devices::DeviceClass>,
    /// ResourceSlices by name.
    pub resource_slices: BTreeMap<String, crate::devices::ResourceSlice>,
    /// ResourceClaims by `namespace/name`.
    pub resource_claims: BTreeMap<String, crate::devices::ResourceClaim>,
    /// ResourceClaimTemplates by `namespace/name`: the claim each makes.
    pub claim_templates: BTreeMap<String, crate::devices::ResourceClaim>,
    /// Per node, its devices per class (kept by [`crate::allocation::account`]).
    pub devices_counted: BTreeMap<String, ResourceList>,
    /// The classes and slices `devices_counted` was counted from.
    #[allow(clippy::type_complexity)]
    pub devices_basis:
        Option<(BTreeMap<String, crate::devices::DeviceClass>, BTreeMap<String, crate::devices::ResourceSlice>)>,
    /// Per node (its CSINode), how many volumes each CSI driver can attach.
    pub attach_limits: BTreeMap<String, BTreeMap<String, u32>>,
    /// HyperNodes by name.
    pub hypernodes: BTreeMap<String, crate::topology::HyperNode>,
    /// Why the HyperNodes cannot be known (the API refuses to list them):
    /// jobs with a network topology wait.
    pub topology_error: Option<String>,
    /// Workload objects (the simulator runs their controllers).
    pub workloads: Vec<Workload>,
    /// Advance reservations by name.
    pub reservations: BTreeMap<String, crate::window::AdvanceReservation>,
}

/// A workload controller's object, whose pods the simulator's controllers
/// make: `apps/v1` Deployment, ReplicaSet, StatefulSet; `batch/v1` Job.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Which controller makes its pods.
    pub kind: WorkloadKind,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// Pods kept running (Deployment, ReplicaSet, StatefulSet).
    pub replicas: u32,
    /// What each pod is made from (its name is set when made).
    pub template: Pod,
    /// A StatefulSet's `volumeClaimTemplates`: (name, claim); its pod
    /// `<name>-<ordinal>` mounts claim `<template>-<name>-<ordinal>`.
    pub claim_templates: Vec<(String, Claim)>,
    /// A batch Job's completion rules (a CronJob's for the Jobs it makes).
    pub job: Option<JobSpec>,
    /// A CronJob's schedule (five-field cron, on the simulated clock, UTC).
    pub schedule: Option<String>,
    /// Creation time in ms (or the document's position when a file gives none).
    pub created: i64,
}

/// Kinds of [`Workload`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `batch/v1` Job.
    Job,
    /// `batch/v1` CronJob.
    CronJob,
}

impl WorkloadKind {
    /// The kind as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::ReplicaSet => "ReplicaSet",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::Job => "Job",
            WorkloadKind::CronJob => "CronJob",
        }
    }
}

/// A `batch/v1` Job's `parallelism`, `completions`, `backoffLimit` and
/// `completionMode: Indexed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// Pods running at once.
    pub parallelism: u32,
    /// Pods that must succeed.
    pub completions: u32,
    /// Failures before the Job fails.
    pub backoff_limit: u32,
    /// Each completion has an index of its own.
    pub indexed: bool,
}

impl Workload {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        key(&self.namespace, &self.name)
    }

    /// A CronJob's first scheduled time after `after` (seconds since the
    /// epoch), if it has one.
    pub fn next_run(&self, after: i64) -> Option<i64> {
        use std::str::FromStr as _;
        let cron = croner::Cron::from_str(self.schedule.as_deref()?).ok()?;
        let at = chrono::DateTime::from_timestamp(after, 0)?;
        cron.find_next_occurrence(&at, false).ok().map(|t| t.timestamp())
    }
}

/// A StorageClass: how its claims are bound.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StorageClass {
    /// `provisioner` (`kubernetes.io/no-provisioner`: volumes are made by hand).
    pub provisioner: String,
    /// `volumeBindingMode: WaitForFirstConsumer` (else `Immediate`).
    pub wait_for_consumer: bool,
    /// `allowedTopologies`: terms ORed, each a set of `In` expressions
    /// ANDed (none: any node).
    pub topologies: Vec<Vec<MatchExpr>>,
    /// Annotated as the default class.
    pub default: bool,
}

/// A CSIStorageCapacity: room a CSI driver publishes for a class on the
/// nodes its topology selects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StorageCapacity {
    /// `storageClassName`.
    pub class: String,
    /// `nodeTopology` (`None`: no node has access).
    pub topology: Option<Vec<MatchExpr>>,
    /// `maximumVolumeSize`, else `capacity`, in bytes (`None`: neither given).
    pub limit: Option<u64>,
}

/// A PersistentVolumeClaim: the volume it is bound to, if any, and what
/// a volume must offer to be bound to it (see [`crate::storage`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Claim {
    /// `spec.volumeName` once the claim is Bound.
    pub volume: Option<String>,
    /// `spec.volumeName` set before the claim is Bound (bound by hand, to
    /// be completed by the volume controller): it waits like an Immediate one.
    pub prebound: bool,
    /// `spec.storageClassName` (`""` or absent: no class, bound at once; the
    /// API server's admission fills in the default class on creation).
    pub class: Option<String>,
    /// `spec.resources.requests.storage`, in bytes.
    pub request: u64,
    /// `spec.accessModes`.
    pub modes: Vec<String>,
    /// `spec.volumeMode: Block` (else Filesystem).
    pub block: bool,
    /// Annotation `volume.kubernetes.io/selected-node`: provisioning for
    /// this node is under way.
    pub selected_node: Option<String>,
}

/// A PersistentVolume: its required node affinity, terms ORed (none: any
/// node), for a CSI volume its driver and handle, and what it offers a claim.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Volume {
    /// `spec.nodeAffinity.required.nodeSelectorTerms`.
    pub affinity: Vec<Vec<MatchExpr>>,
    /// `spec.csi`: its driver and volume handle.
    pub csi: Option<(String, String)>,
    /// `spec.storageClassName` (`""`: none).
    pub class: String,
    /// `spec.capacity.storage`, in bytes.
    pub capacity: u64,
    /// `spec.accessModes`.
    pub modes: Vec<String>,
    /// `spec.volumeMode: Block` (else Filesystem).
    pub block: bool,
    /// `spec.claimRef` as `namespace/name`: the claim it is (being) bound to.
    pub claim: Option<String>,
    /// `status.phase` Available (or none given, in a file): it can be bound.
    pub available: bool,
}

/// The part of a pod that changes as it is scheduled and runs.
pub struct PodStatus<'a> {
    /// [`Pod::node`].
    pub node: &'a mut Option<String>,
    /// [`Pod::nominated_node`].
    pub nominated_node: &'a mut Option<String>,
    /// [`Pod::phase`].
    pub phase: &'a mut PodPhase,
    /// [`Pod::deleting`].
    pub deleting: &'a mut bool,
    /// [`Pod::started`].
    pub started: &'a mut Option<i64>,
}

impl Status for Pod {
    type Fields<'a> = PodStatus<'a>;
    fn status_fields(&mut self) -> PodStatus<'_> {
        PodStatus {
            node: &mut self.node,
            nominated_node: &mut self.nominated_node,
            phase: &mut self.phase,
            deleting: &mut self.deleting,
            started: &mut self.started,
        }
    }
}

/// The part of a PodGroup the scheduler and its controllers update.
pub struct PodGroupStatus<'a> {
    /// [`PodGroup::phase`].
    pub phase: &'a mut Phase,
    /// [`PodGroup::condition`].
    pub condition: &'a mut Option<Condition>,
}

impl Status for PodGroup {
    type Fields<'a> = PodGroupStatus<'a>;
    fn status_fields(&mut self) -> PodGroupStatus<'_> {
        PodGroupStatus { phase: &mut self.phase, condition: &mut self.condition }
    }
}

impl Cluster {
    /// The queue named `name`.
    pub fn queue(&self, name: &str) -> Option<&Queue> {
        self.queues.iter().find(|q| q.name == name)
    }

    /// Resolves a priority class name to its value (globalDefault when unnamed).
    pub fn class_priority(&self, class: Option<&str>) -> Option<i32> {
        match class {
            Some(c) => self.priority_classes.get(c).map(|p| p.value),
            None => self.priority_classes.values().find(|p| p.global_default).map(|p| p.value),
        }
    }

    /// Creates the `root` and `default` queues when missing, as Volcano does.
    pub fn ensure_default_queues(&mut self) {
        for (name, reclaimable) in [("root", false), ("default", true)] {
            if self.queue(name).is_none() {
                self.queues.push(Queue {
                    name: name.into(),
                    weight: 1.0,
                    reclaimable,
                    created: i64::MIN / 2,
                    ..Default::default()
                });
            }
        }
    }
}

impl Cluster {
    /// Pods by their PodGroup (`namespace`, group name), as indices.
    /// Objects that point at nothing, with why: a waiting pod whose PodGroup
    /// does not exist, a PodGroup whose queue does not exist. Nothing
    /// schedules them, so they are reported rather than left out silently.
    pub fn dangling(&self) -> Vec<(String, String)> {
        let groups: std::collections::HashSet<(&str, &str)> =
            self.podgroups.iter().map(|g| (g.namespace.as_str(), g.name.as_str())).collect();
        let queues: std::collections::HashSet<&str> = self.queues.iter().map(|q| q.name.as_str()).collect();
        let mut out = Vec::new();
        for p in self.pods.iter().filter(|p| p.node.is_none() && !p.deleting) {
            if let Some(g) = p.group.as_deref().filter(|g| !groups.contains(&(p.namespace.as_str(), g))) {
                out.push((p.key(), format!("its PodGroup {}/{g} does not exist", p.namespace)));
            }
        }
        for g in self.podgroups.iter().filter(|g| !queues.contains(g.queue.as_str())) {
            out.push((g.key(), format!("its queue {:?} does not exist", g.queue)));
        }
        out
    }

    /// Per PodGroup (`namespace`, `name`), the positions of its pods in [`Cluster::pods`].
    pub fn pods_by_group(&self) -> std::collections::HashMap<(&str, &str), Vec<usize>> {
        let mut out: std::collections::HashMap<(&str, &str), Vec<usize>> = std::collections::HashMap::new();
        for (i, p) in self.pods.iter().enumerate() {
            if let Some(g) = &p.group {
                out.entry((p.namespace.as_str(), g.as_str())).or_default().push(i);
            }
        }
        out
    }
}

/// Volcano's PodGroup phase after a session (`getPodGroupPhase`): a group
/// with `minMember` pods scheduled (bound, or finished) is `Running`, or
/// `Completed` once all of them finished (and, for a Volcano Job, every
/// templated pod exists); otherwise an admitted group stays `Inqueue` and
/// any other falls back to `Pending`. `phase` is the group's phase after the
/// session's admissions.
pub fn podgroup_phase(g: &PodGroup, phase: Phase, pods: &[&Pod]) -> Phase {
    let finished = |p: &&Pod| matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed);
    let scheduled = pods.iter().filter(|p| p.node.is_some() || finished(p)).count() as u32;
    if scheduled >= g.min_member.max(1) {
        if pods.iter().all(finished) && pods.len() >= g.job_templates.len() {
            Phase::Completed
        } else {
            Phase::Running
        }
    } else if phase == Phase::Inqueue {
        Phase::Inqueue
    } else {
        Phase::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn podgroup_phase_follows_volcano() {
        let g = PodGroup { min_member: 2, ..Default::default() };
        let bound = Pod { node: Some("n".into()), ..Default::default() };
        let pending = Pod::default();
        let done = Pod { node: Some("n".into()), phase: PodPhase::Succeeded, ..Default::default() };
        let failed = Pod { node: Some("n".into()), phase: PodPhase::Failed, ..Default::default() };
        let phase = |p, pods: &[&Pod]| podgroup_phase(&g, p, pods).name();
        assert_eq!(phase(Phase::Pending, &[&pending, &pending]), "Pending");
        assert_eq!(phase(Phase::Inqueue, &[&bound, &pending]), "Inqueue");
        assert_eq!(phase(Phase::Running, &[&bound, &pending]), "Pending");
        assert_eq!(phase(Phase::Inqueue, &[&bound, &bound]), "Running");
        assert_eq!(phase(Phase::Running, &[&done, &done]), "Completed");
        assert_eq!(phase(Phase::Running, &[&done, &failed]), "Completed");
        assert_eq!(phase(Phase::Running, &[&done, &bound]), "Running");
    }

    #[test]
    fn same_spec_ignores_status_fields_only() {
        let p = Pod { name: "p".into(), requests: [("cpu".into(), 1000.0)].into(), ..Default::default() };
        let bound = Pod { node: Some("n".into()), phase: PodPhase::Running, started: Some(5), ..p.clone() };
        assert!(p.same_spec(&bound) && bound.same_spec(&p));
        let bigger = Pod { requests: [("cpu".into(), 2000.0)].into(), ..p.clone() };
        assert!(!p.same_spec(&bigger));
        let g = PodGroup { name: "g".into(), min_member: 2, ..Default::default() };
        let running = PodGroup { phase: Phase::Running, ..g.clone() };
        assert!(g.same_spec(&running));
        assert!(!g.same_spec(&PodGroup { min_member: 3, ..g.clone() }));
    }
}
