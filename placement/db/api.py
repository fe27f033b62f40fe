"""Engine and transactions.

The engine comes from oslo.db's enginefacade, so the ``[placement_database]``
pool options, reconnect handling and error translation (``DBDuplicateEntry``,
``DBDeadlock``, ``DBConnectionError``) behave as operators know them.  On top
of it :class:`Database` offers two context managers:

``reader()``
    a connection in a transaction that is rolled back at the end;
``writer()``
    a connection in a transaction that is committed at the end.  On SQLite
    the transaction starts with ``BEGIN IMMEDIATE``: writers queue on the
    database lock (up to the busy timeout) from their first statement
    instead of failing with "database is locked" when a read lock cannot be
    upgraded.  On PostgreSQL and MySQL, writes that must not race lock the
    provider rows they depend on with :func:`lock_providers`.  A writer
    whose connection is lost during COMMIT asks on a new one whether its
    transaction committed: PostgreSQL by transaction id, MySQL and MariaDB
    by the commit mark the transaction carries (``db/commit_marks.py``).

A database error is classified by what it is (:func:`classify`): the
database cannot be reached, the transaction collided with a concurrent one
(deadlock, Galera certification failure, lock wait timeout), or anything
else.  Writes run their whole transaction again after a collision, a
bounded number of times (:func:`retry_on_conflict`,
:func:`run_with_retries`); the API answers what is left with 503, 409
``placement.concurrent_update`` and 500 (``middleware/fault.py``).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import enum
import functools
import logging
import os
import random
import threading
import time
from typing import Any, Callable, Iterator, ParamSpec, TypeVar

import sqlalchemy as sa
import sqlalchemy.dialects.postgresql
import sqlalchemy.dialects.sqlite
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade

from placement.db import commit_marks

LOG = logging.getLogger(__name__)

# Execution option marking a connection whose transactions write (SQLite
# then starts them with BEGIN IMMEDIATE).
WRITE_OPTION = "placement_writer"
# How long a SQLite writer waits for the database lock, in milliseconds.
SQLITE_BUSY_TIMEOUT_MS = 60_000


def default_sqlite_url(directory: str | None = None) -> str:
    """The embedded database: ``placement.sqlite`` in the working directory."""
    path = os.path.abspath(os.path.join(directory or os.getcwd(), "placement.sqlite"))
    return "sqlite:///" + path


def redact_url(url: str) -> str:
    """The URL with any password hidden, fit for messages and logs."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL has nothing we can hide reliably
        return "<unparsable database URL>"


class Failure(enum.Enum):
    """What kind of database failure an exception is (see :func:`classify`)."""

    # The database cannot be reached: refused, lost or not accepting
    # clients (a Galera node outside the primary component).  503.
    UNAVAILABLE = "unavailable"
    # The transaction collided with a concurrent one and was rolled back:
    # a deadlock, a Galera certification failure (both MySQL error 1213,
    # the latter raised by COMMIT), a lock wait timeout or a serialization
    # failure.  Running the whole transaction again may succeed; once the
    # retries are spent, 409 placement.concurrent_update.
    CONFLICT = "conflict"
    # Any other database error: a bug or a broken schema.  500.
    ERROR = "error"


# MySQL/MariaDB error numbers of a transaction that lost to another one:
# deadlock or certification failure, lock wait timeout, and "record has
# changed since last read" (MariaDB's snapshot isolation).
_MYSQL_CONFLICTS = frozenset({1213, 1205, 1020})
# MySQL/MariaDB error numbers of a server that is not there for us: the
# client library's "cannot connect", "server gone", "lost connection"; too
# many connections; a server shutting down or killing the connection; a
# Galera node that is not ready for clients (not in the primary component).
_MYSQL_UNAVAILABLE = frozenset({2002, 2003, 2005, 2006, 2013, 2055,
                                1040, 1047, 1053, 1927, 4031})
# PostgreSQL SQLSTATEs of a transaction that lost to another one:
# serialization failure, deadlock, lock not available (lock_timeout).
_PG_CONFLICTS = frozenset({"40001", "40P01", "55P03"})
# SQLite's words when a writer gave up waiting for the database lock.
_SQLITE_LOCKED = "database is locked"


