//! Each queue's figures after a cycle: what the admin surface lists and the
//! metrics export.

use serde::Serialize;
use tephra_model::cluster::{Cluster, PodPhase};
use tephra_model::resource::ResourceList;
use tephra_session::session::Outcome;

/// A queue's figures after a cycle.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueueRow {
    /// The queue's name.
    pub name: String,
    /// Σ requests of its pods holding a node and not finished.
    pub allocated: ResourceList,
    /// From the quota plugin (proportion/capacity), when one is configured.
    pub deserved: Option<ResourceList>,
    /// Its share as the quota plugin reports it.
    pub share: Option<f64>,
    /// PodGroups in the queue.
    pub jobs: usize,
    /// Σ requests of its pods not finished, placed or waiting.
    pub request: ResourceList,
    /// `spec.capability` (empty: none).
    pub capability: ResourceList,
    /// `spec.weight`.
    pub weight: f64,
}

/// Each queue's allocation (the requests of pods holding a node and not
/// finished), and its deserved share when the outcome's quota plugin said.
pub fn queue_rows(cluster: &Cluster, outcome: Option<&Outcome>) -> Vec<QueueRow> {
    use std::collections::HashMap;
    let qi: HashMap<&str, usize> = cluster.queues.iter().enumerate().map(|(i, q)| (q.name.as_str(), i)).collect();
    let mut rows: Vec<QueueRow> = cluster
        .queues
        .iter()
        .map(|q| QueueRow {
            name: q.name.clone(),
            capability: q.capability.clone(),
            weight: q.weight,
            ..Default::default()
        })
        .collect();
    let mut group_queue: HashMap<(&str, &str), usize> = HashMap::new();
    for g in cluster.podgroups.iter() {
        if let Some(&q) = qi.get(g.queue.as_str()) {
            group_queue.insert((g.namespace.as_str(), g.name.as_str()), q);
            rows[q].jobs += 1;
        }
    }
    for p in cluster.pods.iter() {
        if p.deleting || matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed) {
            continue;
        }
        let Some(&q) = p.group.as_deref().and_then(|g| group_queue.get(&(p.namespace.as_str(), g))) else {
            continue;
        };
        for (k, v) in &p.requests {
            *rows[q].request.entry(k.clone()).or_default() += v;
            if p.node.is_some() {
                *rows[q].allocated.entry(k.clone()).or_default() += v;
            }
        }
    }
    // The session's queue ids follow the cluster's queue order.
    if let Some((out, (_, deserved, share))) = outcome.and_then(|o| Some((o, o.queue_status.as_ref()?))) {
        let dims = &out.dims;
        for (i, row) in rows.iter_mut().enumerate().filter(|(i, _)| *i < share.len()) {
            let d = &deserved[i * dims.len()..(i + 1) * dims.len()];
            row.deserved = Some(
                dims.iter()
                    .zip(d)
                    .filter(|(n, v)| v.is_finite() && n.as_str() != "pods" && **v > 0.0)
                    .map(|(n, v)| (n.clone(), *v))
                    .collect(),
            );
            row.share = Some(share[i]);
        }
    }
    rows
}
