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

    def __init__(self, port: int, version: str = "1.38") -> None:
        self.port = port
        self.url = "http://127.0.0.1:%d" % port
        self.version = version
        self.pid: int | None = None

    def request(self, method: str, path: str, body: Any = None
                ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = dict(HEADERS, **{
            "openstack-api-version": "placement " + self.version})
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
def serve(backend: str, workers: int = 1) -> Iterator[Client]:
    """A migrated fresh database on ``backend`` served by gunicorn."""
    with backends.fresh_database(backend) as url:
        env = dict(os.environ, OS_PLACEMENT_DATABASE__CONNECTION=url,
                   OS_API__AUTH_STRATEGY="noauth2")
        subprocess.run([os.path.join(BIN, "placement-manage"), "db", "sync"],
                       env=env, check=True, capture_output=True)
        port = free_port()
        process = subprocess.Popen(
            [os.path.join(BIN, "gunicorn"), "-w", str(workers),
             "-b", "127.0.0.1:%d" % port, "--timeout", "120",
             "placement.wsgi.api:application"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        try:
            client = Client(port)
            client.pid = process.pid  # gunicorn's master
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
