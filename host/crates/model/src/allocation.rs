//! Dynamic Resource Allocation with structured parameters, as
//! kube-scheduler's DynamicResources plugin allocates: DeviceClasses and
//! claims select devices with CEL ([`crate::cel`]), and a pod's claims are
//! allocated on the node it is placed on ([`Allocator`]), all of them or none.
//!
//! Queues see devices as they see `nvidia.com/gpu`: a node has, per device
//! class, as many `deviceclass.resource.kubernetes.io/<class>` as it has
//! devices of the class, and a pod requests those its claims take
//! ([`account`]).

use crate::cel;
use crate::cluster::{Cluster, Pod, PodPhase};
use crate::devices::*;
use crate::node::{term_admits, Node};
use crate::resource::ResourceList;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Why a node cannot take a pod's claims (kube-scheduler's words).
pub const CANNOT_ALLOCATE: &str = "cannot allocate all claims";
/// How many steps one node's search for a pod's devices may take.
const SEARCH_BUDGET: u32 = 100_000;

/// A pod's claims as `(pod claim name, namespace/claim key)`, or why one
/// is not there to be allocated yet.
pub fn claim_keys(c: &Cluster, p: &Pod) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for pc in &p.device_claims {
        let Some(name) = &pc.claim else {
            return Err(format!(
                "waiting for dynamic resource controller to create the resourceclaim \"{}-{}\"",
                p.name, pc.name
            ));
        };
        let key = format!("{}/{name}", p.namespace);
        let Some(claim) = c.resource_claims.get(&key) else {
            return Err(format!("resourceclaim \"{name}\" not found"));
        };
        if claim.deleting {
            return Err(format!("resourceclaim \"{name}\" is being deleted"));
        }
        if let Some(f) = claim.unevaluated.first() {
            return Err(format!("resourceclaim \"{name}\": {f} not evaluated by tephra yet"));
        }
        out.push((pc.name.clone(), key));
    }
    Ok(out)
}

/// What placing a pod writes for one of its claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The claim's `namespace/name`.
    pub claim: String,
    /// The pod it is reserved for (its name).
    pub pod: String,
    /// The allocation to write; `None`: the claim is allocated already.
    pub allocation: Option<Allocation>,
}

/// Where a pod's claims can be allocated (see [`Allocator::fits`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fits {
    /// With the devices free now.
    pub now: Vec<String>,
    /// Were every device free (what taking devices back could open).
    pub if_free: Vec<String>,
}

struct Entry<'c> {
    slice: &'c ResourceSlice,
    device: &'c Device,
}

/// The devices of a cluster, where they are and which are taken, for one
/// cycle's placements: it finds the nodes a pod's claims can be allocated
/// on ([`Allocator::nodes`]) and allocates them ([`Allocator::pick`]).
pub struct Allocator<'c> {
    c: &'c Cluster,
    devices: Vec<Entry<'c>>,
    ids: HashMap<(&'c str, &'c str, &'c str), u32>,
    by_node: HashMap<&'c str, Vec<u32>>,
    /// Devices of slices for several nodes (a selector, or all nodes).
    shared: Vec<u32>,
    taken: HashSet<u32>,
    /// Claims allocated this cycle.
    picked: BTreeMap<String, Allocation>,
    /// Searching as if no device were taken ([`Allocator::fits`]).
    ignore_taken: bool,
    root: ::cel::Context<'static, 'static>,
    values: HashMap<u32, ::cel::Value>,
    verdicts: HashMap<(String, u32), Result<bool, String>>,
}

/// What an allocator holds that a job's failed picks roll back.
#[derive(Clone)]
pub struct Mark {
    taken: HashSet<u32>,
    picked: BTreeMap<String, Allocation>,
}

impl<'c> Allocator<'c> {
    /// Indexes `c`'s devices and those its claims hold.
    pub fn new(c: &'c Cluster) -> Self {
        let mut devices = Vec::new();
        let mut by_node: HashMap<&str, Vec<u32>> = HashMap::new();
        let mut shared = Vec::new();
        let mut ids: HashMap<(&str, &str, &str), u32> = HashMap::new();
        for slice in c.resource_slices.values() {
            for device in &slice.devices {
                let i = devices.len() as u32;
                ids.insert((&slice.driver, &slice.pool, &device.name), i);
                devices.push(Entry { slice, device });
                match &slice.node {
                    Some(n) => by_node.entry(n.as_str()).or_default().push(i),
                    None => shared.push(i),
                }
            }
        }
        let taken = c
            .resource_claims
            .values()
            .filter_map(|k| k.allocation.as_ref())
            .flat_map(|a| &a.results)
            .filter(|r| !r.admin_access)
            .filter_map(|r| ids.get(&(r.driver.as_str(), r.pool.as_str(), r.device.as_str())).copied())
            .collect();
        Allocator {
            c,
            devices,
            ids,
            by_node,
            shared,
            taken,
            picked: BTreeMap::new(),
            ignore_taken: false,
            root: cel::root(),
            values: HashMap::new(),
            verdicts: HashMap::new(),
        }
    }

