"""Which providers a response summarises, and what each candidate allocates.

Placement summarises the providers that appear in the returned candidates;
from microversion 1.29 (nested providers) every provider of their trees,
including those that give nothing to the request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.objects.candidates.choices import Combination
from placement.objects.candidates.trees import Provider, Tree

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
