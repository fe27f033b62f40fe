"""Checking bare-metal requests against schemas, with Ironic's sentences.

Ironic reports a bad body or query parameter as ``Schema error: <the
jsonschema message>``, adding, where a value matched none of several
forms, the likeliest reason (``Possible root cause: ...``).
"""

from __future__ import annotations

from typing import Any

import jsonschema

from placement import errors
from placement.schemas.common import Schema

_FORMATS = jsonschema.FormatChecker()


def check(data: Any, schema: Schema) -> None:
    """400 ``Schema error: ...`` unless data fits the schema."""
    validator = jsonschema.Draft4Validator(schema, format_checker=_FORMATS)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return
    message = error.message
    if error.context:
        cause = jsonschema.exceptions.best_match(error.context)
        if cause is not None:
            message += ". Possible root cause: %s" % cause.message
    raise errors.BadRequest("Schema error: %s" % message)
