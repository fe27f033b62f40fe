"""The stores of what a worker keeps: :class:`Kept` and :data:`NOTHING`.

The package docstring (``placement/kept/__init__.py``) says what is kept,
why using it is safe, and the words used here.
"""

from __future__ import annotations

import collections
import itertools
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Hashable, NamedTuple

import sqlalchemy as sa

from placement.kept.keys import new_key

if TYPE_CHECKING:
    from placement.objects.candidates.trees import Inventory, TraitSet, Tree


# Providers kept per worker, in entries and in trees alike.  Beyond it the
# cache starts again from empty: it holds only what searches touch, so
# that happens only when providers come and go a great deal, or on
# deployments bigger than this.
MAX_ENTRIES = 100_000
# Lists of candidates kept (one per tree and query), over all queries;
# beyond either bound the queries least recently asked are forgotten, all
# but the one being asked, which keeps a list per tree however many trees
# there are (trees are bounded by MAX_ENTRIES).  Queries alike (a flavor
# pinned to one zone or another, with or without a trait) often give a tree
# equal lists: those are held once (QueryLists.keep), so the bound on
# memory is on distinct lists, and a query's list of a tree costs only a
# reference beyond them.  Measured on the churn workload (500 hosts, 40
# queries asked in turn, a sharing disk pool serving a tenth of them): at
# limit 1000 every query holds a list per tree, 20,000 references to some
# 2,600 distinct lists, and a worker's peak stays where 2,000 lists
# unshared took it (95 MB, below upstream's 96.5 MB; 50,000 unshared
# took it to 120 MB).  On bigger clouds the bounds grow with the trees
# kept (LISTS_PER_TREE, REFERENCES_PER_TREE): at 5,000 hosts and limit
# 1000 the fixed bounds made the queries forget each other's lists before
# they were asked again, and every search built its thousand lists anew
# (69.7 ms server CPU per scheduled instance; with 16,000 and 160,000,
# 36.1 ms, the worker's peak 132 -> 150 MB).
MAX_CANDIDATE_LISTS = 4_000
MAX_LIST_REFERENCES = 40_000
LISTS_PER_TREE = 3
REFERENCES_PER_TREE = 32
# State texts kept per bucket of trees (see put_bucket).
TEXTS_PER_BUCKET = 4
# Queries whose candidates are kept.
MAX_QUERIES = 256
# A bounded search reads pages of fitting trees while this many times its
# bound is at most the providers holding its classes (Kept.pages_pay).
PAGES_PAY_BELOW = 8
# Distinct aggregate sets kept.
MAX_AGGREGATE_SETS = 10_000
# Listed providers whose texts are kept beyond those kept (texts of
# providers since replaced): past it the texts start again.
SPARE_TEXTS = 4096


class Entry(NamedTuple):
    """A provider's inventories (with nothing used) and traits, as they
    were at ``generation``; ``inventory_key`` names the inventory dict,
    which like providers share (:meth:`Kept.entry`)."""

    generation: int
    uuid: str
    inventories: dict[str, Inventory]
    traits: TraitSet
    inventory_key: int


class Texts:
    """What responses wrote for kept objects: per object key (see
    :func:`placement.kept.keys.new_key`), per *shape* (what
    else the text depends on: the microversion's features, a mount point),
    one value that is never changed once put.  (Candidate lists hold
    their texts themselves, see
    :class:`placement.objects.candidates.reuse.CandidateList`.)"""

    def __init__(self) -> None:
        self._by_key: dict[int, dict[Hashable, Any]] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, key: int, shape: Hashable) -> Any:
        """What was put for ``key`` and ``shape``, else None."""
        shapes = self._by_key.get(key)
        return None if shapes is None else shapes.get(shape)

    def put(self, key: int, shape: Hashable, value: Any) -> None:
        shapes = self._by_key.get(key)
        # Replaced in one assignment: another thread's get sees the old
        # shapes or the new ones.
        self._by_key[key] = {shape: value} if shapes is None else {**shapes, shape: value}

    def forget(self, key: int) -> None:
        """Drop the texts of an object no longer kept."""
        self._by_key.pop(key, None)


# A provider's usage: (class id, used) pairs, sorted.
Usage = tuple[tuple[int, int], ...]


# What Kept.counts counts: ("hit" or "rebuild", kind), kinds being
# "entry", "tree" and "candidate_list".  Running totals in plain integers,
# read by the metrics after each request (placement.metrics.instruments).
Counts = collections.Counter


