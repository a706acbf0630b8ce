//! `tephra run` in a whole cluster on loopback: etcd, kube-apiserver,
//! Kubernetes' own kube-controller-manager (Deployments, ReplicaSets, Jobs,
//! the garbage collector, node lifecycle) and kwok's simulated kubelets
//! (pods run, finish after their `tephra.io/duration`, nodes go NotReady),
//! all from tests/k8s/env.sh. Nothing is played by the test: every count
//! comes from the API server's records of what the controllers and kwok did.

mod support;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use support::*;

/// Pods of `ns` with `label=value`: (name, phase, node).
fn pods_of(c: &Cluster, ns: &str, selector: &str) -> Vec<(String, String, String)> {
    let v = c.json(&["get", "pods", "-n", ns, "-l", selector]);
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap_or("").to_string(),
                p["status"]["phase"].as_str().unwrap_or("").to_string(),
                p["spec"]["nodeName"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// How many of them are Running, and how many wait unbound.
fn running_and_waiting(pods: &[(String, String, String)]) -> (usize, usize) {
    (pods.iter().filter(|p| p.1 == "Running").count(), pods.iter().filter(|p| p.2.is_empty()).count())
}

/// A scheduler config file in the cluster's directory.
fn config(c: &Cluster, name: &str, text: &str) -> std::path::PathBuf {
    let path = c.dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Volcano's capacity-plugin guide with its two Deployments, unchanged but
/// for the second's arrival: demo-1 takes both nodes, demo-2 arrives, reclaim
/// evicts demo-1 pods, the ReplicaSet controller replaces them (they wait),
/// and it ends as the guide says: 2 demo-1 and 6 demo-2 running.
#[test]
fn capacity_guide_with_deployments_ends_as_the_guide_says() {
    let c =
        Cluster::whole_with("capacity-guide", 2, &[("TEPHRA_K8S_NODE_CPU", "4"), ("TEPHRA_K8S_NODE_MEMORY", "16Gi")]);
    let text = std::fs::read_to_string(repo().join("examples/workloads/capacity-guide.yaml")).unwrap();
    let docs: Vec<&str> = text.split("\n---\n").collect();
    let conf = docs[0].split("volcano-scheduler.conf: |\n").nth(1).unwrap();
    let conf: String = conf.lines().map(|l| l.strip_prefix("    ").unwrap_or(l)).collect::<Vec<_>>().join("\n");
    let conf = config(&c, "capacity.conf", &conf);
    let objects = |kind: &str| -> String {
        docs.iter().filter(|d| d.contains(&format!("kind: {kind}\n"))).map(|d| format!("{d}\n---\n")).collect()
    };
    c.apply(&objects("Queue"));
    let mut t = Tephra::start(&c, "a", &["--config", conf.to_str().unwrap(), "--period", "500ms"]);
    let deployments: Vec<String> =
        docs.iter().filter(|d| d.contains("kind: Deployment\n")).map(|d| d.to_string()).collect();
    assert_eq!(deployments.len(), 2);
    c.apply(&deployments[0]);
    wait(&c, "default", 90, "demo-1's 8 pods running", || {
        (running_and_waiting(&pods_of(&c, "default", "app=demo-1")).0 == 8).then_some(())
    });
    c.apply(&deployments[1]);
    let end = wait(&c, "default", 180, "2 demo-1 and 6 demo-2 running", || {
        let (d1, d2) = (pods_of(&c, "default", "app=demo-1"), pods_of(&c, "default", "app=demo-2"));
        let counts = (running_and_waiting(&d1), running_and_waiting(&d2));
        (counts.0 .0 == 2 && counts.1 .0 == 6).then_some((d1, counts))
    });
    // The evicted demo-1 pods were replaced by their ReplicaSet; the new ones
    // wait. Evicted pods kwok has marked Failed but not yet removed are not
    // the ReplicaSet's any more (it counts active pods).
    let (d1, ((_, waiting1), _)) = end;
    let active: Vec<_> = d1.iter().filter(|p| !matches!(p.1.as_str(), "Failed" | "Succeeded")).collect();
    assert_eq!(active.len(), 8, "the ReplicaSet keeps 8 active demo-1 pods: {d1:?}");
    assert_eq!(waiting1, 6, "{d1:?}");
    let evicted = c.events("default", "Evict");
    assert!(evicted.len() >= 6, "reclaim evicted demo-1 pods: {evicted:?}");
    // It stays there: nothing more is evicted over the next cycles.
    std::thread::sleep(Duration::from_secs(5));
    let (r1, r2) = (
        running_and_waiting(&pods_of(&c, "default", "app=demo-1")).0,
        running_and_waiting(&pods_of(&c, "default", "app=demo-2")).0,
    );
    assert_eq!((r1, r2), (2, 6), "settled: {}", t.log());
    t.assert_alive();
    assert!(t.terminate());
}

/// A `batch/v1` Job with parallelism 3 and completions 6, its pods running
/// 2 s each under kwok, runs to Complete through the Job controller.
#[test]
fn batch_job_runs_to_complete() {
    let c = Cluster::whole("batch-job", 2);
    let ns = "t-job";
    namespace(&c, ns);
    let mut t = Tephra::start(&c, "a", &[]);
    c.apply(&format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: sweep, namespace: {ns}}}\nspec:\n  parallelism: 3\n  \
         completions: 6\n  template:\n    metadata: {{annotations: {{tephra.io/duration: 2s}}}}\n    spec:\n      \
         schedulerName: volcano\n      restartPolicy: Never\n      containers: [{{name: c, image: busybox, \
         resources: {{requests: {{cpu: '1', memory: 1Gi}}}}}}]\n"
    ));
    let job = wait(&c, ns, 120, "Job sweep Complete", || {
        let j = c.json(&["get", "job", "-n", ns, "sweep"]);
        let done = j["status"]["conditions"].as_array().into_iter().flatten().any(|x| x["type"] == "Complete");
        done.then_some(j)
    });
    assert_eq!(job["status"]["succeeded"], 6, "{job}");
    assert!(job["status"]["failed"].as_u64().unwrap_or(0) == 0, "{job}");
    let pods = pods_of(&c, ns, "job-name=sweep");
    assert_eq!(pods.iter().filter(|p| p.1 == "Succeeded").count(), 6, "{pods:?}");
    t.assert_alive();
    assert!(t.terminate());
}

