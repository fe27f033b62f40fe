"""What placement writes to its logs, formatted as oslo.log formats it.

The request log line carries the request id, user and project through the
context; a refused request gets its own line and never the identity of an
earlier request; and at DEBUG, with every library logging, neither tokens
nor the database or service passwords appear anywhere.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import uuid
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
import webob
from oslo_log import formatters

from placement import app
from placement.db import migration
from placement.db.api import Database
from placement.middleware import fault, request_log
from tests import backends
from tests.functional import fake_keystone, fixtures


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextlib.contextmanager
def captured_logs(conf: Any) -> Iterator[list[str]]:
    """Every record of every logger at DEBUG, formatted by oslo.log's
    context formatter as the service's log file would show it."""
    handler = _Lines()
    handler.setFormatter(formatters.ContextFormatter(project="placement",
                                                     config=conf))
    root = logging.getLogger()
    loggers = [logger for logger in logging.root.manager.loggerDict.values()
               if isinstance(logger, logging.Logger)]
    saved = [(logger, logger.level, logger.disabled) for logger in loggers]
    saved_root = root.level
    for logger in loggers:
        logger.setLevel(logging.NOTSET)
        logger.disabled = False
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)
        root.setLevel(saved_root)
        for logger, level, disabled in saved:
            logger.setLevel(level)
            logger.disabled = disabled


def call(application: Any, path: str, **headers: str) -> webob.Response:
    req = webob.Request.blank(path, headers=headers)
    return req.get_response(application)


def request_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if "placement.requestlog" in line]


@pytest.fixture
def noauth_app() -> Iterator[tuple[Any, Any]]:
    with backends.fresh_database("sqlite") as url:
        conf = fixtures.make_conf(url)
        db = Database(conf)
        migration.upgrade(db)
        yield conf, app.build_app(conf, db)
        db.dispose()
        conf.reset()  # its overrides would leak into later configurations


def test_request_line_carries_request_id_user_and_project(
        noauth_app: tuple[Any, Any]) -> None:
    conf, application = noauth_app
    with captured_logs(conf) as lines:
        resp = call(application, "/resource_providers?name=x",
                    **{"X-Auth-Token": "alice:project-one", "X-Roles": "admin",
                       "OpenStack-API-Version": "placement 1.14"})
    assert resp.status_int == 200
    request_id = resp.headers["x-openstack-request-id"]
    [line] = request_lines(lines)
    assert '"GET /resource_providers?name=x" status: 200' in line
    assert "microversion: 1.14" in line
    assert request_id in line
    assert "alice" in line
    assert "project-one" in line


def test_refused_request_is_logged_without_an_earlier_identity(
        noauth_app: tuple[Any, Any]) -> None:
    conf, application = noauth_app
    with captured_logs(conf) as lines:
        call(application, "/resource_providers",
             **{"X-Auth-Token": "alice:project-one", "X-Roles": "admin"})
        resp = call(application, "/resource_providers")
    assert resp.status_int == 401
    request_id = resp.headers["x-openstack-request-id"]
    first, second = request_lines(lines)
    assert "alice" in first
    assert "status: 401" in second
    assert request_id in second
    assert "alice" not in second
    assert "project-one" not in second


def test_a_failing_request_is_logged_as_500() -> None:
    def broken(environ: dict[str, Any], start_response: Any) -> Any:
        raise RuntimeError("boom")

    application = fault.FaultWrapper(request_log.RequestLog(broken))
    conf = fixtures.make_conf("sqlite://")
    with captured_logs(conf) as lines:
        resp = call(application, "/resource_providers")
    conf.reset()
    assert resp.status_int == 500
    [line] = request_lines(lines)
    assert '"GET /resource_providers" status: 500' in line


@pytest.fixture
def keystone() -> Iterator[fake_keystone.FakeKeystone]:
    server = fake_keystone.FakeKeystone()
    server.tokens[fake_keystone.ADMIN_TOKEN] = server.token(["admin"])
    server.tokens[fake_keystone.MEMBER_TOKEN] = server.token(["member"])
    server.start()
    yield server
    server.stop()


@pytest.fixture
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def _with_password(url: str) -> tuple[str, str]:
    """``url`` with a password in it, and that password.

    The local test server trusts 127.0.0.1, so any password is accepted;
    a server URL that already has one keeps it.
    """
    parsed = sa.engine.make_url(url)
    if parsed.password:
        return url, str(parsed.password)
    password = "db-Pa55-" + uuid.uuid4().hex
    return parsed.set(password=password).render_as_string(
        hide_password=False), password


