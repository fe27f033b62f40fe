"""/v1/allocations of the bare-metal API: Ironic's allocations, claimed
through Placement (see ``objects/baremetal_allocation.py``).

Status codes, fields and sentences are Ironic's, except where Ironic 39 is
wrong: a ``uuid`` that is not a UUID and malformed JSON are 400 (Ironic
stores the one and answers 500 to the other), and a refused backfill is
409 and leaves no allocation behind (Ironic answers 500 and keeps an
allocation in ``error``).
"""

from __future__ import annotations

import re
from typing import Any

import jsonpatch
import webob
from oslo_policy import policy as oslo_policy
from oslo_utils import uuidutils

from placement import errors, exceptions, policy, responses
from placement.baremetal import microversion, routes, validation
from placement.objects import baremetal_allocation as allocation_obj
from placement.objects import baremetal_node as node_obj
from placement.policies import baremetal_allocation as policies
from placement.request import PlacementRequest
from placement.schemas import baremetal_allocation as schemas

# Ironic's logical names: RFC 3986 unreserved characters, at most 255.
_NAME = re.compile(r"^[A-Za-z0-9\-._~]{1,255}$")
_PATCHABLE = ("name", "extra")
# Ironic's [api] max_limit default: a longer page is cut to it.
MAX_LIMIT = 1000
_NOT_ACCEPTABLE = "Request not acceptable."


def _stamp(moment: Any) -> str | None:
    return None if moment is None else moment.isoformat() + "+00:00"


def render(alloc: allocation_obj.BaremetalAllocation, req: PlacementRequest,
           fields: list[str] | None = None) -> dict[str, Any]:
    """An allocation as Ironic shows it at the request's version."""
    url = routes.allocation_url(req.application_url, alloc.uuid)
    bookmark = "%s/allocations/%s" % (req.application_url, alloc.uuid)
    doc: dict[str, Any] = {
        "uuid": alloc.uuid, "created_at": _stamp(alloc.created_at),
        "updated_at": _stamp(alloc.updated_at),
        "candidate_nodes": alloc.candidate_nodes, "extra": alloc.extra,
        "last_error": alloc.last_error, "name": alloc.name, "owner": alloc.owner,
        "resource_class": alloc.resource_class, "state": alloc.state,
        "traits": alloc.traits,
        "links": [{"href": url, "rel": "self"}, {"href": bookmark, "rel": "bookmark"}],
        "node_uuid": alloc.node_uuid,
    }
    if req.version < microversion.ALLOCATION_OWNER:
        del doc["owner"]
    if fields:
        doc = {key: value for key, value in doc.items()
               if key in fields or key == "links"}
    return doc


def _allowed(req: PlacementRequest, rule: str, owner: str | None = None) -> bool:
    try:
        policy.authorize(req.ctx, rule,
                         {"allocation.owner": owner, "project_id": req.ctx.project_id})
    except oslo_policy.PolicyNotAuthorized:
        return False
    return True


def _authorize(req: PlacementRequest, rule: str, owner: str | None = None) -> None:
    """403, worded as Ironic words it, unless policy allows ``rule``."""
    if not _allowed(req, rule, owner):
        raise errors.Forbidden(
            "Access was denied to the following resource: %s" % rule, vary=False)


def _retrieve(req: PlacementRequest, rule: str) -> allocation_obj.BaremetalAllocation:
    """The allocation of the URL, as Ironic checks it: 404 unless policy
    lets the caller see it (other projects' allocations stay hidden), then
    403 unless ``rule`` allows what the caller asks."""
    ident = req.urlvars["ident"]
    try:
        alloc = allocation_obj.get(req.ctx, ident)
    except exceptions.BaremetalAllocationNotFound as exc:
        raise errors.NotFound(str(exc)) from None
    if not _allowed(req, policies.GET, alloc.owner):
        raise errors.NotFound(str(exceptions.BaremetalAllocationNotFound(ident=ident)))
    if rule != policies.GET:
        _authorize(req, rule, alloc.owner)
    return alloc


