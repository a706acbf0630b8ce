"""Sessions built by hand, for unit tests of a policy under plain Python
(no component build): the snapshot has every column of the contract, as
lists, with the objects added here."""

from types import SimpleNamespace
from typing import Dict, Optional, Sequence

from .session import NONE, Session, _shares

FIELDS = (
    "dims strings total now_ms node_name node_allocatable node_used node_releasing node_pipelined "
    "node_unschedulable node_labels node_taints node_locked_job node_locked_queue queue_parent queue_weight "
    "queue_priority queue_reclaimable queue_state queue_capability queue_deserved queue_guarantee "
    "queue_annotations queue_affinity queue_guaranteed queue_reserve_percentage job_queue job_min_available "
    "job_has_min_resources job_min_resources job_min_task_member job_priority job_phase job_created_ms "
    "job_annotations reservation_targets task_job task_status task_node task_resreq task_priority "
    "task_preemptable task_role task_namespace task_priority_class task_created_ms task_started_ms "
    "task_estimated_ms task_node_selector task_tolerations task_affinity resident_node resident_namespace "
    "pod_labels pod_terms pod_ports task_spread node_images task_images pod_attachments node_attach_limits"
).split()


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
        for k, v in (labels or {}).items():
            s.node_labels.append(SimpleNamespace(owner=n, key=self.string(k), value=self.string(v)))
        return n

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
