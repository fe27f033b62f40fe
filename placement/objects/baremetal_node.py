"""Bare-metal nodes as Placement sees them: root resource providers with
one unit of ``CUSTOM_<CLASS>`` (see ``objects/baremetal_allocation.py``).

Finding nodes by uuid or name, the query of the free ones that qualify for
an allocation, and what a node's consumers hold; no writes.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Sequence

import os_resource_classes
import sqlalchemy as sa

from placement import exceptions
from placement.db import tables

if TYPE_CHECKING:
    from placement.context import RequestContext

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RC = tables.resource_classes
_TRAITS = tables.traits
_RP_TRAITS = tables.resource_provider_traits


@dataclasses.dataclass(frozen=True)
class Node:
    id: int
    uuid: str
    name: str


def placement_class(resource_class: str) -> str:
    """The Placement class of a node of this Ironic resource class."""
    name: str = os_resource_classes.normalize_name(resource_class)
    return name


def _nodes() -> sa.Select[Any]:
    return (sa.select(_RP.c.id, _RP.c.uuid, _RP.c.name)
            .where(_RP.c.parent_provider_id.is_(None)))


def get(ctx: RequestContext, ident: str) -> Node:
    """The node (root provider) with this uuid or name; BaremetalNodeNotFound."""
    with ctx.db.reader() as conn:
        row = conn.execute(_nodes().where(
            sa.or_(_RP.c.uuid == ident, _RP.c.name == ident))).first()
    if row is None:
        raise exceptions.BaremetalNodeNotFound(ident=ident)
    return Node(*row)


def find(ctx: RequestContext, idents: Sequence[str]) -> dict[str, str]:
    """``{ident: node uuid}`` for node uuids or names;
    BaremetalNodesNotFound naming those that are neither."""
    wanted = sorted(set(idents))
    with ctx.db.reader() as conn:
        rows = conn.execute(_nodes().where(
            sa.or_(_RP.c.uuid.in_(wanted), _RP.c.name.in_(wanted)))).all()
    found: dict[str, str] = {}
    for _id, uuid, name in rows:
        found[uuid] = uuid
        found.setdefault(name, uuid)
    missing = [ident for ident in idents if ident not in found]
    if missing:
        raise exceptions.BaremetalNodesNotFound(idents=", ".join(missing))
    return {ident: found[ident] for ident in idents}


def _has_trait(name: str) -> sa.Exists:
    return (sa.select(1).select_from(_RP_TRAITS.join(
        _TRAITS, _TRAITS.c.id == _RP_TRAITS.c.trait_id))
        .where(_RP_TRAITS.c.resource_provider_id == _RP.c.id, _TRAITS.c.name == name)
        .exists())


def free(class_name: str, candidates: Sequence[str],
                traits: Sequence[str]) -> sa.Select[Any]:
    """Nodes with an unreserved, unallocated unit of the class, among the
    candidates when there are any, with all the traits."""
    inventory = _INV.join(_RC, sa.and_(_RC.c.id == _INV.c.resource_class_id,
                                       _RC.c.name == class_name))
    held = (sa.select(1).where(_ALLOC.c.resource_provider_id == _RP.c.id,
                               _ALLOC.c.resource_class_id == _INV.c.resource_class_id)
            .exists())
    query = (_nodes().join(inventory, _INV.c.resource_provider_id == _RP.c.id)
             .where(_INV.c.total - _INV.c.reserved >= 1, ~held))
    if candidates:
        query = query.where(_RP.c.uuid.in_(sorted(set(candidates))))
    for trait in traits:
        query = query.where(_has_trait(trait))
    return query



def holders_in(conn: sa.engine.Connection, node: Node) -> list[tuple[str, str]]:
    """(consumer uuid, class name) of the custom classes the node's
    consumers hold, the node's own class first."""
    rows = conn.execute(
        sa.select(_ALLOC.c.consumer_id, _RC.c.name)
        .join(_RC, _RC.c.id == _ALLOC.c.resource_class_id)
        .where(_ALLOC.c.resource_provider_id == node.id,
               _RC.c.name.startswith(os_resource_classes.CUSTOM_NAMESPACE))
        .order_by(_ALLOC.c.id)).all()
    return [(row.consumer_id, row.name) for row in rows]


def traits_in(conn: sa.engine.Connection, node: Node) -> set[str]:
    return set(conn.execute(
        sa.select(_TRAITS.c.name).join(_RP_TRAITS, _RP_TRAITS.c.trait_id == _TRAITS.c.id)
        .where(_RP_TRAITS.c.resource_provider_id == node.id)).scalars())