class Kept:
    """What one worker keeps of one database (see the package docstring)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[tuple[str, str]] = Counts()
        self.entries: dict[int, Entry] = {}
        # Provider id -> ((generation, removals) read before the usage was,
        # its usage as sorted (class id, used) pairs); see usage_of.
        self._usage: dict[int, tuple[tuple[int, int], Usage]] = {}
        self.trees: dict[int, Tree] = {}
        # Bucket (see search.BUCKET) -> {state text: its trees}.
        self._buckets: dict[int, dict[str, tuple[Tree, ...]]] = {}
        # Provider id -> provider_filter.ListedProvider: what GET
        # /resource_providers read of it (see the listed property).
        self._listed: dict[int, Any] = {}
        self._tree_providers = 0
        self.candidates = QueryCandidates(self.counts, lambda: len(self.trees))
        self._aggregate_uuids: dict[int, str] = {}
        self.aggregate_sets: dict[tuple[int, ...], frozenset[str]] = {}
        self._class_names: dict[int, str] = {}
        self._shared: dict[Any, Any] = {}
        # Providers in the trees holding each set of classes, and whether
        # a sharing provider was among them, at the last search for them
        # (see reads_everyone and shares).
        self._reach: dict[frozenset[str], tuple[int, bool]] = {}
        # Whether every tree was read as the worker started (see
        # read_every_tree).
        self._whole = False
        self._texts = Texts()

    def get(self, provider_id: int, generation: int, uuid: str) -> Entry | None:
        entry = self.entries.get(provider_id)
        if entry is None or entry.generation != generation or entry.uuid != uuid:
            return None
        self.counts["hit", "entry"] += 1
        return entry

    def put_entries(self, entries: dict[int, Entry]) -> None:
        """Keep these entries, by provider id."""
        self.counts["rebuild", "entry"] += len(entries)
        if len(self.entries) + len(entries) > MAX_ENTRIES:
            self.entries, self._shared = {}, {}
            if len(entries) > MAX_ENTRIES:
                entries = dict(itertools.islice(entries.items(), MAX_ENTRIES))
        self.entries.update(entries)

    def usage_of(self, provider_id: int, tag: tuple[int, int]) -> Usage | None:
        """A provider's usage as kept under ``tag``, its (generation,
        count of allocation removals) as a search has just read them;
        None when it was kept under another pair, or not at all."""
        kept = self._usage.get(provider_id)
        if kept is None or kept[0] != tag:
            return None
        return kept[1]

    def put_usages(self, usages: dict[int, tuple[tuple[int, int], Usage]]) -> None:
        """Keep providers' usage, by provider id, each with the ``tag`` it
        was read after (package docstring, rule 4), as ``(tag, usage)``."""
        if len(self._usage) + len(usages) > MAX_ENTRIES:
            self._usage = {}
            if len(usages) > MAX_ENTRIES:
                usages = dict(itertools.islice(usages.items(), MAX_ENTRIES))
        self._usage.update(usages)

    def put_tree(self, tree: Tree) -> None:
        """Keep ``tree`` in place of the tree of the same root."""
        self.counts["rebuild", "tree"] += 1
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
        trees = None if texts is None else texts.get(text)
        if trees is not None:
            self.counts["hit", "tree"] += len(trees)
        return trees

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
        self._whole = False
        self._tree_providers = 0
        self.candidates.clear()
        self._texts = Texts()

    @property
    def aggregate_uuids(self) -> dict[int, str]:
        """Aggregate uuids by id (they never change), to read and add to."""
        return self._aggregate_uuids

    @property
    def texts(self) -> Texts:
        """The texts responses wrote for kept listed providers, to read and
        add to; started again when they are held for many more providers
        than are kept (replaced ones leave theirs behind).  Trees and
        candidate lists hold their own."""
        if len(self._texts) > SPARE_TEXTS + 2 * len(self._listed):
            self._texts = Texts()
        return self._texts

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
        one copy, and the search decides once per inventory key and trait
        set for all of them whether they fit (see :mod:`.choices`).  Trait
        sets are shared under the order they list their names in, so a
        shared one never lists them in another order than the provider's
        own."""
        shared = self._shared
        content = tuple(inventories.items())
        interned = shared.get(content)
        if interned is None:
            interned = shared.setdefault(content, (inventories, new_key()))
        shared_inventories, inventory_key = interned
        return Entry(generation, uuid, shared_inventories,
                     shared.setdefault(("traits", traits.listed), traits),
                     inventory_key)

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
        if reach is not None:
            return reach[0] * 2 >= len(self.entries)
        if not self._whole:
            return False
        # No search asked for these classes yet, but every tree was read
        # at start: the kept ones tell how far the classes reach (on a
        # cloud of like hosts, that narrowing a first search by classes
        # would cost it more than reading every state, as it does later).
        return self._held(classes) * 2 >= len(self.entries)

    def pages_pay(self, classes: frozenset[str], bound: int) -> bool:
        """Whether a search for these classes taking at most ``bound``
        candidates had better ask the database for the trees where they
        fit, a page at a time, than read every state and judge the trees
        itself: it does unless the bound comes near the providers holding
        them (at the last such search, or among the trees read at start).

        The database sums the usage of every inventory of every tree it
        judges (about 20 us a tree on PostgreSQL, against 2 to 3 for a
        tree's state), and the pages double, so it judges up to twice the
        trees a bound of one candidate per tree needs: past a tenth or so
        of the trees that costs more than every state, which a worker
        compares with the ones it read before.  Nova asks for 1,000 at
        most: on a cloud of 1,000 flat hosts the pages took 20 of a
        search's 26 ms."""
        reach = self._reach.get(classes)
        if reach is not None:
            held = reach[0]
        elif self._whole:
            held = self._held(classes)
        else:
            return True
        return bound * PAGES_PAY_BELOW <= held

    def _held(self, classes: frozenset[str]) -> int:
        """Providers of the kept trees holding any of these classes."""
        return sum([len(tree.providers) for tree in self.trees.values()
                    if not classes.isdisjoint(tree.classes)])

    def read_every_tree(self) -> None:
        """Every tree was just read into this store, as a worker starts
        (:func:`placement.objects.candidates.warm`)."""
        self._whole = True

    def shares(self, classes: frozenset[str]) -> bool:
        """Whether the last search for these classes found a sharing
        provider in their trees: the next one had better read them all at
        once than ask the database whether it may read them a batch at a
        time (it may not while sharing providers take part; both give the
        same answer)."""
        reach = self._reach.get(classes)
        return reach is not None and reach[1]

    def reached(self, classes: frozenset[str], providers: int,
                sharing: bool = False) -> None:
        """A search for ``classes`` found ``providers`` in their trees,
        ``sharing`` providers among them or not."""
        if len(self._reach) > 1024:
            self._reach = {}
        self._reach[classes] = (providers, sharing)

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


