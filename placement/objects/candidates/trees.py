"""The providers a candidate search works on, held in memory for one request.

:mod:`.search` loads every provider of the trees that may take part in a
candidate (and the sharing providers they can use) into a :class:`Forest`;
:mod:`.assemble` then works on it without touching the database again.

The providers of a forest belong to one request, so the classes are plain
(mutable, slotted) for speed; but their inventory dicts and trait sets
may come from the worker's :mod:`.cache` and be shared with other
requests: they are never changed once made.  What leaves the package is
immutable.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

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

    def holds(self, amount: int) -> bool:
        """Whether ``amount`` units in all, summed over request groups that
        each fit on their own, stay within capacity and ``max_unit``."""
        return (amount <= self.max_unit
                and (self.total - self.reserved) * self.allocation_ratio
                >= self.used + amount)


class Provider:
    """One provider: its place in its tree, inventories, traits and aggregates.

    ``aggregates`` starts as one shared empty set when none were read and
    gets a set of its own on the first :meth:`add_aggregate`.
    """

    __slots__ = ("id", "uuid", "parent_id", "root_id", "inventories",
                 "traits", "aggregates")

    def __init__(self, id: int, uuid: str, parent_id: int | None, root_id: int,
                 inventories: dict[str, Inventory] | None = None,
                 traits: frozenset[str] = frozenset(),
                 aggregates: set[str] | frozenset[str] = frozenset()) -> None:
        self.id = id
        self.uuid = uuid
        self.parent_id = parent_id
        self.root_id = root_id
        self.inventories = {} if inventories is None else inventories
        self.traits = traits
        self.aggregates = aggregates

    def add_aggregate(self, uuid: str) -> None:
        if not self.aggregates:
            self.aggregates = {uuid}
        else:
            self.aggregates.add(uuid)  # type: ignore[union-attr]

    @property
    def is_sharing(self) -> bool:
        return SHARING_TRAIT in self.traits


class Forest:
    """Providers by id, grouped in trees, and who shares with whom.

    ``trees`` maps a root id to the ids of its providers (root first, then by
    id).  ``anchors`` maps a sharing provider to the roots of the trees it
    shares with: its own and that of every provider in one of its
    aggregates.
    """

    def __init__(self, providers: Iterable[Provider]) -> None:
        self.providers: dict[int, Provider] = {p.id: p for p in providers}
        trees: dict[int, list[int]] = {}
        for provider_id in sorted(self.providers):
            provider = self.providers[provider_id]
            trees.setdefault(provider.root_id, []).append(provider_id)
        self.trees = trees
        self.anchors: dict[int, list[int]] = self._sharing_anchors()

    def _sharing_anchors(self) -> dict[int, list[int]]:
        sharing = [p for p in self.providers.values() if p.is_sharing]
        if not sharing:
            return {}
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
