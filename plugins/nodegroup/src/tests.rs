use super::*;
use tephra_sdk::types::{Label, Quantity as Amount};
use tephra_sdk::{Runtime, SnapshotBuilder, TaskStatus::*};

const GI: f64 = 1073741824.0;

/// A hand-built cluster: nodes with an optional group label, queues with
/// affinity rows, annotations and capabilities, jobs and tasks.
struct Cluster {
    b: SnapshotBuilder,
}

impl Cluster {
    fn new() -> Self {
        Cluster { b: SnapshotBuilder::new(&[]) }
    }
    fn with_scalars(scalars: &[&str]) -> Self {
        Cluster { b: SnapshotBuilder::new(scalars) }
    }
    /// A node with `cpu` cores, `mem` bytes and `pods`, in `group` if given.
    fn node(&mut self, cpu: f64, mem: f64, pods: f64, group: Option<&str>) -> u32 {
        let n = self.b.node(&[cpu * 1000.0, mem, pods]);
        if let Some(g) = group {
            self.label(n, GROUP_LABEL, g);
        }
        n
    }
    fn label(&mut self, node: u32, k: &str, v: &str) {
        let (key, value) = (self.b.string(k), self.b.string(v));
        self.b.snap.node_labels.push(Label { owner: node, key, value });
    }
    /// The five nodes of Volcano's TestNodeGroup: n1..n4 in group1..group4, n5 unlabelled.
    fn five_nodes(&mut self) -> Vec<u32> {
        let mut nodes = vec![self.node(2.0, 4.0 * GI, 0.0, Some("group1"))];
        for g in ["group2", "group3", "group4"] {
            nodes.push(self.node(4.0, 16.0 * GI, 0.0, Some(g)));
        }
        nodes.push(self.node(4.0, 16.0 * GI, 0.0, None));
        nodes
    }
    fn queue(&mut self, parent: u32) -> u32 {
        let q = self.b.queue(1.0);
        self.b.snap.queue_parent[q as usize] = parent;
        q
    }
    /// Affinity rows of one kind ("required", "preferred", "anti-required", "anti-preferred").
    fn affinity(&mut self, q: u32, kind: &str, groups: &[&str]) {
        for g in groups {
            let (key, value) = (self.b.string(kind), self.b.string(g));
            self.b.snap.queue_affinity.push(Label { owner: q, key, value });
        }
    }
    /// Volcano's full test affinity: required [group1, group3], preferred
    /// [group3], anti-required [group2, group4], anti-preferred [group4].
    fn test_affinity(&mut self, q: u32) {
        self.affinity(q, "required", &["group1", "group3"]);
        self.affinity(q, "preferred", &["group3"]);
        self.affinity(q, "anti-required", &["group2", "group4"]);
        self.affinity(q, "anti-preferred", &["group4"]);
    }
    fn annotate(&mut self, q: u32, k: &str, v: &str) {
        let (key, value) = (self.b.string(k), self.b.string(v));
        self.b.snap.queue_annotations.push(Label { owner: q, key, value });
    }
    fn limits(&mut self, q: u32, json: &str) {
        self.annotate(q, LIMITS_ANNOTATION, json);
    }
    fn capability(&mut self, q: u32, dim: u32, value: f64) {
        self.b.snap.queue_capability.push(Amount { owner: q, dim, value });
    }
    fn job(&mut self, q: u32) -> u32 {
        self.b.job(q, 0)
    }
    /// A task of `cpu` cores and `mem` bytes (plus one pod).
    fn task(&mut self, job: u32, cpu: f64, mem: f64, status: TaskStatus, node: u32) -> u32 {
        self.b.task(job, &[cpu * 1000.0, mem], status, node)
    }
    fn open(self, args: &[(&str, &str)]) -> Runtime<NodeGroup> {
        let mut rt = Runtime::<NodeGroup>::default();
        let args = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        rt.open_session(self.b.snap, args).unwrap();
        rt
    }
}

/// Volcano's predicate status per node: S (fits), U (unschedulable), UU
/// (unschedulable and unresolvable).
fn statuses(rt: &mut Runtime<NodeGroup>, task: u32, nodes: &[u32]) -> Vec<&'static str> {
    let fit = rt.predicate(task, nodes);
    // The per-node predicate agrees with the batch that answered.
    let s = rt.session.as_ref().unwrap();
    for (i, &n) in nodes.iter().enumerate() {
        let one = rt.plugin.predicate(s, task, n).err().map(|u| (u.message.to_string(), u.unresolvable));
        let batch = fit.codes[i].checked_sub(1).map(|k| &fit.reasons[k as usize]);
        assert_eq!(one, batch.map(|r| (r.message.clone(), r.unresolvable)), "node {n}");
    }
    fit.codes
        .iter()
        .map(|&c| match c {
            0 => "S",
            c if fit.reasons[c as usize - 1].unresolvable => "UU",
            _ => "U",
        })
        .collect()
}

fn status(rt: &mut Runtime<NodeGroup>, task: u32, node: u32) -> &'static str {
    statuses(rt, task, &[node])[0]
}

/// The failure message for `task` on `node`, if any.
fn reason(rt: &mut Runtime<NodeGroup>, task: u32, node: u32) -> Option<String> {
    let fit = rt.predicate(task, &[node]);
    (fit.codes[0] > 0).then(|| fit.reasons[fit.codes[0] as usize - 1].message.clone())
}

fn ev(kind: EventKind, task: u32, node: u32, status: TaskStatus) -> Event {
    Event { kind, task, node, status }
}

