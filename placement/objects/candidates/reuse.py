"""The candidates of trees, reused from earlier searches for unchanged trees.

:func:`candidates` is the compute step of a search: given the trees read
and the lists the worker kept for the query, it yields candidates lazily.

Every candidate is built around one tree (its anchor) from that tree's
providers and the sharing providers serving it: those in an aggregate
with a provider of the tree (:class:`.trees.Forest`).  Which candidates a
tree gives thus depends on nothing but the query, the tree and the trees
of the sharing providers serving it: their providers' inventories, usage,
traits, aggregates and places, all of which their state rows say
(:mod:`placement.kept`).  So the worker keeps, for each recent query, the
candidates of each tree together with the :class:`.trees.Tree` objects
they came from.  A later search of the same query takes them as they are
for every tree whose own and serving trees are still those very objects,
or differ from them in nothing but usage that leaves room for all the
query asks (:meth:`_Builder._moved_to`), and builds the others.  A
scheduler's claim changes one tree (and, when a sharing provider gave to
it, the trees it serves) mostly in usage alone: its next search builds
only the lists of trees it left too full for the query, or whose
inventories, traits, aggregates or places changed.

Lists that several queries share are moved to new trees once for all of
them (:attr:`CandidateList.moves`).

Only the first :data:`KEPT_PER_TREE` candidates of a tree are kept; a
search needing more of a tree with more builds it again.  A kept list
holds the JSON texts responses wrote for it (:attr:`CandidateList.texts`).
Queries alike often give a tree equal lists (a flavor pinned to one zone
or another finds the same candidates on a host of the zone, none
elsewhere): the worker keeps those as one list, so holding the lists of
many queries costs little memory and their texts are written once
(:meth:`placement.kept.QueryLists.keep`).
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import weakref
from typing import Hashable, Iterator, Sequence

from placement.objects.candidates.assemble import DEPTH_FIRST, Assembler, merge
from placement.objects.candidates.choices import Combination
from placement.kept import QueryLists
from placement.objects.candidates.trees import Forest, Tree
from placement.query import CandidateQuery

# Candidates kept per tree and query: a host's are few (one or two per NUMA
# node and device), but a host of many like devices asked for several of
# them may have thousands.
KEPT_PER_TREE = 64


class CandidateList:
    """Candidates in answer order, the trees they were built from, and the
    trees each takes providers from.

    ``trees`` are the anchor's tree first, then those of the sharing
    providers serving it (in root order): a kept list holds while they are
    the very objects the search reads.  ``used`` says, per candidate, the
    trees it takes providers from, or is None when every candidate takes
    from the first tree only.  A tree's list holds the candidates built
    around it: all of them when ``complete``, else the first ones.
    Candidates past a tree's first ones come one per list, not ``kept``:
    nothing derived from them is kept.  ``sharing_alone`` holds
    the indices of the candidates that take from sharing providers alone
    (see :func:`_first_of_each`).  A kept list may serve several queries
    (see :meth:`content`).
    """

    __slots__ = ("trees", "combinations", "complete", "kept", "used", "sharing_alone",
                 "texts", "moves", "__weakref__")

    def __init__(self, trees: tuple[Tree, ...], combinations: tuple[Combination, ...],
                 complete: bool = True, kept: bool = False,
                 used: tuple[tuple[Tree, ...], ...] | None = None) -> None:
        self.trees = trees
        self.combinations = combinations
        self.complete = complete
        self.kept = kept
        self.used = used
        self.sharing_alone = _sharing_alone(trees, combinations)
        # Per shape, what a response wrote for each candidate (see
        # :mod:`placement.rendering.allocation_candidates`): replaced, never
        # changed, and gone with the list.
        self.texts: dict[Hashable, tuple[bytes, ...]] | None = None
        # What moving this kept list to other trees gave (see
        # :meth:`_Builder._moved_to`), by those trees and what the query
        # asks: the queries sharing the list move it once.
        self.moves: dict[Hashable, weakref.ref[CandidateList] | None] | None = None

    def moved_to(self, trees: tuple[Tree, ...]) -> CandidateList:
        """This kept list's candidates and texts, built from ``trees``
        instead: trees that differ from :attr:`trees`, position by
        position, in usage alone (see :meth:`_Builder._moved_to`), so that
        which providers share, and which trees each candidate takes from,
        are the same but for the objects."""
        moved = CandidateList.__new__(CandidateList)
        moved.trees = trees
        moved.combinations = self.combinations
        moved.complete = self.complete
        moved.kept = True
        moved.sharing_alone = self.sharing_alone
        if self.used is None:
            moved.used = None
        else:
            now = {id(before): after for before, after in zip(self.trees, trees, strict=True)}
            moved.used = tuple([tuple([now[id(tree)] for tree in used]) for used in self.used])
        moved.texts = self.texts
        moved.moves = None
        return moved

    def trees_used(self, index: int) -> tuple[Tree, ...]:
        """The trees candidate ``index`` takes providers from."""
        return self.trees[:1] if self.used is None else self.used[index]

    def content(self) -> Hashable:
        """What the list says, all else following from it: lists of equal
        content serve a search alike, whatever query built them.  Trees
        are named by their keys, which no other tree ever has; candidates
        by their providers' ids, classes and amounts."""
        return tuple([tree.key for tree in self.trees]), self.complete, self.combinations


