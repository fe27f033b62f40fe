"""What the candidate search keeps between requests, per worker.

Reading and judging the providers of every tree a query touches is most of
a search's work, yet between two searches most trees do not change: a
scheduler asks again and again about the same compute nodes, and each of
its claims changes one of them.  So the worker keeps three things, each
valid only while what it was made from is unchanged:

*entries*
    a provider's inventories and traits.  Every write that changes them
    checks and bumps the provider's generation in the same transaction, so
    an entry stays good as long as the provider's generation (and uuid)
    is the one the search reads first.  That relies on ids never being
    reused: a provider deleted and created again under the same uuid starts
    again at the same generations (see migration 0002 for SQLite).  Entries are read after that
    generation, so at worst they are newer than it, and a newer generation
    then makes the next search read them again.
*trees*
    each :class:`.trees.Tree` as last built, with the state it was built
    from: its providers' ids, generations, parents, uuids, aggregates and
    usage, everything that may change without a generation bump included
    (aggregates written before microversion 1.19, re-parenting).  Every
    search reads that state afresh, as a text per bucket of trees; a tree
    whose state equals the kept one is the kept object itself, and a
    bucket text equal to one read before gives its trees at once
    (:mod:`.loader`).
*candidates*
    per recent query, the candidates built around each tree
    (:mod:`.reuse`).  Without sharing providers they depend on nothing but
    the query and the tree, so they hold for as long as the tree is the
    very object they were built from.

The provider list (:mod:`placement.objects.provider_filter`) keeps what
it read of each provider the same way, and judges its filters on the same
entries.

Resource class names are kept too, and everything but aggregate uuids
(which never change) is dropped when a class id turns up under another
name (renaming, before microversion 1.7).

One cache per database engine, shared by the requests of a worker
process; nothing in it is changed once made, so requests in threads may
share it.  Each worker holds its own: workers share nothing but the
database, which remains the one authority, read by every search.
"""

from __future__ import annotations

import collections
import threading
import weakref
from typing import Any, Hashable, NamedTuple

import sqlalchemy as sa

from placement.objects.candidates.trees import Inventory, TraitSet, Tree

# Providers kept per worker, in entries and in trees alike.  Beyond it the
# cache starts again from empty: it holds only what searches touch, so
# that happens only when providers come and go a great deal, or on
# deployments bigger than this.
MAX_ENTRIES = 100_000
# Lists of candidates kept (one per tree and query), over all queries;
# beyond it the queries least recently asked are forgotten.
MAX_CANDIDATE_LISTS = 50_000
# State texts kept per bucket of trees (see put_bucket).
TEXTS_PER_BUCKET = 4
# Queries whose candidates are kept.
MAX_QUERIES = 256
# Distinct aggregate sets kept.
MAX_AGGREGATE_SETS = 10_000


class Entry(NamedTuple):
    """A provider's inventories (with nothing used) and traits, as they
    were at ``generation``."""

    generation: int
    uuid: str
    inventories: dict[str, Inventory]
    traits: TraitSet


