"""``python -m benchmarks metrics``: what a scrape and the capacity page
cost, beside openstack-exporter's way of getting the same figures.

Run with this repository's own virtualenv (it builds the application
in-process: ``.venv/bin/python -m benchmarks metrics``).  A fresh database
(``--db-url``, default a SQLite file in a temporary directory) is filled
directly in SQL with ``--providers`` (10,000) compute nodes, each with
VCPU, MEMORY_MB and DISK_GB inventory and ``--consumers-per-provider`` (4)
consumers allocating from it; every tenth provider is in one of 20
aggregates; two flavors are configured.  Then, through the WSGI
application in this process (so every figure is server time: no socket,
no client), ``--rounds`` (5) times each, median reported:

* ``scrape``: ``GET /metrics`` with ``capacity_interval = 0``, so every
  scrape reads the capacity figures afresh (the worker reads every
  provider's state and again only what changed: here nothing);
* ``scrape_after_writes``: the same with ``--changes`` (100) consumers
  claiming one VCPU each on random providers before each round, the
  previous round's moving to other random providers (about 2% of the
  providers change between two scrapes);
* ``scrape_first``: the same by a worker that keeps nothing yet (its first
  scrape, which reads and works out every provider);
* ``scrape_cached``: the same with the figures kept (within the
  interval);
* ``figures_ms``: the part of a fresh scrape spent reading and working out
  the capacity figures (``placement_capacity_read_seconds``);
* ``page``: ``GET /capacity`` as a browser asks for it (HTML), afresh;
* ``fits``: ``GET /capacity?resources=VCPU:2,MEMORY_MB:4096`` (JSON);
* ``exporter_way_s``: openstack-exporter's way, timed once: ``GET
  /resource_providers``, then ``GET .../inventories`` and ``GET
  .../usages`` for every provider, one after the other (its default
  without ``--collect-placement-in-parallel``); server time of all
  ``1 + 2 * providers`` requests summed.

Each figure is given as wall-clock milliseconds (``wall_ms``) and as CPU
milliseconds of this process (``cpu_ms``, ``time.process_time``; SQLite
runs in it, a PostgreSQL or MariaDB server does not), medians with every
round; and the load average before and after, as the machine may be
shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any, Callable


def _fill(db: Any, providers: int, consumers: int) -> None:
    import sqlalchemy as sa

    from placement.db import tables

    with db.writer() as conn:
        classes = {name: id_ for id_, name in conn.execute(
            sa.select(tables.resource_classes.c.id, tables.resource_classes.c.name))}
        conn.execute(tables.projects.insert(), [{"id": 1, "external_id": "p"}])
        conn.execute(tables.users.insert(), [{"id": 1, "external_id": "u"}])
        conn.execute(tables.placement_aggregates.insert(), [
            {"id": a + 1, "uuid": str(uuid.UUID(int=a + 1))} for a in range(20)])
        rows, inventories, allocations, consumer_rows, members = [], [], [], [], []
        for p in range(1, providers + 1):
            rows.append({"id": p, "uuid": str(uuid.uuid4()), "name": "cn%05d" % p,
                         "generation": 1, "root_provider_id": p,
                         "parent_provider_id": None})
            for name, total, ratio in (("VCPU", 64, 4.0), ("MEMORY_MB", 262144, 1.0),
                                       ("DISK_GB", 2000, 1.0)):
                inventories.append({
                    "resource_provider_id": p, "resource_class_id": classes[name],
                    "total": total, "reserved": 0, "min_unit": 1,
                    "max_unit": total, "step_size": 1, "allocation_ratio": ratio})
            for c in range(consumers):
                consumer = str(uuid.uuid4())
                consumer_rows.append({"uuid": consumer, "project_id": 1,
                                      "user_id": 1, "generation": 1})
                for name, used in (("VCPU", 4 + c), ("MEMORY_MB", 8192),
                                   ("DISK_GB", 40)):
                    allocations.append({
                        "resource_provider_id": p, "consumer_id": consumer,
                        "resource_class_id": classes[name], "used": used})
            if p % 10 == 0:
                members.append({"resource_provider_id": p,
                                "aggregate_id": (p // 10) % 20 + 1})
        for table, batch in ((tables.resource_providers, rows),
                             (tables.inventories, inventories),
                             (tables.consumers, consumer_rows),
                             (tables.allocations, allocations),
                             (tables.resource_provider_aggregates, members)):
            for start in range(0, len(batch), 5000):
                conn.execute(table.insert(), batch[start:start + 5000])


class _Figures:
    """Wall-clock and CPU milliseconds per measured request, by name."""

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}

    def timed(self, name: str, call: Callable[[], Any], rounds: int,
              before: Callable[[], Any] | None = None) -> Any:
        """``call`` ``rounds`` times (after ``before``, not measured)."""
        result = None
        for _ in range(rounds):
            if before is not None:
                before()
            wall, cpu = time.perf_counter(), time.process_time()
            result = call()
            self.cpu.setdefault(name, []).append((time.process_time() - cpu) * 1000)
            self.wall.setdefault(name, []).append((time.perf_counter() - wall) * 1000)
        return result

    def as_dict(self) -> dict[str, Any]:
        return {kind: {name: {"median": round(statistics.median(values), 1),
                              "rounds": [round(v, 1) for v in values]}
                       for name, values in figures.items()}
                for kind, figures in (("wall_ms", self.wall), ("cpu_ms", self.cpu))}


class _Writes:
    """Consumers claiming one VCPU on random providers, then moving."""

    def __init__(self, send: Callable[..., Any], providers: list[str],
                 count: int) -> None:
        self.send, self.providers, self.count = send, providers, count
        self.rng = random.Random(7)
        self.consumers: list[str] = []

    def claim(self, consumer: str, generation: int | None) -> None:
        self.send("PUT", "/allocations/" + consumer, {
            "allocations": {self.rng.choice(self.providers): {"resources": {"VCPU": 1}}},
            "project_id": "p", "user_id": "u", "consumer_generation": generation,
            "consumer_type": "INSTANCE"})

    def __call__(self) -> None:
        for consumer in self.consumers:
            self.claim(consumer, 1)
        self.consumers = [str(uuid.uuid4()) for _ in range(self.count)]
        for consumer in self.consumers:
            self.claim(consumer, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks metrics")
    parser.add_argument("--db-url", default=None)
    parser.add_argument("--providers", type=int, default=10000)
    parser.add_argument("--consumers-per-provider", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--skip-exporter-way", action="store_true")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)

    import webob

    from placement import app, conf as placement_conf
    from placement.db import migration
    from placement.db.api import Database

    workdir = tempfile.mkdtemp(prefix="placement-metrics-bench-")
    url = args.db_url or "sqlite:///" + os.path.join(workdir, "placement.sqlite")
    conf = placement_conf.load([], default_config_files=[])
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("connection", url, group="placement_database")
    conf.set_override("enabled", True, group="metrics")
    conf.set_override("capacity_requests", [
        "small:resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20",
        "large:resources=VCPU:16,MEMORY_MB:65536,DISK_GB:200"], group="metrics")
    db = Database(conf)
    migration.upgrade(db)
    started = time.perf_counter()
    _fill(db, args.providers, args.consumers_per_provider)
    print("filled %d providers in %.1f s" % (args.providers,
                                             time.perf_counter() - started))
    application = app.build_app(conf, db)

    def get(path: str, accept: str = "application/json") -> webob.Response:
        req = webob.Request.blank(path)
        req.headers.update({"X-Auth-Token": "admin", "Accept": accept,
                            "OpenStack-API-Version": "placement latest"})
        resp = req.get_response(application)
        assert resp.status_int == 200, (path, resp.status, resp.text[:300])
        return resp

    def send(method: str, path: str, body: Any) -> None:
        req = webob.Request.blank(path, method=method)
        req.headers.update({"X-Auth-Token": "admin", "Content-Type": "application/json",
                            "OpenStack-API-Version": "placement latest"})
        req.body = json.dumps(body).encode()
        resp = req.get_response(application)
        assert resp.status_int == 204, (path, resp.status, resp.text[:300])

    from placement.metrics import capacity

    results: dict[str, Any] = {"providers": args.providers, "db": url.split(":")[0],
                               "python": sys.version.split()[0],
                               "load_average_before": os.getloadavg()}
    figures = _Figures()
    conf.set_override("capacity_interval", 0, group="metrics")
    get("/metrics")  # warm: imports, statement compilation, the first reading
    scraped = figures.timed("scrape", lambda: get("/metrics"), args.rounds)
    for line in scraped.text.splitlines():
        if line.startswith("placement_capacity_read_seconds "):
            results["figures_ms"] = float(line.split()[1]) * 1000
    results["scrape_bytes"] = len(scraped.body)
    providers = [p["uuid"] for p in get("/resource_providers").json["resource_providers"]]
    writes = _Writes(send, providers, args.changes)
    figures.timed("scrape_after_writes", lambda: get("/metrics"), args.rounds,
                  before=writes)

    figures.timed("scrape_first", lambda: get("/metrics"), args.rounds,
                  before=capacity.forget)
    get("/metrics")
    page = figures.timed("page", lambda: get("/capacity", "text/html,*/*;q=0.8"),
                         args.rounds)
    results["page_bytes"] = len(page.body)
    fits = figures.timed("fits", lambda: get("/capacity?resources=VCPU:2,MEMORY_MB:4096"),
                         args.rounds)
    results["fits"] = fits.json["fits"]
    conf.set_override("capacity_interval", 3600, group="metrics")
    get("/metrics")
    figures.timed("scrape_cached", lambda: get("/metrics"), args.rounds)
    results.update(figures.as_dict())
    results["load_average_after"] = os.getloadavg()
    if not args.skip_exporter_way:
        started = time.perf_counter()
        providers = get("/resource_providers").json["resource_providers"]
        for provider in providers:
            get("/resource_providers/%s/inventories" % provider["uuid"])
            get("/resource_providers/%s/usages" % provider["uuid"])
        results["exporter_way_s"] = time.perf_counter() - started
        results["exporter_way_requests"] = 1 + 2 * len(providers)
    print(json.dumps(results, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)
    db.dispose()
    return 0
