"""How many more fit, and the capacity gauges' text, from hand-built figures."""

from __future__ import annotations

import math
import random

import pytest
from prometheus_client.parser import text_string_to_metric_families

from placement.metrics import capacity
from placement.metrics import figures, kept_figures
from placement.metrics.figures import Figures
from placement.objects.capacity import ClassTotals, InventoryUse
from placement.query import RequestGroup


def _inventory(pid: int, rc: str, total: int, used: int = 0, *, root: int | None = None,
               reserved: int = 0, ratio: float = 1.0, min_unit: int = 1,
               max_unit: int | None = None, step: int = 1,
               name: str | None = None) -> InventoryUse:
    root = pid if root is None else root
    return InventoryUse(pid, name or "p%d" % pid, "uuid-%d" % pid, root,
                        "p%d" % root, None if root == pid else root, rc, total,
                        reserved, ratio, min_unit, total if max_unit is None else max_unit,
                        step, used)


@pytest.mark.parametrize("inventory, amount, expected", [
    (_inventory(1, "VCPU", 8), 2, 4),
    (_inventory(1, "VCPU", 8, used=3), 2, 2),
    (_inventory(1, "VCPU", 8, ratio=1.5), 2, 6),
    (_inventory(1, "VCPU", 8, reserved=8), 1, 0),
    (_inventory(1, "VCPU", 8, used=9), 1, 0),  # over capacity already
    (_inventory(1, "DISK_GB", 100, step=10), 5, 0),
    (_inventory(1, "DISK_GB", 100, step=10), 20, 5),
    (_inventory(1, "DISK_GB", 100, min_unit=10), 5, 0),
    (_inventory(1, "DISK_GB", 100, max_unit=20), 30, 0),
    # MySQL's single-precision ratio: 10 * 0.9 may fall short of 9.
    (_inventory(1, "VCPU", 10, ratio=0.8999999761581421), 1, 8),
])
def test_times(inventory: InventoryUse, amount: int, expected: int) -> None:
    assert figures.times(inventory, amount) == expected


def _figures(inventories: list[InventoryUse], memberships: dict[int, frozenset[str]],
             traits: dict[int, frozenset[str]]) -> Figures:
    return Figures.of(inventories, (), {}, memberships, traits,
                      len({i.provider_id for i in inventories}))


# Host 1: VCPU 8, MEMORY_MB 4096, in aggregate A.  Host 2: VCPU and memory
# on two children (ids 3, 4; root 2 holds DISK_GB and the trait).
CLOUD = _figures(
    [_inventory(1, "VCPU", 8), _inventory(1, "MEMORY_MB", 4096),
     _inventory(2, "DISK_GB", 100),
     _inventory(3, "VCPU", 4, root=2), _inventory(3, "MEMORY_MB", 2048, root=2),
     _inventory(4, "VCPU", 4, root=2), _inventory(4, "MEMORY_MB", 2048, root=2)],
    {1: frozenset({"A"})},
    {2: frozenset({"HW_CPU_X86_AVX2"}), 3: frozenset({"CUSTOM_NUMA"})})


@pytest.mark.parametrize("group, total, hosts, aggregates", [
    (RequestGroup("", (("VCPU", 2), ("MEMORY_MB", 1024))), 8, {1: 4, 2: 4},
     {"A": 4}),
    # Host 2's classes come from two children: 2 + 2.
    (RequestGroup("", (("VCPU", 4), ("MEMORY_MB", 2048))), 4, {1: 2, 2: 2},
     {"A": 2}),
    (RequestGroup("", (("VCPU", 1), ("DISK_GB", 10))), 8, {2: 8}, {}),
    (RequestGroup("", (("VCPU", 1),), member_of=(frozenset({"A"}),)), 8, {1: 8},
     {"A": 8}),
    (RequestGroup("", (("VCPU", 1),), not_member_of=frozenset({"A"})), 8, {2: 8},
     {}),
    # The trait is on a provider taking part (3), or on none (root 2 has no
    # VCPU): judged on the providers able to take something.
    (RequestGroup("", (("VCPU", 1),), required=(frozenset({"CUSTOM_NUMA"}),)), 8,
     {2: 8}, {}),
    (RequestGroup("", (("VCPU", 1),), required=(frozenset({"HW_CPU_X86_AVX2"}),)),
     0, {}, {}),
    (RequestGroup("", (("VCPU", 1), ("DISK_GB", 1)),
                  required=(frozenset({"HW_CPU_X86_AVX2"}),)), 8, {2: 8}, {}),
    # A forbidden trait leaves its provider out, not its host.
    (RequestGroup("", (("VCPU", 1),), forbidden=frozenset({"CUSTOM_NUMA"})), 12,
     {1: 8, 2: 4}, {"A": 8}),
    (RequestGroup("", (("VGPU", 1),)), 0, {}, {}),
])
def test_fits(group: RequestGroup, total: int, hosts: dict[int, int],
              aggregates: dict[str, int]) -> None:
    found = capacity.fits(CLOUD, group)
    assert (found.total, found.hosts, found.aggregates) == (total, hosts, aggregates)


