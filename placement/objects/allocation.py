"""Allocations: reading them, and replacing the allocations of consumers
without ever overcommitting a provider.

How a write stays right under concurrency (``replace_all``):

1. *Plan* (one query; see :func:`writing`): resolve provider uuids and
   class names to ids, read the consumers' rows and allocations, and the
   ids of the projects, users and consumer types the claims name.  The
   statements of a write are built once (bound parameters, expanding
   ``IN`` lists), so a claim costs SQLAlchemy no statement construction.
2. *Write*, in one writer transaction whose first statement after the
   plan is ``db.api.lock_providers`` on every provider involved (those
   claimed from and those the consumers leave), in id order.  Writers of
   the same providers queue there (SQLite: the whole database, by
   ``BEGIN IMMEDIATE``), so usage and inventory read afterwards are what
   the previous writer committed -- on MySQL too, whose REPEATABLE READ
   snapshot starts at the first plain read after the lock.  Then: check
   consumer generations, compare the usage the write would leave with
   capacity, delete the consumers' old allocations (by primary key, so
   MySQL takes no gap locks) and count a removal for each provider that
   lost some (``db/allocation_removals.py``: how workers learn that its
   usage changed without a generation bump), insert the new ones in one
   batch, save the consumers with a compare-and-swap on their generation
   (creating missing projects, users and consumer types on the way; on
   PostgreSQL a write that only creates consumers does all three in one
   statement, :func:`consumer.create_with_allocations_in`, which also
   reads the capacities it is checked against, and one that
   only removes deletes, counts and drops its consumers in one,
   :func:`_remove_all_in`), and
   increment the
   generations of providers as :func:`bumped_provider_ids` says -- on
   PostgreSQL in the locking statement itself
   (``db.api.lock_and_bump_providers``), which a failed check rolls back
   with everything else.
   Removing all of a consumer's allocations (:func:`delete_all_for_consumer`)
   skips the provider locks: it can overcommit nothing and bumps no
   provider generation, and the compare-and-swap on the consumer catches a
   concurrent writer of the same consumer.
3. A deadlock, or a consumer changed or created by someone else since the
   plan (the compare-and-swap or the unique consumer uuid tells), rolls
   the transaction back and the whole write starts again from step 1, up
   to ``[placement] allocation_conflict_retry_count`` times.  Nothing is
   ever retried inside a transaction that failed.

The reshaper uses the same pieces (:func:`writing`, :func:`begin_in`,
:func:`check_claims_in`, :func:`check_capacity_and_apply_in`,
:func:`bump_providers_in`)
around its inventory changes.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import functools
import logging
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TYPE_CHECKING, TypeVar

import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement import exceptions
from placement.db import allocation_removals
from placement.db import api as db_api
from placement.db import commit_outcome
from placement.db import tables
from placement.objects import consumer as consumer_obj
from placement.objects import inventory as inv_obj
from placement.objects import resource_class as rc_obj

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)

_ALLOC = tables.allocations
_RP = tables.resource_providers

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class ConsumerClaim:
    """The allocations one consumer is to hold after a write.

    ``resources`` maps provider uuid to ``{class: amount}``; empty means the
    consumer gives up all its allocations.  ``project_id``/``user_id`` are
    None before microversion 1.8 and ``consumer_type`` before 1.38.
    ``check_generation`` (1.28) compares ``generation`` with the consumer's;
    None there means the consumer must not exist yet.
    """

    consumer_uuid: str
    resources: Mapping[str, Mapping[str, int]]
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None
    generation: int | None = None
    check_generation: bool = False


@dataclasses.dataclass(frozen=True)
class Allocation:
    provider_uuid: str
    provider_generation: int
    consumer_uuid: str
    consumer_generation: int
    resource_class: str
    used: int
    last_modified: datetime.datetime | None


@dataclasses.dataclass(frozen=True)
class WriteState:
    """The consumers of a write as they were stored when it was planned."""

    stored: dict[str, consumer_obj.StoredConsumer]
    old: tuple[consumer_obj.StoredAllocation, ...]


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a write resolved before taking its locks (see :func:`writing`)."""

    claims: tuple[ConsumerClaim, ...]
    provider_ids: dict[str, int]
    missing_provider: str | None
    class_ids: dict[str, int]
    missing_class: str | None
    state: WriteState
    lock_ids: frozenset[int]
    # Other providers locked, by uuid (those whose inventories a reshape
    # replaces); unknown ones are absent.
    also_locked: dict[str, int]
    # Project and user of consumers created before microversion 1.8.
    incomplete: tuple[str, str]
    # Ids of the projects, users and consumer types the claims name, as
    # far as they existed when the plan was read.
    identities: consumer_obj.Identities | None = None

    @property
    def consumer_uuids(self) -> list[str]:
        return [claim.consumer_uuid for claim in self.claims]


