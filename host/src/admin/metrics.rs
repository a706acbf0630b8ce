//! `/metrics`: tephra's own figures (`tephra_*`, taken from the state the
//! loop published) beside Volcano's (recorded by the loop,
//! [`Metrics`](crate::scheduler::metrics::Metrics)), in the Prometheus text
//! format, encoded by the `prometheus` crate (label values escaped there: a
//! queue named `a"} 1` stays one label).

use crate::resource::ResourceList;
use crate::scheduler::control::Status;
use crate::scheduler::queues::QueueRow;
use prometheus::{CounterVec, Encoder, GaugeVec, Opts, Registry, TextEncoder};

/// One family: a counter or a gauge with these labels, every sample set.
/// A counter starts at 0 in this scrape's registry and is raised to the
/// total the loop keeps.
fn family(r: &Registry, name: &str, help: &str, counter: bool, labels: &[&str], samples: &[(Vec<&str>, f64)]) {
    let opts = Opts::new(name, help);
    let registered = if counter {
        CounterVec::new(opts, labels).map(|v| {
            for (values, x) in samples {
                v.with_label_values(values).inc_by(x.max(0.0));
            }
            r.register(Box::new(v))
        })
    } else {
        GaugeVec::new(opts, labels).map(|v| {
            for (values, x) in samples {
                v.with_label_values(values).set(*x);
            }
            r.register(Box::new(v))
        })
    };
    if let Err(e) | Ok(Err(e)) = registered {
        tracing::warn!("metric {name}: {e}");
    }
}

/// The registry of tephra's own figures, built from `status`.
fn own(status: &Status) -> Registry {
    let (s, queues) = (&status.stats, &status.queues);
    let r = Registry::new();
    let one = |v: f64| vec![(vec![], v)];
    family(&r, "tephra_cycles_total", "Scheduling cycles run.", true, &[], &one(s.cycles as f64));
    family(&r, "tephra_cycle_seconds_total", "Time spent in cycles.", true, &[], &one(s.cycle_seconds_sum));
    family(
        &r,
        "tephra_cycle_last_seconds",
        "Duration of the latest cycle.",
        false,
        &[],
        &one(s.last_cycle.as_secs_f64()),
    );
    let per_action = |f: &dyn Fn(&(u64, f64)) -> f64| -> Vec<(Vec<&str>, f64)> {
        s.actions.iter().map(|(a, v)| (vec![a.as_str()], f(v))).collect()
    };
    family(&r, "tephra_action_runs_total", "Action runs.", true, &["action"], &per_action(&|v| v.0 as f64));
    family(&r, "tephra_action_seconds_total", "Time spent per action.", true, &["action"], &per_action(&|v| v.1));
    let per_plugin = |f: &dyn Fn(&(u64, f64, u64)) -> f64| -> Vec<(Vec<&str>, f64)> {
        s.plugins.iter().map(|(p, v)| (vec![p.as_str()], f(v))).collect()
    };
    let calls = per_plugin(&|v| v.0 as f64);
    family(&r, "tephra_plugin_calls_total", "Extension-point calls per plugin.", true, &["plugin"], &calls);
    family(&r, "tephra_plugin_call_seconds_total", "Time in plugin calls.", true, &["plugin"], &per_plugin(&|v| v.1));
    let faults = per_plugin(&|v| v.2 as f64);
    family(&r, "tephra_plugin_faults_total", "Cycles in which the plugin faulted.", true, &["plugin"], &faults);
    family(&r, "tephra_binds_total", "Pods bound.", true, &[], &one(s.binds as f64));
    family(&r, "tephra_evictions_total", "Pods evicted.", true, &[], &one(s.evictions as f64));
    family(&r, "tephra_plugin_swaps_total", "Plugin versions promoted.", true, &[], &one(s.swaps as f64));
    family(&r, "tephra_plugin_rollbacks_total", "Plugin versions rolled back.", true, &[], &one(s.rollbacks as f64));
    let diffs = one(s.shadow_diffs as f64);
    let help = "Pods and jobs the shadows would decide differently (one per pod placed elsewhere): \
                the sum of tephra_shadow_decision_diffs_total over plugins and kinds.";
    family(&r, "tephra_shadow_diffs_total", help, true, &[], &diffs);
    let drift: Vec<(Vec<&str>, f64)> = status
        .plugins
        .iter()
        .filter(|p| p.state == "live")
        .map(|p| (vec![p.name.as_str()], p.drift.len() as f64))
        .collect();
    let help = "Sources (files, Plugin objects, flags) whose declared version of the plugin is not what runs.";
    family(&r, "tephra_plugin_drift", help, false, &["plugin"], &drift);
    let res = |f: &dyn Fn(&QueueRow) -> Option<&ResourceList>| -> Vec<(Vec<&str>, f64)> {
        queues
            .iter()
            .flat_map(|q| f(q).into_iter().flatten().map(move |(k, v)| (vec![q.name.as_str(), k.as_str()], *v)))
            .collect()
    };
    let labels = ["queue", "resource"];
    let allocated = res(&|q| Some(&q.allocated));
    family(&r, "tephra_queue_allocated", "Resources allocated per queue (internal units).", false, &labels, &allocated);
    let deserved = res(&|q| q.deserved.as_ref());
    family(&r, "tephra_queue_deserved", "Deserved resources per queue.", false, &labels, &deserved);
    let shares: Vec<(Vec<&str>, f64)> = queues.iter().filter_map(|q| Some((vec![q.name.as_str()], q.share?))).collect();
    family(&r, "tephra_queue_share", "Queue share (allocated / deserved).", false, &["queue"], &shares);
    let by: Vec<(Vec<&str>, f64)> =
        s.shadow_diffs_by.iter().map(|((p, kind), n)| (vec![p.as_str(), *kind], *n as f64)).collect();
    let help = "Pods and jobs a shadow plugin would decide differently, by plugin and kind \
                (moved: bound by both to different nodes; binds_*_only: bound by one side only; \
                evictions_*_only; phases).";
    family(&r, "tephra_shadow_decision_diffs_total", help, true, &["plugin", "kind"], &by);
    // The driver's own figures (leadership, API writes).
    for f in &status.figures {
        family(&r, f.name, f.help, f.counter, &[], &one(f.value));
    }
    r
}

/// The text a scrape gets.
pub fn encode(status: &Status) -> prometheus::Result<String> {
    let mut families = own(status).gather();
    if let Some(m) = &status.metrics {
        families.extend(m.registry.gather());
    }
    let mut out = Vec::new();
    TextEncoder::new().encode(&families, &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names from manifests or plugins cannot forge samples.
    #[test]
    fn label_values_are_escaped() {
        let mut status = Status::default();
        status.queues.push(QueueRow { name: "q\"}\nforged 1".into(), share: Some(0.5), ..Default::default() });
        let text = encode(&status).unwrap();
        assert!(!text.lines().any(|l| l.starts_with("forged")), "{text}");
        assert!(text.contains("tephra_queue_share{queue=\"q\\\"}\\nforged 1\"} 0.5"), "{text}");
    }

    #[test]
    fn counters_say_so() {
        let mut status = Status::default();
        status.stats.cycles = 7;
        let text = encode(&status).unwrap();
        assert!(text.contains("# TYPE tephra_cycles_total counter\ntephra_cycles_total 7\n"), "{text}");
        assert!(text.contains("# TYPE tephra_cycle_last_seconds gauge"), "{text}");
    }
}
