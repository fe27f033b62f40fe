"""Unit-test configuration.

gabbi's pytest plugin takes any parametrized test whose id contains a colon
for one of its own YAML tests and fails collection; parametrized values
here often contain colons (``VCPU:2``), so their ids spell it ``=``.
"""

from __future__ import annotations

from typing import Any


def pytest_make_parametrize_id(config: Any, val: Any, argname: str) -> str | None:
    if isinstance(val, str) and ":" in val:
        return val.replace(":", "=")
    return None
