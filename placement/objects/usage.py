"""Usages: sums of allocations, per provider or per project (and user).

Every query groups by all the columns it selects that are not aggregated,
so PostgreSQL accepts it as readily as SQLite and MySQL do.  Unique
consumers are counted in a query of their own: a consumer holding VCPU and
MEMORY_MB must count once, not once per class.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, TYPE_CHECKING

import sqlalchemy as sa

from placement import exceptions
from placement.db import tables
from placement.objects import resource_class as rc_obj
from placement.objects.consumer import UNKNOWN_TYPE

if TYPE_CHECKING:
    from placement.context import RequestContext

_ALLOC = tables.allocations
_INV = tables.inventories
_RP = tables.resource_providers
_CONSUMERS = tables.consumers
_PROJECTS = tables.projects
_USERS = tables.users
_TYPES = tables.consumer_types

# The consumer_type filter values that are not type names.
ALL_TYPES = "all"


@dataclasses.dataclass(frozen=True)
class TypeUsage:
    """Usage of one consumer type (or ``all``/``unknown``) in a project."""

    consumer_type: str
    consumer_count: int
    usages: dict[str, int]


def get_provider_usages(ctx: RequestContext, provider_uuid: str) -> tuple[int, dict[str, int]]:
    """The provider's generation and ``{class: used}`` for every class it
    has inventory of (0 when nothing is allocated).

    ProviderNotFound when there is no such provider.
    """
    with ctx.db.reader() as conn:
        provider = conn.execute(_provider_statement(), {"uuid": provider_uuid}).one_or_none()
        if provider is None:
            raise exceptions.ProviderNotFound(uuid=provider_uuid)
        rows = conn.execute(_provider_usage_statement(), {"provider_id": provider.id}).all()
        names = rc_obj.names_by_id(conn, [row[0] for row in rows])
    return provider.generation, {names[rc]: int(used) for rc, used in rows}


# The statements of get_provider_usages, built once (a compute node's
# report client reads its usages; building them cost more than running them).
@functools.cache
def _provider_statement() -> sa.Select[Any]:
    return sa.select(_RP.c.id, _RP.c.generation).where(_RP.c.uuid == sa.bindparam("uuid"))


@functools.cache
def _provider_usage_statement() -> sa.Select[Any]:
    return (
        sa.select(_INV.c.resource_class_id, sa.func.coalesce(sa.func.sum(_ALLOC.c.used), 0))
        .select_from(_INV.outerjoin(_ALLOC, sa.and_(
            _ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
            _ALLOC.c.resource_class_id == _INV.c.resource_class_id)))
        .where(_INV.c.resource_provider_id == sa.bindparam("provider_id"))
        .group_by(_INV.c.resource_class_id))


def _project_allocations(project_id: str, user_id: str | None) -> sa.FromClause:
    joined = _ALLOC.join(_CONSUMERS, _CONSUMERS.c.uuid == _ALLOC.c.consumer_id).join(
        _PROJECTS, sa.and_(_PROJECTS.c.id == _CONSUMERS.c.project_id,
                           _PROJECTS.c.external_id == project_id))
    if user_id is not None:
        joined = joined.join(_USERS, sa.and_(_USERS.c.id == _CONSUMERS.c.user_id,
                                             _USERS.c.external_id == user_id))
    return joined.outerjoin(_TYPES, _TYPES.c.id == _CONSUMERS.c.consumer_type_id)


def get_project_usages(ctx: RequestContext, project_id: str, user_id: str | None = None
                       ) -> dict[str, int]:
    """``{class: used}`` over the consumers of a project (and user)."""
    source = _project_allocations(project_id, user_id)
    with ctx.db.reader() as conn:
        rows = conn.execute(
            sa.select(_ALLOC.c.resource_class_id, sa.func.sum(_ALLOC.c.used))
            .select_from(source).group_by(_ALLOC.c.resource_class_id)).all()
        names = rc_obj.names_by_id(conn, [row[0] for row in rows])
    return {names[rc]: int(used) for rc, used in rows}


def get_project_usages_by_type(ctx: RequestContext, project_id: str, user_id: str | None = None,
                               consumer_type: str | None = None) -> list[TypeUsage]:
    """Usage of a project (and user) grouped by consumer type.

    ``consumer_type`` None groups by every type, consumers without one
    appearing as ``unknown``; ``all`` gives one group over every consumer;
    ``unknown`` or a type name gives that group alone.
    """
    source = _project_allocations(project_id, user_id)
    conditions: list[sa.ColumnElement[bool]] = []
    if consumer_type == UNKNOWN_TYPE:
        conditions.append(_CONSUMERS.c.consumer_type_id.is_(None))
    elif consumer_type not in (None, ALL_TYPES):
        conditions.append(_TYPES.c.name == consumer_type)
    # One group ("all") or one per type name; NULL is the unknown type.
    group = [] if consumer_type == ALL_TYPES else [_TYPES.c.name]
    sums = (sa.select(*group, _ALLOC.c.resource_class_id, sa.func.sum(_ALLOC.c.used))
            .select_from(source).where(*conditions)
            .group_by(*group, _ALLOC.c.resource_class_id))
    counts = (sa.select(*group, sa.func.count(sa.distinct(_ALLOC.c.consumer_id)))
              .select_from(source).where(*conditions).group_by(*group))
    with ctx.db.reader() as conn:
        sum_rows = conn.execute(sums).all()
        count_rows = conn.execute(counts).all() if sum_rows else []
        names = rc_obj.names_by_id(conn, [row[-2] for row in sum_rows])

    def label(row: Any) -> str:
        if consumer_type == ALL_TYPES:
            return ALL_TYPES
        return row[0] if row[0] is not None else UNKNOWN_TYPE

    result = {label(row): TypeUsage(label(row), int(row[-1]), {}) for row in count_rows}
    for row in sum_rows:
        result[label(row)].usages[names[row[-2]]] = int(row[-1])
    return [result[name] for name in sorted(result)]
