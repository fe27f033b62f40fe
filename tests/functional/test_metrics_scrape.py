"""A fresh scrape's capacity text is right after every kind of write.

A worker keeps its capacity figures between scrapes and reads again only
the providers whose state changed (:mod:`placement.metrics.kept_figures`).  A
seeded random sequence of writes (those of
``test_kept_changes_nothing.py``, plus consumers moving to another host,
which leaves the old host's generation as it was, renamed providers and
a renamed custom resource class)
runs on one database, with ``capacity_interval = 0``; after each write:

* the capacity text of ``GET /metrics`` (every family but the read time
  and duration) is byte for byte the text written from a store that keeps
  nothing (a new :class:`KeptFigures`, reading every provider), and so are
  the figures kept with and without traits;
* every few writes, and after the last, openstack-exporter's four gauges,
  the sums per class of the cloud and of each aggregate and the number of
  providers are the lines worked out here from the API's own providers,
  inventories, usages and aggregates.
"""

from __future__ import annotations

import math
import types
from typing import Any, Iterator

import pytest

from placement import app
from placement.metrics import capacity
from placement.metrics.figures import Figures, Fits
from placement.metrics.kept_figures import KeptFigures
from tests.functional import inprocess
from tests.functional.inprocess import send
from tests.functional.test_kept_changes_nothing import POOL_AGGREGATE, Cloud

pytestmark = pytest.mark.slow

STEPS = 40
API_CHECK_EVERY = 5
SEEDS = {"sqlite": 21, "postgresql": 22, "mysql": 23}
FLAVORS = ["small:resources=VCPU:1,MEMORY_MB:256",
           "avx:resources=VCPU:1&required=HW_CPU_X86_AVX2",
           "pooled:resources=VCPU:1&member_of=" + POOL_AGGREGATE]
CUSTOM_CLASSES = ("CUSTOM_SCRATCH", "CUSTOM_SCRATCH_FAST")
# The families after these two lines' are the read time and duration.
TIMING = b"# HELP placement_capacity_read_timestamp_seconds"


class MetricsCloud(Cloud):
    """The writes of test_kept_changes_nothing, and three more that change
    a provider's lines without changing its generation."""

    custom = CUSTOM_CLASSES[0]  # the custom class's name now

    def move(self) -> None:
        # A consumer moves to another host: the one it leaves keeps its
        # generation, and only the count of its allocation rows falls.
        if not self.consumers:
            return
        consumer = self.rng.choice(self.consumers)
        held = self.ok("GET", "/allocations/" + consumer)
        found = send(self.workers[0], "GET",
                     "/allocation_candidates?resources=VCPU:1,MEMORY_MB:256&limit=20",
                     version="1.39").json["allocation_requests"]
        elsewhere = [c for c in found
                     if not set(c["allocations"]) & set(held["allocations"])]
        if not elsewhere:
            return
        resp = send(self.workers[0], "PUT", "/allocations/" + consumer, {
            "allocations": self.rng.choice(elsewhere)["allocations"],
            "project_id": held["project_id"], "user_id": held["user_id"],
            "consumer_generation": held["consumer_generation"],
            "consumer_type": "INSTANCE"}, version="1.39")
        assert resp.status_int in (204, 409), resp.text

    def rename(self) -> None:
        rp = self.rng.choice([p for ps in self.hosts.values() for p in ps])
        self.names += 1
        self.ok("PUT", "/resource_providers/" + rp,
                {"name": "renamed-%d" % self.names}, version="1.14")

    def rename_class(self) -> None:
        # The class's name is in every line of its inventories, and no
        # generation moves (renames exist before microversion 1.7).
        old, new = CUSTOM_CLASSES if self.custom == CUSTOM_CLASSES[0] else (
            CUSTOM_CLASSES[::-1])
        self.ok("PUT", "/resource_classes/" + old, {"name": new}, version="1.2")
        self.custom = new

    def step(self) -> str:
        write = self.rng.choice([self.claim, self.claim, self.free, self.move,
                                 self.reserve, self.traits, self.aggregates,
                                 self.host, self.recreate, self.reparent,
                                 self.rename, self.rename_class])
        write()
        return write.__name__


@pytest.fixture(params=sorted(SEEDS))
def cloud(request: pytest.FixtureRequest) -> Iterator[MetricsCloud]:
    with inprocess.migrated(request.param) as (conf, db):
        for name, value in (("enabled", True), ("capacity_interval", 0),
                            ("capacity_requests", FLAVORS)):
            conf.set_override(name, value, group="metrics")
        worker = app.build_app(conf, db)
        found = MetricsCloud([worker, worker], SEEDS[request.param])
        found.ctx = types.SimpleNamespace(db=db, config=conf)  # type: ignore[attr-defined]
        yield found


def _capacity_text(whole: bytes) -> bytes:
    """The capacity families of a scrape, without the read time and
    duration."""
    start = whole.index(b"# HELP openstack_placement_up ")
    return whole[start:whole.index(TIMING)]


