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

:func:`read_figures` reads everything the operator's views show in a few
queries (see :class:`Figures`); what is derived from them (free
room, how many more of a flavor fit) is worked out by
:mod:`placement.metrics.capacity`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple

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


def _fits(row: Any, class_id: int, amount: int) -> sa.ColumnElement[bool]:
    """The inventory ``row`` is of this class and may take ``amount`` more
    (see _RATIO_SLACK)."""
    return sa.and_(
        row.resource_class_id == class_id,
        row.min_unit <= amount,
        row.max_unit >= amount,
        sa.literal(amount) % row.step_size == 0,
        row.used + amount
        <= (row.total - row.reserved) * row.allocation_ratio * _RATIO_SLACK,
    )


def trees_fitting(amounts: Iterable[tuple[int, int]]) -> sa.Select[Any]:
    """Root ids of the trees where each (class id, amount) fits on some
    provider: every tree a candidate without sharing providers can use.
    One pass over the inventory rows of the classes asked for, usage
    computed once per row, one flag per pair."""
    pairs = sorted(set(amounts))
    rows = (
        sa.select(_INV, usage_of_inventory().label("used"))
        .where(_INV.c.resource_class_id.in_(sorted({c for c, _ in pairs})))
        .subquery("inventory_with_usage")
    )
    flags = [sa.func.max(sa.case((_fits(rows.c, class_id, amount), 1),
                                 else_=0)) == 1
             for class_id, amount in pairs]
    return (
        sa.select(_RP.c.root_provider_id)
        .join(rows, rows.c.resource_provider_id == _RP.c.id)
        .group_by(_RP.c.root_provider_id)
        .having(sa.and_(*flags))
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


@dataclasses.dataclass(frozen=True)
class Figures:
    """Everything the operator's views start from, read at one moment.

    ``inventories`` in provider id, then class name order; ``cloud`` and
    each aggregate's totals in class name order.  A provider is counted in
    an aggregate when it, or the root of its tree, is a member (as the
    candidate search has it: a tree provider is a member of its root's
    aggregates), and only once when both are.
    """

    inventories: tuple[InventoryUse, ...]
    cloud: tuple[ClassTotals, ...]
    aggregates: dict[str, tuple[ClassTotals, ...]]
    memberships: dict[int, frozenset[str]]
    traits: dict[int, frozenset[str]]
    providers: int


def _usage_per_inventory() -> sa.Select[Any]:
    """What is allocated per (provider, class): one grouped pass over the
    allocations index (provider, class, used)."""
    return (
        sa.select(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id,
                  # An integer on every backend (MySQL sums to DECIMAL).
                  sa.cast(sa.func.sum(_ALLOC.c.used), sa.Integer))
        .group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id)
    )


def _members() -> sa.Subquery:
    """Distinct (provider id, aggregate id): members themselves, and every
    provider of a tree whose root is a member."""
    direct = sa.select(_RP.c.id.label("provider_id"), _RPA.c.aggregate_id).join(
        _RPA, _RPA.c.resource_provider_id == _RP.c.id)
    by_root = sa.select(_RP.c.id, _RPA.c.aggregate_id).join(
        _RPA, _RPA.c.resource_provider_id == _RP.c.root_provider_id)
    return sa.union(direct, by_root).subquery("members")


def _inventory_rows() -> sa.Select[Any]:
    return sa.select(_INV.c.resource_provider_id, _INV.c.resource_class_id,
                     _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio,
                     _INV.c.min_unit, _INV.c.max_unit, _INV.c.step_size)


def _providers() -> sa.Select[Any]:
    return sa.select(_RP.c.id, _RP.c.name, _RP.c.uuid, _RP.c.root_provider_id,
                     _RP.c.parent_provider_id).order_by(_RP.c.id)


class _Sums:
    """Running sums of one class, in one scope (the cloud, an aggregate)."""

    __slots__ = ("total", "reserved", "capacity", "used", "providers")

    def __init__(self) -> None:
        self.total = self.reserved = self.used = self.providers = 0
        self.capacity = 0.0

    def add(self, inventory: InventoryUse) -> None:
        self.total += inventory.total
        self.reserved += inventory.reserved
        self.capacity += inventory.capacity
        self.used += inventory.used
        self.providers += 1

    def totals(self, resource_class: str) -> ClassTotals:
        return ClassTotals(resource_class, self.total, self.reserved,
                           self.capacity, self.used, self.providers)


def read_figures(ctx: RequestContext, with_traits: bool = False) -> Figures:
    """The capacity figures of the whole cloud, read in one transaction (so
    they agree with each other); the providers' traits only when asked.

    The database sums the allocations per inventory (grouped, through the
    allocations index) and works out aggregate membership; the sums per
    class, of the cloud and of each aggregate, are then added up in one
    pass over the inventory rows, which the per-provider gauges need
    anyway: grouping them again in SQL would read every row twice more.
    """
    with ctx.db.reader() as conn:
        providers = {row[0]: row for row in conn.execute(_providers()).tuples()}
        class_names = {cid: name for cid, name in conn.execute(
            sa.select(_RC.c.id, _RC.c.name)).tuples()}
        used = {(pid, cid): amount for pid, cid, amount
                in conn.execute(_usage_per_inventory()).tuples()}
        inventory_rows = conn.execute(_inventory_rows()).all()
        members = _members()
        memberships: dict[int, set[str]] = {}
        for provider_id, uuid in conn.execute(
                sa.select(members.c.provider_id, _AGG.c.uuid)
                .join(_AGG, _AGG.c.id == members.c.aggregate_id)).tuples():
            memberships.setdefault(provider_id, set()).add(uuid)
        traits: dict[int, set[str]] = {}
        if with_traits:
            for provider_id, name in conn.execute(
                    sa.select(_RPT.c.resource_provider_id, _TRAITS.c.name)
                    .join(_TRAITS, _TRAITS.c.id == _RPT.c.trait_id)).tuples():
                traits.setdefault(provider_id, set()).add(name)
    inventories = []
    for pid, cid, total, reserved, ratio, min_unit, max_unit, step in inventory_rows:
        _id, name, uuid, root_id, parent_id = providers[pid]
        inventories.append(InventoryUse(
            pid, name, uuid, root_id, providers[root_id][1], parent_id,
            class_names[cid], total, reserved, ratio, min_unit, max_unit, step,
            used.get((pid, cid), 0)))
    inventories.sort(key=lambda i: (i.provider_id, i.resource_class))
    frozen = {pid: frozenset(uuids) for pid, uuids in memberships.items()}
    cloud: dict[str, _Sums] = {}
    in_aggregates: dict[str, dict[str, _Sums]] = {}
    for inventory in inventories:
        rc = inventory.resource_class
        sums = cloud.get(rc)
        if sums is None:
            sums = cloud[rc] = _Sums()
        sums.add(inventory)
        for aggregate in frozen.get(inventory.provider_id, ()):
            by_class = in_aggregates.setdefault(aggregate, {})
            sums = by_class.get(rc)
            if sums is None:
                sums = by_class[rc] = _Sums()
            sums.add(inventory)
    return Figures(
        tuple(inventories),
        tuple(sums.totals(rc) for rc, sums in sorted(cloud.items())),
        {uuid: tuple(sums.totals(rc) for rc, sums in sorted(by_class.items()))
         for uuid, by_class in sorted(in_aggregates.items())},
        frozen,
        {pid: frozenset(names) for pid, names in traits.items()},
        len(providers))


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
