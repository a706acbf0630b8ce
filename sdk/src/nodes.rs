//! Node labels and the rules that read them: node selectors, node-affinity
//! expressions (`labels.Requirement`, `matchFields`), bound volumes' node
//! affinity and tolerations, with Kubernetes' semantics, shared by the
//! policies that filter or score by them.

use crate::session::Session;
use crate::types::{AffinityExpr, Toleration};

/// `affinity-expr` groups from this one on are claims still to be bound on
/// first consumer (the nodes where they can be), not bound volumes.
pub const BIND_GROUP: u32 = 1 << 16;
/// The `affinity-expr` group that keeps a task off nodes where its DRA
/// claims cannot be allocated.
pub const DEVICE_GROUP: u32 = 1 << 17;

/// Per node, its `node_labels` rows sorted by key, for lookups by key.
#[derive(Default)]
pub struct NodeLabels {
    rows: Vec<Vec<usize>>,
}

impl NodeLabels {
    /// Indexes the session's node labels.
    pub fn new(s: &Session) -> Self {
        let labels = &s.snap.node_labels;
        let mut rows = vec![Vec::new(); s.nodes()];
        for (r, l) in labels.iter().enumerate() {
            if let Some(v) = rows.get_mut(l.owner as usize) {
                v.push(r);
            }
        }
        for v in &mut rows {
            v.sort_by(|&a, &b| s.str(labels[a].key).cmp(s.str(labels[b].key)));
        }
        NodeLabels { rows }
    }

