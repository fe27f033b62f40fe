"""Two workers on one database: what each keeps never hides the other's writes.

Each worker keeps trees, candidates, listed providers and their JSON while
the database says they are unchanged.  Here two applications, each with
its own engine and so its own kept state, serve one database: after each
write made through one, the other, already warm with the same questions,
must answer as the database now is.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from placement import app
from placement.db import migration
from placement.db.api import Database
from tests import backends
from tests.functional.fixtures import make_conf
from tests.functional.inprocess import send

HOST = "5ba4ed00-0000-4000-8000-000000000001"
NUMA = "5ba4ed00-0000-4000-8000-00000000000a"
OTHER = "5ba4ed00-0000-4000-8000-000000000002"
CONSUMER = "5ba4ed00-0000-4000-8000-0000000000c1"
AGGREGATE = "5ba4ed00-0000-4000-8000-0000000000a1"
CANDIDATES = "/allocation_candidates?resources=VCPU:2,DISK_GB:10"
LIST = "/resource_providers?resources=VCPU:2"


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def two_workers(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    backend = request.param
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        confs = [make_conf(url), make_conf(url)]
        databases = [Database(conf) for conf in confs]
        try:
            migration.upgrade(databases[0])
            yield (app.build_app(confs[0], databases[0]),
                   app.build_app(confs[1], databases[1]))
        finally:
            for db in databases:
                db.dispose()


def ok(application: Any, method: str, path: str, body: Any = None,
       version: str = "latest") -> Any:
    resp = send(application, method, path, body, version=version)
    assert resp.status_int < 300, (method, path, resp.status, resp.text)
    return json.loads(resp.body) if resp.body else None


def candidates(application: Any) -> list[dict[str, Any]]:
    return [request["allocations"]
            for request in ok(application, "GET", CANDIDATES)["allocation_requests"]]


def listed(application: Any, path: str = LIST) -> list[tuple[str, str, int]]:
    return [(p["name"], p["root_provider_uuid"], p["generation"])
            for p in ok(application, "GET", path)["resource_providers"]]


def test_writes_through_one_worker_are_seen_by_the_other(
        two_workers: tuple[Any, Any]) -> None:
    writer, reader = two_workers
    ok(writer, "POST", "/resource_providers", {"uuid": HOST, "name": "host"})
    ok(writer, "PUT", "/resource_providers/%s/inventories" % HOST, {
        "resource_provider_generation": 0,
        "inventories": {"DISK_GB": {"total": 100}}})
    ok(writer, "POST", "/resource_providers",
       {"uuid": NUMA, "name": "numa", "parent_provider_uuid": HOST})
    ok(writer, "PUT", "/resource_providers/%s/inventories" % NUMA, {
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 4}}})
    # Both workers warm, with the same answer.
    both = {HOST: {"resources": {"DISK_GB": 10}}, NUMA: {"resources": {"VCPU": 2}}}
    for application in (writer, reader, reader):
        assert candidates(application) == [both]
        assert listed(application) == [("numa", HOST, 1)]

    # A claim through the writer fills the NUMA node.
    ok(writer, "PUT", "/allocations/%s" % CONSUMER, {
        "allocations": {NUMA: {"resources": {"VCPU": 3}}},
        "project_id": AGGREGATE, "user_id": AGGREGATE,
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert candidates(reader) == []
    assert listed(reader) == []
    # Freeing it changes no generation (as upstream), yet is seen at once.
    ok(writer, "DELETE", "/allocations/%s" % CONSUMER)
    assert candidates(reader) == [both]
    assert listed(reader) == [("numa", HOST, 2)]

    # A rename and a move to another tree, neither bumping a generation.
    ok(writer, "PUT", "/resource_providers/%s" % NUMA, {"name": "renamed"})
    assert listed(reader) == [("renamed", HOST, 2)]
    ok(writer, "POST", "/resource_providers", {"uuid": OTHER, "name": "other"})
    ok(writer, "PUT", "/resource_providers/%s/inventories" % OTHER, {
        "resource_provider_generation": 0,
        "inventories": {"DISK_GB": {"total": 50}}})
    ok(writer, "PUT", "/resource_providers/%s" % NUMA,
       {"name": "renamed", "parent_provider_uuid": OTHER}, version="1.37")
    assert candidates(reader) == [
        {OTHER: {"resources": {"DISK_GB": 10}}, NUMA: {"resources": {"VCPU": 2}}}]
    assert listed(reader) == [("renamed", OTHER, 2)]

    # Aggregates written before 1.19, without a generation bump.
    member = "/resource_providers?member_of=%s" % AGGREGATE
    assert listed(reader, member) == []
    ok(writer, "PUT", "/resource_providers/%s/aggregates" % OTHER, [AGGREGATE],
       version="1.18")
    assert listed(reader, member) == [("other", OTHER, 1)]
    assert candidates(reader) == [
        {OTHER: {"resources": {"DISK_GB": 10}}, NUMA: {"resources": {"VCPU": 2}}}]
    assert ok(reader, "GET", CANDIDATES + "&member_of=" + AGGREGATE)[
        "allocation_requests"] != []