/// A Job whose queue limits its jobs to 3 s runs past it (its pod would run
/// a minute): tephra evicts the pod, naming the limit, and the Job
/// controller counts the failure and gives up (backoffLimit 0).
#[test]
fn time_limit_meets_the_job_controller() {
    let c = Cluster::whole("time-limit", 1);
    let ns = "t-limit";
    namespace(&c, ns);
    c.apply(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: short, annotations: \
         {tephra.io/default-time-limit: 3s}}\nspec: {weight: 1, reclaimable: true}\n",
    );
    let mut t = Tephra::start(&c, "a", &[]);
    c.apply(&format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: overrun, namespace: {ns}}}\nspec:\n  backoffLimit: 0\n  \
         template:\n    metadata: {{annotations: {{tephra.io/duration: 60s, scheduling.volcano.sh/queue-name: short}}}}\n    \
         spec:\n      schedulerName: volcano\n      restartPolicy: Never\n      containers: [{{name: c, image: busybox, \
         resources: {{requests: {{cpu: '1', memory: 1Gi}}}}}}]\n"
    ));
    let started = Instant::now();
    let job = wait(&c, ns, 90, "Job overrun Failed", || {
        let j = c.json(&["get", "job", "-n", ns, "overrun"]);
        let failed = j["status"]["conditions"].as_array().into_iter().flatten().any(|x| x["type"] == "Failed");
        failed.then_some(j)
    });
    assert!(started.elapsed() < Duration::from_secs(60), "ended by its limit, not by finishing");
    assert_eq!(job["status"]["failed"], 1, "{job}");
    let evicted = c.events(ns, "Evict");
    assert!(evicted.iter().any(|(_, m)| m.contains("time limit of 3s exceeded")), "{evicted:?}");
    t.assert_alive();
    assert!(t.terminate());
}

/// Preemption with a controller behind the victim: a Deployment of low
/// priority fills the node; a high-priority pod arrives; tephra evicts a
/// victim, the high-priority pod runs, and the victim's ReplicaSet makes
/// a new pod, which waits.
#[test]
fn preemption_victim_is_recreated_by_its_controller() {
    let c = Cluster::whole_with("preempt", 1, &[("TEPHRA_K8S_NODE_CPU", "4")]);
    let ns = "t-preempt";
    namespace(&c, ns);
    let conf = config(
        &c,
        "preempt.conf",
        "actions: \"enqueue, allocate, preempt\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n    \
         enablePreemptable: false\n- plugins:\n  - name: predicates\n  - name: proportion\n",
    );
    c.apply(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 10\n---\n\
         apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n",
    );
    let mut t = Tephra::start(&c, "a", &["--config", conf.to_str().unwrap()]);
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: filler, namespace: {ns}}}\nspec:\n  replicas: 4\n  \
         selector: {{matchLabels: {{app: filler}}}}\n  template:\n    metadata: {{labels: {{app: filler}}}}\n    spec:\n      \
         schedulerName: volcano\n      priorityClassName: low\n      containers: [{{name: c, image: busybox, \
         resources: {{requests: {{cpu: '1', memory: 1Gi}}}}}}]\n"
    ));
    wait(&c, ns, 60, "4 filler pods running", || {
        (running_and_waiting(&pods_of(&c, ns, "app=filler")).0 == 4).then_some(())
    });
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: urgent, namespace: {ns}, labels: {{app: urgent}}}}\nspec:\n  \
         schedulerName: volcano\n  priorityClassName: high\n  containers: [{{name: c, image: busybox, resources: \
         {{requests: {{cpu: '1', memory: 1Gi}}}}}}]\n"
    ));
    wait(&c, ns, 90, "urgent running", || (running_and_waiting(&pods_of(&c, ns, "app=urgent")).0 == 1).then_some(()));
    let fillers = wait(&c, ns, 60, "the victim replaced by its ReplicaSet", || {
        let f = pods_of(&c, ns, "app=filler");
        (f.len() == 4 && running_and_waiting(&f) == (3, 1)).then_some(f)
    });
    assert_eq!(fillers.len(), 4, "{fillers:?}");
    // One Event on the victim (and one on its PodGroup).
    let evicted: Vec<_> = c.events(ns, "Evict").into_iter().filter(|(o, _)| o.starts_with("filler-")).collect();
    assert_eq!(evicted.len(), 1, "one victim: {evicted:?}");
    assert!(evicted[0].1.contains("preempt: for t-preempt/urgent"), "{evicted:?}");
    t.assert_alive();
    assert!(t.terminate());
}

