"""The worker's cache of provider contents, on its own (no database)."""

from __future__ import annotations

import pytest

from placement.kept import store as provider_cache
from placement.objects.candidates.trees import Inventory, Provider, TraitSet, Tree

VCPU = {"VCPU": Inventory(8, 0, 1, 8, 1, 1.0, 0)}


def test_an_entry_holds_only_for_its_generation_and_uuid() -> None:
    cache = provider_cache.Kept()
    cache.put_entries({7: cache.entry(3, "uuid-a", dict(VCPU), TraitSet.by_id(()))})
    assert cache.get(7, 3, "uuid-a") is not None
    assert cache.get(7, 4, "uuid-a") is None      # written since
    assert cache.get(7, 3, "uuid-b") is None      # another provider, same id


def test_like_entries_share_their_objects() -> None:
    cache = provider_cache.Kept()
    one = cache.entry(0, "uuid-1", dict(VCPU), TraitSet.by_id([(1, "CUSTOM_X")]))
    two = cache.entry(5, "uuid-2", dict(VCPU), TraitSet.by_id([(1, "CUSTOM_X")]))
    other = cache.entry(0, "uuid-3", {"VCPU": VCPU["VCPU"]._replace(total=4)},
                        TraitSet.by_id(()))
    assert one.inventories is two.inventories and one.traits is two.traits
    assert other.inventories is not one.inventories


def test_a_renamed_class_drops_every_entry() -> None:
    cache = provider_cache.Kept()
    cache.check_class_names({1: "VCPU", 9: "CUSTOM_OLD"})
    cache.put_entries({7: cache.entry(0, "uuid-a", dict(VCPU), TraitSet.by_id(()))})
    cache.check_class_names({1: "VCPU", 9: "CUSTOM_OLD", 10: "CUSTOM_NEW_CLASS"})
    assert cache.get(7, 0, "uuid-a") is not None  # a new class changes nothing
    cache.check_class_names({1: "VCPU", 9: "CUSTOM_RENAMED"})
    assert cache.get(7, 0, "uuid-a") is None


def test_a_search_that_read_names_before_a_rename_stores_nothing() -> None:
    cache = provider_cache.Kept()
    before, after = {9: "CUSTOM_OLD"}, {9: "CUSTOM_RENAMED"}
    cache.check_class_names(before)   # a search starts
    cache.check_class_names(after)    # another starts after a rename
    assert not cache.names_classes_as(before)
    assert cache.names_classes_as(after)


def test_a_full_cache_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_cache, "MAX_ENTRIES", 2)
    cache = provider_cache.Kept()
    for provider_id in (1, 2, 3):
        cache.put_entries({provider_id: cache.entry(0, "uuid-%d" % provider_id,
                                                    dict(VCPU), TraitSet.by_id(()))})
    assert [cache.get(p, 0, "uuid-%d" % p) is not None for p in (1, 2, 3)] == [
        False, False, True]



def test_more_entries_at_once_than_may_be_kept_keep_no_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_cache, "MAX_ENTRIES", 2)
    cache = provider_cache.Kept()
    cache.put_entries({p: cache.entry(0, "uuid-%d" % p, dict(VCPU), TraitSet.by_id(()))
                       for p in (1, 2, 3)})
    assert len(cache.entries) == 2

def tree(root: int, *children: int) -> Tree:
    return Tree([Provider(root, "uuid-%d" % root, None, root)] + [
        Provider(c, "uuid-%d" % c, root, root) for c in children])


def test_too_many_providers_in_trees_start_the_trees_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_cache, "MAX_ENTRIES", 5)
    cache = provider_cache.Kept()
    cache.candidates.of("query")[1] = "a list"
    cache.put_tree(tree(1, 2, 3))
    cache.put_tree(tree(1, 2, 3))                # replaces: still 3 providers
    cache.put_tree(tree(4, 5))
    cache.put_bucket(0, "text", (cache.trees[1], cache.trees[4]))
    assert set(cache.trees) == {1, 4}
    cache.put_tree(tree(6))
    # Trees, buckets and the candidates made from them go together.
    assert set(cache.trees) == {6}
    assert cache.bucket_trees(0, "text") is None
    assert cache.candidates.of("query") == {}


