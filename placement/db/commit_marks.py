"""Commit marks: whether a MySQL/MariaDB write whose COMMIT was lost committed.

A connection lost while COMMIT is under way (the server killed the
session, a proxy or failover cut it) leaves the writer not knowing
whether its transaction committed.  PostgreSQL can be asked by
transaction id (``db/commit_outcome.py``); MySQL and MariaDB keep nothing a client
could ask.  So there every writer transaction inserts one row of
``commit_marks`` (:func:`place`), with a key of its own choosing, just
before COMMIT: the row exists exactly when the transaction committed.

After a lost COMMIT, :func:`resolve` asks on a new connection by inserting
the *same* key itself, marked ``aborted``, in a transaction of its own:

* the key is taken by the writer's row: the transaction committed, the
  write is done;
* the insert succeeds: the writer's transaction did not commit, and now
  never can, since its own row would take the same key (on one server the
  primary key refuses it; across the nodes of a Galera cluster,
  certification lets only the first of two write-sets with one key
  commit, and the loser's COMMIT fails).  The write may run again;
* the key is taken by an ``aborted`` row: an earlier :func:`resolve`
  inserted it and lost its own connection during COMMIT; not committed.

A plain read would not do: it could run before the server has finished
the killed session's COMMIT, or on a Galera node the write-set has not
reached yet, and see nothing of a transaction that then commits.  The
insert cannot be overtaken that way: a writer transaction still open on
the server (committing, rolling back, or on a connection the server has
not yet seen die) holds a lock on its row, and the insert waits for it to
end, for at most ``wait`` seconds; after that the outcome stays unknown.

Marks are needed for seconds after their COMMIT.  :func:`delete_older`
removes those written before a time, by a range of the primary key (which
starts with the time), in small batches; a :class:`Sweeper` per process
calls it now and then, after a write, not on every write.  The time is the
writer's clock: API servers whose clocks differ by more than
:data:`KEEP_MS` could delete each other's marks too early.
"""

from __future__ import annotations

import random
import time
from typing import NamedTuple

import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement.db import tables

_MARKS = tables.commit_marks
# Marks are kept this long (milliseconds) ...
KEEP_MS = 10 * 60 * 1000
# ... deleted by each process at most this often (seconds) ...
SWEEP_EVERY = 60.0
# ... in batches of this many rows, each its own transaction,
# so that no deletion holds many locks or makes one large Galera write-set.
_BATCH = 5000


class Mark(NamedTuple):
    """The key of one writer transaction's row."""

    written_at: int  # milliseconds since the epoch
    token: int  # 63 random bits: writes of one millisecond practically never meet


def new() -> Mark:
    # random is reseeded in each forked worker (os.register_at_fork).
    return Mark(int(time.time() * 1000), random.getrandbits(63))


def place(conn: sa.engine.Connection, mark: Mark) -> None:
    """Insert ``mark`` in the writer transaction on ``conn``."""
    conn.execute(_MARKS.insert().values(
        written_at=mark.written_at, token=mark.token, aborted=False))


def resolve(engine: sa.engine.Engine, mark: Mark, wait: int) -> bool:
    """Whether the transaction that placed ``mark`` committed; if it did
    not, it never will.  Waits up to ``wait`` seconds (at least 1) for that
    transaction to end; raises what the database raises when it cannot
    answer (gone, or the transaction still open after ``wait``)."""
    key = (_MARKS.c.written_at == mark.written_at) & (_MARKS.c.token == mark.token)
    with engine.connect() as conn:
        try:
            try:
                with conn.begin():
                    conn.exec_driver_sql(
                        "SET SESSION innodb_lock_wait_timeout = %d" % max(1, wait))
                    conn.execute(_MARKS.insert().values(
                        written_at=mark.written_at, token=mark.token, aborted=True))
                return False
            except db_exc.DBDuplicateEntry:
                pass
            with conn.begin():
                aborted = conn.execute(sa.select(_MARKS.c.aborted).where(key)).scalar()
            if aborted is None:
                raise LookupError("commit mark %s vanished" % (mark,))
            return not aborted
        finally:
            # The session's lock wait was changed: do not pool it.
            conn.invalidate()


def delete_older(engine: sa.engine.Engine, before_ms: int) -> int:
    """Delete the marks written before ``before_ms``; how many were."""
    deleted = 0
    with engine.connect() as conn:
        # READ COMMITTED: the range is read without gap locks, so that
        # writers inserting new marks never wait for the deletion, and
        # rows of transactions still open are passed over, not waited for.
        conn.execution_options(isolation_level="READ COMMITTED")
        while True:
            with conn.begin():
                count = conn.execute(
                    _MARKS.delete().where(_MARKS.c.written_at < before_ms)
                    .with_dialect_options(mysql_limit=_BATCH)).rowcount
            deleted += count
            if count < _BATCH:
                return deleted


class Sweeper:
    """Deletes a process's share of old marks, at most every SWEEP_EVERY
    seconds.  The first sweep comes at a random point of the first
    interval, so that workers started together do not all sweep at once;
    two sweeps that meet do no harm (one waits for, or collides with, the
    other)."""

    def __init__(self) -> None:
        self.due = time.monotonic() + random.uniform(0, SWEEP_EVERY)

    def sweep_if_due(self, engine: sa.engine.Engine) -> int | None:
        """How many marks were deleted; None when no sweep was due."""
        now = time.monotonic()
        if now < self.due:
            return None
        self.due = now + SWEEP_EVERY
        return delete_older(engine, int(time.time() * 1000) - KEEP_MS)
