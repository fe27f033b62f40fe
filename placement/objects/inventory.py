"""Inventories: how much of each resource class a provider has.

What lives here: reading a provider's inventories, writing them (one class
or all at once), and the capacity figures allocation writers check.  Every
write first increments the provider's generation with a compare-and-swap,
an UPDATE that also locks the provider row (as ``db.api.lock_providers``
does for allocation writers), so it is serialised with concurrent
allocation writers and with other inventory writers.

The ``*_in`` functions take a caller's open transaction: the reshaper
replaces the inventories of several providers and moves allocations in one
transaction with them.  The functions taking ``ctx`` wrap one of them in a
transaction of their own.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
from typing import Any, Iterable, Mapping, Sequence, TYPE_CHECKING

import sqlalchemy as sa

from placement import exceptions
from placement.db import api as db_api
from placement.db import tables
from placement.objects import capacity as capacity_obj
from placement.objects import resource_class as rc_obj
from placement.objects import resource_provider as rp_obj

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)

_INV = tables.inventories
_ALLOC = tables.allocations
# Integers as the database stores them (signed 32 bit).
MAX_INT = 2147483647


@dataclasses.dataclass(frozen=True)
class InventoryFields:
    """One inventory as a client writes it; the defaults are the API's."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> int:
        """What may be allocated in all: ``(total - reserved) * ratio``."""
        return int((self.total - self.reserved) * self.allocation_ratio)


@dataclasses.dataclass(frozen=True)
class Inventory(InventoryFields):
    """A stored inventory of one class on one provider."""

    resource_class: str = ""
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None

    def fields(self) -> InventoryFields:
        return InventoryFields(
            total=self.total, reserved=self.reserved, min_unit=self.min_unit,
            max_unit=self.max_unit, step_size=self.step_size,
            allocation_ratio=self.allocation_ratio)


@dataclasses.dataclass(frozen=True)
class Capacity:
    """Inventory and current usage of one class on one provider."""

    provider_id: int
    resource_class_id: int
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int

    @property
    def capacity(self) -> int:
        return int((self.total - self.reserved) * self.allocation_ratio)

    @property
    def free(self) -> int:
        return self.capacity - self.used


_FIELD_NAMES = ("total", "reserved", "min_unit", "max_unit", "step_size",
                "allocation_ratio")


def _values(fields: InventoryFields) -> dict[str, Any]:
    return {name: getattr(fields, name) for name in _FIELD_NAMES}


# Reading.


def get_all(ctx: RequestContext, provider: rp_obj.ResourceProvider) -> dict[str, Inventory]:
    """``{class name: Inventory}`` of a provider."""
    with ctx.db.reader() as conn:
        return get_all_in(conn, provider.id)


@functools.cache
def _by_provider_uuid() -> sa.Select[Any]:
    """A provider's generation and its inventories with their class names
    (one row without inventory when it has none), by the parameter
    ``uuid``; built once."""
    rc = tables.resource_classes
    rp = tables.resource_providers
    return (
        sa.select(rp.c.generation, rc.c.name.label("resource_class"),
                  *[_INV.c[name] for name in _FIELD_NAMES],
                  _INV.c.created_at, _INV.c.updated_at)
        .select_from(rp.outerjoin(_INV, _INV.c.resource_provider_id == rp.c.id)
                     .outerjoin(rc, rc.c.id == _INV.c.resource_class_id))
        .where(rp.c.uuid == sa.bindparam("uuid"))
        .order_by(_INV.c.resource_class_id)
    )


def get_all_by_provider_uuid(ctx: RequestContext, uuid: str
                             ) -> tuple[int, dict[str, Inventory]]:
    """The provider's generation and ``{class name: Inventory}``, read in
    one statement (what a compute node's heartbeat asks of every provider
    of its tree).  ProviderNotFound when there is no such provider."""
    with ctx.db.reader() as conn:
        rows = conn.execute(_by_provider_uuid(), {"uuid": uuid}).all()
    if not rows:
        raise exceptions.ProviderNotFound(uuid=uuid)
    return rows[0].generation, {
        row.resource_class: Inventory(
            resource_class=row.resource_class,
            created_at=row.created_at, updated_at=row.updated_at,
            **{name: getattr(row, name) for name in _FIELD_NAMES})
        for row in rows if row.resource_class is not None
    }