/// HyperNodes over kwok nodes labelled into racks (4 nodes each): a gang of
/// four whole-node pods limited to tier 1 lands inside one rack, the one with
/// room, though the other has room for three.
#[test]
fn topology_gang_lands_in_one_rack_of_labelled_nodes() {
    let c = Cluster::whole("topology-whole", 8);
    let ns = "t-topology";
    namespace(&c, ns);
    let rack = |name: &str, value: &str| {
        format!(
            "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {{name: {name}}}\n\
             spec: {{tier: 1, members: [{{type: Node, selector: {{labelMatch: {{matchLabels: {{tephra.io/rack: {value}}}}}}}}}]}}\n---\n"
        )
    };
    c.apply(&format!("{}{}", rack("rack-0", "rack-0"), rack("rack-1", "rack-1")));
    // Another pod takes a whole node of rack-0.
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: filler, namespace: {ns}}}\nspec:\n  nodeName: kwok-node-0000\n  \
         containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: '32', memory: 1Gi}}}}}}]\n"
    ));
    let mut t = Tephra::start(&c, "a", &[]);
    let mut gang = format!(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: train, namespace: {ns}}}\n\
         spec: {{minMember: 4, networkTopology: {{mode: hard, highestTierAllowed: 1}}}}\n---\n"
    );
    for i in 0..4 {
        gang.push_str(&pod(ns, &format!("train-{i}"), "32", Some("train"), ""));
    }
    c.apply(&gang);
    let placed = wait(&c, ns, 90, "the gang running", || {
        let p = pods_of(&c, ns, "");
        let train: Vec<_> = p.into_iter().filter(|x| x.0.starts_with("train-") && x.1 == "Running").collect();
        (train.len() == 4).then_some(train)
    });
    let nodes = c.json(&["get", "nodes"]);
    let rack_of: BTreeMap<String, String> = nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let name = n["metadata"]["name"].as_str().unwrap().to_string();
            (name, n["metadata"]["labels"]["tephra.io/rack"].as_str().unwrap_or("").to_string())
        })
        .collect();
    for (pod, _, node) in &placed {
        assert_eq!(rack_of[node], "rack-1", "{pod} on {node}, outside rack-1: {placed:?}");
    }
    t.assert_alive();
    assert!(t.terminate());
}

