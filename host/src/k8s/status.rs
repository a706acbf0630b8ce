//! Writes what a cycle learned back to the API server, each only when it
//! differs from what the watch cache holds: PodGroup phase, counters and
//! conditions; Queue `status.allocated`; pod `PodScheduled=False` with the
//! per-plugin reason; Events `FailedScheduling`, `Unschedulable`, `Scheduled`.

use super::events::{reference, Kind, Recorder};
use super::sink::set_condition;
use super::source::{podgroup_resource, queue_resource, View, VOLCANO_API};
use crate::model::{PodGroup, PodPhase};
use crate::resource::{self, ResourceList};
use crate::session::{Decision, Outcome};
use crate::wasm::contract::JobPhase;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// A quantity as the API writes it, exact: memory and pods in units, others in milli-units.
pub fn quantity(name: &str, v: f64) -> String {
    match name {
        "memory" | "pods" => format!("{:.0}", v),
        _ if (v % 1000.0).abs() < 1e-9 => format!("{:.0}", v / 1000.0),
        _ => format!("{:.0}m", v),
    }
}

/// Volcano's PodGroup phase rule (`getPodGroupPhase`): Running or Completed
/// once `minMember` pods are scheduled, else Inqueue if admitted, else Pending.
pub fn podgroup_phase(g: &PodGroup, session_phase: JobPhase, pods: &[&crate::model::Pod]) -> &'static str {
    let finished = |p: &&crate::model::Pod| matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed);
    let scheduled = pods.iter().filter(|p| p.node.is_some() || finished(p)).count() as u32;
    if scheduled >= g.min_member.max(1) {
        if pods.iter().all(finished) {
            "Completed"
        } else {
            "Running"
        }
    } else if session_phase == JobPhase::Inqueue {
        "Inqueue"
    } else {
        "Pending"
    }
}

/// Extra fields for a Queue's status: `status.reservation {nodes, resource}`
/// (the locked nodes and their idle total) for a queue that reserves.
pub fn queue_status_extra(out: &Outcome, queue: &str) -> serde_json::Map<String, Value> {
    let mut extra = serde_json::Map::new();
    if let Some(r) = out.reservation_status.iter().find(|r| r.queue == queue) {
        let resource: serde_json::Map<String, Value> = out
            .dims
            .iter()
            .zip(&r.idle)
            .filter(|(_, v)| **v > 0.0)
            .map(|(k, v)| (k.clone(), json!(quantity(k, *v))))
            .collect();
        extra.insert("reservation".into(), json!({"nodes": r.nodes, "resource": resource}));
    }
    extra
}

/// Writes statuses and events for one cycle, `concurrency` writes at a time.
pub async fn write(client: &Client, out: &Outcome, view: &View, rec: &Recorder, concurrency: usize) {
    podgroups(client, out, view, rec, concurrency).await;
    queues(client, out, view).await;
    pods(client, out, view, rec, concurrency).await;
}

/// Our pods by PodGroup key (`namespace/group`).
fn pods_by_group(view: &View) -> HashMap<String, Vec<&crate::model::Pod>> {
    let mut out: HashMap<String, Vec<&crate::model::Pod>> = HashMap::new();
    for p in &view.cluster.pods {
        if let Some(g) = &p.group {
            if view.pods.contains_key(&p.key()) {
                out.entry(format!("{}/{g}", p.namespace)).or_default().push(p);
            }
        }
    }
    out
}

/// The condition fields compared to decide whether a write is needed.
fn cond_key(c: &Value) -> (String, String, String, String) {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    (s("type"), s("status"), s("reason"), s("message"))
}

