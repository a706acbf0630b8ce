"""Resource rows: lists of floats over the snapshot's `dims` (cpu in
millicores, memory in bytes, pods, then scalars in milli-units)."""

from typing import List, Sequence

# Volcano's tolerance when comparing amounts (resource_info.go minResource).
EPSILON = 0.1


def add(a: Sequence[float], b: Sequence[float]) -> List[float]:
    return [x + y for x, y in zip(a, b)]


def sub(a: Sequence[float], b: Sequence[float]) -> List[float]:
    return [x - y for x, y in zip(a, b)]


def fits(request: Sequence[float], idle: Sequence[float]) -> bool:
    """Whether `request` fits in `idle` in every dimension."""
    return all(r <= i + EPSILON for r, i in zip(request, idle))


def is_empty(row: Sequence[float]) -> bool:
    """No dimension asks for anything (a best-effort request)."""
    return all(x <= EPSILON for x in row)


def share(used: Sequence[float], total: Sequence[float]) -> float:
    """The dominant share: the largest used/total over dimensions with a total."""
    return max((u / t for u, t in zip(used, total) if t > 0), default=0.0)
