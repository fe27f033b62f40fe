"""A worker SIGKILLed in the middle of writes leaves nothing half-written.

Real gunicorn, two workers, on PostgreSQL and MariaDB: threads claim
two resource classes at a time for new consumers while one worker is
killed with SIGKILL (gunicorn starts another).  Requests in flight on the
killed worker may fail or vanish, and the client cannot know whether
they committed; but every claim acknowledged with 204 must be there, every
consumer's allocation must be whole (both classes or neither), and the
provider's usages must equal the sum of its allocations.
"""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
import uuid

import pytest

from tests import backends
from tests.functional import live_server

PROVIDER = "6b3c2d1e-0f9a-4b8c-8d7e-6f5a4b3c2d01"


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_sigkilled_worker_leaves_nothing_half_written(backend: str) -> None:
    backends.require(backend)
    with live_server.serve(backend, workers=2) as client:
        assert client.request("POST", "/resource_providers",
                              {"name": "killed-worker", "uuid": PROVIDER})[0] == 200
        assert client.request(
            "PUT", "/resource_providers/%s/inventories" % PROVIDER,
            {"resource_provider_generation": 0,
             "inventories": {"VCPU": {"total": 100000},
                             "MEMORY_MB": {"total": 100000}}})[0] == 200
        acknowledged: list[str] = []
        stop = threading.Event()

        def claim() -> None:
            while not stop.is_set():
                consumer = str(uuid.uuid4())
                try:
                    status, _body = client.request(
                        "PUT", "/allocations/%s" % consumer,
                        {"allocations": {PROVIDER: {"resources": {
                            "VCPU": 1, "MEMORY_MB": 8}}},
                         "project_id": "p", "user_id": "u",
                         "consumer_generation": None, "consumer_type": "INSTANCE"})
                except (OSError, http.client.HTTPException):
                    continue  # the worker died under it: outcome unknown
                if status == 204:
                    acknowledged.append(consumer)

        threads = [threading.Thread(target=claim) for _ in range(4)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(1.5)
            victim = client.workers()[0]
            os.kill(victim, signal.SIGKILL)
            time.sleep(1.5)
        finally:
            stop.set()
            for thread in threads:
                thread.join()

        status, allocations = client.request(
            "GET", "/resource_providers/%s/allocations" % PROVIDER)
        assert status == 200
        status, usages = client.request(
            "GET", "/resource_providers/%s/usages" % PROVIDER)
        assert status == 200
    claims = allocations["allocations"]
    assert acknowledged and set(acknowledged) <= set(claims)
    for consumer, claimed in claims.items():
        assert claimed["resources"] == {"VCPU": 1, "MEMORY_MB": 8}, consumer
    assert usages["usages"] == {"VCPU": len(claims), "MEMORY_MB": 8 * len(claims)}
