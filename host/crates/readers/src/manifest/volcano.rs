//! Volcano's kinds: Queue and PodGroup (`scheduling.volcano.sh/v1beta1`),
//! Job (`batch.volcano.sh/v1alpha1`, expanded as its job controller does) and
//! HyperNode (`topology.volcano.sh/v1alpha1`).

use super::fields::{boolean, count, get, int, map, resources, seq, string, At, Doc, Meta};
use super::object::Object;
use super::pod::{estimate, pod_spec, preemptable};
use super::topology;
use crate::config::scalar_string;
use anyhow::Result;
use std::collections::BTreeMap;
use tephra_model::cluster::{Phase, Pod, PodGroup, Queue, QueueState};
use tephra_model::resource::ResourceList;
use yaml_serde::Value;

pub(super) fn queue(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let Meta { name, annotations, created, .. } = d.meta;
    let weight = int(at, v, "spec.weight")?.unwrap_or(1);
    if !(0..=65535).contains(&weight) {
        return Err(at.err("spec.weight", "must be between 0 and 65535"));
    }
    let state = match string(at, v, "status.state")?.as_deref() {
        None | Some("Open") => QueueState::Open,
        Some("Closed") => QueueState::Closed,
        Some("Closing") => QueueState::Closing,
        Some("Unknown") => QueueState::Unknown,
        Some(s) => return Err(at.err("status.state", format!("{s:?} is not Open, Closed, Closing or Unknown"))),
    };
    let mut affinity = BTreeMap::new();
    for (kind, path) in [
        ("required", "spec.affinity.nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
        ("preferred", "spec.affinity.nodeGroupAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
        ("anti-required", "spec.affinity.nodeGroupAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
        ("anti-preferred", "spec.affinity.nodeGroupAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
    ] {
        let groups: Vec<String> = seq(at, v, path)?.iter().filter_map(scalar_string).collect();
        if !groups.is_empty() {
            affinity.insert(kind.to_string(), groups);
        }
    }
    Ok(Object::Queue(Queue {
        name,
        weight: weight as f64,
        priority: int(at, v, "spec.priority")?.unwrap_or(0) as i32,
        parent: string(at, v, "spec.parent")?.filter(|p| !p.is_empty()),
        reclaimable: boolean(at, v, "spec.reclaimable")?.unwrap_or(true),
        state,
        capability: resources(at, v, "spec.capability")?,
        deserved: resources(at, v, "spec.deserved")?,
        guarantee: resources(at, v, "spec.guarantee.resource")?,
        guaranteed: guarantee_policy(at, v, &annotations)?,
        reserve_percentage: percentage(at, v, &annotations)?,
        annotations,
        affinity,
        created,
    }))
}

pub(super) fn podgroup(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let Meta { name, namespace, annotations, created, .. } = d.meta;
    let phase_s = string(at, v, "status.phase")?.unwrap_or_default();
    let phase = Phase::parse(&phase_s).ok_or_else(|| at.err("status.phase", format!("unknown phase {phase_s:?}")))?;
    let mut min_task_member = BTreeMap::new();
    for (role, n) in map(at, v, "spec.minTaskMember")? {
        let n = n.parse().map_err(|_| at.err(&format!("spec.minTaskMember.{role}"), "expected an integer"))?;
        min_task_member.insert(role, n);
    }
    Ok(Object::PodGroup(PodGroup {
        namespace,
        name,
        queue: string(at, v, "spec.queue")?.unwrap_or_else(|| "default".into()),
        min_member: count(at, v, "spec.minMember")?.unwrap_or(1),
        min_task_member,
        min_resources: get(v, "spec.minResources").map(|_| resources(at, v, "spec.minResources")).transpose()?,
        priority_class: string(at, v, "spec.priorityClassName")?,
        priority: None,
        phase,
        created,
        annotations,
        condition: None,
        job_templates: Vec::new(),
        network_topology: topology::network_topology(at, v, "spec.networkTopology")?,
        subgroups: topology::subgroups(at, v)?,
    }))
}

pub(super) fn hypernode(d: Doc) -> Result<Object> {
    Ok(Object::HyperNode(topology::hypernode(d.at, d.v, d.meta.name)?))
}

/// Seed 000's fields as annotations, for clusters whose Queue CRD (Volcano's
/// own) has no schema for them and would prune `spec.guarantee.policy` and
/// `spec.guarantee.percentage` (docs/reservation.md).
pub const GUARANTEE_POLICY: &str = "tephra.io/guarantee-policy";
/// See [`GUARANTEE_POLICY`].
pub const GUARANTEE_PERCENTAGE: &str = "tephra.io/guarantee-percentage";
/// See [`GUARANTEE_POLICY`].
pub const GUARANTEE_DIMENSIONS: &str = "tephra.io/guarantee-percentage-dimensions";

/// A seed-000 field from the spec or, when absent there, its annotation;
/// both given and different is an error naming both.
pub(super) fn spec_or_annotation(
    at: &At,
    v: &Value,
    path: &str,
    annotations: &BTreeMap<String, String>,
    key: &str,
) -> Result<Option<(String, String)>> {
    let spec = match get(v, path) {
        None => None,
        Some(Value::Sequence(s)) => {
            let items: Option<Vec<String>> = s.iter().map(scalar_string).collect();
            Some(items.ok_or_else(|| at.err(path, "expected resource names"))?.join(","))
        }
        Some(x) => Some(scalar_string(x).ok_or_else(|| at.err(path, "expected a scalar"))?),
    };
    let note = annotations.get(key).cloned();
    match (spec, note) {
        (Some(s), Some(n)) if s.replace(' ', "") != n.replace(' ', "") => {
            Err(at.err(path, format!("{s:?} differs from annotation {key}: {n:?}")))
        }
        (Some(s), _) => Ok(Some((s, path.to_string()))),
        (None, Some(n)) => Ok(Some((n, format!("metadata.annotations.{key}")))),
        (None, None) => Ok(None),
    }
}

/// `spec.guarantee.policy`: whether the reservation evicts (Guaranteed).
pub(super) fn guarantee_policy(at: &At, v: &Value, annotations: &BTreeMap<String, String>) -> Result<bool> {
    match spec_or_annotation(at, v, "spec.guarantee.policy", annotations, GUARANTEE_POLICY)? {
        None => Ok(false),
        Some((p, _)) if p == "Best-Effort" => Ok(false),
        Some((p, _)) if p == "Guaranteed" => Ok(true),
        Some((p, field)) => Err(at.err(&field, format!("{p:?} is not Best-Effort or Guaranteed"))),
    }
}

/// `spec.guarantee.percentage {dimensions, value}`: value in [0, 1] for each
/// listed dimension (cpu and memory when none are listed).
pub(super) fn percentage(at: &At, v: &Value, annotations: &BTreeMap<String, String>) -> Result<BTreeMap<String, f64>> {
    let value = "spec.guarantee.percentage.value";
    let Some((text, field)) = spec_or_annotation(at, v, value, annotations, GUARANTEE_PERCENTAGE)? else {
        return Ok(BTreeMap::new());
    };
    let value = text.trim().parse::<f64>().ok().filter(|x| (0.0..=1.0).contains(x));
    let value = value.ok_or_else(|| at.err(&field, format!("{text:?} is not a number in [0, 1]")))?;
    let dims = "spec.guarantee.percentage.dimensions";
    let dims = spec_or_annotation(at, v, dims, annotations, GUARANTEE_DIMENSIONS)?.map(|(d, _)| d);
    let mut dims: Vec<String> =
        dims.iter().flat_map(|d| d.split(',')).map(str::trim).filter(|d| !d.is_empty()).map(String::from).collect();
    if dims.is_empty() {
        dims = vec!["cpu".into(), "memory".into()];
    }
    Ok(dims.into_iter().map(|d| (d, value)).collect())
}

/// The most pods one Volcano Job may make in the simulator: a larger count
/// is refused rather than filling memory.
pub(super) const JOB_PODS_MAX: u64 = 1_000_000;

/// A Volcano Job becomes a PodGroup carrying its pod templates; the simulated
/// job controller creates the pods once the group is admitted.
pub(super) fn job(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let Meta { name, namespace, annotations, created, .. } = d.meta;
    let queue = string(at, v, "spec.queue")?.unwrap_or_else(|| "default".into());
    let scheduler = string(at, v, "spec.schedulerName")?.unwrap_or_else(|| "volcano".into());
    let mut templates = Vec::new();
    let mut min_task_member = BTreeMap::new();
    let mut subgroups = Vec::new();
    let mut default_min = 0;
    for (ti, task) in seq(at, v, "spec.tasks")?.iter().enumerate() {
        let tname = string(at, task, "name")?.unwrap_or_else(|| format!("default{ti}"));
        let tat = At { origin: at.origin, object: format!("{} task {tname}", at.object) };
        let replicas = count(&tat, task, "replicas")?.unwrap_or(1);
        let partition = topology::partition(&tat, task, &tname, replicas)?;
        let implied = partition.as_ref().and_then(|(_, m)| *m);
        if let Some(m) = count(&tat, task, "minAvailable")?.or(implied) {
            min_task_member.insert(tname.clone(), m);
        }
        let size = partition.as_ref().map(|(p, _)| p.size);
        // Volcano's admission: a job without minAvailable needs the sum of
        // its tasks' (each its replicas unless set or implied).
        default_min += min_task_member.get(&tname).copied().unwrap_or(replicas);
        subgroups.extend(partition.map(|(p, _)| p));
        if templates.len() as u64 + u64::from(replicas) > JOB_PODS_MAX {
            let why = format!("the job's tasks add up to more than {JOB_PODS_MAX} pods, the simulator's limit");
            return Err(tat.err("replicas", why));
        }
        let tpl = get(task, "template").ok_or_else(|| at.err(&format!("spec.tasks[{ti}].template"), "missing"))?;
        for i in 0..replicas {
            let mut pod = Pod {
                namespace: namespace.clone(),
                name: format!("{name}-{tname}-{i}"),
                group: Some(name.clone()),
                task_spec: tname.clone(),
                created: created + i64::from(i),
                ..Default::default()
            };
            pod.annotations = map(&tat, tpl, "metadata.annotations")?;
            pod.estimated_ms = estimate(&tat, &pod.annotations)?;
            pod.labels = map(&tat, tpl, "metadata.labels")?;
            if let Some(size) = size {
                pod.labels.insert(topology::TASK_SPEC.into(), tname.clone());
                pod.labels.insert(topology::PARTITION_ID.into(), (i / size).to_string());
            }
            pod.preemptable = preemptable(&pod.annotations, &pod.labels);
            let spec = get(tpl, "spec").ok_or_else(|| tat.err("template.spec", "missing"))?;
            pod_spec(&tat, spec, &mut pod)?;
            pod.scheduler_name = scheduler.clone();
            for (k, val) in [
                ("scheduling.k8s.io/group-name", name.clone()),
                ("volcano.sh/job-name", name.clone()),
                ("volcano.sh/task-spec", tname.clone()),
                ("volcano.sh/task-index", i.to_string()),
                ("volcano.sh/queue-name", queue.clone()),
            ] {
                pod.annotations.insert(k.into(), val);
            }
            templates.push(pod);
        }
    }
    if templates.is_empty() {
        return Err(at.err("spec.tasks", "a Volcano Job needs at least one task with replicas"));
    }
    let min_member = count(at, v, "spec.minAvailable")?.unwrap_or(default_min);
    let mut min_resources = ResourceList::new();
    for p in templates.iter().take(min_member as usize) {
        for (k, q) in &p.requests {
            *min_resources.entry(k.clone()).or_default() += q;
        }
    }
    Ok(Object::PodGroup(PodGroup {
        namespace,
        name,
        queue,
        min_member,
        min_task_member,
        min_resources: Some(min_resources),
        priority_class: string(at, v, "spec.priorityClassName")?,
        priority: None,
        phase: Phase::Pending,
        created,
        annotations,
        condition: None,
        job_templates: templates,
        network_topology: topology::network_topology(at, v, "spec.networkTopology")?,
        subgroups,
    }))
}

/// A PodGroup spec's `networkTopology` and `subGroupPolicy` (for scenario
/// files, which give PodGroups in short form); `object` names it in errors.
pub fn podgroup_topology(
    spec: &Value,
    origin: &str,
    object: &str,
) -> Result<(Option<tephra_model::topology::NetworkTopology>, Vec<tephra_model::topology::SubGroupPolicy>)> {
    let at = At { origin, object: object.to_string() };
    let v = Value::Mapping([(Value::from("spec"), spec.clone())].into_iter().collect());
    Ok((topology::network_topology(&at, &v, "spec.networkTopology")?, topology::subgroups(&at, &v)?))
}
