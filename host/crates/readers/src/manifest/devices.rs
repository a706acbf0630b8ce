//! The kinds of Dynamic Resource Allocation (`resource.k8s.io/v1`):
//! DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate, and a
//! pod's `spec.resourceClaims`.

use super::fields::{boolean, count, get, seq, string, At, Doc};
use super::object::Object;
use super::rules;
use anyhow::Result;
use std::collections::BTreeMap;
use tephra_model::devices::{
    Allocation, Attr, Device, DeviceClass, DeviceRequest, DeviceResult, MatchAttribute, PodClaim, ResourceClaim,
    ResourceSlice,
};
use tephra_model::resource::parse_quantity;
use yaml_serde::Value;

pub(super) fn device_class(d: Doc) -> Result<Object> {
    let selectors = cel_selectors(d.at, d.v, "spec.selectors")?;
    Ok(Object::DeviceClass(d.meta.name, DeviceClass { selectors }))
}

/// `path[].cel.expression`: every entry must have one.
fn cel_selectors(at: &At, v: &Value, path: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (i, s) in seq(at, v, path)?.iter().enumerate() {
        let field = format!("{path}[{i}].cel.expression");
        out.push(string(at, s, "cel.expression")?.ok_or_else(|| at.err(&field, "missing"))?);
    }
    Ok(out)
}

pub(super) fn resource_slice(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let driver = string(at, v, "spec.driver")?.ok_or_else(|| at.err("spec.driver", "missing"))?;
    let pool = string(at, v, "spec.pool.name")?.ok_or_else(|| at.err("spec.pool.name", "missing"))?;
    if boolean(at, v, "spec.perDeviceNodeSelection")? == Some(true) {
        return Err(at.err("spec.perDeviceNodeSelection", "not read by tephra yet"));
    }
    let path = "spec.nodeSelector.nodeSelectorTerms";
    let mut node_selector = Vec::new();
    for (i, term) in seq(at, v, path)?.iter().enumerate() {
        node_selector.push(rules::node_term(at, term, &format!("{path}[{i}]"))?);
    }
    let mut devices = Vec::new();
    for (i, dv) in seq(at, v, "spec.devices")?.iter().enumerate() {
        let p = format!("spec.devices[{i}]");
        let name = string(at, dv, "name")?.ok_or_else(|| at.err(&format!("{p}.name"), "missing"))?;
        let mut attributes = BTreeMap::new();
        if let Some(Value::Mapping(m)) = get(dv, "attributes") {
            for (k, a) in m {
                let k = k.as_str().unwrap_or_default().to_string();
                let field = format!("{p}.attributes.{k}");
                let attr = if let Some(i) = get(a, "int").and_then(Value::as_i64) {
                    Attr::Int(i)
                } else if let Some(b) = get(a, "bool").and_then(Value::as_bool) {
                    Attr::Bool(b)
                } else if let Some(s) = get(a, "string").and_then(Value::as_str) {
                    Attr::Str(s.to_string())
                } else if let Some(s) = get(a, "version").and_then(Value::as_str) {
                    Attr::Version(s.to_string())
                } else {
                    return Err(at.err(&field, "expected one of int, bool, string, version"));
                };
                attributes.insert(k, attr);
            }
        }
        let mut capacity = BTreeMap::new();
        if let Some(Value::Mapping(m)) = get(dv, "capacity") {
            for (k, c) in m {
                let k = k.as_str().unwrap_or_default().to_string();
                let field = format!("{p}.capacity.{k}.value");
                let q = string(at, c, "value")?.ok_or_else(|| at.err(&field, "missing"))?;
                capacity.insert(k, parse_quantity(&q).map_err(|e| at.err(&field, e))?);
            }
        }
        let tainted = seq(at, dv, "taints")?
            .iter()
            .any(|t| matches!(get(t, "effect").and_then(Value::as_str), Some("NoSchedule" | "NoExecute")));
        devices.push(Device { name, attributes, capacity, tainted });
    }
    let slice = ResourceSlice {
        driver,
        pool,
        node: string(at, v, "spec.nodeName")?,
        node_selector,
        all_nodes: boolean(at, v, "spec.allNodes")?.unwrap_or(false),
        devices,
    };
    Ok(Object::ResourceSlice(d.meta.name, slice))
}

