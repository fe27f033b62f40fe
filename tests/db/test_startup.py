"""What a worker does with its database at start
(placement/db/startup.py): its migration runs in a child process (the
schema is migrated, the worker connects, and a failure fails the start
with the child's own error); a WSGI worker connects in the background."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa

from placement import app, wsgi
from placement import kept as kept_store
from placement.db import migration, startup, tables
from placement.objects.candidates import search
from placement.db.api import Database
from tests import backends
from tests.functional.fixtures import make_conf


def _file_db(tmp_path: Path) -> Database:
    return Database(make_conf("sqlite:///%s" % (tmp_path / "placement.sqlite")))


def test_the_child_migrates_and_the_worker_connects(tmp_path: Path) -> None:
    db = _file_db(tmp_path)
    try:
        startup.migrate(db)
        assert db.started
        assert migration.current_revision(db) == migration.head_revision()
        with db.reader() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(
                tables.resource_classes)).scalar_one() > 0
    finally:
        db.dispose()


def test_a_refused_schema_fails_the_start_with_its_own_error(tmp_path: Path) -> None:
    db = _file_db(tmp_path)
    try:
        with db.engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE %s (version_num VARCHAR(32) NOT NULL)"
                                 % migration.VERSION_TABLE)
            conn.exec_driver_sql("INSERT INTO %s VALUES ('not-ours')"
                                 % migration.VERSION_TABLE)
        db.dispose()
        with pytest.raises(migration.SchemaRefused, match="not-ours"):
            startup.migrate(db)
        assert not db.started
    finally:
        db.dispose()


class _Unsendable(Exception):
    def __reduce__(self):  # type: ignore[no-untyped-def]
        raise TypeError("cannot be pickled")


def test_an_error_that_cannot_be_sent_back_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(_db: Database) -> None:
        raise _Unsendable("the disk is full")

    monkeypatch.setattr(migration, "upgrade", fail)
    db = _file_db(tmp_path)
    with pytest.raises(startup.MigrationFailed, match="_Unsendable: the disk is full"):
        startup.migrate(db)


def test_sqlite_in_memory_migrates_in_the_worker() -> None:
    db = Database(make_conf("sqlite://"))
    try:
        startup.migrate(db)  # a child could not see this database
        assert db.started
        assert migration.current_revision(db) == migration.head_revision()
    finally:
        db.dispose()


@pytest.fixture(params=["postgresql", "mysql"])
def pooled_db(request: pytest.FixtureRequest) -> Iterator[Database]:
    """A database whose connections are pooled (oslo.db pools none of a
    SQLite file's)."""
    with backends.fresh_db(request.param) as db:
        yield db


def test_a_worker_connects_before_its_first_request(pooled_db: Database) -> None:
    startup.connect_in_background(pooled_db).join(timeout=30)
    # The connection waits in the pool for the first request.
    assert pooled_db.engine.pool.checkedin() == 1


def test_a_worker_warms_its_connection_with_the_search_statements(
        pooled_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    # placement.wsgi.api runs each search statement once as its worker
    # connects, over no providers, then reads every tree (none here: what
    # it keeps then is tests/db/test_warm_start.py's): the connection is
    # back in the pool for the first request.
    migration.upgrade(pooled_db)
    ran: list[tuple[str, dict[str, list[int]], list[tuple[object, ...]]]] = []
    real_fetch = search.fetch

    def fetch(conn: sa.engine.Connection, kind: str, params: dict[str, list[int]]
              ) -> list[tuple[object, ...]]:
        rows = real_fetch(conn, kind, params)
        ran.append((kind, params, rows))
        return rows

    monkeypatch.setattr(search, "fetch", fetch)
    startup.connect_in_background(pooled_db, app.warm).join(timeout=30)
    assert pooled_db.engine.pool.checkedin() == 1
    assert sorted((kind, next(iter(params))) for kind, params, _rows in ran) == sorted(
        [(kind, by) for kind, by in search._TEMPLATES if by != search.EVERYONE]
        + [("states", search.EVERYONE)])
    assert all(rows == [] and not any(params.values()) for _kind, params, rows in ran)
    # Nothing read: the worker knows no more of the trees than before.
    assert not kept_store.of(pooled_db.engine).reads_everyone(frozenset({"VCPU"}))


def test_a_database_down_at_start_holds_nothing_up(
        caplog: pytest.LogCaptureFixture) -> None:
    conf = make_conf("postgresql+psycopg2://nobody@127.0.0.1:1/placement",
                     placement_database={"max_retries": 0})
    db = Database(conf)
    thread = startup.connect_in_background(db)
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert "Could not connect to the database at start" in caplog.text
    db.dispose()


def test_a_forked_child_does_not_use_the_parents_connections(pooled_db: Database) -> None:
    # gunicorn --preload builds the application, and so connects, before
    # it forks the workers.
    db = pooled_db
    startup.connect_in_background(db).join(timeout=30)
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            if db.engine.pool.checkedin() == 0:
                with db.engine.connect() as conn:
                    conn.exec_driver_sql("SELECT 1")
                status = 0
        finally:
            os._exit(status)
    _pid, status = os.waitpid(pid, 0)
    assert status == 0
    # The parent's connection was neither closed nor used by the child.
    assert db.engine.pool.checkedin() == 1
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT 1").scalar_one() == 1


def test_the_wsgi_entry_point_connects_its_workers_database(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "placement.conf").write_text("")
    monkeypatch.setenv("OS_PLACEMENT_CONFIG_FILES", str(tmp_path / "placement.conf"))
    monkeypatch.setenv("OS_PLACEMENT_DATABASE__CONNECTION",
                       "sqlite:///%s" % (tmp_path / "placement.sqlite"))
    built: list[Database] = []

    def build_app(_conf: object, db: Database) -> str:
        built.append(db)
        return "the application"

    assert wsgi.application(build_app) == "the application"
    [db] = built
    try:
        for thread in threading.enumerate():
            if thread.name == "placement-connect":
                thread.join(timeout=30)
        assert db.started
    finally:
        db.dispose()
