"""The Python SDK for tephra scheduling policies (the contract `CONTRACT`
names; `contract` lists its points and columns, generated from wit/).

A policy subclasses `Policy` and overrides the points it implements; `serve`
turns it into the classes componentize-py exports (`Session` and one per
point), and `world` into the WIT world the build script compiles against, so
the component exports those points and nothing else. `Session` is the view of
the columnar snapshot, kept current with the host's events and deltas;
`testing.SnapshotBuilder` builds one by hand for unit tests under plain Python.
"""

from .policy import POINTS, Policy, Unfit, implemented
from .session import NONE, Session
from .component import serve, world
from .contract import CONTRACT
from . import contract, resources

__all__ = ["CONTRACT", "NONE", "contract", "POINTS", "Policy", "Session", "Unfit", "implemented", "resources", "serve", "world"]
