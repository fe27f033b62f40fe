"""Handlers for ``/resource_providers/{uuid}/inventories[/{resource_class}]``.

Each handler: authorize, find the provider (404), parse the body, check
capacity, call ``objects.inventory``, map its exceptions, render.  Written
inventories are rendered as the client sent them (with defaults filled
in), together with the provider's new generation.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Mapping

import webob

from placement import errors, exceptions, policies, responses
from placement.objects import inventory as inv_obj
from placement.objects import resource_provider as rp_obj
from placement.request import PlacementRequest
from placement.routes import provider_url
from placement.schemas import inventory as schemas

# From 1.26 reserved may equal total (an inventory with no free capacity).
RESERVED_EQUALS_TOTAL_SINCE = (1, 26)
_FIELD_NAMES = [field.name for field in dataclasses.fields(inv_obj.InventoryFields)]


def render_inventory(fields: inv_obj.InventoryFields, generation: int | None = None
                     ) -> dict[str, Any]:
    data: dict[str, Any] = {name: getattr(fields, name) for name in _FIELD_NAMES}
    # As Placement does, a generation of 0 is left out of single inventories.
    if generation:
        data["resource_provider_generation"] = generation
    return data


def render_inventories(inventories: Mapping[str, inv_obj.InventoryFields],
                       generation: int) -> dict[str, Any]:
    return {
        "resource_provider_generation": generation,
        "inventories": {rc: render_inventory(fields)
                        for rc, fields in inventories.items()},
    }


def _inventories_response(req: PlacementRequest,
                          inventories: Mapping[str, inv_obj.InventoryFields],
                          generation: int, last_modified: Any) -> webob.Response:
    resp = responses.json(req, render_inventories(inventories, generation),
                          last_modified=last_modified)
    if not inventories:
        # Placement dates an inventory list by its inventories only: with
        # none there is no Last-Modified (Cache-Control stays, from 1.15).
        resp.headers.pop("Last-Modified", None)
    return resp


def _fields(data: Mapping[str, Any]) -> inv_obj.InventoryFields:
    return inv_obj.InventoryFields(
        **{name: data[name] for name in _FIELD_NAMES if name in data})


def _check_capacity(req: PlacementRequest, provider: rp_obj.ResourceProvider,
                    inventories: Mapping[str, inv_obj.InventoryFields]) -> None:
    """Refuse inventories without capacity; the wording says which rule."""
    for resource_class, fields in inventories.items():
        if req.version >= RESERVED_EQUALS_TOTAL_SINCE:
            if fields.capacity < 0:
                raise exceptions.Invalid(
                    "Invalid inventory for '%s' on resource provider '%s'. The "
                    "reserved value is greater than total."
                    % (resource_class, provider.uuid))
        elif fields.capacity <= 0:
            raise exceptions.Invalid(
                "Invalid inventory for '%s' on resource provider '%s'. The "
                "reserved value is greater than or equal to total."
                % (resource_class, provider.uuid))


def _provider(req: PlacementRequest, detail: str | None = None
              ) -> rp_obj.ResourceProvider:
    """The provider of the URL; 404 worded as ``detail``, or (without one)
    in the lookup's own words and without Vary, as Placement's writes let
    that lookup's error escape their handlers."""
    try:
        return rp_obj.get_by_uuid(req.ctx, req.urlvars["uuid"])
    except exceptions.ProviderNotFound as exc:
        if detail is None:
            raise errors.NotFound(str(exc), vary=False) from None
        raise errors.NotFound(detail.format(
            uuid=req.urlvars["uuid"], error=exc)) from None


# The lookups for listing name the uuid twice, as Placement's do.
_LIST_NOT_FOUND = "No resource provider with uuid {uuid} found : {error}"


def _inventory_url(req: PlacementRequest, uuid: str, resource_class: str) -> str:
    return "%s%s/inventories/%s" % (req.script_name, provider_url(uuid),
                                    resource_class)


