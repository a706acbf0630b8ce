//! Network topology: HyperNodes (Volcano's `topology.volcano.sh/v1alpha1`),
//! the tree they form over the nodes, and what jobs ask of it
//! (`networkTopology`, `subGroupPolicy`).

use crate::node::{selects, MatchExpr, Node};
use std::collections::{BTreeMap, BTreeSet};

/// Name of the HyperNode standing for the whole cluster (Volcano's virtual top).
pub const CLUSTER: &str = "<cluster>";

/// A HyperNode: a tier of the network (a rack, a spine, a zone) grouping
/// nodes or lower HyperNodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HyperNode {
    /// `metadata.name`.
    pub name: String,
    /// `spec.tier`: 1 is the lowest (closest to the nodes).
    pub tier: u32,
    /// `spec.tierName` (jobs may name the tier instead of its number).
    pub tier_name: String,
    /// `spec.members`.
    pub members: Vec<Member>,
}

/// One `spec.members` entry.
#[derive(Clone, Debug, PartialEq)]
pub enum Member {
    /// Nodes by exact name, unanchored regular expression or labels.
    Nodes(NodeSelector),
    /// A lower HyperNode, by exact name.
    HyperNode(String),
}

/// How a member picks nodes.
#[derive(Clone, Debug)]
pub enum NodeSelector {
    /// `exactMatch`: one node by name.
    Exact(String),
    /// `regexMatch`: nodes whose names match (unanchored).
    Regex(regex::Regex),
    /// `labelMatch`: requirements ANDed.
    Labels(Vec<MatchExpr>),
}

impl PartialEq for NodeSelector {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (NodeSelector::Exact(a), NodeSelector::Exact(b)) => a == b,
            (NodeSelector::Regex(a), NodeSelector::Regex(b)) => a.as_str() == b.as_str(),
            (NodeSelector::Labels(a), NodeSelector::Labels(b)) => a == b,
            _ => false,
        }
    }
}

impl NodeSelector {
    fn picks(&self, n: &Node) -> bool {
        match self {
            NodeSelector::Exact(name) => &n.name == name,
            NodeSelector::Regex(re) => re.is_match(&n.name),
            // An empty labelMatch picks nothing (Volcano's member resolution).
            NodeSelector::Labels(reqs) => !reqs.is_empty() && selects(&Some(reqs.clone()), &n.labels),
        }
    }
}

/// A job's or subgroup's `networkTopology`.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct NetworkTopology {
    /// `mode: soft` (the default, `hard`, is false).
    pub soft: bool,
    /// `highestTierAllowed`: the highest tier its tasks may spread over.
    pub highest_tier: Option<u32>,
    /// `highestTierName`: the same, by the tier's name.
    pub highest_tier_name: Option<String>,
}

/// Pod annotations Volcano's PodGroup controller reads for a plain pod's
/// network topology: the mode (`hard` or `soft`) …
pub const MODE_ANNOTATION: &str = "volcano.sh/network-topology-mode";
/// … and the highest tier.
pub const TIER_ANNOTATION: &str = "volcano.sh/network-topology-highest-tier";

impl NetworkTopology {
    /// The spec Volcano's PodGroup controller gives a plain pod's group from
    /// its annotations: a mode other than hard or soft is hard, a tier that
    /// is not a number is none.
    pub fn from_annotations(a: &BTreeMap<String, String>) -> Option<NetworkTopology> {
        if !a.contains_key(MODE_ANNOTATION) && !a.contains_key(TIER_ANNOTATION) {
            return None;
        }
        let soft = a.get(MODE_ANNOTATION).is_some_and(|m| m.eq_ignore_ascii_case("soft"));
        let highest_tier = a.get(TIER_ANNOTATION).and_then(|t| t.trim().parse().ok());
        Some(NetworkTopology { soft, highest_tier, highest_tier_name: None })
    }
}

