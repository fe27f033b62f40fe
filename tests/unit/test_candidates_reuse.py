"""Reusing the candidates of unchanged trees (no database)."""

from __future__ import annotations

from typing import Any

import pytest

from placement.kept import QueryCandidates, QueryLists
from placement.objects.candidates import assemble, reuse, search
from placement.objects.candidates.trees import Forest, Tree
from placement.query import CandidateQuery
from tests.unit.candidate_trees import forest, gpu_groups, group, inv, wide_hosts

VCPU_QUERY = CandidateQuery(groups=(group(resources={"VCPU": 2}),))


def hosts(*free: int) -> list[Tree]:
    """Lone hosts 1, 2, ... with that much VCPU free of 4."""
    return list(forest(*[(i + 1, None, {"VCPU": inv(4, used=4 - f)})
                         for i, f in enumerate(free)]).trees.values())


def lists() -> QueryLists:
    """A worker's store of one query's lists."""
    return QueryCandidates().of("query")


def chosen(trees: list[Tree], kept: QueryLists,
           query: CandidateQuery = VCPU_QUERY, **options: Any) -> list[Any]:
    stream = reuse.candidates(trees, query, True, kept,
                              options.pop("strategy", assemble.DEPTH_FIRST))
    return assemble.choose(stream, limit=options.pop("limit", None), randomize=False,
                           max_candidates=-1)


def providers(items: list[Any]) -> list[int]:
    return [listed.combinations[index][0].providers[0] for listed, index in items]


def test_an_unchanged_tree_gives_the_very_lists_it_gave() -> None:
    trees = hosts(4, 1, 2)
    kept = lists()
    first = chosen(trees, kept)
    assert providers(first) == [1, 3]
    assert set(kept) == {1, 2, 3}           # a tree without candidates too
    again = chosen(trees, kept)
    assert [listed for listed, _index in again] == [listed for listed, _index in first]
    assert all(a is b for (a, _i), (b, _j) in zip(again, first, strict=True))


def test_a_changed_tree_is_judged_again_and_the_others_are_not() -> None:
    trees = hosts(4, 1, 2)
    kept = lists()
    first = chosen(trees, kept)
    # Host 2 freed, host 3 filled: new Tree objects for both.
    changed = [trees[0]] + hosts(4, 4, 0)[1:]
    again = chosen(changed, kept)
    assert providers(again) == [1, 2]
    assert again[0][0] is first[0][0]
    assert kept[3].combinations == ()


@pytest.mark.parametrize("free_before, free_after", [
    (4, 2),     # a claim on host 2 left room for the 2 VCPU asked
    (2, 4),     # a removal freed some
])
def test_a_tree_whose_usage_alone_changed_with_room_left_keeps_its_list(
        free_before: int, free_after: int) -> None:
    trees = hosts(4, free_before)
    store = QueryCandidates()
    kept = store.of("query")
    first = chosen(trees, kept)
    rebuilt = store._counts["rebuild", "candidate_list"]
    claimed = [trees[0], hosts(4, free_after)[1]]
    again = chosen(claimed, kept)
    assert store._counts["rebuild", "candidate_list"] == rebuilt
    assert kept[2].trees == (claimed[1],)
    assert kept[2].combinations is first[1][0].combinations
    # The summaries come from the new tree: its list names it.
    assert again[1][0].trees_used(again[1][1]) == (claimed[1],)


@pytest.mark.parametrize("free_after, changed", [
    (1, {}),                    # less room left than the 2 VCPU asked
    (4, {"reserved": 1}),       # the inventory changed, not only usage
    (4, {"traits": {"HW_CPU_X86_AVX2"}}),
])
def test_a_tree_changed_otherwise_is_judged_again(free_after: int,
                                                  changed: dict[str, Any]) -> None:
    trees = hosts(4, 4)
    store = QueryCandidates()
    kept = store.of("query")
    chosen(trees, kept)
    rebuilt = store._counts["rebuild", "candidate_list"]
    other = forest((1, None, {"VCPU": inv(4)}),
                   (2, None, {"VCPU": inv(4, used=4 - free_after,
                                          reserved=changed.get("reserved", 0))},
                    changed.get("traits", set()))).trees
    again = chosen([trees[0], other[2]], kept)
    assert store._counts["rebuild", "candidate_list"] == rebuilt + 1
    every = list(assemble.Assembler(Forest([trees[0], other[2]]), VCPU_QUERY)
                 .generate(assemble.DEPTH_FIRST))
    assert [listed.combinations[i] for listed, i in again] == every