# What a write's own checks raise when a concurrent writer got in first.
_COLLISIONS = (db_exc.DBDuplicateEntry, consumer_obj.ConsumerChanged)


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def with_retries(ctx: RequestContext, write: str, attempt: Callable[[], T]) -> T:
    """Run ``attempt`` (a whole transaction, the write named ``write`` in
    the log) until it does not collide.

    AllocationsConflict once ``[placement] allocation_conflict_retry_count``
    retries collided too.
    """
    retries = ctx.config.placement.allocation_conflict_retry_count
    try:
        return db_api.run_with_retries(write, attempt, retries,
                                       also=_COLLISIONS)
    except Exception as exc:
        if isinstance(exc, _COLLISIONS) or db_api.collided(exc):
            raise exceptions.AllocationsConflict() from None
        raise


_PROVIDER, _CLASS = 0, 1


@functools.cache
def _lookup_statement() -> sa.CompoundSelect:
    """Everything a write resolves before its locks, by the expanding
    parameters ``provider_uuids``, ``class_names``, ``consumer_uuids``,
    ``projects``, ``users`` and ``consumer_types``; built once."""
    rc = tables.resource_classes
    padding = [sa.cast(sa.null(), sa.Integer)] * 4
    return sa.union_all(
        sa.select(sa.literal(_PROVIDER, sa.Integer), _RP.c.uuid, _RP.c.id, *padding)
        .where(_RP.c.uuid.in_(sa.bindparam("provider_uuids", expanding=True))),
        sa.select(sa.literal(_CLASS, sa.Integer), rc.c.name, rc.c.id, *padding)
        .where(rc.c.name.in_(sa.bindparam("class_names", expanding=True))),
        *consumer_obj.stored_selects(),
        *consumer_obj.identity_selects(),
    )


@dataclasses.dataclass(frozen=True)
class _Found:
    providers: dict[str, int]
    classes: dict[str, int]
    stored: dict[str, consumer_obj.StoredConsumer]
    old: list[consumer_obj.StoredAllocation]
    identities: consumer_obj.Identities | None


def _lookups(conn: sa.engine.Connection, provider_uuids: Sequence[str],
             claims: Sequence[ConsumerClaim], class_names: set[str],
             incomplete: tuple[str, str]) -> _Found:
    """Provider ids by uuid, class ids by name, the consumers' rows and
    allocations, and the ids of the projects, users and consumer types the
    claims name -- in one round trip (none when there is nothing to look up)."""
    if not (provider_uuids or claims or class_names):
        return _Found({}, {}, {}, [], None)
    keeping = [claim for claim in claims if claim.resources]
    project, user = incomplete
    rows = db_api.rendered_rows(conn, _lookup_statement(), {
        "provider_uuids": sorted(set(provider_uuids)),
        "class_names": sorted(class_names),
        "consumer_uuids": sorted({claim.consumer_uuid for claim in claims}),
        "projects": sorted({claim.project_id or project for claim in keeping}),
        "users": sorted({claim.user_id or user for claim in keeping}),
        "consumer_types": sorted({claim.consumer_type for claim in keeping
                                  if claim.consumer_type}),
    })
    providers = {row[1]: row[2] for row in rows if row[0] == _PROVIDER}
    classes = {row[1]: row[2] for row in rows if row[0] == _CLASS}
    stored, old, identities = consumer_obj.split_stored(rows)
    return _Found(providers, classes, stored, old, identities)


