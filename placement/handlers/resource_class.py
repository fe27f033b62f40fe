"""Handlers for /resource_classes and /resource_classes/{name} (1.2+).

A class is shown as ``{"name": ..., "links": [{"rel": "self", "href": ...}]}``.
Standard classes are listed and shown like custom ones but cannot be
changed; only ``CUSTOM_`` classes can be created, renamed or deleted.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import webob

from placement import errors, exceptions, policies, responses
from placement.objects import resource_class
from placement.request import PlacementRequest, validate
from placement.schemas import resource_class as schemas

# PUT changed meaning at 1.7: from renaming a class to creating one.
PUT_CREATES_SINCE = (1, 7)


def class_url(req: PlacementRequest, name: str) -> str:
    return "%s/resource_classes/%s" % (req.script_name, quote(name))


def render_class(req: PlacementRequest, rc: resource_class.ResourceClass
                 ) -> dict[str, Any]:
    return {"name": rc.name,
            "links": [{"rel": "self", "href": class_url(req, rc.name)}]}


def list_resource_classes(req: PlacementRequest) -> webob.Response:
    """GET /resource_classes: every class, standard ones first."""
    req.authorize(policies.resource_class.LIST)
    classes = resource_class.get_all(req.ctx)
    body = {"resource_classes": [render_class(req, rc) for rc in classes]}
    stamps = (rc.updated_at or rc.created_at for rc in classes)
    return responses.json(req, body, last_modified=responses.newest(stamps))


def create_resource_class(req: PlacementRequest) -> webob.Response:
    """POST /resource_classes {"name": "CUSTOM_..."}: 201 with a Location.

    409 when a class of that name exists.
    """
    req.require_json()
    req.authorize(policies.resource_class.CREATE)
    name = req.json_body(schemas.CREATE)["name"]
    try:
        resource_class.create(req.ctx, name)
    except exceptions.ResourceClassExists:
        raise errors.Conflict(
            "Conflicting resource class already exists: %s" % name) from None
    return responses.created(class_url(req, name))


def show_resource_class(req: PlacementRequest) -> webob.Response:
    """GET /resource_classes/{name}: the class, or 404."""
    req.authorize(policies.resource_class.SHOW)
    rc = _get(req, req.urlvars["name"])
    return responses.json(req, render_class(req, rc),
                          last_modified=rc.updated_at or rc.created_at)


def update_resource_class(req: PlacementRequest) -> webob.Response:
    """PUT /resource_classes/{name}.

    1.2-1.6: rename a custom class to the body's ``{"name": ...}``; 200 with
    the renamed class.  1.7+: create the custom class ``name`` if it does not
    exist (201) or confirm it does (204); no body either way.
    """
    req.authorize(policies.resource_class.UPDATE)
    name = req.urlvars["name"]
    if req.version >= PUT_CREATES_SINCE:
        return _ensure_class(req, name)
    new_name = req.json_body(schemas.RENAME)["name"]
    try:
        rc = resource_class.rename(req.ctx, name, new_name)
    except exceptions.ResourceClassCannotUpdateStandard:
        raise errors.BadRequest(
            "Cannot update standard resource class %s" % name) from None
    except exceptions.ResourceClassExists:
        raise errors.Conflict(
            "Resource class already exists: %s" % new_name) from None
    except exceptions.ResourceClassNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None
    return responses.json(req, render_class(req, rc))


def delete_resource_class(req: PlacementRequest) -> webob.Response:
    """DELETE /resource_classes/{name}: 204.

    400 for a standard class, 409 while inventory or allocations use it.
    """
    req.authorize(policies.resource_class.DELETE)
    name = req.urlvars["name"]
    try:
        resource_class.delete(req.ctx, name)
    except exceptions.ResourceClassNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None
    except exceptions.ResourceClassCannotDeleteStandard as exc:
        raise errors.BadRequest(
            "Error in delete resource class: %s" % exc) from None
    except exceptions.ResourceClassInUse as exc:
        raise errors.Conflict(
            "Error in delete resource class: %s" % exc) from None
    return responses.no_content()


def _get(req: PlacementRequest, name: str) -> resource_class.ResourceClass:
    try:
        return resource_class.get_by_name(req.ctx, name)
    except exceptions.ResourceClassNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None


def _ensure_class(req: PlacementRequest, name: str) -> webob.Response:
    # The name is validated as the body of a POST would be, so a bad name
    # gets the same "JSON does not validate" message.
    validate({"name": name}, schemas.NAMED, "JSON does not validate")
    _rc, created = resource_class.ensure(req.ctx, name)
    location = class_url(req, name)
    if created:
        return responses.created(location)
    resp = responses.no_content()
    resp.headers["Location"] = location
    return resp
