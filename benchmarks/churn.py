"""Workload 7, ``churn``: a cloud being scheduled into while everything moves.

The read workloads ask one question of data nobody writes.  Here a seeded
model of a cloud and of Nova's scheduler and report client keep Placement
busy the way a real region does, and the figure that counts is how many
instances get scheduled per second, and what each costs the server.

The cloud (``--hosts``, 500):

* 60 % flat compute nodes (VCPU, MEMORY_MB, DISK_GB on the root);
* 20 % NUMA hosts: DISK_GB on the root, two NUMA children with VCPU and
  MEMORY_MB (so one host answers with up to four candidates);
* 10 % GPU hosts: a flat root with two physical GPU children of 8 VGPU;
* 10 % diskless hosts that take DISK_GB from one sharing disk pool
  (``MISC_SHARES_VIA_AGGREGATE``, linked by an aggregate);
* four aggregates used as availability zones (host i in zone i % 4), and
  ``HW_CPU_X86_AVX2`` on about two thirds of the roots.

Before the clock starts, instances are placed on it (``--churn-fill`` of the
memory) with ``POST /allocations``.  Then for ``--churn-seconds`` (60) per
limit of ``--churn-limits`` (50 and 1000, one after the other on the same
cloud):

* ``--churn-schedulers`` (8) schedulers loop: ask
  ``GET /allocation_candidates`` for a flavor of the mix (a third of the
  requests pinned to a zone, some requiring AVX2, one flavor asking for a
  VGPU in a numbered group) with the phase's ``limit``, weigh the hosts of the candidates by free
  memory (from the provider summaries, as Nova's RAM weigher does), claim
  the best with ``PUT /allocations`` and ``consumer_generation: null``, and
  on 409 try the next host (three per answer, then ask again); answers
  are read and weighed in ``WEIGHERS`` processes, as Nova's schedulers are
  processes of their own;
* one operation in twelve is a cold migration instead: read the
  instance's allocations, move them to a migration consumer
  (``POST /allocations``), schedule and claim a destination on another
  host for the instance, and confirm by deleting the migration's
  allocations (or move them back when no host fits);
* terminations (``DELETE /allocations``) keep the number of instances
  where the fill put it, so scheduling never runs out of room;
* every host sends a heartbeat every ``--heartbeat-interval`` (60) seconds:
  ``GET /resource_providers?in_tree=``, the inventories of each provider
  of the tree, and one time in ten a ``PUT`` of the root's inventories
  with ``reserved`` disk changed (retried once on a generation conflict).

Reported: scheduled instances per second (boots plus migrations), server
CPU per scheduled instance (the gunicorn tree's CPU from ``/proc``), every
request kind's p50 / p99, 409s, and the audit after the clock stops: no
usage over capacity, usages equal to the allocations listed per provider,
every allocation the client was told it got present and nothing else, and
the candidates of a few final queries (no limit) equal to what really fits,
computed by the model from the inventories and usages read back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import multiprocessing
import os
import random
import time
from typing import Any, Optional

from benchmarks import sharedbench

sharedbench.directory()  # benchlib must be importable below

from benchlib import http  # noqa: E402
from benchlib import measure  # noqa: E402
from benchlib import scenarios as kit  # noqa: E402
from benchlib import workload  # noqa: E402

Result = dict[str, Any]
Alloc = dict[str, dict[str, int]]      # provider uuid -> {class: amount}

ZONES = 4
# Hosts a scheduler tries per answer before asking again.
HOSTS_PER_ANSWER = 3
# Processes that read and weigh the schedulers' answers.  Nova's
# schedulers are processes of their own; here, parsing a limit=1000 answer
# (several ms) on the event loop held up every other request's reading and
# closing, and since gunicorn 26 a sync worker waits for the client to
# close the connection after each response: the server's workers sat idle
# behind a busy client instead of serving.
WEIGHERS = 2
DISK_RESERVED = (0, 50)                 # what heartbeats switch between
NOT_DISABLED = "!COMPUTE_STATUS_DISABLED"


def uid(*parts: Any) -> str:
    return workload.det_uuid("churn", *parts)


ZONE_AGGREGATES = [uid("zone", z) for z in range(ZONES)]
SHARED_AGGREGATE = uid("shared-disk")
POOL = uid("disk-pool")


# --------------------------------------------------------------------------
# The cloud
# --------------------------------------------------------------------------

class Provider:
    __slots__ = ("uuid", "name", "parent", "inventory", "traits",
                 "aggregates")

    def __init__(self, uuid: str, name: str, parent: Optional[str],
                 inventory: dict[str, dict[str, Any]],
                 traits: tuple[str, ...] = (),
                 aggregates: tuple[str, ...] = ()):
        self.uuid, self.name, self.parent = uuid, name, parent
        self.inventory, self.traits = inventory, traits
        self.aggregates = aggregates


class Host:
    """One compute node's tree; ``providers[0]`` is the root."""

    __slots__ = ("index", "kind", "zone", "providers", "local_disk")

    def __init__(self, index: int, kind: str, zone: int,
                 providers: list[Provider]):
        self.index, self.kind, self.zone = index, kind, zone
        self.providers = providers
        self.local_disk = "DISK_GB" in providers[0].inventory

    @property
    def root(self) -> str:
        return self.providers[0].uuid


