"""Traits: standard ones (os-traits) and CUSTOM_ ones, and the traits of
each provider.

Standard traits are rows like custom ones (``db sync`` inserts them); what
makes a trait standard is its name, and standard traits cannot be deleted.
A provider's traits live in ``resource_provider_traits``; changing them
changes the provider, so it bumps the provider's generation.  A write that
leaves the set as it was (the same list again, or removing the traits of a
provider that has none) does not, as in Placement.

Other objects translate between trait names and ids with
:func:`ids_by_name` and :func:`names_by_id`.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
from typing import TYPE_CHECKING, Any, Iterable

import os_traits
import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement import exceptions
from placement.db import api as db_api
from placement.db import tables
from placement.objects import resource_provider

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)
_TRAITS = tables.traits
_RP_TRAITS = tables.resource_provider_traits


@dataclasses.dataclass(frozen=True)
class Trait:
    id: int
    name: str
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None


@dataclasses.dataclass(frozen=True)
class TraitFilter:
    """What GET /traits asks for; None means "do not filter on this"."""

    name_in: list[str] | None = None
    prefix: str | None = None
    associated: bool | None = None


@dataclasses.dataclass(frozen=True)
class ProviderTraits:
    """A provider's traits and the generation they belong to."""

    generation: int
    traits: list[Trait]


def _inserted_id(result: sa.CursorResult[Any]) -> int:
    key = result.inserted_primary_key
    assert key is not None, "an insert without a primary key"
    return int(key[0])


def is_custom(name: str) -> bool:
    return name.startswith(os_traits.CUSTOM_NAMESPACE)


def _traits() -> sa.Select[Any]:
    return sa.select(_TRAITS.c.id, _TRAITS.c.name, _TRAITS.c.created_at,
                     _TRAITS.c.updated_at)


def _from_row(row: sa.Row[Any]) -> Trait:
    return Trait(id=row.id, name=row.name, created_at=row.created_at,
                 updated_at=row.updated_at)


def _get_in(conn: sa.engine.Connection, name: str) -> Trait:
    row = conn.execute(_traits().where(_TRAITS.c.name == name)).one_or_none()
    if row is None:
        raise exceptions.TraitNotFound(names=name)
    return _from_row(row)


def _filtered(query: sa.Select[Any], wanted: TraitFilter) -> sa.Select[Any]:
    if wanted.name_in is not None:
        query = query.where(_TRAITS.c.name.in_(sorted(set(wanted.name_in))))
    if wanted.prefix is not None:
        query = query.where(_TRAITS.c.name.startswith(wanted.prefix,
                                                      autoescape=True))
    if wanted.associated is not None:
        used = sa.exists().where(_RP_TRAITS.c.trait_id == _TRAITS.c.id)
        query = query.where(used if wanted.associated else ~used)
    return query


def get_all(ctx: RequestContext, wanted: TraitFilter | None = None) -> list[Trait]:
    """The traits matching ``wanted`` (all of them by default), oldest first."""
    query = _filtered(_traits(), wanted or TraitFilter()).order_by(_TRAITS.c.id)
    with ctx.db.reader() as conn:
        return [_from_row(row) for row in conn.execute(query).all()]


def get_by_name(ctx: RequestContext, name: str) -> Trait:
    """The trait called ``name``; TraitNotFound when there is none."""
    with ctx.db.reader() as conn:
        return _get_in(conn, name)


@db_api.retry_on_conflict
def ensure(ctx: RequestContext, name: str) -> tuple[Trait, bool]:
    """The trait ``name``, created if missing; and whether it was.

    Two requests creating the same trait at once both succeed: the one
    that loses the insert race reports the trait as already there.  On
    Galera the loser may instead fail certification at COMMIT; the retry
    then finds the trait, or meets the duplicate, once the winner's row has
    reached its node.
    """
    try:
        return get_by_name(ctx, name), False
    except exceptions.TraitNotFound:
        pass
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    try:
        with ctx.db.writer() as conn:
            result = conn.execute(_TRAITS.insert().values(name=name, created_at=now))
            trait_id = _inserted_id(result)
    except db_exc.DBDuplicateEntry:
        LOG.debug("trait %s was created concurrently", name)
        return get_by_name(ctx, name), False
    return Trait(id=trait_id, name=name, created_at=now, updated_at=None), True


@db_api.retry_on_conflict
def delete(ctx: RequestContext, name: str) -> None:
    """Delete custom trait ``name`` unless a provider has it.

    Raises TraitNotFound, TraitCannotDeleteStandard or TraitInUse.
    """
    with ctx.db.writer() as conn:
        trait = _get_in(conn, name)
        if not is_custom(trait.name):
            raise exceptions.TraitCannotDeleteStandard(name=name)
        used = sa.select(_RP_TRAITS.c.trait_id).where(
            _RP_TRAITS.c.trait_id == trait.id).limit(1)
        if conn.execute(used).first() is not None:
            raise exceptions.TraitInUse(name=name)
        conn.execute(_TRAITS.delete().where(_TRAITS.c.id == trait.id))


