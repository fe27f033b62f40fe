"""The workloads the shared kit lacks, run through the kit's machinery.

Scenarios (see README.rst for what each measures):

* ``flat``, ``nested``, ``write`` - the kit's perfload scenarios; ``flat``
  and ``nested`` also time the first answer of ``--cold-workers`` fresh
  workers (gunicorn replaces its workers on SIGHUP) between loading and the
  kit's measurement, whose first request then meets a fresh worker too;
* ``flat-large`` - the kit's flat data at ``--large-providers`` (10,000)
  providers, then the perfload allocation-candidates query and
  ``GET /resource_providers`` filtered by ``resources`` and ``required``;
* ``reshape`` - one compute node with ``--reshape-consumers`` (1,000)
  consumers, then ``PUT /allocations`` and ``POST /reshaper`` latency;
* ``wide`` - the kit's ``wide_trees.py``, with and without ``limit``.

``flat-large`` and ``reshape`` plug into the kit's ``run_scenario`` (fresh
database, schema pre-sync, gunicorn with N workers, memory and log checks)
by registering their runners in its ``RUNNERS`` table.  ``wide`` runs the
kit's script as a subprocess, which starts its own one-worker server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Optional

from benchmarks import sharedbench

sharedbench.directory()  # benchlib must be importable below

from benchlib import http  # noqa: E402
from benchlib import measure  # noqa: E402
from benchlib import scenarios as kit  # noqa: E402
from benchlib import server as kit_server  # noqa: E402
from benchlib import workload  # noqa: E402

KIT_SCENARIOS = ("flat", "nested", "write")
SCENARIOS = ("flat", "nested", "write", "flat-large", "reshape", "wide",
             "churn")

Result = dict[str, Any]
Log = Callable[[str], None]

# Workload 5: every flat provider has the perfload inventory; providers
# i % 3 in (1, 2) also have HW_CPU_X86_SSE2, so two thirds match.
PROVIDERS_QUERY = ("resources=VCPU:1,DISK_GB:10,MEMORY_MB:256"
                   "&required=HW_CPU_X86_SSE2")


def providers_matching(n: int) -> int:
    return sum(1 for i in range(n) if i % 3 != 0)


# --------------------------------------------------------------------------
# Generic GET measurement (first request, latency, throughput)
# --------------------------------------------------------------------------

def summarize_providers(body: bytes) -> Result:
    """Size, count and an order-independent digest of a provider list."""
    doc = json.loads(body)
    providers = doc.get("resource_providers", [])
    canon = []
    for rp in providers:
        rp = dict(rp)
        if isinstance(rp.get("links"), list):
            rp["links"] = sorted(rp["links"], key=lambda link: json.dumps(
                link, sort_keys=True))
        canon.append(json.dumps(rp, sort_keys=True))
    digest = hashlib.sha256(json.dumps(sorted(canon)).encode()).hexdigest()
    return {"bytes": len(body), "providers": len(providers),
            "digest": digest[:16]}


def measure_get(ctx: kit.Context, path: str,
                summarize: Callable[[bytes], Result], count_key: str,
                expected: int) -> Result:
    """The kit's read measurement (``measure_query``) for any GET URL."""
    cfg = ctx.cfg
    out: Result = {"query": "GET " + path}
    first = asyncio.run(ctx.client.get(path))
    out["first_request_ms"] = measure.ms(first.elapsed)
    if first.status != 200:
        ctx.problem("%s returned %d: %s" % (path, first.status,
                                            first.error_text()))
        return out
    response = summarize(first.body)
    response["expected_" + count_key] = expected
    out["response"] = response
    ctx.log("  first request %.0f ms: %d bytes, %d %s, digest %s"
            % (first.elapsed * 1000, response["bytes"], response[count_key],
               count_key, response["digest"]))
    if response[count_key] != expected:
        ctx.problem("expected %d %s, got %d" % (expected, count_key,
                                                response[count_key]))

    before = ctx.cpu()
    responses = asyncio.run(measure.sequential(
        ctx.client, path, cfg.latency_samples, cfg.latency_time_limit))
    out["latency"] = measure.latency_stats([r.elapsed for r in responses])
    out["latency"].update(ctx.cpu_delta(before, "latency"))
    kit.add_cpu_per_request(out["latency"], len(responses))
    failed = [r.status for r in responses if r.status != 200]
    if failed:
        ctx.problem("%d of %d latency requests failed: %s"
                    % (len(failed), len(responses), sorted(set(failed))))
    ctx.log("  latency: median %s ms, p95 %s ms over %d requests"
            % (out["latency"]["median_ms"], out["latency"]["p95_ms"],
               len(responses)))

    before = ctx.cpu()
    tp = measure.throughput(cfg.http_tool, ctx.client, path, cfg.requests,
                            cfg.concurrency, cfg.throughput_time_limit)
    tp.update(ctx.cpu_delta(before, "throughput"))
    kit.add_cpu_per_request(tp, tp.get("completed"))
    out["throughput"] = tp
    ctx.log("  throughput: %s req/s (%s completed, %s failed, %s non-2xx)"
            % (tp.get("requests_per_s"), tp.get("completed"),
               tp.get("failed"), tp.get("non_2xx")))
    if tp.get("error"):
        ctx.problem("throughput tool failed: %s" % tp["error"])
    if tp.get("non_2xx") or tp.get("failed"):
        ctx.problem("throughput run had %s failed and %s non-2xx responses"
                    % (tp.get("failed"), tp.get("non_2xx")))
    return out


