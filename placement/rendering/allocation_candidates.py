"""The JSON text of ``GET /allocation_candidates``.

``{"allocation_requests": [...], "provider_summaries": {...}}``, written
in parts that are sent one after the other rather than joined into one
more copy.  Microversion changes of the document:

* 1.12: ``allocations`` of a request is a dict keyed by provider uuid
  instead of a list of ``{"resource_provider": {"uuid"}, "resources"}``.
* 1.17: summaries list the provider's ``traits``.
* 1.27: summaries show every inventory of the provider, not only the
  requested classes.
* 1.29: summaries carry ``parent_provider_uuid`` and
  ``root_provider_uuid`` and cover every provider of the trees involved.
* 1.34: each request has ``mappings``: request group suffix to the uuids
  of the providers satisfying that group.

The search hands back the same candidate lists and trees for what has not
changed since an earlier request (:mod:`placement.objects.candidates.reuse`);
each kept list holds the texts written for it, and each kept tree the
text of its summaries, so a scheduler asking the same question again
mostly pays for reading the database.
"""

from __future__ import annotations

import functools
import json
import re

from placement.objects import candidates
from placement.objects.candidates import summary, trees
from placement.rendering import joined

DICT_ALLOCATIONS_SINCE = (1, 12)
TRAITS_SINCE = (1, 17)
ALL_INVENTORIES_SINCE = (1, 27)
NESTED_SINCE = (1, 29)
MAPPINGS_SINCE = (1, 34)

# What the text of a candidate list depends on besides the list: whether
# allocations are a dict, whether requests have mappings, and the group
# suffixes mappings name (a list may serve several queries).
_REQUESTS = "allocation requests"

def body(found: candidates.Candidates, version: tuple[int, int]) -> list[bytes]:
    """The response body for ``found`` at ``version``, in parts; the texts
    of kept trees and lists are taken from them, or written and kept
    there (:attr:`placement.objects.candidates.Tree.summaries`,
    :attr:`placement.objects.candidates.CandidateList.texts`)."""
    quoted = _UuidTexts(found.forest)
    requests = _request_texts(found, quoted, version)
    if version >= NESTED_SINCE:
        summaries = _summaries_of(summary.trees_shown(found), quoted)
    else:
        requested = (None if version >= ALL_INVENTORIES_SINCE
                     else set(found.query.resource_class_names))
        writer = _SummaryWriter(quoted, requested, version)
        summaries = [writer.text(p).encode()
                     for p in summary.providers_shown(found)]
    return [b'{"allocation_requests": [', *joined(requests),
            b'], "provider_summaries": {', *joined(summaries), b"}}"]


def _request_texts(found: candidates.Candidates, quoted: _UuidTexts,
                   version: tuple[int, int]) -> list[bytes]:
    """The text of each chosen candidate: of a kept list, all its texts
    are written when first needed and kept with the list."""
    suffixes = [_text(group.suffix) for group in found.query.groups]
    # A string: its hash is computed once, not at every lookup.
    shape = "%s, dict %s, mappings %s, suffixes %s" % (
        _REQUESTS, version >= DICT_ALLOCATIONS_SINCE, version >= MAPPINGS_SINCE,
        ", ".join(suffixes))
    written = []
    # A list's candidates come one after the other: its texts are looked
    # up once for all of them.  (Taking them as a slice per list costs
    # more than it saves where most lists hold one candidate.)
    previous: candidates.CandidateList | None = None
    listed_texts: tuple[bytes, ...] = ()
    for listed, index in found.chosen:
        if not listed.kept:
            quoted.writing = listed.trees
            written.append(request(listed.combinations[index], suffixes, quoted,
                                   version).encode())
            continue
        if listed is not previous:
            previous = listed
            shapes = listed.texts
            found_texts = None if shapes is None else shapes.get(shape)
            if found_texts is None:
                quoted.writing = listed.trees
                found_texts = tuple([
                    request(combination, suffixes, quoted, version).encode()
                    for combination in listed.combinations])
                # One assignment: another thread sees the old texts or
                # the new ones.
                listed.texts = ({shape: found_texts} if shapes is None
                                else {**shapes, shape: found_texts})
            listed_texts = found_texts
        written.append(listed_texts[index])
    return written


def keep_tree_summaries(shown: list[candidates.Tree]) -> None:
    """Write the summaries text (1.29+) of each of these trees, as a worker
    starts (see :func:`placement.app.warm`): the text of a tree is the
    same whatever the query and microversion from 1.29, so a first search
    finds those of the trees it uses written."""
    _summaries_of(shown, _UuidTexts(candidates.Forest(shown)))


def _summaries_of(shown: list[candidates.Tree], quoted: _UuidTexts) -> list[bytes]:
    """The summaries of every provider of each tree (1.29+), a text per
    tree, kept with the tree (:attr:`placement.objects.candidates.Tree.summaries`:
    an attribute read per tree, where a lookup by key in the worker's
    texts cost a search of a thousand candidates 0.4 ms)."""
    written = []
    writer = None
    for tree in shown:
        text = tree.summaries
        if text is None:
            quoted.writing = (tree,)
            if writer is None:
                writer = _SummaryWriter(quoted, None, NESTED_SINCE)
            text = tree.summaries = ", ".join(
                [writer.text(p) for p in tree.providers]).encode()
        written.append(text)
    return written


_SAFE_UUID = re.compile(r"^[0-9a-fA-F-]*$")


# Class, trait and suffix names repeat in every request: each is encoded once.
@functools.lru_cache(maxsize=4096)
def _text(value: str) -> str:
    """A JSON string literal."""
    return json.dumps(value)


