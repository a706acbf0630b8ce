//! Volumes bound on first consumer, as kube-scheduler's VolumeBinding binds
//! them: where a pod whose claim is not bound yet may go ([`places`]), and
//! which volume its claim gets on the node chosen ([`Binder`]).
//!
//! A claim of a `WaitForFirstConsumer` class is bound once its pod has a
//! node: to the smallest available PersistentVolume that fits it and whose
//! node affinity takes that node, or, if none does and the class has a
//! provisioner whose `allowedTopologies` take the node, by provisioning
//! (the claim is annotated with the node, the provisioner makes the volume).
//! A claim of any other class waits until something else binds it.

use crate::allocation::Allocator;
use crate::cluster::{Claim, Cluster, StorageClass, Volume};
use crate::node::{term_admits, MatchExpr, Node};
use std::collections::{BTreeMap, BTreeSet};

/// The annotation naming the node a claim is provisioned for.
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner of classes whose volumes are made by hand.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// The annotation marking the default StorageClass.
pub const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// Why a pod with an unbound claim of an `Immediate` class waits (kube-scheduler's words).
pub const IMMEDIATE_UNBOUND: &str = "pod has unbound immediate PersistentVolumeClaims";
/// Why a node has no volume for a claim (kube-scheduler's words).
pub const NO_VOLUME: &str = "node(s) didn't find available persistent volumes to bind";

impl StorageClass {
    /// Whether it provisions volumes.
    pub fn provisions(&self) -> bool {
        !self.provisioner.is_empty() && self.provisioner != NO_PROVISIONER
    }
}

/// Where `class` can provision a claim of `request` bytes: its
/// `allowedTopologies`, and when its CSI driver opts into capacity tracking
/// (`CSIDriver.spec.storageCapacity`), only nodes a CSIStorageCapacity of
/// the class with room for it selects. `None`: any node.
fn provisioning_terms(
    c: &Cluster,
    class_name: &str,
    class: &StorageClass,
    request: u64,
) -> Option<Vec<Vec<MatchExpr>>> {
    if !c.csi_drivers.get(&class.provisioner).copied().unwrap_or(false) || request == 0 {
        return (!class.topologies.is_empty()).then(|| class.topologies.clone());
    }
    let rooms: Vec<&Vec<MatchExpr>> = c
        .storage_capacities
        .values()
        .filter(|k| k.class == class_name && k.limit.is_some_and(|l| l >= request))
        .filter_map(|k| k.topology.as_ref())
        .collect();
    // Each allowed topology term ANDed with each selector that has room.
    let topologies = if class.topologies.is_empty() { vec![Vec::new()] } else { class.topologies.clone() };
    Some(topologies.iter().flat_map(|t| rooms.iter().map(move |r| [t.as_slice(), r.as_slice()].concat())).collect())
}

/// What binding a claim on a node writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bind {
    /// Volume `volume` is bound to claim `claim` (`namespace/name`).
    Volume {
        /// The claim's `namespace/name`.
        claim: String,
        /// The PersistentVolume's name.
        volume: String,
    },
    /// Claim `claim` is provisioned for node `node`.
    Provision {
        /// The claim's `namespace/name`.
        claim: String,
        /// The node chosen.
        node: String,
    },
    /// A pod's DRA claim is allocated on its node (or, allocated already,
    /// reserved for it too).
    Devices(crate::allocation::Grant),
}

impl Bind {
    /// The claim bound.
    pub fn claim(&self) -> &str {
        match self {
            Bind::Volume { claim, .. } | Bind::Provision { claim, .. } => claim,
            Bind::Devices(g) => &g.claim,
        }
    }
}

/// The class a claim is bound under: `None` for a claim without one, which
/// binds at once (kube-scheduler reads no default class; the API server's
/// admission wrote it when the claim was made).
pub fn class_of<'a>(c: &'a Cluster, claim: &Claim) -> Result<Option<(&'a str, &'a StorageClass)>, String> {
    match claim.class.as_deref() {
        None | Some("") => Ok(None),
        Some(name) => match c.storage_classes.get_key_value(name) {
            Some((n, class)) => Ok(Some((n.as_str(), class))),
            None => Err(format!("storageclass.storage.k8s.io \"{name}\" not found")),
        },
    }
}

