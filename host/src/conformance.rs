//! Runs scenario files in the format of `shared/conformance/volcano-scenarios.yaml`
//! (its header documents every field): one line per scenario, pass, fail
//! with the difference, or skipped with the reason — never a silent pass.

use crate::actions;
use crate::config::{scalar_string, PluginConf, SchedulerConfig};
use crate::model::*;
use crate::resource::{self, ResourceList};
use crate::scheduler::{Library, Scheduler};
use crate::session::{Outcome, Session, StatusOverrides};
use crate::simulate::{Options, Simulation};
use crate::wasm::contract::TaskStatus;
use anyhow::{anyhow, bail, Result};
use std::collections::{BTreeMap, BTreeSet};
use yaml_serde::Value;

/// A scenario's verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every expectation held.
    Pass,
    /// What did not hold.
    Fail(String),
    /// Why it was not run.
    Skip(String),
}

/// One scenario's name and verdict.
#[derive(Clone, Debug)]
pub struct ScenarioResult {
    /// The scenario's name.
    pub name: String,
    /// How it went.
    pub verdict: Verdict,
    /// How long it took, in milliseconds (host and plugins).
    pub millis: f64,
}

/// Expectation keys this runner checks, per place.
const SESSION_KEYS: [&str; 11] = [
    "binds",
    "bind_count",
    "binds_per_job",
    "evicted",
    "evict_count",
    "eviction_order",
    "pipelined",
    "pipelined_count",
    "podgroup_phase",
    "job_in_session",
    "eventually",
];
/// Per-cycle checks of `mode: sessions` (one simulated cycle each).
const CYCLE_KEYS: [&str; 13] = [
    "binds",
    "estimated_start",
    "estimates_hold",
    "reservation_state",
    "predicted_start",
    "bind_count",
    "evicted",
    "target_jobs",
    "locked_for_job",
    "locked_for_queue",
    "refused",
    "running",
    "pending_reason",
];
const PLUGIN_FN_KEYS: [&str; 5] =
    ["node_scores", "predicate_status", "job_enqueueable", "job_order", "backfill_candidates_in_order"];
const EVENTUALLY_KEYS: [&str; 12] = [
    "job_phase",
    "podgroup_condition",
    "running_podgroups",
    "inqueue_podgroups",
    "evict_count",
    "running_tasks",
    "running",
    "evicted_and_pending",
    "bound_pods",
    "podgroup_phase",
    "running_jobs",
    "evicted_jobs",
];

fn strs(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_sequence).map(|s| s.iter().filter_map(scalar_string).collect()).unwrap_or_default()
}

fn res(v: Option<&Value>, at: &str) -> Result<ResourceList> {
    let mut out = ResourceList::new();
    if let Some(m) = v.and_then(Value::as_mapping) {
        for (k, q) in m {
            let k = k.as_str().unwrap_or_default().to_string();
            let q = scalar_string(q).ok_or_else(|| anyhow!("{at}.{k}: expected a quantity"))?;
            out.insert(k.clone(), resource::parse_resource(&k, &q).map_err(|e| anyhow!("{at}.{k}: {e}"))?);
        }
    }
    Ok(out)
}

fn smap(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_mapping)
        .map(|m| m.iter().filter_map(|(k, v)| Some((scalar_string(k)?, scalar_string(v)?))).collect())
        .unwrap_or_default()
}

fn int(v: Option<&Value>) -> Option<i64> {
    v.and_then(|v| v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok())))
}

/// A scenario's cluster: objects present from the start, task status
/// overrides, and e2e Volcano Jobs, which arrive one after another.
struct Setup {
    cluster: Cluster,
    overrides: StatusOverrides,
    jobs: Vec<PodGroup>,
}

