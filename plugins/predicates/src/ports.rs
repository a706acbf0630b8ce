//! NodePorts: a pod's host ports must be free on the node. Two uses of a
//! port conflict when protocol and port are equal and either address is
//! the wildcard `0.0.0.0` or both are the same (kube-scheduler's
//! `HostPortInfo`).

use tephra_sdk::pods::Pods;
use tephra_sdk::{Session, NONE};

pub const CONFLICT: &str = "node(s) didn't have free ports for the requested pod ports";

/// (port, protocol, ip) as string ids.
type Port = (u32, u32, u32);

#[derive(Default)]
pub struct Ports {
    /// Per pod, its host ports.
    of_pod: Vec<Vec<Port>>,
    /// Per node, the host ports of the pods counting there.
    on_node: Vec<Vec<Port>>,
    wildcard: u32,
}

impl Ports {
    /// Indexes the pods' ports (they last while sessions continue).
    pub fn index(&mut self, s: &Session, pods: usize) {
        self.of_pod = vec![Vec::new(); pods];
        for hp in &s.snap.pod_ports {
            if let Some(v) = self.of_pod.get_mut(hp.pod as usize) {
                v.push((hp.port, hp.protocol, hp.ip));
            }
        }
        self.wildcard = s.str_id("0.0.0.0").unwrap_or(NONE);
    }

    /// Where pods' ports are taken now.
    pub fn open(&mut self, s: &Session, pods: &Pods) {
        self.on_node = vec![Vec::new(); s.nodes()];
        for (p, ports) in self.of_pod.iter().enumerate() {
            let n = pods.node(s, p as u32);
            if !ports.is_empty() && n != NONE {
                self.on_node[n as usize].extend(ports);
            }
        }
    }

    pub fn any(&self, pod: u32) -> bool {
        !self.of_pod[pod as usize].is_empty()
    }

    /// Task `t` moved from node `from` to `to`.
    pub fn moved(&mut self, t: u32, from: u32, to: u32) {
        let ports = &self.of_pod[t as usize];
        if ports.is_empty() {
            return;
        }
        if let Some(on) = self.on_node.get_mut(from as usize) {
            for p in ports {
                if let Some(i) = on.iter().position(|x| x == p) {
                    on.swap_remove(i);
                }
            }
        }
        if let Some(on) = self.on_node.get_mut(to as usize) {
            on.extend(ports);
        }
    }

    /// Whether task `t`'s ports are free on node `n`.
    pub fn free(&self, t: u32, n: u32) -> bool {
        let on = &self.on_node[n as usize];
        let clash = |&(port, proto, ip): &Port, &(p2, proto2, ip2): &Port| {
            port == p2 && proto == proto2 && (ip == ip2 || ip == self.wildcard || ip2 == self.wildcard)
        };
        self.of_pod[t as usize].iter().all(|a| on.iter().all(|b| !clash(a, b)))
    }
}
