"""The cloud's capacity for the operator's views: figures, "how many more
fit", and their Prometheus text.

The figures (:class:`placement.metrics.figures.Figures`) are worked out
by :class:`placement.metrics.kept_figures.KeptFigures`, which reads again only
the providers that changed since its last reading; this module keeps the
result per worker for ``[metrics] capacity_interval`` seconds
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
import heapq
import logging
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Iterable

from oslo_config import cfg

from placement.metrics.figures import (Figures, Fits, HostRow, HostUse, escape,
                                       exporter_lines, host_fits, host_use, number)
from placement.metrics.kept_figures import KeptFigures
from placement.objects.capacity import (ROW_ROOT_ID, ROW_ROOT_NAME, ClassTotals,
                                        InventoryRow)
from placement.query import RequestGroup

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
class Report:
    """The figures, each configured flavor's fits, when they were read
    and how long that took (seconds)."""

    figures: Figures
    flavors: tuple[tuple[Flavor, Fits], ...]
    read_at: float
    took: float
    # The report's Prometheus text, as pieces, written by the first scrape
    # that needs it (see exposition).
    text: list[tuple[bytes, ...]] = dataclasses.field(default_factory=list,
                                                      compare=False)


def fits(figures: Figures, group: RequestGroup) -> Fits:
    """How many more of ``group`` fit (see the module docstring)."""
    hosts = host_fits(figures.inventories, figures.memberships, figures.traits, group)
    aggregates: dict[str, int] = {}
    for root, count in hosts.items():
        for uuid in figures.memberships.get(root, _NONE):
            aggregates[uuid] = aggregates.get(uuid, 0) + count
    return Fits(sum(hosts.values()), aggregates, hosts)


def hosts(figures: Figures) -> tuple[HostRow, ...]:
    """Every host with inventory, per class summed over its providers."""
    if figures.hosts is not None:
        return figures.hosts
    by_root: dict[int, list[InventoryRow]] = {}
    for inventory in figures.inventories:
        by_root.setdefault(inventory[ROW_ROOT_ID], []).append(inventory)
    return tuple(host for host in (host_use(root, rows[0][ROW_ROOT_NAME], rows)
                                   for root, rows in by_root.items()) if host)


def fullest_hosts(figures: Figures, count: int = 10) -> list[HostUse]:
    """The ``count`` hosts with the largest share of any class used,
    fullest first (ties by name)."""
    return [HostUse.of(row) for row in heapq.nsmallest(
        count, hosts(figures), key=lambda row: (-row[0], row[2]))]


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
    """One worker's last report per database, the figures it keeps to
    work out the next (:mod:`.kept_figures`), and the lock that lets a single
    request do it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reports: dict[tuple[str, bool], Report] = {}
        self.figures: dict[tuple[str, bool], KeptFigures] = {}


_KEPT = _Kept()


def forget() -> None:
    """Drop everything this worker keeps: its next reading reads every
    provider, as a newly started worker's does (for measurements)."""
    global _KEPT
    with _KEPT.lock:
        _KEPT = _Kept()


def current(ctx: RequestContext, with_traits: bool = False) -> Report:
    """The report, worked out again when older than ``[metrics]
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
        kept = _KEPT.figures.setdefault(key, KeptFigures())
        figures, fits = kept.read(ctx, tuple(f.group for f in flavors), needs_traits)
        report = Report(figures, tuple(zip(flavors, fits, strict=True)),
                        time.time(), time.perf_counter() - started)
        _KEPT.reports[key] = report
        return report


def exposition(report: Report) -> tuple[bytes, ...]:
    """The capacity gauges in the Prometheus text format, as pieces to be
    sent one after the other (a dozen: at 10,000 providers each of
    openstack-exporter's four gauges is one of 2.5 MB), written once per
    report (scrapes within the interval send the same).

    Written directly rather than through prometheus-client's collector
    objects: a cloud of 10,000 providers has over 100,000 samples, and a
    sample object each costs more than the whole scrape may.  The lines of
    openstack-exporter's gauges come written with the figures
    (:mod:`.kept_figures` writes a host's again only when it changed, and
    joins the gauges' text again only when some host's changed).
    """
    if not report.text:
        report.text.append(_written(report))
    return report.text[0]


_EXPORTER_GAUGES = ("resource_allocation_ratio", "resource_reserved",
                    "resource_total", "resource_usage")


def _written(report: Report) -> tuple[bytes, ...]:
    figures = report.figures
    exporter = figures.exporter
    if exporter is None:
        exporter = tuple((lines,) for lines in exporter_lines(figures.inventories))
    # openstack-exporter's names, labels and help texts, value for value.
    parts = [b"# HELP openstack_placement_up up\n# TYPE openstack_placement_up gauge\n"
             b"openstack_placement_up 1\n"]
    for name, lines in zip(_EXPORTER_GAUGES, exporter, strict=True):
        metric = "openstack_placement_" + name
        parts.append(("# HELP %s %s\n# TYPE %s gauge\n" % (metric, name, metric)).encode())
        parts.extend(lines)
    out: list[str] = []
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
    parts.append("".join(out).encode("utf-8"))
    return tuple(parts)


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
    out.append("".join(["%s%s %s\n" % (name, labels, number(value))
                        for labels, value in samples]))


def _labels(**labels: str) -> str:
    return "{%s}" % ",".join('%s="%s"' % (key, escape(value))
                             for key, value in labels.items())
