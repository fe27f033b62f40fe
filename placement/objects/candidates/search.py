"""SQL of the candidate search: a handful of set-based queries per request.

1. :func:`check_names` — every resource class, and are the requested
   traits known?  One query for both.
2. :func:`load_forest` — every provider of the trees that have inventory
   of a requested class.  One query reads what must be read afresh: each
   provider's generation and place in its tree, usage and, when the
   request needs them, aggregates.  Inventories and traits come from the
   worker's :mod:`.cache`, and two more queries read them only for the
   providers it lacks or holds at an older generation.  When the last
   search for the same classes found them in most trees, the first query
   reads every provider instead, and the trees without those classes are
   dropped here: narrowing in the database then costs more than it saves.
   Only when sharing providers turn up do one or two more queries load the
   trees sharing their aggregates.
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
from placement.objects.candidates import cache as provider_cache
from placement.objects.candidates.trees import SHARING_TRAIT, Forest, Inventory, Provider

_RP = tables.resource_providers
_INV = tables.inventories
_RC = tables.resource_classes
_TRAITS = tables.traits
_RP_TRAITS = tables.resource_provider_traits
_RP_AGGS = tables.resource_provider_aggregates
_AGGS = tables.placement_aggregates
_ALLOC = tables.allocations

# Ids per IN list, well below SQLite's limit on bound parameters.
_CHUNK = 5000


def check_names(conn: sa.engine.Connection, traits: Sequence[str]
                ) -> tuple[dict[str, int], dict[str, int]]:
    """``({class: id}, {trait: id})``: every resource class, and those of
    the ``traits`` that exist.  One query for both; all classes, because
    the summaries name the classes of every inventory and usage row."""
    query = sa.select(sa.literal("c").label("kind"), _RC.c.name, _RC.c.id).union_all(
        sa.select(sa.literal("t").label("kind"), _TRAITS.c.name, _TRAITS.c.id)
        .where(_TRAITS.c.name.in_(sorted(set(traits)) or [""])))
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


# _fetch's parameter for statements over every provider.
EVERYONE = "everyone"


@functools.cache
def _statement(kind: str, by: str) -> Any:
    """The statements of the search, built once: SQLAlchemy then finds their
    compiled form in its cache instead of rebuilding and hashing them.
    ``by`` names the parameter saying which providers: ``class_ids``,
    ``root_ids`` or ``provider_ids``, or EVERYONE."""
    if kind == "inventories":
        return _inventories(sa.bindparam(by, expanding=True))
    if kind == "traits":
        return _traits(sa.bindparam(by, expanding=True))
    if kind == "aggregates":
        return _aggregates(_roots(by == "class_ids"))
    return _states(None if by == EVERYONE else _roots(by == "class_ids"),
                   with_aggregates=kind == "states_and_aggregates")


# The rows of _states: (kind, provider id, a, b, c, uuid).
_PLACE, _USAGE, _MEMBER = "p", "u", "a"


def _states(roots: Any, with_aggregates: bool) -> Any:
    """What every request reads afresh of the providers of these trees (of
    all trees when ``roots`` is None): one ``p`` row per provider (id,
    generation, parent id, root id, uuid), one ``u`` row per provider and
    class with allocations (class id, used) and, ``with_aggregates``, one
    ``a`` row per aggregate membership (aggregate id)."""
    chosen: Any = _RP
    if roots is not None:
        chosen = (
            sa.select(_RP.c.id, _RP.c.generation, _RP.c.parent_provider_id,
                      _RP.c.root_provider_id, _RP.c.uuid)
            .where(_RP.c.root_provider_id.in_(roots))
            .cte("chosen"))
    no_int, no_text = sa.null().cast(sa.Integer), sa.null().cast(sa.String)
    places = sa.select(sa.literal(_PLACE).label("kind"), chosen.c.id,
                       chosen.c.generation, chosen.c.parent_provider_id,
                       chosen.c.root_provider_id, chosen.c.uuid)
    usage = (
        sa.select(sa.literal(_USAGE), _ALLOC.c.resource_provider_id,
                  _ALLOC.c.resource_class_id,
                  sa.cast(sa.func.sum(_ALLOC.c.used), sa.Integer), no_int,
                  no_text)
        .group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id))
    members = sa.select(sa.literal(_MEMBER), _RP_AGGS.c.resource_provider_id,
                        _RP_AGGS.c.aggregate_id, no_int, no_int, no_text)
    if roots is not None:
        usage = usage.join(chosen, chosen.c.id == _ALLOC.c.resource_provider_id)
        members = members.join(chosen, chosen.c.id == _RP_AGGS.c.resource_provider_id)
    return sa.union_all(places, usage, *([members] if with_aggregates else []))


def _inventories(provider_ids: Any) -> sa.Select[Any]:
    return (
        sa.select(_INV.c.resource_provider_id, _INV.c.resource_class_id,
                  _INV.c.total, _INV.c.reserved, _INV.c.min_unit,
                  _INV.c.max_unit, _INV.c.step_size, _INV.c.allocation_ratio)
        .where(_INV.c.resource_provider_id.in_(provider_ids))
        # Summaries list resources in this order.
        .order_by(_INV.c.resource_provider_id, _INV.c.resource_class_id)
    )


def _traits(provider_ids: Any) -> sa.Select[Any]:
    return (
        sa.select(_RP_TRAITS.c.resource_provider_id, _TRAITS.c.name)
        .join(_TRAITS, _TRAITS.c.id == _RP_TRAITS.c.trait_id)
        .where(_RP_TRAITS.c.resource_provider_id.in_(provider_ids))
    )


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


class _Loader:
    """Loads trees into one request's providers, through the worker's
    :mod:`.cache` of provider contents."""

    def __init__(self, conn: sa.engine.Connection, classes: dict[str, int]) -> None:
        self.conn = conn
        self.class_names = {class_id: name for name, class_id in classes.items()}
        self.cache = provider_cache.of(conn.engine)
        self.cache.check_class_names(self.class_names)
        self.providers: dict[int, Provider] = {}

    def class_name(self, class_id: int) -> str:
        """The name of a class, reading the classes again for one created
        since :func:`check_names` (a writer may have added it, with
        inventory or allocations, while this search ran)."""
        name = self.class_names.get(class_id)
        if name is None:
            self.class_names = {
                class_id: name for class_id, name in self.conn.execute(
                    sa.select(_RC.c.id, _RC.c.name))}
            self.cache.check_class_names(self.class_names)
            name = self.class_names[class_id]
        return name

    def load(self, params: dict[str, list[int]], with_aggregates: bool,
             holding: frozenset[str] | None = None) -> None:
        """Add the providers of the trees ``params`` names; with ``holding``,
        only of the trees with inventory of one of those classes."""
        places: list[tuple[Any, ...]] = []
        usage: dict[int, list[tuple[int, int]]] = {}
        members: dict[int, list[int]] = {}
        for row in _fetch(self.conn, "states_and_aggregates" if with_aggregates
                          else "states", params):
            kind = row[0]
            if kind == _PLACE:
                places.append(row)
            elif kind == _USAGE:
                usage.setdefault(row[1], []).append((row[2], row[3]))
            else:
                members.setdefault(row[1], []).append(row[2])
        contents = self._contents(places)
        aggregate_uuids = self._aggregate_uuids(members)
        # Like providers share one aggregate set, as they share inventory
        # dicts and trait sets (ProviderCache.entry).
        aggregate_sets: dict[frozenset[int], frozenset[str]] = {}
        if holding is not None:
            holds: dict[int, bool] = {}  # by shared inventory dict
            kept = set()
            for _kind, pid, _gen, _parent, root, _uuid in places:
                inventories = contents[pid].inventories
                held = holds.get(id(inventories))
                if held is None:
                    held = holds[id(inventories)] = not holding.isdisjoint(inventories)
                if held:
                    kept.add(root)
            places = [place for place in places if place[4] in kept]
        for _kind, provider_id, _generation, parent_id, root_id, uuid in places:
            inventories = contents[provider_id].inventories
            used = usage.get(provider_id)
            if used:
                inventories = dict(inventories)
                for class_id, amount in used:
                    name = self.class_name(class_id)
                    inventory = inventories.get(name)
                    if inventory is not None:
                        inventories[name] = inventory._replace(used=amount)
            aggregates: frozenset[str] = frozenset()
            in_aggregates = members.get(provider_id)
            if in_aggregates:
                ids = frozenset(in_aggregates)
                aggregates = aggregate_sets.get(ids) or aggregate_sets.setdefault(
                    ids, frozenset([aggregate_uuids[a] for a in ids]))
            self.providers[provider_id] = Provider(
                provider_id, uuid, parent_id, root_id, inventories,
                contents[provider_id].traits, aggregates)

    def _contents(self, places: list[tuple[Any, ...]]) -> dict[int, provider_cache.Entry]:
        """The cached entry of each provider, read afresh where it is
        missing or older than the generation read."""
        cache = self.cache
        found: dict[int, provider_cache.Entry] = {}
        stale: dict[int, tuple[int, str]] = {}
        for _kind, provider_id, generation, _parent, _root, uuid in places:
            entry = cache.get(provider_id, generation, uuid)
            if entry is None:
                stale[provider_id] = (generation, uuid)
            else:
                found[provider_id] = entry
        make_tuple = tuple.__new__
        class_name = self.class_name
        for chunk in _chunks(sorted(stale)):
            params = {"provider_ids": chunk}
            inventories: dict[int, dict[str, Inventory]] = {p: {} for p in chunk}
            # tuple.__new__ directly: Inventory._make is a Python-level
            # call, and this loop runs once per inventory row.
            for row in _fetch(self.conn, "inventories", params):
                inventories[row[0]][class_name(row[1])] = make_tuple(
                    Inventory, (*row[2:], 0))
            traits: dict[int, set[str]] = {}
            for provider_id, name in _fetch(self.conn, "traits", params):
                traits.setdefault(provider_id, set()).add(name)
            keep = cache.names_classes_as(self.class_names)
            for provider_id in chunk:
                generation, uuid = stale[provider_id]
                entry = cache.entry(generation, uuid, inventories[provider_id],
                                    frozenset(traits.get(provider_id, ())))
                if keep:
                    cache.put(provider_id, entry)
                found[provider_id] = entry
        return found

    def _aggregate_uuids(self, members: dict[int, list[int]]) -> dict[int, str]:
        """Aggregate id -> uuid for every aggregate in ``members``; the rows
        of placement_aggregates never change, so they are kept."""
        known = self.cache.aggregate_uuids
        missing = {a for ids in members.values() for a in ids} - known.keys()
        if missing:
            known.update(self.conn.execute(
                sa.select(_AGGS.c.id, _AGGS.c.uuid).where(
                    _AGGS.c.id.in_(sorted(missing)))).all())
        return known


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
        statement = _statement(kind, name)
        if name != EVERYONE:
            statement = statement.params({name: [int(i) for i in ids]})
        sql = _literal(conn, statement)
        if name in ("class_ids", EVERYONE):
            # Root and provider ids rarely repeat: only class ids are kept.
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


def load_trees(conn: sa.engine.Connection, classes: dict[str, int],
               roots: list[int], with_aggregates: bool) -> Forest:
    """These trees, fully loaded (no sharing provider may be among them).
    ``classes`` maps every class name to its id (:func:`check_names`)."""
    loader = _Loader(conn, classes)
    for chunk in _chunks(roots):
        loader.load({"root_ids": chunk}, with_aggregates)
    return Forest(loader.providers.values())


def load_forest(conn: sa.engine.Connection, classes: dict[str, int],
                class_ids: Sequence[int], with_aggregates: bool) -> Forest:
    """Every tree that may take part in a candidate, fully loaded.

    Those are the trees with inventory of a requested class and, when some
    of their providers share inventory, the trees in the same aggregates.
    Aggregates are loaded when ``with_aggregates`` is true (member_of) or
    sharing providers are involved.
    """
    loader = _Loader(conn, classes)
    providers = loader.providers
    params = {"class_ids": sorted(set(class_ids))}
    wanted = frozenset(loader.class_name(class_id) for class_id in class_ids)
    if loader.cache.reads_everyone(wanted):
        loader.load({EVERYONE: []}, with_aggregates, holding=wanted)
    else:
        loader.load(params, with_aggregates)
    loader.cache.reached(wanted, len(providers))
    sharing = [p.id for p in providers.values() if SHARING_TRAIT in p.traits]
    if sharing:
        if not with_aggregates:
            for provider_id, _kind, agg_uuid in _fetch(conn, "aggregates", params):
                providers[provider_id].add_aggregate(agg_uuid)
        known = {p.root_id for p in providers.values()}
        more = [root for (root,) in conn.execute(
            _sharing_neighbour_roots(sharing)).all() if root not in known]
        for chunk in _chunks(more):
            loader.load({"root_ids": chunk}, True)
    return Forest(providers.values())
