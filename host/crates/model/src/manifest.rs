//! Reads Kubernetes manifests unchanged: Node, Pod and Namespace (v1), Queue and
//! PodGroup (`scheduling.volcano.sh/v1beta1`), Volcano Job
//! (`batch.volcano.sh/v1alpha1`, expanded as its job controller does),
//! PriorityClass, and a ConfigMap holding `volcano-scheduler.conf`.
//!
//! Every error names the file, the object and the field.

use crate::cluster::*;
use crate::config::SchedulerConfig;
use crate::resource::{self, ResourceList};
use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use serde_yaml::Value;
use std::collections::BTreeMap;

mod rules;
pub mod topology;
mod window;
mod workloads;

/// Simulator annotation: the object appears this many seconds into the run.
pub const ARRIVE_AT: &str = "tephra.io/arrive-at";
/// Simulator annotation: a running pod completes after this many seconds.
pub const DURATION: &str = "tephra.io/duration";
/// Simulator annotation on a Node: this many identical nodes, named
/// `<name>-0`, `<name>-1`, … (a compact cluster).
pub const REPLICAS: &str = "tephra.io/replicas";
/// How long a pod is expected to run (big-job reservation orders nodes by it).
pub const ESTIMATE: &str = "tephra.io/estimated-running-duration";

/// One object read from a manifest.
#[derive(Clone, Debug)]
pub enum Object {
    Node(Node),
    Queue(Queue),
    PodGroup(PodGroup),
    /// Boxed: a pod with its placement rules is the largest object by far.
    Pod(Box<Pod>),
    PriorityClass(String, PriorityClass),
    /// A Namespace's name and labels.
    Namespace(String, BTreeMap<String, String>),
    /// A PersistentVolumeClaim's `namespace/name` and binding.
    Claim(String, Claim),
    /// A PersistentVolume's name and node affinity.
    Volume(String, Volume),
    /// A CSINode's name (its node's) and per driver its attach limit.
    AttachLimits(String, BTreeMap<String, u32>),
    HyperNode(crate::topology::HyperNode),
    /// An advance reservation (`Reservation`, tephra.io/v1alpha1).
    Reservation(crate::window::AdvanceReservation),
    /// Boxed: it carries a pod template.
    Workload(Box<Workload>),
    Config(SchedulerConfig),
}

impl Object {
    /// The object's kind and name (`namespace/name` when namespaced); the
    /// scheduler config has none.
    pub fn identity(&self) -> Option<(&'static str, String)> {
        Some(match self {
            Object::Node(n) => ("Node", n.name.clone()),
            Object::Queue(q) => ("Queue", q.name.clone()),
            Object::PodGroup(g) => ("PodGroup", g.key()),
            Object::Pod(p) => ("Pod", p.key()),
            Object::PriorityClass(n, _) => ("PriorityClass", n.clone()),
            Object::Namespace(n, _) => ("Namespace", n.clone()),
            Object::Claim(k, _) => ("PersistentVolumeClaim", k.clone()),
            Object::Volume(n, _) => ("PersistentVolume", n.clone()),
            Object::AttachLimits(n, _) => ("CSINode", n.clone()),
            Object::HyperNode(h) => ("HyperNode", h.name.clone()),
            Object::Reservation(r) => ("Reservation", r.name.clone()),
            Object::Workload(w) => (w.kind.name(), w.key()),
            Object::Config(_) => return None,
        })
    }

    /// Stores an object kept under its name (priority class, namespace,
    /// claim, volume, attach limits) in `c`; any other comes back.
    pub fn keep_in(self, c: &mut Cluster) -> Option<Object> {
        match self {
            Object::PriorityClass(n, p) => {
                c.priority_classes.insert(n, p);
            }
            Object::Namespace(n, labels) => {
                c.namespaces.insert(n, labels);
            }
            Object::Claim(key, claim) => {
                c.claims.insert(key, claim);
            }
            Object::Volume(name, volume) => {
                c.volumes.insert(name, volume);
            }
            Object::AttachLimits(node, limits) => {
                c.attach_limits.insert(node, limits);
            }
            Object::HyperNode(h) => {
                c.hypernodes.insert(h.name.clone(), h);
            }
            Object::Reservation(r) => {
                c.reservations.insert(r.name.clone(), r);
            }
            Object::Workload(w) => {
                // A later version of the object (scaling) replaces it.
                match c.workloads.iter_mut().find(|x| x.kind == w.kind && x.key() == w.key()) {
                    Some(x) => *x = *w,
                    None => c.workloads.push(*w),
                }
            }
            other => return Some(other),
        }
        None
    }
}

/// An object and the simulated second at which it appears.
#[derive(Clone, Debug)]
pub struct Timed {
    pub at: f64,
    pub object: Object,
}

/// Where an error happened: `file: Kind ns/name: field`.
struct At<'a> {
    origin: &'a str,
    object: String,
}

impl At<'_> {
    fn err(&self, field: &str, msg: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}: {}: {field}: {msg}", self.origin, self.object)
    }
}

fn get<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(v, |v, k| v.get(k)).filter(|v| !v.is_null())
}

fn string(at: &At, v: &Value, path: &str) -> Result<Option<String>> {
    match get(v, path) {
        None => Ok(None),
        Some(x) => crate::config::scalar_string(x).map(Some).ok_or_else(|| at.err(path, "expected a string")),
    }
}

fn map(at: &At, v: &Value, path: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if let Some(m) = get(v, path) {
        let m = m.as_mapping().ok_or_else(|| at.err(path, "expected a mapping"))?;
        for (k, val) in m {
            let k = k.as_str().unwrap_or_default().to_string();
            let val =
                crate::config::scalar_string(val).ok_or_else(|| at.err(&format!("{path}.{k}"), "expected a scalar"))?;
            out.insert(k, val);
        }
    }
    Ok(out)
}

/// An `int64` field.
fn int64(at: &At, v: &Value, path: &str) -> Result<Option<i64>> {
    match get(v, path) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| at.err(path, format!("{n} is not an integer"))),
        Some(Value::String(s)) => s.parse().map(Some).map_err(|_| at.err(path, format!("{s:?} is not an integer"))),
        Some(_) => Err(at.err(path, "expected an integer")),
    }
}

