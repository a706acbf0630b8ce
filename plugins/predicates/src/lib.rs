//! Predicates: the node filters of Volcano's `predicates` plugin (reference
//! §8.8), with kube-scheduler's semantics and messages: NodeUnschedulable,
//! NodeAffinity (nodeSelector, required terms with `matchExpressions` and
//! `matchFields`), TaintToleration, bound volumes' node affinity (and where
//! unbound claims can be bound, DRA claims allocated), CSI
//! attach limits (NodeVolumeLimits), NodePorts,
//! Volcano's pod-count check, PodTopologySpread (`DoNotSchedule`) and
//! InterPodAffinity (required terms both ways).
//!
//! Resource fit is left to the host, as in Volcano. Placements made during
//! the session count at once (events), so a gang's members see each other.
//!
//! Arguments (Volcano's, default true): `predicate.NodeAffinityEnable`,
//! `predicate.TaintTolerationEnable`, `predicate.NodePortsEnable`,
//! `predicate.NodeVolumeLimitsEnable`,
//! `predicate.PodAffinityEnable`, `predicate.PodTopologySpreadEnable`.
//! NodeUnschedulable and the pod count are always on.

mod attach;
mod interpod;
mod ports;
mod spread;

use tephra_sdk::nodes::{NodeRules, BIND_GROUP, DEVICE_GROUP};
use tephra_sdk::pods::Pods;
use tephra_sdk::resource::PODS;
use tephra_sdk::{Args, Event, ExtensionPoint as P, Fits, Policy, Session, TaskStatus, Unfit};

const UNSCHEDULABLE: &str = "node(s) were unschedulable";
const AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
const PODS_EXCEEDED: &str = "node(s) pod number exceeded";
const VOLUME_CONFLICT: &str = "node(s) had volume node affinity conflict";
const BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// DynamicResources' words for a node where a pod's claims cannot be allocated.
const DEVICES_CONFLICT: &str = "cannot allocate all claims";
/// The resources DRA device classes count as (the host's `CLASS_RESOURCE`).
const DEVICE_CLASS: &str = "deviceclass.resource.kubernetes.io/";
/// The taint a pod must tolerate to land on a cordoned node.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

#[derive(Default)]
pub struct Predicates {
    affinity: bool,
    taints: bool,
    ports_on: bool,
    limits_on: bool,
    pod_affinity: bool,
    spread_on: bool,
    fixed: Fixed,
    rules: NodeRules,
    pods: Pods,
    ports: ports::Ports,
    attach: attach::Attach,
    interpod: interpod::InterPod,
    spread: spread::Spreads,
    /// The dimensions of DRA device classes (`deviceclass.resource.kubernetes.io/…`).
    device_dims: Vec<usize>,
}

/// The rejections with fixed messages, built once: a rejection hands out a
/// clone, which allocates nothing and is recognised by pointer.
struct Fixed {
    unschedulable: Unfit,
    affinity: Unfit,
    pods: Unfit,
    ports: Unfit,
    volumes: Unfit,
    to_bind: Unfit,
    devices: Unfit,
    attach: Unfit,
}

impl Default for Fixed {
    fn default() -> Self {
        Fixed {
            unschedulable: Unfit::unresolvable(UNSCHEDULABLE),
            affinity: Unfit::unresolvable(AFFINITY),
            pods: Unfit::new(PODS_EXCEEDED),
            ports: Unfit::new(ports::CONFLICT),
            volumes: Unfit::unresolvable(VOLUME_CONFLICT),
            to_bind: Unfit::unresolvable(BIND_CONFLICT),
            devices: Unfit::unresolvable(DEVICES_CONFLICT),
            attach: Unfit::new(attach::EXCEEDED),
        }
    }
}