    /// Where the allocator stands, for [`Allocator::reset`].
    pub fn mark(&self) -> Mark {
        Mark { taken: self.taken.clone(), picked: self.picked.clone() }
    }

    /// Forgets the picks made since `m`.
    pub fn reset(&mut self, m: Mark) {
        self.taken = m.taken;
        self.picked = m.picked;
    }

    /// The devices on `node` (but tainted ones).
    fn on(&self, node: &Node) -> Vec<u32> {
        let mut out: Vec<u32> = self.by_node.get(node.name.as_str()).cloned().unwrap_or_default();
        for &i in &self.shared {
            let s = self.devices[i as usize].slice;
            if s.all_nodes || s.node_selector.iter().any(|t| term_admits(t, node)) {
                out.push(i);
            }
        }
        out.retain(|&i| !self.devices[i as usize].device.tainted);
        out
    }

    /// Whether device `i` satisfies selector `source`.
    fn selects(&mut self, source: &str, i: u32) -> Result<bool, String> {
        if let Some(v) = self.verdicts.get(&(source.to_string(), i)) {
            return v.clone();
        }
        let e = &self.devices[i as usize];
        let verdict = cel::compile(source).and_then(|program| {
            let value = self.values.entry(i).or_insert_with(|| cel::device_value(&e.slice.driver, e.device));
            cel::selects(&self.root, &program, value)
        });
        let verdict = verdict.map_err(|why| format!("selector {source:?} {why}"));
        self.verdicts.insert((source.to_string(), i), verdict.clone());
        verdict
    }