def _node_allocation(req: PlacementRequest, rule: str,
                     unknown_node: type[errors.ApiError]
                     ) -> allocation_obj.BaremetalAllocation:
    """The allocation holding the node of the URL, checked as
    :func:`_retrieve` checks one.  An unknown node is ``unknown_node``
    (Ironic: 400 for a GET, 404 for a DELETE)."""
    ident = req.urlvars["node"]
    try:
        node = node_obj.get(req.ctx, ident)
    except exceptions.BaremetalNodeNotFound as exc:
        raise unknown_node(str(exc)) from None
    found = allocation_obj.list_all(req.ctx, filters={"node_uuid": node.uuid}, limit=1)
    if not found or not _allowed(req, policies.GET, found[0].owner):
        raise errors.NotFound(str(exceptions.BaremetalNodeAllocationNotFound(ident=ident)))
    if rule != policies.GET:
        _authorize(req, rule, found[0].owner)
    return found[0]


def _fields(req: PlacementRequest) -> list[str] | None:
    text = req.GET.get("fields")
    if text is None:
        return None
    fields = [field for field in text.split(",") if field]
    for field in fields:
        validation.check(field, schemas.FIELDS.at(req.version) or {})
    return fields


def _node_allocation_fields(req: PlacementRequest) -> list[str] | None:
    """``fields`` of a node's allocation: the same choice, which Ironic
    refuses in other words than for ``/v1/allocations``."""
    fields = [field for field in req.GET.get("fields", "").split(",") if field]
    shown = (schemas.FIELDS.at(req.version) or {}).get("enum", ())
    unknown = [field for field in fields if field not in shown]
    if unknown:
        raise errors.BadRequest('Field(s) "%s" are not valid' % ", ".join(unknown))
    return fields or None


def show_allocation(req: PlacementRequest) -> webob.Response:
    """GET /v1/allocations/{uuid or name} (1.52); ``fields`` selects fields;
    ``owner`` shows from 1.60."""
    alloc = _retrieve(req, policies.GET)
    return responses.document(render(alloc, req, _fields(req)))


def show_node_allocation(req: PlacementRequest) -> webob.Response:
    """GET /v1/nodes/{uuid or name}/allocation (1.52): the allocation
    holding the node, as ``GET /v1/allocations/{uuid}`` shows it."""
    alloc = _node_allocation(req, policies.GET, unknown_node=errors.BadRequest)
    return responses.document(render(alloc, req, _node_allocation_fields(req)))


def _list_owner(req: PlacementRequest, owner: str | None) -> str | None:
    """Ironic's owner scoping: whoever may not list all allocations lists
    their project's, and may not ask for another's (403)."""
    if owner is not None and req.version < microversion.ALLOCATION_OWNER:
        raise errors.NotAcceptable(_NOT_ACCEPTABLE)
    if _allowed(req, policies.LIST_ALL):
        return owner
    project = req.ctx.project_id
    if not project or (owner and owner != project):
        _authorize(req, policies.LIST_ALL)
    _authorize(req, policies.LIST)
    return str(project)


def _limit(text: str | None) -> int:
    if text is None:
        return MAX_LIMIT
    try:
        limit = int(text)
    except ValueError:
        raise errors.BadRequest("Expected an integer for limit: %s" % text) from None
    if limit <= 0:
        raise errors.BadRequest("Limit must be positive")
    return min(limit, MAX_LIMIT)


def _sort(req: PlacementRequest) -> tuple[str, str]:
    key = req.GET.get("sort_key", "id")
    direction = req.GET.get("sort_dir", "asc")
    validation.check(direction, schemas.SORT_DIR)
    if key in ("extra", "candidate_nodes", "traits"):
        raise errors.BadRequest(
            "The sort_key value %s is an invalid field for sorting" % key)
    if key not in allocation_obj.SORT_COLUMNS:
        raise errors.BadRequest(
            'The sort_key value "%s" is an invalid field for sorting' % key)
    return key, direction