class _SharedLists(weakref.WeakValueDictionary):  # type: ignore[type-arg]
    """Lists by content, held weakly.  ``setdefault`` looks the content up
    first: the standard one raises and catches a KeyError for every new
    content, which is every list of a worker's first search (a thousand
    on a cloud of a thousand hosts)."""

    def setdefault(self, key: Hashable, default: Any = None) -> Any:
        # ``data``: the dict of weak references every CPython version's
        # WeakValueDictionary keeps (its own get raises and catches too).
        ref = self.data.get(key)  # type: ignore[attr-defined]
        if ref is not None:
            found = ref()
            if found is not None:
                return found
        self[key] = default
        return default


class QueryCandidates:
    """Per query, a dict of what :mod:`.reuse` keeps for each tree (by
    root id), for the queries asked most recently; lists of equal content
    kept for several queries are one object (see :meth:`QueryLists.keep`)."""

    def __init__(self, counts: collections.Counter[tuple[str, str]] | None = None,
                 trees_kept: Callable[[], int] = lambda: 0) -> None:
        self._trees_kept = trees_kept
        self._by_query: collections.OrderedDict[Hashable, QueryLists] = (
            collections.OrderedDict())
        self._lock = threading.Lock()
        # Every list some query holds, under its content: a list no query
        # holds any more is gone from it.
        self._shared: weakref.WeakValueDictionary[Hashable, Any] = _SharedLists()
        # Distinct lists kept, at the last call of ``of`` (before what the
        # search then adds).
        self.lists = 0
        self._counts = Counts() if counts is None else counts

    def of(self, query: Hashable) -> QueryLists:
        """The lists kept for ``query`` (to read and add to).  Forgets the
        queries asked least recently when more than MAX_CANDIDATE_LISTS
        distinct lists, MAX_LIST_REFERENCES lists over all queries (or
        LISTS_PER_TREE and REFERENCES_PER_TREE times the trees kept, when
        more) or MAX_QUERIES queries are kept; the query asked is never
        forgotten by it: it holds at most one list per tree."""
        trees = self._trees_kept()
        max_lists = max(MAX_CANDIDATE_LISTS, LISTS_PER_TREE * trees)
        max_references = max(MAX_LIST_REFERENCES, REFERENCES_PER_TREE * trees)
        with self._lock:
            kept = self._by_query.get(query)
            if kept is None:
                kept = self._by_query[query] = QueryLists(self._counts, self._shared)
            else:
                self._by_query.move_to_end(query)
            total = sum(len(lists) for lists in self._by_query.values())
            while len(self._by_query) > 1 and (
                    len(self._shared) > max_lists
                    or total > max_references
                    or len(self._by_query) > MAX_QUERIES):
                # Its lists no other query holds leave _shared with it.
                total -= len(self._by_query.popitem(last=False)[1])
            self.lists = len(self._shared)
            return kept

    def clear(self) -> None:
        with self._lock:
            self._by_query = collections.OrderedDict()
            self.lists = 0


