"""Every response the gabbi suite gets is checked against the OpenAPI
document of its microversion.

:class:`ResponseChecker` wraps the application the gabbi files talk to.
For a request to a route that exists at the response's microversion, the
status must be one the document lists for the operation and a JSON body
must validate against the schema given for that status; a mismatch fails
the gabbi test that made the request.  Answers the document does not
describe by operation (unknown URLs, undeclared methods, CORS preflights)
and error pages in HTML or plain text are left alone.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable, Iterable

import jsonschema

from placement import microversion, openapi
from placement.routes import Router

WSGIApp = Callable[..., Iterable[bytes]]


@functools.cache
def _router() -> Router:
    return Router()


@functools.cache
def _validator(version: tuple[int, int], template: str, method: str,
               status: str) -> jsonschema.protocols.Validator | None:
    document = openapi.document(version)
    responses = document["paths"][template][method]["responses"]
    assert status in responses, (
        "%s %s answered %s at %s, which the OpenAPI document does not list"
        % (method.upper(), template, status, microversion.format_version(version)))
    content = responses[status].get("content", {}).get("application/json")
    if content is None:
        return None  # no body, or not JSON (GET /metrics)
    schema = dict(content["schema"])
    schema["components"] = document["components"]
    return jsonschema.Draft202012Validator(schema)


def check(method: str, path: str, status: int, headers: dict[str, str],
          body: bytes) -> None:
    """Raise AssertionError unless the response fits the document."""
    version_header = headers.get("openstack-api-version", "")
    if not version_header.startswith("placement "):
        return
    version = microversion.parse_version(version_header.split()[1])
    found = _router().match_path(path)
    if found is None:
        return
    template = found[0]
    document = openapi.document(version)
    operation = document["paths"].get(template, {}).get(method.lower())
    if operation is None:
        return
    validator = _validator(version, template, method.lower(), str(status))
    if validator is None or not headers.get("content-type", "").startswith(
            "application/json"):
        return
    errors = sorted(validator.iter_errors(json.loads(body)), key=str)
    assert not errors, "%s %s (%s) does not fit the OpenAPI document: %s" % (
        method, path, status, errors[0].message)


class ResponseChecker:
    def __init__(self, application: WSGIApp) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        captured: dict[str, Any] = {}

        def _start_response(status: str, headers: list[tuple[str, str]],
                            exc_info: Any = None) -> Any:
            captured["status"] = int(status.split()[0])
            captured["headers"] = {k.lower(): v for k, v in headers}
            return start_response(status, headers, exc_info)

        body = b"".join(self.application(environ, _start_response))
        check(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""),
              captured["status"], captured["headers"], body)
        return [body]
