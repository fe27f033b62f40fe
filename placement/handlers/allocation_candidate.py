"""Handler for ``GET /allocation_candidates`` (1.10+).

Answers ``{"allocation_requests": [...], "provider_summaries": {...}}``:
each allocation request can be sent as is to ``PUT /allocations/{consumer}``
and the summaries describe the providers involved.

Microversion changes of the response:

* 1.12: ``allocations`` of a request is a dict keyed by provider uuid
  instead of a list of ``{"resource_provider": {"uuid"}, "resources"}``.
* 1.17: summaries list the provider's ``traits``.
* 1.27: summaries show every inventory of the provider, not only the
  requested classes.
* 1.29: candidates may combine several providers of a tree (before, one
  provider of a tree plus sharing providers); summaries carry
  ``parent_provider_uuid`` and ``root_provider_uuid`` and cover every
  provider of the trees involved.
* 1.34: each request has ``mappings``: request group suffix to the uuids
  of the providers satisfying that group.

The query parameters and their versions are in
:mod:`placement.schemas.allocation_candidate` and
:mod:`placement.request_groups`.
"""

from __future__ import annotations

import json
import re

import webob

from placement import errors, exceptions, policies, request_groups, responses
from placement.memo import remembered
from placement.objects import candidates
from placement.objects.candidates import collector, summary, trees
from placement.request import PlacementRequest
from placement.schemas import allocation_candidate as schemas

DICT_ALLOCATIONS_SINCE = (1, 12)
TRAITS_SINCE = (1, 17)
ALL_INVENTORIES_SINCE = (1, 27)
NESTED_SINCE = (1, 29)
MAPPINGS_SINCE = (1, 34)


def list_allocation_candidates(req: PlacementRequest) -> webob.Response:
    """GET /allocation_candidates: 200 with candidates (maybe none); 400 for
    a malformed query or unknown classes and traits."""
    req.authorize(policies.allocation_candidate.LIST)
    req.query(schemas.QUERY)
    query = request_groups.parse(req.GET.items(), req.version)
    with collector.paused():
        body = _search_and_render(req, query)
    return responses.json(req, None, body=body)


def _search_and_render(req: PlacementRequest,
                       query: request_groups.CandidateQuery) -> list[bytes]:
    """The response body; what the search held is freed on return, before
    the collector is back on (it would otherwise scan it all once more)."""
    config = req.ctx.config
    assert config is not None
    options = config.placement
    try:
        found = candidates.find(
            req.ctx, query, kept=req.ctx.kept,
            randomize=options.randomize_allocation_candidates,
            max_candidates=options.max_allocation_candidates,
            strategy=options.allocation_candidates_generation_strategy,
            nested=req.version >= NESTED_SINCE)
    except exceptions.ResourceClassNotFound as exc:
        raise errors.BadRequest(
            "Invalid resource class in resources parameter: %s" % exc) from None
    except exceptions.TraitNotFound as exc:
        raise errors.BadRequest(str(exc)) from None
    return render_candidates(found, req.version)


def render_candidates(found: candidates.Candidates, version: tuple[int, int]
                      ) -> list[bytes]:
    """The response body, written as JSON text directly, in parts.

    Responses run to megabytes, and building dicts only to serialise them
    costs more than the search itself; so the text is assembled from
    fragments, with the spacing of Python's ``json.dumps`` defaults that
    Placement's responses have (clients compare their sizes).  The parts
    are sent one after the other rather than joined into one more copy.

    The search hands back the same candidate lists and trees for what has
    not changed since an earlier request (see candidates.reuse), and the
    text of each is kept in their memo (see placement.memo): a scheduler
    asking the same question again mostly pays for reading the database.
    """
    quoted = _UuidTexts(found.forest)
    requests = _request_texts(found, quoted, version)
    if version >= NESTED_SINCE:
        summaries = _tree_summary_texts(found, quoted)
    else:
        requested = (None if version >= ALL_INVENTORIES_SINCE
                     else set(found.query.resource_class_names))
        writer = _SummaryWriter(quoted, requested, version)
        summaries = [writer.text(p).encode()
                     for p in summary.providers_shown(found)]
    return [b'{"allocation_requests": [', b", ".join(requests),
            b'], "provider_summaries": {', b", ".join(summaries), b"}}"]


def _request_texts(found: candidates.Candidates, quoted: _UuidTexts,
                   version: tuple[int, int]) -> list[bytes]:
    """The text of each chosen candidate, from its list's memo when an
    earlier request of the same query wrote it."""
    suffixes = [_text(group.suffix) for group in found.query.groups]
    key = ("allocation requests", version >= DICT_ALLOCATIONS_SINCE,
           version >= MAPPINGS_SINCE)
    texts = []
    for listed, index in found.chosen:
        kept = remembered(listed, key, _unwritten)
        text = kept[index]
        if text is None:
            text = kept[index] = render_request(
                listed.combinations[index], suffixes, quoted, version).encode()
        texts.append(text)
    return texts