/// A node goes NotReady mid-run: the node lifecycle controller evicts its
/// pods (after the 20 s toleration the harness sets), their controllers make
/// new ones, and tephra places them on the Ready nodes; a gang of three (a
/// Job's pods in one PodGroup) is whole again, nothing is bound to the
/// NotReady node afterwards.
#[test]
fn node_not_ready_mid_run_pods_are_replaced_elsewhere() {
    let c = Cluster::whole_with("not-ready", 4, &[("TEPHRA_K8S_NODE_CPU", "4")]);
    let ns = "t-notready";
    namespace(&c, ns);
    let mut t = Tephra::start(&c, "a", &[]);
    c.apply(&format!(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: gang, namespace: {ns}}}\n\
         spec: {{minMember: 3}}\n---\n\
         apiVersion: batch/v1\nkind: Job\nmetadata: {{name: gang, namespace: {ns}}}\nspec:\n  parallelism: 3\n  \
         completions: 3\n  backoffLimit: 10\n  template:\n    metadata: {{labels: {{app: gang}}, annotations: \
         {{scheduling.k8s.io/group-name: gang}}}}\n    spec:\n      schedulerName: volcano\n      restartPolicy: Never\n      \
         containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: '3', memory: 1Gi}}}}}}]\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n  replicas: 1\n  \
         selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      \
         schedulerName: volcano\n      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: '1', memory: 1Gi}}}}}}]\n"
    ));
    let before = wait(&c, ns, 90, "the gang and web running", || {
        let p = pods_of(&c, ns, "app in (gang,web)");
        (p.iter().filter(|x| x.1 == "Running").count() == 4).then_some(p)
    });
    // The node of a gang member goes NotReady.
    let lost = before.iter().find(|p| p.0.starts_with("gang-")).unwrap().2.clone();
    c.kubectl(&["label", "node", &lost, "tephra.io/not-ready=true"]);
    let after = wait(&c, ns, 180, "every pod running again off the NotReady node", || {
        let p = pods_of(&c, ns, "app in (gang,web)");
        let running: Vec<_> = p.iter().filter(|x| x.1 == "Running").cloned().collect();
        let gang = running.iter().filter(|x| x.0.starts_with("gang-")).count();
        (gang == 3 && running.len() == 4 && running.iter().all(|x| x.2 != lost)).then_some(p)
    });
    assert!(after.iter().all(|p| p.2 != lost || p.1 != "Running"), "{after:?}");
    // Nothing was bound to the NotReady node once it was NotReady.
    let on_lost: Vec<Value> = c.json(&["get", "pods", "-n", ns, "--field-selector", &format!("spec.nodeName={lost}")])
        ["items"]
        .as_array()
        .unwrap()
        .clone();
    assert!(on_lost.iter().all(|p| p["status"]["phase"] != "Running"), "{on_lost:?}");
    t.assert_alive();
    assert!(t.terminate());
}

/// EASY backfill with jobs that really finish: a job holding one of two
/// nodes for its 10 s limit, then a big job needing both (reserved for) and a
/// short one whose 4 s limit ends before the big one can start: the short
/// job runs and finishes on the free node, and the big job starts within two
/// cycles of the start tephra predicted for it.
#[test]
fn easy_backfill_with_jobs_that_finish() {
    let c = Cluster::whole_with("backfill", 2, &[("TEPHRA_K8S_NODE_CPU", "4")]);
    let ns = "t-backfill";
    namespace(&c, ns);
    let conf = config(
        &c,
        "backfill.conf",
        "actions: \"enqueue, elect, reserve, allocate, backfill\"\nconfigurations:\n- name: reserve\n  \
         arguments: {backfill: easy}\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: reservation\n\
         - plugins:\n  - name: predicates\n",
    );
    let mut t =
        Tephra::start(&c, "a", &["--config", conf.to_str().unwrap(), "--period", "1s", "--estimate-every", "1s"]);
    let job = |name: &str, pods: u32, limit: &str, run: &str, priority: &str| {
        let mut y = format!(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: {name}, namespace: {ns}, \
             annotations: {{tephra.io/time-limit: {limit}}}}}\nspec: {{minMember: {pods}{priority}}}\n---\n"
        );
        for i in 0..pods {
            y.push_str(&pod(ns, &format!("{name}-{i}"), "4", Some(name), &format!("tephra.io/duration: {run}\n    ")));
        }
        y
    };
    c.apply("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: big}\nvalue: 100\n");
    // Each finishes half a second before its limit (tephra would end it there).
    c.apply(&job("busy", 1, "10s", "9500ms", ""));
    wait(&c, ns, 60, "busy running", || (running_and_waiting(&pods_of(&c, ns, "")).0 == 1).then_some(()));
    c.apply(&format!(
        "{}{}",
        job("big", 2, "30s", "5s", ", priorityClassName: big"),
        job("short", 1, "4s", "3500ms", "")
    ));
    // The big job's predicted start, as tephra writes it on its PodGroup.
    let predicted = wait(&c, ns, 30, "big's estimated start", || {
        let g = c.json(&["get", "podgroup", "-n", ns, "big"]);
        g["metadata"]["annotations"]["tephra.io/estimated-start"].as_str().map(String::from)
    });
    use k8s_openapi::jiff::Timestamp;
    let start_of = |pod: &str| -> Option<Timestamp> {
        let p = c.json(&["get", "pod", "-n", ns, pod]);
        p["status"]["startTime"].as_str()?.parse().ok()
    };
    let big_started = wait(&c, ns, 90, "big running", || {
        let s = (start_of("big-0")?, start_of("big-1")?);
        Some(s.0.max(s.1))
    });
    let short_started = start_of("short-0").expect("short ran");
    assert!(short_started < big_started, "short was backfilled ahead of big");
    let short = c.json(&["get", "pod", "-n", ns, "short-0"]);
    assert_eq!(short["status"]["phase"], "Succeeded", "and finished before it: {short}");
    let predicted: Timestamp = predicted.parse().unwrap();
    let off = (big_started.as_millisecond() - predicted.as_millisecond()).abs() as f64 / 1000.0;
    // Two cycles of 1 s, and the API's times are whole seconds.
    assert!(off <= 3.0, "big started at {big_started}, predicted {predicted}: {off} s off");
    t.assert_alive();
    assert!(t.terminate());
}

