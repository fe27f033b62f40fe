"""The providers a candidate search works on, held in memory.

:mod:`.loader` reads every provider of the trees that may take part in a
candidate (and of the trees sharing providers serve) into :class:`Tree`
objects, which make a :class:`Forest`; :mod:`.assemble` then works on it
without touching the database again.

A tree that has not changed since an earlier search is that search's very
object, kept by the worker (see :mod:`placement.kept`): trees, providers, their
inventory dicts, trait and aggregate sets may all be shared by requests,
so nothing is changed once made.  The classes are plain (slotted) for
speed; that rule keeps them safe.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Iterable, NamedTuple

from placement.kept.keys import new_key

# Providers with this trait share their inventory with every tree that has
# a provider in one of their aggregates.
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"


class Inventory(NamedTuple):
    """One inventory record of a provider and what is allocated from it.

    A tuple, so that a database row becomes one without copying fields
    (tens of thousands of them per request on large deployments).
    """

    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int

    @property
    def capacity(self) -> int:
        """What the provider can hold in all, as the summaries report it."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def fits(self, amount: int) -> bool:
        """Whether one request of ``amount`` units can come from here."""
        return (self.min_unit <= amount <= self.max_unit
                and amount % self.step_size == 0
                and (self.total - self.reserved) * self.allocation_ratio
                >= self.used + amount)

    def has_room(self, amount: int) -> bool:
        """Whether ``amount`` more units stay within capacity (the test
        :meth:`fits` and :meth:`holds` write inline: they run for every
        provider of every search)."""
        return (self.total - self.reserved) * self.allocation_ratio >= self.used + amount

    def holds(self, amount: int) -> bool:
        """Whether ``amount`` units in all, summed over request groups that
        each fit on their own, stay within capacity and ``max_unit``."""
        return (amount <= self.max_unit
                and (self.total - self.reserved) * self.allocation_ratio
                >= self.used + amount)


class TraitSet(frozenset[str]):
    """A provider's trait names, which also remember the order summaries
    list them in: the order of the traits' ids.

    Placement lists them as its database returns them, which is trait id
    order on SQLite and MySQL (and the order the links were written on
    PostgreSQL); ids of custom traits follow their creation.  Trait ids
    of a provider's traits cannot change while it has them (a trait in
    use cannot be deleted), so the order is as lasting as the set.
    """

    __slots__ = ("listed",)
    listed: tuple[str, ...]

    @classmethod
    def by_id(cls, traits: Iterable[tuple[int, str]]) -> TraitSet:
        """The set of ``(trait id, name)`` pairs' names, listed by id."""
        listed = tuple(name for _id, name in sorted(traits))
        found = cls(listed)
        found.listed = listed
        return found


def listed_traits(traits: frozenset[str]) -> tuple[str, ...]:
    """Trait names in the order summaries list them: a :class:`TraitSet`'s
    own order; a plain set (providers built by hand) by name."""
    if isinstance(traits, TraitSet):
        return traits.listed
    return tuple(sorted(traits))


class Provider:
    """One provider: its place in its tree, inventories (with what is used
    of them), traits and aggregates (uuids).

    ``inventory_key`` names the inventory dict: like providers share one
    (:meth:`placement.kept.Kept.entry`) and its key, so what depends on
    the inventories alone is worked out once per key.  Trait and aggregate
    sets are shared too, and being frozensets they are their own keys.
    """

    __slots__ = ("id", "uuid", "parent_id", "root_id", "inventories",
                 "inventory_key", "traits", "aggregates")

    def __init__(self, id: int, uuid: str, parent_id: int | None, root_id: int,
                 inventories: dict[str, Inventory] | None = None,
                 traits: frozenset[str] = frozenset(),
                 aggregates: frozenset[str] = frozenset(),
                 inventory_key: int | None = None) -> None:
        self.id = id
        self.uuid = uuid
        self.parent_id = parent_id
        self.root_id = root_id
        self.inventories = {} if inventories is None else inventories
        self.inventory_key = new_key() if inventory_key is None else inventory_key
        self.traits = traits
        self.aggregates = aggregates

    @property
    def is_sharing(self) -> bool:
        return SHARING_TRAIT in self.traits


