//! Plugin objects (`plugins.tephra.io`): policy rollouts declared in the
//! cluster. One object per plugin says where its component comes from (an
//! OCI reference pinned by digest, or a ConfigMap or Secret key), whether it
//! runs live or as a shadow, when a shadow is promoted and when a live
//! version is rolled back. Every replica pulls and compiles what the objects
//! declare (a follower is warm when it takes over); the leader writes
//! status and Events.
//!
//! Phases: `Pulling` (fetching the component), `Staged` (compiling and
//! validating), `Shadowing`, `Live`, `Failed` (the running version stays),
//! `RolledBack`.

use crate::events::{self, Kind};
use crate::oci;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::Client;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use tephra_scheduler::rollout::{Change, Rolled, Rollout};
use tephra_scheduler::Cycle;
use tokio::sync::mpsc;

/// The API group and version of the `Plugin` kind.
pub const PLUGIN_API: &str = "tephra.io/v1alpha1";

/// A failed pull is tried again after this, then twice as long each time, up to the max.
const PULL_RETRY_FIRST: std::time::Duration = std::time::Duration::from_secs(10);
const PULL_RETRY_MAX: std::time::Duration = std::time::Duration::from_secs(300);

/// `tephra.io/v1alpha1` Plugin (cluster-scoped).
pub fn plugin_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("tephra.io", "v1alpha1", "Plugin"), "plugins")
}

/// Where a component comes from.
#[derive(Clone, Debug, PartialEq)]
enum Source {
    Oci { reference: String, pull_secret: Option<(String, String)>, insecure: bool },
    ConfigMap { namespace: String, name: String, key: String },
    Secret { namespace: String, name: String, key: String },
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Source::Oci { reference, .. } => reference.clone(),
            Source::ConfigMap { namespace, name, key } => format!("ConfigMap {namespace}/{name} key {key}"),
            Source::Secret { namespace, name, key } => format!("Secret {namespace}/{name} key {key}"),
        }
    }
}

/// A Plugin object's spec, read.
#[derive(Clone, Debug, PartialEq)]
struct Spec {
    plugin: String,
    source: Source,
    shadow: bool,
    automatic: bool,
    cycles: u64,
    max_diffs: u64,
    rollback_after: u32,
}

fn text(v: &Value, field: &str) -> Result<String, String> {
    v.get(field).and_then(Value::as_str).map(String::from).ok_or_else(|| format!("{field} is required"))
}

/// Reads `spec`; the error names the field.
fn read_spec(spec: &Value) -> Result<Spec, String> {
    let plugin = text(spec, "plugin").map_err(|e| format!("spec.{e}"))?;
    let src = &spec["source"];
    let named = |kind: &str| -> Result<(String, String, String), String> {
        let v = &src[kind];
        let f = |k: &str| text(v, k).map_err(|e| format!("spec.source.{kind}.{e}"));
        Ok((f("namespace")?, f("name")?, f("key")?))
    };
    let source = match (src.get("oci"), src.get("configMap"), src.get("secret")) {
        (Some(o), None, None) => {
            let reference = text(o, "reference").map_err(|e| format!("spec.source.oci.{e}"))?;
            oci::pinned(&reference).map_err(|e| format!("spec.source.oci.reference: {e}"))?;
            let pull_secret = match o.get("pullSecret") {
                Some(s) => Some((
                    text(s, "namespace").map_err(|e| format!("spec.source.oci.pullSecret.{e}"))?,
                    text(s, "name").map_err(|e| format!("spec.source.oci.pullSecret.{e}"))?,
                )),
                None => None,
            };
            Source::Oci { reference, pull_secret, insecure: o["insecure"].as_bool().unwrap_or(false) }
        }
        (None, Some(_), None) => {
            let (namespace, name, key) = named("configMap")?;
            Source::ConfigMap { namespace, name, key }
        }
        (None, None, Some(_)) => {
            let (namespace, name, key) = named("secret")?;
            Source::Secret { namespace, name, key }
        }
        _ => return Err("spec.source: exactly one of oci, configMap, secret".into()),
    };
    let shadow = match spec["mode"].as_str().unwrap_or("live") {
        "live" => false,
        "shadow" => true,
        other => return Err(format!("spec.mode: {other:?} is not live or shadow")),
    };
    let p = &spec["promotion"];
    let automatic = match p["policy"].as_str().unwrap_or("manual") {
        "manual" => false,
        "automatic" => true,
        other => return Err(format!("spec.promotion.policy: {other:?} is not manual or automatic")),
    };
    let count = |v: &Value, dflt: u64| v.as_u64().unwrap_or(dflt);
    Ok(Spec {
        plugin,
        source,
        shadow,
        automatic,
        cycles: count(&p["cycles"], 10).max(1),
        max_diffs: count(&p["maxDecisionDiffs"], 0),
        rollback_after: count(&spec["rollback"]["afterFaultyCycles"], 3).clamp(1, 1000) as u32,
    })
}