    /// Whether device `i` is of class `class` and satisfies `selectors`.
    fn matches(&mut self, class: &str, selectors: &[String], i: u32) -> Result<bool, String> {
        let Some(dc) = self.c.device_classes.get(class) else {
            return Err(format!("device class {class} does not exist"));
        };
        for s in dc.selectors.iter().chain(selectors) {
            if !self.selects(s, i)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Per device class, how many of `node`'s devices are of it (a
    /// selector that fails counts the device out).
    pub fn totals(&mut self, node: &Node) -> ResourceList {
        let mut out = ResourceList::new();
        let devices = self.on(node);
        for class in self.c.device_classes.keys() {
            let n = devices.iter().filter(|&&i| self.matches(class, &[], i) == Ok(true)).count();
            if n > 0 {
                out.insert(resource_of(class), n as f64 * 1000.0);
            }
        }
        out
    }

    /// The nodes `p`'s claims can be allocated on now (`None`: it has
    /// none), or why none can be known (a claim missing, a selector failing).
    pub fn nodes(&mut self, p: &Pod) -> Result<Option<Vec<String>>, String> {
        Ok(self.fits(p)?.map(|f| f.now))
    }

    /// Where `p`'s claims can be allocated now, and where they could be
    /// if no device were taken (`None`: it has no claims).
    pub fn fits(&mut self, p: &Pod) -> Result<Option<Fits>, String> {
        if p.device_claims.is_empty() {
            return Ok(None);
        }
        let c = self.c;
        let mut fits = Fits::default();
        for n in c.nodes.iter() {
            if self.try_node(p, n)?.is_some() {
                fits.now.push(n.name.clone());
                fits.if_free.push(n.name.clone());
                continue;
            }
            self.ignore_taken = true;
            let free = self.try_node(p, n);
            self.ignore_taken = false;
            if free?.is_some() {
                fits.if_free.push(n.name.clone());
            }
        }
        Ok(Some(fits))
    }

    /// Allocates `p`'s claims on `node` (kept: later picks see its devices
    /// taken), or says why they cannot be.
    pub fn pick(&mut self, p: &Pod, node: &Node) -> Result<Vec<Grant>, String> {
        let grants = self.try_node(p, node)?.ok_or_else(|| format!("{CANNOT_ALLOCATE} on node {}", node.name))?;
        for g in &grants {
            if let Some(a) = &g.allocation {
                self.picked.insert(g.claim.clone(), a.clone());
                for r in &a.results {
                    if let Some(i) = self.index_of(r) {
                        self.taken.insert(i);
                    }
                }
            }
        }
        Ok(grants)
    }

    fn index_of(&self, r: &DeviceResult) -> Option<u32> {
        self.ids.get(&(r.driver.as_str(), r.pool.as_str(), r.device.as_str())).copied()
    }

    /// What `p`'s claims get on `node`: `None` when they cannot be
    /// allocated there.
    fn try_node(&mut self, p: &Pod, node: &Node) -> Result<Option<Vec<Grant>>, String> {
        let c = self.c;
        let mut grants = Vec::new();
        let mut open = Vec::new();
        for (_, key) in claim_keys(c, p)? {
            let claim = &c.resource_claims[&key];
            let held = claim.allocation.as_ref().or_else(|| self.picked.get(&key));
            match held {
                Some(a) => {
                    if !a.node_selector.is_empty() && !a.node_selector.iter().any(|t| term_admits(t, node)) {
                        return Ok(None);
                    }
                    grants.push(Grant { claim: key, pod: p.name.clone(), allocation: None });
                }
                None => open.push((key, claim)),
            }
        }
        if open.is_empty() {
            return Ok(Some(grants));
        }
        for (_, claim) in &open {
            if let Some(r) = claim.requests.iter().find(|r| !c.device_classes.contains_key(&r.class)) {
                return Err(format!("request {}: device class {} does not exist", r.name, r.class));
            }
        }
        let on = self.on(node);
        // Per request of every open claim: the free devices it may take.
        let mut wants = Vec::new();
        for (k, (_, claim)) in open.iter().enumerate() {
            for r in &claim.requests {
                let mut cands = Vec::new();
                for &i in &on {
                    if self.matches(&r.class, &r.selectors, i)? {
                        cands.push(i);
                    }
                }
                let free: Vec<u32> =
                    cands.iter().copied().filter(|i| self.ignore_taken || !self.taken.contains(i)).collect();
                let need = if r.all {
                    if cands.is_empty() || free.len() < cands.len() {
                        return Ok(None);
                    }
                    free.len()
                } else {
                    r.count.max(1) as usize
                };
                if free.len() < need {
                    return Ok(None);
                }
                wants.push(Want { claim: k, request: &r.name, cands: free, need });
            }
        }
        let mut rules = Vec::new();
        for (k, (_, claim)) in open.iter().enumerate() {
            for m in &claim.constraints {
                let members = wants
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| {
                        w.claim == k && (m.requests.is_empty() || m.requests.iter().any(|r| r == w.request))
                    })
                    .map(|(i, _)| i)
                    .collect();
                rules.push(Rule { members, attribute: &m.attribute, value: None });
            }
        }
        let mut search = Search {
            devices: &self.devices,
            wants: &wants,
            rules,
            chosen: vec![Vec::new(); wants.len()],
            used: BTreeSet::new(),
            steps: 0,
        };
        if !search.fill(0, 0) {
            return Ok(None);
        }
        for (k, (key, _)) in open.iter().enumerate() {
            let mut results = Vec::new();
            for (w, picked) in wants.iter().zip(&search.chosen) {
                if w.claim != k {
                    continue;
                }
                for &i in picked {
                    let e = &self.devices[i as usize];
                    results.push(DeviceResult {
                        request: w.request.to_string(),
                        driver: e.slice.driver.clone(),
                        pool: e.slice.pool.clone(),
                        device: e.device.name.clone(),
                        admin_access: false,
                    });
                }
            }
            // Devices of a slice for one node pin the claim there.
            let local = search.chosen.iter().flatten().any(|&i| self.devices[i as usize].slice.node.is_some());
            let allocation = if local {
                Allocation::on_node(&node.name, results)
            } else {
                Allocation { node_selector: Vec::new(), results }
            };
            grants.push(Grant { claim: key.clone(), pod: p.name.clone(), allocation: Some(allocation) });
        }
        Ok(Some(grants))
    }
}

struct Want<'a> {
    claim: usize,
    request: &'a str,
    cands: Vec<u32>,
    need: usize,
}

