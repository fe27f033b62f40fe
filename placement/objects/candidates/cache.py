"""What the candidate search keeps of each provider between requests.

Reading the inventories and traits of every provider of the trees a query
touches is most of a search's database time, yet they rarely change: a
scheduler asks again and again about the same compute nodes.  Every write
that changes them checks and bumps the provider's generation in the same
transaction, so an entry stays good as long as the provider's generation
(and uuid: SQLite and older MySQL may give a deleted provider's id to a
new one) is the one read at the start of a request.  The entries are read
only after that generation, so at worst they are newer than it, and a
newer generation then makes the next request read them again.

What may change without a generation bump is not kept: usage (removing
allocations leaves the generation alone), aggregates (before microversion
1.19 they are written without one) and the provider's place in its tree
(re-parenting moves a whole subtree).  Resource class names are kept, and
all entries are dropped when a class id turns up under another name
(renaming, before microversion 1.7).

One cache per database engine, shared by the requests of a worker
process; entries are never changed once made, so requests in threads may
share them.  Each worker holds its own: workers share nothing but the
database, which remains the one authority.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, NamedTuple

import sqlalchemy as sa

from placement.objects.candidates.trees import Inventory

# Providers kept per worker.  Beyond it the cache starts again from empty:
# it holds only what searches touch, so that happens only when providers
# come and go a great deal, or on deployments bigger than this.
MAX_ENTRIES = 100_000


class Entry(NamedTuple):
    """A provider's inventories (with nothing used) and traits, as they
    were at ``generation``."""

    generation: int
    uuid: str
    inventories: dict[str, Inventory]
    traits: frozenset[str]


class ProviderCache:
    def __init__(self) -> None:
        self.entries: dict[int, Entry] = {}
        self.aggregate_uuids: dict[int, str] = {}
        self._class_names: dict[int, str] = {}
        self._shared: dict[Any, Any] = {}
        # Providers in the trees holding each set of classes, at the last
        # search for them (see reads_everyone).
        self._reach: dict[frozenset[str], int] = {}

    def get(self, provider_id: int, generation: int, uuid: str) -> Entry | None:
        entry = self.entries.get(provider_id)
        if entry is None or entry.generation != generation or entry.uuid != uuid:
            return None
        return entry

    def put(self, provider_id: int, entry: Entry) -> None:
        if len(self.entries) >= MAX_ENTRIES:
            self.entries, self._shared = {}, {}
        self.entries[provider_id] = entry

    def entry(self, generation: int, uuid: str,
              inventories: dict[str, Inventory], traits: frozenset[str]) -> Entry:
        """An entry whose inventories and traits are the very objects of
        earlier entries with equal ones: a fleet of like hosts then holds
        one copy, and the search decides once for all of them whether they
        fit (see :mod:`.choices`)."""
        shared = self._shared
        inventories = shared.setdefault(tuple(inventories.items()), inventories)
        return Entry(generation, uuid, inventories, shared.setdefault(traits, traits))

    def reads_everyone(self, classes: frozenset[str]) -> bool:
        """Whether a search for these classes had better read every provider
        than ask the database for the trees holding them: it does when
        they held at least half of the providers known at the last such
        search.  Narrowing costs the database more than it saves then, and
        the search drops the other trees itself."""
        reach = self._reach.get(classes)
        return reach is not None and reach * 2 >= len(self.entries)

    def reached(self, classes: frozenset[str], providers: int) -> None:
        """A search for ``classes`` found ``providers`` in their trees."""
        if len(self._reach) > 1024:
            self._reach = {}
        self._reach[classes] = providers

    def names_classes_as(self, class_names: dict[int, str]) -> bool:
        """Whether entries named with ``class_names`` may be kept: a search
        that read the names before a rename must not store entries after
        a search that read them after it has dropped the old ones."""
        return self._class_names == class_names

    def check_class_names(self, class_names: dict[int, str]) -> None:
        """Drop every entry if a class known before has another name now."""
        known = self._class_names
        if any(known.get(class_id, name) != name
               for class_id, name in class_names.items()):
            self.entries, self._shared = {}, {}
        self._class_names = dict(class_names)


_CACHES: weakref.WeakKeyDictionary[sa.engine.Engine, ProviderCache] = (
    weakref.WeakKeyDictionary())
_LOCK = threading.Lock()


def of(engine: sa.engine.Engine) -> ProviderCache:
    """The cache of providers read through ``engine``."""
    cache = _CACHES.get(engine)
    if cache is None:
        with _LOCK:
            cache = _CACHES.setdefault(engine, ProviderCache())
    return cache