def _first_missing(wanted: Iterable[str], found: Mapping[str, int]) -> str | None:
    return next((name for name in wanted if name not in found), None)


def _prepare_in(conn: sa.engine.Connection, ctx: RequestContext,
                claims: Sequence[ConsumerClaim], also_lock: Sequence[str]) -> Plan:
    provider_uuids = list(dict.fromkeys(
        uuid for claim in claims for uuid in claim.resources))
    class_names = {name for claim in claims
                   for resources in claim.resources.values() for name in resources}
    placement_conf = ctx.config.placement
    incomplete = (placement_conf.incomplete_consumer_project_id,
                  placement_conf.incomplete_consumer_user_id)
    found = _lookups(conn, [*provider_uuids, *also_lock], claims, class_names,
                     incomplete)
    known = found.providers
    provider_ids = {uuid: known[uuid] for uuid in provider_uuids if uuid in known}
    return Plan(claims=tuple(claims), provider_ids=provider_ids,
                missing_provider=_first_missing(provider_uuids, provider_ids),
                class_ids=found.classes,
                missing_class=_first_missing(sorted(class_names), found.classes),
                state=WriteState(stored=found.stored, old=tuple(found.old)),
                lock_ids=frozenset(known.values())
                | {row.resource_provider_id for row in found.old},
                also_locked={uuid: known[uuid] for uuid in also_lock if uuid in known},
                incomplete=incomplete, identities=found.identities)


Claims = Sequence[ConsumerClaim]


@contextlib.contextmanager
def writing(ctx: RequestContext,
            claims: Claims | Callable[[sa.engine.Connection], Claims],
            also_lock: Sequence[str] = ()
            ) -> Iterator[tuple[sa.engine.Connection, Plan]]:
    """Steps 1 and 2 of a write: the plan, and the writer transaction.

    ``claims`` may be a function of a connection when what to claim
    depends on what the database holds (a bare-metal allocation picks a
    free node): it reads on the connection the plan is read on, so that a
    whole claim is one transaction where the database allows.
    ``also_lock`` names more providers (by uuid) to resolve and lock with
    the others.  Unknown providers and classes are noted in the plan, not
    raised: Placement reports a consumer generation conflict first
    (:func:`check_claims_in`).

    Where a transaction's first read fixes its snapshot (MySQL), the plan
    is read in a transaction of its own, so that the writer's snapshot
    comes after its provider locks.
    """
    def plan_in(conn: sa.engine.Connection) -> Plan:
        decided = claims(conn) if callable(claims) else claims
        return _prepare_in(conn, ctx, decided, also_lock)

    if ctx.db.snapshot_at_first_read:
        with ctx.db.reader() as conn:
            plan = plan_in(conn)
        with ctx.db.writer() as conn:
            yield conn, plan
        return
    with ctx.db.writer() as conn:
        yield conn, plan_in(conn)


def begin_in(conn: sa.engine.Connection, plan: Plan) -> WriteState:
    """Lock the providers; what the write found of its consumers.

    The consumers and their allocations were read with the plan, before the
    locks.  Had another writer changed them since, the compare-and-swap on
    the consumer generation (or the unique consumer uuid) fails when this
    write saves them, and the write starts over: every change of a
    consumer's allocations changes its generation, and a consumer deleted
    and created again has a new row id.
    """
    db_api.lock_providers(conn, sorted(plan.lock_ids))
    return plan.state


def begin_and_bump_in(conn: sa.engine.Connection, plan: Plan
                      ) -> tuple[WriteState, set[int]]:
    """:func:`begin_in`, incrementing the generations of the providers the
    write bumps (:func:`bumped_provider_ids`) in the locking statement
    where the database allows (PostgreSQL: a claim's round trips go from
    two to one); the providers still to bump (:func:`bump_providers_in`)
    at the end of the write."""
    if plan.missing_provider is not None or plan.missing_class is not None:
        return begin_in(conn, plan), set()  # refused by check_claims_in
    bumped = bumped_provider_ids(plan, plan.state)
    if db_api.lock_and_bump_providers(conn, plan.lock_ids, bumped, _utcnow()):
        return plan.state, set()
    return plan.state, bumped


