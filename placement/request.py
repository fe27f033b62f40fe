"""The request object handlers receive.

``PlacementRequest`` is a webob request that knows its negotiated
microversion (``req.version``), its context (``req.ctx``) and how to check
policy and parse bodies and query strings, raising :mod:`placement.errors`
with the messages clients expect.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import fastjsonschema
import jsonschema
import webob
from oslo_policy import policy as oslo_policy
from oslo_utils import uuidutils

from placement import errors, policy
from placement.schemas.common import Schema, Versioned

if TYPE_CHECKING:
    from placement.context import RequestContext

_FORMAT_CHECKER = jsonschema.FormatChecker()


# Placement accepts every spelling of a uuid that Python's uuid module
# parses (no dashes, braces, urn:uuid:), not only the canonical one that
# jsonschema's own "uuid" format demands; handlers store the canonical form.
@_FORMAT_CHECKER.checks("uuid")
def _is_uuid(instance: object) -> bool:
    return not isinstance(instance, str) or uuidutils.is_uuid_like(instance)


# What is built once per schema, by schema identity: its jsonschema
# validator and its fast check (below).  The schema is kept alongside so
# its id cannot be reused by another object while the entry lives.
_VALIDATORS: dict[int, tuple[Schema, jsonschema.protocols.Validator]] = {}
_FAST_CHECKS: dict[int, tuple[Schema, Callable[[Any], Any]]] = {}

_Built = TypeVar("_Built")


def _built_for(schema: Schema, cache: dict[int, tuple[Schema, _Built]],
               build: Callable[[Schema], _Built]) -> _Built:
    cached = cache.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    built = build(schema)
    cache[id(schema)] = (schema, built)
    return built


def _validator(schema: Schema) -> jsonschema.protocols.Validator:
    return _built_for(schema, _VALIDATORS, lambda schema: jsonschema.Draft4Validator(
        schema, format_checker=_FORMAT_CHECKER))


# The fast check is a schema's check compiled to Python by fastjsonschema:
# what every body goes through first, ten times faster than jsonschema's
# Draft 4 validator (a claim's body: 10 against 110 microseconds, a
# twentieth of the request's work).  A body it refuses goes through
# jsonschema, whose message is the one clients get and which has the last
# word, so the fast check may be stricter (it is, on ``$`` before a final
# newline) but never laxer: tests/unit/test_fast_check.py holds it to
# never accepting a body jsonschema refuses.
def _fast_check(schema: Schema) -> Callable[[Any], Any]:
    return _built_for(schema, _FAST_CHECKS, lambda schema: fastjsonschema.compile(
        {"$schema": "http://json-schema.org/draft-04/schema#", **schema},
        formats={"uuid": _is_uuid}))


def fits(data: Any, schema: Schema) -> bool:
    """Whether ``data`` fits ``schema`` as far as the fast check can tell:
    True only where jsonschema agrees; False may yet be a fit."""
    try:
        _fast_check(schema)(data)
    except Exception:  # refused, or anything else: jsonschema decides
        return False
    return True


# Query strings that passed a schema, with the schema (kept, as in
# _VALIDATORS, so that its id names it while the entry lives).  A
# scheduler asks the same few queries again and again, and validating one
# costs about as much as the rest of its parsing; refused queries are not
# kept (their message is worked out each time).  Started again from empty
# when full.
_VALID_QUERIES: dict[tuple[int, tuple[tuple[str, str], ...]], Schema] = {}
_VALID_QUERIES_BOUND = 1024


def validate(data: Any, schema: Schema, prefix: str) -> None:
    """Raise 400 ``<prefix>: <error>`` unless data fits ``schema``.

    The error is jsonschema's most relevant one in its full text (message,
    failing schema part and instance), as Placement reports it.
    """
    if fits(data, schema):
        return
    try:
        error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(data))
        message = None if error is None else str(error)
    except RecursionError:
        # A document nested deeper than the validator (or the message
        # quoting it) can follow is no document any schema accepts.
        raise errors.BadRequest("%s: nested too deeply" % prefix) from None
    if message is not None:
        raise errors.BadRequest("%s: %s" % (prefix, message))


def prepare(schema: Schema, sample: dict[str, Any]) -> None:
    """Build ``schema``'s validator and run it over ``sample`` now, at a
    worker's start, rather than in the first request it checks: jsonschema
    compiles a schema's patterns the first time it meets a key (about
    0.6 ms for the candidates query).  Whether ``sample`` fits does not
    matter."""
    try:
        validate(sample, schema, "")
    except errors.BadRequest:
        pass


def _bad_text(data: Any) -> bool:
    """Whether any string in parsed JSON holds a NUL or an unpaired surrogate.

    Neither can be stored (PostgreSQL refuses NUL in text, no database
    driver encodes a lone surrogate) nor written back as UTF-8, so they are
    refused on every backend alike.  Iterative: the depth is the client's.
    """
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


class PlacementRequest(webob.Request):
    version: tuple[int, int]
    ctx: RequestContext

    @property
    def text_path(self) -> str:
        """The path as text: UTF-8, or, for bytes that are not, one
        character per byte as Placement reads them, so such a name finds
        nothing (404) or fails its schema (400) like any other."""
        raw = self.environ.get("PATH_INFO", "")
        try:
            return raw.encode("latin-1").decode("utf-8")
        except UnicodeError:
            return raw

    def check_query_text(self) -> None:
        """400 unless every query parameter is UTF-8 text without NUL.

        Checked once for every request, before routing: a query no handler
        could read is refused with Placement's message for undecodable
        bytes, and a NUL, which no database stores, never reaches SQL.
        """
        try:
            params = self.GET
        except UnicodeDecodeError as exc:
            raise errors.BadRequest(
                "Invalid query string parameters: %s" % exc) from None
        if any("\x00" in key or "\x00" in value for key, value in params.items()):
            raise errors.BadRequest(
                "Invalid query string parameters: NUL characters are not allowed")

    @property
    def urlvars_dict(self) -> dict[str, str]:
        return self.urlvars

    def authorize(self, rule: str, target: dict[str, Any] | None = None) -> None:
        """403 unless policy allows ``rule`` for this request's context."""
        try:
            policy.authorize(self.ctx, rule, target)
        except oslo_policy.PolicyNotAuthorized:
            raise errors.Forbidden(
                "Policy does not allow %s to be performed." % rule, vary=False
            ) from None

    def require_json(self) -> None:
        """415 unless the body is JSON.

        Writes call this before policy and lookups: Placement checks the
        media type first, so a request wrong in several ways gets the 415.
        """
        if self.content_type != "application/json":
            self.json_body()  # raises the 415, worded as for every body

    def json_body(self, schema: Schema | Versioned | None = None) -> Any:
        """The body parsed as JSON and validated against ``schema``.

        415 unless the content type is application/json; 400 for bad JSON or
        a body the schema rejects.
        """
        content_type = self.content_type
        if content_type != "application/json":
            shown = content_type or "None"
            raise errors.UnsupportedMediaType(
                "The media type %s is not supported, use application/json" % shown
            )
        body = self.body
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise errors.BadRequest("Malformed JSON: %s" % exc) from None
        except RecursionError:
            raise errors.BadRequest("Malformed JSON: nested too deeply") from None
        # NUL and surrogates reach strings only through \u escapes or
        # non-ASCII bytes: plain ASCII bodies, nearly all, skip the walk.
        if (b"\\u" in body or not body.isascii()) and _bad_text(data):
            raise errors.BadRequest(
                "Malformed JSON: strings must not contain NUL characters "
                "or unpaired surrogates")
        if isinstance(schema, Versioned):
            schema = schema.at(self.version)
        if schema is not None:
            validate(data, schema, "JSON does not validate")
        return data

    def query(self, schema: Schema | Versioned | None = None) -> dict[str, str]:
        """Query parameters (last value of each key) validated against ``schema``."""
        params = {key: value for key, value in self.GET.items()}
        if isinstance(schema, Versioned):
            schema = schema.at(self.version)
        if schema is None:
            return params
        key = (id(schema), tuple(params.items()))
        if _VALID_QUERIES.get(key) is not schema:
            validate(params, schema, "Invalid query string parameters")
            if len(_VALID_QUERIES) >= _VALID_QUERIES_BOUND:
                _VALID_QUERIES.clear()
            _VALID_QUERIES[key] = schema
        return params
