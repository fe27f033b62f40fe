"""Reusing the candidates of unchanged trees (no database)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from placement.objects.candidates import assemble, reuse, search
from placement.objects.candidates.trees import Forest, Tree
from placement.query import CandidateQuery
from tests.unit.candidate_trees import forest, gpu_groups, group, inv, wide_hosts

VCPU_QUERY = CandidateQuery(groups=(group(resources={"VCPU": 2}),))


def hosts(*free: int) -> list[Tree]:
    """Lone hosts 1, 2, ... with that much VCPU free of 4."""
    return list(forest(*[(i + 1, None, {"VCPU": inv(4, used=4 - f)})
                         for i, f in enumerate(free)]).trees.values())


def chosen(trees: list[Tree], kept: dict[int, Any],
           query: CandidateQuery = VCPU_QUERY, **options: Any) -> list[Any]:
    streams = reuse.tree_streams(trees, query, True, kept)
    return assemble.choose(
        assemble.merge(streams, options.pop("strategy", assemble.DEPTH_FIRST)),
        limit=options.pop("limit", None), randomize=False, max_candidates=-1)


def providers(items: list[Any]) -> list[int]:
    return [listed.combinations[index][0].providers[0] for listed, index in items]


def test_an_unchanged_tree_gives_the_very_lists_it_gave() -> None:
    trees = hosts(4, 1, 2)
    kept: dict[int, Any] = {}
    first = chosen(trees, kept)
    assert providers(first) == [1, 3]
    assert set(kept) == {1, 2, 3}           # a tree without candidates too
    again = chosen(trees, kept)
    assert [listed for listed, _index in again] == [listed for listed, _index in first]
    assert all(a is b for (a, _i), (b, _j) in zip(again, first, strict=True))


def test_a_changed_tree_is_judged_again_and_the_others_are_not() -> None:
    trees = hosts(4, 1, 2)
    kept: dict[int, Any] = {}
    first = chosen(trees, kept)
    # Host 2 freed, host 3 filled: new Tree objects for both.
    changed = [trees[0]] + hosts(4, 4, 0)[1:]
    again = chosen(changed, kept)
    assert providers(again) == [1, 2]
    assert again[0][0] is first[0][0]
    assert kept[3].combinations == ()


def test_lists_of_another_tree_object_are_not_reused() -> None:
    # Equal content, another object: the loader would not hand out two
    # objects for one state, so identity is what counts.
    trees = hosts(4)
    kept: dict[int, Any] = {}
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
    kept: dict[int, Any] = {}
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
    kept: dict[int, Any] = {}
    found = chosen(trees, kept, query, limit=3)
    assert len(found) == 3
    assert list(kept) == [trees[0].root_id]


def test_breadth_first_takes_one_of_each_tree_in_turn() -> None:
    trees = list(forest(*[(i, None, {"VCPU": inv(8)}) for i in (1, 2)]
                        + [(3, 1, {"VCPU": inv(8)})]).trees.values())
    kept: dict[int, Any] = {}
    found = chosen(trees, kept, strategy=assemble.BREADTH_FIRST)
    assert providers(found) == [1, 2, 3]


def test_lists_replaced_by_another_request_do_not_disturb_a_search() -> None:
    trees = hosts(4, 4)
    kept: dict[int, Any] = {}
    chosen(trees, kept)
    streams = reuse.tree_streams(trees, VCPU_QUERY, True, kept)
    # Another request, which read host 1 changed, keeps its own list.
    kept[1] = reuse.CandidateList(tuple(hosts(0)), ())
    found = list(itertools.chain.from_iterable(streams))
    assert providers(found) == [1, 2]


def test_the_key_leaves_out_the_limit_only() -> None:
    limited = CandidateQuery(groups=VCPU_QUERY.groups, limit=3)
    assert reuse.query_key(limited, True) == reuse.query_key(VCPU_QUERY, True)
    assert reuse.query_key(VCPU_QUERY, False) != reuse.query_key(VCPU_QUERY, True)
    isolated = CandidateQuery(groups=VCPU_QUERY.groups, group_policy="isolate")
    assert reuse.query_key(isolated, True) != reuse.query_key(VCPU_QUERY, True)


def test_a_state_reads_the_same_whatever_the_order_of_its_items() -> None:
    items = ["5 p 7 3 5 uuid-7", "5 a 7 12", "5 u 7 1 4", "5 p 5 2  uuid-5",
             "5 a 7 9", "5 u 7 2 256", "5 a 5 9", "9 p 9 0  uuid-9"]
    states = search.parse_states(len(items), ";".join(items))
    assert states == {
        5: ((5, 2, None, 5, "uuid-5", (9,), ()),
            (7, 3, 5, 5, "uuid-7", (9, 12), ((1, 4), (2, 256)))),
        9: ((9, 0, None, 9, "uuid-9", (), ()),),
    }
    assert search.parse_states(len(items), ";".join(reversed(items))) == states


@pytest.mark.parametrize("text, count", [
    ("5 p 5 2  uuid-5;5 a 5 9", 3),                # fewer items than counted
    ("5 p 5 2  uuid-5;5 a 5", 2),                 # an item cut short
])
def test_a_state_cut_short_is_refused(text: str, count: int) -> None:
    with pytest.raises(RuntimeError, match="cut short"):
        search.parse_states(count, text)