def check_claims_in(plan: Plan, state: WriteState) -> None:
    """Consumer generations first, then unknown providers and classes: the
    order in which Placement reports them."""
    consumer_obj.check_generations(state.stored, {
        claim.consumer_uuid: claim.generation
        for claim in plan.claims if claim.check_generation})
    if plan.missing_provider is not None:
        raise exceptions.ProviderNotFound(uuid=plan.missing_provider)
    if plan.missing_class is not None:
        raise exceptions.ResourceClassNotFound(name=plan.missing_class)


def _consumer_writes(conn: sa.engine.Connection, plan: Plan
                     ) -> list[consumer_obj.ConsumerWrite]:
    """What to store for each consumer, with the row ids of its project,
    user and type (created now when new)."""
    keeping = [claim for claim in plan.claims if claim.resources]
    project, user = plan.incomplete
    ids = consumer_obj.resolve_identities_in(
        conn, {claim.project_id or project for claim in keeping},
        {claim.user_id or user for claim in keeping},
        {claim.consumer_type for claim in keeping if claim.consumer_type},
        known=plan.identities)
    return [
        consumer_obj.ConsumerWrite(
            uuid=claim.consumer_uuid,
            project_id=ids.projects.get(claim.project_id or project, 0),
            user_id=ids.users.get(claim.user_id or user, 0),
            consumer_type_id=ids.types.get(claim.consumer_type or "", None),
            keeps_allocations=bool(claim.resources),
            keep_identity=claim.project_id is None)
        for claim in plan.claims]


# Statements of the write, built once: a write runs them with its values.
_DELETE_ALLOCATIONS = _ALLOC.delete().where(
    _ALLOC.c.id.in_(sa.bindparam("allocation_ids", expanding=True)))
# The same, telling the transaction's id (PostgreSQL; see
# commit_outcome.wants_transaction_id) to a write that took no provider locks.
_DELETE_ALLOCATIONS_TELLING_XID = _DELETE_ALLOCATIONS.returning(
    commit_outcome.TRANSACTION_ID)
_INSERT_ALLOCATIONS = _ALLOC.insert()
_BUMP = (_RP.update()
         .where(_RP.c.id.in_(sa.bindparam("provider_ids", expanding=True)))
         .values(generation=_RP.c.generation + 1, updated_at=sa.bindparam("now")))


def apply_in(conn: sa.engine.Connection, plan: Plan, state: WriteState) -> None:
    """Replace the allocations and save the consumers."""
    if _only_removes(conn, plan, state):
        _remove_all_in(conn, plan, state)
        return
    if state.old:
        old_ids = {"allocation_ids": [row.id for row in state.old]}
        if commit_outcome.wants_transaction_id(conn):
            told = conn.execute(_DELETE_ALLOCATIONS_TELLING_XID, old_ids).first()
            if told is not None:
                commit_outcome.note_transaction_id(conn, told[0])
        else:
            conn.execute(_DELETE_ALLOCATIONS, old_ids)
        # Taking allocations away changes usage without a generation bump:
        # the count tells workers to read these providers' usage again.
        allocation_removals.count_in(conn, {row.resource_provider_id for row in state.old})
    rows = _allocation_rows(plan)
    if rows:
        conn.execute(_INSERT_ALLOCATIONS, rows)
    consumer_obj.save_in(conn, _consumer_writes(conn, plan), state.stored)


def _allocation_rows(plan: Plan) -> list[dict[str, Any]]:
    """The rows of the allocations table the claims write."""
    now = _utcnow()
    return [
        {"resource_provider_id": plan.provider_ids[provider_uuid],
         "resource_class_id": plan.class_ids[name], "consumer_id": claim.consumer_uuid,
         "used": amount, "created_at": now}
        for claim in plan.claims
        for provider_uuid, resources in claim.resources.items()
        for name, amount in resources.items()
    ]


def _only_removes(conn: sa.engine.Connection, plan: Plan, state: WriteState) -> bool:
    """Whether the write takes every allocation of its consumers away (a
    deleted or moved instance) and nothing else, where one statement can
    do all of it (PostgreSQL; see _remove_all_in)."""
    return (conn.dialect.name == "postgresql" and bool(state.old)
            and not any(claim.resources for claim in plan.claims))