    /// The value of label `key` on `node`.
    pub fn get<'a>(&self, s: &'a Session, node: usize, key: &str) -> Option<&'a str> {
        let (rows, labels) = (&self.rows[node], &s.snap.node_labels);
        let i = rows.binary_search_by(|&r| s.str(labels[r].key).cmp(key)).ok()?;
        Some(s.str(labels[rows[i]].value))
    }

    /// `labels.Requirement.Matches` (`fields.Selector` for `matchFields`). A
    /// malformed expression (Kubernetes fails to parse it, so its term
    /// matches nothing) is false.
    pub fn matches(&self, s: &Session, e: &AffinityExpr, node: usize) -> bool {
        if e.field {
            let name = s.snap.node_name[node];
            return match (s.str(e.operator), e.values.len()) {
                ("In", 1..) => e.values.contains(&name),
                ("NotIn", 1..) => !e.values.contains(&name),
                _ => false,
            };
        }
        let label = self.get(s, node, s.str(e.key));
        let mut values = e.values.iter().map(|&v| s.str(v));
        match (s.str(e.operator), e.values.len()) {
            ("In", 1..) => label.is_some_and(|l| values.any(|v| v == l)),
            ("NotIn", 1..) => label.is_none_or(|l| values.all(|v| v != l)),
            ("Exists", 0) => label.is_some(),
            ("DoesNotExist", 0) => label.is_none(),
            (op @ ("Gt" | "Lt"), 1) => {
                let bound = s.str(e.values[0]).parse::<i64>();
                match (label.and_then(|l| l.parse::<i64>().ok()), bound) {
                    (Some(l), Ok(b)) => (op == "Gt" && l > b) || (op == "Lt" && l < b),
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// Kubernetes' `Toleration.ToleratesTaint`: empty effect or key match all,
/// an empty operator means Equal.
pub fn tolerates(s: &Session, t: &Toleration, key: &str, value: &str, effect: &str) -> bool {
    let (t_key, t_effect) = (s.str(t.key), s.str(t.effect));
    if (!t_effect.is_empty() && t_effect != effect) || (!t_key.is_empty() && t_key != key) {
        return false;
    }
    match s.str(t.operator) {
        "Exists" => true,
        "" | "Equal" => s.str(t.value) == value,
        _ => false,
    }
}

/// Row numbers grouped by owner id (rows of owners past `owners` dropped).
pub fn group_rows(owners: usize, rows: impl Iterator<Item = u32>) -> Vec<Vec<usize>> {
    let mut g = vec![Vec::new(); owners];
    for (row, owner) in rows.enumerate() {
        if let Some(v) = g.get_mut(owner as usize) {
            v.push(row);
        }
    }
    g
}

/// Per-session indexes of node-side rules: row numbers into the snapshot's
/// columns, by owner, so a check touches only its task's and node's rows.
#[derive(Default)]
pub struct NodeRules {
    pub labels: NodeLabels,
    /// Per node: `node_taints` rows with effect NoSchedule or NoExecute.
    pub hard_taints: Vec<Vec<usize>>,
    /// Per task: `task_node_selector` rows.
    pub selector: Vec<Vec<usize>>,
    /// Per task: `task_tolerations` rows.
    pub tolerations: Vec<Vec<usize>>,
    /// Per task: the pod's own required `task_affinity` rows (group 0), sorted by term.
    pub terms: Vec<Vec<usize>>,
    /// Per task: its bound volumes' node-affinity rows (groups > 0), sorted by (group, term).
    pub volumes: Vec<Vec<usize>>,
}

impl NodeRules {
    /// Indexes the node-side rules of a session (they last while sessions continue).
    pub fn index(&mut self, s: &Session) {
        let sn = &s.snap;
        self.labels = NodeLabels::new(s);
        self.hard_taints = group_rows(s.nodes(), sn.node_taints.iter().map(|t| t.node));
        for rows in &mut self.hard_taints {
            rows.retain(|&r| matches!(s.str(sn.node_taints[r].effect), "NoSchedule" | "NoExecute"));
        }
        self.selector = group_rows(s.tasks(), sn.task_node_selector.iter().map(|l| l.owner));
        self.tolerations = group_rows(s.tasks(), sn.task_tolerations.iter().map(|t| t.task));
        self.terms = group_rows(s.tasks(), sn.task_affinity.iter().map(|e| e.task));
        self.volumes = self.terms.clone();
        for rows in &mut self.terms {
            rows.retain(|&r| sn.task_affinity[r].weight == 0 && sn.task_affinity[r].group == 0);
            rows.sort_by_key(|&r| sn.task_affinity[r].term);
        }
        for rows in &mut self.volumes {
            rows.retain(|&r| sn.task_affinity[r].group > 0);
            rows.sort_by_key(|&r| (sn.task_affinity[r].group, sn.task_affinity[r].term));
        }
    }

    /// The value of label `key` on `node`.
    pub fn label<'a>(&self, s: &'a Session, node: usize, key: &str) -> Option<&'a str> {
        self.labels.get(s, node, key)
    }

    /// Whether one of the task's tolerations tolerates this taint.
    pub fn tolerated(&self, s: &Session, task: usize, key: &str, value: &str, effect: &str) -> bool {
        let tolerations = &s.snap.task_tolerations;
        self.tolerations[task].iter().any(|&r| tolerates(s, &tolerations[r], key, value, effect))
    }

    /// Whether the task has a selector or required terms.
    pub fn constrained(&self, task: usize) -> bool {
        !(self.selector[task].is_empty() && self.terms[task].is_empty())
    }

    /// nodeSelector and required terms: NodeAffinity's verdict.
    pub fn affine(&self, s: &Session, task: usize, node: usize) -> bool {
        self.selector_matches(s, task, node) && self.terms_match(s, task, node)
    }

    /// nodeSelector: every label present with an equal value.
    pub fn selector_matches(&self, s: &Session, task: usize, node: usize) -> bool {
        let selector = &s.snap.task_node_selector;
        self.selector[task].iter().all(|&r| {
            let l = &selector[r];
            self.label(s, node, s.str(l.key)) == Some(s.str(l.value))
        })
    }

    /// Required terms: some term matches; a term's expressions all do. No
    /// terms, no constraint.
    pub fn terms_match(&self, s: &Session, task: usize, node: usize) -> bool {
        Self::groups_match(&self.labels, s, &self.terms[task], node)
    }

    /// The node affinity of every bound volume holds (VolumeBinding's check).
    pub fn volumes_match(&self, s: &Session, task: usize, node: usize) -> bool {
        Self::groups_match(&self.labels, s, &self.volumes[task], node)
    }

    /// The first volume or device group that does not hold on `node`, if
    /// any: from [`BIND_GROUP`] on a claim still to be bound (no volume can
    /// be bound or provisioned for it there), [`DEVICE_GROUP`] the pod's DRA
    /// claims, below a bound volume's node affinity.
    pub fn volume_misfit(&self, s: &Session, task: usize, node: usize) -> Option<u32> {
        let exprs = &s.snap.task_affinity;
        self.volumes[task]
            .chunk_by(|&a, &b| exprs[a].group == exprs[b].group)
            .find(|group| {
                !group
                    .chunk_by(|&a, &b| exprs[a].term == exprs[b].term)
                    .any(|term| term.iter().all(|&r| self.labels.matches(s, &exprs[r], node)))
            })
            .map(|group| exprs[group[0]].group)
    }

    /// Per group, some term of `rows` matches.
    fn groups_match(labels: &NodeLabels, s: &Session, rows: &[usize], node: usize) -> bool {
        let exprs = &s.snap.task_affinity;
        rows.chunk_by(|&a, &b| exprs[a].group == exprs[b].group).all(|group| {
            group
                .chunk_by(|&a, &b| exprs[a].term == exprs[b].term)
                .any(|term| term.iter().all(|&r| labels.matches(s, &exprs[r], node)))
        })
    }

    /// The first NoSchedule/NoExecute taint of `node` the task does not
    /// tolerate, as kube-scheduler's message.
    #[cold]
    pub fn untolerated_taint(&self, s: &Session, task: usize, node: usize) -> Option<String> {
        let taints = &s.snap.node_taints;
        self.hard_taints[node].iter().map(|&r| &taints[r]).find_map(|t| {
            let (key, value) = (s.str(t.key), s.str(t.value));
            let ok = self.tolerated(s, task, key, value, s.str(t.effect));
            (!ok).then(|| format!("node(s) had untolerated taint {{{key}: {value}}}"))
        })
    }

    /// Whether topology spread counts node `n` for the task, by the
    /// constraint's policies.
    pub fn admits(&self, s: &Session, task: usize, n: usize, affinity: bool, taints: bool) -> bool {
        (!affinity || self.affine(s, task, n))
            && (!taints || self.hard_taints[n].is_empty() || self.untolerated_taint(s, task, n).is_none())
    }
}
