"""Builds the gabbi tests of ``gabbits/`` for one backend."""

from __future__ import annotations

import os

import pytest
from gabbi import driver

from tests.functional import fixtures

GABBITS = os.path.join(os.path.dirname(__file__), "..", "..", "gabbits")


def generate(metafunc: pytest.Metafunc, backend: str, loader_name: str) -> None:
    driver.py_test_generator(
        GABBITS,
        intercept=fixtures.intercept,
        fixture_module=fixtures.module_for(backend),
        test_loader_name=loader_name,
        metafunc=metafunc,
    )
