"""GET /openapi.json: the API's OpenAPI 3.1 description, served without
authentication like the version document."""

from __future__ import annotations

import webob

from placement import microversion, openapi, responses
from placement.request import PlacementRequest


def show_document(req: PlacementRequest) -> webob.Response:
    """The OpenAPI document at the request's microversion.

    Without an ``OpenStack-API-Version`` header it describes the latest
    microversion, not the minimum other requests get: a client or tool
    fetching the description wants all of it.  The response's version
    header names the version described.
    """
    version = req.version
    if microversion.HEADER not in req.headers:
        version = microversion.MAX_VERSION
    resp = responses.json(req, openapi.document(version))
    resp.headers.update(microversion.response_headers(version))
    return resp