struct Rule<'a> {
    members: Vec<usize>,
    attribute: &'a str,
    value: Option<Attr>,
}

/// A backtracking search for devices that satisfy every want and rule.
struct Search<'a, 'c> {
    devices: &'a [Entry<'c>],
    wants: &'a [Want<'a>],
    rules: Vec<Rule<'a>>,
    chosen: Vec<Vec<u32>>,
    used: BTreeSet<u32>,
    steps: u32,
}

impl Search<'_, '_> {
    /// The attribute `name` (qualified) of device `i`.
    fn attribute(&self, i: u32, name: &str) -> Option<&Attr> {
        let e = &self.devices[i as usize];
        e.device.attributes.get(name).or_else(|| {
            let (domain, id) = name.rsplit_once('/')?;
            (domain == e.slice.driver).then(|| e.device.attributes.get(id)).flatten()
        })
    }

    /// Fills want `w` from its candidate `from` on, then the wants after it.
    fn fill(&mut self, w: usize, from: usize) -> bool {
        if w == self.wants.len() {
            return true;
        }
        if self.chosen[w].len() == self.wants[w].need {
            return self.fill(w + 1, 0);
        }
        let wants = self.wants;
        for (at, &i) in wants[w].cands.iter().enumerate().skip(from) {
            self.steps += 1;
            if self.steps > SEARCH_BUDGET {
                return false;
            }
            if self.used.contains(&i) {
                continue;
            }
            // The rules over this want: the device has their value, or sets it.
            let mut set = Vec::new();
            let mut fits = true;
            for r in 0..self.rules.len() {
                if !self.rules[r].members.contains(&w) {
                    continue;
                }
                let Some(v) = self.attribute(i, self.rules[r].attribute).cloned() else {
                    fits = false;
                    break;
                };
                match &self.rules[r].value {
                    Some(have) if *have != v => {
                        fits = false;
                        break;
                    }
                    Some(_) => {}
                    None => {
                        self.rules[r].value = Some(v);
                        set.push(r);
                    }
                }
            }
            if fits {
                self.used.insert(i);
                self.chosen[w].push(i);
                if self.fill(w, at + 1) {
                    return true;
                }
                self.chosen[w].pop();
                self.used.remove(&i);
            }
            for r in set {
                self.rules[r].value = None;
            }
        }
        false
    }
}

/// Brings the device columns of `c` up to date: each node's devices per
/// class (recounted when slices or classes changed) and each pod's request
/// of them: what its claims ask, or once placed what they hold (a claim
/// shared by several pods counts on the one it is reserved for first, else
/// on its first pod; a claim allocated before its pod is placed asks nothing).
pub fn account(c: &mut Cluster) {
    if c.device_classes.is_empty() && c.devices_counted.is_empty() && c.resource_claims.is_empty() {
        return;
    }
    let same = c.devices_basis.as_ref().is_some_and(|(d, s)| *d == c.device_classes && *s == c.resource_slices);
    if !same {
        let mut alloc = Allocator::new(c);
        let totals: BTreeMap<String, ResourceList> =
            c.nodes.iter().map(|n| (n.name.clone(), alloc.totals(n))).filter(|(_, t)| !t.is_empty()).collect();
        drop(alloc);
        c.devices_counted = totals;
        c.devices_basis = Some((c.device_classes.clone(), c.resource_slices.clone()));
    }
    for i in 0..c.nodes.len() {
        let want = c.devices_counted.get(&c.nodes[i].name).cloned().unwrap_or_default();
        let have: ResourceList = c.nodes[i]
            .allocatable
            .iter()
            .filter(|(k, _)| k.starts_with(CLASS_RESOURCE))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        if have != want {
            let n = &mut c.nodes[i];
            n.allocatable.retain(|k, _| !k.starts_with(CLASS_RESOURCE));
            n.allocatable.extend(want);
        }
    }
    let mut counted: HashSet<String> = HashSet::new();
    for i in 0..c.pods.len() {
        let p = &c.pods[i];
        if p.device_claims.is_empty() && p.devices.is_empty() {
            continue;
        }
        let mut want = ResourceList::new();
        for pc in &p.device_claims {
            let Some(name) = &pc.claim else {
                // Not made yet: the template says what it will ask for.
                let t = pc.template.as_ref().and_then(|t| c.claim_templates.get(&format!("{}/{t}", p.namespace)));
                if let Some(t) = t {
                    add_requests(&mut want, t);
                }
                continue;
            };
            let key = format!("{}/{name}", p.namespace);
            let Some(claim) = c.resource_claims.get(&key) else { continue };
            let mine = match claim.reserved_for.first() {
                Some(first) => *first == p.name,
                None => !counted.contains(&key),
            };
            if !mine {
                continue;
            }
            counted.insert(key);
            match &claim.allocation {
                // Allocated before its pod is placed: nothing left to ask.
                Some(_) if p.node.is_none() => {}
                Some(a) => {
                    for r in &a.results {
                        let class = claim.requests.iter().find(|q| q.name == r.request).map(|q| q.class.as_str());
                        if let Some(class) = class {
                            *want.entry(resource_of(class)).or_default() += 1000.0;
                        }
                    }
                }
                None => add_requests(&mut want, claim),
            }
        }
        if want != p.devices {
            let p = &mut c.pods[i];
            for (k, v) in &p.devices {
                if let Some(r) = p.requests.get_mut(k) {
                    *r -= v;
                }
            }
            p.requests.retain(|k, v| !(k.starts_with(CLASS_RESOURCE) && *v <= 0.0));
            for (k, v) in &want {
                *p.requests.entry(k.clone()).or_default() += v;
            }
            p.devices = want;
        }
    }
}

