"""python-ironicclient's and openstacksdk's allocation calls against the
bare-metal API, unchanged.

``placement.wsgi.baremetal`` and ``placement.wsgi.api`` serve one fresh
SQLite database (gunicorn, noauth2; the ``admin_token`` auth plugin sends
the token ``admin``).  Nodes are created through the Placement API; then
``openstack baremetal allocation create --wait``, ``list``, ``set``,
``show``, ``unset`` and ``delete`` run as an operator would run them
(python-ironicclient asks for its own newest version first and
negotiates down after our 406), and openstacksdk's ``baremetal`` proxy
(version discovery from ``/`` and ``/v1/``, then calls at 1.60) creates,
waits for, lists, updates and deletes one too.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Iterator

import pytest

from tests.functional.live_server import BIN, Client, serve_baremetal

pytestmark = pytest.mark.slow

pytest.importorskip("ironicclient", reason="python-ironicclient is a test dependency")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Client, Client]]:
    with serve_baremetal("sqlite") as (placement, baremetal):
        placement.version = "1.39"
        status, _ = placement.request("PUT", "/resource_classes/CUSTOM_GOLD")
        assert status == 201
        status, _ = placement.request("PUT", "/traits/CUSTOM_FAST")
        assert status == 201
        for name in ("gold-1", "gold-2", "gold-3"):
            status, node = placement.request("POST", "/resource_providers",
                                             {"name": name})
            assert status == 200
            status, _ = placement.request(
                "PUT", "/resource_providers/%s/inventories" % node["uuid"],
                {"resource_provider_generation": 0,
                 "inventories": {"CUSTOM_GOLD": {"total": 1}}})
            assert status == 200
            status, _ = placement.request(
                "PUT", "/resource_providers/%s/traits" % node["uuid"],
                {"resource_provider_generation": 1, "traits": ["CUSTOM_FAST"]})
            assert status == 200
        yield placement, baremetal


def openstack(baremetal: Client, *args: str) -> Any:
    """Run ``openstack baremetal <args>``; the parsed JSON output, if any."""
    command = [os.path.join(BIN, "openstack"), "--os-auth-type", "admin_token",
               "--os-endpoint", baremetal.url, "--os-token", "admin",
               "baremetal", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) \
        else done.stdout


def test_openstack_baremetal_allocation_commands(servers: tuple[Client, Client]) -> None:
    placement, baremetal = servers
    created = openstack(baremetal, "allocation", "create", "--resource-class", "gold",
                        "--trait", "CUSTOM_FAST", "--name", "osc-1", "--wait",
                        "-f", "json")
    assert created["state"] == "active"
    assert created["traits"] == ["CUSTOM_FAST"]
    node = created["node_uuid"]
    status, held = placement.request("GET", "/allocations/" + created["uuid"])
    assert held["allocations"][node]["resources"] == {"CUSTOM_GOLD": 1}

    listed = openstack(baremetal, "allocation", "list", "-f", "json")
    assert [(row["name"], row["node_uuid"], row["state"]) for row in listed] == [
        ("osc-1", node, "active")]

    openstack(baremetal, "allocation", "set", "osc-1", "--name", "osc-2",
              "--extra", "purpose=test")
    shown = openstack(baremetal, "allocation", "show", "osc-2", "-f", "json")
    assert (shown["name"], shown["extra"]) == ("osc-2", {"purpose": "test"})

    openstack(baremetal, "allocation", "unset", "osc-2", "--extra", "purpose")
    shown = openstack(baremetal, "allocation", "show", created["uuid"], "-f", "json")
    assert shown["extra"] == {}

    openstack(baremetal, "allocation", "delete", "osc-2")
    assert openstack(baremetal, "allocation", "list", "-f", "json") == []
    status, usages = placement.request("GET", "/resource_providers/%s/usages" % node)
    assert usages["usages"] == {"CUSTOM_GOLD": 0}


def test_openstacksdk_baremetal_allocations(servers: tuple[Client, Client]) -> None:
    openstack_sdk = pytest.importorskip("openstack")
    _placement, baremetal = servers
    conn = openstack_sdk.connection.Connection(
        auth_type="admin_token", auth={"endpoint": baremetal.url, "token": "admin"},
        baremetal_endpoint_override=baremetal.url)
    allocation = conn.baremetal.create_allocation(
        resource_class="gold", traits=["CUSTOM_FAST"], name="sdk-1")
    allocation = conn.baremetal.wait_for_allocation(allocation, timeout=30)
    assert allocation.state == "active"
    assert allocation.node_id
    assert [a.name for a in conn.baremetal.allocations()] == ["sdk-1"]
    updated = conn.baremetal.update_allocation(allocation, extra={"by": "sdk"})
    assert updated.extra == {"by": "sdk"}
    assert conn.baremetal.get_allocation("sdk-1").id == allocation.id
    conn.baremetal.delete_allocation(allocation)
    assert list(conn.baremetal.allocations()) == []
