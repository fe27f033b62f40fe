"""Database failures: what kind each is, which writes retry, what clients see.

Every class of failure is produced for real on each backend that has it:
a refused and a lost connection, a deadlock, a lock wait timeout, and
errors of any other kind.  A Galera certification failure (error 1213
raised by COMMIT) needs a cluster; here the driver raises that error from
COMMIT after rolling the transaction back, as it does on a Galera node, and
tests/functional/test_galera.py meets the real thing.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import types
from typing import Any, Callable, Iterator

import psycopg2.errors
import pymysql.err
import pytest
import sqlalchemy as sa

from placement.db import api as db_api
from placement.db import migration, retries
from placement.db.api import Database, Failure
from placement.objects import resource_class, trait
from tests import backends
from tests.functional import inprocess
from tests.functional.fixtures import make_conf
from tests.functional.servers import free_port

ALL = ["sqlite", "postgresql", "mysql"]
SERVERS = ["postgresql", "mysql"]


@contextlib.contextmanager
def _database(backend: str, **group: Any) -> Iterator[Database]:
    """A fresh migrated database with a two-row scratch table."""
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        db = Database(make_conf(url, placement_database=group))
        try:
            migration.upgrade(db)
            with db.writer() as conn:
                conn.exec_driver_sql(
                    "CREATE TABLE scratch (id INTEGER PRIMARY KEY, v INTEGER)")
                conn.exec_driver_sql("INSERT INTO scratch VALUES (1, 0), (2, 0)")
            yield db
        finally:
            db.dispose()


def _raised(action: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as info:
        action()
    return info.value


def _bump(conn: sa.engine.Connection, row: int, raw: bool = False) -> None:
    sql = "UPDATE scratch SET v = v + 1 WHERE id = %d" % row
    if raw:
        db_api.raw_rows(conn, sql)  # on the driver's cursor (db_api.raw_rows)
    else:
        conn.exec_driver_sql(sql)


# Refused or lost connections: 503.

@pytest.mark.parametrize("backend", ALL)
def test_a_refused_connection_is_unavailable(backend: str, tmp_path: Any) -> None:
    if backend == "sqlite":
        url = "sqlite:///%s" % (tmp_path / "no" / "such" / "dir.sqlite")
    else:
        backends.require(backend)
        url = sa.engine.make_url(backends.server_url(backend)).set(
            port=free_port()).render_as_string(hide_password=False)
    db = Database(make_conf(url, placement_database={"max_retries": 0}))

    def read() -> None:
        with db.reader() as conn:
            conn.exec_driver_sql("SELECT 1")

    error = _raised(read)
    assert db_api.classify(error) is Failure.UNAVAILABLE
    assert db_api.connection_problem(error)


@pytest.mark.parametrize("raw", [False, True], ids=["sqlalchemy", "raw_rows"])
@pytest.mark.parametrize("backend", SERVERS)
def test_a_lost_connection_is_unavailable(backend: str, raw: bool) -> None:
    with _database(backend) as db:
        own_id = {"mysql": "SELECT CONNECTION_ID()",
                  "postgresql": "SELECT pg_backend_pid()"}[backend]
        kill = {"mysql": "KILL %d", "postgresql": "SELECT pg_terminate_backend(%d)"}[backend]

        def read_after_kill() -> None:
            with db.reader() as conn:
                ident = conn.exec_driver_sql(own_id).scalar_one()
                with db.engine.connect() as other:
                    other.exec_driver_sql(kill % ident)
                if raw:
                    db_api.raw_rows(conn, "SELECT v FROM scratch")
                else:
                    conn.exec_driver_sql("SELECT v FROM scratch").all()

        error = _raised(read_after_kill)
        assert db_api.classify(error) is Failure.UNAVAILABLE
        # The lost connection was dropped: the next read gets a good one.
        with db.reader() as conn:
            assert sorted(db_api.raw_rows(conn, "SELECT id FROM scratch")) == [(1,), (2,)]


# Collisions with a concurrent transaction: retried, then 409.

@pytest.mark.parametrize("raw", [False, True], ids=["sqlalchemy", "raw_rows"])
@pytest.mark.parametrize("backend", SERVERS)
def test_a_deadlock_is_a_conflict(backend: str, raw: bool) -> None:
    with _database(backend) as db:
        both_hold_one = threading.Barrier(2)
        errors: list[BaseException] = []

        def write(first: int, second: int) -> None:
            try:
                with db.writer() as conn:
                    _bump(conn, first, raw)
                    both_hold_one.wait(10)
                    _bump(conn, second, raw)
            except Exception as exc:  # the deadlock's victim
                errors.append(exc)

        threads = [threading.Thread(target=write, args=rows) for rows in ((1, 2), (2, 1))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(errors) == 1, errors
        assert db_api.classify(errors[0]) is Failure.CONFLICT
        assert db_api.connection_problem(errors[0]) is None


@pytest.mark.parametrize("backend", ALL)
def test_a_lock_wait_timeout_is_a_conflict(backend: str) -> None:
    with _database(backend) as db:
        with db.writer() as holder:
            _bump(holder, 1)  # holds the row (SQLite: the database) until the end

            def wait_for_the_lock() -> None:
                with db.engine.connect() as conn:
                    conn.exec_driver_sql({
                        "mysql": "SET SESSION innodb_lock_wait_timeout = 1",
                        "postgresql": "SET SESSION lock_timeout = '200ms'",
                        "sqlite": "PRAGMA busy_timeout = 200"}[backend])
                    conn.commit()
                    conn.execution_options(**{db_api.WRITE_OPTION: True})
                    with conn.begin():
                        _bump(conn, 1)

            error = _raised(wait_for_the_lock)
        assert db_api.classify(error) is Failure.CONFLICT, error
        assert db_api.connection_problem(error) is None


def _collision(dialect: str) -> Exception:
    """The driver's own exception for a transaction that lost a race."""
    if dialect == "mysql":
        return pymysql.err.OperationalError(
            1213, "Deadlock found when trying to get lock; try restarting transaction")
    if dialect == "postgresql":
        return psycopg2.errors.DeadlockDetected("deadlock detected")
    return sqlite3.OperationalError("database is locked")


