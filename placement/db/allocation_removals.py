"""Counting the allocations each provider loses (table ``allocation_removals``).

Why count them: a provider's usage is the sum of its allocations, and a
worker keeps each provider's usage between candidate searches rather
than summing every allocation row for every search (``placement/kept``).
Adding allocations always increments the generation of every provider
allocated from, in the same transaction; removing them does not (and
must not: generations are part of the API, and OpenStack Placement's
clients see them move exactly as upstream moves them).  So every
transaction that deletes allocation rows also adds one to the count of
each provider that lost rows (:func:`count_in`), and a provider's usage
can change only when its generation or its count does.

A provider without a row has lost nothing since the table was created
(counts start empty, on a new database and on an adopted one alike): it
counts as 0.  A deleted provider's row goes with it; ids are never reused
(``placement/kept``, rule 2), so a row left behind would name no one.

Only this release's writers count: anything else deleting allocations
under running workers (upstream Placement sharing the database, SQL run
by hand) must be followed by a restart of the workers (README, "Running
it for real").
"""

from __future__ import annotations

import functools
from typing import Any, Iterable

import sqlalchemy as sa
import sqlalchemy.dialects.mysql
import sqlalchemy.dialects.postgresql
import sqlalchemy.dialects.sqlite

from placement.db import tables

_REMOVALS = tables.allocation_removals


@functools.cache
def _upsert(dialect: str) -> Any:
    """Insert a count of 1, or add 1 to the one there: each backend spells
    "insert or update" its own way.  Built once per backend."""
    # The 1 written out, not bound: PyMySQL's executemany rewrites the
    # statement into one multi-row INSERT and cannot take a parameter
    # after the VALUES.
    added = {"removals": _REMOVALS.c.removals + sa.literal_column("1")}
    key = [_REMOVALS.c.resource_provider_id]
    if dialect == "postgresql":
        return sa.dialects.postgresql.insert(_REMOVALS).on_conflict_do_update(
            index_elements=key, set_=added)
    if dialect == "sqlite":
        return sa.dialects.sqlite.insert(_REMOVALS).on_conflict_do_update(
            index_elements=key, set_=added)
    # MySQL and MariaDB.
    return sa.dialects.mysql.insert(_REMOVALS).on_duplicate_key_update(added)


def counting_cte() -> Any:
    """PostgreSQL: :func:`count_in` as a WITH clause of a statement that
    does more, for the providers of the integer array parameter
    ``removed_from`` (distinct, in id order, as :func:`count_in` takes
    its locks)."""
    from sqlalchemy.dialects import postgresql

    providers = sa.func.unnest(sa.bindparam("removed_from", type_=postgresql.ARRAY(sa.Integer)))
    return (postgresql.insert(_REMOVALS)
            .from_select(["resource_provider_id", "removals"],
                         sa.select(providers, sa.literal(1, sa.Integer)))
            .on_conflict_do_update(
                index_elements=[_REMOVALS.c.resource_provider_id],
                set_={"removals": _REMOVALS.c.removals + sa.literal_column("1")})
            .returning(_REMOVALS.c.resource_provider_id)
            .cte("counted"))


def count_in(conn: sa.engine.Connection, provider_ids: Iterable[int]) -> None:
    """Add one to the removal count of each of these providers, in the
    transaction that deletes their allocations.

    In id order, so that two transactions counting the same providers
    take their row locks in the same order and cannot deadlock on them.
    """
    ids = sorted(set(provider_ids))
    if ids:
        conn.execute(_upsert(conn.dialect.name), [
            {"resource_provider_id": id_, "removals": 1} for id_ in ids])


def forget_in(conn: sa.engine.Connection, provider_id: int) -> None:
    """Drop the count of a provider being deleted."""
    conn.execute(_REMOVALS.delete().where(
        _REMOVALS.c.resource_provider_id == provider_id))
