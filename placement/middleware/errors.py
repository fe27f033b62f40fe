"""Turning :class:`placement.errors.ApiError` into a WSGI response.

This is the one place that chooses an error body's type: JSON, or the
HTML or plain text page webob writes, after the request's Accept header.
"""

from __future__ import annotations

from typing import Any

import webob

from placement import errors, microversion

VERSION_ENVIRON = "placement.microversion"
REQUEST_ID_ENVIRON = "openstack.request_id"
REQUEST_ID_HEADER = "x-openstack-request-id"
# A function (environ, ApiError) -> webob.Response that replaces this
# module's rendering, set by an application that answers errors in another
# API's format (the bare-metal API answers in Ironic's).
RENDERER_ENVIRON = "placement.error_renderer"


def error_response(environ: dict[str, Any], exc: errors.ApiError) -> webob.Response:
    renderer = environ.get(RENDERER_ENVIRON)
    if renderer is not None:
        response: webob.Response = renderer(environ, exc)
        return response
    version = environ.get(VERSION_ENVIRON)
    resp = webob.Response(status=exc.status, charset=None)
    kind = errors.media_type(exc.status, environ)
    if kind == "application/json":
        resp.content_type = kind
        resp.body = errors.render(
            exc.status,
            exc.title,
            exc.detail,
            environ.get(REQUEST_ID_ENVIRON),
            code=exc.code,
            version=version,
            extra=exc.extra,
            environ=environ,
        )
    else:
        # webob's pages are text, sent as UTF-8 and labelled so.
        resp.content_type = kind
        resp.charset = "UTF-8"
        resp.body = errors.page(exc.status, exc.detail, environ, kind)
    for name, value in exc.headers.items():
        resp.headers[name] = value
    if version is not None:
        headers = microversion.response_headers(version)
        if not exc.vary:
            del headers[microversion.VARY]
        resp.headers.update(headers)
    # oslo.middleware's RequestId adds this header on the way out, but an
    # exception that escapes to the fault barrier has already passed it.
    request_id = environ.get(REQUEST_ID_ENVIRON)
    if request_id and REQUEST_ID_HEADER not in resp.headers:
        resp.headers[REQUEST_ID_HEADER] = request_id
    return resp
