"""The cloud's capacity for the operator's views: figures, "how many more
fit", and their Prometheus text.

What is read from the database is :class:`placement.objects.capacity.Figures`
(a few grouped queries); this module works out the rest in memory and
keeps the result per worker for ``[metrics] capacity_interval`` seconds
(:func:`current`), so a scrape, or a capacity page reloaded by many
people, costs the database at most one reading per interval.

How many more fit
-----------------
``fits`` of a request (one group: ``resources``, ``required``,
``member_of`` as for ``GET /allocation_candidates``) is the number of
instances of it the cloud can take now if each is placed greedily, host by
host, counted per host and summed:

* a *host* is a tree: a root provider with all its descendants;
* a provider of the tree can take one more instance's ``amount`` of a
  class ``n`` times, the largest ``n`` with ``used + n * amount <=
  (total - reserved) * allocation_ratio``, or 0 when the amount is not
  within ``min_unit``..``max_unit`` or not a multiple of ``step_size``;
* a provider is left out when it has a forbidden trait, or fails
  ``member_of`` (its own aggregates and its root's count, as in the
  candidate search);
* the host takes ``min`` over the requested classes of the sum of ``n``
  over its providers (each instance takes each class from one provider,
  and a provider's ``n`` does not depend on the other classes), or 0 when
  the traits of its providers able to take something lack a required one;
* ``fits`` of an aggregate sums the hosts whose root is in it.

This is what claiming the first allocation candidate of the host over
and over would give (``tests/functional/test_metrics_workers.py`` checks
exactly that), with two stated limits: sharing providers only count as
hosts of their own (a host needing a sharing provider's disk counts 0),
and a required trait is judged on the host's able providers together, so
a host whose only provider with the trait is never picked counts as if
the trait were present.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Iterable

from oslo_config import cfg

from placement.objects import capacity
from placement.objects.capacity import ClassTotals, Figures, InventoryUse
from placement.query import RequestGroup, has_traits, in_aggregates

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)

_NONE: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class Flavor:
    """A request named in ``[metrics] capacity_requests``."""

    name: str
    query: str
    group: RequestGroup


@dataclasses.dataclass(frozen=True)
class Fits:
    """How many more of one request fit: in all, per aggregate, per host
    (root provider id, hosts taking at least one)."""

    total: int
    aggregates: dict[str, int]
    hosts: dict[int, int]


@dataclasses.dataclass(frozen=True)
class Report:
    """The figures, each configured flavor's fits, when they were read
    and how long that took (seconds)."""

    figures: Figures
    flavors: tuple[tuple[Flavor, Fits], ...]
    read_at: float
    took: float
    # The report's Prometheus text, written by the first scrape that
    # needs it (see exposition).
    text: list[bytes] = dataclasses.field(default_factory=list, compare=False)


def times(inventory: InventoryUse, amount: int) -> int:
    """How many more times ``amount`` fits on this inventory."""
    if not (inventory.min_unit <= amount <= inventory.max_unit
            and amount % inventory.step_size == 0):
        return 0
    room = inventory.capacity - inventory.used
    if room < amount:
        return 0
    count = math.floor(room / amount)
    # Guard the division's rounding: the check the claim makes decides.
    while count and inventory.used + count * amount > inventory.capacity:
        count -= 1
    return count


def fits(figures: Figures, group: RequestGroup) -> Fits:
    """How many more of ``group`` fit (see the module docstring)."""
    amounts = dict(group.resources)
    by_root: dict[int, dict[str, int]] = {}
    traits_by_root: dict[int, set[str]] = {}
    check_aggregates = bool(group.member_of or group.not_member_of)
    for inventory in figures.inventories:
        amount = amounts.get(inventory.resource_class)
        if amount is None:
            continue
        pid = inventory.provider_id
        if check_aggregates and not in_aggregates(
                figures.memberships.get(pid, _NONE), group):
            continue
        traits = figures.traits.get(pid, _NONE)
        if group.forbidden and not group.forbidden.isdisjoint(traits):
            continue
        count = times(inventory, amount)
        sums = by_root.setdefault(inventory.root_id, {})
        sums[inventory.resource_class] = sums.get(inventory.resource_class, 0) + count
        if count and group.required:
            traits_by_root.setdefault(inventory.root_id, set()).update(traits)
    hosts = {}
    for root, sums in by_root.items():
        if len(sums) < len(amounts):
            continue
        if group.required and not has_traits(traits_by_root.get(root, set()), group):
            continue
        count = min(sums.values())
        if count:
            hosts[root] = count
    aggregates: dict[str, int] = {}
    for root, count in hosts.items():
        for uuid in figures.memberships.get(root, _NONE):
            aggregates[uuid] = aggregates.get(uuid, 0) + count
    return Fits(sum(hosts.values()), aggregates, hosts)


@dataclasses.dataclass(frozen=True)
class HostUse:
    """A host (tree) and, per class, what is used of its capacity."""

    root_id: int
    name: str
    classes: dict[str, tuple[int, float]]

    @property
    def fullest(self) -> float:
        """The largest share used of any class's capacity (0 to 1, or more
        when capacity shrank under allocations)."""
        return max((used / capacity for used, capacity in self.classes.values()
                    if capacity > 0), default=0.0)


def hosts(figures: Figures) -> list[HostUse]:
    """Every host with inventory, per class summed over its providers."""
    found: dict[int, tuple[str, dict[str, list[float]]]] = {}
    for inventory in figures.inventories:
        entry = found.get(inventory.root_id)
        if entry is None:
            entry = found[inventory.root_id] = (inventory.root_name, {})
        sums = entry[1].setdefault(inventory.resource_class, [0, 0.0])
        sums[0] += inventory.used
        sums[1] += inventory.capacity
    return [HostUse(root, name,
                    {c: (int(u), cap) for c, (u, cap) in sorted(sums.items())})
            for root, (name, sums) in found.items()]


def fullest_hosts(figures: Figures, count: int = 10) -> list[HostUse]:
    """The ``count`` hosts with the largest share of any class used,
    fullest first (ties by name)."""
    return sorted(hosts(figures), key=lambda h: (-h.fullest, h.name))[:count]


def configured_flavors(conf: cfg.ConfigOpts) -> tuple[Flavor, ...]:
    """The flavors of ``[metrics] capacity_requests`` that parse; a bad
    one is logged (once) and left out (its mistake is not the service's)."""
    return _flavors(tuple(conf.metrics.capacity_requests))


@functools.lru_cache(maxsize=8)
def _flavors(entries: tuple[str, ...]) -> tuple[Flavor, ...]:
    from placement import errors

    found = []
    for entry in entries:
        name, sep, query = entry.partition(":")
        try:
            if not sep or not name.strip():
                raise ValueError("expected <name>:<query>")
            pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
            found.append(Flavor(name.strip(), query, parse_group(pairs)))
        except (ValueError, errors.ApiError) as exc:
            LOG.error("[metrics] capacity_requests: %r left out: %s", entry,
                      getattr(exc, "detail", exc))
    return tuple(found)


def parse_group(pairs: Iterable[tuple[str, str]]) -> RequestGroup:
    """The one request group of ``resources``, ``required`` and
    ``member_of`` parameters: checked against the query schema of
    allocation candidates at 1.21 (the last with only those parameters)
    and parsed as allocation candidates parse them at the latest
    microversion: same rules, same 400s."""
    from placement import microversion, request, request_groups
    from placement.schemas import allocation_candidate

    pairs = list(pairs)
    request.validate(dict(pairs), allocation_candidate.SINGLE_GROUP,
                     "Invalid query string parameters")
    return request_groups.parse(pairs, microversion.MAX_VERSION).groups[0]


class _Kept:
    """One worker's last report per database, and the lock that lets a
    single request compute the next one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reports: dict[tuple[str, bool], Report] = {}


_KEPT = _Kept()


def current(ctx: RequestContext, with_traits: bool = False) -> Report:
    """The report, read again when older than ``[metrics]
    capacity_interval`` (or without the traits ``with_traits`` needs)."""
    conf = ctx.config
    flavors = configured_flavors(conf)
    needs_traits = with_traits or any(
        f.group.required or f.group.forbidden for f in flavors)
    key = (ctx.db.url, needs_traits)
    interval = conf.metrics.capacity_interval
    with _KEPT.lock:
        for traits in (True, needs_traits):
            report = _KEPT.reports.get((ctx.db.url, traits))
            if (report is not None and time.time() - report.read_at < interval
                    and [f for f, _ in report.flavors] == list(flavors)):
                return report
        started = time.perf_counter()
        figures = capacity.read_figures(ctx, with_traits=needs_traits)
        report = Report(figures, tuple((f, fits(figures, f.group)) for f in flavors),
                        time.time(), time.perf_counter() - started)
        _KEPT.reports[key] = report
        return report


def exposition(report: Report) -> bytes:
    """The capacity gauges in the Prometheus text format, written once per
    report (scrapes within the interval send the same bytes).

    Written directly rather than through prometheus-client's collector
    objects: a cloud of 10,000 providers has over 100,000 samples, and a
    sample object each costs more than the whole scrape may.  The four
    lines of an inventory are kept from one report to the next while its
    figures are unchanged, as most are between two scrapes.
    """
    if not report.text:
        report.text.append(_written(report))
    return report.text[0]


# (provider name, class, total, reserved, ratio, used) -> the inventory's
# line in each of openstack-exporter's four gauges.
_LINES: dict[tuple[str, str, int, int, float, int], tuple[str, str, str, str]] = {}
_EXPORTER_GAUGES = ("resource_allocation_ratio", "resource_reserved",
                    "resource_total", "resource_usage")


def _provider_lines(inventories: tuple[InventoryUse, ...]) -> list[list[str]]:
    global _LINES
    if len(_LINES) > 4 * len(inventories) + 1024:
        _LINES = {}
    kept = _LINES
    columns: list[list[str]] = [[], [], [], []]
    ratio, reserved, total, usage = columns
    for i in inventories:
        key = (i.provider_name, i.resource_class, i.total, i.reserved,
               i.allocation_ratio, i.used)
        lines = kept.get(key)
        if lines is None:
            labels = '{hostname="%s",resourcetype="%s"} ' % (
                _escape(i.provider_name), i.resource_class)
            lines = kept[key] = (
                "openstack_placement_resource_allocation_ratio%s%s\n"
                % (labels, _number(i.allocation_ratio)),
                "openstack_placement_resource_reserved%s%d\n" % (labels, i.reserved),
                "openstack_placement_resource_total%s%d\n" % (labels, i.total),
                "openstack_placement_resource_usage%s%d\n" % (labels, i.used))
        ratio.append(lines[0])
        reserved.append(lines[1])
        total.append(lines[2])
        usage.append(lines[3])
    return columns


def _written(report: Report) -> bytes:
    figures = report.figures
    out: list[str] = []
    # openstack-exporter's names, labels and help texts, value for value.
    out.append("# HELP openstack_placement_up up\n# TYPE openstack_placement_up gauge\n"
               "openstack_placement_up 1\n")
    for name, lines in zip(_EXPORTER_GAUGES, _provider_lines(figures.inventories),
                           strict=True):
        metric = "openstack_placement_" + name
        out.append("# HELP %s %s\n# TYPE %s gauge\n" % (metric, name, metric))
        out.append("".join(lines))
    _family(out, "placement_providers", "Resource providers in the cloud.",
            [("", figures.providers)])
    _class_families(out, "placement_resource_class", "of the whole cloud",
                    [("", t) for t in figures.cloud], aggregate=False)
    _class_families(out, "placement_aggregate_resource_class",
                    "of the providers of an aggregate (or whose root is in it)",
                    [(uuid, t) for uuid, rows in sorted(figures.aggregates.items())
                     for t in rows], aggregate=True)
    _family(out, "placement_flavor_fits", "How many more instances of each "
            "flavor of [metrics] capacity_requests fit, placed greedily host "
            "by host.", [(_labels(flavor=f.name), n.total) for f, n in report.flavors])
    _family(out, "placement_aggregate_flavor_fits", "How many more instances "
            "of each configured flavor fit on the hosts of an aggregate.",
            [(_labels(aggregate=uuid, flavor=f.name), count)
             for f, n in report.flavors for uuid, count in sorted(n.aggregates.items())])
    _family(out, "placement_capacity_read_timestamp_seconds", "When the "
            "capacity figures were read from the database (Unix time).",
            [("", report.read_at)])
    _family(out, "placement_capacity_read_seconds", "How long reading and "
            "working out the capacity figures took.", [("", report.took)])
    return "".join(out).encode("utf-8")


_CLASS_FIGURES = (
    ("total", "Inventory totals", lambda t: t.total),
    ("reserved", "Reserved amounts", lambda t: t.reserved),
    ("capacity", "Capacity after allocation ratios, (total - reserved) * "
     "allocation_ratio summed", lambda t: t.capacity),
    ("used", "Amounts allocated", lambda t: t.used),
    ("free", "Capacity after ratios minus what is allocated", lambda t: t.free),
    ("providers", "Providers with inventory", lambda t: t.providers),
)


def _class_families(out: list[str], prefix: str, whose: str,
                    rows: list[tuple[str, ClassTotals]], aggregate: bool) -> None:
    for suffix, what, value in _CLASS_FIGURES:
        samples = [(_labels(aggregate=uuid, resource_class=t.resource_class)
                    if aggregate else _labels(resource_class=t.resource_class),
                    value(t)) for uuid, t in rows]
        _family(out, "%s_%s" % (prefix, suffix),
                "%s per resource class %s." % (what, whose), samples)


def _family(out: list[str], name: str, help_text: str,
            samples: list[tuple[str, float | int]]) -> None:
    out.append("# HELP %s %s\n# TYPE %s gauge\n" % (name, help_text, name))
    out.append("".join(["%s%s %s\n" % (name, labels, _number(value))
                        for labels, value in samples]))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: str) -> str:
    return "{%s}" % ",".join('%s="%s"' % (key, _escape(value))
                             for key, value in labels.items())


def _number(value: float | int) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2 ** 53:
            return str(int(value))
        return repr(value)
    return str(value)
