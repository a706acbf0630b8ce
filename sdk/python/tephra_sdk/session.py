"""The session view: the snapshot's columns, task statuses as names, per-job
and per-node figures kept current as the host's events and deltas arrive."""

from typing import Dict, List, Optional, Sequence

from . import contract, resources

NONE = 0xFFFFFFFF

# Statuses in which a task holds resources on its node (Volcano's Used),
# gives them back (Releasing) or waits for them (Pipelined).
ALLOCATED = frozenset(("ALLOCATED", "BINDING", "BOUND", "RUNNING"))
READY = ALLOCATED | {"SUCCEEDED"}


def status_name(s) -> str:
    """A task status as its upper-case name, from the contract's enum or a string."""
    name = getattr(s, "name", None)
    return name if isinstance(name, str) else str(s).upper()


def _shares(status: str):
    """(used, releasing, pipelined): the node columns a status counts in."""
    if status in ALLOCATED:
        return (True, False, False)
    if status == "RELEASING":
        return (True, True, False)
    if status == "PIPELINED":
        return (False, False, True)
    return (False, False, False)


class Session:
    """One scheduling session. `snap` is the contract's snapshot (attributes
    as componentize-py names them: `task_job`, `node_used`...)."""

    def __init__(self, snap):
        self.snap = snap
        self.d = len(snap.dims)
        self.task_status: List[str] = [status_name(s) for s in snap.task_status]
        self.node_used = list(snap.node_used)
        self.node_releasing = list(snap.node_releasing)
        self.node_pipelined = list(snap.node_pipelined)
        jobs = len(snap.job_queue)
        self.job_tasks: List[List[int]] = [[] for _ in range(jobs)]
        for t, j in enumerate(snap.task_job):
            if j < jobs:
                self.job_tasks[j].append(t)
        self.queue_jobs: List[List[int]] = [[] for _ in range(len(snap.queue_parent))]
        for j, q in enumerate(snap.job_queue):
            if q < len(self.queue_jobs):
                self.queue_jobs[q].append(j)
        self._strings: Optional[Dict[str, int]] = None
        self._labels: Optional[List[Dict[str, str]]] = None

    # Sizes and strings.
    def nodes(self) -> int:
        return len(self.snap.node_unschedulable)

    def queues(self) -> int:
        return len(self.snap.queue_parent)

    def jobs(self) -> int:
        return len(self.snap.job_queue)

    def tasks(self) -> int:
        return len(self.snap.task_job)

    def str(self, i: int) -> str:
        s = self.snap.strings
        return s[i] if i < len(s) else ""

    def str_id(self, text: str) -> Optional[int]:
        if self._strings is None:
            self._strings = {s: i for i, s in enumerate(self.snap.strings)}
        return self._strings.get(text)

    def dim(self, name: str) -> Optional[int]:
        try:
            return list(self.snap.dims).index(name)
        except ValueError:
            return None

    # Rows.
    def _row(self, column: Sequence[float], i: int) -> List[float]:
        return list(column[i * self.d:(i + 1) * self.d])

    def task_request(self, t: int) -> List[float]:
        return self._row(self.snap.task_resreq, t)

    def node_allocatable(self, n: int) -> List[float]:
        return self._row(self.snap.node_allocatable, n)

    def node_idle(self, n: int) -> List[float]:
        """Allocatable minus used, per dimension."""
        return resources.sub(self.node_allocatable(n), self._row(self.node_used, n))

    def node_labels(self, n: int) -> Dict[str, str]:
        """The node's labels, shared (do not modify): every node is indexed on first use, in one pass."""
        if self._labels is None:
            self._labels = [{} for _ in range(self.nodes())]
            for l in self.snap.node_labels:
                if l.owner < len(self._labels):
                    self._labels[l.owner][self.str(l.key)] = self.str(l.value)
        return self._labels[n] if n < len(self._labels) else {}

    # Objects.
    def task_job(self, t: int) -> int:
        return self.snap.task_job[t]

    def task_node(self, t: int) -> int:
        return self.snap.task_node[t]

    def task_namespace(self, t: int) -> str:
        return self.str(self.snap.task_namespace[t])

    def job_queue(self, j: int) -> int:
        return self.snap.job_queue[j]

    def job_ready_tasks(self, j: int) -> int:
        return sum(1 for t in self.job_tasks[j] if self.task_status[t] in READY)

    def job_is_ready(self, j: int) -> bool:
        return self.job_ready_tasks(j) >= self.snap.job_min_available[j]

    def placed(self, t: int) -> bool:
        """The task holds resources on its node (allocated, binding, bound, running)."""
        return self.task_status[t] in ALLOCATED

    # Named views: `s.node(n).idle().cpu()`, `s.task(t).job().queue().weight()`.
    def node(self, n: int) -> "NodeView":
        return NodeView(self, n)

    def task(self, t: int) -> "TaskView":
        return TaskView(self, t)

    def job(self, j: int) -> "JobView":
        return JobView(self, j)

    def queue(self, q: int) -> "QueueView":
        return QueueView(self, q)

    def hypernode(self, h: int) -> "HyperNodeView":
        return HyperNodeView(self, h)

    # Changes.
    def apply(self, event):
        """Applies one event (task moved to `status` on `node`); returns the
        task's (status, node) before."""
        t = event.task
        old, old_node = self.task_status[t], self.snap.task_node[t]
        new = status_name(event.status)
        self._place(t, old_node, old, -1.0)
        self._place(t, event.node, new, 1.0)
        self.task_status[t] = new
        self.snap.task_node[t] = event.node
        return old, old_node

    def _place(self, t: int, node: int, status: str, sign: float) -> None:
        if node == NONE or node >= self.nodes():
            return
        d = self.d
        req = self.snap.task_resreq[t * d:(t + 1) * d]
        for on, column in zip(_shares(status), (self.node_used, self.node_releasing, self.node_pipelined)):
            if on:
                for k in range(d):
                    column[node * d + k] += sign * req[k]

    def update(self, delta) -> None:
        """Brings the session up to date with a `snapshot-delta`: the rows of
        the tasks, nodes and residents it lists, then every other column whole."""
        n, rows = len(delta.tasks), len(delta.nodes) * self.d
        if (len(delta.task_status), len(delta.task_node), len(delta.task_started_ms)) != (n, n, n) \
                or len(delta.node_used) != rows \
                or any(t >= self.tasks() for t in delta.tasks) or any(x >= self.nodes() for x in delta.nodes):
            raise ValueError("snapshot-delta does not fit the kept session (lengths or ids)")
        snap = self.snap
        for t, node, status, started in zip(delta.tasks, delta.task_node, delta.task_status, delta.task_started_ms):
            snap.task_node[t] = node
            snap.task_started_ms[t] = started
            self.task_status[t] = status_name(status)
        d = self.d
        for i, node in enumerate(delta.nodes):
            self.node_used[node * d:(node + 1) * d] = delta.node_used[i * d:(i + 1) * d]
            self.node_releasing[node * d:(node + 1) * d] = delta.node_releasing[i * d:(i + 1) * d]
            self.node_pipelined[node * d:(node + 1) * d] = delta.node_pipelined[i * d:(i + 1) * d]
        for r, node in zip(delta.residents, delta.resident_node):
            snap.resident_node[r] = node
        for column in contract.DELTA:
            if column not in DELTA_ROWS:
                value = getattr(delta, column)
                setattr(snap, column, list(value) if isinstance(value, (list, tuple, bytes)) else value)


