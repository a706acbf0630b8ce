//! The queue tree of hierarchical mode, checked once per session: every
//! queue but the root must reach the root through existing parents, and no
//! child's capability (after inheriting what it leaves unset) may exceed its
//! parent's. A queue breaking either rule is cut off with everything below
//! it (`Tree::broken`); the rest of the tree stays whole, because no number
//! of a healthy queue depends on a cut-off one. Everything here is pure so
//! the checks are unit-tested directly.

use crate::quota::{le_eps, Res};
use tephra_sdk::NONE;

/// The queue tree: the healthy part under the root, and the queues cut off.
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
    /// Per queue: cut off by a problem of its own or of an ancestor.
    pub broken: Vec<bool>,
    /// What cut queues off, one entry per queue at fault, naming it.
    pub problems: Vec<String>,
}

impl Tree {
    pub fn is_leaf(&self, q: u32) -> bool {
        self.children.get(q as usize).is_none_or(Vec::is_empty)
    }

    pub fn is_broken(&self, q: u32) -> bool {
        self.broken.get(q as usize).copied().unwrap_or(true)
    }

    /// Cuts `q` off with its whole subtree.
    fn cut(&mut self, q: u32) {
        let mut stack = vec![q];
        while let Some(x) = stack.pop() {
            if !std::mem::replace(&mut self.broken[x as usize], true) {
                stack.extend(self.children[x as usize].iter().copied());
            }
        }
    }
}

