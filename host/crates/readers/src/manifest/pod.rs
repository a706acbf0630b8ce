//! The pod spec, shared by Pods, Volcano Job templates and workload
//! templates: requests, placement rules, images and volumes.

use super::fields::{get, int, int64, map, resources, seq, string, At};
use super::object::ESTIMATE;
use super::rules;
use super::storage::claim_in;
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;
use tephra_model::cluster::{Pod, Toleration};
use tephra_model::resource::ResourceList;
use yaml_serde::Value;

/// The pod's `tephra.io/estimated-running-duration`, in ms.
pub(super) fn estimate(at: &At, annotations: &BTreeMap<String, String>) -> Result<Option<i64>> {
    annotations
        .get(ESTIMATE)
        .map(|s| {
            tephra_model::duration::duration_ms(s)
                .ok_or_else(|| at.err(&format!("metadata.annotations.{ESTIMATE}"), format!("{s:?} is not a duration")))
        })
        .transpose()
}

/// Reads the pod spec part shared by Pods and Volcano Job templates.
pub(super) fn pod_spec(at: &At, spec: &Value, pod: &mut Pod) -> Result<()> {
    pod.active_deadline_ms = match int64(at, spec, "activeDeadlineSeconds")? {
        Some(s) if s > 0 && s <= i64::MAX / 1000 => Some(s * 1000),
        Some(s) => {
            return Err(at.err("spec.activeDeadlineSeconds", format!("{s} must be a positive number of seconds")))
        }
        None => None,
    };
    let mut total = ResourceList::new();
    for (i, c) in seq(at, spec, "containers")?.iter().enumerate() {
        let mut req = resources(at, c, "resources.limits").map_err(|e| anyhow!("{e} (containers[{i}])"))?;
        req.extend(resources(at, c, "resources.requests").map_err(|e| anyhow!("{e} (containers[{i}])"))?);
        for (k, v) in req {
            *total.entry(k).or_default() += v;
        }
    }
    for c in seq(at, spec, "initContainers")? {
        let mut req = resources(at, c, "resources.limits")?;
        req.extend(resources(at, c, "resources.requests")?);
        for (k, v) in req {
            let e = total.entry(k).or_default();
            *e = e.max(v);
        }
    }
    for (k, v) in resources(at, spec, "overhead")? {
        *total.entry(k).or_default() += v;
    }
    pod.requests = total;
    pod.scheduler_name = string(at, spec, "schedulerName")?.unwrap_or_else(|| "default-scheduler".into());
    pod.node = string(at, spec, "nodeName")?;
    pod.priority = int(at, spec, "priority")?.map(|p| p as i32);
    pod.priority_class = string(at, spec, "priorityClassName")?;
    pod.preempt_never = string(at, spec, "preemptionPolicy")?.as_deref() == Some("Never");
    placement(at, spec, pod)
}

/// A pod spec's placement rules (pod labels read already): node selector,
/// tolerations, affinity, spread, host ports, and what is not evaluated.
pub(super) fn placement(at: &At, spec: &Value, pod: &mut Pod) -> Result<()> {
    pod.node_selector = map(at, spec, "nodeSelector")?;
    for (i, t) in seq(at, spec, "tolerations")?.iter().enumerate() {
        let f = |k: &str| string(at, t, k).map(Option::unwrap_or_default);
        let tol = Toleration { key: f("key")?, operator: f("operator")?, value: f("value")?, effect: f("effect")? };
        if !["", "Exists", "Equal"].contains(&tol.operator.as_str()) {
            return Err(at.err(
                &format!("spec.tolerations[{i}].operator"),
                format!("{:?} is not Exists or Equal", tol.operator),
            ));
        }
        pod.tolerations.push(tol);
    }
    pod.unevaluated = unevaluated(spec);
    pod.device_claims = super::devices::pod_claims(at, spec)?;
    rules::read(at, spec, pod)?;
    pod.images.clear();
    for list in ["initContainers", "containers"] {
        for c in seq(at, spec, list)? {
            pod.images.push(normalized_image(&string(at, c, "image")?.unwrap_or_default()));
        }
    }
    for (i, vol) in seq(at, spec, "volumes")?.iter().enumerate() {
        if let Some(claim) = string(at, vol, "persistentVolumeClaim.claimName")? {
            pod.claims.push(claim);
        } else if get(vol, "ephemeral").is_some() {
            let name = string(at, vol, "name")?.ok_or_else(|| at.err(&format!("spec.volumes[{i}].name"), "missing"))?;
            let template = format!("volumes[{i}].ephemeral.volumeClaimTemplate.");
            pod.ephemeral.push((name.clone(), claim_in(at, spec, &template, &BTreeMap::new())?));
            pod.claims.push(format!("{}-{name}", pod.name));
        }
    }
    Ok(())
}

/// kube-scheduler's image name for locality: `:latest` added when the name
/// has no tag (nor digest) after its last `/`.
pub(super) fn normalized_image(name: &str) -> String {
    if name.rfind(':') <= name.rfind('/') {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// Reads the placement rules of `spec` (a PodSpec) into `pod`, whose labels
/// are set: for objects that are not whole manifests (scenario files).
/// Errors name `origin`, `object` and the field.
pub fn read_placement(origin: &str, object: &str, spec: &Value, pod: &mut Pod) -> Result<()> {
    placement(&At { origin, object: object.to_string() }, spec, pod)
}

/// The placement rules of a pod spec that tephra does not evaluate yet, by
/// field: a pod with any of them waits, never placed as if they were absent.
pub(super) fn unevaluated(spec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let present = |path: &str| match get(spec, path) {
        Some(Value::Sequence(s)) => !s.is_empty(),
        Some(Value::Mapping(m)) => !m.is_empty(),
        Some(Value::Null) | None => false,
        Some(_) => true,
    };
    if present("schedulingGates") {
        out.push("spec.schedulingGates".into());
    }
    out
}

pub(super) fn preemptable(annotations: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    annotations
        .get("volcano.sh/preemptable")
        .or_else(|| labels.get("volcano.sh/preemptable"))
        .is_none_or(|v| v != "false")
}
