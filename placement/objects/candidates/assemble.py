"""Combining providers into allocation candidates, in memory and lazily.

Terms:

*anchor*
    the root of the tree a candidate is built around.  A tree provider
    serves only its own tree; a sharing provider also serves every tree
    that has a provider in one of its aggregates, so it appears under
    several anchors.
*choice*
    one way to satisfy one request group under one anchor: the unnumbered
    group picks one provider per requested class among the tree and its
    sharing providers; a suffixed group picks a single provider.

A candidate is one choice per group under the same anchor such that the
amounts summed per provider fit, ``group_policy=isolate`` keeps suffixed
groups on distinct providers, every ``same_subtree`` holds and the anchor
satisfies ``root_required``.

Candidates are produced by generators, anchor by anchor in root id order
(``depth-first``) or one per anchor in turn (``breadth-first``), each
anchor's as the product of the groups' choices, in order.  Nothing is computed
for an anchor before it is reached, so ``limit`` and
``max_allocation_candidates`` bound the work, not only the answer.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Callable, Iterable, Iterator, TypeVar

from placement.objects.candidates.choices import Choice, Combination, GroupSearch
from placement.objects.candidates.trees import Forest
from placement.query import CandidateQuery, RequestGroup

DEPTH_FIRST = "depth-first"
BREADTH_FIRST = "breadth-first"

Item = TypeVar("Item")


class Assembler:
    """Candidates of one query over one forest (see the module doc)."""

    def __init__(self, forest: Forest, query: CandidateQuery,
                 nested: bool = True) -> None:
        self.forest = forest
        self.query = query
        # Before microversion 1.29 a candidate takes at most one provider
        # from any tree.
        self.nested = nested
        # Groups that differ only by suffix (four "VGPU:1" groups, say) have
        # the same choices: search once.
        by_content: dict[RequestGroup, GroupSearch] = {}
        for group in query.groups:
            content = dataclasses.replace(group, suffix=group.suffix and "_")
            if content not in by_content:
                by_content[content] = GroupSearch(forest, group)
        self.searches = [
            by_content[dataclasses.replace(group, suffix=group.suffix and "_")]
            for group in query.groups]
        anchors = set(self.searches[0].anchors)
        for search in self.searches[1:]:
            anchors &= search.anchors
        self.anchors = sorted(a for a in anchors if self._root_ok(a))
        self._anchor_set = set(self.anchors)
        self._isolate = query.group_policy == "isolate"
        # Suffixed groups, which isolate keeps on distinct providers.
        self._isolated_groups = [i for i, group in enumerate(query.groups)
                                 if not group.is_unnumbered]
        # Whether some class is asked by several groups: only then can
        # amounts of different groups add up on one provider.
        names = [name for group in query.groups for name, _a in group.resources]
        self._shared_classes = len(names) != len(set(names))
        suffixes = [group.suffix for group in query.groups]
        self._subtrees = [tuple(suffixes.index(s) for s in same)
                          for same in query.same_subtree]

    def _root_ok(self, anchor: int) -> bool:
        traits = self.forest.providers[anchor].traits
        return (self.query.root_required <= traits
                and self.query.root_forbidden.isdisjoint(traits))

    def _same_subtree_ok(self, combination: Combination) -> bool:
        is_below = self.forest.is_ancestor_or_self
        for indexes in self._subtrees:
            members = [pid for i in indexes for pid in combination[i].providers]
            if not any(all(is_below(top, pid) for pid in members)
                       for top in members):
                return False
        return True

    def candidates_of(self, anchor: int) -> Iterator[Combination]:
        """The candidates built around the tree of root ``anchor``, in
        order (none if it cannot anchor one)."""
        if anchor not in self._anchor_set:
            return iter(())
        return self.for_anchor(anchor)

    def first_candidates(self, anchor: int, most: int) -> tuple[Combination, ...]:
        """The first ``most`` of :meth:`candidates_of`, at once."""
        if anchor not in self._anchor_set:
            return ()
        if len(self.searches) == 1 and self.nested:
            # One group: its choices are the candidates.
            return tuple([(choice,) for choice in self.searches[0].choices(anchor)[:most]])
        return tuple(itertools.islice(self.for_anchor(anchor), most))

    def for_anchor(self, anchor: int) -> Iterator[Combination]:
        """This anchor's candidates, in order."""
        candidates = self._for_anchor(anchor)
        if self.nested:
            return candidates
        return filter(self._one_tree_provider, candidates)

    def _for_anchor(self, anchor: int) -> Iterator[Combination]:
        options = [search.choices(anchor) for search in self.searches]
        if not all(options):
            return
        if len(options) == 1:
            for choice in options[0]:
                yield (choice,)
            return
        yield from self._combine(options)

    def _one_tree_provider(self, combination: Combination) -> bool:
        providers = self.forest.providers
        used = {pid for choice in combination for pid, _n, _a in choice.allocations}
        return len(used) == len({providers[pid].root_id for pid in used})

    def _combine(self, options: list[list[Choice]]) -> Iterator[Combination]:
        """Every choice of each group combined, in order, keeping those
        that satisfy the group policy, capacity and same_subtree."""
        isolated = self._isolated_groups if self._isolate else []
        shared = self._shared_classes
        subtrees = self._subtrees
        for combination in itertools.product(*options):
            if isolated:
                used = {combination[i].providers[0] for i in isolated}
                if len(used) < len(isolated):
                    continue
            if shared and not self._amounts_fit(combination):
                continue
            if subtrees and not self._same_subtree_ok(combination):
                continue
            yield combination

    def _amounts_fit(self, combination: Combination) -> bool:
        """Amounts that several groups take from one provider fit together
        (each group's own amounts were checked when it was searched)."""
        providers = self.forest.providers
        totals: dict[tuple[int, str], int] = {}
        for choice in combination:
            for pid, name, amount in choice.allocations:
                key = (pid, name)
                before = totals.get(key)
                if before is None:
                    totals[key] = amount
                    continue
                totals[key] = before + amount
                if not providers[pid].inventories[name].holds(before + amount):
                    return False
        return True

    def generate(self, strategy: str) -> Iterator[Combination]:
        """Every candidate once, in the order of ``strategy``."""
        if len(self.searches) == 1 and self.nested and strategy == DEPTH_FIRST:
            # One group: its choices are the candidates.
            search = self.searches[0]
            stream: Iterator[Combination] = ((choice,) for anchor in self.anchors
                      for choice in search.choices(anchor))
        else:
            stream = merge((self.for_anchor(a) for a in self.anchors), strategy)
        if not self.forest.anchors:
            # Without sharing providers every candidate belongs to one
            # anchor only: no duplicates to drop.
            return stream
        return _unique(stream)


