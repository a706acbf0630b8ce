//! Plugin versions while the scheduler runs: staging a new component
//! (compile, contract check, a dry run on the latest snapshot), comparing a
//! shadow's decisions with the live ones, and watching a directory for new
//! versions, compiled on a background thread so cycles never wait for it.

use crate::config::{PluginConf, SchedulerConfig};
use crate::plugin::{Backend, Call};
use crate::policy::{Policies, Slot};
use crate::session::{phase_name, Decision, Names, Outcome};
use crate::wasm::contract::{ExtensionPoint as P, Snapshot};
use crate::wasm::{content_hash, Runtime, WasmPlugin};
use anyhow::{anyhow, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Duration;

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

/// How a shadow's decisions differ from the live ones in one cycle.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ShadowDiff {
    pub plugin: String,
    /// Binds (`pod → node`) only the live / only the shadow version made.
    pub binds_live_only: Vec<String>,
    pub binds_shadow_only: Vec<String>,
    pub evictions_live_only: Vec<String>,
    pub evictions_shadow_only: Vec<String>,
    /// Jobs whose PodGroup phase would differ (`job: live vs shadow`).
    pub phases: Vec<String>,
}

impl ShadowDiff {
    /// Number of differing decisions.
    pub fn count(&self) -> usize {
        self.binds_live_only.len()
            + self.binds_shadow_only.len()
            + self.evictions_live_only.len()
            + self.evictions_shadow_only.len()
            + self.phases.len()
    }
}

fn decisions(out: &Outcome) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut binds = BTreeSet::new();
    let mut evictions = BTreeSet::new();
    for d in &out.decisions {
        match d {
            Decision::Bind { task, node } => {
                binds.insert(format!("{} → {}", out.names.tasks[*task as usize], out.names.nodes[*node as usize]));
            }
            Decision::Evict { task, .. } => {
                evictions.insert(out.names.tasks[*task as usize].clone());
            }
            Decision::Nominate { .. } => {}
        }
    }
    (binds, evictions)
}

/// Compares the outcomes of the same cycle under the live and shadow versions.
pub fn diff(plugin: &str, live: &Outcome, shadow: &Outcome) -> ShadowDiff {
    let (lb, le) = decisions(live);
    let (sb, se) = decisions(shadow);
    let only = |a: &BTreeSet<String>, b: &BTreeSet<String>| a.difference(b).cloned().collect();
    let phases = live
        .job_phase
        .iter()
        .zip(&shadow.job_phase)
        .enumerate()
        .filter(|(_, (l, s))| l != s)
        .map(|(j, (l, s))| format!("{}: {} vs {}", live.names.jobs[j], phase_name(*l), phase_name(*s)))
        .collect();
    ShadowDiff {
        plugin: plugin.to_string(),
        binds_live_only: only(&lb, &sb),
        binds_shadow_only: only(&sb, &lb),
        evictions_live_only: only(&le, &se),
        evictions_shadow_only: only(&se, &le),
        phases,
    }
}

/// A new version found by the [`Watcher`], compiled (or not).
pub struct Staged {
    pub origin: String,
    pub plugin: Result<WasmPlugin>,
}

/// Watches a plugins directory; new or changed `.wasm` files are compiled
/// on a background thread and handed over through [`Watcher::ready`].
pub struct Watcher {
    rx: Receiver<Staged>,
}

impl Watcher {
    /// Starts watching `dir`, polling every `every`; files present now count
    /// as already loaded.
    pub fn spawn(dir: &Path, runtime: Runtime, every: Duration) -> Result<Watcher> {
        let mut seen: BTreeMap<PathBuf, String> = BTreeMap::new();
        for f in crate::scheduler::wasm_files(dir)? {
            if let Ok(b) = std::fs::read(&f) {
                seen.insert(f, content_hash(&b));
            }
        }
        let (tx, rx) = channel();
        let dir = dir.to_path_buf();
        std::thread::Builder::new().name("tephra-plugin-watch".into()).spawn(move || loop {
            std::thread::sleep(every);
            let Ok(files) = crate::scheduler::wasm_files(&dir) else { continue };
            for f in files {
                let Ok(bytes) = std::fs::read(&f) else { continue };
                let hash = content_hash(&bytes);
                if seen.get(&f) == Some(&hash) {
                    continue;
                }
                seen.insert(f.clone(), hash);
                let origin = f.display().to_string();
                let plugin = WasmPlugin::load(&runtime, &bytes, &origin);
                if tx.send(Staged { origin, plugin }).is_err() {
                    return;
                }
            }
        })?;
        Ok(Watcher { rx })
    }

    /// Versions compiled since the last call.
    pub fn ready(&self) -> Vec<Staged> {
        self.rx.try_iter().collect()
    }
}
