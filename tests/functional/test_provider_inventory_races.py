"""Concurrent writers of providers and inventories, on every backend.

Threads released together send conflicting requests through the whole
application.  Of writers that used the same generation exactly one may
win; the losers get 409 ``placement.concurrent_update``.  Writes that
exclude each other (a child under a parent being deleted, an allocation
on inventory being removed, on a provider being deleted) must never both
succeed.  Nothing may answer 500.
"""

from __future__ import annotations

import functools
import uuid as uuidlib
from typing import Any, Iterator

import pytest
import webob

from tests.functional.threads import together
from tests.functional import inprocess

WRITERS = 6
ROUNDS = 8


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "mysql"])
def placement_app(request: pytest.FixtureRequest) -> Iterator[Any]:
    with inprocess.application(request.param) as application:
        yield application




def new_provider(application: Any, parent: str | None = None) -> str:
    uuid = str(uuidlib.uuid4())
    body: dict[str, Any] = {"name": "rp-" + uuid, "uuid": uuid}
    if parent:
        body["parent_provider_uuid"] = parent
    assert inprocess.send(application, "POST", "/resource_providers", body).status_int == 200
    return uuid


def set_inventory(application: Any, uuid: str, generation: int,
                  inventories: dict[str, Any]) -> None:
    resp = inprocess.send(application, "PUT", "/resource_providers/%s/inventories" % uuid,
                {"resource_provider_generation": generation,
                 "inventories": inventories})
    assert resp.status_int == 200, resp.text