@functools.cache
def _remove_all_statement() -> sa.Select[Any]:
    """Delete the allocation rows of the array parameter
    ``allocation_ids``, count a removal for each provider of
    ``removed_from`` and delete the consumer rows with a compare-and-swap
    (consumer.deleting_cte); returns the transaction id, and the number
    of consumer rows deleted.  The scalar subqueries run in the order
    written, which is the order every write takes these row locks in:
    allocations, removal counts, consumers."""
    from sqlalchemy.dialects import postgresql

    gone = (_ALLOC.delete()
            .where(_ALLOC.c.id == sa.any_(sa.bindparam(
                "allocation_ids", type_=postgresql.ARRAY(sa.Integer))))
            .returning(_ALLOC.c.id)
            .cte("gone"))
    counted = allocation_removals.counting_cte()
    dropped = consumer_obj.deleting_cte()

    def count(cte: Any) -> Any:
        return sa.select(sa.func.count()).select_from(cte).scalar_subquery()

    return sa.select(commit_outcome.TRANSACTION_ID, count(gone), count(counted),
                     count(dropped))


def _remove_all_in(conn: sa.engine.Connection, plan: Plan, state: WriteState) -> None:
    """:func:`apply_in` for a write that only removes (see _only_removes),
    in one statement where it would take three: the allocations, the
    removal counts, the consumers."""
    dropping = [state.stored[claim.consumer_uuid] for claim in plan.claims
                if claim.consumer_uuid in state.stored]
    [row] = db_api.rendered_rows(conn, _remove_all_statement(), {
        "allocation_ids": [row.id for row in state.old],
        "removed_from": sorted({row.resource_provider_id for row in state.old}),
        "row_ids": [consumer.id for consumer in dropping],
        "read_generations": [consumer.generation for consumer in dropping],
    })
    if commit_outcome.wants_transaction_id(conn):
        commit_outcome.note_transaction_id(conn, row[0])
    if row[3] != len(dropping):
        raise consumer_obj.ConsumerChanged(", ".join(c.uuid for c in dropping))


def _only_creates(conn: sa.engine.Connection, plan: Plan, state: WriteState) -> bool:
    """Whether the write only creates consumers, each with allocations (a
    scheduler's claim), where one statement can do all of it (PostgreSQL;
    see consumer.create_with_allocations_in)."""
    return (conn.dialect.name == "postgresql" and not state.old and not state.stored
            and plan.identities is not None
            and all(claim.resources for claim in plan.claims))


def bumped_provider_ids(plan: Plan, state: WriteState) -> set[int]:
    """The providers whose generation a write increments, as OpenStack
    Placement's clients know it: those consumers are given allocations on,
    and those left by a consumer whose allocations are all removed.  A
    provider a consumer moves away from keeps its generation: taking
    allocations away can overcommit nothing, and writers of a provider are
    serialised by its lock, not by its generation."""
    emptied = {claim.consumer_uuid for claim in plan.claims if not claim.resources}
    return ({plan.provider_ids[uuid] for claim in plan.claims for uuid in claim.resources}
            | {row.resource_provider_id for row in state.old if row.consumer_id in emptied})


def bump_providers_in(conn: sa.engine.Connection, provider_ids: Iterable[int]) -> None:
    """Increment the generation of providers this transaction has locked."""
    ids = sorted(set(provider_ids))
    if ids:
        conn.execute(_BUMP, {"provider_ids": ids, "now": _utcnow()})