# The delta's columns applied row by row above (the rest replace the
# snapshot's column of the same name whole).
DELTA_ROWS = frozenset((
    "tasks", "task_status", "task_node", "task_started_ms", "nodes", "node_used", "node_releasing",
    "node_pipelined", "residents", "resident_node",
))


class Amounts:
    """Amounts over the snapshot's dimensions (a row, or a row minus another),
    read by name: cpu in millicores, memory in bytes, pods, scalars in milli-units."""

    __slots__ = ("_s", "_row", "_minus")

    def __init__(self, s: Session, row: Sequence[float], minus: Optional[Sequence[float]] = None):
        self._s, self._row, self._minus = s, row, minus

    def at(self, d: int) -> float:
        return self._row[d] - (self._minus[d] if self._minus is not None else 0.0)

    def cpu(self) -> float:
        return self.at(0)

    def memory(self) -> float:
        return self.at(1)

    def pods(self) -> float:
        return self.at(2)

    def get(self, name: str) -> float:
        """A dimension by name ("nvidia.com/gpu"); 0 when the snapshot has none."""
        d = self._s.dim(name)
        return 0.0 if d is None else self.at(d)

    def row(self) -> List[float]:
        return [self.at(d) for d in range(len(self._row))]


class _View:
    """An object over the columns: the session and a row id."""

    __slots__ = ("s", "id")

    def __init__(self, s: Session, i: int):
        self.s, self.id = s, i


