//! The placement-rule columns of a snapshot: node names, pod labels, pod
//! (anti-)affinity terms with their namespaces resolved, topology spread
//! constraints, host ports, node-affinity terms, and the pods on nodes
//! that are not tasks (residents), which those rules see too.

use crate::names::Interner;
use std::collections::{BTreeMap, HashMap, HashSet};
use tephra_contract as c;
use tephra_model::cluster::{Cluster, MatchExpr, Pod, PodPhase, PodTerm};
use tephra_model::node::selects;
use tephra_model::{allocation, storage};

/// Rows of residents, numbered from 0 until the task count is known.
#[derive(Default)]
pub(super) struct Residents {
    labels: Vec<c::Label>,
    terms: Vec<c::PodTerm>,
    ports: Vec<c::HostPort>,
    attachments: Vec<c::Attachment>,
}

impl Residents {
    /// Appends the residents' rows to `snap`, their owners now after the tasks.
    pub(super) fn append(self, snap: &mut c::Snapshot) {
        let tasks = snap.task_job.len() as u32;
        snap.pod_labels.extend(self.labels.into_iter().map(|l| c::Label { owner: l.owner + tasks, ..l }));
        snap.pod_terms.extend(self.terms.into_iter().map(|t| c::PodTerm { pod: t.pod + tasks, ..t }));
        snap.pod_ports.extend(self.ports.into_iter().map(|p| c::HostPort { pod: p.pod + tasks, ..p }));
        let attachments = self.attachments.into_iter().map(|a| c::Attachment { pod: a.pod + tasks, ..a });
        snap.pod_attachments.extend(attachments);
    }
}

fn requirements(s: &mut Interner, reqs: &[MatchExpr]) -> Vec<c::Requirement> {
    reqs.iter()
        .map(|r| c::Requirement {
            key: s.id(&r.key),
            operator: s.id(&r.operator),
            values: r.values.iter().map(|v| s.id(v)).collect(),
        })
        .collect()
}

/// A pod term with its namespaces resolved: the listed ones and those the
/// namespace selector picks among `namespaces`; neither: the pod's own.
fn term(
    s: &mut Interner,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    p: &Pod,
    t: &PodTerm,
    pod: u32,
) -> c::PodTerm {
    let all = t.namespace_selector.as_ref().is_some_and(Vec::is_empty);
    let mut ns: Vec<&str> = t.namespaces.iter().map(String::as_str).collect();
    if !all && t.namespace_selector.is_some() {
        ns.extend(namespaces.iter().filter(|(_, l)| selects(&t.namespace_selector, l)).map(|(n, _)| n.as_str()));
    }
    if ns.is_empty() && t.namespace_selector.is_none() {
        ns.push(&p.namespace);
    }
    ns.sort_unstable();
    ns.dedup();
    c::PodTerm {
        pod,
        anti: t.anti,
        weight: t.weight,
        topology_key: s.id(&t.topology_key),
        selector: requirements(s, t.selector.as_deref().unwrap_or_default()),
        matches_nothing: t.selector.is_none(),
        namespaces: ns.into_iter().map(|n| s.id(n)).collect(),
        all_namespaces: all,
    }
}

/// The rows every pod has, task or resident: labels, terms, host ports.
fn pod_rows(
    s: &mut Interner,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    p: &Pod,
    pod: u32,
    (labels, terms, ports): (&mut Vec<c::Label>, &mut Vec<c::PodTerm>, &mut Vec<c::HostPort>),
) {
    for (k, v) in &p.labels {
        labels.push(c::Label { owner: pod, key: s.id(k), value: s.id(v) });
    }
    for t in &p.pod_terms {
        terms.push(term(s, namespaces, p, t, pod));
    }
    for hp in &p.ports {
        ports.push(c::HostPort { pod, port: hp.port, protocol: s.id(&hp.protocol), ip: s.id(&hp.ip) });
    }
}

