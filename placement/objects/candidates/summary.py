"""Which providers a response summarises, and what each candidate allocates.

Placement summarises the providers that appear in the returned candidates;
from microversion 1.29 (nested providers) every provider of their trees,
including those that give nothing to the request.
"""

from __future__ import annotations

from typing import Iterable

from placement.objects.candidates.choices import Combination
from placement.objects.candidates.trees import Forest, Provider


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


def summarised(forest: Forest, combinations: Iterable[Combination],
               whole_trees: bool) -> list[Provider]:
    """The providers to summarise, by id."""
    used: set[int] = set()
    for combination in combinations:
        for choice in combination:
            for pid, _name, _amount in choice.allocations:
                used.add(pid)
    if whole_trees:
        roots = {forest.providers[pid].root_id for pid in used}
        used = {pid for root in roots for pid in forest.trees[root]}
    return [forest.providers[pid] for pid in sorted(used)]
