"""The allocation candidates' JSON text against plain json.dumps.

Each answer below is rendered twice: by the text writer the service uses
(placement.rendering.allocation_candidates) and as a document of dicts and
lists dumped by json.dumps, at every microversion of the API.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from placement import microversion
from placement.kept import NOTHING, Kept
from placement.objects import candidates
from placement.objects.candidates import assemble, reuse, summary
from placement.objects.candidates.trees import Forest, Provider, TraitSet, Tree
from placement.query import CandidateQuery
from placement import rendering as placement_rendering
from placement.rendering import allocation_candidates as rendering
from tests.unit.candidate_trees import forest, forest_of, gpu_groups, group, inv, wide_hosts

VERSIONS = [v for v, _ in microversion.VERSIONS if v >= (1, 10)]


def answer(trees: Forest, query: CandidateQuery, *, nested: bool = True,
           limit: int | None = None) -> candidates.Candidates:
    """What the search would answer over these trees."""
    ordered = [trees.trees[root] for root in sorted(trees.trees)]
    chosen = assemble.choose(
        reuse.candidates(ordered, query, nested, NOTHING.candidates.of(None),
                         assemble.DEPTH_FIRST),
        limit=limit, randomize=False, max_candidates=-1)
    found = candidates._answer(chosen, query)
    if summary.cut_before_nested(found, limit, nested):
        found = dataclasses.replace(found, summarised=summary.summarised_before_nested(
            found, ordered, query, NOTHING.candidates.of(None)))
    return found


def document(found: candidates.Candidates, version: tuple[int, int]) -> dict[str, Any]:
    """The answer as plain data, shaped for ``version``."""
    providers = found.forest.providers
    requests = []
    for combination in found.combinations:
        merged: dict[str, dict[str, int]] = {}
        for choice in combination:
            for pid, name, amount in choice.allocations:
                resources = merged.setdefault(providers[pid].uuid, {})
                resources[name] = resources.get(name, 0) + amount
        request: dict[str, Any] = {"allocations": (
            {uuid: {"resources": resources} for uuid, resources in merged.items()}
            if version >= (1, 12) else
            [{"resource_provider": {"uuid": uuid}, "resources": resources}
             for uuid, resources in merged.items()])}
        if version >= (1, 34):
            request["mappings"] = {
                group.suffix: [providers[pid].uuid for pid in choice.providers]
                for group, choice in zip(found.query.groups, combination, strict=True)}
        requests.append(request)
    if version >= (1, 29):
        shown = [p for tree in summary.trees_shown(found) for p in tree.providers]
    else:
        shown = summary.providers_shown(found)
    requested = set(found.query.resource_class_names)
    summaries = {}
    for provider in shown:
        entry: dict[str, Any] = {"resources": {
            name: {"capacity": int((inventory.total - inventory.reserved)
                                   * inventory.allocation_ratio),
                   "used": inventory.used}
            for name, inventory in provider.inventories.items()
            if version >= (1, 27) or name in requested}}
        if version >= (1, 17):
            traits = provider.traits
            entry["traits"] = list(traits.listed if isinstance(traits, TraitSet)
                                   else sorted(traits))
        if version >= (1, 29):
            parent = provider.parent_id
            entry["parent_provider_uuid"] = (
                None if parent is None else providers[parent].uuid)
            entry["root_provider_uuid"] = providers[provider.root_id].uuid
        summaries[provider.uuid] = entry
    return {"allocation_requests": requests, "provider_summaries": summaries}


def written(found: candidates.Candidates, version: tuple[int, int]) -> bytes:
    return b"".join(rendering.body(found, version))


def query(*groups: Any, **fields: Any) -> CandidateQuery:
    return CandidateQuery(groups=tuple(groups), **fields)


def sharing_forest() -> Forest:
    """Two compute hosts and a disk pool sharing with the first one."""
    return forest(
        (1, None, {"VCPU": inv(8), "MEMORY_MB": inv(4096, used=1024)}, {"HW_CPU_X86_AVX"},
         {"agg-1"}),
        (2, None, {"VCPU": inv(4, reserved=1, ratio=2.0)}, {"HW_CPU_X86_SSE"}),
        (3, None, {"DISK_GB": inv(100, step=10)}, {"MISC_SHARES_VIA_AGGREGATE"},
         {"agg-1"}))


def traits_by_id_forest() -> Forest:
    """Providers whose traits are listed by trait id, not by name; one
    with a uuid that is not a plain uuid and classes whose names need
    escaping."""
    z_then_a = TraitSet.by_id([(2, "CUSTOM_A"), (1, "CUSTOM_Z")])
    providers = [
        Provider(1, "4f2c8d1e-0000-4000-8000-000000000001", None, 1,
                 {"VCPU": inv(4), "CUSTOM_\u00c9": inv(2, ratio=1.5)}, z_then_a),
        Provider(2, 'odd "uuid" \\ 2', None, 2, {"VCPU": inv(4)}, z_then_a),
        Provider(3, "4f2c8d1e-0000-4000-8000-000000000003", None, 3,
                 {"VCPU": inv(2, used=1)}, TraitSet.by_id([])),
    ]
    return forest_of(providers)


ANSWERS = {
    "flat": lambda: answer(sharing_forest(), query(group(resources={"VCPU": 1}))),
    "flat, limit": lambda: answer(
        sharing_forest(), query(group(resources={"VCPU": 1}), limit=1), limit=1),
    "sharing": lambda: answer(sharing_forest(), query(
        group(resources={"VCPU": 2, "DISK_GB": 20}))),
    "sharing before 1.29": lambda: answer(sharing_forest(), query(
        group(resources={"VCPU": 2, "DISK_GB": 20})), nested=False),
    "granular, sharing": lambda: answer(sharing_forest(), query(
        group(resources={"VCPU": 1}), group("1", resources={"DISK_GB": 10}),
        group("_MEM", resources={"MEMORY_MB": 512}))),
    "traits": lambda: answer(sharing_forest(), query(
        group(resources={"VCPU": 1}, required=["HW_CPU_X86_SSE"]))),
    "traits listed by id, escaped names": lambda: answer(
        traits_by_id_forest(), query(group(resources={"VCPU": 1}))),
    "nested, granular, isolated": lambda: answer(
        wide_hosts(2), query(*gpu_groups(), group_policy="isolate"), limit=5),
    "nested, same class in two groups": lambda: answer(wide_hosts(1), query(
        group(resources={"VCPU": 2}), group("1", resources={"VCPU": 3}),
        group("2", resources={"VGPU": 1}), group_policy="none")),
    "nested before 1.29, limit": lambda: answer(
        wide_hosts(3), query(group(resources={"VCPU": 1}), limit=2),
        nested=False, limit=2),
    "nested before 1.29": lambda: answer(
        wide_hosts(2), query(group(resources={"VCPU": 1, "VGPU": 1})), nested=False),
    "empty": lambda: answer(sharing_forest(), query(group(resources={"VCPU": 99}))),
}


@pytest.mark.parametrize("version", VERSIONS, ids="1.{0[1]}".format)
@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_same_bytes_as_json_dumps(name: str, version: tuple[int, int]) -> None:
    found = ANSWERS[name]()
    assert written(found, version) == json.dumps(document(found, version)).encode()


def test_the_answers_are_not_trivial() -> None:
    # The cases above do reach what they are named after.
    found = ANSWERS["granular, sharing"]()
    assert found.chosen and any(len(c) == 3 for c in found.combinations)
    assert any(len(listed.trees_used(index)) == 2                       # sharing
               for listed, index in found.chosen)
    nested = ANSWERS["nested, granular, isolated"]()
    assert len(nested.chosen) == 5 and all(
        listed.kept for listed, _index in nested.chosen)
    assert ANSWERS["nested before 1.29, limit"]().summarised
    assert ANSWERS["empty"]().chosen == ()


def test_kept_texts_are_what_the_next_answer_writes() -> None:
    found = ANSWERS["nested, granular, isolated"]()
    first = written(found, (1, 39))
    assert all(tree.summaries for tree in summary.trees_shown(found))
    assert all(listed.texts for listed, _ in found.chosen)
    # What is kept for an object is used as it is: plant a text for the
    # first tree and the first list.
    tree = summary.trees_shown(found)[0]
    listed, index = found.chosen[0]
    shape = listed.texts
    tree.summaries = b'"kept": {}'
    listed.texts = {key: tuple(b'{"kept": %d}' % i
                               for i in range(len(listed.combinations)))
                    for key in shape}
    again = written(found, (1, 39))
    assert b'"kept": {}' in again and b'{"kept": %d}' % index in again
    assert again != first
    # Requests of another shape are written on their own (summaries look
    # the same from 1.29 on).
    requests = written(found, (1, 33)).split(b'"provider_summaries"')[0]
    assert requests == written(found, (1, 33)).split(b'"provider_summaries"')[0]
    # The same tree content under another object is written afresh, not
    # taken for the kept one.
    copy = Tree(tree.providers)
    assert copy.summaries is None


def test_a_list_kept_for_queries_alike_is_written_with_each_query_s_suffixes() -> None:
    # Two queries differing only in a group's suffix give a host equal
    # lists, which the worker keeps once; the text kept for that list
    # under one query's suffixes must not answer the other.
    hosts = list(wide_hosts(1).trees.values())
    kept = Kept()
    bodies = []
    for suffix in ("1", "2"):
        numbered = query(group(resources={"VCPU": 1}),
                         group(suffix, resources={"VGPU": 1}))
        lists = kept.candidates.of(reuse.query_key(numbered, True))
        chosen = assemble.choose(
            reuse.candidates(hosts, numbered, True, lists, assemble.DEPTH_FIRST),
            limit=None, randomize=False, max_candidates=-1)
        found = candidates._answer(chosen, numbered)
        bodies.append((found, written(found, (1, 39))))
    (first, first_body), (second, second_body) = bodies
    assert second.chosen[0][0] is first.chosen[0][0]          # one list kept
    assert second_body == json.dumps(document(second, (1, 39))).encode()
    assert first_body != second_body


def test_candidates_of_a_list_out_of_order_are_written_in_answer_order() -> None:
    # Shuffled (randomize_allocation_candidates), a list's candidates come
    # in any order, consecutive or not: each gets its own text, not a
    # slice of the list's.
    hosts = wide_hosts(1)
    ordered = [hosts.trees[root] for root in sorted(hosts.trees)]
    numbered = query(*gpu_groups(), group_policy="isolate")
    chosen = assemble.choose(
        reuse.candidates(ordered, numbered, True, NOTHING.candidates.of(None),
                         assemble.DEPTH_FIRST),
        limit=None, randomize=True, max_candidates=-1,
        shuffle=lambda items: items.reverse())
    found = candidates._answer(chosen, numbered)
    kept = [index for listed, index in found.chosen if listed.kept]
    assert kept == list(reversed(range(reuse.KEPT_PER_TREE)))
    for version in ((1, 33), (1, 39)):
        assert written(found, version) == json.dumps(document(found, version)).encode()


def test_the_uuids_written_come_from_the_trees_written() -> None:
    # From 1.29 a response writes texts for a few trees at a time (those
    # changed since the last search): their own providers give the uuids,
    # and the providers of the answer's hundreds of trees are not indexed.
    found = ANSWERS["granular, sharing"]()
    written(found, (1, 39))
    assert "providers" not in vars(found.forest)


def test_a_large_answer_is_written_in_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    found = ANSWERS["nested, same class in two groups"]()
    whole = written(found, (1, 39))
    monkeypatch.setattr(placement_rendering, "PART_SIZE", 64)
    parts = rendering.body(found, (1, 39))
    assert len(parts) > 5
    assert b"".join(parts) == whole