/// A PodGroup's `subGroupPolicy` entry (a Volcano Job task's `partitionPolicy`).
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct SubGroupPolicy {
    /// The policy's name (a Volcano Job's task name).
    pub name: String,
    /// `subGroupSize`: tasks that must be placed together.
    pub size: u32,
    /// `minSubGroups`: how many subgroups of this policy the job needs.
    pub min_subgroups: u32,
    /// `labelSelector.matchLabels`: which pods the policy takes (none: all).
    pub selector: BTreeMap<String, String>,
    /// Pods with equal values for all these labels form one subgroup.
    pub match_label_keys: Vec<String>,
    /// Each subgroup's own `networkTopology`.
    pub topology: Option<NetworkTopology>,
}

impl SubGroupPolicy {
    /// The subgroup a pod with `labels` falls in (the values of
    /// `matchLabelKeys`), if the policy takes it: as Volcano, a policy
    /// without keys, or a pod lacking one, forms none.
    pub fn key_of(&self, labels: &BTreeMap<String, String>) -> Option<Vec<String>> {
        if self.match_label_keys.is_empty() || self.selector.iter().any(|(k, v)| labels.get(k) != Some(v)) {
            return None;
        }
        self.match_label_keys.iter().map(|k| labels.get(k).filter(|v| !v.is_empty()).cloned()).collect()
    }
}

/// Name prefix of the HyperNodes [`discover`] makes.
pub const DISCOVERED: &str = "discovered-";

/// HyperNodes from node labels, as Volcano's label discoverer makes them:
/// `labels` name the tiers from the highest down (`zone,spine,rack`), the
/// lowest holding nodes, each higher one the HyperNodes below it; a node
/// lacking a label gets no HyperNode at that tier or above. One HyperNode
/// per (tier, value), named `discovered-t<tier>-<value>` (a value that is
/// not a valid name part gets a hash of itself appended, so two values
/// never share one): a value found under two values of the tier above
/// makes it a child of two parents, which the tree refuses (as Volcano's
/// scheduler does).
pub fn discover(nodes: &[&Node], labels: &[String]) -> Vec<HyperNode> {
    let name = |tier: usize, value: &str| {
        let clean: String = value
            .chars()
            .map(|c| c.to_ascii_lowercase())
            .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' { c } else { '-' })
            .collect();
        if clean == value {
            return format!("{DISCOVERED}t{tier}-{clean}");
        }
        // FNV-1a: stable across runs and builds.
        let hash =
            value.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        format!("{DISCOVERED}t{tier}-{clean}-{:08x}", hash as u32)
    };
    let mut out: BTreeMap<String, (HyperNode, BTreeSet<String>)> = BTreeMap::new();
    for n in nodes {
        let mut member = (Member::Nodes(NodeSelector::Exact(n.name.clone())), n.name.clone());
        for (i, key) in labels.iter().rev().enumerate() {
            let Some(value) = n.labels.get(key) else { break };
            let tier = i + 1;
            let hn_name = name(tier, value);
            let (hn, seen) = out.entry(hn_name.clone()).or_insert_with(|| {
                let hn =
                    HyperNode { name: hn_name.clone(), tier: tier as u32, tier_name: key.clone(), members: Vec::new() };
                (hn, BTreeSet::new())
            });
            if seen.insert(member.1.clone()) {
                hn.members.push(member.0);
            }
            member = (Member::HyperNode(hn_name.clone()), hn_name);
        }
    }
    out.into_values().map(|(h, _)| h).collect()
}

/// Replaces the HyperNodes discovered last time (`known`, kept by the
/// caller) with those the nodes' labels give now, touching nothing when
/// they are the same (a changed set means a full snapshot). HyperNodes
/// from the API are left alone and win a name both have.
pub fn refresh_discovered(
    hypernodes: &mut BTreeMap<String, HyperNode>,
    known: &mut BTreeSet<String>,
    nodes: &[&Node],
    labels: &[String],
) {
    let now: Vec<HyperNode> = discover(nodes, labels)
        .into_iter()
        .filter(|h| known.contains(&h.name) || !hypernodes.contains_key(&h.name))
        .collect();
    let same = now.len() == known.len() && now.iter().all(|h| hypernodes.get(&h.name) == Some(h));
    if !same {
        for k in std::mem::take(known) {
            hypernodes.remove(&k);
        }
        for h in now {
            known.insert(h.name.clone());
            hypernodes.insert(h.name.clone(), h);
        }
    }
}

