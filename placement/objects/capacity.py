"""Free capacity in SQL: for narrowing a bounded candidate search, and
the figures of the operator's views (``GET /metrics``, ``GET /capacity``).

An inventory can take ``amount`` more units of its class when the amount
lies within ``min_unit``..``max_unit``, is a multiple of ``step_size`` and
``used + amount <= (total - reserved) * allocation_ratio``.

With a ``limit``, the allocation candidate search asks the database for
the trees where each amount fits on some provider, and reads only those,
a batch at a time.  Everywhere else the same rule is applied in Python
(:meth:`placement.objects.candidates.trees.Inventory.fits`): by the
candidate search on the trees it reads, where it also has to combine
amounts, and by ``GET /resource_providers?resources=`` on each provider.

:func:`read_capacity` reads what the operator's views start from: every
provider's state, and the inventories, usage and traits of the providers
a worker must read again (:mod:`placement.metrics.kept_figures` keeps the
rest, and works out the figures).
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from typing import TYPE_CHECKING, Any, Callable, Collection, Final, Iterable, NamedTuple

import sqlalchemy as sa

from placement import exceptions
from placement.db import tables

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RC = tables.resource_classes
_RPA = tables.resource_provider_aggregates
_AGG = tables.placement_aggregates
_RPT = tables.resource_provider_traits
_TRAITS = tables.traits

if TYPE_CHECKING:
    from placement.context import RequestContext


def usage_of_inventory() -> sa.ScalarSelect[Any]:
    """What is allocated from the inventory row of the enclosing query.

    A correlated subquery: the allocations index on (provider, class, used)
    answers it without touching the table.
    """
    return (
        sa.select(sa.cast(sa.func.coalesce(sa.func.sum(_ALLOC.c.used), 0),
                          sa.Integer))
        .where(_ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
               _ALLOC.c.resource_class_id == _INV.c.resource_class_id)
        .correlate(_INV)
        .scalar_subquery()
    )


# MySQL/MariaDB keep allocation_ratio as a single-precision FLOAT and hand
# it to Python as the shortest decimal that rounds to it, so the product
# in SQL can fall a hair short of Python's: 10 * 0.9 is 8.99999976 there,
# 9 in Python.  The pre-selection must keep every tree Python's check
# accepts, so its bound is widened by one part in a million, far more
# than that error; the few trees this lets through in excess are dropped
# by Python's check, which decides.
_RATIO_SLACK = 1.000001


def _fits(class_id: int, amount: int) -> sa.ColumnElement[bool]:
    """The inventory row of the enclosing query is of this class and may
    take ``amount`` more (see _RATIO_SLACK); its usage, the costly part,
    tested last."""
    return sa.and_(
        _INV.c.resource_class_id == class_id,
        _INV.c.min_unit <= amount,
        _INV.c.max_unit >= amount,
        sa.literal(amount) % _INV.c.step_size == 0,
        usage_of_inventory() + amount
        <= (_INV.c.total - _INV.c.reserved) * _INV.c.allocation_ratio * _RATIO_SLACK,
    )


def trees_fitting(amounts: Iterable[tuple[int, int]]) -> sa.Select[Any]:
    """Root ids of the trees where each (class id, amount) fits on some
    provider: every tree a candidate without sharing providers can use.
    Its one column is the root id, also the ``root_provider_id`` of the
    only table it reads from (to order and page by, with its index).

    One test per pair, in turn: a tree failing one is not tested further
    (a full host costs one sum of usage, not one per class), and a test
    stops at the first provider where the amount fits.  Scalar subqueries
    rather than EXISTS: PostgreSQL turns EXISTS into joins, which took it
    longer to plan than the whole query took to run, and which it ran for
    every tree."""
    root = _RP.alias("tree_root")
    tests = [
        sa.select(sa.literal(1))
        .select_from(_RP)
        .join(_INV, _INV.c.resource_provider_id == _RP.c.id)
        .where(_RP.c.root_provider_id == root.c.id, _fits(class_id, amount))
        .correlate(root)
        .limit(1)
        .scalar_subquery()
        .is_not(None)
        for class_id, amount in sorted(set(amounts))
    ]
    return (
        sa.select(root.c.root_provider_id)
        .where(root.c.id == root.c.root_provider_id, *tests)
    )


class InventoryUse(NamedTuple):
    """One inventory of one provider, with what is allocated from it."""

    provider_id: int
    provider_name: str
    provider_uuid: str
    root_id: int
    root_name: str
    parent_id: int | None
    resource_class: str
    total: int
    reserved: int
    allocation_ratio: float
    min_unit: int
    max_unit: int
    step_size: int
    used: int

    @property
    def capacity(self) -> float:
        """What may be allocated in all: (total - reserved) * ratio."""
        return (self.total - self.reserved) * self.allocation_ratio


# An InventoryUse's fields as a plain tuple, in the same order: what a
# worker keeps of each of its 30,000 inventories at 10,000 providers.  The
# cycle collector stops following a plain tuple of plain values at its
# first pass; a named tuple it follows at every full collection, and
# 30,000 kept ones made a worker's first reading start two of them.
InventoryRow = tuple[int, str, str, int, str, int | None, str, int, int, float,
                     int, int, int, int]
ROW_PROVIDER_ID: Final = 0
ROW_ROOT_ID: Final = 3
ROW_ROOT_NAME: Final = 4
ROW_CLASS: Final = 6


class ClassTotals(NamedTuple):
    """Sums over the inventories of one class (of the cloud, or of an
    aggregate's providers); ``providers`` have inventory of the class."""

    resource_class: str
    total: int
    reserved: int
    capacity: float
    used: int
    providers: int

    @property
    def free(self) -> float:
        return self.capacity - self.used


# What every reading reads of every provider, as a plain tuple (10,000 of
# them per scrape: a named tuple each would cost more than the rest):
# (id, generation, name, root id, parent id, number of allocation rows).
# The generation, what may change without it changing (name, place in its
# tree) and the row count (see read_capacity).
ProviderState = tuple[int, int, str, int, int | None, int]
NAME: Final = 2
ROOT: Final = 3
PARENT: Final = 4


# What is read again of a provider whose state changed: its uuid, its
# inventories with their usage, as (class name, total, reserved, ratio,
# min_unit, max_unit, step_size, used) in class name order, and its traits
# in name order (empty unless asked for).  Plain tuples of plain values,
# which the cycle collector stops following at its first pass: it never
# stops following a named tuple (or a frozenset), and 10,000 of them kept
# made it go over the whole process more often.
ProviderDetails = tuple[
    str, tuple[tuple[str, int, int, float, int, int, int, int], ...], tuple[str, ...]]


@dataclasses.dataclass(frozen=True)
class Reading:
    """One reading of the capacity figures: every provider's state, every
    direct aggregate membership ``(provider id, aggregate uuid)`` sorted,
    the class names, and the details of the providers asked for."""

    class_names: dict[int, str]
    providers: dict[int, ProviderState]
    memberships: tuple[tuple[int, str], ...]
    details: dict[int, ProviderDetails]


# Providers whose details are read with one IN list; beyond a quarter of
# all providers every row is read instead.
_CHUNK = 500


def _states(dialect: str) -> sa.Select[Any]:
    if dialect == "sqlite":
        # A count per provider, each one short range of the allocations
        # index (provider, class, used): on SQLite cheaper than grouping
        # the whole index and joining (24 ms against 64 at 10,000
        # providers with 120,000 allocations).
        rows: Any = (sa.select(sa.func.count())
                     .where(_ALLOC.c.resource_provider_id == _RP.c.id)
                     .correlate(_RP).scalar_subquery())
        query = sa.select(_RP)
    else:
        # PostgreSQL makes 10,000 index lookups of that six times slower
        # than one grouped pass joined by hash (237 ms against 40).
        counts = (sa.select(_ALLOC.c.resource_provider_id,
                            sa.func.count().label("allocation_rows"))
                  .group_by(_ALLOC.c.resource_provider_id).subquery("counts"))
        rows = sa.func.coalesce(counts.c.allocation_rows, 0)
        query = sa.select(_RP).outerjoin(
            counts, counts.c.resource_provider_id == _RP.c.id)
    return query.with_only_columns(
        _RP.c.id, _RP.c.generation, _RP.c.name, _RP.c.root_provider_id,
        _RP.c.parent_provider_id, rows)


def read_capacity(ctx: RequestContext,
                  wanted: Callable[[Reading], Collection[int] | None],
                  with_traits: bool = False) -> Reading:
    """Every provider's state, every aggregate membership and the class
    names; then, in the same transaction, the details of the providers
    ``wanted(reading)`` names (all when it answers None).

    The state is what tells a worker which providers it must read again
    (:mod:`placement.metrics.kept_figures`): every write of a provider's
    inventories, traits or aggregates (1.19+), and every write giving it
    allocations, bumps its generation; what changes without a bump is in
    the state itself (name, parent, root) or read whole every time
    (memberships, class names), except allocations taken away from a
    provider by a consumer moving elsewhere, which always lower the count
    of its allocation rows (a consumer moving elsewhere has all its rows on
    the provider deleted, and the provider is bumped whenever rows are
    added).  Details are read after the state, so they are never older
    than it.
    """
    with ctx.db.reader() as conn:
        class_names = dict(_fetched(conn, sa.select(_RC.c.id, _RC.c.name)))
        states = _fetched(conn, _states(conn.dialect.name))
        providers: dict[int, ProviderState] = dict(
            zip([state[0] for state in states], states, strict=True))
        memberships = tuple(sorted(_fetched(
            conn, sa.select(_RPA.c.resource_provider_id, _AGG.c.uuid)
            .join(_AGG, _AGG.c.id == _RPA.c.aggregate_id))))
        reading = Reading(class_names, providers, memberships, {})
        ids = wanted(reading)
        if ids is not None and len(ids) > max(len(providers) // 4, _CHUNK):
            ids = None
        if ids is None:
            _read_details(conn, None, reading, with_traits)
        else:
            ordered = sorted(ids)
            for start in range(0, len(ordered), _CHUNK):
                _read_details(conn, ordered[start:start + _CHUNK], reading, with_traits)
    return reading


def _read_details(conn: sa.engine.Connection, ids: list[int] | None,
                  reading: Reading, with_traits: bool) -> None:
    """The details of providers ``ids`` (every one when None), into
    ``reading.details``."""
    def only(column: Any) -> Any:
        # One expanding parameter, not one bound value per id: the values
        # are handed to the driver as they are, not coerced one by one.
        return sa.true() if ids is None else column.in_(_IDS)

    uuids = _fetched(conn, sa.select(_RP.c.id, _RP.c.uuid).where(only(_RP.c.id)), ids)
    used = {(pid, cid): amount for pid, cid, amount in _fetched(
        conn, _usage_per_inventory().where(only(_ALLOC.c.resource_provider_id)), ids)}
    names = reading.class_names
    # Grouped per provider straight into tuples (no list per provider:
    # 10,000 containers alive through the reading would make the cycle
    # collector go over the whole process).
    rows = _fetched(conn, _inventory_rows().where(only(_INV.c.resource_provider_id)), ids)
    rows.sort(key=_FIRST)
    inventories = {pid: tuple(sorted([(names[cid], *values, used.get((pid, cid), 0))
                                      for _pid, cid, *values in group]))
                   for pid, group in itertools.groupby(rows, _FIRST)}
    traits: dict[int, tuple[str, ...]] = {}
    if with_traits:
        named = _fetched(conn, sa.select(_RPT.c.resource_provider_id, _TRAITS.c.name)
                         .join(_TRAITS, _TRAITS.c.id == _RPT.c.trait_id)
                         .where(only(_RPT.c.resource_provider_id)), ids)
        named.sort()
        traits = {pid: tuple([name for _pid, name in group])
                  for pid, group in itertools.groupby(named, _FIRST)}
    for pid, uuid in uuids:
        reading.details[pid] = (uuid, inventories.get(pid, ()), traits.get(pid, ()))


_FIRST = operator.itemgetter(0)


_IDS: sa.BindParameter[Any] = sa.bindparam("ids", expanding=True)


def _fetched(conn: sa.engine.Connection, query: sa.Select[Any],
             ids: list[int] | None = None) -> list[Any]:
    """Every row of ``query`` as the driver hands it over: plain tuples,
    all at once.  A reading fetches some 80,000 rows at 10,000 providers;
    SQLAlchemy's row objects cost more to make than the rest of the
    reading, and, alive until it is done, made the cycle collector go over
    the whole process several times.  Safe here: every column is an
    integer, a float or a string, which the drivers give as such (no
    result processing to skip)."""
    result = conn.execute(query, {} if ids is None else {"ids": ids})
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


def _usage_per_inventory() -> sa.Select[Any]:
    """What is allocated per (provider, class): one grouped pass over the
    allocations index (provider, class, used)."""
    return (
        sa.select(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id,
                  # An integer on every backend (MySQL sums to DECIMAL).
                  sa.cast(sa.func.sum(_ALLOC.c.used), sa.Integer))
        .group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id)
    )


def _inventory_rows() -> sa.Select[Any]:
    return sa.select(_INV.c.resource_provider_id, _INV.c.resource_class_id,
                     _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio,
                     _INV.c.min_unit, _INV.c.max_unit, _INV.c.step_size)


def check_names(ctx: RequestContext, classes: Iterable[str],
                traits: Iterable[str]) -> None:
    """ResourceClassNotFound for the first of ``classes`` (in their order)
    that does not exist, else TraitNotFound naming every missing trait:
    what the candidate search raises for the same request."""
    classes, traits = list(classes), sorted(set(traits))
    with ctx.db.reader() as conn:
        known_classes = set(conn.execute(
            sa.select(_RC.c.name).where(_RC.c.name.in_(classes or [""]))).scalars())
        known_traits = set(conn.execute(
            sa.select(_TRAITS.c.name).where(_TRAITS.c.name.in_(traits or [""]))
        ).scalars())
    for name in classes:
        if name not in known_classes:
            raise exceptions.ResourceClassNotFound(name=name)
    missing = [name for name in traits if name not in known_traits]
    if missing:
        raise exceptions.TraitNotFound(names=", ".join(missing))


class TreeProvider(NamedTuple):
    id: int
    name: str
    uuid: str
    parent_id: int | None
    root_id: int


# Trees a search by name shows at most.
TREES_SHOWN = 10


def trees_named(ctx: RequestContext, text: str) -> list[TreeProvider]:
    """Every provider of the first TREES_SHOWN trees (by root id) having a
    provider whose name contains ``text`` (case as the database compares
    it), in id order."""
    holder = _RP.alias("holder")
    roots = (sa.select(holder.c.root_provider_id)
             .where(holder.c.name.contains(text, autoescape=True))
             .group_by(holder.c.root_provider_id)
             .order_by(holder.c.root_provider_id)
             .limit(TREES_SHOWN).subquery("roots"))
    query = (sa.select(_RP.c.id, _RP.c.name, _RP.c.uuid, _RP.c.parent_provider_id,
                       _RP.c.root_provider_id)
             .join(roots, roots.c.root_provider_id == _RP.c.root_provider_id)
             .order_by(_RP.c.id))
    with ctx.db.reader() as conn:
        return [TreeProvider(*row) for row in conn.execute(query)]
