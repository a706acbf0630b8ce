"""The glue componentize-py exports: `Session` and one class per point,
answering from one policy object and its session view. The contract's types
(`wit_world`) exist only inside a component build, so they are imported when
a call arrives, never at import time: a policy module imports and tests under
plain Python."""

import math
from typing import Dict, List, Optional

from .contract import CONTRACT
from .policy import POINTS, Policy, Unfit, implemented
from .session import Session


def _camel(point: str) -> str:
    return "".join(w.capitalize() for w in point.split("-"))


def world(cls) -> str:
    """The WIT world of a component serving `cls`: the base plugin world and
    the points it implements."""
    lines = ["package local:plugin;", "", "world plugin {", f"    include tephra:scheduler/plugin@{CONTRACT};"]
    lines += [f"    export tephra:scheduler/{p}@{CONTRACT};" for p in implemented(cls)]
    return "\n".join(lines + ["}", ""])


class _Runtime:
    def __init__(self, cls):
        self.cls = cls
        self.policy: Policy = cls()
        self.session: Optional[Session] = None
        self.last: Optional[Session] = None
        self.reasons: List = []
        self.codes: Dict = {}

    def fail(self, e: Exception):
        from componentize_py_types import Err

        raise Err(f"{self.cls.NAME}: {e}")

    def code(self, why) -> int:
        """This session's code of a rejection (1-based), each reason listed once."""
        if isinstance(why, str):
            why = Unfit(why)
        key = (why.message, why.unresolvable)
        if key not in self.codes:
            self.reasons.append(why)
            self.codes[key] = len(self.reasons)
        return self.codes[key]


def _types():
    from wit_world.imports import types

    return types


