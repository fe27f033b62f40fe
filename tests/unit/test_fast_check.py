"""The fast check of request bodies (fastjsonschema) accepts nothing that
jsonschema's Draft 4 validator refuses, on every schema of every resource.

A body the fast check accepts is never shown to jsonschema
(placement.request.validate): were the fast check laxer anywhere, a body
Placement must refuse would get in.  It may be stricter: a body it
refuses goes to jsonschema, which decides (fastjsonschema reads ``$`` in
a pattern as the end of the text, and refuses the ``"1\n"`` that
jsonschema's ``re.search`` lets through as a limit).  The bodies are
made from each schema itself, mostly near a fit (a property of the wrong type, a key
that matches no pattern, a string one character too long, 1.0 for an
integer, True for a number), so that every branch of every schema is
tried on both sides of its boundary.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement import request
from tests.unit.test_schemas_common import PLAIN, TABLES

SCHEMAS = [("%s at %d.%d" % (name, *since), schema)
           for name, table in TABLES for since, schema in table.table.items()]
SCHEMAS += PLAIN

# Values out of place anywhere: what a hostile or careless client sends.
ODD = st.sampled_from([None, True, False, 0, -1, 1, 1.0, 2.5, "", "x", "VCPU",
                       "None", [], {}, [1], {"a": 1}, 2 ** 31, -2 ** 63])


def _strings(schema: dict[str, Any], odd: bool) -> st.SearchStrategy[str]:
    if "pattern" in schema:
        fitting = st.from_regex(schema["pattern"], fullmatch=True)
    elif schema.get("format") == "uuid":
        fitting = st.one_of(st.uuids().map(str), st.uuids().map(lambda u: u.hex),
                            st.just("urn:uuid:" + str(uuidlib.uuid4())))
    else:
        low, high = schema.get("minLength", 0), schema.get("maxLength", 8)
        fitting = st.text(min_size=low, max_size=min(high, low + 8))
    if not odd:
        return fitting
    lengths = [n for n in (schema.get("minLength"), schema.get("maxLength")) if n is not None]
    edges = [st.just("a" * max(n + step, 0)) for n in lengths for step in (-1, 0, 1)]
    return st.one_of(fitting, st.text(), st.from_regex(schema.get("pattern", ".")),
                     st.just(str(uuidlib.uuid4())[:-1]), *edges)


def _value_for(schema: dict[str, Any], key: str, odd: bool) -> st.SearchStrategy[Any]:
    if key in schema.get("properties", {}):
        return instances(schema["properties"][key], odd)
    for pattern, sub in schema.get("patternProperties", {}).items():
        if re.search(pattern, key):
            return instances(sub, odd)
    extra = schema.get("additionalProperties")
    return instances(extra, odd) if isinstance(extra, dict) else ODD


@st.composite
def _objects(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    # Mostly every required key, some known or matching keys more, and
    # now and then a stranger or a required key missing; each value one
    # step off its schema one time in six.
    known: list[st.SearchStrategy[str]] = [
        st.from_regex(pattern, fullmatch=True) for pattern in schema.get("patternProperties", {})]
    if schema.get("properties"):
        known.append(st.sampled_from(sorted(schema["properties"])))
    keys = list(schema.get("required", []))
    if keys and not draw(st.integers(0, 9)):
        keys.remove(draw(st.sampled_from(keys)))
    if known:
        keys += draw(st.lists(st.one_of(*known), max_size=3))
    if not draw(st.integers(0, 9)):
        keys.append(draw(st.text(max_size=6)))
    return {key: draw(_value_for(schema, key, odd=not draw(st.integers(0, 5))))
            for key in dict.fromkeys(keys)}


def instances(schema: dict[str, Any], odd: bool = True) -> st.SearchStrategy[Any]:
    """Values of ``schema``: fitting it unless ``odd``, when they may be
    off by one step anywhere, or anything."""
    choices: list[st.SearchStrategy[Any]] = [ODD] if odd else []
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        choices.append(st.deferred(lambda branch=branch: instances(branch, odd)))
    if "enum" in schema:
        choices.append(st.sampled_from(schema["enum"]))
    kinds = schema.get("type", [])
    for kind in [kinds] if isinstance(kinds, str) else kinds:
        if kind == "object":
            choices.append(_objects(schema))
        elif kind == "array":
            items = schema.get("items", {})
            low = schema.get("minItems", 0)
            choices.append(st.lists(st.deferred(lambda items=items: instances(items, odd)),
                                    min_size=max(low - odd, 0), max_size=low + 3))
        elif kind == "string" and "enum" not in schema:
            choices.append(_strings(schema, odd))
        elif kind in ("integer", "number"):
            low, high = schema.get("minimum", -3), schema.get("maximum", 2 ** 31 - 1)
            choices.append(st.integers(low, high))
            if odd:
                choices += [st.floats(allow_nan=False), st.sampled_from(
                    [low - 1, high + 1, float(low), float(high), True])]
        elif kind == "boolean":
            choices.append(st.booleans())
        elif kind == "null":
            choices.append(st.none())
    return st.one_of(*choices) if choices else ODD


def _jsonschema_fits(data: Any, schema: dict[str, Any]) -> bool:
    """jsonschema's verdict, by the validator request.validate asks."""
    return bool(request._validator(schema).is_valid(data))


@pytest.mark.parametrize("name, schema", SCHEMAS, ids=[name for name, _ in SCHEMAS])
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_the_fast_check_is_never_laxer_than_jsonschema(
        name: str, schema: dict[str, Any], data: st.DataObject) -> None:
    body = data.draw(instances(schema))
    if request.fits(body, schema):
        assert _jsonschema_fits(body, schema), body


def test_the_bodies_made_reach_both_verdicts() -> None:
    # Guards the test above: bodies that always fit (or never) would let a
    # laxer fast check through.  A claim's schema, 300 bodies.
    schema = dict(SCHEMAS)["placement.schemas.allocation.PUT_ALLOCATIONS at 1.38"]
    verdicts = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(body=instances(schema))
    def collect(body: Any) -> None:
        verdicts.add(_jsonschema_fits(body, schema))

    collect()
    assert verdicts == {True, False}


def test_a_stricter_fast_check_leaves_the_verdict_to_jsonschema() -> None:
    schema = dict(SCHEMAS)["placement.schemas.allocation_candidate.QUERY at 1.17"]
    query = {"resources": "VCPU:1", "limit": "1\n"}
    assert not request.fits(query, schema)
    request.validate(query, schema, "Invalid query string parameters")  # no 400


def test_a_refused_body_gets_jsonschemas_message() -> None:
    schema = dict(SCHEMAS)["placement.schemas.allocation.PUT_ALLOCATIONS at 1.38"]
    body = {"allocations": {}, "project_id": "p", "user_id": "u",
            "consumer_generation": 1.0, "consumer_type": "INSTANCE"}
    with pytest.raises(Exception, match="1.0 is not of type 'integer', 'null'"):
        request.validate(body, schema, "JSON does not validate")
