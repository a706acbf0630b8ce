"""`python -m tephra_sdk world MODULE`: the WIT world of the policy MODULE
serves (what the build compiles against: the points it implements)."""

import importlib
import sys

from .component import world


def main(argv) -> int:
    if len(argv) != 2 or argv[0] != "world":
        print("usage: python -m tephra_sdk world MODULE", file=sys.stderr)
        return 2
    module = importlib.import_module(argv[1])
    cls = getattr(module, "__tephra_policy__", None)
    if cls is None:
        print(f"tephra_sdk: module {argv[1]} serves no policy (call tephra_sdk.serve(YourPolicy, globals()))",
              file=sys.stderr)
        return 1
    sys.stdout.write(world(cls))
    return 0


sys.exit(main(sys.argv[1:]))