def test_lists_of_another_tree_object_are_not_reused() -> None:
    # Equal content, another object: the loader would not hand out two
    # objects for one state, so identity is what counts.
    trees = hosts(4)
    kept = lists()
    first = chosen(trees, kept)
    again = chosen(hosts(4), kept)
    assert again[0][0] is not first[0][0]


def test_long_lists_keep_their_beginning_and_give_everything(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reuse, "KEPT_PER_TREE", 5)
    trees = list(wide_hosts(2).trees.values())
    query = CandidateQuery(groups=tuple(gpu_groups()), group_policy="isolate")
    every = [c for c in assemble.Assembler(Forest(trees), query).generate(
        assemble.DEPTH_FIRST)]
    kept = lists()
    for _search in range(2):
        found = chosen(trees, kept, query)
        assert [listed.combinations[i] for listed, i in found] == every
        assert [len(kept[t.root_id].combinations) for t in trees] == [5, 5]
        assert not any(kept[t.root_id].complete for t in trees)


def test_a_limit_reads_no_more_of_a_long_tree_than_it_keeps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reuse, "KEPT_PER_TREE", 5)
    trees = list(wide_hosts(200).trees.values())
    query = CandidateQuery(groups=tuple(gpu_groups()), group_policy="isolate")
    kept = lists()
    found = chosen(trees, kept, query, limit=3)
    assert len(found) == 3
    assert list(kept) == [trees[0].root_id]


def test_breadth_first_takes_one_of_each_tree_in_turn() -> None:
    trees = list(forest(*[(i, None, {"VCPU": inv(8)}) for i in (1, 2)]
                        + [(3, 1, {"VCPU": inv(8)})]).trees.values())
    kept = lists()
    found = chosen(trees, kept, strategy=assemble.BREADTH_FIRST)
    assert providers(found) == [1, 2, 3]


def test_lists_replaced_by_another_request_do_not_disturb_a_search() -> None:
    trees = hosts(4, 4)
    kept = lists()
    chosen(trees, kept)
    stream = reuse.candidates(trees, VCPU_QUERY, True, kept, assemble.DEPTH_FIRST)
    # Another request, which read host 1 changed, keeps its own list.
    kept[1] = reuse.CandidateList(tuple(hosts(0)), ())
    found = list(stream)
    assert providers(found) == [1, 2]


def test_the_key_leaves_out_the_limit_only() -> None:
    limited = CandidateQuery(groups=VCPU_QUERY.groups, limit=3)
    assert reuse.query_key(limited, True) == reuse.query_key(VCPU_QUERY, True)
    assert reuse.query_key(VCPU_QUERY, False) != reuse.query_key(VCPU_QUERY, True)
    isolated = CandidateQuery(groups=VCPU_QUERY.groups, group_policy="isolate")
    assert reuse.query_key(isolated, True) != reuse.query_key(VCPU_QUERY, True)


def test_a_state_reads_the_same_whatever_the_order_of_its_items() -> None:
    items = ["5 p 7 3 5 uuid-7 2", "5 a 7 12", "5 p 5 2  uuid-5 0",
             "5 a 7 9", "5 a 5 9", "9 p 9 0  uuid-9 41"]
    states = search.parse_states(len(items), ";".join(items))
    assert states == {
        5: ((5, 2, None, 5, "uuid-5", (9,), 0),
            (7, 3, 5, 5, "uuid-7", (9, 12), 2)),
        9: ((9, 0, None, 9, "uuid-9", (), 41),),
    }
    assert search.parse_states(len(items), ";".join(reversed(items))) == states