/// Builds the cluster a scenario describes; `at` prefixes errors.
fn cluster(s: &Value, at: &str) -> Result<Setup> {
    let mut c = Cluster::default();
    for (i, n) in s.get("nodes").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
        let name = n.get("name").and_then(Value::as_str).ok_or_else(|| anyhow!("{at}: nodes[{i}].name: missing"))?;
        c.nodes.push(Node {
            name: name.into(),
            allocatable: res(n.get("allocatable"), &format!("{at}: node {name}: allocatable"))?,
            labels: smap(n.get("labels")),
            taints: n
                .get("taints")
                .and_then(Value::as_sequence)
                .into_iter()
                .flatten()
                .map(|t| {
                    let f = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                    crate::model::Taint { key: f("key"), value: f("value"), effect: f("effect") }
                })
                .collect(),
            images: n
                .get("images")
                .and_then(Value::as_sequence)
                .into_iter()
                .flatten()
                .map(|im| (strs(im.get("names")), im.get("sizeBytes").and_then(Value::as_f64).unwrap_or(0.0)))
                .collect(),
            ..Default::default()
        });
    }
    for (i, q) in s.get("queues").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
        let name = q.get("name").and_then(Value::as_str).ok_or_else(|| anyhow!("{at}: queues[{i}].name: missing"))?;
        let qat = format!("{at}: queue {name}");
        let mut affinity = BTreeMap::new();
        for (kind, a, b) in [
            ("required", "nodeGroupAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
            ("preferred", "nodeGroupAffinity", "preferredDuringSchedulingIgnoredDuringExecution"),
            ("anti-required", "nodeGroupAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
            ("anti-preferred", "nodeGroupAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"),
        ] {
            let groups = strs(q.get("affinity").and_then(|x| x.get(a)).and_then(|x| x.get(b)));
            if !groups.is_empty() {
                affinity.insert(kind.to_string(), groups);
            }
        }
        c.queues.push(Queue {
            name: name.into(),
            weight: q.get("weight").and_then(Value::as_f64).unwrap_or(1.0),
            priority: int(q.get("priority")).unwrap_or(0) as i32,
            parent: q.get("parent").and_then(Value::as_str).map(String::from),
            reclaimable: q.get("reclaimable").and_then(Value::as_bool).unwrap_or(true),
            state: match q.get("state").and_then(Value::as_str) {
                None | Some("Open") => QueueState::Open,
                Some("Closed") => QueueState::Closed,
                Some("Closing") => QueueState::Closing,
                Some(other) => bail!("{qat}: state: unknown {other:?}"),
            },
            capability: res(q.get("capability"), &format!("{qat}: capability"))?,
            deserved: res(q.get("deserved"), &format!("{qat}: deserved"))?,
            guarantee: res(q.get("guarantee"), &format!("{qat}: guarantee"))?,
            guaranteed: q.get("guarantee_policy").and_then(Value::as_str) == Some("Guaranteed"),
            reserve_percentage: match q.get("percentage") {
                None => BTreeMap::new(),
                Some(p) => {
                    let value = p
                        .get("value")
                        .and_then(Value::as_f64)
                        .ok_or_else(|| anyhow!("{qat}: percentage.value: missing"))?;
                    let dims = strs(p.get("dimensions"));
                    let dims = if dims.is_empty() { vec!["cpu".into(), "memory".into()] } else { dims };
                    dims.into_iter().map(|d| (d, value)).collect()
                }
            },
            annotations: smap(q.get("annotations")),
            affinity,
            created: i as i64,
        });
    }
    for (name, v) in s.get("priority_classes").and_then(Value::as_mapping).into_iter().flatten() {
        let name = scalar_string(name).unwrap_or_default();
        let (value, never) = match v {
            Value::Mapping(_) => {
                (int(v.get("value")).unwrap_or(0), v.get("preemptionPolicy").and_then(Value::as_str) == Some("Never"))
            }
            _ => (int(Some(v)).unwrap_or(0), false),
        };
        c.priority_classes
            .insert(name, PriorityClass { value: value as i32, global_default: false, preempt_never: never });
    }
    for (i, g) in s.get("podgroups").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
        let name =
            g.get("name").and_then(Value::as_str).ok_or_else(|| anyhow!("{at}: podgroups[{i}].name: missing"))?;
        let gat = format!("{at}: podgroup {name}");
        let phase = g.get("phase").and_then(Value::as_str).unwrap_or("");
        let (network_topology, subgroups) = crate::manifest::podgroup_topology(g, at, &format!("podgroup {name}"))?;
        c.podgroups.push(PodGroup {
            namespace: g.get("namespace").and_then(Value::as_str).unwrap_or("default").into(),
            name: name.into(),
            queue: g.get("queue").and_then(Value::as_str).unwrap_or("default").into(),
            min_member: int(g.get("min_member")).unwrap_or(0) as u32,
            min_task_member: smap(g.get("min_task_member"))
                .into_iter()
                .map(|(k, v)| (k, v.parse().unwrap_or(0)))
                .collect(),
            min_resources: g
                .get("min_resources")
                .map(|m| res(Some(m), &format!("{gat}: min_resources")))
                .transpose()?,
            priority_class: g.get("priority_class").and_then(Value::as_str).map(String::from),
            priority: int(g.get("priority")).map(|p| p as i32),
            phase: Phase::parse(phase).ok_or_else(|| anyhow!("{gat}: phase: unknown {phase:?}"))?,
            created: g.get("waiting_since_seconds").and_then(Value::as_f64).map_or(i as i64, |w| (-w * 1000.0) as i64),
            network_topology,
            subgroups,
            annotations: smap(g.get("annotations")),
            ..Default::default()
        });
    }
    for (ns, labels) in s.get("namespaces").and_then(Value::as_mapping).into_iter().flatten() {
        c.namespaces.insert(scalar_string(ns).unwrap_or_default(), smap(Some(labels)));
    }
    // Kubernetes objects given whole: claims, volumes, CSINodes, namespaces.
    for (i, o) in s.get("objects").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
        let object = crate::manifest::from_value(o, &format!("{at}: objects[{i}]"))?;
        if object.keep_in(&mut c).is_some() {
            bail!("{at}: objects[{i}]: only PersistentVolumeClaim, PersistentVolume, StorageClass, CSIDriver, CSIStorageCapacity, CSINode, DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate, Namespace, PriorityClass, HyperNode and Reservation");
        }
    }
    let mut overrides = StatusOverrides::new();
    let mut jobs = Vec::new();
    for (i, p) in s.get("pods").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
        let name = p.get("name").and_then(Value::as_str).ok_or_else(|| anyhow!("{at}: pods[{i}].name: missing"))?;
        let pat = format!("{at}: pod {name}");
        let phase = p.get("phase").and_then(Value::as_str).unwrap_or("");
        let pod = Pod {
            namespace: p.get("namespace").and_then(Value::as_str).unwrap_or("default").into(),
            name: name.into(),
            group: p.get("group").and_then(Value::as_str).map(String::from),
            scheduler_name: "volcano".into(),
            requests: res(p.get("requests"), &format!("{pat}: requests"))?,
            node: p.get("node").and_then(Value::as_str).map(String::from),
            phase: PodPhase::parse(phase).ok_or_else(|| anyhow!("{pat}: phase: unknown {phase:?}"))?,
            priority: int(p.get("priority")).map(|x| x as i32),
            preemptable: p.get("preemptable").and_then(Value::as_bool).unwrap_or(true),
            preempt_never: p.get("preemption_policy").and_then(Value::as_str) == Some("Never"),
            task_spec: p.get("task_spec").and_then(Value::as_str).unwrap_or("").into(),
            node_selector: smap(p.get("node_selector")),
            created: i as i64,
            // Reservation scenarios: seconds before t=0 the pod started, and
            // its estimated and actual running time.
            started: p.get("started_seconds_ago").and_then(Value::as_f64).map(|x| (-x * 1000.0) as i64),
            estimated_ms: p.get("estimate_seconds").and_then(Value::as_f64).map(|x| (x * 1000.0) as i64),
            annotations: p
                .get("duration_seconds")
                .and_then(Value::as_f64)
                .map(|d| BTreeMap::from([(crate::manifest::DURATION.to_string(), d.to_string())]))
                .unwrap_or_default(),
            ..Default::default()
        };
        let mut pod = pod;
        pod.labels = smap(p.get("labels"));
        if let Some(spec) = p.get("spec") {
            crate::manifest::read_placement(at, &format!("pod {name}"), spec, &mut pod)?;
        }
        if let Some(st) = p.get("session_status").and_then(Value::as_str) {
            let status = match st {
                "Pipelined" => TaskStatus::Pipelined,
                "Allocated" => TaskStatus::Allocated,
                "Binding" => TaskStatus::Binding,
                "Releasing" => TaskStatus::Releasing,
                other => bail!("{pat}: session_status: unknown {other:?}"),
            };
            overrides.insert(pod.key(), status);
        }
        c.pods.push(pod);
    }
    // e2e Volcano Jobs: the job controller creates pods once admitted.
    for (i, j) in s.get("jobs").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
        let name = j.get("name").and_then(Value::as_str).ok_or_else(|| anyhow!("{at}: jobs[{i}].name: missing"))?;
        let requests = res(j.get("requests"), &format!("{at}: job {name}: requests"))?;
        let tasks = int(j.get("tasks")).unwrap_or(1);
        let min = int(j.get("min")).unwrap_or(tasks) as u32;
        let class = j.get("priority_class").and_then(Value::as_str).map(String::from);
        let templates: Vec<Pod> = (0..tasks)
            .map(|k| Pod {
                namespace: "e2e".into(),
                name: format!("{name}-task-{k}"),
                group: Some(name.into()),
                scheduler_name: "volcano".into(),
                requests: requests.clone(),
                priority_class: class.clone(),
                preemptable: j.get("preemptable").and_then(Value::as_bool).unwrap_or(true),
                task_spec: "task".into(),
                created: 1000 * i as i64 + k,
                ..Default::default()
            })
            .collect();
        let mut min_res = ResourceList::new();
        for (k, v) in &requests {
            min_res.insert(k.clone(), v * min as f64);
        }
        jobs.push(PodGroup {
            namespace: "e2e".into(),
            name: name.into(),
            queue: j.get("queue").and_then(Value::as_str).unwrap_or("default").into(),
            min_member: min,
            min_resources: Some(min_res),
            priority_class: class,
            created: 1000 * i as i64,
            job_templates: templates,
            ..Default::default()
        });
    }
    // Pods of other schedulers (e2e): placed first-fit, as the default
    // scheduler would, and counted as node usage only.
    for (owner, spec) in s.get("external_pods").and_then(Value::as_mapping).into_iter().flatten() {
        let owner = scalar_string(owner).unwrap_or_default();
        let requests = res(spec.get("requests"), &format!("{at}: external_pods {owner}: requests"))?;
        let scheduler = spec.get("scheduler").and_then(Value::as_str).unwrap_or("default-scheduler").to_string();
        for i in 0..int(spec.get("replicas")).unwrap_or(1) {
            let node = c.nodes.iter().find(|n| fits_on(&c, n, &requests)).map(|n| n.name.clone());
            let Some(node) = node else { bail!("{at}: external_pods {owner}: replica {i} fits on no node") };
            c.pods.push(Pod {
                namespace: "external".into(),
                name: format!("{}-{i}", owner.replace(' ', "-")),
                scheduler_name: scheduler.clone(),
                requests: requests.clone(),
                node: Some(node),
                phase: PodPhase::Running,
                annotations: [(OWNER.to_string(), owner.clone())].into(),
                ..Default::default()
            });
        }
    }
    // Pods of a scenario's PodGroups are owned by their job: an evicted pod
    // comes back pending, as Volcano's job controller recreates it.
    for g in c.podgroups.iter_mut() {
        g.job_templates = c
            .pods
            .iter()
            .filter(|p| p.namespace == g.namespace && p.group.as_ref() == Some(&g.name))
            .map(|p| Pod { node: None, phase: PodPhase::Pending, ..p.clone() })
            .collect();
    }
    tephra_model::allocation::account(&mut c);
    Ok(Setup { cluster: c, overrides, jobs })
}