# --------------------------------------------------------------------------
# flat, nested: the kit's, with the first answers of fresh workers
# --------------------------------------------------------------------------

def _worker_pids(ctx: kit.Context) -> set[int]:
    return set(kit_server.process_tree(ctx.server.pid)) - {ctx.server.pid}


def _workers_cpu(pids: set[int]) -> float:
    return sum(kit_server.tree_cpu_seconds(pid) or 0.0 for pid in pids)


def fresh_workers(ctx: kit.Context, timeout: float = 120) -> None:
    """Have gunicorn replace every worker and wait until the new ones sit
    idle: application imported, nothing asked of them yet.  (Asking "/"
    to see that they are up would warm the one that answers.)"""
    old = _worker_pids(ctx)
    os.kill(ctx.server.pid, signal.SIGHUP)
    deadline = time.monotonic() + timeout
    while True:
        pids = _worker_pids(ctx)
        if len(pids) >= ctx.cfg.workers and not pids & old:
            break
        if time.monotonic() > deadline:
            raise kit_server.BenchError("workers not replaced after SIGHUP")
        time.sleep(0.1)
    # A worker imports the application after its fork; it is ready once
    # its CPU time stops moving.
    spent = -1.0
    while spent != _workers_cpu(pids):
        if time.monotonic() > deadline:
            raise kit_server.BenchError("new workers never went idle")
        spent = _workers_cpu(pids)
        time.sleep(0.5)


def cold_first_answers(ctx: kit.Context, path: str) -> Result:
    """The first answer of ``--cold-workers`` fresh workers, one each."""
    samples = []
    for _ in range(ctx.cfg.cold_workers):
        fresh_workers(ctx)
        resp = asyncio.run(ctx.client.get(path))
        if resp.status != 200:
            ctx.problem("cold %s returned %d: %s" % (path, resp.status,
                                                     resp.error_text()))
            return {}
        samples.append(measure.ms(resp.elapsed))
    # The kit's own first request, next, meets fresh workers too.
    fresh_workers(ctx)
    ctx.log("  cold first answers of %d fresh workers: %s ms"
            % (len(samples), samples))
    return {"samples_ms": samples, "median_ms": statistics.median(samples)}


def _with_cold_workers(load: Callable[[kit.Context], Result],
                       query: str, expected: Callable[[Any], int]
                       ) -> Callable[[kit.Context], Result]:
    def run(ctx: kit.Context) -> Result:
        out = load(ctx)
        if ctx.cfg.cold_workers:
            out["cold"] = cold_first_answers(ctx, workload.ac_path(query))
        out.update(kit.measure_query(ctx, query, expected(ctx.cfg)))
        return out
    return run


def _load_flat(ctx: kit.Context) -> Result:
    n = ctx.cfg.providers
    return {"providers": n, "load": kit.load(
        ctx, [workload.flat_chain(i) for i in range(n)], n, "flat")}


def _load_nested(ctx: kit.Context) -> Result:
    trees = ctx.cfg.trees
    n = trees * workload.PROVIDERS_PER_TREE
    return {"trees": trees, "providers": n, "load": kit.load(
        ctx, [workload.nested_chain(t) for t in range(trees)], n, "nested")}