/// The HyperNode tree over a cluster's nodes, as the snapshot carries it:
/// HyperNode 0 is the whole cluster, one tier above the highest, parent of
/// every root; the others follow in name order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tree {
    /// Per HyperNode, its name.
    pub names: Vec<String>,
    /// Per HyperNode, its tier.
    pub tiers: Vec<u32>,
    /// Per HyperNode, its parent (`u32::MAX` for the cluster's).
    pub parents: Vec<u32>,
    /// Per HyperNode, the HyperNodes whose parent it is.
    pub children: Vec<Vec<u32>>,
    /// Per HyperNode, its nodes (sorted ids; the cluster's: every node).
    pub nodes: Vec<Vec<u32>>,
    /// Per node, the lowest-tier HyperNode holding it (0 when none does).
    pub node_leaf: Vec<u32>,
    /// `tierName` → tier.
    pub tier_names: BTreeMap<String, u32>,
}

const NONE: u32 = u32::MAX;

impl Tree {
    /// The tree of `hypernodes` over `nodes`. A HyperNode claimed by two
    /// parents, or one containing itself through its members, makes it
    /// unusable (as in Volcano): the error names the HyperNodes and the field.
    /// A member naming a HyperNode that does not exist (yet) is skipped.
    pub fn build(hypernodes: &[HyperNode], nodes: &[&Node]) -> Result<Tree, String> {
        if hypernodes.is_empty() {
            return Ok(Tree::flat(nodes.len()));
        }
        let mut sorted: Vec<&HyperNode> = hypernodes.iter().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        let index: BTreeMap<&str, u32> =
            sorted.iter().enumerate().map(|(i, h)| (h.name.as_str(), i as u32 + 1)).collect();
        let top = sorted.iter().map(|h| h.tier.saturating_add(1)).max().unwrap_or(1).max(1);
        let n = sorted.len() + 1;
        let mut tree = Tree {
            names: std::iter::once(CLUSTER.to_string()).chain(sorted.iter().map(|h| h.name.clone())).collect(),
            tiers: std::iter::once(top).chain(sorted.iter().map(|h| h.tier)).collect(),
            parents: vec![NONE; n],
            children: vec![Vec::new(); n],
            nodes: vec![Vec::new(); n],
            node_leaf: vec![0; nodes.len()],
            tier_names: BTreeMap::new(),
        };
        for (i, h) in sorted.iter().enumerate() {
            let me = i as u32 + 1;
            if !h.tier_name.is_empty() {
                tree.tier_names.insert(h.tier_name.clone(), h.tier);
            }
            for (m, member) in h.members.iter().enumerate() {
                let Member::HyperNode(child) = member else { continue };
                let Some(&c) = index.get(child.as_str()) else { continue };
                let field = format!("HyperNode {}: spec.members[{m}]", h.name);
                if c == me {
                    return Err(format!("{field}: a HyperNode cannot contain itself"));
                }
                let parent = &mut tree.parents[c as usize];
                if *parent != NONE && *parent != me {
                    let other = &tree.names[*parent as usize];
                    return Err(format!("{field}: {child} already belongs to HyperNode {other} (one parent each)"));
                }
                if *parent == NONE {
                    *parent = me;
                    tree.children[me as usize].push(c);
                }
            }
        }
        // One parent each: a cycle is a parent chain that comes back to itself.
        let mut state = vec![0u8; n]; // 0 unseen, 1 on the current walk, 2 done
        for start in 1..n {
            let mut walk = Vec::new();
            let mut h = start;
            while h != NONE as usize && state[h] == 0 {
                state[h] = 1;
                walk.push(h);
                h = tree.parents[h] as usize;
            }
            if h != NONE as usize && state[h] == 1 {
                let names: Vec<&str> = walk.iter().map(|&w| tree.names[w].as_str()).collect();
                return Err(format!("HyperNode {}: spec.members: a cycle ({})", tree.names[h], names.join(" → ")));
            }
            walk.iter().for_each(|&w| state[w] = 2);
        }
        for h in 1..n {
            if tree.parents[h] == NONE {
                tree.parents[h] = 0;
                tree.children[0].push(h as u32);
            }
        }
        let mut own: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
        // Exact names are looked up (thousands of them on a large cluster);
        // patterns and labels are matched against every node.
        let by_name: std::collections::HashMap<&str, u32> =
            nodes.iter().enumerate().map(|(k, n)| (n.name.as_str(), k as u32)).collect();
        for (i, h) in sorted.iter().enumerate() {
            for member in &h.members {
                match member {
                    Member::Nodes(NodeSelector::Exact(name)) => own[i + 1].extend(by_name.get(name.as_str())),
                    Member::Nodes(sel) => {
                        own[i + 1].extend(nodes.iter().enumerate().filter(|(_, n)| sel.picks(n)).map(|(k, _)| k as u32))
                    }
                    Member::HyperNode(_) => {}
                }
            }
        }
        // Children before parents (post-order from the cluster): a
        // HyperNode's nodes are its own and its children's.
        let mut post = Vec::with_capacity(n);
        let mut stack = vec![(0u32, false)];
        while let Some((h, expanded)) = stack.pop() {
            if expanded {
                post.push(h);
                continue;
            }
            stack.push((h, true));
            stack.extend(tree.children[h as usize].iter().map(|&c| (c, false)));
        }
        for &h in post.iter().filter(|&&h| h != 0) {
            let mut set = std::mem::take(&mut own[h as usize]);
            for &c in &tree.children[h as usize] {
                set.extend(tree.nodes[c as usize].iter().copied());
            }
            tree.nodes[h as usize] = set.into_iter().collect();
        }
        tree.nodes[0] = (0..nodes.len() as u32).collect();
        // A node's leaf: the lowest-tier HyperNode holding it (first by name).
        let mut order: Vec<u32> = (1..n as u32).collect();
        order.sort_by_key(|&h| (tree.tiers[h as usize], h));
        let mut leaf_tier = vec![u32::MAX; nodes.len()];
        for &h in &order {
            for &k in &tree.nodes[h as usize] {
                if tree.tiers[h as usize] < leaf_tier[k as usize] {
                    leaf_tier[k as usize] = tree.tiers[h as usize];
                    tree.node_leaf[k as usize] = h;
                }
            }
        }
        Ok(tree)
    }