@pytest.mark.parametrize("text, count", [
    ("5 p 5 2  uuid-5 0;5 a 5 9", 3),              # fewer items than counted
    ("5 p 5 2  uuid-5 0;5 a 5", 2),               # an item cut short
    ("5 p 5 2  uuid-5", 1),                       # a provider cut short
])
def test_a_state_cut_short_is_refused(text: str, count: int) -> None:
    with pytest.raises(RuntimeError, match="cut short"):
        search.parse_states(count, text)


SHARES = "MISC_SHARES_VIA_AGGREGATE"

SHARING_QUERIES = [
    CandidateQuery(groups=(group(resources={"VCPU": 1, "DISK_GB": 10}),)),
    CandidateQuery(groups=(group(resources={"DISK_GB": 10}),)),
    CandidateQuery(groups=(group(resources={"VCPU": 1, "DISK_GB": 10},
                                 member_of=["zone-1"]),)),
    CandidateQuery(groups=(group(resources={"VCPU": 1}),
                           group("1", resources={"DISK_GB": 10}),
                           group("2", resources={"IPV4_ADDRESS": 1})),
                   group_policy="isolate"),
    CandidateQuery(groups=(group(resources={"VCPU": 1, "DISK_GB": 10},
                                 required=["CUSTOM_FAST"]),)),
]


def sharing_cloud(rng: Any) -> dict[int, list[tuple[Any, ...]]]:
    """Specs (see candidate_trees.forest) by root: hosts, some with NUMA
    children, in zones and storage aggregates, and sharing pools of disk
    and addresses in some of those aggregates."""
    specs: dict[int, list[tuple[Any, ...]]] = {}
    for host in range(12):
        root = 100 * (host + 1)
        aggregates = {"zone-%d" % rng.randrange(2)} | (
            {"disk-%d" % rng.randrange(2)} if rng.random() < 0.5 else set())
        traits = {"CUSTOM_FAST"} if rng.random() < 0.5 else set()
        disk = {"DISK_GB": inv(100, used=rng.choice([0, 95]))} if rng.random() < 0.5 else {}
        if rng.random() < 0.3:
            specs[root] = [(root, None, disk, traits, aggregates)] + [
                (root + n, root, {"VCPU": inv(4, used=rng.randrange(5))})
                for n in (1, 2)]
        else:
            specs[root] = [(root, None, {"VCPU": inv(4, used=rng.randrange(5)), **disk},
                            traits, aggregates)]
    for pool in range(3):
        root = 10_000 + pool
        specs[root] = [(root, None, rng.choice([
            {"DISK_GB": inv(1000, used=rng.choice([0, 995]))},
            {"IPV4_ADDRESS": inv(8)},
            {"DISK_GB": inv(50), "IPV4_ADDRESS": inv(2)}]), {SHARES},
            {rng.choice(["disk-0", "disk-1", "zone-0"])})]
    return specs


def trees_of(specs: dict[int, list[tuple[Any, ...]]]) -> dict[int, Tree]:
    return {root: forest(*tree_specs).trees[root] for root, tree_specs in specs.items()}


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("strategy", [assemble.DEPTH_FIRST, assemble.BREADTH_FIRST])
def test_with_sharing_providers_the_kept_lists_give_what_one_forest_gives(
        seed: int, strategy: str) -> None:
    # Searches over a cloud whose trees (hosts and sharing pools) change a
    # few at a time: reusing each tree's list while it and the pools
    # serving it are unchanged gives exactly the candidates, in the order,
    # of one assembler over every tree.
    import random
    rng = random.Random(seed)
    specs = sharing_cloud(rng)
    trees = trees_of(specs)
    # One store for every query, as a worker keeps them: queries alike
    # share lists.
    kept = QueryCandidates()
    reused = 0
    for _search in range(6):
        ordered = [trees[root] for root in sorted(trees)]
        for number, query in enumerate(SHARING_QUERIES):
            for nested in (True, False):
                lists = kept.of((number, nested))
                before = dict(lists)
                found = list(reuse.candidates(ordered, query, nested, lists, strategy))
                reused += sum(1 for root, listed in lists.items()
                              if before.get(root) is listed)
                every = list(assemble.Assembler(Forest(ordered), query, nested)
                             .generate(strategy))
                assert [listed.combinations[i] for listed, i in found] == every
                used = Forest(ordered).providers
                for listed, i in found:
                    assert sorted(t.root_id for t in listed.trees_used(i)) == sorted(
                        {used[pid].root_id for choice in listed.combinations[i]
                         for pid, _n, _a in choice.allocations})
        # Change a host and, one time in two, a pool (new Tree objects).
        changed = [rng.choice([r for r in specs if r < 10_000])]
        if rng.random() < 0.5:
            changed.append(rng.choice([r for r in specs if r >= 10_000]))
        for root in changed:
            specs[root] = [(id_, parent, {name: i._replace(used=rng.randrange(i.total + 1))
                                          for name, i in invs.items()}, *rest)
                           for id_, parent, invs, *rest in specs[root]]
        trees.update(trees_of({root: specs[root] for root in changed}))
    assert reused   # the lists kept were used


