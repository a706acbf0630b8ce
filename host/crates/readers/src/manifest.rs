//! Reads Kubernetes manifests unchanged: the kinds [`kinds`] lists, each
//! by its own reader (Kubernetes' in `core`, Volcano's in `volcano`,
//! workloads in `workloads`).
//!
//! Every error names the file, the object and the field.

use anyhow::{anyhow, Result};
use fields::{meta, At};
use serde::Deserialize;
use tephra_model::cluster::Node;
use yaml_serde::Value;

mod core;
mod devices;
mod fields;
mod kinds;
mod object;
mod pod;
mod rules;
mod storage;
pub mod topology;
mod volcano;
mod window;
mod workloads;

pub use fields::{format_time, parse_time};
pub use object::{Object, Timed, ARRIVE_AT, DURATION, ESTIMATE, REPLICAS};
pub use pod::read_placement;
pub use volcano::{podgroup_topology, GUARANTEE_DIMENSIONS, GUARANTEE_PERCENTAGE, GUARANTEE_POLICY};

/// Parses every document of one file.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Timed>> {
    let mut out = Vec::new();
    for (i, doc) in yaml_serde::Deserializer::from_str(text).enumerate() {
        let v = Value::deserialize(doc).map_err(|e| anyhow!("{origin}: document {}: not valid YAML: {e}", i + 1))?;
        if v.is_null() {
            continue;
        }
        let (at, kind) = At::of(origin, &v);
        out.extend(parse_object(&at, &v, kind, i as i64)?);
    }
    Ok(out)
}

/// Reads one object fetched from the API server (converted to a YAML value),
/// with the same field rules and errors as a manifest document.
pub fn from_value(v: &Value, origin: &str) -> Result<Object> {
    let (at, kind) = At::of(origin, v);
    let mut objects = parse_object(&at, v, kind, 0)?;
    match objects.pop() {
        Some(t) if objects.is_empty() => Ok(t.object),
        _ => Err(at.err("kind", "expected exactly one object")),
    }
}