def _driver_error(exc: BaseException) -> BaseException:
    """The database driver's own exception inside oslo.db's and
    SQLAlchemy's wrappers (``exc`` itself when it wraps nothing)."""
    inner = getattr(exc, "inner_exception", None)  # oslo.db wraps
    if inner is not None and inner is not exc:
        return _driver_error(inner)
    orig = getattr(exc, "orig", None)  # SQLAlchemy wraps the driver's error
    return orig if isinstance(orig, BaseException) else exc


def driver_code(exc: BaseException) -> int | str | None:
    """MySQL's error number or PostgreSQL's SQLSTATE, when there is one."""
    error = _driver_error(exc)
    pgcode = getattr(error, "pgcode", None)
    if isinstance(pgcode, str):
        return pgcode
    args = getattr(error, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def driver_message(exc: BaseException) -> str:
    """The database driver's own words, on one line."""
    return " ".join(str(_driver_error(exc)).split())


def _sqlalchemy_error(exc: BaseException) -> sa.exc.DBAPIError | None:
    while isinstance(exc, db_exc.DBError) and exc.inner_exception is not None:
        exc = exc.inner_exception
    return exc if isinstance(exc, sa.exc.DBAPIError) else None


def classify(exc: BaseException) -> Failure | None:
    """What kind of database failure ``exc`` is; None when it is none.

    A collision is recognised first, by oslo.db's translation or the
    driver's error code: a Galera certification failure arrives from
    COMMIT, with no statement, which must not pass for a failure to connect.
    oslo.db turns most lost or refused connections into DBConnectionError,
    but not all: a connection refused while the engine is first created, or
    a driver message it does not recognise (libpq's "connection to server
    ... failed", an unknown database, refused credentials), arrives as
    SQLAlchemy's OperationalError raised before any statement ran.  Both
    mean "the database is not there for us", not "this request is wrong".
    """
    if not isinstance(exc, (db_exc.DBError, sa.exc.SQLAlchemyError)):
        return None
    code = driver_code(exc)
    if (isinstance(exc, (db_exc.DBDeadlock, db_exc.DBConsistencyError))
            or code in _MYSQL_CONFLICTS or code in _PG_CONFLICTS):
        return Failure.CONFLICT
    if isinstance(exc, db_exc.DBConnectionError) or code in _MYSQL_UNAVAILABLE:
        return Failure.UNAVAILABLE
    wrapped = _sqlalchemy_error(exc)
    if wrapped is not None:
        if _SQLITE_LOCKED in driver_message(wrapped):
            return Failure.CONFLICT
        if wrapped.connection_invalidated:
            return Failure.UNAVAILABLE
        if wrapped.statement is None and isinstance(
                wrapped, (sa.exc.OperationalError, sa.exc.InterfaceError)):
            return Failure.UNAVAILABLE  # failed to connect, or lost at COMMIT
    return Failure.ERROR


def connection_problem(exc: BaseException) -> str | None:
    """Why the database cannot be reached, if that is what ``exc`` means."""
    if classify(exc) is Failure.UNAVAILABLE:
        return driver_message(exc)
    return None


def without_password(text: str, url: str) -> str:
    """``text`` with the password of ``url`` blanked out, wherever it appears."""
    try:
        password = sa.engine.make_url(url).password
    except Exception:  # an unparsable URL: nothing we can identify
        return text
    if password:
        text = text.replace(str(password), "***")
    return text


class Database:
    """One engine (pool) for the process, configured from ``conf``."""

    def __init__(self, conf: cfg.ConfigOpts, url: str | None = None) -> None:
        group = conf.placement_database
        self.url = url or group.connection or default_sqlite_url()
        facade = enginefacade.transaction_context()
        options = {
            "connection": self.url,
            "sqlite_synchronous": group.sqlite_synchronous,
            "max_pool_size": group.max_pool_size,
            "max_overflow": group.max_overflow,
            "pool_timeout": group.pool_timeout,
            "connection_recycle_time": group.connection_recycle_time,
            "max_retries": group.max_retries,
            "retry_interval": group.retry_interval,
            "connection_debug": group.connection_debug,
            "connection_trace": group.connection_trace,
            "mysql_sql_mode": group.mysql_sql_mode,
            "mysql_wsrep_sync_wait": group.mysql_wsrep_sync_wait,
            "connection_parameters": group.connection_parameters,
        }
        facade.configure(**{k: v for k, v in options.items() if v is not None})
        self._facade = facade
        # Whether statement times and pool state go to the metrics.
        self._observed = bool(conf.metrics.enabled) if "metrics" in conf else False
        self._engine: sa.engine.Engine | None = None
        self._engine_lock = threading.Lock()
        self._marks_sweeper = commit_marks.Sweeper()
        self._told_marks_missing = False

    @property
    def engine(self) -> sa.engine.Engine:
        """The engine, created on first use (and again after a failed try:
        a database that is down when the first request comes is retried)."""
        if self._engine is None:
            with self._engine_lock:
                if self._engine is None:
                    engine = self._facade.writer.get_engine()
                    tune = _TUNING.get(engine.dialect.name)
                    if tune is not None:
                        tune(engine)
                        # oslo.db already opened (and pooled) a connection to
                        # test the URL, before our connect listener existed;
                        # drop it so that every connection gets the settings.
                        engine.dispose()
                    if self._observed:
                        from placement.db import observe

                        observe.watch(engine)
                    self._engine = engine
        return self._engine

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def snapshot_at_first_read(self) -> bool:
        """Whether a transaction's first plain read fixes what it sees
        (MySQL's REPEATABLE READ), so that a write must read what it plans
        from before taking its locks in a transaction of its own.
        PostgreSQL (READ COMMITTED: each statement sees what was committed
        before it) and SQLite (locked from BEGIN IMMEDIATE on) read it in
        the writer transaction itself."""
        return self.dialect in ("mysql", "mariadb")

    @contextlib.contextmanager
    def reader(self) -> Iterator[sa.engine.Connection]:
        with self.engine.connect() as conn:
            with conn.begin() as trans:
                yield conn
                trans.rollback()

    @contextlib.contextmanager
    def writer(self) -> Iterator[sa.engine.Connection]:
        """A connection in a transaction committed at the end.

        A connection lost during COMMIT leaves the outcome unknown, so the
        transaction carries what lets a new connection learn it: on
        PostgreSQL its transaction id, read just before COMMIT; on MySQL
        and MariaDB a commit mark inserted just before (``commit_marks``).
        If it committed, the write is done; if not, it may run again
        (lost_uncommitted).  When the database cannot be asked, the loss is
        raised as it is and the write is not run again, as it might apply
        twice.
        """
        earlier_commit = _reached_commit.get()
        committing = False
        xid = None
        mark = None
        try:
            with self.engine.connect() as conn:
                conn.execution_options(**{WRITE_OPTION: True})
                conn.info.pop(_XID_INFO, None)
                with conn.begin():
                    yield conn
                    if self.dialect == "postgresql":
                        # Which transaction we are (NULL when it wrote
                        # nothing), to learn its fate if COMMIT is lost;
                        # lock_providers has read it when it ran.
                        xid = conn.info.pop(_XID_INFO, None)
                        if xid is None:
                            xid = conn.exec_driver_sql(
                                "SELECT txid_current_if_assigned()").scalar()
                        if xid is None:
                            return  # nothing to commit, nothing to lose
                    elif self.dialect in ("mysql", "mariadb"):
                        mark = self._place_mark(conn)
                    # COMMIT is sent on leaving the block.
                    committing = True
                    _reached_commit.set(True)
        except Exception as exc:
            if not committing or classify(exc) is not Failure.UNAVAILABLE:
                raise
            if self._committed_after_all(xid, mark, exc):
                LOG.warning("a write lost its database connection during COMMIT; "
                            "its transaction had committed")
                return
            _reached_commit.set(earlier_commit)  # aborted: free to run again
            raise
        if mark is not None:
            try:
                self._marks_sweeper.sweep_if_due(self.engine)
            except Exception as exc:  # harmless: the next sweep deletes more
                LOG.info("old commit marks were not deleted this time: %s",
                         driver_message(exc))

    def _place_mark(self, conn: sa.engine.Connection) -> commit_marks.Mark | None:
        """A commit mark inserted in the transaction on ``conn``; None when
        the schema has no table for them yet (before revision 0005: the
        code was upgraded before ``db sync``), as writes went before it."""
        mark = commit_marks.new()
        try:
            commit_marks.place(conn, mark)
        except (db_exc.DBError, sa.exc.DBAPIError) as exc:
            # A failed statement leaves a MySQL transaction as it was.
            if driver_code(exc) != _MYSQL_NO_SUCH_TABLE:
                raise
            if not self._told_marks_missing:
                self._told_marks_missing = True
                LOG.warning("table commit_marks is missing (run 'placement-manage "
                            "db sync'): a write whose COMMIT is lost cannot learn "
                            "whether it committed")
            return None
        return mark

    def _committed_after_all(self, xid: int | None, mark: commit_marks.Mark | None,
                             lost: Exception) -> bool:
        """Whether a transaction whose connection was lost during COMMIT
        committed; ``lost`` is raised when the database cannot tell us."""
        try:
            if xid is not None:
                return self._transaction_committed(int(xid))
            if mark is not None:
                return self._mark_committed(mark)
        except Exception as exc:
            LOG.warning("a write lost its database connection during COMMIT and "
                        "whether it committed cannot be known (%s), so it is not "
                        "run again", driver_message(exc))
            raise lost from None
        LOG.warning("a write lost its database connection during COMMIT; "
                    "whether it committed cannot be known, so it is not run again")
        raise lost

    def _transaction_committed(self, xid: int) -> bool:
        """Whether PostgreSQL transaction ``xid`` committed."""
        deadline = time.monotonic() + _COMMIT_OUTCOME_WAIT
        with self.engine.connect() as conn:
            while True:
                status = conn.exec_driver_sql(
                    "SELECT txid_status(%d)" % xid).scalar()
                conn.rollback()
                # "in progress" while the killed backend winds down.
                if status != "in progress" or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        if status == "in progress":
            raise TimeoutError("transaction %d still in progress" % xid)
        return bool(status == "committed")

    def _mark_committed(self, mark: commit_marks.Mark) -> bool:
        """Whether the MySQL transaction that placed ``mark`` committed.

        Asking is itself a write that can lose its connection (the same
        administrator's kill) or, on Galera, lose certification to the
        transaction asked about; either is asked again, a few times.  A
        transaction that holds its row past the wait is not asked again.
        """
        for attempt in range(_COMMIT_OUTCOME_ASKS):
            try:
                return commit_marks.resolve(self.engine, mark, int(_COMMIT_OUTCOME_WAIT))
            except Exception as exc:
                if (attempt == _COMMIT_OUTCOME_ASKS - 1
                        or driver_code(exc) == _MYSQL_LOCK_WAIT_TIMEOUT
                        or classify(exc) not in (Failure.UNAVAILABLE, Failure.CONFLICT)):
                    raise
                time.sleep(0.05)
        raise AssertionError("unreachable")

    def explain(self, exc: BaseException) -> str | None:
        """A one-line message for a person when ``exc`` is a database
        failure, naming the database (never its password); else None."""
        url = redact_url(self.url)
        reason = connection_problem(exc)
        if reason is not None:
            message = "cannot connect to database %s: %s" % (url, reason)
        elif isinstance(exc, (db_exc.DBError, sa.exc.SQLAlchemyError)):
            message = "database %s: %s" % (url, driver_message(exc))
        else:
            return None
        return without_password(message, self.url)

    def dispose(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


# A write that collided with a concurrent one (Failure.CONFLICT) runs its
# whole transaction again from the start, at most this many times, after a
# random pause of up to a bound that doubles from the first retry on (a
# loser on one Galera node may have to wait for the winner's rows to be
# applied there).  The retry never continues inside the failed transaction.
CONFLICT_RETRIES = 5
_FIRST_PAUSE = 0.01
_LONGEST_PAUSE = 0.2
# Set while a write runs under run_with_retries: a retrying write called by
# another one makes single attempts, so that retries do not multiply.
_retrying: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "placement_retrying", default=False)

T = TypeVar("T")
P = ParamSpec("P")


def _instruments() -> Any:
    """The metrics instruments, imported when a write first retries: the
    import (prometheus-client) costs every worker memory, and a service
    without ``[metrics] enabled`` has nothing that reads them."""
    from placement.metrics import instruments

    return instruments


def collided(exc: BaseException) -> bool:
    """Whether ``exc`` is a transaction that lost to a concurrent one."""
    return classify(exc) is Failure.CONFLICT


# A write whose connection was lost before it committed (the server
# killed it, a proxy or failover cut it) runs again on a fresh one, at
# most this many times; a database that is really gone fails again at once.
LOST_CONNECTION_RETRIES = 2
# How long to wait for the transaction of a killed session to end, when
# asking whether its lost COMMIT committed (PostgreSQL: while its status is
# "in progress"; MySQL: while it holds its commit mark) ...
_COMMIT_OUTCOME_WAIT = 5.0
# ... and how many times to ask when the asking itself loses its connection
# or, on Galera, collides (MySQL).
_COMMIT_OUTCOME_ASKS = 3
# MySQL's "lock wait timeout exceeded": the transaction asked about is
# still open on the server after the wait.
_MYSQL_LOCK_WAIT_TIMEOUT = 1205
# MySQL's "table doesn't exist".
_MYSQL_NO_SUCH_TABLE = 1146
# Set once an attempt of a write under run_with_retries sends COMMIT of one
# of its writer transactions; until then nothing of the attempt can have
# been committed, whichever of its transactions (the writer, or a reader
# planning it beforehand) lost its connection.
_reached_commit: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "placement_reached_commit", default=False)


