"""What a worker does with its database at start: the migration
(``[placement_database] sync_on_startup``) and, for the WSGI entry points,
a connection made before the first request asks for one.

The migration imports alembic, its scripts and what they load, and a
worker that migrated in its own process kept all of it for the rest of
its life: 11 MB of every worker's memory (93 MB against 82 after start)
that no request uses.  So :func:`migrate` runs the migration in a child
process forked for it, and the worker waits for it: what the child
imported and allocated goes when it exits.  The worker then opens its own
connection, as the migration in its process used to leave one pooled for
its first request.

A failed migration fails the worker's start as before, with the same
exception (re-raised from what the child sent back, or, when it cannot
be sent, a :class:`MigrationFailed` saying what it was); the child has
logged it with its traceback.  The migration runs in the worker itself
where a child cannot share its database (SQLite in memory), where the
worker's engine already holds connections (a child would use their
sockets too), or where there is no fork.
"""

from __future__ import annotations

import ctypes
import logging
import os
import pickle
import threading
import weakref
from typing import Callable

import sqlalchemy as sa

from placement.db.api import Database

LOG = logging.getLogger(__name__)


class MigrationFailed(Exception):
    """The migration in the child process failed with an error that could
    not be sent back as it was."""


def migrate(db: Database) -> None:
    """Bring the schema to the head revision and sync the standard names
    (:func:`placement.db.migration.upgrade`), in a child process when
    possible; then connect.  Nothing to do for a :class:`Database` this
    process has migrated already (``placement-api`` does before it builds
    its applications)."""
    if db.migrated:
        return
    if not _may_fork(db):
        from placement.db import migration

        migration.upgrade(db)
        return
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _migrate_and_exit(db, write_end)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        sent = pipe.read()
    status = os.waitpid(pid, 0)[1]
    if sent:
        raise pickle.loads(sent)
    if status != 0:
        raise MigrationFailed("the database migration ended with wait status %d" % status)
    db.migrated = True
    # Connected now, as the migration in the worker's own process left
    # it: making the engine (oslo.db tries a connection, the dialect reads
    # the server's settings) is not the first request's to wait for.
    with db.engine.connect():
        pass


def _may_fork(db: Database) -> bool:
    if not hasattr(os, "fork") or db.started:
        return False
    url = sa.engine.make_url(db.url)
    in_memory = url.get_backend_name() == "sqlite" and (
        url.database in (None, "", ":memory:") or url.query.get("mode") == "memory")
    return not in_memory


def _migrate_and_exit(db: Database, write_end: int) -> None:
    """The child: migrate, send back any error, and leave without running
    anything of the worker's (no exit handlers, no buffered output of its
    own twice)."""
    status = 0
    try:
        from placement.db import migration

        migration.upgrade(db)
    except BaseException as exc:  # every failure goes back, whatever it is
        status = 1
        LOG.exception("The database migration at start failed")
        try:
            sent = pickle.dumps(exc)
            pickle.loads(sent)
        except Exception:
            sent = pickle.dumps(MigrationFailed("%s: %s" % (type(exc).__name__, exc)))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(sent)
    finally:
        logging.shutdown()
        os._exit(status)


def connect_in_background(db: Database, warm: Callable[[sa.engine.Connection], None]
                          | None = None) -> threading.Thread:
    """Make the engine and pool a connection in a thread of its own.

    Otherwise a fresh worker's first request does it: about a tenth of
    that request's time on PostgreSQL (5 to 8 of 50 ms for 1,000
    candidates; oslo.db's test connection, the dialect asking the server
    its settings, ours setting the session).
    The worker's start does not wait for it, so a database that is down
    holds nothing up: the thread logs why and the first request tries
    again, as it always did.  A process forked afterwards (``gunicorn
    --preload`` builds the application before forking its workers) drops
    what it inherited without closing it, and makes its own.  ``warm``, if
    given, runs on that connection next (in the transaction the
    connection begins, rolled back): what the first request would
    otherwise pay for on a fresh connection beyond connecting.
    """
    _forget_engine_in_children(db)
    thread = threading.Thread(target=_connect, args=(db, warm),
                              name="placement-connect", daemon=True)
    thread.start()
    return thread


def _connect(db: Database, warm: Callable[[sa.engine.Connection], None] | None) -> None:
    try:
        with db.engine.connect() as conn:
            if warm is not None:
                warm(conn)
                _give_back_freed_memory()
    except Exception as exc:  # the first request meets it again, and answers
        LOG.warning("Could not connect to the database at start: %s", exc)


def _give_back_freed_memory() -> None:
    """Return to the system what the start-up thread allocated and freed.

    glibc gives each thread its own arena of memory, and what ``warm``
    freed in this thread's (rows read, texts parsed: several MB on a
    deployment of 10,000 providers) is never used by requests, served in
    the main thread: a worker that read every tree at start peaked 1.6 MB
    higher on its first search than one that did not, 0.6 MB with this.
    Nothing to do on another C library."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def _forget_engine_in_children(db: Database) -> None:
    kept = weakref.ref(db)

    def forget() -> None:
        inherited = kept()
        if inherited is not None:
            inherited.forget_after_fork()

    os.register_at_fork(after_in_child=forget)