/// An `int32` field, as Kubernetes declares nearly all of them: a value out
/// of its range is refused, never wrapped.
fn int(at: &At, v: &Value, path: &str) -> Result<Option<i64>> {
    let n = int64(at, v, path)?;
    match n {
        Some(n) if i32::try_from(n).is_err() => Err(at.err(path, format!("{n} is out of the int32 range"))),
        _ => Ok(n),
    }
}

/// An `int32` field that counts something: not negative.
fn count(at: &At, v: &Value, path: &str) -> Result<Option<u32>> {
    match int(at, v, path)? {
        Some(n) if n < 0 => Err(at.err(path, format!("{n} is negative"))),
        n => Ok(n.map(|n| n as u32)),
    }
}

/// The most pods one Volcano Job may make in the simulator: a larger count
/// is refused rather than filling memory.
const JOB_PODS_MAX: u64 = 1_000_000;

fn boolean(at: &At, v: &Value, path: &str) -> Result<Option<bool>> {
    match get(v, path) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(_) => Err(at.err(path, "expected true or false")),
    }
}

/// A ResourceList in internal units.
fn resources(at: &At, v: &Value, path: &str) -> Result<ResourceList> {
    let mut out = ResourceList::new();
    for (k, q) in map(at, v, path)? {
        let value = resource::parse_resource(&k, &q).map_err(|e| at.err(&format!("{path}.{k}"), e))?;
        // Kubernetes refuses negative quantities; one would add room.
        if value < 0.0 {
            return Err(at.err(&format!("{path}.{k}"), format!("{q:?} is negative")));
        }
        out.insert(k, value);
    }
    Ok(out)
}

/// Seed 000's fields as annotations, for clusters whose Queue CRD (Volcano's
/// own) has no schema for them and would prune `spec.guarantee.policy` and
/// `spec.guarantee.percentage` (docs/reservation.md).
pub const GUARANTEE_POLICY: &str = "tephra.io/guarantee-policy";
pub const GUARANTEE_PERCENTAGE: &str = "tephra.io/guarantee-percentage";
pub const GUARANTEE_DIMENSIONS: &str = "tephra.io/guarantee-percentage-dimensions";

/// A seed-000 field from the spec or, when absent there, its annotation;
/// both given and different is an error naming both.
fn spec_or_annotation(
    at: &At,
    v: &Value,
    path: &str,
    annotations: &BTreeMap<String, String>,
    key: &str,
) -> Result<Option<(String, String)>> {
    let spec = match get(v, path) {
        None => None,
        Some(Value::Sequence(s)) => {
            let items: Option<Vec<String>> = s.iter().map(crate::config::scalar_string).collect();
            Some(items.ok_or_else(|| at.err(path, "expected resource names"))?.join(","))
        }
        Some(x) => Some(crate::config::scalar_string(x).ok_or_else(|| at.err(path, "expected a scalar"))?),
    };
    let note = annotations.get(key).cloned();
    match (spec, note) {
        (Some(s), Some(n)) if s.replace(' ', "") != n.replace(' ', "") => {
            Err(at.err(path, format!("{s:?} differs from annotation {key}: {n:?}")))
        }
        (Some(s), _) => Ok(Some((s, path.to_string()))),
        (None, Some(n)) => Ok(Some((n, format!("metadata.annotations.{key}")))),
        (None, None) => Ok(None),
    }
}

/// `spec.guarantee.policy`: whether the reservation evicts (Guaranteed).
fn guarantee_policy(at: &At, v: &Value, annotations: &BTreeMap<String, String>) -> Result<bool> {
    match spec_or_annotation(at, v, "spec.guarantee.policy", annotations, GUARANTEE_POLICY)? {
        None => Ok(false),
        Some((p, _)) if p == "Best-Effort" => Ok(false),
        Some((p, _)) if p == "Guaranteed" => Ok(true),
        Some((p, field)) => Err(at.err(&field, format!("{p:?} is not Best-Effort or Guaranteed"))),
    }
}

/// `spec.guarantee.percentage {dimensions, value}`: value in [0, 1] for each
/// listed dimension (cpu and memory when none are listed).
fn percentage(at: &At, v: &Value, annotations: &BTreeMap<String, String>) -> Result<BTreeMap<String, f64>> {
    let value = "spec.guarantee.percentage.value";
    let Some((text, field)) = spec_or_annotation(at, v, value, annotations, GUARANTEE_PERCENTAGE)? else {
        return Ok(BTreeMap::new());
    };
    let value = text.trim().parse::<f64>().ok().filter(|x| (0.0..=1.0).contains(x));
    let value = value.ok_or_else(|| at.err(&field, format!("{text:?} is not a number in [0, 1]")))?;
    let dims = "spec.guarantee.percentage.dimensions";
    let dims = spec_or_annotation(at, v, dims, annotations, GUARANTEE_DIMENSIONS)?.map(|(d, _)| d);
    let mut dims: Vec<String> =
        dims.iter().flat_map(|d| d.split(',')).map(str::trim).filter(|d| !d.is_empty()).map(String::from).collect();
    if dims.is_empty() {
        dims = vec!["cpu".into(), "memory".into()];
    }
    Ok(dims.into_iter().map(|d| (d, value)).collect())
}

/// The pod's `tephra.io/estimated-running-duration`, in ms.
fn estimate(at: &At, annotations: &BTreeMap<String, String>) -> Result<Option<i64>> {
    annotations
        .get(ESTIMATE)
        .map(|s| {
            crate::config::duration_ms(s)
                .ok_or_else(|| at.err(&format!("metadata.annotations.{ESTIMATE}"), format!("{s:?} is not a duration")))
        })
        .transpose()
}

fn seq<'v>(at: &At, v: &'v Value, path: &str) -> Result<&'v [Value]> {
    match get(v, path) {
        None => Ok(&[]),
        Some(Value::Sequence(s)) => Ok(s),
        Some(_) => Err(at.err(path, "expected a list")),
    }
}

