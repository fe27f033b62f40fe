"""A search bounded by a limit asks the database for pages of fitting trees
only while the limit is small next to the providers its classes reach
(placement.kept.Kept.pages_pay); past that it reads every state, and
answers the same."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from placement import app
from placement import kept as kept_store
from placement.db.api import Database
from placement.objects.candidates import search
from tests.functional import inprocess
from tests.functional.inprocess import send

HOSTS = 12
QUERY = "/allocation_candidates?resources=VCPU:1,MEMORY_MB:64&limit=%d"


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def cloud(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any, Database]]:
    """Twelve flat hosts, the last one full: an application whose worker
    read every tree as it started, one keeping nothing, their database."""
    with inprocess.migrated(request.param) as (conf, db):
        keeping_nothing = app.build_app(conf, db, kept=kept_store.NOTHING)
        for i in range(HOSTS):
            uuid = "9a6e0000-0000-4000-8000-%012d" % (i + 1)
            assert send(keeping_nothing, "POST", "/resource_providers",
                        {"uuid": uuid, "name": uuid}).status_int == 200
            assert send(keeping_nothing, "PUT", "/resource_providers/%s/inventories" % uuid, {
                "resource_provider_generation": 0,
                "inventories": {"VCPU": {"total": 4, "reserved": 4 if i == HOSTS - 1 else 0},
                                "MEMORY_MB": {"total": 1024}},
            }).status_int == 200
        with db.engine.connect() as conn:
            app.warm(conn)
        yield app.build_app(conf, db), keeping_nothing, db


@pytest.fixture
def pages(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The page sizes the searches asked the database for."""
    asked: list[int] = []
    fitting = search.fitting_states

    def counted(conn: Any, amounts: Any, count: int, after: int | None = None,
                below: bool = False) -> Any:
        asked.append(count)
        return fitting(conn, amounts, count, after, below)

    monkeypatch.setattr(search, "fitting_states", counted)
    return asked


@pytest.mark.parametrize("limit, paged", [
    (1, True),      # 8 x 1 <= 12 providers: a page of fitting trees
    (2, False),     # 8 x 2 > 12: every state, judged by the worker
    (50, False),
])
def test_a_large_limit_reads_every_state_and_answers_alike(
        cloud: tuple[Any, Any, Database], pages: list[int], limit: int,
        paged: bool) -> None:
    served, keeping_nothing, _db = cloud
    answer = send(served, "GET", QUERY % limit, version="1.39")
    assert answer.status_int == 200
    assert bool(pages) is paged
    del pages[:]
    # A worker keeping nothing knows no reach: it pages, as before.
    alike = send(keeping_nothing, "GET", QUERY % limit, version="1.39")
    assert pages
    assert answer.body == alike.body
    assert len(answer.json["allocation_requests"]) == min(limit, HOSTS - 1)


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """What the searches asked the database for, in turn: ("page", the
    root it started after) or ("page and below", that root, up to which
    every tree's state was read too)."""
    asked: list[tuple[str, Any]] = []
    fitting = search.fitting_states

    def page(conn: Any, amounts: Any, count: int, after: int | None = None,
             below: bool = False) -> Any:
        asked.append(("page and below" if below else "page", after))
        return fitting(conn, amounts, count, after, below)

    monkeypatch.setattr(search, "fitting_states", page)
    return asked


def test_full_trees_below_the_first_fitting_one_are_judged_by_the_worker(
        cloud: tuple[Any, Any, Database], starts: list[tuple[str, Any]]) -> None:
    """Claims fill the hosts in the order a search lists them; a search
    then reads the states of the trees below the first one that fitted
    last time and judges them itself, and answers as a worker keeping
    nothing does, whatever frees or adds room below that tree."""
    served, keeping_nothing, _db = cloud
    query = QUERY % 1

    def first_host() -> str:
        answer = send(served, "GET", query, version="1.39")
        assert answer.status_int == 200
        assert answer.body == send(keeping_nothing, "GET", query, version="1.39").body
        (request,) = answer.json["allocation_requests"]
        (host,) = request["allocations"]
        return str(host)

    def claim(host: str, consumer: str) -> None:
        assert send(served, "PUT", "/allocations/" + consumer, {
            "allocations": {host: {"resources": {"VCPU": 1, "MEMORY_MB": 64}}},
            "consumer_generation": None, "project_id": "p", "user_id": "u",
        }, version="1.28").status_int == 204

    hosts = []
    consumers: dict[str, list[str]] = {}
    for n in range(12):
        host = first_host()
        hosts.append(host)
        consumer = "c1a10000-0000-4000-8000-%012d" % n
        consumers.setdefault(host, []).append(consumer)
        claim(host, consumer)
    first, second, third = sorted(set(hosts))
    assert hosts == [first] * 4 + [second] * 4 + [third] * 4
    del starts[:]
    fourth = first_host()
    assert fourth > third
    # The first page starts at the tree that fitted first last time (the
    # third host's, found full now by the database), the trees below it
    # judged by the worker; the worker keeping nothing starts at the first.
    assert starts == [("page and below", starts[0][1]), ("page", None)]
    assert starts[0][1] is not None

    # One claim on the second host deleted: room below the first fitting tree.
    assert send(served, "DELETE", "/allocations/" + consumers[second][0]).status_int == 204
    assert first_host() == second
    claim(second, "c1a10000-0000-4000-8000-000000000099")
    assert first_host() == fourth

    # More VCPU on the first host, a generation bump below the start.
    inventories = send(served, "GET", "/resource_providers/%s/inventories" % first).json
    assert send(served, "PUT", "/resource_providers/%s/inventories" % first, {
        "resource_provider_generation": inventories["resource_provider_generation"],
        "inventories": {"VCPU": {"total": 5}, "MEMORY_MB": {"total": 1024}},
    }).status_int == 200
    assert first_host() == first
