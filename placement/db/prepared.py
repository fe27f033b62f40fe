"""PostgreSQL: statements a worker repeats run as server-side prepared ones.

psycopg2 writes a statement's parameters into its text and sends it
whole, so PostgreSQL parses and plans every execution afresh: for the
claims workload (a candidate search and an allocation write) planning was
about a third of the database's CPU.  A statement text (with the types of
its parameters) seen a second time by a worker is sent on each pooled
connection, the first time there, as ``PREPARE name (types) AS text;
EXECUTE name (values)`` in one round trip, and from then on as ``EXECUTE
name (values)``: parsed and planned once per connection, on a plan for
any values of its parameters (a generic plan: see :func:`use_generic_plans`).
Every :data:`REPLAN_AFTER` executions a connection prepares it again, so
that its plan follows the tables' growth.

What it must not break:

* Results: the text PostgreSQL prepares is what psycopg2 would have sent,
  with each parameter a ``$n`` of the type psycopg2's literal for the value
  has (``int4``/``int8``/``numeric`` by size, ``text``, ``timestamp``...),
  and the values are psycopg2's literals as before.  A statement with a
  value of another type (None, an empty list, a list of mixed types) runs as before,
  unprepared.
* Schema changes: PostgreSQL re-plans a prepared statement whose tables
  changed; our statements name their columns, so a new column does not
  change their result.
* Connections: what is prepared is kept per DBAPI connection (a weak
  mapping), so a new connection after an invalidation or recycle starts
  with none.  A failed ``PREPARE ...; EXECUTE ...`` leaves unknown whether
  the statement was prepared (PREPARE is not undone by a rollback), so the
  connection forgets its statements and drops them all (``DEALLOCATE ALL``)
  with its next one.  Each connection keeps at most :data:`PER_CONNECTION`
  statements, dropping the least recently used.
* Poolers that share server sessions between clients (pgbouncer in
  transaction or statement mode): a prepared statement lives in one server
  session, so ``[placement_database] prepared_statements = false`` is for
  them.  Names are a hash of the statement, so a session prepared by
  another client holds the same statement under a name; if a statement a
  connection prepared is missing, or a name it prepares is taken, its
  session is not its own: the worker stops preparing and warns.  A read
  (no transaction: PostgreSQL readers run in autocommit) then runs again
  unprepared; a write's transaction has failed, and fails as any database
  error does.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import hashlib
import logging
import math
import re
import weakref
from typing import Any

LOG = logging.getLogger(__name__)

# Statements kept prepared per connection; each holds its parse tree and
# plan in the server session's memory (some tens of KB for the search's).
PER_CONNECTION = 100
# Executions of a prepared statement on one connection before it is
# prepared, so planned, again.  PostgreSQL plans a statement without
# parameters once, when prepared, and re-plans it only when an ANALYZE of
# its tables (or DDL) invalidates the plan: a plan made while a table was
# nearly empty (a new cloud, an ANALYZE by autovacuum early in a burst of
# claims) stays in use as the table grows.  In the claims workload such a
# plan summed a provider's usage by scanning all of ``allocations`` for
# each provider tried: a GET and PUT pair took 7 ms at first and 70 ms by
# the 3,000th claim (an ANALYZE at 150 allocations, then no other).
# Planned again, the statement sizes the table by its pages now.  One
# planning per this many executions costs little: the search's costliest
# plan takes a few milliseconds.
REPLAN_AFTER = 200
# Texts longer than this are neither prepared nor remembered: they are
# the candidate search's with many ids written in, which seldom repeat,
# and whose planning is small beside their execution; remembering them
# would cost the worker their size.
LONGEST = 16_000
# Statement texts remembered per worker; a text is prepared from its second
# execution on, so that one-off texts (the candidate search writes its ids
# into its texts) are not.
_SEEN_BOUND = 2000

# What PREPARE takes (not SET, SAVEPOINT, DDL and the like).
_PREPARABLE = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH|VALUES)\b", re.IGNORECASE)
# SQLSTATE class of a statement PostgreSQL would not take as written
# (syntax error, unknown column, operator or type).
_REFUSED = "42"
# What _seen.get answers for a statement not seen yet.
_UNSEEN: Any = object()
# SQLSTATEs meaning the server session is not this connection's alone.
_MISSING = "26000"  # invalid_sql_statement_name: EXECUTE of an unknown name
_TAKEN = "42P05"  # duplicate_prepared_statement: PREPARE of a taken name


# plan_cache_mode, by which a session's prepared statements run on one
# generic plan, exists from PostgreSQL 12 on.
GENERIC_PLANS_SINCE = 120000


def use_generic_plans(dbapi_conn: Any) -> None:
    """Have the prepared statements of a new psycopg2 connection run on
    their generic plans, made once, rather than planned again for the
    values of every execution.

    Under PostgreSQL's default (``plan_cache_mode = auto``) a statement is
    planned for its values five times, then on a generic plan only if that
    one's estimated cost is no worse than theirs; for our statements it
    seldom was (estimates for a list of ids assume ten of them), so most
    executions were planned afresh: a search reading the entries of one
    changed provider took 0.28 ms so and 0.17 ms on its generic plan
    (alone, in a loop); with the search's entries read by array
    parameters (``objects/candidates/search.py``), the churn workload at
    limit 1000 used about 8 % less of the database's CPU per scheduled
    instance (2.72-2.79 to 2.52-2.55 ms, runs alternating with the code
    before both).  Our statements look rows up by ids and uuids through their
    indexes, which a plan for any values does as well; the statements of
    the candidate search write their ids into their texts and have no
    parameters, so their plans are made for what they ask either way.
    Only prepared statements are affected, and only this worker's
    sessions.  Set outside any transaction, so that no rollback undoes it.
    """
    if getattr(dbapi_conn, "server_version", 0) < GENERIC_PLANS_SINCE:
        return
    autocommit = dbapi_conn.autocommit
    dbapi_conn.autocommit = True
    try:
        cursor = dbapi_conn.cursor()
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        cursor.close()
    finally:
        dbapi_conn.autocommit = autocommit


class _Placeholder:
    """What psycopg2 writes for a parameter when it builds the text to
    prepare: ``$n`` (the protocol of psycopg2's adapters)."""

    def __init__(self, number: int) -> None:
        self._quoted = b"$%d" % number

    def __conform__(self, _protocol: Any) -> _Placeholder:
        return self

    def getquoted(self) -> bytes:
        return self._quoted


def _type_of(value: Any) -> str | None:
    """The type of psycopg2's literal for ``value``; None for a value
    that is not prepared (NULL, an empty list, a list of mixed items have
    no type of their own; NULL items of a list have the others', if any)."""
    kind = type(value)
    if kind is int:
        if -2 ** 31 <= value < 2 ** 31:
            return "int4"
        return "int8" if -2 ** 63 <= value < 2 ** 63 else "numeric"
    if kind is str:
        return "text"
    if kind is bool:
        return "boolean"
    if kind is float:
        # psycopg2 writes a finite float as a bare number (a numeric
        # literal), the others as 'NaN'::float and the like.
        return "numeric" if math.isfinite(value) else "float8"
    if kind is datetime.datetime:
        return "timestamp" if value.tzinfo is None else "timestamptz"
    if kind is datetime.date:
        return "date"
    if kind is decimal.Decimal:
        return "numeric"
    if kind is list and value:
        # psycopg2 writes ARRAY[...] of the items' literals, of their
        # common type; an empty list ('{}') has none, nor has one of NULLs
        # only (PostgreSQL types ARRAY[NULL] by where it stands).
        items = {_type_of(item) for item in value if item is not None} or {None}
        if items == {"int4", "int8"}:
            return "int8[]"
        if len(items) == 1:
            item = items.pop()
            if item is not None and not item.endswith("[]"):
                return item + "[]"
    return None


def _cast_nulls(statement: str, key: str, value: Any) -> str | None:
    """``text[]`` for a list of NULLs only that the statement casts where
    it stands (``%(key)s::INTEGER[]``, as SQLAlchemy writes a parameter
    of an ARRAY type): ARRAY[NULL] cast so is an array of NULLs of the
    cast's type, from text[] as from the literal.  None otherwise."""
    if (type(value) is list and value and all(item is None for item in value)
            and "%%(%s)s::" % key in statement):
        return "text[]"
    return None


class _Session:
    """What one DBAPI connection has prepared: name -> executions since
    it was prepared, least recently run first."""

    __slots__ = ("names", "reset")

    def __init__(self) -> None:
        self.names: collections.OrderedDict[str, int] = collections.OrderedDict()
        self.reset = False  # drop everything with the next statement


class Preparer:
    """Runs statements on psycopg2 cursors, prepared once repeated."""

    def __init__(self) -> None:
        self.enabled = True
        self._sessions: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()
        # hash((text, parameter types)) -> its name once seen twice, None
        # once seen, "" when it is not to be prepared.  The hash, not the
        # text: the search's texts with their ids written in are mostly
        # seen once, and kept whole they made a worker's memory grow by
        # megabytes.  Two texts of one hash (a 64-bit one) only make the
        # second one prepared, or not, one execution early or late: its
        # name is the digest of its own text.
        self._seen: dict[int, str | None] = {}

    def execute(self, cursor: Any, statement: str, parameters: Any) -> None:
        """``cursor.execute(statement, parameters)``, prepared when it pays."""
        if (not self.enabled or cursor.name is not None  # named: a server-side cursor
                or len(statement) > LONGEST):
            cursor.execute(statement, parameters)
            return
        values: list[Any] = []
        types: tuple[str, ...] = ()
        if parameters:
            values = list(parameters.values()) if isinstance(parameters, dict) else list(parameters)
            typed = [_type_of(value) for value in values]
            if None in typed and isinstance(parameters, dict):
                typed = [_cast_nulls(statement, key, value) if kind is None else kind
                         for (key, value), kind in zip(parameters.items(), typed, strict=True)]
            if None in typed:
                cursor.execute(statement, parameters)
                return
            types = tuple(typed)  # type: ignore[arg-type]  # no None left
        key = hash((statement, types))
        name = self._seen.get(key, _UNSEEN)
        if name is _UNSEEN:
            if len(self._seen) >= _SEEN_BOUND:
                self._seen.clear()
            self._seen[key] = None if _PREPARABLE.match(statement) else ""
            cursor.execute(statement, parameters)
            return
        if name is None:  # seen once before: prepared from now on
            name = "placement_" + hashlib.blake2b(
                repr((statement, types)).encode(), digest_size=12).hexdigest()
            self._seen[key] = name
        elif not name:  # not to be prepared
            cursor.execute(statement, parameters)
            return
        connection = cursor.connection
        session = self._sessions.get(connection)
        if session is None:
            session = self._sessions[connection] = _Session()
        run = "EXECUTE " + name
        if values:
            run += " (" + ", ".join(["%s"] * len(values)) + ")"
        runs = session.names.get(name)
        if runs is not None and runs < REPLAN_AFTER:
            session.names[name] = runs + 1
            session.names.move_to_end(name)
            try:
                cursor.execute(run, values or None)
            except Exception as exc:
                if getattr(exc, "pgcode", None) == _MISSING:
                    self._not_our_session(connection, cursor, statement, parameters, exc)
                    return
                raise
            return
        head: list[bytes] = []
        if session.reset:
            head.append(b"DEALLOCATE ALL")
            session.reset = False
        elif runs is not None:
            # Run REPLAN_AFTER times on its plan: planned again (see there).
            del session.names[name]
            head.append(b"DEALLOCATE " + name.encode())
        while len(session.names) >= PER_CONNECTION:
            head.append(b"DEALLOCATE " + session.names.popitem(last=False)[0].encode())
        if parameters:
            numbered = ({key: _Placeholder(i) for i, key in enumerate(parameters, 1)}
                        if isinstance(parameters, dict)
                        else [_Placeholder(i) for i in range(1, len(values) + 1)])
            # psycopg2 writes the text as it would have sent it, with $n
            # where each value would have gone; the run's own %s are then
            # the values', so the text's percent signs are escaped again.
            body = cursor.mogrify(statement, numbered).replace(b"%", b"%%")
            declared = b" (" + ", ".join(types).encode() + b")"
        else:
            body = cursor.mogrify(statement, parameters)
            declared = b""
        prepare = b"PREPARE " + name.encode() + declared + b" AS " + body
        try:
            cursor.execute(b";\n".join([*head, prepare, run.encode()]), values or None)
        except Exception as exc:
            session.names.clear()
            session.reset = True
            code = getattr(exc, "pgcode", None)
            if code == _TAKEN:
                self._not_our_session(connection, cursor, statement, parameters, exc)
                return
            if isinstance(code, str) and code.startswith(_REFUSED):
                # The statement, or the types we declared, PostgreSQL would
                # not prepare (it may fail unprepared too: an unknown
                # column): not prepared again.  Outside a transaction it
                # runs again as it is, and raises its own error if it has one.
                self._seen[key] = ""
                if connection.autocommit:
                    cursor.execute(statement, parameters)
                    return
            raise
        session.names[name] = 1

    def _not_our_session(self, connection: Any, cursor: Any, statement: str,
                         parameters: Any, exc: Exception) -> None:
        """A prepared statement went missing, or a name was taken: the
        server session is shared (a pooler in transaction or statement
        mode).  Stop preparing; outside a transaction, run the statement
        again as it is, else raise the failure."""
        if self.enabled:
            LOG.warning("PostgreSQL prepared statements turned off in this worker: "
                        "the server session is not this connection's alone (%s); "
                        "behind a pooler in transaction or statement mode, set "
                        "[placement_database] prepared_statements = false",
                        str(exc).strip())
        self.enabled = False
        if not connection.autocommit:
            raise exc
        cursor.execute(statement, parameters)