def lost_uncommitted(exc: BaseException) -> bool:
    """Whether ``exc`` is a lost connection of a write attempt that cannot
    have committed anything (it had not reached COMMIT)."""
    return not _reached_commit.get() and classify(exc) is Failure.UNAVAILABLE


def run_with_retries(write: str, attempt: Callable[[], T],
                     retries: int = CONFLICT_RETRIES,
                     also: tuple[type[BaseException], ...] = ()) -> T:
    """``attempt()``, a whole transaction, run again while it collides.

    A collision is a Failure.CONFLICT or one of the exceptions in ``also``
    (what a caller's own checks raise when a concurrent writer got in
    first).  After ``retries`` retries the last collision is raised.  A
    write that needed retries is logged once, at INFO, with its name
    ``write``, how many retries it took and how it ended.
    """
    if _retrying.get():
        return attempt()
    token = _retrying.set(True)
    collisions: list[BaseException] = []
    lost = 0
    outcome = "succeeded"
    try:
        while True:
            _reached_commit.set(False)
            try:
                return attempt()
            except Exception as exc:
                if lost < LOST_CONNECTION_RETRIES and lost_uncommitted(exc):
                    lost += 1
                    _instruments().write_retried(write, "lost_connection")
                    continue
                if not (isinstance(exc, also) or collided(exc)):
                    outcome = "failed with %s" % type(exc).__name__
                    raise
                _instruments().write_collided(write, given_up=len(collisions) == retries)
                if len(collisions) == retries:
                    outcome = "gave up"
                    raise
                collisions.append(exc)
                _instruments().write_retried(write, "conflict")
            pause = min(_LONGEST_PAUSE, _FIRST_PAUSE * 2 ** (len(collisions) - 1))
            time.sleep(random.uniform(0, pause))
    finally:
        _retrying.reset(token)
        if lost:
            LOG.warning("%s lost its database connection before committing "
                        "and was run again on a new one %d time(s), then %s",
                        write, lost, outcome)
        if collisions:
            LOG.info("%s collided with a concurrent write and was retried %d "
                     "time(s), then %s; last collision: %s", write,
                     len(collisions), outcome, _collision_reason(collisions[-1]))


