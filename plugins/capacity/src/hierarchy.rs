//! The queue tree of hierarchical mode, checked once per session: every
//! queue but the root must reach the root through existing parents, and no
//! child's capability (after inheriting what it leaves unset) may exceed its
//! parent's. Everything here is pure so the checks are unit-tested directly.

use crate::quota::{le_eps, Res};
use tephra_sdk::NONE;

/// A valid queue tree.
#[derive(Debug, PartialEq)]
pub struct Tree {
    pub root: u32,
    /// Per queue: its ancestors from the root down to its parent (empty for
    /// the root). Volcano's `ancestors` list.
    pub ancestors: Vec<Vec<u32>>,
    /// Per queue: its children, by id.
    pub children: Vec<Vec<u32>>,
    /// Every queue, parents before their children.
    pub top_down: Vec<u32>,
}

impl Tree {
    pub fn is_leaf(&self, q: u32) -> bool {
        self.children.get(q as usize).is_none_or(Vec::is_empty)
    }
}

/// Builds the tree from `parents` (the snapshot's `queue-parent`; the root's
/// own parent is ignored, as in Volcano). `root` is the queue named `root`.
/// A queue whose parent is missing (`none` or out of range) or that sits on
/// a parent cycle is an error naming the queues.
pub fn build(parents: &[u32], root: Option<u32>, name: &dyn Fn(u32) -> String) -> Result<Tree, String> {
    let n = parents.len();
    let Some(root) = root.filter(|&r| (r as usize) < n) else {
        return Err("hierarchical capacity needs a queue named \"root\", and there is none".into());
    };
    let parent = |q: usize| -> Option<usize> {
        let p = parents[q];
        (p != NONE && (p as usize) < n).then_some(p as usize)
    };

    // 0 = not seen, 1 = on the current walk, 2 = reaches the root, 3 = broken.
    let mut state = vec![0u8; n];
    state[root as usize] = 2;
    let mut problems = Vec::new();
    for start in 0..n {
        let mut walk = Vec::new();
        let mut q = start;
        let verdict = loop {
            match state[q] {
                2 => break 2,
                3 => break 3,
                1 => {
                    // Back on the current walk: the cycle is its tail from q.
                    let at = walk.iter().position(|&x| x == q).unwrap_or(0);
                    let mut names: Vec<String> = walk[at..].iter().map(|&x| format!("{:?}", name(x as u32))).collect();
                    names.push(format!("{:?}", name(q as u32)));
                    problems.push(format!("parent cycle {}", names.join(" -> ")));
                    break 3;
                }
                _ => {}
            }
            state[q] = 1;
            walk.push(q);
            match parent(q) {
                Some(p) => q = p,
                None => {
                    problems.push(format!(
                        "queue {:?} has no parent queue in the session (its spec.parent names a queue that does \
                         not exist)",
                        name(q as u32)
                    ));
                    break 3;
                }
            }
        };
        for x in walk {
            state[x] = verdict;
        }
    }
    if !problems.is_empty() {
        return Err(format!("broken queue hierarchy: {}", problems.join("; ")));
    }

    let mut children = vec![Vec::new(); n];
    for q in 0..n {
        if q != root as usize {
            if let Some(p) = parent(q) {
                children[p].push(q as u32);
            }
        }
    }
    let mut ancestors = vec![Vec::new(); n];
    let mut top_down = vec![root];
    let mut i = 0;
    while i < top_down.len() {
        let p = top_down[i];
        for &c in &children[p as usize] {
            let mut a = ancestors[p as usize].clone();
            a.push(p);
            ancestors[c as usize] = a;
            top_down.push(c);
        }
        i += 1;
    }
    Ok(Tree { root, ancestors, children, top_down })
}

