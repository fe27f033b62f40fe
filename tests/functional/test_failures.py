"""How the whole application fails: unexpected errors and a database that
goes away and comes back, driven through the real middleware stack.

The handler of ``GET /`` is replaced by one that raises or reads the
database, so these tests depend on no resource being implemented.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
import webob

from placement import app, responses
from placement.db import api as db_api
from placement.db import commit_outcome, migration, tables
from placement.db.api import Database
from placement.handlers import root
from tests import backends
from tests.functional import fixtures
from tests.functional.tcp_proxy import TcpProxy


def _count_traits(req: Any) -> webob.Response:
    """A stand-in handler that needs the database."""
    with req.ctx.db.reader() as conn:
        count = conn.execute(sa.text("SELECT COUNT(*) FROM traits")).scalar()
    return responses.json(req, {"traits": count})


def _get(application: Any, path: str = "/", **headers: str) -> webob.Response:
    req = webob.Request.blank(path)
    req.headers["X-Auth-Token"] = "admin"
    req.headers.update(headers)
    return req.get_response(application)


def _error(resp: webob.Response) -> dict[str, Any]:
    assert resp.content_type == "application/json"
    body = json.loads(resp.body)
    assert list(body) == ["errors"]
    error: dict[str, Any] = body["errors"][0]
    return error


@pytest.fixture
def sqlite_conf(tmp_path: Any) -> Any:
    return fixtures.make_conf("sqlite:///%s" % (tmp_path / "placement.sqlite"))


def test_unexpected_exception_is_a_json_500(
        monkeypatch: pytest.MonkeyPatch, sqlite_conf: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    def explode(req: Any) -> webob.Response:
        raise KeyError("internal detail 1234")

    monkeypatch.setattr(root, "home", explode)
    application = app.build_app(sqlite_conf)
    resp = _get(application, **{"OpenStack-API-Version": "placement 1.30"})
    assert resp.status_int == 500
    error = _error(resp)
    assert error["status"] == 500
    assert error["code"] == "placement.undefined_code"
    request_id = resp.headers["x-openstack-request-id"]
    assert request_id.startswith("req-")
    assert error["request_id"] == request_id
    assert resp.headers["OpenStack-API-Version"] == "placement 1.30"
    assert "internal detail 1234" not in resp.text
    assert "Traceback" not in resp.text
    # The log has the traceback, tied to the request id.
    assert "internal detail 1234" in caplog.text


def test_unreadable_sqlite_file_is_a_503(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setattr(root, "home", _count_traits)
    conf = fixtures.make_conf("sqlite:///%s" % (tmp_path / "no" / "such" / "dir.sqlite"))
    resp = _get(app.build_app(conf))
    assert resp.status_int == 503
    error = _error(resp)
    assert error["title"] == "Service Unavailable"
    assert error["request_id"] == resp.headers["x-openstack-request-id"]


@pytest.fixture(params=["postgresql", "mysql"])
def proxied_database(request: pytest.FixtureRequest) -> Iterator[tuple[str, TcpProxy]]:
    """A migrated database reached through a proxy the test can cut."""
    backend = request.param
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        direct = sa.engine.make_url(url)
        proxy = TcpProxy(direct.port or {"postgresql": 5432, "mysql": 3306}[backend])
        try:
            yield direct.set(port=proxy.port).render_as_string(hide_password=False), proxy
        finally:
            proxy.close()


def test_database_outage_is_a_503_and_recovers_without_restart(
        monkeypatch: pytest.MonkeyPatch, proxied_database: tuple[str, TcpProxy],
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    url, proxy = proxied_database
    monkeypatch.setattr(root, "home", _count_traits)
    # Fail fast instead of oslo.db's default ten retries, ten seconds apart.
    conf = fixtures.make_conf(url, placement_database={"max_retries": 1,
                                                       "retry_interval": 1})
    db = Database(conf)
    try:
        migration.upgrade(db)
        application = app.build_app(conf, db)

        resp = _get(application)
        assert resp.status_int == 200, resp.text
        assert resp.json["traits"] > 0

        proxy.cut()
        for _attempt in range(3):  # pooled connections, then new ones
            resp = _get(application, **{"OpenStack-API-Version": "placement 1.23"})
            assert resp.status_int == 503, resp.text
            error = _error(resp)
            assert error["code"] == "placement.undefined_code"
            assert "unavailable" in error["detail"]
        logged = [record.getMessage() for record in caplog.records
                  if record.name == "placement.requestlog"]
        assert len(logged) == 4 and all("status: 503" in line for line in logged[1:])

        proxy.restore()
        resp = _get(application)
        assert resp.status_int == 200, resp.text
        assert resp.json["traits"] > 0
    finally:
        db.dispose()


def test_database_down_before_the_first_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The engine is created on first use; a database that is down then
    # gives 503, and the next request after it is back succeeds.
    backends.require("postgresql")
    monkeypatch.setattr(root, "home", _count_traits)
    with backends.fresh_database("postgresql") as url:
        direct = sa.engine.make_url(url)
        proxy = TcpProxy(direct.port or 5432)
        proxy.cut()
        conf = fixtures.make_conf(
            direct.set(port=proxy.port).render_as_string(hide_password=False),
            placement_database={"max_retries": 1, "retry_interval": 1})
        db = Database(conf)
        try:
            application = app.build_app(conf, db)
            assert _get(application).status_int == 503
            proxy.restore()
            migration.upgrade(db)
            assert _get(application).status_int == 200
        finally:
            db.dispose()
            proxy.close()


def test_default_body_limit_is_a_json_413(sqlite_conf: Any) -> None:
    # [oslo_middleware] max_request_body_size defaults to 16 MiB (oslo's
    # own default, 112 KiB, is too small for large reshapes).
    db = Database(sqlite_conf)
    migration.upgrade(db)
    application = app.build_app(sqlite_conf, db)
    req = webob.Request.blank("/resource_providers", method="POST")
    req.headers.update({"X-Auth-Token": "admin", "Content-Type": "application/json",
                        "OpenStack-API-Version": "placement 1.20"})
    req.body = json.dumps({"name": "x" * (16 * 1024 * 1024 + 1)}).encode()
    resp = req.get_response(application)
    assert resp.status_int == 413
    assert _error(resp)["status"] == 413
    # Just under the limit is read (and refused by the schema: name > 200).
    req.body = json.dumps({"name": "x" * (16 * 1024 * 1024 - 20)}).encode()
    assert req.get_response(application).status_int == 400
    listed = _get(application, "/resource_providers")
    assert listed.json["resource_providers"] == []


# Connections killed by the server while the database stays up (an
# administrator's kill, a proxy or failover dropping sessions): clients
# must not see it.


@pytest.fixture(params=["postgresql", "mysql"])
def killable_database(request: pytest.FixtureRequest
                      ) -> Iterator[tuple[Any, Database, Any]]:
    """A configuration and migrated Database, and a function that kills one
    of its sessions (by the connection it is given) from another session,
    as the server would."""
    backend = request.param
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        conf = fixtures.make_conf(url)
        db = Database(conf)
        migration.upgrade(db)
        admin = sa.create_engine(url)

        def kill(conn: sa.engine.Connection) -> None:
            if backend == "postgresql":
                pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar()
                statement = "SELECT pg_terminate_backend(%d)" % pid
            else:
                pid = conn.execute(sa.text("SELECT CONNECTION_ID()")).scalar()
                statement = "KILL %d" % pid
            with admin.connect() as other:
                other.execute(sa.text(statement))
                other.commit()

        try:
            yield conf, db, kill
        finally:
            db.dispose()
            admin.dispose()


def test_a_read_whose_connection_is_killed_runs_again_unseen(
        monkeypatch: pytest.MonkeyPatch, killable_database: tuple[Any, Database, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    conf, db, kill = killable_database
    calls = []

    def read_after_losing_the_connection(req: Any) -> webob.Response:
        calls.append(1)
        with req.ctx.db.reader() as conn:
            if len(calls) == 1:
                kill(conn)
            count = conn.execute(sa.text("SELECT COUNT(*) FROM traits")).scalar()
        return responses.json(req, {"traits": count})

    monkeypatch.setattr(root, "home", read_after_losing_the_connection)
    application = app.build_app(conf, db)
    with caplog.at_level("WARNING"):
        resp = _get(application)
    assert resp.status_int == 200, resp.text
    assert resp.json["traits"] > 0
    assert len(calls) == 2
    lost = [r for r in caplog.records if "lost its database connection" in r.message]
    assert len(lost) == 1 and "run again 1 time(s)" in lost[0].getMessage()


def test_a_write_whose_connection_is_killed_before_commit_runs_again_once(
        killable_database: tuple[Any, Database, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    _conf, db, kill = killable_database
    attempts = []

    def write() -> None:
        attempts.append(1)
        with db.writer() as conn:
            conn.execute(sa.insert(tables.traits).values(name="CUSTOM_ONCE"))
            if len(attempts) == 1:
                kill(conn)
                conn.execute(sa.text("SELECT 1"))

    with caplog.at_level("WARNING"):
        db_api.run_with_retries("test.write", write)
    assert len(attempts) == 2
    assert _traits_named(db, "CUSTOM_ONCE") == 1
    lost = [r for r in caplog.records if "before committing" in r.message]
    assert len(lost) == 1


def test_a_write_whose_connection_keeps_dying_gives_up_with_a_503(
        killable_database: tuple[Any, Database, Any]) -> None:
    _conf, db, kill = killable_database
    attempts = []

    def write() -> None:
        attempts.append(1)
        with db.writer() as conn:
            kill(conn)
            conn.execute(sa.text("SELECT 1"))

    with pytest.raises(Exception) as failure:
        db_api.run_with_retries("test.write", write)
    assert db_api.classify(failure.value) is db_api.Failure.UNAVAILABLE
    assert len(attempts) == 1 + db_api.LOST_CONNECTION_RETRIES


def _traits_named(db: Database, name: str) -> int:
    with db.reader() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(
            tables.traits).where(tables.traits.c.name == name)).scalar_one())


def test_a_write_whose_planning_read_loses_its_connection_runs_again(
        killable_database: tuple[Any, Database, Any]) -> None:
    # On MySQL a write reads its plan in a transaction of its own before
    # the writer's; nothing is committed yet when that read is cut.
    _conf, db, kill = killable_database
    attempts = []

    def write() -> None:
        attempts.append(1)
        with db.reader() as conn:
            if len(attempts) == 1:
                kill(conn)
            conn.execute(sa.text("SELECT 1"))
        with db.writer() as conn:
            conn.execute(sa.insert(tables.traits).values(name="CUSTOM_PLANNED"))

    db_api.run_with_retries("test.write", write)
    assert len(attempts) == 2
    assert _traits_named(db, "CUSTOM_PLANNED") == 1


def test_a_write_that_committed_before_losing_its_connection_is_not_run_again(
        killable_database: tuple[Any, Database, Any]) -> None:
    _conf, db, kill = killable_database
    attempts = []

    def write() -> None:
        attempts.append(1)
        with db.writer() as conn:
            conn.execute(sa.insert(tables.traits).values(name="CUSTOM_COMMITTED"))
        with db.reader() as conn:
            kill(conn)
            conn.execute(sa.text("SELECT 1"))

    with pytest.raises(Exception) as failure:
        db_api.run_with_retries("test.write", write)
    assert db_api.classify(failure.value) is db_api.Failure.UNAVAILABLE
    assert len(attempts) == 1
    assert _traits_named(db, "CUSTOM_COMMITTED") == 1


@pytest.mark.parametrize("told_by", ["asking", "locks", "returning"])
@pytest.mark.parametrize("committed", [False, True], ids=["aborted", "committed"])
def test_postgresql_learns_what_a_lost_commit_did(
        committed: bool, told_by: str, caplog: pytest.LogCaptureFixture) -> None:
    # The connection dies as COMMIT is sent: before the server got it (the
    # transaction aborted: run it again) or after it committed and before
    # the answer came back (done: running it again would write twice).
    # A write that locks providers learns its transaction id with the
    # locks, one that deletes allocations from the DELETE; any other asks
    # for it before COMMIT.
    backends.require("postgresql")
    with backends.fresh_database("postgresql") as url:
        db = Database(fixtures.make_conf(url))
        migration.upgrade(db)
        admin = sa.create_engine(url)
        attempts = []

        def kill_at_commit(conn: sa.engine.Connection) -> None:
            if len(attempts) > 1:
                return
            raw = conn.connection.dbapi_connection
            assert raw is not None
            pid = raw.get_backend_pid()  # type: ignore[attr-defined]
            if committed:  # behind the driver's back: it still sends COMMIT
                raw.cursor().execute("COMMIT")
            with admin.connect() as other:
                # pg_terminate_backend signals; wait for the session to end.
                other.execute(sa.text("SELECT pg_terminate_backend(%d, 5000)" % pid))

        with db.writer() as conn:
            conn.execute(sa.insert(tables.resource_providers).values(
                uuid=str(uuid.uuid4()), name="locked", generation=0))
            provider_id = conn.execute(sa.select(tables.resource_providers.c.id)).scalar()
        statements: list[str] = []

        def write() -> None:
            attempts.append(1)
            with db.writer() as conn:
                if told_by == "locks":
                    db_api.lock_providers(conn, [provider_id])
                insert = sa.insert(tables.traits).values(name="CUSTOM_LOST_COMMIT")
                if told_by == "returning":
                    assert commit_outcome.wants_transaction_id(conn)
                    xid = conn.execute(insert.returning(commit_outcome.TRANSACTION_ID)).scalar()
                    commit_outcome.note_transaction_id(conn, xid)
                    assert not commit_outcome.wants_transaction_id(conn)
                else:
                    conn.execute(insert)

        sa.event.listen(db.engine, "before_cursor_execute",
                        lambda conn, cursor, statement, *args: statements.append(statement))
        sa.event.listen(db.engine, "commit", kill_at_commit)
        try:
            with caplog.at_level("WARNING"):
                db_api.run_with_retries("test.write", write)
            assert len(attempts) == (1 if committed else 2)
            assert _traits_named(db, "CUSTOM_LOST_COMMIT") == 1
            assert ("had committed" in caplog.text) is committed
            asked = [text for text in statements if "txid_current_if_assigned" in text]
            assert bool(asked) is (told_by == "asking")
        finally:
            db.dispose()
            admin.dispose()


def _end_session(admin: sa.engine.Engine, raw: Any) -> None:
    """Kill the MySQL session of DBAPI connection ``raw`` from another one
    and wait until the server has ended it (its transaction committed or
    rolled back), as a server-side kill or a failover would."""
    with admin.connect() as other:
        session = raw.thread_id()
        other.execute(sa.text("KILL CONNECTION %d" % session))
        for _ in range(500):
            if not other.execute(sa.text(
                    "SELECT COUNT(*) FROM information_schema.processlist "
                    "WHERE id = %d" % session)).scalar():
                return
            other.rollback()
            time.sleep(0.01)
        raise AssertionError("session %d outlived its kill" % session)


@pytest.fixture
def lost_commit_database() -> Iterator[tuple[Database, sa.engine.Engine]]:
    """A migrated MariaDB Database, and an engine of its own to kill
    sessions."""
    backends.require("mysql")
    with backends.fresh_database("mysql") as url:
        db = Database(fixtures.make_conf(url))
        migration.upgrade(db)
        admin = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            yield db, admin
        finally:
            db.dispose()
            admin.dispose()


# What happens to each COMMIT of the test, in order: "lost" before the
# server got it, "lost after" the server committed, or nothing.
LOST_COMMITS = {
    "aborted": ["lost"],
    "committed": ["lost after"],
    # MariaDB asks by inserting the mark itself; that COMMIT too is lost
    # after it committed, and asking again finds the mark it left.
    "aborted, asked twice": ["lost", "lost after"],
}


@pytest.mark.parametrize("case", list(LOST_COMMITS))
def test_mariadb_learns_what_a_lost_commit_did(
        case: str, lost_commit_database: tuple[Database, sa.engine.Engine],
        caplog: pytest.LogCaptureFixture) -> None:
    # As test_postgresql_learns_what_a_lost_commit_did, where MariaDB is
    # asked by the commit mark the transaction carries.
    db, admin = lost_commit_database
    plan = list(LOST_COMMITS[case])
    committed = plan[0] == "lost after"
    attempts = []

    def kill_at_commit(conn: sa.engine.Connection) -> None:
        if not plan:
            return
        raw = conn.connection.dbapi_connection
        assert raw is not None
        if plan.pop(0) == "lost after":  # behind the driver's back: it still sends COMMIT
            raw.cursor().execute("COMMIT")
        _end_session(admin, raw)

    def write() -> None:
        attempts.append(1)
        with db.writer() as conn:
            conn.execute(sa.insert(tables.traits).values(name="CUSTOM_LOST_COMMIT"))

    sa.event.listen(db.engine, "commit", kill_at_commit)
    with caplog.at_level("WARNING"):
        db_api.run_with_retries("test.write", write)
    assert plan == []
    assert len(attempts) == (1 if committed else 2)
    assert _traits_named(db, "CUSTOM_LOST_COMMIT") == 1
    assert ("had committed" in caplog.text) is committed
    assert "cannot be known" not in caplog.text


def test_a_lost_commit_whose_transaction_stays_open_is_not_run_again(
        monkeypatch: pytest.MonkeyPatch, proxied_database: tuple[str, TcpProxy],
        caplog: pytest.LogCaptureFixture) -> None:
    # The connection breaks as COMMIT is sent, but the server does not
    # notice (a network partition): the transaction is still open there
    # and could yet commit.  Asking must neither wait for ever nor answer
    # "not committed": the write is given up as unknown, not run again.
    url, proxy = proxied_database
    monkeypatch.setattr(commit_outcome, "WAIT", 1.0)
    db = Database(fixtures.make_conf(url))
    attempts = []

    def write() -> None:
        attempts.append(1)
        with db.writer() as conn:
            conn.execute(sa.insert(tables.traits).values(name="CUSTOM_OPEN"))

    def partition(conn: sa.engine.Connection) -> None:
        proxy.partition()

    try:
        migration.upgrade(db)
        sa.event.listen(db.engine, "commit", partition, once=True)
        with caplog.at_level("WARNING"), pytest.raises(Exception) as failure:
            db_api.run_with_retries("test.write", write)
        assert len(attempts) == 1
        assert db_api.classify(failure.value) is db_api.Failure.UNAVAILABLE
        assert "cannot be known" in caplog.text
    finally:
        db.dispose()
        proxy.close()  # the server sees the connection end, and rolls back
    direct = Database(fixtures.make_conf(sa.engine.make_url(url).set(
        port=proxy.target[1]).render_as_string(hide_password=False)))
    try:
        assert _traits_named(direct, "CUSTOM_OPEN") == 0
    finally:
        direct.dispose()
