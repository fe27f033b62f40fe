"""SQL of the candidate search: a handful of set-based queries per request.

1. :func:`check_names` — are the requested classes and traits known?  One
   query for both.
2. :func:`load_forest` — every provider of the trees that have inventory
   of a requested class, with inventories and usage (one query), traits and,
   when the request needs them, aggregates (a second query).  Only when
   sharing providers turn up do one or two more queries load the trees
   sharing their aggregates.
3. Or, when the answer is bounded (``limit``), :func:`candidate_roots`
   lists those trees and :func:`load_trees` loads them a batch at a time,
   until enough candidates are found.

Everything else (which provider serves which group, combinations, limits)
happens in memory in :mod:`.assemble`.
"""

from __future__ import annotations

import functools
from typing import Any, Iterator, Sequence

import sqlalchemy as sa

from placement.db import tables
from placement.objects import capacity
from placement.objects.candidates.trees import SHARING_TRAIT, Forest, Inventory, Provider

_RP = tables.resource_providers
_INV = tables.inventories
_RC = tables.resource_classes
_TRAITS = tables.traits
_RP_TRAITS = tables.resource_provider_traits
_RP_AGGS = tables.resource_provider_aggregates
_AGGS = tables.placement_aggregates

# Ids per IN list, well below SQLite's limit on bound parameters.
_CHUNK = 5000


