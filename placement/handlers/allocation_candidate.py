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

from typing import Any

import webob

from placement import errors, exceptions, policies, request_groups, responses
from placement.objects import candidates
from placement.objects.candidates import summary
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
    config = req.ctx.config
    assert config is not None
    options = config.placement
    try:
        found = candidates.find(
            req.ctx, query,
            randomize=options.randomize_allocation_candidates,
            max_candidates=options.max_allocation_candidates,
            strategy=options.allocation_candidates_generation_strategy,
            nested=req.version >= NESTED_SINCE)
    except exceptions.ResourceClassNotFound as exc:
        raise errors.BadRequest(
            "Invalid resource class in resources parameter: %s" % exc) from None
    except exceptions.TraitNotFound as exc:
        raise errors.BadRequest(str(exc)) from None
    return responses.json(req, None, body=responses.dumps(
        render_candidates(found, req.version)))


def render_candidates(found: candidates.Candidates, version: tuple[int, int]
                      ) -> dict[str, Any]:
    forest = found.forest
    uuids = {pid: p.uuid for pid, p in forest.providers.items()}
    suffixes = [group.suffix for group in found.query.groups]
    requests = [render_request(combination, suffixes, uuids, version)
                for combination in found.combinations]
    shown = summary.summarised(forest, found.combinations,
                               whole_trees=version >= NESTED_SINCE)
    requested = (None if version >= ALL_INVENTORIES_SINCE
                 else set(found.query.resource_class_names))
    summaries = {p.uuid: render_summary(p, uuids, requested, version)
                 for p in shown}
    return {"allocation_requests": requests, "provider_summaries": summaries}


def render_request(combination: candidates.Combination, suffixes: list[str],
                   uuids: dict[int, str], version: tuple[int, int]
                   ) -> dict[str, Any]:
    merged = summary.allocations(combination)
    body: dict[str, Any]
    if version >= DICT_ALLOCATIONS_SINCE:
        body = {"allocations": {uuids[pid]: {"resources": resources}
                                for pid, resources in merged.items()}}
    else:
        body = {"allocations": [
            {"resource_provider": {"uuid": uuids[pid]}, "resources": resources}
            for pid, resources in merged.items()]}
    if version >= MAPPINGS_SINCE:
        body["mappings"] = {
            suffix: [uuids[pid] for pid in choice.providers]
            for suffix, choice in zip(suffixes, combination, strict=True)}
    return body


def render_summary(provider: candidates.Provider, uuids: dict[int, str],
                   requested: set[str] | None, version: tuple[int, int]
                   ) -> dict[str, Any]:
    body: dict[str, Any] = {"resources": {
        name: {"capacity": inventory.capacity, "used": inventory.used}
        for name, inventory in provider.inventories.items()
        if requested is None or name in requested}}
    if version >= TRAITS_SINCE:
        body["traits"] = sorted(provider.traits)
    if version >= NESTED_SINCE:
        body["parent_provider_uuid"] = (
            uuids[provider.parent_id] if provider.parent_id is not None else None)
        body["root_provider_uuid"] = uuids[provider.root_id]
    return body