/// A resident (a pod on a node that is not a task): `node` is where it
/// counts (`NONE`: nowhere, or finished).
pub(super) fn resident(s: &mut Interner, c: &Cluster, snap: &mut c::Snapshot, out: &mut Residents, p: &Pod, node: u32) {
    let r = snap.resident_node.len() as u32;
    snap.resident_node.push(node);
    snap.resident_namespace.push(s.id(&p.namespace));
    pod_rows(s, &c.namespaces, p, r, (&mut out.labels, &mut out.terms, &mut out.ports));
    // The CSI volumes it holds count against its node's attach limits.
    for claim in &p.claims {
        let bound = c.claims.get(&format!("{}/{claim}", p.namespace)).and_then(|b| b.volume.as_ref());
        if let Some((driver, handle)) = bound.and_then(|v| c.volumes.get(v)).and_then(|v| v.csi.as_ref()) {
            out.attachments.push(c::Attachment { pod: r, driver: s.id(driver), handle: s.id(handle) });
        }
    }
}

/// Per node, the attach limit of each CSI driver its CSINode lists.
pub(super) fn attach_limits(s: &mut Interner, c: &Cluster, snap: &mut c::Snapshot, nodes: &super::NameMap<String>) {
    for (node, limits) in &c.attach_limits {
        let Some(&n) = nodes.get(node) else { continue };
        for (driver, &count) in limits {
            snap.node_attach_limits.push(c::AttachLimit { node: n, driver: s.id(driver), count });
        }
    }
}

/// A task's rules: its pod rows, node-affinity terms and spread constraints.
pub(super) fn task(
    s: &mut Interner,
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    snap: &mut c::Snapshot,
    p: &Pod,
    t: u32,
) {
    pod_rows(s, namespaces, p, t, (&mut snap.pod_labels, &mut snap.pod_terms, &mut snap.pod_ports));
    let required = p.affinity.iter().map(|term| (0, term));
    let preferred = p.preferred.iter().map(|(w, term)| (*w, term));
    for (term, (weight, exprs)) in required.chain(preferred).enumerate() {
        for e in exprs {
            snap.task_affinity.push(c::AffinityExpr {
                task: t,
                group: 0,
                term: term as u32,
                weight,
                field: e.field,
                key: s.id(&e.key),
                operator: s.id(&e.operator),
                values: e.values.iter().map(|v| s.id(v)).collect(),
            });
        }
    }
    for image in &p.images {
        snap.task_images.push(c::Image { owner: t, name: s.id(image), size: 0.0 });
    }
    for sp in &p.spread {
        snap.task_spread.push(c::Spread {
            task: t,
            max_skew: sp.max_skew,
            topology_key: s.id(&sp.topology_key),
            hard: sp.hard,
            selector: requirements(s, sp.selector.as_deref().unwrap_or_default()),
            matches_nothing: sp.selector.is_none(),
            min_domains: sp.min_domains,
            honor_node_affinity: sp.honor_affinity,
            honor_taints: sp.honor_taints,
        });
    }
}

/// The node affinity of the volumes a task's claims are bound to, or for a
/// claim bound on first consumer where it can be (see
/// `tephra_model::storage`), as `task-affinity` groups 1, 2, … (claims to
/// bind: `BIND_GROUP` + 1, + 2, …, so their misfit is worded apart); what keeps
/// the task from any node (a claim missing or waiting for another binder, a
/// volume missing) is returned instead, one reason each, as kube-scheduler's
/// VolumeBinding words it.
pub(super) fn volumes(s: &mut Interner, c: &Cluster, snap: &mut c::Snapshot, p: &Pod, t: u32) -> Vec<String> {
    let mut why = Vec::new();
    let (mut group, mut to_bind) = (0, c::BIND_GROUP);
    for claim in &p.claims {
        let key = format!("{}/{claim}", p.namespace);
        let Some(bound) = c.claims.get(&key) else {
            why.push(format!("persistentvolumeclaim \"{claim}\" not found"));
            continue;
        };
        let (number, terms) = match &bound.volume {
            // Bound on first consumer: the nodes where it can still be bound.
            None => match storage::places(c, &key, bound) {
                Ok(None) => continue,
                Ok(Some(terms)) => (&mut to_bind, terms),
                Err(e) => {
                    why.push(e);
                    continue;
                }
            },
            Some(volume) => {
                let Some(v) = c.volumes.get(volume) else {
                    why.push(format!("persistentvolume \"{volume}\" not found"));
                    continue;
                };
                if let Some((driver, handle)) = &v.csi {
                    snap.pod_attachments.push(c::Attachment { pod: t, driver: s.id(driver), handle: s.id(handle) });
                }
                if v.affinity.is_empty() {
                    continue;
                }
                (&mut group, v.affinity.clone())
            }
        };
        *number += 1;
        push_group(s, snap, t, *number, &terms);
    }
    // Claims to bind compete for volumes (two may fit one volume, which
    // only one gets): a node qualifies when the binder finds them all
    // volumes there, as kube-scheduler's binder matches them together.
    if to_bind > c::BIND_GROUP + 1 {
        snap.task_affinity.retain(|e| e.task != t || e.group <= c::BIND_GROUP);
        let fit: Vec<String> = c
            .nodes
            .iter()
            .filter(|n| storage::Binder::default().pick(c, &p.namespace, &p.claims, n).is_ok())
            .map(|n| n.name.clone())
            .collect();
        let on = MatchExpr { key: "metadata.name".into(), operator: "In".into(), values: fit, field: true };
        push_group(s, snap, t, c::BIND_GROUP + 1, &[vec![on]]);
    }
    why
}

