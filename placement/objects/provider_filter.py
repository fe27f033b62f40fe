"""``GET /resource_providers``: the providers matching a query's filters.

The filters ask of each provider what a suffixed request group of
``GET /allocation_candidates`` asks of the one provider serving it: its
own inventories must take every amount, it must have the required traits
and none of the forbidden ones, and be in the aggregates asked for and in
none of the forbidden ones.  So the list is judged by the candidate
search's rules (:mod:`placement.query`), on the providers' inventories
and traits the worker keeps for that search (:mod:`placement.kept`,
good while the provider's generation is unchanged).

What may change without a generation bump is read afresh every time, in
one query: each provider's name, generation, place in its tree and
timestamps as one text, the usage of the classes asked for, and the
memberships of the aggregates asked about.  A provider whose text is the
one read last time is the very :class:`ListedProvider` of then, with its
``key``, under which the worker keeps the JSON a response wrote for it
(:class:`placement.kept.Texts`).  ``name``, ``uuid`` and
``in_tree`` narrow that query in the database.

Names are checked, and filters that match nothing end the search, in the
order the query gives them, as Placement does: an ``in_tree`` of an
unknown provider, or required traits or aggregates no provider has, give
an empty list before later names are checked.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import operator
from typing import Any, Iterable, TYPE_CHECKING

import sqlalchemy as sa

from placement.db import tables
from placement.kept import Entry, Kept
from placement.kept.keys import new_key
from placement.objects import resource_class as rc_obj
from placement.objects import resource_provider as rp_obj
from placement.objects import trait as trait_obj
from placement.objects.candidates import search
from placement.objects.candidates.loader import Loader
from placement.query import RequestGroup, in_aggregates, serves_all, suits_traits

if TYPE_CHECKING:
    from placement.context import RequestContext

_RP = tables.resource_providers
_RP_TRAITS = tables.resource_provider_traits
_RP_AGGS = tables.resource_provider_aggregates
_AGGS = tables.placement_aggregates
_ALLOC = tables.allocations


@dataclasses.dataclass(frozen=True)
class ProviderFilters:
    """What ``GET /resource_providers`` may filter on, already parsed.

    ``member_of`` and ``required_traits`` are lists of any-of sets that must
    all be satisfied; ``resources`` maps class names to amounts.
    """

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    member_of: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_aggs: set[str] = dataclasses.field(default_factory=set)
    required_traits: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_traits: set[str] = dataclasses.field(default_factory=set)
    resources: dict[str, int] = dataclasses.field(default_factory=dict)


class ListedProvider:
    """A provider as the list read it: the worker keeps it while the text
    read for it stays the same.  ``entry`` holds its inventories and traits
    once a filter needed them; ``key`` names this very object (see
    :mod:`placement.kept.keys`)."""

    __slots__ = ("text", "provider", "modified", "entry", "key")

    def __init__(self, text: str, provider: rp_obj.ResourceProvider) -> None:
        self.text = text
        self.provider = provider
        self.modified = provider.updated_at or provider.created_at
        self.entry: Entry | None = None
        self.key = new_key()


def _with_any_trait(trait_ids: Iterable[int]) -> sa.Select[Any]:
    return sa.select(_RP_TRAITS.c.resource_provider_id).where(
        _RP_TRAITS.c.trait_id.in_(sorted(set(trait_ids))))


def _in_any_aggregate(agg_uuids: Iterable[str]) -> sa.Select[Any]:
    return (
        sa.select(_RP_AGGS.c.resource_provider_id)
        .select_from(_RP_AGGS.join(_AGGS, _AGGS.c.id == _RP_AGGS.c.aggregate_id))
        .where(_AGGS.c.uuid.in_(sorted(set(agg_uuids))))
    )


def _any(conn: sa.engine.Connection, query: sa.Select[Any]) -> bool:
    return conn.execute(query.limit(1)).first() is not None


def list_providers(ctx: RequestContext, filters: ProviderFilters | None = None, *,
                   kept: Kept) -> list[ListedProvider]:
    """Providers matching every given filter, in creation order, judged on
    what ``kept`` holds where it is still good (:mod:`placement.kept`).

    Raises TraitNotFound and ResourceClassNotFound for unknown names.
    """
    filters = filters or ProviderFilters()
    with ctx.db.reader() as conn:
        root_id = None
        if filters.in_tree:
            tree = rp_obj.get_by_uuids_in(conn, [filters.in_tree]).get(
                filters.in_tree)
            if tree is None:
                return []
            root_id = tree.root_id
        for names in filters.required_traits:
            ids = trait_obj.ids_by_name(conn, names).values()
            if not _any(conn, _with_any_trait(ids)):
                return []
        if filters.forbidden_traits:
            trait_obj.ids_by_name(conn, filters.forbidden_traits)
        for agg_uuids in filters.member_of:
            if not _any(conn, _in_any_aggregate(agg_uuids)):
                return []
        # One name at a time, so the first unknown one in the request's
        # order is the one reported.
        class_ids = {name: rc_obj.ids_by_name(conn, [name])[name]
                     for name in filters.resources}
        group = RequestGroup(
            "", tuple(filters.resources.items()),
            required=tuple(frozenset(names) for names in filters.required_traits),
            forbidden=frozenset(filters.forbidden_traits),
            member_of=tuple(frozenset(uuids) for uuids in filters.member_of),
            not_member_of=frozenset(filters.forbidden_aggs))
        return _Listing(conn, filters, root_id, class_ids, group, kept).matching()


_BY_ID = operator.attrgetter("provider.id")


def _parse_stamp(text: str) -> datetime.datetime | None:
    return datetime.datetime.fromisoformat(text) if text else None


def _text(column: Any) -> Any:
    return sa.func.coalesce(sa.cast(column, sa.String), "")


@functools.cache
def _listing_statement(by_name: bool, by_uuid: bool, in_tree: bool, with_usage: bool,
                       with_aggregates: bool) -> sa.CompoundSelect:
    """Rows of (kind, provider id, text) for a listing, by its parameters
    ``name``, ``uuid``, ``root_id``, ``class_ids`` and ``aggregate_uuids``
    where the flags say so:

    * ``p``: ``<generation>;<parent id>;<root id>;<uuid>;<created>;
      <updated>;<name>`` (the name last: it may hold anything);
    * ``u``: ``<class id> <used>`` for each class asked for;
    * ``a``: the uuid of each aggregate asked about the provider is in.

    Built once per shape of filters: a compute node's heartbeat lists its
    tree, and building the statement cost more than reading it.
    """
    def where(query: sa.Select[Any]) -> sa.Select[Any]:
        if by_name:
            query = query.where(_RP.c.name == sa.bindparam("name"))
        if by_uuid:
            query = query.where(_RP.c.uuid == sa.bindparam("uuid"))
        if in_tree:
            query = query.where(_RP.c.root_provider_id == sa.bindparam("root_id"))
        return query

    provider = (
        _text(_RP.c.generation) + ";" + _text(_RP.c.parent_provider_id) + ";"
        + _text(_RP.c.root_provider_id) + ";" + _RP.c.uuid + ";"
        + _text(_RP.c.created_at) + ";" + _text(_RP.c.updated_at) + ";"
        + _RP.c.name)
    parts = [where(sa.select(sa.literal("p").label("kind"), _RP.c.id,
                             provider.label("text")))]
    if with_usage:
        parts.append(where(
            sa.select(sa.literal("u"), _ALLOC.c.resource_provider_id,
                      _text(_ALLOC.c.resource_class_id) + " "
                      + _text(sa.cast(sa.func.sum(_ALLOC.c.used), sa.Integer)))
            .join(_RP, _RP.c.id == _ALLOC.c.resource_provider_id)
            .where(_ALLOC.c.resource_class_id.in_(sa.bindparam("class_ids", expanding=True)))
            .group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id)))
    if with_aggregates:
        parts.append(where(
            sa.select(sa.literal("a"), _RP_AGGS.c.resource_provider_id, _AGGS.c.uuid)
            .join(_AGGS, _AGGS.c.id == _RP_AGGS.c.aggregate_id)
            .join(_RP, _RP.c.id == _RP_AGGS.c.resource_provider_id)
            .where(_AGGS.c.uuid.in_(sa.bindparam("aggregate_uuids", expanding=True)))))
    return sa.union_all(*parts)


class _Listing:
    """One request's reading and judging of the providers."""

    def __init__(self, conn: sa.engine.Connection, filters: ProviderFilters,
                 root_id: int | None, class_ids: dict[str, int],
                 group: RequestGroup, kept: Kept) -> None:
        self.conn = conn
        self.filters = filters
        self.root_id = root_id
        self.class_ids = class_ids
        self.group = group
        # Filters on inventories or traits judge the candidate search's
        # entries of the providers, named by class: the loader's check of
        # the class names (which drops what a rename made wrong) comes
        # before anything kept is used.
        self.needs_entries = bool(group.resources or group.required or group.forbidden)
        self.loader = (Loader(conn, search.check_names(conn, []).classes, kept)
                       if self.needs_entries else None)
        self.kept: dict[int, ListedProvider] = kept.listed

    def _rows(self) -> list[tuple[str, int, str]]:
        filters = self.filters
        named = set().union(*self.group.member_of, self.group.not_member_of)
        statement = _listing_statement(bool(filters.name), bool(filters.uuid),
                                       self.root_id is not None, bool(self.class_ids),
                                       bool(named))
        params: dict[str, Any] = {}
        if filters.name:
            params["name"] = filters.name
        if filters.uuid:
            params["uuid"] = filters.uuid
        if self.root_id is not None:
            params["root_id"] = self.root_id
        if self.class_ids:
            params["class_ids"] = sorted(self.class_ids.values())
        if named:
            params["aggregate_uuids"] = sorted(named)
        # Straight from the driver's cursor: building result rows for ten
        # thousand providers costs more than the judging.
        result = self.conn.execute(statement, params)
        try:
            return list(result.cursor.fetchall())
        finally:
            result.close()

    def matching(self) -> list[ListedProvider]:
        listed: list[ListedProvider] = []
        usage: dict[int, list[tuple[int, int]]] = {}
        members: dict[int, set[str]] = {}
        kept = self.kept
        changed: list[tuple[int, str]] = []
        for kind, provider_id, text in self._rows():
            if kind == "p":
                known = kept.get(provider_id)
                if known is None or known.text != text:
                    changed.append((provider_id, text))
                else:
                    listed.append(known)
            elif kind == "u":
                class_id, used = text.split(" ")
                usage.setdefault(provider_id, []).append((int(class_id), int(used)))
            else:
                members.setdefault(provider_id, set()).add(text)
        if changed:
            listed += self._build(changed, listed)
        group = self.group
        if self.needs_entries:
            self._fill_entries(listed)
            listed = self._fitting(listed, usage)
        if group.member_of or group.not_member_of:
            listed = [known for known in listed if in_aggregates(
                members.get(known.provider.id, set()), group)]
        listed.sort(key=_BY_ID)
        return listed

    def _build(self, changed: list[tuple[int, str]], unchanged: list[ListedProvider]
               ) -> list[ListedProvider]:
        """Providers from the texts of their ``p`` rows, kept for the next
        list.  Parents and roots are named by uuid: those read along
        give theirs, the others (a list narrowed by name or uuid) are read.
        A child's parent and root stay the providers they were as long as
        the child's text is unchanged (a provider with children cannot be
        deleted), so their uuids are kept with it."""
        fields = {provider_id: text.split(";", 6) for provider_id, text in changed}
        uuids = {known.provider.id: known.provider.uuid for known in unchanged}
        uuids.update((provider_id, f[3]) for provider_id, f in fields.items())
        wanted = {int(i) for f in fields.values() for i in (f[1], f[2]) if i}
        if wanted - uuids.keys():
            uuids.update(self.conn.execute(
                sa.select(_RP.c.id, _RP.c.uuid).where(
                    _RP.c.id.in_(sorted(wanted - uuids.keys())))).all())
        built = []
        for provider_id, text in changed:
            generation, parent_id, root_id, uuid, created, updated, name = (
                fields[provider_id])
            parent = int(parent_id) if parent_id else None
            root = int(root_id) if root_id else provider_id
            known = self.kept[provider_id] = ListedProvider(
                text, rp_obj.ResourceProvider(
                    id=provider_id, uuid=uuid, name=name, generation=int(generation),
                    parent_uuid=None if parent is None else uuids[parent],
                    # A provider is its own root; tolerate rows written
                    # without one.
                    root_uuid=uuids.get(root, uuid), parent_id=parent, root_id=root,
                    created_at=_parse_stamp(created),
                    updated_at=_parse_stamp(updated)))
            built.append(known)
        return built

    def _fill_entries(self, listed: list[ListedProvider]) -> None:
        lacking = [known for known in listed if known.entry is None]
        if not lacking:
            return
        assert self.loader is not None
        entries = self.loader.entries([
            (known.provider.id, known.provider.generation, known.provider.uuid)
            for known in lacking])
        for known in lacking:
            known.entry = entries[known.provider.id]

    def _fitting(self, listed: list[ListedProvider],
                 usage: dict[int, list[tuple[int, int]]]) -> list[ListedProvider]:
        """The providers that take the amounts and have the traits.

        Once per inventory key and trait set (like providers share them,
        see placement.kept.Kept.entry); a provider with usage of a class
        asked for has inventories of its own.
        """
        group = self.group
        resources = group.resources
        with_traits = bool(group.required or group.forbidden)
        serving: dict[int, bool] = {}
        suitable: dict[frozenset[str], bool] = {}
        fitting = []
        for known in listed:
            entry: Entry = known.entry  # type: ignore[assignment]  # filled
            if resources:
                used = usage.get(known.provider.id) if usage else None
                serves: bool | None
                if used:
                    assert self.loader is not None
                    serves = serves_all(
                        self.loader.with_usage(entry.inventories, used), resources)
                else:
                    serves = serving.get(entry.inventory_key)
                    if serves is None:
                        serves = serving[entry.inventory_key] = (
                            serves_all(entry.inventories, resources))
                if not serves:
                    continue
            if with_traits:
                traits = entry.traits
                ok = suitable.get(traits)
                if ok is None:
                    ok = suitable[traits] = suits_traits(traits, group)
                if not ok:
                    continue
            fitting.append(known)
        return fitting
