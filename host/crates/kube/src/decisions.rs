//! Admin decisions on plugin versions, kept in the API server so they
//! outlive a restart and reach every replica: the ConfigMap
//! [`NAME`] in the scheduler's namespace holds one key per plugin (the
//! decision as JSON, `<plugin>.json`) and, when the component is small
//! enough, its bytes (`<plugin>.wasm`), so a replica can run the version
//! decided even when none of its own sources holds it any more. Any replica
//! that carries out an admin command writes it; every replica watches the
//! ConfigMap and adopts what another decided. A later act of a source (a
//! changed file, a new Plugin generation) supersedes a decision, which is
//! then removed.

use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use kube::Client;
use std::collections::BTreeMap;
use tephra_scheduler::{Act, Scheduler};

/// The ConfigMap's name.
pub const NAME: &str = "tephra-plugin-decisions";

/// A decision as stored: the act, and the component's bytes when kept.
pub type Stored = (Act, Option<Vec<u8>>);

/// The decisions' ConfigMap, watched.
pub struct Decisions {
    client: Client,
    namespace: String,
    store: Store<ConfigMap>,
    /// Per plugin, the decision (its time) last handed to the loop.
    handed: BTreeMap<String, i64>,
}

/// What a ConfigMap holds.
pub fn read(cm: &ConfigMap) -> Vec<Stored> {
    let mut out = Vec::new();
    for (key, json) in cm.data.iter().flatten() {
        let Some(plugin) = key.strip_suffix(".json") else { continue };
        let Ok(act) = serde_json::from_str::<Act>(json) else {
            tracing::warn!("ConfigMap {NAME}: key {key} is not a decision; ignored");
            continue;
        };
        let bytes = cm.binary_data.as_ref().and_then(|b| b.get(&format!("{plugin}.wasm"))).map(|b| b.0.clone());
        out.push((act, bytes));
    }
    out
}

impl Decisions {
    /// Starts watching the ConfigMap (on the current runtime).
    pub fn start(client: &Client, namespace: &str) -> Decisions {
        use futures::StreamExt;
        use kube::runtime::{reflector, watcher, WatchStreamExt};
        let writer = reflector::store::Writer::<ConfigMap>::default();
        let store = writer.as_reader();
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={NAME}"));
        let stream = watcher(api, config).default_backoff().reflect(writer);
        let ns = namespace.to_string();
        tokio::spawn(async move {
            let what = format!("ConfigMap {ns}/{NAME} (admin decisions)");
            let mut retrying = crate::Retrying::default();
            let mut stream = std::pin::pin!(stream);
            while let Some(r) = stream.next().await {
                match r {
                    Err(e) => retrying.failed(&what, &crate::watch_error(&e)),
                    Ok(watcher::Event::Init) => {}
                    Ok(_) => retrying.worked(&what),
                }
            }
        });
        Decisions { client: client.clone(), namespace: namespace.to_string(), store, handed: BTreeMap::new() }
    }

    /// The decisions as they stand now, read once (for the start, before
    /// the first cycle). A missing ConfigMap is none; an error is logged.
    pub async fn load(&mut self) -> Vec<Stored> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let found = match api.get_opt(NAME).await {
            Ok(cm) => cm.map(|cm| read(&cm)).unwrap_or_default(),
            Err(e) => {
                let ns = &self.namespace;
                tracing::warn!("ConfigMap {ns}/{NAME} (admin decisions): {}; none adopted", crate::api_error(&e));
                Vec::new()
            }
        };
        for (act, _) in &found {
            self.handed.insert(act.plugin.clone(), act.at_ms);
        }
        found
    }

    /// Decisions made since the last call (by another replica; this
    /// replica's own are adopted as no-ops), for the loop to adopt.
    pub fn changes(&mut self) -> Vec<Stored> {
        let mut out = Vec::new();
        for cm in self.store.state() {
            for (act, bytes) in read(&cm) {
                if self.handed.get(&act.plugin) == Some(&act.at_ms) {
                    continue;
                }
                self.handed.insert(act.plugin.clone(), act.at_ms);
                out.push((act, bytes));
            }
        }
        out
    }

    /// Writes this replica's admin acts (with the component when it is
    /// kept) and removes the decisions a source's act superseded.
    pub async fn record(&mut self, acts: &[Act], sched: &Scheduler) {
        let mut data = serde_json::Map::new();
        let mut binary = serde_json::Map::new();
        let stored: Vec<String> = self.store.state().iter().flat_map(|cm| read(cm)).map(|(a, _)| a.plugin).collect();
        for act in acts {
            let key = format!("{}.json", act.plugin);
            let wasm = format!("{}.wasm", act.plugin);
            if act.is_admin() {
                let Ok(json) = serde_json::to_string(act) else { continue };
                data.insert(key, json.into());
                let bytes = sched.library.version(&act.plugin, &act.version).and_then(|p| p.bytes());
                let b64 = bytes.map(|b| base64::engine::general_purpose::STANDARD.encode(b));
                binary.insert(wasm, b64.map_or(serde_json::Value::Null, Into::into));
                self.handed.insert(act.plugin.clone(), act.at_ms);
            } else if stored.contains(&act.plugin) || data.contains_key(&key) {
                data.insert(key, serde_json::Value::Null);
                binary.insert(wasm, serde_json::Value::Null);
            }
        }
        if data.is_empty() {
            return;
        }
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let fresh = ConfigMap {
            metadata: kube::api::ObjectMeta { name: Some(NAME.into()), ..Default::default() },
            ..Default::default()
        };
        match api.create(&PostParams::default(), &fresh).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!("ConfigMap {}/{NAME}: {}; decisions not kept", self.namespace, crate::api_error(&e));
                return;
            }
        }
        let patch = serde_json::json!({"data": data, "binaryData": binary});
        if let Err(e) = api.patch(NAME, &PatchParams::default(), &Patch::Merge(&patch)).await {
            tracing::warn!("ConfigMap {}/{NAME}: {}; decisions not kept", self.namespace, crate::api_error(&e));
            return;
        }
        for act in acts.iter().filter(|a| a.is_admin()) {
            tracing::info!(
                "kept the decision on plugin {} in ConfigMap {}/{NAME}: {}",
                act.plugin,
                self.namespace,
                act.describe()
            );
        }
    }
}