@functools.cache
def _of_provider() -> sa.Select[Any]:
    """A provider's inventory rows, by the parameter ``provider_id``; built once."""
    return (sa.select(_INV).where(_INV.c.resource_provider_id == sa.bindparam("provider_id"))
            .order_by(_INV.c.resource_class_id))


def get_all_in(conn: sa.engine.Connection, provider_id: int
               ) -> dict[str, Inventory]:
    rows = conn.execute(_of_provider(), {"provider_id": provider_id}).all()
    names = rc_obj.names_by_id(conn, [row.resource_class_id for row in rows])
    return {
        names[row.resource_class_id]: Inventory(
            resource_class=names[row.resource_class_id],
            created_at=row.created_at, updated_at=row.updated_at,
            **{name: getattr(row, name) for name in _FIELD_NAMES})
        for row in rows
    }


@functools.cache
def _capacities_statement(by_class: bool) -> sa.Select[Any]:
    """Inventories and usage of the providers in the expanding parameter
    ``provider_ids`` (and of the classes in ``class_ids`` when
    ``by_class``); built once.

    Usage is summed per inventory row through the allocations' (provider,
    class, used) index (:func:`capacity_obj.usage_of_inventory`), not joined
    from a grouped subquery: MariaDB 10.11 ran that subquery as a lateral
    derived table over the allocations of each class, every provider's,
    and this statement, run by every write of allocations, took two
    thirds of its time in the churn workload."""
    query = (
        sa.select(_INV, capacity_obj.usage_of_inventory().label("used"))
        .where(_INV.c.resource_provider_id.in_(
            sa.bindparam("provider_ids", expanding=True)))
    )
    if by_class:
        query = query.where(_INV.c.resource_class_id.in_(
            sa.bindparam("class_ids", expanding=True)))
    return query


def capacities_statement() -> sa.Select[Any]:
    """The statement :func:`capacities_in` runs for classes, with the
    expanding parameters ``provider_ids`` and ``class_ids``: for a writer
    that reads it along with another statement (and makes its answer with
    :func:`capacities_of`)."""
    return _capacities_statement(True)


def capacities_in(conn: sa.engine.Connection, provider_ids: Iterable[int],
                  class_ids: Iterable[int] | None = None
                  ) -> dict[tuple[int, int], Capacity]:
    """``{(provider id, class id): Capacity}`` with usage summed now.

    Allocation writers call this after ``lock_providers`` on the same
    providers, so the figures cannot change before they commit.
    """
    providers = sorted(set(provider_ids))
    if not providers:
        return {}
    parameters: dict[str, Any] = {"provider_ids": providers}
    if class_ids is not None:
        parameters["class_ids"] = sorted(set(class_ids))
    return capacities_of(db_api.run_rendered(
        conn, _capacities_statement(class_ids is not None), parameters).all())


def capacities_of(rows: Iterable[Sequence[Any]]) -> dict[tuple[int, int], Capacity]:
    """:func:`capacities_in`'s answer from rows of its statement, by
    position."""
    at = _capacity_columns()
    provider, class_, used = (at["resource_provider_id"], at["resource_class_id"],
                              at["used"])
    fields = [(name, at[name]) for name in _FIELD_NAMES]
    return {
        (row[provider], row[class_]): Capacity(
            provider_id=row[provider], resource_class_id=row[class_],
            used=int(row[used]), **{name: row[index] for name, index in fields})
        for row in rows
    }


@functools.cache
def _capacity_columns() -> dict[str, int]:
    """The position of each column of the capacities statement's rows
    (the same with and without classes)."""
    return {str(column.key): index for index, column in
            enumerate(_capacities_statement(True).selected_columns)}


# Writing inside a caller's transaction.


def _classes_in_use(conn: sa.engine.Connection, provider_id: int,
                    class_ids: Iterable[int]) -> list[int]:
    rows = conn.execute(
        sa.select(_ALLOC.c.resource_class_id).distinct()
        .where(_ALLOC.c.resource_provider_id == provider_id,
               _ALLOC.c.resource_class_id.in_(sorted(set(class_ids))))
        .order_by(_ALLOC.c.resource_class_id)).all()
    return [row[0] for row in rows]


