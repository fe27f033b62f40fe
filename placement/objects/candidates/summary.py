"""Which providers a response summarises, and what each candidate allocates.

Placement summarises the providers that appear in the returned candidates;
from microversion 1.29 (nested providers) every provider of their trees,
including those that give nothing to the request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from placement.objects.candidates import assemble, reuse
from placement.objects.candidates.choices import Combination
from placement.kept import QueryLists
from placement.objects.candidates.trees import Forest, Provider, Tree
from placement.query import CandidateQuery

if TYPE_CHECKING:
    from placement.objects.candidates import Candidates


def allocations(combination: Combination) -> dict[int, dict[str, int]]:
    """``{provider id: {class: amount}}``, amounts of all groups summed."""
    merged: dict[int, dict[str, int]] = {}
    for choice in combination:
        for pid, name, amount in choice.allocations:
            resources = merged.get(pid)
            if resources is None:
                merged[pid] = {name: amount}
            else:
                resources[name] = resources.get(name, 0) + amount
    return merged


def trees_shown(found: Candidates) -> list[Tree]:
    """The trees the candidates take from, by root id: their providers are
    the ones summarised from 1.29."""
    trees = found.forest.trees
    return [trees[root] for root in sorted(trees)]


def providers_shown(found: Candidates) -> list[Provider]:
    """The providers the candidates take from, by id: the ones summarised
    before 1.29 (more when the limit left candidates out, see
    :attr:`Candidates.summarised`)."""
    providers = found.forest.providers
    if found.summarised is not None:
        return [providers[pid] for pid in sorted(found.summarised)]
    used: set[int] = set()
    for combination in found.combinations:
        for choice in combination:
            for pid, _name, _amount in choice.allocations:
                used.add(pid)
    return [providers[pid] for pid in sorted(used)]


def cut_before_nested(found: Candidates, limit: int | None, nested: bool) -> bool:
    """Whether the limit may have left candidates out, before 1.29."""
    return not nested and limit is not None and len(found.chosen) >= limit


def summarised_before_nested(found: Candidates, trees: Sequence[Tree],
                             query: CandidateQuery,
                             kept: QueryLists) -> frozenset[int]:
    """The providers Placement summarises before 1.29 when the limit left
    candidates out (see :func:`cut_before_nested`); ``trees`` are all the
    trees that may take part.

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
    for listed, index in reuse.candidates(involved, query, False, kept,
                                          assemble.DEPTH_FIRST):
        for choice in listed.combinations[index]:
            for pid, _name, _amount in choice.allocations:
                if everything[pid].root_id in roots:
                    used.add(pid)
    return frozenset(used)
