"""What a search for providers asks for, and the rules of what matches it.

:class:`CandidateQuery` and its :class:`RequestGroup` are what ``GET
/allocation_candidates`` asks for (parsed by
:mod:`placement.request_groups`); ``GET /resource_providers`` asks with a
single :class:`RequestGroup`.  The matching rules below are the ones both
searches judge providers by.  This module is pure and imports nothing of
placement's, so that the data layer (``objects/``) can use the types
without reaching anything of HTTP.
"""

from __future__ import annotations

import dataclasses
from typing import AbstractSet, Mapping, Protocol

# The suffix of the unnumbered group.
UNNUMBERED = ""


@dataclasses.dataclass(frozen=True)
class RequestGroup:
    """One request group.

    ``required`` holds the trait conditions as any-of sets: a provider (or,
    for the unnumbered group, the providers of a candidate together) must
    have at least one trait of every set.  ``member_of`` works the same way
    with aggregate uuids.  ``forbidden`` traits and ``not_member_of``
    aggregates exclude providers.
    """

    suffix: str
    resources: tuple[tuple[str, int], ...] = ()
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    not_member_of: frozenset[str] = frozenset()
    in_tree: str | None = None

    @property
    def is_unnumbered(self) -> bool:
        return self.suffix == UNNUMBERED

    @property
    def trait_names(self) -> set[str]:
        names = set(self.forbidden)
        for any_of in self.required:
            names |= any_of
        return names


@dataclasses.dataclass(frozen=True)
class CandidateQuery:
    """Everything a ``GET /allocation_candidates`` request asks for."""

    groups: tuple[RequestGroup, ...]
    limit: int | None = None
    group_policy: str | None = None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    same_subtree: tuple[tuple[str, ...], ...] = ()

    @property
    def resource_class_names(self) -> list[str]:
        """Every requested class, each once, in request order."""
        names: dict[str, None] = {}
        for group in self.groups:
            for name, _amount in group.resources:
                names[name] = None
        return list(names)


class Fits(Protocol):
    """An inventory as matching sees it: whether an amount fits on it."""

    def fits(self, amount: int) -> bool: ...


def has_traits(traits: AbstractSet[str], group: RequestGroup) -> bool:
    """Whether ``traits`` hold one of each of the group's any-of sets."""
    for any_of in group.required:
        if any_of.isdisjoint(traits):
            return False
    return True


def suits_traits(traits: AbstractSet[str], group: RequestGroup) -> bool:
    """Whether ``traits`` satisfy the group: every required any-of set,
    nothing forbidden."""
    return has_traits(traits, group) and group.forbidden.isdisjoint(traits)


def in_aggregates(aggregates: AbstractSet[str], group: RequestGroup) -> bool:
    """Whether ``aggregates`` hold one of each of the group's any-of sets
    and none of its forbidden aggregates."""
    for any_of in group.member_of:
        if any_of.isdisjoint(aggregates):
            return False
    return group.not_member_of.isdisjoint(aggregates)


def serves_all(inventories: Mapping[str, Fits],
               resources: tuple[tuple[str, int], ...]) -> bool:
    """Whether every (class, amount) fits on one of ``inventories``."""
    for name, amount in resources:
        inventory = inventories.get(name)
        if inventory is None or not inventory.fits(amount):
            return False
    return True
