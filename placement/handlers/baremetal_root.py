"""GET / and GET /v1 of the bare-metal API: Ironic's version documents,
served without authentication.

Clients read the version range from them (python-ironicclient and
openstacksdk's discovery); links are built from the URL the client used,
so the API can be served under a prefix (``/baremetal``).
"""

from __future__ import annotations

from typing import Any

import webob

from placement import responses
from placement.baremetal import microversion
from placement.request import PlacementRequest


def _version(base: str) -> dict[str, Any]:
    return {
        "id": "v1",
        "links": [{"href": base + "/v1/", "rel": "self"}],
        "status": "CURRENT",
        "min_version": microversion.format_version(microversion.MIN_VERSION),
        "version": microversion.format_version(microversion.MAX_VERSION),
    }


def _resource_links(base: str, name: str) -> list[dict[str, str]]:
    return [{"href": "%s/v1/%s/" % (base, name), "rel": "self"},
            {"href": "%s/%s/" % (base, name), "rel": "bookmark"}]


def root(req: PlacementRequest) -> webob.Response:
    """GET /: the one API version, v1, with its version range."""
    base = req.application_url
    return responses.document({
        "name": "OpenStack Ironic API",
        "description": ("Ironic is an OpenStack project which enables the "
                        "provision and management of baremetal machines."),
        "default_version": _version(base),
        "versions": [_version(base)],
    })


def v1(req: PlacementRequest) -> webob.Response:
    """GET /v1: the v1 document; from 1.52 it links the allocations.

    Only the resources this service serves are linked (no nodes, ports,
    chassis or drivers: nodes are Placement's resource providers).
    """
    base = req.application_url
    document: dict[str, Any] = {
        "id": "v1",
        "links": [
            {"href": base + "/v1/", "rel": "self"},
            {"href": "https://docs.openstack.org//ironic/latest/contributor//"
                     "webapi.html", "rel": "describedby", "type": "text/html"},
        ],
        "media_types": {"base": "application/json",
                        "type": "application/vnd.openstack.ironic.v1+json"},
        "version": _version(base),
    }
    if req.version >= microversion.ALLOCATIONS:
        document["allocations"] = _resource_links(base, "allocations")
    return responses.document(document)
