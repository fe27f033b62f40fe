"""The service's own counters, gauges and histograms (prometheus-client).

Only the instruments live here, with the few functions that feed them; the
places that measure call those functions.  Every name starts with
``placement_``.  In multiprocess mode (see :mod:`placement.metrics`) the
pool gauges report the sum over live workers.
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Iterable

import prometheus_client
import prometheus_client.multiprocess
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# No "_created" series beside every counter and histogram: they double
# the text and no dashboard reads them.
prometheus_client.disable_created_metrics()

# Our own registry: nothing another library registers on prometheus-client's
# default one is exported by accident, and tests may import this freely.
REGISTRY = CollectorRegistry(auto_describe=True)

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Latency buckets, in seconds: placement answers most reads in a few
# milliseconds and large candidate searches in seconds.
_LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                    2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter(
    "placement_http_requests", "HTTP requests answered, by route template "
    "('unknown' for a URL of no route), method, microversion ('none' when "
    "none was negotiated) and status.",
    ["route", "method", "microversion", "status"], registry=REGISTRY)
LATENCY = Histogram(
    "placement_http_request_duration_seconds", "Time from receiving a "
    "request to returning its response, by route template.",
    ["route"], buckets=_LATENCY_BUCKETS, registry=REGISTRY)
DB_TIME = Histogram(
    "placement_db_time_per_request_seconds", "Time a request spent waiting "
    "for the database (statements sent to the answer read), by route "
    "template.", ["route"], buckets=_LATENCY_BUCKETS, registry=REGISTRY)
POOL_IN_USE = Gauge(
    "placement_db_pool_connections_in_use", "Database connections taken "
    "from the pool and not yet given back.", registry=REGISTRY,
    multiprocess_mode="livesum")
POOL_OVERFLOW = Gauge(
    "placement_db_pool_overflow_connections", "Connections open beyond the "
    "pool's size ([placement_database] max_pool_size), up to max_overflow.",
    registry=REGISTRY, multiprocess_mode="livesum")
WRITE_RETRIES = Counter(
    "placement_db_write_retries", "Write transactions run again, by write "
    "and cause: 'conflict' (deadlock, serialization or certification "
    "failure, lock wait timeout) or 'lost_connection'.",
    ["write", "cause"], registry=REGISTRY)
DEADLOCKS = Counter(
    "placement_db_deadlocks", "Write transactions that collided with a "
    "concurrent one (deadlock, serialization or Galera certification "
    "failure, lock wait timeout), retried or not, by write.",
    ["write"], registry=REGISTRY)
WRITES_GIVEN_UP = Counter(
    "placement_db_writes_given_up", "Writes that still collided after "
    "every retry (answered 409 placement.concurrent_update), by write.",
    ["write"], registry=REGISTRY)
KEPT_HITS = Counter(
    "placement_kept_hits", "Things a worker kept between requests and used "
    "again, by kind: 'entry' (a provider's inventories and traits), 'tree' "
    "(a tree unchanged since an earlier search), 'candidate_list' (a "
    "tree's candidates for a query asked before).", ["kind"],
    registry=REGISTRY)
KEPT_REBUILDS = Counter(
    "placement_kept_rebuilds", "Things a worker had to read or work out "
    "afresh and then kept, by kind (see placement_kept_hits).", ["kind"],
    registry=REGISTRY)


def multiprocess() -> bool:
    """Whether the figures of every worker are summed (see the package
    docstring): prometheus-client decided it when first imported."""
    return bool(os.environ.get(MULTIPROCESS_ENV))


def exposition() -> bytes:
    """The instruments in the Prometheus text format: every worker's sum
    in multiprocess mode, this process's figures otherwise."""
    if multiprocess():
        registry = CollectorRegistry()
        prometheus_client.multiprocess.MultiProcessCollector(registry)
        return prometheus_client.generate_latest(registry)
    return prometheus_client.generate_latest(REGISTRY)


def request_done(route: str, method: str, microversion: str, status: str,
                 seconds: float, db_seconds: float) -> None:
    REQUESTS.labels(route, method, microversion, status).inc()
    LATENCY.labels(route).observe(seconds)
    DB_TIME.labels(route).observe(db_seconds)


def pool_state(in_use: int, overflow: int) -> None:
    POOL_IN_USE.set(in_use)
    POOL_OVERFLOW.set(max(overflow, 0))


def write_retried(write: str, cause: str) -> None:
    WRITE_RETRIES.labels(write, cause).inc()


def write_collided(write: str, given_up: bool) -> None:
    DEADLOCKS.labels(write).inc()
    if given_up:
        WRITES_GIVEN_UP.labels(write).inc()


# What the kept stores counted (see placement.kept.store.Counts) up to the
# last request that reported it, per store: the next report adds the
# difference.  The stores count in plain integers, as a counter increment
# per provider looked at would cost a search more than the lookup itself.
_reported: dict[int, collections.Counter[tuple[str, str]]] = {}
_reported_lock = threading.Lock()


def kept_counted(store_id: int, counts: Iterable[tuple[tuple[str, str], int]]
                 ) -> None:
    """Report a store's running counts ``((event, kind), total)``, where
    event is 'hit' or 'rebuild'."""
    with _reported_lock:
        before = _reported.setdefault(store_id, collections.Counter())
        for (event, kind), total in counts:
            delta = total - before[(event, kind)]
            if delta > 0:
                counter = KEPT_HITS if event == "hit" else KEPT_REBUILDS
                counter.labels(kind).inc(delta)
                before[(event, kind)] = total
