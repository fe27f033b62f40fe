"""What every functional test runs under."""

from __future__ import annotations

from typing import Any

import pytest

from placement import request


@pytest.fixture(autouse=True)
def fast_validation_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every document jsonschema-rs accepts in these tests (the gabbits'
    bodies and query strings, hostile ones included) is one jsonschema
    accepts too: the service takes the first's yes as the answer (see
    placement.request._fast_accepts)."""
    fast_accepts = request._fast_accepts

    def checked(data: Any, schema: Any) -> bool:
        accepted = fast_accepts(data, schema)
        assert not accepted or request._validator(schema).is_valid(data), data
        return accepted

    monkeypatch.setattr(request, "_fast_accepts", checked)
