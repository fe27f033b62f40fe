"""Builds the gabbi tests of ``gabbits/`` for one backend.

``PLACEMENT_GABBITS`` (comma separated file name globs, e.g.
``inventory*,traits.yaml``) limits a run to some files while developing.
"""

from __future__ import annotations

import fnmatch
import os
import tempfile

import pytest
from gabbi import driver

from tests.functional import fixtures

GABBITS = os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", "gabbits"))


def _directory() -> str:
    patterns = [p.strip() for p in os.environ.get("PLACEMENT_GABBITS", "").split(",")
                if p.strip()]
    if not patterns:
        return GABBITS
    chosen = tempfile.mkdtemp(prefix="gabbits-")
    for name in sorted(os.listdir(GABBITS)):
        if any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(name, p + ".yaml")
               for p in patterns):
            os.symlink(os.path.join(GABBITS, name), os.path.join(chosen, name))
    # Request bodies the files read with ``<@data/...``.
    os.symlink(os.path.join(GABBITS, "data"), os.path.join(chosen, "data"))
    return chosen


def generate(metafunc: pytest.Metafunc, backend: str, loader_name: str) -> None:
    driver.py_test_generator(
        _directory(),
        intercept=fixtures.intercept,
        fixture_module=fixtures.module_for(backend),
        test_loader_name=loader_name,
        metafunc=metafunc,
    )
