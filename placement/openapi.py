"""The OpenAPI 3.1 description of the API at one microversion.

:func:`document` builds it from what the service itself enforces, so the
two cannot drift apart: the paths, methods and microversion gates of
:data:`placement.routes.ROUTES`, the request body and query string schemas
of :mod:`placement.schemas` (the very objects the handlers validate
against, at the asked version), the error codes of :mod:`placement.errors`
and the versions of :mod:`placement.microversion`.  What this module adds
is what the code does not state as data: which schema each handler reads
(:data:`OPERATIONS`; ``tests/unit/test_openapi.py`` checks it against the
handlers' own calls) and the shape of the documents each one answers with.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

from placement import errors, microversion
from placement.routes import ROUTES, Route
from placement.schemas import (
    aggregate,
    allocation,
    allocation_candidate,
    capacity,
    inventory,
    reshaper,
    resource_class,
    resource_provider,
    trait,
    usage,
)
from placement.schemas.common import Schema, Versioned

Version = tuple[int, int]

_STRING: Schema = {"type": "string"}
_INT: Schema = {"type": "integer"}
_UUID: Schema = {"type": "string", "format": "uuid"}
_LINKS: Schema = {"type": "array", "items": {
    "type": "object", "required": ["rel", "href"],
    "properties": {"rel": _STRING, "href": _STRING}}}


def _object(required: list[str], **properties: Schema) -> Schema:
    """A response document: these members, others allowed (a client must
    ignore members it does not know, which later microversions add)."""
    return {"type": "object", "required": required, "properties": properties}


def _map(values: Schema) -> Schema:
    return {"type": "object", "additionalProperties": values}


_PROVIDER = _object(["uuid", "name", "generation", "links"], uuid=_UUID,
                    name=_STRING, generation=_INT, links=_LINKS,
                    parent_provider_uuid={"type": ["string", "null"]},
                    root_provider_uuid=_UUID)
_INVENTORY = _object(["total"], total=_INT, reserved=_INT, min_unit=_INT,
                     max_unit=_INT, step_size=_INT,
                     allocation_ratio={"type": "number"},
                     resource_provider_generation=_INT)
_GENERATION = {"resource_provider_generation": _INT}
_RESOURCE_CLASS = _object(["name", "links"], name=_STRING, links=_LINKS)
_AMOUNTS = _map(_INT)
_VERSION = _object(["id", "min_version", "max_version", "status", "links"],
                   id=_STRING, min_version=_STRING, max_version=_STRING,
                   status=_STRING, links=_LINKS)


_NUMBER: Schema = {"type": "number"}
_CLASS_FIGURES = _object(["total", "reserved", "capacity", "used", "free",
                          "providers"], total=_INT, reserved=_INT,
                         capacity=_NUMBER, used=_INT, free=_NUMBER,
                         providers=_INT)
_USED = _object(["used", "capacity"], used=_INT, capacity=_NUMBER)


@dataclasses.dataclass(frozen=True)
class Operation:
    """What the route table does not say about one handler."""

    summary: str
    # Success statuses and the body each answers with (None: no body).
    success: dict[int, Schema | None]
    body: Schema | Versioned | None = None
    query: Schema | Versioned | None = None
    # The success body's media type, when it is not JSON.
    media_type: str = "application/json"


OPERATIONS: dict[str, Operation] = {
    "root:home": Operation(
        "The version document", {200: _object(["versions"], versions={
            "type": "array", "items": _VERSION})}),
    "openapi:show_document": Operation(
        "This OpenAPI document, at the request's microversion",
        {200: {"type": "object", "required": ["openapi", "paths"]}}),
    "resource_provider:list_providers": Operation(
        "List resource providers",
        {200: _object(["resource_providers"], resource_providers={
            "type": "array", "items": _PROVIDER})},
        query=resource_provider.LIST_QUERY),
    "resource_provider:create_provider": Operation(
        "Create a resource provider (201 without a body before 1.20)",
        {200: _PROVIDER, 201: None}, body=resource_provider.CREATE),
    "resource_provider:show_provider": Operation(
        "Show a resource provider", {200: _PROVIDER}),
    "resource_provider:delete_provider": Operation(
        "Delete a resource provider", {204: None}),
    "resource_provider:update_provider": Operation(
        "Rename or re-parent a resource provider", {200: _PROVIDER},
        body=resource_provider.UPDATE),
    "inventory:list_inventories": Operation(
        "List a provider's inventories",
        {200: _object(["inventories", "resource_provider_generation"],
                      inventories=_map(_INVENTORY), **_GENERATION)}),
    "inventory:create_inventory": Operation(
        "Add one inventory", {201: _INVENTORY}, body=inventory.CREATE),
    "inventory:replace_inventories": Operation(
        "Replace all inventories",
        {200: _object(["inventories", "resource_provider_generation"],
                      inventories=_map(_INVENTORY), **_GENERATION)},
        body=inventory.REPLACE),
    "inventory:delete_inventories": Operation(
        "Delete all inventories", {204: None}),
    "inventory:show_inventory": Operation(
        "Show one inventory", {200: _INVENTORY}),
    "inventory:update_inventory": Operation(
        "Update one inventory", {200: _INVENTORY}, body=inventory.UPDATE),
    "inventory:delete_inventory": Operation(
        "Delete one inventory", {204: None}),
    "aggregate:list_aggregates": Operation(
        "List a provider's aggregates",
        {200: _object(["aggregates"], aggregates={"type": "array", "items": _UUID},
                      **_GENERATION)}),
    "aggregate:set_aggregates": Operation(
        "Replace a provider's aggregates",
        {200: _object(["aggregates"], aggregates={"type": "array", "items": _UUID},
                      **_GENERATION)},
        body=aggregate.SET_AGGREGATES),
    "trait:list_provider_traits": Operation(
        "List a provider's traits",
        {200: _object(["traits", "resource_provider_generation"],
                      traits={"type": "array", "items": _STRING}, **_GENERATION)}),
    "trait:set_provider_traits": Operation(
        "Replace a provider's traits",
        {200: _object(["traits", "resource_provider_generation"],
                      traits={"type": "array", "items": _STRING}, **_GENERATION)},
        body=trait.SET_PROVIDER_TRAITS),
    "trait:delete_provider_traits": Operation(
        "Remove all traits of a provider", {204: None}),
    "usage:list_provider_usages": Operation(
        "A provider's usages",
        {200: _object(["usages", "resource_provider_generation"],
                      usages=_AMOUNTS, **_GENERATION)}),
    "allocation:list_provider_allocations": Operation(
        "Allocations against a provider",
        {200: _object(["allocations", "resource_provider_generation"],
                      allocations=_map(_object(["resources"], resources=_AMOUNTS)),
                      **_GENERATION)}),
    "resource_class:list_resource_classes": Operation(
        "List resource classes",
        {200: _object(["resource_classes"], resource_classes={
            "type": "array", "items": _RESOURCE_CLASS})}),
    "resource_class:create_resource_class": Operation(
        "Create a custom resource class", {201: None},
        body=resource_class.CREATE),
    "resource_class:show_resource_class": Operation(
        "Show a resource class", {200: _RESOURCE_CLASS}),
    "resource_class:update_resource_class": Operation(
        "Rename a custom class (before 1.7), or create it if missing (1.7+)",
        {200: _RESOURCE_CLASS, 201: None, 204: None},
        body=resource_class.RENAME),
    "resource_class:delete_resource_class": Operation(
        "Delete a custom resource class", {204: None}),
    "trait:list_traits": Operation(
        "List traits",
        {200: _object(["traits"], traits={"type": "array", "items": _STRING})},
        query=trait.LIST_QUERY),
    "trait:show_trait": Operation("Check that a trait exists", {204: None}),
    "trait:create_trait": Operation(
        "Create a custom trait (204 when it exists)", {201: None, 204: None}),
    "trait:delete_trait": Operation("Delete a custom trait", {204: None}),
    "allocation:set_allocations": Operation(
        "Set the allocations of several consumers", {204: None},
        body=allocation.POST_ALLOCATIONS),
    "allocation:list_allocations": Operation(
        "A consumer's allocations",
        {200: _object(["allocations"], allocations=_map(_object(
            ["resources"], resources=_AMOUNTS, generation=_INT)),
            consumer_generation={"type": ["integer", "null"]},
            project_id=_STRING, user_id=_STRING, consumer_type=_STRING)}),
    "allocation:set_allocations_for_consumer": Operation(
        "Set a consumer's allocations", {204: None},
        body=allocation.PUT_ALLOCATIONS),
    "allocation:delete_allocations": Operation(
        "Delete a consumer's allocations", {204: None}),
    "allocation_candidate:list_allocation_candidates": Operation(
        "Allocation candidates for a request",
        {200: _object(["allocation_requests", "provider_summaries"],
                      allocation_requests={"type": "array", "items": {
                          "type": "object", "required": ["allocations"]}},
                      provider_summaries=_map(_object(["resources"])))},
        query=allocation_candidate.QUERY),
    "usage:get_total_usages": Operation(
        "Usages of a project (and user)", {200: _object(["usages"])},
        query=usage.TOTAL_USAGES_QUERY),
    "reshaper:reshape": Operation(
        "Move inventories and allocations at once", {204: None},
        body=reshaper.RESHAPE),
    "metrics:show_metrics": Operation(
        "Metrics in the Prometheus text format ([metrics] enabled only)",
        {200: None}, media_type="text/plain"),
    "capacity:show_capacity": Operation(
        "The cloud's capacity, and how many more of a request fit (JSON, or "
        "the capacity page for text/html; [metrics] enabled only)",
        {200: _object(
            ["providers", "resource_classes", "aggregates", "flavors",
             "fullest_hosts"],
            fits=_INT, fits_by_aggregate=_map(_INT), hosts_with_room=_INT,
            read_at=_STRING, providers=_INT,
            resource_classes=_map(_CLASS_FIGURES),
            aggregates=_map(_map(_CLASS_FIGURES)),
            flavors=_map(_object(["query", "fits"], query=_STRING, fits=_INT,
                                 fits_by_aggregate=_map(_INT))),
            fullest_hosts={"type": "array", "items": _object(
                ["name", "fullest", "resources"], name=_STRING,
                fullest={"type": "number"}, resources=_map(_USED))},
            trees={"type": "array", "items": {"type": "object"}})},
        query=capacity.QUERY),
}

_ERROR_STATUSES = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
    409: "Conflict", 413: "Request Entity Too Large",
    415: "Unsupported Media Type", 500: "Internal Server Error",
    503: "Service Unavailable",
}
_CODES = sorted(value for name, value in vars(errors).items()
                if name.isupper() and isinstance(value, str)
                and value.startswith("placement."))


def _error_schema(version: Version) -> Schema:
    """``{"errors": [...]}``; ``code`` is always there from 1.23."""
    required = ["status", "title", "detail"]
    if version >= errors.CODES_SINCE:
        required.append("code")
    return _object(["errors"], errors={
        "type": "array", "minItems": 1, "items": _object(
            required, status=_INT, title=_STRING, detail=_STRING,
            request_id=_STRING, code={"type": "string", "enum": _CODES},
            min_version=_STRING, max_version=_STRING)})


def _at(schema: Schema | Versioned | None, version: Version) -> Schema | None:
    return schema.at(version) if isinstance(schema, Versioned) else schema


def _pattern_name(pattern: str) -> str:
    """``^resources([1-9][0-9]*)?$`` is the parameter ``resources``."""
    return re.split(r"[(]", pattern.lstrip("^"), maxsplit=1)[0].rstrip("$")


def _query_parameters(schema: Schema | None) -> list[dict[str, Any]]:
    if schema is None:
        return []
    required = set(schema.get("required", []))
    parameters = [
        {"name": name, "in": "query", "required": name in required,
         "schema": {"type": "string", **{k: v for k, v in item.items()
                                         if k in ("pattern", "enum", "format")}}}
        for name, item in schema.get("properties", {}).items()]
    for pattern in schema.get("patternProperties", {}):
        parameters.append({
            "name": _pattern_name(pattern), "in": "query", "required": False,
            "description": "Also with a request group suffix: keys matching "
                           "%s." % pattern,
            "schema": _STRING})
    return parameters


def _path_parameters(route: Route) -> list[dict[str, Any]]:
    return [{"name": name, "in": "path", "required": True, "schema": _STRING}
            for name in re.findall(r"{(\w+)}", route.path)]


_VERSION_HEADER = {
    "name": microversion.HEADER, "in": "header", "required": False,
    "description": "placement X.Y or placement latest; the minimum when absent.",
    "schema": {"type": "string", "pattern": r"^placement (latest|\d+\.\d+)$"}}


def _operation(route: Route, version: Version) -> dict[str, Any]:
    spec = OPERATIONS[route.handler]
    responses: dict[str, Any] = {}
    for status, body in spec.success.items():
        response: dict[str, Any] = {"description": spec.summary}
        if body is not None:
            response["content"] = {spec.media_type: {"schema": body}}
        elif spec.media_type != "application/json":
            response["content"] = {spec.media_type: {"schema": _STRING}}
        responses[str(status)] = response
    for status, title in _ERROR_STATUSES.items():
        responses[str(status)] = {"description": title, "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    operation: dict[str, Any] = {
        "operationId": route.handler.replace(":", "."),
        "summary": spec.summary,
        "parameters": (_path_parameters(route) + [_VERSION_HEADER]
                       + _query_parameters(_at(spec.query, version))),
        "responses": responses,
    }
    body = _at(spec.body, version)
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {
            "application/json": {"schema": body}}}
    if route.public:
        operation["security"] = []
    return operation


@functools.lru_cache(maxsize=None)
def document(version: Version) -> dict[str, Any]:
    """The OpenAPI document of every route that exists at ``version``.

    Cached: it depends on nothing but the version.  Callers must not
    change it.
    """
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        if route.min_version <= version:
            paths.setdefault(route.path, {})[route.method.lower()] = (
                _operation(route, version))
    shown = microversion.format_version(version)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Placement API",
            "version": shown,
            "description": "OpenStack Placement API at microversion %s "
                           "(send OpenStack-API-Version: placement %s)."
                           % (shown, shown),
        },
        "paths": paths,
        "components": {
            "schemas": {"Error": _error_schema(version)},
            "securitySchemes": {"token": {
                "type": "apiKey", "in": "header", "name": "X-Auth-Token"}},
        },
        "security": [{"token": []}],
    }


def main(argv: list[str] | None = None) -> None:
    """``python -m placement.openapi [X.Y]``: print the document (the
    latest microversion by default), as GET /openapi.json serves it."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    version = (microversion.parse_version(args[0]) if args
               else microversion.MAX_VERSION)
    json.dump(document(version), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