def check_names(conn: sa.engine.Connection, classes: Sequence[str],
                traits: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
    """``({class: id}, {trait: id})`` for the names that exist."""
    wanted_traits = sorted(set(traits)) or [""]
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


def _roots(by_class: bool) -> Any:
    """The trees to load: a subquery of the roots of the trees having
    inventory of any class of the ``class_ids`` parameter, or the
    ``root_ids`` parameter itself.

    Capacity is checked in memory, where the inventories are needed anyway
    for the summaries: the database only narrows the search to trees that
    may play a part.
    """
    if not by_class:
        return sa.bindparam("root_ids", expanding=True)
    holder = _RP.alias("holder")
    holder_inventory = _INV.alias("holder_inventory")
    return (
        sa.select(holder.c.root_provider_id)
        .join(holder_inventory,
              holder_inventory.c.resource_provider_id == holder.c.id)
        .where(holder_inventory.c.resource_class_id.in_(
            sa.bindparam("class_ids", expanding=True)))
    )


@functools.cache
def _statement(kind: str, by_class: bool, with_aggregates: bool = False) -> Any:
    """The statements of the search, built once: SQLAlchemy then finds their
    compiled form in its cache instead of rebuilding and hashing them."""
    roots = _roots(by_class)
    if kind == "inventories":
        return _providers_with_inventories(roots)
    if kind in ("traits", "traits_and_aggregates"):
        return _traits_and_aggregates(roots, with_aggregates)
    return _aggregates(roots)


def _providers_with_inventories(roots: Any) -> sa.Select[Any]:
    return (
        sa.select(_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
                  _RP.c.root_provider_id, _RC.c.name, _INV.c.total,
                  _INV.c.reserved, _INV.c.min_unit, _INV.c.max_unit,
                  _INV.c.step_size, _INV.c.allocation_ratio,
                  capacity.usage_of_inventory())
        .select_from(
            _RP.outerjoin(_INV, _INV.c.resource_provider_id == _RP.c.id)
            .outerjoin(_RC, _RC.c.id == _INV.c.resource_class_id))
        .where(_RP.c.root_provider_id.in_(roots))
    )


def _traits_and_aggregates(roots: Any, with_aggregates: bool) -> Any:
    """(provider id, "t", trait name) and (provider id, "a", aggregate
    uuid) rows of the providers of these trees: one round trip."""
    traits = (
        sa.select(_RP_TRAITS.c.resource_provider_id,
                  sa.literal("t").label("kind"), _TRAITS.c.name.label("value"))
        .join(_TRAITS, _TRAITS.c.id == _RP_TRAITS.c.trait_id)
        .join(_RP, _RP.c.id == _RP_TRAITS.c.resource_provider_id)
        .where(_RP.c.root_provider_id.in_(roots))
    )
    if not with_aggregates:
        return traits
    return traits.union_all(_aggregates(roots))


def _aggregates(roots: Any) -> sa.Select[Any]:
    return (
        sa.select(_RP_AGGS.c.resource_provider_id,
                  sa.literal("a").label("kind"), _AGGS.c.uuid.label("value"))
        .join(_AGGS, _AGGS.c.id == _RP_AGGS.c.aggregate_id)
        .join(_RP, _RP.c.id == _RP_AGGS.c.resource_provider_id)
        .where(_RP.c.root_provider_id.in_(roots))
    )


def _sharing_neighbour_roots(sharing_ids: list[int]) -> sa.Select[Any]:
    """Roots of trees with a provider in an aggregate of these providers."""
    member = _RP.alias("member")
    mine = _RP_AGGS.alias("mine")
    theirs = _RP_AGGS.alias("theirs")
    return (
        sa.select(member.c.root_provider_id).distinct()
        .join(theirs, theirs.c.resource_provider_id == member.c.id)
        .join(mine, mine.c.aggregate_id == theirs.c.aggregate_id)
        .where(mine.c.resource_provider_id.in_(sharing_ids))
    )


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield list(ids[start:start + _CHUNK])


def _load(conn: sa.engine.Connection, params: dict[str, list[int]],
          with_aggregates: bool, providers: dict[int, Provider]) -> None:
    """Add the providers of the trees ``params`` names to ``providers``."""
    known = providers.get
    # tuple.__new__ directly: Inventory._make is a Python-level call, and
    # this loop runs once per inventory row.
    make_tuple = tuple.__new__
    provider = None
    for row in _fetch(conn, "inventories", params):
        provider_id = row[0]
        if provider is None or provider.id != provider_id:
            # Rows of one provider mostly come together.
            provider = known(provider_id)
            if provider is None:
                provider = providers[provider_id] = Provider(
                    provider_id, row[1], row[2], row[3])
        if row[4] is not None:
            provider.inventories[row[4]] = make_tuple(Inventory, row[5:])
    for provider_id, kind, value in _fetch(
            conn, "traits_and_aggregates" if with_aggregates else "traits",
            params):
        if kind == "t":
            providers[provider_id].add_trait(value)
        else:
            providers[provider_id].add_aggregate(value)


# Compiled SQL text by (dialect, statement, ids); bounded, see _fetch.
_SQL: dict[tuple[Any, ...], str] = {}


def _fetch(conn: sa.engine.Connection, kind: str, params: dict[str, list[int]]
           ) -> list[tuple[Any, ...]]:
    """The rows of one of the search statements as plain tuples.

    The only parameters are integer ids, so the statement is compiled with
    them as literals and run as text, and the rows are taken from the
    driver's cursor: for tens of thousands of rows that is several times
    cheaper than building result rows (errors still go through SQLAlchemy
    and oslo.db).  Texts for the same classes are reused.
    """
    (name, ids), = params.items()
    key = (conn.dialect.name, kind, name, tuple(ids))
    sql = _SQL.get(key)
    if sql is None:
        statement = _statement(kind, name == "class_ids",
                               kind == "traits_and_aggregates")
        sql = _literal(conn, statement.params({name: [int(i) for i in ids]}))
        if name == "class_ids":
            # Root ids of batches rarely repeat: only class ids are kept.
            _remember(key, sql)
    return _raw_rows(conn, sql)


def _remember(key: tuple[Any, ...], sql: str) -> None:
    if len(_SQL) > 512:
        _SQL.clear()
    _SQL[key] = sql


def _literal(conn: sa.engine.Connection, statement: Any) -> str:
    compiled = statement.compile(
        dialect=conn.dialect,
        compile_kwargs={"literal_binds": True, "render_postcompile": True})
    return str(compiled)


def _raw_rows(conn: sa.engine.Connection, sql: str) -> list[tuple[Any, ...]]:
    result = conn.exec_driver_sql(sql)
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


def candidate_roots(conn: sa.engine.Connection,
                    amounts: Sequence[tuple[int, int]]) -> list[int] | None:
    """Roots of the trees where each requested (class id, amount) fits on
    some provider, in id order; None when some sharing provider has
    inventory of a requested class (its trees cannot then be taken one
    batch at a time).

    Without sharing providers every allocation of a candidate comes from
    its own tree, so a tree failing this test has no candidate: full
    compute nodes are skipped by the database instead of being loaded.
    """
    params = {"class_ids": sorted({class_id for class_id, _ in amounts})}
    if not amounts or conn.execute(
            _sharing_with_classes(), params).first() is not None:
        return None
    key = (conn.dialect.name, "fitting", tuple(sorted(set(amounts))))
    sql = _SQL.get(key)
    if sql is None:
        # Built and compiled once per set of amounts: a scheduler repeats
        # the same few flavors, and building this statement costs more
        # than running it on a small cloud.
        roots = capacity.trees_fitting(amounts).subquery()
        sql = _literal(conn, sa.select(roots.c.root_provider_id).order_by(
            roots.c.root_provider_id))
        _remember(key, sql)
    return [row[0] for row in _raw_rows(conn, sql)]


@functools.cache
def _sharing_with_classes() -> sa.Select[Any]:
    return (
        sa.select(_INV.c.resource_provider_id)
        .join(_RP_TRAITS,
              _RP_TRAITS.c.resource_provider_id == _INV.c.resource_provider_id)
        .join(_TRAITS, _TRAITS.c.id == _RP_TRAITS.c.trait_id)
        .where(_TRAITS.c.name == SHARING_TRAIT,
               _INV.c.resource_class_id.in_(
                   sa.bindparam("class_ids", expanding=True)))
        .limit(1)
    )


def load_trees(conn: sa.engine.Connection, roots: list[int],
               with_aggregates: bool) -> Forest:
    """These trees, fully loaded (no sharing provider may be among them)."""
    providers: dict[int, Provider] = {}
    for chunk in _chunks(roots):
        _load(conn, {"root_ids": chunk}, with_aggregates, providers)
    return Forest(providers.values())


def load_forest(conn: sa.engine.Connection, class_ids: Sequence[int],
                with_aggregates: bool) -> Forest:
    """Every tree that may take part in a candidate, fully loaded.

    Those are the trees with inventory of a requested class and, when some
    of their providers share inventory, the trees in the same aggregates.
    Aggregates are loaded when ``with_aggregates`` is true (member_of) or
    sharing providers are involved.
    """
    providers: dict[int, Provider] = {}
    params = {"class_ids": sorted(set(class_ids))}
    _load(conn, params, with_aggregates, providers)
    sharing = [p.id for p in providers.values() if SHARING_TRAIT in p.traits]
    if sharing:
        if not with_aggregates:
            for provider_id, _kind, agg_uuid in _fetch(conn, "aggregates", params):
                providers[provider_id].add_aggregate(agg_uuid)
        known = {p.root_id for p in providers.values()}
        more = [root for (root,) in conn.execute(
            _sharing_neighbour_roots(sharing)).all() if root not in known]
        for chunk in _chunks(more):
            _load(conn, {"root_ids": chunk}, True, providers)
    return Forest(providers.values())

