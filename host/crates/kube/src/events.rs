//! Kubernetes Events (`v1` Event objects), written only when their message
//! changes for the same object and reason, so a pod pending for an hour gets
//! one `FailedScheduling` per distinct reason, not one per cycle.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::Client;
use std::collections::HashMap;
use std::sync::Mutex;

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Something done.
    Normal,
    /// Something a person should look at.
    Warning,
}

/// Writes Events on behalf of the scheduler.
pub struct Recorder {
    client: Client,
    component: String,
    instance: String,
    /// (object uid, reason) → the last message written.
    last: Mutex<HashMap<(String, String), String>>,
}

/// A reference to the object an Event is about.
pub fn reference(api_version: &str, kind: &str, namespace: Option<&str>, name: &str, uid: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        namespace: namespace.map(Into::into),
        name: Some(name.into()),
        uid: Some(uid.into()),
        ..Default::default()
    }
}

impl Recorder {
    /// A recorder reporting as `component` (the scheduler name) from `instance`.
    pub fn new(client: Client, component: &str, instance: &str) -> Self {
        Recorder { client, component: component.into(), instance: instance.into(), last: Mutex::new(HashMap::new()) }
    }

    /// Whether this message is new for (object, reason); records it.
    fn changed(&self, obj: &ObjectReference, reason: &str, message: &str) -> bool {
        let key = (obj.uid.clone().unwrap_or_default(), reason.to_string());
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.get(&key).is_some_and(|m| m == message) {
            return false;
        }
        last.insert(key, message.to_string());
        true
    }

    /// Forgets what was written for objects not in `live` (deleted objects).
    pub fn retain(&self, live: &std::collections::HashSet<String>) {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).retain(|(uid, _), _| live.contains(uid));
    }

    /// Writes an Event unless the same (object, reason, message) was the last one written.
    pub async fn emit(&self, obj: &ObjectReference, kind: Kind, reason: &str, message: &str) {
        if !self.changed(obj, reason, message) {
            return;
        }
        self.write(obj, kind, reason, message).await;
    }

    /// Writes an Event every time (one-off happenings: a bind, an eviction).
    pub async fn write(&self, obj: &ObjectReference, kind: Kind, reason: &str, message: &str) {
        let now = Timestamp::now();
        let ns = obj.namespace.clone().unwrap_or_else(|| "default".into());
        let name = format!("{}.{:x}", obj.name.as_deref().unwrap_or("object"), now.as_nanosecond());
        let ev = Event {
            metadata: ObjectMeta { name: Some(name), namespace: Some(ns.clone()), ..Default::default() },
            involved_object: obj.clone(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            type_: Some(match kind {
                Kind::Normal => "Normal".into(),
                Kind::Warning => "Warning".into(),
            }),
            source: Some(EventSource { component: Some(self.component.clone()), host: None }),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &ns);
        let what = format!("event {reason} on {}", obj.name.as_deref().unwrap_or("?"));
        match api.create(&PostParams::default(), &ev).await {
            Ok(_) => {}
            // The API server is away (restarting, overloaded): written again
            // in the background, as client-go's recorder does, so a bind made
            // just before an outage still gets its Scheduled Event and no
            // cycle waits for it.
            Err(e) if retryable(&e) => {
                tokio::spawn(async move {
                    for delay in RETRY_DELAYS_MS {
                        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                        match api.create(&PostParams::default(), &ev).await {
                            Ok(_) => return,
                            Err(e) if retryable(&e) => continue,
                            Err(e) => return tracing::warn!("{what}: {e}"),
                        }
                    }
                    tracing::warn!("{what}: not written after {} tries: {e}", RETRY_DELAYS_MS.len() + 1);
                });
            }
            Err(e) => tracing::warn!("{what}: {e}"),
        }
    }
}

/// An API server's refusal as a pod's condition and Events say it:
/// `message (code)`.
pub fn refusal(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
        e => e.to_string(),
    }
}

/// Waits before each new try of an Event write (about two minutes in all).
const RETRY_DELAYS_MS: [u64; 11] = [250, 500, 1000, 2000, 4000, 8000, 10000, 15000, 20000, 25000, 30000];

/// Errors worth another try: no answer at all, a server error, throttling.
fn retryable(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code >= 500 || s.code == 429,
        _ => true,
    }
}