class NodeView(_View):
    __slots__ = ()

    def name(self) -> str:
        return self.s.str(self.s.snap.node_name[self.id])

    def allocatable(self) -> Amounts:
        return Amounts(self.s, self.s.node_allocatable(self.id))

    def used(self) -> Amounts:
        return Amounts(self.s, self.s._row(self.s.node_used, self.id))

    def idle(self) -> Amounts:
        return Amounts(self.s, self.s.node_allocatable(self.id), self.s._row(self.s.node_used, self.id))

    def label(self, key: str) -> Optional[str]:
        return self.s.node_labels(self.id).get(key)

    def hypernode(self) -> "HyperNodeView":
        """The lowest HyperNode holding the node (0: the whole cluster)."""
        return HyperNodeView(self.s, self.s.snap.node_hypernode[self.id])


class TaskView(_View):
    __slots__ = ()

    def job(self) -> "JobView":
        return JobView(self.s, self.s.task_job(self.id))

    def node(self) -> Optional[NodeView]:
        n = self.s.task_node(self.id)
        return None if n == NONE or n >= self.s.nodes() else NodeView(self.s, n)

    def status(self) -> str:
        return self.s.task_status[self.id]

    def request(self) -> Amounts:
        return Amounts(self.s, self.s.task_request(self.id))

    def namespace(self) -> str:
        return self.s.task_namespace(self.id)


class JobView(_View):
    __slots__ = ()

    def queue(self) -> "QueueView":
        return QueueView(self.s, self.s.job_queue(self.id))

    def tasks(self) -> List[TaskView]:
        return [TaskView(self.s, t) for t in self.s.job_tasks[self.id]]

    def min_available(self) -> int:
        return self.s.snap.job_min_available[self.id]

    def is_ready(self) -> bool:
        return self.s.job_is_ready(self.id)


class QueueView(_View):
    __slots__ = ()

    def weight(self) -> float:
        return self.s.snap.queue_weight[self.id]

    def parent(self) -> Optional["QueueView"]:
        p = self.s.snap.queue_parent[self.id]
        return None if p == NONE else QueueView(self.s, p)

    def jobs(self) -> List[JobView]:
        return [JobView(self.s, j) for j in self.s.queue_jobs[self.id]]


class HyperNodeView(_View):
    """A HyperNode (0: the whole cluster, one tier above every other)."""

    __slots__ = ()

    def name(self) -> str:
        return self.s.str(self.s.snap.hypernode_name[self.id])

    def tier(self) -> int:
        return self.s.snap.hypernode_tier[self.id]

    def parent(self) -> Optional["HyperNodeView"]:
        """The HyperNode above, unless this is the cluster."""
        p = self.s.snap.hypernode_parent[self.id]
        return None if p == NONE else HyperNodeView(self.s, p)
