//! The storage kinds: PersistentVolumeClaim (and the claims StatefulSets and
//! ephemeral volumes template), PersistentVolume, StorageClass, CSIDriver and
//! CSIStorageCapacity.

use super::fields::{boolean, get, seq, string, At, Doc};
use super::object::Object;
use super::rules;
use crate::config::scalar_string;
use anyhow::Result;
use std::collections::BTreeMap;
use tephra_model::cluster::{Claim, StorageCapacity, StorageClass, Volume};
use tephra_model::node::MatchExpr;
use tephra_model::resource::parse_quantity;
use tephra_model::storage::{DEFAULT_CLASS, SELECTED_NODE};
use yaml_serde::Value;

pub(super) fn claim(d: Doc) -> Result<Object> {
    let claim = claim_in(d.at, d.v, "", &d.meta.annotations)?;
    Ok(Object::Claim(format!("{}/{}", d.meta.namespace, d.meta.name), claim))
}

/// A claim from `v` (a PersistentVolumeClaim, or a StatefulSet's or an
/// ephemeral volume's claim template, its fields under `prefix`).
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
        modes: access_modes(at, v, prefix)?,
        block: block(at, v, prefix)?,
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
            modes: access_modes(at, v, "")?,
            block: block(at, v, "")?,
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

/// `spec.accessModes` under `prefix`.
fn access_modes(at: &At, v: &Value, prefix: &str) -> Result<Vec<String>> {
    Ok(seq(at, v, &format!("{prefix}spec.accessModes"))?.iter().filter_map(scalar_string).collect())
}

/// `spec.volumeMode: Block` under `prefix`.
fn block(at: &At, v: &Value, prefix: &str) -> Result<bool> {
    Ok(string(at, v, &format!("{prefix}spec.volumeMode"))?.as_deref() == Some("Block"))
}
