"""Allocations taken away are seen by the next search of the same worker.

Taking allocations away changes a provider's usage without a generation
bump on most paths; a worker keeping trees and usage (``placement/kept``)
learns of it only through the provider's count of removals
(``placement/db/allocation_removals.py``).  Each test fills a host through
the API, lets the worker keep it full, takes the allocation away by one
API path, and asks again through the same worker.
"""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Any, Callable, Iterator

import pytest
import sqlalchemy as sa
import webob

from placement import kept
from placement.db import tables
from placement.db.api import Database
from tests.functional import inprocess
from tests.functional.inprocess import send

PROJECT = "a0000000-0000-4000-8000-00000000000a"
USER = "a0000000-0000-4000-8000-00000000000b"
# Writes at a microversion with consumer generations and without
# consumer types (which 1.38 makes required).
WRITE_VERSION = "1.36"

_names = itertools.count()


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "mysql"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Database]]:
    with inprocess.served(request.param) as both:
        yield both


def _ok(application: Any, method: str, path: str, body: Any = None,
        version: str = WRITE_VERSION, roles: str | None = None) -> Any:
    if roles is None:
        resp = send(application, method, path, body, version=version)
    else:
        req = webob.Request.blank(path, method=method, headers={
            "X-Auth-Token": "admin", "X-Roles": roles, "Accept": "application/json",
            "OpenStack-API-Version": "placement " + version})
        req.content_type = "application/json"
        req.body = json.dumps(body).encode()
        resp = req.get_response(application)
    assert resp.status_int < 300, (method, path, resp.status, resp.text)
    return resp.json if resp.body else None


class Hosts:
    """Two hosts with 4 of a class of their own; a consumer holds all of
    host ``full``, host ``free`` holds nothing."""

    def __init__(self, application: Any) -> None:
        self.app = application
        self.resource_class = "CUSTOM_REMOVED_%d" % next(_names)
        _ok(application, "PUT", "/resource_classes/" + self.resource_class)
        self.full, self.free = self._host(), self._host()
        self.consumer = str(uuid.uuid4())
        _ok(application, "PUT", "/allocations/" + self.consumer,
            self.claim({self.full: 4}, None))

    def _host(self) -> str:
        rp = str(uuid.uuid4())
        _ok(self.app, "POST", "/resource_providers", {"uuid": rp, "name": rp})
        _ok(self.app, "PUT", "/resource_providers/%s/inventories" % rp, {
            "resource_provider_generation": 0,
            "inventories": {self.resource_class: {"total": 4}}})
        return rp

    def claim(self, amounts: dict[str, int], generation: int | None
              ) -> dict[str, Any]:
        return {"allocations": {rp: {"resources": {self.resource_class: amount}}
                                for rp, amount in amounts.items()},
                "project_id": PROJECT, "user_id": USER,
                "consumer_generation": generation}

    def consumer_generation(self) -> int:
        return int(_ok(self.app, "GET", "/allocations/" + self.consumer)[
            "consumer_generation"])

    def generation(self, rp: str) -> int:
        return int(_ok(self.app, "GET", "/resource_providers/" + rp)["generation"])

    def candidates(self) -> list[set[str]]:
        """Who can take 4, without a limit and with one (which reads the
        trees a batch at a time): sets of host uuids."""
        found = []
        for limit in ("", "&limit=1"):
            body = _ok(self.app, "GET", "/allocation_candidates?resources=%s:4%s"
                       % (self.resource_class, limit), version="1.36")
            found.append({rp for request in body["allocation_requests"]
                          for rp in request["allocations"]})
        return found


def _delete(hosts: Hosts) -> None:
    _ok(hosts.app, "DELETE", "/allocations/" + hosts.consumer)


def _empty_put(hosts: Hosts) -> None:
    _ok(hosts.app, "PUT", "/allocations/" + hosts.consumer,
        hosts.claim({}, hosts.consumer_generation()))


def _empty_post(hosts: Hosts) -> None:
    _ok(hosts.app, "POST", "/allocations",
        {hosts.consumer: hosts.claim({}, hosts.consumer_generation())})


