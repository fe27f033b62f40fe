"""Handlers for /traits, /traits/{name} and /resource_providers/{uuid}/traits
(all 1.6+).

Traits are shown by name only: ``{"traits": ["HW_CPU_X86_AVX2", ...]}``; a
provider's list also carries its ``resource_provider_generation``.  Only
``CUSTOM_`` traits can be created or deleted.
"""

from __future__ import annotations

import datetime
from typing import Iterable
from urllib.parse import quote

import webob

from placement import errors, exceptions, policies, responses
from placement.objects import trait
from placement.request import PlacementRequest, validate
from placement.schemas import trait as schemas

_BAD_NAME_FILTER = (
    "Badly formatted name parameter. Expected name query string parameter "
    "in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: \"%s\"")
_BAD_ASSOCIATED = 'The query parameter "associated" only accepts "true" or "false"'
_BAD_CUSTOM_NAME = (
    'The trait is invalid. A valid trait must be no longer than 255 '
    'characters, start with the prefix "CUSTOM_" and use following '
    'characters: "A"-"Z", "0"-"9" and "_"')
_GENERATION_CHANGED = ("Resource provider's generation already changed. "
                       "Please update the generation and try again.")


def trait_url(req: PlacementRequest, name: str) -> str:
    return "%s/traits/%s" % (req.script_name, quote(name))


def render_traits(traits: Iterable[trait.Trait]) -> list[str]:
    return [t.name for t in traits]


def _newest(traits: Iterable[trait.Trait]) -> datetime.datetime | None:
    return responses.newest(t.updated_at or t.created_at for t in traits)


def parse_filter(params: dict[str, str]) -> trait.TraitFilter:
    """The GET /traits filter from ``name`` and ``associated``; 400 if malformed.

    ``name`` is ``in:A,B`` or ``startswith:PREFIX``; any other operator
    before the colon filters nothing.  ``associated`` is true or false, in
    any case.
    """
    name_in = prefix = associated = None
    if "name" in params:
        operator, colon, value = params["name"].partition(":")
        if not colon:
            raise errors.BadRequest(_BAD_NAME_FILTER % params["name"])
        if operator == "in":
            name_in = value.split(",")
        elif operator == "startswith":
            prefix = value
    if "associated" in params:
        flag = params["associated"].lower()
        if flag not in ("true", "false"):
            raise errors.BadRequest(_BAD_ASSOCIATED)
        associated = flag == "true"
    return trait.TraitFilter(name_in=name_in, prefix=prefix, associated=associated)


def list_traits(req: PlacementRequest) -> webob.Response:
    """GET /traits[?name=in:A,B|startswith:P][&associated=true|false]."""
    req.authorize(policies.trait.LIST)
    wanted = parse_filter(req.query(schemas.LIST_QUERY))
    traits = trait.get_all(req.ctx, wanted)
    return responses.json(req, {"traits": render_traits(traits)},
                          last_modified=_newest(traits))


def show_trait(req: PlacementRequest) -> webob.Response:
    """GET /traits/{name}: 204 if the trait exists, 404 if not."""
    req.authorize(policies.trait.SHOW)
    try:
        found = trait.get_by_name(req.ctx, req.urlvars["name"])
    except exceptions.TraitNotFound as exc:
        raise errors.NotFound(str(exc)) from None
    return _no_content(req, found.created_at)


def create_trait(req: PlacementRequest) -> webob.Response:
    """PUT /traits/{name}: 201 when created, 204 when it already existed.

    Both carry a Location.  400 unless ``name`` is a valid custom trait.
    """
    req.authorize(policies.trait.UPDATE)
    name = req.urlvars["name"]
    try:
        validate(name, schemas.CUSTOM_NAME, "")
    except errors.BadRequest:
        raise errors.BadRequest(_BAD_CUSTOM_NAME) from None
    made, created = trait.ensure(req.ctx, name)
    resp = _no_content(req, made.created_at)
    resp.headers["Location"] = trait_url(req, name)
    if created:
        resp.status = 201
    return resp


def delete_trait(req: PlacementRequest) -> webob.Response:
    """DELETE /traits/{name}: 204.

    404 if unknown, 400 for a standard trait, 409 while a provider has it.
    """
    req.authorize(policies.trait.DELETE)
    try:
        trait.delete(req.ctx, req.urlvars["name"])
    except exceptions.TraitNotFound as exc:
        raise errors.NotFound(str(exc)) from None
    except exceptions.TraitCannotDeleteStandard as exc:
        raise errors.BadRequest(str(exc)) from None
    except exceptions.TraitInUse as exc:
        raise errors.Conflict(str(exc)) from None
    return responses.no_content()


def list_provider_traits(req: PlacementRequest) -> webob.Response:
    """GET /resource_providers/{uuid}/traits: the traits and generation."""
    req.authorize(policies.trait.RP_TRAIT_LIST)
    uuid = req.urlvars["uuid"]
    try:
        found = trait.get_for_provider(req.ctx, uuid)
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound("No resource provider with uuid %s found: %s"
                              % (uuid, exc)) from None
    return _render_provider_traits(req, found)


def set_provider_traits(req: PlacementRequest) -> webob.Response:
    """PUT /resource_providers/{uuid}/traits: replace the provider's traits.

    The body names every trait the provider should have and the generation
    the client last saw; 409 ``placement.concurrent_update`` if that is no
    longer the provider's, 400 for an unknown trait.  200 with the new list
    and generation, which moves only if the set of traits changed.
    """
    req.require_json()
    req.authorize(policies.trait.RP_TRAIT_UPDATE)
    body = req.json_body(schemas.SET_PROVIDER_TRAITS)
    try:
        found = trait.set_for_provider(req.ctx, req.urlvars["uuid"], body["traits"],
                                       body["resource_provider_generation"])
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None
    except exceptions.ProviderConcurrentUpdate:
        raise errors.Conflict(_GENERATION_CHANGED,
                              code=errors.CONCURRENT_UPDATE) from None
    except exceptions.TraitNotFound as exc:
        raise errors.BadRequest(
            "No such trait %s" % exc.kwargs["names"]) from None
    return _render_provider_traits(req, found)


def delete_provider_traits(req: PlacementRequest) -> webob.Response:
    """DELETE /resource_providers/{uuid}/traits: remove them all; 204.

    The provider's generation is bumped if it had traits (not otherwise, as
    in Placement); 409 ``placement.concurrent_update`` if another writer
    changed the provider at the same moment.
    """
    req.authorize(policies.trait.RP_TRAIT_DELETE)
    try:
        trait.delete_for_provider(req.ctx, req.urlvars["uuid"])
    except exceptions.ProviderNotFound as exc:
        raise errors.NotFound(str(exc), vary=False) from None
    except exceptions.ProviderConcurrentUpdate as exc:
        raise errors.Conflict(str(exc), code=errors.CONCURRENT_UPDATE) from None
    return responses.no_content()


def _render_provider_traits(req: PlacementRequest, found: trait.ProviderTraits
                            ) -> webob.Response:
    body = {"traits": render_traits(found.traits),
            "resource_provider_generation": found.generation}
    return responses.json(req, body, last_modified=_newest(found.traits))


def _no_content(req: PlacementRequest, stamp: datetime.datetime | None
                ) -> webob.Response:
    """204, with the caching headers from 1.15 as GET and PUT of a trait have."""
    resp = responses.no_content()
    if req.version >= responses.CACHE_HEADERS_SINCE:
        resp.headers["Cache-Control"] = "no-cache"
        resp.last_modified = stamp or datetime.datetime.now(datetime.timezone.utc)
    return resp
