//! Statements: ordered session changes that are committed (binds, evictions
//! reach the cluster) or discarded (undone in reverse), as in Volcano.

use crate::session::{Decision, Session};
use tephra_contract::TaskStatus;
use tephra_snapshot::NONE;

#[derive(Clone, Debug)]
enum Op {
    Allocate { task: u32, prev: (TaskStatus, u32) },
    Pipeline { task: u32, prev: (TaskStatus, u32), nominate: bool },
    Evict { task: u32, reason: String, prev: (TaskStatus, u32) },
}

/// A transaction over the session.
#[derive(Default, Debug)]
pub struct Statement {
    ops: Vec<Op>,
}

fn prev(ssn: &Session, t: u32) -> (TaskStatus, u32) {
    (ssn.task_status(t), ssn.snap.task_node[t as usize])
}

impl Statement {
    /// A statement with nothing recorded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Places a task on a node with room now.
    pub fn allocate(&mut self, ssn: &mut Session, task: u32, node: u32) {
        self.ops.push(Op::Allocate { task, prev: prev(ssn, task) });
        ssn.set_task(task, TaskStatus::Allocated, node);
    }

    /// Reserves a node whose room is being freed; nothing is bound. With
    /// `nominate` (evictions were made for it) the pod is nominated to the node.
    pub fn pipeline(&mut self, ssn: &mut Session, task: u32, node: u32, nominate: bool) {
        self.ops.push(Op::Pipeline { task, prev: prev(ssn, task), nominate });
        ssn.set_task(task, TaskStatus::Pipelined, node);
    }

    /// Marks a running task for eviction.
    pub fn evict(&mut self, ssn: &mut Session, task: u32, reason: &str) {
        let p = prev(ssn, task);
        self.ops.push(Op::Evict { task, reason: reason.to_string(), prev: p });
        ssn.set_task(task, TaskStatus::Releasing, p.1);
    }

    /// Appends another statement's operations (already applied) to this one.
    pub fn merge(&mut self, other: Statement) {
        self.ops.extend(other.ops);
    }

    /// Undoes every change, last first.
    pub fn discard(self, ssn: &mut Session) {
        for op in self.ops.into_iter().rev() {
            let (task, (status, node)) = match op {
                Op::Allocate { task, prev } | Op::Pipeline { task, prev, .. } | Op::Evict { task, prev, .. } => {
                    (task, prev)
                }
            };
            ssn.set_task(task, status, node);
        }
    }

    /// Sends binds and evictions to the cluster; pipelines stay session-only.
    pub fn commit(self, ssn: &mut Session) {
        for op in self.ops {
            match op {
                Op::Allocate { task, .. } => {
                    let node = ssn.snap.task_node[task as usize];
                    if node != NONE {
                        ssn.decisions.push(Decision::Bind { task, node });
                    }
                }
                Op::Evict { task, reason, .. } => ssn.decisions.push(Decision::Evict { task, reason }),
                Op::Pipeline { task, nominate: true, .. } => {
                    let node = ssn.snap.task_node[task as usize];
                    ssn.decisions.push(Decision::Nominate { task, node });
                }
                Op::Pipeline { .. } => {}
            }
        }
    }
}
