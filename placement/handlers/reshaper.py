"""Handler for ``POST /reshaper`` (1.30): move inventories and the
allocations using them between providers in one transaction.

The work is done by ``objects.reshaper.reshape``; this module parses the
body and maps errors to the statuses and messages Placement uses.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator, Mapping

import webob

from placement import errors, exceptions, policies, responses
from placement.handlers.allocation import claim_from_body
from placement.objects import inventory as inv_obj
from placement.objects import reshaper
from placement.request import PlacementRequest
from placement.schemas import reshaper as schemas

_FIELD_NAMES = [field.name for field in dataclasses.fields(inv_obj.InventoryFields)]


def _provider_inventories(uuid: str, data: Mapping[str, Any]
                          ) -> reshaper.ProviderInventories:
    inventories = {}
    for resource_class, record in data["inventories"].items():
        fields = inv_obj.InventoryFields(
            **{name: record[name] for name in _FIELD_NAMES if name in record})
        # The reshaper exists since 1.30, when reserved may equal total but
        # not exceed it.
        if fields.total < fields.reserved:
            raise errors.BadRequest(
                "Unable to update inventory for resource provider %s: Invalid "
                "inventory for '%s' on resource provider '%s'. The reserved "
                "value is greater than total." % (uuid, resource_class, uuid))
        inventories[resource_class] = fields
    return reshaper.ProviderInventories(
        provider_uuid=uuid, generation=data["resource_provider_generation"],
        inventories=inventories)


@contextlib.contextmanager
def _reshape_errors() -> Iterator[None]:
    try:
        yield
    except exceptions.InventoryProviderNotFound as exc:
        raise errors.BadRequest(
            "Resource provider %s in inventories not found: %s"
            % (exc.kwargs["uuid"], exc),
            code=errors.RESOURCE_PROVIDER_NOT_FOUND) from None
    except exceptions.ProviderNotFound as exc:
        raise errors.BadRequest(
            "Allocation for resource provider '%s' that does not exist."
            % exc.kwargs["uuid"]) from None
    except (exceptions.ProviderGenerationConflict,
            exceptions.ConsumerGenerationConflict) as exc:
        raise errors.Conflict(str(exc), code=errors.CONCURRENT_UPDATE) from None
    except exceptions.ConcurrentUpdate as exc:
        raise errors.Conflict("update conflict: %s" % exc,
                              code=errors.CONCURRENT_UPDATE) from None
    except exceptions.ResourceClassNotFound as exc:
        raise errors.BadRequest("malformed reshaper data: %s" % exc) from None
    except exceptions.InventoryInUse as exc:
        raise errors.Conflict("update conflict: %s" % exc,
                              code=errors.INVENTORY_INUSE) from None
    except exceptions.InventoryInvalid as exc:
        raise errors.Conflict("Unable to allocate inventory: %s" % exc) from None


def reshape(req: PlacementRequest) -> webob.Response:
    """POST /reshaper: 204 once every provider has exactly the inventories
    and every consumer exactly the allocations given.

    ``inventories`` are checked against the provider generations sent (409
    ``placement.concurrent_update``), ``allocations`` as POST /allocations
    checks them, consumer generations included.  A class removed while
    still allocated is 409 ``placement.inventory.inuse``; allocations the
    new inventories cannot hold are 409; unknown providers and classes 400.
    From 1.34 consumers may carry ``mappings``, from 1.38 they need
    ``consumer_type``.
    """
    req.require_json()
    req.authorize(policies.reshaper.RESHAPE)
    body = req.json_body(schemas.RESHAPE)
    inventories = [_provider_inventories(uuid, data)
                   for uuid, data in body["inventories"].items()]
    claims = [claim_from_body(consumer_uuid, data, req.version)
              for consumer_uuid, data in body["allocations"].items()]
    with _reshape_errors():
        reshaper.reshape(req.ctx, inventories, claims)
    return responses.no_content()