def _of_provider(conn: sa.engine.Connection, provider_id: int) -> list[Trait]:
    query = (_traits()
             .join(_RP_TRAITS, _RP_TRAITS.c.trait_id == _TRAITS.c.id)
             .where(_RP_TRAITS.c.resource_provider_id == provider_id)
             .order_by(_TRAITS.c.id))
    return [_from_row(row) for row in conn.execute(query).all()]


def get_for_provider(ctx: RequestContext, uuid: str) -> ProviderTraits:
    """The traits of provider ``uuid``; ProviderNotFound if there is none."""
    with ctx.db.reader() as conn:
        provider = resource_provider.get_by_uuid_in(conn, uuid)
        return ProviderTraits(provider.generation, _of_provider(conn, provider.id))


@db_api.retry_on_conflict
def set_for_provider(ctx: RequestContext, uuid: str, names: Iterable[str],
                     expected_generation: int) -> ProviderTraits:
    """Make ``names`` the traits of provider ``uuid``, if its generation is
    still ``expected_generation``; bumps the generation if the set changed.

    Raises ProviderNotFound, ProviderConcurrentUpdate (generation
    mismatch) and TraitNotFound (naming every unknown trait).
    """
    wanted = set(names)
    with ctx.db.writer() as conn:
        provider = _locked_provider(conn, uuid, expected_generation)
        rows = conn.execute(_traits().where(_TRAITS.c.name.in_(sorted(wanted)))
                            .order_by(_TRAITS.c.id)).all() if wanted else []
        missing = wanted - {row.name for row in rows}
        if missing:
            raise exceptions.TraitNotFound(names=", ".join(sorted(missing)))
        generation = _replace_links(conn, provider, {row.id for row in rows})
    return ProviderTraits(generation, [_from_row(row) for row in rows])


@db_api.retry_on_conflict
def delete_for_provider(ctx: RequestContext, uuid: str) -> int:
    """Remove every trait of provider ``uuid``; the provider's generation,
    bumped if it had any.

    Raises ProviderNotFound; ProviderConcurrentUpdate when another writer
    changed the provider between our read and our write.
    """
    with ctx.db.writer() as conn:
        provider = _locked_provider(conn, uuid, None)
        return _replace_links(conn, provider, set())


def _locked_provider(conn: sa.engine.Connection, uuid: str, expected: int | None
                     ) -> resource_provider.ResourceProvider:
    """The provider, row-locked, after checking its generation against
    ``expected`` (None accepts the generation as read).

    The lock makes a concurrent writer of the same provider wait for our
    commit; it then fails its own generation check.
    """
    provider = resource_provider.get_by_uuid_in(conn, uuid)
    if expected is not None and provider.generation != expected:
        raise exceptions.ProviderConcurrentUpdate()
    db_api.lock_providers(conn, [provider.id])
    return provider


def _replace_links(conn: sa.engine.Connection,
                   provider: resource_provider.ResourceProvider,
                   trait_ids: set[int]) -> int:
    """Make ``trait_ids`` the provider's traits; its generation afterwards.

    The generation moves (checked against the one ``provider`` was read
    with) only if the set changes.  When nothing changes, the generation is
    re-read under the lock: had another writer changed the provider since
    we read it, the links we compared may be stale, so that is a conflict.
    """
    provider_id = provider.id
    current = set(conn.execute(_trait_ids_of_provider(),
                               {"provider_id": provider_id}).scalars())
    if current == trait_ids:
        return resource_provider.check_generation(conn, provider)
    generation = resource_provider.bump_generation(conn, provider)
    gone = current - trait_ids
    if gone:
        conn.execute(_RP_TRAITS.delete().where(
            _RP_TRAITS.c.resource_provider_id == provider_id,
            _RP_TRAITS.c.trait_id.in_(sorted(gone))))
    added = trait_ids - current
    if added:
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        conn.execute(_RP_TRAITS.insert(), [
            {"resource_provider_id": provider_id, "trait_id": trait_id,
             "created_at": now} for trait_id in sorted(added)])
    return generation


def ids_by_name(conn: sa.engine.Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}``; TraitNotFound naming every unknown trait."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = conn.execute(_ids_by_name(), {"names": sorted(wanted)}).all()
    found = {name: id_ for name, id_ in rows}
    missing = sorted(wanted - set(found))
    if missing:
        raise exceptions.TraitNotFound(names=", ".join(missing))
    return found


def names_by_id(conn: sa.engine.Connection, ids: Iterable[int]) -> dict[int, str]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = conn.execute(_names_by_id(), {"ids": wanted}).all()
    return {id_: name for id_, name in rows}


@functools.cache
def _trait_ids_of_provider() -> sa.Select[Any]:
    return sa.select(_RP_TRAITS.c.trait_id).where(
        _RP_TRAITS.c.resource_provider_id == sa.bindparam("provider_id"))


# The statements of ids_by_name and names_by_id, built once: a provider's
# traits are read and written by every compute node's report client.
@functools.cache
def _ids_by_name() -> sa.Select[Any]:
    return sa.select(_TRAITS.c.name, _TRAITS.c.id).where(
        _TRAITS.c.name.in_(sa.bindparam("names", expanding=True)))


@functools.cache
def _names_by_id() -> sa.Select[Any]:
    return sa.select(_TRAITS.c.id, _TRAITS.c.name).where(
        _TRAITS.c.id.in_(sa.bindparam("ids", expanding=True)))