/// Builds the tree from `parents` (the snapshot's `queue-parent`; the root's
/// own parent is ignored, as in Volcano). `root` is the queue named `root`.
/// A queue whose parent is missing (`none` or out of range) or that sits on
/// a parent cycle is cut off, with a problem naming it; only a missing root
/// is an error (there is no tree at all).
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
    let mut children = vec![Vec::new(); n];
    let reaches_root = |&(q, &s): &(usize, &u8)| q != root as usize && s == 2;
    for (q, _) in state.iter().enumerate().filter(reaches_root) {
        if let Some(p) = parent(q) {
            children[p].push(q as u32);
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
    let broken = state.iter().map(|&s| s != 2).collect();
    Ok(Tree { root, ancestors, children, top_down, broken, problems })
}

/// Effective capabilities (`checkHierarchicalQueue`): the root without a
/// capability is unlimited in every dimension; a child inherits its parent's
/// cpu or memory where its own is unset or ≤ 0, and every scalar it does
/// not name. A child whose capability then exceeds its parent's on some
/// dimension (tolerance ε; a scalar the parent does not name is unlimited)
/// is cut off with its subtree, with a problem naming both queues and the
/// dimensions.
pub fn capabilities(tree: &mut Tree, spec: &[Res], dims: &[String], name: &dyn Fn(u32) -> String) -> Vec<Res> {
    let mut cap = spec.to_vec();
    let root = tree.root as usize;
    if cap[root].is_empty() {
        cap[root] = Res::infinite(cap[root].v.len());
    }
    let mut over_parent = Vec::new();
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
                tree.problems.push(format!(
                    "queue {:?} capability exceeds its parent {:?} ({})",
                    name(c),
                    name(p),
                    over.join(", ")
                ));
                over_parent.push(c);
            }
        }
    }
    for c in over_parent {
        tree.cut(c);
    }
    cap
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
    fn missing_parent_cuts_the_queue_off_with_its_subtree() {
        let t = build(&[NONE, 0, NONE, 2], Some(0), &names(&["root", "a", "orphan", "below"])).unwrap();
        assert_eq!(t.broken, [false, false, true, true]);
        assert_eq!(t.top_down, [0, 1]);
        assert_eq!(t.problems.len(), 1, "{:?}", t.problems);
        assert!(t.problems[0].contains("\"orphan\""), "{:?}", t.problems);
        // Queues below the orphan are cut off with it, not reported twice.
        assert!(!t.problems[0].contains("\"below\""), "{:?}", t.problems);
        // The healthy part is whole.
        assert_eq!(t.children[0], [1]);
        assert_eq!(t.ancestors[1], [0]);
    }

    #[test]
    fn cycles_name_their_members_once() {
        // a(1) -> b(2) -> c(3) -> a; d(4) hangs off the cycle; e(5) -> e; f(6) is fine.
        let parents = [NONE, 2, 3, 1, 1, 5, 0];
        let t = build(&parents, Some(0), &names(&["root", "a", "b", "c", "d", "e", "f"])).unwrap();
        let all = t.problems.join("; ");
        assert!(all.contains("parent cycle \"a\" -> \"b\" -> \"c\" -> \"a\""), "{all}");
        assert!(all.contains("parent cycle \"e\" -> \"e\""), "{all}");
        assert_eq!(all.matches("cycle").count(), 2, "{all}");
        assert!(!all.contains("\"d\"") && !all.contains("\"f\""), "{all}");
        assert_eq!(t.broken, [false, true, true, true, true, true, false]);
        assert_eq!(t.top_down, [0, 6]);
    }

    #[test]
    fn capability_inherits_unset_dims_from_ancestors() {
        // root (no capability) <- p {memory 4Gi} <- c {memory 2Gi, gpu 0 named}
        let mut t = build(&[NONE, 0, 1], Some(0), &names(&["root", "p", "c"])).unwrap();
        let spec = [
            Res::empty(4),
            cap([0.0, 4e9, 0.0, 0.0], [true, true, false, false]),
            cap([-1.0, 2e9, 0.0, 0.0], [true, true, false, true]),
        ];
        let got = capabilities(&mut t, &spec, &dims(), &names(&["root", "p", "c"]));
        assert!(t.problems.is_empty() && t.broken.iter().all(|b| !b), "{t:?}");
        assert_eq!(got[0], Res::infinite(4));
        assert_eq!(got[1].v, [INF, 4e9, INF, INF]);
        // cpu ≤ 0 inherits; a named scalar (even 0) does not.
        assert_eq!(got[2].v, [INF, 2e9, INF, 0.0]);
        assert_eq!(got[2].has, [true; 4]);
    }

    #[test]
    fn child_capability_above_parent_cuts_the_child_off() {
        // root <- p <- ok, big <- below
        let mut t = build(&[NONE, 0, 1, 1, 3], Some(0), &names(&["root", "p", "ok", "big", "below"])).unwrap();
        let spec = [
            Res::empty(4),
            cap([4000.0, 4e9, 0.0, 2000.0], [true, true, false, true]),
            cap([4000.05, 0.0, 0.0, 0.0], [true, true, false, false]),
            cap([8000.0, 0.0, 0.0, 3000.0], [true, true, false, true]),
            Res::empty(4),
        ];
        capabilities(&mut t, &spec, &dims(), &names(&["root", "p", "ok", "big", "below"]));
        let err = t.problems.join("; ");
        assert!(err.contains("queue \"big\" capability exceeds its parent \"p\""), "{err}");
        assert!(err.contains("cpu 8000 > 4000") && err.contains("nvidia.com/gpu 3000 > 2000"), "{err}");
        assert!(!err.contains("\"ok\"") && !err.contains("\"below\""), "{err}");
        assert_eq!(t.broken, [false, false, false, true, true]);
    }

    #[test]
    fn partial_root_capability_leaves_unset_fields_at_zero() {
        // [quirk] A root capability naming only a scalar is not empty, so its
        // cpu stays 0 and a child naming cpu exceeds it.
        let mut t = build(&[NONE, 0], Some(0), &names(&["root", "a"])).unwrap();
        let spec = [cap([0.0, 0.0, 0.0, 8000.0], [true, true, false, true]), cap([1000.0, 0.0, 0.0, 0.0], [true; 4])];
        capabilities(&mut t, &spec, &dims(), &names(&["root", "a"]));
        let err = t.problems.join("; ");
        assert!(err.contains("cpu 1000 > 0"), "{err}");
    }
}