def test_only_candidates_of_sharing_providers_alone_are_looked_up_for_repeats() -> None:
    # Two hosts with VCPU in the pool's aggregate, and a pool sharing
    # DISK_GB and IPV4_ADDRESS: a request for addresses alone is met by
    # the pool alone, around every tree it serves, and comes once; VCPU
    # with disk takes a host's own VCPU, so it comes around its host only.
    cloud = forest((1, None, {"VCPU": inv(4)}, set(), {"agg"}),
                   (2, None, {"VCPU": inv(4)}, set(), {"agg"}),
                   (9, None, {"DISK_GB": inv(100), "IPV4_ADDRESS": inv(8)}, {SHARES},
                    {"agg"}))
    ordered = [cloud.trees[root] for root in sorted(cloud.trees)]
    addresses = CandidateQuery(groups=(group(resources={"IPV4_ADDRESS": 1}),))
    found = list(reuse.candidates(ordered, addresses, True, lists(), assemble.DEPTH_FIRST))
    assert [listed.combinations[i][0].providers for listed, i in found] == [(9,)]
    assert all(i in listed.sharing_alone for listed, i in found)
    with_disk = CandidateQuery(groups=(group(resources={"VCPU": 1, "DISK_GB": 1}),))
    found = list(reuse.candidates(ordered, with_disk, True, lists(), assemble.DEPTH_FIRST))
    assert [listed.combinations[i][0].providers for listed, i in found] == [(1, 9), (2, 9)]
    assert not any(listed.sharing_alone for listed, _i in found)


def _host_and_pool(pool_used: int, pool_total: int = 100) -> list[Tree]:
    """Host 1 (VCPU, no disk) in the aggregate of pool 9, which shares
    DISK_GB with it."""
    cloud = forest((1, None, {"VCPU": inv(4)}, set(), {"agg"}),
                   (9, None, {"DISK_GB": inv(pool_total, used=pool_used)}, {SHARES},
                    {"agg"}))
    return [cloud.trees[1], cloud.trees[9]]


DISK_QUERY = CandidateQuery(groups=(group(resources={"VCPU": 1, "DISK_GB": 10}),
                                    group("_B", resources={"DISK_GB": 20})),
                            group_policy="none")


def test_a_list_is_moved_to_a_pool_whose_usage_alone_changed_if_room_is_left() -> None:
    # A claim on the pool gives it a new tree; while it can still give all
    # the query asks (30 GB over both groups) the host's candidates are the
    # same: its list is kept, naming the new pool tree, not built again.
    host, pool = _host_and_pool(pool_used=10)
    store = QueryCandidates()
    kept = store.of("query")
    first = chosen([host, pool], kept, DISK_QUERY)
    listed = kept[1]
    assert listed.trees == (host, pool) and first
    rebuilt = store._counts["rebuild", "candidate_list"]

    claimed = _host_and_pool(pool_used=70)[1]
    again = chosen([host, claimed], kept, DISK_QUERY)
    assert kept[1] is not listed and kept[1].trees == (host, claimed)
    assert kept[1].combinations is listed.combinations
    assert [item[0].combinations[item[1]] for item in again] == [
        item[0].combinations[item[1]] for item in first]
    # The summaries of an answer come from the trees its lists name.
    assert {t.root_id: t for i in again for t in i[0].trees_used(i[1])}[9] is claimed
    # Nothing was built again: the pool's own list (no candidates: it has
    # no VCPU) moved to its new tree too.
    assert store._counts["rebuild", "candidate_list"] == rebuilt
    assert kept[9].trees == (claimed,)