def _report(inventories: list[InventoryUse]) -> capacity.Report:
    figures = Figures.of(inventories, (ClassTotals("VCPU", 8, 0, 12.0, 3, 1),),
                         {"agg-1": (ClassTotals("VCPU", 8, 0, 12.0, 3, 1),)}, {}, {}, 1)
    return capacity.Report(figures, (), 1e9, 0.01)


def _samples(pieces: tuple[bytes, ...]
             ) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = b"".join(pieces).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples}


def test_the_text_parses_and_escapes_names() -> None:
    name = 'odd "host"\\with\nnewline'
    samples = _samples(capacity.exposition(_report(
        [_inventory(1, "VCPU", 8, used=3, ratio=1.5, name=name)])))
    labels = (("hostname", name), ("resourcetype", "VCPU"))
    assert samples["openstack_placement_resource_total", labels] == 8
    assert samples["openstack_placement_resource_usage", labels] == 3
    assert samples["openstack_placement_resource_allocation_ratio", labels] == 1.5
    assert samples["openstack_placement_resource_reserved", labels] == 0
    assert samples["placement_resource_class_free", (("resource_class", "VCPU"),)] == 9
    assert samples["placement_aggregate_resource_class_capacity",
                   (("aggregate", "agg-1"), ("resource_class", "VCPU"))] == 12


def test_lines_follow_the_figures() -> None:
    before = _samples(capacity.exposition(_report([_inventory(1, "VCPU", 8, used=3)])))
    after = _samples(capacity.exposition(_report([_inventory(1, "VCPU", 8, used=5)])))
    labels = (("hostname", "p1"), ("resourcetype", "VCPU"))
    assert before["openstack_placement_resource_usage", labels] == 3
    assert after["openstack_placement_resource_usage", labels] == 5


def test_a_bad_configured_flavor_is_left_out() -> None:
    flavors = capacity._flavors(("small:resources=VCPU:1", "nameless",
                                 "bad:resources=VCPU", "odd:resources=VCPU:1&limit=2"))
    assert [f.name for f in flavors] == ["small"]
    assert flavors[0].group.resources == (("VCPU", 1),)


def test_capacities_summed_in_units_are_fsum_in_any_order() -> None:
    """Patched sums of capacity after ratio (kept_figures) equal
    math.fsum of the same values, whatever the order of adding and taking
    out: including ratios with no exact binary form, huge and tiny values
    whose plain float sum loses the small ones."""
    rng = random.Random(19)
    values = [(total - reserved) * ratio
              for total, reserved, ratio in [(rng.randrange(1, 10 ** 6), rng.randrange(0, 5),
                                              rng.choice((0.1, 0.7, 1.0, 1.5, 16.0, 0.3333)))
                                             for _ in range(2000)]]
    values += [1e300, -1e300, 5e-324, 3.0e-310, 2.0 ** 60, 0.1]
    removed = values[::7]
    units = 0
    for value in values + removed:
        units += kept_figures.in_units(value)
    for value in reversed(removed):
        units -= kept_figures.in_units(value)
    assert kept_figures.from_units(units) == math.fsum(values)
    assert sum(values) != math.fsum(values)  # plain adding would not do
    assert kept_figures.from_units(0) == 0.0
