"""What workers keep between requests never changes an answer.

Two workers with their own memory (:mod:`placement.kept`) and a third
that keeps nothing (:data:`placement.kept.NOTHING`) serve one database.
A seeded random sequence of writes, made through either remembering
worker, changes inventories, reserved amounts, traits, aggregates,
allocations, trees (providers created, deleted, created again under the
same uuid, given a new parent); after each write, allocation candidates
and provider lists must be byte for byte the same from all three.  This
is the property the README promises ("Running it for real").
"""

from __future__ import annotations

import random
import uuid
from typing import Any, Iterator

import pytest

from placement import app, kept
from placement.db import migration
from placement.db.api import Database
from tests import backends
from tests.functional.fixtures import make_conf
from tests.functional.inprocess import send

pytestmark = pytest.mark.slow

STEPS = 40
SEEDS = {"sqlite": 11, "postgresql": 12, "mysql": 13}
POOL_AGGREGATE = "ae000000-0000-4000-8000-000000000001"
ZONES = ["ae000000-0000-4000-8000-00000000000%d" % n for n in (2, 3)]
TRAITS = ["HW_CPU_X86_AVX2", "CUSTOM_FAST", "STORAGE_DISK_SSD"]

READS = [
    ("1.39", "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512"),
    ("1.39", "/allocation_candidates?resources=VCPU:2,DISK_GB:10&limit=5"),
    ("1.39", "/allocation_candidates?resources=VCPU:1&required=HW_CPU_X86_AVX2"),
    ("1.39", "/allocation_candidates?resources1=VCPU:1&resources2=VGPU:1"
             "&group_policy=isolate&limit=20"),
    ("1.39", "/allocation_candidates?resources=DISK_GB:50&member_of=" + POOL_AGGREGATE),
    ("1.39", "/allocation_candidates?resources=VCPU:1&member_of=in:%s,%s" % tuple(ZONES)),
    ("1.17", "/allocation_candidates?resources=VCPU:1,MEMORY_MB:256"),
    ("1.29", "/allocation_candidates?resources=VCPU:1&limit=3"),
    ("1.39", "/resource_providers"),
    ("1.39", "/resource_providers?resources=VCPU:2,MEMORY_MB:1024"),
    ("1.39", "/resource_providers?required=CUSTOM_FAST"),
    ("1.39", "/resource_providers?member_of=" + ZONES[0]),
    ("1.14", "/resource_providers?resources=DISK_GB:10"),
]


