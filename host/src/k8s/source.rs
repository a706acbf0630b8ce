//! Watches the API server and turns its objects into a [`Cluster`].
//!
//! One kube-rs reflector per kind keeps a local cache; a watch error or an
//! API server restart makes the watcher back off and relist, and the cache
//! is swapped whole when the relist completes, so a cycle never sees half a
//! list. Objects go through [`manifest::from_value`], so a Pod or Queue from
//! the API is read exactly like the same YAML in a file.

use crate::manifest::{self, Object};
use crate::model::Cluster;
use anyhow::{anyhow, Result};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

/// Volcano's API group and version for Queue and PodGroup.
pub const VOLCANO_API: &str = "scheduling.volcano.sh/v1beta1";

/// `scheduling.volcano.sh/v1beta1` Queue (cluster-scoped).
pub fn queue_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("scheduling.volcano.sh", "v1beta1", "Queue"), "queues")
}

/// `scheduling.volcano.sh/v1beta1` PodGroup (namespaced).
pub fn podgroup_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("scheduling.volcano.sh", "v1beta1", "PodGroup"),
        "podgroups",
    )
}

/// The local caches of every kind the scheduler reads.
#[derive(Clone)]
pub struct Source {
    pub nodes: Store<Node>,
    /// Pods whose `spec.schedulerName` is ours.
    pub our_pods: Store<Pod>,
    /// Pods of other schedulers that are bound to a node (node accounting only).
    pub other_pods: Store<Pod>,
    pub podgroups: Store<DynamicObject>,
    pub queues: Store<DynamicObject>,
    pub classes: Store<PriorityClass>,
}

/// Runs one reflector in the background; errors are logged and retried with
/// backoff (the watcher relists after a 410 or a reconnect).
fn reflect<K>(api: Api<K>, config: watcher::Config, dyntype: K::DynamicType, what: &'static str) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let writer = reflector::store::Writer::new(dyntype);
    let reader = writer.as_reader();
    // managedFields are half of most objects and never read here.
    let stream = watcher(api, config).default_backoff().map_ok(|ev| {
        ev.modify(|o| {
            o.managed_fields_mut().clear();
        })
    });
    let stream = reflector::reflector(writer, stream);
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                tracing::warn!("watch {what}: {e}; retrying");
            }
        }
    });
    reader
}

impl Source {
    /// Starts the watches. Pods are watched twice with field selectors, as
    /// Volcano's informer filters them: ours (any state), and others' bound ones.
    pub fn start(client: &Client, scheduler_name: &str) -> Source {
        let pods: Api<Pod> = Api::all(client.clone());
        let ours = watcher::Config::default().fields(&format!("spec.schedulerName={scheduler_name}"));
        let others =
            watcher::Config::default().fields(&format!("spec.schedulerName!={scheduler_name},spec.nodeName!="));
        let qr = queue_resource();
        let pgr = podgroup_resource();
        Source {
            nodes: reflect(Api::all(client.clone()), Default::default(), (), "nodes"),
            our_pods: reflect(pods.clone(), ours, (), "pods"),
            other_pods: reflect(pods, others, (), "bound pods of other schedulers"),
            podgroups: reflect(Api::all_with(client.clone(), &pgr), Default::default(), pgr, "podgroups"),
            queues: reflect(Api::all_with(client.clone(), &qr), Default::default(), qr, "queues"),
            classes: reflect(Api::all(client.clone()), Default::default(), (), "priorityclasses"),
        }
    }

