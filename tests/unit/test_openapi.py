"""The OpenAPI document: valid, complete and drawn from what is enforced."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from placement import microversion, openapi
from placement.routes import ROUTES
from placement.schemas.common import Versioned

ALL_VERSIONS = [version for version, _summary in microversion.VERSIONS]


# openapi-spec-validator takes a second or two a document on a busy
# machine; these are the versions where the route table, the error shape
# or many schemas change, first and last included.
@pytest.mark.parametrize("version", [(1, 0), (1, 6), (1, 14), (1, 23),
                                     (1, 30), microversion.MAX_VERSION])
def test_document_is_valid_openapi_3_1(version):
    validate(openapi.document(version), cls=OpenAPIV31SpecValidator)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_every_route_of_the_version_is_described_and_no_other(version):
    paths = openapi.document(version)["paths"]
    for route in ROUTES:
        present = route.method.lower() in paths.get(route.path, {})
        assert present == (route.min_version <= version), (route, version)
    declared = {(r.path, r.method.lower()) for r in ROUTES}
    described = {(path, method) for path, item in paths.items() for method in item}
    assert described <= declared


def test_every_handler_has_an_operation():
    assert set(openapi.OPERATIONS) == {route.handler for route in ROUTES}


def _schema_reads(handler: str) -> dict[str, str]:
    """{"json_body"|"query": schema name} as the handler's source calls them."""
    module_name, _sep, function = handler.partition(":")
    module = importlib.import_module("placement.handlers." + module_name)
    tree = ast.parse(inspect.getsource(module))
    reads: dict[str, str] = {}
    bodies = {node.name: node for node in ast.walk(tree)
              if isinstance(node, ast.FunctionDef)}
    pending, seen = [function], set()
    while pending:  # the handler and the module's functions it calls
        name = pending.pop()
        if name in seen or name not in bodies:
            continue
        seen.add(name)
        for node in ast.walk(bodies[name]):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name):
                pending.append(node.func.id)
            if (isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("json_body", "query") and node.args
                    and isinstance(node.args[0], ast.Attribute)):
                reads[node.func.attr] = node.args[0].attr
    return reads


@pytest.mark.parametrize("handler", sorted(openapi.OPERATIONS))
def test_the_document_states_the_schemas_the_handler_validates(handler):
    operation = openapi.OPERATIONS[handler]
    reads = _schema_reads(handler)
    for call, stated in (("json_body", operation.body), ("query", operation.query)):
        if call not in reads:
            assert stated is None, (handler, call)
            continue
        module = importlib.import_module(
            "placement.schemas." + handler.partition(":")[0])
        assert stated is getattr(module, reads[call]), (handler, call)


def test_request_bodies_are_the_enforced_schemas_at_each_version():
    body = openapi.OPERATIONS["resource_provider:create_provider"].body
    assert isinstance(body, Versioned)
    for version in ALL_VERSIONS:
        described = openapi.document(version)["paths"]["/resource_providers"]["post"]
        assert (described["requestBody"]["content"]["application/json"]["schema"]
                is body.at(version))


def test_error_codes_are_in_the_document_from_1_23():
    before = openapi.document((1, 22))["components"]["schemas"]["Error"]
    after = openapi.document((1, 23))["components"]["schemas"]["Error"]
    item = "errors"
    assert "code" not in before["properties"][item]["items"]["required"]
    assert "code" in after["properties"][item]["items"]["required"]
    assert "placement.concurrent_update" in (
        after["properties"][item]["items"]["properties"]["code"]["enum"])
