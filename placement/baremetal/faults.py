"""Ironic's error body, and the headers every error carries.

Ironic answers an error with ``{"error_message": "<JSON text>"}``: the
inner document is a fault (``faultcode`` ``Client`` or ``Server``,
``faultstring``, ``debuginfo``) for errors its handlers raise, and a plain
HTTP error (``code``, ``title``, ``description``) for those its routing
and version negotiation raise (an unknown URL or method, a refused
version).  Clients show ``faultstring`` or ``description`` to the user.
"""

from __future__ import annotations

import json
from typing import Any

import webob

from placement import errors
from placement.baremetal import microversion

REQUEST_ID_ENVIRON = "openstack.request_id"
REQUEST_ID_HEADER = "x-openstack-request-id"


class RoutingError(errors.ApiError):
    """A 404 or 405 of the router, which Ironic words as a plain HTTP error."""

    def __init__(self, wrapped: errors.ApiError) -> None:
        super().__init__(wrapped.detail, headers=wrapped.headers)
        self.status = wrapped.status
        self.title = wrapped.title


def body(exc: errors.ApiError) -> dict[str, Any]:
    if isinstance(exc, (RoutingError, microversion.VersionNotAcceptable)):
        inner: dict[str, Any] = {"code": exc.status, "title": exc.title,
                                 "description": exc.detail}
    else:
        inner = {"faultcode": "Server" if exc.status >= 500 else "Client",
                 "faultstring": exc.detail, "debuginfo": None}
    return {"error_message": json.dumps(inner)}


def error_response(environ: dict[str, Any], exc: errors.ApiError) -> webob.Response:
    """The answer to a refused request, wherever in the stack it was refused."""
    resp = webob.Response(status=exc.status, charset=None)
    resp.content_type = "application/json"
    resp.body = json.dumps(body(exc)).encode("utf-8")
    for name, value in exc.headers.items():
        resp.headers[name] = value
    for name, value in microversion.response_headers(
            environ.get(microversion.VERSION_ENVIRON)):
        resp.headers[name] = value
    request_id = environ.get(REQUEST_ID_ENVIRON)
    if request_id and REQUEST_ID_HEADER not in resp.headers:
        resp.headers[REQUEST_ID_HEADER] = request_id
    return resp