pub(super) fn resource_claim(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let mut claim = claim_spec(at, v, "spec.devices")?;
    if let Some(a) = get(v, "status.allocation") {
        let mut results = Vec::new();
        for (i, r) in seq(at, a, "devices.results")?.iter().enumerate() {
            let field = |f: &str| -> Result<String> {
                let path = format!("status.allocation.devices.results[{i}].{f}");
                string(at, r, f)?.ok_or_else(|| at.err(&path, "missing"))
            };
            results.push(DeviceResult {
                request: field("request")?,
                driver: field("driver")?,
                pool: field("pool")?,
                device: field("device")?,
                admin_access: boolean(at, r, "adminAccess")?.unwrap_or(false),
            });
        }
        let path = "status.allocation.nodeSelector.nodeSelectorTerms";
        let mut node_selector = Vec::new();
        for (i, term) in seq(at, a, "nodeSelector.nodeSelectorTerms")?.iter().enumerate() {
            node_selector.push(rules::node_term(at, term, &format!("{path}[{i}]"))?);
        }
        claim.allocation = Some(Allocation { node_selector, results });
    }
    for r in seq(at, v, "status.reservedFor")? {
        if string(at, r, "resource")?.as_deref() == Some("pods") {
            claim.reserved_for.extend(string(at, r, "name")?);
        }
    }
    claim.owner = seq(at, v, "metadata.ownerReferences")?
        .iter()
        .find(|o| get(o, "kind").and_then(Value::as_str) == Some("Pod"))
        .and_then(|o| get(o, "name").and_then(Value::as_str))
        .map(str::to_string);
    claim.deleting = get(v, "metadata.deletionTimestamp").is_some();
    Ok(Object::ResourceClaim(format!("{}/{}", d.meta.namespace, d.meta.name), claim))
}

pub(super) fn claim_template(d: Doc) -> Result<Object> {
    let claim = claim_spec(d.at, d.v, "spec.spec.devices")?;
    Ok(Object::ClaimTemplate(format!("{}/{}", d.meta.namespace, d.meta.name), claim))
}

/// A claim's device requests and constraints, under `path`.
fn claim_spec(at: &At, v: &Value, path: &str) -> Result<ResourceClaim> {
    let mut claim = ResourceClaim::default();
    for (i, r) in seq(at, v, &format!("{path}.requests"))?.iter().enumerate() {
        let p = format!("{path}.requests[{i}]");
        let name = string(at, r, "name")?.ok_or_else(|| at.err(&format!("{p}.name"), "missing"))?;
        if get(r, "firstAvailable").is_some() {
            claim.unevaluated.push(format!("{p}.firstAvailable"));
            continue;
        }
        let Some(e) = get(r, "exactly") else {
            return Err(at.err(&format!("{p}.exactly"), "missing"));
        };
        let class = string(at, e, "deviceClassName")?
            .ok_or_else(|| at.err(&format!("{p}.exactly.deviceClassName"), "missing"))?;
        for field in ["adminAccess", "capacity", "tolerations"] {
            if get(e, field).is_some() {
                claim.unevaluated.push(format!("{p}.exactly.{field}"));
            }
        }
        let all = match string(at, e, "allocationMode")?.as_deref() {
            None | Some("ExactCount") => false,
            Some("All") => true,
            Some(other) => {
                return Err(
                    at.err(&format!("{p}.exactly.allocationMode"), format!("{other:?} is not ExactCount or All"))
                )
            }
        };
        let count = count(at, e, "count")?.unwrap_or(1);
        let selectors = cel_selectors(at, e, "selectors")?;
        claim.requests.push(DeviceRequest { name, class, selectors, all, count });
    }
    for (i, c) in seq(at, v, &format!("{path}.constraints"))?.iter().enumerate() {
        let p = format!("{path}.constraints[{i}]");
        let Some(attribute) = string(at, c, "matchAttribute")? else {
            claim.unevaluated.push(format!("{p} (only matchAttribute is)"));
            continue;
        };
        let requests = seq(at, c, "requests")?.iter().filter_map(|r| r.as_str().map(str::to_string)).collect();
        claim.constraints.push(MatchAttribute { requests, attribute });
    }
    Ok(claim)
}

/// A pod spec's `resourceClaims`: each names a claim or a template.
pub(super) fn pod_claims(at: &At, spec: &Value) -> Result<Vec<PodClaim>> {
    let mut out = Vec::new();
    for (i, c) in seq(at, spec, "resourceClaims")?.iter().enumerate() {
        let p = format!("spec.resourceClaims[{i}]");
        let name = string(at, c, "name")?.ok_or_else(|| at.err(&format!("{p}.name"), "missing"))?;
        let claim = string(at, c, "resourceClaimName")?;
        let template = string(at, c, "resourceClaimTemplateName")?;
        if claim.is_some() == template.is_some() {
            return Err(at.err(&p, "needs exactly one of resourceClaimName and resourceClaimTemplateName"));
        }
        out.push(PodClaim { name, claim, template });
    }
    Ok(out)
}

/// A pod's `status.resourceClaimStatuses`: the claims made for its
/// template entries, named into `claims`.
pub(super) fn claim_statuses(at: &At, v: &Value, claims: &mut [PodClaim]) -> Result<()> {
    for s in seq(at, v, "status.resourceClaimStatuses")? {
        let (Some(name), Some(made)) = (string(at, s, "name")?, string(at, s, "resourceClaimName")?) else {
            continue;
        };
        if let Some(pc) = claims.iter_mut().find(|pc| pc.name == name && pc.template.is_some()) {
            pc.claim = Some(made);
        }
    }
    Ok(())
}