# The kit's flat and nested scenarios (same load, same query, same
# expected count: flat one candidate per provider, nested two per tree).
run_flat = _with_cold_workers(_load_flat, workload.FLAT_QUERY,
                              lambda cfg: cfg.providers)
run_nested = _with_cold_workers(_load_nested, workload.NESTED_QUERY,
                                lambda cfg: 2 * cfg.trees)


# --------------------------------------------------------------------------
# flat-large: workload 1 at 10,000 providers and workload 5
# --------------------------------------------------------------------------

def run_flat_large(ctx: kit.Context) -> Result:
    n = ctx.cfg.large_providers
    out: Result = {"providers": n, "idle_memory": ctx.server.memory()}
    chains = [workload.flat_chain(i) for i in range(n)]
    out["load"] = kit.load(ctx, chains, n, "flat-large")
    ctx.log("  allocation candidates (perfload query)")
    out["candidates"] = kit.measure_query(ctx, workload.FLAT_QUERY,
                                          expected_candidates=n)
    ctx.log("  resource providers (resources + required)")
    out["providers_query"] = measure_get(
        ctx, "/resource_providers?" + PROVIDERS_QUERY, summarize_providers,
        "providers", providers_matching(n))
    return out


# --------------------------------------------------------------------------
# reshape: workload 6
# --------------------------------------------------------------------------

class Reshape:
    """One compute node (VCPU, MEMORY_MB, VGPU) with a child GPU provider
    and ``consumers`` instances, each holding VCPU:2, MEMORY_MB:1024 and
    VGPU:1.  Reshapes move the VGPU inventory and all its allocations to
    the child and back, the way a virt driver moves GPUs into a nested tree.
    """

    PER_CONSUMER = {"VCPU": 2, "MEMORY_MB": 1024}
    CLAIM = {"VCPU": 1, "MEMORY_MB": 128}
    CONSUMER_TYPE = "INSTANCE"

    def __init__(self, consumers: int):
        self.n = consumers
        self.compute = workload.det_uuid("reshape", "compute")
        self.gpu = workload.det_uuid("reshape", "gpu")
        self.project = workload.det_uuid("reshape", "project")
        self.user = workload.det_uuid("reshape", "user")
        self.consumers = [workload.det_uuid("reshape", "consumer", i)
                          for i in range(consumers)]

    def compute_inventory(self, with_vgpu: bool) -> Result:
        inventory: Result = {"VCPU": {"total": 4 * self.n},
                             "MEMORY_MB": {"total": 2048 * self.n}}
        if with_vgpu:
            inventory["VGPU"] = {"total": self.n}
        return inventory

    def consumer_allocations(self, vgpu_on_child: bool) -> Result:
        compute = dict(self.PER_CONSUMER)
        allocations = {self.compute: {"resources": compute}}
        if vgpu_on_child:
            allocations[self.gpu] = {"resources": {"VGPU": 1}}
        else:
            compute["VGPU"] = 1
        return allocations

    def consumer_body(self, generation: Optional[int],
                      vgpu_on_child: bool) -> Result:
        return {"allocations": self.consumer_allocations(vgpu_on_child),
                "project_id": self.project, "user_id": self.user,
                "consumer_generation": generation,
                "consumer_type": self.CONSUMER_TYPE}

    def claim_body(self) -> Result:
        return {"allocations": {self.compute: {"resources": dict(self.CLAIM)}},
                "project_id": self.project, "user_id": self.user,
                "consumer_generation": None,
                "consumer_type": self.CONSUMER_TYPE}

    def reshaper_body(self, vgpu_on_child: bool, compute_generation: int,
                      gpu_generation: int, consumer_generation: int) -> Result:
        return {
            "inventories": {
                self.compute: {
                    "resource_provider_generation": compute_generation,
                    "inventories": self.compute_inventory(not vgpu_on_child)},
                self.gpu: {
                    "resource_provider_generation": gpu_generation,
                    "inventories": ({"VGPU": {"total": self.n}}
                                    if vgpu_on_child else {})},
            },
            "allocations": {
                c: self.consumer_body(consumer_generation, vgpu_on_child)
                for c in self.consumers},
        }


def service_client(ctx: kit.Context) -> http.Client:
    """A client with the ``service`` role: upstream's default policy lets
    only services reshape (noauth2 takes the roles from ``X-Roles``)."""
    return http.Client("127.0.0.1", ctx.server.port,
                       headers={"x-roles": "admin,service"},
                       timeout=ctx.cfg.request_timeout)