fn parse_object(at: &At, v: &Value, kind: &str, seqno: i64) -> Result<Vec<Timed>> {
    let api = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let read = kinds::reader(at, kind, api)?;
    let meta = meta(at, v, seqno)?;
    let at_time = match meta.annotations.get(ARRIVE_AT) {
        Some(s) => {
            s.parse::<f64>().map_err(|_| at.err(&format!("metadata.annotations.{ARRIVE_AT}"), "expected seconds"))?
        }
        None => 0.0,
    };
    let replicas = meta.annotations.get(REPLICAS).cloned();
    let object = read(fields::Doc { at, v, kind, meta })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_model::cluster::{Claim, MatchExpr};

    /// kubectl reads YAML 1.1 (go-yaml v2) and the API server gets what it
    /// read: plain integers in Go's forms and YAML 1.1's boolean words mean
    /// here what they mean there, though this reader's YAML is 1.2.
    #[test]
    fn scalars_read_as_kubectl_reads_them() {
        let group = |min: &str| {
            let text = format!(
                "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: g, namespace: ns}}\n\
                 spec: {{minMember: {min}}}\n"
            );
            match parse(&text, "f.yaml").map(|mut o| o.remove(0).object) {
                Ok(Object::PodGroup(g)) => Ok(g.min_member),
                Ok(other) => panic!("{other:?}"),
                Err(e) => Err(e.to_string()),
            }
        };
        for (given, want) in [
            ("12", 12),
            ("017", 15),
            ("0o17", 15),
            ("0x1F", 31),
            ("0b101", 5),
            ("1_000", 1000),
            ("1e3", 1000),
            ("09", 9),
            ("+7", 7),
        ] {
            assert_eq!(group(given), Ok(want), "minMember: {given}");
        }
        assert_eq!(group("1.5").unwrap_err(), "f.yaml: PodGroup ns/g: spec.minMember: 1.5 is not an integer");
        assert_eq!(group("0x").unwrap_err(), "f.yaml: PodGroup ns/g: spec.minMember: \"0x\" is not an integer");
        assert_eq!(group("-1").unwrap_err(), "f.yaml: PodGroup ns/g: spec.minMember: -1 is negative");

        let unschedulable = |given: &str| {
            let text = format!("apiVersion: v1\nkind: Node\nmetadata: {{name: n}}\nspec: {{unschedulable: {given}}}\n");
            match parse(&text, "f.yaml").map(|mut o| o.remove(0).object) {
                Ok(Object::Node(n)) => Ok(n.unschedulable),
                Ok(other) => panic!("{other:?}"),
                Err(e) => Err(e.to_string()),
            }
        };
        for given in ["true", "True", "yes", "Yes", "y", "Y", "on", "ON"] {
            assert_eq!(unschedulable(given), Ok(true), "unschedulable: {given}");
        }
        for given in ["false", "FALSE", "no", "No", "n", "N", "off", "Off"] {
            assert_eq!(unschedulable(given), Ok(false), "unschedulable: {given}");
        }
        assert_eq!(
            unschedulable("maybe").unwrap_err(),
            "f.yaml: Node n: spec.unschedulable: \"maybe\" is not true or false"
        );
    }

    /// The kinds are one table: an unknown kind lists them by apiVersion,
    /// a known kind under another apiVersion names the ones it is read under.
    #[test]
    fn kinds_come_from_one_table() {
        let err = |text: &str| parse(text, "f.yaml").unwrap_err().to_string();
        assert_eq!(
            err("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"),
            "f.yaml: Secret s: kind \"Secret\" of apiVersion \"v1\" is not supported (supported: v1 Node, Pod, \
             Namespace, PersistentVolumeClaim, PersistentVolume, ConfigMap; apps/v1 Deployment, ReplicaSet, \
             StatefulSet; batch.volcano.sh/v1alpha1 Job; batch/v1 Job, CronJob; storage.k8s.io/v1 StorageClass, \
             CSIDriver, CSIStorageCapacity, CSINode; resource.k8s.io/v1 DeviceClass, ResourceSlice, \
             ResourceClaim, ResourceClaimTemplate; scheduling.volcano.sh/v1beta1 Queue, PodGroup; topology.volcano.sh/v1alpha1 HyperNode; \
             scheduling.k8s.io/v1 PriorityClass; tephra.io/v1alpha1 Reservation)"
        );
        assert_eq!(
            err("apiVersion: batch/v2\nkind: Job\nmetadata: {name: j, namespace: ns}\n"),
            "f.yaml: Job ns/j: apiVersion: expected batch.volcano.sh/v1alpha1 or batch/v1, got \"batch/v2\""
        );
        assert_eq!(
            err("apiVersion: apps/v2\nkind: Deployment\nmetadata: {name: d}\n"),
            "f.yaml: Deployment d: apiVersion: expected apps/v1, got \"apps/v2\""
        );
        // A Volcano Job of another version of its group reads as one; a
        // PriorityClass's apiVersion is not checked.
        let job = "apiVersion: batch.volcano.sh/v1beta1\nkind: Job\nmetadata: {name: j}\n\
                   spec: {tasks: [{replicas: 1, template: {spec: {containers: [{}]}}}]}\n";
        assert!(matches!(parse(job, "f.yaml").unwrap()[0].object, Object::PodGroup(_)));
        let pc = "apiVersion: scheduling.k8s.io/v1beta1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 5\n";
        assert!(
            matches!(&parse(pc, "f.yaml").unwrap()[0].object, Object::PriorityClass(n, p) if n == "p" && p.value == 5)
        );
    }

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
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
  schedulingGates: [{name: wait}]
";
        assert_eq!(pod(hard), ["spec.schedulingGates"], "the rules tephra evaluates are not listed");
    }

    /// DRA's kinds: a claim's requests, constraints and allocation, a
    /// slice's devices, a pod's claims named by their statuses; bad fields
    /// named.
    #[test]
    fn device_kinds_are_read_and_bad_fields_named() {
        let text = r#"apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ml, ownerReferences: [{kind: Pod, name: p, apiVersion: v1, uid: u}]}
spec:
  devices:
    requests:
    - {name: gpus, exactly: {deviceClassName: gpu, count: 2, allocationMode: ExactCount}}
    - {name: fancy, firstAvailable: [{name: a, deviceClassName: gpu}]}
    constraints: [{matchAttribute: gpu.example.com/nvlink}]
status:
  allocation:
    devices: {results: [{request: gpus, driver: d, pool: n0, device: gpu-0}]}
    nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n0]}]}]}
  reservedFor: [{resource: pods, name: p, uid: u}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  nodeName: n0
  pool: {name: n0}
  devices: [{name: gpu-0, attributes: {model: {string: A100}, cores: {int: 8}}, capacity: {memory: {value: 40Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers: [{name: c}]
  resourceClaims: [{name: gpus, resourceClaimTemplateName: t}, {name: shared, resourceClaimName: c}]
status:
  resourceClaimStatuses: [{name: gpus, resourceClaimName: p-gpus-x7k2}]
"#;
        let objects: Vec<Object> = parse(text, "f.yaml").unwrap().into_iter().map(|d| d.object).collect();
        let Object::ResourceClaim(key, claim) = &objects[0] else { panic!("{:?}", objects[0]) };
        assert_eq!(key, "ml/c");
        assert_eq!((claim.requests.len(), claim.requests[0].count), (1, 2));
        assert_eq!(claim.unevaluated, ["spec.devices.requests[1].firstAvailable"]);
        assert_eq!(claim.constraints[0].attribute, "gpu.example.com/nvlink");
        let a = claim.allocation.as_ref().unwrap();
        assert_eq!((a.node_selector[0][0].values[0].as_str(), a.results[0].device.as_str()), ("n0", "gpu-0"));
        assert_eq!((claim.reserved_for.clone(), claim.owner.clone()), (vec!["p".to_string()], Some("p".to_string())));
        let Object::ResourceSlice(_, slice) = &objects[1] else { panic!() };
        assert_eq!(slice.devices[0].capacity["memory"], 40.0 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(slice.devices[0].attributes["cores"], tephra_model::devices::Attr::Int(8));
        let Object::Pod(pod) = &objects[2] else { panic!() };
        let names: Vec<Option<&str>> = pod.device_claims.iter().map(|c| c.claim.as_deref()).collect();
        assert_eq!(names, [Some("p-gpus-x7k2"), Some("c")]);

        let err = |text: &str| parse(text, "f.yaml").unwrap_err().to_string();
        let claim = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ml}\nspec:\n  devices:\n    requests:\n";
        assert_eq!(
            err(&format!("{claim}    - {{name: g, exactly: {{count: 1}}}}\n")),
            "f.yaml: ResourceClaim ml/c: spec.devices.requests[0].exactly.deviceClassName: missing"
        );
        assert_eq!(
            err(&format!("{claim}    - {{name: g, exactly: {{deviceClassName: x, allocationMode: Some}}}}\n")),
            "f.yaml: ResourceClaim ml/c: spec.devices.requests[0].exactly.allocationMode: \"Some\" is not ExactCount or All"
        );
        let slice = "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: d\n  pool: {name: p}\n";
        assert_eq!(
            err(&format!("{slice}  devices: [{{name: a, attributes: {{x: {{float: 1.5}}}}}}]\n")),
            "f.yaml: ResourceSlice s: spec.devices[0].attributes.x: expected one of int, bool, string, version"
        );
        assert_eq!(
            err(&format!("{slice}  devices: [{{name: a, capacity: {{m: {{value: lots}}}}}}]\n")),
            "f.yaml: ResourceSlice s: spec.devices[0].capacity.m.value: invalid quantity \"lots\""
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
metadata: {name: later, namespace: ns, annotations: {volume.kubernetes.io/selected-node: n1}}
spec: {volumeName: pv2, storageClassName: fast, accessModes: [ReadWriteOnce], volumeMode: Block, resources: {requests: {storage: 1Gi}}}
status: {phase: Pending}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec:
  storageClassName: fast
  capacity: {storage: 1500M}
  accessModes: [ReadWriteOnce, ReadOnlyMany]
  claimRef: {namespace: ns, name: data}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}
status: {phase: Bound}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast, annotations: {storageclass.kubernetes.io/is-default-class: 'true'}}
provisioner: csi.example.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies: [{matchLabelExpressions: [{key: zone, values: [a, b]}]}]
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csi.example.com}
spec: {storageCapacity: true}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: room, namespace: kube-system}
storageClassName: fast
nodeTopology: {matchLabels: {zone: a}}
capacity: 10Gi
maximumVolumeSize: 2Gi
";
        let objs: Vec<Object> = parse(text, "t.yaml").unwrap().into_iter().map(|t| t.object).collect();
        let Object::Pod(p) = &objs[0] else { panic!() };
        assert_eq!(p.claims, ["data", "p-scratch"]);
        assert!(matches!(&objs[1], Object::Claim(k, Claim { volume: Some(v), .. }) if k == "ns/data" && v == "pv1"));
        let Object::Claim(k, later) = &objs[2] else { panic!() };
        let want = Claim {
            volume: None,
            prebound: true,
            class: Some("fast".into()),
            request: 1 << 30,
            modes: vec!["ReadWriteOnce".into()],
            block: true,
            selected_node: Some("n1".into()),
        };
        assert_eq!((k.as_str(), later), ("ns/later", &want));
        let Object::Volume(name, v) = &objs[3] else { panic!() };
        assert_eq!((name.as_str(), v.affinity.len(), v.affinity[0][0].key.as_str()), ("pv1", 1, "zone"));
        assert_eq!((v.class.as_str(), v.capacity, v.modes.len()), ("fast", 1_500_000_000, 2));
        assert_eq!((v.claim.as_deref(), v.available, v.block), (Some("ns/data"), false, false));
        let Object::StorageClass(name, class) = &objs[4] else { panic!() };
        assert_eq!(
            (name.as_str(), class.provisioner.as_str(), class.wait_for_consumer),
            ("fast", "csi.example.com", true)
        );
        assert!(class.default && class.topologies[0][0].values == ["a", "b"], "{class:?}");
        assert!(matches!(&objs[5], Object::CsiDriver(n, true) if n == "csi.example.com"));
        let Object::StorageCapacity(key, room) = &objs[6] else { panic!() };
        assert_eq!((key.as_str(), room.class.as_str(), room.limit), ("kube-system/room", "fast", Some(2 << 30)));
        assert_eq!(room.topology.as_ref().map(|t| t[0].values.clone()), Some(vec!["a".to_string()]));
        let bad = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\nprovisioner: x\nvolumeBindingMode: Later\n";
        let err = parse(bad, "t.yaml").unwrap_err().to_string();
        assert_eq!(
            err,
            "t.yaml: StorageClass s: volumeBindingMode: \"Later\" is not Immediate or WaitForFirstConsumer"
        );
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
