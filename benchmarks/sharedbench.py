"""Finding and importing the shared benchmark kit (``../shared/bench``).

The kit lives beside the repository (in CI and on developer machines) and is
not a Python package on the path, so it is imported by location: the
``--shared-bench`` option, else ``$PLACEMENT_SHARED_BENCH``, else
``<repo>/../shared/bench``.  Call ``activate()`` once before importing any
module of this package that uses ``benchlib``.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIR = os.path.join(os.path.dirname(REPO_ROOT), "shared", "bench")

_active_dir: Optional[str] = None


def locate(explicit: Optional[str] = None) -> str:
    """The kit's directory; exits with a hint when it is missing."""
    path = explicit or os.environ.get("PLACEMENT_SHARED_BENCH") or DEFAULT_DIR
    path = os.path.abspath(path)
    if not os.path.isfile(os.path.join(path, "benchlib", "scenarios.py")):
        raise SystemExit(
            "shared benchmark kit not found in %s (expected benchlib/ and "
            "wide_trees.py there); pass --shared-bench DIR or set "
            "PLACEMENT_SHARED_BENCH" % path)
    return path


def activate(explicit: Optional[str] = None) -> str:
    """Put the kit on ``sys.path`` so ``import benchlib`` works."""
    global _active_dir
    path = locate(explicit)
    if path not in sys.path:
        sys.path.insert(0, path)
    _active_dir = path
    return path


def directory() -> str:
    """The activated kit directory (activating the default one if needed)."""
    return _active_dir or activate()


def wide_trees_script() -> str:
    return os.path.join(directory(), "wide_trees.py")
