"""Concurrent bare-metal allocations against real servers: every node
given once, every request settled.

For each database backend a fresh database is served by gunicorn twice:
the Placement API (to create the nodes and read usages back) and the
bare-metal API with two worker processes.  Fifty nodes of one class are
created, then a hundred client threads, released together, each ask for
a node of that class.  Afterwards:

* every request got 201 (an allocation is answered settled, not
  ``allocating``);
* exactly fifty allocations are ``active``, on fifty different nodes;
* the other fifty are ``error``, saying no node is available;
* nothing is left ``allocating``;
* Placement agrees: each node's usage of the class is 1, and each active
  allocation's uuid is a Placement consumer holding exactly its node.

No timing is asserted; ``benchmarks/`` measures how long this takes.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests import backends
from tests.functional.live_server import Client, serve_baremetal

pytestmark = pytest.mark.slow

NODES = 50
REQUESTS = 100
RESOURCE_CLASS = "bm.large"
PLACEMENT_CLASS = "CUSTOM_BM_LARGE"
NO_NODE = "no available nodes match the resource class bm.large"


def _create_nodes(placement: Client) -> list[str]:
    status, _ = placement.request("PUT", "/resource_classes/" + PLACEMENT_CLASS)
    assert status == 201
    nodes = []
    for number in range(NODES):
        status, provider = placement.request(
            "POST", "/resource_providers", {"name": "node-%02d" % number})
        assert status == 200, provider
        status, body = placement.request(
            "PUT", "/resource_providers/%s/inventories" % provider["uuid"],
            {"resource_provider_generation": 0,
             "inventories": {PLACEMENT_CLASS: {"total": 1, "max_unit": 1}}})
        assert status == 200, body
        nodes.append(provider["uuid"])
    return nodes


def _allocate_all_at_once(baremetal: Client) -> list[tuple[int, Any]]:
    start = threading.Barrier(REQUESTS)
    answers: list[tuple[int, Any]] = []
    lock = threading.Lock()

    def ask() -> None:
        start.wait()
        answer = baremetal.request("POST", "/v1/allocations",
                                   {"resource_class": RESOURCE_CLASS})
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=ask) for _ in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
        assert not thread.is_alive(), "a request hung"
    return answers


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_concurrent_allocations_take_each_node_once(backend: str) -> None:
    backends.require(backend)
    with serve_baremetal(backend, workers=2) as (placement, baremetal):
        nodes = _create_nodes(placement)
        answers = _allocate_all_at_once(baremetal)
        assert sorted({status for status, _ in answers}) == [201], answers[:5]
        active = [body for _, body in answers if body["state"] == "active"]
        failed = [body for _, body in answers if body["state"] == "error"]
        assert len(active) == NODES
        assert len({body["node_uuid"] for body in active}) == NODES
        assert {body["node_uuid"] for body in active} == set(nodes)
        assert len(failed) == REQUESTS - NODES
        assert all(NO_NODE in body["last_error"] for body in failed), failed[:3]

        status, listed = baremetal.request("GET", "/v1/allocations?state=allocating")
        assert (status, listed["allocations"]) == (200, [])
        status, listed = baremetal.request("GET", "/v1/allocations?state=active")
        assert len(listed["allocations"]) == NODES

        for node in nodes:
            status, usages = placement.request(
                "GET", "/resource_providers/%s/usages" % node)
            assert usages["usages"] == {PLACEMENT_CLASS: 1}, (node, usages)
        for body in active:
            status, held = placement.request("GET", "/allocations/" + body["uuid"])
            assert held["allocations"] == {
                body["node_uuid"]: {"generation": held["allocations"][body["node_uuid"]]
                                    ["generation"],
                                    "resources": {PLACEMENT_CLASS: 1}}}, held