    /// The cluster alone: every node in HyperNode 0 (no HyperNodes, or an
    /// unusable set of them).
    pub fn flat(nodes: usize) -> Tree {
        Tree {
            names: vec![CLUSTER.into()],
            tiers: vec![1],
            parents: vec![NONE],
            children: vec![Vec::new()],
            nodes: vec![(0..nodes as u32).collect()],
            node_leaf: vec![0; nodes],
            tier_names: BTreeMap::new(),
        }
    }

    /// The tier a spec allows at most, `None` when it sets none that
    /// resolves (a hard spec without a tier constrains nothing, as in
    /// Volcano); a soft spec is the cluster's tier (every job fits it, the
    /// lowest tier that holds it is tried first).
    pub fn highest_tier(&self, spec: &NetworkTopology, soft_limit: Option<u32>) -> Option<u32> {
        if spec.soft {
            return Some(soft_limit.unwrap_or(self.tiers[0]));
        }
        spec.highest_tier.or_else(|| spec.highest_tier_name.as_ref().and_then(|n| self.tier_names.get(n).copied()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Node { name: name.into(), labels, ..Default::default() }
    }

    fn hn(name: &str, tier: u32, members: Vec<Member>) -> HyperNode {
        HyperNode { name: name.into(), tier, tier_name: String::new(), members }
    }

    fn nodes(names: &[&str]) -> Vec<Member> {
        names.iter().map(|n| Member::Nodes(NodeSelector::Exact(n.to_string()))).collect()
    }

    fn children(names: &[&str]) -> Vec<Member> {
        names.iter().map(|n| Member::HyperNode(n.to_string())).collect()
    }

    /// Volcano's T2: s0{n1,n2}, s1{n3,n4} under s2; the cluster above at tier 3.
    #[test]
    fn two_tiers_with_the_cluster_above() {
        let ns: Vec<Node> = ["n1", "n2", "n3", "n4", "lone"].iter().map(|n| node(n, &[])).collect();
        let h = [
            hn("s2", 2, children(&["s0", "s1"])),
            hn("s0", 1, nodes(&["n1", "n2"])),
            hn("s1", 1, nodes(&["n3", "n4"])),
        ];
        let t = Tree::build(&h, &ns.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(t.names, ["<cluster>", "s0", "s1", "s2"]);
        assert_eq!(t.tiers, [3, 1, 1, 2]);
        assert_eq!(t.parents, [NONE, 3, 3, 0]);
        assert_eq!(t.nodes[3], [0, 1, 2, 3]);
        assert_eq!(t.node_leaf, [1, 1, 2, 2, 0]);
    }

    #[test]
    fn regex_and_label_members() {
        let ns = [node("rack1-a", &[]), node("rack1-b", &[]), node("x", &[("rack", "1")]), node("y", &[])];
        let re = Member::Nodes(NodeSelector::Regex(regex::Regex::new("^rack1-").unwrap()));
        let labels = Member::Nodes(NodeSelector::Labels(vec![MatchExpr {
            key: "rack".into(),
            operator: "In".into(),
            values: vec!["1".into()],
            field: false,
        }]));
        let t = Tree::build(&[hn("r1", 1, vec![re, labels])], &ns.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(t.nodes[1], [0, 1, 2]);
    }

    /// Volcano's label discoverer: tiers from the labels, the lowest
    /// holding nodes; a node without a label stops below that tier.
    #[test]
    fn hypernodes_from_labels() {
        let ns = [
            node("a", &[("spine", "s1"), ("rack", "R1")]),
            node("b", &[("spine", "s1"), ("rack", "R2")]),
            node("c", &[("rack", "R3")]),
            node("d", &[]),
        ];
        let refs: Vec<&Node> = ns.iter().collect();
        let labels = ["spine".to_string(), "rack".to_string()];
        let found = discover(&refs, &labels);
        let names: Vec<(&str, u32)> = found.iter().map(|h| (h.name.as_str(), h.tier)).collect();
        assert_eq!(
            names,
            [
                ("discovered-t1-r1-b5d7dfcc", 1),
                ("discovered-t1-r2-b5d7e4e5", 1),
                ("discovered-t1-r3-b5d7e332", 1),
                ("discovered-t2-s1", 2)
            ]
        );
        let t = Tree::build(&found, &refs).unwrap();
        let s1 = t.names.iter().position(|n| n == "discovered-t2-s1").unwrap();
        assert_eq!(t.nodes[s1], [0, 1]);
        assert_eq!(t.node_leaf[3], 0, "d has no rack");
        // Refreshing keeps the map untouched when nothing changed, and
        // leaves HyperNodes from the API alone.
        let api = hn("discovered-t1-r3-b5d7e332", 1, nodes(&["d"]));
        let mut map: BTreeMap<String, HyperNode> = [(api.name.clone(), api.clone())].into();
        let mut known = BTreeSet::new();
        refresh_discovered(&mut map, &mut known, &refs, &labels);
        assert_eq!(map.len(), 4);
        assert_eq!(map["discovered-t1-r3-b5d7e332"], api, "the API's HyperNode wins its name");
        let before = map.clone();
        refresh_discovered(&mut map, &mut known, &refs, &labels);
        assert_eq!(map, before);
        refresh_discovered(&mut map, &mut known, &refs[..1], &labels);
        let names: Vec<&String> = map.keys().collect();
        assert_eq!(names, ["discovered-t1-r1-b5d7dfcc", "discovered-t1-r3-b5d7e332", "discovered-t2-s1"]);
    }

    #[test]
    fn two_parents_and_cycles_are_refused() {
        let ns = [node("n1", &[])];
        let h = [hn("a", 2, children(&["c"])), hn("b", 2, children(&["c"])), hn("c", 1, nodes(&["n1"]))];
        let e = Tree::build(&h, &ns.iter().collect::<Vec<_>>()).unwrap_err();
        assert_eq!(e, "HyperNode b: spec.members[0]: c already belongs to HyperNode a (one parent each)");
        let h = [hn("a", 1, children(&["b"])), hn("b", 2, children(&["c"])), hn("c", 3, children(&["a"]))];
        let e = Tree::build(&h, &ns.iter().collect::<Vec<_>>()).unwrap_err();
        assert_eq!(e, "HyperNode a: spec.members: a cycle (a → c → b)");
    }
}
