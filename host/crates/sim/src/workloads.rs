//! The workload controllers the simulator plays, as far as scheduling sees
//! them: Deployments and ReplicaSets keep their replicas (evicted or failed
//! pods are replaced), StatefulSets start pods in order, one after the
//! previous runs, and `batch/v1` Jobs run `parallelism` pods at a time until
//! `completions` succeed (per index when Indexed), giving up after
//! `backoffLimit` failed pods; CronJobs make a Job at each scheduled time
//! of the simulated clock (UTC, t=0 the epoch). Each workload's pods share one PodGroup, as
//! Volcano's podgroup controller makes it for an owner: minMember 1 (or
//! `scheduling.volcano.sh/group-min-member`), its queue annotation.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use tephra_model::cluster::{Claim, Cluster, Phase, Pod, PodGroup, PodPhase, Workload, WorkloadKind};

/// Scheduler names whose pods tephra schedules.
pub const SCHEDULER_NAMES: [&str; 2] = ["volcano", "tephra"];

/// Pod and PodGroup annotation naming the owner (`Kind/name`) the
/// simulator made them for.
pub const OWNER: &str = "tephra.io/owner";
/// A Job pod's completion index (Kubernetes' annotation).
const INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// What one pass of the controllers did.
#[derive(Default)]
pub struct Reconciled {
    /// Pods and Jobs made ("ns/x (by Deployment ns/d)").
    pub made: Vec<String>,
    /// Jobs that finished ("Job ns/x complete (6/6 succeeded)").
    pub finished: Vec<String>,
    /// PodGroups made: (key, queue).
    pub groups: Vec<(String, String)>,
}

/// What the controllers remember between cycles.
#[derive(Default)]
pub struct Controllers {
    /// Per owner, pods made so far (for their names).
    made: HashMap<String, u32>,
    /// Jobs reported finished.
    finished: std::collections::HashSet<String>,
    /// Per CronJob, its next scheduled time (seconds).
    due: HashMap<String, i64>,
}

fn owner(w: &Workload) -> String {
    format!("{}/{}", w.kind.name(), w.name)
}

impl Controllers {
    /// The next CronJob run (seconds), if any.
    pub fn next_due(&self) -> Option<i64> {
        self.due.values().copied().filter(|&t| t != i64::MAX).min()
    }

