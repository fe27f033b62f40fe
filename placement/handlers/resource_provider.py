"""Handlers for ``/resource_providers`` and ``/resource_providers/{uuid}``.

Each handler: authorize, parse, call ``objects.resource_provider``, map its
exceptions to API errors, render with
:func:`placement.rendering.resource_providers.render_provider`.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import webob

from placement import errors, exceptions, policies, querystring, responses
from placement.objects import provider_filter
from placement.objects import resource_provider as rp_obj
from placement.rendering.resource_providers import listed_body, render_provider
from placement.request import PlacementRequest
from placement.routes import provider_url
from placement.schemas import resource_provider as schemas

CREATE_RETURNS_BODY_SINCE = (1, 20)
REPARENTING_SINCE = (1, 37)


def _modified(provider: rp_obj.ResourceProvider) -> Any:
    return provider.updated_at or provider.created_at


def _filters(req: PlacementRequest) -> provider_filter.ProviderFilters:
    """The list filters of the query string; 400 for malformed values."""
    params = req.query(schemas.LIST_QUERY)
    member_of, forbidden_aggs = querystring.member_of(
        req.GET.getall("member_of"), req.version)
    required, forbidden_traits = querystring.required_traits(
        req.GET.getall("required"), req.version)
    resources = {}
    if "resources" in params:
        resources = querystring.resources(params["resources"])
    return provider_filter.ProviderFilters(
        name=params.get("name"), uuid=params.get("uuid"),
        in_tree=params.get("in_tree"), member_of=member_of,
        forbidden_aggs=forbidden_aggs, required_traits=required,
        forbidden_traits=forbidden_traits, resources=resources)


def list_providers(req: PlacementRequest) -> webob.Response:
    """GET /resource_providers: providers matching the query's filters.

    name, uuid; member_of (1.3, repeated 1.24, ``!`` 1.32); resources
    (1.4); in_tree (1.14); required (1.18, ``!`` 1.22, ``in:`` and repeated
    1.39).  Unknown classes or traits are 400.
    """
    req.authorize(policies.resource_provider.LIST)
    filters = _filters(req)
    try:
        listed = provider_filter.list_providers(req.ctx, filters, kept=req.ctx.kept)
    except exceptions.ResourceClassNotFound as exc:
        raise errors.BadRequest(
            "Invalid resource class in resources parameter: %s" % exc) from None
    except exceptions.TraitNotFound as exc:
        raise errors.BadRequest(
            'Invalid trait(s) in "required" parameter: %s' % exc) from None
    return responses.json(
        req, None, body=listed_body(listed, req.version, req.script_name, req.ctx.kept.texts),
        last_modified=responses.newest([known.modified for known in listed]))


def create_provider(req: PlacementRequest) -> webob.Response:
    """POST /resource_providers: create a provider.

    201 with a Location and no body before 1.20; from 1.20, 200 with the
    provider (and the Location).  1.14 accepts ``parent_provider_uuid``.
    409 ``placement.duplicate_name`` when the name or uuid is taken.
    """
    req.require_json()
    req.authorize(policies.resource_provider.CREATE)
    data = req.json_body(schemas.CREATE)
    # A uuid sent without dashes is stored (and shown) in the usual form.
    uuid = str(uuidlib.UUID(data["uuid"])) if data.get("uuid") \
        else str(uuidlib.uuid4())
    try:
        provider = rp_obj.create(req.ctx, data["name"], uuid,
                                 data.get("parent_provider_uuid"))
    except exceptions.ProviderExists as exc:
        raise errors.Conflict(str(exc), code=errors.DUPLICATE_NAME) from None
    except exceptions.ProviderTreeInvalid as exc:
        raise errors.BadRequest('Unable to create resource provider "%s", %s: %s'
                                % (data["name"], uuid, exc)) from None
    location = req.script_name + provider_url(provider.uuid)
    if req.version < CREATE_RETURNS_BODY_SINCE:
        return responses.created(location)
    return responses.json(req, render_provider(provider, req.version, req.script_name),
                          last_modified=_modified(provider), location=location)


def show_provider(req: PlacementRequest) -> webob.Response:
    """GET /resource_providers/{uuid}: one provider, 404 if unknown."""
    req.authorize(policies.resource_provider.SHOW)
    provider = _get(req)
    return responses.json(req, render_provider(provider, req.version, req.script_name),
                          last_modified=_modified(provider))


def _get(req: PlacementRequest) -> rp_obj.ResourceProvider:
    try:
        return rp_obj.get_by_uuid(req.ctx, req.urlvars["uuid"])
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None


def update_provider(req: PlacementRequest) -> webob.Response:
    """PUT /resource_providers/{uuid}: rename, and (1.14) set the parent.

    Before 1.37 a provider that has a parent cannot change or drop it (400);
    from 1.37 it can, but not to a provider in its own subtree.  The
    generation does not change.  409 ``placement.duplicate_name``.
    """
    req.require_json()
    req.authorize(policies.resource_provider.UPDATE)
    uuid = _get(req).uuid
    data = req.json_body(schemas.UPDATE)
    try:
        provider = rp_obj.update(
            req.ctx, uuid, data["name"],
            data.get("parent_provider_uuid", rp_obj.UNSET),
            allow_reparenting=req.version >= REPARENTING_SINCE)
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None
    except exceptions.ProviderExists:
        raise errors.Conflict(
            "Conflicting resource provider %s already exists." % data["name"],
            code=errors.DUPLICATE_NAME) from None
    except exceptions.ProviderTreeInvalid as exc:
        raise errors.BadRequest(
            "Unable to save resource provider %s: %s" % (uuid, exc)) from None
    return responses.json(req, render_provider(provider, req.version, req.script_name),
                          last_modified=provider.updated_at)


def delete_provider(req: PlacementRequest) -> webob.Response:
    """DELETE /resource_providers/{uuid}: 204.

    409 ``placement.resource_provider.cannot_delete_parent`` when it has
    children, ``placement.resource_provider.inuse`` when it has allocations.
    """
    req.authorize(policies.resource_provider.DELETE)
    uuid = req.urlvars["uuid"]
    try:
        rp_obj.delete(req.ctx, uuid)
    except exceptions.ProviderNotFound:
        raise errors.NotFound(
            "No resource provider with uuid %s found for delete" % uuid) from None
    except exceptions.ProviderHasChildren:
        raise errors.Conflict(
            "Unable to delete parent resource provider %s: It has child "
            "resource providers." % uuid,
            code=errors.PROVIDER_CANNOT_DELETE_PARENT) from None
    except exceptions.ProviderInUse as exc:
        raise errors.Conflict(
            "Unable to delete resource provider %s: %s" % (uuid, exc),
            code=errors.PROVIDER_IN_USE) from None
    return responses.no_content()
