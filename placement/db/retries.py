"""Running a write transaction again when it collided or lost its connection.

A write that collided with a concurrent one (a deadlock, a Galera
certification failure, a lock wait timeout: ``failures.Failure.CONFLICT``)
or lost its connection before it reached COMMIT is run again from the
start, a bounded number of times (:func:`run_with_retries`,
:func:`retry_on_conflict`); never inside the transaction that failed.
``Database.writer`` (``db/api.py``) marks in :data:`reached_commit` when
an attempt sends COMMIT: from then on a lost connection is settled by
``db/commit_outcome.py``, not by running the write again.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import random
import time
from typing import Any, Callable, ParamSpec, TypeVar

import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement.db.failures import Failure, classify, collided, driver_message

LOG = logging.getLogger(__name__)


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


# A write whose connection was lost before it committed (the server
# killed it, a proxy or failover cut it) runs again on a fresh one, at
# most this many times; a database that is really gone fails again at once.
LOST_CONNECTION_RETRIES = 2
# Set once an attempt of a write under run_with_retries sends COMMIT of one
# of its writer transactions; until then nothing of the attempt can have
# been committed, whichever of its transactions (the writer, or a reader
# planning it beforehand) lost its connection.
reached_commit: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "placementreached_commit", default=False)


def lost_uncommitted(exc: BaseException) -> bool:
    """Whether ``exc`` is a lost connection of a write attempt that cannot
    have committed anything (it had not reached COMMIT)."""
    return not reached_commit.get() and classify(exc) is Failure.UNAVAILABLE


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
            reached_commit.set(False)
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


def retry_on_conflict(write: Callable[P, T]) -> Callable[P, T]:
    """Decorate a function that runs one whole write transaction so that it
    is run again when it collides (see :func:`run_with_retries`)."""
    name = "%s.%s" % (write.__module__.rsplit(".", 1)[-1], write.__qualname__)

    @functools.wraps(write)
    def retried(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_with_retries(name, lambda: write(*args, **kwargs))

    return retried
