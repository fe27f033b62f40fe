"""Handlers for allocations: ``/allocations``, ``/allocations/{consumer_uuid}``
and ``/resource_providers/{uuid}/allocations``.

Bodies are turned into :class:`placement.objects.allocation.ConsumerClaim`
by :func:`claim_from_body` (shared with the reshaper); writes go through
``allocation.replace_all`` and its errors become the statuses and
messages clients of Placement match on (:func:`write_errors`).
"""

from __future__ import annotations

import contextlib
import uuid as uuidlib
from typing import Any, Iterator, Mapping, Sequence

import webob

from placement import errors, exceptions, policies, responses
from placement.objects import allocation
from placement.objects.consumer import UNKNOWN_TYPE, Consumer
from placement.request import PlacementRequest
from placement.schemas import allocation as schemas

DICT_FORM_SINCE = (1, 12)
GENERATIONS_SINCE = (1, 28)
CONSUMER_TYPES_SINCE = (1, 38)


def claim_from_body(consumer_uuid: str, body: Mapping[str, Any],
                    version: tuple[int, int]) -> allocation.ConsumerClaim:
    """One consumer's validated body, in any version's form, as a claim."""
    raw = body["allocations"]
    if version < DICT_FORM_SINCE:
        # A list of {"resource_provider": {"uuid"}, "resources"}; a provider
        # named twice keeps its last entry.
        resources = {item["resource_provider"]["uuid"]: item["resources"]
                     for item in raw}
    else:
        resources = {uuid: item["resources"] for uuid, item in raw.items()}
    return allocation.ConsumerClaim(
        consumer_uuid=consumer_uuid, resources=resources,
        project_id=body.get("project_id"), user_id=body.get("user_id"),
        consumer_type=body.get("consumer_type")
        if version >= CONSUMER_TYPES_SINCE else None,
        generation=body.get("consumer_generation"),
        check_generation=version >= GENERATIONS_SINCE)


@contextlib.contextmanager
def write_errors(unknown_class_prefix: str) -> Iterator[None]:
    """Map what an allocation write raises to Placement's responses."""
    try:
        yield
    except exceptions.ProviderNotFound as exc:
        raise errors.BadRequest(
            "Allocation for resource provider '%s' that does not exist."
            % exc.kwargs["uuid"]) from None
    except exceptions.ResourceClassNotFound as exc:
        raise errors.BadRequest(unknown_class_prefix + str(exc)) from None
    except exceptions.InventoryInvalid as exc:
        raise errors.Conflict("Unable to allocate inventory: %s" % exc) from None
    except exceptions.ConsumerGenerationConflict as exc:
        raise errors.Conflict(str(exc), code=errors.CONCURRENT_UPDATE) from None
    except exceptions.ConcurrentUpdate as exc:
        raise errors.Conflict(
            "Inventory and/or allocations changed while attempting to "
            "allocate: %s" % exc, code=errors.CONCURRENT_UPDATE) from None


def render_consumer_allocations(consumer: Consumer | None,
                                allocations: Sequence[allocation.Allocation],
                                version: tuple[int, int]) -> dict[str, Any]:
    by_provider: dict[str, dict[str, Any]] = {}
    for item in allocations:
        entry = by_provider.setdefault(
            item.provider_uuid, {"resources": {},
                                 "generation": item.provider_generation})
        entry["resources"][item.resource_class] = item.used
    body: dict[str, Any] = {"allocations": by_provider}
    if consumer is not None and allocations and version >= DICT_FORM_SINCE:
        body["project_id"] = consumer.project_id
        body["user_id"] = consumer.user_id
        if version >= GENERATIONS_SINCE:
            body["consumer_generation"] = consumer.generation
        if version >= CONSUMER_TYPES_SINCE:
            body["consumer_type"] = consumer.consumer_type or UNKNOWN_TYPE
    return body


def render_provider_allocations(generation: int,
                                allocations: Sequence[allocation.Allocation],
                                version: tuple[int, int]) -> dict[str, Any]:
    by_consumer: dict[str, dict[str, Any]] = {}
    for item in allocations:
        entry = by_consumer.setdefault(item.consumer_uuid, {"resources": {}})
        entry["resources"][item.resource_class] = item.used
        if version >= GENERATIONS_SINCE:
            entry["consumer_generation"] = item.consumer_generation
    return {"allocations": by_consumer, "resource_provider_generation": generation}


