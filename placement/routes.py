"""The route table and the dispatcher that applies it.

``ROUTES`` lists every (method, URL template, handler, minimum microversion,
public).  Handlers are named ``"module:function"`` under
``placement.handlers`` and imported once, when the router is built.

Path parameters carry no regular expressions on purpose: a malformed uuid
in a provider URL reaches the handler, which answers with its own 404
("No resource provider with uuid ... found") as clients expect, instead of
a generic routing 404.

Version gating: a URL whose every route is newer than the request's
microversion does not exist at that version (404); a known URL whose method
is newer answers 405 with the methods it has at that version in ``Allow``.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable
from urllib.parse import quote

import routes as routes_lib
import webob
from oslo_config import cfg

from placement import errors

Version = tuple[int, int]
Handler = Callable[..., webob.Response]
# A path's URL template and variables (as pairs), or None for no route.
_Match = tuple[str, tuple[tuple[str, str], ...]] | None
# Where the router keeps a request's match, as (path, match).
MATCH_ENVIRON = "placement.route_match"


@dataclasses.dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: str
    min_version: Version = (1, 0)
    public: bool = False
    # Whether an Accept header that excludes JSON is refused with 406.
    # Placement checks it on the reads that answer with a document, not on
    # writes, nor on the root document or the (bodiless) trait check.
    checks_accept: bool = True
    # Served only with [metrics] enabled (see for_config); without it the
    # URL does not exist.
    metrics: bool = False


_RP = "/resource_providers/{uuid}"

ROUTES: tuple[Route, ...] = (
    Route("GET", "/", "root:home", public=True, checks_accept=False),
    # Not in OpenStack Placement: this API's OpenAPI description.
    Route("GET", "/openapi.json", "openapi:show_document", public=True),
    # Resource providers.
    Route("GET", "/resource_providers", "resource_provider:list_providers"),
    Route("POST", "/resource_providers", "resource_provider:create_provider"),
    Route("GET", _RP, "resource_provider:show_provider"),
    Route("DELETE", _RP, "resource_provider:delete_provider"),
    Route("PUT", _RP, "resource_provider:update_provider"),
    # Inventories.
    Route("GET", _RP + "/inventories", "inventory:list_inventories"),
    Route("POST", _RP + "/inventories", "inventory:create_inventory"),
    Route("PUT", _RP + "/inventories", "inventory:replace_inventories"),
    Route("DELETE", _RP + "/inventories", "inventory:delete_inventories", (1, 5)),
    Route("GET", _RP + "/inventories/{resource_class}", "inventory:show_inventory"),
    Route("PUT", _RP + "/inventories/{resource_class}", "inventory:update_inventory"),
    Route("DELETE", _RP + "/inventories/{resource_class}",
          "inventory:delete_inventory"),
    # Aggregates, traits, usages and allocations of one provider.
    Route("GET", _RP + "/aggregates", "aggregate:list_aggregates", (1, 1)),
    Route("PUT", _RP + "/aggregates", "aggregate:set_aggregates", (1, 1)),
    Route("GET", _RP + "/traits", "trait:list_provider_traits", (1, 6)),
    Route("PUT", _RP + "/traits", "trait:set_provider_traits", (1, 6)),
    Route("DELETE", _RP + "/traits", "trait:delete_provider_traits", (1, 6)),
    Route("GET", _RP + "/usages", "usage:list_provider_usages"),
    Route("GET", _RP + "/allocations", "allocation:list_provider_allocations"),
    # Resource classes.
    Route("GET", "/resource_classes", "resource_class:list_resource_classes", (1, 2)),
    Route("POST", "/resource_classes", "resource_class:create_resource_class", (1, 2)),
    Route("GET", "/resource_classes/{name}",
          "resource_class:show_resource_class", (1, 2)),
    Route("PUT", "/resource_classes/{name}",
          "resource_class:update_resource_class", (1, 2)),
    Route("DELETE", "/resource_classes/{name}",
          "resource_class:delete_resource_class", (1, 2)),
    # Traits.
    Route("GET", "/traits", "trait:list_traits", (1, 6)),
    Route("GET", "/traits/{name}", "trait:show_trait", (1, 6), checks_accept=False),
    Route("PUT", "/traits/{name}", "trait:create_trait", (1, 6)),
    Route("DELETE", "/traits/{name}", "trait:delete_trait", (1, 6)),
    # Allocations, usages, candidates, reshaper.
    Route("POST", "/allocations", "allocation:set_allocations", (1, 13)),
    Route("GET", "/allocations/{consumer_uuid}", "allocation:list_allocations"),
    Route("PUT", "/allocations/{consumer_uuid}",
          "allocation:set_allocations_for_consumer"),
    Route("DELETE", "/allocations/{consumer_uuid}", "allocation:delete_allocations"),
    Route("GET", "/allocation_candidates",
          "allocation_candidate:list_allocation_candidates", (1, 10)),
    Route("GET", "/usages", "usage:get_total_usages", (1, 9)),
    Route("POST", "/reshaper", "reshaper:reshape", (1, 30)),
    # Not in OpenStack Placement: the operator's views.  Unversioned, and
    # they negotiate their own media types.
    Route("GET", "/metrics", "metrics:show_metrics", checks_accept=False,
          metrics=True),
    Route("GET", "/capacity", "capacity:show_capacity", checks_accept=False,
          metrics=True),
)


def for_config(conf: cfg.ConfigOpts, table: tuple[Route, ...] = ROUTES
               ) -> tuple[Route, ...]:
    """The routes this configuration serves: the metrics routes only with
    ``[metrics] enabled``."""
    if conf.metrics.enabled:
        return table
    return tuple(route for route in table if not route.metrics)


def _resolve(name: str) -> Handler:
    module_name, _sep, function = name.partition(":")
    module = importlib.import_module("placement.handlers." + module_name)
    handler: Handler = getattr(module, function)
    return handler


class Router:
    """Matches a request to a handler, honouring microversion gates."""

    def __init__(self, table: tuple[Route, ...] = ROUTES) -> None:
        self._mapper = routes_lib.Mapper()
        self._by_path: dict[str, list[tuple[Route, Handler]]] = {}
        for route in table:
            if route.path not in self._by_path:
                self._by_path[route.path] = []
                self._mapper.connect(None, route.path, template=route.path)
            self._by_path[route.path].append((route, _resolve(route.handler)))
        self._public = {r.path for r in table if r.public}
        self._metrics = {r.path for r in table if r.metrics}
        # routes compiles its regular expressions at the first match; do
        # it now, while the worker starts, not in its first request.
        self._mapper.create_regs()

    def match_path(self, path: str) -> tuple[str, dict[str, str]] | None:
        """The URL template ``path`` matches and its variables; None when
        it matches none."""
        found = self._matched(path)
        return None if found is None else (found[0], dict(found[1]))

    def _matched(self, path: str) -> _Match:
        match = self._mapper.match(self._normal(path or "/"))
        if match is None:
            return None
        template = match.pop("template")
        return template, tuple(match.items())

    def _match(self, environ: dict[str, Any], path: str) -> _Match:
        """What the request's ``path`` matches, matched once per request:
        the first layer that asks (authentication, for the public paths)
        leaves the answer in the environ, and the later ones (dispatch, the
        metrics' route label) read it.  It is kept with the path it is for:
        dispatch matches the path decoded as text, which differs from
        ``PATH_INFO`` when that is not ASCII, and a layer that rewrote the
        path would be matched afresh too."""
        kept = environ.get(MATCH_ENVIRON)
        if kept is not None and kept[0] == path:
            found: _Match = kept[1]
            return found
        found = self._matched(path)
        environ[MATCH_ENVIRON] = (path, found)
        return found

    def template(self, environ: dict[str, Any]) -> str | None:
        """The URL template the request's path matches, if any (the
        metrics' route label)."""
        found = self._match(environ, environ.get("PATH_INFO", "/"))
        return None if found is None else found[0]

    def is_public(self, environ: dict[str, Any]) -> bool:
        """Whether a request's path is served without authentication (the
        root)."""
        return self.template(environ) in self._public

    def is_metrics(self, environ: dict[str, Any]) -> bool:
        """Whether a request's path is one of the metrics routes, which
        skip authentication when their policy rule lets anyone in."""
        return self.template(environ) in self._metrics

    def resolve(
        self, environ: dict[str, Any], method: str, path: str, version: Version
    ) -> tuple[Route, Handler, dict[str, str]]:
        """The route, handler and URL variables for a request; 404 or 405."""
        found = self._match(environ, path)
        if found is None:
            raise self._unknown_url(vary=False)
        # No name or uuid holds a NUL (no database stores one), so a path
        # with one names nothing, on every backend.
        if "\x00" in path:
            raise self._unknown_url()
        template, urlvars = found
        declared = self._by_path[template]
        for route, handler in declared:
            if route.method != method:
                continue
            if route.min_version <= version:
                return route, handler, dict(urlvars)
            raise self._too_old(route, [other for other, _ in declared], version)
        raise self._unknown_method([route.method for route, _ in declared])

    # How refusals are worded: Placement's, below; another API's router
    # (placement/baremetal/routes.py) words its own.  The details are
    # Placement's: nothing more than the stock explanation for an unknown
    # or not-yet-existing URL, and for a method newer than the request's
    # version.

    def _normal(self, path: str) -> str:
        return path

    def _unknown_url(self, vary: bool = True) -> errors.ApiError:
        return errors.NotFound("", vary=vary)

    def _too_old(self, route: Route, declared: list[Route], version: Version
                 ) -> errors.ApiError:
        if all(other.min_version > version for other in declared):
            return errors.NotFound("")  # the URL is newer than the request
        # A method newer than the request on an older URL: 405 and, like
        # Placement, no Allow header.
        return errors.MethodNotAllowed([], detail="")

    def _unknown_method(self, methods: list[str]) -> errors.ApiError:
        # Allow lists every declared method, in the table's order, whatever
        # the version.
        return errors.MethodNotAllowed(methods)


def provider_url(uuid: str) -> str:
    return "/resource_providers/%s" % quote(uuid)
