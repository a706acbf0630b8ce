//! Watches the API server and keeps one long-lived cluster up to date from
//! its events.
//!
//! One kube-rs watcher per kind sends its events into one channel
//! ([`Watches`]); between cycles the driver drains it into the [`Store`],
//! which changes the cluster in place: a pod that was bound, started,
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
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::CSINode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::time::{Duration, Instant};
use tephra_model::cluster::{Cluster, Pod as ModelPod, PodGroup};
use tephra_model::tracked::Tracked;
use tephra_readers::manifest::{self, Object};
use tokio::sync::mpsc;

/// How long an unconfirmed bind or eviction is assumed before the watch is trusted again.
const ASSUME_FOR: Duration = Duration::from_secs(30);

/// One watch event, by the watch it came from (boxed: they travel through
/// a channel and differ much in size).
pub enum Change {
    Node(Box<Event<Node>>),
    /// `ours`: a pod whose `spec.schedulerName` is ours; else another
    /// scheduler's bound pod (it only takes room on its node).
    Pod {
        ours: bool,
        event: Box<Event<Pod>>,
    },
    PodGroup(Box<Event<DynamicObject>>),
    Queue(Box<Event<DynamicObject>>),
    Class(Box<Event<PriorityClass>>),
    /// Namespaces' labels, for pod affinity's `namespaceSelector`.
    Namespace(Box<Event<Namespace>>),
    /// Claims and volumes: where pods' volumes let them run.
    Claim(Box<Event<PersistentVolumeClaim>>),
    Volume(Box<Event<PersistentVolume>>),
    /// Nodes' CSI attach limits.
    CsiNode(Box<Event<CSINode>>),
    /// The network topology (absent CRD: an empty list).
    HyperNode(Box<Event<DynamicObject>>),
    /// Advance reservations (absent CRD: an empty list).
    Reservation(Box<Event<DynamicObject>>),
}

/// The watches, in the order [`Change::stream`] numbers them.
const STREAMS: [&str; 12] = [
    "nodes",
    "pods",
    "bound pods of other schedulers",
    "podgroups",
    "queues",
    "priorityclasses",
    "namespaces",
    "persistentvolumeclaims",
    "persistentvolumes",
    "csinodes",
    "hypernodes",
    "reservations",
];

/// Watches of kinds a cluster may lack (a CRD not installed): their list
/// failing with 404 (or 403) counts as empty, so the other watches' sync
/// does not wait for them.
const OPTIONAL: [&str; 2] = ["hypernodes", "reservations"];

/// Where an event stands in a watch's (re)list.
#[derive(PartialEq)]
enum Step {
    /// A relist begins.
    Init,
    /// An object (listed or changed).
    Object,
    /// The relist is complete.
    InitDone,
}

fn step<K>(e: &Event<K>) -> Step {
    match e {
        Event::Init => Step::Init,
        Event::InitDone => Step::InitDone,
        _ => Step::Object,
    }
}

/// The uid of an object a delete event names.
fn deleted_uid<K: Resource>(e: &Event<K>) -> Option<String> {
    match e {
        Event::Delete(o) => Some(ids(o).0),
        _ => None,
    }
}

/// The key of an object a relist delivers.
fn listed_key<K: Resource>(e: &Event<K>) -> Option<String> {
    match e {
        Event::InitApply(o) => Some(key_of(o)),
        _ => None,
    }
}

impl Change {
    fn stream(&self) -> usize {
        match self {
            Change::Node(_) => 0,
            Change::Pod { ours: true, .. } => 1,
            Change::Pod { ours: false, .. } => 2,
            Change::PodGroup(_) => 3,
            Change::Queue(_) => 4,
            Change::Class(_) => 5,
            Change::Namespace(_) => 6,
            Change::Claim(_) => 7,
            Change::Volume(_) => 8,
            Change::CsiNode(_) => 9,
            Change::HyperNode(_) => 10,
            Change::Reservation(_) => 11,
        }
    }

