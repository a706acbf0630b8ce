//! Shadows: a plugin version run beside the live one on the same snapshot
//! and seed; its decisions are compared with the live ones, never applied.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use tephra_session::session::{phase_name, Decision, Outcome};

/// How a shadow's decisions differ from the live ones in one cycle, one
/// entry per pod or job decided differently: a pod both bind, to different
/// nodes, is one difference (`moved`), not two.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ShadowDiff {
    /// The shadowed plugin.
    pub plugin: String,
    /// Pods both bind, to different nodes (`pod: live n1, shadow n2`).
    pub moved: Vec<String>,
    /// Binds (`pod → node`) of pods only the live / only the shadow version binds.
    pub binds_live_only: Vec<String>,
    /// See [`ShadowDiff::binds_live_only`].
    pub binds_shadow_only: Vec<String>,
    /// Evictions (`pod`) only the live version makes.
    pub evictions_live_only: Vec<String>,
    /// Evictions only the shadow version makes.
    pub evictions_shadow_only: Vec<String>,
    /// Jobs whose PodGroup phase would differ (`job: live vs shadow`).
    pub phases: Vec<String>,
    /// Faults of the shadow version itself in its session (no decision).
    pub faults: usize,
}

impl ShadowDiff {
    /// Number of differing decisions.
    pub fn count(&self) -> usize {
        self.by_kind().iter().map(|(_, n)| n).sum()
    }

    /// Differing decisions by kind (the field names).
    pub fn by_kind(&self) -> [(&'static str, usize); 6] {
        [
            ("moved", self.moved.len()),
            ("binds_live_only", self.binds_live_only.len()),
            ("binds_shadow_only", self.binds_shadow_only.len()),
            ("evictions_live_only", self.evictions_live_only.len()),
            ("evictions_shadow_only", self.evictions_shadow_only.len()),
            ("phases", self.phases.len()),
        ]
    }
}

impl ShadowDiff {
    /// The first `n` differences as one line, for a log.
    pub fn summary(&self, n: usize) -> String {
        let all: Vec<&String> = self
            .moved
            .iter()
            .chain(&self.binds_live_only)
            .chain(&self.binds_shadow_only)
            .chain(&self.evictions_live_only)
            .chain(&self.evictions_shadow_only)
            .chain(&self.phases)
            .collect();
        let shown: Vec<&str> = all.iter().take(n).map(|s| s.as_str()).collect();
        let more = all.len().saturating_sub(n);
        let tail = if more > 0 { format!("; {more} more") } else { String::new() };
        format!("{}{tail}", shown.join("; "))
    }
}

/// Binds as pod → node, and evicted pods.
fn decisions(out: &Outcome) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let mut binds = BTreeMap::new();
    let mut evictions = BTreeSet::new();
    for d in &out.decisions {
        match d {
            Decision::Bind { task, node } => {
                binds.insert(out.names.tasks[*task as usize].clone(), out.names.nodes[*node as usize].clone());
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
    let bound_only = |a: &BTreeMap<String, String>, b: &BTreeMap<String, String>| -> Vec<String> {
        a.iter().filter(|(p, _)| !b.contains_key(*p)).map(|(p, n)| format!("{p} → {n}")).collect()
    };
    let moved = lb
        .iter()
        .filter_map(|(p, l)| sb.get(p).filter(|s| *s != l).map(|s| format!("{p}: live {l}, shadow {s}")))
        .collect();
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
        moved,
        binds_live_only: bound_only(&lb, &sb),
        binds_shadow_only: bound_only(&sb, &lb),
        evictions_live_only: only(&le, &se),
        evictions_shadow_only: only(&se, &le),
        phases,
        faults: shadow.faults.iter().filter(|f| f.plugin == plugin).count(),
    }
}
