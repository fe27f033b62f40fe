"""The bare-metal API's route table and its router.

Handlers are named ``"module:function"`` under ``placement.handlers``, as
in Placement's table.  What differs is Ironic's version gating: below a
route's minimum version a GET answers 404 and any other method 405, both
with the route's own sentence ("The API version does not allow
allocations"), or, for a route without one (a node's allocation), a plain
404 whatever the method; an unknown URL or method answers a plain 404 or
405.  A
trailing slash is ignored (``/v1`` and ``/v1/`` are the same document).
"""

from __future__ import annotations

import dataclasses

from placement import errors, routes
from placement.baremetal import faults, microversion

_ALLOCATIONS_TOO_OLD = "The API version does not allow allocations"
_UPDATE_TOO_OLD = "The API version does not allow updating allocations"


@dataclasses.dataclass(frozen=True)
class Route(routes.Route):
    # What a request older than min_version is told.
    too_old: str = ""


_ALLOCATIONS = "/v1/allocations"
_ALLOCATION = "/v1/allocations/{ident}"
_NODE_ALLOCATION = "/v1/nodes/{node}/allocation"

ROUTES: tuple[Route, ...] = (
    Route("GET", "/", "baremetal_root:root", public=True, checks_accept=False),
    Route("GET", "/v1", "baremetal_root:v1", public=True, checks_accept=False),
    Route("GET", _ALLOCATIONS, "baremetal_allocation:list_allocations",
          microversion.ALLOCATIONS, too_old=_ALLOCATIONS_TOO_OLD),
    Route("POST", _ALLOCATIONS, "baremetal_allocation:create_allocation",
          microversion.ALLOCATIONS, too_old=_ALLOCATIONS_TOO_OLD),
    Route("GET", _ALLOCATION, "baremetal_allocation:show_allocation",
          microversion.ALLOCATIONS, too_old=_ALLOCATIONS_TOO_OLD),
    Route("PATCH", _ALLOCATION, "baremetal_allocation:update_allocation",
          microversion.ALLOCATION_UPDATE, too_old=_UPDATE_TOO_OLD),
    Route("DELETE", _ALLOCATION, "baremetal_allocation:delete_allocation",
          microversion.ALLOCATIONS, too_old=_ALLOCATIONS_TOO_OLD),
    Route("GET", _NODE_ALLOCATION, "baremetal_allocation:show_node_allocation",
          microversion.ALLOCATIONS),
    Route("DELETE", _NODE_ALLOCATION, "baremetal_allocation:delete_node_allocation",
          microversion.ALLOCATIONS),
)


def _normal(path: str) -> str:
    return path.rstrip("/") or "/"


class Router(routes.Router):
    def __init__(self) -> None:
        super().__init__(ROUTES)

    def _normal(self, path: str) -> str:
        return _normal(path)

    def _unknown_url(self, vary: bool = True) -> errors.ApiError:
        return faults.RoutingError(errors.NotFound(""))

    def _too_old(self, route: routes.Route, declared: list[routes.Route],
                 version: routes.Version) -> errors.ApiError:
        too_old = getattr(route, "too_old", "")
        if not too_old:
            return faults.RoutingError(errors.NotFound(""))
        if route.method == "GET":
            return errors.NotFound(too_old)
        return errors.MethodNotAllowed([], detail=too_old)

    def _unknown_method(self, methods: list[str]) -> errors.ApiError:
        # ``Allow`` as this API always spelled it (Placement's is lower case).
        return faults.RoutingError(errors.MethodNotAllowed(methods, detail="",
                                                           header="Allow"))


def allocation_url(application_url: str, uuid: str) -> str:
    return "%s/v1/allocations/%s" % (application_url, uuid)
