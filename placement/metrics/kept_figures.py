"""What a worker keeps of the capacity figures between readings, and how
each reading brings them up to date.

:class:`KeptFigures` works the figures (:mod:`.figures`) out from a
:func:`placement.objects.capacity.read_capacity` and keeps, per host (a
tree: a root provider and its descendants) its providers, its use and
how many more of each configured flavor it takes, and per provider its
inventories with usage, openstack-exporter's lines for them, its
aggregates and traits; and the sums per class of the cloud and of each
aggregate.  The next reading reads every provider's state (one row each)
and the details of only the providers whose state changed, and works out
again only the hosts holding them; the sums are patched (a tree leaving
takes out what it added).  At 10,000 providers
this is what makes a fresh scrape cheap: most providers do not change
between two scrapes.

Why what is kept is never stale
-------------------------------
1. *The state covers every change.*  A provider's generation moves with
   every write of its inventories, traits and (from microversion 1.19)
   aggregates, and with every allocation written on it
   (:func:`placement.objects.allocation.bumped_provider_ids`).  What
   changes without a bump is in the state itself (name, parent, root), or
   read whole at every reading (aggregate memberships, class names), or
   lowers the number of the provider's allocation rows, which the state
   counts: allocations are only taken away without a bump, when a consumer
   moves elsewhere, and then every row of that consumer on the provider
   is deleted.  So a provider whose state is unchanged has the inventories,
   usage and traits read with that state.
2. *Details are never older than their state* (they are read after it,
   in the same transaction), so at worst a provider is read again once
   more than needed.
3. *A host is worked out again whenever anything it depends on changed*:
   the state of any of its providers, before or after (a provider moving
   to another tree changes both), or the aggregates of any of them; the
   root's name and aggregates count for every provider of the tree.
4. *Ids are never reused* (see :mod:`placement.kept`), so a provider
   deleted and created again is a new provider.
5. *A renamed class starts everything afresh* (its name is in the lines).
6. *Nothing handed out is changed afterwards.*  Each reading builds new
   dicts and tuples for its :class:`Figures`; kept trees are replaced,
   never mutated.
7. *Sums do not depend on order.*  Integers are exact, and so is the sum
   of capacities after ratio, kept as an integer count of 2**-1074 (every
   double is a whole number of those) and turned into a float, correctly
   rounded, when shown; so patched sums equal sums worked out from
   nothing, byte for byte.
   ``tests/functional/test_metrics_scrape.py`` checks it after every step
   of a random sequence of writes, against a store that keeps nothing and
   against the API's own inventories and usages.

The cycle collector
-------------------
It is left running: pausing it is process-wide, and would pause it for
every other thread of a threaded server (uwsgi threads) while a worker
works out its figures.  What a reading keeps is instead never followed by
it: rows are fetched as the driver's plain tuples, and every provider's
and host's figures are kept as flat tuples of plain values (inventories,
a host's use, its providers, its fits), which the collector stops
following at the first collection they live through.  A named tuple, a
dataclass instance or a tuple holding a tuple it still follows stays
followed into the oldest generation; 30,000 of those per first reading
at 10,000 providers started a full collection of the whole process (a
third of that reading's time).  Providers are grouped by sorting pairs
rather than in a set or list per host.
"""

from __future__ import annotations

import itertools
import operator
from typing import TYPE_CHECKING

from placement.metrics.figures import (Figures, Fits, HostRow, host_fits, host_row,
                                       provider_lines)
from placement.objects import capacity as capacity_obj
from placement.objects.capacity import (NAME, PARENT, ROOT, ClassTotals, InventoryRow,
                                        ProviderState, Reading)
from placement.query import RequestGroup

if TYPE_CHECKING:
    from placement.context import RequestContext

_NONE: frozenset[str] = frozenset()
# The scope of the cloud's sums; others are aggregate uuids.
_CLOUD = ""