def test_a_bucket_keeps_a_few_texts() -> None:
    cache = provider_cache.Kept()
    one, two = tree(1), tree(2)
    cache.put_bucket(0, "everyone", (one, two))
    cache.put_bucket(0, "narrowed", (two,))
    assert cache.bucket_trees(0, "everyone") == (one, two)
    assert cache.bucket_trees(0, "narrowed") == (two,)
    assert cache.bucket_trees(64, "everyone") is None
    for n in range(provider_cache.TEXTS_PER_BUCKET):
        cache.put_bucket(0, "text %d" % n, ())
    assert cache.bucket_trees(0, "everyone") is None


def test_a_renamed_class_drops_trees_and_candidates() -> None:
    cache = provider_cache.Kept()
    cache.check_class_names({9: "CUSTOM_OLD"})
    cache.put_tree(tree(1))
    cache.put_bucket(0, "text", (cache.trees[1],))
    cache.candidates.of("query")[1] = "a list"
    cache.check_class_names({9: "CUSTOM_OLD", 10: "CUSTOM_NEW_CLASS"})
    assert set(cache.trees) == {1}
    cache.check_class_names({9: "CUSTOM_RENAMED"})
    assert cache.trees == {}
    assert cache.bucket_trees(0, "text") is None
    assert cache.candidates.of("query") == {}


def test_the_queries_asked_least_recently_are_forgotten(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_cache, "MAX_LIST_REFERENCES", 4)
    monkeypatch.setattr(provider_cache, "MAX_QUERIES", 3)
    kept = provider_cache.QueryCandidates()
    kept.of("a").update({1: "x", 2: "x"})
    kept.of("b").update({1: "x"})
    kept.of("a")                                    # asked again: newest
    kept.of("c").update({1: "x", 2: "x"})
    # Five lists: b, the least recently asked, goes.
    assert kept.of("a") == {1: "x", 2: "x"}
    assert kept.of("b") == {}
    kept.of("d")
    kept.of("e")                                    # a fifth query
    assert len(kept._by_query) == 3
    # The query asked keeps its lists even over the bound (one per tree:
    # a cloud of more trees than the bound still reuses them); the others
    # go.
    kept.of("e").update({n: "x" for n in range(5)})
    assert kept.of("e") == {n: "x" for n in range(5)}
    assert list(kept._by_query) == ["e"]


def test_the_bounds_grow_with_the_trees_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # A bigger cloud has more trees per query: fixed bounds would make the
    # queries forget each other's lists before they are asked again.
    monkeypatch.setattr(provider_cache, "MAX_LIST_REFERENCES", 4)
    monkeypatch.setattr(provider_cache, "REFERENCES_PER_TREE", 2)
    trees = [2]
    kept = provider_cache.QueryCandidates(trees_kept=lambda: trees[0])
    kept.of("a").update({1: "x", 2: "x"})
    kept.of("b").update({1: "x", 2: "x"})
    kept.of("c").update({1: "x"})
    kept.of("d")
    # Two trees: 4 references at most, five kept: a goes.
    assert list(kept._by_query) == ["b", "c", "d"]
    trees[0] = 3
    kept.of("d").update({1: "x", 2: "x"})
    kept.of("e")
    # Three trees: 6 references fit the five kept, none goes.
    assert list(kept._by_query) == ["b", "c", "d", "e"]


def test_the_store_bounds_its_lists_by_its_own_trees() -> None:
    cache = provider_cache.Kept()
    assert cache.candidates._trees_kept() == 0
    cache.trees[7] = object()  # type: ignore[assignment]
    assert cache.candidates._trees_kept() == 1


class _List:
    """A candidate list as the store sees it: its content and nothing else."""

    def __init__(self, content: str) -> None:
        self._content = content

    def content(self) -> str:
        return self._content


def test_equal_lists_of_several_queries_are_kept_once_and_counted_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_cache, "MAX_CANDIDATE_LISTS", 3)
    kept = provider_cache.QueryCandidates()
    kept.of("zone 1").keep(1, _List("host 1"))
    assert kept.of("zone 2").keep(1, _List("host 1")) is kept.of("zone 1")[1]
    kept.of("zone 2").keep(2, _List("host 2"))
    kept.of("zone 3").keep(1, _List("host 1"))
    kept.of("zone 3").keep(2, _List("host 2"))
    kept.of("zone 3")
    assert kept.lists == 2                          # five references, two lists
    assert [len(kept.of(q)) for q in ("zone 1", "zone 2", "zone 3")] == [1, 2, 2]
    # Four distinct lists: the queries least recently asked go until
    # lists go with them (forgetting zone 1, then zone 2, frees none).
    kept.of("other").keep(3, _List("host 3"))
    kept.of("other").keep(4, _List("host 4"))
    kept.of("other")
    assert list(kept._by_query) == ["other"]
    assert kept.lists == 2