class Tree:
    """The providers of one tree, as one search read them.

    ``providers`` are in id order.  ``state`` is what the database said of
    the tree (see :func:`.search.parse_states`): the worker keeps the tree
    and compares the next read of it with ``state``; while they are equal,
    the tree and whatever was derived from it still hold (see
    :mod:`placement.kept`).  Trees may thus be shared by searches and are
    never changed once made, but for ``summaries``: the provider
    summaries' text a response wrote for the tree (the same for every
    query from microversion 1.29), set once when first written, gone with
    the tree.  ``key`` (:func:`placement.kept.keys.new_key`) names this
    very tree.
    """

    __slots__ = ("root_id", "providers", "state", "classes", "sharing", "aggregates",
                 "key", "summaries")

    def __init__(self, providers: Iterable[Provider], state: Any = None) -> None:
        self.state = state
        listed = tuple(providers)
        # Every class some provider of the tree has inventory of (like
        # trees share one set); whether a provider shares; every aggregate
        # some provider of the tree is in (a sharing provider in one of
        # them serves the tree, see Forest.anchors).  Worked out directly
        # for a tree of one provider, as most are: a cold search makes
        # thousands of trees, and the general way took three times as long
        # for them.
        if len(listed) == 1:
            only = listed[0]
            self.providers: tuple[Provider, ...] = listed
            classes = frozenset(only.inventories)
            self.sharing = SHARING_TRAIT in only.traits
            self.aggregates: frozenset[str] = only.aggregates
        else:
            self.providers = listed = tuple(sorted(listed, key=operator.attrgetter("id")))
            classes = frozenset().union(*[p.inventories for p in listed])
            self.sharing = any([SHARING_TRAIT in p.traits for p in listed])
            self.aggregates = frozenset().union(*[p.aggregates for p in listed])
        self.root_id = listed[0].root_id
        if len(_CLASS_SETS) > 4096:
            _CLASS_SETS.clear()
        self.classes = _CLASS_SETS.setdefault(classes, classes)
        self.key = new_key()
        self.summaries: bytes | None = None


_CLASS_SETS: dict[frozenset[str], frozenset[str]] = {}


class Forest:
    """The trees a search works on, their providers by id, and who shares
    with whom.

    ``trees`` maps a root id to its :class:`Tree`.  ``anchors`` maps a
    sharing provider to the roots of the trees it shares with: its own and
    that of every provider in one of its aggregates.
    """

    def __init__(self, trees: Iterable[Tree]) -> None:
        self.trees: dict[int, Tree] = {tree.root_id: tree for tree in trees}

    # Worked out when first asked: the forest of an answer's trees needs
    # its providers only for the texts a response has not kept, and its
    # anchors never.
    @functools.cached_property
    def providers(self) -> dict[int, Provider]:
        return {p.id: p for tree in self.trees.values() for p in tree.providers}

    @functools.cached_property
    def anchors(self) -> dict[int, list[int]]:
        return (self._sharing_anchors()
                if any(tree.sharing for tree in self.trees.values()) else {})

    def _sharing_anchors(self) -> dict[int, list[int]]:
        sharing = [p for p in self.providers.values() if p.is_sharing]
        roots_by_aggregate: dict[str, set[int]] = {}
        for provider in self.providers.values():
            for aggregate in provider.aggregates:
                roots_by_aggregate.setdefault(aggregate, set()).add(provider.root_id)
        anchors = {}
        for provider in sharing:
            roots = {provider.root_id}
            for aggregate in provider.aggregates:
                roots |= roots_by_aggregate.get(aggregate, set())
            anchors[provider.id] = sorted(roots)
        return anchors

    def roots_of(self, provider: Provider) -> list[int]:
        """The roots of the trees whose candidates may use ``provider``."""
        return self.anchors.get(provider.id) or [provider.root_id]

    def is_ancestor_or_self(self, ancestor_id: int, provider_id: int) -> bool:
        current: int | None = provider_id
        while current is not None:
            if current == ancestor_id:
                return True
            current = self.providers[current].parent_id
        return False
