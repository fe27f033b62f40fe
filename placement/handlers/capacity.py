"""Handler for ``GET /capacity`` (not in OpenStack Placement).

Served only with ``[metrics] enabled`` (otherwise 404), under the
``placement:metrics`` policy rule, whatever the microversion.  The figures
are those of ``GET /metrics`` (:mod:`placement.metrics.capacity`, read at
most once per ``[metrics] capacity_interval``).

Query parameters, all optional:

* ``resources``, ``required``, ``member_of``: one request, with the syntax
  and rules of ``GET /allocation_candidates`` (checked as at 1.21, parsed
  as at the latest microversion; the same 400s, unknown classes and traits
  included).  The answer then has ``fits``: how many more instances of it
  the cloud can take, placed greedily host by host (defined in
  :mod:`placement.metrics.capacity`), and ``fits_by_aggregate``.
* ``provider``: part of a provider name; the answer then has ``trees``,
  the trees (at most 10) holding a provider so named, with usage.

Media types: JSON unless the client prefers ``text/html`` (a browser),
which gets the capacity page (:mod:`.capacity_page`); 406 when it accepts
neither.
"""

from __future__ import annotations

import datetime
from typing import Any

import webob

from placement import errors, exceptions, microversion, policies, responses
from placement.handlers import capacity_page
from placement.metrics import capacity
from placement.objects import capacity as capacity_obj
from placement.request import PlacementRequest
from placement.schemas import capacity as schemas

_OFFERS = ["application/json", "text/html"]
_GROUP_KEYS = ("resources", "required", "member_of")


def show_capacity(req: PlacementRequest) -> webob.Response:
    """GET /capacity: 200 (JSON or HTML); 400 for a bad request; 403 unless
    policy allows; 406 for an Accept without JSON or HTML."""
    req.authorize(policies.metrics.VIEW)
    media = _media_type(req)
    req.query(schemas.QUERY)
    pairs = [(key, value) for key, value in req.GET.items() if key != "provider"]
    group = _parse(req, pairs) if pairs else None
    report = capacity.current(req.ctx, with_traits=bool(
        group is not None and (group.required or group.forbidden)))
    asked = None
    if group is not None:
        asked = capacity.fits(report.figures, group)
    name = req.GET.get("provider")
    trees = None if not name else capacity_obj.trees_named(req.ctx, name)
    if media == "text/html":
        page = capacity_page.render_page(
            report, asked=asked, query=pairs, provider=name, trees=trees,
            base=req.script_name)
        resp = webob.Response(status=200, charset="utf-8", body=page.encode())
        resp.content_type = "text/html"
    else:
        resp = responses.json(req, render_capacity(report, asked, trees))
    resp.headers[microversion.VARY] = ", ".join(
        [v for v in (resp.headers.get(microversion.VARY), "Accept") if v])
    resp.headers["Cache-Control"] = "no-cache"
    return resp


def _media_type(req: PlacementRequest) -> str:
    if not req.headers.get("Accept"):
        return _OFFERS[0]
    offers = req.accept.acceptable_offers(_OFFERS)
    if not offers:
        raise errors.NotAcceptable("Only application/json and text/html are provided")
    return str(offers[0][0])


def _parse(req: PlacementRequest, pairs: list[tuple[str, str]]) -> Any:
    group = capacity.parse_group(pairs)
    try:
        capacity_obj.check_names(req.ctx, [name for name, _ in group.resources],
                                 group.trait_names)
    except exceptions.ResourceClassNotFound as exc:
        raise errors.BadRequest(
            "Invalid resource class in resources parameter: %s" % exc) from None
    except exceptions.TraitNotFound as exc:
        raise errors.BadRequest(str(exc)) from None
    return group


def _class_figures(totals: capacity_obj.ClassTotals) -> dict[str, Any]:
    return {"total": totals.total, "reserved": totals.reserved,
            "capacity": totals.capacity, "used": totals.used,
            "free": totals.free, "providers": totals.providers}


def render_capacity(report: capacity.Report, asked: capacity.Fits | None,
                    trees: list[capacity_obj.TreeProvider] | None) -> dict[str, Any]:
    """The JSON document: the same figures as the page."""
    figures = report.figures
    body: dict[str, Any] = {}
    if asked is not None:
        body["fits"] = asked.total
        body["fits_by_aggregate"] = dict(sorted(asked.aggregates.items()))
        body["hosts_with_room"] = len(asked.hosts)
    body.update({
        "read_at": datetime.datetime.fromtimestamp(
            report.read_at, datetime.timezone.utc).isoformat(),
        "providers": figures.providers,
        "resource_classes": {t.resource_class: _class_figures(t)
                             for t in figures.cloud},
        "aggregates": {uuid: {t.resource_class: _class_figures(t) for t in rows}
                       for uuid, rows in sorted(figures.aggregates.items())},
        "flavors": {flavor.name: {"query": flavor.query, "fits": fits.total,
                                  "fits_by_aggregate": dict(sorted(fits.aggregates.items()))}
                    for flavor, fits in report.flavors},
        "fullest_hosts": [
            {"name": host.name, "fullest": host.fullest,
             "resources": {c: {"used": used, "capacity": cap}
                           for c, (used, cap) in host.classes.items()}}
            for host in capacity.fullest_hosts(figures)],
    })
    if trees is not None:
        body["trees"] = [render_tree(tree) for tree in
                         capacity_page.tree_usage(figures, trees)]
    return body


def render_tree(tree: capacity_page.TreeNode) -> dict[str, Any]:
    return {"name": tree.provider.name, "uuid": tree.provider.uuid,
            "resources": {c: {"used": used, "capacity": cap}
                          for c, (used, cap) in tree.usage.items()},
            "children": [render_tree(child) for child in tree.children]}
