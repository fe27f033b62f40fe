"""Handlers for usages: ``/resource_providers/{uuid}/usages`` and ``/usages``.

Usages are sums computed on request, so their Last-Modified (1.15) is
always now.
"""

from __future__ import annotations

from typing import Any, Sequence

import webob

from placement import errors, exceptions, policies, responses
from placement.objects import usage
from placement.request import PlacementRequest
from placement.schemas import usage as schemas

CONSUMER_TYPES_SINCE = (1, 38)


def render_usages_by_type(groups: Sequence[usage.TypeUsage]) -> dict[str, Any]:
    return {"usages": {group.consumer_type: _with_count(group) for group in groups}}


def _with_count(group: usage.TypeUsage) -> dict[str, int]:
    """A type's usages with ``consumer_count`` second, after the first
    class, where Placement's answers have it (it sets the count while
    adding the first class, and adds the other classes after it)."""
    items = list(group.usages.items())
    return dict(items[:1] + [("consumer_count", group.consumer_count)] + items[1:])


def list_provider_usages(req: PlacementRequest) -> webob.Response:
    """GET /resource_providers/{uuid}/usages: ``{class: used}`` for every
    class the provider has inventory of, with its generation; 404 for an
    unknown provider."""
    req.authorize(policies.usage.PROVIDER_USAGES)
    uuid = req.urlvars["uuid"]
    try:
        generation, usages = usage.get_provider_usages(req.ctx, uuid)
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(
            "No resource provider with uuid %s found: %s" % (uuid, exc)) from None
    return responses.json(
        req, {"resource_provider_generation": generation, "usages": usages})


def get_total_usages(req: PlacementRequest) -> webob.Response:
    """GET /usages?project_id=&user_id= (1.9): usage of a project (and user).

    From 1.38 the usages are grouped by consumer type, each group with its
    ``consumer_count``; ``consumer_type=`` picks one type, ``all`` (one
    group over every type) or ``unknown`` (consumers without a type).
    """
    # The policy target names the project asked about, so that a policy can
    # let members of a project see their own usage.
    req.authorize(policies.usage.TOTAL_USAGES,
                  {"project_id": req.GET.get("project_id")})
    query = req.query(schemas.TOTAL_USAGES_QUERY)
    project_id, user_id = query["project_id"], query.get("user_id")
    if req.version < CONSUMER_TYPES_SINCE:
        body: dict[str, Any] = {
            "usages": usage.get_project_usages(req.ctx, project_id, user_id)}
    else:
        body = render_usages_by_type(usage.get_project_usages_by_type(
            req.ctx, project_id, user_id, query.get("consumer_type")))
    return responses.json(req, body)
