"""Ironic's API versions: negotiation and the headers every answer carries.

A request names its version in ``X-OpenStack-Ironic-API-Version: 1.Y`` (or
``OpenStack-API-Version: baremetal 1.Y``; ``latest`` is the maximum); no
header means the minimum, 1.1, where allocations do not exist yet.  A
version out of range or unparsable is refused with 406, as Ironic does
(not 400 as Placement does).  Every answer, errors included, carries
``X-OpenStack-Ironic-API-Minimum-Version`` and ``-Maximum-Version``; every
answer to a negotiated request also carries the version it was served at.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import microversion_parse
import webob

from placement import errors
from placement.middleware.errors import error_response

Version = tuple[int, int]

SERVICE_TYPE = "baremetal"
HEADER = "X-OpenStack-Ironic-API-Version"
MIN_HEADER = "X-OpenStack-Ironic-API-Minimum-Version"
MAX_HEADER = "X-OpenStack-Ironic-API-Maximum-Version"

# The versions whose behaviour this service implements, oldest first.  The
# allocation API did not change after 1.79, so that is the maximum: a
# client asking for more (python-ironicclient starts with its newest) is
# told the range with a 406 and negotiates down.
VERSIONS: tuple[tuple[Version, str], ...] = (
    ((1, 1), "The initial version; no allocations."),
    ((1, 52), "Allocations: create, list, show, delete."),
    ((1, 57), "PATCH of an allocation's name and extra."),
    ((1, 58), "Backfilling: an allocation for a node already consumed."),
    ((1, 60), "owner of allocations."),
    ((1, 79), "A node whose name is the allocation's is tried first."),
)
MIN_VERSION: Version = VERSIONS[0][0]
MAX_VERSION: Version = VERSIONS[-1][0]

ALLOCATIONS = (1, 52)
ALLOCATION_UPDATE = (1, 57)
ALLOCATION_BACKFILL = (1, 58)
ALLOCATION_OWNER = (1, 60)
ALLOCATION_NODE_NAME = (1, 79)

# Where the negotiated version is kept for the application.
VERSION_ENVIRON = "placement.microversion"


def format_version(version: Version) -> str:
    return "%d.%d" % version


class VersionNotAcceptable(errors.NotAcceptable):
    """A refused version; Ironic words these 406s as plain HTTP errors
    (``code``, ``title``, ``description``), not as faults."""


def _range() -> str:
    return "[%s, %s]" % (format_version(MIN_VERSION), format_version(MAX_VERSION))


def negotiate(headers: dict[str, str]) -> Version:
    """The version a request asks for; VersionNotAcceptable (406) unless
    it is a ``major.minor`` within our range."""
    try:
        text = microversion_parse.get_version(
            headers, service_type=SERVICE_TYPE, legacy_headers=[HEADER])
        if not text:
            return MIN_VERSION
        if text.lower() == "latest":
            return MAX_VERSION
        parsed = microversion_parse.parse_version_string(text)
    except (ValueError, TypeError, AttributeError):
        raise VersionNotAcceptable("Invalid value for %s header" % HEADER) from None
    version = (parsed.major, parsed.minor)
    if parsed.major != MIN_VERSION[0]:
        raise VersionNotAcceptable(
            "Mutually exclusive versions requested. Version %s requested but "
            "not supported by this service. The supported version range is: "
            "%s." % (format_version(version), _range()))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise VersionNotAcceptable(
            "Version %s was requested but the minor version is not supported "
            "by this service. The supported version range is: %s."
            % (format_version(version), _range()))
    return version


def bounds_headers() -> list[tuple[str, str]]:
    return [(MIN_HEADER, format_version(MIN_VERSION)),
            (MAX_HEADER, format_version(MAX_VERSION))]


def response_headers(version: Version | None) -> list[tuple[str, str]]:
    """The headers of an answer: the bounds, and the version once known."""
    headers = bounds_headers()
    if version is not None:
        headers.append((HEADER, format_version(version)))
    return headers


class VersionMiddleware:
    """Negotiates the version before anything else looks at the request,
    and adds the version headers to every answer that passes through it."""

    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        try:
            version = negotiate(dict(webob.Request(environ).headers))
        except errors.ApiError as exc:
            return error_response(environ, exc)(environ, start_response)
        environ[VERSION_ENVIRON] = version
        extra = response_headers(version)

        def _start_response(status: str, headers: list[tuple[str, str]],
                            exc_info: Any = None) -> Any:
            names = {name.lower() for name, _ in headers}
            headers = list(headers) + [
                (name, value) for name, value in extra if name.lower() not in names]
            return start_response(status, headers, exc_info)

        return self.application(environ, _start_response)