/// The class of a claim bound on first consumer, or why it waits: bound by
/// hand (prebound), or of a class that binds at once.
fn delayed<'a>(c: &'a Cluster, claim: &Claim) -> Result<(&'a str, &'a StorageClass), String> {
    match class_of(c, claim)? {
        Some((name, class)) if class.wait_for_consumer && !claim.prebound => Ok((name, class)),
        _ => Err(IMMEDIATE_UNBOUND.into()),
    }
}

/// Whether volume `v` can be bound to claim `key` of class `class`: free
/// (or already meant for it), of the class, mode and access modes asked, and
/// large enough.
fn fits(v: &Volume, key: &str, claim: &Claim, class: &str) -> bool {
    v.claim.as_deref().is_none_or(|k| k == key)
        && v.available
        && v.class == class
        && v.block == claim.block
        && claim.modes.iter().all(|m| v.modes.contains(m))
        && v.capacity >= claim.request
}

/// A volume already meant for claim `key` (its `claimRef` names it): the
/// only one the claim may get.
fn meant_for<'a>(c: &'a Cluster, key: &str) -> Option<(&'a String, &'a Volume)> {
    c.volumes.iter().find(|(_, v)| v.claim.as_deref() == Some(key))
}

/// Where unbound claim `key` may be bound: `Ok(None)` on any node,
/// `Ok(Some(terms))` on nodes any term admits, or why it waits.
pub fn places(c: &Cluster, key: &str, claim: &Claim) -> Result<Option<Vec<Vec<MatchExpr>>>, String> {
    let (class_name, class) = delayed(c, claim)?;
    if let Some(node) = &claim.selected_node {
        let on =
            MatchExpr { key: "metadata.name".into(), operator: "In".into(), values: vec![node.clone()], field: true };
        return Ok(Some(vec![vec![on]]));
    }
    if let Some((_, v)) = meant_for(c, key) {
        return Ok((!v.affinity.is_empty()).then(|| v.affinity.clone()));
    }
    let mut terms = Vec::new();
    for v in c.volumes.values().filter(|v| fits(v, key, claim, class_name)) {
        if v.affinity.is_empty() {
            return Ok(None);
        }
        terms.extend(v.affinity.iter().cloned());
    }
    if class.provisions() {
        match provisioning_terms(c, class_name, class, claim.request) {
            None => return Ok(None),
            Some(t) => terms.extend(t),
        }
    }
    if terms.is_empty() {
        return Err(NO_VOLUME.into());
    }
    Ok(Some(terms))
}

/// Whether a volume's node affinity (terms ORed; none: any node) admits `node`.
fn admits(terms: &[Vec<MatchExpr>], node: &Node) -> bool {
    terms.is_empty() || admits_any(terms, node)
}

/// Whether some term admits `node` (none: no node).
fn admits_any(terms: &[Vec<MatchExpr>], node: &Node) -> bool {
    terms.iter().any(|t| term_admits(t, node))
}

/// Picks the volumes of one cycle's placements, so that two pods never get
/// the same volume and a claim two pods share is bound once.
#[derive(Clone, Debug, Default)]
pub struct Binder {
    /// Volumes picked this cycle.
    taken: BTreeSet<String>,
    /// Claims bound this cycle, and how.
    picked: BTreeMap<String, Bind>,
}

