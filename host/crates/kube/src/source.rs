//! Watches the API server and keeps one long-lived cluster up to date from
//! its events.
//!
//! One kube-rs watcher per kind sends its events into one channel
//! ([`Watches`]); the kinds are one table (`WATCHED`), each entry saying how
//! its kind is watched, read and applied, and what a relist removes.
//! Between cycles the driver drains the channel into the [`Store`], which
//! changes the cluster in place: a pod that was bound, started,
//! finished or is being deleted changes through `status_mut`, so the next
//! session starts from the last one as in the simulator; anything else
//! (a new or deleted object, a changed spec) is a whole change. The store
//! keeps of each object only what the driver writes back with: uid,
//! resourceVersion, and the status it compares its writes against.
//!
//! Objects are read through [`manifest::from_value`], so a Pod or Queue from
//! the API is read exactly like the same YAML in a file; that happens once
//! per object version, when its event arrives.

use crate::controller::{self, Write};
use crate::kinds::{
    hypernode_resource, podgroup_resource, queue_resource, reservation_resource, Target, GROUP_ANNOTATION,
    TARGET_ANNOTATION, VOLCANO_API,
};
use crate::watch::{forward, ids, key_of, Change, Denied, Feed, Spec, Step};
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};
use tephra_model::cluster::{Cluster, Pod as ModelPod, PodGroup};
use tephra_model::tracked::Tracked;
use tephra_readers::manifest::{self, Object};
use tokio::sync::mpsc;

/// How long an unconfirmed bind or eviction is assumed before the watch is
/// trusted again (if it has been heard from since: see `Assumed::heard`).
const ASSUME_FOR: Duration = Duration::from_secs(30);

/// One kind `tephra run` watches, described once: how it is watched, what
/// it is read as, how its objects apply to the cluster, and which objects a
/// relist that no longer lists them removes. A new kind is one entry here
/// and its reader in `tephra_readers::manifest`.
struct Watched {
    /// The watch's name (logs, RBAC refusals).
    name: &'static str,
    /// The kind its objects are read as.
    kind: &'static str,
    /// For kinds watched as dynamic objects (their list items may lack
    /// them): the apiVersion to read them under.
    api: Option<&'static str>,
    /// A cluster may lack the kind (a CRD not installed).
    optional: bool,
    /// Starts the watch (the client, and the scheduler name tephra serves).
    start: fn(&Client, &str, Feed, Spec) -> tokio::task::JoinHandle<()>,
    /// Applies one of its objects (of the type `start` watches).
    applied: fn(&mut Store, &mut Cluster, usize, &(dyn Any + Send)),
    /// Removes one of its objects, by key.
    deleted: fn(&mut Store, &mut Cluster, usize, &str),
    /// The keys of the objects it holds.
    held: fn(&Store, usize) -> Vec<String>,
}

/// How many watches there are (pods are watched twice).
const WATCH_COUNT: usize = 19;

