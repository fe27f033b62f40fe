"""What kind of failure a database error is.

:func:`classify` sorts an exception into :class:`Failure`: the database
cannot be reached (503), the transaction collided with a concurrent one
(run it again; 409 once the retries are spent), or anything else (500).
:func:`driver_code` and :func:`driver_message` dig the database driver's
own error out of oslo.db's and SQLAlchemy's wrappers.  Nothing here talks
to a database: ``db/api.py`` and ``db/commit_outcome.py`` act on the answers.
"""

from __future__ import annotations

import enum

import sqlalchemy as sa
from oslo_db import exception as db_exc


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


def collided(exc: BaseException) -> bool:
    """Whether ``exc`` is a transaction that lost to a concurrent one."""
    return classify(exc) is Failure.CONFLICT
