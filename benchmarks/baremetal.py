"""``python3 -m benchmarks baremetal``: concurrent bare-metal allocations,
ours against OpenStack Ironic in the same run.

The workload of tests/functional/test_baremetal_concurrency.py, timed:
``--nodes`` (50) nodes of one resource class, then ``--requests`` (100)
allocation requests of that class sent at once by as many client threads,
against ``placement.wsgi.baremetal:application`` under gunicorn with
``--workers`` (2) workers, and, given ``--ironic-venv``, against Ironic
(``ironic`` all-in-one: API with ``api_workers = --workers`` and one
conductor, no message bus, fake hardware, noauth) on a fresh database of
the same kind.  Measured per side:

* ``settle_s``: from the first request sent until no allocation is
  ``allocating`` any more (ours answers settled; Ironic's conductor settles
  them after its 201s, so the harness polls the list until it is done or
  ``--settle-timeout`` passes);
* ``allocations_per_s``: active allocations divided by ``settle_s``;
* ``server_cpu_ms_per_request``: CPU time of the server's processes
  (gunicorn and its workers; Ironic's API and conductor) per request;
* ``active``, ``error``, ``allocating`` (left when the timeout passed) and
  ``distinct_nodes`` of the active ones, so that a fast wrong answer shows.

Nodes are created through each side's own API (Placement: a provider with
one unit of ``CUSTOM_BM_BENCH``; Ironic: a fake-hardware node moved to
``available`` and powered off) before the clock starts.  Standard library
plus the shared kit's database reset and gunicorn helpers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import threading
import time
import uuid
from typing import Any

from benchmarks import sharedbench

RESOURCE_CLASS = "bm-bench"
PLACEMENT_CLASS = "CUSTOM_BM_BENCH"
IRONIC_VERSION = "1.60"

IRONIC_CONF = """[DEFAULT]
auth_strategy = noauth
enabled_hardware_types = fake-hardware
enabled_boot_interfaces = fake
enabled_deploy_interfaces = fake
enabled_management_interfaces = fake
enabled_power_interfaces = fake
enabled_inspect_interfaces = no-inspect
enabled_network_interfaces = noop
enabled_vendor_interfaces = no-vendor
enabled_bios_interfaces = no-bios
enabled_console_interfaces = no-console
enabled_raid_interfaces = no-raid
enabled_rescue_interfaces = no-rescue
enabled_storage_interfaces = noop
rpc_transport = none
host = localhost
[api]
host_ip = 127.0.0.1
port = {port}
api_workers = {workers}
[database]
connection = {url}
[dhcp]
dhcp_provider = none
[conductor]
automated_clean = false
"""


class Http:
    """One connection per request, JSON in and out."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.port = port
        self.headers = dict(headers, **{"content-type": "application/json",
                                        "accept": "application/json"})

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request(method, path, json.dumps(body) if body is not None else None,
                         self.headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        return resp.status, json.loads(data) if data else None


def _expect(answer: tuple[int, Any], *statuses: int) -> Any:
    if answer[0] not in statuses:
        raise RuntimeError("unexpected answer %s: %s" % answer)
    return answer[1]


def _wait_until_up(call: Http, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if call("GET", "/")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError("server on port %d did not come up" % call.port)


def _race(call: Http, requests: int) -> tuple[float, list[tuple[int, Any]], int]:
    """Send the requests at once; when the first left, the answers, and how
    many connections the server reset before answering.

    A reset connection is tried again (up to 50 times, 50 ms apart), as a
    client would: Ironic's API server (cheroot, a listen queue of 5)
    resets connections beyond its queue, before reading their request.
    """
    start = threading.Barrier(requests + 1)
    answers: list[tuple[int, Any]] = []
    resets = [0]
    lock = threading.Lock()

    def ask() -> None:
        start.wait()
        for _attempt in range(50):
            try:
                answer = call("POST", "/v1/allocations",
                              {"resource_class": RESOURCE_CLASS})
                break
            except (ConnectionResetError, ConnectionRefusedError) as exc:
                answer = (0, str(exc))
                with lock:
                    resets[0] += 1
                time.sleep(0.05)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=ask) for _ in range(requests)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    return began, answers, resets[0]


def _measure(call: Http, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    """The race, timed until everything settled, and the CPU the server's
    processes spent on it (settle polls included): unlike the times, a
    figure that other load on the machine hardly moves."""
    from benchlib import server as kit_server

    cpu_before = kit_server.tree_cpu_seconds(server_pid)
    began, answers, resets = _race(call, args.requests)
    result = _settle(call, began, args.settle_timeout)
    result["server_cpu_ms_per_request"] = round(
        (kit_server.tree_cpu_seconds(server_pid) - cpu_before) * 1000 / args.requests, 2)
    result["statuses"] = sorted({status for status, _ in answers})
    result["connections_reset"] = resets
    return result


def _settle(call: Http, began: float, timeout: float) -> dict[str, Any]:
    """Poll the list until nothing is allocating (or the timeout passes)."""
    while True:
        listed = _expect(call("GET", "/v1/allocations?fields=uuid,state,node_uuid"), 200)
        rows = listed["allocations"]
        allocating = [row for row in rows if row["state"] == "allocating"]
        elapsed = time.monotonic() - began
        if not allocating or elapsed > timeout:
            break
        time.sleep(0.05)
    active = [row for row in rows if row["state"] == "active"]
    return {
        "settle_s": round(elapsed, 3),
        "allocations_per_s": round(len(active) / elapsed, 1) if elapsed else None,
        "active": len(active),
        "error": sum(1 for row in rows if row["state"] == "error"),
        "allocating": len(allocating),
        "distinct_nodes": len({row["node_uuid"] for row in active}),
        "settled": not allocating,
    }


def _ours(args: argparse.Namespace, db: Any, workdir: str) -> dict[str, Any]:
    from benchlib import server as kit_server

    url = db.reset("baremetal-ours")
    placement = kit_server.Server(args.ours_venv, 1,
                                  os.path.join(workdir, "placement.log"))
    baremetal = kit_server.Server(args.ours_venv, args.workers,
                                  os.path.join(workdir, "baremetal.log"),
                                  app="placement.wsgi.baremetal:application")
    placement.start(url)
    try:
        baremetal.start(url)
        try:
            api = Http(placement.port, {"x-auth-token": "admin",
                                        "openstack-api-version": "placement 1.39"})
            _expect(api("PUT", "/resource_classes/" + PLACEMENT_CLASS), 201)
            for number in range(args.nodes):
                node = _expect(api("POST", "/resource_providers",
                                   {"name": "bench-%03d" % number}), 200)
                _expect(api("PUT", "/resource_providers/%s/inventories" % node["uuid"],
                            {"resource_provider_generation": 0,
                             "inventories": {PLACEMENT_CLASS: {"total": 1}}}), 200)
            return _measure(Http(baremetal.port, {
                "x-auth-token": "admin",
                "x-openstack-ironic-api-version": IRONIC_VERSION}), args, baremetal.pid)
        finally:
            baremetal.stop()
    finally:
        placement.stop()


def _ironic_node(call: Http, name: str) -> None:
    node = _expect(call("POST", "/v1/nodes", {"driver": "fake-hardware", "name": name,
                                              "resource_class": RESOURCE_CLASS}), 201)
    path = "/v1/nodes/%s/states/" % node["uuid"]
    for target, state in (("manage", "manageable"), ("provide", "available")):
        _expect(call("PUT", path + "provision", {"target": target}), 202)
        deadline = time.monotonic() + 60
        while _expect(call("GET", "/v1/nodes/" + node["uuid"]),
                      200)["provision_state"] != state:
            if time.monotonic() > deadline:
                raise RuntimeError("node %s never reached %s" % (name, state))
            time.sleep(0.1)
    # Ironic only allocates nodes whose power state is known.
    _expect(call("PUT", path + "power", {"target": "power off"}), 202)


def _ironic(args: argparse.Namespace, db: Any, workdir: str) -> dict[str, Any]:
    from benchlib import server as kit_server

    url = db.reset("baremetal-ironic")
    port = kit_server.free_port()
    conf = os.path.join(workdir, "ironic.conf")
    with open(conf, "w") as handle:
        handle.write(IRONIC_CONF.format(port=port, workers=args.workers, url=url))
    bin_dir = os.path.join(args.ironic_venv, "bin")
    subprocess.run([os.path.join(bin_dir, "ironic-dbsync"), "--config-file", conf,
                    "create_schema"], check=True, capture_output=True, cwd=workdir)
    with open(os.path.join(workdir, "ironic.log"), "w") as log:
        process = subprocess.Popen([os.path.join(bin_dir, "ironic"), "--config-file", conf],
                                   stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                                   start_new_session=True)
    try:
        call = Http(port, {"x-openstack-ironic-api-version": IRONIC_VERSION})
        _wait_until_up(call)
        for number in range(args.nodes):
            _ironic_node(call, "bench-%03d" % number)
        time.sleep(2)  # let the last power actions finish
        return _measure(call, args, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks baremetal")
    parser.add_argument("--db", default="sqlite", choices=["sqlite", "postgresql", "mysql"])
    parser.add_argument("--db-url", help="database URL to drop and re-create "
                        "(default: the shared kit's for --db)")
    parser.add_argument("--ours-venv", default=os.path.join(
        sharedbench.REPO_ROOT, "benchmarks", ".venv-ours"))
    parser.add_argument("--ironic-venv", help="venv with ironic 39 (and "
                        "psycopg2-binary/pymysql for those databases)")
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--settle-timeout", type=float, default=120)
    parser.add_argument("--workdir", default="/tmp/placement-bench/baremetal-%s"
                        % uuid.uuid4().hex[:8])
    parser.add_argument("--json", help="results file (default benchmarks/"
                        "results/baremetal/local-<time>-<db>.json; a folder of "
                        "its own, so that 'report' never takes it for a run's)")
    parser.add_argument("--shared-bench")
    args = parser.parse_args(argv)
    from benchlib import server as kit_server

    os.makedirs(args.workdir, exist_ok=True)
    db = kit_server.Database(args.db, args.workdir, args.db_url)
    rounds: list[dict[str, Any]] = []
    for number in range(args.rounds):
        sides = [("ours", _ours)] + ([("ironic", _ironic)] if args.ironic_venv else [])
        if number % 2:
            sides.reverse()
        figures = {}
        for name, run in sides:
            figures[name] = run(args, db, args.workdir)
            print("round %d %-6s %s" % (number + 1, name, json.dumps(figures[name])),
                  flush=True)
        rounds.append(figures)
    doc = {"db": args.db, "nodes": args.nodes, "requests": args.requests,
           "workers": args.workers, "date": time.strftime("%Y-%m-%d %H:%M"),
           "rounds": rounds}
    path = args.json or os.path.join(
        sharedbench.REPO_ROOT, "benchmarks", "results", "baremetal",
        "local-%s-%s.json" % (time.strftime("%Y%m%d-%H%M%S"), args.db))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(doc, handle, indent=1)
    print("results: %s" % path)
    wrong = [name for figures in rounds for name, result in figures.items()
             if name == "ours" and (result["allocating"] or result["distinct_nodes"]
                                    != min(args.nodes, args.requests))]
    return 1 if wrong else 0
