"""A loopback TCP proxy the tests can cut and restore, to take a database
"down" for the service under test without touching the real server.

``TcpProxy(target_port)`` listens on an ephemeral port of 127.0.0.1 and
forwards every connection to ``127.0.0.1:target_port``.  ``cut()`` stops
listening and breaks every open connection (the database looks gone: new
connections are refused, pooled ones fail); ``restore()`` listens again on
the same port.  ``partition()`` breaks the open connections on the
client's side only: the clients see them fail, while the server sees them
open and idle, as across a network partition, until ``close()``.
Everything runs in daemon threads and stops with ``close()``.
"""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        # Server-side sockets of partitioned connections, kept open.
        self._held: set[socket.socket] = set()
        self._upstream: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.restore()

    def restore(self) -> None:
        """Listen (again) on our port and forward new connections."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and break the open ones."""
        listener, self._listener = self._listener, None
        if listener is not None:
            _close(listener)
        with self._lock:
            doomed, self._open = self._open, set()
        for sock in doomed:
            _close(sock)

    def partition(self) -> None:
        """Break the open connections for their clients only; the server
        keeps its end open (and its sessions, transactions and locks)."""
        with self._lock:
            doomed, self._open = self._open, set()
            self._held |= doomed & self._upstream
        for sock in doomed - self._held:
            _close(sock)

    def close(self) -> None:
        self.cut()
        with self._lock:
            held, self._held = self._held, set()
        for sock in held:
            _close(sock)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _addr = listener.accept()
            except OSError:
                return  # the listener was closed by cut()
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open.update((client, upstream))
                self._upstream.add(upstream)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(src)
                self._open.discard(dst)
                ending = [sock for sock in (src, dst) if sock not in self._held]
                self._upstream.difference_update(ending)
            for sock in ending:
                _close(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