def _newest(inventories: Iterable[inv_obj.Inventory]) -> Any:
    return responses.newest(i.updated_at or i.created_at for i in inventories)


def _stored_inventories(req: PlacementRequest) -> tuple[int, dict[str, inv_obj.Inventory]]:
    """The URL's provider's generation and inventories; 404 worded as the
    lookup for listing words it."""
    uuid = req.urlvars["uuid"]
    try:
        return inv_obj.get_all_by_provider_uuid(req.ctx, uuid)
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(_LIST_NOT_FOUND.format(uuid=uuid, error=exc)) from None


def list_inventories(req: PlacementRequest) -> webob.Response:
    """GET .../inventories: every inventory of the provider, by class."""
    req.authorize(policies.inventory.LIST)
    generation, inventories = _stored_inventories(req)
    return _inventories_response(req, inventories, generation,
                                 _newest(inventories.values()))


def show_inventory(req: PlacementRequest) -> webob.Response:
    """GET .../inventories/{resource_class}: one inventory, 404 if none."""
    req.authorize(policies.inventory.SHOW)
    generation, inventories = _stored_inventories(req)
    resource_class = req.urlvars["resource_class"]
    inventory = inventories.get(resource_class)
    if inventory is None:
        raise errors.NotFound("No inventory of class %s for %s"
                              % (resource_class, req.urlvars["uuid"]))
    return responses.json(req, render_inventory(inventory, generation),
                          last_modified=_newest([inventory]))


def create_inventory(req: PlacementRequest) -> webob.Response:
    """POST .../inventories: add the inventory of one more class; 201.

    No generation is required; a class the provider already has is 409
    ``placement.concurrent_update``; an unknown class or no capacity is 400.
    """
    req.require_json()
    req.authorize(policies.inventory.CREATE)
    provider = _provider(req)
    data = req.json_body(schemas.CREATE)
    resource_class, fields = data["resource_class"], _fields(data)
    try:
        _check_capacity(req, provider, {resource_class: fields})
        generation = inv_obj.add(req.ctx, provider, resource_class, fields)
    except (exceptions.ConcurrentUpdate, exceptions.InventoryExists) as exc:
        raise errors.Conflict("Update conflict: %s" % exc,
                              code=errors.CONCURRENT_UPDATE) from None
    except (exceptions.Invalid, exceptions.ResourceClassNotFound) as exc:
        raise errors.BadRequest(
            "Unable to create inventory for resource provider %s: %s"
            % (provider.uuid, exc)) from None
    return responses.json(req, render_inventory(fields, generation), status=201,
                          location=_inventory_url(req, provider.uuid, resource_class))


def replace_inventories(req: PlacementRequest) -> webob.Response:
    """PUT .../inventories: make these the provider's only inventories.

    409 ``placement.concurrent_update`` for a stale generation, 409
    ``placement.inventory.inuse`` when a removed class has allocations,
    400 for unknown classes or no capacity.
    """
    req.require_json()
    req.authorize(policies.inventory.UPDATE)
    provider = _provider(req)
    data = req.json_body(schemas.REPLACE)
    _check_generation(data, provider)
    for resource_class in data["inventories"]:
        # The schema only validates records under well-formed class names;
        # any other name cannot be a class.
        if not re.match(schemas.RESOURCE_CLASS["pattern"], resource_class):
            raise errors.BadRequest(
                "Unknown resource class in inventory for resource provider "
                "%s: %s" % (provider.uuid,
                            exceptions.ResourceClassNotFound(name=resource_class)))
    inventories = {rc: _fields(record) for rc, record in data["inventories"].items()}
    try:
        _check_capacity(req, provider, inventories)
        generation = inv_obj.replace(req.ctx, provider, inventories,
                                     data["resource_provider_generation"])
    except exceptions.ResourceClassNotFound as exc:
        raise errors.BadRequest(
            "Unknown resource class in inventory for resource provider %s: %s"
            % (provider.uuid, exc)) from None
    except exceptions.ConcurrentUpdate as exc:
        raise errors.Conflict("update conflict: %s" % exc,
                              code=errors.CONCURRENT_UPDATE) from None
    except exceptions.InventoryInUse as exc:
        raise errors.Conflict("update conflict: %s" % exc,
                              code=errors.INVENTORY_INUSE) from None
    except exceptions.Invalid as exc:
        raise errors.BadRequest(
            "Unable to update inventory for resource provider %s: %s"
            % (provider.uuid, exc)) from None
    return _inventories_response(req, inventories, generation, None)


