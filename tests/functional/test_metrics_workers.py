"""GET /metrics and GET /capacity from two gunicorn workers, on every backend.

Real gunicorn, two workers, prometheus-client's multiprocess mode (with
placement/metrics/gunicorn.py's hooks), ``[metrics] capacity_interval =
0``.  Concurrent reads first, until each worker has counted some (on a
quiet machine one sync worker may take a whole short burst); then, after
a known sequence of requests:

* every request of the sequence is counted exactly once, by route
  template, method, microversion and status, whichever worker served it;
* every capacity figure (openstack-exporter's per-provider gauges, the
  per-class sums of the cloud and of each aggregate) equals what the
  API's own inventories, usages and aggregates add up to;
* ``fits`` of a request equals a brute-force count over the API's own
  candidates: for each host, claim its first allocation candidate again
  and again until there is none.
"""

from __future__ import annotations

import concurrent.futures
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import backends
from tests.functional import live_server

pytestmark = pytest.mark.slow

AGGREGATE = "3e7a1c00-0000-4000-8000-0000000000a1"
# Hosts: name -> (inventories, traits, in the aggregate); "numa" hosts put
# their VCPU and MEMORY_MB on two children and DISK_GB on the root.
HOSTS: dict[str, tuple[dict[str, dict[str, Any]], list[str], bool]] = {
    "cn1": ({"VCPU": {"total": 8, "allocation_ratio": 2.0},
             "MEMORY_MB": {"total": 8192, "reserved": 512},
             "DISK_GB": {"total": 100, "allocation_ratio": 1.5}}, [], True),
    "cn2": ({"VCPU": {"total": 4}, "MEMORY_MB": {"total": 4096},
             "DISK_GB": {"total": 40, "max_unit": 20}},
            ["HW_CPU_X86_AVX2"], True),
    "cn3": ({"VCPU": {"total": 16, "reserved": 2, "allocation_ratio": 4.0},
             "MEMORY_MB": {"total": 16384, "allocation_ratio": 1.5},
             "DISK_GB": {"total": 200, "step_size": 10}},
            ["HW_CPU_X86_AVX2"], False),
    "numa": ({"DISK_GB": {"total": 80}}, ["HW_CPU_X86_AVX2"], False),
}
NUMA_CHILD = {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 2048}}
REQUESTS = [
    "resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10",
    "resources=VCPU:1,MEMORY_MB:512&required=HW_CPU_X86_AVX2",
    "resources=VCPU:1,DISK_GB:5&member_of=" + AGGREGATE,
]
FLAVORS = ["small:" + REQUESTS[0], "avx:" + REQUESTS[1]]


def _ok(client: live_server.Client, method: str, path: str,
        body: Any = None) -> Any:
    status, answer = client.request(method, path, body)
    assert status < 300, (method, path, status, answer)
    return answer


def _provider(client: live_server.Client, name: str,
              inventories: dict[str, dict[str, Any]], traits: list[str],
              parent: str | None = None) -> str:
    provider = str(uuid.uuid4())
    body: dict[str, Any] = {"name": name, "uuid": provider}
    if parent:
        body["parent_provider_uuid"] = parent
    _ok(client, "POST", "/resource_providers", body)
    generation = _ok(client, "PUT", "/resource_providers/%s/inventories" % provider,
                     {"resource_provider_generation": 0,
                      "inventories": inventories})["resource_provider_generation"]
    if traits:
        _ok(client, "PUT", "/resource_providers/%s/traits" % provider,
            {"resource_provider_generation": generation, "traits": traits})
    return provider


