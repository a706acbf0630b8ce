//! Nodes and the selectors, terms and ports pods match them with.

use crate::resource::ResourceList;
use std::collections::BTreeMap;

/// A node taint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Taint {
    /// The taint's key.
    pub key: String,
    /// Its value (may be empty).
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// A pod toleration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Toleration {
    /// The key it tolerates (empty with `Exists`: every key).
    pub key: String,
    /// `Equal` (the default when empty) or `Exists`.
    pub operator: String,
    /// The value compared with `Equal`.
    pub value: String,
    /// The effect it tolerates (empty: every effect).
    pub effect: String,
}

/// One match expression of a node-affinity term or a label selector
/// (`matchLabels` entries are `In` with one value).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MatchExpr {
    /// The label (or field) compared.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`.
    pub operator: String,
    /// The values `In`, `NotIn`, `Gt` and `Lt` compare with.
    pub values: Vec<String>,
    /// A node-affinity `matchFields` expression (key `metadata.name`).
    pub field: bool,
}

/// A label selector: its requirements ANDed; `None` where the API object
/// had none, which matches no pod.
pub type Selector = Option<Vec<MatchExpr>>;

/// A pod affinity or anti-affinity term.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct PodTerm {
    /// An anti-affinity term (keep away from the pods it selects).
    pub anti: bool,
    /// 0: required; otherwise the preferred term's weight.
    pub weight: i32,
    /// The node label whose values are the domains (`kubernetes.io/hostname`, a zone).
    pub topology_key: String,
    /// `labelSelector` with `matchLabelKeys`/`mismatchLabelKeys` merged in.
    pub selector: Selector,
    /// `namespaces`: where the selected pods are (none: the pod's own).
    pub namespaces: Vec<String>,
    /// `namespaceSelector` (`Some(empty)`: every namespace).
    pub namespace_selector: Selector,
}

/// A topology spread constraint.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct Spread {
    /// `maxSkew`: how far a domain's count may exceed the least one's.
    pub max_skew: u32,
    /// The node label whose values are the domains.
    pub topology_key: String,
    /// `whenUnsatisfiable: DoNotSchedule`.
    pub hard: bool,
    /// `labelSelector` with `matchLabelKeys` merged in.
    pub selector: Selector,
    /// 0: unset.
    pub min_domains: u32,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes the pod's node
    /// affinity admits count.
    pub honor_affinity: bool,
    /// `nodeTaintsPolicy: Honor`: only nodes whose taints it tolerates count.
    pub honor_taints: bool,
}

/// A container port bound on the node.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct HostPort {
    /// `hostPort`.
    pub port: u32,
    /// `protocol` (TCP when empty).
    pub protocol: String,
    /// `hostIP` (empty: every address).
    pub ip: String,
}

/// A node as the scheduler sees it: what it offers, how it is labelled and tainted, what it holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `status.allocatable` (`status.capacity` when absent).
    pub allocatable: ResourceList,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `spec.taints`.
    pub taints: Vec<Taint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `status.images`: each image's names and size in bytes.
    pub images: Vec<(Vec<String>, f64)>,
}

/// Whether `labels` satisfy every requirement of `sel` (`None` matches nothing).
pub fn selects(sel: &Selector, labels: &BTreeMap<String, String>) -> bool {
    let Some(reqs) = sel else { return false };
    reqs.iter().all(|r| holds(r, labels.get(&r.key)))
}

/// Whether value `v` (none: the label is absent) satisfies `r`'s set
/// operator (`In`, `NotIn`, `Exists`, `DoesNotExist`; any other: no).
fn holds(r: &MatchExpr, v: Option<&String>) -> bool {
    match r.operator.as_str() {
        "In" => v.is_some_and(|v| r.values.contains(v)),
        "NotIn" => v.is_none_or(|v| !r.values.contains(v)),
        "Exists" => v.is_some(),
        "DoesNotExist" => v.is_none(),
        _ => false,
    }
}

/// Whether `node` satisfies every expression of a node-selector term
/// (labels, or its name for `matchFields`), as node affinity evaluates it.
pub fn term_admits(term: &[MatchExpr], node: &Node) -> bool {
    term.iter().all(|r| {
        let v = if r.field { (r.key == "metadata.name").then_some(&node.name) } else { node.labels.get(&r.key) };
        let numbers = || Some((v?.parse::<i64>().ok()?, r.values.first()?.parse::<i64>().ok()?));
        match r.operator.as_str() {
            "Gt" => numbers().is_some_and(|(a, b)| a > b),
            "Lt" => numbers().is_some_and(|(a, b)| a < b),
            _ => holds(r, v),
        }
    })
}
