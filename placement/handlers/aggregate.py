"""Handlers for /resource_providers/{uuid}/aggregates (1.1+).

1.1-1.18: GET answers ``{"aggregates": [uuid, ...]}`` and PUT takes a bare
list of uuids; the provider's generation is neither checked nor changed.
1.19+: both answers add ``resource_provider_generation``; PUT takes
``{"aggregates": [...], "resource_provider_generation": N}``, answers 409
``placement.concurrent_update`` when N is stale and bumps the generation.
"""

from __future__ import annotations

from typing import Any

import webob

from placement import errors, exceptions, policies, responses
from placement.objects import aggregate
from placement.request import PlacementRequest
from placement.schemas import aggregate as schemas

GENERATION_SINCE = (1, 19)
_GENERATION_CHANGED = ("Resource provider's generation already changed. "
                       "Please update the generation and try again.")


def render_aggregates(found: aggregate.ProviderAggregates,
                      version: tuple[int, int]) -> dict[str, Any]:
    body: dict[str, Any] = {"aggregates": found.aggregates}
    if version >= GENERATION_SINCE:
        body["resource_provider_generation"] = found.generation
    return body


def list_aggregates(req: PlacementRequest) -> webob.Response:
    """GET /resource_providers/{uuid}/aggregates; 404 for an unknown provider."""
    req.authorize(policies.aggregate.LIST)
    return _render(req, _provider_aggregates(req))


def set_aggregates(req: PlacementRequest) -> webob.Response:
    """PUT /resource_providers/{uuid}/aggregates: replace the provider's
    aggregates; 200 with the new list (see the module for the versions).
    """
    req.require_json()
    req.authorize(policies.aggregate.UPDATE)
    try:
        body = req.json_body(schemas.SET_AGGREGATES)
    except errors.BadRequest:
        # An unknown provider is reported before a bad body.
        _provider_aggregates(req)
        raise
    if req.version >= GENERATION_SINCE:
        uuids, expected = body["aggregates"], body["resource_provider_generation"]
    else:
        uuids, expected = body, None
    try:
        found = aggregate.set_for_provider(req.ctx, req.urlvars["uuid"], uuids,
                                           expected)
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None
    except exceptions.ProviderConcurrentUpdate:
        raise errors.Conflict(_GENERATION_CHANGED,
                              code=errors.CONCURRENT_UPDATE) from None
    return _render(req, found)


def _provider_aggregates(req: PlacementRequest) -> aggregate.ProviderAggregates:
    try:
        return aggregate.get_for_provider(req.ctx, req.urlvars["uuid"])
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None


def _render(req: PlacementRequest, found: aggregate.ProviderAggregates
            ) -> webob.Response:
    # Placement records no time for an aggregate or a membership, so the
    # last-modified time (1.15+) is the time of the response.
    return responses.json(req, render_aggregates(found, req.version))