/// For namespace `ns` scheduled by `scheduler`: classes `local-<ns>`
/// (WaitForFirstConsumer, volumes made by hand) and `hostpath-<ns>`
/// (WaitForFirstConsumer, the controller-manager's host-path provisioner);
/// local volumes of 10Gi on node 0, 5Gi and 1Gi on node 1; a StatefulSet of
/// two pods whose claims (2Gi) fit only the 10Gi and 5Gi volumes; a notebook
/// whose claim is provisioned; a pod whose generic ephemeral volume is
/// provisioned.
fn volumes_workload(ns: &str, scheduler: &str) -> String {
    let local = |name: &str, gib: u32, node: &str| {
        format!(
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {ns}-{name}}}\nspec:\n  \
             storageClassName: local-{ns}\n  capacity: {{storage: {gib}Gi}}\n  accessModes: [ReadWriteOnce]\n  \
             local: {{path: /mnt/{name}}}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms: \
             [{{matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{node}]}}]}}]\n---\n"
        )
    };
    format!(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: local-{ns}}}\n\
         provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: hostpath-{ns}}}\n\
         provisioner: kubernetes.io/host-path\nvolumeBindingMode: WaitForFirstConsumer\n---\n\
         {}{}{}\
         apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: db, namespace: {ns}}}\nspec:\n  replicas: 2\n  \
         serviceName: db\n  selector: {{matchLabels: {{app: db}}}}\n  template:\n    metadata: {{labels: {{app: db}}}}\n    \
         spec:\n      schedulerName: {scheduler}\n      containers: [{{name: db, image: db, resources: {{requests: \
         {{cpu: '1'}}}}, volumeMounts: [{{name: data, mountPath: /data}}]}}]\n  volumeClaimTemplates:\n  \
         - metadata: {{name: data}}\n    spec: {{storageClassName: local-{ns}, accessModes: [ReadWriteOnce], \
         resources: {{requests: {{storage: 2Gi}}}}}}\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: workspace, namespace: {ns}}}\n\
         spec: {{storageClassName: hostpath-{ns}, accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {{name: notebook, namespace: {ns}}}\nspec:\n  schedulerName: {scheduler}\n  \
         volumes: [{{name: w, persistentVolumeClaim: {{claimName: workspace}}}}]\n  \
         containers: [{{name: nb, image: nb, resources: {{requests: {{cpu: '1'}}}}}}]\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {{name: scratch, namespace: {ns}}}\nspec:\n  schedulerName: {scheduler}\n  \
         volumes: [{{name: s, ephemeral: {{volumeClaimTemplate: {{spec: {{storageClassName: hostpath-{ns}, \
         accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}}}}}}}]\n  \
         containers: [{{name: s, image: s, resources: {{requests: {{cpu: '1'}}}}}}]\n",
        local("n0", 10, "kwok-node-0000"),
        local("n1", 5, "kwok-node-0001"),
        local("n1-small", 1, "kwok-node-0001"),
    )
}

/// What is wrong with how `ns`'s claims were bound, read from the API server:
/// each pod runs where its volume is, each claim Bound by the volume
/// controller, the StatefulSet's two claims to the 10Gi and 5Gi volumes, the
/// notebook's provisioned for its node.
fn volume_violations(c: &Cluster, ns: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let placed = c.placements(ns);
    let claims = c.json(&["get", "pvc", "-n", ns]);
    let volumes = c.json(&["get", "pv"]);
    let pv_node = |name: &str| -> Option<String> {
        let v = volumes["items"].as_array()?.iter().find(|v| v["metadata"]["name"] == name)?;
        let terms = &v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"];
        terms[0]["matchExpressions"][0]["values"][0].as_str().map(str::to_string)
    };
    let claim = |name: &str| claims["items"].as_array().and_then(|l| l.iter().find(|k| k["metadata"]["name"] == name));
    let mut got = BTreeSet::new();
    for (pod, name) in [("db-0", "data-db-0"), ("db-1", "data-db-1")] {
        let Some(k) = claim(name) else {
            bad.push(format!("{ns}: claim {name} missing"));
            continue;
        };
        let volume = k["spec"]["volumeName"].as_str().unwrap_or("");
        if k["status"]["phase"] != "Bound" {
            bad.push(format!("{ns}: claim {name} is {} (volume {volume:?})", k["status"]["phase"]));
        }
        got.insert(volume.to_string());
        if pv_node(volume) != placed.get(pod).cloned() {
            bad.push(format!("{ns}: {pod} on {:?} but its volume {volume} on {:?}", placed.get(pod), pv_node(volume)));
        }
    }
    let want: BTreeSet<String> = [format!("{ns}-n0"), format!("{ns}-n1")].into();
    if got != want {
        bad.push(format!("{ns}: the StatefulSet's claims got {got:?}, not {want:?}"));
    }
    // Provisioned: a claim of its own, and an ephemeral volume's claim (the
    // ephemeral-volume controller makes it).
    for (pod, name) in [("notebook", "workspace"), ("scratch", "scratch-s")] {
        match claim(name) {
            Some(k) => {
                let selected = k["metadata"]["annotations"]["volume.kubernetes.io/selected-node"].as_str();
                if selected != placed.get(pod).map(String::as_str) {
                    bad.push(format!("{ns}: {name} selected {selected:?}, {pod} on {:?}", placed.get(pod)));
                }
                if k["status"]["phase"] != "Bound" {
                    bad.push(format!("{ns}: {name} is {} (not provisioned)", k["status"]["phase"]));
                }
            }
            None => bad.push(format!("{ns}: claim {name} missing")),
        }
    }
    bad
}

/// Volumes bound on first consumer, the same objects scheduled by
/// kube-scheduler v1.37.1 and by `tephra run` in one whole cluster (the
/// controller-manager's StatefulSet controller makes the claims, its volume
/// controller completes the bindings, its host-path provisioner provisions):
/// in both, each pod lands where its volume is, the StatefulSet's claims get
/// the two volumes large enough, and the provisioned claims are provisioned
/// for their pods' nodes.
#[test]
fn volumes_bind_on_first_consumer_as_with_kube_scheduler() {
    let c = Cluster::whole("volumes", 3);
    let (ks, tp) = ("t-kube-scheduler", "t-tephra");
    namespace(&c, ks);
    namespace(&c, tp);
    let _kube_scheduler = KubeScheduler::start(&c);
    let mut t = Tephra::start(&c, "a", &["--period", "500ms"]);
    c.apply(&volumes_workload(ks, "default-scheduler"));
    c.apply(&volumes_workload(tp, "volcano"));
    for ns in [ks, tp] {
        wait(&c, ns, 120, &format!("db-0, db-1, notebook and scratch placed and their claims bound in {ns}"), || {
            let running = pods_of(&c, ns, "app=db").iter().filter(|p| p.1 == "Running").count() == 2;
            let claims = c.json(&["get", "pvc", "-n", ns]);
            let bound = claims["items"]
                .as_array()
                .is_some_and(|l| l.len() == 4 && l.iter().all(|k| k["status"]["phase"] == "Bound"));
            let placed = c.placements(ns);
            let others = ["notebook", "scratch"].iter().all(|p| placed.get(*p).is_some_and(|n| !n.is_empty()));
            (running && bound && others).then_some(())
        });
        let bad = volume_violations(&c, ns);
        assert!(bad.is_empty(), "{}\n{}", bad.join("\n"), t.log());
    }
    t.assert_alive();
    assert!(t.terminate());
}

/// DRA objects for namespace `ns`, each namespace with a driver and class of
/// its own (two schedulers never share a device): node 0 has four A100s in
/// two NVLink domains (gpu-0 and gpu-2, gpu-1 and gpu-3), node 1 four A100s
/// in one, node 2 two T4s. Four training pods (a gang of four under tephra)
/// each claim two A100s of one domain from a template, with CEL selectors;
/// `eval` claims one T4 through a claim of its own.
fn devices_workload(ns: &str, scheduler: &str) -> String {
    let mut out = devices_setup(ns, scheduler);
    out += &devices_wave(ns, scheduler, "train", "20s");
    out
}

/// A wave of four training pods `{wave}-0..3` (label `app={wave}`), each
/// claiming two linked A100s from template `linked`, running `duration`.
fn devices_wave(ns: &str, scheduler: &str, wave: &str, duration: &str) -> String {
    let gang = scheduler == "volcano";
    let mut out = String::new();
    if gang {
        out += &format!(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: {wave}, namespace: {ns}}}\n\
             spec: {{minMember: 4}}\n---\n"
        );
    }
    for i in 0..4 {
        let group = if gang { format!(", scheduling.k8s.io/group-name: {wave}") } else { String::new() };
        out += &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {wave}-{i}, namespace: {ns}, labels: {{app: {wave}}}, \
             annotations: {{tephra.io/duration: {duration}{group}}}}}\nspec:\n  schedulerName: {scheduler}\n  \
             resourceClaims: [{{name: gpus, resourceClaimTemplateName: linked}}]\n  \
             containers: [{{name: t, image: t, resources: {{requests: {{cpu: '1'}}, claims: [{{name: gpus}}]}}}}]\n---\n"
        );
    }
    out
}