def check_capacity_and_apply_in(conn: sa.engine.Connection, plan: Plan,
                                state: WriteState) -> None:
    """:func:`check_capacity_in`, then :func:`apply_in`.

    On PostgreSQL a write that only creates consumers (a scheduler's
    claim) does both in one statement (see _only_creates): the capacities
    are read along with the insert, as they were before it, and checked
    after it; a refusal raised then rolls the insert back with the rest
    of the transaction.  One round trip fewer per claim.
    """
    requested = _requested(plan)
    if not _only_creates(conn, plan, state) or any(
            amount > inv_obj.MAX_INT for _uuid, _name, amount in requested):
        # (An amount no column holds is refused by the check, as a
        # constraint violation, before an insert could fail on it.)
        check_capacity_in(conn, plan, state)
        apply_in(conn, plan, state)
        return
    project, user = plan.incomplete
    assert plan.identities is not None  # read with the plan
    read = consumer_obj.create_with_allocations_in(
        conn, [consumer_obj.NewConsumer(claim.consumer_uuid, claim.project_id or project,
                                        claim.user_id or user, claim.consumer_type)
               for claim in plan.claims],
        _allocation_rows(plan), plan.identities,
        along=inv_obj.capacities_statement(),
        along_params={"provider_ids": sorted(set(plan.provider_ids.values())),
                      "class_ids": sorted(set(plan.class_ids.values()))})
    _check_capacity(plan, state, requested, inv_obj.capacities_of(read))


def _requested(plan: Plan) -> list[tuple[str, str, int]]:
    """(provider uuid, class name, amount) of every claim."""
    return [(uuid, name, amount) for claim in plan.claims
            for uuid, resources in claim.resources.items()
            for name, amount in resources.items()]


def check_capacity_in(conn: sa.engine.Connection, plan: Plan, state: WriteState) -> None:
    """Refuse the claims unless every provider can hold them.

    Runs before :func:`apply_in`, under the provider locks: the usage after
    the write is the usage now, minus the consumers' old allocations, plus
    their new ones.  A (provider, class) already over capacity (its
    inventory shrank) may still be written as long as the write does not
    increase its usage, which lets consumers shrink or move away.
    """
    requested = _requested(plan)
    if requested:
        _check_capacity(plan, state, requested, inv_obj.capacities_in(
            conn, plan.provider_ids.values(), plan.class_ids.values()))


def _check_capacity(plan: Plan, state: WriteState,
                    requested: Sequence[tuple[str, str, int]],
                    inventory: Mapping[tuple[int, int], inv_obj.Capacity]) -> None:
    """:func:`check_capacity_in` of the ``requested`` amounts (see
    :func:`_requested`) on the ``inventory`` read under the locks."""
    with_inventory = {rp_id for rp_id, _rc in inventory}
    bare = [uuid for uuid, id_ in plan.provider_ids.items() if id_ not in with_inventory]
    if bare:
        raise exceptions.InventoryInvalid(
            resource_class=", ".join(sorted(plan.class_ids)),
            resource_provider=", ".join(bare))
    change: collections.Counter[tuple[int, int]] = collections.Counter()
    for uuid, name, amount in requested:
        change[plan.provider_ids[uuid], plan.class_ids[name]] += amount
    for row in state.old:
        change[row.resource_provider_id, row.resource_class_id] -= row.used
    for uuid, name, amount in requested:
        key = (plan.provider_ids[uuid], plan.class_ids[name])
        inv = inventory.get(key)
        if inv is None:
            raise exceptions.InventoryInvalid(resource_class=name, resource_provider=uuid)
        if (amount < inv.min_unit or amount > inv.max_unit
                or amount % inv.step_size != 0):
            raise exceptions.AllocationConstraintsViolated(
                resource_class=name, resource_provider=uuid)
        if inv.used + change[key] > inv.capacity and change[key] > 0:
            LOG.info("Over capacity for %s on provider %s: %s used, %s wanted, "
                     "capacity %s", name, uuid, inv.used, change[key], inv.capacity)
            raise exceptions.AllocationCapacityExceeded(
                resource_class=name, resource_provider=uuid)


def replace_all(ctx: RequestContext, claims: Sequence[ConsumerClaim]) -> None:
    """Give each consumer exactly the allocations of its claim, atomically.

    Raises ProviderNotFound, ResourceClassNotFound, InventoryInvalid (and
    its capacity/constraint subclasses), ConsumerGenerationConflict or
    AllocationsConflict; nothing is written then.
    """
    def attempt() -> None:
        with writing(ctx, claims) as (conn, plan):
            state, still_to_bump = begin_and_bump_in(conn, plan)
            check_claims_in(plan, state)
            check_capacity_and_apply_in(conn, plan, state)
            bump_providers_in(conn, still_to_bump)

    with_retries(ctx, "allocation.replace_all", attempt)