def test_queries_sharing_a_list_move_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two queries (a flavor pinned to the host's zone and not, say) keep
    # the host's list as one object; after the pool's usage moved, the
    # first to ask compares the trees and moves the list, the second takes
    # that very moved list without comparing anything.
    host, pool = _host_and_pool(pool_used=10)
    store = QueryCandidates()
    first, second = store.of("first"), store.of("second")
    chosen([host, pool], first, DISK_QUERY)
    chosen([host, pool], second, DISK_QUERY)
    assert first[1] is second[1]
    compared: list[tuple[Tree, Tree]] = []
    real = reuse._only_usage_moved

    def counting(before: Tree, now: Tree, asked: dict[str, int]) -> bool:
        compared.append((before, now))
        return real(before, now, asked)

    monkeypatch.setattr(reuse, "_only_usage_moved", counting)
    claimed = _host_and_pool(pool_used=70)[1]
    rebuilt = store._counts["rebuild", "candidate_list"]
    answer = chosen([host, claimed], first, DISK_QUERY)
    assert compared and first[1].trees == (host, claimed)
    compared.clear()
    assert chosen([host, claimed], second, DISK_QUERY) == answer
    assert compared == [] and second[1] is first[1] and second[9] is first[9]
    assert store._counts["rebuild", "candidate_list"] == rebuilt


def test_a_move_that_failed_is_not_tried_again_by_a_sharing_query(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The pool left too full for what is asked: the first query compares
    # and builds the host's list again; the second, which shared the old
    # list, builds too without comparing again, and both get the same
    # candidates as a search keeping nothing.
    host, pool = _host_and_pool(pool_used=10)
    store = QueryCandidates()
    first, second = store.of("first"), store.of("second")
    chosen([host, pool], first, DISK_QUERY)
    chosen([host, pool], second, DISK_QUERY)
    full = _host_and_pool(pool_used=75)[1]
    every = list(assemble.Assembler(Forest([host, full]), DISK_QUERY)
                 .generate(assemble.DEPTH_FIRST))
    compared: list[int] = []
    real = reuse._only_usage_moved

    def counting(before: Tree, now: Tree, asked: dict[str, int]) -> bool:
        compared.append(now.root_id)
        return real(before, now, asked)

    monkeypatch.setattr(reuse, "_only_usage_moved", counting)
    counts = []
    for kept in (first, second):
        again = chosen([host, full], kept, DISK_QUERY)
        assert [listed.combinations[i] for listed, i in again] == every
        counts.append(len(compared))
    assert counts[0] > 0 and counts[1] == counts[0]
    assert second[1].trees == (host, full)


@pytest.mark.parametrize("pool_used, pool_total", [
    (71, 100),    # 29 GB left: less than the 30 asked, the checks may differ
    (10, 120),    # inventory changed, not only usage
])
def test_a_list_is_built_again_when_the_pool_changed_otherwise(
        pool_used: int, pool_total: int) -> None:
    host, pool = _host_and_pool(pool_used=10)
    store = QueryCandidates()
    kept = store.of("query")
    chosen([host, pool], kept, DISK_QUERY)
    rebuilt = store._counts["rebuild", "candidate_list"]
    changed = _host_and_pool(pool_used, pool_total)[1]
    again = chosen([host, changed], kept, DISK_QUERY)
    every = list(assemble.Assembler(Forest([host, changed]), DISK_QUERY)
                 .generate(assemble.DEPTH_FIRST))
    assert [listed.combinations[i] for listed, i in again] == every
    assert store._counts["rebuild", "candidate_list"] > rebuilt