class ProviderCache:
    def __init__(self) -> None:
        self.entries: dict[int, Entry] = {}
        self.trees: dict[int, Tree] = {}
        # Bucket (see search.BUCKET) -> {state text: its trees}.
        self._buckets: dict[int, dict[str, tuple[Tree, ...]]] = {}
        # Provider id -> provider_filter.ListedProvider: what GET
        # /resource_providers read of it (see the listed property).
        self._listed: dict[int, Any] = {}
        self._tree_providers = 0
        self.candidates = QueryCandidates()
        self.aggregate_uuids: dict[int, str] = {}
        self.aggregate_sets: dict[tuple[int, ...], frozenset[str]] = {}
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

    def put_tree(self, tree: Tree) -> None:
        """Keep ``tree`` in place of the tree of the same root."""
        before = self.trees.get(tree.root_id)
        self._tree_providers += len(tree.providers) - (
            len(before.providers) if before is not None else 0)
        if self._tree_providers > MAX_ENTRIES:
            self._drop_trees()
            self._tree_providers = len(tree.providers)
        self.trees[tree.root_id] = tree

    def bucket_trees(self, bucket: int, text: str) -> tuple[Tree, ...] | None:
        """The trees of a bucket's state ``text`` (see
        :func:`.search.parse_states`), if that very text was read before."""
        texts = self._buckets.get(bucket)
        return None if texts is None else texts.get(text)

    def put_bucket(self, bucket: int, text: str, trees: tuple[Tree, ...]) -> None:
        """Keep the trees a bucket's state ``text`` gave.  A few texts per
        bucket: searches narrowed to other classes read other texts of
        the same bucket."""
        texts = self._buckets.setdefault(bucket, {})
        if len(texts) >= TEXTS_PER_BUCKET:
            texts.clear()
        texts[text] = trees

    def _drop_trees(self) -> None:
        self.trees, self._buckets = {}, {}
        self._tree_providers = 0
        self.candidates.clear()

    @property
    def listed(self) -> dict[int, Any]:
        """What the provider list keeps of each provider, to read and add
        to; started again when it holds more than MAX_ENTRIES."""
        if len(self._listed) > MAX_ENTRIES:
            self._listed = {}
        return self._listed

    def entry(self, generation: int, uuid: str,
              inventories: dict[str, Inventory], traits: TraitSet) -> Entry:
        """An entry whose inventories and traits are the very objects of
        earlier entries with equal ones: a fleet of like hosts then holds
        one copy, and the search decides once for all of them whether they
        fit (see :mod:`.choices`).  Trait sets are shared under the order
        they list their names in, so a shared one never lists them in
        another order than the provider's own."""
        shared = self._shared
        inventories = shared.setdefault(tuple(inventories.items()), inventories)
        return Entry(generation, uuid, inventories,
                     shared.setdefault(("traits", traits.listed), traits))

    def aggregate_set(self, ids: tuple[int, ...], uuids: list[str]
                      ) -> frozenset[str]:
        """The set of these aggregate uuids, kept under their ``ids`` and
        shared by the providers in them."""
        if len(self.aggregate_sets) >= MAX_AGGREGATE_SETS:
            self.aggregate_sets = {}
        found = self.aggregate_sets[ids] = frozenset(uuids)
        return found

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
        """Drop what names classes if a class known before has another
        name now."""
        known = self._class_names
        if any(known.get(class_id, name) != name
               for class_id, name in class_names.items()):
            self.entries, self._shared, self._listed = {}, {}, {}
            self._drop_trees()
        self._class_names = dict(class_names)


class QueryCandidates:
    """Per query, a dict of what :mod:`.reuse` keeps for each tree (by
    root id), for the queries asked most recently."""

    def __init__(self) -> None:
        self._by_query: collections.OrderedDict[Hashable, dict[int, Any]] = (
            collections.OrderedDict())
        self._lock = threading.Lock()

    def of(self, query: Hashable) -> dict[int, Any]:
        """The lists kept for ``query`` (to read and add to).  Forgets the
        queries asked least recently when more than MAX_CANDIDATE_LISTS
        lists, or more than MAX_QUERIES queries, are kept; a search adds at
        most one list per tree, so that bound is passed by one search's
        trees at most."""
        with self._lock:
            kept = self._by_query.get(query)
            if kept is None:
                kept = self._by_query[query] = {}
            else:
                self._by_query.move_to_end(query)
            total = sum(len(lists) for lists in self._by_query.values())
            while len(self._by_query) > 1 and (
                    total > MAX_CANDIDATE_LISTS or len(self._by_query) > MAX_QUERIES):
                _query, lists = self._by_query.popitem(last=False)
                total -= len(lists)
            if total > MAX_CANDIDATE_LISTS:
                kept.clear()
            return kept

    def clear(self) -> None:
        with self._lock:
            self._by_query = collections.OrderedDict()


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