/// `running_<fragment>` / `pending_<fragment>`: pods whose name or PodGroup
/// name contains the fragment that are running / waiting to be placed.
fn fragment_key(key: &str) -> Option<(bool, &str)> {
    if EVENTUALLY_KEYS.contains(&key) {
        return None;
    }
    key.strip_prefix("running_").map(|f| (true, f)).or_else(|| key.strip_prefix("pending_").map(|f| (false, f)))
}

/// Annotation naming the owner of an external pod ("replicaset rs-1").
const OWNER: &str = "tephra.io/owner";

/// Whether `req` (plus one pod) fits on `node` next to the pods already there.
fn fits_on(c: &Cluster, node: &Node, req: &ResourceList) -> bool {
    let mut used = ResourceList::new();
    for p in c.pods.iter().filter(|p| p.node.as_deref() == Some(&node.name)) {
        for (k, v) in &p.requests {
            *used.entry(k.clone()).or_default() += v;
        }
        *used.entry("pods".into()).or_default() += 1.0;
    }
    let mut want = req.clone();
    *want.entry("pods".into()).or_default() += 1.0;
    want.iter().all(|(k, v)| {
        let cap = node.allocatable.get(k).copied().unwrap_or(0.0);
        used.get(k).copied().unwrap_or(0.0) + v <= cap + resource::EPSILON
    })
}

/// The scheduler config a scenario describes.
fn config(s: &Value) -> SchedulerConfig {
    let unset_is_on = s.get("config_defaults").and_then(Value::as_bool).unwrap_or(false);
    let flags = s.get("plugin_flags");
    let off = s.get("plugin_flags_false");
    let args = s.get("plugin_args");
    let tiers = s
        .get("plugins")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .map(|tier| {
            strs(Some(tier))
                .iter()
                .map(|name| {
                    let mut conf = PluginConf::new(name);
                    match flags.and_then(|f| f.get(name.as_str())) {
                        Some(Value::Sequence(list)) => {
                            for sw in list.iter().filter_map(Value::as_str) {
                                conf.switches.insert(sw.into(), true);
                            }
                        }
                        Some(Value::Mapping(m)) => {
                            for (k, v) in m {
                                conf.switches
                                    .insert(k.as_str().unwrap_or_default().into(), v.as_bool().unwrap_or(false));
                            }
                        }
                        _ => {}
                    }
                    for sw in strs(off.and_then(|f| f.get(name.as_str()))) {
                        conf.switches.insert(sw, false);
                    }
                    conf.arguments = smap(args.and_then(|a| a.get(name.as_str()))).into_iter().collect();
                    conf
                })
                .collect()
        })
        .collect();
    let action_args = s
        .get("action_args")
        .and_then(Value::as_mapping)
        .map(|m| m.iter().map(|(k, v)| (scalar_string(k).unwrap_or_default(), smap(Some(v)))).collect())
        .unwrap_or_default();
    SchedulerConfig { actions: strs(s.get("actions")), tiers, action_args, unset_is_on, limits: Default::default() }
}

