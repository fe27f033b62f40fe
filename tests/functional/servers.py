"""Running the service as a real process for tests: the console scripts
and gunicorn, on a free loopback port, with a small JSON HTTP client.

``serve(command, cwd, env, port)`` starts the process, waits (bounded)
until ``GET /`` answers, yields a :class:`Server` and stops the process and
its workers afterwards; ``serve_together`` does the same for several
servers started at once.  Output goes to files in ``cwd`` so that a test can
read what the server printed.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

BIN = Path(sys.executable).parent
START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any ``OS_*`` variable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(extra)
    return env


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    stdout: Path
    stderr: Path

    @property
    def endpoint(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def request(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None, timeout: float = 30) -> Response:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            sent = dict(headers or {})
            payload = None
            if body is not None:
                payload = json.dumps(body).encode()
                sent.setdefault("Content-Type", "application/json")
            conn.request(method, path, body=payload, headers=sent)
            resp = conn.getresponse()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()},
                            resp.read())
        finally:
            conn.close()

    def output(self) -> str:
        return self.stdout.read_text() + self.stderr.read_text()


def script(name: str) -> str:
    path = BIN / name
    assert path.exists(), "%s is not installed next to %s" % (name, sys.executable)
    return str(path)


@dataclass
class Launch:
    """How to start one server: command, working directory (which gets its
    output files), environment and the port it will listen on."""

    command: list[str]
    cwd: Path
    env: dict[str, str]
    port: int


@contextlib.contextmanager
def serve(command: list[str], cwd: Path, env: dict[str, str], port: int
          ) -> Iterator[Server]:
    with serve_together([Launch(command, cwd, env, port)]) as (server,):
        yield server


@contextlib.contextmanager
def serve_together(launches: list[Launch]) -> Iterator[list[Server]]:
    """Start every server at once, so that they race through start-up;
    yield them once each answers; stop them all afterwards."""
    started: list[Server] = []
    try:
        for launch in launches:
            stdout, stderr = launch.cwd / "server.out", launch.cwd / "server.err"
            with open(stdout, "wb") as out, open(stderr, "wb") as err:
                process = subprocess.Popen(
                    launch.command, cwd=launch.cwd, env=launch.env, stdout=out,
                    stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
            started.append(Server(process, launch.port, stdout, stderr))
        for server in started:
            _wait_until_up(server)
        yield started
    finally:
        for server in started:
            _stop(server.process)


def _wait_until_up(server: Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError("server exited with %s:\n%s"
                                 % (server.process.returncode, server.output()))
        try:
            if server.request("GET", "/", timeout=5).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("server did not answer within %ss:\n%s"
                         % (START_TIMEOUT, server.output()))


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    # The server runs in a session of its own: this reaches gunicorn's
    # workers too, and nothing of ours.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