/// The nodes where a cycle's pods' DRA claims can be allocated, found once
/// per shape of claims (a job's pods share their templates' specs).
pub(super) struct DeviceRules<'c> {
    alloc: allocation::Allocator<'c>,
    /// Per node, the devices per class its pods hold.
    used: HashMap<String, tephra_model::resource::ResourceList>,
    known: HashMap<String, Result<Option<MatchExpr>, String>>,
}

impl<'c> DeviceRules<'c> {
    pub(super) fn new(c: &'c Cluster) -> Self {
        let mut used: HashMap<String, tephra_model::resource::ResourceList> = HashMap::new();
        let live = |p: &&Pod| p.node.is_some() && !matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed);
        for p in c.pods.iter().filter(live).filter(|p| !p.devices.is_empty()) {
            let u = used.entry(p.node.clone().unwrap_or_default()).or_default();
            for (k, v) in &p.devices {
                *u.entry(k.clone()).or_default() += v;
            }
        }
        DeviceRules { alloc: allocation::Allocator::new(c), used, known: HashMap::new() }
    }
}

/// Where task `t`'s DRA claims can be allocated, as `task-affinity` group
/// `DEVICE_GROUP`: of the nodes with as many devices of each class as the
/// claims ask, those where they can never be allocated, or where the pods
/// there leave enough devices free that still cannot take them, are named
/// `NotIn` (or the others `In`, the shorter list). A node with too few
/// devices of a class the `predicates` plugin turns down by its count, and
/// one whose pods hold the devices the host's resource fit (which
/// preemption and reclaim may change). What keeps the task from any node
/// is returned instead.
pub(super) fn devices(
    s: &mut Interner,
    d: &mut DeviceRules,
    c: &Cluster,
    snap: &mut c::Snapshot,
    p: &Pod,
    t: u32,
) -> Vec<String> {
    let shape = match allocation::claim_keys(c, p) {
        Ok(keys) => format!(
            "{:?} {:?}",
            keys.iter()
                .map(|(_, k)| &c.resource_claims[k])
                .map(|k| (&k.requests, &k.constraints, &k.allocation))
                .collect::<Vec<_>>(),
            p.devices
        ),
        Err(e) => return vec![e],
    };
    let (alloc, used) = (&mut d.alloc, &d.used);
    let group = d.known.entry(shape).or_insert_with(|| {
        let Some(fits) = alloc.fits(p)? else { return Ok(None) };
        let (now, if_free): (HashSet<&String>, HashSet<&String>) =
            (fits.now.iter().collect(), fits.if_free.iter().collect());
        // Enough devices of each class on the node; `free`: by what its pods hold.
        let enough = |n: &tephra_model::node::Node, free: bool| {
            p.devices.iter().all(|(k, v)| {
                let held = if free { used.get(&n.name).and_then(|u| u.get(k)).copied().unwrap_or(0.0) } else { 0.0 };
                n.allocatable.get(k).is_some_and(|a| a - held >= *v)
            })
        };
        // Refused: nodes where the claims can never be had, and nodes whose
        // pods leave enough devices that still cannot take them (taken by a
        // claim no pod there holds, selectors, constraints). Where the pods
        // there hold the devices, the count turns the node down, and
        // preemption or reclaim may free them.
        let refused: Vec<String> = c
            .nodes
            .iter()
            .filter(|n| enough(n, false))
            .filter(|n| !if_free.contains(&n.name) || (!now.contains(&n.name) && enough(n, true)))
            .map(|n| n.name.clone())
            .collect();
        let fit = c.nodes.len() - refused.len();
        Ok(match refused.is_empty() {
            true => None,
            false if fit < refused.len() => {
                let refused: HashSet<&String> = refused.iter().collect();
                let values = c.nodes.iter().map(|n| &n.name).filter(|n| !refused.contains(n)).cloned().collect();
                Some(MatchExpr { key: "metadata.name".into(), operator: "In".into(), values, field: true })
            }
            false => {
                Some(MatchExpr { key: "metadata.name".into(), operator: "NotIn".into(), values: refused, field: true })
            }
        })
    });
    match group {
        Ok(Some(on)) => {
            push_group(s, snap, t, c::DEVICE_GROUP, &[vec![on.clone()]]);
            Vec::new()
        }
        Ok(None) => Vec::new(),
        Err(e) => vec![e.clone()],
    }
}

