"""jsonschema-rs's yes against jsonschema's, over every schema we have.

placement.request.validate takes jsonschema-rs's word when it accepts a
document and asks jsonschema otherwise, so the one thing that must never
happen is jsonschema-rs accepting what jsonschema refuses.  Documents:
every request body the gabbits send, each then changed one place at a
time (a value replaced by one of a few awkward ones, a key added or
dropped), checked against every schema of placement/schemas.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import pkgutil
from typing import Any, Iterator

import pytest
import yaml

from placement import request, schemas
from placement.schemas.common import Versioned

GABBITS = os.path.join(os.path.dirname(__file__), "..", "..", "gabbits")

# Values where JSON Schema implementations are known to differ or could:
# floats that are whole numbers, booleans (which Python counts as ints),
# NaN, a trailing newline after a pattern's "$", non-ASCII text, numbers
# past 64 bits, and the empty and null values.
AWKWARD: list[Any] = [1.0, 0.0, True, False, float("nan"), "VCPU\n", "\u00c9", "",
                      2 ** 70, -1, None, [], {}, "8f7e1b2c000040008000000000000001\n",
                      "CUSTOM_A\n", "{8f7e1b2c-0000-4000-8000-000000000001}"]


def _schemas() -> list[tuple[str, Any]]:
    found: dict[int, tuple[str, Any]] = {}
    for info in pkgutil.iter_modules(schemas.__path__):
        module = importlib.import_module("placement.schemas." + info.name)
        for name, value in vars(module).items():
            if name.startswith("__"):
                continue
            tables = (value.table.items() if isinstance(value, Versioned)
                      else [("", value)] if isinstance(value, dict) and (
                          "type" in value or "anyOf" in value or "properties" in value)
                      else [])
            for since, schema in tables:
                found[id(schema)] = ("%s.%s%s" % (info.name, name, since and " %s" % (since,)),
                                     schema)
    return sorted(found.values(), key=lambda item: item[0])


def _bodies() -> list[Any]:
    bodies = []
    for name in sorted(os.listdir(GABBITS)):
        if not name.endswith(".yaml"):
            continue
        with open(os.path.join(GABBITS, name)) as f:
            document = yaml.safe_load(f)
        for test in document.get("tests", []):
            data = test.get("data")
            if isinstance(data, (dict, list)) and "$" not in json.dumps(data):
                bodies.append(data)
    unique = {json.dumps(body, sort_keys=True): body for body in bodies}
    return [unique[key] for key in sorted(unique)]


def _places(document: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(document, dict):
        for key, value in document.items():
            yield from _places(value, path + (key,))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _places(value, path + (index,))


def _replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    changed = copy.deepcopy(document)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


def _variants(document: Any) -> Iterator[Any]:
    yield document
    for path in _places(document):
        for value in AWKWARD:
            yield _replaced(document, path, value)
        if path and isinstance(path[-1], str):
            parent = _replaced(document, (), document)
            target = parent
            for step in path[:-1]:
                target = target[step]
            yield _replaced(document, path[:-1], {
                k: v for k, v in target.items() if k != path[-1]})
            yield _replaced(document, path[:-1], {**target, path[-1] + "\n": 1})


SCHEMAS = _schemas()
DOCUMENTS = [document for body in _bodies() for document in _variants(body)]


def test_the_corpus_is_not_trivial() -> None:
    assert len(SCHEMAS) > 40 and len(DOCUMENTS) > 10_000
    # Many documents are accepted, by the schemas of the bodies most sent.
    from placement.schemas import allocation, inventory, resource_provider
    for schema in (allocation.CONSUMER_1_38, inventory.REPLACE,
                   resource_provider.CREATE.at((1, 39))):
        assert sum(request._fast_accepts(d, schema) for d in DOCUMENTS) > 20


@pytest.mark.parametrize("name,schema", SCHEMAS, ids=[name for name, _ in SCHEMAS])
def test_what_jsonschema_rs_accepts_jsonschema_accepts(name: str, schema: Any) -> None:
    slow = request._validator(schema)
    for document in DOCUMENTS:
        if request._fast_accepts(document, schema):
            assert slow.is_valid(document), (name, document)


def test_both_accept_what_the_api_accepts() -> None:
    # Not vacuous: the valid bodies of the gabbits are accepted by both,
    # under the schema they were written for.
    from placement.schemas import allocation
    schema = allocation.CONSUMER_1_38
    body = {"allocations": {"8f7e1b2c-0000-4000-8000-000000000001": {
        "resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u",
        "consumer_generation": None, "consumer_type": "INSTANCE"}
    assert request._fast_accepts(body, schema)
    assert request._validator(schema).is_valid(body)
    for refused in ({**body, "consumer_generation": 1.0},
                    {**body, "project_id": ""},
                    {**body, "allocations": {"not-a-uuid": {"resources": {"VCPU": 1}}}}):
        assert not request._fast_accepts(refused, schema)
        assert not request._validator(schema).is_valid(refused)
