"""Every request schema of every resource, checked as a whole.

The module walk picks up schema modules as they are added to
``placement/schemas/``: each :class:`Versioned` table must be keyed by real
microversions, written oldest first, and every schema in it (and every
plain schema a module exports) must itself be a valid Draft 4 schema.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

import placement.schemas
from placement import microversion
from placement.baremetal import microversion as baremetal_microversion
from placement.schemas import common
from placement.schemas.common import Versioned, obj, versioned

KNOWN_VERSIONS = {version for version, _ in microversion.VERSIONS}
# The bare-metal API's schemas are keyed by Ironic's versions.
BAREMETAL_VERSIONS = {version for version, _ in baremetal_microversion.VERSIONS}


def _known_versions(table_name: str) -> set[tuple[int, int]]:
    if table_name.startswith("placement.schemas.baremetal_"):
        return BAREMETAL_VERSIONS
    return KNOWN_VERSIONS


def _schema_modules() -> list[ModuleType]:
    names = sorted(info.name for info in pkgutil.iter_modules(placement.schemas.__path__))
    return [importlib.import_module("placement.schemas." + name) for name in names]


def _versioned_tables() -> list[tuple[str, Versioned]]:
    found = []
    for module in _schema_modules():
        for name, value in vars(module).items():
            if isinstance(value, Versioned):
                found.append(("%s.%s" % (module.__name__, name), value))
    return found


def _plain_schemas() -> list[tuple[str, dict[str, Any]]]:
    """Module-level dicts that look like schemas (they declare a type or combinator)."""
    found = []
    for module in _schema_modules():
        for name, value in vars(module).items():
            if name.startswith("_") or not isinstance(value, dict):
                continue
            if {"type", "anyOf", "oneOf", "allOf", "$ref", "enum"} & set(value):
                found.append(("%s.%s" % (module.__name__, name), value))
    return found


def _ids(items: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in items]


def test_the_walk_finds_the_common_fragments() -> None:
    # Guards the walk itself: were it to find nothing, the tests below
    # would pass vacuously.
    names = _ids(_plain_schemas())
    assert "placement.schemas.common.UUID" in names
    assert "placement.schemas.common.RESOURCE_CLASS" in names


TABLES = _versioned_tables()
PLAIN = _plain_schemas()


def test_versioned_keys_are_real_microversions() -> None:
    # One test over all tables (not one per table): while no resource has a
    # versioned schema yet, a parametrized test would only be skipped.
    problems = []
    for name, table in TABLES:
        if not table.table:
            problems.append("%s is empty" % name)
        problems += ["%s: %s is not a microversion" % (name, since)
                     for since in table.table if since not in _known_versions(name)]
    assert not problems


def test_versioned_schemas_are_valid_draft4() -> None:
    problems = []
    for name, table in TABLES:
        for since, schema in table.table.items():
            try:
                jsonschema.Draft4Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                problems.append("%s at %s: %s" % (name, since, exc.message))
    assert not problems


def test_the_checks_catch_bad_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = {"_bad_version": versioned({(1, 99): obj()}),
           "_bad_schema": versioned({(1, 0): {"type": "no-such-type"}})}
    monkeypatch.setattr(sys.modules[__name__], "TABLES",
                        [("fake." + name, table) for name, table in bad.items()])
    with pytest.raises(AssertionError, match="not a microversion"):
        test_versioned_keys_are_real_microversions()
    with pytest.raises(AssertionError, match="no-such-type"):
        test_versioned_schemas_are_valid_draft4()


@pytest.mark.parametrize("name, schema", PLAIN, ids=_ids(PLAIN))
def test_plain_schemas_are_valid_draft4(name: str, schema: dict[str, Any]) -> None:
    jsonschema.Draft4Validator.check_schema(schema)


def _literal_tables(path: Path) -> list[tuple[int, list[tuple[int, int]]]]:
    """(line, keys) of each ``versioned({...})`` / ``Versioned({...})`` literal."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name not in ("versioned", "Versioned"):
            continue
        table = node.args[0]
        if not isinstance(table, ast.Dict):
            continue
        keys = []
        for key in table.keys:
            if key is None:
                continue
            try:
                keys.append(ast.literal_eval(key))
            except ValueError:
                continue  # a computed key; the runtime checks cover it
        found.append((node.lineno, keys))
    return found


SCHEMA_FILES = sorted(Path(placement.schemas.__file__).parent.glob("*.py"))


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=[p.name for p in SCHEMA_FILES])
def test_versioned_tables_are_written_oldest_first(path: Path) -> None:
    for line, keys in _literal_tables(path):
        assert keys == sorted(keys), "%s:%d keys do not ascend: %s" % (path.name, line, keys)
        assert len(keys) == len(set(keys)), "%s:%d repeats a key" % (path.name, line)


def test_the_literal_scan_sees_tables(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("X = versioned({(1, 0): A, (1, 14): B})\n"
                      "Y = common.Versioned({(1, 20): A, (1, 2): B})\n")
    assert _literal_tables(sample) == [(1, [(1, 0), (1, 14)]), (2, [(1, 20), (1, 2)])]


class TestVersioned:
    A = obj(name={"type": "string"})
    B = obj(name={"type": "string"}, uuid=common.UUID)

    def test_at_picks_the_newest_form_not_after_the_version(self) -> None:
        table = versioned({(1, 0): self.A, (1, 14): self.B})
        assert table.at((1, 0)) is self.A
        assert table.at((1, 13)) is self.A
        assert table.at((1, 14)) is self.B
        assert table.at((1, 39)) is self.B

    def test_before_the_first_form_there_is_none(self) -> None:
        table = versioned({(1, 6): self.A})
        assert table.at((1, 5)) is None

    def test_keys_given_out_of_order_are_sorted(self) -> None:
        table = Versioned({(1, 14): self.B, (1, 0): self.A})
        assert list(table.table) == [(1, 0), (1, 14)]
        assert table.at((1, 10)) is self.A


class TestObj:
    def test_shape(self) -> None:
        schema = obj(required=["name"], name={"type": "string"})
        assert schema == {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "additionalProperties": False,
            "required": ["name"],
        }

    def test_no_required_key_when_nothing_is_required(self) -> None:
        assert "required" not in obj(name={"type": "string"})

    def test_additional_properties_can_be_allowed(self) -> None:
        assert obj(additional=True)["additionalProperties"] is True


@pytest.mark.parametrize("fragment, good, bad", [
    (common.UUID, "7b3b7c5e-7b8e-4b4e-9a0c-0d6c2b8f5a11", "not-a-uuid"),
    (common.RESOURCE_CLASS, "VCPU", "vcpu"),
    (common.CUSTOM_RESOURCE_CLASS, "CUSTOM_GOLD", "GOLD"),
    (common.TRAIT_NAME, "HW_CPU_X86_AVX", "hw-cpu"),
    (common.CUSTOM_TRAIT, "CUSTOM_FAST", "FAST"),
    (common.NON_NEGATIVE_INT, 0, -1),
])
def test_fragments(fragment: dict[str, Any], good: Any, bad: Any) -> None:
    validator = jsonschema.Draft4Validator(fragment, format_checker=jsonschema.FormatChecker())
    assert validator.is_valid(good)
    assert not validator.is_valid(bad)


def test_nullable_uuid_accepts_null() -> None:
    validator = jsonschema.Draft4Validator(common.NULLABLE_UUID,
                                           format_checker=jsonschema.FormatChecker())
    assert validator.is_valid(None)
    assert not validator.is_valid("nope")