def _collision_reason(exc: BaseException) -> str:
    if isinstance(exc, (db_exc.DBError, sa.exc.SQLAlchemyError)):
        return driver_message(exc)
    return "%s: %s" % (type(exc).__name__, exc)


def insert_unless_present(conn: sa.engine.Connection, table: sa.Table) -> Any:
    """An INSERT of ``table`` that skips rows whose unique key is taken.

    A plain INSERT would fail on the unique index and, on PostgreSQL,
    abort the whole transaction; each backend has its own spelling of
    "insert unless present", which waits for a concurrent transaction
    inserting the same key and then does nothing.
    """
    dialect = conn.dialect.name
    if dialect == "postgresql":
        return sa.dialects.postgresql.insert(table).on_conflict_do_nothing()
    if dialect == "sqlite":
        return sa.dialects.sqlite.insert(table).on_conflict_do_nothing()
    return table.insert().prefix_with("IGNORE")  # MySQL and MariaDB


def as_stored(conn: sa.engine.Connection, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as the database will store and later return them, for
    answering a write without reading it back: MySQL's DATETIME keeps
    whole seconds (and MySQL rounds), the others keep microseconds."""
    if conn.dialect.name not in ("mysql", "mariadb"):
        return values
    return {key: value.replace(microsecond=0) if isinstance(value, datetime.datetime)
            else value for key, value in values.items()}


def retry_on_conflict(write: Callable[P, T]) -> Callable[P, T]:
    """Decorate a function that runs one whole write transaction so that it
    is run again when it collides (see :func:`run_with_retries`)."""
    name = "%s.%s" % (write.__module__.rsplit(".", 1)[-1], write.__qualname__)

    @functools.wraps(write)
    def retried(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_with_retries(name, lambda: write(*args, **kwargs))

    return retried


def _tune_sqlite(engine: sa.engine.Engine) -> None:
    """Make SQLite safe for several worker processes sharing one file."""
    memory = engine.url.database in (None, "", ":memory:")

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, record):  # type: ignore[no-untyped-def]
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA busy_timeout = %d" % SQLITE_BUSY_TIMEOUT_MS)
        cursor.execute("PRAGMA foreign_keys = OFF")
        if not memory:
            # Readers do not block the writer nor each other.
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.close()

    def _on_begin(conn):  # type: ignore[no-untyped-def]
        if "in_transaction" in conn.info:
            return
        if conn.get_execution_options().get(WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            conn.info["in_transaction"] = True

    # Ours must run before oslo.db's own BEGIN listener, which then sees the
    # transaction open and does nothing.  ``insert=True`` does not promise
    # that order here (oslo.db's listener still ran first, and writers began
    # with a plain deferred BEGIN), so take the others off and put them back
    # after ours.
    earlier = list(engine.dispatch.begin)
    for listener in earlier:
        sa.event.remove(engine, "begin", listener)
    sa.event.listen(engine, "begin", _on_begin)
    for listener in earlier:
        sa.event.listen(engine, "begin", listener)


def _tune_mysql(engine: sa.engine.Engine) -> None:
    """Let GROUP_CONCAT build texts as long as a row may be.  The defaults
    (1 KiB on MySQL, 1 MiB on MariaDB) would cut the state texts the
    candidate search reads per bucket of trees (objects/candidates/search.py);
    that search also checks every text it takes apart."""

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, record):  # type: ignore[no-untyped-def]
        cursor = dbapi_conn.cursor()
        cursor.execute("SET SESSION group_concat_max_len = @@max_allowed_packet")
        cursor.close()


_TUNING = {"sqlite": _tune_sqlite, "mysql": _tune_mysql}


# Where lock_providers leaves the PostgreSQL transaction id it read with
# the locks, for Database.writer (the connection's info lives as long as
# the pooled connection: the writer clears it when it starts).
_XID_INFO = "placement_xid"


# PostgreSQL's id of the current transaction, as a column a writer's
# statement can return (a transaction that has written has one).
TRANSACTION_ID = sa.func.txid_current()


def wants_transaction_id(conn: sa.engine.Connection) -> bool:
    """Whether this writer connection is on PostgreSQL and has not learnt
    its transaction id yet: a statement that returns
    :data:`TRANSACTION_ID` and hands it to :func:`note_transaction_id`
    spares the writer asking for it before COMMIT."""
    return conn.dialect.name == "postgresql" and _XID_INFO not in conn.info


def note_transaction_id(conn: sa.engine.Connection, xid: int) -> None:
    conn.info[_XID_INFO] = xid


@functools.cache
def _lock_statement(with_xid: bool) -> sa.Select[Any]:
    from placement.db import tables

    rp = tables.resource_providers
    columns: list[Any] = [rp.c.id]
    if with_xid:
        # Taking row locks gives the transaction its id anyway; reading it
        # here spares the writer a round trip before COMMIT.
        columns.append(TRANSACTION_ID)
    return (sa.select(*columns)
            .where(rp.c.id.in_(sa.bindparam("provider_ids", expanding=True)))
            .order_by(rp.c.id)
            .with_for_update())


def lock_providers(conn: sa.engine.Connection, provider_ids: list[int]) -> None:
    """Hold row locks on these providers until the transaction ends.

    Every write that checks capacity or generations of providers takes this
    lock first, in id order so that two writers cannot deadlock on it.  The
    lock serialises writers of the same providers on PostgreSQL and MySQL
    (on SQLite the whole database is already locked by BEGIN IMMEDIATE), and
    it comes before any read of usage so that, under MySQL's REPEATABLE READ,
    the transaction's snapshot is taken after the previous writer committed.
    """
    dialect = conn.dialect.name
    if not provider_ids or dialect == "sqlite":
        return
    postgresql = dialect == "postgresql"
    rows = conn.execute(_lock_statement(postgresql),
                        {"provider_ids": sorted(set(provider_ids))}).all()
    if postgresql and rows:
        conn.info[_XID_INFO] = rows[0][1]