@contextlib.contextmanager
def failing_commits(db: Database, times: int | None) -> Iterator[list[int]]:
    """Make the next ``times`` COMMITs (all of them when None) fail as a
    Galera node fails a transaction that lost certification: the
    transaction is rolled back and the driver raises the collision error.
    Yields the list of failed commits, one entry each."""
    dialect = db.engine.dialect
    commit = dialect.do_commit
    failed: list[int] = []

    def do_commit(dbapi_connection: Any) -> None:
        if times is None or len(failed) < times:
            failed.append(1)
            dbapi_connection.rollback()
            raise _collision(dialect.name)
        commit(dbapi_connection)

    dialect.do_commit = do_commit  # type: ignore[method-assign]
    try:
        yield failed
    finally:
        del dialect.do_commit


@pytest.mark.parametrize("backend", ALL)
def test_a_collision_raised_by_commit_is_a_conflict(backend: str) -> None:
    with _database(backend) as db, failing_commits(db, None):
        def write() -> None:
            with db.writer() as conn:
                _bump(conn, 1)

        error = _raised(write)
    assert db_api.classify(error) is Failure.CONFLICT
    assert db_api.connection_problem(error) is None


# Anything else: 500.

@pytest.mark.parametrize("backend", ALL)
def test_other_database_errors_are_errors(backend: str) -> None:
    with _database(backend) as db:
        def missing_table() -> None:
            with db.reader() as conn:
                conn.exec_driver_sql("SELECT * FROM no_such_table")

        def duplicate_key() -> None:
            with db.writer() as conn:
                conn.exec_driver_sql("INSERT INTO scratch VALUES (1, 0)")

        for action in (missing_table, duplicate_key):
            error = _raised(action)
            assert db_api.classify(error) is Failure.ERROR, error
            assert db_api.connection_problem(error) is None
    assert db_api.classify(ValueError("not a database error")) is None


# Retries: bounded, logged once at INFO with the write's name.

def _retry_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == retries.__name__ and record.levelno == logging.INFO]


@pytest.fixture(params=ALL)
def ctx(request: pytest.FixtureRequest) -> Iterator[Any]:
    with _database(request.param) as db:
        yield types.SimpleNamespace(db=db, config=None)


def test_a_write_that_collided_is_retried_and_logged_once(
        ctx: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with failing_commits(ctx.db, 2) as failed:
        created, was_created = trait.ensure(ctx, "CUSTOM_RETRIED")
    assert len(failed) == 2
    assert was_created and created.name == "CUSTOM_RETRIED"
    assert trait.get_by_name(ctx, "CUSTOM_RETRIED").id == created.id
    logs = _retry_logs(caplog)
    assert len(logs) == 1, logs
    assert logs[0].startswith("trait.ensure collided with a concurrent write")
    assert "retried 2 time(s), then succeeded" in logs[0]


def test_retries_are_bounded_and_nested_writes_do_not_multiply_them(
        ctx: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    # ensure() calls create(); both retry on their own when called alone.
    with failing_commits(ctx.db, None) as failed:
        error = _raised(lambda: resource_class.ensure(ctx, "CUSTOM_NEVER"))
    assert db_api.classify(error) is Failure.CONFLICT
    assert len(failed) == db_api.CONFLICT_RETRIES + 1
    logs = _retry_logs(caplog)
    assert len(logs) == 1, logs
    assert logs[0].startswith("resource_class.ensure collided")
    assert "retried %d time(s), then gave up" % db_api.CONFLICT_RETRIES in logs[0]


def test_other_failures_are_not_retried(ctx: Any) -> None:
    calls = []

    def attempt() -> None:
        calls.append(1)
        with ctx.db.reader() as conn:
            conn.exec_driver_sql("SELECT * FROM no_such_table")

    _raised(lambda: db_api.run_with_retries("test.read", attempt))
    assert len(calls) == 1


# What clients see.

@pytest.mark.parametrize("backend", ALL)
def test_clients_see_a_retried_create_succeed_and_a_lasting_collision_as_409(
        backend: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with inprocess.served(backend) as (application, db):
        with failing_commits(db, 1):
            resp = inprocess.send(application, "PUT", "/traits/CUSTOM_ONCE")
        assert resp.status_int == 201, resp.text
        with failing_commits(db, 1):
            resp = inprocess.send(application, "PUT", "/resource_classes/CUSTOM_ONCE",
                                  version="1.7")
        assert resp.status_int == 201, resp.text

        with failing_commits(db, None):
            responses = [
                inprocess.send(application, "PUT", "/traits/CUSTOM_NEVER"),
                inprocess.send(application, "POST", "/resource_classes",
                               {"name": "CUSTOM_NEVER"}),
                inprocess.send(application, "POST", "/resource_providers",
                               {"name": "never"}),
            ]
        for resp in responses:
            assert resp.status_int == 409, resp.text
            assert resp.json["errors"][0]["code"] == "placement.concurrent_update"
        # The request log says what the clients got; no traceback anywhere.
        statuses = [record.getMessage().split("status: ")[1].split()[0]
                    for record in caplog.records if record.name == "placement.requestlog"]
        assert statuses[-3:] == ["409"] * 3, statuses
        assert "Traceback" not in caplog.text
        assert inprocess.send(application, "GET", "/traits/CUSTOM_NEVER").status_int == 404