/// Why a scenario cannot run here, if it cannot.
fn skip_reason(s: &Value, lib: &Library) -> Option<String> {
    if s.get("historical").and_then(Value::as_bool) == Some(true) {
        return Some("historical: behaviour of code Volcano removed".into());
    }
    let missing_actions: Vec<String> =
        strs(s.get("actions")).into_iter().filter(|a| actions::by_name(a).is_none()).collect();
    if !missing_actions.is_empty() {
        return Some(format!("needs action(s) not built yet: {}", missing_actions.join(", ")));
    }
    let plugins: BTreeSet<String> =
        s.get("plugins").and_then(Value::as_sequence).into_iter().flatten().flat_map(|t| strs(Some(t))).collect();
    let missing: Vec<String> = plugins.into_iter().filter(|p| !lib.has(p)).collect();
    if !missing.is_empty() {
        return Some(format!("needs plugin(s) not built yet: {}", missing.join(", ")));
    }
    let mode = s.get("mode").and_then(Value::as_str).unwrap_or("session");
    if mode == "sessions" {
        for c in s.get("sessions").and_then(Value::as_sequence).into_iter().flatten() {
            for k in c.get("expect").and_then(Value::as_mapping).into_iter().flatten().filter_map(|(k, _)| k.as_str()) {
                if !CYCLE_KEYS.contains(&k) {
                    return Some(format!("cycle expectation {k:?} is not checked by this runner yet"));
                }
            }
        }
        return None;
    }
    if s.get("sessions").is_some() {
        return Some("uses sessions outside mode: sessions".into());
    }
    for step in s.get("steps").and_then(Value::as_sequence).into_iter().flatten() {
        if let Some(a) = step.get("action").and_then(Value::as_str) {
            if !a.starts_with("delete external ") {
                return Some(format!("step action {a:?} is not supported by this runner yet"));
            }
        }
        for k in step.get("expect").and_then(Value::as_mapping).into_iter().flatten().filter_map(|(k, _)| k.as_str()) {
            if !EVENTUALLY_KEYS.contains(&k) {
                return Some(format!("step expectation {k:?} is not checked by this runner yet"));
            }
        }
    }
    let expect = s.get("expect")?;
    let allowed: &[&str] = match mode {
        "plugin-fn" => &PLUGIN_FN_KEYS,
        "session" => &SESSION_KEYS,
        "eventual" => &["eventually"],
        other => return Some(format!("mode {other:?} is not supported")),
    };
    for k in expect.as_mapping()?.keys().filter_map(Value::as_str) {
        if !allowed.contains(&k) {
            return Some(format!("expectation {k:?} is not checked by this runner yet"));
        }
    }
    if let Some(ev) = expect.get("eventually").and_then(Value::as_mapping) {
        for k in ev.keys().filter_map(Value::as_str) {
            if !EVENTUALLY_KEYS.contains(&k) && fragment_key(k).is_none() {
                return Some(format!("eventual expectation {k:?} is not checked by this runner yet"));
            }
        }
    }
    None
}

/// Keys whose values must be integers wherever they appear in a scenario.
const INT_KEYS: [&str; 5] = ["bind_count", "evict_count", "pipelined_count", "skip", "min_member"];

/// The first integer key in `v` whose value is not an integer: the runner
/// would otherwise read it as absent and check nothing.
fn bad_int(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::Mapping(m) => m.iter().find_map(|(k, x)| {
            let k = scalar_string(k).unwrap_or_default();
            let here = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
            if INT_KEYS.contains(&k.as_str()) && !x.is_null() && int(Some(x)).is_none() {
                return Some(format!(
                    "{here}: {} is not an integer",
                    scalar_string(x).unwrap_or_else(|| "a non-scalar".into())
                ));
            }
            bad_int(x, &here)
        }),
        Value::Sequence(s) => s.iter().enumerate().find_map(|(i, x)| bad_int(x, &format!("{path}[{i}]"))),
        _ => None,
    }
}

/// Runs one scenario.
pub fn run_scenario(s: &Value, lib: &Library, origin: &str) -> ScenarioResult {
    run_scenario_for(s, lib, origin, None)
}

/// Runs one scenario; with `plugin`, a fault of that plugin (a trap, a
/// call past the sandbox's deadline or memory, an answer out of contract)
/// fails it, whatever its fault policy made of it.
pub fn run_scenario_for(s: &Value, lib: &Library, origin: &str, plugin: Option<&str>) -> ScenarioResult {
    let started = std::time::Instant::now();
    let name = s.get("name").and_then(Value::as_str).unwrap_or("?").to_string();
    if let Some(why) = bad_int(s, "") {
        return ScenarioResult { name, verdict: Verdict::Fail(format!("error: {why}")), millis: 0.0 };
    }
    let verdict = match skip_reason(s, lib) {
        Some(why) => Verdict::Skip(why),
        None => match check(s, lib, &format!("{origin}: scenario {name}"), plugin) {
            Ok(diffs) if diffs.is_empty() => Verdict::Pass,
            Ok(diffs) => Verdict::Fail(diffs.join("; ")),
            Err(e) => Verdict::Fail(format!("error: {e}")),
        },
    };
    ScenarioResult { name, verdict, millis: started.elapsed().as_secs_f64() * 1e3 }
}

fn check(s: &Value, lib: &Library, at: &str, plugin: Option<&str>) -> Result<Vec<String>> {
    let Setup { cluster, overrides, jobs } = cluster(s, at)?;
    let config = config(s);
    let expect = s.get("expect").cloned().unwrap_or(Value::Null);
    let mut diffs = Vec::new();
    // Every plugin fault, as "plugin point: message".
    let mut faults: Vec<String> = Vec::new();
    let fault = |f: &crate::policy::Fault| format!("{} {}: {}", f.plugin, f.point, f.message);
    match s.get("mode").and_then(Value::as_str).unwrap_or("session") {
        "plugin-fn" => {
            let mut sched = Scheduler::new(config, lib);
            sched.inspect(&cluster, &overrides, 0, |ssn| {
                plugin_fn(ssn, &expect, &mut diffs);
                faults.extend(ssn.policies.faults.iter().map(fault));
            });
        }
        "eventual" => eventually(&cluster, jobs, Scheduler::new(config, lib), s, &mut diffs, &mut faults),
        "sessions" => cycles(cluster, Scheduler::new(config, lib), s, &mut diffs, &mut faults),
        _ => {
            let mut sched = Scheduler::new(config.clone(), lib);
            let out = sched.cycle(&cluster, &overrides, 0);
            faults.extend(out.faults.iter().map(fault));
            session_checks(&out, &expect, &mut diffs);
            diffs.extend(topology_violations(&cluster, &session_binds(&out)));
            if expect.get("eventually").is_some() {
                // Doc scenarios also state where a whole scheduler settles
                // afterwards: continue from the session's result with
                // allocate and backfill added to its actions.
                let mut later = config;
                let mut actions = vec!["allocate".to_string(), "backfill".to_string()];
                actions.extend(later.actions.iter().filter(|a| !actions.contains(a)).cloned().collect::<Vec<_>>());
                later.actions = actions;
                let mut sim = Simulation::from_cluster(
                    cluster,
                    Scheduler::new(later, lib),
                    Options { max_cycles: 30, period: 1.0, ..Default::default() },
                );
                let mut reports = vec![sim.apply_outcome(out)];
                reports.extend(sim.run());
                faults.extend(reports.iter().skip(1).flat_map(|r| r.faults.iter().cloned()));
                eventually_checks(&sim, &reports, &expect, &mut diffs);
            }
        }
    }
    if let Some(p) = plugin {
        let prefix = format!("{p} ");
        diffs.extend(faults.into_iter().filter(|f| f.starts_with(&prefix)).map(|f| format!("fault: {f}")));
    }
    Ok(diffs)
}

/// The session's binds, pod key → node.
fn session_binds(out: &Outcome) -> BTreeMap<String, String> {
    let names = &out.names;
    out.decisions
        .iter()
        .filter_map(|d| match d {
            crate::session::Decision::Bind { task, node } => {
                Some((names.tasks[*task as usize].clone(), names.nodes[*node as usize].clone()))
            }
            _ => None,
        })
        .collect()
}