# One candidate of an answer: a list and the index of the candidate in it.
Item = tuple[CandidateList, int]


def query_key(query: CandidateQuery, nested: bool) -> Hashable:
    """What the candidates of a tree depend on besides the trees: the query
    (but its limit, which only says how many are returned) and whether
    candidates may take several providers of a tree."""
    return dataclasses.replace(query, limit=None), nested


def candidates(trees: Sequence[Tree], query: CandidateQuery, nested: bool,
               kept: QueryLists, strategy: str) -> Iterator[Item]:
    """The candidates of these trees, in the order of ``strategy``: each
    tree's own, reused or built."""
    builder = _Builder(trees, query, nested, kept)
    if strategy == DEPTH_FIRST:
        # A tree's candidates all come before the next tree's: repeats are
        # dropped tree by tree, and the candidates of a list that has none
        # to drop pass through untouched.
        return itertools.chain.from_iterable(
            builder.streams(set() if builder.sharing else None))
    items = merge(builder.streams(), strategy)
    if builder.sharing:
        return _first_of_each(items, set())
    return items


# Moves a kept list remembers (CandidateList.moves): the trees of a list
# change one after the other, and the queries sharing the list ask at
# other times.
MOVES_PER_LIST = 4

# Trees built by the first assembler of a search; each next one builds
# twice as many.
FIRST_BUILT = 4


