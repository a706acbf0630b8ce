//! Kubernetes' own kinds: Node, Pod, Namespace, PersistentVolumeClaim,
//! PersistentVolume, StorageClass, CSIDriver, CSIStorageCapacity, CSINode,
//! PriorityClass and the ConfigMap holding
//! Volcano's scheduler config.

use super::fields::{boolean, get, int, int64, parse_time, resources, seq, string, At, Doc};
use super::object::Object;
use super::pod::{estimate, pod_spec, preemptable};
use super::rules;
use crate::config::{scalar_string, SchedulerConfig};
use anyhow::Result;
use std::collections::BTreeMap;
use tephra_model::cluster::{Claim, Node, Pod, PodPhase, PriorityClass, Taint, Volume};
use tephra_model::node::MatchExpr;
use tephra_model::resource::parse_quantity;
use tephra_model::storage::{StorageCapacity, StorageClass, DEFAULT_CLASS, SELECTED_NODE};
use yaml_serde::Value;

pub(super) fn node(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let mut allocatable = resources(at, v, "status.allocatable")?;
    if allocatable.is_empty() {
        allocatable = resources(at, v, "status.capacity")?;
    }
    let mut taints = Vec::new();
    for t in seq(at, v, "spec.taints")? {
        let f = |k: &str| string(at, t, k).map(Option::unwrap_or_default);
        taints.push(Taint { key: f("key")?, value: f("value")?, effect: f("effect")? });
    }
    let mut images = Vec::new();
    for (i, im) in seq(at, v, "status.images")?.iter().enumerate() {
        let names = seq(at, im, "names")?.iter().filter_map(scalar_string).collect();
        let size =
            int64(at, im, "sizeBytes")?.ok_or_else(|| at.err(&format!("status.images[{i}].sizeBytes"), "missing"))?;
        images.push((names, size as f64));
    }
    Ok(Object::Node(Node {
        name: d.meta.name,
        allocatable,
        labels: d.meta.labels,
        taints,
        unschedulable: boolean(at, v, "spec.unschedulable")?.unwrap_or(false),
        images,
    }))
}

pub(super) fn pod(d: Doc) -> Result<Object> {
    let (at, v, meta) = (d.at, d.v, d.meta);
    let phase_s = string(at, v, "status.phase")?.unwrap_or_default();
    let phase =
        PodPhase::parse(&phase_s).ok_or_else(|| at.err("status.phase", format!("unknown phase {phase_s:?}")))?;
    let mut pod = Pod {
        namespace: meta.namespace,
        name: meta.name,
        group: meta.annotations.get("scheduling.k8s.io/group-name").cloned(),
        phase,
        deleting: get(v, "metadata.deletionTimestamp").is_some(),
        preemptable: preemptable(&meta.annotations, &meta.labels),
        task_spec: meta.annotations.get("volcano.sh/task-spec").cloned().unwrap_or_default(),
        nominated_node: string(at, v, "status.nominatedNodeName")?,
        created: meta.created,
        // When the kubelet started it: time limits count from here.
        started: match string(at, v, "status.startTime")? {
            None => None,
            Some(t) => Some(
                parse_time(&t).ok_or_else(|| at.err("status.startTime", format!("{t:?} is not an RFC 3339 time")))?
                    * 1000,
            ),
        },
        ..Default::default()
    };
    pod.labels = meta.labels;
    let spec = get(v, "spec").ok_or_else(|| at.err("spec", "missing"))?;
    pod_spec(at, spec, &mut pod)?;
    pod.estimated_ms = estimate(at, &meta.annotations)?;
    pod.annotations = meta.annotations;
    Ok(Object::Pod(Box::new(pod)))
}

pub(super) fn namespace(d: Doc) -> Result<Object> {
    Ok(Object::Namespace(d.meta.name, d.meta.labels))
}

pub(super) fn claim(d: Doc) -> Result<Object> {
    let claim = claim_in(d.at, d.v, "", &d.meta.annotations)?;
    Ok(Object::Claim(format!("{}/{}", d.meta.namespace, d.meta.name), claim))
}

/// A claim from `v` (a PersistentVolumeClaim, or a StatefulSet's claim
/// template, its fields under `prefix`).
pub(super) fn claim_in(at: &At, v: &Value, prefix: &str, annotations: &BTreeMap<String, String>) -> Result<Claim> {
    let field = |f: &str| format!("{prefix}{f}");
    // Bound: `spec.volumeName` once the binder set it, and phase Bound.
    let bound = string(at, v, &field("status.phase"))?.as_deref() == Some("Bound");
    let name = string(at, v, &field("spec.volumeName"))?.filter(|n| !n.is_empty());
    Ok(Claim {
        prebound: name.is_some() && !bound,
        volume: name.filter(|_| bound),
        class: string(at, v, &field("spec.storageClassName"))?,
        request: bytes(at, v, &field("spec.resources.requests.storage"))?,
        modes: seq(at, v, &field("spec.accessModes"))?.iter().filter_map(scalar_string).collect(),
        block: string(at, v, &field("spec.volumeMode"))?.as_deref() == Some("Block"),
        selected_node: annotations.get(SELECTED_NODE).cloned(),
    })
}

