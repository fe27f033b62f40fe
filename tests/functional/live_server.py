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
import time
from typing import Any, Iterator

from tests import backends

BIN = os.path.dirname(sys.executable)
HEADERS = {"x-auth-token": "admin", "accept": "application/json",
           "content-type": "application/json"}


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
        self.version_header = version_header
        self.version_prefix = version_prefix

    def request(self, method: str, path: str, body: Any = None
                ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = dict(HEADERS, **{
            self.version_header: self.version_prefix + self.version})
        try:
            payload = json.dumps(body) if body is not None else None
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        return resp.status, json.loads(data) if data else None


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


@contextlib.contextmanager
def _migrated(backend: str) -> Iterator[dict[str, str]]:
    """A fresh database on ``backend``, migrated; the servers' environment."""
    with backends.fresh_database(backend) as url:
        env = dict(os.environ, OS_PLACEMENT_DATABASE__CONNECTION=url,
                   OS_API__AUTH_STRATEGY="noauth2")
        subprocess.run([os.path.join(BIN, "placement-manage"), "db", "sync"],
                       env=env, check=True, capture_output=True)
        yield env


@contextlib.contextmanager
def serve(backend: str, workers: int = 1) -> Iterator[Client]:
    """A migrated fresh database on ``backend`` served by gunicorn."""
    with _migrated(backend) as env:
        with _gunicorn(env, "placement.wsgi.api:application", workers,
                       Client(free_port())) as client:
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
              client: Client) -> Iterator[Client]:
    """gunicorn serving ``application`` on the client's port."""
    process = subprocess.Popen(
        [os.path.join(BIN, "gunicorn"), "-w", str(workers),
         "-b", "127.0.0.1:%d" % client.port, "--timeout", "120",
         application],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)
    client.pid = process.pid  # gunicorn's master
    try:
        _wait_until_serving(client, process)
        yield client
    finally:
        process.terminate()
        try:
            _out, errors = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _out, errors = process.communicate()
        # A traceback in the server log means a request went wrong inside.
        assert b"Traceback" not in errors, errors.decode(errors="replace")[-4000:]
