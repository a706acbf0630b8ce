//! Nodes and the selectors, terms and ports pods match them with.

use crate::resource::ResourceList;
use std::collections::BTreeMap;

/// A node taint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

/// A pod toleration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    pub value: String,
    pub effect: String,
}

/// One match expression of a node-affinity term or a label selector
/// (`matchLabels` entries are `In` with one value).
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct MatchExpr {
    pub key: String,
    pub operator: String,
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
    pub anti: bool,
    /// 0: required; otherwise the preferred term's weight.
    pub weight: i32,
    pub topology_key: String,
    /// `labelSelector` with `matchLabelKeys`/`mismatchLabelKeys` merged in.
    pub selector: Selector,
    pub namespaces: Vec<String>,
    /// `namespaceSelector` (`Some(empty)`: every namespace).
    pub namespace_selector: Selector,
}

/// A topology spread constraint.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct Spread {
    pub max_skew: u32,
    pub topology_key: String,
    /// `whenUnsatisfiable: DoNotSchedule`.
    pub hard: bool,
    /// `labelSelector` with `matchLabelKeys` merged in.
    pub selector: Selector,
    /// 0: unset.
    pub min_domains: u32,
    pub honor_affinity: bool,
    pub honor_taints: bool,
}

/// A container port bound on the node.
#[derive(Clone, Debug, Default, PartialEq, Hash)]
pub struct HostPort {
    pub port: u32,
    pub protocol: String,
    pub ip: String,
}

/// A node as the scheduler sees it: what it offers, how it is labelled and tainted, what it holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    pub name: String,
    pub allocatable: ResourceList,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// `status.images`: each image's names and size in bytes.
    pub images: Vec<(Vec<String>, f64)>,
}

/// Whether `labels` satisfy every requirement of `sel` (`None` matches nothing).
pub fn selects(sel: &Selector, labels: &BTreeMap<String, String>) -> bool {
    let Some(reqs) = sel else { return false };
    reqs.iter().all(|r| {
        let v = labels.get(&r.key);
        match r.operator.as_str() {
            "In" => v.is_some_and(|v| r.values.contains(v)),
            "NotIn" => v.is_none_or(|v| !r.values.contains(v)),
            "Exists" => v.is_some(),
            "DoesNotExist" => v.is_none(),
            _ => false,
        }
    })
}