def claim(application: Any, provider: str, resources: dict[str, int]
          ) -> webob.Response:
    return inprocess.send(application, "PUT", "/allocations/%s" % uuidlib.uuid4(), {
        "allocations": {provider: {"resources": resources}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
    }, version="1.28")


def codes(responses: list[webob.Response]) -> list[str]:
    return [resp.json["errors"][0]["code"] for resp in responses]


def generation(application: Any, uuid: str) -> int:
    return int(inprocess.send(application, "GET", "/resource_providers/" + uuid).json["generation"])


def test_replacing_inventories_with_one_generation(placement_app: Any) -> None:
    uuid = new_provider(placement_app)
    responses = together(*[
        (lambda total=total: inprocess.send(
            placement_app, "PUT", "/resource_providers/%s/inventories" % uuid,
            {"resource_provider_generation": 0,
             "inventories": {"VCPU": {"total": total}}}))
        for total in range(1, WRITERS + 1)])
    winners = [r for r in responses if r.status_int == 200]
    losers = [r for r in responses if r.status_int != 200]
    assert len(winners) == 1
    assert {r.status_int for r in losers} == {409}
    assert set(codes(losers)) == {"placement.concurrent_update"}
    stored = inprocess.send(placement_app, "GET", "/resource_providers/%s/inventories" % uuid).json
    assert stored["resource_provider_generation"] == 1
    assert stored["inventories"]["VCPU"]["total"] == \
        winners[0].json["inventories"]["VCPU"]["total"]


def test_updating_one_inventory_with_one_generation(placement_app: Any) -> None:
    uuid = new_provider(placement_app)
    set_inventory(placement_app, uuid, 0, {"DISK_GB": {"total": 10}})
    responses = together(*[
        (lambda total=total: inprocess.send(
            placement_app, "PUT", "/resource_providers/%s/inventories/DISK_GB" % uuid,
            {"resource_provider_generation": 1, "total": total}))
        for total in range(20, 20 + WRITERS)])
    assert sorted(r.status_int for r in responses) == [200] + [409] * (WRITERS - 1)
    assert generation(placement_app, uuid) == 2


def test_adding_the_same_class(placement_app: Any) -> None:
    uuid = new_provider(placement_app)
    responses = together(*[
        (lambda: inprocess.send(placement_app, "POST",
                      "/resource_providers/%s/inventories" % uuid,
                      {"resource_class": "MEMORY_MB", "total": 1024}))
        for _ in range(WRITERS)])
    assert sorted(r.status_int for r in responses) == [201] + [409] * (WRITERS - 1)
    assert set(codes([r for r in responses if r.status_int == 409])) == {
        "placement.concurrent_update"}
    assert generation(placement_app, uuid) == 1


def test_adding_different_classes_all_land(placement_app: Any) -> None:
    # POST compares no client generation: writers that lose the race for
    # the generation are told to retry, and their retries land.
    uuid = new_provider(placement_app)
    classes = ["VCPU", "MEMORY_MB", "DISK_GB", "IPV4_ADDRESS"]
    pending = list(classes)
    for _attempt in range(len(classes)):
        responses = together(*[
            (lambda rc=rc: inprocess.send(placement_app, "POST",
                                "/resource_providers/%s/inventories" % uuid,
                                {"resource_class": rc, "total": 8}))
            for rc in pending])
        assert {r.status_int for r in responses} <= {201, 409}
        pending = [rc for rc, r in zip(pending, responses, strict=True) if r.status_int == 409]
        if not pending:
            break
    assert not pending
    stored = inprocess.send(placement_app, "GET", "/resource_providers/%s/inventories" % uuid).json
    assert sorted(stored["inventories"]) == sorted(classes)
    assert stored["resource_provider_generation"] == len(classes)


def test_creating_providers_with_one_name(placement_app: Any) -> None:
    name = "same-" + uuidlib.uuid4().hex
    responses = together(*[
        (lambda: inprocess.send(placement_app, "POST", "/resource_providers", {"name": name}))
        for _ in range(WRITERS)])
    assert sorted(r.status_int for r in responses) == [200] + [409] * (WRITERS - 1)
    assert set(codes([r for r in responses if r.status_int == 409])) == {
        "placement.duplicate_name"}


def test_a_child_never_outlives_its_parent(placement_app: Any) -> None:
    for _round in range(ROUNDS):
        parent = new_provider(placement_app)
        child = str(uuidlib.uuid4())
        created, deleted = together(
            functools.partial(inprocess.send, placement_app, "POST", "/resource_providers",
                              {"name": "c-" + child, "uuid": child,
                               "parent_provider_uuid": parent}),
            functools.partial(inprocess.send, placement_app, "DELETE",
                              "/resource_providers/" + parent))
        assert created.status_int in (200, 400), created.text
        assert deleted.status_int in (204, 409), deleted.text
        # Exactly one of them happened.
        assert (created.status_int == 200) != (deleted.status_int == 204)
        if created.status_int == 200:
            assert deleted.json["errors"][0]["code"] == \
                "placement.resource_provider.cannot_delete_parent"
            shown = inprocess.send(placement_app, "GET", "/resource_providers/" + child).json
            assert shown["root_provider_uuid"] == parent
        else:
            assert inprocess.send(placement_app, "GET",
                        "/resource_providers/" + child).status_int == 404


def test_allocated_inventory_is_never_removed(placement_app: Any) -> None:
    for _round in range(ROUNDS):
        uuid = new_provider(placement_app)
        set_inventory(placement_app, uuid, 0, {"VCPU": {"total": 4}})
        claimed, removed = together(
            functools.partial(claim, placement_app, uuid, {"VCPU": 1}),
            functools.partial(inprocess.send, placement_app, "DELETE",
                              "/resource_providers/%s/inventories/VCPU" % uuid))
        assert claimed.status_int in (204, 409), claimed.text
        assert removed.status_int in (204, 409), removed.text
        assert (claimed.status_int == 204) != (removed.status_int == 204)
        usages = inprocess.send(placement_app, "GET",
                      "/resource_providers/%s/usages" % uuid).json["usages"]
        inventories = inprocess.send(placement_app, "GET",
                           "/resource_providers/%s/inventories" % uuid).json
        if claimed.status_int == 204:
            assert usages == {"VCPU": 1}
            assert "VCPU" in inventories["inventories"]
        else:
            assert usages == {}
            assert inventories["inventories"] == {}


def test_a_used_provider_is_never_deleted(placement_app: Any) -> None:
    for _round in range(ROUNDS):
        uuid = new_provider(placement_app)
        set_inventory(placement_app, uuid, 0, {"VCPU": {"total": 4}})
        claimed, deleted = together(
            functools.partial(claim, placement_app, uuid, {"VCPU": 1}),
            functools.partial(inprocess.send, placement_app, "DELETE",
                              "/resource_providers/" + uuid))
        assert claimed.status_int in (204, 400, 409), claimed.text
        assert deleted.status_int in (204, 409), deleted.text
        assert (claimed.status_int == 204) != (deleted.status_int == 204)
        if claimed.status_int == 204:
            assert deleted.json["errors"][0]["code"] == \
                "placement.resource_provider.inuse"