def _put_elsewhere(hosts: Hosts) -> None:
    _ok(hosts.app, "PUT", "/allocations/" + hosts.consumer,
        hosts.claim({hosts.free: 4}, hosts.consumer_generation()))


def _post_elsewhere(hosts: Hosts) -> None:
    _ok(hosts.app, "POST", "/allocations",
        {hosts.consumer: hosts.claim({hosts.free: 4}, hosts.consumer_generation())})


def _reshape_elsewhere(hosts: Hosts) -> None:
    # The inventory reshaped is the free host's, so that the full one's
    # generation stays: only its count of removals tells.
    _ok(hosts.app, "POST", "/reshaper", {
        "inventories": {hosts.free: {
            "resource_provider_generation": hosts.generation(hosts.free),
            "inventories": {hosts.resource_class: {"total": 4}}}},
        "allocations": {hosts.consumer: hosts.claim(
            {hosts.free: 4}, hosts.consumer_generation())},
    }, roles="admin,service")


# (path, moves the consumer to the free host, bumps the full host's generation)
PATHS = [
    (_delete, False, False),
    (_empty_put, False, True),
    (_empty_post, False, True),
    (_put_elsewhere, True, False),
    (_post_elsewhere, True, False),
    (_reshape_elsewhere, True, False),
]


@pytest.mark.parametrize("take_away, moves, bumps", PATHS,
                         ids=[path[0].__name__.strip("_") for path in PATHS])
def test_the_next_search_sees_allocations_taken_away(
        served: tuple[Any, Database], take_away: Callable[[Hosts], None],
        moves: bool, bumps: bool) -> None:
    application, db = served
    hosts = Hosts(application)
    assert hosts.candidates() == [{hosts.free}, {hosts.free}]
    # The worker now keeps the full host's tree and usage.
    assert kept.of(db.engine).trees
    generation = hosts.generation(hosts.full)

    take_away(hosts)

    expected = {hosts.full} if moves else {hosts.full, hosts.free}
    assert hosts.candidates() == [expected, {hosts.full}]
    assert (hosts.generation(hosts.full) != generation) == bumps
    with db.reader() as conn:
        removals = conn.execute(sa.select(tables.allocation_removals.c.removals).where(
            tables.allocation_removals.c.resource_provider_id == sa.select(
                tables.resource_providers.c.id).where(
                    tables.resource_providers.c.uuid == hosts.full
                ).scalar_subquery())).scalar_one()
    assert removals == 1


def test_a_deleted_provider_takes_its_count_along(served: tuple[Any, Database]) -> None:
    application, db = served
    hosts = Hosts(application)
    _delete(hosts)
    _ok(application, "DELETE", "/resource_providers/" + hosts.full)
    with db.reader() as conn:
        left = conn.execute(sa.select(sa.func.count()).select_from(
            tables.allocation_removals).where(
                tables.allocation_removals.c.resource_provider_id.not_in(
                    sa.select(tables.resource_providers.c.id)))).scalar_one()
    assert left == 0


def test_each_host_a_consumer_leaves_counts_once(served: tuple[Any, Database]) -> None:
    # Several providers counted in one statement (a multi-row upsert; on
    # MySQL PyMySQL rewrites it into one INSERT).
    application, db = served
    hosts = Hosts(application)
    _ok(application, "PUT", "/allocations/" + hosts.consumer,
        hosts.claim({hosts.full: 2, hosts.free: 2}, hosts.consumer_generation()))
    _delete(hosts)
    removals = tables.allocation_removals
    with db.reader() as conn:
        counts = conn.execute(
            sa.select(tables.resource_providers.c.uuid, removals.c.removals)
            .join(removals, removals.c.resource_provider_id
                  == tables.resource_providers.c.id)
            .where(tables.resource_providers.c.uuid.in_([hosts.full, hosts.free]))
        ).all()
    # The full host lost the first claim when the consumer was replaced.
    assert dict(counts) == {hosts.full: 2, hosts.free: 1}
    assert hosts.candidates() == [{hosts.full, hosts.free}, {hosts.full}]