    /// One pass of every workload's controller at `now` (simulated
    /// seconds).
    pub fn reconcile(&mut self, c: &mut Cluster, now: i64) -> Reconciled {
        let mut r = Reconciled::default();
        let (made, out) = (&mut r.made, &mut r.finished);
        let mut jobs = Vec::new();
        let workloads = c.workloads.clone();
        for w in workloads.iter().filter(|w| w.kind == WorkloadKind::CronJob) {
            let due = *self.due.entry(w.key()).or_insert_with(|| w.next_run(now).unwrap_or(i64::MAX));
            let mut next = due;
            while next <= now {
                let job = Workload {
                    kind: WorkloadKind::Job,
                    name: format!("{}-{}", w.name, next / 60),
                    schedule: None,
                    created: next * 1000,
                    ..w.clone()
                };
                made.push(format!("Job {} (by CronJob {})", job.key(), w.key()));
                jobs.push(job);
                next = w.next_run(next).unwrap_or(i64::MAX);
            }
            self.due.insert(w.key(), next);
        }
        c.workloads.extend(jobs);
        for w in &workloads {
            let tag = owner(w);
            let owned: Vec<usize> = (0..c.pods.len())
                .filter(|&i| c.pods[i].namespace == w.namespace && c.pods[i].annotations.get(OWNER) == Some(&tag))
                .collect();
            let live = |p: &Pod| !p.deleting && matches!(p.phase, PodPhase::Pending | PodPhase::Running);
            let mut new = Vec::new();
            match w.kind {
                WorkloadKind::Deployment | WorkloadKind::ReplicaSet => {
                    let active: Vec<usize> = owned.iter().copied().filter(|&i| live(&c.pods[i])).collect();
                    for _ in active.len()..w.replicas as usize {
                        new.push(self.pod(w, None, None));
                    }
                    // Scaled down: the newest go.
                    for &i in active.iter().rev().take(active.len().saturating_sub(w.replicas as usize)) {
                        *c.pods.status_mut(i).deleting = true;
                    }
                }
                WorkloadKind::StatefulSet => {
                    let by_name: HashMap<&str, usize> = owned
                        .iter()
                        .map(|&i| (c.pods[i].name.as_str(), i))
                        .filter(|(_, i)| live(&c.pods[*i]))
                        .collect();
                    // OrderedReady: the lowest missing ordinal, once every lower one runs.
                    for k in 0..w.replicas {
                        match by_name.get(format!("{}-{k}", w.name).as_str()) {
                            Some(&i) if c.pods[i].phase == PodPhase::Running => continue,
                            Some(_) => break,
                            None => {
                                let p = self.pod(w, Some(format!("{}-{k}", w.name)), None);
                                // Its claims outlive it: made once, kept for its successors.
                                for (tpl, claim) in &w.claim_templates {
                                    let key = format!("{}/{tpl}-{}", p.namespace, p.name);
                                    made.extend(make_claim(
                                        &mut c.claims,
                                        key,
                                        claim,
                                        &format!("by StatefulSet {}", w.key()),
                                    ));
                                }
                                new.push(p);
                                break;
                            }
                        }
                    }
                    let beyond: Vec<usize> = by_name
                        .iter()
                        .filter(|(name, _)| {
                            name.rsplit('-').next().and_then(|o| o.parse::<u32>().ok()).is_some_and(|o| o >= w.replicas)
                        })
                        .map(|(_, &i)| i)
                        .collect();
                    for i in beyond {
                        *c.pods.status_mut(i).deleting = true;
                    }
                }
                WorkloadKind::CronJob => continue,
                WorkloadKind::Job => {
                    let Some(spec) = w.job else { continue };
                    let count = |ph: PodPhase| owned.iter().filter(|&&i| c.pods[i].phase == ph).count() as u32;
                    let (succeeded, failed) = (count(PodPhase::Succeeded), count(PodPhase::Failed));
                    let key = w.key();
                    if succeeded >= spec.completions || failed > spec.backoff_limit {
                        if self.finished.insert(key.clone()) {
                            let how = if succeeded >= spec.completions {
                                format!("complete ({succeeded}/{} succeeded)", spec.completions)
                            } else {
                                format!("failed ({failed} pods failed, backoffLimit {})", spec.backoff_limit)
                            };
                            out.push(format!("Job {key} {how}"));
                        }
                        continue;
                    }
                    let active: Vec<usize> = owned.iter().copied().filter(|&i| live(&c.pods[i])).collect();
                    let room = spec.parallelism.saturating_sub(active.len() as u32);
                    if spec.indexed {
                        let index_of = |i: usize| c.pods[i].annotations.get(INDEX).and_then(|x| x.parse::<u32>().ok());
                        let done: Vec<u32> = owned
                            .iter()
                            .filter(|&&i| c.pods[i].phase == PodPhase::Succeeded)
                            .filter_map(|&i| index_of(i))
                            .collect();
                        let running: Vec<u32> = active.iter().filter_map(|&i| index_of(i)).collect();
                        let todo = (0..spec.completions).filter(|k| !done.contains(k) && !running.contains(k));
                        for k in todo.take(room as usize) {
                            new.push(self.pod(w, None, Some(k)));
                        }
                    } else {
                        let left = spec.completions - succeeded;
                        let want = room.min(left.saturating_sub(active.len() as u32));
                        for _ in 0..want {
                            new.push(self.pod(w, None, None));
                        }
                    }
                }
            }
            if !new.is_empty() {
                r.groups.extend(ensure_group(c, w));
                made.extend(new.iter().map(|p| format!("{} (by {} {})", p.key(), w.kind.name(), w.key())));
                c.pods.extend(new);
            }
        }
        r
    }