/// The DRA objects of [`devices_workload`] but its training pods.
fn devices_setup(ns: &str, scheduler: &str) -> String {
    let driver = format!("gpu-{ns}.example.com");
    let slice = |node: usize, devices: &[(&str, &str)]| {
        let devices: Vec<String> = devices
            .iter()
            .enumerate()
            .map(|(i, (model, domain))| {
                format!(
                    "  - {{name: gpu-{i}, attributes: {{model: {{string: {model}}}, nvlink: {{string: {domain}}}}}, \
                     capacity: {{memory: {{value: 40Gi}}}}}}\n"
                )
            })
            .collect();
        format!(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: {ns}-n{node}}}\nspec:\n  \
             driver: {driver}\n  nodeName: kwok-node-000{node}\n  pool: {{name: n{node}, generation: 1, \
             resourceSliceCount: 1}}\n  devices:\n{}---\n",
            devices.concat()
        )
    };
    format!(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {{name: gpu-{ns}}}\nspec:\n  selectors:\n  \
         - cel: {{expression: 'device.driver == \"{driver}\"'}}\n---\n{}{}{}\
         apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {{name: linked, namespace: {ns}}}\n\
         spec:\n  spec:\n    devices:\n      requests:\n      - name: gpus\n        exactly:\n          \
         deviceClassName: gpu-{ns}\n          count: 2\n          selectors:\n          - cel: {{expression: \
         'device.attributes[\"{driver}\"].model == \"A100\"'}}\n          - cel: {{expression: \
         'device.capacity[\"{driver}\"].memory.compareTo(quantity(\"40Gi\")) >= 0'}}\n      constraints:\n      \
         - {{matchAttribute: {driver}/nvlink}}\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: one-t4, namespace: {ns}}}\nspec:\n  \
         devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu-{ns}\n        \
         selectors:\n        - cel: {{expression: 'device.attributes[\"{driver}\"].model == \"T4\"'}}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {{name: eval, namespace: {ns}}}\nspec:\n  schedulerName: {scheduler}\n  \
         resourceClaims: [{{name: gpu, resourceClaimName: one-t4}}]\n  \
         containers: [{{name: e, image: e, resources: {{requests: {{cpu: '1'}}, claims: [{{name: gpu}}]}}}}]\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: bad, namespace: {ns}}}\nspec:\n  \
         devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu-{ns}\n        \
         selectors:\n        - cel: {{expression: 'device.attributes[\"{driver}\"].cores > 2'}}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {{name: probe, namespace: {ns}}}\nspec:\n  schedulerName: {scheduler}\n  \
         resourceClaims: [{{name: gpu, resourceClaimName: bad}}]\n  \
         containers: [{{name: p, image: p, resources: {{requests: {{cpu: '1'}}, claims: [{{name: gpu}}]}}}}]\n---\n",
        slice(0, &[("A100", "a"), ("A100", "b"), ("A100", "a"), ("A100", "b")]),
        slice(1, &[("A100", "c"), ("A100", "c"), ("A100", "c"), ("A100", "c")]),
        slice(2, &[("T4", "d"), ("T4", "d")]),
    )
}

