//! Synthetic clusters for benchmarks: node shapes (some with GPUs), node
//! groups, weighted queues, gang jobs of mixed sizes and existing load, all
//! from a seed, so a workload is the same on every run.

use std::collections::BTreeMap;
use tephra_model::cluster::*;

/// What to generate.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Nodes.
    pub nodes: usize,
    /// Pending pods to schedule.
    pub pending_pods: usize,
    /// Pods already running (bound, placed first-fit).
    pub running_pods: usize,
    /// Queues.
    pub queues: usize,
    /// Node groups the nodes are labelled into.
    pub node_groups: usize,
    /// The random seed: equal specs make equal clusters.
    pub seed: u64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const GIB: f64 = 1073741824.0;

/// The scheduler config the synthetic workloads are run with: the issue's
/// full plugin set, proportion for quotas and nodegroup for the groups.
pub const CONFIG: &str = r#"
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodegroup
  - name: nodeorder
  - name: binpack
"#;

/// Builds the cluster `spec` describes.
pub fn generate(spec: &Spec) -> Cluster {
    let mut rng = Rng(spec.seed | 1);
    let mut c = Cluster::default();
    // Node shapes: (millicores, memory GiB, GPUs).
    let shapes = [(32_000.0, 128.0, 0.0), (64_000.0, 256.0, 0.0), (16_000.0, 64.0, 0.0), (48_000.0, 384.0, 8.0)];
    for i in 0..spec.nodes {
        let (cpu, mem, gpu) = shapes[rng.below(shapes.len() as u64) as usize];
        let mut alloc: BTreeMap<String, f64> =
            [("cpu".into(), cpu), ("memory".into(), mem * GIB), ("pods".into(), 110.0)].into();
        if gpu > 0.0 {
            alloc.insert("nvidia.com/gpu".into(), gpu * 1000.0);
        }
        let group = format!("group-{}", i % spec.node_groups.max(1));
        c.nodes.push(Node {
            name: format!("node-{i}"),
            allocatable: alloc,
            labels: [
                ("volcano.sh/nodegroup-name".to_string(), group),
                ("zone".into(), format!("zone-{}", i % 3)),
                ("kubernetes.io/hostname".into(), format!("node-{i}")),
            ]
            .into(),
            ..Default::default()
        });
    }
    // Each queue may use two node groups and prefers the first.
    let groups = spec.node_groups.max(1);
    for q in 0..spec.queues.max(1) {
        let (g1, g2) = (format!("group-{}", q % groups), format!("group-{}", (q + 1) % groups));
        c.queues.push(Queue {
            name: format!("queue-{q}"),
            weight: 1.0 + (q % 4) as f64,
            reclaimable: true,
            created: q as i64,
            affinity: [("required".to_string(), vec![g1.clone(), g2]), ("preferred".to_string(), vec![g1])].into(),
            ..Default::default()
        });
    }
    let mut job = 0usize;
    let mut add_jobs = |c: &mut Cluster, pods: usize, running: bool, rng: &mut Rng| {
        let mut made = 0;
        while made < pods {
            let size = [1usize, 2, 4, 8, 16][rng.below(5) as usize].min(pods - made);
            let cpu = [500.0, 1000.0, 2000.0, 4000.0][rng.below(4) as usize];
            let mem = cpu / 1000.0 * 2.0 * GIB;
            let queue = format!("queue-{}", rng.below(spec.queues.max(1) as u64));
            let ns = format!("team-{}", job % 7);
            let name = format!("job-{job}");
            c.podgroups.push(PodGroup {
                namespace: ns.clone(),
                name: name.clone(),
                queue,
                min_member: size as u32,
                min_resources: Some([("cpu".into(), cpu * size as f64), ("memory".into(), mem * size as f64)].into()),
                phase: if running { Phase::Running } else { Phase::Inqueue },
                created: job as i64,
                ..Default::default()
            });
            for t in 0..size {
                c.pods.push(Pod {
                    namespace: ns.clone(),
                    name: format!("{name}-task-{t}"),
                    group: Some(name.clone()),
                    scheduler_name: "volcano".into(),
                    requests: [("cpu".into(), cpu), ("memory".into(), mem)].into(),
                    preemptable: true,
                    phase: if running { PodPhase::Running } else { PodPhase::Pending },
                    created: job as i64,
                    ..Default::default()
                });
            }
            made += size;
            job += 1;
        }
    };
    add_jobs(&mut c, spec.running_pods, true, &mut rng);
    place_first_fit(&mut c);
    add_jobs(&mut c, spec.pending_pods, false, &mut rng);
    c
}

