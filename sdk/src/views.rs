//! Named views over the session's columns: a node, task, job, queue or
//! HyperNode as an object, resources by name (`s.node(n).idle().cpu()`).
//! A view is an id and a borrow of the session: nothing is copied, and each
//! method is the column read it names (`benches/views.rs` compares them).

use crate::session::{Session, NONE};
use crate::types::{JobPhase, TaskStatus};

/// Amounts over the snapshot's dimensions: a row, or a row minus another
/// (idle is allocatable minus used), computed when read. Units follow
/// Volcano: cpu in millicores, memory in bytes, pods, scalars in milli-units.
#[derive(Clone, Copy)]
pub struct Amounts<'a> {
    s: &'a Session,
    row: &'a [f64],
    minus: Option<&'a [f64]>,
}

impl<'a> Amounts<'a> {
    /// Dimension `d` (0 cpu, 1 memory, 2 pods, then the scalars in `dims`).
    #[inline]
    pub fn at(&self, d: usize) -> f64 {
        self.row[d] - self.minus.map_or(0.0, |m| m[d])
    }
    /// Millicores.
    #[inline]
    pub fn cpu(&self) -> f64 {
        self.at(0)
    }
    /// Bytes.
    #[inline]
    pub fn memory(&self) -> f64 {
        self.at(1)
    }
    /// Whole pods.
    #[inline]
    pub fn pods(&self) -> f64 {
        self.at(2)
    }
    /// A dimension by name (`"nvidia.com/gpu"`, milli-units); 0 when the
    /// snapshot has no such dimension. Look the index up once with
    /// [`Session::dim`] and use [`Amounts::at`] in a loop.
    #[inline]
    pub fn get(&self, name: &str) -> f64 {
        self.s.dim(name).map_or(0.0, |d| self.at(d))
    }
    /// Every dimension, in the order of `dims`.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = f64> + 'a {
        let a = *self;
        (0..a.row.len()).map(move |d| a.at(d))
    }
}

/// A node.
#[derive(Clone, Copy)]
pub struct NodeView<'a> {
    s: &'a Session,
    pub id: u32,
}

impl<'a> NodeView<'a> {
    #[inline]
    pub fn name(&self) -> &'a str {
        self.s.str(self.s.snap.node_name[self.id as usize])
    }
    #[inline]
    pub fn allocatable(&self) -> Amounts<'a> {
        Amounts { s: self.s, row: self.s.node_allocatable(self.id), minus: None }
    }
    /// What holding tasks use (Volcano's Used).
    #[inline]
    pub fn used(&self) -> Amounts<'a> {
        Amounts { s: self.s, row: self.s.node_used(self.id), minus: None }
    }
    /// Allocatable minus used.
    #[inline]
    pub fn idle(&self) -> Amounts<'a> {
        Amounts { s: self.s, row: self.s.node_allocatable(self.id), minus: Some(self.s.node_used(self.id)) }
    }
    #[inline]
    pub fn releasing(&self) -> Amounts<'a> {
        Amounts { s: self.s, row: self.s.node_releasing(self.id), minus: None }
    }
    #[inline]
    pub fn unschedulable(&self) -> bool {
        self.s.snap.node_unschedulable[self.id as usize]
    }
    /// The value of a label, if the node has it.
    #[inline]
    pub fn label(&self, key: &str) -> Option<&'a str> {
        let k = self.s.str_id(key)?;
        let s = self.s;
        s.snap.node_labels.iter().find(|l| l.owner == self.id && l.key == k).map(|l| s.str(l.value))
    }
    /// The lowest-tier HyperNode holding it (the cluster's when none does).
    #[inline]
    pub fn hypernode(&self) -> HyperNodeView<'a> {
        self.s.hypernode(self.s.snap.node_hypernode.get(self.id as usize).copied().unwrap_or(0))
    }
}

/// A task (a pod of a job).
#[derive(Clone, Copy)]
pub struct TaskView<'a> {
    s: &'a Session,
    pub id: u32,
}

impl<'a> TaskView<'a> {
    #[inline]
    pub fn job(&self) -> JobView<'a> {
        self.s.job(self.s.task_job(self.id))
    }
    #[inline]
    pub fn status(&self) -> TaskStatus {
        self.s.task_status(self.id)
    }
    /// Its node, when it has one.
    #[inline]
    pub fn node(&self) -> Option<NodeView<'a>> {
        let n = self.s.task_node(self.id);
        (n != NONE && (n as usize) < self.s.nodes()).then(|| self.s.node(n))
    }
    #[inline]
    pub fn request(&self) -> Amounts<'a> {
        Amounts { s: self.s, row: self.s.task_req(self.id), minus: None }
    }
    #[inline]
    pub fn namespace(&self) -> &'a str {
        self.s.str(self.s.snap.task_namespace[self.id as usize])
    }
    #[inline]
    pub fn priority(&self) -> i32 {
        self.s.snap.task_priority[self.id as usize]
    }
    /// When it started running, ms since the epoch (0: not running).
    #[inline]
    pub fn started_ms(&self) -> i64 {
        self.s.snap.task_started_ms[self.id as usize]
    }
}

/// A job (a PodGroup).
#[derive(Clone, Copy)]
pub struct JobView<'a> {
    s: &'a Session,
    pub id: u32,
}