/// Where every gang with a hard network-topology limit landed, checked on
/// every scenario whatever it expects: the nodes its pods hold (bound
/// before, plus `binds`) must share one HyperNode no higher than its
/// allowed tier, and each partition with a limit of its own likewise. The
/// tree is the scenario's HyperNodes over its nodes; the cluster counts as
/// one tier above the highest.
fn topology_violations(cluster: &Cluster, binds: &BTreeMap<String, String>) -> Vec<String> {
    use crate::topology::Tree;
    if !cluster.podgroups.iter().any(|g| g.network_topology.is_some() || !g.subgroups.is_empty()) {
        return Vec::new();
    }
    let nodes: Vec<&Node> = cluster.nodes.iter().collect();
    let hypernodes: Vec<_> = cluster.hypernodes.values().cloned().collect();
    let Ok(tree) = Tree::build(&hypernodes, &nodes) else { return Vec::new() };
    let node_id: BTreeMap<&str, u32> = nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i as u32)).collect();
    // The tier of the lowest HyperNode holding all of `held`.
    let lowest_common = |held: &[u32]| -> (u32, String) {
        let mut h = held.first().map_or(0, |&n| tree.node_leaf[n as usize]);
        while h != 0 && !held.iter().all(|n| tree.nodes[h as usize].binary_search(n).is_ok()) {
            h = tree.parents[h as usize];
        }
        (tree.tiers[h as usize], tree.names[h as usize].clone())
    };
    let mut out = Vec::new();
    for g in cluster.podgroups.iter() {
        // (pod, node id, labels) of the group's pods holding a node after the session.
        let held: Vec<(String, u32, &BTreeMap<String, String>)> = cluster
            .pods
            .iter()
            .filter(|p| p.namespace == g.namespace && p.group.as_deref() == Some(g.name.as_str()) && !p.deleting)
            .filter(|p| !matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed))
            .filter_map(|p| {
                let key = p.key();
                let node = binds.get(&key).or(p.node.as_ref())?;
                Some((key, *node_id.get(node.as_str())?, &p.labels))
            })
            .collect();
        let mut check = |what: String, limit: Option<&crate::topology::NetworkTopology>, ids: Vec<u32>| {
            let Some(tier) = limit.filter(|l| !l.soft).and_then(|l| tree.highest_tier(l, None)) else { return };
            if ids.len() < 2 {
                return;
            }
            let (got, name) = lowest_common(&ids);
            if got > tier {
                out.push(format!(
                    "topology: {what} spans HyperNode {name} (tier {got}), above its allowed tier {tier}"
                ));
            }
        };
        check(format!("job {}", g.key()), g.network_topology.as_ref(), held.iter().map(|h| h.1).collect());
        for sg in &g.subgroups {
            let mut parts: BTreeMap<Vec<String>, Vec<u32>> = BTreeMap::new();
            for (_, node, labels) in &held {
                if let Some(k) = sg.key_of(labels) {
                    parts.entry(k).or_default().push(*node);
                }
            }
            for (k, ids) in parts {
                check(format!("job {} partition {} {k:?}", g.key(), sg.name), sg.topology.as_ref(), ids);
            }
        }
    }
    out
}

fn session_checks(out: &Outcome, expect: &Value, diffs: &mut Vec<String>) {
    let names = &out.names;
    let binds = session_binds(out);
    let evicted: Vec<String> = out
        .decisions
        .iter()
        .filter_map(|d| match d {
            crate::session::Decision::Evict { task, .. } => Some(names.tasks[*task as usize].clone()),
            _ => None,
        })
        .collect();
    if let Some(want) = expect.get("binds") {
        let want = smap(Some(want));
        if want != binds {
            diffs.push(format!("binds: want {want:?}, got {binds:?}"));
        }
    }
    if let Some(n) = int(expect.get("bind_count")) {
        if binds.len() as i64 != n {
            diffs.push(format!("bind_count: want {n}, got {} ({binds:?})", binds.len()));
        }
    }
    if let Some(want) = expect.get("binds_per_job").and_then(Value::as_mapping) {
        // Pods bound per job ("namespace/podgroup"), jobs with none included.
        let mut got: BTreeMap<String, i64> = BTreeMap::new();
        for d in &out.decisions {
            if let crate::session::Decision::Bind { task, .. } = d {
                *got.entry(names.jobs[out.task_job[*task as usize] as usize].clone()).or_default() += 1;
            }
        }
        for (job, n) in want {
            let job = scalar_string(job).unwrap_or_default();
            let have = got.get(&job).copied().unwrap_or(0);
            if Some(have) != n.as_i64() {
                diffs.push(format!("binds_per_job {job}: want {n:?}, got {have}"));
            }
        }
    }
    if let Some(want) = expect.get("evicted") {
        let mut want = strs(Some(want));
        want.sort();
        let mut got = evicted.clone();
        got.sort();
        if want != got {
            diffs.push(format!("evicted: want {want:?}, got {got:?}"));
        }
    }
    if let Some(n) = int(expect.get("evict_count")) {
        if evicted.len() as i64 != n {
            diffs.push(format!("evict_count: want {n}, got {}", evicted.len()));
        }
    }
    if let Some(want) = expect.get("eviction_order") {
        let want = strs(Some(want));
        if want != evicted {
            diffs.push(format!("eviction_order: want {want:?}, got {evicted:?}"));
        }
    }
    let pipelined: Vec<(String, String)> = out
        .pipelined
        .iter()
        .map(|&(t, n)| (names.jobs[out.task_job[t as usize] as usize].clone(), names.nodes[n as usize].clone()))
        .collect();
    if let Some(want) = expect.get("pipelined").and_then(Value::as_mapping) {
        for (job, nodes) in want {
            let job = scalar_string(job).unwrap_or_default();
            let allowed = strs(Some(nodes));
            let got: Vec<&String> = pipelined.iter().filter(|(j, _)| *j == job).map(|(_, n)| n).collect();
            if got.is_empty() || got.iter().any(|n| !allowed.contains(n)) {
                diffs.push(format!("pipelined {job}: want on {allowed:?}, got {got:?}"));
            }
        }
    }
    if let Some(n) = int(expect.get("pipelined_count")) {
        if pipelined.len() as i64 != n {
            diffs.push(format!("pipelined_count: want {n}, got {}", pipelined.len()));
        }
    }
    if let Some(want) = expect.get("podgroup_phase").and_then(Value::as_mapping) {
        for (job, phase) in want {
            let job = scalar_string(job).unwrap_or_default();
            let want = scalar_string(phase).unwrap_or_default();
            let got = names.jobs.iter().position(|j| *j == job).map(|j| crate::session::phase_name(out.job_phase[j]));
            if got != Some(want.as_str()) {
                diffs.push(format!("podgroup_phase {job}: want {want}, got {got:?}"));
            }
        }
    }
    if let Some(want) = expect.get("job_in_session").and_then(Value::as_mapping) {
        for (job, present) in want {
            let job = scalar_string(job).unwrap_or_default();
            let got = names.jobs.contains(&job);
            if Some(got) != present.as_bool() {
                diffs.push(format!("job_in_session {job}: want {present:?}, got {got}"));
            }
        }
    }
}