class _Builder:
    """The candidates of each tree: its kept list while that list was built
    from the very trees read now, else built by an assembler for a batch of
    trees not reused from it onward (made when a stream first needs it: an
    assembler judges the providers of all its trees at once, and a search
    taking a few candidates needs few trees built)."""

    def __init__(self, trees: Sequence[Tree], query: CandidateQuery, nested: bool,
                 kept: QueryLists) -> None:
        self.trees = trees
        self.query = query
        self.nested = nested
        self.kept = kept
        self._sharing = [(tree, provider) for tree in trees if tree.sharing
                         for provider in tree.providers if provider.is_sharing]
        # Empty without sharing providers: then no tree is served by one.
        self._sharing_aggregates = frozenset().union(
            *[provider.aggregates for _tree, provider in self._sharing])
        self._sources: dict[int, tuple[Tree, ...]] = {}
        self._assembler_of: dict[int, Assembler] = {}
        # Kept lists found holding while looking ahead for trees to build,
        # by index: a search looks at most trees once.
        self._reusable_ahead: dict[int, CandidateList] = {}
        self._batch_size = FIRST_BUILT
        self._position: dict[int, int] | None = None
        # What the query asks of each class over all its groups, once
        # needed, and per (kept, read) pair of serving trees whether the
        # read one differs only in usage with room left: a pool serves
        # many trees, and is compared once (_moved_to).
        self._asked: dict[str, int] | None = None
        self._asked_key: tuple[tuple[str, int], ...] = ()
        self._only_usage: dict[tuple[int, int], bool] = {}

    @property
    def sharing(self) -> bool:
        """Whether sharing providers are among the trees."""
        return bool(self._sharing)

    def sources(self, tree: Tree) -> tuple[Tree, ...]:
        """The trees ``tree``'s candidates depend on: itself, then those of
        the sharing providers serving it (in an aggregate with one of its
        providers, as :class:`.trees.Forest` finds them), by root id."""
        if not self._sharing:
            return (tree,)
        found = self._sources.get(tree.root_id)
        if found is None and tree.aggregates.isdisjoint(self._sharing_aggregates):
            # Served by no sharing provider, as most trees are.
            found = self._sources[tree.root_id] = (tree,)
        elif found is None:
            serving = {other.root_id: other for other, provider in self._sharing
                       if other is not tree
                       and not provider.aggregates.isdisjoint(tree.aggregates)}
            found = self._sources[tree.root_id] = (
                tree, *[serving[root] for root in sorted(serving)])
        return found

    def reusable(self, tree: Tree) -> CandidateList | None:
        """The tree's kept list if it holds: complete, and built from the
        very trees its candidates depend on now (:meth:`sources`), or
        from trees that differ from them in usage alone, with room left
        (:meth:`_moved_to`)."""
        listed: CandidateList | None = self.kept.get(tree.root_id)
        if listed is None or not listed.complete:
            return None
        built_from = listed.trees
        # Trees define no equality of their own: the very same objects
        # are what counts.  Most trees were and are served by no sharing
        # provider: that is told without working out their sources.
        if (built_from[0] is tree and len(built_from) == 1
                and tree.aggregates.isdisjoint(self._sharing_aggregates)):
            return listed
        sources = self.sources(tree)
        if built_from == sources:
            return listed
        return self._moved_to(tree, listed, sources)

    def _moved_to(self, tree: Tree, listed: CandidateList,
                  sources: tuple[Tree, ...]) -> CandidateList | None:
        """The tree's kept list again, built from ``sources`` instead, if
        they differ from the trees it was built from (the anchor's own
        and those of the sharing providers serving it) in nothing but
        usage that leaves room for the whole query.

        A claim changes the tree it claims from (and a pool's tree, when
        a sharing provider gave to it, and with it the sources of every
        tree the pool serves): their lists would all be built again
        though each can still give what the query asks, and gives to the
        same candidates (most of a busy cloud's trees are between the
        lists of one query and its next: six in ten under the churn of
        ``benchmarks``).  Usage enters a search only through
        :meth:`.trees.Inventory.fits` and :meth:`.trees.Inventory.holds`,
        and no candidate takes more of a class from one provider than the
        query asks of it in all; where that much still fits over the old
        usage and the new, every such check answers alike, so the
        candidates are the same, their texts too.  Summaries are written
        from the trees an answer's lists name, so the new list names the
        new trees."""
        built_from = listed.trees
        if len(built_from) != len(sources):
            return None
        asked = self._asked
        if asked is None:
            asked = self._asked = _asked_in_all(self.query)
            self._asked_key = tuple(sorted(asked.items()))
        # Whether it moves, and the list it moves to, follow from the
        # list, the trees and what is asked alone: a list that several
        # queries share (a host's list for a flavor, pinned to the host's
        # zone or not) is compared and moved by the first of them to ask.
        # Trees by their keys and the moved list by a weak reference, so
        # that an old list keeps nothing newer alive.
        moves = listed.moves
        move = (tuple([source.key for source in sources]), self._asked_key)
        if moves is not None and move in moves:
            ref = moves[move]
            if ref is None:
                return None
            moved: CandidateList | None = ref()
            if moved is not None:
                self.kept[tree.root_id] = moved
                return moved
        compared = self._only_usage
        result: CandidateList | None = None
        for before, now in zip(built_from, sources, strict=True):
            if before is now:
                continue
            pair = (before.key, now.key)
            same = compared.get(pair)
            if same is None:
                same = compared[pair] = _only_usage_moved(before, now, asked)
            if not same:
                break
        else:
            result = self.kept.keep(tree.root_id, listed.moved_to(sources), rebuilt=False)
        ref = None if result is None else weakref.ref(result)
        if moves is None or len(moves) >= MOVES_PER_LIST:
            # One assignment: another thread sees the old moves or the new.
            listed.moves = {move: ref}
        else:
            moves[move] = ref
        return result

    def streams(self, seen: set[Combination] | None = None) -> Iterator[Iterator[Item]]:
        """The candidates of each tree in turn, as items: a kept list's as
        they are (no Python code runs per candidate), another tree's built
        when its stream is first read.  With ``seen``, candidates of
        sharing providers alone that it holds are dropped, and those
        passed added (see :func:`_first_of_each`).  The lists reused are
        counted once the streams are done with."""
        reused = 0
        try:
            ahead = self._reusable_ahead
            for index, tree in enumerate(self.trees):
                listed = ahead.pop(index, None) or self.reusable(tree)
                if listed is None:
                    stream = self.built(index)
                else:
                    reused += 1
                    stream = zip(itertools.repeat(listed), range(len(listed.combinations)))
                    if not listed.sharing_alone:
                        yield stream
                        continue
                yield stream if seen is None else _first_of_each(stream, seen)
        finally:
            self.kept.count_reused(reused)

    def assembler(self, index: int) -> Assembler:
        """The assembler of the batch holding the tree at ``index``."""
        trees = self.trees
        assembler = self._assembler_of.get(trees[index].root_id)
        if assembler is not None:
            return assembler
        batch = [trees[index]]
        for later in range(index + 1, len(trees)):
            if len(batch) >= self._batch_size:
                break
            tree = trees[later]
            if tree.root_id in self._assembler_of:
                continue
            listed = self.reusable(tree)
            if listed is None:
                batch.append(tree)
            else:
                self._reusable_ahead[later] = listed
        self._batch_size *= 2
        if self._position is None:
            self._position = {tree.root_id: i for i, tree in enumerate(trees)}
        needed = {source.root_id for tree in batch for source in self.sources(tree)}
        # In the order given, as a forest of every tree would hold them:
        # the order of providers is the order of choices.
        assembler = Assembler(
            Forest([trees[i] for i in sorted(self._position[r] for r in needed)]),
            self.query, self.nested)
        for tree in batch:
            self._assembler_of[tree.root_id] = assembler
        return assembler

    def built(self, index: int) -> Iterator[Item]:
        """The candidates of the tree at ``index``, whose kept list does not
        hold, as items: its list built (and kept) when the stream is first
        read."""
        tree = self.trees[index]
        sources = self.sources(tree)
        first = self.assembler(index).first_candidates(tree.root_id, KEPT_PER_TREE + 1)
        combinations = first[:KEPT_PER_TREE]
        listed = self.kept.keep(tree.root_id, CandidateList(
            sources, combinations, complete=len(first) <= KEPT_PER_TREE,
            kept=True, used=_used(sources, combinations)))
        yield from zip(itertools.repeat(listed), range(len(listed.combinations)))
        if not listed.complete:
            for combination in itertools.islice(
                    self.assembler(index).candidates_of(tree.root_id),
                    KEPT_PER_TREE, None):
                yield CandidateList(listed.trees, (combination,),
                                    used=_used(listed.trees, (combination,))), 0