async fn podgroups(client: &Client, out: &Outcome, view: &View, rec: &Recorder, concurrency: usize) {
    let now = Timestamp::now().to_string();
    let by_group = pods_by_group(view);
    // Per PodGroup: the status patch (when it changed) and the Event to emit.
    let mut writes = Vec::new();
    for (j, &gi) in out.extra.job_pg.iter().enumerate() {
        let g = &view.cluster.podgroups[gi];
        let Some(obj) = view.podgroups.get(&g.key()) else { continue };
        let pods = by_group.get(&g.key()).map(Vec::as_slice).unwrap_or_default();
        let count = |ph: PodPhase| pods.iter().filter(|p| p.phase == ph).count();
        let phase = podgroup_phase(g, out.job_phase[j], pods);
        let old = obj.data.get("status").cloned().unwrap_or(json!({}));
        let mut conditions: Vec<Value> = old.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        if let Some(c) = &out.conditions[j] {
            let new = json!({"type": c.kind, "status": "True", "reason": c.reason, "message": c.message,
                             "lastTransitionTime": now});
            match conditions.iter_mut().find(|x| x.get("type").and_then(Value::as_str) == Some(c.kind.as_str())) {
                Some(x) if cond_key(x) == cond_key(&new) => {}
                Some(x) => *x = new,
                None => conditions.push(new),
            }
        }
        let status = json!({
            "phase": phase,
            "running": count(PodPhase::Running),
            "succeeded": count(PodPhase::Succeeded),
            "failed": count(PodPhase::Failed),
            "conditions": conditions,
        });
        let same =
            ["phase", "running", "succeeded", "failed"].iter().all(|k| {
                let a = old.get(*k).cloned().unwrap_or(Value::Null);
                let b = status[*k].clone();
                a == b || (a.is_null() && b == json!(0))
            }) && old.get("conditions").and_then(Value::as_array).map(|v| v.iter().map(cond_key).collect::<Vec<_>>())
                == Some(conditions.iter().map(cond_key).collect());
        let gref =
            reference(VOLCANO_API, "PodGroup", Some(&g.namespace), &g.name, obj.metadata.uid.as_deref().unwrap_or(""));
        let event = match phase {
            "Running" | "Completed" => Some((Kind::Normal, "Scheduled", "pod group is ready".to_string())),
            _ => out.conditions[j]
                .as_ref()
                .filter(|c| c.kind == "Unschedulable")
                .map(|c| (Kind::Warning, "Unschedulable", c.message.clone())),
        };
        writes.push((g, (!same).then_some(status), gref, event));
    }
    futures::stream::iter(writes)
        .for_each_concurrent(concurrency, |(g, status, gref, event)| async move {
            if let Some(status) = status {
                // Volcano updates PodGroup status through the main resource (its CRD has no status subresource).
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &g.namespace, &podgroup_resource());
                let patch = json!({"status": status});
                if let Err(e) = api.patch(&g.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    tracing::warn!("status of PodGroup {}: {e}", g.key());
                }
            }
            if let Some((kind, reason, message)) = event {
                rec.emit(&gref, kind, reason, &message).await;
            }
        })
        .await;
}

/// Requests of our pods that hold a node (bound or assumed, not finished), per queue.
pub fn allocated(view: &View) -> BTreeMap<String, ResourceList> {
    let queue_of: HashMap<String, &str> = view.cluster.podgroups.iter().map(|g| (g.key(), g.queue.as_str())).collect();
    let mut allocated: BTreeMap<String, ResourceList> = BTreeMap::new();
    for p in view.cluster.pods.iter().filter(|p| view.pods.contains_key(&p.key())) {
        if p.node.is_none() || matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed) {
            continue;
        }
        let Some(q) = p.group.as_ref().and_then(|g| queue_of.get(&format!("{}/{g}", p.namespace))) else { continue };
        let row = allocated.entry(q.to_string()).or_default();
        for (k, v) in &p.requests {
            *row.entry(k.clone()).or_default() += v;
        }
    }
    allocated
}

async fn queues(client: &Client, out: &Outcome, view: &View) {
    let mut allocated = allocated(view);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &queue_resource());
    for (name, obj) in &view.queues {
        let mut want = allocated.remove(name).unwrap_or_default();
        for base in ["cpu", "memory"] {
            want.entry(base.to_string()).or_insert(0.0);
        }
        let old = obj.data.get("status").and_then(|s| s.get("allocated")).and_then(Value::as_object);
        let mut have = ResourceList::new();
        for (k, v) in old.into_iter().flatten() {
            if let Some(q) = crate::config::scalar_string(&serde_yaml::to_value(v).unwrap_or_default()) {
                have.insert(k.clone(), resource::parse_resource(k, &q).unwrap_or(f64::NAN));
            }
        }
        let mut extra = queue_status_extra(out, name);
        // A reservation that ended is cleared.
        let current = |k: &str| obj.data.get("status").and_then(|s| s.get(k)).filter(|v| !v.is_null());
        if !extra.contains_key("reservation") && current("reservation").is_some() {
            extra.insert("reservation".into(), Value::Null);
        }
        // No Volcano queue controller runs beside tephra: a new Queue is Open.
        if obj.data.get("status").and_then(|s| s.get("state")).is_none_or(Value::is_null) {
            extra.insert("state".into(), json!("Open"));
        }
        let same = have.len() == want.len()
            && want.iter().all(|(k, v)| have.get(k).is_some_and(|h| (h - v).abs() < resource::EPSILON))
            && extra.iter().all(|(k, v)| current(k) == Some(v).filter(|v| !v.is_null()));
        if same {
            continue;
        }
        let mut alloc = serde_json::Map::new();
        for k in have.keys().filter(|k| !want.contains_key(*k)) {
            alloc.insert(k.clone(), Value::Null);
        }
        for (k, v) in &want {
            alloc.insert(k.clone(), json!(quantity(k, *v)));
        }
        let mut status = extra;
        status.insert("allocated".into(), Value::Object(alloc));
        let patch = json!({"status": status});
        if let Err(e) = api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            tracing::warn!("status of Queue {name}: {e}");
        }
    }
}

