//! Shadows: a plugin version run beside the live one on the same snapshot
//! and seed; its decisions are compared with the live ones, never applied.

use serde::Serialize;
use std::collections::BTreeSet;
use tephra_session::session::{phase_name, Decision, Outcome};

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
    /// Faults of the shadow version itself in its session (no decision).
    pub faults: usize,
}

impl ShadowDiff {
    /// Number of differing decisions.
    pub fn count(&self) -> usize {
        self.by_kind().iter().map(|(_, n)| n).sum()
    }

    /// Differing decisions by kind (the field names).
    pub fn by_kind(&self) -> [(&'static str, usize); 5] {
        [
            ("binds_live_only", self.binds_live_only.len()),
            ("binds_shadow_only", self.binds_shadow_only.len()),
            ("evictions_live_only", self.evictions_live_only.len()),
            ("evictions_shadow_only", self.evictions_shadow_only.len()),
            ("phases", self.phases.len()),
        ]
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
        faults: shadow.faults.iter().filter(|f| f.plugin == plugin).count(),
    }
}
