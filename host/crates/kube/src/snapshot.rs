//! `tephra snapshot`: the live cluster as manifests the simulator replays —
//! nodes, queues, PodGroups, HyperNodes, Reservations, priority classes, pending and
//! running pods, and the scheduler config — with only the fields scheduling
//! reads. Environment, commands, volumes other than claims, service
//! accounts, Secrets and `last-applied-configuration` are left out.

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use kube::Client;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// What to take.
#[derive(Clone, Debug)]
pub struct Options {
    /// The kubeconfig (none: as kube infers one).
    pub kubeconfig: Option<PathBuf>,
    /// Pods of this scheduler are tephra's; in the file they say `tephra`
    /// when the name is another (the simulator schedules `volcano` and `tephra`).
    pub scheduler_name: String,
    /// The scheduler ConfigMap (namespace, name), when present.
    pub config_map: (String, String),
}

/// Fields kept, as dotted paths; `[]` maps over a list.
const META: &[&str] =
    &["metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.creationTimestamp"];
const POD: &[&str] = &[
    "spec.schedulerName",
    "spec.nodeName",
    "spec.priority",
    "spec.priorityClassName",
    "spec.nodeSelector",
    "spec.affinity",
    "spec.tolerations",
    "spec.topologySpreadConstraints",
    "spec.overhead",
    "spec.resources",
    "spec.containers[].name",
    "spec.containers[].image",
    "spec.containers[].resources",
    "spec.containers[].ports",
    "spec.initContainers[].name",
    "spec.initContainers[].image",
    "spec.initContainers[].resources",
    "spec.volumes[].name",
    "spec.volumes[].persistentVolumeClaim",
    "status.phase",
    "status.nominatedNodeName",
    "status.startTime",
];
const NODE: &[&str] = &["spec.taints", "spec.unschedulable", "status.allocatable", "status.capacity", "status.images"];
const VOLCANO: &[&str] = &["spec", "status.phase"];
const PRIORITY_CLASS: &[&str] = &["value", "globalDefault", "preemptionPolicy"];
/// Annotations that may carry anything (a whole applied manifest, with its env).
const DROPPED_ANNOTATIONS: &[&str] = &["kubectl.kubernetes.io/last-applied-configuration"];

fn pick(src: &Value, path: &[&str], dst: &mut Map<String, Value>) {
    let Some((first, rest)) = path.split_first() else { return };
    let (key, list) = match first.strip_suffix("[]") {
        Some(k) => (k, true),
        None => (*first, false),
    };
    let Some(v) = src.get(key) else { return };
    if rest.is_empty() {
        dst.insert(key.to_string(), v.clone());
        return;
    }
    if list {
        let Some(items) = v.as_array() else { return };
        let out = dst.entry(key).or_insert_with(|| Value::Array(vec![Value::Object(Map::new()); items.len()]));
        let Some(out) = out.as_array_mut() else { return };
        for (item, o) in items.iter().zip(out.iter_mut()) {
            if let Some(o) = o.as_object_mut() {
                pick(item, rest, o);
            }
        }
    } else if let Some(o) = dst.entry(key).or_insert_with(|| Value::Object(Map::new())).as_object_mut() {
        pick(v, rest, o);
    }
}

/// `v` with only `fields` (and the metadata), as `apiVersion`/`kind`.
fn keep(v: &Value, api_version: &str, kind: &str, fields: &[&str]) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), api_version.into());
    out.insert("kind".into(), kind.into());
    for f in META.iter().chain(fields) {
        let path: Vec<&str> = f.split('.').collect();
        pick(v, &path, &mut out);
    }
    if let Some(a) = out.get_mut("metadata").and_then(|m| m.get_mut("annotations")).and_then(Value::as_object_mut) {
        for d in DROPPED_ANNOTATIONS {
            a.remove(*d);
        }
    }
    Value::Object(out)
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&kube::api::GroupVersionKind::gvk(group, version, kind), plural)
}