def _build_cloud(client: live_server.Client) -> dict[str, str]:
    """The hosts, some usage; names -> uuids (roots and children)."""
    uuids = {}
    for name, (inventories, traits, in_aggregate) in HOSTS.items():
        uuids[name] = _provider(client, name, inventories, traits)
        if in_aggregate:
            generation = _ok(client, "GET", "/resource_providers/%s" % uuids[name]
                             )["generation"]
            _ok(client, "PUT", "/resource_providers/%s/aggregates" % uuids[name],
                {"resource_provider_generation": generation,
                 "aggregates": [AGGREGATE]})
    for index in range(2):
        uuids["numa-%d" % index] = _provider(
            client, "numa-%d" % index, NUMA_CHILD, [], parent=uuids["numa"])
    for host, resources in (("cn1", {"VCPU": 3, "MEMORY_MB": 2048, "DISK_GB": 30}),
                            ("cn3", {"VCPU": 10, "MEMORY_MB": 4096})):
        _ok(client, "PUT", "/allocations/%s" % uuid.uuid4(),
            {"allocations": {uuids[host]: {"resources": resources}},
             "project_id": "p", "user_id": "u", "consumer_generation": None,
             "consumer_type": "INSTANCE"})
    return uuids


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def _requests_counted(samples: dict[Any, float]) -> dict[tuple[str, ...], float]:
    return {tuple(dict(labels)[k] for k in ("method", "route", "microversion",
                                            "status")): value
            for (name, labels), value in samples.items()
            if name == "placement_http_requests_total"}


def _sequence(client: live_server.Client) -> None:
    """Known requests, from four threads at once."""
    calls = ([("GET", "/resource_providers", {})] * 12
             + [("GET", "/no/such/url", {})] * 5
             + [("GET", "/resource_providers", {"x-auth-token": None})] * 4
             + [("GET", "/resource_classes/VCPU",
                 {"openstack-api-version": "placement 1.2"})] * 6)
    expected = {200: 12 + 6, 404: 5, 401: 4}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(
            lambda call: client.request(call[0], call[1], headers=call[2])[0], calls))
    assert {s: statuses.count(s) for s in set(statuses)} == expected


def _until_both_workers_counted(client: live_server.Client, directory: Path,
                                tmp: Path) -> None:
    """Send concurrent reads until each worker has counted some, so that
    the exact counts checked afterwards are sums over two processes' files.
    (On a quiet machine one sync worker may take a whole short burst.)"""
    for attempt in range(20):
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda _n: client.request("GET", "/resource_providers"),
                          range(64)))
        workers = _per_worker_requests(directory, tmp / ("try-%d" % attempt))
        if len([total for total in workers if total]) == 2:
            return
    raise AssertionError("one worker served every request: %s" % workers)


