//! Advance reservations in a session: per node, the windows that hold it.
//! Placement asks [`Session::window_blocks`] beside the reservation locks
//! (from [`Session::lock_blocks`], so every action honours both).

pub use crate::locks::{Window, WindowStatus};
use crate::session::Session;
use tephra_model::cluster::Cluster;

impl Session {
    /// Loads the cluster's reservations whose window is in force or to come.
    pub(crate) fn load_windows(&mut self, cluster: &Cluster) {
        self.locks.windows.clear();
        self.locks.node_windows.clear();
        self.locks.window_status.clear();
        let now = self.snap.now_ms;
        for r in cluster.reservations.values() {
            let nodes = r.nodes(cluster.nodes.iter());
            self.locks.window_status.push(WindowStatus {
                name: r.name.clone(),
                state: r.state(now).name(),
                nodes: nodes.clone(),
                window: r.window(now),
            });
            let Some((start_ms, end_ms)) = r.window(now) else { continue };
            let nodes: Vec<u32> = nodes.iter().filter_map(|n| self.node_index.get(n).copied()).collect();
            if self.locks.node_windows.is_empty() {
                self.locks.node_windows = vec![Vec::new(); self.nodes()];
            }
            let w = self.locks.windows.len() as u32;
            for &n in &nodes {
                self.locks.node_windows[n as usize].push(w);
            }
            self.locks.windows.push(Window {
                name: r.name.clone(),
                start_ms,
                end_ms,
                maintenance: r.maintenance,
                queues: r.queues.iter().filter_map(|q| self.queue_index.get(q).copied()).collect(),
                namespaces: r.namespaces.clone(),
            });
        }
    }

    /// The window that keeps `task` off `node`, if any: in a window only its
    /// queues and namespaces start there (no one in maintenance); before it,
    /// only jobs whose enforced limit ends as it opens.
    pub fn window_blocks(&self, task: u32, node: u32) -> Option<&Window> {
        let ws = self.locks.node_windows.get(node as usize)?;
        let j = self.task_job(task);
        let now = self.snap.now_ms;
        ws.iter().map(|&w| &self.locks.windows[w as usize]).find(|w| {
            let ns = &self.snap.strings[self.snap.task_namespace[task as usize] as usize];
            let served = !w.maintenance
                && (w.queues.iter().any(|&q| self.queue_within(self.job_queue(j), q)) || w.namespaces.contains(ns));
            let done_before = self.extra.job_limit_enforced[j as usize]
                && now.saturating_add(self.extra.job_limit_ms[j as usize]) <= w.start_ms;
            !served && (now >= w.start_ms || !done_before)
        })
    }
}
