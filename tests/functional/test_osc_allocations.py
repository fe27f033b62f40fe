"""osc-placement's allocation and usage commands against a real server.

The ``openstack`` client of the test environment talks to a gunicorn
server (noauth2, the token ``admin`` names the admin user) through the
``admin_token`` auth plugin.  Each test runs the commands an operator would:
``resource provider allocation set/show/unset/delete``, ``resource usage
show`` and ``resource provider usage show``, at the newest microversion and
at 1.12 (the first with dict-shaped allocations).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from typing import Any, Iterator

import pytest

from tests.functional.live_server import BIN, Client, serve

pytestmark = pytest.mark.slow

PROJECT = "d3f1a9b2-6c4e-4a8f-9e2d-1b0c3a5f7e91"
USER = "5b7e2c1d-8f3a-4d6b-a9c0-2e4f6a8b0c13"


@pytest.fixture(scope="module")
def server() -> Iterator[Client]:
    with serve("sqlite") as client:
        yield client


def openstack(client: Client, version: str, *args: str) -> Any:
    """Run ``openstack <args>``; the parsed JSON output (None if empty)."""
    command = [os.path.join(BIN, "openstack"), "--os-auth-type", "admin_token",
               "--os-endpoint", client.url, "--os-token", "admin",
               "--os-placement-api-version", version, *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def _provider(client: Client, name: str) -> str:
    rp = str(uuid.uuid4())
    status, _ = client.request("POST", "/resource_providers", {"name": name, "uuid": rp})
    assert status == 200
    status, _ = client.request(
        "PUT", "/resource_providers/%s/inventories" % rp,
        {"resource_provider_generation": 0,
         "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}}})
    assert status == 200
    return rp


def _by_provider(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    return {row["resource_provider"]: row["resources"] for row in rows}


def test_allocation_lifecycle_at_latest(server: Client) -> None:
    rp1, rp2 = _provider(server, "osc-1"), _provider(server, "osc-2")
    consumer = str(uuid.uuid4())

    rows = openstack(server, "1.39", "resource", "provider", "allocation", "set",
                     consumer, "--allocation", "rp=%s,VCPU=2,MEMORY_MB=512" % rp1,
                     "--allocation", "rp=%s,VCPU=1" % rp2,
                     "--project-id", PROJECT, "--user-id", USER,
                     "--consumer-type", "INSTANCE", "-f", "json")
    assert _by_provider(rows) == {rp1: {"VCPU": 2, "MEMORY_MB": 512},
                                  rp2: {"VCPU": 1}}

    rows = openstack(server, "1.39", "resource", "provider", "allocation", "show",
                     consumer, "-f", "json")
    assert _by_provider(rows) == {rp1: {"VCPU": 2, "MEMORY_MB": 512},
                                  rp2: {"VCPU": 1}}
    assert {row["consumer_type"] for row in rows} == {"INSTANCE"}
    assert {row["project_id"] for row in rows} == {PROJECT}

    usage = openstack(server, "1.39", "resource", "usage", "show", PROJECT,
                      "-f", "json")
    assert usage == [{"resource_class": "INSTANCE",
                      "usage": {"VCPU": 3, "MEMORY_MB": 512, "consumer_count": 1}}]

    # unset removes one class from one provider and keeps the rest.
    rows = openstack(server, "1.39", "resource", "provider", "allocation", "unset",
                     consumer, "--provider", rp1, "--resource-class", "VCPU",
                     "-f", "json")
    assert _by_provider(rows) == {rp1: {"MEMORY_MB": 512}, rp2: {"VCPU": 1}}

    usage = openstack(server, "1.39", "resource", "provider", "usage", "show",
                      rp1, "-f", "json")
    assert {row["resource_class"]: row["usage"] for row in usage} == {
        "VCPU": 0, "MEMORY_MB": 512}

    openstack(server, "1.39", "resource", "provider", "allocation", "delete",
              consumer)
    assert openstack(server, "1.39", "resource", "provider", "allocation", "show",
                     consumer, "-f", "json") == []
    usage = openstack(server, "1.39", "resource", "usage", "show", PROJECT,
                      "-f", "json")
    assert usage == []


def test_allocation_set_and_usage_at_1_12(server: Client) -> None:
    rp = _provider(server, "osc-old")
    consumer = str(uuid.uuid4())
    project = str(uuid.uuid4())
    rows = openstack(server, "1.12", "resource", "provider", "allocation", "set",
                     consumer, "--allocation", "rp=%s,VCPU=4" % rp,
                     "--project-id", project, "--user-id", USER, "-f", "json")
    assert _by_provider(rows) == {rp: {"VCPU": 4}}
    usage = openstack(server, "1.12", "resource", "usage", "show", project,
                      "--user-id", USER, "-f", "json")
    assert usage == [{"resource_class": "VCPU", "usage": 4}]
    status, body = server.request("GET", "/allocations/%s" % consumer)
    assert status == 200 and body["consumer_type"] == "unknown"
