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
    provider rows they depend on with :func:`lock_providers`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Iterator

import sqlalchemy as sa
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import enginefacade

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


def _driver_message(exc: BaseException) -> str:
    """The database driver's own words, on one line."""
    inner = getattr(exc, "inner_exception", None)  # oslo.db wraps
    if inner is not None and inner is not exc:
        return _driver_message(inner)
    orig = getattr(exc, "orig", None)  # SQLAlchemy wraps the driver's error
    text = str(orig if orig is not None else exc)
    return " ".join(text.split())


def connection_problem(exc: BaseException) -> str | None:
    """Why the database cannot be reached, if that is what ``exc`` means.

    oslo.db turns most lost or refused connections into DBConnectionError,
    but not all: a connection refused while the engine is first created, or
    a driver message it does not recognise (libpq's "connection to server
    ... failed", an unknown database, refused credentials), arrives as
    SQLAlchemy's OperationalError raised before any statement ran.  Both
    mean "the database is not there for us", not "this request is wrong".
    """
    if isinstance(exc, db_exc.DBConnectionError):
        return _driver_message(exc)
    if isinstance(exc, db_exc.DBError) and exc.inner_exception is not None:
        return connection_problem(exc.inner_exception)
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated:
            return _driver_message(exc)
        failed_to_connect = exc.statement is None
        if failed_to_connect and isinstance(
                exc, (sa.exc.OperationalError, sa.exc.InterfaceError)):
            return _driver_message(exc)
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
            "connection_parameters": group.connection_parameters,
        }
        facade.configure(**{k: v for k, v in options.items() if v is not None})
        self._facade = facade
        self._engine: sa.engine.Engine | None = None
        self._engine_lock = threading.Lock()

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
                    self._engine = engine
        return self._engine

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextlib.contextmanager
    def reader(self) -> Iterator[sa.engine.Connection]:
        with self.engine.connect() as conn:
            with conn.begin() as trans:
                yield conn
                trans.rollback()

    @contextlib.contextmanager
    def writer(self) -> Iterator[sa.engine.Connection]:
        with self.engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                yield conn

    def explain(self, exc: BaseException) -> str | None:
        """A one-line message for a person when ``exc`` is a database
        failure, naming the database (never its password); else None."""
        url = redact_url(self.url)
        reason = connection_problem(exc)
        if reason is not None:
            message = "cannot connect to database %s: %s" % (url, reason)
        elif isinstance(exc, (db_exc.DBError, sa.exc.SQLAlchemyError)):
            message = "database %s: %s" % (url, _driver_message(exc))
        else:
            return None
        return without_password(message, self.url)

    def dispose(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


# A whole transaction that lost a deadlock (MySQL/MariaDB and PostgreSQL
# pick a victim when two writers lock rows in different orders, e.g. a
# provider created under a parent being deleted) is run again from the
# start; the retry never continues inside the failed transaction.
retry_on_deadlock = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True, retry_interval=0.01,
    inc_retry_interval=True, max_retry_interval=0.2)


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


def lock_providers(conn: sa.engine.Connection, provider_ids: list[int]) -> None:
    """Hold row locks on these providers until the transaction ends.

    Every write that checks capacity or generations of providers takes this
    lock first, in id order so that two writers cannot deadlock on it.  The
    lock serialises writers of the same providers on PostgreSQL and MySQL
    (on SQLite the whole database is already locked by BEGIN IMMEDIATE), and
    it comes before any read of usage so that, under MySQL's REPEATABLE READ,
    the transaction's snapshot is taken after the previous writer committed.
    """
    if not provider_ids or conn.dialect.name == "sqlite":
        return
    from placement.db import tables

    rp = tables.resource_providers
    conn.execute(
        sa.select(rp.c.id)
        .where(rp.c.id.in_(sorted(set(provider_ids))))
        .order_by(rp.c.id)
        .with_for_update()
    ).all()
