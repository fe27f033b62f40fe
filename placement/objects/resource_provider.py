"""Resource providers: the rows of ``resource_providers`` and their trees.

What lives here: reading providers (one or several by uuid), creating,
renaming, re-parenting and deleting them, and the compare-and-swap
increment of a provider's generation that every writer touching a provider
(inventories, traits, aggregates, allocations) performs in its own
transaction.

Functions taking ``ctx`` open their own transaction; functions ending in
``_in`` take the ``conn`` of a transaction their caller already holds, so
that several changes commit or fail together.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import uuid as uuidlib
from typing import Any, Iterable, TYPE_CHECKING

import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement import exceptions
from placement.db import allocation_removals
from placement.db import api as db_api
from placement.db import commit_outcome
from placement.db import tables

if TYPE_CHECKING:
    from placement.context import RequestContext

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RP_TRAITS = tables.resource_provider_traits
_RP_AGGS = tables.resource_provider_aggregates


class _Unset:
    """Marks an argument the caller did not give (None means "no parent")."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceProvider:
    id: int
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str
    parent_id: int | None
    root_id: int
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None


def utcnow() -> datetime.datetime:
    """Now, as the naive UTC datetime the timestamp columns hold."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


@functools.cache
def select_providers() -> sa.Select[Any]:
    """Providers with their parent's and root's uuids; rows for :func:`from_row`.

    Built once: a statement is immutable (``where`` makes a new one), and
    building its aliases and joins cost a heartbeat's provider read more
    than running it."""
    parent = _RP.alias("parent")
    root = _RP.alias("root")
    return sa.select(
        _RP.c.id, _RP.c.uuid, _RP.c.name, _RP.c.generation,
        _RP.c.parent_provider_id, _RP.c.root_provider_id,
        parent.c.uuid.label("parent_uuid"), root.c.uuid.label("root_uuid"),
        _RP.c.created_at, _RP.c.updated_at,
    ).select_from(
        _RP.outerjoin(parent, parent.c.id == _RP.c.parent_provider_id)
        .outerjoin(root, root.c.id == _RP.c.root_provider_id)
    )


def from_row(row: sa.Row[Any]) -> ResourceProvider:
    return ResourceProvider(
        id=row.id, uuid=row.uuid, name=row.name, generation=row.generation,
        parent_uuid=row.parent_uuid,
        # A provider is its own root; tolerate rows written without one.
        root_uuid=row.root_uuid or row.uuid,
        parent_id=row.parent_provider_id,
        root_id=row.root_provider_id or row.id,
        created_at=row.created_at, updated_at=row.updated_at,
    )


def get_by_uuid(ctx: RequestContext, uuid: str) -> ResourceProvider:
    """The provider with this uuid; ProviderNotFound when there is none."""
    with ctx.db.reader() as conn:
        return get_by_uuid_in(conn, uuid)


def get_by_uuid_in(conn: sa.engine.Connection, uuid: str) -> ResourceProvider:
    row = conn.execute(_by_uuid(), {"uuid": uuid}).one_or_none()
    if row is None:
        raise exceptions.ProviderNotFound(uuid=uuid)
    return from_row(row)


def get_by_uuids_in(conn: sa.engine.Connection, uuids: Iterable[str]
                    ) -> dict[str, ResourceProvider]:
    """``{uuid: provider}`` for those of ``uuids`` that exist."""
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    rows = conn.execute(_by_uuids(), {"uuids": wanted}).all()
    return {row.uuid: from_row(row) for row in rows}


@functools.cache
def _by_uuid() -> sa.Select[Any]:
    return select_providers().where(_RP.c.uuid == sa.bindparam("uuid"))


@functools.cache
def _by_uuids() -> sa.Select[Any]:
    return select_providers().where(_RP.c.uuid.in_(sa.bindparam("uuids", expanding=True)))


def bump_generation(conn: sa.engine.Connection, provider: ResourceProvider,
                    expected_generation: int | None = None) -> int:
    """Increment the provider's generation if it is still the expected one.

    The comparison and the increment are one UPDATE, so of two writers that
    read the same generation exactly one succeeds; the other gets
    ProviderConcurrentUpdate and its transaction must be rolled back.
    ``expected_generation`` defaults to the generation ``provider`` was read
    with.  Returns the new generation.
    """
    expected = provider.generation if expected_generation is None \
        else expected_generation
    params = {"provider_id": provider.id, "expected": expected,
              "generation": expected + 1, "now": utcnow()}
    if commit_outcome.wants_transaction_id(conn):
        # PostgreSQL: the transaction's id, for the writer (it would
        # otherwise ask for it before COMMIT).
        told = conn.execute(_bump_statement(True), params).first()
        if told is None:
            raise exceptions.ProviderConcurrentUpdate()
        commit_outcome.note_transaction_id(conn, told[0])
        return expected + 1
    if conn.execute(_bump_statement(False), params).rowcount != 1:
        raise exceptions.ProviderConcurrentUpdate()
    return expected + 1


@functools.cache
def _bump_statement(telling_transaction: bool) -> Any:
    """bump_generation's compare-and-swap, built once (every write of a
    provider's inventories, traits or aggregates runs it)."""
    statement = (_RP.update()
                 .where(_RP.c.id == sa.bindparam("provider_id"),
                        _RP.c.generation == sa.bindparam("expected"))
                 .values(generation=sa.bindparam("generation"),
                         updated_at=sa.bindparam("now")))
    return statement.returning(commit_outcome.TRANSACTION_ID) if telling_transaction \
        else statement