def _used(sources: tuple[Tree, ...], combinations: tuple[Combination, ...]
          ) -> tuple[tuple[Tree, ...], ...] | None:
    """:attr:`CandidateList.used` for these candidates, built from these
    trees (the anchor's first)."""
    if len(sources) == 1:
        return None
    root_of = {p.id: tree for tree in sources for p in tree.providers}
    used = tuple([
        tuple(sorted({root_of[pid] for choice in combination
                      for pid, _name, _amount in choice.allocations},
                     key=operator.attrgetter("root_id")))
        for combination in combinations])
    anchor = sources[:1]
    return None if all(trees == anchor for trees in used) else used


def _asked_in_all(query: CandidateQuery) -> dict[str, int]:
    """The amount of each class the query's groups ask for together: the
    most any candidate takes of it from one provider."""
    asked: dict[str, int] = {}
    for group in query.groups:
        for name, amount in group.resources:
            asked[name] = asked.get(name, 0) + amount
    return asked


def _only_usage_moved(before: Tree, now: Tree, asked: dict[str, int]) -> bool:
    """Whether ``now`` is ``before`` but for usage, and every inventory
    whose usage moved has room for all the query asks of its class
    (``asked``) over both usages, so that no check of a search tells them
    apart."""
    if len(before.providers) != len(now.providers):
        return False
    for old, new in zip(before.providers, now.providers, strict=True):
        if (old.id != new.id or old.uuid != new.uuid or old.parent_id != new.parent_id
                or old.traits != new.traits or old.aggregates != new.aggregates
                or old.inventories.keys() != new.inventories.keys()):
            return False
        if old.inventories is new.inventories:
            continue
        for name, was in old.inventories.items():
            is_ = new.inventories[name]
            if was.used == is_.used:
                if was != is_:
                    return False
            # Room for the whole amount over the larger usage means room
            # for any part of it over either (Inventory.has_room computes
            # as fits and holds do, so floats round alike).
            # (``used`` is an inventory's last field.)
            elif (was[:-1] != is_[:-1]
                  or not (was if was.used > is_.used else is_).has_room(asked.get(name, 0))):
                return False
    return True


_NOBODY: frozenset[int] = frozenset()


def _sharing_alone(sources: tuple[Tree, ...], combinations: tuple[Combination, ...]
                   ) -> frozenset[int]:
    """The indices of the candidates whose providers all share inventory."""
    sharing = {p.id for tree in sources if tree.sharing
               for p in tree.providers if p.is_sharing}
    if not sharing:
        return _NOBODY
    return frozenset([index for index, combination in enumerate(combinations)
                      if all(pid in sharing for choice in combination
                             for pid in choice.providers)])


def _first_of_each(items: Iterator[Item], seen: set[Combination]) -> Iterator[Item]:
    """Each candidate once: one taking from sharing providers alone is
    built around every tree they serve, and comes first with the first.
    ``seen`` holds those that came before (in the streams of earlier trees).

    Only those are looked up: a provider that does not share serves
    candidates built around its own tree alone (:class:`.trees.Forest`
    anchors it there), and each tree is built around once per search, so
    a candidate with such a provider comes once.  Hashing every candidate
    (tuples of tuples, hashed afresh each time) cost more than the rest of
    taking a kept list's candidates.
    """
    for item in items:
        listed, index = item
        if index in listed.sharing_alone:
            combination = listed.combinations[index]
            if combination in seen:
                continue
            seen.add(combination)
        yield item
