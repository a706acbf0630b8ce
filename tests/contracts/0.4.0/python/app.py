"""fair-team: a tephra job-order policy written in Python.

Jobs whose team has used the least recently go first. A job's team is the
namespace of its first task (the task with the smallest id whose `task-job` is
the job). Recent usage per team comes from the plugin's arguments:

    - name: fair-team
      arguments:
        usage.team-a: 120
        usage.team-b: 30

The job-order key is the usage of the job's team (a team without an argument
has used 0), so smaller usage sorts first; equal keys defer to the next plugin.

Everything is computed once in `open_session`: a `job-order` call is one list
lookup per job. Every other export of the contract answers Volcano's neutral
value (the host only calls the points listed in `info().points`, but the
component must export them all).
"""

import math
from typing import List, Optional, Tuple

from wit_world import exports
from wit_world.imports import host
from wit_world.imports.types import (
    ExtensionPoint,
    Fit,
    LockOwner,
    PluginInfo,
    QueueFigures,
    Reason,
    Snapshot,
    Victims,
    Vote,
)
from componentize_py_types import Err

NAME = "fair-team"
VERSION = "0.1.0"
CONTRACT = "0.4.0"
USAGE_PREFIX = "usage."
NO_ID = 0xFFFFFFFF


def parse_usage(arguments: List[Tuple[str, str]]) -> dict:
    """`usage.<team>` arguments as {team: float}; other keys are ignored.

    Raises ValueError naming the argument when a value is not a finite number.
    """
    usage = {}
    for key, value in arguments:
        if not key.startswith(USAGE_PREFIX):
            continue
        team = key[len(USAGE_PREFIX):]
        try:
            amount = float(value.strip())
        except ValueError:
            raise ValueError(f"argument {key}: {value!r} is not a number") from None
        if not math.isfinite(amount):
            raise ValueError(f"argument {key}: {value!r} is not a finite number")
        usage[team] = amount
    return usage


def job_keys(snapshot: Snapshot, usage: dict) -> List[float]:
    """One key per job of the snapshot: the usage of the job's team."""
    jobs = len(snapshot.job_queue)
    strings = snapshot.strings
    # Namespace string id of each job's first task; NO_ID for a job without tasks.
    namespace = [NO_ID] * jobs
    for job, ns in zip(snapshot.task_job, snapshot.task_namespace):
        if job < jobs and namespace[job] == NO_ID:
            namespace[job] = ns
    # Resolve each distinct namespace once.
    by_ns = {}
    keys = []
    for ns in namespace:
        key = by_ns.get(ns)
        if key is None:
            team = strings[ns] if ns < len(strings) else ""
            key = by_ns[ns] = usage.get(team, 0.0)
        keys.append(key)
    return keys


class _Session:
    """Per-session state. Module-level: componentize-py makes a new `Policy`
    object for every exported call, so nothing may live on `self`."""

    keys: List[float] = []
    dims = 0


_session = _Session()


class Policy(exports.Policy):

    def info(self) -> PluginInfo:
        return PluginInfo(
            name=NAME,
            version=VERSION,
            contract=CONTRACT,
            points=[ExtensionPoint.JOB_ORDER],
        )

    def open_session(self, snapshot: Snapshot, arguments: List[Tuple[str, str]]) -> None:
        _session.keys = []
        _session.dims = len(snapshot.dims)
        try:
            usage = parse_usage(arguments)
        except ValueError as e:
            raise Err(f"{NAME}: {e}")
        _session.keys = job_keys(snapshot, usage)
        host.log(
            host.Level.DEBUG,
            f"{NAME}: {len(_session.keys)} jobs, usage for {len(usage)} teams",
        )

    def update_session(self, delta, arguments: List[Tuple[str, str]]) -> bool:
        # This plugin does not keep sessions: the host sends the whole snapshot.
        return False

    def close_session(self) -> None:
        _session.keys = []

    def on_events(self, events) -> None:
        pass

    def on_event(self, event) -> None:
        pass

    def job_order(self, jobs: List[int]) -> List[float]:
        keys = _session.keys
        n = len(keys)
        return [keys[j] if j < n else 0.0 for j in jobs]

    # Neutral answers for the points this policy does not implement.

    def queue_order(self, queues: List[int]) -> List[float]:
        return [0.0] * len(queues)

    def task_order(self, tasks: List[int]) -> List[float]:
        return [0.0] * len(tasks)

    def victim_queue_order(self, queues: List[int], preemptor_queue: int) -> List[float]:
        return [0.0] * len(queues)

    def predicate(self, task: int, nodes: List[int]) -> Fit:
        return Fit(codes=bytes(len(nodes)), reasons=[])

    def node_order(self, task: int, nodes: List[int]) -> List[float]:
        return [0.0] * len(nodes)

    def predicate_node(self, task: int, node: int) -> int:
        return 0

    def explain(self, code: int) -> Reason:
        # No code is ever answered, so none is explained.
        return Reason(message=f"{NAME}: no reason has code {code}", unresolvable=False)

    def node_score(self, task: int, node: int) -> float:
        return 0.0

    def overused(self, queue: int) -> bool:
        return False

    def allocatable(self, queue: int, task: int) -> bool:
        return True

    def preemptive(self, queue: int, task: int) -> bool:
        return True

    def job_valid(self, job: int) -> Optional[str]:
        return None

    def job_ready(self, job: int) -> bool:
        return True

    def job_pipelined(self, job: int) -> Vote:
        return Vote.ABSTAIN

    def job_enqueueable(self, job: int) -> Vote:
        return Vote.ABSTAIN

    def job_enqueued(self, job: int) -> None:
        pass

    def job_starving(self, job: int) -> bool:
        return False

    def preemptable(self, preemptor: int, candidates: List[int]) -> Victims:
        return Victims(tasks=[], vote=Vote.ABSTAIN)

    def reclaimable(self, preemptor: int, candidates: List[int]) -> Victims:
        return Victims(tasks=[], vote=Vote.ABSTAIN)

    def victim_tasks(self, candidates: List[int]) -> List[int]:
        return []

    def target_job(self, jobs: List[int]) -> Optional[int]:
        return None

    def reserved_nodes(self, owner: LockOwner, candidates: List[int]) -> List[int]:
        # Lock nothing (an `Err` would refuse the reservation).
        return []

    def queue_status(self, queues: List[int]) -> QueueFigures:
        # The SDK's neutral answer: an unknown (NaN) deserved row and share 0.
        return QueueFigures(
            deserved=[math.nan] * (_session.dims * len(queues)),
            share=[0.0] * len(queues),
        )
