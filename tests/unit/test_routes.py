"""The router matches a request's path once, however many layers ask."""

from __future__ import annotations

from typing import Any

import pytest

from placement import errors
from placement.routes import MATCH_ENVIRON, Router


class _CountingRouter(Router):
    def __init__(self) -> None:
        super().__init__()
        self.matches: list[str] = []
        mapper_match = self._mapper.match

        def counted(path: str) -> Any:
            self.matches.append(path)
            return mapper_match(path)

        self._mapper.match = counted


UUID = "7b6d4b3b-64b4-4b4f-9f8c-7d6a5e4f3b2a"


def test_one_match_serves_authentication_dispatch_and_metrics() -> None:
    router = _CountingRouter()
    environ = {"PATH_INFO": "/allocations/" + UUID}
    assert not router.is_public(environ)
    assert not router.is_metrics(environ)
    route, _handler, urlvars = router.resolve(
        environ, "PUT", environ["PATH_INFO"], (1, 39))
    assert router.template(environ) == "/allocations/{consumer_uuid}"
    assert (route.handler, urlvars) == (
        "allocation:set_allocations_for_consumer", {"consumer_uuid": UUID})
    assert router.matches == ["/allocations/" + UUID]


def test_a_path_other_than_the_one_matched_is_matched_afresh() -> None:
    # Dispatch matches the path decoded as UTF-8 text; PATH_INFO holds
    # its bytes one character each, so the two differ, and each is
    # answered for itself.
    router = _CountingRouter()
    raw = "/traits/CUSTOM_\xc3\xa9"
    environ = {"PATH_INFO": raw}
    assert not router.is_public(environ)
    route, _handler, urlvars = router.resolve(environ, "GET", "/traits/CUSTOM_é", (1, 39))
    assert urlvars == {"name": "CUSTOM_é"}
    assert router.matches == [raw, "/traits/CUSTOM_é"]
    assert environ[MATCH_ENVIRON][0] == "/traits/CUSTOM_é"


def test_handlers_get_urlvars_of_their_own() -> None:
    router = Router()
    environ = {"PATH_INFO": "/resource_providers/" + UUID}
    _route, _handler, first = router.resolve(environ, "GET", environ["PATH_INFO"], (1, 39))
    first["uuid"] = "changed"
    _route, _handler, again = router.resolve(environ, "GET", environ["PATH_INFO"], (1, 39))
    assert again == {"uuid": UUID}


def test_an_unknown_path_is_remembered_as_unknown() -> None:
    router = _CountingRouter()
    environ = {"PATH_INFO": "/nowhere"}
    assert not router.is_public(environ)
    with pytest.raises(errors.NotFound):
        router.resolve(environ, "GET", "/nowhere", (1, 39))
    assert router.template(environ) is None
    assert router.matches == ["/nowhere"]
