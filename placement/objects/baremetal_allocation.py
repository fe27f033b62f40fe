"""Bare-metal allocations (Ironic's ``/v1/allocations``) on Placement's model.

A node is a root resource provider with an inventory of one unit of
``CUSTOM_<CLASS>`` (the node's resource class as nova's ironic driver
reports it: upper-cased, every run of other characters than letters and
digits turned into ``_``).  A node is free when that unit is neither
reserved nor allocated to anyone; ``objects/baremetal_node.py`` finds
nodes and reads which are free.

An allocation is a row of ``baremetal_allocations`` and, while it holds a
node, an ordinary Placement allocation of that unit by a consumer whose
uuid is the allocation's.  Claiming is :func:`create`: read the free
nodes that qualify, pick one (at random, so that concurrent requests
spread; the node named like the allocation first from 1.79), and claim it
with the allocation writer of ``objects/allocation.py`` -- the same
provider lock, capacity check and retries as every Placement write, so no
node is ever given twice, whoever asks.  Reading the free nodes, claiming
one and writing the record are one transaction (on MySQL the reads are
one of their own before it, see ``allocation.writing``), so an allocation
is never seen ``allocating``: it is ``active`` with its node, or
``error`` when no node qualified.  A claim that loses its node to a
concurrent one reads the free nodes again and tries another, until none
is left.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import random
import types
from typing import TYPE_CHECKING, Any, Sequence

import os_resource_classes
import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_utils import uuidutils

from placement import exceptions
from placement.db import api as db_api
from placement.db import tables
from placement.objects import allocation as allocation_obj
from placement.objects import baremetal_node as node_obj

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)

ALLOCATING = "allocating"
ACTIVE = "active"
ERROR = "error"

_BA = tables.baremetal_allocations

# Sort keys clients may name (Ironic's columns; node_id is the node).
SORT_COLUMNS = {
    "id": _BA.c.id, "uuid": _BA.c.uuid, "name": _BA.c.name,
    "node_id": _BA.c.node_uuid, "state": _BA.c.state,
    "last_error": _BA.c.last_error, "resource_class": _BA.c.resource_class,
    "owner": _BA.c.owner, "created_at": _BA.c.created_at,
    "updated_at": _BA.c.updated_at,
}


@dataclasses.dataclass(frozen=True)
class BaremetalAllocation:
    id: int
    uuid: str
    name: str | None
    node_uuid: str | None
    state: str
    last_error: str | None
    resource_class: str | None
    traits: list[str]
    candidate_nodes: list[str]
    extra: dict[str, Any]
    owner: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


@dataclasses.dataclass(frozen=True)
class Wanted:
    """What a new allocation asks for.

    ``candidate_nodes`` are node uuids.  ``user_id`` and ``owner`` (or,
    without an owner, ``project_id``) become the Placement consumer's user
    and project.  ``prefer_name`` (1.79) tries the node named ``name``
    first.
    """

    uuid: str
    name: str | None
    resource_class: str | None
    traits: Sequence[str]
    candidate_nodes: Sequence[str]
    extra: dict[str, Any]
    owner: str | None
    user_id: str
    project_id: str
    prefer_name: bool = False


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _from_row(row: Any) -> BaremetalAllocation:
    return BaremetalAllocation(
        id=row.id, uuid=row.uuid, name=row.name, node_uuid=row.node_uuid,
        state=row.state, last_error=row.last_error,
        resource_class=row.resource_class,
        traits=json.loads(row.traits or "[]"),
        candidate_nodes=json.loads(row.candidate_nodes or "[]"),
        extra=json.loads(row.extra or "{}"), owner=row.owner,
        created_at=row.created_at, updated_at=row.updated_at)


def _lookup(ident: str) -> sa.ColumnElement[bool]:
    """Ironic's lookup: a uuid-like identifier is a uuid, anything else a name."""
    if uuidutils.is_uuid_like(ident):
        return _BA.c.uuid == ident
    return _BA.c.name == ident


def get(ctx: RequestContext, ident: str) -> BaremetalAllocation:
    """The allocation with this uuid or name; BaremetalAllocationNotFound."""
    with ctx.db.reader() as conn:
        row = conn.execute(sa.select(_BA).where(_lookup(ident))).first()
    if row is None:
        raise exceptions.BaremetalAllocationNotFound(ident=ident)
    return _from_row(row)


