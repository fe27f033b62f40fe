"""Database servers of a test's own, which it may crash and start again.

The machine's shared PostgreSQL and MariaDB serve every test and engineer;
a test that must take its database down starts a server of its own
instead: a ``postgres`` or ``mariadbd`` process on 127.0.0.1 with its own
data directory and port, in a session of its own so that :meth:`kill`
(SIGKILL to the whole process group, as a crash or ``kill -9`` would) stops
it and nothing else.  :meth:`start` after a kill runs the server's own crash
recovery.  Settings favour speed but keep every acknowledged commit across
a crash of the server process (not of the machine): PostgreSQL keeps
``synchronous_commit`` and drops only ``fsync``; MariaDB writes its log at
every commit (``innodb_flush_log_at_trx_commit = 2``).

``tests/galera.py`` builds its cluster nodes from the MariaDB pieces here.

    with dbservers.running("postgresql") as server:
        url = server.create_database("placement")
        ...
        server.kill(); server.start()
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import sqlalchemy as sa

START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0


def which(name: str) -> str | None:
    # mariadbd lives in /usr/sbin, which a plain user's PATH may lack;
    # PostgreSQL's server programs in a versioned directory of their own.
    path = os.pathsep.join([os.environ.get("PATH", os.defpath), "/usr/sbin", "/sbin",
                            *sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                    key=_version_key, reverse=True)])
    return shutil.which(name, path=path)


def _version_key(directory: str) -> tuple[int, ...]:
    version = directory.split("/")[-2]
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def free_ports(count: int) -> list[int]:
    """Ports nobody listens on now; all held open together, so distinct."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def _account(preferred: str) -> str | None:
    """The account a server started by root runs as (None: ourselves).

    Neither server runs as root by choice (PostgreSQL refuses to; the
    rsync daemon of a Galera joiner would write as ``nobody``); the Debian
    packages create ``postgres`` and ``mysql``.
    """
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(preferred)
    except KeyError:
        return "root"
    return preferred


MARIADB_USER = _account("mysql")
POSTGRES_USER = _account("postgres")


def give_to(directory: Path, user: str | None) -> None:
    """Let ``user`` own ``directory`` and everything under it, and reach
    it (when the server runs as another account than ours)."""
    if user is None:
        return
    os.chmod(directory, 0o755)
    for path in [directory, *directory.rglob("*")]:
        shutil.chown(path, user, user)


def install_mariadb(datadir: Path) -> None:
    """Create MariaDB's system tables in ``datadir``."""
    command = [which("mariadb-install-db") or "mariadb-install-db",
               "--no-defaults", "--datadir=%s" % datadir,
               "--auth-root-authentication-method=normal", "--skip-test-db"]
    if MARIADB_USER:
        command.append("--user=%s" % MARIADB_USER)
    subprocess.run(command, check=True, capture_output=True, timeout=300)


def mariadb_options(directory: Path, port: int, flush_at_commit: int) -> list[str]:
    """The ``[mariadbd]`` lines of a server living in ``directory``."""
    lines = [
        "[mariadbd]",
        "datadir = %s" % (directory / "data"),
        "socket = %s" % (directory / "mariadb.sock"),
        "pid-file = %s" % (directory / "mariadbd.pid"),
        "log-error = %s" % (directory / "mariadbd.log"),
        "bind-address = 127.0.0.1",
        "port = %d" % port,
        "skip-name-resolve",
        "performance_schema = OFF",
        "character-set-server = utf8mb4",
        "collation-server = utf8mb4_bin",
        "max_connections = 300",
        "innodb_buffer_pool_size = 64M",
        "innodb_log_file_size = 48M",
        "innodb_flush_log_at_trx_commit = %d" % flush_at_commit,
        "default_storage_engine = InnoDB",
    ]
    if MARIADB_USER:
        lines.append("user = %s" % MARIADB_USER)
    return lines


def mariadb_url(port: int, database: str = "") -> str:
    """A SQLAlchemy URL reaching a server of ours on ``port`` as root."""
    return "mysql+pymysql://root@127.0.0.1:%d/%s?charset=utf8mb4" % (port, database)