fn split(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

// ---- the conformance scenarios (volcano-scenarios.yaml, nodegroup-*) ----

#[test]
fn scenario_soft_subset_of_hard() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q1 = c.queue(NONE); // parent root, which is not in the snapshot
    c.test_affinity(q1);
    let pg1 = c.job(q1);
    let p1 = c.task(pg1, 2.0, 4.0 * GI, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(rt.node_order(p1, &nodes), [100.0, 0.0, 150.0, -1.0, 0.0]);
    assert_eq!(statuses(&mut rt, p1, &nodes), split("S UU S S UU"));
}

#[test]
fn scenario_nonstrict_no_affinity() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q = c.queue(NONE);
    let pg5 = c.job(q);
    let p5 = c.task(pg5, 2.0, 4.0 * GI, Pending, NONE);
    let mut rt = c.open(&[("strict", "false")]);
    assert_eq!(rt.node_order(p5, &nodes), [0.0; 5]);
    assert_eq!(statuses(&mut rt, p5, &nodes), split("UU UU UU UU S"));
}

#[test]
fn scenario_affinity_inherited_from_parent() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let root = c.queue(NONE);
    c.test_affinity(root);
    let q1 = c.queue(root);
    c.test_affinity(q1);
    let child = c.queue(q1);
    let pg3 = c.job(child);
    let p3 = c.task(pg3, 2.0, 4.0 * GI, Pending, NONE);
    // The scenario sets the enableHierarchy switch; the plugin reads it as an argument.
    let mut rt = c.open(&[("enableHierarchy", "true")]);
    assert_eq!(rt.node_order(p3, &nodes), [100.0, 0.0, 150.0, -1.0, 0.0]);
    assert_eq!(statuses(&mut rt, p3, &nodes), split("S UU S S UU"));
}

#[test]
fn scenario_queue_without_affinity_strict() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q = c.queue(NONE); // parent root, not in the snapshot
    let pg4 = c.job(q);
    let p4 = c.task(pg4, 2.0, 4.0 * GI, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(rt.node_order(p4, &nodes), [0.0; 5]);
    assert_eq!(statuses(&mut rt, p4, &nodes), split("UU UU UU UU UU"));
}

#[test]
fn scenario_preferred_order() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q3 = c.queue(NONE);
    c.affinity(q3, "preferred", &["group1", "group3"]);
    let pg6 = c.job(q3);
    let p6 = c.task(pg6, 2.0, 4.0 * GI, Pending, NONE);
    let mut rt = c.open(&[("enablePreferredOrder", "true")]);
    assert_eq!(rt.node_order(p6, &nodes), [50.0, 0.0, 25.0, 0.0, 0.0]);
    assert_eq!(statuses(&mut rt, p6, &nodes), split("S UU S UU UU"));
}

/// Two 16-core nodes in group1 and group2, a queue that requires both and
/// prefers group1, with this limits annotation; returns (cluster, queue, nodes).
fn limit_cluster(annotation: &str) -> (Cluster, u32, [u32; 2]) {
    let mut c = Cluster::new();
    let n1 = c.node(16.0, 64.0 * GI, 32.0, Some("group1"));
    let n2 = c.node(16.0, 64.0 * GI, 32.0, Some("group2"));
    let q = c.queue(NONE);
    c.limits(q, annotation);
    c.affinity(q, "required", &["group1", "group2"]);
    c.affinity(q, "preferred", &["group1"]);
    (c, q, [n1, n2])
}

