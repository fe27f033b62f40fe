"""Allocation candidates: which providers could satisfy a request, and how.

:func:`find` is the one entry point: it checks the names the query uses,
loads the trees that can take part (:mod:`.search`, a few queries), and
combines their providers into candidates in memory (:mod:`.assemble`),
producing no more of them than the answer needs.  :mod:`.summary` says
which providers the answer describes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from placement import exceptions
from placement.objects.candidates import assemble, search
from placement.objects.candidates.choices import Choice, Combination
from placement.objects.candidates.trees import Forest, Inventory, Provider
from placement.request_groups import CandidateQuery

__all__ = ["Candidates", "Choice", "Combination", "Forest", "Inventory",
           "Provider", "find"]


@dataclasses.dataclass(frozen=True)
class Candidates:
    """The chosen combinations (one :class:`Choice` per request group, in
    the query's group order) and the forest they were built from, which
    callers only read."""

    combinations: tuple[Combination, ...]
    forest: Forest
    query: CandidateQuery


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


def find(ctx: Any, query: CandidateQuery, *, limit: int | None = None,
         randomize: bool = False, max_candidates: int = -1,
         strategy: str = assemble.DEPTH_FIRST, nested: bool = True
         ) -> Candidates:
    """The allocation candidates for ``query``.

    Raises ResourceClassNotFound or TraitNotFound for unknown names.
    ``limit`` defaults to the query's own.  Without ``nested`` (before
    microversion 1.29) a candidate uses at most one provider of a tree
    besides sharing providers.
    """
    trait_names: set[str] = set(query.root_required | query.root_forbidden)
    for group in query.groups:
        trait_names |= group.trait_names
    limit = query.limit if limit is None else limit
    bound = _bound(limit, randomize, max_candidates, strategy)
    with ctx.db.reader() as conn:
        classes, traits = search.check_names(conn, sorted(trait_names))
        _check_names(query, classes, traits)
        class_ids = [classes[name] for name in query.resource_class_names]
        needs_aggregates = any(g.member_of or g.not_member_of for g in query.groups)
        amounts = [(classes[name], amount) for group in query.groups
                   for name, amount in group.resources]
        roots = search.candidate_roots(conn, amounts) if bound else None
        if roots is not None and bound is not None:
            return _in_batches(conn, query, classes, roots, bound, needs_aggregates,
                               nested)
        forest = search.load_forest(conn, classes, class_ids, needs_aggregates)
    assembler = assemble.Assembler(forest, query, nested)
    combinations = assemble.select(
        assembler, limit=limit, randomize=randomize,
        max_candidates=max_candidates, strategy=strategy)
    return Candidates(tuple(combinations), forest, query)


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


# Trees loaded by the first batch; each further batch is twice as large.
FIRST_BATCH = 16


def _in_batches(conn: Any, query: CandidateQuery, classes: dict[str, int],
                roots: list[int], bound: int, with_aggregates: bool,
                nested: bool) -> Candidates:
    """Candidates from trees loaded a batch at a time, in root order, until
    ``bound`` are found: a small limit reads few trees whatever the size of
    the deployment.  Same candidates, in the same order, as loading every
    tree at once would give."""
    found: list[Combination] = []
    providers: list[Provider] = []
    start, size = 0, FIRST_BATCH
    while start < len(roots) and len(found) < bound:
        forest = search.load_trees(conn, classes, roots[start:start + size],
                                   with_aggregates)
        assembler = assemble.Assembler(forest, query, nested)
        more = assemble.select(assembler, limit=bound - len(found),
                               randomize=False, max_candidates=-1,
                               strategy=assemble.DEPTH_FIRST)
        if more:
            found += more
            providers += forest.providers.values()
        start, size = start + size, size * 2
    return Candidates(tuple(found), Forest(providers), query)
