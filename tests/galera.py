"""A three-node MariaDB Galera cluster on 127.0.0.1, for tests and by hand.

Every node is a ``mariadbd`` of its own with a data directory, socket and
ports (client, group communication, IST, SST) under one directory, so the
cluster never touches the MariaDB on 3306 nor another test's cluster.  The
first node bootstraps the cluster (``--wsrep-new-cluster``); the others join
it and receive a copy of its data by rsync (SST), or only the writes they
missed (IST) when they rejoin.  Settings favour speed over durability
(``innodb_flush_log_at_trx_commit = 0``): it is a throwaway.

From a shell (the directory must be empty or absent; ``stop`` kills the
nodes and removes it)::

    python3 -m tests.galera start /tmp/galera     # prints the nodes' URLs
    python3 -m tests.galera stop /tmp/galera

Needs the Debian packages mariadb-server, galera-4 and rsync (and ``ss``
from iproute2, which the SST script uses to watch its rsync daemon);
:func:`missing` says what is not installed.  A node is one of
``tests/dbservers.py``'s MariaDB servers with the Galera settings added.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from tests import dbservers

PROVIDER = "/usr/lib/galera/libgalera_smm.so"
PROGRAMS = ("mariadbd", "mariadb-install-db", "mariadb", "rsync", "ss")
NODES = 3
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0


def missing() -> list[str]:
    """What a cluster needs and this machine lacks (empty when all is there)."""
    lacking = [name for name in PROGRAMS if dbservers.which(name) is None]
    if not os.path.exists(PROVIDER):
        lacking.append(PROVIDER)
    return lacking


@dataclasses.dataclass
class Node:
    index: int
    directory: Path
    port: int
    gcomm_port: int
    ist_port: int
    sst_port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def datadir(self) -> Path:
        return self.directory / "data"

    @property
    def socket(self) -> Path:
        return self.directory / "mariadb.sock"

    @property
    def config(self) -> Path:
        return self.directory / "my.cnf"

    @property
    def log(self) -> Path:
        return self.directory / "mariadbd.log"

    @property
    def pid_file(self) -> Path:
        return self.directory / "mariadbd.pid"

    def url(self, database: str = "") -> str:
        """A SQLAlchemy URL reaching this node as root."""
        return dbservers.mariadb_url(self.port, database)

    def sql(self, statement: str, timeout: float = 30) -> str:
        """Run one statement through the node's socket; its output, tab
        separated and without column names."""
        try:
            return dbservers.mariadb_sql(self.socket, statement, timeout)
        except RuntimeError as exc:
            raise RuntimeError("node %d: %s" % (self.index, exc)) from None

    def status(self, name: str) -> str:
        row = self.sql("SHOW GLOBAL STATUS LIKE '%s'" % name)
        return row.split("\t", 1)[1] if "\t" in row else ""


class Cluster:
    """Three nodes under ``directory``; see the module docstring."""

    def __init__(self, directory: Path, ports: list[int] | None = None) -> None:
        self.directory = directory
        ports = ports or dbservers.free_ports(4 * NODES)
        self.nodes = [
            Node(index, directory / ("node%d" % index), *ports[4 * index:4 * index + 4])
            for index in range(NODES)
        ]

    @property
    def gcomm_address(self) -> str:
        return "gcomm://" + ",".join(
            "127.0.0.1:%d" % node.gcomm_port for node in self.nodes)

    def _write_config(self, node: Node) -> None:
        provider_options = ";".join([
            "base_port=%d" % node.gcomm_port,
            "gmcast.listen_addr=tcp://127.0.0.1:%d" % node.gcomm_port,
            "ist.recv_addr=127.0.0.1:%d" % node.ist_port,
            "gcache.size=64M",
            # Notice a killed node within seconds rather than tens of them
            # (the others hold their commits until they do), yet not so
            # soon that a node slowed down by a busy machine is taken for
            # dead (the nodes left would lose their majority for a while).
            "evs.keepalive_period=PT0.5S",
            "evs.inactive_check_period=PT0.5S",
            "evs.suspect_timeout=PT2S",
            "evs.inactive_timeout=PT4S",
            "evs.install_timeout=PT4S",
        ])
        # A node's commits live on in the other nodes: its log need not
        # reach the disk at each commit.
        lines = dbservers.mariadb_options(node.directory, node.port, flush_at_commit=0)
        lines += [
            "innodb_autoinc_lock_mode = 2",
            "binlog_format = ROW",
            "wsrep_on = ON",
            "wsrep_provider = %s" % PROVIDER,
            "wsrep_cluster_name = placement_test",
            "wsrep_cluster_address = %s" % self.gcomm_address,
            "wsrep_node_name = node%d" % node.index,
            "wsrep_node_address = 127.0.0.1:%d" % node.gcomm_port,
            "wsrep_node_incoming_address = 127.0.0.1:%d" % node.port,
            "wsrep_sst_method = rsync",
            "wsrep_sst_receive_address = 127.0.0.1:%d" % node.sst_port,
            "wsrep_provider_options = \"%s\"" % provider_options,
            "wsrep_slave_threads = 2",
        ]
        node.config.write_text("\n".join(lines) + "\n")

    def start(self) -> None:
        """Create, bootstrap and join all nodes; return when all are synced."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._save()
        for node in self.nodes:
            node.directory.mkdir()
            self._write_config(node)
            node.datadir.mkdir()
        # The server must reach its files through every parent directory.
        dbservers.give_to(self.directory, dbservers.MARIADB_USER)
        first = self.nodes[0]
        dbservers.install_mariadb(first.datadir)
        self._launch(first, bootstrap=True)
        self.wait_synced(first)
        # Over TCP the tests connect as root@127.0.0.1 without a password;
        # joiners get this grant with the rest of the data.
        first.sql("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; "
                  "GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
        for node in self.nodes[1:]:
            self._launch(node)
            self.wait_synced(node)

    def _launch(self, node: Node, bootstrap: bool = False) -> None:
        command = [dbservers.which("mariadbd") or "mariadbd",
                   "--defaults-file=%s" % node.config]
        if bootstrap:
            command.append("--wsrep-new-cluster")
        node.process = dbservers.launch(command, node.directory)

    def wait_synced(self, node: Node, timeout: float = START_TIMEOUT) -> None:
        """Wait until ``node`` takes client connections and is Synced."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.process is not None and node.process.poll() is not None:
                raise RuntimeError("node %d exited with %s:\n%s" % (
                    node.index, node.process.returncode, self.log_tail(node)))
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                if node.status("wsrep_local_state_comment") == "Synced":
                    return
            time.sleep(0.3)
        raise RuntimeError("node %d not synced after %ss:\n%s" % (
            node.index, timeout, self.log_tail(node)))

    def log_tail(self, node: Node, lines: int = 40) -> str:
        text = node.log.read_text(errors="replace") if node.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self, node: Node) -> None:
        """Kill the node as a crash would (SIGKILL): no clean leave."""
        dbservers.crash(node.process)

    def restart(self, node: Node) -> None:
        """Start a killed or stopped node again; it rejoins by IST or SST."""
        self._launch(node)
        self.wait_synced(node)

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL) and remove the directory."""
        for node in reversed(self.nodes):
            _terminate(node)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _save(self) -> None:
        state = {"nodes": [[n.port, n.gcomm_port, n.ist_port, n.sst_port]
                           for n in self.nodes]}
        (self.directory / "cluster.json").write_text(json.dumps(state))

    @classmethod
    def load(cls, directory: Path) -> Cluster:
        """The cluster a ``start`` in another process left in ``directory``."""
        state = json.loads((directory / "cluster.json").read_text())
        return cls(directory, [port for ports in state["nodes"] for port in ports])


def _terminate(node: Node) -> None:
    """Stop one node, whether started by this process or read back from
    its pid file by ``stop`` in another one."""
    pid_file = node.directory / "process.pid"
    if node.process is None and not pid_file.exists():
        return
    pid = node.process.pid if node.process is not None else int(pid_file.read_text())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        if _wait_gone(node, pid, STOP_TIMEOUT):
            return


def _wait_gone(node: Node, pid: int, timeout: float) -> bool:
    if node.process is not None:
        try:
            node.process.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@contextlib.contextmanager
def running(directory: Path) -> Iterator[Cluster]:
    """A started cluster under ``directory``, stopped afterwards."""
    cluster = Cluster(directory)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: python3 -m tests.galera start|stop DIRECTORY", file=sys.stderr)
        return 2
    directory = Path(argv[1]).absolute()
    if argv[0] == "stop":
        Cluster.load(directory).stop()
        return 0
    lacking = missing()
    if lacking:
        print("missing: %s" % ", ".join(lacking), file=sys.stderr)
        return 1
    cluster = Cluster(directory)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    for node in cluster.nodes:
        print(node.url())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