/// Lists a custom kind (Volcano's, or tephra's Reservation); a cluster
/// without its CRD has none.
async fn volcano(client: &Client, r: &ApiResource) -> Result<Vec<Value>> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), r);
    match api.list(&ListParams::default()).await {
        Ok(l) => Ok(l
            .items
            .iter()
            .map(|o| keep(&serde_json::to_value(o).unwrap_or_default(), &r.api_version, &r.kind, VOLCANO))
            .collect()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("listing {}", r.plural)),
    }
}

/// The cluster as YAML documents.
pub async fn take(opts: &Options) -> Result<String> {
    let client = crate::client(opts.kubeconfig.as_ref()).await?;
    let mut docs: Vec<Value> = Vec::new();
    let (ns, name) = &opts.config_map;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    if let Some(cm) = cms.get_opt(name).await.with_context(|| format!("reading ConfigMap {ns}/{name}"))? {
        let conf = cm.data.as_ref().and_then(|d| d.get("volcano-scheduler.conf"));
        if let Some(conf) = conf {
            docs.push(serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
                "data": {"volcano-scheduler.conf": conf},
            }));
        }
    }
    let classes: Api<PriorityClass> = Api::all(client.clone());
    for c in classes.list(&ListParams::default()).await.context("listing PriorityClasses")? {
        docs.push(keep(&serde_json::to_value(&c)?, "scheduling.k8s.io/v1", "PriorityClass", PRIORITY_CLASS));
    }
    let nodes: Api<Node> = Api::all(client.clone());
    for n in nodes.list(&ListParams::default()).await.context("listing Nodes")? {
        docs.push(keep(&serde_json::to_value(&n)?, "v1", "Node", NODE));
    }
    docs.extend(volcano(&client, &resource("topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes")).await?);
    docs.extend(volcano(&client, &resource("tephra.io", "v1alpha1", "Reservation", "reservations")).await?);
    docs.extend(volcano(&client, &resource("scheduling.volcano.sh", "v1beta1", "Queue", "queues")).await?);
    docs.extend(volcano(&client, &resource("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups")).await?);
    let pods: Api<Pod> = Api::all(client.clone());
    let live = ListParams::default().fields("status.phase!=Succeeded,status.phase!=Failed");
    for p in pods.list(&live).await.context("listing Pods")? {
        let mut v = keep(&serde_json::to_value(&p)?, "v1", "Pod", POD);
        let sched = v.pointer("/spec/schedulerName").and_then(Value::as_str);
        if sched == Some(opts.scheduler_name.as_str()) && !["volcano", "tephra"].contains(&opts.scheduler_name.as_str())
        {
            v["spec"]["schedulerName"] = "tephra".into();
        }
        docs.push(v);
    }
    let mut out = String::from(
        "# tephra snapshot: the cluster's scheduling state, for `tephra simulate` (docs/lab.md).\n\
         # Running pods run on until a `tephra.io/duration` annotation says otherwise.\n",
    );
    for d in docs {
        out += "---\n";
        out += &yaml_serde::to_string(&d)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_scheduling_reads_and_nothing_else() {
        let pod = serde_json::json!({
            "metadata": {"name": "p", "namespace": "a", "managedFields": [{}],
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{secret}", "x": "y"}},
            "spec": {"schedulerName": "volcano", "serviceAccountName": "sa",
                     "containers": [{"name": "c", "image": "i", "env": [{"name": "TOKEN", "value": "s3cret"}],
                                     "resources": {"requests": {"cpu": "1"}}, "command": ["run"]}],
                     "volumes": [{"name": "t", "secret": {"secretName": "s"}}, {"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]},
            "status": {"phase": "Pending", "podIP": "10.0.0.1"}
        });
        let v = keep(&pod, "v1", "Pod", POD);
        let text = serde_json::to_string(&v).unwrap();
        for gone in
            ["s3cret", "TOKEN", "managedFields", "serviceAccountName", "{secret}", "podIP", "command", "secretName"]
        {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert_eq!(v["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1");
        assert_eq!(v["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"], "c");
        assert_eq!(v["metadata"]["annotations"]["x"], "y");
        assert_eq!(v["status"]["phase"], "Pending");
    }
}