def check_generation(conn: sa.engine.Connection,
                     provider: ResourceProvider) -> int:
    """The provider's generation, which must still be the one ``provider``
    was read with, for a write that turned out to change nothing.

    A locking read, so that under MySQL's REPEATABLE READ it sees the latest
    committed generation rather than the transaction's snapshot.  Raises
    ProviderConcurrentUpdate if the provider moved on or is gone.
    """
    current = conn.execute(
        sa.select(_RP.c.generation).where(_RP.c.id == provider.id)
        .with_for_update()
    ).scalar_one_or_none()
    if current != provider.generation:
        raise exceptions.ProviderConcurrentUpdate()
    return provider.generation


def _lock_uuids_in(conn: sa.engine.Connection, uuids: Iterable[str]) -> None:
    """Row locks on these providers (those that exist), in id order.

    Taken as the first statement of a tree change, so that creating a child
    waits for a concurrent delete of its parent (and then finds it gone),
    and a delete that waited sees the children created meanwhile: under
    MySQL's REPEATABLE READ the snapshot of later reads starts after the
    lock is granted.  SQLite has no row locks; its writers are serialised
    by the database lock already.
    """
    conn.execute(
        sa.select(_RP.c.id).where(_RP.c.uuid.in_(sorted(set(uuids))))
        .order_by(_RP.c.id).with_for_update()).all()


@db_api.retry_on_conflict
def create(ctx: RequestContext, name: str, uuid: str | None = None,
           parent_uuid: str | None = None) -> ResourceProvider:
    """A new provider, root of its own tree unless ``parent_uuid`` is given.

    Raises ProviderExists (name or uuid taken) and ProviderTreeInvalid
    (parent missing, or the provider named as its own parent).
    """
    uuid = str(uuidlib.UUID(uuid)) if uuid else str(uuidlib.uuid4())
    if not name:
        raise exceptions.ProviderTreeInvalid(action="create",
                                             reason="name is required")
    if parent_uuid is not None and parent_uuid == uuid:
        raise exceptions.ProviderTreeInvalid(
            action="create",
            reason="parent provider UUID cannot be same as UUID. Please set "
                   "parent provider UUID to None if there is no parent.")
    with ctx.db.writer() as conn:
        if parent_uuid is not None:
            _lock_uuids_in(conn, [parent_uuid])
        parent = _parent_in(conn, parent_uuid, action="create")
        _refuse_taken(conn, uuid, name)
        values = {"uuid": uuid, "name": name, "generation": 0,
                  "created_at": utcnow()}
        if parent is not None:
            values.update(parent_provider_id=parent.id,
                          root_provider_id=parent.root_id)
        try:
            inserted = conn.execute(_RP.insert().values(**values)).inserted_primary_key
            assert inserted is not None, "an insert without a primary key"
            new_id = inserted[0]
        except db_exc.DBDuplicateEntry as exc:
            raise _exists(exc, {"uuid": uuid, "name": name}) from None
        if parent is None:
            conn.execute(_RP.update().where(_RP.c.id == new_id)
                         .values(root_provider_id=new_id))
        return get_by_uuid_in(conn, uuid)


def _refuse_taken(conn: sa.engine.Connection, uuid: str, name: str) -> None:
    """ProviderExists if the uuid or the name is in use, naming the uuid
    when both are, as Placement does.

    Looked up before the insert so that the answer does not depend on which
    unique index a backend happens to check first; the insert still maps a
    duplicate from a concurrent creation.
    """
    taken = conn.execute(sa.select(_RP.c.uuid).where(
        sa.or_(_RP.c.uuid == uuid, _RP.c.name == name))).scalars().all()
    if not taken:
        return
    column = "uuid" if uuid in taken else "name"
    value = uuid if column == "uuid" else name
    raise exceptions.ProviderExists(fields="%s: %s" % (column, value),
                                    columns=[column])


def _exists(exc: db_exc.DBDuplicateEntry, values: dict[str, str]
            ) -> exceptions.ProviderExists:
    columns = [c for c in (exc.columns or []) if c in values] or ["name"]
    fields = ", ".join("%s: %s" % (c, values[c]) for c in columns)
    return exceptions.ProviderExists(fields=fields, columns=columns)