fn plugin_fn(ssn: &mut Session, expect: &Value, diffs: &mut Vec<String>) {
    let task = |ssn: &Session, key: &str| ssn.names.tasks.iter().position(|t| t == key).map(|t| t as u32);
    let all_nodes: Vec<u32> = (0..ssn.nodes() as u32).collect();
    for (key, want) in expect.get("node_scores").and_then(Value::as_mapping).into_iter().flatten() {
        let key = scalar_string(key).unwrap_or_default();
        let Some(t) = task(ssn, &key) else {
            diffs.push(format!("node_scores: no task {key}"));
            continue;
        };
        let scores = ssn.ask().node_scores(t, &all_nodes);
        for (node, w) in want.as_mapping().into_iter().flatten() {
            let node = scalar_string(node).unwrap_or_default();
            let w = w.as_f64().unwrap_or(f64::NAN);
            let got = ssn.node_index.get(&node).map(|&n| scores[n as usize]);
            if got.is_none_or(|g| (g - w).abs() > 1e-6 * w.abs().max(1.0)) {
                diffs.push(format!("node_scores {key} on {node}: want {w}, got {got:?}"));
            }
        }
    }
    for (key, want) in expect.get("predicate_status").and_then(Value::as_mapping).into_iter().flatten() {
        let key = scalar_string(key).unwrap_or_default();
        let Some(t) = task(ssn, &key) else {
            diffs.push(format!("predicate_status: no task {key}"));
            continue;
        };
        let verdicts = ssn.ask().predicate(t, &all_nodes);
        for (node, w) in want.as_mapping().into_iter().flatten() {
            let node = scalar_string(node).unwrap_or_default();
            let w = scalar_string(w).unwrap_or_default();
            let got = ssn.node_index.get(&node).map(|&n| match &verdicts[n as usize] {
                None => "S",
                Some(r) if r.unresolvable => "UU",
                Some(_) => "U",
            });
            if got != Some(w.as_str()) {
                diffs.push(format!("predicate_status {key} on {node}: want {w}, got {got:?}"));
            }
        }
    }
    for (key, want) in expect.get("job_enqueueable").and_then(Value::as_mapping).into_iter().flatten() {
        let key = scalar_string(key).unwrap_or_default();
        let Some(j) = ssn.names.jobs.iter().position(|x| *x == key) else {
            diffs.push(format!("job_enqueueable: no job {key}"));
            continue;
        };
        let got = ssn.ask().vote(crate::plugin::Call::JobEnqueueable(j as u32));
        if Some(got) != want.as_bool() {
            diffs.push(format!("job_enqueueable {key}: want {want:?}, got {got}"));
        }
    }
    if let Some(want) = expect.get("job_order") {
        // Every job, as allocate orders them: the plugins' keys, then Volcano's fallback.
        let mut order: Vec<u32> = (0..ssn.names.jobs.len() as u32).collect();
        actions::sort(ssn, actions::Kind::Job, &mut order);
        let got: Vec<String> = order.iter().map(|&j| ssn.names.jobs[j as usize].clone()).collect();
        if strs(Some(want)) != got {
            diffs.push(format!("job_order: want {:?}, got {got:?}", strs(Some(want))));
        }
    }
    if let Some(want) = expect.get("backfill_candidates_in_order") {
        let want = strs(Some(want));
        let got: Vec<String> = actions::backfill_candidates(ssn)
            .into_iter()
            .map(|t| ssn.names.tasks[t as usize].rsplit('/').next().unwrap_or_default().to_string())
            .collect();
        if want != got {
            diffs.push(format!("backfill_candidates_in_order: want {want:?}, got {got:?}"));
        }
    }
}

/// `mode: sessions`: a simulation (period `period_seconds`, default 1) whose
/// cycles are checked one by one; `skip: N` runs N unchecked cycles first.
/// One cycle, noting when each job's first pod was bound.
fn step(sim: &mut Simulation, started: &mut BTreeMap<String, f64>) -> crate::report::CycleReport {
    let r = sim.step();
    for (pod, _) in &r.binds {
        let job = sim
            .cluster
            .pods
            .iter()
            .find(|p| p.key() == *pod)
            .and_then(|p| Some(format!("{}/{}", p.namespace, p.group.as_ref()?)));
        if let Some(j) = job {
            started.entry(j).or_insert(r.time);
        }
    }
    r
}

/// Cycles an estimate may look ahead (and the runner runs on to check it).
const ESTIMATE_HORIZON: usize = 2_000;

