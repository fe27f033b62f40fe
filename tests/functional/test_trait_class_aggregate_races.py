"""Concurrent writers of traits, resource classes and aggregates.

Several threads send the same kind of request at once through the whole
application, on every backend.  Whoever loses a race to create the same
trait, class or aggregate row must get the answer upstream gives (204 for
an idempotent PUT, 409 for a duplicate POST), never a 500; writers that
raced on one provider's generation must get exactly one success and 409
``placement.concurrent_update`` for the rest.
"""

from __future__ import annotations

import threading
import uuid as uuidlib
from typing import Any, Iterator

import pytest
import webob

from tests.functional import inprocess

WRITERS = 8


# One database per backend for the module; each test uses names of its own.
@pytest.fixture(scope="module", params=["sqlite", "postgresql", "mysql"])
def application(request: pytest.FixtureRequest) -> Iterator[Any]:
    with inprocess.application(request.param) as application:
        yield application




def _at_once(count: int, send: Any) -> list[webob.Response]:
    """Run ``send(i)`` in ``count`` threads released together."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = send(index)
        except BaseException as exc:  # reported below, with the others
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _statuses(responses: list[webob.Response]) -> list[int]:
    return sorted(resp.status_int for resp in responses)


def _create_provider(application: Any) -> str:
    uuid = str(uuidlib.uuid4())
    resp = inprocess.send(application, "POST", "/resource_providers",
                 {"name": "racer-" + uuid, "uuid": uuid})
    assert resp.status_int == 200, resp.text
    return uuid


def test_creating_one_trait_at_once(application: Any) -> None:
    results = _at_once(WRITERS, lambda i: inprocess.send(
        application, "PUT", "/traits/CUSTOM_RACE"))
    assert _statuses(results) == [201] + [204] * (WRITERS - 1)
    assert all(r.location.endswith("/traits/CUSTOM_RACE") for r in results)


def test_creating_one_resource_class_at_once_with_put(application: Any) -> None:
    results = _at_once(WRITERS, lambda i: inprocess.send(
        application, "PUT", "/resource_classes/CUSTOM_RACE_PUT", version="1.7"))
    assert _statuses(results) == [201] + [204] * (WRITERS - 1)


def test_creating_one_resource_class_at_once_with_post(application: Any) -> None:
    results = _at_once(WRITERS, lambda i: inprocess.send(
        application, "POST", "/resource_classes", {"name": "CUSTOM_RACE_POST"}))
    assert _statuses(results) == [201] + [409] * (WRITERS - 1)
    for resp in results:
        if resp.status_int == 409:
            assert "Conflicting resource class already exists" in resp.text


def test_many_providers_join_one_new_aggregate_at_once(application: Any) -> None:
    uuids = [_create_provider(application) for _ in range(WRITERS)]
    aggregate = "a99e0000-0000-4000-8000-000000000001"
    results = _at_once(WRITERS, lambda i: inprocess.send(
        application, "PUT", "/resource_providers/%s/aggregates" % uuids[i],
        {"aggregates": [aggregate], "resource_provider_generation": 0}))
    assert _statuses(results) == [200] * WRITERS, [r.text for r in results]
    for uuid in uuids:
        resp = inprocess.send(application, "GET", "/resource_providers/%s/aggregates" % uuid)
        assert resp.json == {"aggregates": [aggregate],
                             "resource_provider_generation": 1}


def test_racing_on_one_providers_traits(application: Any) -> None:
    uuid = _create_provider(application)
    results = _at_once(WRITERS, lambda i: inprocess.send(
        application, "PUT", "/resource_providers/%s/traits" % uuid,
        {"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 0}))
    assert _statuses(results) == [200] + [409] * (WRITERS - 1)
    for resp in results:
        if resp.status_int == 409:
            assert resp.json["errors"][0]["code"] == "placement.concurrent_update"
    resp = inprocess.send(application, "GET", "/resource_providers/%s/traits" % uuid)
    assert resp.json == {"traits": ["HW_CPU_X86_AVX2"],
                         "resource_provider_generation": 1}


def test_racing_on_one_providers_aggregates(application: Any) -> None:
    uuid = _create_provider(application)
    results = _at_once(WRITERS, lambda i: inprocess.send(
        application, "PUT", "/resource_providers/%s/aggregates" % uuid,
        {"aggregates": ["a99e0000-0000-4000-8000-1%011d" % i],
         "resource_provider_generation": 0}))
    assert _statuses(results) == [200] + [409] * (WRITERS - 1)
    winner = next(r for r in results if r.status_int == 200)
    resp = inprocess.send(application, "GET", "/resource_providers/%s/aggregates" % uuid)
    assert resp.json == winner.json


def test_racing_deletes_of_one_providers_traits(application: Any) -> None:
    uuid = _create_provider(application)
    resp = inprocess.send(application, "PUT", "/resource_providers/%s/traits" % uuid,
                 {"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": 0})
    assert resp.status_int == 200, resp.text
    results = _at_once(WRITERS, lambda i: inprocess.send(
        application, "DELETE", "/resource_providers/%s/traits" % uuid))
    # Losers of a race for the same generation get 409, never a 500.
    assert set(_statuses(results)) <= {204, 409}
    assert 204 in _statuses(results)
    resp = inprocess.send(application, "GET", "/resource_providers/%s/traits" % uuid)
    assert resp.json["traits"] == []
    # Exactly one delete emptied the set and bumped the generation; deleting
    # an already empty set changes nothing, generation included.
    assert resp.json["resource_provider_generation"] == 2


def test_racing_pre_1_19_aggregate_writers(application: Any) -> None:
    uuid = _create_provider(application)
    shared = "a99e0000-0000-4000-8000-00000000aaaa"
    results = _at_once(WRITERS, lambda i: inprocess.send(
        application, "PUT", "/resource_providers/%s/aggregates" % uuid,
        [shared, "a99e0000-0000-4000-8000-1%011d" % i], version="1.18"))
    # Without generations the last writer wins; nobody fails.
    assert _statuses(results) == [200] * WRITERS, [r.text for r in results]
    resp = inprocess.send(application, "GET", "/resource_providers/%s/aggregates" % uuid,
                 version="1.18")
    assert shared in resp.json["aggregates"]
    assert len(resp.json["aggregates"]) == 2