/// What is wrong with `ns`'s allocations, read from the API server: every
/// pod's claims allocated and reserved for it, on its node, with devices of
/// the kind it asked for (two A100s of one NVLink domain, one T4), no device
/// twice.
fn device_violations(c: &Cluster, ns: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let placed = c.placements(ns);
    let pods = c.json(&["get", "pods", "-n", ns]);
    let claims = c.json(&["get", "resourceclaims", "-n", ns]);
    let slices = c.json(&["get", "resourceslices"]);
    let device = |pool: &str, name: &str| -> Option<(String, String, String)> {
        let s = slices["items"].as_array()?.iter().find(|s| {
            s["metadata"]["name"].as_str().is_some_and(|n| n.starts_with(ns)) && s["spec"]["pool"]["name"] == pool
        })?;
        let d = s["spec"]["devices"].as_array()?.iter().find(|d| d["name"] == name)?;
        let attr = |a: &str| d["attributes"][a]["string"].as_str().unwrap_or("").to_string();
        Some((s["spec"]["nodeName"].as_str()?.to_string(), attr("model"), attr("nvlink")))
    };
    let mut taken = BTreeSet::new();
    let live = |p: &&Value| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
    for p in pods["items"].as_array().into_iter().flatten().filter(live) {
        let pod = p["metadata"]["name"].as_str().unwrap_or("");
        if pod == "probe" {
            continue;
        }
        let node = placed.get(pod).cloned().unwrap_or_default();
        let claim = match pod {
            "eval" => Some("one-t4".to_string()),
            _ => p["status"]["resourceClaimStatuses"][0]["resourceClaimName"].as_str().map(str::to_string),
        };
        let Some(claim) = claim else {
            bad.push(format!("{ns}: {pod} has no claim made for it"));
            continue;
        };
        let Some(k) = claims["items"].as_array().and_then(|l| l.iter().find(|k| k["metadata"]["name"] == claim)) else {
            bad.push(format!("{ns}: claim {claim} missing"));
            continue;
        };
        let reserved = k["status"]["reservedFor"].as_array().into_iter().flatten().any(|r| r["name"] == pod);
        if !reserved {
            bad.push(format!("{ns}: claim {claim} not reserved for {pod}"));
        }
        let results = k["status"]["allocation"]["devices"]["results"].as_array().cloned().unwrap_or_default();
        let (want, model) = if pod == "eval" { (1, "T4") } else { (2, "A100") };
        if results.len() != want {
            bad.push(format!("{ns}: claim {claim} of {pod} has {} devices, not {want}", results.len()));
        }
        let mut domains = BTreeSet::new();
        for r in &results {
            let (pool, name) = (r["pool"].as_str().unwrap_or(""), r["device"].as_str().unwrap_or(""));
            if !taken.insert((pool.to_string(), name.to_string())) {
                bad.push(format!("{ns}: device {pool}/{name} allocated twice"));
            }
            match device(pool, name) {
                Some((n, m, d)) => {
                    if n != node {
                        bad.push(format!("{ns}: {pod} on {node:?} but its device {pool}/{name} on {n}"));
                    }
                    if m != model {
                        bad.push(format!("{ns}: {pod} got a {m}, asked for a {model}"));
                    }
                    domains.insert(d);
                }
                None => bad.push(format!("{ns}: claim {claim} got unknown device {pool}/{name}")),
            }
        }
        if domains.len() > 1 {
            bad.push(format!("{ns}: claim {claim} spans NVLink domains {domains:?}"));
        }
    }
    bad
}

