"""Allocation candidates: which providers could satisfy a request, and how.

:func:`find` is the one entry point: it checks the names the query uses,
reads the trees that can take part (:mod:`.loader`, a few queries), and
combines their providers into candidates in memory (:mod:`.assemble`),
producing no more of them than the answer needs.  Trees unchanged since
an earlier search of the same query give the candidates they gave then
(:mod:`.reuse`).  :mod:`.summary` says which providers the answer
describes.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import TYPE_CHECKING, Iterator, Sequence

from placement import exceptions
from placement.kept import Kept
from placement.objects.candidates import assemble, reuse, search
from placement.objects.candidates.choices import Choice, Combination
from placement.objects.candidates.loader import Loader
from placement.objects.candidates.reuse import CandidateList, Item
from placement.objects.candidates.trees import Forest, Inventory, Provider, Tree
from placement.query import CandidateQuery

if TYPE_CHECKING:
    from placement.context import RequestContext

__all__ = ["CandidateList", "Candidates", "Choice", "Combination", "Forest",
           "Inventory", "Item", "Provider", "Tree", "find"]


@dataclasses.dataclass(frozen=True)
class Candidates:
    """The chosen candidates, in answer order, each as an item of a
    :class:`CandidateList`; the forest of the trees they use, which callers
    only read; and the query."""

    chosen: tuple[Item, ...]
    forest: Forest
    query: CandidateQuery
    # Before 1.29, when the limit left candidates out: the providers the
    # summaries show (see :func:`_summarised_before_nested`).
    summarised: frozenset[int] | None = None

    @property
    def combinations(self) -> tuple[Combination, ...]:
        """One :class:`Choice` per request group, in the query's group
        order, for each candidate."""
        return tuple([listed.combinations[index] for listed, index in self.chosen])


def _check_names(query: CandidateQuery, classes: dict[str, int],
                 traits: dict[str, int]) -> None:
    # The first unknown class in request order, then every unknown trait:
    # root_required's before the groups'.
    for name in query.resource_class_names:
        if name not in classes:
            raise exceptions.ResourceClassNotFound(name=name)
    for names in [query.root_required | query.root_forbidden] + [
            group.trait_names for group in query.groups]:
        missing = sorted(names - set(traits))
        if missing:
            raise exceptions.TraitNotFound(names=", ".join(missing))


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
    trait_names: set[str] = set(query.root_required | query.root_forbidden)
    for group in query.groups:
        trait_names |= group.trait_names
    limit = query.limit if limit is None else limit
    bound = _bound(limit, randomize, max_candidates, strategy)
    with ctx.db.reader() as conn:
        classes, traits = search.check_names(conn, sorted(trait_names))
        _check_names(query, classes, traits)
        loader = Loader(conn, classes, kept)
        kept_lists = kept.candidates.of(reuse.query_key(query, nested))
        amounts = [(classes[name], amount) for group in query.groups
                   for name, amount in group.resources]
        roots = search.candidate_roots(conn, amounts) if bound else None
        class_ids = [classes[name] for name in query.resource_class_names]
        if roots is not None and bound is not None:
            chosen = assemble.choose(
                itertools.chain.from_iterable(
                    _batches(loader, roots, query, nested, kept_lists)),
                limit=bound, randomize=False, max_candidates=-1)
            if not _cut_before_nested(chosen, limit, nested):
                return _candidates(chosen, query)
            trees = loader.relevant_trees(class_ids)
        else:
            trees = loader.relevant_trees(class_ids)
            chosen = None
    if chosen is None:
        chosen = assemble.choose(
            _stream(trees, query, nested, kept_lists, strategy),
            limit=limit, randomize=randomize, max_candidates=max_candidates)
    found = _candidates(chosen, query)
    if _cut_before_nested(chosen, limit, nested):
        found = dataclasses.replace(found, summarised=_summarised_before_nested(
            found, trees, query, kept_lists))
    return found


def _cut_before_nested(chosen: list[Item], limit: int | None, nested: bool) -> bool:
    """Whether the limit may have left candidates out, before 1.29."""
    return not nested and limit is not None and len(chosen) >= limit


def _candidates(chosen: list[Item], query: CandidateQuery) -> Candidates:
    trees = {tree.root_id: tree for listed, _index in chosen for tree in listed.trees}
    return Candidates(tuple(chosen), Forest(trees.values()), query)


def _summarised_before_nested(found: Candidates, trees: Sequence[Tree],
                              query: CandidateQuery,
                              kept: dict[int, CandidateList]) -> frozenset[int]:
    """The providers Placement summarises before 1.29 when ``limit`` left
    candidates out.

    Placement cuts its whole answer to the limit and then keeps the
    summaries of the providers whose root is the root of a provider in a
    returned candidate: so the summaries also show providers of those
    trees that only candidates left out use.  Those candidates are found
    again here, from those trees and the sharing providers' (this costs a
    second search, only for such requests).
    """
    providers = found.forest.providers
    roots = {providers[pid].root_id for combination in found.combinations
             for choice in combination for pid, _name, _amount in choice.allocations}
    involved = [tree for tree in trees if tree.root_id in roots or tree.sharing]
    everything = Forest(involved).providers
    used: set[int] = set()
    for listed, index in _stream(involved, query, False, kept, assemble.DEPTH_FIRST):
        for choice in listed.combinations[index]:
            for pid, _name, _amount in choice.allocations:
                if everything[pid].root_id in roots:
                    used.add(pid)
    return frozenset(used)


def _bound(limit: int | None, randomize: bool, max_candidates: int,
           strategy: str) -> int | None:
    """How many candidates the answer takes when they can be found a batch
    of trees at a time: depth-first and not shuffled (shuffling needs them
    all, breadth-first visits every tree)."""
    if randomize or strategy != assemble.DEPTH_FIRST:
        return None
    bounds = [b for b in (limit, assemble.generation_bound(max_candidates))
              if b is not None]
    return min(bounds) if bounds else None


def _stream(trees: Sequence[Tree], query: CandidateQuery, nested: bool,
            kept: dict[int, CandidateList], strategy: str) -> Iterator[Item]:
    """The candidates of these trees, in the order of ``strategy``: each
    tree's own, reused or built, or, with sharing providers among them,
    those built from all of them together."""
    if any(tree.sharing for tree in trees):
        forest = Forest(trees)
        return reuse.single(
            assemble.Assembler(forest, query, nested).generate(strategy), forest)
    return assemble.merge(reuse.tree_streams(trees, query, nested, kept), strategy)


# Trees read by the first batch; each further batch is twice as large.
FIRST_BATCH = 16


def _batches(loader: Loader, roots: list[int], query: CandidateQuery,
             nested: bool, kept: dict[int, CandidateList]
             ) -> Iterator[Iterator[Item]]:
    """The candidates of the trees of ``roots``, read a batch of trees at a
    time, in root order, as each batch is needed: a small limit reads few
    trees whatever the size of the deployment.  Same candidates, in the
    same order, as reading every tree at once would give."""
    start, size = 0, FIRST_BATCH
    while start < len(roots):
        trees = loader.trees_of_roots(roots[start:start + size])
        yield _stream(trees, query, nested, kept, assemble.DEPTH_FIRST)
        start, size = start + size, size * 2
