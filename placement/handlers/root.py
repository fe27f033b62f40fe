"""GET /: the version document, served without authentication."""

from __future__ import annotations

import webob

from placement import microversion, responses
from placement.request import PlacementRequest


def home(req: PlacementRequest) -> webob.Response:
    """The one API version with its microversion bounds.

    ``min_version`` and ``max_version`` are the range clients may ask for in
    ``OpenStack-API-Version``.
    """
    version = {
        "id": "v1.0",
        "max_version": microversion.format_version(microversion.MAX_VERSION),
        "min_version": microversion.format_version(microversion.MIN_VERSION),
        "status": "CURRENT",
        "links": [{"rel": "self", "href": ""}],
    }
    # From 1.15 it carries the caching headers like every other document
    # (last-modified is the time of the request: nothing stored changes it).
    return responses.json(req, {"versions": [version]})
