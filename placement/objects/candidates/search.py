"""SQL of the candidate search: a handful of set-based queries per request.

1. :func:`check_names` — are the requested classes and traits known?  One
   query for both.
2. :func:`candidate_roots` — the roots of every tree that has a provider
   with room for at least one requested amount, plus the trees that share
   an aggregate with a sharing provider that has such room.
3. :func:`load_forest` — for those trees, every provider with its
   inventories and usage, its traits and (when the request needs them)
   its aggregates: three queries, whatever the number of providers.

Everything else (which provider serves which group, combinations, limits)
happens in memory in :mod:`.assemble`.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

import sqlalchemy as sa

from placement.db import tables
from placement.objects.candidates.trees import SHARING_TRAIT, Forest, Inventory, Provider

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RC = tables.resource_classes
_TRAITS = tables.traits
_RP_TRAITS = tables.resource_provider_traits
_RP_AGGS = tables.resource_provider_aggregates
_AGGS = tables.placement_aggregates

# Ids per IN list, well below SQLite's limit on bound parameters.
_CHUNK = 5000


def check_names(conn: sa.engine.Connection, classes: Sequence[str],
                traits: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
    """``({class: id}, {trait: id})`` for the names that exist.

    The sharing trait is always looked up too: the search needs its id.
    """
    wanted_traits = sorted(set(traits) | {SHARING_TRAIT})
    classes_query = sa.select(
        sa.literal("c").label("kind"), _RC.c.name, _RC.c.id).where(
        _RC.c.name.in_(sorted(set(classes)) or [""]))
    query = classes_query.union_all(
        sa.select(sa.literal("t").label("kind"), _TRAITS.c.name, _TRAITS.c.id)
        .where(_TRAITS.c.name.in_(wanted_traits)))
    found: dict[str, dict[str, int]] = {"c": {}, "t": {}}
    for kind, name, id_ in conn.execute(query):
        found[kind][name] = id_
    return found["c"], found["t"]


def _usage_of_inventory() -> sa.ScalarSelect[Any]:
    """What is allocated from the inventory row of the enclosing query.

    A correlated subquery: the allocations index on (provider, class, used)
    answers it without touching the table.
    """
    return (
        sa.select(sa.func.coalesce(sa.func.sum(_ALLOC.c.used), 0))
        .where(_ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
               _ALLOC.c.resource_class_id == _INV.c.resource_class_id)
        .correlate(_INV)
        .scalar_subquery()
    )


def _with_room(amounts: dict[int, int]) -> sa.Select[Any]:
    """Ids of providers with room for at least one ``{class id: amount}``.

    Room for the smallest amount requested of a class; which group can
    really use the provider is decided in memory.
    """
    used = _usage_of_inventory()
    conditions = [
        sa.and_(
            _INV.c.resource_class_id == class_id,
            _INV.c.max_unit >= amount,
            (_INV.c.total - _INV.c.reserved) * _INV.c.allocation_ratio
            >= used + amount,
        )
        for class_id, amount in sorted(amounts.items())
    ]
    return sa.select(_INV.c.resource_provider_id).where(sa.or_(*conditions))


def candidate_roots(conn: sa.engine.Connection, amounts: dict[int, int],
                    sharing_trait_id: int | None) -> list[int]:
    """Roots of the trees a candidate may draw on (see the module doc)."""
    with_room = _with_room(amounts).subquery("with_room")
    own = (sa.select(_RP.c.root_provider_id)
           .where(_RP.c.id.in_(sa.select(with_room.c.resource_provider_id))))
    query: Any = own
    if sharing_trait_id is not None:
        sharing_aggs = (
            sa.select(_RP_AGGS.c.aggregate_id)
            .join(_RP_TRAITS, _RP_TRAITS.c.resource_provider_id
                  == _RP_AGGS.c.resource_provider_id)
            .where(_RP_TRAITS.c.trait_id == sharing_trait_id,
                   _RP_AGGS.c.resource_provider_id.in_(
                       sa.select(with_room.c.resource_provider_id)))
        )
        sharing_members = (
            sa.select(_RP.c.root_provider_id)
            .join(_RP_AGGS, _RP_AGGS.c.resource_provider_id == _RP.c.id)
            .where(_RP_AGGS.c.aggregate_id.in_(sharing_aggs))
        )
        query = sa.union(own, sharing_members)
    else:
        query = own.distinct()
    return sorted(root for (root,) in conn.execute(query))


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield list(ids[start:start + _CHUNK])


def _providers_with_inventories(roots: list[int]) -> sa.Select[Any]:
    return (
        sa.select(_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
                  _RP.c.root_provider_id, _RC.c.name, _INV.c.total,
                  _INV.c.reserved, _INV.c.min_unit, _INV.c.max_unit,
                  _INV.c.step_size, _INV.c.allocation_ratio,
                  _usage_of_inventory())
        .select_from(
            _RP.outerjoin(_INV, _INV.c.resource_provider_id == _RP.c.id)
            .outerjoin(_RC, _RC.c.id == _INV.c.resource_class_id))
        .where(_RP.c.root_provider_id.in_(roots))
        .order_by(_RP.c.id, _INV.c.id)
    )


def _traits(roots: list[int]) -> sa.Select[Any]:
    return (
        sa.select(_RP_TRAITS.c.resource_provider_id, _TRAITS.c.name)
        .join(_TRAITS, _TRAITS.c.id == _RP_TRAITS.c.trait_id)
        .join(_RP, _RP.c.id == _RP_TRAITS.c.resource_provider_id)
        .where(_RP.c.root_provider_id.in_(roots))
    )


def _aggregates(roots: list[int]) -> sa.Select[Any]:
    return (
        sa.select(_RP_AGGS.c.resource_provider_id, _AGGS.c.uuid)
        .join(_AGGS, _AGGS.c.id == _RP_AGGS.c.aggregate_id)
        .join(_RP, _RP.c.id == _RP_AGGS.c.resource_provider_id)
        .where(_RP.c.root_provider_id.in_(roots))
    )


def _rows(conn: sa.engine.Connection, build: Any, roots: list[int]
          ) -> Iterable[Sequence[Any]]:
    for chunk in _chunks(roots):
        yield from conn.execute(build(chunk))


def load_forest(conn: sa.engine.Connection, roots: list[int],
                with_aggregates: bool) -> Forest:
    """Every provider of these trees with inventories, usage and traits.

    Aggregates are loaded when ``with_aggregates`` is true or some provider
    shares its inventory (the sharing links need them).
    """
    providers: dict[int, Provider] = {}
    for (id_, uuid, parent_id, root_id, class_name, total, reserved, min_unit,
         max_unit, step_size, ratio, used) in _rows(
            conn, _providers_with_inventories, roots):
        provider = providers.get(id_)
        if provider is None:
            provider = providers[id_] = Provider(id_, uuid, parent_id, root_id)
        if class_name is not None:
            provider.inventories[class_name] = Inventory(
                total, reserved, min_unit, max_unit, step_size, ratio, int(used))
    sharing = False
    for provider_id, name in _rows(conn, _traits, roots):
        providers[provider_id].traits.add(name)
        sharing = sharing or name == SHARING_TRAIT
    if with_aggregates or sharing:
        for provider_id, agg_uuid in _rows(conn, _aggregates, roots):
            providers[provider_id].aggregates.add(agg_uuid)
    return Forest(providers.values())