def merge(streams: Iterable[Iterator[Item]], strategy: str) -> Iterator[Item]:
    """One stream of the candidates of each anchor (``streams``, in anchor
    order): all of the first anchor's, then the next (``depth-first``), or
    one of each in turn (``breadth-first``)."""
    if strategy == BREADTH_FIRST:
        return _round_robin(list(streams))
    return itertools.chain.from_iterable(streams)


def _round_robin(streams: list[Iterator[Item]]) -> Iterator[Item]:
    active = streams
    while active:
        still = []
        for stream in active:
            item = next(stream, None)
            if item is not None:
                yield item
                still.append(stream)
        active = still


def _unique(stream: Iterator[Combination]) -> Iterator[Combination]:
    seen: set[Combination] = set()
    for combination in stream:
        if combination not in seen:
            seen.add(combination)
            yield combination


def generation_bound(max_candidates: int) -> int | None:
    """How many candidates ``max_allocation_candidates`` lets a request
    generate: -1 (any negative) is no bound; Placement checks the bound
    after taking a candidate, so 0 still gives one."""
    return max(max_candidates, 1) if max_candidates >= 0 else None


def choose(stream: Iterator[Item], *, limit: int | None, randomize: bool,
           max_candidates: int,
           shuffle: Callable[[list[Item]], None] = random.shuffle) -> list[Item]:
    """The candidates of ``stream`` to return.

    ``max_candidates`` (when positive) bounds how many are generated;
    ``limit`` how many are returned.  Without randomization both just stop
    the stream early; with it every generated candidate is shuffled
    before the limit applies.
    """
    bound = generation_bound(max_candidates)
    if not randomize and limit is not None:
        bound = limit if bound is None else min(bound, limit)
    chosen = list(itertools.islice(stream, bound))
    if randomize:
        shuffle(chosen)
        if limit is not None:
            chosen = chosen[:limit]
    return chosen