async def _expect(client: http.Client, method: str, path: str,
                  body: Optional[Result], ok: tuple[int, ...]) -> Any:
    resp = await client.request(method, path, body)
    if resp.status not in ok:
        raise kit_server.BenchError("%s %s answered %d: %s" % (
            method, path, resp.status, resp.error_text(400)))
    return resp


async def _load_reshape(client: http.Client, shape: Reshape,
                        batch: int) -> None:
    await _expect(client, "POST", "/resource_providers",
                  {"uuid": shape.compute, "name": "reshape-compute"},
                  (200, 201))
    await _expect(client, "POST", "/resource_providers",
                  {"uuid": shape.gpu, "name": "reshape-gpu",
                   "parent_provider_uuid": shape.compute}, (200, 201))
    await _expect(client, "PUT",
                  "/resource_providers/%s/inventories" % shape.compute,
                  {"resource_provider_generation": 0,
                   "inventories": shape.compute_inventory(True)}, (200,))
    # POST /allocations writes a batch of consumers in one transaction;
    # sequential batches avoid provider generation conflicts while loading.
    for start in range(0, shape.n, batch):
        body = {c: shape.consumer_body(None, vgpu_on_child=False)
                for c in shape.consumers[start:start + batch]}
        await _expect(client, "POST", "/allocations", body, (204,))


async def _timed(client: http.Client, method: str, path: str,
                 body: Result) -> tuple[float, int, str]:
    resp = await client.request(method, path, body)
    return resp.elapsed, resp.status, resp.error_text(300)


async def _generation(client: http.Client, uuid: str) -> int:
    resp = await _expect(client, "GET", "/resource_providers/%s" % uuid, None,
                         (200,))
    return resp.json()["generation"]


async def _consumer_generation(client: http.Client, consumer: str) -> int:
    resp = await _expect(client, "GET", "/allocations/%s" % consumer, None,
                         (200,))
    return resp.json()["consumer_generation"]


def _latency_phase(ctx: kit.Context, name: str, samples: list[float],
                   failures: list[str], before: Result) -> Result:
    stats = measure.latency_stats(samples)
    stats.update(ctx.cpu_delta(before, name))
    kit.add_cpu_per_request(stats, len(samples))
    stats["failed"] = len(failures)
    if failures:
        ctx.problem("%s: %d requests failed, e.g. %s" % (
            name, len(failures), failures[:2]))
    ctx.log("  %s: median %s ms, p95 %s ms over %d requests"
            % (name, stats["median_ms"], stats["p95_ms"], len(samples)))
    return stats


def _measure_claims(ctx: kit.Context, client: http.Client, shape: Reshape,
                    count: int) -> Result:
    """Sequential PUT /allocations of new consumers onto the busy node."""
    samples, failures = [], []
    before = ctx.cpu()
    for i in range(count):
        consumer = workload.det_uuid("reshape", "claim", i)
        elapsed, status, text = asyncio.run(_timed(
            client, "PUT", "/allocations/%s" % consumer, shape.claim_body()))
        if status == 204:
            samples.append(elapsed)
        else:
            failures.append("%d %s" % (status, text))
    return _latency_phase(ctx, "PUT /allocations", samples, failures, before)


def _measure_reshapes(ctx: kit.Context, client: http.Client, shape: Reshape,
                      count: int) -> tuple[Result, bool]:
    """POST /reshaper moving VGPU to the child and back, ``count`` times.

    Returns the figures and where VGPU ended up (True: on the child).
    """
    samples, failures, on_child = [], [], False
    # One CPU reading for the phase: the three small GETs per sample that
    # fetch generations cost little next to a reshape of every consumer.
    before = ctx.cpu()
    for _ in range(count):
        target = not on_child
        # Generations are read outside the timed request.
        body = shape.reshaper_body(
            target, asyncio.run(_generation(client, shape.compute)),
            asyncio.run(_generation(client, shape.gpu)),
            asyncio.run(_consumer_generation(client, shape.consumers[0])))
        elapsed, status, text = asyncio.run(_timed(client, "POST", "/reshaper",
                                                   body))
        if status == 204:
            samples.append(elapsed)
            on_child = target
        else:
            failures.append("%d %s" % (status, text))
            break
    stats = measure.latency_stats(samples)
    stats["failed"] = len(failures)
    stats["body_bytes"] = len(json.dumps(shape.reshaper_body(True, 0, 0, 0)))
    stats.update(ctx.cpu_delta(before, "POST /reshaper"))
    kit.add_cpu_per_request(stats, len(samples))
    if failures:
        ctx.problem("POST /reshaper failed: %s" % failures[0])
    ctx.log("  POST /reshaper: median %s ms, p95 %s ms over %d requests"
            % (stats["median_ms"], stats["p95_ms"], len(samples)))
    return stats, on_child