def test_trait_sets_are_shared_only_in_the_same_order() -> None:
    # Equal names listed in another order (ids of a trait re-created) must
    # not share the earlier set: summaries list a set's own order.
    cache = provider_cache.Kept()
    one = cache.entry(0, "uuid-1", dict(VCPU), TraitSet.by_id([(1, "A"), (2, "B")]))
    two = cache.entry(0, "uuid-2", dict(VCPU), TraitSet.by_id([(3, "A"), (2, "B")]))
    assert one.traits == two.traits and one.traits is not two.traits
    assert (one.traits.listed, two.traits.listed) == (("A", "B"), ("B", "A"))


def test_trait_sets_list_by_trait_id() -> None:
    traits = TraitSet.by_id([(9, "CUSTOM_ALPHA"), (2, "HW_CPU_X86_SSE"), (5, "CUSTOM_ZED")])
    assert traits.listed == ("HW_CPU_X86_SSE", "CUSTOM_ZED", "CUSTOM_ALPHA")
    assert traits == {"CUSTOM_ALPHA", "CUSTOM_ZED", "HW_CPU_X86_SSE"}


def test_like_entries_share_an_inventory_key() -> None:
    cache = provider_cache.Kept()
    one = cache.entry(0, "uuid-1", dict(VCPU), TraitSet.by_id(()))
    two = cache.entry(1, "uuid-2", dict(VCPU), TraitSet.by_id(()))
    other = cache.entry(0, "uuid-3", {"VCPU": VCPU["VCPU"]._replace(total=4)},
                        TraitSet.by_id(()))
    assert one.inventory_key == two.inventory_key != other.inventory_key
    # Keeping nothing shares nothing, keys included.
    first, second = (provider_cache.NOTHING.entry(0, "uuid-1", dict(VCPU),
                                                  TraitSet.by_id(()))
                     for _ in range(2))
    assert first.inventory_key != second.inventory_key


def test_texts_of_many_providers_no_longer_kept_start_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_cache, "SPARE_TEXTS", 3)
    cache = provider_cache.Kept()
    for key in range(1, 4):     # texts of three providers gone since
        cache.texts.put(key, "shape", b"gone")
    assert cache.texts.get(1, "shape") == b"gone"      # 3 <= 3 + 2 * 0
    cache.texts.put(4, "shape", b"gone")
    assert cache.texts.get(1, "shape") is None         # 4 > 3 + 2 * 0


def test_texts_keep_each_shape_of_an_object() -> None:
    texts = provider_cache.Texts()
    texts.put(1, (1, 12), b"a")
    texts.put(1, (1, 34), b"b")
    assert (texts.get(1, (1, 12)), texts.get(1, (1, 34)), texts.get(1, (1, 0))) == (
        b"a", b"b", None)
    texts.forget(1)
    assert texts.get(1, (1, 12)) is None


def test_whether_sharing_providers_took_part_is_kept_per_set_of_classes() -> None:
    cache = provider_cache.Kept()
    disk, vcpu = frozenset({"VCPU", "DISK_GB"}), frozenset({"VCPU"})
    assert not cache.shares(disk)
    cache.reached(disk, 10, sharing=True)
    cache.reached(vcpu, 10, sharing=False)
    assert cache.shares(disk) and not cache.shares(vcpu)
    cache.reached(disk, 10, sharing=False)      # the pool is gone
    assert not cache.shares(disk)
    provider_cache.NOTHING.reached(disk, 10, sharing=True)
    assert not provider_cache.NOTHING.shares(disk)


def test_pages_pay_while_the_bound_is_small_next_to_the_reach() -> None:
    cache = provider_cache.Kept()
    vcpu = frozenset({"VCPU"})
    # Nothing known of the classes' reach: pages, as a first search does.
    assert cache.pages_pay(vcpu, 1000)
    cache.reached(vcpu, 1000)
    assert cache.pages_pay(vcpu, 125)       # 8 x 125 = 1,000
    assert not cache.pages_pay(vcpu, 126)
    assert not cache.pages_pay(vcpu, 1000)
    assert provider_cache.NOTHING.pages_pay(vcpu, 1000)
