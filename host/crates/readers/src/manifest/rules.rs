//! A pod spec's placement rules beyond resources: node affinity (required
//! and preferred, `matchFields` too), pod affinity and anti-affinity,
//! topology spread constraints and host ports. Label-key lists
//! (`matchLabelKeys`, `mismatchLabelKeys`) are merged into the selectors
//! here, as the API server does, so plugins see plain selectors.

use super::fields::{get, int, seq, string, At};
use anyhow::Result;
use tephra_model::cluster::{HostPort, MatchExpr, Pod, PodTerm, Selector, Spread};
use yaml_serde::Value;

const NODE_OPS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];
const LABEL_OPS: [&str; 4] = ["In", "NotIn", "Exists", "DoesNotExist"];

/// Reads every rule of `spec` into `pod` (whose labels are already read).
pub(super) fn read(at: &At, spec: &Value, pod: &mut Pod) -> Result<()> {
    let na = "affinity.nodeAffinity";
    let required = format!("{na}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
    for (i, term) in seq(at, spec, &required)?.iter().enumerate() {
        pod.affinity.push(node_term(at, term, &format!("spec.{required}[{i}]"))?);
    }
    let preferred = format!("{na}.preferredDuringSchedulingIgnoredDuringExecution");
    for (i, p) in seq(at, spec, &preferred)?.iter().enumerate() {
        let path = format!("spec.{preferred}[{i}]");
        let (weight, term) = weighted(at, p, &path, "preference")?;
        pod.preferred.push((weight, node_term(at, term, &format!("{path}.preference"))?));
    }
    for (kind, anti) in [("podAffinity", false), ("podAntiAffinity", true)] {
        let base = format!("affinity.{kind}");
        let required = format!("{base}.requiredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in seq(at, spec, &required)?.iter().enumerate() {
            let term = pod_term(at, t, &format!("spec.{required}[{i}]"), pod, anti, 0)?;
            pod.pod_terms.push(term);
        }
        let preferred = format!("{base}.preferredDuringSchedulingIgnoredDuringExecution");
        for (i, p) in seq(at, spec, &preferred)?.iter().enumerate() {
            let path = format!("spec.{preferred}[{i}]");
            let (weight, t) = weighted(at, p, &path, "podAffinityTerm")?;
            let term = pod_term(at, t, &format!("{path}.podAffinityTerm"), pod, anti, weight)?;
            pod.pod_terms.push(term);
        }
    }
    for (i, c) in seq(at, spec, "topologySpreadConstraints")?.iter().enumerate() {
        let spread = spread(at, c, &format!("spec.topologySpreadConstraints[{i}]"), pod)?;
        pod.spread.push(spread);
    }
    for list in ["containers", "initContainers"] {
        for (ci, c) in seq(at, spec, list)?.iter().enumerate() {
            // Only restartable init containers (sidecars) keep their ports.
            if list == "initContainers" && string(at, c, "restartPolicy")?.as_deref() != Some("Always") {
                continue;
            }
            for (pi, p) in seq(at, c, "ports")?.iter().enumerate() {
                let path = format!("spec.{list}[{ci}].ports[{pi}]");
                let port = int(at, p, "hostPort")?.unwrap_or(0);
                if port == 0 {
                    continue;
                }
                if !(1..=65535).contains(&port) {
                    return Err(at.err(&format!("{path}.hostPort"), format!("{port} is not a port number")));
                }
                let protocol = string(at, p, "protocol")?.unwrap_or_else(|| "TCP".into());
                let ip = string(at, p, "hostIP")?.filter(|ip| !ip.is_empty()).unwrap_or_else(|| "0.0.0.0".into());
                pod.ports.push(HostPort { port: port as u32, protocol, ip });
            }
        }
    }
    Ok(())
}

/// A preferred term's weight (1..100) and its term at `key`.
fn weighted<'v>(at: &At, p: &'v Value, path: &str, key: &str) -> Result<(i32, &'v Value)> {
    let weight = int(at, p, "weight")?.unwrap_or(0) as i32;
    if !(1..=100).contains(&weight) {
        return Err(at.err(&format!("{path}.weight"), format!("{weight} is not in 1..100")));
    }
    let term = get(p, key).ok_or_else(|| at.err(&format!("{path}.{key}"), "missing"))?;
    Ok((weight, term))
}

pub(super) fn node_term(at: &At, term: &Value, path: &str) -> Result<Vec<MatchExpr>> {
    let mut exprs = requirements(at, term, "matchExpressions", path, &NODE_OPS)?;
    for (i, e) in seq(at, term, "matchFields")?.iter().enumerate() {
        let mut f = requirement(at, e, &format!("{path}.matchFields[{i}]"), &["In", "NotIn"])?;
        if f.key != "metadata.name" || f.values.len() != 1 {
            // The API server accepts only `metadata.name` with one value.
            let why = "only key metadata.name with one value is valid";
            return Err(at.err(&format!("{path}.matchFields[{i}]"), why));
        }
        f.field = true;
        exprs.push(f);
    }
    Ok(exprs)
}

fn requirements(at: &At, v: &Value, list: &str, path: &str, ops: &[&str]) -> Result<Vec<MatchExpr>> {
    let items = seq(at, v, list)?.iter().enumerate();
    items.map(|(i, e)| requirement(at, e, &format!("{path}.{list}[{i}]"), ops)).collect()
}