def serve(cls, namespace: dict) -> None:
    """Defines, in `namespace` (the app module's `globals()`), the classes
    componentize-py exports for policy class `cls`."""
    rt = _Runtime(cls)

    def vote(v):
        return {"permit": _types().Vote.PERMIT, "reject": _types().Vote.REJECT}.get(v, _types().Vote.ABSTAIN)

    def reason(why):
        return _types().Reason(message=why.message, unresolvable=why.unresolvable)

    class SessionExport:
        def info(self):
            from wit_world.exports.session import PluginInfo

            return PluginInfo(name=cls.NAME, version=cls.VERSION, contract=CONTRACT, flush_events=cls.FLUSH_EVENTS)

        def open_session(self, snapshot, arguments) -> None:
            rt.last = None
            rt.reasons, rt.codes = [], {}
            rt.policy = cls()
            rt.session = Session(snapshot)
            try:
                rt.policy.open(rt.session, dict(arguments))
            except ValueError as e:
                rt.fail(e)

        def update_session(self, delta, arguments) -> bool:
            if rt.last is None:
                return False
            s, rt.last = rt.last, None
            rt.reasons, rt.codes = [], {}
            try:
                s.update(delta)
            except ValueError as e:
                rt.fail(e)
            rt.session = s
            args = dict(arguments)
            try:
                if not rt.policy.resume(s, args):
                    rt.policy = cls()
                    rt.policy.open(s, args)
            except ValueError as e:
                rt.fail(e)
            return True

        def close_session(self) -> None:
            if rt.session is not None:
                rt.policy.close(rt.session)
            rt.last, rt.session = rt.session, None

        def on_events(self, events) -> None:
            for e in events:
                self.on_event(e)

        def on_event(self, event) -> None:
            if rt.session is not None:
                old_status, old_node = rt.session.apply(event)
                rt.policy.on_event(rt.session, event, old_status, old_node)

    p, s = rt, lambda: rt.session
    answers = {
        "queue-order": {"queue_order": lambda self, ids: [p.policy.queue_order(s(), i) for i in ids]},
        "job-order": {"job_order": lambda self, ids: [p.policy.job_order(s(), i) for i in ids]},
        "task-order": {"task_order": lambda self, ids: [p.policy.task_order(s(), i) for i in ids]},
        "victim-queue-order": {
            "victim_queue_order": lambda self, ids, q: [p.policy.victim_queue_order(s(), i, q) for i in ids]
        },
        "predicate": {
            "predicate": lambda self, t, nodes: _fit(rt, [p.policy.predicate(s(), t, n) for n in nodes], reason),
            "predicate_node": lambda self, t, n: _code(rt, p.policy.predicate(s(), t, n)),
            "explain": lambda self, c: reason(rt.reasons[c - 1]) if 0 < c <= len(rt.reasons) else reason(
                Unfit(f"{cls.NAME}: no reason has code {c}")),
        },
        "node-order": {
            "node_order": lambda self, t, nodes: [p.policy.node_score(s(), t, n) for n in nodes],
            "node_score": lambda self, t, n: p.policy.node_score(s(), t, n),
        },
        "overused": {"overused": lambda self, q: p.policy.overused(s(), q)},
        "allocatable": {"allocatable": lambda self, q, t: p.policy.allocatable(s(), q, t)},
        "preemptive": {"preemptive": lambda self, q, t: p.policy.preemptive(s(), q, t)},
        "job-valid": {"job_valid": lambda self, j: p.policy.job_valid(s(), j)},
        "job-ready": {"job_ready": lambda self, j: p.policy.job_ready(s(), j)},
        "job-pipelined": {"job_pipelined": lambda self, j: vote(p.policy.job_pipelined(s(), j))},
        "job-enqueueable": {"job_enqueueable": lambda self, j: vote(p.policy.job_enqueueable(s(), j))},
        "job-enqueued": {"job_enqueued": lambda self, j: p.policy.job_enqueued(s(), j)},
        "job-starving": {"job_starving": lambda self, j: p.policy.job_starving(s(), j)},
        "preemptable": {"preemptable": lambda self, t, c: _victims(p.policy.preemptable(s(), t, c), vote)},
        "reclaimable": {"reclaimable": lambda self, t, c: _victims(p.policy.reclaimable(s(), t, c), vote)},
        "victim-tasks": {"victim_tasks": lambda self, c: list(p.policy.victim_tasks(s(), c))},
        "target-job": {"target_job": lambda self, jobs: p.policy.target_job(s(), jobs)},
        "reserved-nodes": {"reserved_nodes": lambda self, owner, c: _reserved(rt, owner, c)},
        "queue-status": {"queue_status": lambda self, qs: _queue_status(rt, qs)},
        "hypernode-order": {
            "hypernode_order": lambda self, j, g, hs: [p.policy.hypernode_order(s(), j, g, h) for h in hs]
        },
        "evictable": {
            "evictable": lambda self, k, j, h, c: _victims(p.policy.evictable(s(), _kind(k), j, h, c), vote)
        },
    }
    assert set(answers) == set(POINTS)
    namespace["__tephra_policy__"] = cls
    namespace["Session"] = SessionExport
    for point in implemented(cls):
        namespace[_camel(point)] = type(_camel(point), (), answers[point])


def _kind(kind) -> str:
    """An eviction-kind as its WIT name ("gang-preempt")."""
    name = getattr(kind, "name", None)
    return (name if isinstance(name, str) else str(kind)).lower().replace("_", "-")


def _code(rt, why) -> int:
    return 0 if why is None else rt.code(why)


def _fit(rt, answers, reason):
    # The contract's codes are bytes: reasons past the 254th share the last code.
    local: Dict[int, int] = {}
    codes = bytearray(len(answers))
    for i, why in enumerate(answers):
        if why is not None:
            c = rt.code(why)
            codes[i] = local.setdefault(c, min(len(local) + 1, 255))
    reasons = [reason(rt.reasons[c - 1]) for c in sorted(local, key=local.get)][:255]
    return _types().Fit(codes=bytes(codes), reasons=reasons)


def _victims(answer, vote):
    tasks, v = answer
    return _types().Victims(tasks=list(tasks), vote=vote(v))


def _reserved(rt, owner, candidates):
    try:
        return list(rt.policy.reserved_nodes(rt.session, owner, candidates))
    except ValueError as e:
        rt.fail(e)


def _queue_status(rt, queues):
    deserved, share = [], []
    for q in queues:
        row, sh = rt.policy.queue_status(rt.session, q)
        deserved += [float(x) for x in row]
        share.append(float(sh) if math.isfinite(sh) else 0.0)
    return _types().QueueFigures(deserved=deserved, share=share)