    fn step(&self) -> Step {
        match self {
            Change::Node(e) => step(&**e),
            Change::Pod { event, .. } => step(&**event),
            Change::PodGroup(e) | Change::Queue(e) | Change::HyperNode(e) | Change::Reservation(e) => step(&**e),
            Change::Class(e) => step(&**e),
            Change::Namespace(e) => step(&**e),
            Change::Claim(e) => step(&**e),
            Change::Volume(e) => step(&**e),
            Change::CsiNode(e) => step(&**e),
        }
    }
}

/// The running watches, all feeding one channel.
pub struct Watches {
    rx: mpsc::UnboundedReceiver<Change>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Kinds the API server refuses to list to us (RBAC), with why.
    denied: Denied,
}

/// Per watch (by name), why the API server refuses to list its kind.
type Denied = std::sync::Arc<std::sync::Mutex<HashMap<&'static str, String>>>;

/// Runs one watcher in the background; errors are logged and retried with
/// backoff (the watcher relists after a 410 or a reconnect).
fn forward<K>(
    api: Api<K>,
    config: watcher::Config,
    (tx, denied): (mpsc::UnboundedSender<Change>, Denied),
    wrap: impl Fn(Box<Event<K>>) -> Change + Send + 'static,
    what: &'static str,
) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    tokio::spawn(async move {
        let stream = watcher::watcher(api, config).default_backoff();
        let mut stream = std::pin::pin!(stream);
        // A kind whose CRD is not installed lists as empty (once), so the
        // store syncs; the watch keeps trying and lists it once it appears.
        // One we may not list (RBAC) does too, and is reported as denied.
        let mut absent_told = false;
        let mut retrying = crate::Retrying::default();
        while let Some(item) = stream.next().await {
            match item {
                Ok(mut ev) => {
                    // A relist starts with Init and may fail before it delivers anything.
                    if !matches!(ev, Event::Init) {
                        retrying.worked(what);
                    }
                    if absent_told {
                        denied.lock().unwrap_or_else(|e| e.into_inner()).remove(what);
                    }
                    // managedFields are half of most objects and never read here.
                    ev = ev.modify(|o| o.managed_fields_mut().clear());
                    if tx.send(wrap(Box::new(ev))).is_err() {
                        return;
                    }
                }
                Err(watcher::Error::InitialListFailed(kube::Error::Api(e)))
                    if OPTIONAL.contains(&what) && (e.code == 404 || e.code == 403) =>
                {
                    if !absent_told {
                        absent_told = true;
                        if e.code == 403 {
                            let why = format!("the API server refuses to list {what} to tephra: {}", e.message);
                            tracing::error!("watch {what}: {why}");
                            denied.lock().unwrap_or_else(|e| e.into_inner()).insert(what, why);
                        } else {
                            tracing::warn!("watch {what}: the API server does not serve them (CRD not installed?)");
                        }
                        let _ = tx.send(wrap(Box::new(Event::Init)));
                        if tx.send(wrap(Box::new(Event::InitDone))).is_err() {
                            return;
                        }
                    }
                }
                Err(e) => retrying.failed(what, &crate::watch_error(&e)),
            }
        }
    })
}

