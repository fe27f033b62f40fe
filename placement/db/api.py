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
    by the commit mark the transaction carries (``db/commit_outcome.py``).

A database error is classified by what it is (``db/failures.py``,
:func:`classify`, also reachable here): the database cannot be reached,
the transaction collided with a concurrent one (deadlock, Galera
certification failure, lock wait timeout), or anything else.  Writes run
their whole transaction again after a collision, a bounded number of
times (``db/retries.py``: :func:`retry_on_conflict`,
:func:`run_with_retries`, also reachable here); the API
answers what is left with 503, 409 ``placement.concurrent_update`` and 500
(``middleware/fault.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import logging
import os
import threading
import time
from typing import Any, Collection, Iterable, Iterator, Mapping, Unpack

import sqlalchemy as sa
import sqlalchemy.dialects.postgresql
import sqlalchemy.dialects.sqlite
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade

from placement.db import commit_outcome, retries
# Reachable through db.api, where its callers have always found them.
from placement.db.failures import Failure as Failure
from placement.db.failures import classify as classify
from placement.db.failures import collided as collided
from placement.db.failures import connection_problem as connection_problem
from placement.db.failures import driver_message as driver_message
from placement.db.retries import CONFLICT_RETRIES as CONFLICT_RETRIES
from placement.db.retries import LOST_CONNECTION_RETRIES as LOST_CONNECTION_RETRIES
from placement.db.retries import lost_uncommitted as lost_uncommitted
from placement.db.retries import retry_on_conflict as retry_on_conflict
from placement.db.retries import run_with_retries as run_with_retries

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
        options = {k: v for k, v in options.items() if v is not None}
        # oslo.db's default sleeps (time.sleep(0)) every time a connection
        # returns to the pool, to let eventlet's green threads run; our
        # workers have none, and on a busy machine the sleep only gives the
        # core away in the middle of a request.
        facade.configure(thread_checkin=False, **options)
        self._facade = facade
        # Whether statement times and pool state go to the metrics.
        self._observed = bool(conf.metrics.enabled) if "metrics" in conf else False
        self._prepared_statements = bool(group.prepared_statements)
        self._engine: sa.engine.Engine | None = None
        self._engine_lock = threading.Lock()
        # Whether this process brought the schema to head (migration.upgrade,
        # or startup.migrate's child): a worker's start need not again.
        self.migrated = False
        # What a writer needs to learn whether a lost COMMIT committed.
        self.outcomes = commit_outcome.Outcomes(lambda: self.engine)

    def import_driver(self) -> None:
        """Import the database driver (psycopg2, PyMySQL) now rather than
        when the engine is made at the first request that reads: the import
        is a third of what a fresh worker's first read costs.  Nothing is
        connected here, so a database that is down does not hold up a
        worker's start, and nothing is shared with processes forked later."""
        sa.engine.make_url(self.url).get_dialect().import_dbapi()

    @property
    def started(self) -> bool:
        """Whether the engine was made (and may hold connections)."""
        return self._engine is not None

    def compiling_dialect(self) -> sa.engine.Dialect:
        """The dialect statements are compiled for, without connecting:
        the engine's once it is made, else a new one of the same kind."""
        if self._engine is not None:
            return self._engine.dialect
        return sa.engine.make_url(self.url).get_dialect()()

    @property
    def engine(self) -> sa.engine.Engine:
        """The engine, created on first use (and again after a failed try:
        a database that is down when the first request comes is retried)."""
        if self._engine is None:
            with self._engine_lock:
                if self._engine is None:
                    engine = self._facade.writer.get_engine()
                    tune = _TUNING.get(engine.dialect.name)
                    _ping_only_after_idle(engine)
                    if tune is not None:
                        tune(engine)
                        # oslo.db already opened (and pooled) a connection to
                        # test the URL, before our connect listener existed;
                        # drop it so that every connection gets the settings.
                        engine.dispose()
                    if self._prepared_statements and engine.dialect.name == "postgresql":
                        _prepare_repeated(engine)
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
        """A connection to read on, in a transaction that is rolled back.

        On PostgreSQL the reads run without one (autocommit): under its
        READ COMMITTED each statement sees what was committed before it
        began, in a transaction or not, so a transaction would only cost
        the BEGIN and ROLLBACK round trips (two of a small GET's four,
        with the pool's ping and the query).  MySQL's REPEATABLE READ gives
        a transaction's reads one snapshot, and SQLite's its reads one
        state of the file, so there they keep it.
        """
        with self.engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                # The driver's own switch: SQLAlchemy's isolation_level
                # option would send a SET each way (psycopg2 does so for
                # set_isolation_level), costing the round trips saved.
                driver_conn: Any = conn.connection.dbapi_connection
                driver_conn.autocommit = True
                try:
                    yield conn
                finally:
                    if not driver_conn.closed:
                        driver_conn.autocommit = False
                return
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
        earlier_commit = retries.reached_commit.get()
        committing = False
        ticket = None
        try:
            with self.engine.connect() as conn:
                conn.execution_options(**{WRITE_OPTION: True})
                commit_outcome.forget_transaction_id(conn)
                with conn.begin():
                    yield conn
                    ticket = self.outcomes.prepare(conn)
                    if ticket is None:
                        return  # nothing to commit, nothing to lose
                    # COMMIT is sent on leaving the block.
                    committing = True
                    retries.reached_commit.set(True)
        except Exception as exc:
            if not committing or classify(exc) is not Failure.UNAVAILABLE:
                raise
            if self.outcomes.committed_after_all(ticket, exc):
                LOG.warning("a write lost its database connection during COMMIT; "
                            "its transaction had committed")
                return
            retries.reached_commit.set(earlier_commit)  # aborted: free to run again
            raise
        self.outcomes.after_commit(ticket)

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

    def forget_after_fork(self) -> None:
        """In a forked child: drop the pooled connections inherited from
        the parent without closing them (they are the parent's; the child
        opens its own), and the lock in whatever state the fork caught it."""
        self._engine_lock = threading.Lock()
        if self._engine is not None:
            self._engine.dispose(close=False)

    def dispose(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


# Where a driver parameter of a rendered statement takes its value from.
_PARAMETER, _ITEM, _CONSTANT = range(3)


@dataclasses.dataclass(frozen=True)
class _Rendered:
    """A statement as its driver runs it, for one number of values of each
    list parameter: the SQL text, and for each of the driver's parameters
    (in order, or by name) where its value comes from: ``(_PARAMETER,
    name, None)``, ``(_ITEM, name, i)`` (item ``i`` of a list parameter)
    or ``(_CONSTANT, "", value)`` (a value the statement itself holds)."""

    sql: str
    names: tuple[str, ...] | None  # None: the driver's parameters are positional
    sources: tuple[tuple[int, str, Any], ...]


# run_rendered's statements, by (id of the statement, dialect, the names
# of the parameters and the lengths of the lists), with the statement (so
# that its id names it while the entry lives); None for a statement that
# must go through SQLAlchemy (a parameter needs converting).  Started
# again from empty when full.  A text grows with its lists, and every
# length of every list is a text of its own, so lists longer than
# _RENDERED_LONGEST are left to SQLAlchemy: a claim's lists are of one or
# a few values, and a statement of many values costs far more than its
# rendering.  With 512 texts of lists up to 64 values, the churn
# workload's worker peak rose by 5 MB (93.4 -> 98.7 MB at limit 1000);
# with these bounds it stays at 93.4 MB, for the same CPU.
_RENDERED: dict[tuple[Any, ...], tuple[Any, _Rendered | None]] = {}
_RENDERED_BOUND = 128
_RENDERED_LONGEST = 8


def run_rendered(conn: sa.engine.Connection, statement: Any, params: Mapping[str, Any]
                 ) -> sa.CursorResult[Unpack[tuple[Any, ...]]]:
    """``conn.execute(statement, params)`` for a statement built once whose
    rows need no conversion (ids, names, numbers) and whose list
    (expanding) parameters hold single values: rendered into the driver's
    SQL once per number of values of each list instead of at every
    execution, as SQLAlchemy does.  That rendering is half of what
    SQLAlchemy costs a small statement, and a claim (GET and PUT) runs
    several.  The rows are the driver's values; errors go through
    SQLAlchemy and oslo.db as for any statement, and a statement with a
    parameter SQLAlchemy must convert is left to it (PostgreSQL arrays
    of ids and names need none: see :func:`_plain_array`).  Callers that read
    the rows by position take :func:`rendered_rows` instead."""
    rendered = _rendered(conn, statement, params)
    if rendered is None:
        return conn.execute(statement, params)
    return conn.exec_driver_sql(*rendered)


def rendered_rows(conn: sa.engine.Connection, statement: Any, params: Mapping[str, Any]
                  ) -> list[tuple[Any, ...]]:
    """The rows of :func:`run_rendered`'s statement as plain tuples (the
    driver's), read with :func:`raw_rows`."""
    rendered = _rendered(conn, statement, params)
    if rendered is None:
        return [tuple(row) for row in conn.execute(statement, params)]
    return raw_rows(conn, *rendered)


def _rendered(conn: sa.engine.Connection, statement: Any, params: Mapping[str, Any]
              ) -> tuple[str, Any] | None:
    """The driver's SQL and parameters for ``statement`` (see
    :func:`run_rendered`), None when SQLAlchemy must run it."""
    shape = tuple((name, len(value) if isinstance(value, list) else -1)
                  for name, value in params.items())
    if any(length > _RENDERED_LONGEST for _name, length in shape):
        return None
    key = (id(statement), conn.dialect.name, shape)
    entry = _RENDERED.get(key)
    if entry is None or entry[0] is not statement:
        entry = (statement, _render(conn, statement, params))
        if len(_RENDERED) >= _RENDERED_BOUND:
            _RENDERED.clear()
        _RENDERED[key] = entry
    rendered = entry[1]
    if rendered is None:
        return None
    values = [params[name] if kind == _PARAMETER else params[name][extra]
              if kind == _ITEM else extra for kind, name, extra in rendered.sources]
    if rendered.names is None:
        return rendered.sql, tuple(values)
    return rendered.sql, dict(zip(rendered.names, values, strict=True))


def raw_rows(conn: sa.engine.Connection, sql: str, parameters: Any = None
             ) -> list[tuple[Any, ...]]:
    """The rows of the driver's SQL ``sql`` as the driver gives them
    (plain tuples), run on a cursor of ``conn``'s DBAPI connection:
    what ``conn.exec_driver_sql(sql, parameters)`` does, without the
    result object SQLAlchemy builds (with its columns' metadata, made anew
    at every execution of a text) -- a seventh of a claim's CPU when the
    hot statements went through it.

    Still as SQLAlchemy runs a statement: the connection's transaction
    begins as it would, the dialect's ``do_execute`` hooks run the
    statement (PostgreSQL's prepared statements), and a failure goes
    through SQLAlchemy's handling of DBAPI errors -- which wraps it,
    invalidates a lost connection (and the pool's older ones) and lets
    oslo.db's ``handle_error`` filters translate it (DBDeadlock,
    DBDuplicateEntry, DBConnectionError), so that ``db/failures.py`` and
    the retries see the very exception they always did.  SQLAlchemy has no
    public way to run that handling on a failure of our own execution:
    ``Connection._handle_dbapi_exception`` is the one it runs for its own,
    and the tests (``tests/db/test_database_errors.py``,
    ``tests/db/test_rendered_statements.py``) hold it to that.  When
    anything listens to the statements (metrics, oslo.db's tracing,
    echo), the statement goes through SQLAlchemy instead, so that they
    still see it.
    """
    engine = conn.engine
    if (conn._echo or engine.dispatch.before_cursor_execute
            or engine.dispatch.after_cursor_execute):
        result = conn.exec_driver_sql(sql, parameters)
        try:
            return list(result.cursor.fetchall())
        finally:
            result.close()
    if parameters is None:
        # What SQLAlchemy hands the driver for no parameters: the driver
        # then still reads the text as a format (``%%`` is one ``%``).
        parameters = () if conn.dialect.positional else {}
    if not conn.in_transaction():
        conn.begin()  # what SQLAlchemy's execution does first (autobegin)
    dbapi_connection = conn.connection.dbapi_connection
    assert dbapi_connection is not None
    cursor = dbapi_connection.cursor()
    try:
        for hook in conn.dialect.dispatch.do_execute:
            if hook(cursor, sql, parameters, None):
                break
        else:
            cursor.execute(sql, parameters)
        return list(cursor.fetchall()) if cursor.description is not None else []
    except BaseException as exc:
        conn._handle_dbapi_exception(exc, sql, parameters, cursor, None)
    finally:
        cursor.close()


def _render(conn: sa.engine.Connection, statement: Any,
            params: Mapping[str, Any]) -> _Rendered | None:
    dialect = conn.dialect
    compiled = statement.compile(dialect=dialect)
    arrays = {name for name, bind in compiled.binds.items() if _plain_array(bind.type, dialect)}
    if compiled.escaped_bind_names or any(
            bind.type.dialect_impl(dialect).bind_processor(dialect) is not None
            for name, bind in compiled.binds.items() if name not in arrays):
        return None
    if any(not isinstance(params.get(name), list) for name in arrays):
        return None
    state = compiled.construct_expanded_state(dict(params))
    if set(state.processors) - arrays or not state.parameters:
        return None
    item_of = {expanded: (name, index)
               for name, names in state.parameter_expansion.items()
               for index, expanded in enumerate(names)}
    order = list(state.positiontup or ()) if compiled.positional else list(state.parameters)
    sources: list[tuple[int, str, Any]] = []
    for name in order:
        if name in item_of:
            sources.append((_ITEM, *item_of[name]))
        elif name in params:
            sources.append((_PARAMETER, name, None))
        else:
            sources.append((_CONSTANT, "", state.parameters[name]))
    return _Rendered(state.statement, None if compiled.positional else tuple(order),
                     tuple(sources))


def _plain_array(type_: Any, dialect: sa.engine.Dialect) -> bool:
    """Whether a parameter of ``type_`` is a one-dimensional array of
    values the driver takes as they are (PostgreSQL's ``ARRAY(Integer)``,
    ``ARRAY(String)``): SQLAlchemy's conversion of such a list only copies
    it, and the driver adapts a list to an array itself."""
    if not isinstance(type_, sa.ARRAY) or type_.dimensions not in (None, 1):
        return False
    item = type_.item_type
    return (not isinstance(item, sa.ARRAY)
            and item.dialect_impl(dialect).bind_processor(dialect) is None)


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

# A pooled connection idle longer than this (seconds) is pinged before use.
PING_AFTER_IDLE = 1.0
# Where a pooled connection's record keeps when it was last given back.
_RETURNED_AT = "placement_returned_at"


def _ping_only_after_idle(engine: sa.engine.Engine) -> None:
    """Ping a pooled connection before use only when it sat idle in the pool
    for more than PING_AFTER_IDLE seconds, instead of at every checkout.

    oslo.db turns on SQLAlchemy's pre-ping, a round trip before every
    request's statements: on a busy worker a fifth of them, and of the
    database's work for small requests.  What a ping finds dead is a
    connection the database or a proxy dropped while nobody used it (an
    idle timeout, a restart, a failover), hence idle ones are still
    pinged.  One killed in the second since its last use is found by the
    statement itself, as one killed just after a ping always was: reads
    run again on a fresh connection (``app._run``), writes that had not
    reached COMMIT too (``retries.run_with_retries``), and SQLAlchemy drops
    the rest of the pool's connections of before the loss.

    The ping is the dialect's, and a dead connection is handled as
    SQLAlchemy's own pre-ping does: the pool is invalidated and the
    checkout tried again on a new connection.
    """
    pool = engine.pool
    # No public switch: oslo.db builds the pool with pre_ping=True.
    pool._pre_ping = False  # type: ignore[attr-defined]
    dialect = engine.dialect

    @sa.event.listens_for(pool, "checkin")
    def _on_checkin(dbapi_conn, record):  # type: ignore[no-untyped-def]
        if dbapi_conn is not None:
            record.info[_RETURNED_AT] = time.monotonic()

    @sa.event.listens_for(pool, "checkout")
    def _on_checkout(dbapi_conn, record, proxy):  # type: ignore[no-untyped-def]
        returned = record.info.get(_RETURNED_AT)
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE:
            return  # new (connected for this checkout), or just used
        if not dialect._do_ping_w_event(dbapi_conn):
            raise sa.exc.InvalidatePoolError()


def _prepare_repeated(engine: sa.engine.Engine) -> None:
    """PostgreSQL: statements a worker repeats run prepared
    (``db/prepared.py``).  Through the dialect's public ``do_execute``
    hook, so that SQLAlchemy's handling of the execution (events, errors
    and their translation by oslo.db) is unchanged; :func:`raw_rows`
    honours it too."""
    from placement.db import prepared

    preparer = prepared.Preparer()

    @sa.event.listens_for(engine, "do_execute")
    def _do_execute(cursor, statement, parameters, context):  # type: ignore[no-untyped-def]
        preparer.execute(cursor, statement, parameters)
        return True

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, record):  # type: ignore[no-untyped-def]
        prepared.use_generic_plans(dbapi_conn)

    # oslo.db pooled a connection to test the URL before the listener
    # existed: dropped, so that every connection has the setting.
    engine.dispose()


@functools.cache
def _lock_statement(with_xid: bool) -> sa.Select[Any]:
    from placement.db import tables

    rp = tables.resource_providers
    columns: list[Any] = [rp.c.id]
    if with_xid:
        # Taking row locks gives the transaction its id anyway; reading it
        # here spares the writer a round trip before COMMIT.
        columns.append(commit_outcome.TRANSACTION_ID)
    return (sa.select(*columns)
            .where(rp.c.id.in_(sa.bindparam("provider_ids", expanding=True)))
            .order_by(rp.c.id)
            .with_for_update())


def lock_providers(conn: sa.engine.Connection, provider_ids: list[int]) -> None:
    """Hold row locks on these providers until the transaction ends.

    Every write that checks capacity or generations of providers takes this
    lock first, in id order so that two writers cannot deadlock on it
    (:func:`lock_and_bump_providers` takes it with the generation bump;
    a write of one provider's inventories, with its compare-and-swap on
    the generation, an UPDATE that locks the row as well).  The
    lock serialises writers of the same providers on PostgreSQL and MySQL
    (on SQLite the whole database is already locked by BEGIN IMMEDIATE), and
    it comes before any read of usage so that, under MySQL's REPEATABLE READ,
    the transaction's snapshot is taken after the previous writer committed.
    """
    dialect = conn.dialect.name
    if not provider_ids or dialect == "sqlite":
        return
    postgresql = dialect == "postgresql"
    rows = rendered_rows(conn, _lock_statement(postgresql),
                         {"provider_ids": sorted(set(provider_ids))})
    if postgresql and rows:
        commit_outcome.note_transaction_id(conn, rows[0][1])


@functools.cache
def _lock_and_bump_statement() -> sa.Update:
    """PostgreSQL: the rows of ``provider_ids`` locked in id order by the
    subquery (what :func:`lock_providers` does), and in the same statement
    the generation of those in ``bumped_ids`` incremented; the others are
    written back unchanged.  Every joined row is one the subquery locked,
    and whatever join the planner picks, a row is updated only after the
    subquery emitted (and so locked) it and every lower id: locks are still
    taken in id order."""
    from placement.db import tables

    rp = tables.resource_providers
    locking = rp.alias("locking")
    locked = (sa.select(locking.c.id)
              .where(locking.c.id.in_(sa.bindparam("provider_ids", expanding=True)))
              .order_by(locking.c.id)
              .with_for_update()
              .subquery("locked"))
    bumped = rp.c.id.in_(sa.bindparam("bumped_ids", expanding=True))
    return (rp.update()
            .where(rp.c.id == locked.c.id)
            .values(generation=rp.c.generation + sa.case((bumped, 1), else_=0),
                    updated_at=sa.case((bumped, sa.bindparam("now")),
                                       else_=rp.c.updated_at))
            .returning(commit_outcome.TRANSACTION_ID))


# MySQL and MariaDB (which have no UPDATE ... RETURNING): the same in one
# UPDATE, which locks every row it matches, bumped or written back as it
# was, and with ORDER BY takes them in id order, as lock_providers does.
# Text, as SQLAlchemy has no ORDER BY for UPDATE.  Nothing is returned:
# these databases learn a lost COMMIT's outcome from the commit mark.
_MYSQL_LOCK_AND_BUMP = sa.text(
    "UPDATE resource_providers"
    " SET generation = generation + CASE WHEN id IN :bumped_ids THEN 1 ELSE 0 END,"
    " updated_at = CASE WHEN id IN :bumped_ids THEN :now ELSE updated_at END"
    " WHERE id IN :provider_ids ORDER BY id"
).bindparams(sa.bindparam("provider_ids", expanding=True),
             sa.bindparam("bumped_ids", expanding=True))


def lock_and_bump_providers(conn: sa.engine.Connection, provider_ids: Iterable[int],
                            bumped_ids: Collection[int], now: datetime.datetime
                            ) -> bool:
    """:func:`lock_providers`, and where one statement can also do it
    (PostgreSQL, MySQL and MariaDB), increment the generations of ``bumped_ids`` (some of
    ``provider_ids``), setting their ``updated_at`` to ``now``: one round
    trip where a write would otherwise take two.  Whether they were
    bumped; if not, the caller bumps them itself, later in the transaction.

    Bumping before the write's checks is safe: a write that then fails
    rolls back, bump included, and the lock is held until the end either
    way.
    """
    ids = sorted(set(provider_ids))
    dialect = conn.dialect.name
    if not bumped_ids or not ids or dialect not in ("postgresql", "mysql", "mariadb"):
        lock_providers(conn, ids)
        return False
    if dialect != "postgresql":
        run_rendered(conn, _MYSQL_LOCK_AND_BUMP, {
            "provider_ids": ids, "bumped_ids": sorted(bumped_ids), "now": now})
        return True
    rows = rendered_rows(conn, _lock_and_bump_statement(), {
        "provider_ids": ids, "bumped_ids": sorted(bumped_ids), "now": now})
    if rows:
        commit_outcome.note_transaction_id(conn, rows[0][0])
    return True
