"""``GET /resource_providers``: the providers matching a query's filters.

The whole filter is one SQL statement.  Free capacity comes from
:mod:`.capacity`, which the allocation candidate search uses too; traits
and aggregates are matched by id here, while the candidate search checks
them in memory on the trees it loads.  Filters are checked in the order
the query gives them, so that errors name the first unknown class as
Placement does.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

import sqlalchemy as sa

from placement.db import tables
from placement.objects import capacity
from placement.objects import resource_class as rc_obj
from placement.objects import resource_provider as rp_obj
from placement.objects import trait as trait_obj

_RP = tables.resource_providers
_RP_TRAITS = tables.resource_provider_traits
_RP_AGGS = tables.resource_provider_aggregates
_AGGS = tables.placement_aggregates


@dataclasses.dataclass(frozen=True)
class ProviderFilters:
    """What ``GET /resource_providers`` may filter on, already parsed.

    ``member_of`` and ``required_traits`` are lists of any-of sets that must
    all be satisfied; ``resources`` maps class names to amounts.
    """

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    member_of: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_aggs: set[str] = dataclasses.field(default_factory=set)
    required_traits: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_traits: set[str] = dataclasses.field(default_factory=set)
    resources: dict[str, int] = dataclasses.field(default_factory=dict)


def _with_any_trait(trait_ids: Iterable[int]) -> sa.Select[Any]:
    return sa.select(_RP_TRAITS.c.resource_provider_id).where(
        _RP_TRAITS.c.trait_id.in_(sorted(set(trait_ids))))


def _in_any_aggregate(agg_uuids: Iterable[str]) -> sa.Select[Any]:
    return (
        sa.select(_RP_AGGS.c.resource_provider_id)
        .select_from(_RP_AGGS.join(_AGGS, _AGGS.c.id == _RP_AGGS.c.aggregate_id))
        .where(_AGGS.c.uuid.in_(sorted(set(agg_uuids))))
    )


def _any(conn: sa.engine.Connection, query: sa.Select[Any]) -> bool:
    return conn.execute(query.limit(1)).first() is not None


def list_providers(ctx: Any, filters: ProviderFilters | None = None
                   ) -> list[rp_obj.ResourceProvider]:
    """Providers matching every given filter, in creation order.

    Raises TraitNotFound and ResourceClassNotFound for unknown names.  As
    Placement does, a filter that already matches nothing ends the search
    before later filters' names are checked (an ``in_tree`` of an unknown
    provider, or traits or aggregates no provider has, give an empty list).
    """
    filters = filters or ProviderFilters()
    query = rp_obj.select_providers().order_by(_RP.c.id)
    with ctx.db.reader() as conn:
        if filters.name:
            query = query.where(_RP.c.name == filters.name)
        if filters.uuid:
            query = query.where(_RP.c.uuid == filters.uuid)
        if filters.in_tree:
            tree = rp_obj.get_by_uuids_in(conn, [filters.in_tree]).get(
                filters.in_tree)
            if tree is None:
                return []
            query = query.where(_RP.c.root_provider_id == tree.root_id)
        for names in filters.required_traits:
            subquery = _with_any_trait(trait_obj.ids_by_name(conn, names).values())
            if not _any(conn, subquery):
                return []
            query = query.where(_RP.c.id.in_(subquery))
        if filters.forbidden_traits:
            ids = trait_obj.ids_by_name(conn, filters.forbidden_traits).values()
            query = query.where(_RP.c.id.not_in(_with_any_trait(ids)))
        for agg_uuids in filters.member_of:
            subquery = _in_any_aggregate(agg_uuids)
            if not _any(conn, subquery):
                return []
            query = query.where(_RP.c.id.in_(subquery))
        if filters.forbidden_aggs:
            query = query.where(
                _RP.c.id.not_in(_in_any_aggregate(filters.forbidden_aggs)))
        if filters.resources:
            # One name at a time, so the first unknown one in the request's
            # order is the one reported.
            amounts = [(rc_obj.ids_by_name(conn, [name])[name], amount)
                       for name, amount in filters.resources.items()]
            query = query.where(_RP.c.id.in_(capacity.providers_fitting(amounts)))
        return [rp_obj.from_row(row) for row in conn.execute(query).all()]