def _written_afresh(ctx: Any) -> bytes:
    flavors = capacity.configured_flavors(ctx.config)
    figures, fits = KeptFigures().read(ctx, tuple(f.group for f in flavors), True)
    report = capacity.Report(figures, tuple(zip(flavors, fits, strict=True)), 0.0, 0.0)
    return _capacity_text(b"".join(capacity.exposition(report)))


def _everything(figures: Figures, fits: tuple[Fits, ...]) -> tuple[Any, ...]:
    """All a reading gives, the fields left out of comparisons included."""
    return (figures, figures.inventories, fits, figures.exporter and
            [b"".join(pieces) for pieces in figures.exporter],
            sorted(figures.hosts or ()))


def _value(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _from_the_api(cloud: MetricsCloud) -> set[str]:
    """The lines the capacity families must hold, worked out from the API."""
    providers = cloud.ok("GET", "/resource_providers", version="1.14")["resource_providers"]
    aggregates = {p["uuid"]: set(cloud.ok(
        "GET", "/resource_providers/%s/aggregates" % p["uuid"])["aggregates"])
        for p in providers}
    lines = {"placement_providers %d" % len(providers)}
    sums: dict[tuple[str, str], list[Any]] = {}
    for provider in providers:
        name = provider["name"]
        assert '"' not in name and "\\" not in name
        inventories = cloud.ok("GET", "/resource_providers/%s/inventories"
                               % provider["uuid"])["inventories"]
        usages = cloud.ok("GET", "/resource_providers/%s/usages"
                          % provider["uuid"])["usages"]
        scopes = [""] + sorted(aggregates[provider["uuid"]]
                               | aggregates[provider["root_provider_uuid"]])
        for rc, inventory in inventories.items():
            labels = '{hostname="%s",resourcetype="%s"}' % (name, rc)
            for gauge, value in (("allocation_ratio", inventory["allocation_ratio"]),
                                 ("reserved", inventory["reserved"]),
                                 ("total", inventory["total"]),
                                 ("usage", usages[rc])):
                lines.add("openstack_placement_resource_%s%s %s" % (gauge, labels,
                                                                    _value(value)))
            for scope in scopes:
                into = sums.setdefault((scope, rc), [0, 0, [], 0, 0])
                into[0] += inventory["total"]
                into[1] += inventory["reserved"]
                into[2].append((inventory["total"] - inventory["reserved"])
                               * inventory["allocation_ratio"])
                into[3] += usages[rc]
                into[4] += 1
    for (scope, rc), (total, reserved, capacities, used, count) in sums.items():
        if scope:
            prefix = "placement_aggregate_resource_class_"
            labels = '{aggregate="%s",resource_class="%s"}' % (scope, rc)
        else:
            prefix, labels = "placement_resource_class_", '{resource_class="%s"}' % rc
        capacity_after_ratio = math.fsum(capacities)
        for figure, value in (("total", total), ("reserved", reserved),
                              ("capacity", capacity_after_ratio), ("used", used),
                              ("free", capacity_after_ratio - used),
                              ("providers", count)):
            lines.add("%s%s%s %s" % (prefix, figure, labels, _value(value)))
    return lines


def _checked_families(text: bytes) -> set[str]:
    return {line for line in text.decode().splitlines()
            if line.startswith(("openstack_placement_resource_", "placement_providers ",
                                "placement_resource_class_",
                                "placement_aggregate_resource_class_"))}


def test_fresh_scrapes_are_right_after_every_write(cloud: MetricsCloud) -> None:
    ctx = cloud.ctx  # type: ignore[attr-defined]
    cloud.ok("PUT", "/traits/CUSTOM_FAST")
    cloud.ok("PUT", "/resource_classes/" + CUSTOM_CLASSES[0])
    pool = cloud.provider("pool")
    cloud.inventories(pool, DISK_GB=1000, **{CUSTOM_CLASSES[0]: 64})
    cloud.ok("PUT", "/resource_providers/%s/aggregates" % pool, {
        "resource_provider_generation": cloud.generation(pool),
        "aggregates": [POOL_AGGREGATE]})
    for _ in range(6):
        cloud.host()
    for _ in range(8):
        cloud.claim()
    # Kept across the writes, as a worker keeps them, with and without traits.
    kept = {traits: KeptFigures() for traits in (False, True)}
    groups = tuple(f.group for f in capacity.configured_flavors(ctx.config))
    done = ["setup"]
    for step in range(STEPS + 1):
        resp = send(cloud.workers[0], "GET", "/metrics")
        assert resp.status_int == 200, resp.text
        scraped = _capacity_text(resp.body)
        assert scraped == _written_afresh(ctx), "after %s" % done
        for traits, figures in kept.items():
            assert (_everything(*figures.read(ctx, groups, traits))
                    == _everything(*KeptFigures().read(ctx, groups, traits))), (
                        traits, done)
        if step % API_CHECK_EVERY == 0 or step == STEPS:
            assert _checked_families(scraped) == _from_the_api(cloud), "after %s" % done
        done.append(cloud.step())
    assert {"move", "rename", "free", "reparent", "rename_class"} <= set(done), done
