"""The Python SDK under plain Python: python3 -m unittest discover -s tests."""

import unittest
from types import SimpleNamespace

from tephra_sdk import CONTRACT, NONE, Policy, implemented, world
from tephra_sdk.testing import SnapshotBuilder, event


def cluster(after: bool):
    """Tasks moved by events; `after`: the snapshot the events lead to."""
    moves = [
        (("pending", NONE), ("allocated", 1)),
        (("pipelined", 0), ("allocated", 0)),
        (("running", 1), ("releasing", 1)),
        (("allocated", 0), ("pending", NONE)),
    ]
    b = SnapshotBuilder(("cpu", "memory"))
    b.node("n0", [8000, 16e9])
    b.node("n1", [8000, 16e9])
    j = b.job(b.queue(), 2)
    for i, (before, later) in enumerate(moves):
        status, node = later if after else before
        b.task(j, [100 * (i + 1), 1e9], status, node)
    return b, moves


class SessionTest(unittest.TestCase):
    def test_events_bring_the_session_to_the_snapshot_they_describe(self):
        b, moves = cluster(False)
        s = b.session()
        for t, (_, (status, node)) in enumerate(moves):
            old = s.apply(event(t, node, status))
            self.assertEqual(old[0], moves[t][0][0].upper())
        want = cluster(True)[0].session()
        self.assertEqual(s.task_status, want.task_status)
        self.assertEqual(s.node_used, want.node_used)
        self.assertEqual(s.node_releasing, want.node_releasing)
        self.assertEqual(s.node_pipelined, want.node_pipelined)
        self.assertEqual(s.node_releasing, [0.0, 0.0, 300.0, 1e9])

    def test_a_delta_moves_tasks_and_rows(self):
        b, _ = cluster(False)
        s = b.session()
        delta = SimpleNamespace(
            now_ms=5, tasks=[0], task_status=["RUNNING"], task_node=[1], task_started_ms=[5],
            nodes=[1], node_used=[100.0, 1e9], node_releasing=[0.0, 0.0], node_pipelined=[0.0, 0.0],
            residents=[], resident_node=[], node_locked_job=[NONE, NONE], node_locked_queue=[NONE, NONE],
            job_phase=["RUNNING"], reservation_targets=[])
        s.update(delta)
        self.assertEqual((s.task_status[0], s.task_node(0), s.node_used[2:4], s.snap.now_ms),
                         ("RUNNING", 1, [100.0, 1e9], 5))
        delta.tasks = [99]
        with self.assertRaisesRegex(ValueError, "does not fit"):
            s.update(delta)


class ViewsTest(unittest.TestCase):
    def test_views_read_the_columns_they_name(self):
        b = SnapshotBuilder(("cpu", "memory", "pods", "nvidia.com/gpu"))
        n = b.node("gpu-1", [8000, 32e9, 110, 4000], {"zone": "east"})
        q = b.queue(2.0)
        j = b.job(q, 1)
        t = b.task(j, [1000, 1e9, 1, 1000], "running", n)
        b.task(j, [500, 0, 1, 0])
        s = b.session()
        node = s.node(n)
        self.assertEqual((node.name(), node.label("zone"), node.label("rack")), ("gpu-1", "east", None))
        self.assertEqual((node.idle().cpu(), node.idle().get("nvidia.com/gpu"), node.used().memory()),
                         (7000.0, 3000.0, 1e9))
        self.assertEqual(node.idle().row(), [7000.0, 31e9, 109.0, 3000.0])
        task = s.task(t)
        self.assertEqual((task.job().id, task.node().id, task.request().pods(), task.status()), (j, n, 1.0, "RUNNING"))
        self.assertIsNone(s.task(t + 1).node())
        self.assertEqual((s.job(j).queue().weight(), len(s.job(j).tasks())), (2.0, 2))
        self.assertEqual([x.id for x in s.queue(q).jobs()], [j])
        self.assertIsNone(s.queue(q).parent())

    def test_hypernode_views_walk_up_to_the_cluster(self):
        b = SnapshotBuilder()
        n = b.node("n1", [8000, 32e9, 110])
        other = b.node("n2", [8000, 32e9, 110])
        spine = b.hypernode("spine-0", 2)
        b.hypernode("rack-0", 1, spine, [n])
        s = b.session()
        rack = s.node(n).hypernode()
        self.assertEqual((rack.name(), rack.tier()), ("rack-0", 1))
        self.assertEqual((rack.parent().name(), rack.parent().tier()), ("spine-0", 2))
        cluster = rack.parent().parent()
        self.assertEqual((cluster.id, cluster.tier(), cluster.parent()), (0, 3, None))
        self.assertEqual(s.node(other).hypernode().id, 0)


class PointsTest(unittest.TestCase):
    def test_the_points_are_the_methods_overridden(self):
        class Gate(Policy):
            def job_enqueueable(self, s, job):
                return "reject"

            def node_score(self, s, task, node):
                return 1.0

        self.assertEqual(implemented(Gate), ["node-order", "job-enqueueable"])
        self.assertIn(f"export tephra:scheduler/node-order@{CONTRACT};", world(Gate))
        self.assertEqual(implemented(Policy), [])


if __name__ == "__main__":
    unittest.main()
