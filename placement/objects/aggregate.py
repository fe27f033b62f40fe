"""The aggregates a provider belongs to.

An aggregate is only a uuid: placement keeps no other data about it.  A
uuid gets a row in ``placement_aggregates`` the first time any provider is
put in it; ``resource_provider_aggregates`` links providers to those rows.
Rows of aggregates that no provider uses any more are left in place.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
from typing import TYPE_CHECKING, Any, Iterable

import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement import exceptions
from placement.db import api as db_api
from placement.db import tables
from placement.objects import resource_provider

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)
_AGGS = tables.placement_aggregates
_RP_AGGS = tables.resource_provider_aggregates


@dataclasses.dataclass(frozen=True)
class ProviderAggregates:
    """A provider's aggregate uuids and the generation they belong to."""

    generation: int
    aggregates: list[str]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _of_provider(conn: sa.engine.Connection, provider_id: int) -> dict[str, int]:
    """``{aggregate uuid: aggregate id}`` of the provider's aggregates."""
    rows = conn.execute(_of_provider_statement(), {"provider_id": provider_id}).all()
    return {uuid: id_ for uuid, id_ in rows}


@functools.cache
def _of_provider_statement() -> sa.Select[Any]:
    return (sa.select(_AGGS.c.uuid, _AGGS.c.id)
            .join(_RP_AGGS, _RP_AGGS.c.aggregate_id == _AGGS.c.id)
            .where(_RP_AGGS.c.resource_provider_id == sa.bindparam("provider_id")))


def get_for_provider(ctx: RequestContext, uuid: str) -> ProviderAggregates:
    """The aggregates of provider ``uuid``; ProviderNotFound if there is none."""
    with ctx.db.reader() as conn:
        provider = resource_provider.get_by_uuid_in(conn, uuid)
        found = _of_provider(conn, provider.id)
    return ProviderAggregates(provider.generation, sorted(found))


def set_for_provider(ctx: RequestContext, uuid: str, aggregates: Iterable[str],
                     expected_generation: int | None) -> ProviderAggregates:
    """Make ``aggregates`` the aggregates of provider ``uuid``.

    With ``expected_generation`` (microversion 1.19 and later) the
    provider's generation must still be that one, and it is bumped; without
    it (before 1.19) the generation is neither checked nor changed.
    Raises ProviderNotFound and ProviderConcurrentUpdate.
    """
    wanted = list(dict.fromkeys(aggregates))  # unique, in the caller's order
    # A duplicate means another request created one of our new aggregate
    # rows first (on Galera, a failed certification at COMMIT may say the
    # same); a new transaction sees that row.
    return db_api.run_with_retries(
        "aggregate.set_for_provider",
        lambda: _replace(ctx, uuid, wanted, expected_generation),
        also=(db_exc.DBDuplicateEntry,))


def _replace(ctx: RequestContext, uuid: str, wanted: list[str],
             expected: int | None) -> ProviderAggregates:
    with ctx.db.writer() as conn:
        _lock_provider(conn, uuid)
        provider = resource_provider.get_by_uuid_in(conn, uuid)
        generation = provider.generation
        if expected is not None:
            if provider.generation != expected:
                raise exceptions.ProviderConcurrentUpdate()
            generation = resource_provider.bump_generation(conn, provider, expected)
        current = _of_provider(conn, provider.id)
        gone = [id_ for agg, id_ in current.items() if agg not in wanted]
        if gone:
            conn.execute(_RP_AGGS.delete().where(
                _RP_AGGS.c.resource_provider_id == provider.id,
                _RP_AGGS.c.aggregate_id.in_(sorted(gone))))
        added = [agg for agg in wanted if agg not in current]
        if added:
            ids = _ensure_aggregates(conn, added)
            now = _now()
            conn.execute(_RP_AGGS.insert(), [
                {"resource_provider_id": provider.id, "aggregate_id": ids[agg],
                 "created_at": now} for agg in added])
    return ProviderAggregates(generation, wanted)


def _lock_provider(conn: sa.engine.Connection, uuid: str) -> None:
    """Lock the provider's row before reading anything else.

    Writers of one provider's aggregates then run one after the other, and
    each reads the links the previous one committed: before 1.19 there is
    no generation check to stop a writer working from a stale list (under
    MySQL's REPEATABLE READ the snapshot is taken at the first plain read,
    hence the lock comes first).  SQLite has no row locks: BEGIN IMMEDIATE
    already serialises writers there.
    """
    rp = tables.resource_providers
    conn.execute(sa.select(rp.c.id).where(rp.c.uuid == uuid).with_for_update()).all()


def _ensure_aggregates(conn: sa.engine.Connection, uuids: list[str]
                       ) -> dict[str, int]:
    """``{uuid: id}`` for these aggregates, creating the rows that are missing.

    Raises DBDuplicateEntry when a concurrent transaction created one of
    them first; the caller retries in a new transaction.
    """
    def known() -> dict[str, int]:
        rows = conn.execute(sa.select(_AGGS.c.uuid, _AGGS.c.id)
                            .where(_AGGS.c.uuid.in_(uuids))).all()
        return {uuid: id_ for uuid, id_ in rows}

    ids = known()
    missing = [uuid for uuid in uuids if uuid not in ids]
    if missing:
        now = _now()
        conn.execute(_AGGS.insert(), [{"uuid": uuid, "created_at": now}
                                      for uuid in missing])
        ids = known()
    return ids
