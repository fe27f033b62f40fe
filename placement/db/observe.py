"""Measuring the database for the metrics: time per request, pool state.

:func:`watch` hooks SQLAlchemy's events on an engine (only when ``[metrics]
enabled``): each statement's time is added to the running request's total
(:func:`measuring`, opened by ``placement/middleware/metrics.py``), and the
pool's connections in use and overflow are reported whenever a connection
is taken from the pool or given back.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Any, Iterator

import sqlalchemy as sa

from placement.metrics import instruments

# The database time of the request running in this thread or task, in
# seconds, as a one-item list the statement hooks add to; None outside
# a measured request.
_request_total: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar(
    "placement_db_time", default=None)
_STARTED = "placement_statement_started"


@contextlib.contextmanager
def measuring() -> Iterator[list[float]]:
    """Sum the database time of the statements run inside; the yielded
    list's one item is the total so far."""
    total = [0.0]
    token = _request_total.set(total)
    try:
        yield total
    finally:
        _request_total.reset(token)


def watch(engine: sa.engine.Engine) -> None:
    """Report this engine's statement times and pool state to the metrics."""

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _before(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        conn.info[_STARTED] = time.perf_counter()

    @sa.event.listens_for(engine, "after_cursor_execute")
    def _after(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        started = conn.info.pop(_STARTED, None)
        total = _request_total.get()
        if started is not None and total is not None:
            total[0] += time.perf_counter() - started

    pool = engine.pool

    def _report(*_args: Any) -> None:
        checked_out = getattr(pool, "checkedout", None)
        overflow = getattr(pool, "overflow", None)
        instruments.pool_state(checked_out() if checked_out else 0,
                               overflow() if overflow else 0)

    sa.event.listen(engine, "checkout", _report)
    sa.event.listen(engine, "checkin", _report)