fn requirement(at: &At, e: &Value, path: &str, ops: &[&str]) -> Result<MatchExpr> {
    let key = string(at, e, "key")?.ok_or_else(|| at.err(&format!("{path}.key"), "missing"))?;
    let operator = string(at, e, "operator")?.unwrap_or_default();
    if !ops.contains(&operator.as_str()) {
        return Err(at.err(&format!("{path}.operator"), format!("{operator:?} is not one of {}", ops.join(", "))));
    }
    let values: Vec<String> = seq(at, e, "values")?.iter().filter_map(crate::config::scalar_string).collect();
    let want_values = matches!(operator.as_str(), "In" | "NotIn" | "Gt" | "Lt");
    if want_values == values.is_empty() {
        let why = if want_values { "needs values" } else { "takes no values" };
        return Err(at.err(&format!("{path}.values"), format!("operator {operator} {why}")));
    }
    Ok(MatchExpr { key, operator, values, field: false })
}

/// A `LabelSelector` at `key` of `v`: `None` when absent.
pub(super) fn selector(at: &At, v: &Value, key: &str, path: &str) -> Result<Selector> {
    let Some(s) = get(v, key) else { return Ok(None) };
    let path = if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
    let mut out: Vec<MatchExpr> = super::fields::map(at, s, "matchLabels")?
        .into_iter()
        .map(|(key, v)| MatchExpr { key, operator: "In".into(), values: vec![v], field: false })
        .collect();
    out.extend(requirements(at, s, "matchExpressions", &path, &LABEL_OPS)?);
    Ok(Some(out))
}

/// Merges `keys` of `path` into `sel` as `op` over the pod's own values
/// (keys the pod lacks are skipped, as Kubernetes does).
fn merge_keys(at: &At, v: &Value, key: &str, op: &str, pod: &Pod, sel: &mut Selector) -> Result<()> {
    let keys: Vec<String> = seq(at, v, key)?.iter().filter_map(crate::config::scalar_string).collect();
    if let (Some(sel), false) = (sel.as_mut(), keys.is_empty()) {
        for k in keys {
            if let Some(value) = pod.labels.get(&k) {
                sel.push(MatchExpr { key: k, operator: op.into(), values: vec![value.clone()], field: false });
            }
        }
    }
    Ok(())
}

fn pod_term(at: &At, t: &Value, path: &str, pod: &Pod, anti: bool, weight: i32) -> Result<PodTerm> {
    let topology_key = string(at, t, "topologyKey")?
        .filter(|k| !k.is_empty())
        .ok_or_else(|| at.err(&format!("{path}.topologyKey"), "missing"))?;
    let mut sel = selector(at, t, "labelSelector", path)?;
    merge_keys(at, t, "matchLabelKeys", "In", pod, &mut sel)?;
    merge_keys(at, t, "mismatchLabelKeys", "NotIn", pod, &mut sel)?;
    let namespaces = seq(at, t, "namespaces")?.iter().filter_map(crate::config::scalar_string).collect();
    let namespace_selector = selector(at, t, "namespaceSelector", path)?;
    Ok(PodTerm { anti, weight, topology_key, selector: sel, namespaces, namespace_selector })
}

fn spread(at: &At, c: &Value, path: &str, pod: &Pod) -> Result<Spread> {
    let max_skew = int(at, c, "maxSkew")?.ok_or_else(|| at.err(&format!("{path}.maxSkew"), "missing"))?;
    if max_skew < 1 {
        return Err(at.err(&format!("{path}.maxSkew"), format!("{max_skew} is not at least 1")));
    }
    let topology_key = string(at, c, "topologyKey")?
        .filter(|k| !k.is_empty())
        .ok_or_else(|| at.err(&format!("{path}.topologyKey"), "missing"))?;
    let hard = match string(at, c, "whenUnsatisfiable")?.as_deref() {
        None | Some("DoNotSchedule") => true,
        Some("ScheduleAnyway") => false,
        Some(other) => {
            let why = format!("{other:?} is not DoNotSchedule or ScheduleAnyway");
            return Err(at.err(&format!("{path}.whenUnsatisfiable"), why));
        }
    };
    let min_domains = int(at, c, "minDomains")?.unwrap_or(0);
    if min_domains < 0 || (min_domains > 0 && !hard) {
        let why = "must be at least 1, and only with whenUnsatisfiable: DoNotSchedule";
        return Err(at.err(&format!("{path}.minDomains"), why));
    }
    let policy = |key: &str, default: bool| -> Result<bool> {
        match string(at, c, key)?.as_deref() {
            None => Ok(default),
            Some("Honor") => Ok(true),
            Some("Ignore") => Ok(false),
            Some(other) => Err(at.err(&format!("{path}.{key}"), format!("{other:?} is not Honor or Ignore"))),
        }
    };
    let mut sel = selector(at, c, "labelSelector", path)?;
    merge_keys(at, c, "matchLabelKeys", "In", pod, &mut sel)?;
    Ok(Spread {
        max_skew: max_skew as u32,
        topology_key,
        hard,
        selector: sel,
        min_domains: min_domains as u32,
        honor_affinity: policy("nodeAffinityPolicy", true)?,
        honor_taints: policy("nodeTaintsPolicy", false)?,
    })
}
