"""SQL of the candidate search: a handful of set-based queries per request.

1. :func:`check_names` — every resource class, and are the requested
   traits known?  One query for both, which also tells, for a bounded
   search, whether a sharing provider has inventory of a requested class.
2. ``states`` (:func:`fetch`) — one row per bucket of trees that have
   inventory of a requested class (or of the trees named, or of every
   tree): what must be read afresh by every search, since it may change
   without a generation bump — each provider's generation, place in its
   tree, aggregates and count of allocation removals — as one text.  The
   worker compares it with the text it read before (:mod:`.loader`,
   :mod:`placement.kept`).
3. ``entries``: the inventories and traits of the providers the worker
   holds at an older generation or not at all, in one query (of whole
   trees, each distinct row once, when it holds none of many); ``usage`` of
   those it holds at another generation or count of removals; the uuids
   of aggregates it has not seen.
4. :func:`sharing_neighbour_roots`, only when sharing providers turn up:
   the trees sharing their aggregates.
5. Or, when the answer is bounded (``limit``), :func:`fitting_states`
   reads the states of the next batch of trees where every requested
   amount fits somewhere (in place of 2.; on PostgreSQL in one statement,
   elsewhere in two), until enough candidates are found.

Everything else (which provider serves which group, combinations, limits)
happens in memory in :mod:`.assemble`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import sqlalchemy as sa

from placement.db import api as db_api
from placement.db import tables
from placement.objects import capacity
from placement.objects.candidates.trees import SHARING_TRAIT

_RP = tables.resource_providers
_INV = tables.inventories
_RC = tables.resource_classes
_TRAITS = tables.traits
_RP_TRAITS = tables.resource_provider_traits
_RP_AGGS = tables.resource_provider_aggregates
_AGGS = tables.placement_aggregates
_ALLOC = tables.allocations
_REMOVALS = tables.allocation_removals

# Ids per IN list, well below SQLite's limit on bound parameters (32766)
# even where a statement lists them twice (entries).
CHUNK = 5000


class Names(NamedTuple):
    """What :func:`check_names` found."""

    classes: dict[str, int]
    traits: dict[str, int]
    # Whether a sharing provider has inventory of one of the classes asked
    # about (None when not asked).
    shared: bool | None = None


def check_names(conn: sa.engine.Connection, traits: Sequence[str],
                sharing_of: Sequence[str] | None = None) -> Names:
    """Every resource class, those of the ``traits`` that exist, and (when
    ``sharing_of`` names classes) whether some sharing provider has
    inventory of any of them.  One query for all; all classes, because
    the summaries name the classes of every inventory and usage row.
    Every search starts here: the statement is built once and its rows
    are taken from the driver's cursor (see :func:`fetch`)."""
    params = {"trait_names": sorted(set(traits)) or [""]}
    if sharing_of is not None:
        params["sharing_of"] = sorted(set(sharing_of)) or [""]
    rows = db_api.rendered_rows(conn, _names_statement(sharing_of is not None), params)
    found: dict[str, dict[str, int]] = {"c": {}, "t": {}, "s": {}}
    for kind, name, id_ in rows:
        found[kind][name] = id_
    return Names(found["c"], found["t"],
                 None if sharing_of is None else bool(found["s"]))


@functools.cache
def _names_statement(with_sharing: bool) -> sa.CompoundSelect:
    parts = [
        sa.select(sa.literal("c").label("kind"), _RC.c.name, _RC.c.id),
        sa.select(sa.literal("t").label("kind"), _TRAITS.c.name, _TRAITS.c.id)
        .where(_TRAITS.c.name.in_(sa.bindparam("trait_names", expanding=True))),
    ]
    if with_sharing:
        # A row when some provider with the sharing trait has inventory of
        # a class of ``sharing_of`` (see fitting_states): asked in the
        # same round trip as the names, which every search reads anyway.
        classes = (sa.select(_RC.c.id)
                   .where(_RC.c.name.in_(sa.bindparam("sharing_of", expanding=True))))
        sharing = (
            sa.select(_INV.c.resource_provider_id)
            .join(_RP_TRAITS,
                  _RP_TRAITS.c.resource_provider_id == _INV.c.resource_provider_id)
            .join(_TRAITS, _TRAITS.c.id == _RP_TRAITS.c.trait_id)
            .where(_TRAITS.c.name == SHARING_TRAIT,
                   _INV.c.resource_class_id.in_(classes)))
        parts.append(sa.select(sa.literal("s").label("kind"), sa.literal(""),
                               sa.literal(0)).where(sharing.exists()))
    return sa.union_all(*parts)