/// What the driver knows of one object.
#[derive(Default)]
struct Tracked {
    uid: String,
    generation: i64,
    spec: Option<Spec>,
    /// The source last fetched (or being fetched), and its content hash once landed.
    fetched: Option<Source>,
    phase: &'static str,
    hash: Option<String>,
    diffs: u64,
    faults: u64,
    shadow_cycles: u64,
    streak: u32,
    /// The condition: (status, reason, message).
    condition: (&'static str, String, String),
    /// Where the spec and what runs disagree (an admin act overrode it):
    /// the `Drifted` condition's message.
    drift: Option<String>,
    /// Status to write, and an Event (kind, reason) for the condition.
    dirty: bool,
    events: Vec<(Kind, String, String)>,
    /// A failed pull is tried again from then, with the wait doubling.
    retry: Option<(std::time::Instant, std::time::Duration)>,
}

impl Tracked {
    /// The `Drifted` condition, set (with the Event it deserves) or cleared.
    fn drifted(&mut self, drift: Option<String>) {
        if self.drift != drift {
            if let Some(m) = &drift {
                self.events.push((Kind::Normal, "Drifted".into(), m.clone()));
            }
            self.drift = drift;
            self.dirty = true;
        }
    }

    fn set(&mut self, phase: &'static str, ok: bool, reason: &str, message: String) {
        let kind = if ok { Kind::Normal } else { Kind::Warning };
        self.phase = phase;
        self.events.push((kind, reason.into(), message.clone()));
        self.condition = (if ok { "True" } else { "False" }, reason.into(), message);
        self.dirty = true;
    }
}

/// A component fetched for an object at a generation.
struct Fetched {
    name: String,
    generation: i64,
    result: Result<Vec<u8>, String>,
}

/// The Plugin objects and what became of each.
pub struct Rollouts {
    client: Client,
    store: Store<DynamicObject>,
    objects: BTreeMap<String, Tracked>,
    tx: mpsc::UnboundedSender<Fetched>,
    rx: mpsc::UnboundedReceiver<Fetched>,
    ready: Vec<Rollout>,
    /// The live version of each plugin after the latest cycle.
    live: BTreeMap<String, String>,
}

/// A change for object `name`'s plugin, declared by it at `generation`.
fn rollout(name: &str, generation: i64, s: &Spec, change: Change) -> Rollout {
    Rollout {
        key: name.to_string(),
        plugin: s.plugin.clone(),
        origin: s.source.describe(),
        source: format!("Plugin {name}"),
        declaration: format!("Plugin {name}@{generation}"),
        change,
    }
}

impl Rollouts {
    /// Carries out the Plugin objects `store` holds, through `client`.
    pub fn new(client: Client, store: Store<DynamicObject>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Rollouts { client, store, objects: BTreeMap::new(), tx, rx, ready: Vec::new(), live: BTreeMap::new() }
    }