impl Binder {
    /// What binding `pod`'s unbound claims on `node` writes, or why it
    /// cannot be bound there. Nothing is kept when it fails.
    pub fn pick(&mut self, c: &Cluster, namespace: &str, claims: &[String], node: &Node) -> Result<Vec<Bind>, String> {
        let mut binds = Vec::new();
        let mut taken = BTreeSet::new();
        for name in claims {
            let key = format!("{namespace}/{name}");
            let Some(claim) = c.claims.get(&key) else {
                return Err(format!("persistentvolumeclaim \"{name}\" not found"));
            };
            if claim.volume.is_some() {
                continue;
            }
            let on_node = |b: &Bind| match b {
                Bind::Volume { volume, .. } => c.volumes.get(volume).is_some_and(|v| admits(&v.affinity, node)),
                Bind::Provision { node: n, .. } => *n == node.name,
                Bind::Devices(_) => false,
            };
            if let Some(b) = self.picked.get(&key).or_else(|| binds.iter().find(|b: &&Bind| b.claim() == key)) {
                if on_node(b) {
                    continue;
                }
                return Err(format!("persistentvolumeclaim \"{name}\" is being bound for another node"));
            }
            let refused = || {
                format!(
                    "persistentvolumeclaim \"{name}\": no available persistent volume to bind on node {}",
                    node.name
                )
            };
            let (class_name, class) = delayed(c, claim)?;
            if let Some(n) = &claim.selected_node {
                // Provisioning for it is under way: only its node will do.
                if *n == node.name {
                    continue;
                }
                return Err(refused());
            }
            if let Some((_, v)) = meant_for(c, &key) {
                if admits(&v.affinity, node) {
                    continue;
                }
                return Err(refused());
            }
            // The smallest volume that fits, as the PV controller matches.
            let best = c
                .volumes
                .iter()
                .filter(|(n, v)| {
                    !self.taken.contains(*n)
                        && !taken.contains(*n)
                        && fits(v, &key, claim, class_name)
                        && admits(&v.affinity, node)
                })
                .min_by(|a, b| a.1.capacity.cmp(&b.1.capacity).then(a.0.cmp(b.0)));
            match best {
                Some((volume, _)) => {
                    taken.insert(volume.clone());
                    binds.push(Bind::Volume { claim: key, volume: volume.clone() });
                }
                None if class.provisions()
                    && provisioning_terms(c, class_name, class, claim.request).is_none_or(|t| admits_any(&t, node)) =>
                {
                    binds.push(Bind::Provision { claim: key, node: node.name.clone() });
                }
                None => return Err(refused()),
            }
        }
        self.taken.extend(taken);
        self.picked.extend(binds.iter().map(|b| (b.claim().to_string(), b.clone())));
        Ok(binds)
    }
}

/// Picks the volumes and devices of one cycle's binds, a job's all or none:
/// for each bind `(job, pod, node)`, in order, what it writes, or why it is
/// refused (every bind of a job is refused when one of its pods gets no
/// volume or device).
pub fn pick_binds(c: &Cluster, binds: &[(u32, usize, &str)]) -> Vec<Result<Vec<Bind>, String>> {
    let mut out: Vec<Result<Vec<Bind>, String>> = vec![Ok(Vec::new()); binds.len()];
    let mut jobs: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    let mut any_devices = false;
    for (i, &(job, pod, _)) in binds.iter().enumerate() {
        if let Some(p) = c.pods.get(pod).filter(|p| !p.claims.is_empty() || !p.device_claims.is_empty()) {
            jobs.entry(job).or_default().push(i);
            any_devices |= !p.device_claims.is_empty();
        }
    }
    let mut devices = any_devices.then(|| Allocator::new(c));
    let mut binder = Binder::default();
    // In the order the binds came (a job at its first bind).
    let mut order: Vec<(usize, Vec<usize>)> = jobs.into_values().map(|m| (m[0], m)).collect();
    order.sort();
    for (_, members) in order {
        let before = binder.clone();
        let held = devices.as_ref().map(Allocator::mark);
        let mut failed = None;
        for &i in &members {
            let (_, pod, node) = binds[i];
            let p = &c.pods[pod];
            let Some(n) = c.nodes.iter().find(|n| n.name == node) else {
                failed = Some(format!("node {node} is gone"));
                break;
            };
            let picked = binder.pick(c, &p.namespace, &p.claims, n).and_then(|mut b| {
                if let Some(d) = devices.as_mut().filter(|_| !p.device_claims.is_empty()) {
                    b.extend(d.pick(p, n)?.into_iter().map(Bind::Devices));
                }
                Ok(b)
            });
            match picked {
                Ok(b) => out[i] = Ok(b),
                Err(e) => {
                    failed = Some(format!("{}: {e}", p.key()));
                    break;
                }
            }
        }
        if let Some(why) = failed {
            binder = before;
            if let (Some(d), Some(m)) = (devices.as_mut(), held) {
                d.reset(m);
            }
            for &i in &members {
                out[i] = Err(why.clone());
            }
        }
    }
    out
}

/// Shows a bind written (not yet completed by the volume controller) in
/// `c`: the volume names its claim; the claim names its node.
pub fn assume(c: &mut Cluster, b: &Bind) {
    match b {
        Bind::Volume { claim, volume } => {
            if let Some(v) = c.volumes.get_mut(volume) {
                v.claim = Some(claim.clone());
            }
        }
        Bind::Provision { claim, node } => {
            if let Some(k) = c.claims.get_mut(claim) {
                k.selected_node = Some(node.clone());
            }
        }
        Bind::Devices(g) => crate::allocation::assume(c, g),
    }
}

