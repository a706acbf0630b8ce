//! Node labels and the rules that read them: node-affinity expressions
//! (`labels.Requirement`, `matchFields`) and tolerations, with
//! Kubernetes' semantics, shared by the policies that filter or score by them.

use crate::session::Session;
use crate::types::{AffinityExpr, Toleration};

/// Per node, its `node_labels` rows sorted by key, for lookups by key.
#[derive(Default)]
pub struct NodeLabels {
    rows: Vec<Vec<usize>>,
}

impl NodeLabels {
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