/// A three-tier HyperNode tree over the nodes (racks of 20 nodes at tier 1,
/// spines of 10 racks at tier 2, zones of 5 spines at tier 3), and whole
/// pending jobs (every other one in creation order, then the rest) until
/// `percent` % of the pending pods are in them, limited to one rack (jobs
/// of 4 or more pods) or one spine (smaller ones), hard.
pub fn add_topology(c: &mut Cluster, percent: u32) {
    use tephra_model::topology::{HyperNode, Member, NetworkTopology, NodeSelector};
    let hn =
        |name: String, tier: u32, members: Vec<Member>| HyperNode { name, tier, tier_name: String::new(), members };
    let racks = c.nodes.len().div_ceil(20);
    for r in 0..racks {
        let members = (r * 20..((r + 1) * 20).min(c.nodes.len()))
            .map(|i| Member::Nodes(NodeSelector::Exact(c.nodes[i].name.clone())))
            .collect();
        c.hypernodes.insert(format!("rack-{r}"), hn(format!("rack-{r}"), 1, members));
    }
    let spines = racks.div_ceil(10);
    for s in 0..spines {
        let members = (s * 10..((s + 1) * 10).min(racks)).map(|r| Member::HyperNode(format!("rack-{r}"))).collect();
        c.hypernodes.insert(format!("spine-{s}"), hn(format!("spine-{s}"), 2, members));
    }
    for z in 0..spines.div_ceil(5) {
        let members = (z * 5..((z + 1) * 5).min(spines)).map(|s| Member::HyperNode(format!("spine-{s}"))).collect();
        c.hypernodes.insert(format!("zone-{z}"), hn(format!("zone-{z}"), 3, members));
    }
    let pending = c.pods.iter().filter(|p| p.node.is_none()).count();
    let mut want = pending * percent as usize / 100;
    let mut size: BTreeMap<(String, String), usize> = BTreeMap::new();
    for p in c.pods.iter().filter(|p| p.node.is_none()) {
        if let Some(g) = &p.group {
            *size.entry((p.namespace.clone(), g.clone())).or_default() += 1;
        }
    }
    let order = (0..c.podgroups.len()).step_by(2).chain((1..c.podgroups.len()).step_by(2));
    for i in order {
        if want == 0 {
            break;
        }
        let g = &c.podgroups[i];
        let Some(&n) = size.get(&(g.namespace.clone(), g.name.clone())) else { continue };
        let tier = if n >= 4 { 1 } else { 2 };
        c.podgroups[i].network_topology =
            Some(NetworkTopology { soft: false, highest_tier: Some(tier), highest_tier_name: None });
        want = want.saturating_sub(n);
    }
}

/// Gives whole pending jobs, in creation order, until `percent` % of the
/// pending pods carry one: every other such job's pods repel each other
/// (required pod anti-affinity on `kubernetes.io/hostname`), the others
/// spread over zones (`maxSkew: 1`, `DoNotSchedule`). Each such pod is
/// labelled `app: <job>`, which the rule selects.
pub fn add_pod_rules(c: &mut Cluster, percent: u32) {
    for (jobs, (name, members)) in pending_jobs(c, percent).into_iter().enumerate() {
        let selector = Some(vec![MatchExpr {
            key: "app".into(),
            operator: "In".into(),
            values: vec![name.clone()],
            field: false,
        }]);
        for &i in &members {
            let pod = &mut c.pods[i];
            pod.labels.insert("app".into(), name.clone());
            if jobs % 2 == 0 {
                pod.pod_terms.push(PodTerm {
                    anti: true,
                    topology_key: "kubernetes.io/hostname".into(),
                    selector: selector.clone(),
                    ..Default::default()
                });
            } else {
                pod.spread.push(Spread {
                    max_skew: 1,
                    topology_key: "zone".into(),
                    hard: true,
                    selector: selector.clone(),
                    honor_affinity: true,
                    ..Default::default()
                });
            }
        }
    }
}

/// Whole pending jobs in creation order, each its name and its pending
/// pods' indexes, until `percent` % of the pending pods are in them.
fn pending_jobs(c: &Cluster, percent: u32) -> Vec<(String, Vec<usize>)> {
    let pending = c.pods.iter().filter(|p| p.node.is_none()).count();
    let want = pending * percent as usize / 100;
    let mut of_job: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for (i, p) in c.pods.iter().enumerate().filter(|(_, p)| p.node.is_none()) {
        if let Some(g) = &p.group {
            of_job.entry((p.namespace.as_str(), g.as_str())).or_default().push(i);
        }
    }
    let (mut out, mut given) = (Vec::new(), 0);
    for g in c.podgroups.iter() {
        if given >= want {
            break;
        }
        let Some(members) = of_job.remove(&(g.namespace.as_str(), g.name.as_str())) else { continue };
        given += members.len();
        out.push((g.name.clone(), members));
    }
    out
}

