"""The SDK against the whole contract, as generated from wit/ (contract.py):
a point, column or case added to the WIT and not to the SDK fails here."""

import unittest
from types import SimpleNamespace

from tephra_sdk import CONTRACT, POINTS, Policy, contract, serve, world
from tephra_sdk.session import ALLOCATED, DELTA_ROWS, NONE
from tephra_sdk.testing import SnapshotBuilder


def everything():
    """A policy overriding every method: it implements every point."""
    methods = {m: (lambda name: lambda self, *a: getattr(Policy, name)(self, *a))(m)
               for ms in POINTS.values() for m in ms}
    return type("Everything", (Policy,), methods)


class ContractTest(unittest.TestCase):
    def test_every_point_is_served_with_exactly_its_functions(self):
        self.assertEqual(list(POINTS), list(contract.POINT_FUNCTIONS))
        ns = {}
        serve(everything(), ns)
        for point, functions in contract.POINT_FUNCTIONS.items():
            cls = ns["".join(w.capitalize() for w in point.split("-"))]
            served = {f for f in vars(cls) if not f.startswith("_")}
            self.assertEqual(served, set(functions), point)
        lines = world(everything()).splitlines()
        self.assertIn(f"    include tephra:scheduler/plugin@{CONTRACT};", lines)
        for point in contract.POINT_FUNCTIONS:
            self.assertIn(f"    export tephra:scheduler/{point}@{CONTRACT};", lines)

    def test_the_builder_fills_every_column(self):
        b = SnapshotBuilder()
        b.task(b.job(b.queue()), [100], "running", b.node("n0", [1000]))
        for column in contract.SNAPSHOT:
            self.assertTrue(hasattr(b.snap, column), column)
        b.session()

    def test_a_delta_brings_every_column(self):
        b = SnapshotBuilder(("cpu",))
        b.task(b.job(b.queue()), [100], "pending", b.node("n0", [1000]))
        s = b.session()
        rows = {"tasks": [0], "task_status": ["RUNNING"], "task_node": [0], "task_started_ms": [7], "nodes": [0],
                "node_used": [100.0], "node_releasing": [0.0], "node_pipelined": [0.0], "residents": [],
                "resident_node": []}
        self.assertEqual(set(rows), set(DELTA_ROWS))
        whole = {c: ([("set", c)] if ty.startswith("list<") else 12345)
                 for c, ty in contract.DELTA.items() if c not in rows}
        s.update(SimpleNamespace(**rows, **whole))
        for column, value in whole.items():
            self.assertEqual(getattr(s.snap, column), value, column)
        self.assertEqual((s.task_status[0], s.snap.task_node[0], s.snap.task_started_ms[0]), ("RUNNING", 0, 7))

    def test_names_are_the_contracts(self):
        statuses = {c.upper() for c in contract.ENUMS["task_status"]}
        self.assertLessEqual(ALLOCATED, statuses)
        votes = set(contract.ENUMS["vote"])
        p, s = Policy(), SnapshotBuilder().session()
        self.assertIn(p.job_pipelined(s, 0), votes)
        self.assertIn(p.evictable(s, contract.ENUMS["eviction_kind"][0], 0, 0, [])[1], votes)
        self.assertEqual(NONE, 0xFFFFFFFF)


if __name__ == "__main__":
    unittest.main()