def _verify_reshape(ctx: kit.Context, client: http.Client, shape: Reshape,
                    claims: int, on_child: bool) -> Result:
    async def usages(uuid: str) -> Result:
        resp = await _expect(client, "GET", "/resource_providers/%s/usages"
                             % uuid, None, (200,))
        return resp.json()["usages"]
    compute = asyncio.run(usages(shape.compute))
    gpu = asyncio.run(usages(shape.gpu))
    expected_compute = {
        "VCPU": shape.n * shape.PER_CONSUMER["VCPU"]
        + claims * shape.CLAIM["VCPU"],
        "MEMORY_MB": shape.n * shape.PER_CONSUMER["MEMORY_MB"]
        + claims * shape.CLAIM["MEMORY_MB"]}
    expected_gpu: Result = {}
    (expected_gpu if on_child else expected_compute)["VGPU"] = shape.n
    # A provider without inventory of a class may or may not list it as 0.
    found_compute = {k: v for k, v in compute.items() if v}
    found_gpu = {k: v for k, v in gpu.items() if v}
    ok = found_compute == expected_compute and found_gpu == expected_gpu
    if not ok:
        ctx.problem("usages after reshapes: compute %s (expected %s), gpu %s "
                    "(expected %s)" % (compute, expected_compute, gpu,
                                       expected_gpu))
    return {"compute_usages": compute, "gpu_usages": gpu, "ok": ok}


def run_reshape(ctx: kit.Context) -> Result:
    cfg = ctx.cfg
    shape = Reshape(cfg.reshape_consumers)
    client = service_client(ctx)
    out: Result = {"consumers": shape.n, "idle_memory": ctx.server.memory()}
    ctx.log("  reshape: loading one node with %d consumers" % shape.n)
    before = ctx.cpu()
    started = time.perf_counter()
    asyncio.run(_load_reshape(client, shape, cfg.reshape_batch))
    out["load"] = {"seconds": round(time.perf_counter() - started, 2)}
    out["load"].update(ctx.cpu_delta(before, "reshape load"))
    out["put_allocations"] = _measure_claims(ctx, client, shape,
                                             cfg.allocation_samples)
    out["reshaper"], on_child = _measure_reshapes(
        ctx, client, shape, cfg.reshape_samples)
    out["verify"] = _verify_reshape(
        ctx, client, shape, out["put_allocations"]["samples"], on_child)
    return out


def register() -> None:
    """Make the kit's ``run_scenario`` know our scenarios, and run its
    flat and nested ones with fresh workers' first answers."""
    kit.RUNNERS.update(flat=run_flat, nested=run_nested)
    kit.RUNNERS.setdefault("flat-large", run_flat_large)
    kit.RUNNERS.setdefault("reshape", run_reshape)


# --------------------------------------------------------------------------
# wide: workload 4, through the kit's wide_trees.py
# --------------------------------------------------------------------------

_WIDE_OK = re.compile(
    r"hosts=(?P<hosts>\d+) load=(?P<load>[\d.]+)s query=(?P<ms>\d+)ms "
    r"candidates=(?P<candidates>\d+) worker_peak_rss_mb=\[(?P<rss>[\d, ]*)\]")
_WIDE_FAILED = re.compile(
    r"hosts=(?P<hosts>\d+) load=(?P<load>[\d.]+)s query FAILED after "
    r"(?P<s>\d+)s: (?P<error>.*) worker_peak_rss_mb=\[(?P<rss>[\d, ]*)\]")


def _parse_wide(text: str) -> Result:
    for line in text.splitlines():
        match = _WIDE_OK.search(line)
        if match:
            return {"load_s": float(match["load"]),
                    "query_ms": int(match["ms"]),
                    "candidates": int(match["candidates"]),
                    "worker_peak_rss_mb": [int(x) for x in
                                           match["rss"].split(",") if x.strip()]}
        match = _WIDE_FAILED.search(line)
        if match:
            return {"load_s": float(match["load"]),
                    "failed_after_s": int(match["s"]),
                    "error": match["error"][:300],
                    "worker_peak_rss_mb": [int(x) for x in
                                           match["rss"].split(",") if x.strip()]}
    return {"error": "no result line in output: %s" % text[-300:]}