/// Effective capabilities (`checkHierarchicalQueue`): the root without a
/// capability is unlimited in every dimension; a child inherits its parent's
/// cpu or memory where its own is unset or ≤ 0, and every scalar it does
/// not name. A child whose capability then exceeds its parent's on some
/// dimension (tolerance ε; a scalar the parent does not name is unlimited)
/// is an error naming both queues and the dimensions.
pub fn capabilities(
    tree: &Tree,
    spec: &[Res],
    dims: &[String],
    name: &dyn Fn(u32) -> String,
) -> Result<Vec<Res>, String> {
    let mut cap = spec.to_vec();
    let root = tree.root as usize;
    if cap[root].is_empty() {
        cap[root] = Res::infinite(cap[root].v.len());
    }
    let mut problems = Vec::new();
    for &p in &tree.top_down {
        let parent = cap[p as usize].clone();
        for &c in &tree.children[p as usize] {
            let child = &mut cap[c as usize];
            for k in 0..child.v.len() {
                let inherit = if k < 2 { child.v[k] <= 0.0 } else { !child.has[k] && parent.has[k] };
                if inherit {
                    child.v[k] = parent.v[k];
                    child.has[k] = parent.has[k];
                }
            }
            let over: Vec<String> = (0..child.v.len())
                .filter(|&k| (k < 2 || parent.has[k]) && !le_eps(child.v[k], parent.v[k]))
                .map(|k| format!("{} {} > {}", dims.get(k).map_or("?", String::as_str), child.v[k], parent.v[k]))
                .collect();
            if !over.is_empty() {
                problems.push(format!(
                    "queue {:?} capability exceeds its parent {:?} ({})",
                    name(c),
                    name(p),
                    over.join(", ")
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(cap)
    } else {
        Err(format!("broken queue hierarchy: {}", problems.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    fn names(list: &'static [&'static str]) -> impl Fn(u32) -> String {
        move |q| list.get(q as usize).map_or_else(|| format!("#{q}"), |s| s.to_string())
    }

    fn dims() -> Vec<String> {
        ["cpu", "memory", "pods", "nvidia.com/gpu"].map(String::from).to_vec()
    }

    fn cap(v: [f64; 4], has: [bool; 4]) -> Res {
        Res { v: v.to_vec(), has: has.to_vec() }
    }

    #[test]
    fn builds_ancestors_children_and_top_down_order() {
        // root(0) <- a(1) <- a1(3), a2(4); root <- b(2)
        let parents = [NONE, 0, 0, 1, 1];
        let t = build(&parents, Some(0), &names(&["root", "a", "b", "a1", "a2"])).unwrap();
        assert_eq!(t.ancestors, vec![vec![], vec![0], vec![0], vec![0, 1], vec![0, 1]]);
        assert_eq!(t.children, vec![vec![1, 2], vec![3, 4], vec![], vec![], vec![]]);
        assert_eq!(t.top_down, vec![0, 1, 2, 3, 4]);
        assert!(t.is_leaf(2) && t.is_leaf(3) && !t.is_leaf(1) && !t.is_leaf(0));
    }

    #[test]
    fn the_root_parent_is_ignored() {
        let t = build(&[1, 0], Some(0), &names(&["root", "a"])).unwrap();
        assert_eq!(t.ancestors, vec![vec![], vec![0]]);
    }

    #[test]
    fn missing_root_is_an_error() {
        let err = build(&[NONE, NONE], None, &names(&["a", "b"])).unwrap_err();
        assert!(err.contains("\"root\""), "{err}");
    }

    #[test]
    fn missing_parent_names_the_queue() {
        let err = build(&[NONE, 0, NONE, 2], Some(0), &names(&["root", "a", "orphan", "below"])).unwrap_err();
        assert!(err.contains("\"orphan\""), "{err}");
        // Queues below the orphan are cut off with it, not reported twice.
        assert!(!err.contains("\"below\""), "{err}");
    }

    #[test]
    fn cycles_name_their_members_once() {
        // a(1) -> b(2) -> c(3) -> a; d(4) hangs off the cycle; e(5) -> e.
        let parents = [NONE, 2, 3, 1, 1, 5];
        let err = build(&parents, Some(0), &names(&["root", "a", "b", "c", "d", "e"])).unwrap_err();
        assert!(err.contains("parent cycle \"a\" -> \"b\" -> \"c\" -> \"a\""), "{err}");
        assert!(err.contains("parent cycle \"e\" -> \"e\""), "{err}");
        assert_eq!(err.matches("cycle").count(), 2, "{err}");
        assert!(!err.contains("\"d\""), "{err}");
    }

    #[test]
    fn capability_inherits_unset_dims_from_ancestors() {
        // root (no capability) <- p {memory 4Gi} <- c {memory 2Gi, gpu 0 named}
        let t = build(&[NONE, 0, 1], Some(0), &names(&["root", "p", "c"])).unwrap();
        let spec = [
            Res::empty(4),
            cap([0.0, 4e9, 0.0, 0.0], [true, true, false, false]),
            cap([-1.0, 2e9, 0.0, 0.0], [true, true, false, true]),
        ];
        let got = capabilities(&t, &spec, &dims(), &names(&["root", "p", "c"])).unwrap();
        assert_eq!(got[0], Res::infinite(4));
        assert_eq!(got[1].v, [INF, 4e9, INF, INF]);
        // cpu ≤ 0 inherits; a named scalar (even 0) does not.
        assert_eq!(got[2].v, [INF, 2e9, INF, 0.0]);
        assert_eq!(got[2].has, [true; 4]);
    }

    #[test]
    fn child_capability_above_parent_is_an_error() {
        let t = build(&[NONE, 0, 1, 1], Some(0), &names(&["root", "p", "ok", "big"])).unwrap();
        let spec = [
            Res::empty(4),
            cap([4000.0, 4e9, 0.0, 2000.0], [true, true, false, true]),
            cap([4000.05, 0.0, 0.0, 0.0], [true, true, false, false]),
            cap([8000.0, 0.0, 0.0, 3000.0], [true, true, false, true]),
        ];
        let err = capabilities(&t, &spec, &dims(), &names(&["root", "p", "ok", "big"])).unwrap_err();
        assert!(err.contains("queue \"big\" capability exceeds its parent \"p\""), "{err}");
        assert!(err.contains("cpu 8000 > 4000") && err.contains("nvidia.com/gpu 3000 > 2000"), "{err}");
        assert!(!err.contains("\"ok\""), "{err}");
    }

    #[test]
    fn partial_root_capability_leaves_unset_fields_at_zero() {
        // [quirk] A root capability naming only a scalar is not empty, so its
        // cpu stays 0 and a child naming cpu exceeds it.
        let t = build(&[NONE, 0], Some(0), &names(&["root", "a"])).unwrap();
        let spec = [cap([0.0, 0.0, 0.0, 8000.0], [true, true, false, true]), cap([1000.0, 0.0, 0.0, 0.0], [true; 4])];
        let err = capabilities(&t, &spec, &dims(), &names(&["root", "a"])).unwrap_err();
        assert!(err.contains("cpu 1000 > 0"), "{err}");
    }
}
