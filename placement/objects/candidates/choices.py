"""What one request group can take under each anchor: its *choices*.

:class:`GroupSearch` finds, for one group, the providers that can serve it
and under which anchors (roots of trees) they may be used, then lists the
group's choices per anchor when :mod:`.assemble` first asks for them.  The
rules for which provider may serve which group live here:

* a suffixed group takes all its resources from one provider, which must
  have the group's traits and be in its aggregates itself;
* the unnumbered group takes each class from one provider of the anchor's
  tree or from a sharing provider serving it; its providers together must
  have the required traits; a tree provider is a member of its root's
  aggregates too;
* a resourceless group (1.36) finds providers by traits or aggregates only.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from placement.objects.candidates.trees import Forest, Provider
from placement.query import (RequestGroup, has_traits, in_aggregates, serves_all,
                             suits_traits)


class Choice(NamedTuple):
    """One way to satisfy a group: ``(provider id, class, amount)`` triples
    and the providers the group uses (for mappings, isolation and
    same_subtree)."""

    allocations: tuple[tuple[int, str, int], ...]
    providers: tuple[int, ...]


# One choice per request group, in the order of the query's groups.
Combination = tuple[Choice, ...]


def _tree_of(forest: Forest, group: RequestGroup) -> int | None | bool:
    """The root ``in_tree`` names, None without in_tree, False if unknown."""
    if group.in_tree is None:
        return None
    for provider in forest.providers.values():
        if provider.uuid == group.in_tree:
            return provider.root_id
    return False


class GroupSearch:
    """The choices of one group, computed per anchor when first needed."""

    def __init__(self, forest: Forest, group: RequestGroup) -> None:
        self.forest = forest
        self.group = group
        self._cache: dict[int, list[Choice]] = {}
        # Per requested class, the providers able to serve it, by anchor.
        self._servers: list[dict[int, list[int]]] = []
        tree = _tree_of(forest, group)
        if tree is False:
            self.anchors: set[int] = set()
            return
        if group.is_unnumbered:
            self._find_unnumbered_servers(tree)
        else:
            self._find_single_servers(tree)

    def _find_single_servers(self, tree: int | None | bool) -> None:
        group = self.group
        by_anchor: dict[int, list[int]] = {}
        positive = bool(group.required or group.member_of)
        resources = group.resources
        if not resources and not positive:
            # A resourceless group only finds providers by what they have;
            # forbidding alone selects nothing.
            self._servers, self.anchors = [by_anchor], set()
            return
        # Judged once per inventory key, trait and aggregate set, as in
        # _find_unnumbered_servers.
        serving: dict[int, bool] = {}
        suitable_traits: dict[frozenset[str], bool] = {}
        suitable_aggregates: dict[frozenset[str], bool] = {}
        for provider in self.forest.providers.values():
            if resources:
                if tree is not None and provider.root_id != tree:
                    continue
                serves = serving.get(provider.inventory_key)
                if serves is None:
                    serves = serving[provider.inventory_key] = serves_all(
                        provider.inventories, resources)
                if not serves:
                    continue
            traits = provider.traits
            suitable = suitable_traits.get(traits)
            if suitable is None:
                suitable = suitable_traits[traits] = suits_traits(traits, group)
            if not suitable:
                continue
            aggregates = provider.aggregates
            member = suitable_aggregates.get(aggregates)
            if member is None:
                member = suitable_aggregates[aggregates] = in_aggregates(
                    aggregates, group)
            if not member:
                continue
            for anchor in self.forest.roots_of(provider):
                by_anchor.setdefault(anchor, []).append(provider.id)
        self._servers = [by_anchor]
        self.anchors = set(by_anchor)

    def _serves_anchor(self, provider: Provider, anchor: int) -> bool:
        """Aggregate rules of the unnumbered group for one provider serving
        the tree of ``anchor``.

        A tree provider is a member of what it or its root is a member of; a
        sharing provider serving another tree must be a member itself.  A
        forbidden aggregate of the provider or of the anchor excludes it.
        """
        group = self.group
        providers = self.forest.providers
        if group.member_of and not in_aggregates(provider.aggregates, group):
            if anchor != provider.root_id or not in_aggregates(
                    providers[anchor].aggregates, group):
                return False
        if group.not_member_of and not (
                group.not_member_of.isdisjoint(provider.aggregates)
                and group.not_member_of.isdisjoint(providers[anchor].aggregates)):
            return False
        return True

    def _find_unnumbered_servers(self, tree: int | None | bool) -> None:
        group = self.group
        resources = group.resources
        forest = self.forest
        trees = forest.trees
        sharing = bool(forest.anchors)
        servers: list[dict[int, list[int]]] = [{} for _ in resources]
        lonely: set[int] = set()
        check_aggregates = bool(group.member_of or group.not_member_of)
        # Like providers share their inventory dict (and its key), trait
        # and aggregate sets (see placement.kept.Kept.entry): each is
        # judged once, under the dict's key and the sets themselves (whose
        # hashes Python keeps).
        fitting_by_inventories: dict[int, list[int]] = {}
        judged_traits: dict[frozenset[str], tuple[bool, bool]] = {}
        judged_aggregates: dict[frozenset[str], bool] = {}
        for provider in forest.providers.values():
            inventories = provider.inventories
            fitting = fitting_by_inventories.get(provider.inventory_key)
            if fitting is None:
                fitting = fitting_by_inventories[provider.inventory_key] = [
                    index for index, (name, amount) in enumerate(resources)
                    if (inventory := inventories.get(name)) is not None
                    and inventory.fits(amount)]
            if not fitting:
                continue
            traits = provider.traits
            # (nothing forbidden, every required trait present)
            judged = judged_traits.get(traits)
            if judged is None:
                judged = judged_traits[traits] = (
                    group.forbidden.isdisjoint(traits), has_traits(traits, group))
            if not judged[0]:
                continue
            root = provider.root_id
            if tree is not None and root != tree:
                continue
            if not sharing and len(trees[root].providers) == 1:
                # Alone in its tree with nobody sharing: the provider serves
                # the whole group or nothing (most providers of a flat
                # deployment, so this is the fast path).  Being its own
                # anchor, its aggregates alone decide.
                if not (len(fitting) == len(resources) and judged[1]):
                    continue
                member: bool | None = True
                if check_aggregates:
                    member = judged_aggregates.get(provider.aggregates)
                    if member is None:
                        member = judged_aggregates[provider.aggregates] = (
                            self._serves_anchor(provider, root))
                if member:
                    pid = provider.id
                    self._cache[root] = [Choice(
                        tuple([(pid, name, amount) for name, amount in resources]),
                        (pid,))]
                    lonely.add(root)
                continue
            # in_tree keeps the group inside one tree: no sharing then.
            anchors = [root] if tree is not None else forest.roots_of(provider)
            for anchor in anchors:
                if check_aggregates and not self._serves_anchor(provider, anchor):
                    continue
                for index in fitting:
                    servers[index].setdefault(anchor, []).append(provider.id)
        self._servers = servers
        anchors_set = set(servers[0])
        for by_anchor in servers[1:]:
            anchors_set &= set(by_anchor)
        self.anchors = anchors_set | lonely

    def choices(self, anchor: int) -> list[Choice]:
        cached = self._cache.get(anchor)
        if cached is None:
            if self.group.is_unnumbered:
                cached = self._unnumbered_choices(anchor)
            else:
                cached = self._single_choices(anchor)
            self._cache[anchor] = cached
        return cached

    def _single_choices(self, anchor: int) -> list[Choice]:
        resources = self.group.resources
        return [Choice(tuple((pid, name, amount) for name, amount in resources),
                       (pid,))
                for pid in self._servers[0].get(anchor, ())]

    def _unnumbered_choices(self, anchor: int) -> list[Choice]:
        group = self.group
        providers = self.forest.providers
        resources = group.resources
        options = [by_anchor.get(anchor, []) for by_anchor in self._servers]
        choices = []
        for picked in itertools.product(*options):
            used = tuple(dict.fromkeys(picked))
            if group.required:
                # The providers of the candidate together have the traits.
                traits: set[str] = set()
                for pid in used:
                    traits |= providers[pid].traits
                if not has_traits(traits, group):
                    continue
            choices.append(Choice(
                tuple((pid, name, amount)
                      for pid, (name, amount) in zip(picked, resources, strict=True)),
                used))
        return choices
