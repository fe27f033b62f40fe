"""A real placement server for tests that need sockets and processes.

``serve(backend, workers)`` migrates a fresh database with
``placement-manage db sync`` (before the workers start, so that they do not
race to migrate) and serves it with gunicorn; it yields a :class:`Client`.
When the server stops, its log must hold no traceback.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Iterator

import pytest

from tests import backends

BIN = os.path.dirname(sys.executable)
HEADERS = {"x-auth-token": "admin", "accept": "application/json",
           "content-type": "application/json"}


# Loggers whose tracebacks a server may log while its database is gone:
# SQLAlchemy's pool, which cannot roll back or close a dropped connection.
POOL_LOGGERS = ("sqlalchemy.pool",)


def lacking(message: str) -> None:
    """Skip a test this machine cannot run; in CI, fail it."""
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must run it; see .ci/run)")
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Client:
    """Talks to the server; one connection per request (sync workers)."""

    def __init__(self, port: int, version: str = "1.38",
                 version_header: str = "openstack-api-version",
                 version_prefix: str = "placement ") -> None:
        self.port = port
        self.url = "http://127.0.0.1:%d" % port
        self.version = version
        self.pid: int | None = None
        self.log = ""  # what the server logged, once it has stopped
        self.version_header = version_header
        self.version_prefix = version_prefix

    def request(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """Status and body: parsed JSON, or text when not JSON (GET
        /metrics); ``headers`` as for :meth:`exchange`."""
        status, data, content_type = self._exchange(method, path, body, headers)
        if not data:
            return status, None
        if content_type.startswith("text/"):
            return status, data.decode()
        return status, json.loads(data)

    def exchange(self, method: str, path: str, body: Any = None,
                 timeout: float = 60) -> tuple[int, bytes]:
        """The status and the body as sent, unparsed."""
        status, data, _type = self._exchange(method, path, body, None, timeout)
        return status, data

    def _exchange(self, method: str, path: str, body: Any,
                  extra: dict[str, str] | None, timeout: float = 60
                  ) -> tuple[int, bytes, str]:
        """One request as the admin; ``extra`` headers are added, or taken
        away when their value is None."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = dict(HEADERS, **{
            self.version_header: self.version_prefix + self.version})
        for name, value in (extra or {}).items():
            if value is None:
                headers.pop(name, None)
            else:
                headers[name] = value
        try:
            payload = json.dumps(body) if body is not None else None
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read(), resp.getheader("content-type", "")
        finally:
            conn.close()

    def workers(self) -> list[int]:
        """The process ids of gunicorn's workers now."""
        assert self.pid is not None
        with open("/proc/%d/task/%d/children" % (self.pid, self.pid)) as handle:
            return sorted(int(pid) for pid in handle.read().split())


def _wait_until_serving(client: Client, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "gunicorn exited early"
        try:
            if client.request("GET", "/")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("gunicorn did not start serving")


def _migrate(url: str) -> dict[str, str]:
    """Migrate the database at ``url``; the servers' environment."""
    env = dict(os.environ, OS_PLACEMENT_DATABASE__CONNECTION=url,
               OS_API__AUTH_STRATEGY="noauth2")
    subprocess.run([os.path.join(BIN, "placement-manage"), "db", "sync"],
                   env=env, check=True, capture_output=True)
    return env


@contextlib.contextmanager
def _migrated(backend: str) -> Iterator[dict[str, str]]:
    """A fresh database on ``backend``, migrated; the servers' environment."""
    with backends.fresh_database(backend) as url:
        yield _migrate(url)


@contextlib.contextmanager
def serve(backend: str, workers: int = 1, env: dict[str, str] | None = None,
          options: tuple[str, ...] = ()) -> Iterator[Client]:
    """A migrated fresh database on ``backend`` served by gunicorn, with
    ``env`` added to the servers' environment and ``options`` to
    gunicorn's command line."""
    with _migrated(backend) as migrated_env:
        with _gunicorn(dict(migrated_env, **(env or {})),
                       "placement.wsgi.api:application", workers,
                       Client(free_port()), options=options) as client:
            yield client


@contextlib.contextmanager
def serve_url(url: str, workers: int = 1, tracebacks_from: tuple[str, ...] = ()
              ) -> Iterator[Client]:
    """The empty database at ``url``, migrated, served by gunicorn; the
    log may hold tracebacks only from the loggers ``tracebacks_from``."""
    with _gunicorn(_migrate(url), "placement.wsgi.api:application", workers,
                   Client(free_port()), tracebacks_from) as client:
        yield client


@contextlib.contextmanager
def serve_baremetal(backend: str, workers: int = 1
                    ) -> Iterator[tuple[Client, Client]]:
    """A migrated fresh database on ``backend`` served by two gunicorns:
    the Placement API (one worker) and the bare-metal API (``workers``);
    their clients, the second at Ironic's version 1.60."""
    with _migrated(backend) as env:
        baremetal = Client(free_port(), "1.60", "x-openstack-ironic-api-version", "")
        with _gunicorn(env, "placement.wsgi.api:application", 1,
                       Client(free_port())) as placement, \
                _gunicorn(env, "placement.wsgi.baremetal:application", workers,
                          baremetal):
            yield placement, baremetal


@contextlib.contextmanager
def _gunicorn(env: dict[str, str], application: str, workers: int,
              client: Client, tracebacks_from: tuple[str, ...] = (),
              options: tuple[str, ...] = ()) -> Iterator[Client]:
    """gunicorn serving ``application`` on the client's port."""
    # The log goes to a file, not a pipe: nobody reads a pipe while the
    # test runs, and a full one would block the workers.
    log_file = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [os.path.join(BIN, "gunicorn"), "-w", str(workers),
         "-b", "127.0.0.1:%d" % client.port, "--timeout", "120",
         *options, application],
        env=env, stdout=log_file, stderr=subprocess.STDOUT,
        start_new_session=True)
    client.pid = process.pid  # gunicorn's master
    try:
        _wait_until_serving(client, process)
        yield client
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log_file.seek(0)
        log = log_file.read().decode(errors="replace")
        log_file.close()
        client.log = log
        # A traceback in the server log means a request went wrong inside.
        unexpected = [line for line in log.splitlines() if "Traceback" in line
                      and not any(name in line for name in tracebacks_from)]
        assert unexpected == [], log[log.find(unexpected[0]) - 2000:][:6000]
