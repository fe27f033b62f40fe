"""README's dashboards and alert, evaluated by a real Prometheus.

README.rst promises PromQL panels and an alert that work unchanged
against openstack-exporter and against this service.  This test takes
them from README itself (so the two cannot drift apart), has Debian's
``prometheus`` scrape a live server holding a known cloud, and checks
what Prometheus answers against what the API's own inventories and
usages add up to:

* each panel's query gives, per series, the value worked out from the
  API (per host and class, or per class for the whole cloud);
* the alert rule loads (``promtool check rules`` and Prometheus itself),
  and exactly the host over 90% of its capacity after ratio is caught by
  it, as ``pending`` (its ``for: 10m`` has not run out);
* the service's own per-class and per-aggregate figures, quoted in
  README, select what they say.

The scrape carries no token: the policy file lets anyone read the
metrics, as README tells operators to for scrapers.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.functional import live_server

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.rst"
AGGREGATE = "5b0c2e4e-0000-4000-8000-00000000a99a"
# name -> (inventories, usage claimed by one instance, in the aggregate)
HOSTS: dict[str, tuple[dict[str, dict[str, Any]], dict[str, int], bool]] = {
    # VCPU: (16 - 0) * 2.0 = 32, 30 used: 93.75%, the one over 90%.
    "hot": ({"VCPU": {"total": 16, "allocation_ratio": 2.0},
             "MEMORY_MB": {"total": 8192, "reserved": 512}},
            {"VCPU": 30, "MEMORY_MB": 1024}, True),
    # MEMORY_MB: (4096 - 1024) * 1.0 = 3072, 2048 used: 66%.
    "warm": ({"VCPU": {"total": 8},
              "MEMORY_MB": {"total": 4096, "reserved": 1024},
              "DISK_GB": {"total": 100, "allocation_ratio": 1.5}},
             {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 60}, True),
    "idle": ({"VCPU": {"total": 4, "allocation_ratio": 4.0},
              "DISK_GB": {"total": 40}}, {}, False),
}
FLAVOR = "small:resources=VCPU:1,MEMORY_MB:256"


def _readme_promql() -> tuple[list[tuple[str, list[str]]], str]:
    """The panels (title, its queries) and the alert rule's YAML, as
    README.rst's "Dashboards and an alert" list gives them."""
    text = README.read_text()
    start = text.index("Dashboards and an alert")
    section = text[start:text.index("What it costs", start)]
    panels: list[tuple[str, list[str]]] = []
    alert = ""
    for title, block in re.findall(r"^\* (.+?)::\n\n((?:      .*\n|\n)+)",
                                   section, re.M):
        lines = [line[6:] for line in block.rstrip("\n").split("\n")]
        if title.startswith("alert"):
            alert = "\n".join(lines)
            continue
        # A query starts at the block's own indentation; deeper lines
        # continue it.
        queries: list[str] = []
        for line in lines:
            if line and not line[0].isspace():
                queries.append(line)
            elif line:
                queries[-1] += " " + line.strip()
        panels.append((title, queries))
    assert len(panels) == 2 and alert, "README's PromQL list changed shape"
    return panels, alert


def _ok(client: live_server.Client, method: str, path: str,
        body: Any = None) -> Any:
    status, answer = client.request(method, path, body)
    assert status < 300, (method, path, status, answer)
    return answer


def _build_cloud(client: live_server.Client) -> dict[str, str]:
    uuids = {}
    for name, (inventories, used, in_aggregate) in HOSTS.items():
        provider = uuids[name] = str(uuid.uuid4())
        _ok(client, "POST", "/resource_providers", {"name": name, "uuid": provider})
        generation = _ok(client, "PUT", "/resource_providers/%s/inventories" % provider,
                         {"resource_provider_generation": 0,
                          "inventories": inventories}
                         )["resource_provider_generation"]
        if in_aggregate:
            _ok(client, "PUT", "/resource_providers/%s/aggregates" % provider,
                {"resource_provider_generation": generation,
                 "aggregates": [AGGREGATE]})
        if used:
            _ok(client, "PUT", "/allocations/%s" % uuid.uuid4(),
                {"allocations": {provider: {"resources": used}},
                 "project_id": "p", "user_id": "u", "consumer_generation": None,
                 "consumer_type": "INSTANCE"})
    return uuids