def _refuse_if_in_use(conn: sa.engine.Connection,
                      provider: rp_obj.ResourceProvider,
                      class_ids: Iterable[int]) -> None:
    in_use = _classes_in_use(conn, provider.id, class_ids)
    if in_use:
        names = rc_obj.names_by_id(conn, in_use)
        raise exceptions.InventoryInUse(
            resource_classes=", ".join(names[id_] for id_ in in_use),
            resource_provider=provider.uuid)


def _warn_over_capacity(provider: rp_obj.ResourceProvider,
                        stored: Mapping[int, Capacity],
                        written: Mapping[int, InventoryFields]) -> None:
    # Shrinking an inventory below what is allocated is allowed (the
    # operator may be draining the provider); it is only worth a warning.
    # ``stored`` was read under the provider's lock, so its usage is what
    # the write leaves (allocation writers of the provider wait for it).
    for class_id, fields in written.items():
        before = stored.get(class_id)
        if before is not None and before.used > fields.capacity:
            LOG.warning("Resource provider %s is now over-capacity for "
                        "resource class id %s", provider.uuid, class_id)


def _warn_over_capacity_now(conn: sa.engine.Connection,
                            provider: rp_obj.ResourceProvider,
                            class_ids: Iterable[int]) -> None:
    """:func:`_warn_over_capacity` for inventories already written."""
    for capacity in capacities_in(conn, [provider.id], class_ids).values():
        if capacity.used > capacity.capacity:
            LOG.warning("Resource provider %s is now over-capacity for "
                        "resource class id %s", provider.uuid,
                        capacity.resource_class_id)


def _lock_and_bump(conn: sa.engine.Connection,
                   provider: rp_obj.ResourceProvider,
                   expected_generation: int | None) -> int:
    """Lock the provider and increment its generation, if still the one
    expected.  The compare-and-swap is an UPDATE, which locks the row as
    ``db.api.lock_providers`` would (one row: no order to keep), so one
    statement does both."""
    return rp_obj.bump_generation(conn, provider, expected_generation)


# The statements of replace_in, built once: a write runs them with its values.
_UPDATE_ROWS = (
    _INV.update()
    .where(_INV.c.resource_provider_id == sa.bindparam("provider_id"),
           _INV.c.resource_class_id == sa.bindparam("class_id"))
    .values(updated_at=sa.bindparam("now"),
            **{name: sa.bindparam(name) for name in _FIELD_NAMES}))
_INSERT_ROWS = _INV.insert()


def replace_in(conn: sa.engine.Connection, provider: rp_obj.ResourceProvider,
               inventories: Mapping[str, InventoryFields], *,
               expected_generation: int | None = None,
               check_in_use: bool = True) -> int:
    """Make ``inventories`` the provider's whole inventory.

    Classes not named are removed; with ``check_in_use`` a removed class
    that has allocations raises InventoryInUse (the reshaper turns the
    check off because it moves those allocations in the same transaction).
    Raises ProviderConcurrentUpdate when the generation is not
    ``expected_generation`` (default: the one ``provider`` was read with)
    and ResourceClassNotFound (for the first unknown class, in the order
    given).  Returns the new generation.
    """
    generation = _lock_and_bump(conn, provider, expected_generation)
    known = rc_obj.known_ids(conn, inventories)
    for name in inventories:
        if name not in known:
            raise exceptions.ResourceClassNotFound(name=name)
    written = {known[name]: fields for name, fields in inventories.items()}
    # What the provider has now, with usage: which rows to update, insert
    # or remove, and whether the new ones leave it over capacity.
    stored = {class_id: capacity for (_rp, class_id), capacity
              in capacities_in(conn, [provider.id]).items()}
    removed = set(stored) - set(written)
    if removed:
        if check_in_use:
            _refuse_if_in_use(conn, provider, removed)
        conn.execute(_INV.delete().where(
            _INV.c.resource_provider_id == provider.id,
            _INV.c.resource_class_id.in_(sorted(removed))))
    now = rp_obj.utcnow()
    updates = [{"provider_id": provider.id, "class_id": class_id, "now": now,
                **_values(fields)}
               for class_id, fields in written.items() if class_id in stored]
    inserts = [{"resource_provider_id": provider.id, "resource_class_id": class_id,
                "created_at": now, **_values(fields)}
               for class_id, fields in written.items() if class_id not in stored]
    if updates:
        conn.execute(_UPDATE_ROWS, updates)
    if inserts:
        conn.execute(_INSERT_ROWS, inserts)
    _warn_over_capacity(provider, stored, written)
    return generation


