"""The database failing under load, as clients of a real server see it.

gunicorn with two workers serves while threads claim resources for new
consumers and read usages and allocation candidates without pause.

The database crashed for ten seconds: a PostgreSQL or MariaDB server of the
test's own (``tests/dbservers.py``: the machine's shared servers are never
stopped) is killed with SIGKILL, kept down for ten seconds and started again
(it runs its crash recovery).  Required:

* while the database is down, every answer is a 503 with the JSON error
  body and no traceback or driver text, and comes within seconds;
* the first success comes within seconds of the database taking clients
  again, from the same workers (none was restarted).

Every connection killed, three times, while the database stays up (on the
shared servers, only the sessions of the test's own database): no client
sees an error, not even a writer whose connection died during COMMIT.

Afterwards, in both cases, every claim acknowledged with 204 is there,
every claim is whole (both classes or neither), the usages equal the sum of
the allocations and the provider's generation counts every claim once.

The figures (requests, 503s, slowest answer, time to the first success)
are printed; ``pytest -s`` shows them.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pytest
import sqlalchemy as sa

from tests import backends, dbservers
from tests.functional import live_server

pytestmark = pytest.mark.slow

PROVIDER = "0c0ffee0-1dea-4d5e-9a1b-2c3d4e5f6a7b"
CLAIM = {"VCPU": 1, "MEMORY_MB": 8}
DOWN_FOR = 10.0
# No answer may take longer than this, database up or down ...
SLOWEST_ANSWER = 5.0
# ... and the first success must come this soon after the database is back.
RECOVERY = 10.0
# How many times every connection is killed while the database stays up.
KILLS = 3
# Words of the drivers and SQLAlchemy that must never reach a client.
LEAKS = ("Traceback", "psycopg2", "pymysql", "sqlalchemy", "OperationalError",
         "SELECT", "INSERT", "UPDATE", "127.0.0.1")


@dataclass
class Answer:
    kind: str
    started: float
    ended: float
    status: int
    body: bytes
    consumer: str = ""


def _claim_body() -> dict[str, Any]:
    return {"allocations": {PROVIDER: {"resources": CLAIM}},
            "project_id": "p", "user_id": "u", "consumer_generation": None,
            "consumer_type": "INSTANCE"}


def _load(client: live_server.Client, answers: list[Answer],
          stop: threading.Event) -> list[threading.Thread]:
    """Claiming and reading threads, started; each appends its answers."""

    def run(kind: str) -> None:
        while not stop.is_set():
            consumer = str(uuid.uuid4())
            if kind == "claim":
                method, path, body = ("PUT", "/allocations/%s" % consumer,
                                      _claim_body())
            elif kind == "usages":
                method, path, body = (
                    "GET", "/resource_providers/%s/usages" % PROVIDER, None)
            else:
                method, path, body = (
                    "GET", "/allocation_candidates?resources=VCPU:1", None)
            started = time.monotonic()
            status, data = client.exchange(method, path, body,
                                           timeout=SLOWEST_ANSWER * 4)
            answers.append(Answer(kind, started, time.monotonic(), status, data,
                                  consumer if kind == "claim" else ""))

    threads = [threading.Thread(target=run, args=(kind,))
               for kind in ("claim", "claim", "claim", "usages", "candidates")]
    for thread in threads:
        thread.start()
    return threads


def _check_unavailable(answer: Answer) -> None:
    """A 503 as clients must see it: the JSON error, nothing internal."""
    text = answer.body.decode()
    for word in LEAKS:
        assert word not in text, text
    (error,) = json.loads(text)["errors"]
    assert error["status"] == 503 and error["title"] == "Service Unavailable", text
    assert error["code"] == "placement.undefined_code", text
    assert error["request_id"].startswith("req-"), text


def _provider(client: live_server.Client) -> None:
    assert client.request("POST", "/resource_providers",
                          {"name": "faults", "uuid": PROVIDER})[0] == 200
    assert client.request(
        "PUT", "/resource_providers/%s/inventories" % PROVIDER,
        {"resource_provider_generation": 0,
         "inventories": {name: {"total": 1_000_000} for name in CLAIM}})[0] == 200


@contextlib.contextmanager
def _under_load(client: live_server.Client) -> Iterator[list[Answer]]:
    """Load on the server while the body runs; the answers (complete once
    the body is over)."""
    answers: list[Answer] = []
    stop = threading.Event()
    threads = _load(client, answers, stop)
    try:
        time.sleep(2)
        yield answers
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def _claims_whole(client: live_server.Client, answers: list[Answer]) -> dict[str, Any]:
    """Check the provider's allocations and usages after the load; its
    allocations, by consumer."""
    status, allocations = client.request(
        "GET", "/resource_providers/%s/allocations" % PROVIDER)
    assert status == 200
    status, usages = client.request("GET", "/resource_providers/%s/usages" % PROVIDER)
    assert status == 200
    claims: dict[str, Any] = allocations["allocations"]
    acknowledged = {a.consumer for a in answers if a.kind == "claim" and a.status == 204}
    assert acknowledged and acknowledged <= set(claims)
    for consumer, claimed in claims.items():
        assert claimed["resources"] == CLAIM, consumer
    assert usages["usages"] == {name: amount * len(claims)
                                for name, amount in CLAIM.items()}
    # One generation for the inventory, then one per claim.
    assert usages["resource_provider_generation"] == 1 + len(claims)
    return claims


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_database_crashed_for_ten_seconds_under_load(backend: str) -> None:
    lacking = dbservers.SERVERS[backend].missing()
    if lacking:
        live_server.lacking("a %s server of our own needs %s"
                            % (backend, ", ".join(lacking)))
    with dbservers.running(backend) as database, live_server.serve_url(
            database.create_database("placement"), workers=2,
            tracebacks_from=live_server.POOL_LOGGERS) as client:
        _provider(client)
        workers = client.workers()
        with _under_load(client) as answers:
            killed = time.monotonic()
            database.kill()
            time.sleep(DOWN_FOR)
            restarted = time.monotonic()
            database.start()
            back = time.monotonic()
            time.sleep(3)
        assert client.workers() == workers
        claims = _claims_whole(client, answers)

    statuses = {answer.status for answer in answers}
    assert statuses <= {200, 204, 503}, statuses
    down = [a for a in answers if a.started > killed + 0.5 and a.ended < restarted]
    assert down and all(a.status == 503 for a in down), [a.status for a in down]
    unavailable = [a for a in answers if a.status == 503]
    for answer in unavailable:
        _check_unavailable(answer)
        assert killed <= answer.ended and answer.started <= back, answer
    slowest = max(a.ended - a.started for a in answers)
    assert slowest < SLOWEST_ANSWER, slowest
    first_success = min(a.ended for a in answers
                        if a.started >= restarted and a.status != 503)
    assert first_success - back < RECOVERY
    print("\n%s down %.0f s: %d requests (%d claims kept), %d answered 503, "
          "slowest answer %.2f s, first success %.2f s after the database took "
          "clients again (restart took %.2f s)" % (
              backend, DOWN_FOR, len(answers), len(claims), len(unavailable),
              slowest, first_success - back, back - restarted))


def _session_killer(backend: str, url: str) -> Callable[[], int]:
    """A function that kills every session of the database at ``url`` but
    its own, from the server side; it returns how many it killed."""
    database = sa.engine.make_url(url).database
    admin = sa.create_engine(url, poolclass=sa.pool.NullPool)

    def kill_all() -> int:
        with admin.connect() as conn:
            if backend == "postgresql":
                killed = conn.execute(sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :db AND pid <> pg_backend_pid()"),
                    {"db": database}).scalars().all()
                return sum(1 for done in killed if done)
            sessions = conn.execute(sa.text(
                "SELECT id FROM information_schema.processlist "
                "WHERE db = :db AND id <> CONNECTION_ID()"), {"db": database}
            ).scalars().all()
            for session in sessions:
                with contextlib.suppress(sa.exc.DBAPIError):  # gone meanwhile
                    conn.execute(sa.text("KILL CONNECTION %d" % session))
            return len(sessions)

    return kill_all


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_every_connection_killed_three_times_under_load(backend: str) -> None:
    backends.require(backend)
    with backends.fresh_database(backend) as url, live_server.serve_url(
            url, workers=2, tracebacks_from=live_server.POOL_LOGGERS) as client:
        kill_all = _session_killer(backend, url)
        _provider(client)
        workers = client.workers()
        killed = []
        with _under_load(client) as answers:
            for _round in range(KILLS):
                killed.append(kill_all())
                time.sleep(1)
        assert client.workers() == workers
        claims = _claims_whole(client, answers)

    assert all(killed), killed  # every round found sessions to kill
    # Not even a write whose connection died during COMMIT fails: it asks
    # whether it committed (PostgreSQL by transaction id, MariaDB by its
    # commit mark) and is then done, or runs again.
    failed = [(a.kind, a.status, a.body[:300]) for a in answers if a.status >= 300]
    assert failed == []
    acknowledged = {a.consumer for a in answers if a.kind == "claim" and a.status == 204}
    assert acknowledged == set(claims)
    settled = client.log.count("had committed")
    print("\n%s: %d sessions killed in %d rounds under %d requests, none "
          "failed; %d writes lost during COMMIT had committed" % (
              backend, sum(killed), KILLS, len(answers), settled))
