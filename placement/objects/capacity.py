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

:func:`read_figures` reads everything the operator's views show in four
grouped queries and a few plain ones (see :class:`Figures`); what is derived from them (free
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


def _usage_per_inventory() -> sa.Subquery:
    """What is allocated per (provider, class): one grouped pass over the
    allocations."""
    return (
        sa.select(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id,
                  # An integer on every backend (MySQL sums to DECIMAL).
                  sa.cast(sa.func.sum(_ALLOC.c.used), sa.Integer).label("used"))
        .group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id)
        .subquery("usage")
    )


def _members() -> sa.Subquery:
    """Distinct (provider id, aggregate id): members themselves, and every
    provider of a tree whose root is a member."""
    direct = sa.select(_RP.c.id.label("provider_id"), _RPA.c.aggregate_id).join(
        _RPA, _RPA.c.resource_provider_id == _RP.c.id)
    by_root = sa.select(_RP.c.id, _RPA.c.aggregate_id).join(
        _RPA, _RPA.c.resource_provider_id == _RP.c.root_provider_id)
    return sa.union(direct, by_root).subquery("members")


def _inventory_rows(usage: sa.Subquery) -> sa.Select[Any]:
    root = _RP.alias("root")
    return (
        sa.select(_RP.c.id, _RP.c.name, _RP.c.uuid, _RP.c.root_provider_id,
                  root.c.name, _RP.c.parent_provider_id, _RC.c.name, _INV.c.total,
                  _INV.c.reserved, _INV.c.allocation_ratio, _INV.c.min_unit,
                  _INV.c.max_unit, _INV.c.step_size,
                  sa.func.coalesce(usage.c.used, 0))
        .select_from(_INV)
        .join(_RP, _RP.c.id == _INV.c.resource_provider_id)
        .join(root, root.c.id == _RP.c.root_provider_id)
        .join(_RC, _RC.c.id == _INV.c.resource_class_id)
        .outerjoin(usage, sa.and_(
            usage.c.resource_provider_id == _INV.c.resource_provider_id,
            usage.c.resource_class_id == _INV.c.resource_class_id))
        .order_by(_RP.c.id, _RC.c.name)
    )


def _class_sums(usage: sa.Subquery, *group: Any) -> sa.Select[Any]:
    """Per class (and whatever else ``group`` names, selected first): the
    sums of :class:`ClassTotals`."""
    return (
        sa.select(*group, _RC.c.name,
                  sa.func.sum(_INV.c.total), sa.func.sum(_INV.c.reserved),
                  sa.func.sum((_INV.c.total - _INV.c.reserved)
                              * _INV.c.allocation_ratio),
                  sa.func.sum(sa.func.coalesce(usage.c.used, 0)),
                  sa.func.count(sa.distinct(_INV.c.resource_provider_id)))
        .select_from(_INV)
        .join(_RC, _RC.c.id == _INV.c.resource_class_id)
        .outerjoin(usage, sa.and_(
            usage.c.resource_provider_id == _INV.c.resource_provider_id,
            usage.c.resource_class_id == _INV.c.resource_class_id))
        .group_by(*group, _RC.c.name)
        .order_by(*group, _RC.c.name)
    )


def _totals(row: Any) -> ClassTotals:
    name, total, reserved, capacity, used, providers = row
    return ClassTotals(name, int(total), int(reserved), float(capacity),
                       int(used), int(providers))


def read_figures(ctx: RequestContext, with_traits: bool = False) -> Figures:
    """The capacity figures of the whole cloud, in one transaction (so
    they agree with each other); the providers' traits only when asked."""
    usage = _usage_per_inventory()
    members = _members()
    with ctx.db.reader() as conn:
        inventories = tuple(InventoryUse(*row) for row in conn.execute(
            _inventory_rows(usage)))
        cloud = tuple(_totals(row) for row in conn.execute(_class_sums(usage)))
        aggregates: dict[str, list[ClassTotals]] = {}
        in_aggregate = (_class_sums(usage, _AGG.c.uuid)
                        .join(members, members.c.provider_id
                              == _INV.c.resource_provider_id)
                        .join(_AGG, _AGG.c.id == members.c.aggregate_id))
        for row in conn.execute(in_aggregate):
            aggregates.setdefault(row[0], []).append(_totals(row[1:]))
        memberships: dict[int, set[str]] = {}
        for provider_id, uuid in conn.execute(
                sa.select(members.c.provider_id, _AGG.c.uuid)
                .join(_AGG, _AGG.c.id == members.c.aggregate_id)):
            memberships.setdefault(provider_id, set()).add(uuid)
        traits: dict[int, set[str]] = {}
        if with_traits:
            for provider_id, name in conn.execute(
                    sa.select(_RPT.c.resource_provider_id, _TRAITS.c.name)
                    .join(_TRAITS, _TRAITS.c.id == _RPT.c.trait_id)):
                traits.setdefault(provider_id, set()).add(name)
        providers = conn.execute(sa.select(sa.func.count()).select_from(_RP)
                                 ).scalar_one()
    return Figures(
        inventories, cloud,
        {uuid: tuple(rows) for uuid, rows in aggregates.items()},
        {pid: frozenset(uuids) for pid, uuids in memberships.items()},
        {pid: frozenset(names) for pid, names in traits.items()},
        int(providers))


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
