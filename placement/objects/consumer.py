"""Consumers and the projects, users and consumer types they belong to.

A consumer row exists while the consumer holds allocations: it is created
by the first write that gives it allocations and removed by the write that
takes its last ones away.  Its ``generation`` counts those writes and is
what clients send back as ``consumer_generation`` (microversion 1.28).

Projects, users and consumer types are stored once, by external id or name,
and never removed.  :func:`resolve_identities_in` creates missing ones in
the allocation write's own transaction with an insert that skips rows a
concurrent writer created first, so that such a race can never make the
allocation write fail on a unique constraint.

The functions ending in ``_in`` take the connection of the caller's
transaction (the allocation write in ``objects/allocation.py``).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
from typing import Any, Iterable, Mapping, Sequence

import sqlalchemy as sa

from placement import exceptions
from placement.db import api as db_api
from placement.db import tables

LOG = logging.getLogger(__name__)

_CONSUMERS = tables.consumers
_PROJECTS = tables.projects
_USERS = tables.users
_TYPES = tables.consumer_types

# How GET shows the type of consumers written before microversion 1.38.
UNKNOWN_TYPE = "unknown"
# Tags of the rows of stored_selects() and identity_selects().
STORED_CONSUMER = 10
STORED_ALLOCATION = 11
_IDENTITY_TAGS = (20, 21, 22)  # projects, users, consumer types


@dataclasses.dataclass(frozen=True)
class Consumer:
    """A consumer as clients see it: external ids and names, not row ids."""

    uuid: str
    project_id: str
    user_id: str
    generation: int
    consumer_type: str | None


@dataclasses.dataclass(frozen=True)
class StoredConsumer:
    """A consumer row as the writer needs it: row ids included."""

    id: int
    uuid: str
    project_id: int
    user_id: int
    generation: int
    consumer_type_id: int | None


@dataclasses.dataclass(frozen=True)
class StoredAllocation:
    """An allocation row of a consumer about to be rewritten."""

    id: int
    consumer_id: str
    resource_provider_id: int
    resource_class_id: int
    used: int


@dataclasses.dataclass(frozen=True)
class Identities:
    """Row ids of projects, users and consumer types, by external id/name."""

    projects: dict[str, int]
    users: dict[str, int]
    types: dict[str, int]


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _tables() -> tuple[tuple[sa.Table, sa.Column[Any]], ...]:
    return ((_PROJECTS, _PROJECTS.c.external_id), (_USERS, _USERS.c.external_id),
            (_TYPES, _TYPES.c.name))


def identity_selects() -> list[sa.Select[Any]]:
    """Queries for the ids of projects, users and consumer types by the
    expanding parameters ``projects``, ``users`` and ``consumer_types``,
    tagged and padded to seven columns like :func:`stored_selects`, so
    that a caller can read them in its own round trip; :func:`split_stored`
    sorts the rows back out."""
    padding = [sa.cast(sa.null(), sa.Integer)] * 4
    return [
        sa.select(sa.literal(tag, sa.Integer), column, table.c.id, *padding)
        .where(column.in_(sa.bindparam(parameter, expanding=True)))
        for tag, (table, column), parameter in zip(
            _IDENTITY_TAGS, _tables(), ("projects", "users", "consumer_types"),
            strict=True)
    ]


@functools.cache
def _lookup_statement() -> sa.CompoundSelect:
    return sa.union_all(*identity_selects())


def _lookup_all(conn: sa.engine.Connection, wanted: tuple[set[str], ...]
                ) -> list[dict[str, int]]:
    """Ids of the existing names of each table, in one round trip."""
    if not any(wanted):
        return [{}, {}, {}]
    rows = conn.execute(_lookup_statement(), {
        "projects": sorted(wanted[0]), "users": sorted(wanted[1]),
        "consumer_types": sorted(wanted[2])}).all()
    identities = split_stored(rows)[2]
    return [identities.projects, identities.users, identities.types]


def _insert_missing(conn: sa.engine.Connection, missing: list[list[str]]
                    ) -> list[dict[str, int]]:
    """Insert the projects, users and consumer types named by ``missing``
    (one list each, in :func:`_tables` order), skipping any a concurrent
    transaction inserted; the ids of the rows inserted, where the database
    can return them.  PostgreSQL inserts into every table in one statement
    (:func:`_insert_together_statement`): a claim naming a new project and
    a new user, as the first claim of each does, costs one round trip.
    The others insert into each table in a statement of its own."""
    now = _utcnow()
    if conn.dialect.name == "postgresql":
        statement = _insert_together_statement(tuple(bool(names) for names in missing))
        params: dict[str, Any] = {"now": now}
        for tag, names in zip(_IDENTITY_TAGS, missing, strict=True):
            if names:
                params["names_%d" % tag] = names
        found: dict[int, dict[str, int]] = {tag: {} for tag in _IDENTITY_TAGS}
        for tag, name, id_ in conn.execute(statement, params):
            found[tag][name] = id_
        return [found[tag] for tag in _IDENTITY_TAGS]
    inserted: list[dict[str, int]] = []
    for (table, column), names in zip(_tables(), missing, strict=True):
        rows = [{column.name: name, "created_at": now} for name in names]
        statement = db_api.insert_unless_present(conn, table)
        ids: dict[str, int] = {}
        if rows and conn.dialect.insert_returning:
            result = conn.execute(statement.returning(column, table.c.id), rows)
            ids = {name: id_ for name, id_ in result.all()}
        elif rows:
            conn.execute(statement, rows)
        inserted.append(ids)
    return inserted


def _inserting_cte(table: sa.Table, column: sa.Column[Any], names: str) -> Any:
    """PostgreSQL: a WITH clause inserting the names of the array
    parameter ``names`` into ``table`` (at the parameter ``now``), skipping
    any present, and returning ``(name, id)`` of the rows inserted."""
    from sqlalchemy.dialects import postgresql

    unnested = sa.func.unnest(sa.bindparam(names, type_=postgresql.ARRAY(sa.String)))
    return (postgresql.insert(table)
            .from_select([column.name, "created_at"],
                         sa.select(unnested, sa.bindparam("now", type_=sa.DateTime)))
            .on_conflict_do_nothing()
            .returning(column.label("name"), table.c.id)
            .cte("added_" + table.name))


@functools.cache
def _insert_together_statement(which: tuple[bool, ...]) -> sa.CompoundSelect:
    """PostgreSQL: insert the names of the array parameters ``names_<tag>``
    into the tables :func:`_tables` lists where ``which`` says so, skipping
    any present, and return ``(tag, name, id)`` of the rows inserted.  Each
    INSERT of a WITH clause runs exactly once.  Built once per ``which``:
    arrays rather than rows of VALUES keep one statement (and so one
    compiled form in SQLAlchemy's cache) for any number of names."""

    added = []
    for tag, (table, column), wanted in zip(_IDENTITY_TAGS, _tables(), which, strict=True):
        if not wanted:
            continue
        inserted = _inserting_cte(table, column, "names_%d" % tag)
        added.append(sa.select(sa.literal(tag, sa.Integer), inserted.c.name, inserted.c.id))
    return sa.union_all(*added)


@dataclasses.dataclass(frozen=True)
class NewConsumer:
    """A consumer a write creates, with the external ids and names of its
    project, user and type (None: no type)."""

    uuid: str
    project: str
    user: str
    consumer_type: str | None


# Tags of the counts create_with_allocations_in's statement returns, and
# of the rows of the select it runs along.
_CREATED_CONSUMERS, _CREATED_ALLOCATIONS, _ALONG = 30, 31, 32


def create_with_allocations_in(conn: sa.engine.Connection, consumers: list[NewConsumer],
                               allocations: list[dict[str, Any]],
                               known: Identities, along: sa.Select[Any] | None = None,
                               along_params: Mapping[str, Any] | None = None
                               ) -> list[tuple[Any, ...]]:
    """PostgreSQL: create ``consumers``, none of which existed when the
    write read them, their ``allocations`` (rows of the allocations table)
    and whatever projects, users and types they name that ``known`` (the
    ids the write read) lacks -- in one statement, where
    :func:`resolve_identities_in`, :func:`save_in` and the insert of the
    allocations take three: a scheduler's claim costs two round trips
    fewer.

    A project, user or type that a concurrent writer created after the
    write's read is skipped by the insert, and its consumer is then not
    created either: the write raises :class:`ConsumerChanged` and starts
    over, finding it (as for a consumer created concurrently, which the
    unique uuid refuses).

    ``along``, a select of the caller's with the parameters
    ``along_params``, runs in the same statement and its rows are
    returned: it reads what the database held when the statement began,
    none of the rows inserted (the capacities a claim is checked against,
    allocation.check_capacity_and_apply_in).
    """
    names: tuple[list[str | None], ...] = (
        [c.project for c in consumers], [c.user for c in consumers],
        [c.consumer_type for c in consumers])
    have = (known.projects, known.users, known.types)
    missing = tuple(sorted({name for name in wanted if name is not None} - set(ids))
                    for wanted, ids in zip(names, have, strict=True))
    now = _utcnow()
    params: dict[str, Any] = {"now": now, "consumer_uuids": [c.uuid for c in consumers]}
    for tag, wanted, ids, absent in zip(_IDENTITY_TAGS, names, have, missing, strict=True):
        params["ids_%d" % tag] = [None if name is None else ids.get(name) for name in wanted]
        params["names_%d" % tag] = wanted
        if absent:
            params["missing_%d" % tag] = list(absent)
    for column in ("resource_provider_id", "resource_class_id", "consumer_id", "used"):
        params["allocation_" + column] = [row[column] for row in allocations]
    params.update(along_params or {})
    statement = _create_together_statement(tuple(bool(names) for names in missing), along)
    rows = db_api.rendered_rows(conn, statement, params)
    counts = {row[0]: row[1] for row in rows if row[0] != _ALONG}
    if counts[_CREATED_CONSUMERS] != len(consumers):
        raise ConsumerChanged(", ".join(c.uuid for c in consumers))
    if counts[_CREATED_ALLOCATIONS] != len(allocations):  # pragma: no cover
        raise AssertionError("allocations not all inserted")
    return [tuple(row[2:]) for row in rows if row[0] == _ALONG]


@functools.cache
def _create_together_statement(which: tuple[bool, ...], along: sa.Select[Any] | None
                               ) -> sa.CompoundSelect:
    """The statement of :func:`create_with_allocations_in`, for the tables
    of :func:`_tables` ``which`` says have names to insert (array
    parameters ``missing_<tag>``).  Each consumer comes as one element of
    the arrays ``consumer_uuids``, ``ids_<tag>`` (its project, user and
    type row ids, NULL where unknown) and ``names_<tag>``; each allocation
    as one element of the ``allocation_<column>`` arrays.  Returns the
    number of consumers and of allocations inserted, as (tag, count, NULL
    for each column of ``along``), and the rows of ``along`` as (_ALONG,
    NULL, its columns).  Every data-changing WITH clause runs exactly
    once, whether read or not."""
    from sqlalchemy.dialects import postgresql

    def array(name: str, of: Any) -> Any:
        return sa.func.unnest(sa.bindparam(name, type_=postgresql.ARRAY(of)))

    now = sa.bindparam("now", type_=sa.DateTime)
    claimed_columns = [array("consumer_uuids", sa.String).label("uuid")]
    added = {}
    for tag, (table, column), wanted in zip(_IDENTITY_TAGS, _tables(), which, strict=True):
        claimed_columns += [array("ids_%d" % tag, sa.Integer).label("id_%d" % tag),
                            array("names_%d" % tag, sa.String).label("name_%d" % tag)]
        if wanted:
            added[tag] = _inserting_cte(table, column, "missing_%d" % tag)
    claimed = sa.select(*claimed_columns).subquery("claimed")

    def resolved(tag: int) -> Any:
        known = claimed.c["id_%d" % tag]
        if tag not in added:
            return known
        inserted = added[tag]
        return sa.func.coalesce(known, sa.select(inserted.c.id).where(
            inserted.c.name == claimed.c["name_%d" % tag]).scalar_subquery())

    project, user, type_ = (resolved(tag) for tag in _IDENTITY_TAGS)
    consumers = (
        postgresql.insert(_CONSUMERS)
        .from_select(
            ["uuid", "project_id", "user_id", "generation", "consumer_type_id", "created_at"],
            sa.select(claimed.c.uuid, project, user, sa.literal(1, sa.Integer), type_, now)
            # Nothing for a consumer whose project, user or type a
            # concurrent writer created: the count tells.
            .where(project.is_not(None), user.is_not(None),
                   sa.or_(claimed.c["name_%d" % _IDENTITY_TAGS[2]].is_(None),
                          type_.is_not(None))))
        .returning(_CONSUMERS.c.id)
        .cte("new_consumers"))
    allocation_columns = ("resource_provider_id", "resource_class_id", "consumer_id", "used")
    allocations = (
        postgresql.insert(tables.allocations)
        .from_select([*allocation_columns, "created_at"], sa.select(
            *[array("allocation_" + column,
                    sa.String if column == "consumer_id" else sa.Integer)
              for column in allocation_columns], now))
        .returning(tables.allocations.c.id)
        .cte("new_allocations"))
    parts = []
    padding = []
    if along is not None:
        # First: PostgreSQL types a UNION's columns a pair of branches at
        # a time, from the left, and two bare NULLs make a text column.
        parts.append(sa.select(sa.literal(_ALONG, sa.Integer), sa.null(),
                               *along.subquery("along").c))
        padding = [sa.null()] * len(along.selected_columns)
    parts += [
        sa.select(sa.literal(_CREATED_CONSUMERS, sa.Integer),
                  sa.select(sa.func.count()).select_from(consumers).scalar_subquery(),
                  *padding),
        sa.select(sa.literal(_CREATED_ALLOCATIONS, sa.Integer),
                  sa.select(sa.func.count()).select_from(allocations).scalar_subquery(),
                  *padding),
    ]
    return sa.union_all(*parts)


def resolve_identities_in(conn: sa.engine.Connection, projects: set[str],
                          users: set[str], types: set[str],
                          known: Identities | None = None) -> Identities:
    """Row ids of these projects, users and consumer types, creating the
    missing ones in the caller's transaction.  ``known`` are ids the caller
    already read (they are never removed, so they cannot have gone since);
    without it they are looked up here.  Names ``known`` lacks are not
    looked up again: inserting them skips any a concurrent writer created
    since, and the locking read below finds those.  (A claim naming a new
    project and user, as the first claim of each does, saves a round trip.)"""
    wanted = (projects, users, types)
    if known is None:
        found = _lookup_all(conn, wanted)
    else:
        found = [{name: ids[name] for name in names if name in ids}
                 for names, ids in zip(wanted, (known.projects, known.users,
                                                known.types), strict=True)]
    missing = [sorted(names - set(have)) for names, have in zip(wanted, found, strict=True)]
    if any(missing):
        for have, added in zip(found, _insert_missing(conn, missing), strict=True):
            have.update(added)
    for (table, column), names, have in zip(_tables(), missing, found, strict=True):
        raced = [name for name in names if name not in have]
        if not raced:
            continue
        # Rows a concurrent writer inserted first.  A locking read sees them
        # even when they were committed after this transaction's snapshot
        # (MySQL's REPEATABLE READ would otherwise hide them).
        rows = conn.execute(sa.select(column, table.c.id)
                            .where(column.in_(raced))
                            .with_for_update(read=True)).all()
        have.update({name: id_ for name, id_ in rows})
    return Identities(*found)


def stored_selects() -> list[sa.Select[Any]]:
    """Queries for the consumers' rows and their allocations, by the
    expanding parameter ``consumer_uuids``, tagged and padded to seven
    columns so that a caller can add them to a UNION of its own;
    :func:`split_stored` sorts the rows back out.

    Allocations are read by consumer uuid, not joined to the consumer rows,
    so that none is missed even if its consumer row were missing.
    """
    c, a = _CONSUMERS, tables.allocations
    wanted: sa.BindParameter[Any] = sa.bindparam("consumer_uuids", expanding=True)
    return [
        sa.select(sa.literal(STORED_CONSUMER, sa.Integer), c.c.uuid, c.c.id,
                  c.c.project_id, c.c.user_id, c.c.generation, c.c.consumer_type_id)
        .where(c.c.uuid.in_(wanted)),
        sa.select(sa.literal(STORED_ALLOCATION, sa.Integer), a.c.consumer_id, a.c.id,
                  a.c.resource_provider_id, a.c.resource_class_id, a.c.used,
                  sa.cast(sa.null(), sa.Integer))
        .where(a.c.consumer_id.in_(wanted)),
    ]


def split_stored(rows: Iterable[Sequence[Any]]
                 ) -> tuple[dict[str, StoredConsumer], list[StoredAllocation], Identities]:
    """The consumers, allocations and identities among rows of
    :func:`stored_selects` and :func:`identity_selects`."""
    consumers: dict[str, StoredConsumer] = {}
    allocations: list[StoredAllocation] = []
    identities = Identities({}, {}, {})
    by_tag = dict(zip(_IDENTITY_TAGS, (identities.projects, identities.users,
                                       identities.types), strict=True))
    for kind, uuid, id_, first, second, third, fourth in rows:
        if kind == STORED_CONSUMER:
            consumers[uuid] = StoredConsumer(id_, uuid, first, second, third, fourth)
        elif kind == STORED_ALLOCATION:
            allocations.append(StoredAllocation(id_, uuid, first, second, third))
        elif kind in by_tag:
            by_tag[kind][uuid] = id_
    return consumers, allocations, identities


@functools.cache
def _public_select() -> sa.Select[Any]:
    """A consumer as clients see it, by the parameter ``uuid``; built once."""
    c = _CONSUMERS
    return sa.select(
        c.c.uuid, _PROJECTS.c.external_id.label("project_id"),
        _USERS.c.external_id.label("user_id"), c.c.generation,
        _TYPES.c.name.label("consumer_type"),
    ).select_from(
        c.join(_PROJECTS, _PROJECTS.c.id == c.c.project_id)
        .join(_USERS, _USERS.c.id == c.c.user_id)
        .outerjoin(_TYPES, _TYPES.c.id == c.c.consumer_type_id)
    ).where(c.c.uuid == sa.bindparam("uuid"))


def get_in(conn: sa.engine.Connection, uuid: str) -> Consumer | None:
    row = conn.execute(_public_select(), {"uuid": uuid}).one_or_none()
    return Consumer(*row) if row is not None else None


def generations_in(conn: sa.engine.Connection, uuids: Iterable[str]) -> dict[str, int]:
    """``{uuid: generation}`` of those consumers that exist."""
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    c = _CONSUMERS
    rows = conn.execute(sa.select(c.c.uuid, c.c.generation)
                        .where(c.c.uuid.in_(wanted))).all()
    return {uuid: generation for uuid, generation in rows}


@dataclasses.dataclass(frozen=True)
class ConsumerWrite:
    """What one allocation write does to one consumer.

    ``project_id``/``user_id``/``consumer_type_id`` are row ids.  An
    existing consumer keeps its project and user when ``keep_identity`` is
    set (a write before microversion 1.8 names none), and its type when
    ``consumer_type_id`` is None (a write before 1.38).
    ``keeps_allocations`` False means the consumer ends the write without
    allocations, and its row goes.
    """

    uuid: str
    project_id: int
    user_id: int
    consumer_type_id: int | None
    keeps_allocations: bool
    keep_identity: bool = False


class ConsumerChanged(Exception):
    """A consumer row changed since it was read: the write must start over."""


# The statements of save_in, built once: a write runs them with its values.
_UPDATE = (_CONSUMERS.update()
           .where(_CONSUMERS.c.id == sa.bindparam("row_id"),
                  _CONSUMERS.c.generation == sa.bindparam("read_generation"))
           .values(generation=sa.bindparam("new_generation"),
                   updated_at=sa.bindparam("now"),
                   project_id=sa.bindparam("new_project_id"),
                   user_id=sa.bindparam("new_user_id"),
                   consumer_type_id=sa.bindparam("new_type_id")))
_DELETE = _CONSUMERS.delete().where(
    _CONSUMERS.c.id == sa.bindparam("row_id"),
    _CONSUMERS.c.generation == sa.bindparam("read_generation"))
_INSERT = _CONSUMERS.insert()


def save_in(conn: sa.engine.Connection, writes: list[ConsumerWrite],
            stored: dict[str, StoredConsumer]) -> None:
    """Insert, update or delete consumer rows after their allocations changed.

    Every change of an existing row is a compare-and-swap on the generation
    that was read; a concurrent writer of the same consumer makes it fail
    with :class:`ConsumerChanged`.  New consumers start at generation 1
    (0 plus this write).
    """
    now = _utcnow()
    new_rows = []
    for write in writes:
        old = stored.get(write.uuid)
        if old is None:
            if write.keeps_allocations:
                new_rows.append({
                    "uuid": write.uuid, "project_id": write.project_id,
                    "user_id": write.user_id, "generation": 1,
                    "consumer_type_id": write.consumer_type_id, "created_at": now,
                })
            continue
        same = {"row_id": old.id, "read_generation": old.generation}
        if write.keeps_allocations:
            type_id = write.consumer_type_id
            keep = write.keep_identity
            result = conn.execute(_UPDATE, {
                **same, "new_generation": old.generation + 1, "now": now,
                "new_project_id": old.project_id if keep else write.project_id,
                "new_user_id": old.user_id if keep else write.user_id,
                "new_type_id": old.consumer_type_id if type_id is None else type_id})
        else:
            result = conn.execute(_DELETE, same)
        if result.rowcount != 1:
            raise ConsumerChanged(write.uuid)
    if new_rows:
        conn.execute(_INSERT, new_rows)


def deleting_cte() -> Any:
    """PostgreSQL: the compare-and-swap deletes of :func:`save_in` as a
    WITH clause of a statement that does more, for the consumers of the
    integer array parameters ``row_ids`` and ``read_generations`` (one
    element each); returns the ids of the rows deleted, whose count tells
    whether a concurrent writer changed any (then :class:`ConsumerChanged`)."""
    from sqlalchemy.dialects import postgresql

    wanted = sa.select(
        sa.func.unnest(sa.bindparam("row_ids", type_=postgresql.ARRAY(sa.Integer)))
        .label("row_id"),
        sa.func.unnest(sa.bindparam("read_generations", type_=postgresql.ARRAY(sa.Integer)))
        .label("generation"),
    ).subquery("read")
    return (_CONSUMERS.delete()
            .where(_CONSUMERS.c.id == wanted.c.row_id,
                   _CONSUMERS.c.generation == wanted.c.generation)
            .returning(_CONSUMERS.c.id)
            .cte("dropped"))


def delete_in(conn: sa.engine.Connection, consumer: StoredConsumer) -> None:
    """Remove a consumer whose allocations were all deleted."""
    deleted = conn.execute(_CONSUMERS.delete().where(
        _CONSUMERS.c.id == consumer.id, _CONSUMERS.c.generation == consumer.generation))
    if deleted.rowcount != 1:
        raise ConsumerChanged(consumer.uuid)


def check_generations(stored: dict[str, StoredConsumer],
                      expected: dict[str, int | None]) -> None:
    """ConsumerGenerationConflict unless each consumer is at the expected
    generation; None expects the consumer not to exist yet."""
    for uuid, want in expected.items():
        row = stored.get(uuid)
        if row is None and want is not None:
            raise exceptions.ConsumerGenerationConflict(expected="null", got=want)
        if row is not None and row.generation != want:
            raise exceptions.ConsumerGenerationConflict(
                expected=row.generation, got=want)