/// An RFC 3339 UTC time ("2024-01-02T03:04:05Z") from ms since the epoch.
pub fn format_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| format!("{ms}ms"))
}

/// Seconds since the Unix epoch of an RFC 3339 UTC time ("2024-01-02T03:04:05Z").
pub fn parse_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (mo + if mo > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(days * 86400 + h * 3600 + mi * 60 + se)
}

/// The metadata fields tephra reads.
struct Meta {
    name: String,
    namespace: String,
    annotations: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    /// Milliseconds since the epoch, or the document's position when unset.
    created: i64,
}

fn meta(at: &At, v: &Value, seqno: i64) -> Result<Meta> {
    let name = string(at, v, "metadata.name")?.ok_or_else(|| at.err("metadata.name", "missing"))?;
    let namespace = string(at, v, "metadata.namespace")?.unwrap_or_else(|| "default".into());
    let created = match string(at, v, "metadata.creationTimestamp")? {
        Some(t) => parse_time(&t).ok_or_else(|| at.err("metadata.creationTimestamp", "expected RFC 3339 time"))? * 1000,
        None => seqno,
    };
    let annotations = map(at, v, "metadata.annotations")?;
    crate::timelimit::check(&annotations).map_err(|(key, why)| at.err(&format!("metadata.annotations.{key}"), why))?;
    Ok(Meta { name, namespace, annotations, labels: map(at, v, "metadata.labels")?, created })
}

/// Reads the pod spec part shared by Pods and Volcano Job templates.
fn pod_spec(at: &At, spec: &Value, pod: &mut Pod) -> Result<()> {
    pod.active_deadline_ms = match int64(at, spec, "activeDeadlineSeconds")? {
        Some(s) if s > 0 && s <= i64::MAX / 1000 => Some(s * 1000),
        Some(s) => {
            return Err(at.err("spec.activeDeadlineSeconds", format!("{s} must be a positive number of seconds")))
        }
        None => None,
    };
    let mut total = ResourceList::new();
    for (i, c) in seq(at, spec, "containers")?.iter().enumerate() {
        let mut req = resources(at, c, "resources.limits").map_err(|e| anyhow!("{e} (containers[{i}])"))?;
        req.extend(resources(at, c, "resources.requests").map_err(|e| anyhow!("{e} (containers[{i}])"))?);
        for (k, v) in req {
            *total.entry(k).or_default() += v;
        }
    }
    for c in seq(at, spec, "initContainers")? {
        let mut req = resources(at, c, "resources.limits")?;
        req.extend(resources(at, c, "resources.requests")?);
        for (k, v) in req {
            let e = total.entry(k).or_default();
            *e = e.max(v);
        }
    }
    for (k, v) in resources(at, spec, "overhead")? {
        *total.entry(k).or_default() += v;
    }
    pod.requests = total;
    pod.scheduler_name = string(at, spec, "schedulerName")?.unwrap_or_else(|| "default-scheduler".into());
    pod.node = string(at, spec, "nodeName")?;
    pod.priority = int(at, spec, "priority")?.map(|p| p as i32);
    pod.priority_class = string(at, spec, "priorityClassName")?;
    pod.preempt_never = string(at, spec, "preemptionPolicy")?.as_deref() == Some("Never");
    placement(at, spec, pod)
}

/// A pod spec's placement rules (pod labels read already): node selector,
/// tolerations, affinity, spread, host ports, and what is not evaluated.
fn placement(at: &At, spec: &Value, pod: &mut Pod) -> Result<()> {
    pod.node_selector = map(at, spec, "nodeSelector")?;
    for (i, t) in seq(at, spec, "tolerations")?.iter().enumerate() {
        let f = |k: &str| string(at, t, k).map(Option::unwrap_or_default);
        let tol = Toleration { key: f("key")?, operator: f("operator")?, value: f("value")?, effect: f("effect")? };
        if !["", "Exists", "Equal"].contains(&tol.operator.as_str()) {
            return Err(at.err(
                &format!("spec.tolerations[{i}].operator"),
                format!("{:?} is not Exists or Equal", tol.operator),
            ));
        }
        pod.tolerations.push(tol);
    }
    pod.unevaluated = unevaluated(spec);
    rules::read(at, spec, pod)?;
    pod.images.clear();
    for list in ["initContainers", "containers"] {
        for c in seq(at, spec, list)? {
            pod.images.push(normalized_image(&string(at, c, "image")?.unwrap_or_default()));
        }
    }
    for (i, vol) in seq(at, spec, "volumes")?.iter().enumerate() {
        if let Some(claim) = string(at, vol, "persistentVolumeClaim.claimName")? {
            pod.claims.push(claim);
        } else if get(vol, "ephemeral").is_some() {
            let name = string(at, vol, "name")?.ok_or_else(|| at.err(&format!("spec.volumes[{i}].name"), "missing"))?;
            pod.claims.push(format!("{}-{name}", pod.name));
        }
    }
    Ok(())
}

/// kube-scheduler's image name for locality: `:latest` added when the name
/// has no tag (nor digest) after its last `/`.
fn normalized_image(name: &str) -> String {
    if name.rfind(':') <= name.rfind('/') {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// Reads the placement rules of `spec` (a PodSpec) into `pod`, whose labels
/// are set: for objects that are not whole manifests (scenario files).
/// Errors name `origin`, `object` and the field.
pub fn read_placement(origin: &str, object: &str, spec: &Value, pod: &mut Pod) -> Result<()> {
    placement(&At { origin, object: object.to_string() }, spec, pod)
}

/// The placement rules of a pod spec that tephra does not evaluate yet, by
/// field: a pod with any of them waits, never placed as if they were absent.
fn unevaluated(spec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let present = |path: &str| match get(spec, path) {
        Some(Value::Sequence(s)) => !s.is_empty(),
        Some(Value::Mapping(m)) => !m.is_empty(),
        Some(Value::Null) | None => false,
        Some(_) => true,
    };
    if present("resourceClaims") {
        out.push("spec.resourceClaims".into());
    }
    if present("schedulingGates") {
        out.push("spec.schedulingGates".into());
    }
    out
}

fn preemptable(annotations: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    annotations
        .get("volcano.sh/preemptable")
        .or_else(|| labels.get("volcano.sh/preemptable"))
        .is_none_or(|v| v != "false")
}

/// Parses every document of one file.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Timed>> {
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let v = Value::deserialize(doc).map_err(|e| anyhow!("{origin}: document {}: not valid YAML: {e}", i + 1))?;
        if v.is_null() {
            continue;
        }
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = get(&v, "metadata.name").and_then(Value::as_str).unwrap_or("?");
        let ns = get(&v, "metadata.namespace").and_then(Value::as_str);
        let object = match ns {
            Some(ns) => format!("{kind} {ns}/{name}"),
            None => format!("{kind} {name}"),
        };
        let at = At { origin, object };
        out.extend(parse_object(&at, &v, kind, i as i64)?);
    }
    Ok(out)
}