class Cloud:
    """The workers, the random source, and what the test has written."""

    def __init__(self, workers: list[Any], seed: int) -> None:
        self.workers = workers  # two remembering, one keeping nothing (last)
        self.rng = random.Random(seed)
        self.hosts: dict[str, list[str]] = {}  # root uuid -> its providers
        self.consumers: list[str] = []
        self.names = 0

    def ok(self, method: str, path: str, body: Any = None, version: str = "1.39") -> Any:
        writer = self.rng.choice(self.workers[:2])
        resp = send(writer, method, path, body, version=version)
        assert resp.status_int < 300, (method, path, resp.status, resp.text)
        return resp.json if resp.body else None

    def generation(self, rp: str) -> int:
        return int(self.ok("GET", "/resource_providers/" + rp)["generation"])

    def provider(self, name_hint: str, parent: str | None = None,
                 rp: str | None = None) -> str:
        rp = rp or str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        self.names += 1
        body = {"uuid": rp, "name": "%s-%d" % (name_hint, self.names)}
        if parent:
            body["parent_provider_uuid"] = parent
        self.ok("POST", "/resource_providers", body)
        return rp

    def inventories(self, rp: str, **totals: int) -> None:
        self.ok("PUT", "/resource_providers/%s/inventories" % rp, {
            "resource_provider_generation": self.generation(rp),
            "inventories": {name: {"total": total} for name, total in totals.items()}})

    def host(self) -> None:
        root = self.provider("host")
        providers = [root]
        if self.rng.random() < 0.5:
            self.inventories(root, VCPU=self.rng.choice([4, 8]), MEMORY_MB=4096,
                             DISK_GB=self.rng.choice([0, 100]) or 1)
        else:
            self.inventories(root, DISK_GB=200)
            for _numa in range(2):
                numa = self.provider("numa", parent=root)
                self.inventories(numa, VCPU=4, MEMORY_MB=2048)
                providers.append(numa)
            gpu = self.provider("gpu", parent=providers[1])
            self.inventories(gpu, VGPU=2)
            providers.append(gpu)
        self.ok("PUT", "/resource_providers/%s/aggregates" % root, {
            "resource_provider_generation": self.generation(root),
            "aggregates": [self.rng.choice(ZONES), POOL_AGGREGATE]})
        self.hosts[root] = providers

    # The writes, picked at random by step().

    def claim(self) -> None:
        found = send(self.workers[0], "GET",
                     "/allocation_candidates?resources=VCPU:1,MEMORY_MB:256&limit=10",
                     version="1.39").json["allocation_requests"]
        if not found:
            return
        consumer = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        resp = send(self.rng.choice(self.workers[:2]), "PUT", "/allocations/" + consumer, {
            "allocations": self.rng.choice(found)["allocations"],
            "project_id": "p", "user_id": "u", "consumer_generation": None,
            "consumer_type": "INSTANCE"}, version="1.39")
        assert resp.status_int in (204, 409), resp.text
        if resp.status_int == 204:
            self.consumers.append(consumer)

    def free(self) -> None:
        if self.consumers:
            consumer = self.consumers.pop(self.rng.randrange(len(self.consumers)))
            self.ok("DELETE", "/allocations/" + consumer)

    def reserve(self) -> None:
        rp = self.rng.choice([p for ps in self.hosts.values() for p in ps])
        inventories = self.ok("GET", "/resource_providers/%s/inventories" % rp)
        if not inventories["inventories"]:
            return
        name = self.rng.choice(sorted(inventories["inventories"]))
        inventory = inventories["inventories"][name]
        inventory["reserved"] = self.rng.randint(0, inventory["total"])
        resp = send(self.workers[1], "PUT",
                    "/resource_providers/%s/inventories/%s" % (rp, name),
                    dict(inventory, resource_provider_generation=inventories[
                        "resource_provider_generation"]), version="1.39")
        assert resp.status_int in (200, 409), resp.text

    def traits(self) -> None:
        rp = self.rng.choice([p for ps in self.hosts.values() for p in ps])
        chosen = [t for t in TRAITS if self.rng.random() < 0.5]
        self.ok("PUT", "/resource_providers/%s/traits" % rp, {
            "resource_provider_generation": self.generation(rp), "traits": chosen})

    def aggregates(self) -> None:
        root = self.rng.choice(sorted(self.hosts))
        # Before 1.19 aggregates are written without a generation bump.
        self.ok("PUT", "/resource_providers/%s/aggregates" % root,
                self.rng.sample(ZONES + [POOL_AGGREGATE], 2), version="1.18")

    def recreate(self) -> None:
        # A host without allocations deleted and registered again under the
        # same uuid, as nova does; ids must never be reused for it.
        idle = [root for root, ps in self.hosts.items() if len(ps) == 1
                and not self.ok("GET", "/resource_providers/%s/allocations" % root)[
                    "allocations"]]
        if not idle:
            return self.host()
        root = self.rng.choice(idle)
        self.ok("DELETE", "/resource_providers/" + root)
        self.provider("again", rp=root)
        self.inventories(root, VCPU=self.rng.choice([2, 16]), MEMORY_MB=8192)
        return None

    def reparent(self) -> None:
        # A tree's leaf moves under its other NUMA node (1.37).
        trees = [ps for ps in self.hosts.values() if len(ps) == 4]
        if not trees:
            return
        root, numa0, numa1, gpu = self.rng.choice(trees)
        current = self.ok("GET", "/resource_providers/" + gpu)
        target = numa1 if current["parent_provider_uuid"] == numa0 else numa0
        self.ok("PUT", "/resource_providers/" + gpu, {
            "name": current["name"], "parent_provider_uuid": target}, version="1.37")

    def step(self) -> str:
        write = self.rng.choice([self.claim, self.claim, self.free, self.reserve,
                                 self.traits, self.aggregates, self.host,
                                 self.recreate, self.reparent])
        write()
        return write.__name__


@pytest.fixture(params=sorted(SEEDS))
def cloud(request: pytest.FixtureRequest) -> Iterator[Cloud]:
    backend = request.param
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        databases = [Database(make_conf(url)) for _ in range(3)]
        try:
            migration.upgrade(databases[0])
            workers = [app.build_app(make_conf(url), databases[0]),
                       app.build_app(make_conf(url), databases[1]),
                       app.build_app(make_conf(url), databases[2], kept=kept.NOTHING)]
            yield Cloud(workers, SEEDS[backend])
        finally:
            for db in databases:
                db.dispose()


def _answers(cloud: Cloud) -> list[list[bytes]]:
    answers = []
    for version, path in READS:
        bodies = []
        for worker in cloud.workers:
            resp = send(worker, "GET", path, version=version)
            assert resp.status_int == 200, (path, resp.text)
            bodies.append(resp.body)
        answers.append(bodies)
    return answers


def test_answers_are_the_same_with_and_without_memory(cloud: Cloud) -> None:
    cloud.ok("PUT", "/traits/CUSTOM_FAST")
    # The pool shares disk with every host in its aggregate.
    pool = cloud.provider("pool")
    cloud.inventories(pool, DISK_GB=1000)
    cloud.ok("PUT", "/resource_providers/%s/traits" % pool, {
        "resource_provider_generation": cloud.generation(pool),
        "traits": ["MISC_SHARES_VIA_AGGREGATE"]})
    cloud.ok("PUT", "/resource_providers/%s/aggregates" % pool, {
        "resource_provider_generation": cloud.generation(pool),
        "aggregates": [POOL_AGGREGATE]})
    for _ in range(6):
        cloud.host()
    done = ["setup"]
    for _ in range(STEPS):
        for (version, path), bodies in zip(READS, _answers(cloud), strict=True):
            assert bodies[0] == bodies[2] and bodies[1] == bodies[2], (
                "after %s, %s at %s differs between remembering and forgetful "
                "workers:\n%s" % (done, path, version,
                                  "\n".join(b[:600].decode() for b in bodies)))
        done.append(cloud.step())
