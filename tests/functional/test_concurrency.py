"""Concurrent claims against a real server: nothing lost, nothing overcommitted.

For each database backend (PostgreSQL, MariaDB/MySQL, and SQLite, whose
writers must queue on the database lock rather than fail with "database is
locked") a fresh database is migrated with ``placement-manage db sync`` and
served by gunicorn with two worker processes.  Sixteen client threads then claim, move, swap (POST
/allocations exchanging two consumers' allocations) and release
allocations on three small providers until their capacity runs out, each
client keeping its own record of what it holds.  Afterwards:

* no request failed with a 5xx or anything unexpected;
* every 409 was a capacity refusal or a generation conflict;
* capacity did run out (some claims were refused for it);
* for every provider and class, usage is within capacity and equals the
  sum of what the clients believe they hold, and every consumer's
  allocations are exactly what its client believes;
* two consumers that all clients rewrite with the generation they just
  read went through one unbroken chain of generations: no two writers
  succeeded from the same one.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import uuid
from typing import Any

import pytest

from tests import backends
from tests.functional.live_server import Client, serve

pytestmark = pytest.mark.slow

CLIENTS = 16
OPERATIONS_PER_CLIENT = 30
PROVIDERS = 3
# Per provider: 16 VCPU and 8 GB; a claim takes 1 or 2 VCPU and 512 MB each.
INVENTORY = {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 8192}}
CAPACITY_MESSAGE = "would exceed the capacity"
# Consumers every client rewrites, with the generation it last read.
SHARED = ["5a5a5a5a-0000-4000-8000-000000000001", "5a5a5a5a-0000-4000-8000-000000000002"]


@dataclasses.dataclass
class Held:
    """What a client believes one of its consumers holds."""

    provider: str
    resources: dict[str, int]
    generation: int


@dataclasses.dataclass
class Outcome:
    statuses: dict[int, int] = dataclasses.field(default_factory=dict)
    capacity_refusals: int = 0
    generation_conflicts: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)


class Worker(threading.Thread):
    """One client: random claims, moves, swaps and releases."""

    def __init__(self, client: Client, providers: list[str], seed: int) -> None:
        super().__init__()
        self.client = client
        self.providers = providers
        self.random = random.Random(seed)
        self.held: dict[str, Held] = {}
        # Successful rewrites of shared consumers: (consumer, generation
        # expected, allocation written).
        self.rewrites: list[tuple[str, int | None, Held]] = []
        self.outcome = Outcome()

    def _body(self, held: Held | None) -> dict[str, Any]:
        return {"allocations": {held.provider: {"resources": held.resources}}
                if held else {},
                "project_id": "concurrency", "user_id": "client",
                "consumer_type": "INSTANCE"}

    def _send(self, method: str, path: str, body: Any = None) -> bool:
        """True on success; refusals are counted and checked."""
        status, data = self.client.request(method, path, body)
        self.outcome.statuses[status] = self.outcome.statuses.get(status, 0) + 1
        if status in (200, 204):
            return True
        error = (data or {}).get("errors", [{}])[0]
        if status == 409 and error.get("code") == "placement.concurrent_update":
            self.outcome.generation_conflicts += 1
        elif status == 409 and CAPACITY_MESSAGE in error.get("detail", ""):
            self.outcome.capacity_refusals += 1
        else:
            self.outcome.problems.append("%s %s: %s %s" % (method, path, status, data))
        return False

    def claim(self) -> None:
        vcpus = self.random.choice((1, 2))
        wanted = Held(self.random.choice(self.providers),
                      {"VCPU": vcpus, "MEMORY_MB": 512 * vcpus}, 1)
        consumer = str(uuid.uuid4())
        body = dict(self._body(wanted), consumer_generation=None)
        if self._send("PUT", "/allocations/%s" % consumer, body):
            self.held[consumer] = wanted

    def move(self) -> None:
        consumer = self.random.choice(sorted(self.held))
        old = self.held[consumer]
        new = Held(self.random.choice(self.providers), dict(old.resources),
                   old.generation + 1)
        body = dict(self._body(new), consumer_generation=old.generation)
        if self._send("PUT", "/allocations/%s" % consumer, body):
            self.held[consumer] = new

    def swap(self) -> None:
        first, second = self.random.sample(sorted(self.held), 2)
        a, b = self.held[first], self.held[second]
        new_a = Held(b.provider, dict(b.resources), a.generation + 1)
        new_b = Held(a.provider, dict(a.resources), b.generation + 1)
        body = {first: dict(self._body(new_a), consumer_generation=a.generation),
                second: dict(self._body(new_b), consumer_generation=b.generation)}
        if self._send("POST", "/allocations", body):
            self.held[first], self.held[second] = new_a, new_b

    def release(self) -> None:
        consumer = self.random.choice(sorted(self.held))
        if self.random.random() < 0.5:
            ok = self._send("DELETE", "/allocations/%s" % consumer)
        else:
            body = dict(self._body(None),
                        consumer_generation=self.held[consumer].generation)
            ok = self._send("PUT", "/allocations/%s" % consumer, body)
        if ok:
            del self.held[consumer]

    def rewrite_shared(self) -> None:
        """Read a shared consumer and write it back moved: of the clients
        that read the same generation, exactly one may succeed."""
        consumer = self.random.choice(SHARED)
        status, data = self.client.request("GET", "/allocations/%s" % consumer)
        if status != 200:
            self.outcome.problems.append("GET %s: %s %s" % (consumer, status, data))
            return
        generation = data.get("consumer_generation")
        new = Held(self.random.choice(self.providers), {"VCPU": 1, "MEMORY_MB": 512},
                   (generation or 0) + 1)
        body = dict(self._body(new), consumer_generation=generation)
        if self._send("PUT", "/allocations/%s" % consumer, body):
            self.rewrites.append((consumer, generation, new))

    def run(self) -> None:
        try:
            for _ in range(OPERATIONS_PER_CLIENT):
                roll = self.random.random()
                if roll < 0.1:
                    self.rewrite_shared()
                elif roll < 0.55 or not self.held:
                    self.claim()
                elif roll < 0.75:
                    self.move()
                elif roll < 0.9 and len(self.held) >= 2:
                    self.swap()
                else:
                    self.release()
        except Exception as exc:  # a dead client must fail the test
            self.outcome.problems.append("client crashed: %r" % exc)


def _create_providers(client: Client) -> list[str]:
    uuids = []
    for index in range(PROVIDERS):
        rp = str(uuid.uuid4())
        status, _ = client.request("POST", "/resource_providers",
                                   {"name": "concurrency-%d" % index, "uuid": rp})
        assert status == 200
        status, _ = client.request(
            "PUT", "/resource_providers/%s/inventories" % rp,
            {"resource_provider_generation": 0, "inventories": INVENTORY})
        assert status == 200
        uuids.append(rp)
    return uuids


def _shared_outcome(client: Client, workers: list[Worker]) -> dict[str, Held]:
    """Check the rewrites of shared consumers formed one chain of
    generations (no two succeeded from the same one: no lost update) and
    return what each shared consumer holds: the last rewrite."""
    final = {}
    for consumer in SHARED:
        rewrites = [(generation, held) for worker in workers
                    for shared, generation, held in worker.rewrites if shared == consumer]
        status, data = client.request("GET", "/allocations/%s" % consumer)
        if not rewrites:
            assert data["allocations"] == {}
            continue
        expected = sorted((generation or 0) for generation, _ in rewrites)
        assert expected == list(range(len(rewrites))), (consumer, expected)
        assert data["consumer_generation"] == len(rewrites)
        final[consumer] = max(rewrites, key=lambda item: item[0] or 0)[1]
    return final


def _verify(client: Client, providers: list[str], workers: list[Worker]) -> None:
    consumers: dict[str, Held] = _shared_outcome(client, workers)
    for worker in workers:
        consumers.update(worker.held)
    believed: dict[tuple[str, str], int] = {}
    for held in consumers.values():
        for name, amount in held.resources.items():
            key = (held.provider, name)
            believed[key] = believed.get(key, 0) + amount
    for rp in providers:
        status, data = client.request("GET", "/resource_providers/%s/usages" % rp)
        assert status == 200
        for name, inventory in INVENTORY.items():
            used = data["usages"][name]
            assert used <= inventory["total"], "overcommit of %s on %s" % (name, rp)
            assert used == believed.get((rp, name), 0), (
                "usage of %s on %s is %d, clients hold %d"
                % (name, rp, used, believed.get((rp, name), 0)))
        status, data = client.request(
            "GET", "/resource_providers/%s/allocations" % rp)
        on_provider = {c for c, held in consumers.items() if held.provider == rp}
        assert set(data["allocations"]) == on_provider
    for consumer, held in consumers.items():
        status, data = client.request("GET", "/allocations/%s" % consumer)
        assert data["allocations"] == {
            held.provider: {"resources": held.resources,
                            "generation": data["allocations"][held.provider]
                            ["generation"]}}
        assert data["consumer_generation"] == held.generation


@pytest.mark.parametrize("backend", ["postgresql", "mysql", "sqlite"])
def test_concurrent_claims_never_overcommit(backend: str) -> None:
    backends.require(backend)
    with serve(backend, workers=2) as client:
        providers = _create_providers(client)
        workers = [Worker(client, providers, seed) for seed in range(CLIENTS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=300)
            assert not worker.is_alive(), "a client hung"
        problems = [p for w in workers for p in w.outcome.problems]
        assert problems == [], problems[:10]
        statuses: dict[int, int] = {}
        for worker in workers:
            for status, count in worker.outcome.statuses.items():
                statuses[status] = statuses.get(status, 0) + count
        assert not [s for s in statuses if s >= 500], statuses
        assert sum(w.outcome.capacity_refusals for w in workers) > 0, (
            "capacity never ran out: %s" % statuses)
        _verify(client, providers, workers)