impl<'a> JobView<'a> {
    #[inline]
    pub fn queue(&self) -> QueueView<'a> {
        self.s.queue(self.s.job_queue(self.id))
    }
    #[inline]
    pub fn tasks(&self) -> impl Iterator<Item = TaskView<'a>> + 'a {
        let s = self.s;
        s.job_tasks(self.id).iter().map(move |&t| s.task(t))
    }
    #[inline]
    pub fn min_available(&self) -> u32 {
        self.s.job_min_available(self.id)
    }
    #[inline]
    pub fn phase(&self) -> JobPhase {
        self.s.job_phase(self.id)
    }
    #[inline]
    pub fn priority(&self) -> i32 {
        self.s.snap.job_priority[self.id as usize]
    }
    #[inline]
    pub fn is_ready(&self) -> bool {
        self.s.job_is_ready(self.id)
    }
    /// What its placed tasks hold.
    #[inline]
    pub fn allocated(&self) -> Amounts<'a> {
        Amounts { s: self.s, row: self.s.job_allocated(self.id), minus: None }
    }
    /// The value of an annotation, if the job has it.
    #[inline]
    pub fn annotation(&self, key: &str) -> Option<&'a str> {
        let k = self.s.str_id(key)?;
        let s = self.s;
        s.snap.job_annotations.iter().find(|l| l.owner == self.id && l.key == k).map(|l| s.str(l.value))
    }
}

/// A queue.
#[derive(Clone, Copy)]
pub struct QueueView<'a> {
    s: &'a Session,
    pub id: u32,
}

impl<'a> QueueView<'a> {
    #[inline]
    pub fn weight(&self) -> f64 {
        self.s.snap.queue_weight[self.id as usize]
    }
    /// Its parent, unless it is a root.
    #[inline]
    pub fn parent(&self) -> Option<QueueView<'a>> {
        let p = self.s.snap.queue_parent[self.id as usize];
        (p != NONE).then(|| self.s.queue(p))
    }
    #[inline]
    pub fn jobs(&self) -> impl Iterator<Item = JobView<'a>> + 'a {
        let s = self.s;
        s.queue_jobs(self.id).iter().map(move |&j| s.job(j))
    }
}

/// A HyperNode (0 is the whole cluster).
#[derive(Clone, Copy)]
pub struct HyperNodeView<'a> {
    s: &'a Session,
    pub id: u32,
}

impl<'a> HyperNodeView<'a> {
    #[inline]
    pub fn name(&self) -> &'a str {
        self.s.str(self.s.snap.hypernode_name.get(self.id as usize).copied().unwrap_or(0))
    }
    #[inline]
    pub fn tier(&self) -> u32 {
        self.s.snap.hypernode_tier.get(self.id as usize).copied().unwrap_or(0)
    }
    /// The HyperNode above it, unless it is the cluster.
    #[inline]
    pub fn parent(&self) -> Option<HyperNodeView<'a>> {
        let p = self.s.snap.hypernode_parent.get(self.id as usize).copied().unwrap_or(NONE);
        (p != NONE).then(|| self.s.hypernode(p))
    }
}

impl Session {
    /// Node `n` as an object.
    #[inline]
    pub fn node(&self, n: u32) -> NodeView<'_> {
        NodeView { s: self, id: n }
    }
    /// Task `t` as an object.
    #[inline]
    pub fn task(&self, t: u32) -> TaskView<'_> {
        TaskView { s: self, id: t }
    }
    /// Job `j` as an object.
    #[inline]
    pub fn job(&self, j: u32) -> JobView<'_> {
        JobView { s: self, id: j }
    }
    /// Queue `q` as an object.
    #[inline]
    pub fn queue(&self, q: u32) -> QueueView<'_> {
        QueueView { s: self, id: q }
    }
    /// HyperNode `h` as an object.
    #[inline]
    pub fn hypernode(&self, h: u32) -> HyperNodeView<'_> {
        HyperNodeView { s: self, id: h }
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::SnapshotBuilder;
    use crate::types::{Label, TaskStatus};
    use crate::NONE;

    #[test]
    fn views_read_the_columns_they_name() {
        let mut b = SnapshotBuilder::new(&["nvidia.com/gpu"]);
        let n = b.node(&[8000.0, 32e9, 110.0, 4000.0]);
        let (key, value) = (b.string("zone"), b.string("east"));
        b.snap.node_labels.push(Label { owner: n, key, value });
        let q = b.queue(2.0);
        let j = b.job(q, 1);
        let t = b.task(j, &[1000.0, 1e9, 1.0, 1000.0], TaskStatus::Running, n);
        b.task(j, &[500.0, 0.0, 1.0, 0.0], TaskStatus::Pending, NONE);
        let s = b.build();
        let node = s.node(n);
        assert_eq!((node.name(), node.label("zone"), node.label("rack")), ("n0", Some("east"), None));
        assert_eq!((node.idle().cpu(), node.idle().get("nvidia.com/gpu"), node.used().memory()), (7000.0, 3000.0, 1e9));
        assert_eq!(node.idle().iter().collect::<Vec<_>>(), [7000.0, 31e9, 109.0, 3000.0]);
        let task = s.task(t);
        assert_eq!((task.job().id, task.node().map(|n| n.id), task.request().pods()), (j, Some(n), 1.0));
        assert_eq!(s.task(t + 1).node().map(|n| n.id), None);
        let job = s.job(j);
        assert_eq!((job.queue().weight(), job.tasks().count(), job.allocated().cpu()), (2.0, 2, 1000.0));
        assert_eq!(s.queue(q).jobs().map(|j| j.id).collect::<Vec<_>>(), [j]);
        assert!(s.queue(q).parent().is_none());
        let h = node.hypernode();
        assert_eq!((h.id, h.tier(), h.parent().is_none()), (0, 1, true));
    }
}