    /// Looks at the objects (on the driver's runtime: fetches start there);
    /// the changes to hand to the loop. A follower (`leader` false) also
    /// follows the leader's own decisions, read from the status it wrote: an
    /// automatic promotion, a rollback.
    pub fn sync(&mut self, leader: bool) -> Vec<Rollout> {
        let live: Vec<std::sync::Arc<DynamicObject>> = self.store.state();
        let names: Vec<String> = live.iter().filter_map(|o| o.metadata.name.clone()).collect();
        // A deleted object declares nothing any more; what runs stays.
        for (name, t) in self.objects.iter().filter(|(n, _)| !names.contains(n)) {
            if let Some(s) = &t.spec {
                self.ready.push(rollout(name, t.generation, s, Change::Undeclare));
            }
        }
        self.objects.retain(|n, _| names.contains(n));
        // Oldest first: of two objects claiming one plugin, the older keeps it.
        let mut sorted = live;
        sorted.sort_by_key(|o| (o.metadata.creation_timestamp.clone().map(|t| t.0), o.metadata.name.clone()));
        let mut claimed: BTreeMap<String, String> = BTreeMap::new();
        for o in sorted {
            let Some(name) = o.metadata.name.clone() else { continue };
            let generation = o.metadata.generation.unwrap_or(0);
            let t = self.objects.entry(name.clone()).or_default();
            t.uid = o.metadata.uid.clone().unwrap_or_default();
            let spec = read_spec(&o.data["spec"]);
            if let Ok(s) = &spec {
                if let Some(other) = claimed.get(&s.plugin).filter(|o| **o != name) {
                    if t.phase != "Failed" || t.generation != generation {
                        t.generation = generation;
                        t.spec = None;
                        let m = format!("plugin {} is already claimed by Plugin {other}", s.plugin);
                        t.set("Failed", false, "Conflict", m);
                    }
                    continue;
                }
                claimed.insert(s.plugin.clone(), name.clone());
            }
            // Unchanged, unless it just lost a conflict's other party or a pull is due again.
            let freed = t.spec.is_none() && spec.is_ok() && t.condition.1 == "Conflict";
            let due = t.retry.is_some_and(|(at, _)| std::time::Instant::now() >= at);
            if t.generation == generation && !t.phase.is_empty() && !freed && !due {
                if !leader {
                    if let Some(r) = follow(&name, t, &o.data["status"]) {
                        self.ready.push(r);
                    }
                }
                continue;
            }
            if due {
                t.fetched = None;
            }
            if t.generation != generation {
                t.retry = None;
            }
            t.generation = generation;
            match spec {
                Err(e) => {
                    t.spec = None;
                    t.set("Failed", false, "InvalidSpec", e);
                }
                Ok(s) => {
                    let before = t.spec.replace(s.clone());
                    let promote = before.as_ref().is_some_and(|b| b.shadow && !s.shadow && b.source == s.source)
                        && t.phase == "Shadowing";
                    // The spec now says what already runs (an admin promoted
                    // its shadow, or rolled it forward): nothing to do.
                    let runs = !s.shadow
                        && t.fetched.as_ref() == Some(&s.source)
                        && t.hash.is_some()
                        && self.live.get(&s.plugin) == t.hash.as_ref();
                    if runs {
                        let hash = t.hash.clone().unwrap_or_default();
                        t.set("Live", true, "Live", format!("version {hash} of {} is live (it already ran)", s.plugin));
                        t.drifted(None);
                    } else if promote {
                        self.ready.push(rollout(&name, generation, &s, Change::Promote));
                        t.set("Staged", true, "Promoting", format!("promoting the shadow of {}", s.plugin));
                    } else if t.fetched.as_ref() != Some(&s.source)
                        || before.as_ref().map(|b| b.shadow) != Some(s.shadow)
                    {
                        t.fetched = Some(s.source.clone());
                        t.set("Pulling", true, "Pulling", format!("fetching {}", s.source.describe()));
                        fetch(self.client.clone(), self.tx.clone(), name.clone(), generation, s.source.clone());
                    }
                }
            }
        }
        while let Ok(f) = self.rx.try_recv() {
            let Some(t) = self.objects.get_mut(&f.name).filter(|t| t.generation == f.generation) else { continue };
            let Some(s) = t.spec.clone() else { continue };
            match f.result {
                Err(e) => {
                    let wait = t.retry.map_or(PULL_RETRY_FIRST, |(_, w)| (w * 2).min(PULL_RETRY_MAX));
                    t.retry = Some((std::time::Instant::now() + wait, wait));
                    t.set("Failed", false, "PullFailed", format!("{e}; trying again in {}s", wait.as_secs()));
                }
                Ok(bytes) => {
                    t.retry = None;
                    let change = if s.shadow { Change::Shadow { bytes } } else { Change::Live { bytes } };
                    self.ready.push(rollout(&f.name, f.generation, &s, change));
                    t.set("Staged", true, "Staged", format!("compiling and validating {}", s.source.describe()));
                }
            }
        }
        std::mem::take(&mut self.ready)
    }