class _UuidTexts(dict):  # type: ignore[type-arg]
    """Provider id -> its uuid as a JSON string literal, made on first use.

    Texts are written for the providers of a few trees at a time (a new
    list's, a tree's summaries), named in :attr:`writing`: a uuid missing
    is looked for among their providers first, so that the forest of the
    whole answer need not index its providers (hundreds of trees) for the
    few trees that changed since the last search.  A tree of many
    providers is left to that index (looked through, each of its
    providers would cost a scan)."""

    def __init__(self, forest: candidates.Forest) -> None:
        super().__init__()
        self.forest = forest
        self.writing: tuple[candidates.Tree, ...] = ()

    def __missing__(self, provider_id: int) -> str:
        for tree in self.writing:
            if len(tree.providers) <= _SCANNED_TREE:
                for provider in tree.providers:
                    if provider.id == provider_id:
                        text = self[provider_id] = _quote(provider.uuid)
                        return text
        text = self[provider_id] = _quote(self.forest.providers[provider_id].uuid)
        return text


# Providers of a tree :class:`_UuidTexts` looks through.
_SCANNED_TREE = 16


def _quote(uuid: str) -> str:
    return '"%s"' % uuid if _SAFE_UUID.match(uuid) else json.dumps(uuid)


# The inside of a "resources" object by its (class, amount) pairs: the same
# few recur in every allocation request of a response.
@functools.lru_cache(maxsize=4096)
def _resources_text(pairs: tuple[tuple[str, int], ...]) -> str:
    """``"VCPU": 1, "DISK_GB": 10`` for these (class, amount) pairs."""
    return ", ".join(["%s: %s" % (_text(name), amount) for name, amount in pairs])


def request(combination: candidates.Combination, suffixes: list[str],
            quoted: _UuidTexts, version: tuple[int, int]) -> str:
    """One allocation request: ``suffixes`` are the JSON texts of the
    query's group suffixes, in group order."""
    if len(combination) == 1 and version >= DICT_ALLOCATIONS_SINCE:
        choice, = combination
        if len(choice.providers) == 1:
            # One group served by one provider (every candidate of a flat
            # deployment): its classes are distinct, nothing to merge.
            uuid = quoted[choice.providers[0]]
            resources = _resources_text(tuple([a[1:] for a in choice.allocations]))
            if version < MAPPINGS_SINCE:
                return '{"allocations": {%s: {"resources": {%s}}}}' % (uuid, resources)
            return ('{"allocations": {%s: {"resources": {%s}}}, "mappings": {%s: [%s]}}'
                    % (uuid, resources, suffixes[0], uuid))
    merged = summary.allocations(combination)
    if version >= DICT_ALLOCATIONS_SINCE:
        allocations = "{%s}" % ", ".join([
            '%s: {"resources": {%s}}' % (quoted[pid], _resources_text(tuple(resources.items())))
            for pid, resources in merged.items()])
    else:
        allocations = "[%s]" % ", ".join([
            '{"resource_provider": {"uuid": %s}, "resources": {%s}}'
            % (quoted[pid], _resources_text(tuple(resources.items())))
            for pid, resources in merged.items()])
    if version < MAPPINGS_SINCE:
        return '{"allocations": %s}' % allocations
    mappings = ", ".join([
        "%s: [%s]" % (suffix, ", ".join([quoted[pid] for pid in choice.providers]))
        for suffix, choice in zip(suffixes, combination, strict=True)])
    return '{"allocations": %s, "mappings": {%s}}' % (allocations, mappings)


class _SummaryWriter:
    """Writes one ``"uuid": {...}`` summary text per provider.

    Runs over every provider of the trees involved (tens of thousands on
    nested deployments), hence the version checks made once, and the
    resources and traits texts made once per request for each inventory
    key and trait set, which like providers share (see
    :attr:`placement.objects.candidates.trees.Provider.inventory_key`).
    Equal trait sets list their names in the same order (trait id order,
    which cannot change while a provider has the trait), so one text
    serves them all.
    """

    def __init__(self, quoted: _UuidTexts, requested: set[str] | None,
                 version: tuple[int, int]) -> None:
        self.quoted = quoted
        self.requested = requested
        self.with_traits = version >= TRAITS_SINCE
        self.with_tree = version >= NESTED_SINCE
        self.inventory_texts: dict[tuple[str, candidates.Inventory], str] = {}
        self.resources_texts: dict[int, str] = {}
        self.trait_texts: dict[frozenset[str], str] = {}

    def _resources(self, inventories: dict[str, candidates.Inventory]) -> str:
        parts = []
        for item in inventories.items():
            text = self.inventory_texts.get(item)
            if text is None:
                name, inventory = item
                if self.requested is not None and name not in self.requested:
                    text = ""
                else:
                    text = '%s: {"capacity": %s, "used": %s}' % (
                        _text(name), inventory.capacity, inventory.used)
                self.inventory_texts[item] = text
            if text:
                parts.append(text)
        return ", ".join(parts)

    def text(self, provider: candidates.Provider) -> str:
        resources = self.resources_texts.get(provider.inventory_key)
        if resources is None:
            resources = self.resources_texts[provider.inventory_key] = (
                self._resources(provider.inventories))
        quoted = self.quoted
        text = '%s: {"resources": {%s}' % (quoted[provider.id], resources)
        if self.with_traits:
            traits = provider.traits
            traits_text = self.trait_texts.get(traits)
            if traits_text is None:
                traits_text = self.trait_texts[traits] = ', "traits": [%s]' % (
                    ", ".join([_text(name) for name in trees.listed_traits(traits)]))
            text += traits_text
        if self.with_tree:
            parent = provider.parent_id
            text += ', "parent_provider_uuid": %s, "root_provider_uuid": %s}' % (
                "null" if parent is None else quoted[parent],
                quoted[provider.root_id])
        else:
            text += "}"
        return text
