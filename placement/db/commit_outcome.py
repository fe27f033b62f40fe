"""Whether a write whose connection was lost during COMMIT committed.

A connection lost while COMMIT is under way (the server killed the
session, a proxy or failover cut it) leaves the writer not knowing whether
its transaction committed.  So every writer transaction carries, before
COMMIT, what lets a new connection learn it (:meth:`Outcomes.prepare`):

* PostgreSQL: its transaction id.  A statement that returns
  :data:`TRANSACTION_ID` (the provider lock does, and a write that takes no
  lock may) hands it over with :func:`note_transaction_id`, sparing the
  round trip that would otherwise ask for it just before COMMIT; after a
  loss, ``txid_status`` says what became of it.
* MySQL and MariaDB: a commit mark (``db/commit_marks.py``), a row of its
  own inserted just before COMMIT; after a loss, inserting the same key
  settles the question for good.
* SQLite: nothing; its database is a local file, with no connection to lose.

``Database.writer`` (``db/api.py``) calls :meth:`Outcomes.prepare` before
COMMIT, :meth:`Outcomes.committed_after_all` when COMMIT was lost, and
:meth:`Outcomes.after_commit` once it succeeded.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable

import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement.db import commit_marks
from placement.db.failures import Failure, classify, driver_code, driver_message

LOG = logging.getLogger(__name__)

# How long to wait for the transaction of a killed session to end, when
# asking whether its lost COMMIT committed (PostgreSQL: while its status is
# "in progress"; MySQL: while it holds its commit mark) ...
WAIT = 5.0
# ... and how many times to ask when the asking itself loses its connection
# or, on Galera, collides (MySQL).
ASKS = 3
# MySQL's "lock wait timeout exceeded": the transaction asked about is
# still open on the server after the wait.
_MYSQL_LOCK_WAIT_TIMEOUT = 1205
# MySQL's "table doesn't exist".
_MYSQL_NO_SUCH_TABLE = 1146

# Where a statement leaves the PostgreSQL transaction id it read, for the
# writer (the connection's info lives as long as the pooled connection:
# the writer clears it when it starts, with forget_transaction_id).
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


def forget_transaction_id(conn: sa.engine.Connection) -> None:
    """Start a new writer transaction on ``conn`` knowing no id yet."""
    conn.info.pop(_XID_INFO, None)


@dataclasses.dataclass(frozen=True)
class Ticket:
    """What a writer transaction carries to learn its fate: its PostgreSQL
    transaction id, or its MySQL commit mark, or neither (SQLite, or a
    MySQL schema without the marks table): then it cannot be learnt."""

    xid: int | None = None
    mark: commit_marks.Mark | None = None


class Outcomes:
    """The lost-COMMIT bookkeeping of one :class:`placement.db.api.Database`."""

    def __init__(self, engine: Callable[[], sa.engine.Engine]) -> None:
        self._engine = engine  # the Database's engine, created on first use
        self.sweeper = commit_marks.Sweeper()
        self._told_marks_missing = False

    def prepare(self, conn: sa.engine.Connection) -> Ticket | None:
        """Called just before COMMIT of the writer transaction on ``conn``;
        None when the transaction wrote nothing (PostgreSQL assigned it no
        id), so that a lost COMMIT loses nothing."""
        dialect = conn.dialect.name
        if dialect == "postgresql":
            xid = conn.info.pop(_XID_INFO, None)
            if xid is None:
                xid = conn.exec_driver_sql("SELECT txid_current_if_assigned()").scalar()
            return None if xid is None else Ticket(xid=int(xid))
        if dialect in ("mysql", "mariadb"):
            return Ticket(mark=self._place_mark(conn))
        return Ticket()

    def after_commit(self, ticket: Ticket | None) -> None:
        """Now and then, delete old commit marks (MySQL)."""
        if ticket is None or ticket.mark is None:
            return
        try:
            self.sweeper.sweep_if_due(self._engine())
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

    def committed_after_all(self, ticket: Ticket | None, lost: Exception) -> bool:
        """Whether a transaction whose connection was lost during COMMIT
        committed; ``lost`` is raised when the database cannot tell us."""
        try:
            if ticket is not None and ticket.xid is not None:
                return self._transaction_committed(ticket.xid)
            if ticket is not None and ticket.mark is not None:
                return self.mark_committed(ticket.mark)
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
        deadline = time.monotonic() + WAIT
        with self._engine().connect() as conn:
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

    def mark_committed(self, mark: commit_marks.Mark) -> bool:
        """Whether the MySQL transaction that placed ``mark`` committed.

        Asking is itself a write that can lose its connection (the same
        administrator's kill) or, on Galera, lose certification to the
        transaction asked about; either is asked again, a few times.  A
        transaction that holds its row past the wait is not asked again.
        """
        for attempt in range(ASKS):
            try:
                return commit_marks.resolve(self._engine(), mark, int(WAIT))
            except Exception as exc:
                if (attempt == ASKS - 1
                        or driver_code(exc) == _MYSQL_LOCK_WAIT_TIMEOUT
                        or classify(exc) not in (Failure.UNAVAILABLE, Failure.CONFLICT)):
                    raise
                time.sleep(0.05)
        raise AssertionError("unreachable")