impl Watches {
    /// Starts the watches (on the current runtime). Pods are watched twice
    /// with field selectors, as Volcano's informer filters them: ours (any
    /// state), and others' bound ones.
    pub fn start(client: &Client, scheduler_name: &str) -> Watches {
        let (tx, rx) = mpsc::unbounded_channel();
        let denied: Denied = Default::default();
        let pods: Api<Pod> = Api::all(client.clone());
        let ours = watcher::Config::default().fields(&format!("spec.schedulerName={scheduler_name}"));
        let others =
            watcher::Config::default().fields(&format!("spec.schedulerName!={scheduler_name},spec.nodeName!="));
        let (qr, pgr, hnr) = (queue_resource(), podgroup_resource(), hypernode_resource());
        let tasks = vec![
            forward(
                Api::all(client.clone()),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::Node,
                STREAMS[0],
            ),
            forward(
                pods.clone(),
                ours,
                (tx.clone(), denied.clone()),
                |event| Change::Pod { ours: true, event },
                STREAMS[1],
            ),
            forward(pods, others, (tx.clone(), denied.clone()), |event| Change::Pod { ours: false, event }, STREAMS[2]),
            forward(
                Api::all_with(client.clone(), &pgr),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::PodGroup,
                STREAMS[3],
            ),
            forward(
                Api::all_with(client.clone(), &qr),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::Queue,
                STREAMS[4],
            ),
            forward(
                Api::all(client.clone()),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::Class,
                STREAMS[5],
            ),
            forward(
                Api::all(client.clone()),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::Namespace,
                STREAMS[6],
            ),
            forward(
                Api::all(client.clone()),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::Claim,
                STREAMS[7],
            ),
            forward(
                Api::all(client.clone()),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::Volume,
                STREAMS[8],
            ),
            forward(
                Api::all(client.clone()),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::CsiNode,
                STREAMS[9],
            ),
            forward(
                Api::all_with(client.clone(), &hnr),
                Default::default(),
                (tx.clone(), denied.clone()),
                Change::HyperNode,
                STREAMS[10],
            ),
            forward(
                Api::all_with(client.clone(), &reservation_resource()),
                Default::default(),
                (tx, denied.clone()),
                Change::Reservation,
                STREAMS[11],
            ),
        ];
        Watches { rx, tasks, denied }
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
    pub uid: String,
    /// One line naming the object and the field.
    pub message: String,
}

/// What the driver keeps of one of our pods (or another scheduler's).
#[derive(Clone, Debug, Default)]
pub struct PodMeta {
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
}

/// What the driver keeps of a PodGroup or Queue object.
#[derive(Clone, Debug, Default)]
pub struct ObjMeta {
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
}

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
    classes: HashMap<String, String>,
    /// Namespace name → resourceVersion.
    namespaces: HashMap<String, String>,
    /// PersistentVolumeClaim `namespace/name` and PersistentVolume name → resourceVersion.
    claims: HashMap<String, String>,
    volumes: HashMap<String, String>,
    /// CSINode name → resourceVersion.
    csinodes: HashMap<String, String>,
    /// HyperNode name → resourceVersion.
    hypernodes: HashMap<String, String>,
    /// Reservation name → resourceVersion, and its status as the API has it.
    reservations: HashMap<String, String>,
    pub reservation_status: HashMap<String, serde_json::Value>,
    /// Reservations that do not read, with why (their status says so).
    pub reservation_invalid: HashMap<String, String>,
    index: Index,
    /// Lists whose order or length changed: sorted and re-indexed at [`Store::settle`].
    reorder: bool,
    /// Keys listed so far by a relist under way, per stream.
    relist: [Option<HashSet<String>>; 12],
    synced: [bool; 12],
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
fn to_model<K: Serialize>(obj: &K, dynamic_kind: Option<&str>) -> Result<Object, String> {
    let mut yaml = serde_yaml::to_value(obj).map_err(|e| e.to_string())?;
    if let (Some(kind), Some(m)) = (dynamic_kind, yaml.as_mapping_mut()) {
        // List items of dynamic objects may lack them.
        let api = match kind {
            "HyperNode" => "topology.volcano.sh/v1alpha1",
            "Reservation" => tephra_model::window::API_VERSION,
            _ => VOLCANO_API,
        };
        m.insert("apiVersion".into(), api.into());
        m.insert("kind".into(), kind.into());
    }
    manifest::from_value(&yaml, "apiserver").map_err(|e| format!("{e:#}"))
}

fn ids<K: Resource>(o: &K) -> (String, String) {
    let m = o.meta();
    (
        m.uid.clone().unwrap_or_else(|| format!("{:?}/{:?}", m.namespace, m.name)),
        m.resource_version.clone().unwrap_or_default(),
    )
}

fn key_of<K: Resource>(o: &K) -> String {
    match o.meta().namespace.as_deref() {
        Some(ns) => format!("{ns}/{}", o.meta().name.as_deref().unwrap_or_default()),
        None => o.meta().name.clone().unwrap_or_default(),
    }
}

/// A keyed object read: its key, version, and name and value when readable.
type Keyed<V> = (String, String, Option<(String, V)>);

/// Keeps what [`Store::keyed`] read: the version, and the value under its
/// name when it changed; an unreadable version removes the object.
fn keep<V: PartialEq>(seen: &mut HashMap<String, String>, map: &mut BTreeMap<String, V>, read: Option<Keyed<V>>) {
    match read {
        None => {}
        Some((key, rv, Some((name, value)))) => {
            seen.insert(key, rv);
            if map.get(&name) != Some(&value) {
                map.insert(name, value);
            }
        }
        Some((key, _, None)) => forget(seen, map, &key),
    }
}

/// An object gone: its version and its value.
fn forget<V>(seen: &mut HashMap<String, String>, map: &mut BTreeMap<String, V>, key: &str) {
    seen.remove(key);
    map.remove(key);
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
        let stream = change.stream();
        match change.step() {
            Step::Init => self.relist[stream] = Some(HashSet::new()),
            Step::InitDone => {
                self.synced[stream] = true;
                if let Some(listed) = self.relist[stream].take() {
                    self.relisted(c, stream, &listed);
                }
            }
            Step::Object => {
                if let Some(listed) = &mut self.relist[stream] {
                    let key = match &change {
                        Change::Node(e) => listed_key(&**e),
                        Change::Pod { event, .. } => listed_key(&**event),
                        Change::PodGroup(e) | Change::Queue(e) | Change::HyperNode(e) | Change::Reservation(e) => {
                            listed_key(&**e)
                        }
                        Change::Class(e) => listed_key(&**e),
                        Change::Namespace(e) => listed_key(&**e),
                        Change::Claim(e) => listed_key(&**e),
                        Change::Volume(e) => listed_key(&**e),
                        Change::CsiNode(e) => listed_key(&**e),
                    };
                    listed.extend(key);
                }
                self.one(c, change);
            }
        }
    }