def _last_modified(allocations: Sequence[allocation.Allocation]) -> Any:
    return responses.newest(item.last_modified for item in allocations)


def list_allocations(req: PlacementRequest) -> webob.Response:
    """GET /allocations/{consumer_uuid}: the consumer's allocations by
    provider; ``{"allocations": {}}`` for an unknown consumer.

    1.12 adds project_id and user_id, 1.28 consumer_generation and 1.38
    consumer_type (when the consumer has allocations).
    """
    req.authorize(policies.allocation.ALLOC_LIST)
    consumer, allocations = allocation.get_by_consumer(
        req.ctx, req.urlvars["consumer_uuid"])
    body = render_consumer_allocations(consumer, allocations, req.version)
    return responses.json(req, body, last_modified=_last_modified(allocations))


def list_provider_allocations(req: PlacementRequest) -> webob.Response:
    """GET /resource_providers/{uuid}/allocations: allocations against the
    provider by consumer, and its generation; 404 for an unknown provider.

    1.28 adds each consumer's consumer_generation.
    """
    req.authorize(policies.allocation.RP_ALLOC_LIST)
    uuid = req.urlvars["uuid"]
    try:
        generation, allocations = allocation.get_by_provider(req.ctx, uuid)
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(
            "Resource provider '%s' not found: %s" % (uuid, exc)) from None
    body = render_provider_allocations(generation, allocations, req.version)
    return responses.json(req, body, last_modified=_last_modified(allocations))


def set_allocations_for_consumer(req: PlacementRequest) -> webob.Response:
    """PUT /allocations/{consumer_uuid}: replace the consumer's allocations; 204.

    The body's form changes at 1.8, 1.12, 1.28, 1.34 and 1.38 (see
    ``schemas.allocation``).  400 for a malformed consumer uuid, a bad
    body, an unknown provider or class; 409 when capacity or inventory
    constraints refuse the allocations, or (``placement.concurrent_update``)
    when the consumer generation does not match.
    """
    req.require_json()
    req.authorize(policies.allocation.ALLOC_UPDATE)
    raw_uuid = req.urlvars["consumer_uuid"]
    try:
        consumer_uuid = str(uuidlib.UUID(raw_uuid))
    except ValueError:
        raise errors.BadRequest("Malformed consumer_uuid: %s" % raw_uuid) from None
    body = req.json_body(schemas.PUT_ALLOCATIONS)
    claim = claim_from_body(consumer_uuid, body, req.version)
    prefix = "Unable to allocate inventory for consumer %s: " % consumer_uuid
    with write_errors(prefix):
        allocation.replace_all(req.ctx, [claim])
    return responses.no_content()


def set_allocations(req: PlacementRequest) -> webob.Response:
    """POST /allocations (1.13): set or clear the allocations of several
    consumers in one transaction, all or nothing; 204.

    The body maps consumer uuids to PUT-like bodies (1.12 form, with
    consumer_generation from 1.28, mappings from 1.34 and consumer_type
    from 1.38); an empty ``allocations`` clears that consumer.
    """
    req.require_json()
    req.authorize(policies.allocation.ALLOC_MANAGE)
    body = req.json_body(schemas.POST_ALLOCATIONS)
    claims = [claim_from_body(consumer_uuid, data, req.version)
              for consumer_uuid, data in body.items()]
    with write_errors("Unable to allocate inventory "):
        allocation.replace_all(req.ctx, claims)
    return responses.no_content()


def delete_allocations(req: PlacementRequest) -> webob.Response:
    """DELETE /allocations/{consumer_uuid}: remove all of the consumer's
    allocations; 204, or 404 when it has none."""
    req.authorize(policies.allocation.ALLOC_DELETE)
    consumer_uuid = req.urlvars["consumer_uuid"]
    try:
        allocation.delete_all_for_consumer(req.ctx, consumer_uuid)
    except exceptions.ConsumerAllocationsNotFound as exc:
        raise errors.NotFound(str(exc)) from None
    except exceptions.ConcurrentUpdate as exc:
        raise errors.Conflict(str(exc), code=errors.CONCURRENT_UPDATE) from None
    return responses.no_content()