/// Every watch. Pods are watched twice with field selectors, as Volcano's
/// informer filters them: ours (any state), and others' bound ones, which
/// only take room on their nodes.
const WATCHED: [Watched; WATCH_COUNT] = [
    Watched {
        name: "nodes",
        kind: "Node",
        api: None,
        optional: false,
        start: |client, _, feed, spec| forward::<Node>(Api::all(client.clone()), Default::default(), feed, spec),
        applied: |s, c, w, o| {
            if let Some(o) = o.downcast_ref() {
                s.node_applied(c, w, o)
            }
        },
        deleted: |s, c, _, key| s.node_deleted(c, key),
        held: |s, _| s.nodes.keys().cloned().collect(),
    },
    Watched {
        name: "pods",
        kind: "Pod",
        api: None,
        optional: false,
        start: |client, scheduler, feed, spec| {
            let ours = watcher::Config::default().fields(&format!("spec.schedulerName={scheduler}"));
            forward::<Pod>(Api::all(client.clone()), ours, feed, spec)
        },
        applied: |s, c, w, o| {
            if let Some(o) = o.downcast_ref() {
                s.pod_applied(c, w, o, true)
            }
        },
        deleted: |s, c, _, key| s.pod_deleted(c, key),
        held: |s, _| s.pods.iter().filter(|(_, m)| m.ours).map(|(k, _)| k.clone()).collect(),
    },
    Watched {
        name: "bound pods of other schedulers",
        kind: "Pod",
        api: None,
        optional: false,
        start: |client, scheduler, feed, spec| {
            let others = watcher::Config::default().fields(&format!("spec.schedulerName!={scheduler},spec.nodeName!="));
            forward::<Pod>(Api::all(client.clone()), others, feed, spec)
        },
        applied: |s, c, w, o| {
            if let Some(o) = o.downcast_ref() {
                s.pod_applied(c, w, o, false)
            }
        },
        deleted: |s, c, _, key| s.pod_deleted(c, key),
        held: |s, _| s.pods.iter().filter(|(_, m)| !m.ours).map(|(k, _)| k.clone()).collect(),
    },
    Watched {
        name: "podgroups",
        kind: "PodGroup",
        api: Some(VOLCANO_API),
        optional: false,
        start: |client, _, feed, spec| {
            forward::<DynamicObject>(
                Api::all_with(client.clone(), &podgroup_resource()),
                Default::default(),
                feed,
                spec,
            )
        },
        applied: |s, c, w, o| {
            if let Some(o) = o.downcast_ref() {
                s.podgroup_applied(c, w, o)
            }
        },
        deleted: |s, c, _, key| s.podgroup_deleted(c, key),
        held: |s, _| s.podgroups.keys().cloned().collect(),
    },
    Watched {
        name: "queues",
        kind: "Queue",
        api: Some(VOLCANO_API),
        optional: false,
        start: |client, _, feed, spec| {
            forward::<DynamicObject>(Api::all_with(client.clone(), &queue_resource()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            if let Some(o) = o.downcast_ref() {
                s.queue_applied(c, w, o)
            }
        },
        deleted: |s, c, _, key| s.queue_deleted(c, key),
        held: |s, _| s.queues.keys().cloned().collect(),
    },
    // The rest are each one value under a name in the cluster: read once
    // per version, kept when readable.
    Watched {
        name: "priorityclasses",
        kind: "PriorityClass",
        api: None,
        optional: false,
        start: |client, _, feed, spec| {
            forward::<PriorityClass>(Api::all(client.clone()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::PriorityClass(name, pc) => Some((name, pc)),
                _ => None,
            };
            s.keyed::<PriorityClass, _>(w, o, &mut c.priority_classes, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.priority_classes, key),
        held: Store::held,
    },
    Watched {
        // Namespaces' labels, for pod affinity's `namespaceSelector`.
        name: "namespaces",
        kind: "Namespace",
        api: None,
        optional: false,
        start: |client, _, feed, spec| forward::<Namespace>(Api::all(client.clone()), Default::default(), feed, spec),
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::Namespace(name, labels) => Some((name, labels)),
                _ => None,
            };
            s.keyed::<Namespace, _>(w, o, &mut c.namespaces, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.namespaces, key),
        held: Store::held,
    },
    Watched {
        // Claims and volumes: where pods' volumes let them run.
        name: "persistentvolumeclaims",
        kind: "PersistentVolumeClaim",
        api: None,
        optional: false,
        start: |client, _, feed, spec| {
            forward::<PersistentVolumeClaim>(Api::all(client.clone()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::Claim(key, claim) => Some((key, claim)),
                _ => None,
            };
            s.keyed::<PersistentVolumeClaim, _>(w, o, &mut c.claims, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.claims, key),
        held: Store::held,
    },
    Watched {
        name: "persistentvolumes",
        kind: "PersistentVolume",
        api: None,
        optional: false,
        start: |client, _, feed, spec| {
            forward::<PersistentVolume>(Api::all(client.clone()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::Volume(name, volume) => Some((name, volume)),
                _ => None,
            };
            s.keyed::<PersistentVolume, _>(w, o, &mut c.volumes, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.volumes, key),
        held: Store::held,
    },
    Watched {
        // How claims are bound: on first consumer, by whom, where.
        name: "storageclasses",
        kind: "StorageClass",
        api: None,
        optional: false,
        start: |client, _, feed, spec| {
            forward::<StorageClass>(Api::all(client.clone()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::StorageClass(name, class) => Some((name, class)),
                _ => None,
            };
            s.keyed::<StorageClass, _>(w, o, &mut c.storage_classes, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.storage_classes, key),
        held: Store::held,
    },
    Watched {
        // Which CSI drivers publish their storage capacity.
        name: "csidrivers",
        kind: "CSIDriver",
        api: None,
        optional: false,
        start: |client, _, feed, spec| forward::<CSIDriver>(Api::all(client.clone()), Default::default(), feed, spec),
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::CsiDriver(name, tracked) => Some((name, tracked)),
                _ => None,
            };
            s.keyed::<CSIDriver, _>(w, o, &mut c.csi_drivers, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.csi_drivers, key),
        held: Store::held,
    },
    Watched {
        // The room they publish, per class and node topology.
        name: "csistoragecapacities",
        kind: "CSIStorageCapacity",
        api: None,
        optional: false,
        start: |client, _, feed, spec| {
            forward::<CSIStorageCapacity>(Api::all(client.clone()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::StorageCapacity(key, capacity) => Some((key, capacity)),
                _ => None,
            };
            s.keyed::<CSIStorageCapacity, _>(w, o, &mut c.storage_capacities, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.storage_capacities, key),
        held: Store::held,
    },
    Watched {
        // DRA: the classes devices are requested by (absent API: none).
        name: "deviceclasses",
        kind: "DeviceClass",
        api: None,
        optional: true,
        start: |client, _, feed, spec| forward::<DeviceClass>(Api::all(client.clone()), Default::default(), feed, spec),
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::DeviceClass(key, v) => Some((key, v)),
                _ => None,
            };
            s.keyed::<DeviceClass, _>(w, o, &mut c.device_classes, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.device_classes, key),
        held: Store::held,
    },
    Watched {
        // DRA: the devices drivers publish, per node or pool.
        name: "resourceslices",
        kind: "ResourceSlice",
        api: None,
        optional: true,
        start: |client, _, feed, spec| {
            forward::<ResourceSlice>(Api::all(client.clone()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::ResourceSlice(key, v) => Some((key, v)),
                _ => None,
            };
            s.keyed::<ResourceSlice, _>(w, o, &mut c.resource_slices, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.resource_slices, key),
        held: Store::held,
    },
    Watched {
        // DRA: pods' claims, their allocations and reservations.
        name: "resourceclaims",
        kind: "ResourceClaim",
        api: None,
        optional: true,
        start: |client, _, feed, spec| {
            forward::<ResourceClaim>(Api::all(client.clone()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::ResourceClaim(key, v) => Some((key, v)),
                _ => None,
            };
            s.keyed::<ResourceClaim, _>(w, o, &mut c.resource_claims, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.resource_claims, key),
        held: Store::held,
    },
    Watched {
        // DRA: the claims templates make for pods (until they are made).
        name: "resourceclaimtemplates",
        kind: "ResourceClaimTemplate",
        api: None,
        optional: true,
        start: |client, _, feed, spec| {
            forward::<ResourceClaimTemplate>(Api::all(client.clone()), Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::ClaimTemplate(key, v) => Some((key, v)),
                _ => None,
            };
            s.keyed::<ResourceClaimTemplate, _>(w, o, &mut c.claim_templates, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.claim_templates, key),
        held: Store::held,
    },
    Watched {
        // Nodes' CSI attach limits.
        name: "csinodes",
        kind: "CSINode",
        api: None,
        optional: false,
        start: |client, _, feed, spec| forward::<CSINode>(Api::all(client.clone()), Default::default(), feed, spec),
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::AttachLimits(name, limits) => Some((name, limits)),
                _ => None,
            };
            s.keyed::<CSINode, _>(w, o, &mut c.attach_limits, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.attach_limits, key),
        held: Store::held,
    },
    Watched {
        // The network topology (absent CRD: an empty list).
        name: "hypernodes",
        kind: "HyperNode",
        api: Some("topology.volcano.sh/v1alpha1"),
        optional: true,
        start: |client, _, feed, spec| {
            forward::<DynamicObject>(
                Api::all_with(client.clone(), &hypernode_resource()),
                Default::default(),
                feed,
                spec,
            )
        },
        applied: |s, c, w, o| {
            let pick = |obj| match obj {
                Object::HyperNode(h) => Some((h.name.clone(), h)),
                _ => None,
            };
            s.keyed::<DynamicObject, _>(w, o, &mut c.hypernodes, pick);
        },
        deleted: |s, c, w, key| s.forget(w, &mut c.hypernodes, key),
        held: Store::held,
    },
    Watched {
        // Advance reservations (absent CRD: an empty list).
        name: "reservations",
        kind: "Reservation",
        api: Some(tephra_model::window::API_VERSION),
        optional: true,
        start: |client, _, feed, spec| {
            let api = Api::all_with(client.clone(), &reservation_resource());
            forward::<DynamicObject>(api, Default::default(), feed, spec)
        },
        applied: |s, c, w, o| {
            if let Some(o) = o.downcast_ref() {
                s.reservation_applied(c, w, o)
            }
        },
        deleted: |s, c, w, key| s.reservation_deleted(c, w, key),
        held: Store::held,
    },
];

/// The number of the watch named `name` (for feeding a [`Store`] by hand).
pub fn watch(name: &str) -> Option<usize> {
    WATCHED.iter().position(|w| w.name == name)
}

/// The running watches, all feeding one channel.
pub struct Watches {
    rx: mpsc::UnboundedReceiver<Change>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Kinds the API server refuses to list to us (RBAC), with why.
    denied: Denied,
}

impl Watches {
    /// Starts every watch of `WATCHED` (on the current runtime).
    pub fn start(client: &Client, scheduler_name: &str) -> Watches {
        let (tx, rx) = mpsc::unbounded_channel();
        let feed = Feed { tx, denied: Denied::default() };
        let tasks = WATCHED
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let spec = Spec { watch: i, name: w.name, optional: w.optional };
                (w.start)(client, scheduler_name, feed.clone(), spec)
            })
            .collect();
        Watches { rx, tasks, denied: feed.denied }
    }

    /// The next event (waiting for it).
    pub async fn next(&mut self) -> Option<Change> {
        self.rx.recv().await
    }

    /// Why the API server refuses to list a watch's kind, if it does.
    pub fn denied(&self, what: &str) -> Option<String> {
        self.denied.lock().unwrap_or_else(|e| e.into_inner()).get(what).cloned()
    }

    /// The events delivered so far, without waiting.
    pub fn drain(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        while let Ok(c) = self.rx.try_recv() {
            out.push(c);
        }
        out
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// An object that could not be read: what to report, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    /// `Kind namespace/name` or `Kind name`.
    pub object: String,
    /// Its uid (the Event's object).
    pub uid: String,
    /// One line naming the object and the field.
    pub message: String,
}

/// What the driver keeps of one of our pods (or another scheduler's).
#[derive(Clone, Debug, Default)]
pub struct PodMeta {
    /// `metadata.uid`.
    pub uid: String,
    rv: String,
    /// `spec.schedulerName` is ours.
    pub ours: bool,
    /// The pod's `PodScheduled` condition (boxed: most pods have none, or
    /// have it only while they wait).
    pub scheduled: Option<Box<PodCondition>>,
    /// What the API server last said of its node and deletion (an assumed
    /// bind or eviction covers them until the watch shows it).
    api_node: Option<String>,
    api_deleting: bool,
    /// A plain pod's PodGroup name while the API's pod lacks the annotation
    /// naming it: written with its binding, or with its first Unschedulable
    /// condition (Volcano's podgroup controller writes it at once, a write
    /// per pod the API server would have to carry).
    pub group_note: Option<String>,
}

/// What the driver keeps of a PodGroup or Queue object.
#[derive(Clone, Debug, Default)]
pub struct ObjMeta {
    /// `metadata.uid`.
    pub uid: String,
    rv: String,
    /// The object's `status`, which the driver's writes are compared with.
    pub status: serde_json::Value,
    /// A PodGroup's [`TARGET_ANNOTATION`]: the big-job reservation the
    /// last leader wrote, as written.
    pub target: Option<String>,
}

/// Positions in the cluster's lists, by key.
#[derive(Default)]
struct Index {
    nodes: HashMap<String, usize>,
    queues: HashMap<String, usize>,
    podgroups: HashMap<String, usize>,
    pods: HashMap<String, usize>,
}

/// Binds and evictions sent but not yet seen in the watch.
#[derive(Default)]
struct Assumed {
    /// pod key → (node, when).
    binds: HashMap<String, (String, Instant)>,
    /// pod key → when.
    evictions: HashMap<String, Instant>,
    /// When the watch of our pods last delivered anything: an assumption
    /// ends only once the watch has been heard from well after it, so an API
    /// server that is away (its watch silent) never makes a bind look undone.
    heard: Option<Instant>,
}

/// How long after an assumption the pods watch must still have been heard
/// from before the assumption may end: ample time to deliver it.
const HEARD_AFTER: Duration = Duration::from_secs(5);

/// The watch events applied to the cluster, and what the driver keeps of
/// each object.
#[derive(Default)]
pub struct Store {
    /// Pods by `namespace/name`.
    pub pods: HashMap<String, PodMeta>,
    /// PodGroups from the API by `namespace/name`.
    pub podgroups: HashMap<String, ObjMeta>,
    /// Queues from the API by name.
    pub queues: HashMap<String, ObjMeta>,
    nodes: HashMap<String, (String, String)>,
    /// For the kinds kept as one value under a name (priority classes,
    /// namespaces, claims, volumes, storage classes, CSI drivers and
    /// capacities, DRA classes, slices, claims and templates, CSINodes,
    /// HyperNodes, Reservations),
    /// per watch: key → resourceVersion.
    versions: [HashMap<String, String>; WATCH_COUNT],
    /// Each Reservation's status as the API has it.
    pub reservation_status: HashMap<String, serde_json::Value>,
    /// Reservations that do not read, with why (their status says so).
    pub reservation_invalid: HashMap<String, String>,
    index: Index,
    /// Lists whose order or length changed: sorted and re-indexed at [`Store::settle`].
    reorder: bool,
    /// Keys listed so far by a relist under way, per watch.
    relist: [Option<HashSet<String>>; WATCH_COUNT],
    synced: [bool; WATCH_COUNT],
    /// uid → resourceVersion of objects that could not be read.
    bad: HashMap<String, String>,
    /// Objects that could not be read since the last [`Store::take_invalid`].
    invalid: Vec<Invalid>,
    assumed: Assumed,
    /// Writes for Volcano's controllers' part (default queues, PodGroups of
    /// plain pods), sent off the scheduling path.
    writes: Vec<Write>,
    /// Keys whose write is already queued.
    queued: HashSet<String>,
}

/// Reads an API object as the manifest reader reads its YAML (typed object
/// → YAML value → model, with no JSON text between).
fn to_model<K: Serialize>(obj: &K, w: &Watched) -> Result<Object, String> {
    let mut yaml = yaml_serde::to_value(obj).map_err(|e| e.to_string())?;
    if let (Some(api), Some(m)) = (w.api, yaml.as_mapping_mut()) {
        // List items of dynamic objects may lack them.
        m.insert("apiVersion".into(), api.into());
        m.insert("kind".into(), w.kind.into());
    }
    manifest::from_value(&yaml, "apiserver").map_err(|e| format!("{e:#}"))
}

/// Appends an item and indexes it.
fn push<T>(list: &mut Tracked<T>, index: &mut HashMap<String, usize>, key: String, item: T) {
    list.push(item);
    index.insert(key, list.len() - 1);
}

/// Removes an item (the last one takes its place, re-indexed); whether it was there.
fn remove<T>(list: &mut Tracked<T>, index: &mut HashMap<String, usize>, key: &str, key_of: fn(&T) -> String) -> bool {
    let Some(i) = index.remove(key) else { return false };
    list.swap_remove(i);
    if i < list.len() {
        index.insert(key_of(&list[i]), i);
    }
    true
}

impl Store {
    /// Whether every watch has completed its first list.
    pub fn synced(&self) -> bool {
        self.synced.iter().all(|s| *s)
    }

    /// Applies one watch event to `c`.
    pub fn apply(&mut self, c: &mut Cluster, change: Change) {
        let w = change.watch;
        if w >= WATCH_COUNT {
            return tracing::error!("an event of watch {w}, which does not exist");
        }
        if WATCHED[w].name == "pods" && !matches!(change.step, Step::Init) {
            self.assumed.heard = Some(Instant::now());
        }
        match change.step {
            Step::Init => self.relist[w] = Some(HashSet::new()),
            Step::InitDone => {
                self.synced[w] = true;
                if let Some(listed) = self.relist[w].take() {
                    self.relisted(c, w, &listed);
                }
            }
            Step::Object => {
                if let (Some(listed), Some(key)) = (&mut self.relist[w], &change.listed) {
                    listed.insert(key.clone());
                }
                if let Some((uid, key)) = &change.deleted {
                    // A deleted object's unreadable versions need no memory.
                    self.bad.remove(uid);
                    (WATCHED[w].deleted)(self, c, w, key);
                }
                if let Some(object) = &change.object {
                    (WATCHED[w].applied)(self, c, w, object.as_ref());
                }
            }
        }
    }

    /// A relist completed: every object of that watch it did not list is
    /// gone. (Its objects were applied as they came: an object changed
    /// meanwhile is newer in the list than in the cluster, never older.)
    fn relisted(&mut self, c: &mut Cluster, w: usize, listed: &HashSet<String>) {
        let gone: Vec<String> = (WATCHED[w].held)(self, w).into_iter().filter(|k| !listed.contains(k)).collect();
        for key in gone {
            (WATCHED[w].deleted)(self, c, w, &key);
        }
    }

    /// The keys a keyed watch holds.
    /// The resourceVersion of object `key` of watch `name` (a kind kept
    /// under its name), as last seen.
    pub fn version(&self, name: &str, key: &str) -> Option<String> {
        self.versions[watch(name)?].get(key).cloned()
    }

    fn held(&self, w: usize) -> Vec<String> {
        self.versions[w].keys().cloned().collect()
    }

    /// Reads an object of watch `w` once per version; a bad one is reported
    /// once and left out.
    fn read<K: Resource + Serialize>(&mut self, o: &K, w: usize) -> Option<Object> {
        let (uid, rv) = ids(o);
        if self.bad.get(&uid) == Some(&rv) {
            return None;
        }
        match to_model(o, &WATCHED[w]) {
            Ok(obj) => {
                self.bad.remove(&uid);
                Some(obj)
            }
            Err(message) => {
                let object = format!("{} {}", WATCHED[w].kind, key_of(o));
                self.invalid.push(Invalid { object, uid: uid.clone(), message });
                self.bad.insert(uid, rv);
                None
            }
        }
    }

    /// An object of a keyed watch `w`: read once per version, and kept in
    /// `map` under its name when readable (an unreadable version removes
    /// it). `None` when this version was read before, else whether it read.
    fn keyed<K: Resource + Serialize + 'static, V: PartialEq>(
        &mut self,
        w: usize,
        o: &(dyn Any + Send),
        map: &mut BTreeMap<String, V>,
        pick: fn(Object) -> Option<(String, V)>,
    ) -> Option<bool> {
        let o: &K = o.downcast_ref()?;
        let (key, (_, rv)) = (key_of(o), ids(o));
        if self.versions[w].get(&key) == Some(&rv) {
            return None;
        }
        match self.read(o, w).and_then(pick) {
            Some((name, value)) => {
                self.versions[w].insert(key, rv);
                if map.get(&name) != Some(&value) {
                    map.insert(name, value);
                }
                Some(true)
            }
            None => {
                self.forget(w, map, &key);
                Some(false)
            }
        }
    }

    /// An object of a keyed watch gone: its version and its value.
    fn forget<V>(&mut self, w: usize, map: &mut BTreeMap<String, V>, key: &str) {
        self.versions[w].remove(key);
        map.remove(key);
    }

    fn node_applied(&mut self, c: &mut Cluster, w: usize, o: &Node) {
        let (key, ids) = (key_of(o), ids(o));
        if self.nodes.get(&key) == Some(&ids) {
            return;
        }
        let Some(Object::Node(node)) = self.read(o, w) else {
            return self.node_deleted(c, &key);
        };
        self.nodes.insert(key.clone(), ids);
        match self.index.nodes.get(&key) {
            // Heartbeats change nothing the scheduler reads.
            Some(&i) if c.nodes[i] == node => {}
            Some(&i) => c.nodes[i] = node,
            None => {
                push(&mut c.nodes, &mut self.index.nodes, key, node);
                self.reorder = true;
            }
        }
    }

    fn node_deleted(&mut self, c: &mut Cluster, key: &str) {
        self.nodes.remove(key);
        self.reorder |= remove(&mut c.nodes, &mut self.index.nodes, key, |n| n.name.clone());
    }

    fn reservation_applied(&mut self, c: &mut Cluster, w: usize, o: &DynamicObject) {
        let key = key_of(o);
        self.reservation_status.insert(key.clone(), o.data.get("status").cloned().unwrap_or_default());
        let seen = self.invalid.len();
        let pick = |obj| match obj {
            Object::Reservation(r) => Some((r.name.clone(), r)),
            _ => None,
        };
        match self.keyed::<DynamicObject, _>(w, o, &mut c.reservations, pick) {
            Some(true) => {
                self.reservation_invalid.remove(&key);
            }
            Some(false) => {
                if let Some(bad) = self.invalid[seen..].last() {
                    self.reservation_invalid.insert(key, bad.message.clone());
                }
            }
            None => {}
        }
    }

    fn reservation_deleted(&mut self, c: &mut Cluster, w: usize, key: &str) {
        self.reservation_status.remove(key);
        self.reservation_invalid.remove(key);
        self.forget(w, &mut c.reservations, key);
    }

    fn queue_applied(&mut self, c: &mut Cluster, w: usize, o: &DynamicObject) {
        let (key, (uid, rv)) = (key_of(o), ids(o));
        if self.queues.get(&key).is_some_and(|m| m.uid == uid && m.rv == rv) {
            return;
        }
        let Some(Object::Queue(queue)) = self.read(o, w) else {
            return self.queue_deleted(c, &key);
        };
        let status = o.data.get("status").cloned().unwrap_or_default();
        self.queues.insert(key.clone(), ObjMeta { uid, rv, status, target: None });
        match self.index.queues.get(&key) {
            Some(&i) if c.queues[i] == queue => {}
            Some(&i) => c.queues[i] = queue,
            None => {
                push(&mut c.queues, &mut self.index.queues, key, queue);
                self.reorder = true;
            }
        }
    }

    fn queue_deleted(&mut self, c: &mut Cluster, key: &str) {
        self.queues.remove(key);
        self.reorder |= remove(&mut c.queues, &mut self.index.queues, key, |q| q.name.clone());
    }

    fn podgroup_applied(&mut self, c: &mut Cluster, w: usize, o: &DynamicObject) {
        let (key, (uid, rv)) = (key_of(o), ids(o));
        if self.podgroups.get(&key).is_some_and(|m| m.uid == uid && m.rv == rv) {
            return;
        }
        let Some(Object::PodGroup(group)) = self.read(o, w) else {
            return self.podgroup_deleted(c, &key);
        };
        let status = o.data.get("status").cloned().unwrap_or_default();
        let target = o.metadata.annotations.as_ref().and_then(|a| a.get(TARGET_ANNOTATION)).cloned();
        self.podgroups.insert(key.clone(), ObjMeta { uid, rv, status, target });
        self.put_group(c, key, group);
    }

    /// Puts a PodGroup in the cluster: a status change when only its status
    /// differs from the one there.
    fn put_group(&mut self, c: &mut Cluster, key: String, group: PodGroup) {
        match self.index.podgroups.get(&key) {
            Some(&i) if c.podgroups[i].same_spec(&group) => {
                if c.podgroups[i] != group {
                    let s = c.podgroups.status_mut(i);
                    *s.phase = group.phase;
                    *s.condition = group.condition;
                }
            }
            Some(&i) => c.podgroups[i] = group,
            None => {
                push(&mut c.podgroups, &mut self.index.podgroups, key, group);
                self.reorder = true;
            }
        }
    }

    fn podgroup_deleted(&mut self, c: &mut Cluster, key: &str) {
        self.podgroups.remove(key);
        // A plain pod's group stays while its pods are there (the driver
        // made it before the API had it).
        let (ns, name) = key.split_once('/').unwrap_or(("", key));
        if name.starts_with("podgroup-") && c.pods.iter().any(|p| p.namespace == ns && p.group.as_deref() == Some(name))
        {
            return;
        }
        self.reorder |= remove(&mut c.podgroups, &mut self.index.podgroups, key, PodGroup::key);
    }

    fn pod_applied(&mut self, c: &mut Cluster, w: usize, o: &Pod, ours: bool) {
        let (key, (uid, rv)) = (key_of(o), ids(o));
        if self.pods.get(&key).is_some_and(|m| m.uid == uid && m.rv == rv) {
            return;
        }
        let Some(Object::Pod(mut pod)) = self.read(o, w) else {
            return self.pod_deleted(c, &key);
        };
        let scheduled = o
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref()?.iter().find(|c| c.type_ == "PodScheduled").cloned())
            .map(Box::new);
        let mut meta = PodMeta {
            uid,
            rv,
            ours,
            scheduled,
            api_node: pod.node.clone(),
            api_deleting: pod.deleting,
            group_note: None,
        };
        if !ours {
            // Others' pods only take room on their nodes; they are never tasks.
            pod.group = None;
        } else if pod.group.is_none() {
            meta.group_note = self.plain_pod(c, o, &mut pod);
        } else {
            self.queued.remove(&key);
        }
        // What was sent and not yet seen back stays assumed.
        if let Some((node, _)) = self.assumed.binds.get(&key) {
            if pod.node.is_some() {
                self.assumed.binds.remove(&key);
            } else {
                pod.node = Some(node.clone());
                pod.nominated_node = None;
            }
        }
        if self.assumed.evictions.contains_key(&key) {
            if pod.deleting {
                self.assumed.evictions.remove(&key);
            } else {
                pod.deleting = true;
            }
        }
        let same_pod = self.pods.get(&key).is_some_and(|m| m.uid == meta.uid);
        self.pods.insert(key.clone(), meta);
        match self.index.pods.get(&key) {
            Some(&i) if same_pod && c.pods[i].same_spec(&pod) => {
                if c.pods[i] != *pod {
                    let s = c.pods.status_mut(i);
                    *s.node = pod.node;
                    *s.nominated_node = pod.nominated_node;
                    *s.phase = pod.phase;
                    *s.deleting = pod.deleting;
                    *s.started = pod.started;
                }
            }
            Some(&i) => c.pods[i] = *pod,
            None => {
                push(&mut c.pods, &mut self.index.pods, key, *pod);
                self.reorder = true;
            }
        }
    }

    /// A pod of ours without a PodGroup is a job of its own at once, in the
    /// group Volcano's podgroup controller makes for it (named after its
    /// controller, so a ReplicaSet's pods share one); the PodGroup object is
    /// written off the scheduling path. The group's name, for the pod's
    /// annotation ([`PodMeta::group_note`]).
    fn plain_pod(&mut self, c: &mut Cluster, o: &Pod, pod: &mut ModelPod) -> Option<String> {
        let owner: Option<OwnerReference> = o.owner_references().iter().find(|r| r.controller == Some(true)).cloned();
        let uid = owner.as_ref().map(|r| r.uid.clone()).or_else(|| o.metadata.uid.clone())?;
        let name = format!("podgroup-{uid}");
        pod.group = Some(name.clone());
        pod.annotations.insert(GROUP_ANNOTATION.into(), name.clone());
        let key = format!("{}/{name}", pod.namespace);
        // The group as the API should have it, while it does not.
        let missing = (!self.podgroups.contains_key(&key)).then(|| controller::implicit_group(pod, &name));
        if let Some(group) = missing.as_ref().filter(|_| !self.index.podgroups.contains_key(&key)) {
            self.put_group(c, key, group.clone());
        }
        if let Some(group) = missing.filter(|_| self.queued.insert(pod.key())) {
            self.writes.push(Write::PlainPod {
                namespace: pod.namespace.clone(),
                pod: pod.name.clone(),
                pod_uid: o.metadata.uid.clone().unwrap_or_default(),
                owner,
                group: Box::new(group),
                group_name: name.clone(),
            });
        }
        Some(name)
    }

    fn pod_deleted(&mut self, c: &mut Cluster, key: &str) {
        self.pods.remove(key);
        self.queued.remove(key);
        self.assumed.binds.remove(key);
        self.assumed.evictions.remove(key);
        self.reorder |= remove(&mut c.pods, &mut self.index.pods, key, ModelPod::key);
    }

    /// After a batch of events: sorts lists that changed shape into stable
    /// orders (creation, then name) and indexes them; ends expired
    /// assumptions; adds the default queues Volcano's scheduler makes.
    pub fn settle(&mut self, c: &mut Cluster) {
        let now = Instant::now();
        let heard = self.assumed.heard;
        let over = |t: &Instant| {
            now.duration_since(*t) >= ASSUME_FOR
                && heard.is_some_and(|h| h.saturating_duration_since(*t) >= HEARD_AFTER)
        };
        let expired: Vec<String> = self
            .assumed
            .binds
            .iter()
            .filter(|(_, (_, t))| over(t))
            .map(|(k, _)| k.clone())
            .chain(self.assumed.evictions.iter().filter(|(_, t)| over(t)).map(|(k, _)| k.clone()))
            .collect();
        for key in expired {
            self.assumed.binds.remove(&key);
            self.assumed.evictions.remove(&key);
            if let (Some(&i), Some(m)) = (self.index.pods.get(&key), self.pods.get(&key)) {
                if c.pods[i].node != m.api_node || c.pods[i].deleting != m.api_deleting {
                    let s = c.pods.status_mut(i);
                    *s.node = m.api_node.clone();
                    *s.deleting = m.api_deleting;
                }
            }
        }
        if c.queue("root").is_none() || c.queue("default").is_none() {
            c.ensure_default_queues();
            self.reorder = true;
        }
        if !self.reorder {
            return;
        }
        self.reorder = false;
        c.nodes.sort_by(|a, b| a.name.cmp(&b.name));
        c.queues.sort_by(|a, b| (a.created, &a.name).cmp(&(b.created, &b.name)));
        c.podgroups.sort_by_cached_key(|g| (g.created, g.key()));
        c.pods.sort_by_cached_key(|p| (p.created, p.key()));
        let ix = &mut self.index;
        ix.nodes = c.nodes.iter().enumerate().map(|(i, n)| (n.name.clone(), i)).collect();
        ix.queues = c.queues.iter().enumerate().map(|(i, q)| (q.name.clone(), i)).collect();
        ix.podgroups = c.podgroups.iter().enumerate().map(|(i, g)| (g.key(), i)).collect();
        ix.pods = c.pods.iter().enumerate().map(|(i, p)| (p.key(), i)).collect();
    }

    /// Objects that could not be read since the last call.
    pub fn take_invalid(&mut self) -> Vec<Invalid> {
        std::mem::take(&mut self.invalid)
    }

    /// Controller writes gathered since the last call, with the default
    /// queues when the API has none of that name.
    pub fn take_writes(&mut self) -> Vec<Write> {
        for (name, reclaimable) in [("root", false), ("default", true)] {
            if !self.queues.contains_key(name) && self.queued.insert(format!("queue {name}")) {
                self.writes.push(Write::Queue { name: name.into(), reclaimable });
            }
        }
        std::mem::take(&mut self.writes)
    }

    /// A write that failed may be tried again.
    pub fn write_failed(&mut self, w: &Write) {
        self.queued.remove(&w.key());
    }

    /// Marks a bind the API server accepted: the pod holds the node until
    /// the watch shows it (or for [`ASSUME_FOR`]).
    pub fn assume_bind(&mut self, c: &mut Cluster, key: &str, node: &str) {
        self.assumed.binds.insert(key.to_string(), (node.to_string(), Instant::now()));
        if let Some(&i) = self.index.pods.get(key) {
            if c.pods[i].node.as_deref() != Some(node) {
                let s = c.pods.status_mut(i);
                *s.node = Some(node.to_string());
                *s.nominated_node = None;
            }
        }
    }

    /// Marks an eviction the API server accepted.
    pub fn assume_eviction(&mut self, c: &mut Cluster, key: &str) {
        self.assumed.evictions.insert(key.to_string(), Instant::now());
        if let Some(&i) = self.index.pods.get(key) {
            if !c.pods[i].deleting {
                *c.pods.status_mut(i).deleting = true;
            }
        }
    }

    /// The reservations the last leader wrote — queues' `status.reservation.nodes`,
    /// big-job targets' [`TARGET_ANNOTATION`] — to be adopted at `now_ms`: a
    /// failover or a restart keeps the locked nodes and the elected jobs
    /// instead of choosing afresh. An annotation that does not parse is
    /// skipped with a warning (that job is elected again, or not).
    pub fn persisted_reservations(&self, now_ms: i64) -> tephra_session::reservation::Reservations {
        let mut r = tephra_session::reservation::Reservations::default();
        let mut targets: Vec<(usize, String, Vec<String>)> = Vec::new();
        for (key, meta) in &self.podgroups {
            let Some(text) = &meta.target else { continue };
            match serde_json::from_str::<Target>(text) {
                Ok(t) => targets.push((t.rank, key.clone(), t.nodes)),
                Err(e) => tracing::warn!("PodGroup {key}: annotation {TARGET_ANNOTATION}: {e}; not adopted"),
            }
        }
        targets.sort();
        r.targets = targets.into_iter().map(|(_, key, nodes)| (key, nodes)).collect();
        for (queue, meta) in &self.queues {
            let nodes: Vec<String> = meta.status["reservation"]["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(String::from))
                .collect();
            if !nodes.is_empty() {
                r.adopt_queue(queue, nodes, now_ms);
            }
        }
        r
    }

    /// Forgets every assumption (on losing leadership): the cluster shows
    /// what the API server said.
    pub fn forget_assumptions(&mut self, c: &mut Cluster) {
        let keys: Vec<String> = self
            .assumed
            .binds
            .keys()
            .chain(self.assumed.evictions.keys())
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        self.assumed = Assumed::default();
        for key in keys {
            if let (Some(&i), Some(m)) = (self.index.pods.get(&key), self.pods.get(&key)) {
                let s = c.pods.status_mut(i);
                *s.node = m.api_node.clone();
                *s.deleting = m.api_deleting;
            }
        }
    }

    /// Every uid the driver knows (Events of others are forgotten).
    pub fn live_uids(&self) -> HashSet<String> {
        let pods = self.pods.values().map(|m| m.uid.clone());
        let groups = self.podgroups.values().map(|m| m.uid.clone());
        pods.chain(groups).chain(self.queues.values().map(|m| m.uid.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::runtime::watcher::Event;
    use std::collections::BTreeMap;
    use tephra_model::tracked::Changes;

    fn pod(name: &str, rv: &str, node: Option<&str>, phase: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                resource_version: Some(rv.into()),
                creation_timestamp: None,
                ..Default::default()
            },
            spec: Some(PodSpec {
                scheduler_name: Some("volcano".into()),
                node_name: node.map(Into::into),
                containers: vec![Container {
                    name: "c".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(BTreeMap::from([("cpu".to_string(), Quantity("1".into()))])),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: Some(PodStatus { phase: Some(phase.into()), ..Default::default() }),
        }
    }

    fn ours(event: Event<Pod>) -> Change {
        Change::of(watch("pods").unwrap(), event)
    }

    #[test]
    fn binds_and_starts_are_status_changes_and_new_pods_whole_ones() {
        let mut s = Store::default();
        let mut c = Cluster::default();
        s.apply(&mut c, ours(Event::Init));
        s.apply(&mut c, ours(Event::InitApply(pod("a", "1", None, "Pending"))));
        s.apply(&mut c, ours(Event::InitApply(pod("b", "1", None, "Pending"))));
        s.apply(&mut c, ours(Event::InitDone));
        s.settle(&mut c);
        assert_eq!(c.pods.len(), 2);
        // A plain pod is a job of its own at once, its PodGroup written aside.
        assert_eq!(c.pods[0].group.as_deref(), Some("podgroup-uid-a"));
        assert!(c.podgroups.iter().any(|g| g.name == "podgroup-uid-a" && g.min_member == 1));
        assert!(s.take_writes().iter().any(|w| matches!(w, Write::PlainPod { pod, .. } if pod == "a")));
        // Its annotation is owed, to go with its binding.
        assert_eq!(s.pods[&c.pods[0].key()].group_note.as_deref(), Some("podgroup-uid-a"));
        let mark = c.pods.mark();
        // Bound (assumed), then the watch shows it, then it runs.
        s.assume_bind(&mut c, "ns/a", "n1");
        s.apply(&mut c, ours(Event::Apply(pod("a", "2", None, "Pending"))));
        assert_eq!(c.pods[0].node.as_deref(), Some("n1"), "a stale event does not undo an assumed bind");
        s.apply(&mut c, ours(Event::Apply(pod("a", "3", Some("n1"), "Running"))));
        s.settle(&mut c);
        assert_eq!(c.pods[0].phase, tephra_model::cluster::PodPhase::Running);
        assert_eq!(c.pods.changes_since(mark), Changes::Status(vec![0]));
        // A new pod is a whole change; a deleted one too.
        let mark = c.pods.mark();
        s.apply(&mut c, ours(Event::Apply(pod("c", "1", None, "Pending"))));
        s.settle(&mut c);
        assert_eq!(c.pods.changes_since(mark), Changes::Whole);
        s.apply(&mut c, ours(Event::Delete(pod("b", "2", None, "Pending"))));
        s.settle(&mut c);
        assert_eq!(c.pods.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["a", "c"]);
        // A relist that no longer lists a pod removes it.
        s.apply(&mut c, ours(Event::Init));
        s.apply(&mut c, ours(Event::InitApply(pod("a", "3", Some("n1"), "Running"))));
        s.apply(&mut c, ours(Event::InitDone));
        s.settle(&mut c);
        assert_eq!(c.pods.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn an_unreadable_object_is_reported_once_per_version_and_left_out() {
        let mut s = Store::default();
        let mut c = Cluster::default();
        let mut bad = pod("x", "1", None, "Pending");
        bad.status.as_mut().unwrap().phase = Some("Runing".into());
        s.apply(&mut c, ours(Event::Apply(bad.clone())));
        s.apply(&mut c, ours(Event::Apply(bad)));
        s.settle(&mut c);
        let invalid = s.take_invalid();
        assert_eq!(invalid.len(), 1, "{invalid:?}");
        assert!(invalid[0].message.contains("Pod ns/x") && invalid[0].message.contains("status.phase"), "{invalid:?}");
        assert!(c.pods.is_empty());
    }
}
