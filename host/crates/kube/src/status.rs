//! Writes what a cycle learned back to the API server, each only when it
//! differs from what the watch cache holds: PodGroup phase, counters and
//! conditions; big-job targets as a PodGroup annotation; Queue
//! `status.allocated` and `status.reservation`; pod `PodScheduled=False` with the
//! per-plugin reason; Events `FailedScheduling`, `Unschedulable`, `Scheduled`.

use super::events::{reference, Kind, Recorder};
use super::kinds::{
    podgroup_resource, quantity, queue_resource, reservation_resource, Target, TARGET_ANNOTATION, VOLCANO_API,
};
use super::sink::{set_unschedulable, PodRef};
use super::source::Store;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::Client;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use tephra_model::cluster::{podgroup_phase, Cluster, Pod, PodPhase};
use tephra_model::resource::{self, ResourceList};
use tephra_scheduler::queues::queue_rows;
use tephra_session::session::{Decision, Outcome};

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
pub async fn write(client: &Client, out: &Outcome, c: &Cluster, store: &Store, rec: &Recorder, concurrency: usize) {
    podgroups(client, out, c, store, rec, concurrency).await;
    targets(client, out, store).await;
    queues(client, out, c, store).await;
    reservations(client, out, store).await;
    pods(client, out, c, store, rec, concurrency).await;
}

/// Each advance reservation's `status`: its window's state, nodes and
/// times, or `Invalid` with the reason; written when it changed.
async fn reservations(client: &Client, out: &Outcome, store: &Store) {
    let time = |ms: Option<i64>| ms.map(tephra_readers::manifest::format_time);
    let mut want: Vec<(String, Value)> = out
        .windows
        .iter()
        .map(|w| {
            let status = json!({"state": w.state, "nodes": w.nodes, "windowStart": time(w.window.map(|x| x.0)),
                                "windowEnd": time(w.window.map(|x| x.1)), "message": null});
            (w.name.clone(), status)
        })
        .collect();
    for (name, why) in &store.reservation_invalid {
        let status = json!({"state": "Invalid", "nodes": [], "windowStart": null, "windowEnd": null, "message": why});
        want.push((name.clone(), status));
    }
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &reservation_resource());
    for (name, status) in want {
        let old = store.reservation_status.get(&name).cloned().unwrap_or_default();
        let differs = status.as_object().into_iter().flatten().any(|(k, v)| {
            let have = old.get(k).unwrap_or(&Value::Null);
            have != v && !(v.is_null() && have.is_null())
        });
        if !differs {
            continue;
        }
        let patch = json!({"status": status});
        if let Err(e) = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            tracing::warn!("status of Reservation {name}: {}", crate::api_error(&e));
        }
    }
}

/// The condition fields compared to decide whether a write is needed.
fn cond_key(c: &Value) -> (String, String, String, String) {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    (s("type"), s("status"), s("reason"), s("message"))
}

async fn podgroups(client: &Client, out: &Outcome, c: &Cluster, store: &Store, rec: &Recorder, concurrency: usize) {
    let now = Timestamp::now().to_string();
    let by_group = c.pods_by_group();
    // Per PodGroup: the status patch (when it changed) and the Event to emit.
    let mut writes = Vec::new();
    for (j, &gi) in out.extra.job_pg.iter().enumerate() {
        let g = &c.podgroups[gi];
        // A plain pod's group the API does not have yet: nothing to write to.
        let Some(obj) = store.podgroups.get(&g.key()) else { continue };
        let members = by_group.get(&(g.namespace.as_str(), g.name.as_str())).map(Vec::as_slice).unwrap_or_default();
        let pods: Vec<&Pod> = members.iter().map(|&i| &c.pods[i]).collect();
        let count = |ph: PodPhase| pods.iter().filter(|p| p.phase == ph).count();
        let phase = podgroup_phase(g, out.job_phase[j].into(), &pods).name();
        let old = if obj.status.is_null() { json!({}) } else { obj.status.clone() };
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
        let gref = reference(VOLCANO_API, "PodGroup", Some(&g.namespace), &g.name, &obj.uid);
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
                match api.patch(&g.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    Ok(_) => {}
                    // Deleted meanwhile (its Job went, and the garbage collector
                    // took it): nothing left to tell.
                    Err(kube::Error::Api(s)) if s.code == 404 => {
                        tracing::debug!("status of PodGroup {}: gone", g.key());
                    }
                    Err(e) => tracing::warn!("status of PodGroup {}: {}", g.key(), crate::api_error(&e)),
                }
            }
            if let Some((kind, reason, message)) = event {
                rec.emit(&gref, kind, reason, &message).await;
            }
        })
        .await;
}

