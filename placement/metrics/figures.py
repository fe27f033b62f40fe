"""The capacity figures of the operator's views, and the pure functions
that work them out of inventories.

:class:`Figures` is what ``GET /metrics`` and ``GET /capacity`` show;
:class:`Fits`, how many more of a request fit; :class:`HostUse`, a
host's use per class.  :func:`host_fits` counts how many more of a request
each host takes (defined in :mod:`placement.metrics.capacity`), and
:func:`exporter_lines` writes openstack-exporter's gauges.  What a worker
keeps to bring the figures up to date is :mod:`.kept_figures`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import operator
from typing import Any, Iterable

from placement.objects.capacity import (ROW_CLASS, ROW_PROVIDER_ID, ClassTotals,
                                        InventoryRow, InventoryUse)
from placement.query import RequestGroup, has_traits, in_aggregates

_NONE: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class HostUse:
    """A host (tree) and, per class, what is used of its capacity, as the
    views show it (made for the few hosts shown; every host is kept as a
    :data:`HostRow`)."""

    root_id: int
    name: str
    classes: dict[str, tuple[int, float]]
    # The largest share used of any class's capacity (0 to 1, or more when
    # capacity shrank under allocations).
    fullest: float

    @classmethod
    def of(cls, row: HostRow) -> HostUse:
        fullest, root, name, *classes = row
        return cls(root, name, {classes[k]: (classes[k + 1], classes[k + 2])
                                for k in range(0, len(classes), 3)}, fullest)


# A host as a worker keeps it: (fullest, root id, name, then class, used,
# capacity for each class in class order), see HostUse.  Flat, of plain
# values only: the cycle collector stops following it at its first pass
# (10,000 kept; see placement.metrics.kept_figures).
HostRow = tuple[Any, ...]


def host_row(root: int, name: str, sums: dict[str, list[Any]]) -> HostRow:
    """The host's row from its per-class [used, capacity] sums."""
    fullest = 0.0
    classes: list[Any] = []
    for rc, (used, capacity) in sorted(sums.items()):
        classes += (rc, int(used), capacity)
        if capacity > 0 and used / capacity > fullest:
            fullest = used / capacity
    return (fullest, root, name, *classes)


@dataclasses.dataclass(frozen=True)
class Figures:
    """Everything the operator's views start from.

    ``by_provider``: each provider's inventories (InventoryUse's fields,
    as plain tuples), in class name order;
    ``cloud`` and each aggregate's totals in class name order.  A provider
    is counted in an aggregate when it, or the root of its tree, is a
    member (as the candidate search has it: a tree provider is a member of
    its root's aggregates), and only once when both are.  ``exporter``
    (the lines of openstack-exporter's four gauges: allocation ratio,
    reserved, total, usage; each as pieces to be sent one after the other)
    and ``hosts`` are written along, when known.
    """

    by_provider: dict[int, tuple[InventoryRow, ...]]
    cloud: tuple[ClassTotals, ...]
    aggregates: dict[str, tuple[ClassTotals, ...]]
    memberships: dict[int, frozenset[str]]
    traits: dict[int, frozenset[str]]
    providers: int
    exporter: tuple[tuple[bytes, ...], ...] | None = dataclasses.field(
        default=None, compare=False)
    hosts: tuple[HostRow, ...] | None = dataclasses.field(default=None, compare=False)

    @functools.cached_property
    def inventories(self) -> tuple[InventoryRow, ...]:
        """Every inventory, in provider id then class name order (put
        together when first asked: a scrape never needs it)."""
        return tuple(itertools.chain.from_iterable(
            self.by_provider[pid] for pid in sorted(self.by_provider)))

    @classmethod
    def of(cls, inventories: Iterable[InventoryRow], *others: Any) -> Figures:
        """Figures with these inventories (in any order), ``others`` as the
        fields after ``by_provider``."""
        by_provider: dict[int, list[InventoryRow]] = {}
        for inventory in inventories:
            by_provider.setdefault(inventory[ROW_PROVIDER_ID], []).append(inventory)
        return cls({pid: tuple(sorted(rows, key=lambda i: i[ROW_CLASS]))
                    for pid, rows in by_provider.items()}, *others)


@dataclasses.dataclass(frozen=True)
class Fits:
    """How many more of one request fit: in all, per aggregate, per host
    (root provider id, hosts taking at least one)."""

    total: int
    aggregates: dict[str, int]
    hosts: dict[int, int]


def times(inventory: InventoryUse, amount: int) -> int:
    """How many more times ``amount`` fits on this inventory."""
    return _times(inventory.total, inventory.reserved, inventory.allocation_ratio,
                  inventory.min_unit, inventory.max_unit, inventory.step_size,
                  inventory.used, amount)


