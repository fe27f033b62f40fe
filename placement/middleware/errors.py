"""Turning :class:`placement.errors.ApiError` into a WSGI response."""

from __future__ import annotations

from typing import Any

import webob

from placement import errors, microversion

VERSION_ENVIRON = "placement.microversion"
REQUEST_ID_ENVIRON = "openstack.request_id"


def error_response(environ: dict[str, Any], exc: errors.ApiError) -> webob.Response:
    version = environ.get(VERSION_ENVIRON)
    resp = webob.Response(status=exc.status, charset=None)
    resp.content_type = "application/json"
    resp.body = errors.render(
        exc.status,
        exc.title,
        exc.detail,
        environ.get(REQUEST_ID_ENVIRON),
        code=exc.code,
        version=version,
        extra=exc.extra,
    )
    for name, value in exc.headers.items():
        resp.headers[name] = value
    if version is not None:
        resp.headers.update(microversion.response_headers(version))
    return resp