/// DRA claims, the same objects scheduled by kube-scheduler v1.37.1 and by
/// `tephra run` in one whole cluster (the controller-manager's
/// resource-claim controller makes the claims from the template): in both,
/// every pod runs with its claims allocated on its node and reserved for
/// it, CEL selectors, ExactCount and matchAttribute honoured, the four
/// training pods (a gang under tephra) on the nodes with linked A100s; once
/// they end, the controller-manager frees their claims and a second wave
/// gets the devices. Under tephra, a pod whose selector fails waits with
/// the error in its condition and an Event.
#[test]
fn dra_claims_allocate_as_with_kube_scheduler() {
    let c = Cluster::whole("devices", 3);
    let (ks, tp) = ("t-kube-scheduler", "t-tephra");
    namespace(&c, ks);
    namespace(&c, tp);
    let _kube_scheduler = KubeScheduler::start(&c);
    let mut t = Tephra::start(&c, "a", &["--period", "500ms"]);
    c.apply(&devices_workload(ks, "default-scheduler"));
    c.apply(&devices_workload(tp, "volcano"));
    for ns in [ks, tp] {
        wait(&c, ns, 120, &format!("the training pods and eval running in {ns}"), || {
            let running = pods_of(&c, ns, "app=train").iter().filter(|p| p.1 == "Running").count() == 4;
            let eval = c.placements(ns).get("eval").is_some_and(|n| !n.is_empty());
            (running && eval).then_some(())
        });
        let bad = device_violations(&c, ns);
        assert!(bad.is_empty(), "{}\n{}", bad.join("\n"), t.log());
        let placed = c.placements(ns);
        assert_eq!(placed.get("eval").map(String::as_str), Some("kwok-node-0002"), "{ns}: the T4s are on node 2");
    }
    // A selector that fails keeps its pod waiting, the error in its
    // condition and a FailedScheduling Event.
    let cond = unschedulable(&c, tp, "probe");
    let message = cond["message"].as_str().unwrap_or("");
    assert!(message.contains("No such key: cores"), "{cond}");
    let events = c.events(tp, "FailedScheduling");
    assert!(events.iter().any(|(o, m)| o == "probe" && m.contains("No such key: cores")), "{events:?}");
    // The first wave ends (kwok), the controller-manager frees its claims:
    // a second wave gets the same devices.
    for ns in [ks, tp] {
        wait(&c, ns, 90, &format!("the first wave done in {ns}"), || {
            let done = pods_of(&c, ns, "app=train").iter().filter(|p| p.1 == "Succeeded").count() == 4;
            done.then_some(())
        });
    }
    c.apply(&devices_wave(ks, "default-scheduler", "again", "600s"));
    c.apply(&devices_wave(tp, "volcano", "again", "600s"));
    for ns in [ks, tp] {
        wait(&c, ns, 120, &format!("the second wave running in {ns}"), || {
            let running = pods_of(&c, ns, "app=again").iter().filter(|p| p.1 == "Running").count() == 4;
            running.then_some(())
        });
        let bad = device_violations(&c, ns);
        assert!(bad.is_empty(), "{}\n{}", bad.join("\n"), t.log());
    }
    t.assert_alive();
    assert!(t.terminate());
}