def _times(total: int, reserved: int, ratio: float, min_unit: int, max_unit: int,
           step_size: int, used: int, amount: int) -> int:
    if not (min_unit <= amount <= max_unit and amount % step_size == 0):
        return 0
    capacity = (total - reserved) * ratio
    room = capacity - used
    if room < amount:
        return 0
    count = math.floor(room / amount)
    # Guard the division's rounding: the check the claim makes decides.
    while count and used + count * amount > capacity:
        count -= 1
    return count


def host_fits(inventories: Iterable[InventoryRow],
              memberships: dict[int, frozenset[str]],
              traits: dict[int, frozenset[str]], group: RequestGroup) -> dict[int, int]:
    """How many more of ``group`` each host of ``inventories`` takes
    (root id -> count, hosts taking none left out); see
    :mod:`placement.metrics.capacity`.  The inventories are unpacked, not
    read by attribute: this runs once per inventory of a requested class
    (60,000 times per first scrape at 10,000 providers and two flavors)."""
    amounts = dict(group.resources)
    by_root: dict[int, dict[str, int]] = {}
    traits_by_root: dict[int, set[str]] = {}
    check_aggregates = bool(group.member_of or group.not_member_of)
    forbidden, required = group.forbidden, group.required
    for (pid, _name, _uuid, root, _root_name, _parent, rc, total, reserved, ratio,
         min_unit, max_unit, step_size, used) in inventories:
        amount = amounts.get(rc)
        if amount is None:
            continue
        if check_aggregates and not in_aggregates(memberships.get(pid, _NONE), group):
            continue
        if forbidden and not forbidden.isdisjoint(traits.get(pid, _NONE)):
            continue
        count = _times(total, reserved, ratio, min_unit, max_unit, step_size, used,
                       amount)
        sums = by_root.get(root)
        if sums is None:
            sums = by_root[root] = {}
        sums[rc] = sums.get(rc, 0) + count
        if count and required:
            traits_by_root.setdefault(root, set()).update(traits.get(pid, _NONE))
    hosts = {}
    wanted = len(amounts)
    for root, sums in by_root.items():
        if len(sums) < wanted:
            continue
        if required and not has_traits(traits_by_root.get(root, set()), group):
            continue
        count = min(sums.values())
        if count:
            hosts[root] = count
    return hosts


def escape(value: str) -> str:
    """A label value as the Prometheus text format writes it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def number(value: float | int) -> str:
    """A sample value: integers (and integral floats) without a point."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2 ** 53:
            return str(int(value))
        return repr(value)
    return str(value)


def exporter_lines(inventories: Iterable[InventoryRow]) -> tuple[bytes, ...]:
    """The lines of openstack-exporter's four gauges (allocation ratio,
    reserved, total, usage) for these inventories (each provider's
    together), one text per gauge."""
    by_provider = itertools.groupby(inventories, operator.itemgetter(ROW_PROVIDER_ID))
    per_provider = [provider_lines(rows[0][1], [row[6:] for row in rows])
                    for rows in (list(group) for _pid, group in by_provider)]
    # Four gauges, each the providers' lines joined (four empty texts for none).
    gauges = zip(*per_provider, strict=True) if per_provider else ((),) * 4
    return tuple("".join(gauge).encode() for gauge in gauges)


def provider_lines(name: str, inventories: Iterable[tuple[str, int, int, float, int, int,
                                                            int, int]]) -> tuple[str, ...]:
    """The lines of openstack-exporter's four gauges (as :func:`exporter_lines`)
    of one provider named ``name``, from its inventories as a reading has
    them (class, total, reserved, ratio, min, max, step, used); text, not
    bytes: encoded once per gauge when all providers' lines are joined."""
    hostname = escape(name)
    ratios: list[str] = []
    reserved: list[str] = []
    totals: list[str] = []
    usage: list[str] = []
    for rc, total, held, ratio, _min, _max, _step, used in inventories:
        labels = '{hostname="%s",resourcetype="%s"} ' % (hostname, rc)
        ratios.append("openstack_placement_resource_allocation_ratio%s%s\n"
                      % (labels, number(ratio)))
        reserved.append("openstack_placement_resource_reserved%s%d\n" % (labels, held))
        totals.append("openstack_placement_resource_total%s%d\n" % (labels, total))
        usage.append("openstack_placement_resource_usage%s%d\n" % (labels, used))
    return ("".join(ratios), "".join(reserved), "".join(totals), "".join(usage))


def host_use(root: int, name: str, inventories: list[InventoryRow]) -> HostRow | None:
    """The host's use per class, summed over its providers (None without
    inventory)."""
    if not inventories:
        return None
    sums: dict[str, list[Any]] = {}
    for (_pid, _name, _uuid, _root, _root_name, _parent, rc, total, reserved, ratio,
         _min, _max, _step, used) in inventories:
        entry = sums.setdefault(rc, [0, 0.0])
        entry[0] += used
        entry[1] += (total - reserved) * ratio
    return host_row(root, name, sums)