def _page_filter(column: Any, marker: BaremetalAllocation, descending: bool
                 ) -> sa.ColumnElement[bool]:
    """Rows after the marker in the order (column IS NOT NULL, column, id)."""
    value = getattr(marker, column.name)
    after = (lambda a, b: a < b) if descending else (lambda a, b: a > b)
    later_id = after(_BA.c.id, marker.id)
    if value is None:
        return sa.or_(sa.and_(column.is_(None), later_id),
                      column.is_not(None) if not descending else sa.false())
    same = sa.and_(column == value, later_id)
    beyond = sa.or_(after(column, value), same)
    if descending:
        return sa.or_(beyond, column.is_(None))
    return beyond


def list_all(ctx: RequestContext, *, filters: dict[str, str], sort_key: str = "id",
             sort_dir: str = "asc", limit: int | None = None,
             marker: BaremetalAllocation | None = None) -> list[BaremetalAllocation]:
    """Allocations matching ``filters`` (node_uuid, resource_class, state,
    owner), sorted and paged.  NULLs sort first, on every backend."""
    column = SORT_COLUMNS[sort_key]
    descending = sort_dir == "desc"
    query = sa.select(_BA)
    for name, value in filters.items():
        query = query.where(_BA.c[name] == value)
    if marker is not None:
        query = query.where(_page_filter(column, marker, descending))
    nulls_first = sa.case((column.is_(None), 0), else_=1)
    order = [nulls_first, column, _BA.c.id]
    query = query.order_by(*[c.desc() if descending else c.asc() for c in order])
    if limit is not None:
        query = query.limit(limit)
    with ctx.db.reader() as conn:
        return [_from_row(row) for row in conn.execute(query).all()]


def _qualifying_in(conn: sa.engine.Connection, wanted: Wanted, passed: set[str]
                   ) -> tuple[list[node_obj.Node], str]:
    """The free nodes the allocation may have (less those it already lost),
    or none and Ironic's reason why."""
    class_name = node_obj.placement_class(wanted.resource_class or "")
    nodes = [node_obj.Node(*row) for row in conn.execute(
        node_obj.free(class_name, wanted.candidate_nodes, wanted.traits)).all()
        if row.uuid not in passed]
    if nodes:
        return nodes, ""
    if wanted.traits and conn.execute(
            node_obj.free(class_name, wanted.candidate_nodes, ()).limit(1)).first():
        return [], ("no suitable nodes have the requested traits %s"
                    % ", ".join(wanted.traits))
    if wanted.candidate_nodes:
        return [], ("none of the requested nodes are available and match the "
                    "resource class %s" % wanted.resource_class)
    return [], "no available nodes match the resource class %s" % wanted.resource_class


def _pick(nodes: list[node_obj.Node], wanted: Wanted) -> node_obj.Node:
    if wanted.prefer_name and wanted.name:
        for node in nodes:
            if node.name == wanted.name:
                return node
    return random.choice(nodes)


def _record(wanted: Wanted, state: str, node_uuid: str | None,
            last_error: str | None, resource_class: str | None) -> dict[str, Any]:
    now = _utcnow()
    return {
        "uuid": wanted.uuid, "name": wanted.name, "node_uuid": node_uuid,
        "state": state, "last_error": last_error, "resource_class": resource_class,
        "traits": json.dumps(list(wanted.traits)),
        "candidate_nodes": json.dumps(list(wanted.candidate_nodes)),
        "extra": json.dumps(wanted.extra), "owner": wanted.owner,
        "created_at": now, "updated_at": now if state != ALLOCATING else None,
    }


def _insert_in(conn: sa.engine.Connection, values: dict[str, Any]
               ) -> BaremetalAllocation:
    """Insert a record, and return it; a name or uuid taken meanwhile is a
    Duplicate."""
    values = db_api.as_stored(conn, values)  # what a later read will show
    try:
        key = conn.execute(_BA.insert().values(**values)).inserted_primary_key
    except db_exc.DBDuplicateEntry as exc:
        if "name" in (exc.columns or []):
            raise exceptions.BaremetalAllocationNameExists(name=values["name"]) from None
        raise exceptions.BaremetalAllocationUuidExists(uuid=values["uuid"]) from None
    assert key is not None
    return _from_row(types.SimpleNamespace(id=key[0], **values))