def mariadb_sql(sock: Path, statement: str, timeout: float = 30) -> str:
    """Run statements through a server's socket as root; the output, tab
    separated and without column names."""
    done = subprocess.run(
        [which("mariadb") or "mariadb", "--no-defaults", "-uroot",
         "--socket=%s" % sock, "-N", "-B", "-e", statement],
        capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError("%s: %s" % (statement, done.stderr.strip()))
    return done.stdout.strip()


def launch(command: list[str], directory: Path, user: str | None = None
           ) -> subprocess.Popen[bytes]:
    """Start a server in a session of its own (so that a kill reaches all
    its processes and nothing else), output appended to console.log; its
    pid is written to process.pid for another process to stop it."""
    with open(directory / "console.log", "ab") as console:
        process = subprocess.Popen(
            command, stdout=console, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, user=user)
    (directory / "process.pid").write_text(str(process.pid))
    return process


def crash(process: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL the server and every process of its session."""
    if process is not None and process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(STOP_TIMEOUT)


def terminate(process: subprocess.Popen[bytes] | None) -> None:
    """Stop the server (SIGTERM, then SIGKILL)."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        crash(process)


def _log_tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


class OwnServer:
    """One server under ``directory`` on ``port``; see the module docstring."""

    backend = ""
    programs: tuple[str, ...] = ()

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or free_ports(1)[0]
        self.process: subprocess.Popen[bytes] | None = None

    @classmethod
    def missing(cls) -> list[str]:
        """What this server needs and the machine lacks."""
        return [name for name in cls.programs if which(name) is None]

    @property
    def log(self) -> Path:
        return self.directory / "console.log"

    def url(self, database: str = "") -> str:
        raise NotImplementedError

    def create(self) -> None:
        """Make the data directory (once, before the first start)."""
        raise NotImplementedError

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _user(self) -> str | None:
        raise NotImplementedError

    def start(self) -> None:
        """Start (or restart after a kill); return once it takes clients."""
        self.process = launch(self._command(), self.directory, self._user())
        self.wait_ready()

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        engine = sa.create_engine(self.url(), poolclass=sa.pool.NullPool)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError("%s exited with %s:\n%s" % (
                        self.backend, self.process.returncode, _log_tail(self.log)))
                try:
                    with engine.connect() as conn:
                        conn.execute(sa.text("SELECT 1"))
                    return
                except sa.exc.DBAPIError:
                    time.sleep(0.1)
        finally:
            engine.dispose()
        raise RuntimeError("%s did not take clients within %ss:\n%s" % (
            self.backend, timeout, _log_tail(self.log)))

    def kill(self) -> None:
        """Crash the server (SIGKILL, no clean shutdown)."""
        crash(self.process)

    def stop(self) -> None:
        terminate(self.process)

    def create_database(self, name: str) -> str:
        """Create database ``name``; its URL."""
        engine = sa.create_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                suffix = (" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                          if self.backend == "mysql" else "")
                conn.exec_driver_sql("CREATE DATABASE %s%s" % (name, suffix))
        finally:
            engine.dispose()
        return self.url(name)


class PostgreSQL(OwnServer):
    backend = "postgresql"
    programs = ("initdb", "postgres")

    @property
    def datadir(self) -> Path:
        return self.directory / "data"

    def url(self, database: str = "postgres") -> str:
        return "postgresql+psycopg2://postgres@127.0.0.1:%d/%s" % (
            self.port, database or "postgres")

    def _user(self) -> str | None:
        return POSTGRES_USER

    def create(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        give_to(self.directory, POSTGRES_USER)
        subprocess.run(
            [which("initdb") or "initdb", "-D", str(self.datadir), "-U", "postgres",
             "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"],
            check=True, capture_output=True, timeout=300, user=POSTGRES_USER)

    def _command(self) -> list[str]:
        return [which("postgres") or "postgres", "-D", str(self.datadir),
                "-p", str(self.port), "-c", "listen_addresses=127.0.0.1",
                "-c", "unix_socket_directories=%s" % self.directory,
                "-c", "fsync=off", "-c", "max_connections=200"]


class MariaDB(OwnServer):
    backend = "mysql"
    programs = ("mariadbd", "mariadb-install-db", "mariadb")

    @property
    def config(self) -> Path:
        return self.directory / "my.cnf"

    def url(self, database: str = "") -> str:
        return mariadb_url(self.port, database)

    def _user(self) -> str | None:
        return None  # mariadbd switches to the configured user itself

    def create(self) -> None:
        (self.directory / "data").mkdir(parents=True)
        self.config.write_text("\n".join(
            mariadb_options(self.directory, self.port, flush_at_commit=2)) + "\n")
        give_to(self.directory, MARIADB_USER)
        install_mariadb(self.directory / "data")

    def _command(self) -> list[str]:
        return [which("mariadbd") or "mariadbd", "--defaults-file=%s" % self.config]

    def start(self) -> None:
        first = not (self.directory / "process.pid").exists()
        self.process = launch(self._command(), self.directory)
        if first:
            # Over TCP the tests connect as root@127.0.0.1 without a password.
            grant = ("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; "
                     "GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                try:
                    mariadb_sql(self.directory / "mariadb.sock", grant)
                    break
                except RuntimeError:
                    if time.monotonic() > deadline or self.process.poll() is not None:
                        raise RuntimeError("mariadbd did not start:\n%s" % _log_tail(
                            self.directory / "mariadbd.log")) from None
                    time.sleep(0.1)
        self.wait_ready()


SERVERS: dict[str, type[OwnServer]] = {"postgresql": PostgreSQL, "mysql": MariaDB}


@contextlib.contextmanager
def running(backend: str) -> Iterator[OwnServer]:
    """A new server of ``backend`` ("postgresql" or "mysql") in a fresh
    directory; stopped and removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="placement-own-%s-" % backend))
    os.chmod(directory, 0o755)  # the server's account must reach its own
    server = SERVERS[backend](directory / "server")
    try:
        server.create()
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)
