"""Sessions built by hand, for unit tests of a policy under plain Python
(no component build): the snapshot has every column of the contract, as
lists, with the objects added here."""

from types import SimpleNamespace
from typing import Dict, Optional, Sequence

from . import contract
from .session import NONE, Session, _shares

# Every column of the contract's snapshot (generated from wit/).
FIELDS = tuple(f for f, ty in contract.SNAPSHOT.items() if ty.startswith("list<"))


class SnapshotBuilder:
    """Nodes, queues, jobs and tasks added one by one; ids are returned in
    order. Resources are rows over `dims` (default cpu millicores, memory
    bytes, pods)."""

    def __init__(self, dims: Sequence[str] = ("cpu", "memory", "pods")):
        self.snap = SimpleNamespace(**{f: [] for f in FIELDS})
        self.snap.dims = list(dims)
        self.snap.strings = [""]
        self.snap.now_ms = 0
        self.snap.total = [0.0] * len(dims)
        # The cluster's HyperNode (0), one tier above every other.
        self.snap.hypernode_name = [0]
        self.snap.hypernode_tier = [1]
        self.snap.hypernode_parent = [NONE]

    def string(self, text: str) -> int:
        if text not in self.snap.strings:
            self.snap.strings.append(text)
        return self.snap.strings.index(text)

    def _row(self, values: Sequence[float]) -> list:
        row = [float(v) for v in values]
        return row + [0.0] * (len(self.snap.dims) - len(row))

    def node(self, name: str, allocatable: Sequence[float], labels: Optional[Dict[str, str]] = None) -> int:
        s, n = self.snap, len(self.snap.node_unschedulable)
        s.node_name.append(self.string(name))
        row = self._row(allocatable)
        s.node_allocatable += row
        s.total = [a + b for a, b in zip(s.total, row)]
        for column in (s.node_used, s.node_releasing, s.node_pipelined):
            column += [0.0] * len(row)
        s.node_unschedulable.append(False)
        s.node_locked_job.append(NONE)
        s.node_locked_queue.append(NONE)
        s.node_hypernode.append(0)
        for k, v in (labels or {}).items():
            s.node_labels.append(SimpleNamespace(owner=n, key=self.string(k), value=self.string(v)))
        return n

    def hypernode(self, name: str, tier: int, parent: int = 0, nodes: Sequence[int] = ()) -> int:
        """A HyperNode of `tier` under `parent` (0: the cluster), the lowest
        one holding `nodes`; raises the cluster's tier above it."""
        s, h = self.snap, len(self.snap.hypernode_tier)
        s.hypernode_name.append(self.string(name))
        s.hypernode_tier.append(tier)
        s.hypernode_parent.append(parent)
        s.hypernode_tier[0] = max(s.hypernode_tier[0], tier + 1)
        for n in nodes:
            s.node_hypernode[n] = h
        return h

    def queue(self, weight: float = 1.0, parent: int = NONE) -> int:
        s = self.snap
        s.queue_parent.append(parent)
        s.queue_weight.append(weight)
        s.queue_priority.append(0)
        s.queue_reclaimable.append(True)
        s.queue_state.append("open")
        s.queue_guaranteed.append(False)
        return len(s.queue_parent) - 1

    def job(self, queue: int, min_available: int = 1, priority: int = 0) -> int:
        s = self.snap
        s.job_queue.append(queue)
        s.job_min_available.append(min_available)
        s.job_has_min_resources.append(False)
        s.job_priority.append(priority)
        s.job_phase.append("inqueue")
        s.job_created_ms.append(len(s.job_queue))
        s.job_highest_tier.append(NONE)
        s.job_topology.append(False)
        return len(s.job_queue) - 1

    def task(self, job: int, request: Sequence[float], status: str = "pending", node: int = NONE,
             namespace: str = "default") -> int:
        s = self.snap
        t = len(s.task_job)
        s.task_job.append(job)
        s.task_status.append(status.upper())
        s.task_node.append(node)
        s.task_resreq += self._row(request)
        s.task_priority.append(0)
        s.task_preemptable.append(True)
        s.task_role.append(0)
        s.task_namespace.append(self.string(namespace))
        s.task_priority_class.append(0)
        s.task_created_ms.append(t)
        s.task_started_ms.append(0)
        s.task_estimated_ms.append(0)
        s.task_subgroup.append(NONE)
        if node != NONE:
            d = len(s.dims)
            for on, column in zip(_shares(status.upper()), (s.node_used, s.node_releasing, s.node_pipelined)):
                for k in range(d):
                    column[node * d + k] += s.task_resreq[t * d + k] if on else 0.0
        return t

    def session(self) -> Session:
        return Session(self.snap)


def event(task: int, node: int, status: str, kind: str = "allocate"):
    """An event as the host sends it (status and kind as names)."""
    return SimpleNamespace(kind=kind.upper(), task=task, node=node, status=status.upper())