def _api_figures(client: live_server.Client, uuids: dict[str, str]
                 ) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (host, class): capacity after ratio and usage, from the API."""
    figures = {}
    for name, provider in uuids.items():
        inventories = _ok(client, "GET", "/resource_providers/%s/inventories"
                          % provider)["inventories"]
        usages = _ok(client, "GET", "/resource_providers/%s/usages"
                     % provider)["usages"]
        for rc, inventory in inventories.items():
            capacity = ((inventory["total"] - inventory["reserved"])
                        * inventory["allocation_ratio"])
            figures[name, rc] = (capacity, float(usages[rc]))
    return figures


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[live_server.Client, str, Path]]:
    """A live server with metrics open to tokenless scrapers, and a
    Prometheus (its URL) scraping it every second with README's alert."""
    if shutil.which("prometheus") is None:
        live_server.lacking("Debian's prometheus is not installed")
    _panels, alert = _readme_promql()
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:metrics": "@"\n')
    conf = tmp_path / "placement.conf"
    conf.write_text("[metrics]\ncapacity_requests = %s\n"
                    "[oslo_policy]\npolicy_file = %s\n" % (FLAVOR, policy))
    env = {"OS_METRICS__ENABLED": "true", "OS_METRICS__CAPACITY_INTERVAL": "0",
           "OS_PLACEMENT_CONFIG_FILES": str(conf)}
    with live_server.serve("sqlite", env=env) as client:
        rules = tmp_path / "rules.yml"
        rules.write_text("groups:\n  - name: placement\n    rules:\n"
                         + "".join("      " + line + "\n"
                                   for line in alert.splitlines()))
        subprocess.run(["promtool", "check", "rules", str(rules)],
                       check=True, capture_output=True)
        config = tmp_path / "prometheus.yml"
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [{"job_name": "placement",
                                "static_configs": [{"targets": [
                                    "127.0.0.1:%d" % client.port]}]}],
        }))
        port = live_server.free_port()
        log = (tmp_path / "prometheus.log").open("wb")
        process = subprocess.Popen(
            ["prometheus", "--config.file", str(config),
             "--storage.tsdb.path", str(tmp_path / "tsdb"),
             "--web.listen-address", "127.0.0.1:%d" % port],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield client, "http://127.0.0.1:%d" % port, tmp_path / "prometheus.log"
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()


def _api(url: str, path: str, **params: str) -> Any:
    query = ("?" + urllib.parse.urlencode(params)) if params else ""
    with urllib.request.urlopen(url + path + query, timeout=10) as answer:
        document = json.load(answer)
    assert document["status"] == "success", document
    return document["data"]


def _query(url: str, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
    data = _api(url, "/api/v1/query", query=expr)
    return {tuple(sorted((k, v) for k, v in series["metric"].items()
                         if k not in ("__name__", "job", "instance"))): float(series["value"][1])
            for series in data["result"]}


def _until(check: Any, what: str, log: Path, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        try:
            found = check()
        except OSError:
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError("%s; Prometheus said:\n%s"
                                 % (what, log.read_text()[-3000:]))
        time.sleep(0.5)


def test_readme_dashboards_and_alert_in_a_real_prometheus(
        prometheus: tuple[live_server.Client, str, Path]) -> None:
    client, url, log = prometheus
    panels, _alert = _readme_promql()
    uuids = _build_cloud(client)
    figures = _api_figures(client, uuids)

    # Wait for a scrape taken after the cloud was built (every host has
    # its series) and for the alert to have been evaluated on it.
    _until(lambda: len(_query(url, "openstack_placement_resource_usage"))
           == len(figures), "every host and class scraped", log)
    alerts = _until(lambda: _api(url, "/api/v1/alerts")["alerts"],
                    "the alert was never evaluated", log)
    targets = _api(url, "/api/v1/targets")["activeTargets"]
    assert [t["health"] for t in targets] == ["up"], targets

    (per_host_title, [per_host]), (cloud_title, [cloud_capacity, cloud_usage]) = panels
    assert "per host" in per_host_title and "cloud" in cloud_title
    percent = _query(url, per_host)
    assert percent == pytest.approx({
        (("hostname", host), ("resourcetype", rc)): 100 * used / capacity
        for (host, rc), (capacity, used) in figures.items()})
    classes = {rc for _host, rc in figures}
    assert _query(url, cloud_capacity) == pytest.approx({
        (("resourcetype", rc),): sum(c for (_h, r), (c, _u) in figures.items() if r == rc)
        for rc in classes})
    assert _query(url, cloud_usage) == pytest.approx({
        (("resourcetype", rc),): sum(u for (_h, r), (_c, u) in figures.items() if r == rc)
        for rc in classes})

    over = {(host, rc) for (host, rc), (capacity, used) in figures.items()
            if used / capacity > 0.9}
    assert over == {("hot", "VCPU")}
    assert [(a["labels"]["alertname"], a["labels"]["hostname"],
             a["labels"]["resourcetype"], a["state"]) for a in alerts] == [
        ("PlacementResourceNearlyFull", "hot", "VCPU", "pending")]
    assert alerts[0]["annotations"]["summary"] == "VCPU on hot is over 90% used"

    # The service's own figures, as README quotes them: the cloud's
    # classes over a share of their capacity, and the aggregate's room
    # for the configured flavor (each host: the fewest of its classes'
    # free units over the flavor's amounts; the hosts' counts summed).
    for share in (0.9, 0.5):
        cloud = {rc: [sum(v[i] for (_h, r), v in figures.items() if r == rc)
                      for i in (0, 1)] for rc in classes}
        assert _query(url, "placement_resource_class_used"
                           " / placement_resource_class_capacity > %s" % share
                      ) == pytest.approx({
            (("resource_class", rc),): used / capacity
            for rc, (capacity, used) in cloud.items() if used / capacity > share})
    amounts = {"VCPU": 1, "MEMORY_MB": 256}
    room = sum(min(int(figures[host, rc][0] - figures[host, rc][1]) // amount
                   for rc, amount in amounts.items())
               for host, (_inv, _used, in_aggregate) in HOSTS.items() if in_aggregate)
    assert room < 10
    assert _query(url, 'placement_aggregate_flavor_fits{flavor="small"} < 10') == {
        (("aggregate", AGGREGATE), ("flavor", "small")): room}
