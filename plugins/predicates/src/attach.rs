//! NodeVolumeLimits for CSI volumes, kube-scheduler's rule: per driver the
//! node's CSINode limits, the volumes already attached there (each handle
//! once, however many pods share it) plus the task's volumes not among
//! them must not exceed the limit. A driver the node does not list has none.

use std::collections::HashMap;
use tephra_sdk::pods::Pods;
use tephra_sdk::{Session, NONE};

pub const EXCEEDED: &str = "node(s) exceed max volume count";

/// (driver, volume handle) as string ids.
type Volume = (u32, u32);

#[derive(Default)]
pub struct Attach {
    /// Per pod, its CSI volumes.
    of_pod: Vec<Vec<Volume>>,
    /// Per node, (driver, limit).
    limits: Vec<Vec<(u32, u32)>>,
    /// Per node, the volumes attached there and how many pods hold each.
    on_node: Vec<HashMap<Volume, u32>>,
}

impl Attach {
    /// Indexes volumes and limits (they last while sessions continue).
    pub fn index(&mut self, s: &Session, pods: usize) {
        self.of_pod = vec![Vec::new(); pods];
        for a in &s.snap.pod_attachments {
            if let Some(v) = self.of_pod.get_mut(a.pod as usize) {
                v.push((a.driver, a.handle));
            }
        }
        self.limits = vec![Vec::new(); s.nodes()];
        for l in &s.snap.node_attach_limits {
            if let Some(v) = self.limits.get_mut(l.node as usize) {
                v.push((l.driver, l.count));
            }
        }
    }

    /// What is attached where this session.
    pub fn open(&mut self, s: &Session, pods: &Pods) {
        self.on_node = vec![HashMap::new(); s.nodes()];
        for p in 0..self.of_pod.len() as u32 {
            let n = pods.node(s, p);
            if n != NONE && !self.of_pod[p as usize].is_empty() {
                self.moved(p, NONE, n);
            }
        }
    }

    /// Whether task `t` mounts a CSI volume.
    pub fn any(&self, t: u32) -> bool {
        !self.of_pod[t as usize].is_empty()
    }

    /// Pod `p` moved from node `from` to `to`.
    pub fn moved(&mut self, p: u32, from: u32, to: u32) {
        let volumes = &self.of_pod[p as usize];
        if let Some(on) = self.on_node.get_mut(from as usize) {
            for v in volumes {
                if let Some(k) = on.get_mut(v) {
                    *k -= 1;
                    if *k == 0 {
                        on.remove(v);
                    }
                }
            }
        }
        if let Some(on) = self.on_node.get_mut(to as usize) {
            for &v in volumes {
                *on.entry(v).or_default() += 1;
            }
        }
    }

    /// Whether task `t`'s volumes fit node `n`'s limits: checked per driver
    /// of its volumes not attached there yet.
    pub fn fits(&self, t: u32, n: u32) -> bool {
        let (on, limits) = (&self.on_node[n as usize], &self.limits[n as usize]);
        let mut new: Vec<Volume> = self.of_pod[t as usize].iter().filter(|v| !on.contains_key(v)).copied().collect();
        new.sort_unstable();
        new.dedup();
        new.chunk_by(|a, b| a.0 == b.0).all(|same| {
            let driver = same[0].0;
            let Some(&(_, limit)) = limits.iter().find(|(d, _)| *d == driver) else { return true };
            on.keys().filter(|(d, _)| *d == driver).count() + same.len() <= limit as usize
        })
    }
}