def _api_figures(client: live_server.Client, uuids: dict[str, str]
                 ) -> tuple[dict[tuple[str, str], dict[str, float]],
                            dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """From the API: per (provider name, class) the exporter's four values;
    per class the cloud's sums; per class the aggregate's sums."""
    per_provider: dict[tuple[str, str], dict[str, float]] = {}
    cloud: dict[str, dict[str, float]] = {}
    aggregate: dict[str, dict[str, float]] = {}
    for name, provider in uuids.items():
        inventories = _ok(client, "GET", "/resource_providers/%s/inventories"
                          % provider)["inventories"]
        usages = _ok(client, "GET", "/resource_providers/%s/usages" % provider)["usages"]
        shown = _ok(client, "GET", "/resource_providers/%s" % provider)
        root_aggregates = _ok(client, "GET", "/resource_providers/%s/aggregates"
                              % shown["root_provider_uuid"])["aggregates"]
        for rc, inventory in inventories.items():
            values = {"total": inventory["total"], "reserved": inventory["reserved"],
                      "allocation_ratio": inventory["allocation_ratio"],
                      "usage": usages[rc]}
            per_provider[name, rc] = values
            capacity = ((inventory["total"] - inventory["reserved"])
                        * inventory["allocation_ratio"])
            sums = {"total": inventory["total"], "reserved": inventory["reserved"],
                    "capacity": capacity, "used": usages[rc],
                    "free": capacity - usages[rc], "providers": 1}
            targets = [cloud] + ([aggregate] if AGGREGATE in root_aggregates else [])
            for target in targets:
                into = target.setdefault(rc, dict.fromkeys(sums, 0.0))
                for key, value in sums.items():
                    into[key] += value
    return per_provider, cloud, aggregate


def _brute_force_fits(client: live_server.Client, query: str,
                      roots: list[str]) -> list[str]:
    """Claim each host's first candidate until it has none; the consumers
    claiming."""
    claimed = []
    for root in roots:
        while True:
            found = _ok(client, "GET", "/allocation_candidates?%s&in_tree=%s&limit=1"
                        % (query, root))["allocation_requests"]
            if not found:
                break
            consumer = str(uuid.uuid4())
            _ok(client, "PUT", "/allocations/%s" % consumer,
                {"allocations": found[0]["allocations"], "project_id": "p",
                 "user_id": "u", "consumer_generation": None,
                 "consumer_type": "INSTANCE"})
            claimed.append(consumer)
    return claimed


def _per_worker_requests(directory: Path, tmp: Path) -> list[float]:
    """The requests each worker counted, from its own files alone."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    pids = sorted({path.stem.rsplit("_", 1)[-1] for path in directory.glob("counter_*.db")})
    totals = []
    for pid in pids:
        alone = tmp / ("worker-" + pid)
        alone.mkdir(parents=True)
        shutil.copy(directory / ("counter_%s.db" % pid), alone)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))
        samples = _samples(generate_latest(registry).decode())
        totals.append(sum(_requests_counted(samples).values()))
    return totals


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_two_workers_count_and_measure(backend: str, tmp_path: Path) -> None:
    backends.require(backend)
    directory = tmp_path / "metrics"
    directory.mkdir()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(directory),
           "OS_METRICS__ENABLED": "true", "OS_METRICS__CAPACITY_INTERVAL": "0"}
    conf = tmp_path / "placement.conf"
    conf.write_text("[metrics]\n" + "".join(
        "capacity_requests = %s\n" % flavor for flavor in FLAVORS))
    env["OS_PLACEMENT_CONFIG_FILES"] = str(conf)
    options = ("-c", "python:placement.metrics.gunicorn")
    with live_server.serve(backend, workers=2, env=env, options=options) as client:
        client.version = "1.39"
        uuids = _build_cloud(client)
        _until_both_workers_counted(client, directory, tmp_path)
        _status, before = client.request("GET", "/metrics")
        counted_before = _requests_counted(_samples(before))
        _sequence(client)
        status, text = client.request("GET", "/metrics")
        assert status == 200
        samples = _samples(text)
        counted = _requests_counted(samples)
        added = {key: counted[key] - counted_before.get(key, 0) for key in counted
                 if counted[key] != counted_before.get(key, 0)}
        # The first /metrics is counted after it answered.
        assert added == {
            ("GET", "/resource_providers", "1.39", "200"): 12,
            ("GET", "unknown", "1.39", "404"): 5,
            ("GET", "/resource_providers", "none", "401"): 4,
            ("GET", "/resource_classes/{name}", "1.2", "200"): 6,
            ("GET", "/metrics", "1.39", "200"): 1,
        }

        per_provider, cloud, aggregate = _api_figures(client, uuids)
        for (name, rc), values in per_provider.items():
            labels = (("hostname", name), ("resourcetype", rc))
            for key, value in values.items():
                assert samples["openstack_placement_resource_" + key, labels] == value
        exported = {(name, dict(labels)["hostname"], dict(labels)["resourcetype"])
                    for name, labels in samples
                    if name.startswith("openstack_placement_resource_")}
        assert len(exported) == 4 * len(per_provider)
        for prefix, expected, extra in (
                ("placement_resource_class_", cloud, ()),
                ("placement_aggregate_resource_class_", aggregate,
                 (("aggregate", AGGREGATE),))):
            for rc, sums in expected.items():
                labels = tuple(sorted(extra + (("resource_class", rc),)))
                for key, value in sums.items():
                    assert samples[prefix + key, labels] == pytest.approx(value), (
                        prefix, rc, key)
        assert samples["placement_providers", ()] == len(uuids)

        # The configured flavors' gauges, as the scrape saw the cloud.
        for flavor in FLAVORS:
            name, _sep, query = flavor.partition(":")
            assert samples["placement_flavor_fits", (("flavor", name),)] == (
                _ok(client, "GET", "/capacity?" + query)["fits"])

        roots = [uuids[name] for name in HOSTS]
        for query in REQUESTS:
            fits = _ok(client, "GET", "/capacity?" + query)["fits"]
            assert fits > 0
            claimed = _brute_force_fits(client, query, roots)
            assert fits == len(claimed), query
            assert _ok(client, "GET", "/capacity?" + query)["fits"] == 0
            # Back to the cloud as it was, for the next request.
            for consumer in claimed:
                assert client.request("DELETE", "/allocations/" + consumer)[0] == 204
            assert _ok(client, "GET", "/capacity?" + query)["fits"] == fits