def _wide_variant(cfg: Any, log: Log, limited: bool, problems: list[str],
                  noise: list[str]) -> Result:
    tag = "wide-limit" if limited else "wide-nolimit"
    database = kit_server.Database(cfg.db, cfg.workdir, cfg.db_url)
    url = database.reset(tag)
    db_pid = database.server_pid()
    hosts = cfg.wide_hosts if limited else cfg.wide_hosts_unlimited
    cmd = [sys.executable, sharedbench.wide_trees_script(), "--venv",
           cfg.venv, "--hosts", str(hosts), "--db-url", url,
           "--timeout", str(int(cfg.wide_timeout))]
    if not limited:
        cmd.append("--no-limit")
    log("[%s] wide: %d hosts, %s" % (cfg.label, hosts,
                                     "limit=10" if limited else "no limit"))
    before_children = os.times().children_user + os.times().children_system
    before_db = kit_server.tree_cpu_seconds(db_pid)
    before_machine = kit_server.machine_busy_seconds()
    started = time.monotonic()
    # Run from the work directory: gunicorn puts its working directory on
    # sys.path, and a checkout there would shadow the venv's placement.
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          cwd=cfg.workdir)
    wall = time.monotonic() - started
    result = _parse_wide(proc.stdout)
    result["wall_s"] = round(wall, 1)
    with open(os.path.join(cfg.workdir, "%s.out" % tag), "w") as f:
        f.write(proc.stdout + proc.stderr)
    # wide_trees.py and its server are our children: their CPU lands in
    # children_* once reaped; the rest of the machine's busy time is noise.
    times = os.times()
    mine = times.children_user + times.children_system - before_children
    after_db = kit_server.tree_cpu_seconds(db_pid)
    db_cpu = (after_db - before_db) if after_db is not None \
        and before_db is not None else 0.0
    other = max(0.0, kit_server.machine_busy_seconds() - before_machine
                - mine - db_cpu)
    capacity = wall * (os.cpu_count() or 1)
    if other > 1.0 and other > 0.10 * capacity:
        noise.append("%s: unrelated load used %.1f CPU-s = %.0f%% of the "
                     "machine; figures are noisy"
                     % (tag, other, 100 * other / capacity))
    if proc.returncode != 0 or "error" in result:
        problems.append("%s: %s" % (tag, result.get("error") or
                                    proc.stderr.strip()[-300:]))
    log("[%s] wide (%s): %s" % (cfg.label, tag, proc.stdout.strip()
                                or proc.stderr.strip()[-300:]))
    return result


def run_wide(cfg: Any, log: Log) -> Result:
    """Both wide-tree variants for one venv, as a kit-shaped result."""
    problems: list[str] = []
    noise: list[str] = []
    started = time.monotonic()
    out: Result = {"scenario": "wide", "hosts": cfg.wide_hosts,
                   "hosts_unlimited": cfg.wide_hosts_unlimited}
    out["limited"] = _wide_variant(cfg, log, True, problems, noise)
    if cfg.wide_no_limit:
        out["unlimited"] = _wide_variant(cfg, log, False, problems, noise)
    expected = 10 if cfg.wide_hosts * 2 >= 10 else None
    got = out["limited"].get("candidates")
    if expected and got is not None and got != expected:
        problems.append("wide limit=10 returned %s candidates" % got)
    out.update(problems=problems, noise=noise,
               wall_s=round(time.monotonic() - started, 1))
    return out


def run(cfg: Any, name: str, log: Log) -> Result:
    """Run one scenario for one venv; failures become a result, not a crash."""
    try:
        if name == "wide":
            return run_wide(cfg, log)
        return kit.run_scenario(cfg, name, log)
    except Exception as exc:  # keep going with the other scenarios
        if not isinstance(exc, kit_server.BenchError):
            import traceback
            traceback.print_exc()
        log("[%s] %s: FAILED: %s" % (cfg.label, name, exc))
        return {"scenario": name, "failed": str(exc),
                "problems": ["scenario failed: %s" % exc]}