def add_in(conn: sa.engine.Connection, provider: rp_obj.ResourceProvider,
           resource_class: str, fields: InventoryFields, *,
           expected_generation: int | None = None) -> int:
    """Add the inventory of a class the provider has none of yet.

    Raises InventoryExists, ResourceClassNotFound, ProviderConcurrentUpdate.
    """
    generation = _lock_and_bump(conn, provider, expected_generation)
    class_id = rc_obj.ids_by_name(conn, [resource_class])[resource_class]
    if conn.execute(sa.select(_INV.c.id).where(
            _INV.c.resource_provider_id == provider.id,
            _INV.c.resource_class_id == class_id)).first():
        raise exceptions.InventoryExists(resource_class=resource_class,
                                         resource_provider=provider.uuid)
    conn.execute(_INV.insert().values(
        resource_provider_id=provider.id, resource_class_id=class_id,
        created_at=rp_obj.utcnow(), **_values(fields)))
    return generation


def update_in(conn: sa.engine.Connection, provider: rp_obj.ResourceProvider,
              resource_class: str, fields: InventoryFields, *,
              expected_generation: int | None = None) -> int:
    """Change the inventory of a class the provider already has.

    Raises InventoryNotFound, ResourceClassNotFound, ProviderConcurrentUpdate.
    """
    generation = _lock_and_bump(conn, provider, expected_generation)
    class_id = rc_obj.ids_by_name(conn, [resource_class])[resource_class]
    result = conn.execute(_INV.update().where(
        _INV.c.resource_provider_id == provider.id,
        _INV.c.resource_class_id == class_id,
    ).values(updated_at=rp_obj.utcnow(), **_values(fields)))
    if result.rowcount != 1:
        raise exceptions.InventoryNotFound(
            "No inventory of class %s found." % resource_class,
            resource_class=resource_class, provider=provider.uuid)
    _warn_over_capacity_now(conn, provider, [class_id])
    return generation


def delete_in(conn: sa.engine.Connection, provider: rp_obj.ResourceProvider,
              resource_class: str, *,
              expected_generation: int | None = None) -> int:
    """Remove the inventory of one class.

    Raises InventoryNotFound, ResourceClassNotFound, InventoryInUse,
    ProviderConcurrentUpdate.
    """
    generation = _lock_and_bump(conn, provider, expected_generation)
    class_id = rc_obj.ids_by_name(conn, [resource_class])[resource_class]
    _refuse_if_in_use(conn, provider, [class_id])
    result = conn.execute(_INV.delete().where(
        _INV.c.resource_provider_id == provider.id,
        _INV.c.resource_class_id == class_id))
    if result.rowcount != 1:
        raise exceptions.InventoryNotFound(
            "No inventory of class %s found for delete" % resource_class,
            resource_class=resource_class, provider=provider.uuid)
    return generation


# The same, each in a transaction of its own.


@db_api.retry_on_conflict
def replace(ctx: RequestContext, provider: rp_obj.ResourceProvider,
            inventories: Mapping[str, InventoryFields],
            expected_generation: int | None = None) -> int:
    with ctx.db.writer() as conn:
        return replace_in(conn, provider, inventories,
                          expected_generation=expected_generation)


@db_api.retry_on_conflict
def add(ctx: RequestContext, provider: rp_obj.ResourceProvider, resource_class: str,
        fields: InventoryFields) -> int:
    with ctx.db.writer() as conn:
        return add_in(conn, provider, resource_class, fields)


@db_api.retry_on_conflict
def update(ctx: RequestContext, provider: rp_obj.ResourceProvider, resource_class: str,
           fields: InventoryFields, expected_generation: int | None = None
           ) -> int:
    with ctx.db.writer() as conn:
        return update_in(conn, provider, resource_class, fields,
                         expected_generation=expected_generation)


@db_api.retry_on_conflict
def delete(ctx: RequestContext, provider: rp_obj.ResourceProvider, resource_class: str
           ) -> int:
    with ctx.db.writer() as conn:
        return delete_in(conn, provider, resource_class)