    /// What the loop did with the changes.
    pub fn rolled(&mut self, done: Vec<Rolled>) {
        for d in done {
            let Some(t) = self.objects.get_mut(&d.key) else { continue };
            let Some(s) = t.spec.clone() else { continue };
            if let (Ok(hash), Some(act)) = (&d.result, &d.held_by) {
                // Kept out by an admin decision made over this very spec.
                t.hash = Some(hash.clone());
                let m = format!("version {hash} of {} is held, not run: {}", s.plugin, act.describe());
                t.set("RolledBack", false, "RolledBack", m);
                let why = format!("spec declares version {hash} live; {} runs ({})", act.version, act.describe());
                t.drifted(Some(why));
                continue;
            }
            match d.result {
                Err(e) => t.set("Failed", false, "Rejected", format!("{e}; the running version stays")),
                Ok(hash) if t.phase == "Staged" && s.shadow && t.condition.1 != "Promoting" => {
                    t.hash = Some(hash.clone());
                    (t.diffs, t.faults, t.shadow_cycles) = (0, 0, 0);
                    t.set("Shadowing", true, "Shadowing", format!("version {hash} runs as the shadow of {}", s.plugin));
                }
                Ok(hash) if t.condition.1 == "RollingBack" => {
                    t.set("RolledBack", false, "RolledBack", format!("{} rolled back to version {hash}", s.plugin));
                }
                Ok(hash) => {
                    t.hash = Some(hash.clone());
                    t.streak = 0;
                    t.set("Live", true, "Live", format!("version {hash} of {} is live", s.plugin));
                    t.drifted(None);
                }
            }
        }
    }

    /// After a cycle: shadow differences and faults counted; automatic
    /// promotion and rollback decided (they land at the next boundary).
    pub fn observe(&mut self, cycle: &Cycle<'_>) {
        self.live = cycle.live.iter().cloned().collect();
        for (name, t) in &mut self.objects {
            let Some(s) = t.spec.clone() else { continue };
            let now = cycle.live.iter().find(|(n, _)| *n == s.plugin).map(|(_, h)| h.as_str());
            let shadowing = cycle.shadow_versions.iter().any(|(n, h)| *n == s.plugin && Some(h) == t.hash.as_ref());
            let act = cycle.intent.latest(&s.plugin).map(tephra_scheduler::Act::describe).unwrap_or_default();
            // The shadow went live by another hand (an admin promote).
            if t.phase == "Shadowing" && t.hash.as_deref().is_some_and(|h| Some(h) == now) && !shadowing {
                let hash = t.hash.clone().unwrap_or_default();
                t.set("Live", true, "Promoted", format!("version {hash} of {} is live ({act})", s.plugin));
                t.drifted(s.shadow.then(|| format!("spec.mode is shadow; version {hash} runs live ({act})")));
                continue;
            }
            // Rolled forward again by another hand: what the spec says runs.
            if t.phase == "RolledBack" && t.hash.as_deref().is_some_and(|h| Some(h) == now) && !s.shadow {
                let hash = t.hash.clone().unwrap_or_default();
                t.set("Live", true, "Live", format!("version {hash} of {} is live ({act})", s.plugin));
                t.drifted(None);
                continue;
            }
            // A shadow's own faults are in its session, the live version's in the cycle's.
            let faulted = match t.phase {
                "Shadowing" => cycle.shadows.iter().any(|d| d.plugin == s.plugin && d.faults > 0),
                _ => cycle.outcome.faults.iter().any(|f| f.plugin == s.plugin),
            };
            if faulted {
                t.faults += 1;
                t.dirty = true;
            }
            match t.phase {
                "Shadowing" => {
                    let diffs: usize = cycle.shadows.iter().filter(|d| d.plugin == s.plugin).map(|d| d.count()).sum();
                    t.diffs += diffs as u64;
                    t.shadow_cycles += 1;
                    t.dirty |= diffs > 0;
                    if s.automatic && t.shadow_cycles >= s.cycles && t.diffs <= s.max_diffs && t.faults == 0 {
                        self.ready.push(rollout(name, t.generation, &s, Change::Promote));
                        let m = format!(
                            "{} cycles, {} decision differences, no fault: promoting",
                            t.shadow_cycles, t.diffs
                        );
                        t.set("Staged", true, "Promoting", m);
                    }
                }
                "Live" => {
                    if let Some(h) = t.hash.clone().filter(|h| Some(h.as_str()) != now) {
                        // Rolled back (by an admin, or by the scheduler after
                        // faults) or replaced from elsewhere (a plugins directory).
                        let now = now.unwrap_or("none");
                        let m = format!("the live version of {} is now {now}, not this object's ({act})", s.plugin);
                        t.set("RolledBack", false, "RolledBack", m);
                        t.drifted(Some(format!("spec declares version {h} live; {now} runs ({act})")));
                        continue;
                    }
                    t.streak = if faulted { t.streak + 1 } else { 0 };
                    if t.streak >= s.rollback_after {
                        self.ready.push(rollout(name, t.generation, &s, Change::Rollback));
                        let m = format!("faulted {} cycles in a row: rolling back", t.streak);
                        t.set("Live", false, "RollingBack", m);
                    }
                }
                _ => {}
            }
        }
    }

