"""Reading trees for a candidate search, reusing what the worker holds.

A search reads the state of the trees that may take part (one query, one
text per bucket of trees, :mod:`.search`) and turns each into a
:class:`Tree`:

* a tree whose state equals the one the worker read last time is that
  same :class:`Tree` object, with its providers and everything derived
  from it (:mod:`placement.kept` says why that is safe); a bucket's text equal to
  one read before gives its trees at once, without being taken apart;
* any other tree is built afresh, its providers' inventories and traits
  coming from the worker's entries when their generation and uuid still
  match, and their usage from what the worker keeps when their
  generation and count of allocation removals still match; what is
  missing of both is read for all such providers at once, in one more
  query (in two when the lists are too long to share a statement:
  :meth:`Loader.entries`, :meth:`Loader.usages`).

A bounded search (a ``limit``, no sharing provider) reads which trees
fit and their states in one query, a page at a time
(:meth:`Loader.fitting_trees`).

When the last search for the same classes found them in most trees, the
state of every tree is read instead of asking the database to narrow
them, and the trees without those classes are dropped here: narrowing
then costs the database more than it saves.  Sharing providers bring in
the trees sharing their aggregates: from the trees read when every tree
was, else in one or two more queries.
"""

from __future__ import annotations

import operator
from typing import Any, Iterable, Iterator, Sequence

import sqlalchemy as sa

from placement import exceptions
from placement.kept import Entry, Kept
from placement.kept.store import Usage
from placement.objects import resource_class as rc_obj
from placement.objects.candidates import reuse, search
from placement.objects.candidates.trees import Inventory, Provider, TraitSet, Tree
from placement.query import CandidateQuery

_NO_AGGREGATES: frozenset[str] = frozenset()

# Trees read by the first batch; each further batch is twice as large.
FIRST_BATCH = 16
# From how many providers, none of them held, entries are read by whole
# trees (by their roots, or every provider's) rather than by provider id
# (Loader.entries).
READ_BY_TREES = 256


class QueryTrees:
    """The read step of a candidate search: the trees a query may use, and
    the candidate lists the worker kept for the query.

    Made in a read transaction; checks the names the query uses first
    (ResourceClassNotFound, TraitNotFound).  ``kept`` is the worker's
    memory (:mod:`placement.kept`): unchanged trees come from it, and
    :attr:`lists` are its lists for this query, for
    :func:`.reuse.candidates` to take and add to.
    """

    def __init__(self, conn: sa.engine.Connection, query: CandidateQuery,
                 nested: bool, kept: Kept, bound: int | None = None) -> None:
        wanted = frozenset(query.resource_class_names)
        # A search taking at most ``bound`` candidates may read its trees a
        # batch at a time unless sharing providers may take part (or took
        # part in the last search for these classes: asking again would
        # likely cost for nothing), or the bound is large next to how far
        # the classes reach (Kept.pages_pay).
        may_batch = (bound is not None and bool(wanted) and not kept.shares(wanted)
                     and kept.pages_pay(wanted, bound))
        names = search.check_names(conn, sorted(_trait_names(query)),
                                   sorted(wanted) if may_batch else None)
        classes = names.classes
        _check_names(query, classes, names.traits)
        self.conn = conn
        self.loader = Loader(conn, classes, kept)
        self.lists = kept.candidates.of(reuse.query_key(query, nested))
        self._amounts = [(classes[name], amount) for group in query.groups
                         for name, amount in group.resources]
        self._class_ids = [classes[name] for name in query.resource_class_names]
        self._batched = may_batch and names.shared is False
        self._relevant: list[Tree] | None = None

    def relevant_trees(self) -> list[Tree]:
        """Every tree that may take part, by root id (read once)."""
        if self._relevant is None:
            self._relevant = self.loader.relevant_trees(self._class_ids)
        return self._relevant

    def batches(self) -> Iterator[list[Tree]]:
        """The trees of the roots where the requested amounts fit, a batch
        at a time, in root order, each read when it is needed: a small
        limit reads few trees whatever the size of the deployment.  Same
        candidates, in the same order, as :meth:`relevant_trees` would
        give (at once when the search was not made ``bounded``, or when
        sharing providers may take part)."""
        if not self._batched:
            yield self.relevant_trees()
            return
        size = FIRST_BATCH
        trees = self.loader.fitting_trees(self._amounts, size)
        while trees:
            yield trees
            if len(trees) < size:
                return
            size *= 2
            trees = self.loader.fitting_trees(self._amounts, size, trees[-1].root_id)