# Capacities after ratio are floats, summed exactly as integers counting
# units of 2**-1074 (the smallest step between two doubles): integers
# patched in any order end equal, and their true division by _UNIT is
# correctly rounded (as math.fsum is), so a patched sum is the float of
# a sum worked out from nothing, byte for byte, without keeping every
# capacity to add them up again.
_UNIT_BITS = 1074
_UNIT = 1 << _UNIT_BITS

_FIRST = operator.itemgetter(0)


def in_units(value: float) -> int:
    """``value`` (a finite float) as a whole number of _UNITs, exactly."""
    numerator, denominator = value.as_integer_ratio()
    # denominator is 2**k, k <= _UNIT_BITS.
    return numerator << (_UNIT_BITS + 1 - denominator.bit_length())


def from_units(units: int) -> float:
    """A sum of :func:`in_units`, as the nearest float (ties to even)."""
    return units / _UNIT


# Each host as worked out at a reading is kept in three dicts keyed by its
# root id: its providers (every one of the tree, in id order), its use
# (hosts with inventory) and its fits, as (the _flavors_read it was
# counted for, then how many more of each flavor it takes).  What each
# provider has is kept per provider.  Flat tuples of plain values, not a
# tuple per host holding others: the cycle collector stops following a
# tuple only once what it holds is no longer followed, one level per
# pass, so 10,000 nested ones kept reached the oldest generation still
# followed and started a full collection of the whole process.


