//! Staging a new plugin version: compile, contract check, and a dry run on
//! the latest snapshot through the dispatcher, so a version that traps or
//! answers out of contract never replaces the running one.

use crate::{Runtime, WasmPlugin};
use anyhow::{anyhow, Result};
use std::sync::Arc;
use tephra_contract::{ExtensionPoint as P, Snapshot};
use tephra_dispatch::backend::{Backend, Call};
use tephra_dispatch::policy::{Policies, Slot};
use tephra_readers::config::{PluginConf, SchedulerConfig};
use tephra_snapshot::Names;

/// Compiles a component and validates it; see [`validate`].
pub fn stage(
    runtime: &Runtime,
    bytes: &[u8],
    origin: &str,
    last: Option<&(Snapshot, Arc<Names>)>,
    config: &SchedulerConfig,
) -> Result<WasmPlugin> {
    let plugin = WasmPlugin::load(runtime, bytes, origin)?;
    validate(plugin, last, config)
}

/// Dry-runs a compiled plugin on the latest session snapshot: opens a session
/// with its configured arguments and calls every point it declares once,
/// through the dispatcher, so any trap or out-of-contract answer rejects it.
pub fn validate(
    plugin: WasmPlugin,
    last: Option<&(Snapshot, Arc<Names>)>,
    config: &SchedulerConfig,
) -> Result<WasmPlugin> {
    let Some((snap, names)) = last else { return Ok(plugin) };
    let name = plugin.info().name.clone();
    let origin = plugin.origin_name();
    let conf =
        config.tiers.iter().flatten().find(|c| c.name == name).cloned().unwrap_or_else(|| PluginConf::new(&name));
    let points = plugin.info().points.clone();
    let mut p = Policies::new(vec![vec![Slot::new(conf, Box::new(plugin.clone()))]], true);
    p.open(snap, names);
    let nodes: Vec<u32> = (0..snap.node_unschedulable.len() as u32).collect();
    let jobs: Vec<u32> = (0..snap.job_queue.len() as u32).collect();
    let queues: Vec<u32> = (0..snap.queue_parent.len() as u32).collect();
    let tasks: Vec<u32> = (0..snap.task_job.len() as u32).collect();
    let (t, j, q) = (tasks.first().copied(), jobs.first().copied(), queues.first().copied());
    for point in points {
        match point {
            P::QueueOrder => drop(p.order_keys(&[], Call::QueueOrder(&queues), queues.len())),
            P::JobOrder => drop(p.order_keys(&[], Call::JobOrder(&jobs), jobs.len())),
            P::TaskOrder => drop(p.order_keys(&[], Call::TaskOrder(&tasks), tasks.len())),
            P::VictimQueueOrder => {
                drop(p.order_keys(&[], Call::VictimQueueOrder(&queues, q.unwrap_or(0)), queues.len()))
            }
            P::Predicate | P::NodeOrder if t.is_some() && !nodes.is_empty() => {
                let t = t.unwrap_or(0);
                p.predicate(&[], t, &nodes);
                p.node_scores(&[], t, &nodes);
            }
            P::Overused if q.is_some() => drop(p.any_true(&[], Call::Overused(q.unwrap_or(0)))),
            P::Allocatable | P::Preemptive if q.is_some() && t.is_some() => {
                p.all_true(&[], Call::Allocatable(q.unwrap_or(0), t.unwrap_or(0)));
                p.all_true(&[], Call::Preemptive(q.unwrap_or(0), t.unwrap_or(0)));
            }
            P::JobValid | P::JobReady | P::JobPipelined | P::JobEnqueueable | P::JobStarving if j.is_some() => {
                let j = j.unwrap_or(0);
                p.job_valid(&[], j);
                p.all_true(&[], Call::JobReady(j));
                p.vote(&[], Call::JobPipelined(j));
                p.vote(&[], Call::JobEnqueueable(j));
                p.job_starving(&[], j);
            }
            P::Preemptable | P::Reclaimable if t.is_some() => {
                p.victims(&[], Call::Preemptable(t.unwrap_or(0), &tasks), &tasks);
                p.victims(&[], Call::Reclaimable(t.unwrap_or(0), &tasks), &tasks);
            }
            P::VictimTasks => drop(p.victim_tasks(&[], &tasks)),
            P::QueueStatus => drop(p.queue_status(&[], &queues, snap.dims.len())),
            _ => {}
        }
    }
    p.close(&[]);
    if let Some(f) = p.faults.first() {
        return Err(anyhow!("{origin}: dry run on the latest snapshot failed in {}: {}", f.point, f.message));
    }
    Ok(plugin)
}