/// Completes a bind as the volume controller and a provisioner would: the
/// claim is bound to its volume, a provisioned one made with the class's
/// topology term that admits the node (the simulator's provisioner).
pub fn complete(c: &mut Cluster, b: &Bind) {
    assume(c, b);
    let (claim, volume) = match b {
        Bind::Volume { claim, volume } => (claim.clone(), volume.clone()),
        Bind::Provision { claim, node } => {
            let Some(k) = c.claims.get(claim).cloned() else { return };
            let class = class_of(c, &k).ok().flatten();
            let Some(node) = c.nodes.iter().find(|n| n.name == *node) else { return };
            let affinity = class
                .map(|(_, s)| s.topologies.iter().filter(|t| term_admits(t, node)).take(1).cloned().collect())
                .unwrap_or_default();
            let volume = format!("pvc-{}", claim.replace('/', "-"));
            let made = Volume {
                affinity,
                csi: None,
                class: class.map(|(n, _)| n.to_string()).unwrap_or_default(),
                capacity: k.request,
                modes: k.modes.clone(),
                block: k.block,
                claim: Some(claim.clone()),
                available: true,
            };
            c.volumes.insert(volume.clone(), made);
            (claim.clone(), volume)
        }
        Bind::Devices(_) => return,
    };
    if let Some(k) = c.claims.get_mut(&claim) {
        k.volume = Some(volume);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::StorageCapacity;

    fn node(name: &str, zone: &str) -> Node {
        Node { name: name.into(), labels: [("zone".to_string(), zone.to_string())].into(), ..Default::default() }
    }

    fn zone(z: &str) -> Vec<Vec<MatchExpr>> {
        vec![vec![MatchExpr { key: "zone".into(), operator: "In".into(), values: vec![z.into()], field: false }]]
    }

    fn local(c: &mut Cluster, name: &str, z: &str, gib: u64) {
        let v = Volume {
            affinity: zone(z),
            class: "local".into(),
            capacity: gib << 30,
            modes: vec!["ReadWriteOnce".into()],
            available: true,
            ..Default::default()
        };
        c.volumes.insert(name.into(), v);
    }

    fn cluster(provisioner: &str) -> Cluster {
        let mut c = Cluster::default();
        let class = StorageClass { provisioner: provisioner.into(), wait_for_consumer: true, ..Default::default() };
        c.storage_classes.insert("local".into(), class);
        for name in ["a", "b"] {
            let claim = Claim {
                class: Some("local".into()),
                request: 1 << 30,
                modes: vec!["ReadWriteOnce".into()],
                ..Default::default()
            };
            c.claims.insert(format!("ns/{name}"), claim);
        }
        c.nodes.push(node("n1", "x"));
        c.nodes.push(node("n2", "y"));
        c
    }

    #[test]
    fn a_claim_goes_where_a_volume_fits_and_takes_the_smallest() {
        let mut c = cluster(NO_PROVISIONER);
        local(&mut c, "big", "x", 10);
        local(&mut c, "small", "x", 2);
        local(&mut c, "tiny", "y", 0);
        assert_eq!(places(&c, "ns/a", &c.claims["ns/a"]), Ok(Some([zone("x"), zone("x")].concat())));
        let mut b = Binder::default();
        let n1 = c.nodes[0].clone();
        let first = b.pick(&c, "ns", &["a".into()], &n1).unwrap();
        assert_eq!(first, [Bind::Volume { claim: "ns/a".into(), volume: "small".into() }]);
        // The next pod in the cycle gets the other volume, then none is left.
        let second = b.pick(&c, "ns", &["b".into()], &n1).unwrap();
        assert_eq!(second, [Bind::Volume { claim: "ns/b".into(), volume: "big".into() }]);
        let n2 = c.nodes[1].clone();
        let err = Binder::default().pick(&c, "ns", &["a".into()], &n2).unwrap_err();
        assert!(err.contains("no available persistent volume to bind on node n2"), "{err}");
        // A claim bound this cycle is bound once, for its first pod's node.
        assert_eq!(b.pick(&c, "ns", &["a".into()], &n1), Ok(vec![]));
        complete(&mut c, &first[0]);
        assert_eq!(c.claims["ns/a"].volume.as_deref(), Some("small"));
        assert_eq!(c.volumes["small"].claim.as_deref(), Some("ns/a"));
    }

    #[test]
    fn provisioning_needs_published_room_when_the_driver_tracks_it() {
        let mut c = cluster("csi.example.com");
        let n1 = c.nodes[0].clone();
        // Not tracked: any node.
        assert_eq!(places(&c, "ns/a", &c.claims["ns/a"]), Ok(None));
        c.csi_drivers.insert("csi.example.com".into(), true);
        // Tracked, nothing published: nowhere.
        assert_eq!(places(&c, "ns/a", &c.claims["ns/a"]), Err(NO_VOLUME.to_string()));
        let room = |zone_: &str, gib: u64| StorageCapacity {
            class: "local".into(),
            topology: Some(zone(zone_).remove(0)),
            limit: Some(gib << 30),
        };
        c.storage_capacities.insert("kube-system/small-x".into(), room("x", 0));
        c.storage_capacities.insert("kube-system/y".into(), room("y", 5));
        assert_eq!(places(&c, "ns/a", &c.claims["ns/a"]), Ok(Some(zone("y"))));
        let err = Binder::default().pick(&c, "ns", &["a".into()], &n1).unwrap_err();
        assert!(err.contains("no available persistent volume to bind on node n1"), "{err}");
        let binds = Binder::default().pick(&c, "ns", &["a".into()], &c.nodes[1].clone()).unwrap();
        assert_eq!(binds, [Bind::Provision { claim: "ns/a".into(), node: "n2".into() }]);
    }

    #[test]
    fn a_jobs_volumes_are_bound_all_or_none() {
        let mut c = cluster(NO_PROVISIONER);
        local(&mut c, "only", "x", 5);
        c.claims.insert("ns/c".into(), c.claims["ns/a"].clone());
        for (name, claim) in [("p", "a"), ("q", "b"), ("r", "c")] {
            let pod = crate::cluster::Pod {
                namespace: "ns".into(),
                name: name.into(),
                claims: vec![claim.into()],
                ..Default::default()
            };
            c.pods.push(pod);
        }
        // Job 7 (pods p, q) needs two volumes where there is one: neither
        // is bound, and job 8's pod r gets the volume.
        let got = pick_binds(&c, &[(7, 0, "n1"), (8, 2, "n1"), (7, 1, "n1")]);
        assert!(got[0].is_err() && got[2].is_err(), "{got:?}");
        assert_eq!(got[0], got[2]);
        assert!(got[0].as_ref().unwrap_err().starts_with("ns/q: persistentvolumeclaim \"b\""), "{got:?}");
        assert_eq!(got[1], Ok(vec![Bind::Volume { claim: "ns/c".into(), volume: "only".into() }]));
    }

    #[test]
    fn provisioning_follows_the_class_topology_and_immediate_claims_wait() {
        let mut c = cluster("csi.example.com");
        c.storage_classes.get_mut("local").unwrap().topologies = zone("y");
        assert_eq!(places(&c, "ns/a", &c.claims["ns/a"]), Ok(Some(zone("y"))));
        let n2 = c.nodes[1].clone();
        let binds = Binder::default().pick(&c, "ns", &["a".into()], &n2).unwrap();
        assert_eq!(binds, [Bind::Provision { claim: "ns/a".into(), node: "n2".into() }]);
        assume(&mut c, &binds[0]);
        assert_eq!(c.claims["ns/a"].selected_node.as_deref(), Some("n2"));
        assert!(Binder::default().pick(&c, "ns", &["a".into()], &c.nodes[0].clone()).is_err());
        complete(&mut c, &binds[0]);
        assert_eq!(c.volumes["pvc-ns-a"].affinity, zone("y"));
        c.storage_classes.get_mut("local").unwrap().wait_for_consumer = false;
        assert_eq!(places(&c, "ns/b", &c.claims["ns/b"]), Err(IMMEDIATE_UNBOUND.to_string()));
        c.claims.get_mut("ns/b").unwrap().class = Some("gone".into());
        let err = places(&c, "ns/b", &c.claims["ns/b"]).unwrap_err();
        assert_eq!(err, "storageclass.storage.k8s.io \"gone\" not found");
    }
}