class KeptFigures:
    """One worker's figures of one database, brought up to date by
    :meth:`read` (callers serialise calls).  A new instance keeps nothing:
    its first reading reads every provider, and gives the same figures."""

    def __init__(self) -> None:
        self._class_names: dict[int, str] | None = None
        self._states: dict[int, ProviderState] = {}
        self._state_set: set[ProviderState] = set()
        self._direct_read: tuple[tuple[int, str], ...] = ()
        self._direct: dict[int, frozenset[str]] = {}
        self._details: dict[int, capacity_obj.ProviderDetails] = {}
        self._trees: dict[int, tuple[int, ...]] = {}
        self._hosts: dict[int, HostRow] = {}
        self._host_fits: dict[int, tuple[int, ...]] = {}
        self._groups: tuple[RequestGroup, ...] = ()
        # Counts the changes of flavors: trees counted for others leave
        # nothing of their fits.
        self._flavors_read = 0
        # Per provider, set by the tree holding it.
        self._inventories: dict[int, tuple[InventoryRow, ...]] = {}
        self._lines: dict[int, tuple[str, ...]] = {}
        self._memberships: dict[int, frozenset[str]] = {}
        self._traits: dict[int, frozenset[str]] = {}
        # Patched as trees come and leave: per (scope, class) total,
        # reserved, used, providers and capacity (in _UNITs); per flavor
        # the hosts' fits and the aggregates'.
        self._sums: dict[tuple[str, str], list[int]] = {}
        self._fits: list[tuple[dict[int, int], dict[str, int]]] = []
        # openstack-exporter's lines of every provider, one text per
        # gauge; None when a provider's lines changed since.
        self._exporter: tuple[tuple[bytes, ...], ...] | None = None

    def read(self, ctx: RequestContext, groups: tuple[RequestGroup, ...],
             with_traits: bool) -> tuple[Figures, tuple[Fits, ...]]:
        """The figures now, and how many more of each of ``groups`` fit."""
        changed: set[int] = set()

        def wanted(reading: Reading) -> set[int] | None:
            # Hashed once each, compared as sets: the states of 10,000
            # providers in a few milliseconds.
            states = set(reading.providers.values())
            if reading.class_names != self._class_names:
                self.__init__()  # type: ignore[misc]
                changed.update(reading.providers)
                self._state_set = states
                return None
            changed.update(state[0] for state in states - self._state_set)
            self._state_set = states
            return set(changed)

        reading = capacity_obj.read_capacity(ctx, wanted, with_traits)
        try:
            return self._update(reading, changed, groups)
        except BaseException:
            self.__init__()  # type: ignore[misc]  # half updated: forget all
            raise

    def _update(self, reading: Reading, changed: set[int],
                groups: tuple[RequestGroup, ...]) -> tuple[Figures, tuple[Fits, ...]]:
        self._details.update(reading.details)
        roots = self._roots_changed(reading, changed)
        self._class_names = reading.class_names
        self._states = reading.providers
        for pid in self._details.keys() - reading.providers.keys():
            del self._details[pid]
        if groups != self._groups:
            # Every host's fits are worked out again, summed from nothing.
            self._groups = groups
            self._flavors_read += 1
            self._fits = [({}, {}) for _ in groups]
            roots.update(self._trees)
        # The providers of each tree worked out again: the changed ones now
        # in it, and its unchanged ones.  Every old tree leaves before any
        # new one is worked out: a provider may move from one to another.
        # As (root, provider) pairs, sorted and grouped: no set per tree
        # (10,000 containers alive through a first reading make the cycle
        # collector go over the whole process).
        states = self._states
        members = [(states[pid][ROOT], pid) for pid in changed]
        for root in roots:
            providers = self._trees.get(root)
            if providers is not None:
                members.extend((root, pid) for pid in providers
                               if pid not in changed and pid in states)
                self._leave(root)
        members.sort()
        # A root without members is gone or no root any more.
        trees = [root for root, group in itertools.groupby(members, _FIRST)
                 if self._tree(root, tuple([pid for _root, pid in group]))]
        self._count_fits(trees)
        for root in trees:
            self._add(root, 1)
        return self._figures(), self._fits_now()

    def _roots_changed(self, reading: Reading, changed: set[int]) -> set[int]:
        """The roots of every tree to work out again: trees holding a
        changed or deleted provider, before or after, or one whose
        aggregates changed."""
        before, after = self._states, reading.providers
        roots = {after[pid][ROOT] for pid in changed}
        roots.update(before[pid][ROOT] for pid in changed if pid in before)
        roots.update(before[pid][ROOT] for pid in before.keys() - after.keys())
        if reading.memberships != self._direct_read:
            direct: dict[int, set[str]] = {}
            for pid, uuid in reading.memberships:
                direct.setdefault(pid, set()).add(uuid)
            frozen = {pid: frozenset(uuids) for pid, uuids in direct.items()}
            for pid in frozen.keys() | self._direct.keys():
                if frozen.get(pid) != self._direct.get(pid) and pid in after:
                    roots.add(after[pid][ROOT])
            self._direct_read, self._direct = reading.memberships, frozen
        return roots

    def _tree(self, root: int, members: tuple[int, ...]) -> bool:
        """Keep the tree of ``root`` with providers ``members`` (in id
        order), as the states now have them, and what each provider has
        (False, keeping nothing, when ``root`` is no root any more)."""
        state = self._states.get(root)
        if state is None or state[ROOT] != root:
            return False
        root_name = state[NAME]
        root_aggregates = self._direct.get(root, _NONE)
        # The host's use per class: capacity added in provider order (as
        # figures.host_use does).
        use: dict[str, list[float]] = {}
        states, details = self._states, self._details
        for pid in members:
            provider = states[pid]
            uuid, inventories, traits = details[pid]
            name, parent = provider[NAME], provider[PARENT]
            rows = tuple([(pid, name, uuid, root, root_name, parent, *inventory)
                          for inventory in inventories])
            self._inventories[pid] = rows
            if rows:
                self._lines[pid] = provider_lines(name, inventories)
                self._exporter = None
                # Unpacked, not read by attribute: 30,000 at a first reading.
                for rc, total, reserved, ratio, _min, _max, _step, used in inventories:
                    found = use.get(rc)
                    if found is None:
                        found = use[rc] = [0, 0.0]
                    found[0] += used
                    found[1] += (total - reserved) * ratio
            member_of = self._direct.get(pid, _NONE)
            if root_aggregates:
                member_of = member_of | root_aggregates
            if member_of:
                self._memberships[pid] = member_of
            if traits:
                self._traits[pid] = frozenset(traits)
        self._trees[root] = members
        if use:
            self._hosts[root] = host_row(root, root_name, use)
        return True

    def _count_fits(self, roots: list[int]) -> None:
        """How many more of each flavor the trees of ``roots`` take (one
        pass per flavor over all their inventories)."""
        if not self._groups:
            return
        inventories, trees = self._inventories, self._trees
        everything = list(itertools.chain.from_iterable(
            inventories[pid] for root in roots for pid in trees[root]))
        counts = [host_fits(everything, self._memberships, self._traits, group)
                  for group in self._groups]
        flavors_read, host_fits_ = self._flavors_read, self._host_fits
        for root in roots:
            host_fits_[root] = (flavors_read, *[by_root.get(root, 0) for by_root in counts])

    def _leave(self, root: int) -> None:
        """Take what the tree of ``root`` added out of the sums, the fits
        and the per-provider figures, and forget it."""
        self._add(root, -1)
        for pid in self._trees.pop(root):
            if self._lines.pop(pid, None) is not None:
                self._exporter = None
            for kept in (self._inventories, self._memberships, self._traits):
                kept.pop(pid, None)
        self._hosts.pop(root, None)
        self._host_fits.pop(root, None)

    def _add(self, root: int, sign: int) -> None:
        """Add (sign 1) or take out (-1) the tree's part of the sums and
        of the fits."""
        all_sums = self._sums
        for pid in self._trees[root]:
            rows = self._inventories[pid]
            if not rows:
                continue
            scopes = (_CLOUD, *self._memberships.get(pid, _NONE))
            for (_pid, _name, _uuid, _root, _root_name, _parent, rc, total, reserved,
                 ratio, _min, _max, _step, used) in rows:
                units = in_units((total - reserved) * ratio)
                for scope in scopes:
                    sums = all_sums.get((scope, rc))
                    if sums is None:
                        sums = all_sums[scope, rc] = [0, 0, 0, 0, 0]
                    if sign > 0:
                        sums[0] += total
                        sums[1] += reserved
                        sums[2] += used
                        sums[3] += 1
                        sums[4] += units
                    else:
                        sums[0] -= total
                        sums[1] -= reserved
                        sums[2] -= used
                        sums[3] -= 1
                        sums[4] -= units
        fits = self._host_fits.get(root)
        if fits is None or fits[0] != self._flavors_read:
            return  # counted for other flavors (or none): not in the sums
        root_aggregates = self._memberships.get(root, _NONE)
        for (hosts, aggregates), count in zip(self._fits, fits[1:], strict=True):
            if not count:
                continue
            if sign > 0:
                hosts[root] = count
            else:
                del hosts[root]
            for uuid in root_aggregates:
                aggregates[uuid] = aggregates.get(uuid, 0) + sign * count
                if not aggregates[uuid]:
                    del aggregates[uuid]

    def _figures(self) -> Figures:
        cloud: list[ClassTotals] = []
        aggregates: dict[str, list[ClassTotals]] = {}
        for key, (total, reserved, used, providers, units) in sorted(self._sums.items()):
            if not providers:
                del self._sums[key]
                continue
            totals = ClassTotals(key[1], total, reserved, from_units(units), used,
                                 providers)
            if key[0] == _CLOUD:
                cloud.append(totals)
            else:
                aggregates.setdefault(key[0], []).append(totals)
        return Figures(
            dict(self._inventories), tuple(cloud),
            {uuid: tuple(rows) for uuid, rows in aggregates.items()},
            dict(self._memberships), dict(self._traits), len(self._states),
            self._exporter_lines(),
            tuple(self._hosts.values()))

    def _exporter_lines(self) -> tuple[tuple[bytes, ...], ...]:
        """openstack-exporter's lines, per gauge, in provider id order
        (joined and encoded again only when some provider's lines changed:
        a few milliseconds for 10 MB)."""
        if self._exporter is None:
            ordered = [self._lines[pid] for pid in sorted(self._lines)]
            self._exporter = tuple(("".join([lines[k] for lines in ordered]).encode(),)
                                   for k in range(4))
        return self._exporter

    def _fits_now(self) -> tuple[Fits, ...]:
        return tuple(Fits(sum(hosts.values()), dict(sorted(aggregates.items())),
                          dict(hosts))
                     for hosts, aggregates in self._fits)
