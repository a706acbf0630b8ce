"""The class a policy subclasses: one method per extension point, each with
Volcano's neutral answer. The points a policy implements are the methods it
overrides; only those are exported and ever called."""

from typing import Dict, List, Optional, Sequence, Tuple, Union

from .contract import POINT_FUNCTIONS
from .session import Session

# Extension point (the contract's interface name) → the methods that make it:
# its first function's name, but for node-order, whose two functions
# (node_order, node_score) both come from node_score.
_METHODS = {"node-order": ("node_score",)}
POINTS: Dict[str, Tuple[str, ...]] = {p: _METHODS.get(p, fs[:1]) for p, fs in POINT_FUNCTIONS.items()}


class Unfit:
    """Why a task does not fit a node; `unresolvable`: evictions cannot help."""

    def __init__(self, message: str, unresolvable: bool = False):
        self.message = message
        self.unresolvable = unresolvable


# A vote: "permit", "reject" or "abstain".
Vote = str


class Policy:
    """Override the points you implement. Ids are the snapshot's dense ids;
    `s` is the current `Session`. Raise ValueError in `open` to refuse a
    session (bad arguments): the host reports the message."""

    NAME = "unnamed"
    VERSION = "0.1.0"
    # Flush every event batch to the policy before the session closes.
    FLUSH_EVENTS = False

    def open(self, s: Session, args: Dict[str, str]) -> None:
        pass

    def resume(self, s: Session, args: Dict[str, str]) -> bool:
        """The next session continues this one (the SDK applied the delta):
        True keeps this object, False (the default) opens a fresh one."""
        return False

    def close(self, s: Session) -> None:
        pass

    def on_event(self, s: Session, event, old_status: str, old_node: int) -> None:
        """After the session applied `event`; the task's status and node before."""
        pass

    def queue_order(self, s: Session, queue: int) -> float:
        return 0.0

    def job_order(self, s: Session, job: int) -> float:
        return 0.0

    def task_order(self, s: Session, task: int) -> float:
        return 0.0

    def victim_queue_order(self, s: Session, queue: int, preemptor_queue: int) -> float:
        return 0.0

    def predicate(self, s: Session, task: int, node: int) -> Union[None, str, Unfit]:
        """None fits; a string or an `Unfit` says why not."""
        return None

    def node_score(self, s: Session, task: int, node: int) -> float:
        return 0.0

    def overused(self, s: Session, queue: int) -> bool:
        return False

    def allocatable(self, s: Session, queue: int, task: int) -> bool:
        return True

    def preemptive(self, s: Session, queue: int, task: int) -> bool:
        return True

    def job_valid(self, s: Session, job: int) -> Optional[str]:
        return None

    def job_ready(self, s: Session, job: int) -> bool:
        return True

    def job_pipelined(self, s: Session, job: int) -> Vote:
        return "abstain"

    def job_enqueueable(self, s: Session, job: int) -> Vote:
        return "abstain"

    def job_enqueued(self, s: Session, job: int) -> None:
        pass

    def job_starving(self, s: Session, job: int) -> bool:
        return False

    def preemptable(self, s: Session, preemptor: int, candidates: Sequence[int]) -> Tuple[List[int], Vote]:
        return [], "abstain"

    def reclaimable(self, s: Session, preemptor: int, candidates: Sequence[int]) -> Tuple[List[int], Vote]:
        return [], "abstain"

    def victim_tasks(self, s: Session, candidates: Sequence[int]) -> List[int]:
        return []

    def target_job(self, s: Session, jobs: Sequence[int]) -> Optional[int]:
        return None

    def reserved_nodes(self, s: Session, owner, candidates: Sequence[int]) -> List[int]:
        """The nodes to lock; raise ValueError to refuse with a reason."""
        return []

    def queue_status(self, s: Session, queue: int) -> Tuple[List[float], float]:
        """(deserved row, share); the default is unknown (NaN) and 0."""
        return [float("nan")] * s.d, 0.0

    def hypernode_order(self, s: Session, job: int, subgroup: int, hypernode: int) -> float:
        """The score (higher first) of `hypernode` as the domain of `job`'s
        `subgroup` (NONE: of the whole job)."""
        return 0.0

    def evictable(self, s: Session, kind: str, job: int, hypernode: int,
                  candidates: Sequence[int]) -> Tuple[List[int], Vote]:
        """Gang eviction ("gang-preempt" or "gang-reclaim"): which of
        `candidates` (running tasks on `hypernode`) starving `job` may evict."""
        return [], "abstain"


def implemented(cls) -> List[str]:
    """The points `cls` overrides, as interface names."""
    return [p for p, methods in POINTS.items() if any(getattr(cls, m) is not getattr(Policy, m) for m in methods)]
