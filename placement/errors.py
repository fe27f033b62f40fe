"""API errors: the ``placement.*`` error codes, the HTTP error classes and
the one formatter that writes every error body.

Handlers raise an :class:`ApiError` subclass (``raise errors.NotFound(...)``);
the application turns it into ``{"errors": [{...}]}``.  Domain problems found
by ``objects/`` are raised as :mod:`placement.exceptions` and mapped to these
classes in the handler, where the right status and code are known.

The code strings are part of the public API.  Never change a value, never
reuse one, keep one symbol per value.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import webob.acceptparse
import webob.exc

DEFAULT = "placement.undefined_code"
INVENTORY_INUSE = "placement.inventory.inuse"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
PROVIDER_IN_USE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
RESOURCE_PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"
ILLEGAL_DUPLICATE_QUERYPARAM = "placement.query.duplicate_key"
QUERYPARAM_BAD_VALUE = "placement.query.bad_value"
QUERYPARAM_MISSING_VALUE = "placement.query.missing_value"

# Error codes appear in the body from this microversion on.
CODES_SINCE = (1, 23)


class ApiError(Exception):
    """An error with an HTTP shape; subclasses set ``status`` and ``title``."""

    status = 500
    title = "Internal Server Error"

    def __init__(
        self,
        detail: str,
        *,
        code: str = DEFAULT,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
        vary: bool = True,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = dict(headers or {})
        # Additional members of the error object (406 carries min/max).
        self.extra = dict(extra or {})
        # Whether the response carries ``Vary``.  Placement's handlers
        # return their errors, which its microversion middleware gives the
        # OpenStack-API-Version and Vary headers of any response; the
        # errors raised around them (an unknown URL, a body without a
        # content type, a policy refusal, a lookup a handler leaves
        # uncaught) pass that middleware as exceptions and get only
        # OpenStack-API-Version.  Those are made with ``vary=False``.
        self.vary = vary


class BadRequest(ApiError):
    status = 400
    title = "Bad Request"


class Unauthorized(ApiError):
    status = 401
    title = "Unauthorized"


class Forbidden(ApiError):
    status = 403
    title = "Forbidden"


class NotFound(ApiError):
    status = 404
    title = "Not Found"


class MethodNotAllowed(ApiError):
    status = 405
    title = "Method Not Allowed"

    def __init__(self, allowed: list[str],
                 detail: str = "The method specified is not allowed for this resource.",
                 header: str = "allow") -> None:
        # ``header``: lower case by default, as Placement writes it.
        super().__init__(
            detail, headers={header: ", ".join(allowed)} if allowed else None)


class NotAcceptable(ApiError):
    status = 406
    title = "Not Acceptable"


class Conflict(ApiError):
    status = 409
    title = "Conflict"


class RequestEntityTooLarge(ApiError):
    status = 413
    title = "Request Entity Too Large"


class UnsupportedMediaType(ApiError):
    status = 415
    title = "Unsupported Media Type"


class InternalServerError(ApiError):
    status = 500
    title = "Internal Server Error"


class ServiceUnavailable(ApiError):
    status = 503
    title = "Service Unavailable"


def as_placement_sees_it(environ: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request values webob's error templates read, as Placement has them.

    Placement treats a missing, empty or ``*/*`` Accept as
    ``application/json`` (its errors are JSON unless the client prefers
    something else), and the 406 sentence shows that value.
    """
    values = dict(environ or {})
    if values.get("HTTP_ACCEPT", "*/*") in ("", "*/*"):
        values["HTTP_ACCEPT"] = "application/json"
    values.setdefault("REQUEST_METHOD", "GET")
    values.setdefault("CONTENT_TYPE", "")
    return values


def full_detail(status: int, detail: str,
                environ: Mapping[str, Any] | None = None) -> str:
    """The ``detail`` text as Placement clients see it.

    Placement's errors are webob HTTP exceptions, and the ``detail`` of its
    JSON errors is the exception's body template, filled in and stripped of
    markup: usually the status's stock explanation, then the specific
    message; for 405, 406 and 415 a sentence naming the request's method,
    accepted type or media type instead.  Clients and tests match on that
    text, so we fill in webob's own templates with the request's environ.
    """
    exc_class = webob.exc.status_map.get(status)
    if exc_class is None:
        return "\n\n %s  " % detail
    exc = exc_class(detail=detail)
    body = exc._make_body(as_placement_sees_it(environ),
                          webob.exc.no_escape)  # the template, filled in
    return str(webob.exc.strip_tags(body))


def media_type(status: int, environ: Mapping[str, Any] | None = None) -> str:
    """The type of an error body: what the client's Accept prefers.

    Placement's errors are webob's, and webob offers ``text/html`` and
    ``application/json`` and falls back to ``text/plain`` when the client
    accepts neither; an Accept header webob cannot parse gets the first
    offer, HTML.  A missing, empty or ``*/*`` Accept means JSON.
    """
    if status not in webob.exc.status_map:
        return "application/json"
    accept = webob.acceptparse.create_accept_header(
        as_placement_sees_it(environ)["HTTP_ACCEPT"])
    offers = accept.acceptable_offers(offers=["text/html", "application/json"])
    return offers[0][0] if offers else "text/plain"


def page(status: int, detail: str, environ: Mapping[str, Any] | None,
         kind: str) -> bytes:
    """The ``text/html`` or ``text/plain`` error body, written by webob
    itself from its templates, as Placement's are."""
    exc = webob.exc.status_map[status](detail=detail)
    values = as_placement_sees_it(environ)
    text = exc.html_body(values) if kind == "text/html" else exc.plain_body(values)
    return str(text).encode("utf-8")


def render(
    status: int,
    title: str,
    detail: str,
    request_id: str | None,
    code: str = DEFAULT,
    version: tuple[int, int] | None = None,
    extra: dict[str, Any] | None = None,
    environ: Mapping[str, Any] | None = None,
) -> bytes:
    """The JSON body of every error response.

    ``code`` is included when the negotiated microversion is 1.23 or later;
    an error raised before negotiation (``version`` None) leaves it out.
    ``environ`` is the request's, for the sentences that name its method,
    accepted type or media type.
    """
    error: dict[str, Any] = {
        "status": status,
        "title": title,
        "detail": full_detail(status, detail, environ),
    }
    # Placement writes the code before the request id.
    if version is not None and version >= CODES_SINCE:
        error["code"] = code
    error["request_id"] = request_id
    if extra:
        error.update(extra)
    return json.dumps({"errors": [error]}).encode("utf-8")
