"""osc-placement, unchanged, drives the development server.

The client is the operator's own: python-openstackclient with the
osc-placement plugin, pointed at ``placement-api`` (noauth2, embedded
SQLite) with ``--os-auth-type admin_token``.  One test runs the real
``openstack`` executable; the others call the same entry point in a forked
child of the test process: openstackclient takes seconds to import, and a
tour has many steps, but it keeps state between calls in one process (the
second of two calls with different ``--os-placement-api-version`` values
still sent the first), so every call gets a fresh copy of the process.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import osc_placement  # noqa: F401  (a test dependency: fail, never skip, without it)
import pytest
from openstackclient import shell

from tests.functional import servers

VERSION = "1.39"


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


class Client:
    def __init__(self, endpoint: str, version: str = VERSION) -> None:
        self.base = ["--os-endpoint", endpoint, "--os-token", "admin",
                     "--os-auth-type", "admin_token",
                     "--os-placement-api-version", version]

    def run(self, *args: str) -> Result:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run one command, report, vanish
            try:
                os.close(read_end)
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    try:
                        code = shell.main(self.base + list(args))
                    except SystemExit as exc:  # argparse errors
                        code = int(exc.code or 0)
                with os.fdopen(write_end, "w") as pipe:
                    json.dump([code, out.getvalue(), err.getvalue()], pipe)
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            reported = pipe.read()
        os.waitpid(pid, 0)
        assert reported, "the openstack child died: %s" % (args,)
        code, out, err = json.loads(reported)
        return Result(code, out, err)

    def ok(self, *args: str) -> Result:
        result = self.run(*args)
        assert result.code == 0, "openstack %s failed: %s" % (" ".join(args), result.err)
        return result

    def json(self, *args: str) -> Any:
        return self.ok(*args, "-f", "json").json

    def fails(self, *args: str) -> Result:
        result = self.run(*args)
        assert result.code != 0, "openstack %s should fail" % " ".join(args)
        return result


@pytest.fixture(scope="module", autouse=True)
def _plugins_loaded() -> None:
    """Load openstackclient's command plugins once, before any fork, so that
    each forked call starts warm (a tenth of a second instead of one)."""
    with contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        shell.main(["command", "list"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Server]:
    cwd = tmp_path_factory.mktemp("osc")
    port = servers.free_port()
    command = [servers.script("placement-api"), "--port", str(port)]
    env = servers.clean_env(OS_API__AUTH_STRATEGY="noauth2")
    with servers.serve(command, cwd, env, port) as running:
        yield running


@pytest.fixture
def osc(server: servers.Server) -> Client:
    return Client(server.endpoint)


def _name(prefix: str) -> str:
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


def _provider(osc: Client, **options: str) -> dict[str, Any]:
    args = ["resource", "provider", "create", _name("rp")]
    for option, value in options.items():
        args += ["--" + option.replace("_", "-"), value]
    provider: dict[str, Any] = osc.json(*args)
    return provider


def test_the_openstack_executable(server: servers.Server, tmp_path: Path) -> None:
    result = subprocess.run(
        [servers.script("openstack"), *Client(server.endpoint).base,
         "resource", "class", "list", "-f", "json"],
        cwd=tmp_path, env=servers.clean_env(), capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "VCPU" in [rc["name"] for rc in json.loads(result.stdout)]


def test_resource_provider_create_list_show_set_delete(osc: Client) -> None:
    name = _name("compute")
    given_uuid = str(uuid.uuid4())
    created = osc.json("resource", "provider", "create", name, "--uuid", given_uuid)
    assert created["uuid"] == given_uuid
    assert created["name"] == name
    assert created["generation"] == 0
    assert created["root_provider_uuid"] == given_uuid
    assert created["parent_provider_uuid"] is None

    listed = osc.json("resource", "provider", "list", "--name", name)
    assert [rp["uuid"] for rp in listed] == [given_uuid]

    shown = osc.json("resource", "provider", "show", given_uuid)
    assert shown["name"] == name

    child = _provider(osc, parent_provider=given_uuid)
    assert child["parent_provider_uuid"] == given_uuid
    assert child["root_provider_uuid"] == given_uuid
    in_tree = osc.json("resource", "provider", "list", "--in-tree", given_uuid)
    assert {rp["uuid"] for rp in in_tree} == {given_uuid, child["uuid"]}

    renamed = osc.json("resource", "provider", "set", given_uuid, "--name", name + "-new")
    assert renamed["name"] == name + "-new"
    assert osc.json("resource", "provider", "show", given_uuid)["name"] == name + "-new"

    # A parent cannot go while it has a child.
    refused = osc.fails("resource", "provider", "delete", given_uuid)
    assert "409" in refused.err
    osc.ok("resource", "provider", "delete", child["uuid"])
    osc.ok("resource", "provider", "delete", given_uuid)
    gone = osc.fails("resource", "provider", "show", given_uuid)
    assert "No resource provider with uuid %s found" % given_uuid in gone.err
    assert osc.json("resource", "provider", "list", "--name", name + "-new") == []


def test_inventory_set_list_show_delete(osc: Client) -> None:
    rp = _provider(osc)["uuid"]
    osc.ok("resource", "provider", "inventory", "set", rp,
           "--resource", "VCPU=8", "--resource", "VCPU:allocation_ratio=4.0",
           "--resource", "MEMORY_MB=4096", "--resource", "MEMORY_MB:reserved=512",
           "--resource", "DISK_GB=100")
    inventories = {inv["resource_class"]: inv
                   for inv in osc.json("resource", "provider", "inventory", "list", rp)}
    assert set(inventories) == {"VCPU", "MEMORY_MB", "DISK_GB"}
    assert inventories["VCPU"]["total"] == 8
    assert inventories["VCPU"]["allocation_ratio"] == 4.0
    assert inventories["MEMORY_MB"]["reserved"] == 512

    vcpu = osc.json("resource", "provider", "inventory", "show", rp, "VCPU")
    assert vcpu["total"] == 8

    osc.ok("resource", "provider", "inventory", "class", "set", rp, "DISK_GB",
           "--total", "200", "--max_unit", "50")
    disk = osc.json("resource", "provider", "inventory", "show", rp, "DISK_GB")
    assert (disk["total"], disk["max_unit"]) == (200, 50)

    # --amend changes one class and keeps the others.
    osc.ok("resource", "provider", "inventory", "set", rp, "--amend",
           "--resource", "VCPU=16")
    amended = {inv["resource_class"]: inv["total"]
               for inv in osc.json("resource", "provider", "inventory", "list", rp)}
    assert amended == {"VCPU": 16, "MEMORY_MB": 4096, "DISK_GB": 200}

    osc.ok("resource", "provider", "inventory", "delete", rp, "--resource-class", "VCPU")
    left = {inv["resource_class"]
            for inv in osc.json("resource", "provider", "inventory", "list", rp)}
    assert left == {"MEMORY_MB", "DISK_GB"}
    missing = osc.fails("resource", "provider", "inventory", "show", rp, "VCPU")
    assert "404" in missing.err

    osc.ok("resource", "provider", "inventory", "delete", rp)  # all of them (1.5)
    assert osc.json("resource", "provider", "inventory", "list", rp) == []


def test_resource_class_create_list_show_set_delete(osc: Client) -> None:
    name = "CUSTOM_" + uuid.uuid4().hex[:8].upper()
    osc.ok("resource", "class", "create", name)
    assert name in [rc["name"] for rc in osc.json("resource", "class", "list")]
    assert osc.json("resource", "class", "show", name)["name"] == name
    duplicate = osc.fails("resource", "class", "create", name)
    assert "409" in duplicate.err
    osc.ok("resource", "class", "set", name)  # 1.7: idempotent create
    osc.ok("resource", "class", "delete", name)
    assert name not in [rc["name"] for rc in osc.json("resource", "class", "list")]
    osc.fails("resource", "class", "show", name)
    # Standard classes cannot be deleted.
    assert "400" in osc.fails("resource", "class", "delete", "VCPU").err


def test_trait_create_list_show_delete(osc: Client) -> None:
    name = "CUSTOM_" + uuid.uuid4().hex[:8].upper()
    osc.ok("trait", "create", name)
    assert name in [t["name"] for t in osc.json("trait", "list")]
    assert osc.json("trait", "show", name)["name"] == name
    custom = [t["name"] for t in osc.json("trait", "list", "--name", "startswith:CUSTOM_")]
    assert name in custom
    assert all(t.startswith("CUSTOM_") for t in custom)
    osc.ok("trait", "delete", name)
    assert name not in [t["name"] for t in osc.json("trait", "list")]
    osc.fails("trait", "show", name)
    assert "400" in osc.fails("trait", "delete", "HW_CPU_X86_AVX2").err


def test_resource_provider_trait_set_list_delete(osc: Client) -> None:
    rp = _provider(osc)["uuid"]
    custom = "CUSTOM_" + uuid.uuid4().hex[:8].upper()
    osc.ok("trait", "create", custom)
    assert osc.json("resource", "provider", "trait", "list", rp) == []
    set_traits = osc.json("resource", "provider", "trait", "set", rp,
                          "--trait", "HW_CPU_X86_AVX2", "--trait", custom)
    assert {t["name"] for t in set_traits} == {"HW_CPU_X86_AVX2", custom}
    listed = osc.json("resource", "provider", "trait", "list", rp)
    assert {t["name"] for t in listed} == {"HW_CPU_X86_AVX2", custom}
    with_trait = osc.json("resource", "provider", "list", "--required", custom)
    assert [p["uuid"] for p in with_trait] == [rp]
    # A trait in use by a provider cannot be deleted.
    assert "409" in osc.fails("trait", "delete", custom).err
    osc.ok("resource", "provider", "trait", "delete", rp)
    assert osc.json("resource", "provider", "trait", "list", rp) == []
    unknown = osc.fails("resource", "provider", "trait", "set", rp,
                        "--trait", "CUSTOM_NEVER_CREATED")
    assert "400" in unknown.err


def test_resource_provider_aggregate_set_list(osc: Client) -> None:
    rp = _provider(osc)
    aggs = sorted(str(uuid.uuid4()) for _ in range(2))
    result = osc.json("resource", "provider", "aggregate", "set", rp["uuid"],
                      "--aggregate", aggs[0], "--aggregate", aggs[1],
                      "--generation", str(rp["generation"]))
    assert sorted(a["uuid"] for a in result) == aggs
    listed = osc.json("resource", "provider", "aggregate", "list", rp["uuid"])
    assert sorted(a["uuid"] for a in listed) == aggs
    members = osc.json("resource", "provider", "list", "--member-of", aggs[0])
    assert [p["uuid"] for p in members] == [rp["uuid"]]
    # A stale generation is refused (1.19).
    stale = osc.fails("resource", "provider", "aggregate", "set", rp["uuid"],
                      "--aggregate", aggs[0], "--generation", str(rp["generation"]))
    assert "409" in stale.err
    current = osc.json("resource", "provider", "show", rp["uuid"])["generation"]
    cleared = osc.json("resource", "provider", "aggregate", "set", rp["uuid"],
                       "--generation", str(current))
    assert cleared == []


def _compute_node(osc: Client) -> str:
    rp: str = _provider(osc)["uuid"]
    osc.ok("resource", "provider", "inventory", "set", rp,
           "--resource", "VCPU=4", "--resource", "MEMORY_MB=2048")
    return rp


def test_allocation_set_show_unset_delete(osc: Client) -> None:
    first, second = _compute_node(osc), _compute_node(osc)
    consumer, project, user = (str(uuid.uuid4()) for _ in range(3))
    allocated = osc.json(
        "resource", "provider", "allocation", "set", consumer,
        "--allocation", "rp=%s,VCPU=2,MEMORY_MB=512" % first,
        "--allocation", "rp=%s,VCPU=1" % second,
        "--project-id", project, "--user-id", user, "--consumer-type", "INSTANCE")
    by_rp = {a["resource_provider"]: a["resources"] for a in allocated}
    assert by_rp == {first: {"VCPU": 2, "MEMORY_MB": 512}, second: {"VCPU": 1}}

    shown = osc.json("resource", "provider", "allocation", "show", consumer)
    assert {a["resource_provider"]: a["resources"] for a in shown} == by_rp
    assert {a["project_id"] for a in shown} == {project}
    assert {a["consumer_type"] for a in shown} == {"INSTANCE"}

    usage = {u["resource_class"]: u["usage"]
             for u in osc.json("resource", "provider", "usage", "show", first)}
    assert usage == {"VCPU": 2, "MEMORY_MB": 512}

    # Too much for the inventory: refused, nothing changes.
    too_much = osc.fails("resource", "provider", "allocation", "set", consumer,
                         "--allocation", "rp=%s,VCPU=99" % first,
                         "--project-id", project, "--user-id", user,
                         "--consumer-type", "INSTANCE")
    assert "409" in too_much.err

    osc.ok("resource", "provider", "allocation", "unset", consumer,
           "--provider", second)
    after_unset = osc.json("resource", "provider", "allocation", "show", consumer)
    assert [a["resource_provider"] for a in after_unset] == [first]

    osc.ok("resource", "provider", "allocation", "unset", consumer,
           "--resource-class", "MEMORY_MB")
    after_class = osc.json("resource", "provider", "allocation", "show", consumer)
    assert [a["resources"] for a in after_class] == [{"VCPU": 2}]

    osc.ok("resource", "provider", "allocation", "delete", consumer)
    assert osc.json("resource", "provider", "allocation", "show", consumer) == []


def test_resource_usage_show(osc: Client) -> None:
    rp = _compute_node(osc)
    project, user, other_user = (str(uuid.uuid4()) for _ in range(3))
    for owner, vcpus in ((user, 1), (other_user, 2)):
        osc.ok("resource", "provider", "allocation", "set", str(uuid.uuid4()),
               "--allocation", "rp=%s,VCPU=%d" % (rp, vcpus),
               "--project-id", project, "--user-id", owner,
               "--consumer-type", "INSTANCE")
    # From 1.38 usages are grouped by consumer type, with consumer counts.
    by_type = {u["resource_class"]: u["usage"]
               for u in osc.json("resource", "usage", "show", project)}
    assert by_type == {"INSTANCE": {"VCPU": 3, "consumer_count": 2}}
    mine = {u["resource_class"]: u["usage"]
            for u in osc.json("resource", "usage", "show", project, "--user-id", user)}
    assert mine == {"INSTANCE": {"VCPU": 1, "consumer_count": 1}}
    # Before, they are plain totals per resource class.
    old = Client(osc.base[1], "1.9")
    totals = {u["resource_class"]: u["usage"]
              for u in old.json("resource", "usage", "show", project)}
    assert totals == {"VCPU": 3}
    assert old.json("resource", "usage", "show", str(uuid.uuid4())) == []


def test_allocation_candidate_list(osc: Client) -> None:
    rp = _compute_node(osc)
    trait = "CUSTOM_" + uuid.uuid4().hex[:8].upper()
    osc.ok("trait", "create", trait)
    osc.ok("resource", "provider", "trait", "set", rp, "--trait", trait)
    candidates = osc.json("allocation", "candidate", "list",
                          "--resource", "VCPU=2", "--required", trait)
    assert [c["resource provider"] for c in candidates] == [rp]
    none = osc.json("allocation", "candidate", "list", "--resource", "VCPU=99",
                    "--required", trait)
    assert none == []


@pytest.mark.parametrize("version", ["1.0", "1.10", "1.20", "1.28"])
def test_older_microversions(server: servers.Server, version: str) -> None:
    # osc-placement shapes its requests by the version it was asked for.
    osc = Client(server.endpoint, version)
    name = _name("old")
    osc.ok("resource", "provider", "create", name)
    listed = osc.json("resource", "provider", "list", "--name", name)
    assert [rp["name"] for rp in listed] == [name]
    rp = listed[0]["uuid"]
    osc.ok("resource", "provider", "inventory", "set", rp, "--resource", "VCPU=2")
    assert osc.json("resource", "provider", "inventory", "show", rp, "VCPU")["total"] == 2
    osc.ok("resource", "provider", "delete", rp)