def _roots(by_class: bool) -> Any:
    """The trees to read: a subquery of the roots of the trees having
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


# fetch's parameter for statements over every provider.
EVERYONE = "everyone"


def _statement(kind: str, by: str) -> Any:
    """The statements of the search, compiled once per dialect into text
    (:func:`_template`).  ``by`` names the parameter saying which
    providers: ``class_ids``, ``root_ids`` or ``provider_ids``, or
    EVERYONE; or, for the uuids of aggregates, ``aggregate_ids``."""
    if kind == "entries":
        assert by == "provider_ids", by
        return _entries(sa.bindparam(by, expanding=True))
    if kind == ENTRIES_AND_USAGE:
        assert by == "provider_ids", by
        return _entries(sa.bindparam(by, expanding=True),
                        usage_of=sa.bindparam(USAGE_OF, expanding=True))
    if kind == TREES_ENTRIES:
        if by == EVERYONE:
            return _trees_entries(None)
        assert by == "root_ids", by
        # The trees' providers named once, for the three branches: the
        # database reads the list of roots once rather than three times.
        providers = (sa.select(_RP.c.id)
                     .where(_RP.c.root_provider_id.in_(_roots(False)))
                     .cte("providers"))
        return _trees_entries(sa.select(providers.c.id))
    if kind == "usage":
        return _usage(sa.bindparam(by, expanding=True))
    if kind == "aggregates":
        return sa.select(_AGGS.c.id, _AGGS.c.uuid).where(
            _AGGS.c.id.in_(sa.bindparam(by, expanding=True)))
    assert kind == "states", kind
    return _states(None if by == EVERYONE else _roots(by == "class_ids"))


# The fields of a provider's state (see parse_states).
ID, GENERATION, PARENT, ROOT, UUID, AGGREGATES, REMOVALS = range(7)

# Trees whose root ids differ only in their last digits in this base share
# one state text (see _states).  Under churn a few trees change between two
# searches of a worker, and each changed bucket's whole text is taken
# apart: 16 rather than 64 took 13 % less CPU per search at limit 50 and
# a fifth less at limit 1000 on 500 hosts (8 was no better), and less
# database time too; 100,000 providers still make only some 6,000 groups.
BUCKET = 16


def _states(roots: Any) -> Any:
    """The state of the trees of these roots (every tree when ``roots`` is
    None), all that may change about them without a generation bump and
    the generations themselves, as texts: one row per bucket of trees
    (roots ``r`` with the same ``r - r % BUCKET``) with the bucket, a count
    of items and the items, ``;`` between them, in the database's order:

    * ``<root> p <id> <generation> <parent id> <uuid> <removals>`` for
      each provider, ``removals`` being its count of allocation removals
      (``db/allocation_removals.py``; 0 without a row);
    * ``<root> a <provider id> <aggregate id>`` for each aggregate
      membership.

    Usage is not in it: a provider's usage changes only with its
    generation or its removals (``placement/kept``, rule 4), so the worker
    reads the usage of those providers alone whose pair moved
    (:func:`_usage`), instead of the database summing every allocation
    for every search.

    A few texts make the common case cheap: the worker compares each with
    the text it read last time, and an equal text means unchanged trees;
    only the texts of changed buckets are taken apart (:func:`parse_states`).
    A text per bucket rather than per tree keeps the database's grouping
    small (tens of thousands of groups, each with its own buffer, spill
    out of memory and come back in another order).
    """
    chosen_rows = (
        sa.select(_RP.c.id, _RP.c.generation, _RP.c.parent_provider_id,
                  _RP.c.root_provider_id, _RP.c.uuid,
                  sa.func.coalesce(_REMOVALS.c.removals, 0).label("removals"))
        .outerjoin(_REMOVALS, _REMOVALS.c.resource_provider_id == _RP.c.id))
    chosen: Any
    members: Any
    if roots is None:
        # Every provider: the table is read in each branch rather than the
        # rows materialised once and scanned twice, which cost PostgreSQL a
        # fifth more (2.95 against 2.40 ms a search for the 801 providers of
        # the churn benchmark, whose every search at limit 1000 reads this).
        chosen, members = chosen_rows.subquery("chosen"), _RP
    else:
        chosen = members = (chosen_rows.where(_RP.c.root_provider_id.in_(roots))
                            .cte("chosen"))

    def text(column: Any) -> Any:
        return sa.cast(column, sa.String)

    root = chosen.c.root_provider_id
    member_root = members.c.root_provider_id
    items = sa.union_all(
        sa.select(root.label("root"), (
            text(root) + " p " + text(chosen.c.id) + " " + text(chosen.c.generation)
            + " " + sa.func.coalesce(text(chosen.c.parent_provider_id), "") + " "
            + chosen.c.uuid + " " + text(chosen.c.removals)).label("item")),
        sa.select(member_root, text(member_root) + " a "
                  + text(_RP_AGGS.c.resource_provider_id)
                  + " " + text(_RP_AGGS.c.aggregate_id))
        .join(members, members.c.id == _RP_AGGS.c.resource_provider_id),
    ).subquery("items")
    bucket = items.c.root - items.c.root % BUCKET
    return (
        sa.select(bucket, sa.func.count(), sa.func.aggregate_strings(items.c.item, ";"))
        .group_by(bucket)
    )


State = tuple[tuple[Any, ...], ...]


def parse_states(count: int, text: str) -> dict[int, State]:
    """The state of each tree of a bucket's text, by root id: one tuple per
    provider, in id order: (id, generation, parent id, root id, uuid,
    aggregate ids, removals), aggregate ids a sorted tuple.  Raises
    RuntimeError unless the text has ``count`` items (a database may cut
    long texts)."""
    # Split first, converted per tree: roots and provider ids stay text
    # until then (an aggregate's provider id is written as its provider's).
    places: dict[str, list[list[str]]] = {}
    aggregates: dict[str, list[int]] = {}
    items = text.split(";")
    states: dict[int, State] = {}
    try:
        for item in items:
            parts = item.split(" ")
            kind = parts[1]
            if kind == "p":
                if len(parts) != 7:
                    raise ValueError(item)
                places.setdefault(parts[0], []).append(parts)
            elif kind == "a":
                _root, _kind, provider, aggregate = parts
                aggregates.setdefault(provider, []).append(int(aggregate))
            else:
                raise ValueError(kind)
        for root, members in places.items():
            root_id = int(root)
            providers = [
                (int(p[2]), int(p[3]), int(p[4]) if p[4] else None, root_id, p[5],
                 tuple(sorted(aggregates[p[2]])) if p[2] in aggregates else (), int(p[6]))
                for p in members]
            # Ids are distinct: the first field orders them.
            providers.sort()
            states[root_id] = tuple(providers)
    except (ValueError, IndexError):
        count = -1
    if len(items) != count:
        raise _cut_short("state", text)
    return states


# The fields of an ``entries`` row after the provider id (see _entries).
ENTRY_ID, ENTRY_INVENTORY, ENTRY_TRAIT = 0, slice(1, 7), 7


# fetch's statement reading the entries of the providers ``provider_ids``
# and, in the same round trip, the usage of those of ``USAGE_OF`` (see
# _entries).
ENTRIES_AND_USAGE = "entries and usage"
USAGE_OF = "usage_of"

# fetch's statement reading the entries of whole trees, each distinct row
# once (see _trees_entries): of the trees of ``root_ids``, with their
# usage, or of EVERYONE's, without.
TREES_ENTRIES = "entries of whole trees"

# The fields of a TREES_ENTRIES row past those of an ``entries`` row
# without its provider id: how many providers have that row, and their
# ids as text, ``" "`` between them (None in a usage row).
ENTRY_COUNT, ENTRY_PROVIDERS = 8, 9


# An inventory's fields in ``entries`` rows, after the provider id.
_INVENTORY = (_INV.c.resource_class_id, _INV.c.total, _INV.c.reserved, _INV.c.min_unit,
              _INV.c.max_unit, _INV.c.step_size, _INV.c.allocation_ratio)


def _entries(provider_ids: Any, usage_of: Any | None = None) -> sa.CompoundSelect:
    """What the worker keeps per provider generation (``placement.kept``
    entries): each inventory, and each trait, of ``provider_ids`` (a list
    parameter), in one query, as rows of (provider id, class or trait id,
    total, reserved, min_unit, max_unit, step_size, allocation_ratio, trait
    name): an inventory's row has no trait name, a trait's nothing else.
    One round trip, not one for each kind, for every search after a
    provider changed (each claim changes one).  Given ``usage_of``
    (providers that changed since the last search), their usage rows too
    (:func:`_negated_usage`).
    """
    # Bare NULLs: each takes the type of the other branch's column (a CAST
    # of NULL to FLOAT does not exist on MySQL and MariaDB).
    inventories = (
        sa.select(_INV.c.resource_provider_id.label("provider_id"), *_INVENTORY,
                  sa.null().label("trait"))
        .where(_INV.c.resource_provider_id.in_(provider_ids)))
    traits = (
        sa.select(_RP_TRAITS.c.resource_provider_id, _TRAITS.c.id,
                  *[sa.null()] * 6, _TRAITS.c.name)
        .join(_TRAITS, _TRAITS.c.id == _RP_TRAITS.c.trait_id)
        .where(_RP_TRAITS.c.resource_provider_id.in_(provider_ids)))
    # In no order: the worker orders a provider's inventories itself,
    # more cheaply than the database sorts thousands of wide rows.
    if usage_of is None:
        return sa.union_all(inventories, traits)
    return sa.union_all(inventories, traits, _negated_usage(usage_of, 6))


def _trees_entries(providers: Any | None) -> sa.CompoundSelect:
    """The ``entries`` rows (see :func:`_entries`) of the providers of
    ``providers`` (a subquery; None for every provider), each distinct row
    once, without a provider id but with how many providers have it and
    their ids (ENTRY_COUNT, ENTRY_PROVIDERS); given ``providers``, their
    usage rows too (:func:`_negated_usage`, with neither count nor ids).

    A worker's first search reads whole trees: one row per provider and
    inventory or trait is thousands of rows, mostly alike in a fleet of
    like hosts, and writing and taking apart each field of each row was
    most of that read's time (1,000 flat hosts: 5,000 rows in 5.9 ms,
    against 6 rows in 4.0 ms grouped, PostgreSQL).  The worker makes the
    entries of like providers once anyway (:meth:`.loader.Loader.entries`).
    """
    def ids(column: Any) -> tuple[Any, Any]:
        return sa.func.count(), sa.func.aggregate_strings(sa.cast(column, sa.String), " ")

    # Bare NULLs, as in _entries.
    inventories = (sa.select(*_INVENTORY, sa.null().label("trait"),
                             *ids(_INV.c.resource_provider_id))
                   .group_by(*_INVENTORY))
    traits = (sa.select(_TRAITS.c.id, *[sa.null()] * 6, _TRAITS.c.name,
                        *ids(_RP_TRAITS.c.resource_provider_id))
              .join(_TRAITS, _TRAITS.c.id == _RP_TRAITS.c.trait_id)
              .group_by(_TRAITS.c.id, _TRAITS.c.name))
    if providers is None:
        return sa.union_all(inventories, traits)
    return sa.union_all(
        inventories.where(_INV.c.resource_provider_id.in_(providers)),
        traits.where(_RP_TRAITS.c.resource_provider_id.in_(providers)),
        _negated_usage(providers, 7))


def _negated_usage(provider_ids: Any, nulls: int) -> sa.Select[Any]:
    """The rows of :func:`_usage` under the provider's id negated (no id is
    negative), as (-provider id, class id, used) and ``nulls`` NULLs: to
    go in one statement with the rows of entries, one round trip fewer."""
    return (
        sa.select(-_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id,
                  sa.cast(sa.func.sum(_ALLOC.c.used), sa.Integer), *[sa.null()] * nulls)
        .where(_ALLOC.c.resource_provider_id.in_(provider_ids))
        .group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id))


def provider_ids(count: int, text: str) -> list[int]:
    """The provider ids of a TREES_ENTRIES row's text; raises RuntimeError
    unless there are ``count`` of them (a database may cut long texts)."""
    try:
        found = [int(provider_id) for provider_id in text.split(" ")]
    except ValueError:
        found = []
    if len(found) != count:
        raise _cut_short("entries", text)
    return found


def spread_entries(rows: list[tuple[Any, ...]], rows_of: dict[int, list[tuple[Any, ...]]]
                   ) -> list[tuple[Any, ...]]:
    """Of TREES_ENTRIES rows, the usage rows (``(-provider id, class id,
    used)``, as :func:`_entries` gives them), after appending each other
    row, but its count and ids, to the rows of each of its providers that
    ``rows_of`` lists: what reading them one row per provider would have
    given, without a tuple per provider and row."""
    usage = []
    for row in rows:
        text = row[ENTRY_PROVIDERS]
        if text is None:
            usage.append(row[:3])
            continue
        item = row[:ENTRY_COUNT]
        for provider_id in provider_ids(row[ENTRY_COUNT], text):
            mine = rows_of.get(provider_id)
            if mine is not None:
                mine.append(item)
    return usage


def _cut_short(what: str, text: str) -> RuntimeError:
    return RuntimeError(
        "the %s of some providers was read cut short (%d characters); "
        "on MySQL/MariaDB raise max_allowed_packet" % (what, len(text)))


def _usage(provider_ids: Any) -> sa.Select[Any]:
    """``(provider id, class id, used)`` per class allocated from these
    providers: read through the allocations' (provider, class, used)
    index, for the few providers whose usage may have changed."""
    return (
        sa.select(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id,
                  sa.cast(sa.func.sum(_ALLOC.c.used), sa.Integer))
        .where(_ALLOC.c.resource_provider_id.in_(provider_ids))
        .group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id)
    )


def aggregate_uuids(conn: sa.engine.Connection, ids: Sequence[int]
                    ) -> list[tuple[int, str]]:
    """``(id, uuid)`` of these aggregates."""
    found: list[tuple[int, str]] = []
    for chunk in chunks(sorted(ids)):
        found += fetch(conn, "aggregates", {"aggregate_ids": chunk})
    return found


def sharing_neighbour_roots(conn: sa.engine.Connection, sharing_ids: list[int]
                            ) -> list[int]:
    """Roots of trees with a provider in an aggregate of these providers."""
    member = _RP.alias("member")
    mine = _RP_AGGS.alias("mine")
    theirs = _RP_AGGS.alias("theirs")
    return [root for (root,) in conn.execute(
        sa.select(member.c.root_provider_id).distinct()
        .join(theirs, theirs.c.resource_provider_id == member.c.id)
        .join(mine, mine.c.aggregate_id == theirs.c.aggregate_id)
        .where(mine.c.resource_provider_id.in_(sharing_ids)))]


def chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), CHUNK):
        yield list(ids[start:start + CHUNK])


# Compiled SQL text: of the search statements by (dialect, kind, parameter)
# (see _template), of fitting_states' (see _compiled); bounded.
_SQL: dict[tuple[Any, ...], str] = {}

# What a template has in place of its ids: no id is negative, and no
# other number of the statements has this many digits.
_IDS = -7193820564

# Every (kind, parameter) fetch is called with, for prepare.
_TEMPLATES = [("states", "class_ids"), ("states", "root_ids"), ("states", EVERYONE),
              (TREES_ENTRIES, "root_ids"), (TREES_ENTRIES, EVERYONE),
              (ENTRIES_AND_USAGE, "provider_ids"), ("entries", "provider_ids"),
              ("usage", "provider_ids"), ("aggregates", "aggregate_ids")]


def prepare(dialect: sa.engine.Dialect) -> None:
    """Compile the search statements for ``dialect`` now, at a worker's
    start, rather than in its first search (they are compiled from the
    code alone: nothing read from the database is in them)."""
    for kind, by in _TEMPLATES:
        _template(dialect, kind, by)
    # check_names' statements are rendered for the driver when first run
    # (db_api.run_rendered); compiled once here, what SQLAlchemy works out
    # of them on first use (their columns, labels, cache key) is ready then.
    for with_sharing in (False, True):
        _names_statement(with_sharing).compile(dialect=dialect)


def _template(dialect: sa.engine.Dialect, kind: str, by: str) -> str:
    """A search statement as SQL text with ``_IDS`` where the ids of its
    parameter ``by`` go (none for EVERYONE), and ``_USAGE_IDS`` where
    those of USAGE_OF go if it has that parameter, compiled once per
    dialect."""
    def build() -> Any:
        statement = _statement(kind, by)
        if by == EVERYONE:
            return statement
        values = {by: [_IDS]}
        if (kind, by) == (ENTRIES_AND_USAGE, "provider_ids"):
            values[USAGE_OF] = [_USAGE_IDS]
        return statement.params(values)

    sql = _compiled(dialect, (kind, by), build)
    assert (by == EVERYONE) == (str(_IDS) not in sql), (kind, by)
    return sql


def fetch(conn: sa.engine.Connection, kind: str, params: dict[str, list[int]]
          ) -> list[tuple[Any, ...]]:
    """The rows of one of the search statements as plain tuples, taken
    from the driver's cursor: for tens of thousands of rows that is several
    times cheaper than building result rows (errors still go through
    SQLAlchemy and oslo.db).

    The only parameters are integer ids, written into the statement's
    text (:func:`_template`): SQLAlchemy would otherwise make a bound
    parameter of each of thousands of ids (and compile a statement a
    worker has not run yet in the middle of its first search).  The first
    parameter says which providers; ENTRIES_AND_USAGE by ``provider_ids``
    has a second, USAGE_OF.
    """
    by = next(iter(params))
    if conn.dialect.name == "postgresql" and kind in _BY_ARRAY and all(
            0 < len(ids) <= ARRAY_LONGEST for ids in params.values()):
        return db_api.raw_rows(conn, _array_template(conn.dialect, kind),
                               {name: [int(i) for i in ids] for name, ids in params.items()})
    sql = _template(conn.dialect, kind, by)
    for name, ids in params.items():
        if name != EVERYONE:
            # An empty list matches nothing, as SQLAlchemy writes it.
            sql = sql.replace(str(_USAGE_IDS if name == USAGE_OF else _IDS),
                              ", ".join([str(int(i)) for i in ids]) or "NULL")
    return db_api.raw_rows(conn, sql)


# The statements by provider ids that a search runs for the few providers
# that changed since the worker last read them (a claim changes one):
# on PostgreSQL, for up to ARRAY_LONGEST ids, their ids go as array
# parameters (``= ANY(%(provider_ids)s)``) rather than written into the
# text, so that the text repeats and runs prepared (``db/prepared.py``).
# Written in, every text was new, and PostgreSQL planned each of them: in
# the churn workload at limit 1000, 0.64 ms a statement, an eighth of the
# database's time; in a loop 0.35 ms so and 0.17 ms prepared on its
# generic plan (``prepared.use_generic_plans``).  Longer lists stay
# written in: a plan made once for a few ids should not serve thousands.
_BY_ARRAY = {ENTRIES_AND_USAGE: ("provider_ids", USAGE_OF),
             "entries": ("provider_ids",), "usage": ("provider_ids",)}
ARRAY_LONGEST = 64


def _array_template(dialect: sa.engine.Dialect, kind: str) -> str:
    """:func:`_template` of ``kind`` by provider ids, each list a
    psycopg2 parameter of its name compared with ``= ANY``."""
    key = (dialect.name, "by array", kind)
    sql = _SQL.get(key)
    if sql is None:
        sql = _template(dialect, kind, "provider_ids")
        for name in _BY_ARRAY[kind]:
            written = "IN (%d)" % (_USAGE_IDS if name == USAGE_OF else _IDS)
            assert written in sql, (kind, name)
            sql = sql.replace(written, "= ANY(%%(%s)s)" % name)
        _remember(key, sql)
    return sql


def warm(conn: sa.engine.Connection) -> Names:
    """Run the search's statements once over no providers, on a worker's
    connection as it starts: the first search on a PostgreSQL connection
    otherwise pays for what the server loads about the tables, indexes
    and functions they use (about 1.5 ms of a first answer for 1,000
    flat hosts).  Reads nothing but the class names, which it returns,
    and keeps nothing."""
    names = check_names(conn, [])
    for kind, by in _TEMPLATES:
        if by != EVERYONE:
            nothing: dict[str, list[int]] = {by: []}
            if kind == ENTRIES_AND_USAGE:
                nothing[USAGE_OF] = []
            fetch(conn, kind, nothing)
    return names


def provider_count(conn: sa.engine.Connection) -> int:
    """How many providers the database holds."""
    return conn.execute(sa.select(sa.func.count()).select_from(_RP)).scalar_one()


def _remember(key: tuple[Any, ...], sql: str) -> None:
    if len(_SQL) > 512:
        _SQL.clear()
    _SQL[key] = sql


def fitting_states(conn: sa.engine.Connection,
                   amounts: Sequence[tuple[int, int]], count: int,
                   after: int | None = None) -> list[tuple[Any, ...]]:
    """The states (as ``states`` rows, see :func:`_states`) of the first
    ``count`` trees (after root ``after``, when given) where each
    requested (class id, amount) fits on some provider, in root order:
    which trees, and what they are now, in one round trip.  Only for a
    search no sharing provider can take part in (:func:`check_names`
    tells).

    Without sharing providers every allocation of a candidate comes from
    its own tree, so a tree failing this test has no candidate: full
    compute nodes are skipped by the database instead of being loaded.
    A page at a time, because the database walks the trees in root order
    and stops at the ``count``-th that fits: with a small limit most
    searches need one page, and summing the usage of every inventory of
    every tree was most of what this query cost.
    """
    pairs = tuple(sorted(set(amounts)))
    together = conn.dialect.name == "postgresql"
    sql = _compiled(conn.dialect, ("fitting", together, after is None, *pairs),
                    lambda: _fitting(pairs, after is None, together))
    sql = sql.replace(str(_PAGE), str(int(count)))
    if after is not None:
        sql = sql.replace(str(_IDS), str(int(after)))
    rows = db_api.raw_rows(conn, sql)
    if together:
        return rows
    # Elsewhere the page first, then its states: MariaDB ran the page
    # inside the states statement slower than the two apart (4.6 ms
    # against 1.8 + 1.3 in the claims workload).
    return fetch(conn, "states", {"root_ids": [row[0] for row in rows]})


def _compiled(dialect: sa.engine.Dialect, key: tuple[Any, ...],
              build: Callable[[], Any]) -> str:
    """``build``'s statement as SQL text with its parameters written in,
    compiled once per dialect and ``key``: a scheduler repeats the same
    few flavors, and building and compiling these statements costs more
    than running them on a small cloud."""
    sql = _SQL.get((dialect.name, *key))
    if sql is None:
        sql = str(build().compile(
            dialect=dialect,
            compile_kwargs={"literal_binds": True, "render_postcompile": True}))
        _remember((dialect.name, *key), sql)
    return sql


# What fitting_states' statements have in place of the number of roots
# asked for, and ENTRIES_AND_USAGE by provider ids in place of those of
# USAGE_OF (see _IDS).
_PAGE = -7193820565
_USAGE_IDS = -7193820566


def _fitting(pairs: tuple[tuple[int, int], ...], first_page: bool, with_states: bool
             ) -> Any:
    """The root ids of the trees where ``pairs`` fit, the first _PAGE of
    them in order, after root _IDS unless this is the ``first_page``; or,
    ``with_states`` (PostgreSQL), the states of those trees.

    There the page is a materialised common table expression, computed
    once: PostgreSQL estimates it at one row whatever it holds, and might
    otherwise run it again for every provider it joins it to."""
    roots = capacity.trees_fitting(pairs)
    root = roots.selected_columns[0]
    if not first_page:
        roots = roots.where(root > _IDS)
    page = roots.order_by(root).limit(_PAGE)
    if not with_states:
        return page
    once = page.cte("page").prefix_with("MATERIALIZED", dialect="postgresql")
    return _states(sa.select(once.c[0]))