impl Predicates {
    fn switches(&mut self, args: &Args) -> Result<(), String> {
        self.affinity = args.bool("predicate.NodeAffinityEnable", true)?;
        self.taints = args.bool("predicate.TaintTolerationEnable", true)?;
        self.ports_on = args.bool("predicate.NodePortsEnable", true)?;
        self.limits_on = args.bool("predicate.NodeVolumeLimitsEnable", true)?;
        self.pod_affinity = args.bool("predicate.PodAffinityEnable", true)?;
        self.spread_on = args.bool("predicate.PodTopologySpreadEnable", true)?;
        Ok(())
    }

    /// Indexes what lasts while sessions continue: labels, taints, specs.
    fn index(&mut self, s: &Session) {
        self.device_dims = (0..s.dims()).filter(|&d| s.snap.dims[d].starts_with(DEVICE_CLASS)).collect();
        self.rules.index(s);
        self.pods.index(&s.snap);
        let pods = self.pods.count();
        self.ports.index(s, pods);
        self.attach.index(s, pods);
        self.interpod.index(s, pods);
        self.spread.index(s);
    }

    /// Where pods count this session.
    fn start(&mut self, s: &Session) {
        self.pods.open(s);
        self.ports.open(s, &self.pods);
        self.attach.open(s, &self.pods);
        self.interpod.open(s, &mut self.pods);
        self.spread.open();
    }

    /// The checks in kube-scheduler's order; `affinity`: NodeAffinity
    /// applies (it is on, and the task has a selector or required terms).
    fn check(&mut self, s: &Session, t: usize, n: usize, affinity: bool) -> Result<(), Unfit> {
        let rules = &self.rules;
        if s.snap.node_unschedulable[n] && !rules.tolerated(s, t, UNSCHEDULABLE_TAINT, "", "NoSchedule") {
            return Err(self.fixed.unschedulable.clone());
        }
        if affinity && !rules.affine(s, t, n) {
            return Err(self.fixed.affinity.clone());
        }
        // Most nodes have no hard taint: the check that builds a message is not even called.
        if self.taints && !rules.hard_taints[n].is_empty() {
            if let Some(message) = rules.untolerated_taint(s, t, n) {
                return Err(Unfit::unresolvable(message));
            }
        }
        // DynamicResources: a node with fewer devices of a class than the
        // pod's claims ask cannot have them allocated (the host's groups
        // name the nodes where enough are not enough).
        for &d in &self.device_dims {
            let dims = s.dims();
            if s.snap.task_resreq[t * dims + d] > s.snap.node_allocatable[n * dims + d] {
                return Err(self.fixed.devices.clone());
            }
        }
        if !rules.volumes[t].is_empty() {
            match rules.volume_misfit(s, t, n) {
                Some(g) if g >= DEVICE_GROUP => return Err(self.fixed.devices.clone()),
                Some(g) if g >= BIND_GROUP => return Err(self.fixed.to_bind.clone()),
                Some(_) => return Err(self.fixed.volumes.clone()),
                None => {}
            }
        }
        if self.ports_on && self.ports.any(t as u32) && !self.ports.free(t as u32, n as u32) {
            return Err(self.fixed.ports.clone());
        }
        if self.limits_on && self.attach.any(t as u32) && !self.attach.fits(t as u32, n as u32) {
            return Err(self.fixed.attach.clone());
        }
        // Volcano counts every task on the node, pipelined ones included.
        let at = n * s.dims() + PODS;
        let sn = &s.snap;
        if sn.node_allocatable[at] <= sn.node_used[at] + sn.node_pipelined[at] {
            return Err(self.fixed.pods.clone());
        }
        if self.spread_on && self.spread.applies(t as u32) {
            let admits = |n: usize, a: bool, taints: bool| rules.admits(s, t, n, a, taints);
            let open = !rules.constrained(t);
            self.spread.check(s, &mut self.pods, t as u32, n as u32, &admits, open)?;
        }
        if self.pod_affinity && self.interpod.applies(t as u32) {
            self.interpod.check(s, &mut self.pods, t as u32, n as u32)?;
        }
        Ok(())
    }
}

