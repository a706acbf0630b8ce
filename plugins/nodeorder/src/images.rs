//! ImageLocality, kube-scheduler's score: per container image the node
//! has, its size scaled by the share of nodes that have it; the sum,
//! clamped to [23 MiB, 1000 MiB × containers], mapped onto 0–100.

use std::collections::HashMap;
use tephra_sdk::nodes::group_rows;
use tephra_sdk::Session;

const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

#[derive(Default)]
pub struct Images {
    /// Per node, its images' (name, size).
    on_node: Vec<Vec<(u32, f64)>>,
    /// Per image name, how many nodes have it.
    nodes_with: HashMap<u32, u32>,
    /// Per task, its containers' image names.
    of_task: Vec<Vec<u32>>,
}

impl Images {
    pub fn index(&mut self, s: &Session) {
        let sn = &s.snap;
        self.on_node = vec![Vec::new(); s.nodes()];
        self.nodes_with.clear();
        for im in &sn.node_images {
            if let Some(v) = self.on_node.get_mut(im.owner as usize) {
                v.push((im.name, im.size));
                *self.nodes_with.entry(im.name).or_default() += 1;
            }
        }
        let rows = group_rows(s.tasks(), sn.task_images.iter().map(|i| i.owner));
        self.of_task = rows.into_iter().map(|r| r.into_iter().map(|i| sn.task_images[i].name).collect()).collect();
    }

    /// Whether task `t` names images some node has.
    pub fn wanted(&self, t: u32) -> bool {
        !self.nodes_with.is_empty() && !self.of_task[t as usize].is_empty()
    }

    /// The score of task `t` on node `n`, 0–100.
    pub fn score(&self, s: &Session, t: u32, n: u32) -> i64 {
        let wanted = &self.of_task[t as usize];
        let total = s.nodes() as f64;
        let sum: i64 = wanted
            .iter()
            .filter_map(|name| self.on_node[n as usize].iter().find(|(x, _)| x == name))
            .map(|&(name, size)| (size * self.nodes_with[&name] as f64 / total) as i64)
            .sum();
        let max = MAX_CONTAINER_THRESHOLD * wanted.len() as i64;
        let sum = sum.clamp(MIN_THRESHOLD, max.max(MIN_THRESHOLD));
        if max <= MIN_THRESHOLD {
            return 0;
        }
        100 * (sum - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
    }
}