/// A tiny cluster for tests: nodes `n1..` with `node_cpu` millicores, queue
/// `q`, and one Inqueue PodGroup `ns/g` (gang size `min`) of pending pods
/// `ns/p-0..` requesting `pod_cpu` millicores each.
pub fn small(nodes: usize, node_cpu: f64, pods: usize, pod_cpu: f64, min: u32) -> Cluster {
    let mut c = Cluster::default();
    for i in 1..=nodes {
        c.nodes.push(Node {
            name: format!("n{i}"),
            allocatable: [
                ("cpu".into(), node_cpu),
                ("memory".into(), node_cpu / 1000.0 * 2.0 * GIB),
                ("pods".into(), 110.0),
            ]
            .into(),
            ..Default::default()
        });
    }
    c.queues.push(Queue { name: "q".into(), weight: 1.0, reclaimable: true, ..Default::default() });
    c.podgroups.push(PodGroup {
        namespace: "ns".into(),
        name: "g".into(),
        queue: "q".into(),
        min_member: min,
        phase: Phase::Inqueue,
        ..Default::default()
    });
    for i in 0..pods {
        c.pods.push(Pod {
            namespace: "ns".into(),
            name: format!("p-{i}"),
            group: Some("g".into()),
            requests: [("cpu".into(), pod_cpu)].into(),
            preemptable: true,
            ..Default::default()
        });
    }
    c
}

/// Binds the running pods first-fit (the existing load).
fn place_first_fit(c: &mut Cluster) {
    let mut free: Vec<BTreeMap<String, f64>> = c.nodes.iter().map(|n| n.allocatable.clone()).collect();
    let mut cursor = 0;
    for p in c.pods.iter_mut().filter(|p| p.phase == PodPhase::Running && p.node.is_none()) {
        for step in 0..free.len() {
            let i = (cursor + step) % free.len();
            let fits = p.requests.iter().all(|(k, v)| free[i].get(k).copied().unwrap_or(0.0) >= *v)
                && free[i].get("pods").copied().unwrap_or(0.0) >= 1.0;
            if fits {
                for (k, v) in &p.requests {
                    *free[i].get_mut(k).unwrap() -= v;
                }
                *free[i].get_mut("pods").unwrap() -= 1.0;
                p.node = Some(c.nodes[i].name.clone());
                cursor = i;
                break;
            }
        }
        if p.node.is_none() {
            p.phase = PodPhase::Pending;
        }
    }
}

/// Gives whole pending jobs, in creation order, until `percent` of the
/// pending pods have one, a DRA claim of one GPU of 40Gi or more (a CEL
/// selector with `quantity`), made as the resource-claim controller would;
/// every node with `nvidia.com/gpu` publishes its GPUs in a ResourceSlice
/// (model and NVLink domain attributes, memory capacity). For benchmarks.
pub fn add_device_claims(c: &mut Cluster, percent: u32) {
    use tephra_model::devices::*;
    let driver = "gpu.bench";
    c.device_classes.insert(driver.into(), DeviceClass { selectors: vec![format!("device.driver == \"{driver}\"")] });
    for (i, n) in c.nodes.iter().enumerate() {
        let Some(gpus) = n.allocatable.get("nvidia.com/gpu") else { continue };
        let devices = (0..(*gpus / 1000.0) as usize)
            .map(|d| Device {
                name: format!("gpu-{d}"),
                attributes: BTreeMap::from([
                    ("model".into(), Attr::Str(if i % 2 == 0 { "A100" } else { "H100" }.into())),
                    ("nvlink".into(), Attr::Str(format!("{}-{}", n.name, d / 4))),
                ]),
                capacity: BTreeMap::from([("memory".into(), 80.0 * GIB)]),
                tainted: false,
            })
            .collect();
        let slice = ResourceSlice {
            driver: driver.into(),
            pool: n.name.clone(),
            node: Some(n.name.clone()),
            devices,
            ..Default::default()
        };
        c.resource_slices.insert(format!("{}-gpus", n.name), slice);
    }
    let request = DeviceRequest {
        name: "gpu".into(),
        class: driver.into(),
        selectors: vec![format!("device.capacity[\"{driver}\"].memory.compareTo(quantity(\"40Gi\")) >= 0")],
        all: false,
        count: 1,
    };
    for (_, members) in pending_jobs(c, percent) {
        for i in members {
            let pod = &mut c.pods[i];
            let name = format!("{}-gpu", pod.name);
            pod.device_claims.push(PodClaim { name: "gpu".into(), claim: Some(name.clone()), template: None });
            let claim =
                ResourceClaim { requests: vec![request.clone()], owner: Some(pod.name.clone()), ..Default::default() };
            let key = format!("{}/{name}", pod.namespace);
            c.resource_claims.insert(key, claim);
        }
    }
    tephra_model::allocation::account(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_consistent() {
        let spec = Spec { nodes: 50, pending_pods: 300, running_pods: 200, queues: 4, node_groups: 3, seed: 7 };
        let (a, b) = (generate(&spec), generate(&spec));
        assert_eq!(a.pods.len(), 500);
        assert_eq!(format!("{:?}", a.pods), format!("{:?}", b.pods));
        let bound = a.pods.iter().filter(|p| p.node.is_some()).count();
        assert!(bound > 150, "existing load placed: {bound}");
        // Every pod's group exists and every gang's size matches its pods.
        for g in &a.podgroups {
            let n = a.pods.iter().filter(|p| p.group.as_ref() == Some(&g.name)).count();
            assert_eq!(n as u32, g.min_member);
        }
        let other = generate(&Spec { seed: 8, ..spec });
        assert_ne!(format!("{:?}", a.pods), format!("{:?}", other.pods));
    }
}
