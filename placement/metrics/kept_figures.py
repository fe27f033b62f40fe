"""What a worker keeps of the capacity figures between readings, and how
each reading brings them up to date.

:class:`KeptFigures` works the figures (:mod:`.figures`) out from a
:func:`placement.objects.capacity.read_capacity` and keeps, per host (a
tree: a root provider and its descendants), everything derived from its
providers: their inventories with usage, openstack-exporter's lines for
them, their contributions to the sums per class of the cloud and of each
aggregate, and how many more of each configured flavor the host takes.
The next reading reads every provider's state (one row each) and the
details of only the providers whose state changed, and works out again
only the hosts holding them; the sums are patched.  At 10,000 providers
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
7. *Sums do not depend on order.*  Integers are exact, and capacity after
   ratio is summed with :func:`math.fsum` (correctly rounded), so patched
   sums equal sums worked out from nothing, byte for byte.
   ``tests/functional/test_metrics_scrape.py`` checks it after every step
   of a random sequence of writes, against a store that keeps nothing and
   against the API's own inventories and usages.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import math
from typing import TYPE_CHECKING, Any, Iterator

from placement.metrics.figures import (Figures, Fits, HostUse, exporter_lines,
                                       host_fits)
from placement.objects import capacity as capacity_obj
from placement.objects.capacity import (NAME, PARENT, ROOT, ClassTotals,
                                        InventoryUse, ProviderState, Reading)
from placement.query import RequestGroup

if TYPE_CHECKING:
    from placement.context import RequestContext

_NONE: frozenset[str] = frozenset()
# The scope of the cloud's sums; others are aggregate uuids.
_CLOUD = ""


# (scope, class) -> total, reserved, used, providers, capacities.
_Contribution = tuple[int, int, int, int, tuple[float, ...]]


@dataclasses.dataclass
class _Tree:
    """One host as worked out at a reading: per provider (every one of the
    tree) its inventories, exporter lines, memberships and traits; its
    contributions to the sums; its use; how many more of each flavor
    (set once, before the tree is kept; never changed after)."""

    root_id: int
    inventories: dict[int, tuple[InventoryUse, ...]]
    lines: dict[int, tuple[bytes, ...]]
    memberships: dict[int, frozenset[str]]
    traits: dict[int, frozenset[str]]
    contributions: dict[tuple[str, str], _Contribution]
    host: HostUse | None
    groups: tuple[RequestGroup, ...]
    fits: tuple[int, ...]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused: working out 10,000 hosts makes
    about a million objects, none in a cycle, and the collections their
    count triggers (each going over everything the worker keeps) took
    about a third of the time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# Providers whose exporter lines are joined together and kept as one
# piece per gauge: ids id >> _BUCKET_BITS alike.  A reading joins again
# only the pieces of changed hosts, and the response is sent as the pieces.
_BUCKET_BITS = 8


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
        self._trees: dict[int, _Tree] = {}
        self._groups: tuple[RequestGroup, ...] = ()
        # Derived from the trees, patched as they change.
        self._inventories: dict[int, tuple[InventoryUse, ...]] = {}
        self._lines: dict[int, tuple[bytes, ...]] = {}
        self._memberships: dict[int, frozenset[str]] = {}
        self._traits: dict[int, frozenset[str]] = {}
        self._sums: dict[tuple[str, str], list[int]] = {}
        self._capacities: dict[tuple[str, str], dict[int, tuple[float, ...]]] = {}
        self._totals: dict[tuple[str, str], ClassTotals] = {}
        self._fits: list[tuple[dict[int, int], dict[str, int]]] = []
        self._pieces: dict[int, tuple[bytes, ...]] = {}
        self._stale_pieces: set[int] = set()

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

        with _collector_paused():
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
            self._fits = [({}, {}) for _ in groups]
            roots.update(self._trees)
        # The providers of each tree worked out again: its unchanged ones
        # (kept), and the changed ones now in it.
        members: dict[int, set[int]] = {root: set() for root in roots}
        for pid in changed:
            members.setdefault(self._states[pid][ROOT], set()).add(pid)
        for root in roots:
            old = self._trees.get(root)
            if old is not None:
                members[root].update(pid for pid in old.inventories
                                     if pid not in changed and pid in self._states)
        trees = {root: self._tree(root, members[root]) for root in roots}
        self._count_fits([tree for tree in trees.values() if tree is not None])
        # Every old tree leaves before any new one comes: a provider may
        # move from one to another.
        for root in roots:
            self._leave(self._trees.pop(root, None))
        for tree in trees.values():
            self._come(tree)
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

    def _tree(self, root: int, members: set[int]) -> _Tree | None:
        """The tree of ``root`` with providers ``members``, as the states
        now have them (None when ``root`` is no root any more)."""
        state = self._states.get(root)
        if state is None or state[ROOT] != root:
            return None
        root_aggregates = self._direct.get(root, _NONE)
        inventories, lines, memberships, traits = {}, {}, {}, {}
        for pid in sorted(members):
            provider, details = self._states[pid], self._details[pid]
            rows = tuple(
                InventoryUse(pid, provider[NAME], details.uuid, root, state[NAME],
                             provider[PARENT], *inventory)
                for inventory in details.inventories)
            inventories[pid] = rows
            if rows:
                lines[pid] = exporter_lines(rows)
            member_of = self._direct.get(pid, _NONE) | root_aggregates
            if member_of:
                memberships[pid] = member_of
            if details.traits:
                traits[pid] = details.traits
        everything = [i for rows in inventories.values() for i in rows]
        contributions, host = _sums(root, state[NAME], everything, memberships)
        return _Tree(root, inventories, lines, memberships, traits, contributions,
                     host, self._groups, ())

    def _count_fits(self, trees: list[_Tree]) -> None:
        """Set how many more of each flavor each of ``trees`` takes (one
        pass per flavor over all their inventories)."""
        everything = [i for tree in trees for rows in tree.inventories.values()
                      for i in rows]
        memberships = {pid: uuids for tree in trees
                       for pid, uuids in tree.memberships.items()}
        traits = {pid: names for tree in trees for pid, names in tree.traits.items()}
        counts = [host_fits(everything, memberships, traits, group)
                  for group in self._groups]
        for tree in trees:
            tree.fits = tuple(by_root.get(tree.root_id, 0) for by_root in counts)

    def _leave(self, tree: _Tree | None) -> None:
        """Take what ``tree`` added out of the derived figures."""
        if tree is None:
            return
        for pid in tree.inventories:
            for kept in (self._inventories, self._lines, self._memberships,
                         self._traits):
                kept.pop(pid, None)
            self._stale_pieces.add(pid >> _BUCKET_BITS)
        self._add(tree, -1)

    def _come(self, tree: _Tree | None) -> None:
        """Add ``tree`` to the kept trees and the derived figures."""
        if tree is None:
            return
        self._trees[tree.root_id] = tree
        self._inventories.update(tree.inventories)
        self._lines.update(tree.lines)
        self._memberships.update(tree.memberships)
        self._traits.update(tree.traits)
        self._stale_pieces.update(pid >> _BUCKET_BITS for pid in tree.inventories)
        self._add(tree, 1)

    def _add(self, tree: _Tree, sign: int) -> None:
        """Add (sign 1) or take out (-1) the tree's part of the sums and
        of the fits."""
        root = tree.root_id
        for key, (total, reserved, used, providers, capacities) in (
                tree.contributions.items()):
            sums = self._sums.get(key)
            if sums is None:
                sums = self._sums[key] = [0, 0, 0, 0]
                self._capacities[key] = {}
            sums[0] += sign * total
            sums[1] += sign * reserved
            sums[2] += sign * used
            sums[3] += sign * providers
            if sign > 0:
                self._capacities[key][root] = capacities
            else:
                del self._capacities[key][root]
            self._totals.pop(key, None)
        if tree.groups != self._groups:
            return  # counted for other flavors: not in the sums
        root_aggregates = tree.memberships.get(root, _NONE)
        for (hosts, aggregates), count in zip(self._fits, tree.fits, strict=True):
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
        for key, sums in list(self._sums.items()):
            if key not in self._totals:
                if not sums[3]:
                    del self._sums[key], self._capacities[key]
                    continue
                capacity = math.fsum(itertools.chain.from_iterable(
                    self._capacities[key].values()))
                self._totals[key] = ClassTotals(key[1], sums[0], sums[1], capacity,
                                                sums[2], sums[3])
        cloud: list[ClassTotals] = []
        aggregates: dict[str, list[ClassTotals]] = {}
        for (scope, _rc), totals in sorted(self._totals.items()):
            if scope == _CLOUD:
                cloud.append(totals)
            else:
                aggregates.setdefault(scope, []).append(totals)
        return Figures(
            dict(self._inventories), tuple(cloud),
            {uuid: tuple(rows) for uuid, rows in aggregates.items()},
            dict(self._memberships), dict(self._traits), len(self._states),
            self._exporter(),
            tuple(tree.host for tree in self._trees.values() if tree.host))

    def _exporter(self) -> tuple[tuple[bytes, ...], ...]:
        """openstack-exporter's lines, per gauge, in provider id order, as
        pieces (those of unchanged buckets kept)."""
        if self._stale_pieces:
            by_bucket: dict[int, list[int]] = {b: [] for b in self._stale_pieces}
            for pid in self._lines:
                found = by_bucket.get(pid >> _BUCKET_BITS)
                if found is not None:
                    found.append(pid)
            for bucket, pids in by_bucket.items():
                if not pids:
                    self._pieces.pop(bucket, None)
                    continue
                pids.sort()
                self._pieces[bucket] = tuple(
                    b"".join([self._lines[pid][k] for pid in pids]) for k in range(4))
            self._stale_pieces = set()
        order = sorted(self._pieces)
        return tuple(tuple(self._pieces[b][k] for b in order) for k in range(4))

    def _fits_now(self) -> tuple[Fits, ...]:
        return tuple(Fits(sum(hosts.values()), dict(sorted(aggregates.items())),
                          dict(hosts))
                     for hosts, aggregates in self._fits)


def _sums(root: int, name: str, inventories: list[InventoryUse],
          memberships: dict[int, frozenset[str]]
          ) -> tuple[dict[tuple[str, str], _Contribution], HostUse | None]:
    """What a tree's inventories add to the sums of each (scope, class),
    and the host's use (one pass for both)."""
    found: dict[tuple[str, str], list[Any]] = {}
    for i in inventories:
        capacity = i.capacity
        for scope in (_CLOUD, *memberships.get(i.provider_id, _NONE)):
            sums = found.get((scope, i.resource_class))
            if sums is None:
                sums = found[scope, i.resource_class] = [0, 0, 0, 0, []]
            sums[0] += i.total
            sums[1] += i.reserved
            sums[2] += i.used
            sums[3] += 1
            sums[4].append(capacity)
    host = None
    if inventories:
        # The host's use is the cloud's part, its capacity added in
        # provider order (as host_use does).
        host = HostUse(root, name, {
            rc: (used, _added(capacities))
            for (scope, rc), (_t, _r, used, _p, capacities) in sorted(found.items())
            if scope == _CLOUD})
    return ({key: (total, reserved, used, providers, tuple(capacities))
             for key, (total, reserved, used, providers, capacities) in found.items()},
            host)


def _added(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    return total
