"""Handler for ``GET /allocation_candidates`` (1.10+).

Answers ``{"allocation_requests": [...], "provider_summaries": {...}}``:
each allocation request can be sent as is to ``PUT /allocations/{consumer}``
and the summaries describe the providers involved.  From microversion
1.29 a candidate may take several providers of one tree (before, one
provider of a tree plus sharing providers).

How the answer changes with the microversion, and how its text is
written: :mod:`placement.rendering.allocation_candidates`.

The query parameters and their versions are in
:mod:`placement.schemas.allocation_candidate` and
:mod:`placement.request_groups`.
"""

from __future__ import annotations

import webob

from placement import (errors, exceptions, microversion, policies, request,
                       request_groups, responses)
from placement.objects import candidates
from placement.objects.candidates import collector
from placement.rendering import allocation_candidates as rendering
from placement.request import PlacementRequest
from placement.schemas import allocation_candidate as schemas


def prepare() -> None:
    """Ready the query's checks of the newest microversion (the one a
    worker's first search most likely asks at) before any request."""
    schema = schemas.QUERY.at(microversion.MAX_VERSION)
    assert schema is not None
    request.prepare(schema, {
        "resources": "VCPU:1", "required": "X", "member_of": "in:x",
        "in_tree": "x", "resources_A": "VCPU:1", "limit": "1",
        "group_policy": "none", "root_required": "X", "same_subtree": "_A"})


def list_allocation_candidates(req: PlacementRequest) -> webob.Response:
    """GET /allocation_candidates: 200 with candidates (maybe none); 400 for
    a malformed query or unknown classes and traits."""
    req.authorize(policies.allocation_candidate.LIST)
    req.query(schemas.QUERY)
    query = request_groups.parse(req.GET.items(), req.version)
    # The collector comes back on once the response is sent (see
    # collector.AfterSending): the client has its answer a collector's pass
    # over the search's objects sooner.
    resume = collector.pause()
    try:
        parts = _search_and_render(req, query)
    except BaseException:
        resume()
        raise
    return responses.json(req, None, body=collector.AfterSending(parts, resume))


def _search_and_render(req: PlacementRequest,
                       query: request_groups.CandidateQuery) -> list[bytes]:
    """The response body; what the search held is freed on return, before
    the body is sent (it is no longer needed) and before the collector is
    back on (it would otherwise scan it all once more)."""
    config = req.ctx.config
    assert config is not None
    options = config.placement
    try:
        found = candidates.find(
            req.ctx, query, kept=req.ctx.kept,
            randomize=options.randomize_allocation_candidates,
            max_candidates=options.max_allocation_candidates,
            strategy=options.allocation_candidates_generation_strategy,
            nested=req.version >= rendering.NESTED_SINCE)
    except exceptions.ResourceClassNotFound as exc:
        raise errors.BadRequest(
            "Invalid resource class in resources parameter: %s" % exc) from None
    except exceptions.TraitNotFound as exc:
        raise errors.BadRequest(str(exc)) from None
    return rendering.body(found, req.version)