    /// Writes changed statuses and Events (the leader only).
    pub async fn report(&mut self, rec: &events::Recorder) {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &plugin_resource());
        for (name, t) in self.objects.iter_mut().filter(|(_, t)| t.dirty) {
            t.dirty = false;
            let (status, reason, message) = &t.condition;
            let now = k8s_openapi::jiff::Timestamp::now().to_string();
            let drifted = match &t.drift {
                Some(m) => json!({"type": "Drifted", "status": "True", "reason": "AdminOverride", "message": m,
                    "observedGeneration": t.generation, "lastTransitionTime": now}),
                None => json!({"type": "Drifted", "status": "False", "reason": "AsDeclared",
                    "message": "what runs is what the spec declares",
                    "observedGeneration": t.generation, "lastTransitionTime": now}),
            };
            let patch = json!({"status": {
                "phase": t.phase,
                "observedGeneration": t.generation,
                "contentHash": t.hash,
                "digest": t.spec.as_ref().and_then(|s| match &s.source {
                    Source::Oci { reference, .. } => reference.rsplit_once('@').map(|(_, d)| d.to_string()),
                    _ => None,
                }),
                "decisionDiffs": t.diffs,
                "faults": t.faults,
                "conditions": [{
                    "type": "Ready", "status": status, "reason": reason, "message": message,
                    "observedGeneration": t.generation,
                    "lastTransitionTime": now,
                }, drifted],
            }});
            if let Err(e) = api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                tracing::warn!("status of Plugin {name}: {}", crate::api_error(&e));
            }
            for (kind, reason, message) in std::mem::take(&mut t.events) {
                let r = events::reference(PLUGIN_API, "Plugin", None, name, &t.uid);
                rec.emit(&r, kind, &reason, &message).await;
            }
        }
    }
}