fn cycles(cluster: Cluster, sched: Scheduler, s: &Value, diffs: &mut Vec<String>, faults: &mut Vec<String>) {
    let period = s.get("period_seconds").and_then(Value::as_f64).unwrap_or(1.0);
    let mut sim = Simulation::from_cluster(cluster, sched, Options { max_cycles: 1, period, ..Default::default() });
    // Estimates to hold against what happens: (where made, job, predicted start).
    let mut predicted: Vec<(String, String, Option<f64>)> = Vec::new();
    // Per job, when its first pod was bound.
    let mut started: BTreeMap<String, f64> = BTreeMap::new();
    for (i, c) in s.get("sessions").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
        for _ in 0..int(c.get("skip")).unwrap_or(0) {
            faults.extend(step(&mut sim, &mut started).faults);
        }
        let r = step(&mut sim, &mut started);
        faults.extend(r.faults.iter().cloned());
        let at = format!("cycle {} (sessions[{i}])", r.cycle);
        let Some(want) = c.get("expect") else { continue };
        let binds: BTreeMap<String, String> = r.binds.iter().cloned().collect();
        diffs.extend(topology_violations(&sim.cluster, &BTreeMap::new()).into_iter().map(|d| format!("{at}: {d}")));
        if let Some(w) = want.get("binds") {
            let w = smap(Some(w));
            if w != binds {
                diffs.push(format!("{at}: binds: want {w:?}, got {binds:?}"));
            }
        }
        if let Some(n) = int(want.get("bind_count")) {
            if binds.len() as i64 != n {
                diffs.push(format!("{at}: bind_count: want {n}, got {binds:?}"));
            }
        }
        if let Some(w) = want.get("evicted") {
            let mut w = strs(Some(w));
            w.sort();
            let mut got: Vec<String> = r.evictions.iter().map(|e| e.0.clone()).collect();
            got.sort();
            if w != got {
                diffs.push(format!("{at}: evicted: want {w:?}, got {got:?}"));
            }
        }
        if let Some(w) = want.get("target_jobs") {
            let got: Vec<String> = r.targets.iter().map(|t| t.0.clone()).collect();
            if strs(Some(w)) != got {
                diffs.push(format!("{at}: target_jobs: want {:?}, got {got:?}", strs(Some(w))));
            }
        }
        for (job, nodes) in want.get("locked_for_job").and_then(Value::as_mapping).into_iter().flatten() {
            let job = scalar_string(job).unwrap_or_default();
            let got = r.targets.iter().find(|t| t.0 == job).map(|t| t.1.clone()).unwrap_or_default();
            if strs(Some(nodes)) != got {
                diffs.push(format!("{at}: locked_for_job {job}: want {:?}, got {got:?}", strs(Some(nodes))));
            }
        }
        for (job, when) in want.get("predicted_start").and_then(Value::as_mapping).into_iter().flatten() {
            let job = scalar_string(job).unwrap_or_default();
            let got = r.starts.iter().find(|s| s.0 == job).and_then(|s| s.1);
            if got != when.as_f64() {
                diffs.push(format!("{at}: predicted_start {job}: want {when:?}, got {got:?}"));
            }
        }
        for (name, state) in want.get("reservation_state").and_then(Value::as_mapping).into_iter().flatten() {
            let (name, state) = (scalar_string(name).unwrap_or_default(), scalar_string(state).unwrap_or_default());
            let got = r.windows.iter().find(|w| w.name == name).map(|w| w.state);
            if got != Some(state.as_str()) {
                diffs.push(format!("{at}: reservation_state {name}: want {state}, got {got:?}"));
            }
        }
        for (queue, nodes) in want.get("locked_for_queue").and_then(Value::as_mapping).into_iter().flatten() {
            let queue = scalar_string(queue).unwrap_or_default();
            let got = r.reservations.iter().find(|q| q.queue == queue).map(|q| q.nodes.clone()).unwrap_or_default();
            if strs(Some(nodes)) != got {
                diffs.push(format!("{at}: locked_for_queue {queue}: want {:?}, got {got:?}", strs(Some(nodes))));
            }
        }
        for (queue, text) in want.get("refused").and_then(Value::as_mapping).into_iter().flatten() {
            let (queue, text) = (scalar_string(queue).unwrap_or_default(), scalar_string(text).unwrap_or_default());
            let got = r.reservations.iter().find(|q| q.queue == queue).and_then(|q| q.refused.clone());
            if !got.as_ref().is_some_and(|g| g.contains(&text)) {
                diffs.push(format!("{at}: refused {queue}: want a reason containing {text:?}, got {got:?}"));
            }
        }
        if let Some(w) = want.get("running") {
            let got: BTreeSet<String> =
                sim.cluster.pods.iter().filter(|p| p.node.is_some() && !p.deleting).map(|p| p.key()).collect();
            for p in strs(Some(w)) {
                if !got.contains(&p) {
                    diffs.push(format!("{at}: running: {p} is not bound ({got:?})"));
                }
            }
        }
        if want.get("estimated_start").is_some() || want.get("estimates_hold").is_some() {
            let estimates = sim.estimates(ESTIMATE_HORIZON);
            let got = |job: &str| estimates.iter().find(|e| e.job == job).map(|e| e.start);
            for (job, when) in want.get("estimated_start").and_then(Value::as_mapping).into_iter().flatten() {
                let job = scalar_string(job).unwrap_or_default();
                if got(&job) != Some(when.as_f64()) {
                    diffs.push(format!("{at}: estimated_start {job}: want {when:?}, got {:?}", got(&job)));
                }
            }
            for job in strs(want.get("estimates_hold")) {
                match got(&job) {
                    Some(start) => predicted.push((at.clone(), job, start)),
                    None => diffs.push(format!("{at}: estimates_hold {job}: no estimate (not waiting?)")),
                }
            }
        }
        for (what, text) in want.get("pending_reason").and_then(Value::as_mapping).into_iter().flatten() {
            let (what, text) = (scalar_string(what).unwrap_or_default(), scalar_string(text).unwrap_or_default());
            let got = r.pending.iter().find(|(p, _)| *p == what).map(|(_, why)| why.clone());
            if !got.as_ref().is_some_and(|g| g.contains(&text)) {
                diffs.push(format!("{at}: pending_reason {what}: want one containing {text:?}, got {got:?}"));
            }
        }
    }
    // Run on until every estimated job has started, and compare.
    let mut spare = ESTIMATE_HORIZON;
    while predicted.iter().any(|p| !started.contains_key(&p.1)) && spare > 0 {
        spare -= 1;
        step(&mut sim, &mut started);
    }
    for (at, job, est) in predicted {
        let truth = started.get(&job).copied();
        let close = match (est, truth) {
            (Some(e), Some(t)) => (e - t).abs() <= period + 1e-9,
            (e, t) => e.is_none() && t.is_none(),
        };
        if !close {
            diffs.push(format!("{at}: estimates_hold {job}: estimated {est:?}, started at {truth:?}"));
        }
    }
}

/// e2e scenarios: Volcano's e2e tests create jobs one after another and wait
/// for each to settle, so each job arrives once the previous ones settled.
fn eventually(
    cluster: &Cluster,
    jobs: Vec<PodGroup>,
    sched: Scheduler,
    s: &Value,
    diffs: &mut Vec<String>,
    faults: &mut Vec<String>,
) {
    let per_job = Options { max_cycles: 30 * (jobs.len() + 1), period: 1.0, ..Default::default() };
    let mut sim = Simulation::from_cluster(cluster.clone(), sched, per_job);
    let mut reports = sim.run();
    for job in jobs {
        sim.cluster.podgroups.push(job);
        let limit = sim.cycle() + 30;
        while sim.cycle() < limit {
            let r = sim.step();
            let done = sim.settled(&r);
            reports.push(r);
            if done {
                break;
            }
        }
    }
    // Steps: actions on the cluster, and states that must be reached.
    for (i, step) in s.get("steps").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
        if let Some(owner) = step.get("action").and_then(Value::as_str).and_then(|a| a.strip_prefix("delete external "))
        {
            sim.cluster.pods.retain(|p| p.annotations.get(OWNER).map(String::as_str) != Some(owner));
        }
        let Some(want) = step.get("expect") else { continue };
        let wrapped: Value =
            yaml_serde::to_value(BTreeMap::from([("eventually", want.clone())])).unwrap_or(Value::Null);
        let mut attempt = Vec::new();
        for _ in 0..15 {
            attempt.clear();
            eventually_checks(&sim, &reports, &wrapped, &mut attempt);
            if attempt.is_empty() {
                break;
            }
            let r = sim.step();
            reports.push(r);
        }
        diffs.extend(attempt.into_iter().map(|d| format!("step {}: {d}", i + 1)));
    }
    if let Some(expect) = s.get("expect") {
        eventually_checks(&sim, &reports, expect, diffs);
    }
    faults.extend(reports.into_iter().flat_map(|r| r.faults));
}