def _parent_in(conn: sa.engine.Connection, parent_uuid: str | None,
               action: str) -> ResourceProvider | None:
    if parent_uuid is None:
        return None
    try:
        return get_by_uuid_in(conn, parent_uuid)
    except exceptions.ProviderNotFound:
        raise exceptions.ProviderTreeInvalid(
            action=action, reason="parent provider UUID does not exist."
        ) from None


def _subtree_ids(conn: sa.engine.Connection, provider: ResourceProvider
                 ) -> set[int]:
    """Ids of the provider and all its descendants."""
    rows = conn.execute(
        sa.select(_RP.c.id, _RP.c.parent_provider_id)
        .where(_RP.c.root_provider_id == provider.root_id)).all()
    children: dict[int, list[int]] = {}
    for id_, parent_id in rows:
        children.setdefault(parent_id, []).append(id_)
    found, pending = set(), [provider.id]
    while pending:
        current = pending.pop()
        found.add(current)
        pending.extend(children.get(current, []))
    return found


@db_api.retry_on_conflict
def update(ctx: RequestContext, uuid: str, name: str, parent_uuid: Any = UNSET,
           allow_reparenting: bool = False) -> ResourceProvider:
    """Rename a provider and optionally give it a (new) parent.

    Without ``allow_reparenting`` (before microversion 1.37) a provider that
    has a parent keeps it; with it, the parent may change or be removed
    (None).  A parent inside the provider's own subtree is refused.  When
    the root changes, every descendant moves to the new root with it.  The
    generation is not changed: it versions inventories, traits, aggregates
    and allocations, not the name or the tree.
    """
    with ctx.db.writer() as conn:
        new_parent = [] if parent_uuid in (UNSET, None) else [parent_uuid]
        _lock_uuids_in(conn, [uuid] + new_parent)
        provider = get_by_uuid_in(conn, uuid)
        values: dict[str, Any] = {"name": name, "updated_at": utcnow()}
        subtree: set[int] = set()
        if parent_uuid is not UNSET:
            values.update(_reparent_in(conn, provider, parent_uuid,
                                       allow_reparenting))
            if "root_provider_id" in values:
                subtree = _subtree_ids(conn, provider)
        try:
            conn.execute(_RP.update().where(_RP.c.id == provider.id)
                         .values(**values))
        except db_exc.DBDuplicateEntry as exc:
            raise _exists(exc, {"name": name}) from None
        if subtree - {provider.id}:
            conn.execute(
                _RP.update().where(_RP.c.id.in_(sorted(subtree - {provider.id})))
                .values(root_provider_id=values["root_provider_id"]))
        return get_by_uuid_in(conn, uuid)


def _reparent_in(conn: sa.engine.Connection, provider: ResourceProvider,
                 parent_uuid: str | None, allow_reparenting: bool
                 ) -> dict[str, Any]:
    """The column changes that set the parent, after checking they may."""
    if parent_uuid is None:
        if provider.parent_id is None:
            return {}
        if not allow_reparenting:
            raise exceptions.ProviderTreeInvalid(
                action="update",
                reason="un-parenting a provider is not currently allowed.")
        return {"parent_provider_id": None, "root_provider_id": provider.id}
    # Upstream names the "create" action here too; clients see that text.
    parent = _parent_in(conn, parent_uuid, action="create")
    assert parent is not None
    if (provider.parent_id is not None and provider.parent_id != parent.id
            and not allow_reparenting):
        raise exceptions.ProviderTreeInvalid(
            action="update",
            reason="re-parenting a provider is not currently allowed.")
    if parent.id in _subtree_ids(conn, provider):
        raise exceptions.ProviderTreeInvalid(
            action="update",
            reason="creating loop in the provider tree is not allowed.")
    return {"parent_provider_id": parent.id, "root_provider_id": parent.root_id}


@db_api.retry_on_conflict
def delete(ctx: RequestContext, uuid: str) -> None:
    """Delete a provider with its inventories, traits and aggregates.

    Raises ProviderNotFound, ProviderHasChildren, ProviderInUse.
    """
    with ctx.db.writer() as conn:
        # Allocation writers lock the providers they allocate from; taking
        # the same lock keeps an allocation (or a child) from landing
        # during the delete.
        _lock_uuids_in(conn, [uuid])
        provider = get_by_uuid_in(conn, uuid)
        if conn.execute(sa.select(_RP.c.id).where(
                _RP.c.parent_provider_id == provider.id).limit(1)).first():
            raise exceptions.ProviderHasChildren()
        if conn.execute(sa.select(_ALLOC.c.id).where(
                _ALLOC.c.resource_provider_id == provider.id).limit(1)).first():
            raise exceptions.ProviderInUse()
        for table in (_INV, _RP_TRAITS, _RP_AGGS):
            conn.execute(table.delete().where(
                table.c.resource_provider_id == provider.id))
        allocation_removals.forget_in(conn, provider.id)
        conn.execute(_RP.delete().where(_RP.c.id == provider.id))