def delete_all_for_consumer(ctx: RequestContext, consumer_uuid: str) -> None:
    """Remove every allocation of a consumer, and the consumer.

    ConsumerAllocationsNotFound when it has none.
    """
    claim = ConsumerClaim(consumer_uuid=consumer_uuid, resources={})

    def attempt() -> None:
        with writing(ctx, [claim]) as (conn, plan):
            # No provider lock: taking allocations away can overcommit
            # nothing, and no provider generation changes (as with
            # OpenStack Placement).  A concurrent writer of this consumer
            # is caught by the compare-and-swap on its generation (the
            # write then starts over); the rows deleted are locked by
            # primary key, then the consumer row, in the order every
            # allocation write takes them.
            state = plan.state
            if not state.old:
                raise exceptions.ConsumerAllocationsNotFound(uuid=consumer_uuid)
            apply_in(conn, plan, state)

    with_retries(ctx, "allocation.delete_all_for_consumer", attempt)


@functools.cache
def _select_allocations() -> sa.Select[Any]:
    """Allocations with what clients see of their provider and consumer;
    built once (see _by_consumer, _by_provider)."""
    c = tables.consumers
    return sa.select(
        _RP.c.uuid.label("provider_uuid"), _RP.c.generation.label("provider_generation"),
        _ALLOC.c.consumer_id, c.c.generation.label("consumer_generation"),
        _ALLOC.c.resource_class_id, _ALLOC.c.used,
        sa.func.coalesce(_ALLOC.c.updated_at, _ALLOC.c.created_at).label("stamp"),
    ).select_from(
        _ALLOC.join(_RP, _RP.c.id == _ALLOC.c.resource_provider_id)
        .join(c, c.c.uuid == _ALLOC.c.consumer_id)
    ).order_by(_ALLOC.c.id)


def _to_allocations(conn: sa.engine.Connection, rows: Sequence[Any]) -> list[Allocation]:
    names = rc_obj.names_by_id(conn, {row.resource_class_id for row in rows})
    return [Allocation(row.provider_uuid, row.provider_generation, row.consumer_id,
                       row.consumer_generation, names[row.resource_class_id],
                       row.used, row.stamp)
            for row in rows]


def get_by_consumer(ctx: RequestContext, consumer_uuid: str
                    ) -> tuple[consumer_obj.Consumer | None, list[Allocation]]:
    """The consumer (None when unknown) and its allocations."""
    with ctx.db.reader() as conn:
        consumer = consumer_obj.get_in(conn, consumer_uuid)
        if consumer is None:
            return None, []
        rows = conn.execute(_by_consumer(), {"consumer_uuid": consumer_uuid}).all()
        return consumer, _to_allocations(conn, rows)


@functools.cache
def _by_consumer() -> sa.Select[Any]:
    return _select_allocations().where(_ALLOC.c.consumer_id == sa.bindparam("consumer_uuid"))


@functools.cache
def _provider_generation() -> sa.Select[Any]:
    return sa.select(_RP.c.generation).where(_RP.c.uuid == sa.bindparam("provider_uuid"))


@functools.cache
def _by_provider() -> sa.Select[Any]:
    # Placement's database reads a provider's allocations through its
    # (provider, class, used) index, so they come by class, then amount,
    # then age; consumers and classes are listed in that order.
    return (_select_allocations().where(_RP.c.uuid == sa.bindparam("provider_uuid"))
            .order_by(None).order_by(_ALLOC.c.resource_class_id, _ALLOC.c.used,
                                     _ALLOC.c.id))


def get_by_provider(ctx: RequestContext, provider_uuid: str) -> tuple[int, list[Allocation]]:
    """The provider's generation and the allocations against it.

    ProviderNotFound when there is no such provider.
    """
    with ctx.db.reader() as conn:
        params = {"provider_uuid": provider_uuid}
        generation = conn.execute(_provider_generation(), params).scalar_one_or_none()
        if generation is None:
            raise exceptions.ProviderNotFound(uuid=provider_uuid)
        rows = conn.execute(_by_provider(), params).all()
        return generation, _to_allocations(conn, rows)
