"""The candidates of trees, reused from earlier searches for unchanged trees.

:func:`candidates` is the compute step of a search: given the trees read
and the lists the worker kept for the query, it yields candidates lazily.

Without sharing providers, every candidate is built around one tree from
that tree's providers alone, and which candidates a tree gives depends on
nothing but the query and the tree: its providers' inventories, usage,
traits, aggregates and places, all of which its state rows say
(:mod:`placement.kept`).  So the worker keeps, for each recent query, the
candidates of each tree together with the :class:`.trees.Tree` object they
came from.  A later search of the same query takes them as they are for
every tree that is still that very object, and builds the others; a
scheduler's claim changes one tree, so its next search builds one.

Only the first :data:`KEPT_PER_TREE` candidates of a tree are kept; a
search needing more of a tree with more builds it again.  A kept list has
a ``key``, under which the worker keeps the JSON text a response wrote
for it (:class:`placement.kept.Texts`).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Hashable, Iterator, Sequence

from placement.objects.candidates.assemble import Assembler, merge
from placement.objects.candidates.choices import Combination
from placement.kept.keys import new_key
from placement.objects.candidates.trees import Forest, Tree
from placement.query import CandidateQuery

# Candidates kept per tree and query: a host's are few (one or two per NUMA
# node and device), but a host of many like devices asked for several of
# them may have thousands.
KEPT_PER_TREE = 64


class CandidateList:
    """Candidates in answer order, and the trees they take providers from.

    A tree's list holds the candidates built around it: all of them when
    ``complete``, else the first ones.  Candidates that are not kept
    (sharing providers, those past a tree's first ones) come one per list,
    without a ``key``: nothing derived from them is kept either.
    """

    __slots__ = ("trees", "combinations", "complete", "key")

    def __init__(self, trees: tuple[Tree, ...], combinations: tuple[Combination, ...],
                 complete: bool = True, key: int | None = None) -> None:
        self.trees = trees
        self.combinations = combinations
        self.complete = complete
        self.key = key


# One candidate of an answer: a list and the index of the candidate in it.
Item = tuple[CandidateList, int]


def query_key(query: CandidateQuery, nested: bool) -> Hashable:
    """What the candidates of a tree depend on besides the tree: the query
    (but its limit, which only says how many are returned) and whether
    candidates may take several providers of a tree."""
    return dataclasses.replace(query, limit=None), nested


def candidates(trees: Sequence[Tree], query: CandidateQuery, nested: bool,
               kept: dict[int, CandidateList], strategy: str) -> Iterator[Item]:
    """The candidates of these trees, in the order of ``strategy``: each
    tree's own, reused or built, or, with sharing providers among them,
    those built from all of them together (never kept)."""
    if any(tree.sharing for tree in trees):
        forest = Forest(trees)
        return single(Assembler(forest, query, nested).generate(strategy), forest)
    return merge(tree_streams(trees, query, nested, kept), strategy)


def tree_streams(trees: Sequence[Tree], query: CandidateQuery, nested: bool,
                 kept: dict[int, CandidateList]) -> list[Iterator[Item]]:
    """The candidates of each tree, in the order given, as items.

    ``kept`` holds the lists of earlier searches of this query by root id
    (:meth:`placement.kept.QueryCandidates.of`); lists built here are added to it.
    Nothing is built before a stream is read, so a limit bounds the work.
    The trees must not include sharing providers.
    """
    # Lists reused as they are, taken now: another request may replace
    # kept ones while these streams are read.
    reused = {tree.root_id: listed for tree in trees
              if (listed := kept.get(tree.root_id)) is not None
              and listed.trees[0] is tree and listed.complete}
    builder = _Builder(trees, reused, query, nested)
    return [builder.items(tree, reused.get(tree.root_id), kept) for tree in trees]


class _Builder:
    """Builds the candidates of the trees not reused, with one assembler
    for all of them, made on first need: it judges providers once for all
    of them."""

    def __init__(self, trees: Sequence[Tree], reused: dict[int, CandidateList],
                 query: CandidateQuery, nested: bool) -> None:
        self.trees = trees
        self.reused = reused
        self.query = query
        self.nested = nested
        self._assembler: Assembler | None = None

    def assembler(self) -> Assembler:
        if self._assembler is None:
            self._assembler = Assembler(
                Forest([t for t in self.trees if t.root_id not in self.reused]),
                self.query, self.nested)
        return self._assembler

    def items(self, tree: Tree, listed: CandidateList | None,
              kept: dict[int, CandidateList]) -> Iterator[Item]:
        """The tree's candidates as items, its list built (and kept) when
        the stream first reaches it."""
        if listed is None:
            first = self.assembler().first_candidates(tree.root_id, KEPT_PER_TREE + 1)
            listed = CandidateList((tree,), first[:KEPT_PER_TREE],
                                   complete=len(first) <= KEPT_PER_TREE, key=new_key())
            kept[tree.root_id] = listed
        yield from zip(itertools.repeat(listed), range(len(listed.combinations)))
        if not listed.complete:
            for combination in itertools.islice(
                    self.assembler().candidates_of(tree.root_id), KEPT_PER_TREE, None):
                yield CandidateList(listed.trees, (combination,)), 0


def single(combinations: Iterator[Combination], forest: Forest) -> Iterator[Item]:
    """Candidates of ``forest`` that are not kept (sharing providers), as
    items."""
    providers, trees = forest.providers, forest.trees
    for combination in combinations:
        roots = sorted({providers[pid].root_id for choice in combination
                        for pid, _name, _amount in choice.allocations})
        yield CandidateList(tuple([trees[root] for root in roots]),
                            (combination,)), 0