pub(super) fn volume(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let path = "spec.nodeAffinity.required.nodeSelectorTerms";
    let mut affinity = Vec::new();
    for (i, term) in seq(at, v, path)?.iter().enumerate() {
        affinity.push(rules::node_term(at, term, &format!("{path}[{i}]"))?);
    }
    let csi = match (string(at, v, "spec.csi.driver")?, string(at, v, "spec.csi.volumeHandle")?) {
        (Some(driver), Some(handle)) => Some((driver, handle)),
        _ => None,
    };
    let claim = match (string(at, v, "spec.claimRef.namespace")?, string(at, v, "spec.claimRef.name")?) {
        (ns, Some(name)) => Some(format!("{}/{name}", ns.unwrap_or_else(|| "default".into()))),
        _ => None,
    };
    let phase = string(at, v, "status.phase")?;
    Ok(Object::Volume(
        d.meta.name,
        Volume {
            affinity,
            csi,
            class: string(at, v, "spec.storageClassName")?.unwrap_or_default(),
            capacity: bytes(at, v, "spec.capacity.storage")?,
            modes: access_modes(at, v)?,
            block: block(at, v)?,
            claim,
            available: matches!(phase.as_deref(), None | Some("Available")),
        },
    ))
}

/// A StorageClass: its binding mode, provisioner and allowed topologies.
pub(super) fn storage_class(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let mode = string(at, v, "volumeBindingMode")?;
    let wait_for_consumer = match mode.as_deref() {
        None | Some("Immediate") => false,
        Some("WaitForFirstConsumer") => true,
        Some(other) => {
            return Err(at.err("volumeBindingMode", format!("{other:?} is not Immediate or WaitForFirstConsumer")))
        }
    };
    let mut topologies = Vec::new();
    for (i, term) in seq(at, v, "allowedTopologies")?.iter().enumerate() {
        let mut exprs = Vec::new();
        for (j, e) in seq(at, term, "matchLabelExpressions")?.iter().enumerate() {
            let path = format!("allowedTopologies[{i}].matchLabelExpressions[{j}]");
            let key = string(at, e, "key")?.ok_or_else(|| at.err(&format!("{path}.key"), "missing"))?;
            let values: Vec<String> = seq(at, e, "values")?.iter().filter_map(scalar_string).collect();
            exprs.push(MatchExpr { key, operator: "In".into(), values, field: false });
        }
        topologies.push(exprs);
    }
    let provisioner = string(at, v, "provisioner")?.ok_or_else(|| at.err("provisioner", "missing"))?;
    Ok(Object::StorageClass(
        d.meta.name,
        StorageClass {
            provisioner,
            wait_for_consumer,
            topologies,
            default: d.meta.annotations.get(DEFAULT_CLASS).map(String::as_str) == Some("true"),
        },
    ))
}

/// A CSIDriver: whether it opts into storage capacity tracking.
pub(super) fn csi_driver(d: Doc) -> Result<Object> {
    Ok(Object::CsiDriver(d.meta.name, boolean(d.at, d.v, "spec.storageCapacity")?.unwrap_or(false)))
}

/// A CSIStorageCapacity: a class's room on the nodes its topology selects.
pub(super) fn storage_capacity(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let class = string(at, v, "storageClassName")?.ok_or_else(|| at.err("storageClassName", "missing"))?;
    let limit = match get(v, "maximumVolumeSize") {
        Some(_) => Some(bytes(at, v, "maximumVolumeSize")?),
        None => get(v, "capacity").map(|_| bytes(at, v, "capacity")).transpose()?,
    };
    let capacity = StorageCapacity { class, topology: rules::selector(at, v, "nodeTopology", "")?, limit };
    Ok(Object::StorageCapacity(format!("{}/{}", d.meta.namespace, d.meta.name), capacity))
}

/// A storage quantity in bytes (0 when absent).
fn bytes(at: &At, v: &Value, path: &str) -> Result<u64> {
    match string(at, v, path)? {
        None => Ok(0),
        Some(q) => match parse_quantity(&q) {
            Ok(b) if b >= 0.0 => Ok(b.ceil() as u64),
            Ok(_) => Err(at.err(path, format!("{q:?} is negative"))),
            Err(e) => Err(at.err(path, e)),
        },
    }
}

fn access_modes(at: &At, v: &Value) -> Result<Vec<String>> {
    Ok(seq(at, v, "spec.accessModes")?.iter().filter_map(scalar_string).collect())
}

fn block(at: &At, v: &Value) -> Result<bool> {
    Ok(string(at, v, "spec.volumeMode")?.as_deref() == Some("Block"))
}

/// A CSINode: per driver, how many volumes its node may attach.
pub(super) fn attach_limits(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let mut limits = BTreeMap::new();
    for (i, driver) in seq(at, v, "spec.drivers")?.iter().enumerate() {
        let name = string(at, driver, "name")?.ok_or_else(|| at.err(&format!("spec.drivers[{i}].name"), "missing"))?;
        if let Some(count) = int(at, driver, "allocatable.count")? {
            let count = u32::try_from(count).map_err(|_| {
                at.err(&format!("spec.drivers[{i}].allocatable.count"), format!("{count} is not a count"))
            })?;
            limits.insert(name, count);
        }
    }
    Ok(Object::AttachLimits(d.meta.name, limits))
}

pub(super) fn priority_class(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let value = int(at, v, "value")?.ok_or_else(|| at.err("value", "missing"))? as i32;
    Ok(Object::PriorityClass(
        d.meta.name,
        PriorityClass {
            value,
            global_default: boolean(at, v, "globalDefault")?.unwrap_or(false),
            preempt_never: string(at, v, "preemptionPolicy")?.as_deref() == Some("Never"),
        },
    ))
}

/// A ConfigMap here holds `volcano-scheduler.conf`.
pub(super) fn config_map(d: Doc) -> Result<Object> {
    let at = d.at;
    match d.v.get("data").and_then(|x| x.get("volcano-scheduler.conf")).and_then(Value::as_str) {
        Some(text) => Ok(Object::Config(SchedulerConfig::parse(
            text,
            &format!("{}: {}: data.volcano-scheduler.conf", at.origin, at.object),
        )?)),
        None => Err(at.err("data", "a ConfigMap here must hold volcano-scheduler.conf")),
    }
}
