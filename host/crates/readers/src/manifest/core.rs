//! Kubernetes' own kinds: Node, Pod, Namespace, CSINode, PriorityClass and
//! the ConfigMap holding Volcano's scheduler config (the storage kinds are in
//! `storage.rs`).

use super::fields::{boolean, get, int, int64, parse_time, resources, seq, string, Doc};
use super::object::Object;
use super::pod::{estimate, pod_spec, preemptable};
use crate::config::{scalar_string, SchedulerConfig};
use anyhow::Result;
use std::collections::BTreeMap;
use tephra_model::cluster::{Node, Pod, PodPhase, PriorityClass, Taint};
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
    super::devices::claim_statuses(at, v, &mut pod.device_claims)?;
    pod.estimated_ms = estimate(at, &meta.annotations)?;
    pod.annotations = meta.annotations;
    Ok(Object::Pod(Box::new(pod)))
}

pub(super) fn namespace(d: Doc) -> Result<Object> {
    Ok(Object::Namespace(d.meta.name, d.meta.labels))
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