@pytest.mark.usefixtures("_no_proxy")
def test_no_token_or_password_is_ever_logged(
        keystone: fake_keystone.FakeKeystone) -> None:
    backends.require("postgresql")
    bogus_token = "bogus-token-" + uuid.uuid4().hex
    with backends.fresh_database("postgresql") as plain_url, \
            tempfile.TemporaryDirectory() as workdir:
        url, db_password = _with_password(plain_url)
        conf = fake_keystone.placement_conf_for(workdir, url, keystone.url)
        conf.set_override("debug", True)
        with captured_logs(conf) as lines:
            # What the service logs at start (placement_conf.setup_logging
            # with log_options), then a migration and the application.
            conf.log_opt_values(logging.getLogger("placement.conf"),
                                logging.DEBUG)
            db = Database(conf)
            migration.upgrade(db)
            application = app.build_app(conf, db)
            statuses = [
                call(application, "/").status_int,
                call(application, "/resource_providers",
                     **{"X-Auth-Token": fake_keystone.ADMIN_TOKEN}).status_int,
                call(application, "/resource_providers",
                     **{"X-Auth-Token": fake_keystone.MEMBER_TOKEN}).status_int,
                call(application, "/resource_providers",
                     **{"X-Auth-Token": bogus_token}).status_int,
                call(application, "/resource_providers").status_int,
            ]
        db.dispose()
    assert statuses == [200, 200, 403, 401, 401]
    text = "\n".join(lines)
    # The capture saw the libraries' debug output and the option dump.
    assert "keystonemiddleware" in text or "keystoneauth" in text
    assert "placement_database.connection" in text
    assert len(request_lines(lines)) == 5
    secrets = {
        "database password": db_password,
        "service password": fake_keystone.SERVICE_PASSWORD,
        "service token": fake_keystone.SERVICE_TOKEN,
        "admin token": fake_keystone.ADMIN_TOKEN,
        "member token": fake_keystone.MEMBER_TOKEN,
        "invalid token": bogus_token,
    }
    leaked = {what: [line for line in lines if secret in line]
              for what, secret in secrets.items()}
    assert not {what: found for what, found in leaked.items() if found}
    assert os.path.basename(keystone.url) == "identity"


def test_a_refused_database_password_is_never_logged() -> None:
    # MariaDB checks passwords (the local PostgreSQL trusts 127.0.0.1): a
    # user with one, and a service configured with a wrong one.  Every
    # request is a 503, and neither password is in any line, tracebacks
    # of the failed connections included.
    backends.require("mysql")
    server = sa.engine.make_url(backends.server_url("mysql"))
    user = "p20_%s" % uuid.uuid4().hex[:12]
    right = "Right-" + uuid.uuid4().hex
    wrong = "Wrong-" + uuid.uuid4().hex
    admin = sa.create_engine(server)
    with admin.connect() as conn:
        conn.execute(sa.text("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'" % (user, right)))
    try:
        url = server.set(username=user, password=wrong, database="mysql")
        conf = fixtures.make_conf(
            url.render_as_string(hide_password=False),
            placement_database={"max_retries": 1, "retry_interval": 1})
        conf.set_override("debug", True)
        with captured_logs(conf) as lines:
            conf.log_opt_values(logging.getLogger("placement.conf"), logging.DEBUG)
            db = Database(conf)
            application = app.build_app(conf, db)
            statuses = [call(application, "/resource_providers",
                             **{"X-Auth-Token": "admin"}).status_int
                        for _attempt in range(2)]
            db.dispose()
        conf.reset()
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text("DROP USER '%s'@'%%'" % user))
        admin.dispose()
    assert statuses == [503, 503]
    text = "\n".join(lines)
    assert "Access denied" in text  # the refusal itself was logged
    assert wrong not in text and right not in text


def test_a_callers_request_id_is_logged_as_the_global_id(
        noauth_app: tuple[Any, Any]) -> None:
    conf, application = noauth_app
    theirs = "req-%s" % uuid.uuid4()
    with captured_logs(conf) as lines:
        resp = call(application, "/", **{"X-Openstack-Request-Id": theirs})
        again = call(application, "/", **{"X-Openstack-Request-Id": theirs})
    ours = resp.headers["x-openstack-request-id"]
    # The response carries the service's own id, new for every request.
    assert ours.startswith("req-") and ours != theirs
    assert again.headers["x-openstack-request-id"] not in (ours, theirs)
    first, second = request_lines(lines)
    # oslo.log's context format: "[<global id> <request id> ...]".
    assert "[%s %s " % (theirs, ours) in first
    assert theirs in second


@pytest.mark.parametrize("sent", ["req-not-a-uuid", "%s" % uuid.uuid4(),
                                  "req-%s" % str(uuid.uuid4()).upper()])
def test_an_id_of_another_form_is_not_taken(noauth_app: tuple[Any, Any],
                                            sent: str) -> None:
    conf, application = noauth_app
    with captured_logs(conf) as lines:
        resp = call(application, "/", **{"X-Openstack-Request-Id": sent})
    [line] = request_lines(lines)
    assert sent not in line
    assert "[None %s " % resp.headers["x-openstack-request-id"] in line


def test_an_error_response_carries_one_request_id(noauth_app: tuple[Any, Any]) -> None:
    _conf, application = noauth_app
    resp = call(application, "/resource_providers/%s" % uuid.uuid4(),
                **{"X-Auth-Token": "admin", "X-Roles": "admin"})
    assert resp.status_int == 404
    ids = [value for name, value in resp.headerlist
           if name.lower() == "x-openstack-request-id"]
    assert ids == [resp.json["errors"][0]["request_id"]]