def _compute_inventory(vcpus: int, memory_mb: int) -> dict[str, Any]:
    return {"VCPU": {"total": vcpus, "max_unit": vcpus,
                     "allocation_ratio": 2.0},
            "MEMORY_MB": {"total": memory_mb, "reserved": 512,
                          "max_unit": memory_mb}}


def _disk(total: int = 4000) -> dict[str, Any]:
    return {"total": total, "reserved": DISK_RESERVED[0], "max_unit": total}


# Host i is of kind KINDS[i % 10].
KINDS = ("flat",) * 6 + ("numa", "numa", "gpu", "shared")


def build_cloud(hosts: int, seed: int) -> list[Host]:
    rng = random.Random("cloud-%d" % seed)
    cloud = []
    for i in range(hosts):
        kind = KINDS[i % 10]
        zone = i % ZONES
        big = rng.random() < 0.5
        vcpus, memory = (48, 196608) if big else (32, 131072)
        traits = (("HW_CPU_X86_AVX2",) if rng.random() < 0.67
                  else ("HW_CPU_X86_SSE2",))
        aggregates: tuple[str, ...] = (ZONE_AGGREGATES[zone],)
        name = "cn-%05d" % i
        root_uuid = uid("host", i)
        if kind == "numa":
            root = Provider(root_uuid, name, None, {"DISK_GB": _disk()},
                            traits, aggregates)
            numa = [Provider(uid("host", i, "numa", n), "%s-numa%d" % (name, n),
                             root_uuid, _compute_inventory(vcpus // 2,
                                                           memory // 2),
                             ("HW_NUMA_ROOT",))
                    for n in range(2)]
            providers = [root] + numa
        else:
            inventory = _compute_inventory(vcpus, memory)
            if kind == "shared":
                aggregates += (SHARED_AGGREGATE,)
            else:
                inventory["DISK_GB"] = _disk()
            root = Provider(root_uuid, name, None, inventory, traits,
                            aggregates)
            providers = [root]
            if kind == "gpu":
                providers += [Provider(uid("host", i, "gpu", g),
                                       "%s-pgpu%d" % (name, g), root_uuid,
                                       {"VGPU": {"total": 8, "max_unit": 1}})
                              for g in range(2)]
        cloud.append(Host(i, kind, zone, providers))
    return cloud


def pool_provider() -> Provider:
    return Provider(POOL, "shared-disk-pool", None,
                    {"DISK_GB": {"total": 10_000_000, "max_unit": 100_000}},
                    ("MISC_SHARES_VIA_AGGREGATE",), (SHARED_AGGREGATE,))


def load_chain(p: Provider) -> list[workload.Step]:
    """Create one provider with its inventory, traits and aggregates."""
    path = "/resource_providers/%s" % p.uuid
    body: Result = {"uuid": p.uuid, "name": p.name}
    if p.parent:
        body["parent_provider_uuid"] = p.parent
    steps = [workload.Step("POST", "/resource_providers", body),
             workload.Step("PUT", path + "/inventories",
                           {"resource_provider_generation": 0,
                            "inventories": p.inventory})]
    generation = 1
    if p.traits:
        steps.append(workload.Step("PUT", path + "/traits",
                                   {"resource_provider_generation": generation,
                                    "traits": list(p.traits)}))
        generation += 1
    if p.aggregates:
        steps.append(workload.Step("PUT", path + "/aggregates",
                                   {"resource_provider_generation": generation,
                                    "aggregates": list(p.aggregates)}))
    return steps


# --------------------------------------------------------------------------
# Flavors and what fits
# --------------------------------------------------------------------------

class Flavor:
    __slots__ = ("name", "resources", "vgpu", "weight")

    def __init__(self, name: str, vcpu: int, memory_mb: int, disk_gb: int,
                 weight: int, vgpu: int = 0):
        self.name, self.weight, self.vgpu = name, weight, vgpu
        self.resources = {"VCPU": vcpu, "MEMORY_MB": memory_mb,
                          "DISK_GB": disk_gb}

    def query(self, zone: Optional[int] = None, avx2: bool = False,
              limit: Optional[int] = None) -> str:
        parts = ["resources=" + ",".join(
            "%s:%d" % kv for kv in sorted(self.resources.items()))]
        # Nova forbids COMPUTE_STATUS_DISABLED in every request, but
        # upstream 16.0.0 answers 500 on PostgreSQL when a forbidden trait
        # comes with member_of (it compares trait ids with trait names), so
        # requests pinned to a zone go without it.
        required = ([NOT_DISABLED] if zone is None else []) \
            + (["HW_CPU_X86_AVX2"] if avx2 else [])
        if required:
            parts.append("required=" + ",".join(required))
        if self.vgpu:
            parts += ["resources1=VGPU:%d" % self.vgpu, "group_policy=none"]
        if zone is not None:
            parts.append("member_of=" + ZONE_AGGREGATES[zone])
        if limit:
            parts.append("limit=%d" % limit)
        return "/allocation_candidates?" + "&".join(parts)


FLAVORS = [Flavor("small", 1, 2048, 20, 40), Flavor("medium", 2, 4096, 40, 30),
           Flavor("large", 4, 8192, 80, 15),
           Flavor("gpu", 4, 8192, 80, 2, vgpu=1)]
FLAVOR_WEIGHTS = [f.weight for f in FLAVORS]


class Capacity:
    """Free room per provider and class, from inventories and usages."""

    def __init__(self) -> None:
        self.inventory: dict[str, dict[str, dict[str, Any]]] = {}
        self.used: dict[str, dict[str, int]] = {}

    def set_inventory(self, rp: str, inventory: dict[str, dict]) -> None:
        full = {}
        for rc, inv in inventory.items():
            full[rc] = {"total": inv["total"],
                        "reserved": inv.get("reserved", 0),
                        "min_unit": inv.get("min_unit", 1),
                        "max_unit": inv.get("max_unit", inv["total"]),
                        "step_size": inv.get("step_size", 1),
                        "allocation_ratio": inv.get("allocation_ratio", 1.0)}
        self.inventory[rp] = full
        self.used.setdefault(rp, {})

    def fits(self, rp: str, rc: str, amount: int) -> bool:
        inv = self.inventory.get(rp, {}).get(rc)
        if inv is None:
            return False
        if not inv["min_unit"] <= amount <= inv["max_unit"] \
                or amount % inv["step_size"]:
            return False
        capacity = (inv["total"] - inv["reserved"]) * inv["allocation_ratio"]
        return self.used[rp].get(rc, 0) + amount <= capacity

    def add(self, alloc: Alloc, sign: int = 1) -> None:
        for rp, resources in alloc.items():
            mine = self.used.setdefault(rp, {})
            for rc, amount in resources.items():
                mine[rc] = mine.get(rc, 0) + sign * amount


def host_candidates(host: Host, flavor: Flavor, cap: Capacity,
                    pool: bool = True) -> list[Alloc]:
    """Every allocation request of ``host`` for ``flavor`` (no traits or
    aggregates judged here): each class of the unnumbered group from any
    provider of the tree (DISK_GB from the pool for diskless hosts), the
    VGPU of the numbered group from a GPU."""
    options: list[list[tuple[str, str, int]]] = []
    for rc, amount in sorted(flavor.resources.items()):
        where = [p.uuid for p in host.providers if cap.fits(p.uuid, rc, amount)]
        if pool and not host.local_disk and rc == "DISK_GB" \
                and cap.fits(POOL, rc, amount):
            where.append(POOL)
        options.append([(rp, rc, amount) for rp in where])
    if flavor.vgpu:
        options.append([(p.uuid, "VGPU", flavor.vgpu)
                        for p in host.providers
                        if cap.fits(p.uuid, "VGPU", flavor.vgpu)])
    out = []
    for combo in itertools.product(*options):
        alloc: Alloc = {}
        for rp, rc, amount in combo:
            alloc.setdefault(rp, {})[rc] = amount
        # A provider asked for two classes must hold both at once; the
        # classes here never share a provider's capacity, so this is it.
        out.append(alloc)
    return out


def weigh(root_of: dict[str, str], body: Result,
          exclude: Optional[str]) -> list[Alloc]:
    """Candidates of distinct hosts, best first: most free memory in the
    host's tree (the summaries), a host's first candidate only.
    ``root_of`` maps each compute provider to its host's root."""
    summaries = body["provider_summaries"]
    free: dict[str, float] = {}
    for rp, summary in summaries.items():
        root = root_of.get(rp)
        mem = summary["resources"].get("MEMORY_MB")
        if root and mem:
            free[root] = free.get(root, 0) + mem["capacity"] - mem["used"]
    best: dict[str, Alloc] = {}
    for request in body["allocation_requests"]:
        roots = {root_of[rp] for rp in request["allocations"] if rp in root_of}
        if len(roots) != 1:
            continue
        root = roots.pop()
        if root != exclude and root not in best:
            best[root] = {rp: dict(a["resources"])
                          for rp, a in request["allocations"].items()}
    return [best[r] for r in sorted(best, key=lambda r: -free.get(r, 0))]


# In a weigher process: provider uuid -> its host's root, set once.
_WEIGHER_ROOTS: dict[str, str] = {}


def _start_weigher(root_of: dict[str, str]) -> None:
    _WEIGHER_ROOTS.update(root_of)


def _weigh_answer(payload: bytes, exclude: Optional[str]) -> list[Alloc]:
    """The hosts a scheduler tries, best first, from an answer's text."""
    return weigh(_WEIGHER_ROOTS, json.loads(payload), exclude)[:HOSTS_PER_ANSWER]


def canonical(alloc: Alloc) -> str:
    return json.dumps(alloc, sort_keys=True)


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------

class Instance:
    __slots__ = ("uuid", "flavor", "alloc", "project", "user", "busy")

    def __init__(self, uuid: str, flavor: Flavor, alloc: Alloc,
                 project: str, user: str):
        self.uuid, self.flavor, self.alloc = uuid, flavor, alloc
        self.project, self.user, self.busy = project, user, False


class Bag:
    """Instances by uuid, with a fair random pick in constant time."""

    def __init__(self) -> None:
        self.items: list[Instance] = []
        self.where: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Any:
        return iter(self.items)

    def add(self, inst: Instance) -> None:
        self.where[inst.uuid] = len(self.items)
        self.items.append(inst)

    def remove(self, inst: Instance) -> None:
        i = self.where.pop(inst.uuid)
        last = self.items.pop()
        if last is not inst:
            self.items[i] = last
            self.where[last.uuid] = i

    def pick_idle(self, rng: random.Random) -> Optional[Instance]:
        """A random instance no operation holds (None after 20 misses)."""
        for _ in range(20):
            if not self.items:
                return None
            inst = rng.choice(self.items)
            if not inst.busy:
                return inst
        return None


class Churn:
    """The client side: ledger of what Placement said yes to, and figures."""

    def __init__(self, ctx: kit.Context, limit: int):
        cfg = ctx.cfg
        self.ctx, self.limit = ctx, limit
        self.client: http.Client = ctx.client
        self.seed = cfg.churn_seed
        self.cloud = build_cloud(cfg.hosts, self.seed)
        self.pool = pool_provider()
        self.root_of: dict[str, Host] = {}
        for host in self.cloud:
            for p in host.providers:
                self.root_of[p.uuid] = host
        self.instances = Bag()
        self.migrations: dict[str, Alloc] = {}   # consumer -> allocation
        self.latency: dict[str, list[float]] = {}
        self.status: dict[str, dict[int, int]] = {}
        self.errors: list[str] = []
        self.counts = dict.fromkeys(
            ("boots", "migrations", "migrations_reverted", "no_valid_host",
             "claim_409", "requeries", "terminations", "heartbeats",
             "heartbeats_skipped", "reserved_changes", "reserved_409"), 0)
        self.target = 0
        self.stop = False
        self.serial = itertools.count()
        self.weighers: Optional[concurrent.futures.Executor] = None

    # ---------------------------------------------------------------- HTTP

    async def call(self, kind: str, method: str, path: str,
                   body: Any = None) -> Optional[http.Response]:
        try:
            resp = await self.client.request(method, path, body)
        except http.HTTPError as exc:
            self.error("%s: %s" % (kind, exc))
            return None
        self.latency.setdefault(kind, []).append(resp.elapsed)
        per = self.status.setdefault(kind, {})
        per[resp.status] = per.get(resp.status, 0) + 1
        if resp.status >= 500 or resp.status in (400, 404):
            self.error("%s %s %s -> %d %s" % (kind, method, path[:80],
                                              resp.status,
                                              resp.error_text(200)))
        return resp

    def error(self, text: str) -> None:
        if len(self.errors) < 1000:
            self.errors.append(text)

    # ---------------------------------------------------------------- load

    def load(self) -> Result:
        chains = [load_chain(self.pool)]
        for host in self.cloud:
            chains.append([s for p in host.providers for s in load_chain(p)])
        providers = 1 + sum(len(h.providers) for h in self.cloud)
        out = kit.load(self.ctx, chains, providers, "churn")
        out.update(asyncio.run(self.prefill()))
        return out

    def _owner(self, n: int) -> tuple[str, str]:
        return uid("project", n % 20), uid("user", n % 50)

    async def prefill(self) -> Result:
        """Instances placed by the model (seeded, random hosts that fit)
        until ``--churn-fill`` of the memory is used."""
        rng = random.Random("prefill-%d" % self.seed)
        cap = Capacity()
        cap.set_inventory(POOL, self.pool.inventory)
        memory = 0.0
        for host in self.cloud:
            for p in host.providers:
                cap.set_inventory(p.uuid, p.inventory)
                inv = p.inventory.get("MEMORY_MB")
                if inv:
                    memory += inv["total"] - inv.get("reserved", 0)
        goal, used, misses = self.ctx.cfg.churn_fill * memory, 0, 0
        gpu_hosts = [h for h in self.cloud if h.kind == "gpu"]
        placed: list[Instance] = []
        while used < goal and misses < 200:
            flavor = rng.choices(FLAVORS, FLAVOR_WEIGHTS)[0]
            hosts = gpu_hosts if flavor.vgpu else self.cloud
            for _ in range(20):
                options = host_candidates(rng.choice(hosts), flavor, cap)
                if options:
                    break
            else:
                misses += 1
                continue
            alloc = rng.choice(options)
            cap.add(alloc)
            used += flavor.resources["MEMORY_MB"]
            n = len(placed)
            project, user = self._owner(n)
            placed.append(Instance(uid("prefill", n), flavor, alloc, project,
                                   user))
        # Three lanes of batches at once; hosts never share a lane, and
        # every instance on the disk pool goes to lane 0, so the batches in
        # flight touch disjoint providers.
        lanes: list[list[Instance]] = [[], [], []]
        for inst in placed:
            host = self.root_of[next(rp for rp in inst.alloc
                                     if rp in self.root_of)]
            lanes[0 if POOL in inst.alloc else host.index % 3].append(inst)

        async def lane(items: list[Instance]) -> None:
            for start in range(0, len(items), 50):
                body = {i.uuid: {"allocations": {rp: {"resources": r}
                                                 for rp, r in i.alloc.items()},
                                 "project_id": i.project, "user_id": i.user,
                                 "consumer_generation": None,
                                 "consumer_type": "INSTANCE"}
                        for i in items[start:start + 50]}
                resp = await self.call("prefill POST /allocations", "POST",
                                       "/allocations", body)
                if resp is None or resp.status != 204:
                    raise RuntimeError("prefill failed: %s" % (
                        resp and resp.error_text(300)))
        started = time.perf_counter()
        await asyncio.gather(*(lane(items) for items in lanes))
        for inst in placed:
            self.instances.add(inst)
        self.target = len(placed)
        self.ctx.log("  churn: %d instances placed in %.1fs (%.0f%% of the "
                     "memory)" % (len(placed), time.perf_counter() - started,
                                  100.0 * used / memory))
        return {"instances": len(placed),
                "memory_fill": round(used / memory, 3)}

    # ---------------------------------------------------------- scheduling

    async def schedule(self, rng: random.Random, flavor: Flavor,
                       consumer: str, project: str, user: str,
                       exclude: Optional[str] = None) -> Optional[Alloc]:
        """Ask, weigh, claim; up to HOSTS_PER_ANSWER hosts per answer,
        three answers."""
        zone = rng.randrange(ZONES) if rng.random() < 0.33 else None
        avx2 = rng.random() < 0.15
        path = flavor.query(zone, avx2, self.limit)
        for attempt in range(3):
            if attempt:
                self.counts["requeries"] += 1
            resp = await self.call("GET /allocation_candidates", "GET", path)
            if resp is None or resp.status != 200:
                return None
            hosts = await asyncio.get_running_loop().run_in_executor(
                self.weighers, _weigh_answer, resp.body, exclude)
            if not hosts:
                self.counts["no_valid_host"] += 1
                return None
            for alloc in hosts:
                body = {"allocations": {rp: {"resources": r}
                                        for rp, r in alloc.items()},
                        "project_id": project, "user_id": user,
                        "consumer_generation": None,
                        "consumer_type": "INSTANCE"}
                put = await self.call("PUT /allocations", "PUT",
                                      "/allocations/%s" % consumer, body)
                if put is None:
                    return None
                if put.status == 204:
                    return alloc
                if put.status != 409:
                    return None
                self.counts["claim_409"] += 1
        return None

    async def boot(self, rng: random.Random, sched: int) -> None:
        flavor = rng.choices(FLAVORS, FLAVOR_WEIGHTS)[0]
        consumer = uid("instance", sched, next(self.serial))
        project, user = self._owner(rng.randrange(1000))
        alloc = await self.schedule(rng, flavor, consumer, project, user)
        if alloc is not None:
            self.instances.add(Instance(consumer, flavor, alloc, project,
                                        user))
            self.counts["boots"] += 1

    def _move_body(self, source: str, target: str, inst: Instance,
                   alloc: Alloc, source_generation: Optional[int],
                   source_type: str, target_type: str) -> Result:
        """POST /allocations moving ``alloc`` from consumer ``source`` to
        ``target`` (which holds nothing yet)."""
        common = {"project_id": inst.project, "user_id": inst.user}
        return {
            source: dict(common, allocations={},
                         consumer_generation=source_generation,
                         consumer_type=source_type),
            target: dict(common, allocations={rp: {"resources": r}
                                              for rp, r in alloc.items()},
                         consumer_generation=None, consumer_type=target_type),
        }

    async def _generation(self, consumer: str) -> Optional[int]:
        resp = await self.call("GET /allocations", "GET",
                               "/allocations/%s" % consumer)
        if resp is None or resp.status != 200:
            return None
        return resp.json().get("consumer_generation")

    async def migrate(self, rng: random.Random) -> None:
        """Cold migration with a migration consumer holding the source."""
        inst = self.instances.pick_idle(rng)
        if inst is None:
            return
        inst.busy = True
        try:
            await self._migrate(rng, inst)
        finally:
            inst.busy = False

    async def _migrate(self, rng: random.Random, inst: Instance) -> None:
        generation = await self._generation(inst.uuid)
        if generation is None:
            return
        migration = uid("migration", next(self.serial))
        source = inst.alloc
        resp = await self.call("POST /allocations (move)", "POST",
                               "/allocations", self._move_body(
                                   inst.uuid, migration, inst, source,
                                   generation, "INSTANCE", "MIGRATION"))
        if resp is None or resp.status != 204:
            return
        self.migrations[migration] = source
        inst.alloc = {}
        source_host = next(self.root_of[rp].root for rp in source
                           if rp in self.root_of)
        alloc = await self.schedule(rng, inst.flavor, inst.uuid, inst.project,
                                    inst.user, exclude=source_host)
        if alloc is not None:
            inst.alloc = alloc
            resp = await self.call("DELETE /allocations", "DELETE",
                                   "/allocations/%s" % migration)
            if resp is not None and resp.status == 204:
                del self.migrations[migration]
            self.counts["migrations"] += 1
            return
        # Revert: the instance takes its source allocation back.
        generation = await self._generation(migration)
        resp = await self.call("POST /allocations (move)", "POST",
                               "/allocations", self._move_body(
                                   migration, inst.uuid, inst, source,
                                   generation, "MIGRATION", "INSTANCE"))
        if resp is not None and resp.status == 204:
            del self.migrations[migration]
            inst.alloc = source
            self.counts["migrations_reverted"] += 1

    async def scheduler(self, n: int, deadline: float) -> None:
        rng = random.Random("scheduler-%d-%d" % (self.seed, n))
        while time.monotonic() < deadline:
            if rng.random() < 1 / 12:
                await self.migrate(rng)
            else:
                await self.boot(rng, n)

    async def terminator(self, n: int, deadline: float) -> None:
        rng = random.Random("terminator-%d-%d" % (self.seed, n))
        while time.monotonic() < deadline:
            inst = (self.instances.pick_idle(rng)
                    if len(self.instances) > self.target else None)
            if inst is None:
                await asyncio.sleep(0.01)
                continue
            inst.busy = True
            resp = await self.call("DELETE /allocations", "DELETE",
                                   "/allocations/%s" % inst.uuid)
            inst.busy = False
            if resp is not None and resp.status == 204:
                self.instances.remove(inst)
                self.counts["terminations"] += 1

    # ---------------------------------------------------------- heartbeats

    async def heartbeat(self, host: Host, rng: random.Random) -> None:
        resp = await self.call("GET /resource_providers?in_tree", "GET",
                               "/resource_providers?in_tree=%s" % host.root)
        if resp is None or resp.status != 200:
            return
        root_inventory = None
        for rp in resp.json()["resource_providers"]:
            inv = await self.call("GET inventories", "GET",
                                  "/resource_providers/%s/inventories"
                                  % rp["uuid"])
            if inv is not None and inv.status == 200 and rp["uuid"] == host.root:
                root_inventory = inv.json()
        self.counts["heartbeats"] += 1
        if not host.local_disk or root_inventory is None \
                or rng.random() >= 0.1:
            return
        for _ in range(2):
            inventories = root_inventory["inventories"]
            disk = inventories["DISK_GB"]
            disk["reserved"] = DISK_RESERVED[disk["reserved"]
                                             == DISK_RESERVED[0]]
            body = {"resource_provider_generation":
                    root_inventory["resource_provider_generation"],
                    "inventories": inventories}
            put = await self.call("PUT inventories", "PUT",
                                  "/resource_providers/%s/inventories"
                                  % host.root, body)
            if put is None or put.status != 409:
                if put is not None and put.status == 200:
                    self.counts["reserved_changes"] += 1
                return
            self.counts["reserved_409"] += 1
            again = await self.call("GET inventories", "GET",
                                    "/resource_providers/%s/inventories"
                                    % host.root)
            if again is None or again.status != 200:
                return
            root_inventory = again.json()

    async def heartbeats(self, deadline: float) -> None:
        """Every host once per interval, spread evenly; at most four in
        flight (a heartbeat due while four wait is skipped and counted)."""
        rng = random.Random("heartbeats-%d" % self.seed)
        order = list(self.cloud)
        rng.shuffle(order)
        step = self.ctx.cfg.heartbeat_interval / len(order)
        running: set[asyncio.Task] = set()
        next_at = time.monotonic()
        for host in itertools.cycle(order):
            next_at += step
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if time.monotonic() >= deadline:
                break
            if len(running) >= 4:
                self.counts["heartbeats_skipped"] += 1
                continue
            task = asyncio.ensure_future(self.heartbeat(host, rng))
            running.add(task)
            task.add_done_callback(running.discard)
        if running:
            await asyncio.gather(*running)

    async def run(self, seconds: float, schedulers: int) -> float:
        root_of = {rp: host.root for rp, host in self.root_of.items()}
        # Spawned, not forked: this process runs an event loop and threads.
        with concurrent.futures.ProcessPoolExecutor(
                WEIGHERS, multiprocessing.get_context("spawn"),
                initializer=_start_weigher, initargs=(root_of,)) as weighers:
            # Started before the clock.
            for started in [weighers.submit(len, "") for _ in range(WEIGHERS)]:
                started.result()
            self.weighers = weighers
            try:
                return await self._run(seconds, schedulers)
            finally:
                self.weighers = None

    async def _run(self, seconds: float, schedulers: int) -> float:
        started = time.monotonic()
        deadline = started + seconds

        async def progress() -> None:
            while True:
                await asyncio.sleep(10)
                self.ctx.log("  churn: %d boots, %d migrations, %d "
                             "terminations, %d heartbeats so far"
                             % (self.counts["boots"],
                                self.counts["migrations"],
                                self.counts["terminations"],
                                self.counts["heartbeats"]))
        reporter = asyncio.ensure_future(progress())
        await asyncio.gather(
            *(self.scheduler(n, deadline) for n in range(schedulers)),
            *(self.terminator(n, deadline) for n in range(2)),
            self.heartbeats(deadline))
        reporter.cancel()
        return time.monotonic() - started

    # --------------------------------------------------------------- audit

    async def audit(self) -> Result:
        providers = [self.pool.uuid] + [p.uuid for h in self.cloud
                                        for p in h.providers]

        async def read(rp: str) -> tuple:
            base = "/resource_providers/%s" % rp
            got = []
            for tail in ("/inventories", "/usages", "/allocations"):
                resp = await self.client.get(base + tail)
                got.append(resp.json() if resp.status == 200 else None)
            return (rp, *got)
        rows = await http.run_pool(providers, read, 4)
        cap = Capacity()
        expected: dict[str, dict[str, dict[str, int]]] = {}
        for consumer, alloc in itertools.chain(
                ((i.uuid, i.alloc) for i in self.instances),
                self.migrations.items()):
            for rp, resources in alloc.items():
                expected.setdefault(rp, {})[consumer] = resources
        overcommit, mismatch, missing, phantom, unreadable = [], [], [], [], []
        for rp, inv, use, allocs in rows:
            if inv is None or use is None or allocs is None:
                unreadable.append(rp)
                continue
            cap.set_inventory(rp, inv["inventories"])
            usages = use["usages"]
            summed: dict[str, int] = {}
            for resources in (a["resources"]
                              for a in allocs["allocations"].values()):
                for rc, amount in resources.items():
                    summed[rc] = summed.get(rc, 0) + amount
            cap.used[rp] = dict(summed)
            for rc, i in cap.inventory[rp].items():
                room = (i["total"] - i["reserved"]) * i["allocation_ratio"]
                if usages.get(rc, 0) > room:
                    overcommit.append("%s %s %s > %s" % (rp, rc, usages[rc],
                                                         room))
            if {k: v for k, v in usages.items() if v} != summed:
                mismatch.append("%s usages %s, allocations sum %s"
                                % (rp, usages, summed))
            server = {c: a["resources"]
                      for c, a in allocs["allocations"].items()}
            mine = expected.get(rp, {})
            missing += ["%s on %s" % (c, rp) for c in mine
                        if server.get(c) != mine[c]]
            phantom += ["%s on %s" % (c, rp) for c in server if c not in mine]
        checks = await self.final_candidates(cap)
        return {"providers": len(rows), "unreadable": len(unreadable),
                "overcommitted": len(overcommit),
                "overcommit_samples": overcommit[:5],
                "usage_mismatches": len(mismatch),
                "usage_mismatch_samples": mismatch[:5],
                "claims_missing": len(missing), "missing_samples": missing[:5],
                "phantom_allocations": len(phantom),
                "phantom_samples": phantom[:5],
                "instances": len(self.instances),
                "open_migrations": len(self.migrations),
                "candidate_checks": checks}

    def expected_candidates(self, flavor: Flavor, cap: Capacity,
                            zone: Optional[int], avx2: bool) -> set[str]:
        """What fits, by the model: the root carries the traits and the
        zone; ``member_of`` also binds the sharing pool, which is in no
        zone, so diskless hosts have no candidate in a zone request."""
        out: set[str] = set()
        for host in self.cloud:
            root = host.providers[0]
            if zone is not None and host.zone != zone:
                continue
            if avx2 and "HW_CPU_X86_AVX2" not in root.traits:
                continue
            out.update(canonical(a) for a in host_candidates(
                host, flavor, cap, pool=zone is None))
        return out

    async def final_candidates(self, cap: Capacity) -> list[Result]:
        """Unlimited answers of a few queries against what really fits."""
        checks = []
        for flavor, zone, avx2 in ((FLAVORS[0], None, False),
                                   (FLAVORS[2], None, True),
                                   (FLAVORS[1], 1, False),
                                   (FLAVORS[3], None, False),
                                   (FLAVORS[0], 3, True)):
            path = flavor.query(zone, avx2)
            resp = await self.client.get(path)
            record: Result = {"query": path, "status": resp.status}
            if resp.status == 200:
                got = {canonical({rp: a["resources"] for rp, a in
                                  r["allocations"].items()})
                       for r in resp.json()["allocation_requests"]}
                want = self.expected_candidates(flavor, cap, zone, avx2)
                record.update(candidates=len(got), expected=len(want),
                              unexpected=len(got - want),
                              absent=len(want - got),
                              ok=got == want,
                              digest=workload.summarize_candidates(
                                  resp.body)["digest"])
                if got != want:
                    record["unexpected_samples"] = sorted(got - want)[:2]
                    record["absent_samples"] = sorted(want - got)[:2]
            else:
                record["ok"] = False
            checks.append(record)
        return checks


# --------------------------------------------------------------------------
# Scenario entry point
# --------------------------------------------------------------------------

def limits_of(scenario: str, default: list[int]) -> list[int]:
    """``churn`` runs every limit of ``--churn-limits`` on one cloud, one
    after the other; ``churn-N`` only limit N."""
    head, _, tail = scenario.partition("-")
    return [int(tail)] if tail else list(default)


def is_churn(scenario: str) -> bool:
    head, _, tail = scenario.partition("-")
    return head == "churn" and (not tail or tail.isdigit() and int(tail) > 0)


def latency_figures(samples: dict[str, list[float]]) -> Result:
    return {kind: {"count": len(v),
                   "p50_ms": measure.ms(measure.percentile(v, 50)),
                   "p99_ms": measure.ms(measure.percentile(v, 99))}
            for kind, v in sorted(samples.items()) if v}


_AUDIT_SAMPLES = {"overcommitted": "overcommit_samples",
                  "usage_mismatches": "usage_mismatch_samples",
                  "claims_missing": "missing_samples",
                  "phantom_allocations": "phantom_samples",
                  "unreadable": None}


def run_phase(ctx: kit.Context, churn: Churn, limit: int) -> Result:
    """One limit: the clock, the figures, the audit."""
    cfg = ctx.cfg
    churn.limit = limit
    churn.latency.clear()
    churn.status.clear()
    churn.errors.clear()
    churn.counts = dict.fromkeys(churn.counts, 0)
    ctx.log("  churn: %d schedulers, limit=%d, %ss" % (
        cfg.churn_schedulers, limit, cfg.churn_seconds))
    before = ctx.cpu()
    load_before = os.getloadavg()
    elapsed = asyncio.run(churn.run(cfg.churn_seconds, cfg.churn_schedulers))
    # The machine's load average (1 min) before and after: on a shared
    # machine it tells how crowded the run was.
    figures: Result = {"seconds": round(elapsed, 2),
                       "loadavg_before": round(load_before[0], 2),
                       "loadavg_after": round(os.getloadavg()[0], 2)}
    figures.update(ctx.cpu_delta(before, "churn limit=%d" % limit))
    counts = churn.counts
    scheduled = counts["boots"] + counts["migrations"]
    requests = sum(len(v) for v in churn.latency.values())
    figures.update(counts, scheduled=scheduled, requests=requests,
                   scheduled_per_s=round(scheduled / elapsed, 2),
                   requests_per_s=round(requests / elapsed, 1),
                   statuses={k: {str(s): n for s, n in v.items()}
                             for k, v in churn.status.items()},
                   latency=latency_figures(churn.latency),
                   errors=len(churn.errors), error_samples=churn.errors[:5])
    kit.add_cpu_per_request(figures, scheduled, unit="scheduled")
    kit.add_cpu_per_request(figures, requests)
    ctx.log("  churn: %d scheduled (%d boots, %d migrations) in %.0fs = %s/s;"
            " server %s ms CPU per scheduled instance, %s per request; "
            "%d x 409 on claims; load average %s -> %s" % (
                scheduled, counts["boots"], counts["migrations"], elapsed,
                figures["scheduled_per_s"],
                figures.get("server_cpu_ms_per_scheduled"),
                figures.get("server_cpu_ms_per_req"), counts["claim_409"],
                figures["loadavg_before"], figures["loadavg_after"]))
    for kind, f in figures["latency"].items():
        ctx.log("    %-34s %6d  p50 %7s ms  p99 %7s ms"
                % (kind, f["count"], f["p50_ms"], f["p99_ms"]))
    if churn.errors:
        ctx.problem("limit=%d: %d request errors, e.g. %s" % (
            limit, len(churn.errors), churn.errors[:2]))
    ctx.log("  churn: audit")
    audit = asyncio.run(churn.audit())
    for key, samples in _AUDIT_SAMPLES.items():
        if audit[key]:
            ctx.problem("limit=%d audit: %d %s, e.g. %s" % (
                limit, audit[key], key.replace("_", " "),
                audit.get(samples) if samples else ""))
    for check in audit["candidate_checks"]:
        if not check.get("ok"):
            ctx.problem("limit=%d audit: final candidates differ from what "
                        "fits: %s" % (limit, json.dumps(check)[:600]))
    ctx.log("  churn audit: %d overcommitted, %d usage mismatches, %d claims "
            "missing, %d phantom; final candidate checks %s" % (
                audit["overcommitted"], audit["usage_mismatches"],
                audit["claims_missing"], audit["phantom_allocations"],
                ", ".join("%s/%s" % (c.get("candidates"), c.get("expected"))
                          for c in audit["candidate_checks"])))
    return {"limit": limit, "churn": figures, "audit": audit}


def run_churn(ctx: kit.Context) -> Result:
    """Load and fill the cloud once, then one phase per limit."""
    cfg = ctx.cfg
    limits = limits_of(ctx.name, cfg.churn_limits)
    churn = Churn(ctx, limits[0])
    out: Result = {"hosts": cfg.hosts, "limits": limits,
                   "seed": cfg.churn_seed, "schedulers": cfg.churn_schedulers,
                   "idle_memory": ctx.server.memory()}
    out["load"] = churn.load()
    out["phases"] = [run_phase(ctx, churn, limit) for limit in limits]
    return out


def register(names: list[str]) -> None:
    for name in names:
        if is_churn(name):
            kit.RUNNERS.setdefault(name, run_churn)
