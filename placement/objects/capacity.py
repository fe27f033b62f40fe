"""Free capacity in SQL, for narrowing a bounded candidate search.

An inventory can take ``amount`` more units of its class when the amount
lies within ``min_unit``..``max_unit``, is a multiple of ``step_size`` and
``used + amount <= (total - reserved) * allocation_ratio``.

With a ``limit``, the allocation candidate search asks the database for
the trees where each amount fits on some provider, and reads only those,
a batch at a time.  Everywhere else the same rule is applied in Python
(:meth:`placement.objects.candidates.trees.Inventory.fits`): by the
candidate search on the trees it reads, where it also has to combine
amounts, and by ``GET /resource_providers?resources=`` on each provider.
"""

from __future__ import annotations

from typing import Any, Iterable

import sqlalchemy as sa

from placement.db import tables

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations


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