    /// A pod of `w`: named `name`, else `<name>-<n>` (a Job's indexed pod
    /// `<name>-<index>-<n>`).
    fn pod(&mut self, w: &Workload, name: Option<String>, index: Option<u32>) -> Pod {
        let tag = owner(w);
        let n = self.made.entry(tag.clone()).or_default();
        *n += 1;
        let mut p = w.template.clone();
        p.name = name.unwrap_or_else(|| match index {
            Some(k) => format!("{}-{k}-{n}", w.name),
            None => format!("{}-{n}", w.name),
        });
        // Its ephemeral volumes' claims are named after it.
        for (volume, _) in &w.template.ephemeral {
            let was = format!("{}-{volume}", w.template.name);
            if let Some(c) = p.claims.iter_mut().find(|c| **c == was) {
                *c = format!("{}-{volume}", p.name);
            }
        }
        p.claims.extend(w.claim_templates.iter().map(|(tpl, _)| format!("{tpl}-{}", p.name)));
        p.created = w.created + i64::from(*n);
        p.annotations.insert(OWNER.into(), tag);
        if let Some(k) = index {
            p.annotations.insert(INDEX.into(), k.to_string());
        }
        if SCHEDULER_NAMES.contains(&p.scheduler_name.as_str()) {
            p.group = Some(group_name(w));
            p.annotations.insert("scheduling.k8s.io/group-name".into(), group_name(w));
        }
        p
    }
}

fn group_name(w: &Workload) -> String {
    format!("podgroup-{}-{}", w.kind.name().to_lowercase(), w.name)
}

/// The PodGroup of `w`'s pods, made when missing (Volcano's podgroup
/// controller does this for a pod's owner).
fn ensure_group(c: &mut Cluster, w: &Workload) -> Option<(String, String)> {
    if !SCHEDULER_NAMES.contains(&w.template.scheduler_name.as_str()) {
        return None;
    }
    let name = group_name(w);
    if c.podgroups.iter().any(|g| g.namespace == w.namespace && g.name == name) {
        return None;
    }
    let a = &w.template.annotations;
    let min: u32 = a.get("scheduling.volcano.sh/group-min-member").and_then(|v| v.parse().ok()).unwrap_or(1);
    c.podgroups.push(PodGroup {
        namespace: w.namespace.clone(),
        name,
        queue: a.get("scheduling.volcano.sh/queue-name").cloned().unwrap_or_else(|| "default".into()),
        min_member: min,
        min_resources: Some(w.template.requests.iter().map(|(k, v)| (k.clone(), v * f64::from(min))).collect()),
        priority_class: w.template.priority_class.clone(),
        phase: Phase::Pending,
        created: w.created,
        annotations: [(OWNER.to_string(), owner(w))].into(),
        ..Default::default()
    });
    c.podgroups.last().map(|g| (g.key(), g.queue.clone()))
}

/// Kubernetes' ephemeral-volume controller: each pending pod's generic
/// ephemeral volumes get their claims (`<pod>-<volume>`), made once.
pub fn ephemeral_claims(c: &mut Cluster) -> Vec<String> {
    let mut made = Vec::new();
    for p in c.pods.iter().filter(|p| p.node.is_none() && !p.deleting && p.phase == PodPhase::Pending) {
        for (volume, claim) in &p.ephemeral {
            let key = format!("{}/{}-{volume}", p.namespace, p.name);
            made.extend(make_claim(&mut c.claims, key, claim, &format!("for pod {}", p.key())));
        }
    }
    made
}

/// Makes claim `key` unless it exists; says so when made.
fn make_claim(claims: &mut BTreeMap<String, Claim>, key: String, claim: &Claim, why: &str) -> Option<String> {
    match claims.entry(key) {
        Entry::Vacant(e) => {
            let made = format!("PersistentVolumeClaim {} ({why})", e.key());
            e.insert(claim.clone());
            Some(made)
        }
        Entry::Occupied(_) => None,
    }
}