def _check_generation(data: Mapping[str, Any],
                      provider: rp_obj.ResourceProvider) -> None:
    if data["resource_provider_generation"] != provider.generation:
        raise errors.Conflict("resource provider generation conflict",
                              code=errors.CONCURRENT_UPDATE)


def update_inventory(req: PlacementRequest) -> webob.Response:
    """PUT .../inventories/{resource_class}: change one existing inventory.

    409 ``placement.concurrent_update`` for a stale generation; 400 when
    the provider has no inventory of the class or it would have no
    capacity; 404 for a class that does not exist at all.
    """
    req.require_json()
    req.authorize(policies.inventory.UPDATE)
    provider = _provider(req)
    resource_class = req.urlvars["resource_class"]
    data = req.json_body(schemas.UPDATE)
    _check_generation(data, provider)
    fields = _fields(data)
    try:
        _check_capacity(req, provider, {resource_class: fields})
        generation = inv_obj.update(req.ctx, provider, resource_class, fields,
                                    data["resource_provider_generation"])
    except exceptions.ConcurrentUpdate as exc:
        raise errors.Conflict("update conflict: %s" % exc,
                              code=errors.CONCURRENT_UPDATE) from None
    except exceptions.ResourceClassNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None
    except exceptions.InventoryNotFound as exc:
        raise errors.BadRequest(
            "No inventory record with resource class for resource provider "
            "%s: %s" % (provider.uuid, exc)) from None
    except exceptions.Invalid as exc:
        raise errors.BadRequest(
            "Unable to update inventory for resource provider %s: %s"
            % (provider.uuid, exc)) from None
    return responses.json(req, render_inventory(fields, generation))


def delete_inventory(req: PlacementRequest) -> webob.Response:
    """DELETE .../inventories/{resource_class}: 204.

    In use or changed concurrently: 409 ``placement.concurrent_update``
    (Placement uses that code for both here).  No such inventory: 404.
    """
    req.authorize(policies.inventory.DELETE)
    provider = _provider(req)
    resource_class = req.urlvars["resource_class"]
    try:
        inv_obj.delete(req.ctx, provider, resource_class)
    except (exceptions.ConcurrentUpdate, exceptions.InventoryInUse) as exc:
        raise errors.Conflict(
            "Unable to delete inventory of class %s: %s" % (resource_class, exc),
            code=errors.CONCURRENT_UPDATE) from None
    except (exceptions.InventoryNotFound, exceptions.ResourceClassNotFound) as exc:
        raise errors.NotFound("No inventory of class %s found for delete: %s"
                              % (resource_class, exc)) from None
    return responses.no_content()


def delete_inventories(req: PlacementRequest) -> webob.Response:
    """DELETE .../inventories (1.5): remove every inventory; 204.

    409 ``placement.inventory.inuse`` when any class has allocations.
    """
    req.authorize(policies.inventory.DELETE)
    provider = _provider(req)
    try:
        inv_obj.replace(req.ctx, provider, {})
    except exceptions.ConcurrentUpdate:
        raise errors.Conflict(
            "Unable to delete inventory for resource provider %s because the "
            "inventory was updated by another process. Please retry your "
            "request." % provider.uuid, code=errors.CONCURRENT_UPDATE) from None
    except exceptions.InventoryInUse as exc:
        raise errors.Conflict(str(exc), code=errors.INVENTORY_INUSE) from None
    return responses.no_content()