class QueryLists(dict[int, Any]):
    """One query's lists by root id, counting the lists reused and stored."""

    __slots__ = ("_counts", "_shared")

    def __init__(self, counts: collections.Counter[tuple[str, str]],
                 shared: weakref.WeakValueDictionary[Hashable, Any]) -> None:
        super().__init__()
        self._counts = counts
        self._shared = shared

    def count_reused(self, number: int) -> None:
        """Count ``number`` lists a search found holding and used again
        (counted per search, not per lookup: a search looks up every tree's)."""
        self._counts["hit", "candidate_list"] += number

    def keep(self, root_id: int, listed: Any, rebuilt: bool = True) -> Any:
        """Keep ``listed`` as the list of tree ``root_id``, or a list kept
        for another query whose ``content()`` is equal (same trees, same
        candidates): a text written for either serves both.  Returns the
        list kept.  ``rebuilt=False``: a kept list's candidates again
        (reuse's ``_moved_to``), counted when reused, not as rebuilt."""
        if rebuilt:
            self._counts["rebuild", "candidate_list"] += 1
        shared = self._shared.setdefault(listed.content(), listed)
        self[root_id] = shared
        return shared


class _Nothing(Kept):
    """Keeps nothing: every store is dropped, every lookup misses, every
    dict handed out to fill is a new one.  A search through it reads and
    works out everything afresh, as a worker's first search does."""

    def put_entries(self, entries: dict[int, Entry]) -> None:
        pass

    def usage_of(self, provider_id: int, tag: tuple[int, int]) -> Usage | None:
        return None

    def put_usages(self, usages: dict[int, tuple[tuple[int, int], Usage]]) -> None:
        pass

    def put_tree(self, tree: Tree) -> None:
        pass

    def put_bucket(self, bucket: int, text: str, trees: tuple[Tree, ...]) -> None:
        pass

    @property
    def aggregate_uuids(self) -> dict[int, str]:
        return {}

    @property
    def listed(self) -> dict[int, Any]:
        return {}

    @property
    def texts(self) -> Texts:
        return _NoTexts()

    def entry(self, generation: int, uuid: str,
              inventories: dict[str, Inventory], traits: TraitSet) -> Entry:
        return Entry(generation, uuid, inventories, traits, new_key())

    def aggregate_set(self, ids: tuple[int, ...], uuids: list[str]
                      ) -> frozenset[str]:
        return frozenset(uuids)

    def reads_everyone(self, classes: frozenset[str]) -> bool:
        return False

    def pages_pay(self, classes: frozenset[str], bound: int) -> bool:
        return True

    def read_every_tree(self) -> None:
        pass

    def shares(self, classes: frozenset[str]) -> bool:
        return False

    def reached(self, classes: frozenset[str], providers: int,
                sharing: bool = False) -> None:
        pass

    def check_class_names(self, class_names: dict[int, str]) -> None:
        pass


class _NoTexts(Texts):
    def put(self, key: int, shape: Hashable, value: Any) -> None:
        pass


class _NoCandidates(QueryCandidates):
    def of(self, query: Hashable) -> QueryLists:
        return QueryLists(Counts(), weakref.WeakValueDictionary())


NOTHING: Kept = _Nothing()
NOTHING.candidates = _NoCandidates()

_KEPT: weakref.WeakKeyDictionary[sa.engine.Engine, Kept] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def of(engine: sa.engine.Engine) -> Kept:
    """What this worker keeps of the database ``engine`` reaches."""
    kept = _KEPT.get(engine)
    if kept is None:
        with _LOCK:
            kept = _KEPT.setdefault(engine, Kept())
    return kept