    /// Waits until every cache has completed its first list.
    pub async fn ready(&self) -> Result<()> {
        let e = |what: &str| anyhow!("the {what} watch stopped before its first list");
        self.nodes.wait_until_ready().await.map_err(|_| e("nodes"))?;
        self.our_pods.wait_until_ready().await.map_err(|_| e("pods"))?;
        self.other_pods.wait_until_ready().await.map_err(|_| e("pods"))?;
        self.podgroups.wait_until_ready().await.map_err(|_| e("podgroups"))?;
        self.queues.wait_until_ready().await.map_err(|_| e("queues"))?;
        self.classes.wait_until_ready().await.map_err(|_| e("priorityclasses"))?;
        Ok(())
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

/// The cluster as seen this cycle, with the API objects behind it.
#[derive(Default)]
pub struct View {
    pub cluster: Cluster,
    /// Our pods by `namespace/name`.
    pub pods: HashMap<String, Arc<Pod>>,
    /// PodGroups by `namespace/name`.
    pub podgroups: HashMap<String, Arc<DynamicObject>>,
    /// Queues by name.
    pub queues: HashMap<String, Arc<DynamicObject>>,
    /// Objects left out because they could not be read (new this cycle).
    pub invalid: Vec<Invalid>,
}

/// Converts API objects to model objects, remembering each (uid,
/// resourceVersion) so an unchanged object is not converted again and a bad
/// one is reported once per version.
#[derive(Default)]
pub struct Converter {
    memo: HashMap<String, (String, Result<Object, String>)>,
}

impl Converter {
    fn convert(
        &mut self,
        uid: &str,
        rv: &str,
        json: impl FnOnce() -> serde_json::Result<serde_json::Value>,
        seen: &mut HashSet<String>,
        invalid: &mut Vec<Invalid>,
        label: impl FnOnce() -> String,
    ) -> Option<Object> {
        seen.insert(uid.to_string());
        if let Some((v, r)) = self.memo.get(uid) {
            if v == rv {
                return r.as_ref().ok().cloned();
            }
        }
        let result = json()
            .map_err(|e| e.to_string())
            .and_then(|j| serde_yaml::to_value(j).map_err(|e| e.to_string()))
            .and_then(|y| manifest::from_value(&y, "apiserver").map_err(|e| format!("{e:#}")));
        if let Err(message) = &result {
            invalid.push(Invalid { object: label(), uid: uid.to_string(), message: message.clone() });
        }
        self.memo.insert(uid.to_string(), (rv.to_string(), result.clone()));
        result.ok()
    }

    /// Builds this cycle's view from the caches.
    pub fn view(&mut self, src: &Source) -> View {
        let mut view = View::default();
        let mut seen = HashSet::new();
        let c = &mut view.cluster;
        for n in src.nodes.state() {
            let (uid, rv) = ids(n.as_ref());
            let label = || format!("Node {}", n.name_any());
            match self.convert(&uid, &rv, || serde_json::to_value(n.as_ref()), &mut seen, &mut view.invalid, label) {
                Some(Object::Node(node)) => c.nodes.push(node),
                _ => continue,
            }
        }
        for (name, pc) in src.classes.state().iter().map(|p| (p.name_any(), p)) {
            let (uid, rv) = ids(pc.as_ref());
            let label = || format!("PriorityClass {name}");
            if let Some(Object::PriorityClass(n, p)) =
                self.convert(&uid, &rv, || serde_json::to_value(pc.as_ref()), &mut seen, &mut view.invalid, label)
            {
                c.priority_classes.insert(n, p);
            }
        }
        for q in src.queues.state() {
            let (uid, rv) = ids(q.as_ref());
            let label = || format!("Queue {}", q.name_any());
            let json = || dynamic_json(&q, "Queue");
            if let Some(Object::Queue(queue)) = self.convert(&uid, &rv, json, &mut seen, &mut view.invalid, label) {
                view.queues.insert(queue.name.clone(), q.clone());
                c.queues.push(queue);
            }
        }
        for g in src.podgroups.state() {
            let (uid, rv) = ids(g.as_ref());
            let label = || format!("PodGroup {}/{}", g.namespace().unwrap_or_default(), g.name_any());
            let json = || dynamic_json(&g, "PodGroup");
            if let Some(Object::PodGroup(pg)) = self.convert(&uid, &rv, json, &mut seen, &mut view.invalid, label) {
                view.podgroups.insert(pg.key(), g.clone());
                c.podgroups.push(pg);
            }
        }
        let ours = src.our_pods.state();
        let others = src.other_pods.state();
        for (p, mine) in ours.iter().map(|p| (p, true)).chain(others.iter().map(|p| (p, false))) {
            let (uid, rv) = ids(p.as_ref());
            let label = || format!("Pod {}/{}", p.namespace().unwrap_or_default(), p.name_any());
            if let Some(Object::Pod(pod)) =
                self.convert(&uid, &rv, || serde_json::to_value(p.as_ref()), &mut seen, &mut view.invalid, label)
            {
                let mut pod = pod;
                if mine {
                    view.pods.insert(pod.key(), p.clone());
                } else {
                    // Others' pods only take room on their nodes; they are never tasks.
                    pod.group = None;
                }
                c.pods.push(pod);
            }
        }
        self.memo.retain(|uid, _| seen.contains(uid));
        // Stable orders: creation, then name (the caches iterate in hash order).
        c.nodes.sort_by(|a, b| a.name.cmp(&b.name));
        c.queues.sort_by(|a, b| (a.created, &a.name).cmp(&(b.created, &b.name)));
        c.podgroups.sort_by_cached_key(|g| (g.created, g.key()));
        c.pods.sort_by_cached_key(|p| (p.created, p.key()));
        view
    }
}

fn ids<K: Resource>(o: &K) -> (String, String) {
    let m = o.meta();
    (
        m.uid.clone().unwrap_or_else(|| format!("{:?}/{:?}", m.namespace, m.name)),
        m.resource_version.clone().unwrap_or_default(),
    )
}

/// A dynamic object as JSON with its apiVersion and kind set (list items may lack them).
fn dynamic_json(o: &DynamicObject, kind: &str) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(o)?;
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), VOLCANO_API.into());
        m.insert("kind".into(), kind.into());
    }
    Ok(v)
}