/// Task `t`'s node-affinity group `group`: `terms` ORed, each ANDed.
fn push_group(s: &mut Interner, snap: &mut c::Snapshot, t: u32, group: u32, terms: &[Vec<MatchExpr>]) {
    for (term, exprs) in terms.iter().enumerate() {
        for e in exprs {
            snap.task_affinity.push(c::AffinityExpr {
                task: t,
                group,
                term: term as u32,
                weight: 0,
                field: e.field,
                key: s.id(&e.key),
                operator: s.id(&e.operator),
                values: e.values.iter().map(|v| s.id(v)).collect(),
            });
        }
    }
}

/// Whether answers about a pod can rise through placements elsewhere as
/// an unresolvable rejection (pod affinity) or its scores move with them
/// (preferred terms, soft spread): such a task gets no class (see `actions::classes`).
/// Required anti-affinity and host ports only ever turn a node down, which
/// a class checks anyway; topology spread's rejections that may lift are
/// resolvable ones, which its class keeps asking about ([`rising`]).
pub fn classless(p: &Pod) -> bool {
    p.pod_terms.iter().any(|t| !t.anti || t.weight > 0) || p.spread.iter().any(|s| !s.hard)
}

/// Whether a pod's nodes turned down with a resolvable reason may fit later
/// in the session (a `DoNotSchedule` spread constraint).
pub fn rising(p: &Pod) -> bool {
    p.spread.iter().any(|s| s.hard)
}

/// Whether a pod's answers move with placements of its peers (required
/// anti-affinity, `DoNotSchedule` spread): once something was placed, its
/// class asks again about the nodes it would choose among.
pub fn volatile(p: &Pod) -> bool {
    rising(p) || p.pod_terms.iter().any(|t| t.anti && t.weight == 0)
}

/// Label keys that pods' rules read, for task classes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelKeys {
    /// Keys any pod's selector reads: a task's class covers its values of
    /// these (another pod's anti-affinity may turn on them). Sorted.
    pub selectors: Vec<String>,
    /// Keys the selectors of terms that score read (any pod's preferred pod
    /// terms, required pod affinity): a task carrying one may be scored by
    /// another pod's term, which moves with placements, so it gets no class.
    pub scoring: Vec<String>,
}

impl LabelKeys {
    /// The label keys these pods' selectors read.
    pub fn of<'a>(pods: impl Iterator<Item = &'a Pod>) -> LabelKeys {
        let mut keys = LabelKeys::default();
        for p in pods {
            for t in &p.pod_terms {
                let reqs = t.selector.iter().flatten().map(|r| r.key.clone());
                if t.weight > 0 || !t.anti {
                    keys.scoring.extend(reqs.clone());
                }
                keys.selectors.extend(reqs);
            }
            let spread = p.spread.iter().flat_map(|s| s.selector.iter().flatten());
            keys.selectors.extend(spread.map(|r| r.key.clone()));
        }
        for v in [&mut keys.selectors, &mut keys.scoring] {
            v.sort_unstable();
            v.dedup();
        }
        keys
    }

    /// Whether `p`'s labels may be picked by a term that scores.
    pub fn scored(&self, p: &Pod) -> bool {
        !self.scoring.is_empty() && p.labels.keys().any(|k| self.scoring.binary_search(k).is_ok())
    }
}