def _trait_names(query: CandidateQuery) -> set[str]:
    names = set(query.root_required | query.root_forbidden)
    for group in query.groups:
        names |= group.trait_names
    return names


def _check_names(query: CandidateQuery, classes: dict[str, int],
                 traits: dict[str, int]) -> None:
    # The first unknown class in request order, then every unknown trait:
    # root_required's before the groups'.
    for name in query.resource_class_names:
        if name not in classes:
            raise exceptions.ResourceClassNotFound(name=name)
    for names in [query.root_required | query.root_forbidden] + [
            group.trait_names for group in query.groups]:
        missing = sorted(names - set(traits))
        if missing:
            raise exceptions.TraitNotFound(names=", ".join(missing))


class Loader:
    """Reads trees into :class:`Tree` objects for one search, through the
    worker's :class:`placement.kept.Kept`."""

    def __init__(self, conn: sa.engine.Connection, classes: dict[str, int],
                 kept: Kept) -> None:
        self.conn = conn
        self.class_names = {class_id: name for name, class_id in classes.items()}
        self.cache = kept
        self.cache.check_class_names(self.class_names)

    def class_name(self, class_id: int) -> str:
        """The name of a class, reading the classes again for one created
        since :func:`.search.check_names` (a writer may have added it, with
        inventory or allocations, while this search ran)."""
        name = self.class_names.get(class_id)
        if name is None:
            self.class_names = rc_obj.names_by_id(self.conn)
            self.cache.check_class_names(self.class_names)
            name = self.class_names[class_id]
        return name

    def relevant_trees(self, class_ids: Sequence[int]) -> list[Tree]:
        """Every tree that may take part in a candidate, by root id.

        Those are the trees with inventory of a requested class and, when
        some of their providers share inventory, the trees in the same
        aggregates.
        """
        wanted = frozenset(self.class_name(class_id) for class_id in class_ids)
        everyone: list[Tree] | None = None
        if self.cache.reads_everyone(wanted):
            everyone = self.trees({search.EVERYONE: []})
            trees = [tree for tree in everyone if not wanted.isdisjoint(tree.classes)]
        else:
            trees = self.trees({"class_ids": sorted(set(class_ids))})
        sharing = [p for tree in trees if tree.sharing
                   for p in tree.providers if p.is_sharing]
        self.cache.reached(wanted, sum(len(tree.providers) for tree in trees),
                           bool(sharing))
        if sharing:
            known = {tree.root_id for tree in trees}
            if everyone is not None:
                # Every tree was read: those sharing an aggregate with a
                # sharing provider are among them, as the database would
                # name them (search.sharing_neighbour_roots).
                shared = frozenset().union(*[p.aggregates for p in sharing])
                trees += [tree for tree in everyone if tree.root_id not in known
                          and not shared.isdisjoint(tree.aggregates)]
            else:
                more = [root for root in search.sharing_neighbour_roots(
                    self.conn, [p.id for p in sharing]) if root not in known]
                for chunk in search.chunks(sorted(more)):
                    trees += self.trees({"root_ids": chunk})
            trees.sort(key=operator.attrgetter("root_id"))
        return trees

    def fitting_trees(self, amounts: Sequence[tuple[int, int]], count: int,
                      after: int | None = None) -> list[Tree]:
        """The first ``count`` trees (after root ``after``) where each
        ``(class id, amount)`` fits on some provider, in root id order (see
        :func:`.search.fitting_states`)."""
        return self._trees(search.fitting_states(self.conn, amounts, count, after))

    def trees(self, params: dict[str, list[int]]) -> list[Tree]:
        """The trees ``params`` names (see :func:`.search.fetch`), in root id
        order: the worker's own where their state is unchanged."""
        return self._trees(search.fetch(self.conn, "states", params),
                           everyone=search.EVERYONE in params)

    def _trees(self, rows: list[tuple[Any, ...]], everyone: bool = False) -> list[Tree]:
        """The trees of these ``states`` rows, in root id order, read
        ``everyone`` at once or not."""
        rows.sort()
        cache = self.cache
        # Per bucket: its trees as kept (with None), or none yet and its
        # trees by root, None for a tree whose state changed (in ``changed``).
        buckets: list[tuple[tuple[Tree, ...], int, str, dict[int, Tree | None] | None]] = []
        changed: list[search.State] = []
        for bucket, count, text in rows:
            known = cache.bucket_trees(bucket, text)
            if known is not None:
                buckets.append((known, bucket, text, None))
                continue
            # Equal to no text taken apart before: the trees of this
            # bucket are compared one by one.
            compared: dict[int, Tree | None] = {}
            for root, state in search.parse_states(count, text).items():
                kept = cache.trees.get(root)
                if kept is not None and kept.state == state:
                    compared[root] = kept
                else:
                    compared[root] = None
                    changed.append(state)
            buckets.append(((), bucket, text, compared))
        built: dict[int, Tree] = {}
        if changed:
            # Every changed tree of every bucket at once: one read of the
            # entries they lack, not one per bucket.
            built = {tree.root_id: tree for tree in self._build(changed, everyone)}
        keep = cache.names_classes_as(self.class_names)
        found: list[Tree] = []
        for known, bucket, text, trees in buckets:
            if trees is None:
                found += known
                continue
            ordered = tuple([built[root] if tree is None else tree
                             for root, tree in sorted(trees.items())])
            if keep:
                for tree in ordered:
                    if tree.root_id in built:
                        cache.put_tree(tree)
                cache.put_bucket(bucket, text, ordered)
            found += ordered
        return found

    def _build(self, states: list[search.State], everyone: bool) -> list[Tree]:
        """Trees made from their states (see :func:`.search.parse_states`),
        of ``everyone``'s states or not."""
        rows = [row for state in states for row in state]
        whole: list[dict[str, list[int]]]
        if everyone:
            whole = [{search.EVERYONE: []}]
        else:
            # By their roots: the database need not find the trees again.
            whole = [{"root_ids": chunk} for chunk in search.chunks(
                sorted([state[0][search.ROOT] for state in states]))]
        kept_usage, stale_usage = self._kept_usage(
            [(row[search.ID], row[search.GENERATION], row[search.REMOVALS])
             for row in rows])
        # Usage the entries' read brought along, by provider (see entries).
        usage_read: dict[int, list[tuple[int, int]]] = {}
        entries = self.entries([(row[search.ID], row[search.GENERATION], row[search.UUID])
                                for row in rows], whole, usage_read, sorted(stale_usage))
        usages = self.usages(kept_usage, stale_usage, usage_read)
        aggregate_sets = self._aggregate_sets(rows)
        trees = []
        for state in states:
            providers = []
            for (provider_id, _generation, parent_id, root_id, uuid, aggregates,
                 _removals) in state:
                entry = entries[provider_id]
                usage = usages[provider_id]
                if usage:
                    # A dict of its own, under a key of its own.
                    inventories = self.with_usage(entry.inventories, usage)
                    inventory_key = None
                else:
                    inventories, inventory_key = entry.inventories, entry.inventory_key
                providers.append(Provider(
                    provider_id, uuid, parent_id, root_id, inventories,
                    entry.traits,
                    aggregate_sets[aggregates] if aggregates else _NO_AGGREGATES,
                    inventory_key))
            trees.append(Tree(providers, state))
        return trees

    def with_usage(self, inventories: dict[str, Inventory],
                   usage: Iterable[tuple[int, int]]) -> dict[str, Inventory]:
        """A copy of a provider's ``inventories`` with the ``(class id,
        used)`` pairs of its usage applied (entries are shared by like
        providers, so they hold none)."""
        inventories = dict(inventories)
        for class_id, used in usage:
            name = self.class_name(class_id)
            inventory = inventories.get(name)
            if inventory is not None:
                inventories[name] = inventory._replace(used=used)
        return inventories

    def _kept_usage(self, providers: Iterable[tuple[int, int, int]]
                    ) -> tuple[dict[int, Usage], dict[int, tuple[int, int]]]:
        """Of each ``(id, generation, removals)`` read in the states, the
        usage the worker kept under that generation and count of removals;
        and the (generation, removals) of the others, whose usage is to be
        read."""
        usage_of = self.cache.usage_of
        found: dict[int, Usage] = {}
        stale: dict[int, tuple[int, int]] = {}
        for provider_id, generation, removals in providers:
            usage = usage_of(provider_id, (generation, removals))
            if usage is None:
                stale[provider_id] = (generation, removals)
            else:
                found[provider_id] = usage
        return found, stale

    def usages(self, found: dict[int, Usage], stale: dict[int, tuple[int, int]],
               read_before: dict[int, list[tuple[int, int]]]) -> dict[int, Usage]:
        """The usage, sorted ``(class id, used)`` pairs, of the providers
        :meth:`_kept_usage` sorted into ``found`` and ``stale``: the latter's
        read now (after the states, so at worst newer than the pair it is
        kept under: :mod:`placement.kept`, rule 4), but for those in
        ``read_before``, whose ``(class id, used)`` pairs were read with
        their entries, after these pairs too (see :meth:`entries`)."""
        cache = self.cache
        read = read_before
        for chunk in search.chunks(sorted(p for p in stale if p not in read)):
            for provider_id, class_id, used in search.fetch(
                    self.conn, "usage", {"provider_ids": chunk}):
                read.setdefault(provider_id, []).append((class_id, used))
        usages = {provider_id: tuple(sorted(read[provider_id])) if provider_id in read
                  else () for provider_id in stale}
        cache.put_usages({provider_id: (stale[provider_id], usage)
                          for provider_id, usage in usages.items()})
        found.update(usages)
        return found

    def entries(self, providers: Iterable[tuple[int, int, str]],
                whole: list[dict[str, list[int]]] | None = None,
                usage: dict[int, list[tuple[int, int]]] | None = None,
                usage_of: Sequence[int] = ()) -> dict[int, Entry]:
        """The entry (inventories and traits) of each ``(id, generation,
        uuid)``: the worker's own, read afresh where it is missing or older
        than that generation.

        ``whole`` are parameters (see :func:`.search.fetch`) reading the
        whole trees of these providers.  When the worker holds none of
        many providers (its first search), their entries are read by them
        rather than by listing every provider id, each distinct row once
        with the ids of the providers having it: the statements and what
        they send stay small; and, given a ``usage`` dict to fill, the
        providers' usage too, in the same round trip: each provider read
        gets its ``(class id, used)`` pairs there.  Else, given a
        ``usage`` dict, the usage of the providers ``usage_of`` comes with
        the entries read by provider id, in the same round trip, when both
        lists fit in one statement (after a claim: the claimed provider's
        entry and usage).
        """
        cache = self.cache
        found: dict[int, Entry] = {}
        stale: dict[int, tuple[int, str]] = {}
        for provider_id, generation, uuid in providers:
            entry = cache.get(provider_id, generation, uuid)
            if entry is None:
                stale[provider_id] = (generation, uuid)
            else:
                found[provider_id] = entry
        kind = "entries"
        if whole is not None and not found and len(stale) >= READ_BY_TREES:
            reads, kind = whole, search.TREES_ENTRIES
            if usage is not None and search.EVERYONE not in whole[0]:
                # By roots: their usage comes along, under negated
                # provider ids (see search._trees_entries).
                usage.update({p: [] for p in stale})
        else:
            reads = [{"provider_ids": chunk} for chunk in search.chunks(sorted(stale))]
            if (usage is not None and usage_of and len(reads) == 1
                    and len(usage_of) <= search.CHUNK):
                kind = search.ENTRIES_AND_USAGE
                reads[0][search.USAGE_OF] = list(usage_of)
                usage.update({p: [] for p in usage_of})
        # Each provider's rows, but for its id.  Providers created since
        # their states were read may turn up in a read of whole trees:
        # they are not asked for, and skipped.
        rows_of: dict[int, list[tuple[Any, ...]]] = {p: [] for p in stale}
        for params in reads:
            fetched = search.fetch(self.conn, kind, params)
            if kind == search.TREES_ENTRIES:
                fetched = search.spread_entries(fetched, rows_of)
            for row in fetched:
                mine = rows_of.get(row[0])
                if mine is not None:
                    mine.append(row[1:])
                elif row[0] < 0 and usage is not None:
                    # (-provider id, class id, used, ...): a usage row.
                    used = usage.get(-row[0])
                    if used is not None:
                        used.append(row[1:3])
        # Like providers (a fleet of identical hosts) read equal rows: the
        # inventories and traits are made once for all of them.
        make_tuple = tuple.__new__
        made: dict[tuple[Any, ...], Entry] = {}
        read: dict[int, Entry] = {}
        for provider_id, (generation, uuid) in stale.items():
            rows = tuple(rows_of[provider_id])
            like = made.get(rows)
            if like is None:
                read[provider_id] = made[rows] = self._entry(generation, uuid, rows)
            else:
                # tuple.__new__ directly: Entry's own is a Python-level
                # call, and this loop runs once per provider.
                read[provider_id] = make_tuple(Entry, (
                    generation, uuid, like.inventories, like.traits, like.inventory_key))
        if cache.names_classes_as(self.class_names):
            cache.put_entries(read)
        found.update(read)
        return found

    def _entry(self, generation: int, uuid: str, rows: Iterable[tuple[Any, ...]]
               ) -> Entry:
        """The entry of a provider read at ``generation`` with these
        ``entries`` rows (without the provider id, see
        :func:`.search._entries`), in any order: summaries list inventories
        by class id and traits by trait id."""
        inventory_rows = sorted([row for row in rows if row[search.ENTRY_TRAIT] is None])
        inventories = {
            self.class_name(row[search.ENTRY_ID]): Inventory._make(
                (*row[search.ENTRY_INVENTORY], 0))
            for row in inventory_rows}
        traits = [(row[search.ENTRY_ID], row[search.ENTRY_TRAIT])
                  for row in rows if row[search.ENTRY_TRAIT] is not None]
        return self.cache.entry(generation, uuid, inventories, TraitSet.by_id(traits))

    def _aggregate_sets(self, rows: list[tuple[Any, ...]]
                        ) -> dict[tuple[int, ...], frozenset[str]]:
        """The aggregate uuids of each tuple of aggregate ids among ``rows``.
        Like providers share one set, as they share inventory dicts and
        trait sets (:meth:`placement.kept.Kept.entry`)."""
        cache = self.cache
        found: dict[tuple[int, ...], frozenset[str]] = {}
        missing = []
        for ids in {row[search.AGGREGATES] for row in rows}:
            if not ids:
                continue
            known = cache.aggregate_sets.get(ids)
            if known is None:
                missing.append(ids)
            else:
                found[ids] = known
        if missing:
            uuids = cache.aggregate_uuids
            unknown = {a for ids in missing for a in ids} - uuids.keys()
            if unknown:
                uuids.update(search.aggregate_uuids(self.conn, sorted(unknown)))
            for ids in missing:
                found[ids] = cache.aggregate_set(ids, [uuids[a] for a in ids])
        return found