fn eventually_checks(
    sim: &Simulation,
    reports: &[crate::report::CycleReport],
    expect: &Value,
    diffs: &mut Vec<String>,
) {
    let Some(want) = expect.get("eventually") else { return };
    let c = &sim.cluster;
    let evictions: Vec<&(String, String, String)> = reports.iter().flat_map(|r| &r.evictions).collect();
    let evicted: BTreeSet<&str> = evictions.iter().map(|e| e.0.as_str()).collect();
    let group_of =
        |p: &Pod| c.podgroups.iter().find(|g| g.namespace == p.namespace && Some(&g.name) == p.group.as_ref());
    let pg_name = |key: &str| key.rsplit('/').next().unwrap_or(key).to_string();
    let count_phase = |phase: Phase, field: &str, diffs: &mut Vec<String>| {
        for (q, n) in want.get(field).and_then(Value::as_mapping).into_iter().flatten() {
            let q = scalar_string(q).unwrap_or_default();
            let got = c.podgroups.iter().filter(|g| g.queue == q && g.phase == phase).count() as i64;
            if Some(got) != int(Some(n)) {
                diffs.push(format!("eventually {field} {q}: want {n:?}, got {got}"));
            }
        }
    };
    count_phase(Phase::Running, "running_podgroups", diffs);
    count_phase(Phase::Inqueue, "inqueue_podgroups", diffs);
    if let Some(n) = int(want.get("evict_count")) {
        if evictions.len() as i64 != n {
            diffs.push(format!("eventually evict_count: want {n}, got {}", evictions.len()));
        }
    }
    for (job, n) in want.get("running_tasks").and_then(Value::as_mapping).into_iter().flatten() {
        let job = scalar_string(job).unwrap_or_default();
        let got = c
            .pods
            .iter()
            .filter(|p| p.phase == PodPhase::Running && group_of(p).is_some_and(|g| pg_name(&g.key()) == job))
            .count() as i64;
        if Some(got) != int(Some(n)) {
            diffs.push(format!("eventually running_tasks {job}: want {n:?}, got {got}"));
        }
    }
    for key in strs(want.get("running")) {
        if !c.pods.iter().any(|p| p.key() == key && p.phase == PodPhase::Running) {
            diffs.push(format!("eventually running: {key} is not running"));
        }
    }
    for key in strs(want.get("evicted_and_pending")) {
        let pending = c.pods.iter().any(|p| p.key() == key && p.node.is_none());
        if !evicted.contains(key.as_str()) || !pending {
            diffs.push(format!(
                "eventually evicted_and_pending: {key} (evicted {}, pending {pending})",
                evicted.contains(key.as_str())
            ));
        }
    }
    if let Some(n) = int(want.get("bound_pods")) {
        let got = c.pods.iter().filter(|p| p.node.is_some()).count() as i64;
        if got != n {
            diffs.push(format!("eventually bound_pods: want {n}, got {got}"));
        }
    }
    for (job, phase) in want.get("podgroup_phase").and_then(Value::as_mapping).into_iter().flatten() {
        let job = scalar_string(job).unwrap_or_default();
        let got = c.podgroups.iter().find(|g| pg_name(&g.key()) == job).map(|g| format!("{:?}", g.phase));
        if got.as_deref() != phase.as_str() {
            diffs.push(format!("eventually podgroup_phase {job}: want {phase:?}, got {got:?}"));
        }
    }
    for (job, phase) in want.get("job_phase").and_then(Value::as_mapping).into_iter().flatten() {
        let job = scalar_string(job).unwrap_or_default();
        // A Volcano Job is Pending until its PodGroup runs.
        let got = c.podgroups.iter().find(|g| pg_name(&g.key()) == job).map(|g| match g.phase {
            Phase::Running => "Running",
            Phase::Completed => "Completed",
            _ => "Pending",
        });
        if got != phase.as_str() {
            diffs.push(format!("job_phase {job}: want {phase:?}, got {got:?}"));
        }
    }
    for (job, kind) in want.get("podgroup_condition").and_then(Value::as_mapping).into_iter().flatten() {
        let job = scalar_string(job).unwrap_or_default();
        let got = c
            .podgroups
            .iter()
            .find(|g| pg_name(&g.key()) == job)
            .and_then(|g| g.condition.as_ref())
            .map(|c| c.kind.as_str());
        if got != kind.as_str() {
            diffs.push(format!("podgroup_condition {job}: want {kind:?}, got {got:?}"));
        }
    }
    for (key, n) in want.as_mapping().into_iter().flatten() {
        let Some((running, frag)) = key.as_str().and_then(fragment_key) else { continue };
        let got = c
            .pods
            .iter()
            .filter(|p| p.name.contains(frag) || p.group.as_deref().is_some_and(|g| g.contains(frag)))
            .filter(|p| if running { p.phase == PodPhase::Running } else { p.node.is_none() && !p.deleting })
            .count() as i64;
        if Some(got) != int(Some(n)) {
            diffs.push(format!("eventually {}: want {n:?}, got {got}", key.as_str().unwrap_or_default()));
        }
    }
    for job in strs(want.get("running_jobs")) {
        if !c.podgroups.iter().any(|g| pg_name(&g.key()) == job && g.phase == Phase::Running) {
            diffs.push(format!("eventually running_jobs: {job} is not Running"));
        }
    }
    for job in strs(want.get("evicted_jobs")) {
        let hit = evictions.iter().any(|e| {
            c.pods.iter().find(|p| p.key() == e.0).and_then(group_of).is_some_and(|g| pg_name(&g.key()) == job)
        });
        if !hit {
            diffs.push(format!("eventually evicted_jobs: no pod of {job} was evicted"));
        }
    }
}

/// Runs every scenario of a file.
pub fn run_file(path: &std::path::Path, lib: &Library) -> Result<Vec<ScenarioResult>> {
    run_file_for(path, lib, None)
}

/// Runs every scenario of a file; a fault of `plugin` fails a scenario.
pub fn run_file_for(path: &std::path::Path, lib: &Library, plugin: Option<&str>) -> Result<Vec<ScenarioResult>> {
    let text = tephra_readers::files::read_text(path)?;
    let doc: Value = yaml_serde::from_str(&text).map_err(|e| anyhow!("{}: not valid YAML: {e}", path.display()))?;
    let scenarios = doc
        .get("scenarios")
        .and_then(Value::as_sequence)
        .ok_or_else(|| anyhow!("{}: field scenarios: missing or not a list", path.display()))?;
    let origin = path.display().to_string();
    Ok(scenarios.iter().map(|s| run_scenario_for(s, lib, &origin, plugin)).collect())
}