/// Big-job targets as PodGroup annotations ([`TARGET_ANNOTATION`]), so
/// the next leader adopts them: written when a target or its nodes change,
/// removed when it is no longer elected.
async fn targets(client: &Client, out: &Outcome, store: &Store) {
    let want: BTreeMap<&str, String> = out
        .reservations
        .targets
        .iter()
        .enumerate()
        .filter_map(|(rank, (key, nodes))| {
            let t = Target { rank, nodes: nodes.clone() };
            Some((key.as_str(), serde_json::to_string(&t).ok()?))
        })
        .collect();
    let stale = store.podgroups.iter().filter(|(k, m)| m.target.is_some() && !want.contains_key(k.as_str()));
    let mut writes: Vec<(&str, Value)> = stale.map(|(k, _)| (k.as_str(), Value::Null)).collect();
    for (key, text) in &want {
        let Some(meta) = store.podgroups.get(*key) else { continue };
        if meta.target.as_deref() != Some(text.as_str()) {
            writes.push((key, json!(text)));
        }
    }
    for (key, value) in writes {
        let Some((ns, name)) = key.split_once('/') else { continue };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &podgroup_resource());
        let patch = json!({"metadata": {"annotations": {TARGET_ANNOTATION: value}}});
        if let Err(e) = api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            tracing::warn!("annotation {TARGET_ANNOTATION} of PodGroup {key}: {e}");
        }
    }
}

async fn queues(client: &Client, out: &Outcome, c: &Cluster, store: &Store) {
    // Others' pods have no group, so the loop's queue rows count ours alone.
    let mut allocated: BTreeMap<String, ResourceList> =
        queue_rows(c, None).into_iter().map(|r| (r.name, r.allocated)).collect();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &queue_resource());
    for (name, obj) in &store.queues {
        let mut want = allocated.remove(name).unwrap_or_default();
        for base in ["cpu", "memory"] {
            want.entry(base.to_string()).or_insert(0.0);
        }
        let old = obj.status.get("allocated").and_then(Value::as_object);
        let mut have = ResourceList::new();
        for (k, v) in old.into_iter().flatten() {
            if let Some(q) = tephra_readers::config::scalar_string(&yaml_serde::to_value(v).unwrap_or_default()) {
                have.insert(k.clone(), resource::parse_resource(k, &q).unwrap_or(f64::NAN));
            }
        }
        let mut extra = queue_status_extra(out, name);
        // A reservation that ended is cleared.
        let current = |k: &str| obj.status.get(k).filter(|v| !v.is_null());
        if !extra.contains_key("reservation") && current("reservation").is_some() {
            extra.insert("reservation".into(), Value::Null);
        }
        // No Volcano queue controller runs beside tephra: a new Queue is Open.
        if obj.status.get("state").is_none_or(Value::is_null) {
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
            tracing::warn!("status of Queue {name}: {}", crate::api_error(&e));
        }
    }
}

async fn pods(client: &Client, out: &Outcome, c: &Cluster, store: &Store, rec: &Recorder, concurrency: usize) {
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
        let Some(p) = out.extra.task_pod.get(t as usize).and_then(|&i| c.pods.get(i)) else { continue };
        if p.node.is_some() || p.deleting {
            continue;
        }
        let Some(meta) = store.pods.get(&p.key()) else { continue };
        let obj = PodRef::of(p, meta);
        let same = meta.scheduled.as_ref().is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(&message)
        });
        writes.push((p, obj, !same, message));
    }
    futures::stream::iter(writes)
        .for_each_concurrent(concurrency, |(p, obj, changed, message)| async move {
            if changed {
                if let Err(e) = set_unschedulable(client, &obj, &message).await {
                    tracing::warn!("condition of Pod {}: {e}", p.key());
                }
            }
            let pref = reference("v1", "Pod", Some(&p.namespace), &p.name, &obj.uid);
            rec.emit(&pref, Kind::Warning, "FailedScheduling", &message).await;
        })
        .await;
    rec.retain(&store.live_uids());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_exact() {
        assert_eq!(quantity("cpu", 2000.0), "2");
        assert_eq!(quantity("cpu", 1500.0), "1500m");
        assert_eq!(quantity("memory", 1073741824.0), "1073741824");
        assert_eq!(quantity("nvidia.com/gpu", 1000.0), "1");
        assert_eq!(quantity("pods", 3.0), "3");
    }
}