def _refuse_taken_in(conn: sa.engine.Connection, uuid: str, name: str | None) -> None:
    """Looked up first so that the answer names the uuid when both are taken;
    the insert still catches a concurrent creation.  A Placement consumer
    (nova's instance, say) holds the uuid as much as an allocation does."""
    consumer = tables.consumers
    rows = conn.execute(sa.union_all(
        sa.select(_BA.c.uuid, _BA.c.name).where(
            sa.or_(_BA.c.uuid == uuid, _BA.c.name == name) if name
            else _BA.c.uuid == uuid),
        sa.select(consumer.c.uuid, sa.null()).where(consumer.c.uuid == uuid))).all()
    if any(row.uuid == uuid for row in rows):
        raise exceptions.BaremetalAllocationUuidExists(uuid=uuid)
    if rows:
        raise exceptions.BaremetalAllocationNameExists(name=name)


def _claim_of(wanted: Wanted, node: node_obj.Node) -> allocation_obj.ConsumerClaim:
    """The Placement claim of the node's unit by the allocation's consumer."""
    return allocation_obj.ConsumerClaim(
        consumer_uuid=wanted.uuid,
        resources={node.uuid: {node_obj.placement_class(wanted.resource_class or ""): 1}},
        project_id=wanted.owner or wanted.project_id, user_id=wanted.user_id,
        generation=None, check_generation=True)


class _NodeTaken(Exception):
    """The node picked was claimed (or reserved) since it was read."""

    def __init__(self, node: node_obj.Node) -> None:
        super().__init__(node.uuid)
        self.node = node


def _attempt(ctx: RequestContext, wanted: Wanted, lost: set[str]) -> BaremetalAllocation:
    """Pick a free node and claim it, or record why there is none: one
    transaction (on MySQL the reads in one of their own before it; see
    ``allocation.writing``).  _NodeTaken, with nothing written, when the
    node was taken between the read and the lock."""
    picked: list[node_obj.Node] = []
    reason = ""

    def claims(conn: sa.engine.Connection) -> list[allocation_obj.ConsumerClaim]:
        nonlocal reason
        if not lost:
            _refuse_taken_in(conn, wanted.uuid, wanted.name)
        nodes, reason = _qualifying_in(conn, wanted, lost)
        picked[:] = [_pick(nodes, wanted)] if nodes else []
        return [_claim_of(wanted, node) for node in picked]

    with allocation_obj.writing(ctx, claims) as (conn, plan):
        if not picked:
            failure = "Failed to process allocation %s: %s." % (wanted.uuid, reason)
            return _insert_in(conn, _record(wanted, ERROR, None, failure,
                                            wanted.resource_class))
        node = picked[0]
        state = allocation_obj.begin_in(conn, plan)
        try:
            allocation_obj.check_claims_in(plan, state)
            allocation_obj.check_capacity_and_apply_in(conn, plan, state)
        except (exceptions.InventoryInvalid, exceptions.ProviderNotFound,
                exceptions.ResourceClassNotFound):
            # Claimed, reserved or deleted (its class with it) meanwhile.
            raise _NodeTaken(node) from None
        allocation_obj.bump_providers_in(
            conn, allocation_obj.bumped_provider_ids(plan, state))
        return _insert_in(conn, _record(wanted, ACTIVE, node.uuid, None,
                                        wanted.resource_class))


def create(ctx: RequestContext, wanted: Wanted) -> BaremetalAllocation:
    """A new allocation: ``active`` on a node it claimed, or ``error`` with
    Ironic's reason when no node qualifies.

    A claim that loses its node to a concurrent one reads the free nodes
    again and tries another, until none is left.
    BaremetalAllocationUuidExists / NameExists when the uuid (or a
    Placement consumer of that uuid) or the name is taken.
    """
    lost: set[str] = set()
    while True:
        try:
            return allocation_obj.with_retries(
                ctx, "baremetal_allocation.create", lambda: _attempt(ctx, wanted, lost))
        except _NodeTaken as taken:
            LOG.debug("Node %s was taken before allocation %s could claim it",
                      taken.node.uuid, wanted.uuid)
            lost.add(taken.node.uuid)
        except exceptions.ConsumerGenerationConflict:
            # A Placement consumer with this uuid holds allocations already.
            raise exceptions.BaremetalAllocationUuidExists(uuid=wanted.uuid) from None


