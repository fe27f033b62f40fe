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
from typing import Any

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
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = dict(headers or {})
        # Additional members of the error object (406 carries min/max).
        self.extra = dict(extra or {})


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

    def __init__(self, allowed: list[str]) -> None:
        allow = ", ".join(allowed)
        super().__init__(
            "The method specified is not allowed for this resource.",
            headers={"Allow": allow},
        )


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


def full_detail(status: int, detail: str) -> str:
    """The ``detail`` text as Placement clients see it.

    Placement's errors are webob HTTP exceptions, whose plain-text body puts
    the status's stock explanation before the specific message.  Clients and
    tests match on that text, so we build it the same way from webob's own
    explanations.
    """
    exc_class = webob.exc.status_map.get(status)
    explanation = getattr(exc_class, "explanation", "") if exc_class else ""
    return f"{explanation}\n\n {detail}  "


def render(
    status: int,
    title: str,
    detail: str,
    request_id: str | None,
    code: str = DEFAULT,
    version: tuple[int, int] | None = None,
    extra: dict[str, Any] | None = None,
) -> bytes:
    """The JSON body of every error response.

    ``code`` is included when the negotiated microversion is 1.23 or later;
    an error raised before negotiation (``version`` None) leaves it out.
    """
    error: dict[str, Any] = {
        "status": status,
        "title": title,
        "detail": full_detail(status, detail),
        "request_id": request_id,
    }
    if version is not None and version >= CODES_SINCE:
        error["code"] = code
    if extra:
        error.update(extra)
    return json.dumps({"errors": [error]}).encode("utf-8")