async fn pods(client: &Client, out: &Outcome, view: &View, rec: &Recorder, concurrency: usize) {
    let bound: HashSet<u32> = out
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Bind { task, .. } => Some(*task),
            _ => None,
        })
        .collect();
    let pipelined: HashSet<u32> = out.pipelined.iter().map(|(t, _)| *t).collect();
    let mut why: BTreeMap<u32, String> = BTreeMap::new();
    for (t, fe) in &out.fit_errors {
        why.insert(*t, fe.summary());
    }
    for (j, reason) in &out.job_reasons {
        for &t in &out.extra.job_tasks[*j as usize] {
            why.entry(t).or_insert_with(|| reason.clone());
        }
    }
    // Per pending pod: its object, the condition to write (when it changed), and the message.
    let mut writes = Vec::new();
    for (t, message) in why {
        if bound.contains(&t) || pipelined.contains(&t) {
            continue;
        }
        let Some(p) = out.extra.task_pod.get(t as usize).and_then(|&i| view.cluster.pods.get(i)) else { continue };
        if p.node.is_some() || p.deleting {
            continue;
        }
        let Some(obj) = view.pods.get(&p.key()) else { continue };
        let current = obj
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
        let same = current.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(&message)
        });
        writes.push((p, obj, !same, message));
    }
    futures::stream::iter(writes)
        .for_each_concurrent(concurrency, |(p, obj, changed, message)| async move {
            if changed {
                let cond =
                    json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message});
                if let Err(e) = set_condition(client, obj, cond).await {
                    tracing::warn!("condition of Pod {}: {e}", p.key());
                }
            }
            let pref = reference("v1", "Pod", Some(&p.namespace), &p.name, obj.metadata.uid.as_deref().unwrap_or(""));
            rec.emit(&pref, Kind::Warning, "FailedScheduling", &message).await;
        })
        .await;
    let live: HashSet<String> = view
        .pods
        .values()
        .filter_map(|p| p.metadata.uid.clone())
        .chain(view.podgroups.values().filter_map(|g| g.metadata.uid.clone()))
        .chain(view.queues.values().filter_map(|q| q.uid()))
        .collect();
    rec.retain(&live);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Pod;

    #[test]
    fn quantities_are_exact() {
        assert_eq!(quantity("cpu", 2000.0), "2");
        assert_eq!(quantity("cpu", 1500.0), "1500m");
        assert_eq!(quantity("memory", 1073741824.0), "1073741824");
        assert_eq!(quantity("nvidia.com/gpu", 1000.0), "1");
        assert_eq!(quantity("pods", 3.0), "3");
    }

    #[test]
    fn podgroup_phase_follows_volcano() {
        let g = PodGroup { min_member: 2, ..Default::default() };
        let bound = Pod { node: Some("n".into()), ..Default::default() };
        let pending = Pod::default();
        let done = Pod { node: Some("n".into()), phase: PodPhase::Succeeded, ..Default::default() };
        assert_eq!(podgroup_phase(&g, JobPhase::Pending, &[&pending, &pending]), "Pending");
        assert_eq!(podgroup_phase(&g, JobPhase::Inqueue, &[&bound, &pending]), "Inqueue");
        assert_eq!(podgroup_phase(&g, JobPhase::Running, &[&bound, &pending]), "Pending");
        assert_eq!(podgroup_phase(&g, JobPhase::Inqueue, &[&bound, &bound]), "Running");
        assert_eq!(podgroup_phase(&g, JobPhase::Running, &[&done, &done]), "Completed");
        assert_eq!(podgroup_phase(&g, JobPhase::Running, &[&done, &bound]), "Running");
    }
}
