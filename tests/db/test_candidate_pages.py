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

    def counted(conn: Any, amounts: Any, count: int, after: int | None = None) -> Any:
        asked.append(count)
        return fitting(conn, amounts, count, after)

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
