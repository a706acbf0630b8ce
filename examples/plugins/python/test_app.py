"""Unit tests of fair-team under plain Python (python3 -m unittest)."""

import unittest

from app import FairTeam, parse_usage
from tephra_sdk import implemented
from tephra_sdk.testing import SnapshotBuilder


class FairTeamTest(unittest.TestCase):
    def test_jobs_of_teams_that_used_less_go_first(self):
        b = SnapshotBuilder()
        b.node("solo", [8000, 16e9, 110])
        q = b.queue()
        jobs = [b.job(q) for _ in range(3)]
        for j, team in zip(jobs, ["team-a", "team-b", "team-c"]):
            b.task(j, [1000, 1e9, 1], namespace=team)
        s, p = b.session(), FairTeam()
        p.open(s, {"usage.team-a": "120", "usage.team-b": "30"})
        self.assertEqual([p.job_order(s, j) for j in jobs], [120.0, 30.0, 0.0])

    def test_a_bad_usage_is_refused_with_its_argument(self):
        with self.assertRaisesRegex(ValueError, "argument usage.x: 'lots' is not a number"):
            parse_usage({"usage.x": "lots"})

    def test_it_implements_job_order_only(self):
        self.assertEqual(implemented(FairTeam), ["job-order"])


if __name__ == "__main__":
    unittest.main()
