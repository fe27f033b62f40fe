"""The request object handlers receive.

``PlacementRequest`` is a webob request that knows its negotiated
microversion (``req.version``), its context (``req.ctx``) and how to check
policy and parse bodies and query strings, raising :mod:`placement.errors`
with the messages clients expect.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import jsonschema
import webob
from oslo_policy import policy as oslo_policy
from oslo_utils import uuidutils

from placement import errors
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


# Validators by schema identity; the schema is kept alongside so its id
# cannot be reused by another object while the entry lives.
_VALIDATORS: dict[int, tuple[Schema, jsonschema.protocols.Validator]] = {}


def _validator(schema: Schema) -> jsonschema.protocols.Validator:
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    validator = jsonschema.Draft4Validator(schema, format_checker=_FORMAT_CHECKER)
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def validate(data: Any, schema: Schema, prefix: str) -> None:
    """Raise 400 ``<prefix>: <error>`` unless data fits ``schema``.

    The error is jsonschema's most relevant one in its full text (message,
    failing schema part and instance), as Placement reports it.
    """
    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(data))
    if error is not None:
        raise errors.BadRequest("%s: %s" % (prefix, error))


class PlacementRequest(webob.Request):
    version: tuple[int, int]
    ctx: RequestContext

    @property
    def urlvars_dict(self) -> dict[str, str]:
        return self.urlvars

    def authorize(self, rule: str, target: dict[str, Any] | None = None) -> None:
        """403 unless policy allows ``rule`` for this request's context."""
        try:
            self.ctx.can(rule, target)
        except oslo_policy.PolicyNotAuthorized:
            raise errors.Forbidden(
                "Policy does not allow %s to be performed." % rule
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
        try:
            data = json.loads(self.body)
        except ValueError as exc:
            raise errors.BadRequest("Malformed JSON: %s" % exc) from None
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
        if schema is not None:
            validate(params, schema, "Invalid query string parameters")
        return params