    /// A relist completed: every object of that stream it did not list is
    /// gone. (Its objects were applied as they came: an object changed
    /// meanwhile is newer in the list than in the cluster, never older.)
    fn relisted(&mut self, c: &mut Cluster, stream: usize, listed: &HashSet<String>) {
        let gone: Vec<String> = match stream {
            0 => self.nodes.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            1 | 2 => {
                let ours = stream == 1;
                self.pods
                    .iter()
                    .filter(|(k, m)| m.ours == ours && !listed.contains(*k))
                    .map(|(k, _)| k.clone())
                    .collect()
            }
            3 => self.podgroups.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            4 => self.queues.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            5 => self.classes.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            6 => self.namespaces.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            7 => self.claims.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            8 => self.volumes.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            9 => self.csinodes.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            10 => self.hypernodes.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            _ => self.reservations.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
        };
        for key in gone {
            match stream {
                0 => self.node_deleted(c, &key),
                1 | 2 => self.pod_deleted(c, &key),
                3 => self.podgroup_deleted(c, &key),
                4 => self.queue_deleted(c, &key),
                5 => self.class_deleted(c, &key),
                6 => self.namespace_deleted(c, &key),
                7 => self.claim_deleted(c, &key),
                8 => self.volume_deleted(c, &key),
                9 => self.csinode_deleted(c, &key),
                10 => self.hypernode_deleted(c, &key),
                _ => self.reservation_deleted(c, &key),
            }
        }
    }