#[test]
fn scenario_limit_counts_running_usage() {
    let (mut c, q, nodes) = limit_cluster(r#"{"group1":{"cpu":"3","memory":"8Gi"}}"#);
    let used = c.job(q);
    c.task(used, 2.0, 4.0 * GI, Running, nodes[0]);
    let pg = c.job(q);
    let pending = c.task(pg, 2.0, 4.0 * GI, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(statuses(&mut rt, pending, &nodes), split("UU S"));
    let why = reason(&mut rt, pending, nodes[0]).unwrap();
    assert!(why.contains("\"group1\"") && why.contains("cpu 4000m > 3000m"), "{why}");
    assert!(!why.contains("memory"), "memory 8Gi is not exceeded: {why}");
}

#[test]
fn scenario_limit_invalid_annotation() {
    let (mut c, q, nodes) = limit_cluster(r#"{"group1":{"cpu":"#);
    let pg = c.job(q);
    let pending = c.task(pg, 2.0, 4.0 * GI, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(statuses(&mut rt, pending, &nodes), split("UU UU"));
    let why = reason(&mut rt, pending, nodes[1]).unwrap();
    assert!(why.contains(LIMITS_ANNOTATION) && why.contains("invalid"), "{why}");
}

// ---- the design document's two cases (seed 003) ----

#[test]
fn design_case_1_nlp_prefers_nodegroup1_recommend_only_nodegroup2() {
    let mut c = Cluster::new();
    let ng1 = [c.node(16.0, 64.0 * GI, 110.0, Some("nodegroup1")), c.node(16.0, 64.0 * GI, 110.0, Some("nodegroup1"))];
    let ng2 = [c.node(16.0, 64.0 * GI, 110.0, Some("nodegroup2")), c.node(16.0, 64.0 * GI, 110.0, Some("nodegroup2"))];
    let nodes = [ng1[0], ng1[1], ng2[0], ng2[1]];
    let nlp = c.queue(NONE);
    c.affinity(nlp, "required", &["nodegroup1", "nodegroup2"]);
    c.affinity(nlp, "preferred", &["nodegroup1"]);
    let recommend = c.queue(NONE);
    c.affinity(recommend, "required", &["nodegroup2"]);
    let (j1, j2) = (c.job(nlp), c.job(recommend));
    let (t_nlp, t_rec) = (c.task(j1, 1.0, GI, Pending, NONE), c.task(j2, 1.0, GI, Pending, NONE));
    let mut rt = c.open(&[]);
    // nlp may use both groups and ranks nodegroup1 first, so nodegroup2 is
    // used once nodegroup1 has no room left.
    assert_eq!(statuses(&mut rt, t_nlp, &nodes), split("S S S S"));
    assert_eq!(rt.node_order(t_nlp, &nodes), [150.0, 150.0, 100.0, 100.0]);
    // recommend may only use nodegroup2.
    assert_eq!(statuses(&mut rt, t_rec, &nodes), split("UU UU S S"));
    assert_eq!(rt.node_order(t_rec, &ng2), [100.0, 100.0]);
    let why = reason(&mut rt, t_rec, ng1[0]).unwrap();
    assert!(why.contains("\"nodegroup1\""), "{why}");
}

#[test]
fn design_case_2_recommend_both_clouds_tts_only_private() {
    let mut c = Cluster::new();
    let private = c.node(32.0, 128.0 * GI, 110.0, Some("private-cloud"));
    let public = c.node(32.0, 128.0 * GI, 110.0, Some("public-cloud"));
    let nodes = [private, public];
    let recommend = c.queue(NONE);
    c.affinity(recommend, "required", &["private-cloud", "public-cloud"]);
    let tts = c.queue(NONE);
    c.affinity(tts, "required", &["private-cloud"]);
    // The same intent through anti-affinity: both allowed, public forbidden.
    let tts_anti = c.queue(NONE);
    c.affinity(tts_anti, "required", &["private-cloud", "public-cloud"]);
    c.affinity(tts_anti, "anti-required", &["public-cloud"]);
    let tasks: Vec<u32> = [recommend, tts, tts_anti]
        .iter()
        .map(|&q| {
            let j = c.job(q);
            c.task(j, 4.0, 8.0 * GI, Pending, NONE)
        })
        .collect();
    let mut rt = c.open(&[]);
    assert_eq!(statuses(&mut rt, tasks[0], &nodes), split("S S"));
    assert_eq!(statuses(&mut rt, tasks[1], &nodes), split("S UU"));
    assert_eq!(statuses(&mut rt, tasks[2], &nodes), split("S UU"));
    let why = reason(&mut rt, tasks[2], public).unwrap();
    assert!(why.contains("\"public-cloud\"") && why.contains("anti-affinity"), "{why}");
    let why = reason(&mut rt, tasks[1], public).unwrap();
    assert!(why.contains("\"public-cloud\"") && why.contains("not among"), "{why}");
}

// ---- predicate and score rules ----

#[test]
fn anti_affinity_alone_follows_the_implementation_not_the_design_text() {
    // The design text says anti-required [group1] means "any group but
    // group1"; Volcano's predicate starts from required ∪ preferred, so with
    // no positive list nothing is allowed. Anti-preferred re-opens its group
    // (score −1) and nothing else.
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let anti_req = c.queue(NONE);
    c.affinity(anti_req, "anti-required", &["group1"]);
    let anti_pref = c.queue(NONE);
    c.affinity(anti_pref, "anti-preferred", &["group1"]);
    let (j1, j2) = (c.job(anti_req), c.job(anti_pref));
    let (t1, t2) = (c.task(j1, 1.0, GI, Pending, NONE), c.task(j2, 1.0, GI, Pending, NONE));
    let mut rt = c.open(&[]);
    assert_eq!(statuses(&mut rt, t1, &nodes), split("UU UU UU UU UU"));
    assert_eq!(statuses(&mut rt, t2, &nodes), split("S UU UU UU UU"));
    assert_eq!(rt.node_order(t2, &nodes), [-1.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn anti_required_beats_required_and_anti_preferred_beats_both() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q = c.queue(NONE);
    c.affinity(q, "required", &["group1", "group2", "group3"]);
    c.affinity(q, "preferred", &["group2"]);
    c.affinity(q, "anti-required", &["group2", "group3"]);
    c.affinity(q, "anti-preferred", &["group3"]);
    let j = c.job(q);
    let t = c.task(j, 1.0, GI, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(statuses(&mut rt, t, &nodes[..3]), split("S UU S"));
    // Scores ignore anti-required (the predicate has already filtered).
    assert_eq!(rt.node_order(t, &nodes[..3]), [100.0, 150.0, -1.0]);
}

#[test]
fn preferred_order_scores_by_position_and_plain_preferred_is_flat() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q = c.queue(NONE);
    c.affinity(q, "required", &["group4"]);
    c.affinity(q, "preferred", &["group3", "group1", "group2", "group4"]);
    let j = c.job(q);
    let t = c.task(j, 1.0, GI, Pending, NONE);
    let snap = c.b.snap.clone();
    let mut rt = c.open(&[("enablePreferredOrder", "true")]);
    assert_eq!(rt.node_order(t, &nodes), [37.5, 25.0, 50.0, 112.5, 0.0]);
    let mut flat = Runtime::<NodeGroup>::default();
    flat.open_session(snap, vec![]).unwrap();
    assert_eq!(flat.node_order(t, &nodes), [50.0, 50.0, 50.0, 150.0, 0.0]);
}

#[test]
fn preferred_order_with_a_repeated_group_keeps_volcanos_arithmetic() {
    // [quirk] Volcano indexes a group by its last position and divides by
    // the number of distinct names: [group1, group3, group1] gives group1
    // 50·(2−2)/2 = 0 and group3 50·(2−1)/2 = 25. Names of groups no node
    // has still count in n.
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q = c.queue(NONE);
    c.affinity(q, "preferred", &["group1", "group3", "group1"]);
    let q2 = c.queue(NONE);
    c.affinity(q2, "preferred", &["ghost", "group2"]);
    let (j, j2) = (c.job(q), c.job(q2));
    let (t, t2) = (c.task(j, 1.0, GI, Pending, NONE), c.task(j2, 1.0, GI, Pending, NONE));
    let mut rt = c.open(&[("enablePreferredOrder", "true")]);
    assert_eq!(rt.node_order(t, &nodes), [0.0, 0.0, 25.0, 0.0, 0.0]);
    assert_eq!(rt.node_order(t2, &nodes), [0.0, 25.0, 0.0, 0.0, 0.0]);
}

#[test]
fn strict_and_non_strict_on_labelled_and_unlabelled_nodes() {
    let mut c = Cluster::new();
    let labelled = c.node(4.0, 8.0 * GI, 110.0, Some("group1"));
    let bare = c.node(4.0, 8.0 * GI, 110.0, None);
    // A label key other than the group key does not make a node a member.
    c.label(bare, "kubernetes.io/hostname", "bare");
    let with = c.queue(NONE);
    c.affinity(with, "required", &["group1"]);
    let without = c.queue(NONE);
    let (j1, j2) = (c.job(with), c.job(without));
    let (t_with, t_without) = (c.task(j1, 1.0, GI, Pending, NONE), c.task(j2, 1.0, GI, Pending, NONE));
    let snap = c.b.snap.clone();
    let nodes = [labelled, bare];

    let mut strict = c.open(&[]);
    assert_eq!(statuses(&mut strict, t_with, &nodes), split("S UU"));
    assert_eq!(statuses(&mut strict, t_without, &nodes), split("UU UU"));
    let why = reason(&mut strict, t_without, bare).unwrap();
    assert!(why.contains(GROUP_LABEL) && why.contains("strict"), "{why}");
    let why = reason(&mut strict, t_without, labelled).unwrap();
    assert!(why.contains("\"group1\"") && why.contains("no node-group affinity"), "{why}");

    for value in ["false", "False"] {
        let mut lax = Runtime::<NodeGroup>::default();
        lax.open_session(snap.clone(), vec![("strict".into(), value.into())]).unwrap();
        assert_eq!(statuses(&mut lax, t_with, &nodes), split("S UU"));
        assert_eq!(statuses(&mut lax, t_without, &nodes), split("UU S"));
        let why = reason(&mut lax, t_with, bare).unwrap();
        assert!(why.contains("the queue has a node-group affinity"), "{why}");
    }

    // An unreadable value keeps the default (strict) instead of failing the session.
    let mut odd = Runtime::<NodeGroup>::default();
    odd.open_session(snap, vec![("strict".into(), "maybe".into())]).unwrap();
    assert_eq!(statuses(&mut odd, t_without, &nodes), split("UU UU"));
}

#[test]
fn a_group_label_with_an_empty_value_is_a_group_named_empty() {
    let mut c = Cluster::new();
    let n = c.node(4.0, 8.0 * GI, 110.0, Some(""));
    let q = c.queue(NONE);
    c.affinity(q, "required", &["group1"]);
    let j = c.job(q);
    let t = c.task(j, 1.0, GI, Pending, NONE);
    let mut rt = c.open(&[("strict", "false")]);
    assert_eq!(status(&mut rt, t, n), "UU");
    assert!(reason(&mut rt, t, n).unwrap().contains("nodegroup \"\""));
}

#[test]
fn plugin_info_and_reasons_are_unresolvable_and_name_the_group() {
    let info = Runtime::<NodeGroup>::info();
    assert_eq!(info.name, "nodegroup");
    assert!(info.flush_events);
    assert_eq!(NodeGroup::POINTS, [P::Predicate, P::NodeOrder, P::Events]);
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q = c.queue(NONE);
    c.affinity(q, "required", &["group1"]);
    let j = c.job(q);
    let t = c.task(j, 1.0, GI, Pending, NONE);
    let mut rt = c.open(&[]);
    let fit = rt.predicate(t, &nodes);
    assert_eq!(fit.codes[0], 0);
    // One reason per group (and one for the unlabelled node), all unresolvable.
    assert_eq!(fit.reasons.len(), 4);
    assert!(fit.reasons.iter().all(|r| r.unresolvable));
    for (k, g) in ["group2", "group3", "group4"].iter().enumerate() {
        let r = &fit.reasons[fit.codes[k + 1] as usize - 1];
        assert!(r.message.contains(&format!("\"{g}\"")), "{}", r.message);
    }
}

// ---- hierarchy ----

/// root requires group1, mid (child of root) requires group2; leaf is a
/// child of mid, other a child of root, own a child of mid with its own
/// affinity, deep a child of leaf. None but root and mid and own has affinity.
fn hierarchy() -> (Cluster, Vec<u32>, [u32; 5]) {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let root = c.queue(NONE);
    c.affinity(root, "required", &["group1"]);
    c.affinity(root, "preferred", &["group1"]);
    let mid = c.queue(root);
    c.affinity(mid, "required", &["group2"]);
    let leaf = c.queue(mid);
    let other = c.queue(root);
    let own = c.queue(mid);
    c.affinity(own, "required", &["group3"]);
    let deep = c.queue(leaf);
    let tasks = [leaf, other, own, deep, root].map(|q| {
        let j = c.job(q);
        c.task(j, 1.0, GI, Pending, NONE)
    });
    (c, nodes, tasks)
}

#[test]
fn hierarchy_inherits_the_nearest_ancestors_affinity() {
    let (c, nodes, [leaf, other, own, deep, root]) = hierarchy();
    let mut rt = c.open(&[("enableHierarchy", "true")]);
    assert_eq!(statuses(&mut rt, leaf, &nodes), split("UU S UU UU UU"), "leaf takes mid's, not root's");
    assert_eq!(statuses(&mut rt, deep, &nodes), split("UU S UU UU UU"), "two levels up");
    assert_eq!(statuses(&mut rt, other, &nodes), split("S UU UU UU UU"));
    assert_eq!(rt.node_order(other, &nodes), [150.0, 0.0, 0.0, 0.0, 0.0], "scores inherit too");
    assert_eq!(statuses(&mut rt, own, &nodes), split("UU UU S UU UU"), "own affinity wins");
    assert_eq!(statuses(&mut rt, root, &nodes), split("S UU UU UU UU"));
}

#[test]
fn without_hierarchy_nothing_is_inherited() {
    let (c, nodes, [leaf, other, own, deep, _]) = hierarchy();
    let snap = c.b.snap.clone();
    for args in [vec![], vec![("enableHierarchy".to_string(), "false".to_string())]] {
        let mut rt = Runtime::<NodeGroup>::default();
        rt.open_session(snap.clone(), args).unwrap();
        for t in [leaf, other, deep] {
            assert_eq!(statuses(&mut rt, t, &nodes), split("UU UU UU UU UU"));
            assert_eq!(rt.node_order(t, &nodes), [0.0; 5]);
        }
        assert_eq!(statuses(&mut rt, own, &nodes), split("UU UU S UU UU"));
    }
}

#[test]
fn hierarchy_survives_a_parent_cycle_and_does_not_inherit_limits() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let a = c.queue(NONE);
    let b = c.queue(a);
    c.b.snap.queue_parent[a as usize] = b;
    let root = c.queue(NONE);
    c.affinity(root, "required", &["group1"]);
    c.limits(root, "not json");
    let child = c.queue(root);
    let tasks: Vec<u32> = [a, child]
        .iter()
        .map(|&q| {
            let j = c.job(q);
            c.task(j, 1.0, GI, Pending, NONE)
        })
        .collect();
    let mut rt = c.open(&[("enableHierarchy", "true")]);
    assert_eq!(statuses(&mut rt, tasks[0], &nodes), split("UU UU UU UU UU"));
    // The child inherits root's affinity but not root's broken annotation.
    assert_eq!(statuses(&mut rt, tasks[1], &nodes), split("S UU UU UU UU"));
}

// ---- per-group resource limits ----

#[test]
fn limits_follow_allocate_and_deallocate_events() {
    let (mut c, q, [n1, n2]) = limit_cluster(r#"{"group1":{"cpu":"3"}}"#);
    let j = c.job(q);
    let a = c.task(j, 2.0, GI, Pending, NONE);
    let b = c.task(j, 2.0, GI, Pending, NONE);
    let small = c.task(j, 1.0, GI, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(statuses(&mut rt, b, &[n1, n2]), split("S S"));

    rt.on_events(&[ev(EventKind::Allocate, a, n1, Allocated)]);
    assert_eq!(statuses(&mut rt, b, &[n1, n2]), split("UU S"), "2 + 2 > 3 in group1 only");
    assert_eq!(status(&mut rt, small, n1), "S", "2 + 1 = 3 is within the limit");

    rt.on_events(&[ev(EventKind::Allocate, small, n1, Allocated)]);
    let why = reason(&mut rt, b, n1).unwrap();
    assert!(why.contains("cpu 5000m > 3000m") && why.contains("\"group1\""), "{why}");

    // Allocated → Binding: the host reports a give-back and a take.
    rt.on_events(&[ev(EventKind::Deallocate, a, n1, Pending), ev(EventKind::Allocate, a, n1, Binding)]);
    assert_eq!(status(&mut rt, b, n1), "UU");

    rt.on_events(&[ev(EventKind::Deallocate, a, n1, Pending)]);
    assert_eq!(status(&mut rt, b, n1), "S", "1 + 2 = 3 after a gave its 2 back");

    // Pipelined tasks count as well (Volcano's AllocateFunc fires for them).
    rt.on_events(&[ev(EventKind::Allocate, a, n1, Pipelined)]);
    assert_eq!(status(&mut rt, b, n1), "UU");
    // A deallocate that names no node still gives back what was counted.
    rt.on_events(&[ev(EventKind::Deallocate, a, NONE, Pending)]);
    assert_eq!(status(&mut rt, b, n1), "S");

    // Usage in group2 does not count against group1's limit.
    rt.on_events(&[ev(EventKind::Allocate, a, n2, Allocated)]);
    assert_eq!(status(&mut rt, b, n1), "S");
}

#[test]
fn limits_count_existing_tasks_that_hold_resources() {
    // Allocated, Binding, Bound, Running count; Releasing, Pipelined and
    // finished tasks do not (Volcano's AllocatedStatus at session open).
    for (st, counted) in [
        (Allocated, true),
        (Binding, true),
        (Bound, true),
        (Running, true),
        (Releasing, false),
        (Pipelined, false),
        (Succeeded, false),
        (Failed, false),
    ] {
        let (mut c, q, [n1, _]) = limit_cluster(r#"{"group1":{"cpu":"3"}}"#);
        let j = c.job(q);
        c.task(j, 2.0, GI, st, n1);
        let t = c.task(j, 2.0, GI, Pending, NONE);
        let mut rt = c.open(&[]);
        assert_eq!(status(&mut rt, t, n1), if counted { "UU" } else { "S" }, "{st:?}");
    }
}

#[test]
fn a_resumed_session_counts_what_tasks_hold_now() {
    // Task a's status in each session; b asks for 2 of group1's 3 cores.
    let cluster = |a: TaskStatus| {
        let (mut c, q, [n1, _]) = limit_cluster(r#"{"group1":{"cpu":"3"}}"#);
        let j = c.job(q);
        c.task(j, 2.0, GI, a, if a == Pending { NONE } else { n1 });
        let b = c.task(j, 2.0, GI, Pending, NONE);
        (c.b.snap, b, n1)
    };
    let (first, b, n1) = cluster(Pending);
    let mut rt = Runtime::<NodeGroup>::default();
    rt.open_session(first, vec![]).unwrap();
    rt.on_events(&[ev(EventKind::Allocate, 0, n1, Allocated)]);
    assert_eq!(status(&mut rt, b, n1), "UU");
    // Bound and running, then finished: the statuses move without events.
    for (a, want) in [(Running, "UU"), (Succeeded, "S"), (Running, "UU")] {
        let next = cluster(a).0;
        assert_eq!(rt.continue_on(&next, vec![]), Ok(true));
        assert!(rt.resumed(), "{a:?}");
        assert_eq!(status(&mut rt, b, n1), want, "{a:?}");
        let mut fresh = Runtime::<NodeGroup>::default();
        fresh.open_session(next, vec![]).unwrap();
        assert_eq!(status(&mut fresh, b, n1), want, "{a:?}");
    }
    // Other switches: opened afresh.
    let args = vec![("strict".to_string(), "false".to_string())];
    assert_eq!(rt.continue_on(&cluster(Running).0, args), Ok(true));
    assert!(!rt.resumed());
    assert_eq!(status(&mut rt, b, n1), "UU");
}

#[test]
fn evicting_a_running_task_frees_its_share_and_unevicting_takes_it_back() {
    let (mut c, q, [n1, _]) = limit_cluster(r#"{"group1":{"cpu":"3"}}"#);
    let j = c.job(q);
    let running = c.task(j, 2.0, GI, Running, n1);
    let t = c.task(j, 2.0, GI, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(status(&mut rt, t, n1), "UU");
    rt.on_events(&[ev(EventKind::Deallocate, running, n1, Releasing)]);
    assert_eq!(status(&mut rt, t, n1), "S");
    rt.on_events(&[ev(EventKind::Allocate, running, n1, Running)]);
    assert_eq!(status(&mut rt, t, n1), "UU");
}

#[test]
fn limits_are_per_queue() {
    let (mut c, q, [n1, _]) = limit_cluster(r#"{"group1":{"cpu":"3"}}"#);
    let other = c.queue(NONE);
    c.affinity(other, "required", &["group1"]);
    let (j, jo) = (c.job(q), c.job(other));
    // The other queue's usage does not count against q's limit, and q's
    // limit does not bind the other queue.
    c.task(jo, 8.0, GI, Running, n1);
    let t = c.task(j, 3.0, GI, Pending, NONE);
    let to = c.task(jo, 8.0, GI, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(status(&mut rt, t, n1), "S");
    assert_eq!(status(&mut rt, to, n1), "S");
}

#[test]
fn limit_comparison_has_volcanos_tolerance() {
    for (cpu, expect) in [(1.00005, "S"), (1.0002, "UU")] {
        let (mut c, q, [n1, _]) = limit_cluster(r#"{"group1":{"cpu":"3"}}"#);
        let j = c.job(q);
        c.task(j, 2.0, GI, Running, n1);
        // 2000 + 1000.05 exceeds 3000 by less than ε = 0.1; 1000.2 by more.
        let t = c.task(j, cpu, GI, Pending, NONE);
        let mut rt = c.open(&[]);
        assert_eq!(status(&mut rt, t, n1), expect, "cpu {cpu}");
    }
}

#[test]
fn limits_on_memory_and_scalars_ignore_count_quotas_and_unknown_names() {
    let mut c = Cluster::with_scalars(&["nvidia.com/gpu"]);
    let n1 = c.node(64.0, 256.0 * GI, 110.0, Some("gpu"));
    let q = c.queue(NONE);
    c.affinity(q, "required", &["gpu"]);
    c.limits(
        q,
        r#" { "gpu" : { "memory": "10Gi", "pods": 3, "nvidia.com/gpu": "2",
                        "count/pods": "1", "example.com/unknown": "1" } } "#,
    );
    let j = c.job(q);
    c.b.task(j, &[1000.0, 4.0 * GI, 0.0, 1000.0], Running, n1);
    let mem = c.b.task(j, &[1000.0, 7.0 * GI], Pending, NONE);
    let gpu = c.b.task(j, &[1000.0, GI, 0.0, 1500.0], Pending, NONE);
    let fine = c.b.task(j, &[1000.0, GI, 0.0, 1000.0], Pending, NONE);
    let mut rt = c.open(&[]);
    let why = reason(&mut rt, mem, n1).unwrap();
    assert!(why.ends_with(&format!(": memory {} > {}", 11.0 * GI, 10.0 * GI)), "{why}");
    let why = reason(&mut rt, gpu, n1).unwrap();
    assert!(why.ends_with(": nvidia.com/gpu 2500m > 2000m"), "{why}");
    assert_eq!(status(&mut rt, fine, n1), "S", "count/* and unknown resources do not bind");
}

#[test]
fn a_pods_limit_counts_tasks() {
    let (mut c, q, [n1, n2]) = limit_cluster(r#"{"group1":{"pods":"3"}}"#);
    let j = c.job(q);
    for _ in 0..3 {
        c.task(j, 0.1, 0.0, Running, n1);
    }
    let t = c.task(j, 0.1, 0.0, Pending, NONE);
    let mut rt = c.open(&[]);
    assert_eq!(statuses(&mut rt, t, &[n1, n2]), split("UU S"));
    assert!(reason(&mut rt, t, n1).unwrap().ends_with(": pods 4 > 3"));
}

#[test]
fn invalid_annotation_fails_every_node_even_unlabelled_ones_when_not_strict() {
    let mut c = Cluster::new();
    let nodes = c.five_nodes();
    let q = c.queue(NONE);
    c.limits(q, r#"{"group1": {"cpu": "three"}}"#);
    let fine = c.queue(NONE);
    c.limits(fine, "");
    let (j, jf) = (c.job(q), c.job(fine));
    let (t, tf) = (c.task(j, 1.0, GI, Pending, NONE), c.task(jf, 1.0, GI, Pending, NONE));
    let mut rt = c.open(&[("strict", "false")]);
    assert_eq!(statuses(&mut rt, t, &nodes), split("UU UU UU UU UU"));
    assert!(reason(&mut rt, t, nodes[4]).unwrap().contains("\"three\""));
    // An empty annotation means no limits.
    assert_eq!(statuses(&mut rt, tf, &nodes), split("UU UU UU UU S"));
}

// ---- the capability check at open ----

fn open_plugin(c: Cluster, args: &[(&str, &str)]) -> (NodeGroup, Session) {
    let s = c.b.build();
    let mut p = NodeGroup::default();
    let args = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    p.open(&s, &Args::from_pairs(args)).unwrap();
    (p, s)
}

#[test]
fn capability_beyond_the_usable_groups_is_reported_with_numbers() {
    let mut c = Cluster::new();
    for g in ["nodegroup1", "nodegroup1", "nodegroup2", "other"] {
        c.node(16.0, 64.0 * GI, 110.0, Some(g));
    }
    c.node(16.0, 64.0 * GI, 110.0, None);
    // nlp may use nodegroup1 and nodegroup2 (48 cores, 192Gi), asks for 64 cores and 128Gi.
    let nlp = c.queue(NONE);
    c.affinity(nlp, "required", &["nodegroup1", "nodegroup2"]);
    c.affinity(nlp, "preferred", &["nodegroup1"]);
    c.capability(nlp, 0, 64000.0);
    c.capability(nlp, 1, 128.0 * GI);
    // recommend: nodegroup2 minus nothing, capped at 8 cores by its limit.
    let recommend = c.queue(NONE);
    c.affinity(recommend, "required", &["nodegroup2", "nodegroup1"]);
    c.affinity(recommend, "anti-required", &["nodegroup1"]);
    c.limits(recommend, r#"{"nodegroup2": {"cpu": "8"}}"#);
    c.capability(recommend, 0, 12000.0);
    // fits: capability within what its groups hold; cpu ≤ 0 means no limit.
    let fits = c.queue(NONE);
    c.affinity(fits, "preferred", &["other"]);
    c.capability(fits, 0, 16000.0);
    c.capability(fits, 1, -1.0);
    // anti-preferred re-opens "other" (the predicate's quirk), so it is usable.
    let reopened = c.queue(NONE);
    c.affinity(reopened, "anti-preferred", &["other"]);
    c.capability(reopened, 0, 16000.0);
    // No affinity in strict mode: no node at all.
    let bare = c.queue(NONE);
    c.capability(bare, 2, 10.0);
    let snap = c.b.snap.clone();
    let (p, s) = open_plugin(c, &[]);
    assert_eq!(
        p.shortfalls(&s),
        [
            Shortfall {
                queue: nlp,
                dims: vec![(0, 64000.0, 48000.0)],
                usable: vec!["nodegroup1".into(), "nodegroup2".into()]
            },
            Shortfall { queue: recommend, dims: vec![(0, 12000.0, 8000.0)], usable: vec!["nodegroup2".into()] },
            Shortfall { queue: bare, dims: vec![(2, 10.0, 0.0)], usable: vec![] },
        ]
    );
    // Not strict: the affinity-less queue may use the unlabelled node.
    let mut c = Cluster { b: SnapshotBuilder { snap } };
    c.capability(bare, 0, 17000.0);
    let (p, s) = open_plugin(c, &[("strict", "false")]);
    let last = p.shortfalls(&s).pop().unwrap();
    assert_eq!(last.queue, bare);
    assert_eq!(last.dims, [(0, 17000.0, 16000.0)]);
    assert_eq!(last.usable, ["unlabelled nodes"]);
}

#[test]
fn an_invalid_annotation_is_not_also_a_capability_warning() {
    let mut c = Cluster::new();
    c.node(4.0, 8.0 * GI, 110.0, Some("group1"));
    let q = c.queue(NONE);
    c.affinity(q, "required", &["group1"]);
    c.limits(q, "{");
    c.capability(q, 0, 1e9);
    let (p, s) = open_plugin(c, &[]);
    assert!(p.shortfalls(&s).is_empty());
}

// ---- the annotation parser ----

mod annotation {
    use crate::limits::{parse, Quantity};

    fn q(name: &str, s: &str) -> f64 {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{e}")).internal(name)
    }

    #[test]
    fn quantities_in_volcano_units() {
        let gi = 1073741824.0;
        assert_eq!(q("cpu", "3"), 3000.0);
        assert_eq!(q("cpu", "500m"), 500.0);
        assert_eq!(q("cpu", "0.1"), 100.0);
        assert_eq!(q("cpu", "1.5"), 1500.0);
        assert_eq!(q("cpu", "+2"), 2000.0);
        assert_eq!(q("cpu", "-1"), -1000.0);
        assert_eq!(q("cpu", "1e3"), 1e6);
        assert_eq!(q("cpu", "2E-3"), 2.0);
        assert_eq!(q("cpu", "1.0001m"), 2.0, "MilliValue rounds up");
        assert_eq!(q("cpu", "100n"), 1.0, "any non-zero amount rounds up to one unit");
        assert_eq!(q("memory", "8Gi"), 8.0 * gi);
        assert_eq!(q("memory", "1.5Gi"), 1.5 * gi);
        assert_eq!(q("memory", "1G"), 1e9);
        assert_eq!(q("memory", "128974848"), 128974848.0);
        assert_eq!(q("memory", "129e6"), 129e6);
        assert_eq!(q("memory", "123Mi"), 123.0 * 1048576.0);
        assert_eq!(q("memory", "1.5"), 2.0, "Value rounds up");
        assert_eq!(q("memory", "1E"), 1e18);
        assert_eq!(q("memory", "1k"), 1000.0);
        assert_eq!(q("pods", "110"), 110.0);
        assert_eq!(q("nvidia.com/gpu", "1"), 1000.0);
        assert_eq!(q("nvidia.com/gpu", "0"), 0.0);
        assert_eq!(q("cpu", "."), 0.0, "as in Kubernetes");
        assert_eq!(q("cpu", "+"), 0.0, "as in Kubernetes");
        assert_eq!(q("memory", "Gi"), 0.0, "as in Kubernetes: no digits read as 0");
        assert_eq!(q("cpu", "1."), 1000.0);
        assert_eq!(q("memory", "1e400"), f64::INFINITY);
        for bad in ["", "abc", "1K", "1.5.5", "1e", "1 Gi", "1Gb", "1e3.5", "--1", "0x10"] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} should be invalid");
        }
    }

    #[test]
    fn json_shapes() {
        assert_eq!(parse("null").unwrap(), vec![]);
        assert_eq!(parse(" {} ").unwrap(), vec![]);
        assert_eq!(parse(r#"{"g": null}"#).unwrap(), vec![("g".to_string(), vec![])]);
        assert_eq!(
            parse(r#"{"g":{"cpu":2,"memory":"1Gi","pods":null}}"#).unwrap(),
            vec![(
                "g".to_string(),
                vec![("cpu".to_string(), 2000.0), ("memory".to_string(), 1073741824.0), ("pods".to_string(), 0.0)]
            )]
        );
        assert_eq!(parse("{\"g\":{\"cpu\":\" 3 \"}}").unwrap()[0].1, [("cpu".to_string(), 3000.0)]);
        // Numbers keep the quantity grammar (exponents), escapes decode in keys.
        assert_eq!(parse(r#"{"g\u0031":{"cpu":1.5e1}}"#).unwrap(), [("g1".to_string(), vec![("cpu".into(), 15000.0)])]);
        // Repeated keys: the last value wins, for groups and resources.
        assert_eq!(
            parse(r#"{"g":{"cpu":"1"},"h":{},"g":{"cpu":"2","cpu":"4"}}"#).unwrap(),
            [("g".to_string(), vec![("cpu".into(), 4000.0)]), ("h".to_string(), vec![])]
        );
        // Object-count quotas are dropped, as Volcano's NewResource drops them.
        assert_eq!(parse(r#"{"g":{"count/pods":"1"}}"#).unwrap(), [("g".to_string(), vec![])]);
        assert_eq!(parse("{\"gr\u{00fc}n\":{}}").unwrap()[0].0, "gr\u{00fc}n");
    }

    #[test]
    fn json_errors() {
        for bad in [
            "",
            "   ",
            r#"{"group1":{"cpu":"#,
            "[]",
            r#"{"g": []}"#,
            r#"{"g": "1"}"#,
            r#"{"g": {"cpu": true}}"#,
            r#"{"g": {"cpu": [1]}}"#,
            r#"{"g": {"cpu": {}}}"#,
            r#"{"g": {"cpu": "x"}}"#,
            r#"{"g": {"cpu": "\u0033"}}"#,
            r#"{"g": {"cpu": 01}}"#,
            r#"{"g": {"cpu": 1.}}"#,
            r#"{"g": {"cpu": -}}"#,
            r#"{"g": {"cpu": "1"},}"#,
            r#"{"g": {}} x"#,
            r#"{g: {}}"#,
            r#"{"g" {}}"#,
            "{\"g\u{1}\": {}}",
            r#"{"g\x": {}}"#,
            r#"{"g": {"cpu": "1"}"#,
            "nul",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be invalid");
        }
        let e = parse(r#"{"group1":{"cpu":"3x"}}"#).unwrap_err();
        assert!(e.contains("cpu") && e.contains("\"3x\""), "{e}");
    }
}