def _unwritten(listed: candidates.CandidateList) -> list[bytes | None]:
    """A list's texts, none written yet (each is written when first shown)."""
    return [None] * len(listed.combinations)


# Summaries look the same at every microversion from 1.29 (traits since
# 1.17, every inventory since 1.27): one text per tree serves them all.
_TREE_SUMMARY = "provider summaries since 1.29"


def _tree_summary_texts(found: candidates.Candidates, quoted: _UuidTexts
                        ) -> list[bytes]:
    """The summaries of every provider of each tree used (1.29+), a text
    per tree, from the tree's memo when an earlier request wrote it."""
    writers: list[_SummaryWriter] = []

    def written(tree: candidates.Tree) -> bytes:
        if not writers:
            writers.append(_SummaryWriter(quoted, None, NESTED_SINCE))
        return ", ".join([writers[0].text(p) for p in tree.providers]).encode()

    return [remembered(tree, _TREE_SUMMARY, written)
            for tree in summary.trees_shown(found)]


_SAFE_UUID = re.compile(r"^[0-9a-fA-F-]*$")


# Class and trait names as JSON string literals: names repeat in every
# request, so each is encoded once (bounded by _text).
_NAME_TEXTS: dict[str, str] = {}


def _text(value: str) -> str:
    """A JSON string literal, remembered in _NAME_TEXTS."""
    text = json.dumps(value)
    if len(_NAME_TEXTS) < 4096:
        _NAME_TEXTS[value] = text
    return text


class _UuidTexts(dict):  # type: ignore[type-arg]
    """Provider id -> its uuid as a JSON string literal, made on first use."""

    def __init__(self, forest: candidates.Forest) -> None:
        super().__init__()
        self.providers = forest.providers

    def __missing__(self, provider_id: int) -> str:
        uuid = self.providers[provider_id].uuid
        text = '"%s"' % uuid if _SAFE_UUID.match(uuid) else json.dumps(uuid)
        self[provider_id] = text
        return text


# The inside of a "resources" object by its (class, amount) pairs: the same
# few recur in every allocation request of a response.
_RESOURCES_TEXTS: dict[tuple[tuple[str, int], ...], str] = {}


def _resources_text(key: tuple[tuple[str, int], ...]) -> str:
    """``"VCPU": 1, "DISK_GB": 10`` for these (class, amount) pairs."""
    text = _RESOURCES_TEXTS.get(key)
    if text is None:
        names = _NAME_TEXTS
        text = ", ".join(["%s: %s" % (names.get(name) or _text(name), amount)
                          for name, amount in key])
        if len(_RESOURCES_TEXTS) < 4096:
            _RESOURCES_TEXTS[key] = text
    return text


def render_request(combination: candidates.Combination, suffixes: list[str],
                   quoted: _UuidTexts, version: tuple[int, int]) -> str:
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
    nested deployments), hence the version checks made once, and
    resources and trait texts made once per request for each inventory
    dict and trait set: like providers share those objects (see
    placement.kept), so they are looked up by identity, all of them
    staying alive while this runs.
    """

    def __init__(self, quoted: _UuidTexts, requested: set[str] | None,
                 version: tuple[int, int]) -> None:
        self.quoted = quoted
        self.requested = requested
        self.with_traits = version >= TRAITS_SINCE
        self.with_tree = version >= NESTED_SINCE
        self.inventory_texts: dict[tuple[str, candidates.Inventory], str] = {}
        self.resources_texts: dict[int, str] = {}
        self.trait_texts: dict[int, str] = {}

    def text(self, provider: candidates.Provider) -> str:
        names = _NAME_TEXTS
        inventories = provider.inventories
        resources = self.resources_texts.get(id(inventories))
        if resources is None:
            parts = []
            for item in inventories.items():
                text = self.inventory_texts.get(item)
                if text is None:
                    name, inventory = item
                    if self.requested is not None and name not in self.requested:
                        text = ""
                    else:
                        text = '%s: {"capacity": %s, "used": %s}' % (
                            names.get(name) or _text(name), inventory.capacity,
                            inventory.used)
                    self.inventory_texts[item] = text
                if text:
                    parts.append(text)
            resources = self.resources_texts[id(inventories)] = ", ".join(parts)
        quoted = self.quoted
        text = '%s: {"resources": {%s}' % (quoted[provider.id], resources)
        if self.with_traits:
            traits = provider.traits
            traits_text = self.trait_texts.get(id(traits))
            if traits_text is None:
                traits_text = self.trait_texts[id(traits)] = ', "traits": [%s]' % (
                    ", ".join([names.get(name) or _text(name)
                               for name in trees.listed_traits(traits)]))
            text += traits_text
        if self.with_tree:
            parent = provider.parent_id
            text += ', "parent_provider_uuid": %s, "root_provider_uuid": %s}' % (
                "null" if parent is None else quoted[parent],
                quoted[provider.root_id])
        else:
            text += "}"
        return text