/// Reads one object fetched from the API server (converted to a YAML value),
/// with the same field rules and errors as a manifest document.
pub fn from_value(v: &Value, origin: &str) -> Result<Object> {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = get(v, "metadata.name").and_then(Value::as_str).unwrap_or("?");
    let object = match get(v, "metadata.namespace").and_then(Value::as_str) {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    let at = At { origin, object };
    let mut objects = parse_object(&at, v, kind, 0)?;
    match objects.pop() {
        Some(t) if objects.is_empty() => Ok(t.object),
        _ => Err(at.err("kind", "expected exactly one object")),
    }
}

fn parse_object(at: &At, v: &Value, kind: &str, seqno: i64) -> Result<Vec<Timed>> {
    let api = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let Meta { name, namespace, annotations, labels, created } = meta(at, v, seqno)?;
    let at_time = match annotations.get(ARRIVE_AT) {
        Some(s) => {
            s.parse::<f64>().map_err(|_| at.err(&format!("metadata.annotations.{ARRIVE_AT}"), "expected seconds"))?
        }
        None => 0.0,
    };
    let replicas = annotations.get(REPLICAS).cloned();
    let expect_api = |want: &str| -> Result<()> {
        if api != want {
            bail!("{}: {}: apiVersion: expected {want}, got {api:?}", at.origin, at.object);
        }
        Ok(())
    };
    let object = match kind {
        "Node" => {
            expect_api("v1")?;
            let mut allocatable = resources(at, v, "status.allocatable")?;
            if allocatable.is_empty() {
                allocatable = resources(at, v, "status.capacity")?;
            }
            let mut taints = Vec::new();
            for t in seq(at, v, "spec.taints")? {
                let f = |k: &str| string(at, t, k).map(Option::unwrap_or_default);
                taints.push(Taint { key: f("key")?, value: f("value")?, effect: f("effect")? });
            }
            let mut images = Vec::new();
            for (i, im) in seq(at, v, "status.images")?.iter().enumerate() {
                let names = seq(at, im, "names")?.iter().filter_map(crate::config::scalar_string).collect();
                let size = int64(at, im, "sizeBytes")?
                    .ok_or_else(|| at.err(&format!("status.images[{i}].sizeBytes"), "missing"))?;
                images.push((names, size as f64));
            }
            Object::Node(Node {
                name,
                allocatable,
                labels,
                taints,
                unschedulable: boolean(at, v, "spec.unschedulable")?.unwrap_or(false),
                images,
            })
        }
        "Queue" => {
            expect_api("scheduling.volcano.sh/v1beta1")?;
            let weight = int(at, v, "spec.weight")?.unwrap_or(1);
            if !(0..=65535).contains(&weight) {
                return Err(at.err("spec.weight", "must be between 0 and 65535"));
            }
            let state = match string(at, v, "status.state")?.as_deref() {
                None | Some("Open") => QueueState::Open,
                Some("Closed") => QueueState::Closed,
                Some("Closing") => QueueState::Closing,
                Some("Unknown") => QueueState::Unknown,
                Some(s) => return Err(at.err("status.state", format!("{s:?} is not Open, Closed, Closing or Unknown"))),
            };
            let mut affinity = BTreeMap::new();
            for (kind, path) in [
                ("required", "spec.affinity.nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
                ("preferred", "spec.affinity.nodeGroupAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
                ("anti-required", "spec.affinity.nodeGroupAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
                (
                    "anti-preferred",
                    "spec.affinity.nodeGroupAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution",
                ),
            ] {
                let groups: Vec<String> = seq(at, v, path)?.iter().filter_map(crate::config::scalar_string).collect();
                if !groups.is_empty() {
                    affinity.insert(kind.to_string(), groups);
                }
            }
            Object::Queue(Queue {
                name,
                weight: weight as f64,
                priority: int(at, v, "spec.priority")?.unwrap_or(0) as i32,
                parent: string(at, v, "spec.parent")?.filter(|p| !p.is_empty()),
                reclaimable: boolean(at, v, "spec.reclaimable")?.unwrap_or(true),
                state,
                capability: resources(at, v, "spec.capability")?,
                deserved: resources(at, v, "spec.deserved")?,
                guarantee: resources(at, v, "spec.guarantee.resource")?,
                guaranteed: guarantee_policy(at, v, &annotations)?,
                reserve_percentage: percentage(at, v, &annotations)?,
                annotations,
                affinity,
                created,
            })
        }
        "PodGroup" => {
            expect_api("scheduling.volcano.sh/v1beta1")?;
            let phase_s = string(at, v, "status.phase")?.unwrap_or_default();
            let phase =
                Phase::parse(&phase_s).ok_or_else(|| at.err("status.phase", format!("unknown phase {phase_s:?}")))?;
            let mut min_task_member = BTreeMap::new();
            for (role, n) in map(at, v, "spec.minTaskMember")? {
                let n = n.parse().map_err(|_| at.err(&format!("spec.minTaskMember.{role}"), "expected an integer"))?;
                min_task_member.insert(role, n);
            }
            Object::PodGroup(PodGroup {
                namespace,
                name,
                queue: string(at, v, "spec.queue")?.unwrap_or_else(|| "default".into()),
                min_member: count(at, v, "spec.minMember")?.unwrap_or(1),
                min_task_member,
                min_resources: get(v, "spec.minResources")
                    .map(|_| resources(at, v, "spec.minResources"))
                    .transpose()?,
                priority_class: string(at, v, "spec.priorityClassName")?,
                priority: None,
                phase,
                created,
                annotations,
                condition: None,
                job_templates: Vec::new(),
                network_topology: topology::network_topology(at, v, "spec.networkTopology")?,
                subgroups: topology::subgroups(at, v)?,
            })
        }
        "Pod" => {
            expect_api("v1")?;
            let phase_s = string(at, v, "status.phase")?.unwrap_or_default();
            let phase = PodPhase::parse(&phase_s)
                .ok_or_else(|| at.err("status.phase", format!("unknown phase {phase_s:?}")))?;
            let mut pod = Pod {
                namespace,
                name,
                group: annotations.get("scheduling.k8s.io/group-name").cloned(),
                phase,
                deleting: get(v, "metadata.deletionTimestamp").is_some(),
                preemptable: preemptable(&annotations, &labels),
                task_spec: annotations.get("volcano.sh/task-spec").cloned().unwrap_or_default(),
                nominated_node: string(at, v, "status.nominatedNodeName")?,
                created,
                // When the kubelet started it: time limits count from here.
                started: match string(at, v, "status.startTime")? {
                    None => None,
                    Some(t) => Some(
                        parse_time(&t)
                            .ok_or_else(|| at.err("status.startTime", format!("{t:?} is not an RFC 3339 time")))?
                            * 1000,
                    ),
                },
                ..Default::default()
            };
            pod.labels = labels;
            let spec = get(v, "spec").ok_or_else(|| at.err("spec", "missing"))?;
            pod_spec(at, spec, &mut pod)?;
            pod.estimated_ms = estimate(at, &annotations)?;
            pod.annotations = annotations;
            Object::Pod(Box::new(pod))
        }
        "Job" if api.starts_with("batch.volcano.sh/") => vcjob(at, v, name, namespace, annotations, created)?,
        "Deployment" | "ReplicaSet" | "StatefulSet" | "Job" | "CronJob" => {
            expect_api(if matches!(kind, "Job" | "CronJob") { "batch/v1" } else { "apps/v1" })?;
            workloads::read(at, v, kind, name, namespace, created)?
        }
        "PriorityClass" => {
            let value = int(at, v, "value")?.ok_or_else(|| at.err("value", "missing"))? as i32;
            Object::PriorityClass(
                name,
                PriorityClass {
                    value,
                    global_default: boolean(at, v, "globalDefault")?.unwrap_or(false),
                    preempt_never: string(at, v, "preemptionPolicy")?.as_deref() == Some("Never"),
                },
            )
        }
        "Namespace" => {
            expect_api("v1")?;
            Object::Namespace(name, labels)
        }
        "HyperNode" => {
            expect_api("topology.volcano.sh/v1alpha1")?;
            Object::HyperNode(topology::hypernode(at, v, name)?)
        }
        "Reservation" => {
            expect_api(crate::window::API_VERSION)?;
            Object::Reservation(window::reservation(at, v, name)?)
        }
        "PersistentVolumeClaim" => {
            expect_api("v1")?;
            // Bound: `spec.volumeName` once the binder set it, and phase Bound.
            let bound = string(at, v, "status.phase")?.as_deref() == Some("Bound");
            let volume = string(at, v, "spec.volumeName")?.filter(|n| bound && !n.is_empty());
            Object::Claim(format!("{namespace}/{name}"), Claim { volume })
        }
        "PersistentVolume" => {
            expect_api("v1")?;
            let path = "spec.nodeAffinity.required.nodeSelectorTerms";
            let mut affinity = Vec::new();
            for (i, term) in seq(at, v, path)?.iter().enumerate() {
                affinity.push(rules::node_term(at, term, &format!("{path}[{i}]"))?);
            }
            let csi = match (string(at, v, "spec.csi.driver")?, string(at, v, "spec.csi.volumeHandle")?) {
                (Some(driver), Some(handle)) => Some((driver, handle)),
                _ => None,
            };
            Object::Volume(name, Volume { affinity, csi })
        }
        "CSINode" => {
            expect_api("storage.k8s.io/v1")?;
            let mut limits = BTreeMap::new();
            for (i, d) in seq(at, v, "spec.drivers")?.iter().enumerate() {
                let driver =
                    string(at, d, "name")?.ok_or_else(|| at.err(&format!("spec.drivers[{i}].name"), "missing"))?;
                if let Some(count) = int(at, d, "allocatable.count")? {
                    let count = u32::try_from(count).map_err(|_| {
                        at.err(&format!("spec.drivers[{i}].allocatable.count"), format!("{count} is not a count"))
                    })?;
                    limits.insert(driver, count);
                }
            }
            Object::AttachLimits(name, limits)
        }
        "ConfigMap" => match v.get("data").and_then(|d| d.get("volcano-scheduler.conf")).and_then(Value::as_str) {
            Some(text) => Object::Config(SchedulerConfig::parse(
                text,
                &format!("{}: {}: data.volcano-scheduler.conf", at.origin, at.object),
            )?),
            None => return Err(at.err("data", "a ConfigMap here must hold volcano-scheduler.conf")),
        },
        other => bail!(
            "{}: {}: kind {other:?} of apiVersion {api:?} is not supported (supported: v1 Node, Pod, \
             Namespace, PersistentVolumeClaim, PersistentVolume, ConfigMap; apps/v1 Deployment, ReplicaSet, \
             StatefulSet; batch/v1 Job, CronJob; storage.k8s.io/v1 CSINode; \
             scheduling.volcano.sh/v1beta1 Queue, PodGroup; batch.volcano.sh/v1alpha1 Job; \
             topology.volcano.sh/v1alpha1 HyperNode; scheduling.k8s.io/v1 PriorityClass; \
             tephra.io/v1alpha1 Reservation)",
            at.origin,
            at.object
        ),
    };
    if let (Object::Node(node), Some(n)) = (&object, replicas) {
        let n: u32 =
            n.parse().ok().filter(|&n| (1..=NODES_MAX).contains(&n)).ok_or_else(|| {
                at.err(&format!("metadata.annotations.{REPLICAS}"), format!("expected 1 to {NODES_MAX}"))
            })?;
        let copies = (0..n).map(|i| {
            let mut copy = Node { name: format!("{}-{i}", node.name), ..node.clone() };
            // Each copy is its own host.
            if copy.labels.get("kubernetes.io/hostname") == Some(&node.name) {
                copy.labels.insert("kubernetes.io/hostname".into(), copy.name.clone());
            }
            copy
        });
        return Ok(copies.map(|node| Timed { at: at_time, object: Object::Node(node) }).collect());
    }
    Ok(vec![Timed { at: at_time, object }])
}

/// The most nodes one Node object may stand for.
const NODES_MAX: u32 = 100_000;

/// A Volcano Job becomes a PodGroup carrying its pod templates; the simulated
/// job controller creates the pods once the group is admitted.
fn vcjob(
    at: &At,
    v: &Value,
    name: String,
    namespace: String,
    annotations: BTreeMap<String, String>,
    created: i64,
) -> Result<Object> {
    let queue = string(at, v, "spec.queue")?.unwrap_or_else(|| "default".into());
    let scheduler = string(at, v, "spec.schedulerName")?.unwrap_or_else(|| "volcano".into());
    let mut templates = Vec::new();
    let mut min_task_member = BTreeMap::new();
    let mut subgroups = Vec::new();
    let mut default_min = 0;
    for (ti, task) in seq(at, v, "spec.tasks")?.iter().enumerate() {
        let tname = string(at, task, "name")?.unwrap_or_else(|| format!("default{ti}"));
        let tat = At { origin: at.origin, object: format!("{} task {tname}", at.object) };
        let replicas = count(&tat, task, "replicas")?.unwrap_or(1);
        let partition = topology::partition(&tat, task, &tname, replicas)?;
        let implied = partition.as_ref().and_then(|(_, m)| *m);
        if let Some(m) = count(&tat, task, "minAvailable")?.or(implied) {
            min_task_member.insert(tname.clone(), m);
        }
        let size = partition.as_ref().map(|(p, _)| p.size);
        // Volcano's admission: a job without minAvailable needs the sum of
        // its tasks' (each its replicas unless set or implied).
        default_min += min_task_member.get(&tname).copied().unwrap_or(replicas);
        subgroups.extend(partition.map(|(p, _)| p));
        if templates.len() as u64 + u64::from(replicas) > JOB_PODS_MAX {
            let why = format!("the job's tasks add up to more than {JOB_PODS_MAX} pods, the simulator's limit");
            return Err(tat.err("replicas", why));
        }
        let tpl = get(task, "template").ok_or_else(|| at.err(&format!("spec.tasks[{ti}].template"), "missing"))?;
        for i in 0..replicas {
            let mut pod = Pod {
                namespace: namespace.clone(),
                name: format!("{name}-{tname}-{i}"),
                group: Some(name.clone()),
                task_spec: tname.clone(),
                created: created + i64::from(i),
                ..Default::default()
            };
            pod.annotations = map(&tat, tpl, "metadata.annotations")?;
            pod.estimated_ms = estimate(&tat, &pod.annotations)?;
            pod.labels = map(&tat, tpl, "metadata.labels")?;
            if let Some(size) = size {
                pod.labels.insert(topology::TASK_SPEC.into(), tname.clone());
                pod.labels.insert(topology::PARTITION_ID.into(), (i / size).to_string());
            }
            pod.preemptable = preemptable(&pod.annotations, &pod.labels);
            let spec = get(tpl, "spec").ok_or_else(|| tat.err("template.spec", "missing"))?;
            pod_spec(&tat, spec, &mut pod)?;
            pod.scheduler_name = scheduler.clone();
            for (k, val) in [
                ("scheduling.k8s.io/group-name", name.clone()),
                ("volcano.sh/job-name", name.clone()),
                ("volcano.sh/task-spec", tname.clone()),
                ("volcano.sh/task-index", i.to_string()),
                ("volcano.sh/queue-name", queue.clone()),
            ] {
                pod.annotations.insert(k.into(), val);
            }
            templates.push(pod);
        }
    }
    if templates.is_empty() {
        return Err(at.err("spec.tasks", "a Volcano Job needs at least one task with replicas"));
    }
    let min_member = count(at, v, "spec.minAvailable")?.unwrap_or(default_min);
    let mut min_resources = ResourceList::new();
    for p in templates.iter().take(min_member as usize) {
        for (k, q) in &p.requests {
            *min_resources.entry(k.clone()).or_default() += q;
        }
    }
    Ok(Object::PodGroup(PodGroup {
        namespace,
        name,
        queue,
        min_member,
        min_task_member,
        min_resources: Some(min_resources),
        priority_class: string(at, v, "spec.priorityClassName")?,
        priority: None,
        phase: Phase::Pending,
        created,
        annotations,
        condition: None,
        job_templates: templates,
        network_topology: topology::network_topology(at, v, "spec.networkTopology")?,
        subgroups,
    }))
}

/// A PodGroup spec's `networkTopology` and `subGroupPolicy` (for scenario
/// files, which give PodGroups in short form); `object` names it in errors.
pub fn podgroup_topology(
    spec: &Value,
    origin: &str,
    object: &str,
) -> Result<(Option<crate::topology::NetworkTopology>, Vec<crate::topology::SubGroupPolicy>)> {
    let at = At { origin, object: object.to_string() };
    let v = Value::Mapping([(Value::from("spec"), spec.clone())].into_iter().collect());
    Ok((topology::network_topology(&at, &v, "spec.networkTopology")?, topology::subgroups(&at, &v)?))
}

/// Reads and parses files (manifests, or traces ending in `.csv`); a
/// missing or unreadable file is an error naming it.
pub fn load(paths: &[std::path::PathBuf]) -> Result<Vec<Timed>> {
    let mut out = Vec::new();
    // The same object twice at the same moment is a mistake (a later
    // arrival replacing it is an update): first seen where.
    let mut seen: std::collections::HashMap<(&'static str, String, u64), String> = Default::default();
    for p in paths {
        let text = crate::files::read_text(p)?;
        let origin = p.display().to_string();
        // A `.csv` file is a workload trace (crate::trace).
        let objects = match p.extension().and_then(|e| e.to_str()) {
            Some("csv") => crate::trace::objects(&crate::trace::read(&text, &origin)?)?,
            _ => parse(&text, &origin)?,
        };
        for t in objects {
            if let Some((kind, name)) = t.object.identity() {
                if let Some(first) = seen.insert((kind, name.clone(), t.at.to_bits()), origin.clone()) {
                    let also = if first == origin {
                        "earlier in the same file".to_string()
                    } else {
                        format!("also in {first}")
                    };
                    bail!("{origin}: {kind} {name}: defined twice ({also})");
                }
            }
            out.push(t);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_rules_not_evaluated_are_listed() {
        let pod = |spec: &str| {
            let text = format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns}}\nspec:\n{spec}");
            match parse(&text, "t.yaml").unwrap().remove(0).object {
                Object::Pod(p) => p.unevaluated,
                _ => unreachable!(),
            }
        };
        let plain = "  containers: [{name: c, ports: [{containerPort: 80}]}]\n";
        assert!(pod(plain).is_empty());
        let hard = "  containers: [{name: c, ports: [{containerPort: 80, hostPort: 80}]}]
  topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone}]
  affinity:
    podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: h}]}
  volumes: [{name: v, persistentVolumeClaim: {claimName: c}}]
  resourceClaims: [{name: gpu}]
  schedulingGates: [{name: wait}]
";
        assert_eq!(
            pod(hard),
            ["spec.resourceClaims", "spec.schedulingGates"],
            "the rules tephra evaluates are not listed"
        );
    }

    #[test]
    fn claims_and_volumes_are_read() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}
