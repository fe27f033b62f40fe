"""Microversions: the table of versions and the header negotiation.

A request names its version in ``OpenStack-API-Version: placement X.Y``
(or ``latest``); no header means the minimum.  Versions are compared as
``(major, minor)`` tuples everywhere in the code.  ``VERSIONS`` is the one
list of what each version added; the root document reads its bounds from it.
"""

from __future__ import annotations

from typing import Mapping

import microversion_parse

from placement import errors

SERVICE_TYPE = "placement"
HEADER = "OpenStack-API-Version"
Version = tuple[int, int]

# (version, what it changed), oldest first.  Add new versions at the end and
# describe them at length in api-ref/source/history.rst.
VERSIONS: tuple[tuple[Version, str], ...] = (
    ((1, 0), "Resource providers, inventories, allocations and usages."),
    ((1, 1), "Provider aggregates."),
    ((1, 2), "Custom resource classes."),
    ((1, 3), "member_of filter on GET /resource_providers."),
    ((1, 4), "resources filter on GET /resource_providers."),
    ((1, 5), "DELETE all inventories of a provider."),
    ((1, 6), "Traits."),
    ((1, 7), "PUT /resource_classes/{name} creates a class idempotently."),
    ((1, 8), "project_id and user_id required when allocating."),
    ((1, 9), "GET /usages by project and user."),
    ((1, 10), "GET /allocation_candidates."),
    ((1, 11), "allocations link on providers."),
    ((1, 12), "Allocations as a dict keyed by provider uuid."),
    ((1, 13), "POST /allocations for several consumers."),
    ((1, 14), "Nested providers: parent and root uuids, in_tree filter."),
    ((1, 15), "last-modified and cache-control headers."),
    ((1, 16), "limit on allocation candidates."),
    ((1, 17), "required traits on allocation candidates."),
    ((1, 18), "required traits on GET /resource_providers."),
    ((1, 19), "Aggregates carry the provider generation."),
    ((1, 20), "POST /resource_providers returns the provider."),
    ((1, 21), "member_of on allocation candidates."),
    ((1, 22), "Forbidden traits."),
    ((1, 23), "Error codes in error bodies."),
    ((1, 24), "Repeated member_of means all of them."),
    ((1, 25), "Numbered request groups and group_policy."),
    ((1, 26), "Inventory reserved may equal total."),
    ((1, 27), "Provider summaries include every inventory."),
    ((1, 28), "Consumer generations."),
    ((1, 29), "Nested providers in allocation candidates."),
    ((1, 30), "POST /reshaper."),
    ((1, 31), "in_tree on allocation candidates."),
    ((1, 32), "Forbidden aggregates."),
    ((1, 33), "Request group suffixes may be strings."),
    ((1, 34), "Request group mappings in candidates and allocations."),
    ((1, 35), "root_required on allocation candidates."),
    ((1, 36), "same_subtree and resourceless request groups."),
    ((1, 37), "Providers may be re-parented."),
    ((1, 38), "Consumer types."),
    ((1, 39), "Any-of traits with in: and repeated required."),
)
MIN_VERSION: Version = VERSIONS[0][0]
MAX_VERSION: Version = VERSIONS[-1][0]


def format_version(version: Version) -> str:
    return "%d.%d" % version


_VERSION_STRINGS = [format_version(version) for version, _ in VERSIONS]


def parse_version(text: str) -> Version:
    """``"1.10"`` -> ``(1, 10)``; ``latest`` -> the maximum.

    Raises :class:`errors.BadRequest` for anything else.
    """
    if text == "latest":
        return MAX_VERSION
    try:
        parsed = microversion_parse.parse_version_string(text)
    except TypeError as exc:
        raise errors.BadRequest("Invalid microversion: %s" % exc) from None
    return parsed.major, parsed.minor


def negotiate(headers: Mapping[str, str]) -> Version:
    """The version a request asks for, checked against our bounds.

    No header means the minimum.  Malformed -> 400; not one of ours -> 406
    naming the bounds.  microversion-parse does the parsing, so that the
    messages are word for word those clients know ("Invalid microversion:
    invalid version string: ...", "... Unacceptable version header: ...").
    """
    try:
        parsed = microversion_parse.extract_version(
            dict(headers), SERVICE_TYPE, _VERSION_STRINGS)
    except TypeError as exc:
        raise errors.BadRequest("Invalid microversion: %s" % exc) from None
    except ValueError as exc:
        raise errors.NotAcceptable(
            "Invalid microversion: %s" % exc,
            extra={
                "max_version": format_version(MAX_VERSION),
                "min_version": format_version(MIN_VERSION),
            },
        ) from None
    return parsed.major, parsed.minor


# Where WSGI puts the only header negotiate() reads (it names no legacy
# headers).
HEADER_ENVIRON = "HTTP_OPENSTACK_API_VERSION"


# The names of the version headers of a response, in lower case as
# OpenStack Placement writes them (names are case-insensitive, but clients
# and tools that compare responses byte for byte see the difference).
RESPONSE_HEADER = HEADER.lower()
VARY = "vary"


def response_headers(version: Version) -> dict[str, str]:
    """Headers every response carries once a version is known."""
    return {
        RESPONSE_HEADER: "%s %s" % (SERVICE_TYPE, format_version(version)),
        VARY: RESPONSE_HEADER,
    }
