"""Allocation candidates: which providers could satisfy a request, and how.

:func:`find` is the one entry point, in three steps:

read
    check the names the query uses and read the trees that can take part
    (:class:`.loader.QueryTrees`, a few queries), through what the worker
    keeps (:mod:`placement.kept`);
compute
    combine their providers into candidates in memory, lazily
    (:func:`.reuse.candidates`, :mod:`.assemble`, :mod:`.choices`): trees
    unchanged since an earlier search of the same query give the
    candidates they gave then;
choose
    take as many as the answer returns (:func:`.assemble.choose`), so no
    more are produced than it needs.

:mod:`.summary` says which providers the answer describes.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from typing import TYPE_CHECKING

import sqlalchemy as sa

from placement.kept import Kept
from placement.objects.candidates import assemble, reuse, search, summary
from placement.objects.candidates.choices import Choice, Combination
from placement.objects.candidates.loader import Loader, QueryTrees
from placement.objects.candidates.reuse import CandidateList, Item
from placement.objects.candidates.search import prepare
from placement.objects.candidates.trees import Forest, Inventory, Provider, Tree
from placement.query import CandidateQuery

if TYPE_CHECKING:
    from placement.context import RequestContext

__all__ = ["CandidateList", "Candidates", "Choice", "Combination", "Forest",
           "Inventory", "Item", "Provider", "Tree", "find", "prepare", "warm"]


@dataclasses.dataclass(frozen=True)
class Candidates:
    """The chosen candidates, in answer order, each as an item of a
    :class:`CandidateList`; the forest of the trees they use, which callers
    only read; and the query."""

    chosen: tuple[Item, ...]
    forest: Forest
    query: CandidateQuery
    # Before 1.29, when the limit left candidates out: the providers the
    # summaries show (see :func:`.summary.summarised_before_nested`).
    summarised: frozenset[int] | None = None

    @property
    def combinations(self) -> tuple[Combination, ...]:
        """One :class:`Choice` per request group, in the query's group
        order, for each candidate."""
        return tuple([listed.combinations[index] for listed, index in self.chosen])


def find(ctx: RequestContext, query: CandidateQuery, *, limit: int | None = None,
         randomize: bool = False, max_candidates: int = -1,
         strategy: str = assemble.DEPTH_FIRST, nested: bool = True,
         kept: Kept) -> Candidates:
    """The allocation candidates for ``query``.

    Raises ResourceClassNotFound or TraitNotFound for unknown names.
    ``limit`` defaults to the query's own.  Without ``nested`` (before
    microversion 1.29) a candidate uses at most one provider of a tree
    besides sharing providers.  ``kept`` is what the worker keeps between
    searches (:data:`placement.kept.NOTHING` to keep nothing).
    """
    limit = query.limit if limit is None else limit
    bound = _first_only(randomize, strategy, limit, max_candidates)
    with ctx.db.reader() as conn:
        # Read: the trees that may take part, through the worker's memory
        # (``kept`` enters the search here and nowhere else); a batch at a
        # time when the answer takes the first few candidates.
        source = QueryTrees(conn, query, nested, kept, bound=bound)
        batches = source.batches() if bound is not None else [source.relevant_trees()]
        # Compute: the candidates of each batch, as the worker kept them
        # for unchanged trees, lazily.
        stream = itertools.chain.from_iterable(
            reuse.candidates(trees, query, nested, source.lists, strategy)
            for trees in batches)
        # Choose: the ones the answer returns.
        chosen = assemble.choose(stream, limit=limit, randomize=randomize,
                                 max_candidates=max_candidates)
        found = _answer(chosen, query)
        if summary.cut_before_nested(found, limit, nested):
            found = dataclasses.replace(found, summarised=summary.summarised_before_nested(
                found, source.relevant_trees(), query, source.lists))
    return found


def _first_only(randomize: bool, strategy: str, limit: int | None,
                max_candidates: int) -> int | None:
    """How many candidates the answer takes at most, when they are the
    first ones, depth first: then trees can be read a batch at a time, as
    candidates are needed (shuffling needs them all, breadth-first visits
    every tree).  None otherwise."""
    if randomize or strategy != assemble.DEPTH_FIRST:
        return None
    bounds = [b for b in (limit, assemble.generation_bound(max_candidates)) if b is not None]
    return min(bounds) if bounds else None


def _answer(chosen: list[Item], query: CandidateQuery) -> Candidates:
    trees: dict[int, Tree] = {}
    # A list's candidates come one after the other, and in most lists all
    # take from the anchor's tree alone: it is added once per list.
    for listed, items in itertools.groupby(chosen, key=operator.itemgetter(0)):
        if listed.used is None:
            anchor = listed.trees[0]
            trees[anchor.root_id] = anchor
            continue
        for _listed, index in items:
            for tree in listed.used[index]:
                trees[tree.root_id] = tree
    return Candidates(tuple(chosen), Forest(trees.values()), query)


# Up to how many providers a worker reads every tree as it starts.
WARM_PROVIDERS = 10_000


def warm(conn: sa.engine.Connection, kept: Kept) -> list[Tree]:
    """Ready a worker's first search, on its first connection as it starts
    (:func:`placement.db.startup.connect_in_background`): run the search's
    statements once (:func:`.search.warm`) and, on a deployment of up to
    WARM_PROVIDERS providers, read every tree into ``kept`` as a search
    over all of them would.  The trees read, by root id (none on a bigger
    deployment).

    A fresh worker's first search otherwise reads and builds every tree it
    touches, about half of its time for 1,000 hosts (after a restart, or
    when gunicorn replaces a worker).  Searches read the states of their
    trees afresh, and use a kept tree only while its state is unchanged
    (:mod:`placement.kept`), so reading them early changes no answer.  It
    costs the worker what its first search over every tree would have kept
    anyway; on bigger deployments, whose searches are bounded by a
    ``limit`` and read a few pages of trees, it would cost memory for
    trees no search asks for.
    """
    names = search.warm(conn)
    if search.provider_count(conn) > WARM_PROVIDERS:
        return []
    trees = Loader(conn, names.classes, kept).trees({search.EVERYONE: []})
    if trees:
        # An empty store tells nothing of the trees made later.
        kept.read_every_tree()
    return trees