def _backfill_problems(wanted: Wanted, node: node_obj.Node, holder: str, class_name: str,
                       traits: set[str]) -> list[str]:
    problems = []
    if wanted.uuid and wanted.uuid != holder:
        problems.append("the node is consumed by %s, not by %s" % (holder, wanted.uuid))
    if wanted.resource_class and node_obj.placement_class(wanted.resource_class) != class_name:
        problems.append("Resource class %s does not match the requested resource "
                        "class %s" % (class_name, wanted.resource_class))
    if wanted.traits and not traits.issuperset(wanted.traits):
        problems.append("List of traits %s does not match the requested traits %s"
                        % (sorted(traits), list(wanted.traits)))
    if wanted.candidate_nodes and node.uuid not in wanted.candidate_nodes:
        problems.append("Candidate nodes must be empty or contain the target node, "
                        "but got %s" % list(wanted.candidate_nodes))
    return problems


@db_api.retry_on_conflict
def backfill(ctx: RequestContext, wanted: Wanted, node: node_obj.Node) -> BaremetalAllocation:
    """An ``active`` allocation for a node a consumer already holds: its
    uuid is the consumer's (``wanted.uuid`` may be empty, or must be that).

    BaremetalBackfillRefused when no one holds the node, or the request
    does not describe it; BaremetalAllocationUuidExists when the consumer
    has an allocation already.  Nothing is written then.
    """
    with ctx.db.writer() as conn:
        # Under the provider lock the node's consumer cannot change.
        db_api.lock_providers(conn, [node.id])
        holders = node_obj.holders_in(conn, node)
        if not holders:
            raise exceptions.BaremetalBackfillRefused(
                uuid=wanted.uuid or uuidutils.generate_uuid(), node=node.uuid,
                reason="the node is not consumed by anyone")
        holder, class_name = holders[0]
        problems = _backfill_problems(wanted, node, holder, class_name,
                                      node_obj.traits_in(conn, node))
        if problems:
            raise exceptions.BaremetalBackfillRefused(
                uuid=wanted.uuid or holder, node=node.uuid, reason="; ".join(problems))
        wanted = dataclasses.replace(wanted, uuid=holder)
        if conn.execute(sa.select(_BA.c.id).where(_BA.c.uuid == holder)).first():
            raise exceptions.BaremetalAllocationUuidExists(uuid=holder)
        # Without a class given, the one that normalises to the node's.
        resource_class = wanted.resource_class or class_name[
            len(os_resource_classes.CUSTOM_NAMESPACE):]
        return _insert_in(conn, _record(wanted, ACTIVE, node.uuid, None,
                                        resource_class))


@db_api.retry_on_conflict
def update(ctx: RequestContext, uuid: str, *, name: str | None, extra: dict[str, Any]
           ) -> BaremetalAllocation:
    """Set the name and extra of an allocation."""
    with ctx.db.writer() as conn:
        try:
            changed = conn.execute(_BA.update().where(_BA.c.uuid == uuid).values(
                name=name, extra=json.dumps(extra), updated_at=_utcnow())).rowcount
        except db_exc.DBDuplicateEntry:
            raise exceptions.BaremetalAllocationNameExists(name=name) from None
    if not changed:
        raise exceptions.BaremetalAllocationNotFound(ident=uuid)
    return get(ctx, uuid)


def delete(ctx: RequestContext, uuid: str) -> None:
    """Remove the allocation and free its node: every Placement allocation
    of its consumer goes, in the same transaction."""
    release = allocation_obj.ConsumerClaim(consumer_uuid=uuid, resources={})

    def attempt() -> None:
        with allocation_obj.writing(ctx, [release]) as (conn, plan):
            state = allocation_obj.begin_in(conn, plan)
            allocation_obj.apply_in(conn, plan, state)
            if not conn.execute(_BA.delete().where(_BA.c.uuid == uuid)).rowcount:
                raise exceptions.BaremetalAllocationNotFound(ident=uuid)

    allocation_obj.with_retries(ctx, "baremetal_allocation.delete", attempt)
