"""Resource classes: standard ones (os-resource-classes) and CUSTOM_ ones.

Standard classes are rows like custom ones (``db sync`` inserts them), so
every class has an integer id; what makes a class standard is its name.
Standard classes cannot be renamed or deleted.

Other objects translate between class names (the API's) and ids (the
tables') with :func:`ids_by_name` and :func:`names_by_id`.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
from typing import TYPE_CHECKING, Any, Iterable

import os_resource_classes
import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement import exceptions
from placement.db import api as db_api
from placement.db import tables

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)
_RC = tables.resource_classes


@dataclasses.dataclass(frozen=True)
class ResourceClass:
    id: int
    name: str
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None


def is_custom(name: str) -> bool:
    return name.startswith(os_resource_classes.CUSTOM_NAMESPACE)


def _now() -> datetime.datetime:
    # Naive UTC, as every timestamp column stores it.
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _classes() -> sa.Select[Any]:
    return sa.select(_RC.c.id, _RC.c.name, _RC.c.created_at, _RC.c.updated_at)


def _from_row(row: sa.Row[Any]) -> ResourceClass:
    return ResourceClass(id=row.id, name=row.name, created_at=row.created_at,
                         updated_at=row.updated_at)


def _get_in(conn: sa.engine.Connection, name: str) -> ResourceClass:
    row = conn.execute(_classes().where(_RC.c.name == name)).one_or_none()
    if row is None:
        raise exceptions.ResourceClassNotFound(name=name)
    return _from_row(row)


def get_all(ctx: RequestContext) -> list[ResourceClass]:
    """Every class: the standard ones first, then custom ones, oldest first."""
    custom_last = sa.case((_RC.c.name.startswith(
        os_resource_classes.CUSTOM_NAMESPACE, autoescape=True), 1), else_=0)
    with ctx.db.reader() as conn:
        rows = conn.execute(_classes().order_by(custom_last, _RC.c.id)).all()
    return [_from_row(row) for row in rows]


def get_by_name(ctx: RequestContext, name: str) -> ResourceClass:
    """The class called ``name``; ResourceClassNotFound when there is none."""
    with ctx.db.reader() as conn:
        return _get_in(conn, name)


def _next_custom_id(conn: sa.engine.Connection) -> int:
    highest = conn.execute(sa.select(sa.func.max(_RC.c.id))).scalar()
    return max(tables.CUSTOM_CLASS_MIN_ID, (highest or 0) + 1)


# Two creators of different classes may pick the same next id; the loser
# of the insert picks again.  More than a handful of such losses in a row
# would take as many concurrent creators.
_ID_ATTEMPTS = 10


@db_api.retry_on_conflict
def create(ctx: RequestContext, name: str) -> ResourceClass:
    """Create custom class ``name``; ResourceClassExists if it is taken.

    The id is chosen as upstream chooses it (one past the highest, at
    least tables.CUSTOM_CLASS_MIN_ID) rather than by the id sequence,
    which upstream leaves behind on PostgreSQL.
    """
    db = ctx.db
    for _attempt in range(_ID_ATTEMPTS):
        try:
            with db.writer() as conn:
                now = _now()
                rc_id = _next_custom_id(conn)
                conn.execute(_RC.insert().values(id=rc_id, name=name, created_at=now))
            return ResourceClass(id=rc_id, name=name, created_at=now, updated_at=None)
        except db_exc.DBDuplicateEntry:
            with db.reader() as conn:
                taken = conn.execute(sa.select(_RC.c.id).where(_RC.c.name == name)).first()
            if taken is not None:
                raise exceptions.ResourceClassExists(name=name) from None
            LOG.debug("resource class id taken concurrently; choosing another")
    raise exceptions.ConcurrentUpdate(thing="Resource class")


@db_api.retry_on_conflict
def ensure(ctx: RequestContext, name: str) -> tuple[ResourceClass, bool]:
    """The custom class ``name``, created if missing; and whether it was.

    Two requests creating the same class at once both succeed: the one
    that loses the insert race reports the class as already there.  On
    Galera the loser may instead fail certification at COMMIT; the retry
    then finds the class, or meets the duplicate, once the winner's row has
    reached its node.
    """
    try:
        return get_by_name(ctx, name), False
    except exceptions.ResourceClassNotFound:
        pass
    try:
        return create(ctx, name), True
    except exceptions.ResourceClassExists:
        LOG.debug("resource class %s was created concurrently", name)
        return get_by_name(ctx, name), False


@db_api.retry_on_conflict
def rename(ctx: RequestContext, name: str, new_name: str) -> ResourceClass:
    """Rename custom class ``name`` to ``new_name``.

    Inventories and allocations refer to the class by id, so they follow
    the new name.  Raises ResourceClassNotFound,
    ResourceClassCannotUpdateStandard or ResourceClassExists.
    """
    try:
        with ctx.db.writer() as conn:
            current = _get_in(conn, name)
            if not is_custom(current.name):
                raise exceptions.ResourceClassCannotUpdateStandard(name=name)
            now = _now()
            conn.execute(_RC.update().where(_RC.c.id == current.id)
                         .values(name=new_name, updated_at=now))
    except db_exc.DBDuplicateEntry:
        raise exceptions.ResourceClassExists(name=new_name) from None
    return dataclasses.replace(current, name=new_name, updated_at=now)


def _in_use(conn: sa.engine.Connection, rc_id: int) -> bool:
    inventory = sa.select(tables.inventories.c.id).where(
        tables.inventories.c.resource_class_id == rc_id).limit(1)
    allocation = sa.select(tables.allocations.c.id).where(
        tables.allocations.c.resource_class_id == rc_id).limit(1)
    return (conn.execute(inventory).first() is not None
            or conn.execute(allocation).first() is not None)


@db_api.retry_on_conflict
def delete(ctx: RequestContext, name: str) -> None:
    """Delete custom class ``name`` unless inventory or allocations use it.

    Raises ResourceClassNotFound, ResourceClassCannotDeleteStandard or
    ResourceClassInUse.
    """
    with ctx.db.writer() as conn:
        current = _get_in(conn, name)
        if not is_custom(current.name):
            raise exceptions.ResourceClassCannotDeleteStandard(name=name)
        if _in_use(conn, current.id):
            raise exceptions.ResourceClassInUse(name=name)
        conn.execute(_RC.delete().where(_RC.c.id == current.id))


def known_ids(conn: sa.engine.Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}`` for those of these names that are classes."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = conn.execute(
        sa.select(_RC.c.name, _RC.c.id).where(_RC.c.name.in_(sorted(wanted)))
    ).all()
    return {name: id_ for name, id_ in rows}


def ids_by_name(conn: sa.engine.Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}`` for these names; ResourceClassNotFound for the first
    unknown, in sorted order."""
    wanted = set(names)
    found = known_ids(conn, wanted)
    for name in sorted(wanted):
        if name not in found:
            raise exceptions.ResourceClassNotFound(name=name)
    return found


def names_by_id(conn: sa.engine.Connection, ids: Iterable[int] | None = None
                ) -> dict[int, str]:
    """``{id: name}`` for these ids (all classes when ``ids`` is None)."""
    if ids is None:
        return {id_: name for id_, name in conn.execute(_all_names()).all()}
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return {id_: name for id_, name in conn.execute(_names_of(), {"ids": wanted}).all()}


# names_by_id's statements, built once: usages and allocations name the
# classes of every row they return.
@functools.cache
def _all_names() -> sa.Select[Any]:
    return sa.select(_RC.c.id, _RC.c.name)


@functools.cache
def _names_of() -> sa.Select[Any]:
    return _all_names().where(_RC.c.id.in_(sa.bindparam("ids", expanding=True)))