    fn one(&mut self, c: &mut Cluster, change: Change) {
        // A deleted object's unreadable versions need no memory.
        let gone_uid = match &change {
            Change::Node(e) => deleted_uid(&**e),
            Change::Pod { event, .. } => deleted_uid(&**event),
            Change::PodGroup(e) | Change::Queue(e) | Change::HyperNode(e) | Change::Reservation(e) => deleted_uid(&**e),
            Change::Class(e) => deleted_uid(&**e),
            Change::Namespace(e) => deleted_uid(&**e),
            Change::Claim(e) => deleted_uid(&**e),
            Change::Volume(e) => deleted_uid(&**e),
            Change::CsiNode(e) => deleted_uid(&**e),
        };
        if let Some(uid) = gone_uid {
            self.bad.remove(&uid);
        }
        match change {
            Change::Node(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.node_applied(c, &o),
                Event::Delete(o) => self.node_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::Pod { ours, event } => match *event {
                Event::Apply(o) | Event::InitApply(o) => self.pod_applied(c, &o, ours),
                Event::Delete(o) => self.pod_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::PodGroup(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.podgroup_applied(c, &o),
                Event::Delete(o) => self.podgroup_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::Queue(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.queue_applied(c, &o),
                Event::Delete(o) => self.queue_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::Class(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.class_applied(c, &o),
                Event::Delete(o) => self.class_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::Namespace(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.namespace_applied(c, &o),
                Event::Delete(o) => self.namespace_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::Claim(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.claim_applied(c, &o),
                Event::Delete(o) => self.claim_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::Volume(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.volume_applied(c, &o),
                Event::Delete(o) => self.volume_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::CsiNode(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.csinode_applied(c, &o),
                Event::Delete(o) => self.csinode_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::HyperNode(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.hypernode_applied(c, &o),
                Event::Delete(o) => self.hypernode_deleted(c, &key_of(&o)),
                _ => {}
            },
            Change::Reservation(e) => match *e {
                Event::Apply(o) | Event::InitApply(o) => self.reservation_applied(c, &o),
                Event::Delete(o) => self.reservation_deleted(c, &key_of(&o)),
                _ => {}
            },
        }
    }

    /// Reads an object once per version; a bad one is reported once and left out.
    fn read<K: Resource + Serialize>(&mut self, o: &K, kind: &str, dynamic: bool) -> Option<Object> {
        let (uid, rv) = ids(o);
        if self.bad.get(&uid) == Some(&rv) {
            return None;
        }
        match to_model(o, dynamic.then_some(kind)) {
            Ok(obj) => {
                self.bad.remove(&uid);
                Some(obj)
            }
            Err(message) => {
                self.invalid.push(Invalid { object: format!("{kind} {}", key_of(o)), uid: uid.clone(), message });
                self.bad.insert(uid, rv);
                None
            }
        }
    }

    fn node_applied(&mut self, c: &mut Cluster, o: &Node) {
        let (key, ids) = (key_of(o), ids(o));
        if self.nodes.get(&key) == Some(&ids) {
            return;
        }
        let Some(Object::Node(node)) = self.read(o, "Node", false) else {
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

    // Priority classes, namespaces, claims and volumes are each one value
    // under a name in the cluster: read once per version, kept when readable.

    fn class_applied(&mut self, c: &mut Cluster, o: &PriorityClass) {
        let read = self.keyed(
            o,
            |s| &s.classes,
            "PriorityClass",
            |obj| match obj {
                Object::PriorityClass(name, pc) => Some((name, pc)),
                _ => None,
            },
        );
        keep(&mut self.classes, &mut c.priority_classes, read);
    }

    fn class_deleted(&mut self, c: &mut Cluster, key: &str) {
        forget(&mut self.classes, &mut c.priority_classes, key);
    }

    fn namespace_applied(&mut self, c: &mut Cluster, o: &Namespace) {
        let read = self.keyed(
            o,
            |s| &s.namespaces,
            "Namespace",
            |obj| match obj {
                Object::Namespace(name, labels) => Some((name, labels)),
                _ => None,
            },
        );
        keep(&mut self.namespaces, &mut c.namespaces, read);
    }

    fn namespace_deleted(&mut self, c: &mut Cluster, key: &str) {
        forget(&mut self.namespaces, &mut c.namespaces, key);
    }

    fn claim_applied(&mut self, c: &mut Cluster, o: &PersistentVolumeClaim) {
        let read = self.keyed(
            o,
            |s| &s.claims,
            "PersistentVolumeClaim",
            |obj| match obj {
                Object::Claim(key, claim) => Some((key, claim)),
                _ => None,
            },
        );
        keep(&mut self.claims, &mut c.claims, read);
    }

    fn claim_deleted(&mut self, c: &mut Cluster, key: &str) {
        forget(&mut self.claims, &mut c.claims, key);
    }

    fn volume_applied(&mut self, c: &mut Cluster, o: &PersistentVolume) {
        let read = self.keyed(
            o,
            |s| &s.volumes,
            "PersistentVolume",
            |obj| match obj {
                Object::Volume(name, volume) => Some((name, volume)),
                _ => None,
            },
        );
        keep(&mut self.volumes, &mut c.volumes, read);
    }

    fn volume_deleted(&mut self, c: &mut Cluster, key: &str) {
        forget(&mut self.volumes, &mut c.volumes, key);
    }

    fn csinode_applied(&mut self, c: &mut Cluster, o: &CSINode) {
        let read = self.keyed(
            o,
            |s| &s.csinodes,
            "CSINode",
            |obj| match obj {
                Object::AttachLimits(name, limits) => Some((name, limits)),
                _ => None,
            },
        );
        keep(&mut self.csinodes, &mut c.attach_limits, read);
    }

    fn csinode_deleted(&mut self, c: &mut Cluster, key: &str) {
        forget(&mut self.csinodes, &mut c.attach_limits, key);
    }

    fn hypernode_applied(&mut self, c: &mut Cluster, o: &DynamicObject) {
        let read = self.keyed(
            o,
            |s| &s.hypernodes,
            "HyperNode",
            |obj| match obj {
                Object::HyperNode(h) => Some((h.name.clone(), h)),
                _ => None,
            },
        );
        keep(&mut self.hypernodes, &mut c.hypernodes, read);
    }

    fn hypernode_deleted(&mut self, c: &mut Cluster, key: &str) {
        forget(&mut self.hypernodes, &mut c.hypernodes, key);
    }

    fn reservation_applied(&mut self, c: &mut Cluster, o: &DynamicObject) {
        self.reservation_status.insert(key_of(o), o.data.get("status").cloned().unwrap_or_default());
        let (seen, key) = (self.invalid.len(), key_of(o));
        let read = self.keyed(
            o,
            |s| &s.reservations,
            "Reservation",
            |obj| match obj {
                Object::Reservation(r) => Some((r.name.clone(), r)),
                _ => None,
            },
        );
        match &read {
            Some((_, _, Some(_))) => {
                self.reservation_invalid.remove(&key);
            }
            Some((_, _, None)) => {
                if let Some(bad) = self.invalid[seen..].last() {
                    self.reservation_invalid.insert(key, bad.message.clone());
                }
            }
            None => {}
        }
        keep(&mut self.reservations, &mut c.reservations, read);
    }

    fn reservation_deleted(&mut self, c: &mut Cluster, key: &str) {
        self.reservation_status.remove(key);
        self.reservation_invalid.remove(key);
        forget(&mut self.reservations, &mut c.reservations, key);
    }

    /// A keyed object as (key, version, what it reads as): `None` when this
    /// version was seen already, `Some((.., None))` when it cannot be read.
    fn keyed<K: Resource + Serialize, V>(
        &mut self,
        o: &K,
        seen: fn(&Store) -> &HashMap<String, String>,
        kind: &str,
        pick: fn(Object) -> Option<(String, V)>,
    ) -> Option<Keyed<V>> {
        let (key, (_, rv)) = (key_of(o), ids(o));
        if seen(self).get(&key) == Some(&rv) {
            return None;
        }
        Some((key, rv, self.read(o, kind, matches!(kind, "HyperNode" | "Reservation")).and_then(pick)))
    }

    fn queue_applied(&mut self, c: &mut Cluster, o: &DynamicObject) {
        let (key, (uid, rv)) = (key_of(o), ids(o));
        if self.queues.get(&key).is_some_and(|m| m.uid == uid && m.rv == rv) {
            return;
        }
        let Some(Object::Queue(queue)) = self.read(o, "Queue", true) else {
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

    fn podgroup_applied(&mut self, c: &mut Cluster, o: &DynamicObject) {
        let (key, (uid, rv)) = (key_of(o), ids(o));
        if self.podgroups.get(&key).is_some_and(|m| m.uid == uid && m.rv == rv) {
            return;
        }
        let Some(Object::PodGroup(group)) = self.read(o, "PodGroup", true) else {
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

    fn pod_applied(&mut self, c: &mut Cluster, o: &Pod, ours: bool) {
        let (key, (uid, rv)) = (key_of(o), ids(o));
        if self.pods.get(&key).is_some_and(|m| m.uid == uid && m.rv == rv) {
            return;
        }
        let Some(Object::Pod(mut pod)) = self.read(o, "Pod", false) else {
            return self.pod_deleted(c, &key);
        };
        let scheduled = o
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref()?.iter().find(|c| c.type_ == "PodScheduled").cloned())
            .map(Box::new);
        let meta = PodMeta { uid, rv, ours, scheduled, api_node: pod.node.clone(), api_deleting: pod.deleting };
        if !ours {
            // Others' pods only take room on their nodes; they are never tasks.
            pod.group = None;
        } else if pod.group.is_none() {
            self.plain_pod(c, o, &mut pod);
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
    /// controller, so a ReplicaSet's pods share one); the PodGroup object and
    /// the pod's annotation are written off the scheduling path.
    fn plain_pod(&mut self, c: &mut Cluster, o: &Pod, pod: &mut ModelPod) {
        let owner: Option<OwnerReference> = o.owner_references().iter().find(|r| r.controller == Some(true)).cloned();
        let Some(uid) = owner.as_ref().map(|r| r.uid.clone()).or_else(|| o.metadata.uid.clone()) else { return };
        let name = format!("podgroup-{uid}");
        pod.group = Some(name.clone());
        pod.annotations.insert(GROUP_ANNOTATION.into(), name.clone());
        let key = format!("{}/{name}", pod.namespace);
        // The group as the API should have it, while it does not.
        let missing = (!self.podgroups.contains_key(&key)).then(|| controller::implicit_group(pod, &name));
        if let Some(group) = missing.as_ref().filter(|_| !self.index.podgroups.contains_key(&key)) {
            self.put_group(c, key, group.clone());
        }
        if self.queued.insert(pod.key()) {
            self.writes.push(Write::PlainPod {
                namespace: pod.namespace.clone(),
                pod: pod.name.clone(),
                pod_uid: o.metadata.uid.clone().unwrap_or_default(),
                owner,
                group: missing.map(Box::new),
                group_name: name,
            });
        }
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
        let expired: Vec<String> = self
            .assumed
            .binds
            .iter()
            .filter(|(_, (_, t))| now.duration_since(*t) >= ASSUME_FOR)
            .map(|(k, _)| k.clone())
            .chain(
                self.assumed
                    .evictions
                    .iter()
                    .filter(|(_, t)| now.duration_since(**t) >= ASSUME_FOR)
                    .map(|(k, _)| k.clone()),
            )
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
        Change::Pod { ours: true, event: Box::new(event) }
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