spec:
  containers: [{name: c}]
  volumes:
  - {name: a, persistentVolumeClaim: {claimName: data}}
  - {name: scratch, ephemeral: {volumeClaimTemplate: {spec: {}}}}
  - {name: e, emptyDir: {}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: ns}
spec: {volumeName: pv1}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: later, namespace: ns}
spec: {volumeName: pv2}
status: {phase: Pending}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec:
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}
";
        let objs: Vec<Object> = parse(text, "t.yaml").unwrap().into_iter().map(|t| t.object).collect();
        let Object::Pod(p) = &objs[0] else { panic!() };
        assert_eq!(p.claims, ["data", "p-scratch"]);
        assert!(matches!(&objs[1], Object::Claim(k, Claim { volume: Some(v) }) if k == "ns/data" && v == "pv1"));
        assert!(matches!(&objs[2], Object::Claim(k, Claim { volume: None }) if k == "ns/later"));
        let Object::Volume(name, v) = &objs[3] else { panic!() };
        assert_eq!((name.as_str(), v.affinity.len(), v.affinity[0][0].key.as_str()), ("pv1", 1, "zone"));
        let bad = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: z, operator: Near}]}]}}\n";
        let err = parse(bad, "t.yaml").unwrap_err().to_string();
        assert!(err.starts_with("t.yaml: PersistentVolume pv: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: "), "{err}");
    }

    #[test]
    fn placement_rules_are_read_with_label_keys_merged() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, labels: {app: web, rev: r7}}
