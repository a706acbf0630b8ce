"""fair-team: a tephra job-order policy written in Python.

Jobs whose team has used the least recently go first. A job's team is the
namespace of its first task. Recent usage per team comes from the plugin's
arguments:

    - name: fair-team
      arguments:
        usage.team-a: 120
        usage.team-b: 30

The job-order key is the usage of the job's team (a team without an argument
has used 0), so smaller usage sorts first; equal keys defer to the next plugin.
Keys are computed once per session: a job-order call is a list lookup.
"""

import math
from typing import Dict, List

from tephra_sdk import Policy, Session, serve

USAGE_PREFIX = "usage."


def parse_usage(arguments: Dict[str, str]) -> Dict[str, float]:
    """`usage.<team>` arguments as {team: float}; other keys are ignored.

    Raises ValueError naming the argument when a value is not a finite number.
    """
    usage = {}
    for key, value in arguments.items():
        if not key.startswith(USAGE_PREFIX):
            continue
        try:
            amount = float(value.strip())
        except ValueError:
            raise ValueError(f"argument {key}: {value!r} is not a number") from None
        if not math.isfinite(amount):
            raise ValueError(f"argument {key}: {value!r} is not a finite number")
        usage[key[len(USAGE_PREFIX):]] = amount
    return usage


class FairTeam(Policy):
    NAME = "fair-team"
    VERSION = "0.2.0"

    keys: List[float] = []

    def open(self, s: Session, args: Dict[str, str]) -> None:
        usage = parse_usage(args)
        # A job's team: the namespace of its first task ("" without tasks).
        self.keys = [usage.get(s.task_namespace(ts[0]) if ts else "", 0.0) for ts in s.job_tasks]

    def job_order(self, s: Session, job: int) -> float:
        return self.keys[job] if job < len(self.keys) else 0.0


serve(FairTeam, globals())
