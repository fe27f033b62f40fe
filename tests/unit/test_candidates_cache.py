"""The worker's cache of provider contents, on its own (no database)."""

from __future__ import annotations

import pytest

from placement.objects.candidates import cache as provider_cache
from placement.objects.candidates.trees import Inventory

VCPU = {"VCPU": Inventory(8, 0, 1, 8, 1, 1.0, 0)}


def test_an_entry_holds_only_for_its_generation_and_uuid() -> None:
    cache = provider_cache.ProviderCache()
    cache.put(7, cache.entry(3, "uuid-a", dict(VCPU), frozenset()))
    assert cache.get(7, 3, "uuid-a") is not None
    assert cache.get(7, 4, "uuid-a") is None      # written since
    assert cache.get(7, 3, "uuid-b") is None      # another provider, same id


def test_like_entries_share_their_objects() -> None:
    cache = provider_cache.ProviderCache()
    one = cache.entry(0, "uuid-1", dict(VCPU), frozenset({"CUSTOM_X"}))
    two = cache.entry(5, "uuid-2", dict(VCPU), frozenset({"CUSTOM_X"}))
    other = cache.entry(0, "uuid-3", {"VCPU": VCPU["VCPU"]._replace(total=4)},
                        frozenset())
    assert one.inventories is two.inventories and one.traits is two.traits
    assert other.inventories is not one.inventories


def test_a_renamed_class_drops_every_entry() -> None:
    cache = provider_cache.ProviderCache()
    cache.check_class_names({1: "VCPU", 9: "CUSTOM_OLD"})
    cache.put(7, cache.entry(0, "uuid-a", dict(VCPU), frozenset()))
    cache.check_class_names({1: "VCPU", 9: "CUSTOM_OLD", 10: "CUSTOM_NEW_CLASS"})
    assert cache.get(7, 0, "uuid-a") is not None  # a new class changes nothing
    cache.check_class_names({1: "VCPU", 9: "CUSTOM_RENAMED"})
    assert cache.get(7, 0, "uuid-a") is None


def test_a_search_that_read_names_before_a_rename_stores_nothing() -> None:
    cache = provider_cache.ProviderCache()
    before, after = {9: "CUSTOM_OLD"}, {9: "CUSTOM_RENAMED"}
    cache.check_class_names(before)   # a search starts
    cache.check_class_names(after)    # another starts after a rename
    assert not cache.names_classes_as(before)
    assert cache.names_classes_as(after)


def test_a_full_cache_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_cache, "MAX_ENTRIES", 2)
    cache = provider_cache.ProviderCache()
    for provider_id in (1, 2, 3):
        cache.put(provider_id, cache.entry(0, "uuid-%d" % provider_id,
                                           dict(VCPU), frozenset()))
    assert [cache.get(p, 0, "uuid-%d" % p) is not None for p in (1, 2, 3)] == [
        False, False, True]
