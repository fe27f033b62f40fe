"""Combining providers into allocation candidates, in memory (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from placement.objects.candidates import Candidates, assemble, reuse, summary
from placement.objects.candidates.trees import Forest, Inventory, Provider
from placement.query import CandidateQuery, RequestGroup
from tests.unit.candidate_trees import (
    forest,
    forest_of,
    gpu_groups,
    group,
    inv,
    wide_hosts,
)

SHARES = "MISC_SHARES_VIA_AGGREGATE"


def select(assembler: assemble.Assembler, *, limit: int | None, randomize: bool,
           max_candidates: int, strategy: str, **shuffle: Any) -> list[Any]:
    """The candidates to return of all ``assembler`` can build."""
    return assemble.choose(assembler.generate(strategy),  # type: ignore[arg-type]
                           limit=limit, randomize=randomize,
                           max_candidates=max_candidates, **shuffle)


def run(trees: Forest, *groups: RequestGroup, nested: bool = True,
        limit: int | None = None, max_candidates: int = -1,
        strategy: str = assemble.DEPTH_FIRST, **wide: Any) -> list[Any]:
    query = CandidateQuery(groups=groups, **wide)
    assembler = assemble.Assembler(trees, query, nested)
    combos = select(assembler, limit=limit, randomize=False,
                             max_candidates=max_candidates, strategy=strategy)
    return [readable(c) for c in combos]


def readable(combination: assemble.Combination) -> tuple[Any, ...]:
    """``({provider: {class: amount}}, (providers of each group, ...))``."""
    allocations = summary.allocations(combination)
    return (allocations, tuple(choice.providers for choice in combination))


# A compute node (1) with DISK_GB, two NUMA nodes (2, 3) with VCPU, a GPU
# (4) below NUMA 2, and a sharing storage pool (9) in aggregate "agg".
COMPUTE = (
    (1, None, {"DISK_GB": inv(100)}, {"CUSTOM_ROOT"}, {"agg"}),
    (2, 1, {"VCPU": inv(4)}, {"CUSTOM_N2"}),
    (3, 1, {"VCPU": inv(4), "MEMORY_MB": inv(512)}),
    (4, 2, {"VGPU": inv(2)}, {"CUSTOM_GPU"}),
    (9, None, {"DISK_GB": inv(1000), "IPV4_ADDRESS": inv(8)}, {SHARES}, {"agg"}),
)


@pytest.mark.parametrize("groups, wide, expected", [
    # Providers of one tree combine for the unnumbered group.
    ([group(resources={"VCPU": 1, "DISK_GB": 1})], {}, [
        ({2: {"VCPU": 1}, 1: {"DISK_GB": 1}}, ((2, 1),)),
        ({2: {"VCPU": 1}, 9: {"DISK_GB": 1}}, ((2, 9),)),
        ({3: {"VCPU": 1}, 1: {"DISK_GB": 1}}, ((3, 1),)),
        ({3: {"VCPU": 1}, 9: {"DISK_GB": 1}}, ((3, 9),)),
    ]),
    # Required traits: the providers of a candidate have them together.
    ([group(resources={"VCPU": 1, "DISK_GB": 1}, required=["CUSTOM_N2"],
            forbidden=[SHARES])], {}, [
        ({2: {"VCPU": 1}, 1: {"DISK_GB": 1}}, ((2, 1),)),
    ]),
    # A trait of a provider that gives nothing does not count.
    ([group(resources={"VCPU": 1}, required=["CUSTOM_ROOT"])], {}, []),
    # Any-of traits.
    ([group(resources={"VCPU": 1}, required=[{"CUSTOM_N2", "CUSTOM_X"}])], {},
     [({2: {"VCPU": 1}}, ((2,),))]),
    # Aggregates of the root count for its descendants in the unnumbered group.
    ([group(resources={"VCPU": 1}, member_of=["agg"])], {}, [
        ({2: {"VCPU": 1}}, ((2,),)), ({3: {"VCPU": 1}}, ((3,),)),
    ]),
    # ... but not in a suffixed group.
    ([group("1", resources={"VCPU": 1}, member_of=["agg"])], {}, []),
    # A sharing provider alone serves a request once, though several trees
    # could anchor it.
    ([group(resources={"IPV4_ADDRESS": 1})], {}, [
        ({9: {"IPV4_ADDRESS": 1}}, ((9,),)),
    ]),
    # Granular groups: each on one provider; none vs isolate.
    ([group("1", resources={"VCPU": 1}), group("2", resources={"VCPU": 1})],
     {"group_policy": "none"}, [
        ({2: {"VCPU": 2}}, ((2,), (2,))),
        ({2: {"VCPU": 1}, 3: {"VCPU": 1}}, ((2,), (3,))),
        ({3: {"VCPU": 1}, 2: {"VCPU": 1}}, ((3,), (2,))),
        ({3: {"VCPU": 2}}, ((3,), (3,))),
    ]),
    ([group("1", resources={"VCPU": 1}), group("2", resources={"VCPU": 1})],
     {"group_policy": "isolate"}, [
        ({2: {"VCPU": 1}, 3: {"VCPU": 1}}, ((2,), (3,))),
        ({3: {"VCPU": 1}, 2: {"VCPU": 1}}, ((3,), (2,))),
    ]),
    # Amounts summed over groups must still fit.
    ([group("1", resources={"VCPU": 3}), group("2", resources={"VCPU": 3})],
     {"group_policy": "none"}, [
        ({2: {"VCPU": 3}, 3: {"VCPU": 3}}, ((2,), (3,))),
        ({3: {"VCPU": 3}, 2: {"VCPU": 3}}, ((3,), (2,))),
    ]),
    # same_subtree: the GPU with the NUMA node above it only.
    ([group("1", resources={"VGPU": 1}), group("2", resources={"VCPU": 1})],
     {"group_policy": "none", "same_subtree": (("1", "2"),)}, [
        ({4: {"VGPU": 1}, 2: {"VCPU": 1}}, ((4,), (2,))),
    ]),
    # A resourceless group names the provider a subtree hangs from.
    ([group("1", resources={"VGPU": 1}), group("2", required=["CUSTOM_N2"])],
     {"group_policy": "none", "same_subtree": (("1", "2"),)}, [
        ({4: {"VGPU": 1}}, ((4,), (2,))),
    ]),
    # Resourceless groups count for isolation too.
    ([group("1", resources={"VCPU": 1}), group("2", required=["CUSTOM_N2"])],
     {"group_policy": "isolate", "same_subtree": (("1", "2"),)}, []),
    # root_required applies to the tree the candidate is built around.
    ([group(resources={"VCPU": 1})],
     {"root_required": frozenset({"CUSTOM_ROOT"})}, [
        ({2: {"VCPU": 1}}, ((2,),)), ({3: {"VCPU": 1}}, ((3,),)),
    ]),
    ([group(resources={"VCPU": 1})],
     {"root_forbidden": frozenset({"CUSTOM_ROOT"})}, []),
    # in_tree keeps the unnumbered group away from sharing providers.
    ([group(resources={"VCPU": 1, "DISK_GB": 1}, in_tree="uuid-3")], {}, [
        ({2: {"VCPU": 1}, 1: {"DISK_GB": 1}}, ((2, 1),)),
        ({3: {"VCPU": 1}, 1: {"DISK_GB": 1}}, ((3, 1),)),
    ]),
    ([group(resources={"VCPU": 1}, in_tree="no-such-uuid")], {}, []),
])
def test_candidates(groups: list[RequestGroup], wide: dict[str, Any],
                    expected: list[Any]) -> None:
    assert run(forest(*COMPUTE), *groups, **wide) == expected


@pytest.mark.parametrize("inventory, amount, fits", [
    (inv(8), 8, True),
    (inv(8, used=1), 8, False),
    (inv(8, reserved=2, ratio=1.5, max_unit=16), 9, True),
    (inv(8, reserved=2, ratio=1.5, max_unit=16), 10, False),
    (inv(8, max_unit=4), 5, False),
    (inv(8, step=2), 3, False),
    (inv(8, step=2), 4, True),
    (inv(8, min_unit=2), 1, False),
])
def test_inventory_fits(inventory: Inventory, amount: int, fits: bool) -> None:
    assert inventory.fits(amount) is fits


def test_capacity_is_truncated() -> None:
    assert inv(10, reserved=1, ratio=1.15).capacity == 10


def test_before_nested_one_provider_per_tree() -> None:
    trees = forest(*COMPUTE)
    both = group(resources={"VCPU": 1, "DISK_GB": 1})
    assert run(trees, both, nested=False) == [
        ({2: {"VCPU": 1}, 9: {"DISK_GB": 1}}, ((2, 9),)),
        ({3: {"VCPU": 1}, 9: {"DISK_GB": 1}}, ((3, 9),)),
    ]


def test_limit_stops_the_enumeration() -> None:
    trees = wide_hosts(200)
    query = CandidateQuery(groups=tuple(gpu_groups()), group_policy="isolate")
    assembler = assemble.Assembler(trees, query)
    combos = select(assembler, limit=10, randomize=False,
                             max_candidates=-1, strategy=assemble.DEPTH_FIRST)
    assert len(combos) == 10
    # Only the first host was looked at.
    assert {trees.providers[c[0].providers[0]].root_id for c in combos} == {1}
    assert all(len(search._cache) == 1 for search in assembler.searches)
    # Isolated: four different GPUs each time.
    assert all(len({c[i].providers[0] for i in range(1, 5)}) == 4 for c in combos)


def test_every_candidate_of_a_wide_host() -> None:
    # 2 NUMA nodes x 8*7*6*5 ordered GPU choices.
    assert len(run(wide_hosts(1), *gpu_groups(), group_policy="isolate")) == 3360


@pytest.mark.parametrize("strategy, roots", [
    (assemble.DEPTH_FIRST, [1, 1, 1, 1]),
    (assemble.BREADTH_FIRST, [1, 101, 201, 1]),
])
def test_generation_strategy(strategy: str, roots: list[int]) -> None:
    trees = wide_hosts(3)
    found = run(trees, *gpu_groups(), group_policy="isolate", max_candidates=4,
                strategy=strategy)
    assert [trees.providers[next(iter(a))].root_id for a, _m in found] == roots


def test_randomized_selection_shuffles_before_the_limit() -> None:
    trees = wide_hosts(2)
    query = CandidateQuery(groups=tuple(gpu_groups()), group_policy="isolate")
    combos = select(
        assemble.Assembler(trees, query), limit=3, randomize=True,
        max_candidates=-1, strategy=assemble.DEPTH_FIRST,
        shuffle=lambda items: items.reverse())
    # Reversed: the last candidates of the last host come first.
    assert [trees.providers[c[0].providers[0]].root_id for c in combos] == [101] * 3
    assert len(combos) == 3


def test_summaries_cover_whole_trees_from_nested_versions() -> None:
    trees = forest(*COMPUTE)
    query = CandidateQuery(groups=(group(resources={"VCPU": 1}),),
                           same_subtree=())
    combos = select(assemble.Assembler(trees, query), limit=1,
                             randomize=False, max_candidates=-1,
                             strategy=assemble.DEPTH_FIRST)
    chosen = tuple((reuse.CandidateList((trees.trees[1],), (combo,)), 0)
                   for combo in combos)
    found = Candidates(chosen, Forest(chosen[0][0].trees_used(0)), query)
    assert [tree.root_id for tree in summary.trees_shown(found)] == [1]
    assert [p.id for p in summary.trees_shown(found)[0].providers] == [1, 2, 3, 4]
    assert [p.id for p in summary.providers_shown(found)] == [2]


def test_like_hosts_sharing_their_sets_are_still_judged_one_by_one() -> None:
    # The worker's cache hands like hosts the very same inventory dict and
    # trait set; the search judges each shared object once, by identity,
    # but aggregates and usage (a dict of its own) still tell hosts apart.
    inventories = {"VCPU": inv(4)}
    traits = frozenset({"CUSTOM_FAST"})
    in_agg, elsewhere = frozenset({"agg"}), frozenset({"other"})
    hosts = forest_of([
        Provider(1, "uuid-1", None, 1, inventories, traits, in_agg),
        Provider(2, "uuid-2", None, 2, inventories, traits, elsewhere),
        Provider(3, "uuid-3", None, 3, {"VCPU": inv(4, used=4)}, traits, in_agg),
        Provider(4, "uuid-4", None, 4, inventories, frozenset(), in_agg),
        Provider(5, "uuid-5", None, 5, inventories, traits, in_agg),
    ])
    found = run(hosts, group(resources={"VCPU": 2}, required=["CUSTOM_FAST"],
                             member_of=["agg"]))
    assert found == [({1: {"VCPU": 2}}, ((1,),)), ({5: {"VCPU": 2}}, ((5,),))]
