//! Workload objects: `apps/v1` Deployment, ReplicaSet and StatefulSet, and
//! `batch/v1` Job and CronJob, read with their pod template; the simulator's
//! controllers make their pods (and a CronJob's Jobs).

use super::fields::{count, get, map, seq, string, Doc, Meta};
use super::object::Object;
use super::pod::{estimate, pod_spec, preemptable};
use super::storage::claim_in;
use anyhow::Result;
use tephra_model::cluster::{JobSpec, Pod, Workload, WorkloadKind};

/// The most pods one workload may ask for in the simulator.
const PODS_MAX: u32 = 1_000_000;

pub(super) fn read(d: Doc) -> Result<Object> {
    let (at, v) = (d.at, d.v);
    let Meta { name, namespace, created, .. } = d.meta;
    let kind = match d.kind {
        "Deployment" => WorkloadKind::Deployment,
        "ReplicaSet" => WorkloadKind::ReplicaSet,
        "StatefulSet" => WorkloadKind::StatefulSet,
        "CronJob" => WorkloadKind::CronJob,
        _ => WorkloadKind::Job,
    };
    // A CronJob: its schedule, and the Job it makes as the rest.
    let (schedule, v) = if kind == WorkloadKind::CronJob {
        let schedule = string(at, v, "spec.schedule")?.ok_or_else(|| at.err("spec.schedule", "missing"))?;
        if let Err(e) = <croner::Cron as std::str::FromStr>::from_str(&schedule) {
            return Err(at.err("spec.schedule", format!("{schedule:?} is not a cron schedule: {e}")));
        }
        (Some(schedule), get(v, "spec.jobTemplate").ok_or_else(|| at.err("spec.jobTemplate", "missing"))?)
    } else {
        (None, v)
    };
    let tpl = get(v, "spec.template").ok_or_else(|| at.err("spec.template", "missing"))?;
    let mut template = Pod { namespace: namespace.clone(), created, ..Default::default() };
    template.annotations = map(at, tpl, "metadata.annotations")?;
    template.labels = map(at, tpl, "metadata.labels")?;
    template.estimated_ms = estimate(at, &template.annotations)?;
    template.preemptable = preemptable(&template.annotations, &template.labels);
    template.task_spec = template.annotations.get("volcano.sh/task-spec").cloned().unwrap_or_default();
    let spec = get(tpl, "spec").ok_or_else(|| at.err("spec.template.spec", "missing"))?;
    pod_spec(at, spec, &mut template)?;
    let bounded = |field: &str, n: u32| {
        if n > PODS_MAX {
            Err(at.err(field, format!("{n} is more than the simulator's {PODS_MAX} pods")))
        } else {
            Ok(n)
        }
    };
    let (replicas, job) = if matches!(kind, WorkloadKind::Job | WorkloadKind::CronJob) {
        let parallelism = bounded("spec.parallelism", count(at, v, "spec.parallelism")?.unwrap_or(1))?;
        let completions = bounded("spec.completions", count(at, v, "spec.completions")?.unwrap_or(parallelism.max(1)))?;
        let indexed = match string(at, v, "spec.completionMode")?.as_deref() {
            None | Some("NonIndexed") => false,
            Some("Indexed") => true,
            Some(m) => return Err(at.err("spec.completionMode", format!("{m:?} is not NonIndexed or Indexed"))),
        };
        let backoff_limit = count(at, v, "spec.backoffLimit")?.unwrap_or(6);
        (0, Some(JobSpec { parallelism, completions, backoff_limit, indexed }))
    } else {
        (bounded("spec.replicas", count(at, v, "spec.replicas")?.unwrap_or(1))?, None)
    };
    // A StatefulSet's claims, one of each template per pod.
    let mut claim_templates = Vec::new();
    if kind == WorkloadKind::StatefulSet {
        for i in 0..seq(at, v, "spec.volumeClaimTemplates")?.len() {
            let path = format!("spec.volumeClaimTemplates[{i}].");
            let name = string(at, v, &format!("{path}metadata.name"))?
                .ok_or_else(|| at.err(&format!("{path}metadata.name"), "missing"))?;
            claim_templates.push((name, claim_in(at, v, &path, &Default::default())?));
        }
    }
    Ok(Object::Workload(Box::new(Workload {
        kind,
        namespace,
        name,
        replicas,
        template,
        claim_templates,
        job,
        schedule,
        created,
    })))
}