def _filters(req: PlacementRequest) -> dict[str, str]:
    filters = {name: req.GET[name] for name in ("resource_class", "state")
               if name in req.GET}
    owner = _list_owner(req, req.GET.get("owner"))
    if owner is not None:
        filters["owner"] = owner
    if req.GET.get("node"):
        try:
            filters["node_uuid"] = node_obj.get(req.ctx, req.GET["node"]).uuid
        except exceptions.BaremetalNodeNotFound as exc:
            raise errors.BadRequest(str(exc)) from None
    return filters


def _marker(req: PlacementRequest) -> allocation_obj.BaremetalAllocation | None:
    marker = req.GET.get("marker")
    if marker is None:
        return None
    validation.check(marker, schemas.MARKER)
    try:
        return allocation_obj.get(req.ctx, marker)
    except exceptions.BaremetalAllocationNotFound as exc:
        raise errors.NotFound(str(exc)) from None


def list_allocations(req: PlacementRequest) -> webob.Response:
    """GET /v1/allocations (1.52): filters node, resource_class, state and
    (1.60) owner; fields; limit, marker, sort_key, sort_dir.  A full page
    links the next one, as Ironic does (the filters are not repeated)."""
    filters = _filters(req)
    fields = _fields(req)
    limit = _limit(req.GET.get("limit"))
    sort_key, sort_dir = _sort(req)
    found = allocation_obj.list_all(req.ctx, filters=filters, sort_key=sort_key,
                                    sort_dir=sort_dir, limit=limit,
                                    marker=_marker(req))
    body: dict[str, Any] = {"allocations": [render(a, req, fields) for a in found]}
    if found and len(found) == limit:
        selected = "&fields=%s" % ",".join(fields) if fields else ""
        body["next"] = "%s/v1/allocations?sort_key=%s&sort_dir=%s%s&limit=%d&marker=%s" % (
            req.application_url, sort_key, sort_dir, selected, limit, found[-1].uuid)
    return responses.document(body)


def _creation_owner(req: PlacementRequest, body: dict[str, Any]) -> str | None:
    """Ironic's rule: who may not create for any project creates for their
    own (403 naming another); ``owner`` below 1.60 is 406."""
    _authorize(req, policies.CREATE)
    if "owner" in body and req.version < microversion.ALLOCATION_OWNER:
        raise errors.NotAcceptable(_NOT_ACCEPTABLE)
    requested = body.get("owner")
    if _allowed(req, policies.CREATE_RESTRICTED):
        return requested
    project = req.ctx.project_id
    if requested and requested != project:
        raise errors.Forbidden(
            "Cannot create allocation with an owner Project ID value %s not "
            "matching the requester Project ID %s. Policy %s is required for "
            "this capability." % (requested, project, policies.CREATE_RESTRICTED))
    return str(project) if project else None


def _wanted(req: PlacementRequest, body: dict[str, Any], owner: str | None,
            backfilling: bool) -> allocation_obj.Wanted:
    name = body.get("name")
    if name and not _NAME.match(name):
        raise errors.BadRequest("Cannot create allocation with invalid name '%s'" % name)
    if not body.get("resource_class") and not backfilling:
        raise errors.BadRequest(
            "The resource_class field is mandatory when not backfilling")
    uuid = body.get("uuid")
    if uuid and not uuidutils.is_uuid_like(uuid):
        raise errors.BadRequest("Expected a UUID for uuid: %s" % uuid)
    idents = body.get("candidate_nodes") or []
    try:
        nodes = node_obj.find(req.ctx, idents) if idents else {}
    except exceptions.BaremetalNodesNotFound as exc:
        raise errors.BadRequest(str(exc)) from None
    assert req.ctx.config is not None
    placement_conf = req.ctx.config.placement
    return allocation_obj.Wanted(
        uuid=uuid or ("" if backfilling else uuidutils.generate_uuid()),
        name=name, resource_class=body.get("resource_class"),
        traits=body.get("traits") or [], candidate_nodes=[nodes[i] for i in idents],
        extra=body.get("extra") or {}, owner=owner,
        user_id=req.ctx.user_id or placement_conf.incomplete_consumer_user_id,
        project_id=req.ctx.project_id or placement_conf.incomplete_consumer_project_id,
        prefer_name=req.version >= microversion.ALLOCATION_NODE_NAME)


