//! One watch of one kind, run in the background and fed into one channel as
//! [`Change`]s that name their watch: the machinery every watched kind shares
//! (the kinds themselves are listed in source.rs).

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::any::Any;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Where an event stands in a watch's (re)list.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// A relist begins.
    Init,
    /// An object (listed, changed or deleted).
    Object,
    /// The relist is complete.
    InitDone,
}

/// One watch event, by the watch it came from; the object travels typed but
/// unnamed (the watch's entry knows its type).
pub struct Change {
    /// The watch's position in the table of watched kinds.
    pub watch: usize,
    /// Where it stands in its watch's list.
    pub step: Step,
    /// The key (`namespace/name` or `name`) of the object a relist delivers.
    pub listed: Option<String>,
    /// A deleted object's uid and key.
    pub deleted: Option<(String, String)>,
    /// An object applied or listed.
    pub object: Option<Box<dyn Any + Send>>,
}

impl Change {
    /// `event` of watch number `watch`.
    pub fn of<K: Resource + Send + 'static>(watch: usize, event: Event<K>) -> Change {
        let (step, listed, deleted, object) = match event {
            Event::Init => (Step::Init, None, None, None),
            Event::InitDone => (Step::InitDone, None, None, None),
            Event::InitApply(o) => (Step::Object, Some(key_of(&o)), None, Some(Box::new(o) as Box<dyn Any + Send>)),
            Event::Apply(o) => (Step::Object, None, None, Some(Box::new(o) as Box<dyn Any + Send>)),
            Event::Delete(o) => (Step::Object, None, Some((ids(&o).0, key_of(&o))), None),
        };
        Change { watch, step, listed, deleted, object }
    }
}

/// An object's uid and resourceVersion.
pub fn ids<K: Resource>(o: &K) -> (String, String) {
    let m = o.meta();
    (
        m.uid.clone().unwrap_or_else(|| format!("{:?}/{:?}", m.namespace, m.name)),
        m.resource_version.clone().unwrap_or_default(),
    )
}

/// An object's `namespace/name`, or `name` when it is cluster-scoped.
pub fn key_of<K: Resource>(o: &K) -> String {
    match o.meta().namespace.as_deref() {
        Some(ns) => format!("{ns}/{}", o.meta().name.as_deref().unwrap_or_default()),
        None => o.meta().name.clone().unwrap_or_default(),
    }
}

/// Per watch (by name), why the API server refuses to list its kind.
pub type Denied = Arc<Mutex<HashMap<&'static str, String>>>;

/// What every watch feeds: the channel, and where refusals are noted.
#[derive(Clone)]
pub struct Feed {
    /// The channel.
    pub tx: mpsc::UnboundedSender<Change>,
    /// Per watch, why the API server refuses to list its kind.
    pub denied: Denied,
}

/// One watch to run: its number, name, whether a cluster may lack its kind
/// (a CRD not installed: its list failing with 404, or 403, counts as empty
/// so the other watches' sync does not wait for it).
#[derive(Clone, Copy)]
pub struct Spec {
    /// Its number in the table of watched kinds.
    pub watch: usize,
    /// Its name.
    pub name: &'static str,
    /// Whether a cluster may lack its kind.
    pub optional: bool,
}

/// Runs one watcher in the background; errors are logged and retried with
/// backoff (the watcher relists after a 410 or a reconnect).
pub fn forward<K>(api: Api<K>, config: watcher::Config, feed: Feed, spec: Spec) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let Spec { watch, name, optional } = spec;
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
                        retrying.worked(name);
                    }
                    if absent_told {
                        feed.denied.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
                    }
                    // managedFields are half of most objects and never read here.
                    ev = ev.modify(|o| o.managed_fields_mut().clear());
                    if feed.tx.send(Change::of(watch, ev)).is_err() {
                        return;
                    }
                }
                Err(watcher::Error::InitialListFailed(kube::Error::Api(e)))
                    if optional && (e.code == 404 || e.code == 403) =>
                {
                    if !absent_told {
                        absent_told = true;
                        if e.code == 403 {
                            let why = format!("the API server refuses to list {name} to tephra: {}", e.message);
                            tracing::error!("watch {name}: {why}");
                            feed.denied.lock().unwrap_or_else(|e| e.into_inner()).insert(name, why);
                        } else {
                            tracing::warn!("watch {name}: the API server does not serve them (CRD not installed?)");
                        }
                        let _ = feed.tx.send(Change::of::<K>(watch, Event::Init));
                        if feed.tx.send(Change::of::<K>(watch, Event::InitDone)).is_err() {
                            return;
                        }
                    }
                }
                Err(e) => retrying.failed(name, &crate::watch_error(&e)),
            }
        }
    })
}
