"""Request bodies at and past ``[oslo_middleware] max_request_body_size``,
sent over a socket to a real gunicorn worker.

``tests/unit/test_access_middleware.py`` checks the middleware in-process;
here the bytes travel as a client (or an attacker) sends them, to one sync
worker on SQLite with the default limit (16 MiB):

* a declared ``Content-Length`` over the limit, by one byte or at 50 MB,
  is answered 413 before the body is sent at all: the client sends the
  headers alone and then waits for the answer;
* 50 MB sent chunked, without a declared length, is answered 413 once the
  limit is passed, having been read no further;
* a body just under the limit is read (and refused by the schema: 400);

and the worker's peak memory (``VmHWM`` in ``/proc``) does not grow for a
refused declared length, and grows by less than twice the limit for the
chunked body (4 MB when written; a whole 50 MB body would not fit).
Afterwards the same worker still serves.
"""

from __future__ import annotations

import json
import socket
import threading

from placement import conf
from tests.functional import live_server

LIMIT = conf.MAX_REQUEST_BODY_SIZE
HUGE = 50 * 1000 * 1000
MIB = 1024 * 1024
# Peak memory a request that is refused unread may add: allocator noise.
UNREAD = 4 * MIB
# What reading a chunked body up to the limit may add at most: the limit and
# one copy of it; a server that read 50 MB whole would need more.
NOT_WHOLE = 2 * LIMIT


def _head(port: int, length: int | None) -> bytes:
    lines = ["POST /resource_providers HTTP/1.1", "Host: 127.0.0.1:%d" % port,
             "X-Auth-Token: admin", "Accept: application/json",
             "Content-Type: application/json",
             "OpenStack-API-Version: placement 1.30", "Connection: close"]
    lines.append("Content-Length: %d" % length if length is not None
                 else "Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _answer(sock: socket.socket) -> tuple[int, dict[str, object]]:
    """Read the whole answer (the server closes); status and JSON body."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _declared_only(port: int, length: int) -> tuple[int, dict[str, object]]:
    """Announce ``length`` bytes, send none, and read the answer: a server
    that waited for the body would time out here."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(_head(port, length))
        return _answer(sock)


def _chunked(port: int, size: int) -> tuple[int, dict[str, object], int]:
    """Send ``size`` bytes of a JSON string chunked, while reading the
    answer; the status, the body and how many bytes went out."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(_head(port, None))
        sent = [0]

        def send() -> None:
            piece = b"x" * MIB
            try:
                sock.sendall(b"1\r\n\"\r\n")
                while sent[0] < size:
                    sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                    sent[0] += len(piece)
                sock.sendall(b"1\r\n\"\r\n0\r\n\r\n")
            except OSError:
                pass  # the server answered and closed: stop sending

        sender = threading.Thread(target=send)
        sender.start()
        try:
            status, body = _answer(sock)
        finally:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # stops the sender
            except OSError:
                pass  # the server closed it first
            sender.join()
        return status, body, sent[0]


def _peak(pid: int) -> int:
    """The process's peak resident memory, in bytes."""
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM for process %d" % pid)


def _too_large(status: int, body: dict[str, object]) -> None:
    assert status == 413, body
    (error,) = body["errors"]  # type: ignore[misc]
    assert "max_request_body_size (%d)" % LIMIT in error["detail"]


def test_bodies_past_the_limit_are_refused_without_being_kept() -> None:
    with live_server.serve("sqlite", workers=1) as client:
        assert client.request("GET", "/resource_providers")[0] == 200
        (worker,) = client.workers()

        before = _peak(worker)
        for length in (LIMIT + 1, HUGE):
            _too_large(*_declared_only(client.port, length))
        assert _peak(worker) - before < UNREAD

        before = _peak(worker)
        status, body, sent = _chunked(client.port, HUGE)
        _too_large(status, body)
        assert sent < HUGE, "the whole body went out before the answer"
        assert _peak(worker) - before < NOT_WHOLE

        # Just under the limit: read, and refused by the schema.
        name = "x" * (LIMIT - len(json.dumps({"name": ""})))
        status, body = client.request("POST", "/resource_providers", {"name": name})
        assert status == 400, body
        assert client.workers() == [worker]
        status, body = client.request("POST", "/resource_providers", {"name": "small"})
        assert status == 200, body