def _node(req: PlacementRequest, ident: str) -> node_obj.Node:
    try:
        return node_obj.get(req.ctx, ident)
    except exceptions.BaremetalNodeNotFound as exc:
        raise errors.BadRequest(str(exc)) from None


def create_allocation(req: PlacementRequest) -> webob.Response:
    """POST /v1/allocations (1.52): 201 with the allocation, ``active`` on a
    node or ``error`` with ``last_error``.  1.58: ``node`` backfills an
    allocation for a node a consumer holds.  1.60: ``owner``.  1.79: the
    node named like the allocation is tried first.  409 when the uuid or
    name is taken, or a backfill is refused."""
    body = req.json_body()
    validation.check(body, schemas.CREATE.at(req.version) or {})
    owner = _creation_owner(req, body)
    node = _node(req, body["node"]) if body.get("node") else None
    wanted = _wanted(req, body, owner, backfilling=node is not None)
    try:
        if node is not None:
            alloc = allocation_obj.backfill(req.ctx, wanted, node)
        else:
            alloc = allocation_obj.create(req.ctx, wanted)
    except (exceptions.Duplicate, exceptions.BaremetalBackfillRefused) as exc:
        raise errors.Conflict(str(exc)) from None
    location = routes.allocation_url(req.application_url, alloc.uuid)
    return responses.document(render(alloc, req), status=201, location=location)


def _patched(alloc: allocation_obj.BaremetalAllocation, patch: list[dict[str, Any]]
             ) -> dict[str, Any]:
    for operation in patch:
        if operation["path"].split("/")[1] not in _PATCHABLE:
            raise errors.BadRequest(
                "Cannot patch %s. Only the following can be updated: %s"
                % (operation["path"], ", ".join(_PATCHABLE)))
        if operation["path"] == "/name" and operation.get("value") is not None \
                and not _NAME.match(str(operation["value"])):
            raise errors.BadRequest("Cannot update allocation with invalid name '%s'"
                                    % operation["value"])
    doc: dict[str, Any] = {"name": alloc.name, "extra": alloc.extra}
    for operation in patch:
        try:
            doc = jsonpatch.apply_patch(doc, [operation])
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise errors.BadRequest("Couldn't apply patch '%s'. Reason: %s"
                                    % (operation, exc)) from None
    validation.check(doc, schemas.PATCHED)
    return doc


def update_allocation(req: PlacementRequest) -> webob.Response:
    """PATCH /v1/allocations/{uuid or name} (1.57; 405 before): a JSON
    patch of ``name`` and ``extra`` only; 200 with the allocation."""
    alloc = _retrieve(req, policies.UPDATE)
    patch = req.json_body()
    validation.check(patch, schemas.PATCH)
    doc = _patched(alloc, patch)
    try:
        alloc = allocation_obj.update(req.ctx, alloc.uuid, name=doc.get("name"),
                                      extra=doc.get("extra") or {})
    except exceptions.BaremetalAllocationNameExists as exc:
        raise errors.Conflict(str(exc)) from None
    return responses.document(render(alloc, req))


def delete_allocation(req: PlacementRequest) -> webob.Response:
    """DELETE /v1/allocations/{uuid or name} (1.52): 204; the node is free
    again (its Placement allocation goes with the record)."""
    alloc = _retrieve(req, policies.DELETE)
    try:
        allocation_obj.delete(req.ctx, alloc.uuid)
    except exceptions.BaremetalAllocationNotFound as exc:
        raise errors.NotFound(str(exc)) from None
    return responses.no_content()


def delete_node_allocation(req: PlacementRequest) -> webob.Response:
    """DELETE /v1/nodes/{uuid or name}/allocation (1.52): 204; the
    allocation holding the node goes, and the node is free."""
    alloc = _node_allocation(req, policies.DELETE, unknown_node=errors.NotFound)
    try:
        allocation_obj.delete(req.ctx, alloc.uuid)
    except exceptions.BaremetalAllocationNotFound:
        ident = req.urlvars["node"]
        raise errors.NotFound(
            str(exceptions.BaremetalNodeAllocationNotFound(ident=ident))) from None
    return responses.no_content()

