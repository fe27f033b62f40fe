"""The names of the headers placement adds, spelled as OpenStack Placement
spells them.

Header names are case-insensitive in HTTP, so gabbi (and every client)
cannot tell ``Vary`` from ``vary``; a proxy log, a capture or a tool that
diffs two servers' responses byte for byte can.  Placement writes its
version headers and a 405's ``allow`` in lower case; so do we, on
successes and on errors, before and after microversion 1.15 (whose
caching headers keep their usual spelling).
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from tests.functional import inprocess

UUID = "7d5bbd6c-3a53-4d69-9a7a-0a3a2f3b8e51"


@pytest.fixture(scope="module")
def application() -> Iterator[Any]:
    with inprocess.application("sqlite") as served:
        yield served


def _names(application: Any, method: str, path: str, version: str) -> list[str]:
    resp = inprocess.send(application, method, path, version=version)
    return [name for name, _value in resp.headerlist]


@pytest.mark.parametrize("method, path, version, expected", [
    ("GET", "/", "1.0", ["openstack-api-version", "vary"]),
    ("GET", "/", "1.15", ["openstack-api-version", "vary", "Cache-Control",
                          "Last-Modified"]),
    ("GET", "/resource_providers", "1.14", ["openstack-api-version", "vary"]),
    ("GET", "/resource_providers", "1.39", ["openstack-api-version", "vary",
                                            "Cache-Control", "Last-Modified"]),
    # A 404 of a missing provider carries no vary, as in Placement.
    ("GET", "/resource_providers/" + UUID, "1.39", ["openstack-api-version"]),
    ("PUT", "/", "1.39", ["openstack-api-version", "vary", "allow"]),
])
def test_header_names_are_spelled_as_placement_spells_them(
        application: Any, method: str, path: str, version: str,
        expected: list[str]) -> None:
    names = _names(application, method, path, version)
    for name in expected:
        assert name in names, names
    # No second spelling of the same header.
    lowered = [name.lower() for name in names]
    assert len(lowered) == len(set(lowered)), names


def test_a_404_carries_no_vary(application: Any) -> None:
    names = _names(application, "GET", "/resource_providers/" + UUID, "1.39")
    assert "vary" not in [name.lower() for name in names], names