impl Policy for Predicates {
    const NAME: &'static str = "predicates";
    const POINTS: &'static [P] = &[P::Predicate];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        self.switches(args)?;
        self.index(s);
        self.start(s);
        Ok(())
    }

    /// The indexes cover labels, taints, selectors, tolerations and rules:
    /// none of them moves between sessions that continue; where pods count
    /// does.
    fn resume(&mut self, s: &Session, args: &Args) -> Result<bool, String> {
        self.switches(args)?;
        self.start(s);
        Ok(true)
    }

    fn on_event(&mut self, s: &Session, e: &Event, _: TaskStatus) {
        if let Some((from, to)) = self.pods.settle(s, e.task) {
            self.ports.moved(e.task, from, to);
            self.attach.moved(e.task, from, to);
            self.interpod.shift(s, &mut self.pods, e.task, from, to);
        }
    }

    /// Unresolvable failures are reported before the pod count, so a node that
    /// fails both is skipped by preempt/reclaim (Volcano aborts on them too).
    fn predicate(&mut self, s: &Session, task: u32, node: u32) -> Result<(), Unfit> {
        self.check(s, task as usize, node as usize, self.affinity)
    }

    /// The task's side once per call: a task without a selector or required
    /// terms (most) passes NodeAffinity on every node.
    fn predicate_nodes(&mut self, s: &Session, task: u32, nodes: &[u32], fits: &mut Fits) {
        let t = task as usize;
        let affinity = self.affinity && self.rules.constrained(t);
        for (i, &n) in nodes.iter().enumerate() {
            if let Err(why) = self.check(s, t, n as usize, affinity) {
                fits.reject(i, &why);
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Predicates: predicate);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::types::{AffinityExpr, Label, Taint, Toleration};
    use tephra_sdk::{Runtime, SnapshotBuilder, TaskStatus, NONE};

    /// A builder with one queue and job, plus row helpers.
    struct B {
        b: SnapshotBuilder,
        job: u32,
    }

    impl B {
        fn new() -> Self {
            let mut b = SnapshotBuilder::new(&[]);
            let q = b.queue(1.0);
            let job = b.job(q, 1);
            B { b, job }
        }
        fn node(&mut self) -> u32 {
            self.b.node(&[4000.0, 8e9, 110.0])
        }
        fn task(&mut self) -> u32 {
            self.b.task(self.job, &[1000.0, 1e9], TaskStatus::Pending, NONE)
        }
        fn label(&mut self, node: u32, k: &str, v: &str) {
            let (key, value) = (self.b.string(k), self.b.string(v));
            self.b.snap.node_labels.push(Label { owner: node, key, value });
        }
        fn taint(&mut self, node: u32, k: &str, v: &str, effect: &str) {
            let (key, value, effect) = (self.b.string(k), self.b.string(v), self.b.string(effect));
            self.b.snap.node_taints.push(Taint { node, key, value, effect });
        }
        fn tolerate(&mut self, task: u32, k: &str, op: &str, v: &str, effect: &str) {
            let (key, operator) = (self.b.string(k), self.b.string(op));
            let (value, effect) = (self.b.string(v), self.b.string(effect));
            self.b.snap.task_tolerations.push(Toleration { task, key, operator, value, effect });
        }
        fn select(&mut self, task: u32, k: &str, v: &str) {
            let (key, value) = (self.b.string(k), self.b.string(v));
            self.b.snap.task_node_selector.push(Label { owner: task, key, value });
        }
        fn expr(&mut self, task: u32, term: u32, k: &str, op: &str, values: &[&str]) {
            let (key, operator) = (self.b.string(k), self.b.string(op));
            let values = values.iter().map(|v| self.b.string(v)).collect();
            let e = AffinityExpr { task, group: 0, term, weight: 0, field: false, key, operator, values };
            self.b.snap.task_affinity.push(e);
        }
        fn run(self, args: &[(&str, &str)], task: u32, node: u32) -> Result<(), Unfit> {
            let s = self.b.build();
            let mut p = Predicates::default();
            let args = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            p.open(&s, &Args::from_pairs(args)).unwrap();
            p.predicate(&s, task, node)
        }
    }

    /// A toleration: key, operator, value, effect.
    type Tol<'a> = (&'a str, &'a str, &'a str, &'a str);

    fn affinity_failure() -> Result<(), Unfit> {
        Err(Unfit::unresolvable(AFFINITY))
    }

    #[test]
    fn unschedulable_node_unless_tolerated() {
        let cases: &[(&[Tol], bool)] = &[
            (&[], false),
            (&[(UNSCHEDULABLE_TAINT, "Exists", "", "NoSchedule")], true),
            (&[(UNSCHEDULABLE_TAINT, "Equal", "", "")], true),
            (&[(UNSCHEDULABLE_TAINT, "", "", "NoSchedule")], true),
            (&[("", "Exists", "", "")], true),
            (&[(UNSCHEDULABLE_TAINT, "Exists", "", "NoExecute")], false),
            (&[(UNSCHEDULABLE_TAINT, "Equal", "yes", "NoSchedule")], false),
            (&[("other", "Exists", "", "")], false),
        ];
        for &(tolerations, fits) in cases {
            let mut b = B::new();
            let n = b.node();
            let t = b.task();
            b.b.snap.node_unschedulable[n as usize] = true;
            for &(k, op, v, e) in tolerations {
                b.tolerate(t, k, op, v, e);
            }
            let want = if fits { Ok(()) } else { Err(Unfit::unresolvable(UNSCHEDULABLE)) };
            assert_eq!(b.run(&[], t, n), want, "{tolerations:?}");
        }
        // Not switchable off.
        let mut b = B::new();
        let n = b.node();
        let t = b.task();
        b.b.snap.node_unschedulable[n as usize] = true;
        let off = [("predicate.NodeAffinityEnable", "false"), ("predicate.TaintTolerationEnable", "false")];
        assert!(b.run(&off, t, n).is_err());
    }

    #[test]
    fn a_resumed_session_keeps_its_indexes_and_follows_its_arguments() {
        // A node for two pods with a label, a task that selects it, one that
        // selects another zone, and a third that runs there in the next session.
        let cluster = |third: TaskStatus| {
            let mut b = B::new();
            let n = b.b.node(&[4000.0, 8e9, 2.0]);
            b.label(n, "zone", "a");
            let (here, there) = (b.task(), b.task());
            b.select(here, "zone", "a");
            b.select(there, "zone", "b");
            b.b.task(b.job, &[1000.0, 1e9], TaskStatus::Running, n);
            b.b.task(b.job, &[1000.0, 1e9], third, if third == TaskStatus::Pending { NONE } else { n });
            (b.b.snap, here, there, n)
        };
        let pairs = |a: &[(&str, &str)]| a.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        let codes = |rt: &mut Runtime<Predicates>, t: u32, n: u32| {
            let fit = rt.predicate(t, &[n]);
            fit.codes[0].checked_sub(1).map(|k| fit.reasons[k as usize].message.clone())
        };
        let (first, here, there, n) = cluster(TaskStatus::Pending);
        let mut rt = Runtime::<Predicates>::default();
        rt.open_session(first, vec![]).unwrap();
        assert_eq!((codes(&mut rt, here, n), codes(&mut rt, there, n)), (None, Some(AFFINITY.to_string())));
        let off = pairs(&[("predicate.NodeAffinityEnable", "false")]);
        for (third, args, want) in [
            (TaskStatus::Running, vec![], (Some(PODS_EXCEEDED), Some(AFFINITY))),
            (TaskStatus::Succeeded, vec![], (None, Some(AFFINITY))),
            (TaskStatus::Succeeded, off.clone(), (None, None)),
            (TaskStatus::Bound, off, (Some(PODS_EXCEEDED), Some(PODS_EXCEEDED))),
        ] {
            let next = cluster(third).0;
            assert_eq!(rt.continue_on(&next, args.clone()), Ok(true));
            assert!(rt.resumed());
            let want = (want.0.map(str::to_string), want.1.map(str::to_string));
            assert_eq!((codes(&mut rt, here, n), codes(&mut rt, there, n)), want, "{third:?} {args:?}");
            let mut fresh = Runtime::<Predicates>::default();
            fresh.open_session(next, args.clone()).unwrap();
            assert_eq!((codes(&mut fresh, here, n), codes(&mut fresh, there, n)), want, "{third:?} {args:?}");
        }
    }

    #[test]
    fn node_selector() {
        let run = |labels: &[(&str, &str)], args: &[(&str, &str)]| {
            let mut b = B::new();
            let n = b.node();
            let t = b.task();
            for &(k, v) in labels {
                b.label(n, k, v);
            }
            b.select(t, "zone", "a");
            b.select(t, "disk", "");
            b.run(args, t, n)
        };
        assert_eq!(run(&[("zone", "a"), ("disk", ""), ("x", "y")], &[]), Ok(()));
        assert_eq!(run(&[("zone", "b"), ("disk", "")], &[]), affinity_failure());
        // A missing label does not equal an empty value.
        assert_eq!(run(&[("zone", "a")], &[]), affinity_failure());
        assert_eq!(run(&[], &[("predicate.NodeAffinityEnable", "false")]), Ok(()));
        // No selector and no affinity: any node.
        let mut b = B::new();
        let n = b.node();
        let t = b.task();
        assert_eq!(b.run(&[], t, n), Ok(()));
    }

    #[test]
    fn affinity_operators() {
        let absent = None;
        let cases: &[(&str, &[&str], Option<&str>, bool)] = &[
            ("In", &["a", "b"], Some("b"), true),
            ("In", &["a", "b"], Some("c"), false),
            ("In", &["a"], absent, false),
            ("In", &[], Some(""), false),
            ("NotIn", &["a", "b"], Some("c"), true),
            ("NotIn", &["a", "b"], Some("a"), false),
            ("NotIn", &["a"], absent, true),
            ("NotIn", &[], Some("a"), false),
            ("Exists", &[], Some(""), true),
            ("Exists", &[], absent, false),
            ("Exists", &["a"], Some("a"), false),
            ("DoesNotExist", &[], absent, true),
            ("DoesNotExist", &[], Some("a"), false),
            ("DoesNotExist", &["a"], absent, false),
            ("Gt", &["8"], Some("16"), true),
            ("Gt", &["16"], Some("16"), false),
            ("Gt", &["-1"], Some("+0"), true),
            ("Gt", &["8"], Some("large"), false),
            ("Gt", &["8"], absent, false),
            ("Gt", &["8", "9"], Some("16"), false),
            ("Gt", &["8.5"], Some("16"), false),
            ("Lt", &["8"], Some("4"), true),
            ("Lt", &["8"], Some("8"), false),
            ("Lt", &["8"], absent, false),
            ("Lt", &[], Some("4"), false),
            ("Equals", &["a"], Some("a"), false),
        ];
        for &(op, values, label, fits) in cases {
            let mut b = B::new();
            let n = b.node();
            let t = b.task();
            if let Some(v) = label {
                b.label(n, "k", v);
            }
            b.label(n, "other", "1");
            b.expr(t, 0, "k", op, values);
            let want = if fits { Ok(()) } else { affinity_failure() };
            assert_eq!(b.run(&[], t, n), want, "{op} {values:?} on {label:?}");
        }
    }

    #[test]
    fn affinity_terms_are_ored_and_expressions_anded() {
        let run = |labels: &[(&str, &str)], args: &[(&str, &str)]| {
            let mut b = B::new();
            let n = b.node();
            let t = b.task();
            for &(k, v) in labels {
                b.label(n, k, v);
            }
            // Term 1 rows interleaved with term 0 rows on purpose.
            b.expr(t, 0, "zone", "In", &["a"]);
            b.expr(t, 1, "gpu", "Exists", &[]);
            b.expr(t, 0, "arch", "In", &["arm64"]);
            b.expr(t, 1, "gpu-count", "Gt", &["3"]);
            b.run(args, t, n)
        };
        assert_eq!(run(&[("zone", "a"), ("arch", "arm64")], &[]), Ok(()));
        assert_eq!(run(&[("gpu", "t4"), ("gpu-count", "4")], &[]), Ok(()));
        assert_eq!(run(&[("zone", "a"), ("gpu", "t4"), ("gpu-count", "2")], &[]), affinity_failure());
        assert_eq!(run(&[("arch", "arm64"), ("gpu-count", "8")], &[]), affinity_failure());
        assert_eq!(run(&[], &[("predicate.NodeAffinityEnable", "false")]), Ok(()));
        // Selector and terms must both hold.
        let mut b = B::new();
        let n = b.node();
        let t = b.task();
        b.label(n, "zone", "a");
        b.select(t, "zone", "a");
        b.expr(t, 0, "zone", "NotIn", &["a"]);
        assert_eq!(b.run(&[], t, n), affinity_failure());
    }

    #[test]
    fn taints_and_tolerations() {
        let run = |taint: (&str, &str, &str), tolerations: &[Tol], args: &[(&str, &str)]| {
            let mut b = B::new();
            let n = b.node();
            let t = b.task();
            b.taint(n, "soft", "x", "PreferNoSchedule");
            b.taint(n, taint.0, taint.1, taint.2);
            for &(k, op, v, e) in tolerations {
                b.tolerate(t, k, op, v, e);
            }
            b.run(args, t, n)
        };
        let untolerated =
            |k: &str, v: &str| Err(Unfit::unresolvable(format!("node(s) had untolerated taint {{{k}: {v}}}")));
        let gpu = ("gpu", "true", "NoSchedule");
        assert_eq!(run(gpu, &[], &[]), untolerated("gpu", "true"));
        assert_eq!(run(("gpu", "", "NoExecute"), &[], &[]), untolerated("gpu", ""));
        // PreferNoSchedule taints never filter.
        assert_eq!(run(("soft2", "y", "PreferNoSchedule"), &[], &[]), Ok(()));
        assert_eq!(run(gpu, &[("gpu", "Equal", "true", "NoSchedule")], &[]), Ok(()));
        assert_eq!(run(gpu, &[("gpu", "", "true", "NoSchedule")], &[]), Ok(()));
        assert_eq!(run(gpu, &[("gpu", "Equal", "false", "NoSchedule")], &[]), untolerated("gpu", "true"));
        assert_eq!(run(gpu, &[("gpu", "Exists", "", "NoSchedule")], &[]), Ok(()));
        assert_eq!(run(gpu, &[("gpu", "Exists", "", "")], &[]), Ok(()));
        assert_eq!(run(gpu, &[("gpu", "Exists", "", "NoExecute")], &[]), untolerated("gpu", "true"));
        assert_eq!(run(gpu, &[("", "Exists", "", "")], &[]), Ok(()));
        assert_eq!(run(gpu, &[("", "Exists", "", "NoExecute")], &[]), untolerated("gpu", "true"));
        assert_eq!(run(gpu, &[("gpu", "Sometimes", "true", "NoSchedule")], &[]), untolerated("gpu", "true"));
        assert_eq!(run(gpu, &[("other", "Exists", "", ""), ("gpu", "Equal", "true", "")], &[]), Ok(()));
        assert_eq!(run(gpu, &[], &[("predicate.TaintTolerationEnable", "false")]), Ok(()));
    }

    #[test]
    fn pod_count() {
        let run = |alloc_pods: f64, running: usize, pipelined: usize| {
            let mut b = B::new();
            let n = b.b.node(&[1000.0, 1e9, alloc_pods]);
            for _ in 0..running {
                b.b.task(b.job, &[0.0], TaskStatus::Running, n);
            }
            for _ in 0..pipelined {
                b.b.task(b.job, &[0.0], TaskStatus::Pipelined, n);
            }
            // Much more cpu than the node has: fit is the host's business.
            let t = b.b.task(b.job, &[5000.0], TaskStatus::Pending, NONE);
            b.run(&[], t, n)
        };
        let exceeded = Err(Unfit::new(PODS_EXCEEDED));
        assert_eq!(run(3.0, 2, 0), Ok(()));
        assert_eq!(run(3.0, 3, 0), exceeded);
        assert_eq!(run(3.0, 2, 1), exceeded);
        assert_eq!(run(0.0, 0, 0), exceeded);
    }

    /// The batch form works out the task's side once: it must answer as
    /// `predicate` does node by node, for every kind of task and node.
    #[test]
    fn batch_answers_match_node_by_node() {
        let mut b = B::new();
        let plain = b.node();
        let cordoned = b.node();
        b.b.snap.node_unschedulable[cordoned as usize] = true;
        let zone_a = b.node();
        b.label(zone_a, "zone", "a");
        let tainted = b.node();
        b.taint(tainted, "gpu", "true", "NoSchedule");
        let full = b.b.node(&[4000.0, 8e9, 1.0]);
        b.b.task(b.job, &[0.0], TaskStatus::Running, full);
        let nodes = [plain, cordoned, zone_a, tainted, full];
        let bare = b.task();
        let selects = b.task();
        b.select(selects, "zone", "a");
        let prefers_a = b.task();
        b.expr(prefers_a, 0, "zone", "In", &["a"]);
        let tolerant = b.task();
        b.tolerate(tolerant, "gpu", "Exists", "", "");
        b.tolerate(tolerant, UNSCHEDULABLE_TAINT, "Exists", "", "NoSchedule");
        let s = b.b.build();
        let on_off = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        for args in [
            vec![],
            on_off("predicate.NodeAffinityEnable", "false"),
            on_off("predicate.TaintTolerationEnable", "false"),
        ] {
            let mut p = Predicates::default();
            p.open(&s, &Args::from_pairs(args.clone())).unwrap();
            for t in [bare, selects, prefers_a, tolerant] {
                let one: Vec<Option<Unfit>> = nodes.iter().map(|&n| p.predicate(&s, t, n).err()).collect();
                let mut rt = Runtime::<Predicates>::default();
                rt.open_session(s.snap.clone(), args.clone()).unwrap();
                let fit = rt.predicate(t, &nodes);
                let batch: Vec<Option<Unfit>> = fit
                    .codes
                    .iter()
                    .map(|&c| c.checked_sub(1).map(|k| &fit.reasons[k as usize]))
                    .map(|r| r.map(|r| Unfit { message: r.message.as_str().into(), unresolvable: r.unresolvable }))
                    .collect();
                assert_eq!(batch, one, "task {t}, {args:?}");
            }
        }
    }

    #[test]
    fn pod_count_follows_events_and_yields_to_unresolvable() {
        let mut b = B::new();
        let full = b.b.node(&[1000.0, 1e9, 1.0]);
        let t = b.task();
        let other = b.task();
        b.taint(full, "dedicated", "x", "NoSchedule");
        let mut rt = Runtime::<Predicates>::default();
        rt.open_session(b.b.snap, vec![("predicate.TaintTolerationEnable".into(), "false".into())]).unwrap();
        assert_eq!(rt.predicate(t, &[full]).codes, [0]);
        let e = tephra_sdk::Event {
            kind: tephra_sdk::EventKind::Allocate,
            task: other,
            node: full,
            status: TaskStatus::Allocated,
        };
        rt.on_events(&[e]);
        let fit = rt.predicate(t, &[full]);
        assert_eq!(
            (fit.codes[0], fit.reasons[0].message.as_str(), fit.reasons[0].unresolvable),
            (1, PODS_EXCEEDED, false)
        );

        let snap = rt.session.take().unwrap().snap;
        rt.open_session(snap, vec![]).unwrap();
        let fit = rt.predicate(t, &[full]);
        assert!(fit.reasons[0].unresolvable, "{:?}", fit.reasons);
    }
}