spec:
  containers: [{name: c, ports: [{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.1}, {containerPort: 81}]}]
  initContainers: [{name: s, restartPolicy: Always, ports: [{containerPort: 90, hostPort: 90, protocol: UDP}]}]
  topologySpreadConstraints:
  - {maxSkew: 2, topologyKey: zone, minDomains: 3, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [rev, absent]}
  - {maxSkew: 1, topologyKey: host, whenUnsatisfiable: ScheduleAnyway, nodeTaintsPolicy: Honor}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]
      preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, preference: {matchExpressions: [{key: gpu, operator: Exists}]}}]
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: h, labelSelector: {matchLabels: {app: web}}, mismatchLabelKeys: [rev], namespaceSelector: {}}
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 10, podAffinityTerm: {topologyKey: zone, namespaces: [other]}}
";
        let Object::Pod(p) = parse(text, "t.yaml").unwrap().remove(0).object else { unreachable!() };
        let e = |k: &str, op: &str, v: &[&str]| MatchExpr {
            key: k.into(),
            operator: op.into(),
            values: v.iter().map(|s| s.to_string()).collect(),
            field: false,
        };
        assert_eq!(p.affinity, [vec![MatchExpr { field: true, ..e("metadata.name", "In", &["n1"]) }]]);
        assert_eq!(p.preferred, [(5, vec![e("gpu", "Exists", &[])])]);
        let ports: Vec<(u32, &str, &str)> =
            p.ports.iter().map(|h| (h.port, h.protocol.as_str(), h.ip.as_str())).collect();
        assert_eq!(ports, [(8080, "TCP", "10.0.0.1"), (90, "UDP", "0.0.0.0")]);
        assert_eq!(p.spread.len(), 2);
        assert_eq!(p.spread[0].selector, Some(vec![e("app", "In", &["web"]), e("rev", "In", &["r7"])]));
        assert!(p.spread[0].hard && p.spread[0].honor_affinity && !p.spread[0].honor_taints);
        assert_eq!((p.spread[0].min_domains, p.spread[0].max_skew), (3, 2));
        assert!(!p.spread[1].hard && p.spread[1].honor_taints && p.spread[1].selector.is_none());
        let anti = &p.pod_terms[0];
        assert!(anti.anti && anti.weight == 0 && anti.namespace_selector == Some(vec![]));
        assert_eq!(anti.selector, Some(vec![e("app", "In", &["web"]), e("rev", "NotIn", &["r7"])]));
        let soft = &p.pod_terms[1];
        assert_eq!(
            (soft.weight, soft.selector.is_none(), soft.namespaces.as_slice()),
            (10, true, &["other".to_string()][..])
        );

        for (spec, field) in [
            ("topologySpreadConstraints: [{maxSkew: 0, topologyKey: z}]", "spec.topologySpreadConstraints[0].maxSkew"),
            ("topologySpreadConstraints: [{maxSkew: 1}]", "spec.topologySpreadConstraints[0].topologyKey"),
            (
                "topologySpreadConstraints: [{maxSkew: 1, topologyKey: z, whenUnsatisfiable: Never}]",
                "spec.topologySpreadConstraints[0].whenUnsatisfiable",
            ),
            (
                "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {}}]}}",
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
            ),
            (
                "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: h, labelSelector: {matchExpressions: [{key: a, operator: Gt, values: ['1']}]}}]}}",
                "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator",
            ),
            ("containers: [{name: c, ports: [{hostPort: 70000}]}]", "spec.containers[0].ports[0].hostPort"),
        ] {
            let text = format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns}}\nspec:\n  {spec}\n");
            let err = parse(&text, "t.yaml").unwrap_err().to_string();
            assert!(err.starts_with(&format!("t.yaml: Pod ns/p: {field}: ")), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }

    /// Seed 000's policy and percentage from the spec or, where a Queue CRD
    /// pruned them, from annotations; both given must agree.
    #[test]
    fn guarantee_policy_and_percentage_from_spec_or_annotations() {
        let queue = |meta: &str, guarantee: &str| {
            let text = format!(
                "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: q{meta}}}\nspec: {{weight: 1, guarantee: {{{guarantee}}}}}\n"
            );
            parse(&text, "q.yaml").map(|mut o| match o.pop().map(|t| t.object) {
                Some(Object::Queue(q)) => q,
                _ => unreachable!(),
            })
        };
        let spec = queue("", "policy: Guaranteed, percentage: {value: 0.3, dimensions: [cpu]}").unwrap();
        assert!(spec.guaranteed);
        assert_eq!(spec.reserve_percentage, [("cpu".to_string(), 0.3)].into());
        let ann = ", annotations: {tephra.io/guarantee-policy: Guaranteed, tephra.io/guarantee-percentage: '0.3', tephra.io/guarantee-percentage-dimensions: 'cpu, nvidia.com/gpu'}";
        let pruned = queue(ann, "resource: {cpu: '1'}").unwrap();
        assert!(pruned.guaranteed);
        assert_eq!(pruned.reserve_percentage, [("cpu".to_string(), 0.3), ("nvidia.com/gpu".to_string(), 0.3)].into());
        // Agreeing is fine; disagreeing names both.
        assert!(queue(ann, "policy: Guaranteed").unwrap().guaranteed);
        let e = queue(ann, "policy: Best-Effort").unwrap_err().to_string();
        assert!(e.contains("q.yaml: Queue q: spec.guarantee.policy: \"Best-Effort\" differs from annotation tephra.io/guarantee-policy: \"Guaranteed\""), "{e}");
        let e = queue(", annotations: {tephra.io/guarantee-percentage: lots}", "").unwrap_err().to_string();
        assert!(
            e.contains("metadata.annotations.tephra.io/guarantee-percentage: \"lots\" is not a number in [0, 1]"),
            "{e}"
        );
    }

    #[test]
    fn reads_volcano_yaml() {
        let text = r#"
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec: {weight: 3, capability: {cpu: "2"}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j1, namespace: ns}
spec:
  minAvailable: 2
  queue: q1
  tasks:
  - name: worker
    replicas: 3
    template:
      spec:
        containers:
        - name: c
          resources: {requests: {cpu: 500m}}
"#;
        let objs = parse(text, "f.yaml").unwrap();
        assert_eq!(objs.len(), 3);
        let Object::PodGroup(g) = &objs[2].object else { panic!() };
        assert_eq!(g.job_templates.len(), 3);
        assert_eq!(g.min_member, 2);
        assert_eq!(g.min_resources.as_ref().unwrap()["cpu"], 1000.0);
        assert_eq!(g.job_templates[1].name, "j1-worker-1");
        let Object::Queue(q) = &objs[1].object else { panic!() };
        assert_eq!(q.capability["cpu"], 2000.0);
    }

    #[test]
    fn errors_name_file_object_field() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n  - resources: {requests: {cpu: lots}}\n";
        let e = parse(text, "pods.yaml").unwrap_err().to_string();
        assert!(e.starts_with("pods.yaml: Pod ns/p: resources.requests.cpu: invalid quantity"), "{e}");
        let e = parse("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", "x.yaml").unwrap_err().to_string();
        assert!(e.contains("x.yaml: Service s: kind \"Service\" of apiVersion \"v1\" is not supported"), "{e}");
        // A Kubernetes Job is read as one (its template is needed), not as a Volcano Job.
        let e = parse("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ns}\n", "j.yaml")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "j.yaml: Job ns/j: spec.template: missing");
        let e = parse("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d, namespace: ns}\n", "d.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("kind \"DaemonSet\" of apiVersion \"apps/v1\" is not supported"), "{e}");
        assert!(e.contains("batch/v1 Job") && e.contains("batch.volcano.sh/v1alpha1 Job"), "{e}");
        let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ns}\n\
                   spec: {completionMode: Sometimes, template: {spec: {containers: []}}}\n";
        let e = parse(job, "j.yaml").unwrap_err().to_string();
        assert_eq!(e, "j.yaml: Job ns/j: spec.completionMode: \"Sometimes\" is not NonIndexed or Indexed");
        let cron = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c, namespace: ns}\n\
                    spec: {schedule: \"every day\", jobTemplate: {spec: {template: {spec: {containers: []}}}}}\n";
        let e = parse(cron, "c.yaml").unwrap_err().to_string();
        assert!(e.starts_with("c.yaml: CronJob ns/c: spec.schedule: \"every day\" is not a cron schedule"), "{e}");
        let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n, annotations: {tephra.io/replicas: \"0\"}}\n";
        let e = parse(node, "n.yaml").unwrap_err().to_string();
        assert_eq!(e, "n.yaml: Node n: metadata.annotations.tephra.io/replicas: expected 1 to 100000");
    }

    #[test]
    fn rfc3339() {
        assert_eq!(parse_time("1970-01-02T00:00:00Z"), Some(86400));
        assert_eq!(parse_time("2024-03-01T00:00:00Z"), Some(1709251200));
    }
}