/// What an unallocated claim asks for, per class (`All`: at least one).
fn add_requests(want: &mut ResourceList, claim: &ResourceClaim) {
    for r in &claim.requests {
        let n = if r.all { 1 } else { r.count.max(1) };
        *want.entry(resource_of(&r.class)).or_default() += n as f64 * 1000.0;
    }
}

/// Writes a grant into `c` as the API server would hold it after the
/// scheduler's update: the allocation, and the pod in `reservedFor`.
pub fn assume(c: &mut Cluster, g: &Grant) {
    let Some(claim) = c.resource_claims.get_mut(&g.claim) else { return };
    if let Some(a) = &g.allocation {
        claim.allocation = Some(a.clone());
    }
    if !claim.reserved_for.contains(&g.pod) {
        claim.reserved_for.push(g.pod.clone());
    }
}

/// Kubernetes' resource-claim controller, for the simulator: a pod's claims
/// from templates are made (`<pod>-<claim>`), claims whose pods ended are
/// no longer reserved for them, a claim reserved for none is freed, and a
/// claim made for a pod that is gone is deleted. Returns what it made.
pub fn control(c: &mut Cluster) -> Vec<String> {
    let mut made = Vec::new();
    if c.resource_claims.is_empty() && c.claim_templates.is_empty() {
        return made;
    }
    for i in 0..c.pods.len() {
        let p = &c.pods[i];
        if p.device_claims.iter().all(|pc| pc.claim.is_some()) || p.node.is_some() {
            continue;
        }
        let mut claims = p.device_claims.clone();
        for pc in claims.iter_mut().filter(|pc| pc.claim.is_none()) {
            let Some(t) = pc.template.as_ref().and_then(|t| c.claim_templates.get(&format!("{}/{t}", p.namespace)))
            else {
                continue;
            };
            let name = format!("{}-{}", p.name, pc.name);
            let key = format!("{}/{name}", p.namespace);
            if !c.resource_claims.contains_key(&key) {
                let claim = ResourceClaim {
                    owner: Some(p.name.clone()),
                    allocation: None,
                    reserved_for: Vec::new(),
                    ..t.clone()
                };
                c.resource_claims.insert(key.clone(), claim);
                made.push(format!("ResourceClaim {key} (for pod {})", p.key()));
            }
            pc.claim = Some(name);
        }
        // Only a change is written: any other access marks the pod changed.
        if claims != c.pods[i].device_claims {
            c.pods[i].device_claims = claims;
        }
    }
    let live: HashSet<String> =
        c.pods.iter().filter(|p| !matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed)).map(|p| p.key()).collect();
    let present: HashSet<String> = c.pods.iter().map(|p| p.key()).collect();
    c.resource_claims.retain(|key, claim| {
        let ns = key.split_once('/').map_or("", |(ns, _)| ns);
        let of = |pod: &str| format!("{ns}/{pod}");
        claim.reserved_for.retain(|pod| live.contains(&of(pod)));
        if claim.reserved_for.is_empty() {
            claim.allocation = None;
        }
        claim.owner.as_ref().is_none_or(|o| present.contains(&of(o)))
    });
    made
}

#[cfg(test)]
mod tests;