/// What a follower does to match the leader's status of this object: the
/// shadow it also runs promoted, the version it also runs rolled back.
fn follow(name: &str, t: &mut Tracked, status: &Value) -> Option<Rollout> {
    let s = t.spec.clone()?;
    if status["observedGeneration"].as_i64() != Some(t.generation) {
        return None;
    }
    // An admin's act reaches every replica as a decision of its own, not
    // through the leader's status.
    let drifted =
        status["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == "Drifted" && c["status"] == "True");
    if drifted {
        return None;
    }
    let same = status["contentHash"].as_str().is_some() && status["contentHash"].as_str() == t.hash.as_deref();
    let change = match (t.phase, status["phase"].as_str()) {
        ("Shadowing", Some("Live")) if same => {
            t.set("Staged", true, "Promoting", format!("promoting the shadow of {}, as the leader did", s.plugin));
            Change::Promote
        }
        ("Live", Some("RolledBack")) if same => {
            t.set("Live", false, "RollingBack", format!("rolling {} back, as the leader did", s.plugin));
            Change::Rollback
        }
        _ => return None,
    };
    Some(rollout(name, t.generation, &s, change))
}

/// Fetches a source on the current runtime; the result goes to `tx`.
fn fetch(client: Client, tx: mpsc::UnboundedSender<Fetched>, name: String, generation: i64, source: Source) {
    tokio::spawn(async move {
        let result = fetch_bytes(&client, &source).await.map_err(|e| format!("{}: {e:#}", source.describe()));
        let _ = tx.send(Fetched { name, generation, result });
    });
}

async fn fetch_bytes(client: &Client, source: &Source) -> anyhow::Result<Vec<u8>> {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    match source {
        Source::Oci { reference, pull_secret, insecure } => {
            let creds = match pull_secret {
                None => oci::Credentials::default(),
                Some((ns, name)) => {
                    let s = Api::<Secret>::namespaced(client.clone(), ns).get(name).await?;
                    let json = s
                        .data
                        .as_ref()
                        .and_then(|d| d.get(".dockerconfigjson"))
                        .ok_or_else(|| anyhow::anyhow!("pull Secret {ns}/{name} has no .dockerconfigjson"))?;
                    let registry = oci::pinned(reference)?.resolve_registry().to_string();
                    oci::Credentials::from_docker_config(&json.0, &registry)?
                }
            };
            let cache = tephra_runtime::default_cache_dir();
            let (bytes, cached) = oci::pull(reference, &creds, *insecure, cache.as_deref()).await?;
            if cached {
                tracing::info!("{reference}: from the local cache");
            }
            Ok(bytes)
        }
        Source::ConfigMap { namespace, name, key } => {
            let cm = Api::<ConfigMap>::namespaced(client.clone(), namespace).get(name).await?;
            if let Some(b) = cm.binary_data.as_ref().and_then(|d| d.get(key)) {
                return Ok(b.0.clone());
            }
            cm.data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|s| s.as_bytes().to_vec())
                .ok_or_else(|| anyhow::anyhow!("no key {key}"))
        }
        Source::Secret { namespace, name, key } => {
            let s = Api::<Secret>::namespaced(client.clone(), namespace).get(name).await?;
            s.data.as_ref().and_then(|d| d.get(key)).map(|b| b.0.clone()).ok_or_else(|| anyhow::anyhow!("no key {key}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_read_with_their_defaults_and_errors_name_the_field() {
        let d = "b".repeat(64);
        let s =
            read_spec(&json!({"plugin": "gang", "source": {"oci": {"reference": format!("r.example/g@sha256:{d}")}}}))
                .unwrap();
        assert!(!s.shadow && !s.automatic && s.cycles == 10 && s.max_diffs == 0 && s.rollback_after == 3);
        let s = read_spec(&json!({"plugin": "gang", "mode": "shadow",
            "source": {"configMap": {"namespace": "n", "name": "c", "key": "g.wasm"}},
            "promotion": {"policy": "automatic", "cycles": 5, "maxDecisionDiffs": 2}}))
        .unwrap();
        assert!(s.shadow && s.automatic && s.cycles == 5 && s.max_diffs == 2);
        let err = |v: Value| read_spec(&v).unwrap_err();
        assert_eq!(err(json!({"source": {}})), "spec.plugin is required");
        assert!(err(json!({"plugin": "g", "source": {}})).starts_with("spec.source: exactly one"));
        assert_eq!(
            err(json!({"plugin": "g", "source": {"secret": {"namespace": "n", "name": "s"}}})),
            "spec.source.secret.key is required"
        );
        assert!(err(json!({"plugin": "g", "source": {"oci": {"reference": "r.example/g:v1"}}}))
            .starts_with("spec.source.oci.reference: "));
        let e = err(
            json!({"plugin": "g", "mode": "canary", "source": {"configMap": {"namespace": "n", "name": "c", "key": "k"}}}),
        );
        assert_eq!(e, "spec.mode: \"canary\" is not live or shadow");
    }
}
