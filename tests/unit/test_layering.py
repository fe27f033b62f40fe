"""Dependencies point one way: handlers -> objects -> db.

The imports of every module are read from its source (imports inside
functions and ``TYPE_CHECKING`` blocks count too), so a layer cannot reach
around another by importing late.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import placement

ROOT = Path(placement.__file__).parent

# package (relative to placement/) -> module prefixes it must never import.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # Handlers speak HTTP and call objects; SQL is not theirs.
    "handlers": ("sqlalchemy", "alembic", "oslo_db", "placement.db"),
    # Objects are the data layer: no HTTP, no requests, no API errors.
    "objects": ("webob", "routes", "placement.handlers", "placement.request",
                "placement.responses", "placement.errors", "placement.middleware",
                "placement.routes"),
    # Response texts are written from what objects return: no SQL, no HTTP.
    "rendering": ("sqlalchemy", "alembic", "oslo_db", "placement.db", "webob",
                  "placement.handlers", "placement.request", "placement.errors"),
    # Schemas are plain data shared by both sides.
    "schemas": ("sqlalchemy", "webob", "placement.db", "placement.objects",
                "placement.handlers"),
    # The database layer knows nothing of HTTP or of the layers above it.
    "db": ("webob", "placement.handlers", "placement.objects", "placement.request",
           "placement.responses", "placement.middleware"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module name ``path`` imports, relative imports resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            # "from placement import errors" imports placement.errors.
            found.update(prefix + "." + alias.name for alias in node.names)
    return found


def _violations(package: str) -> list[str]:
    forbidden = FORBIDDEN[package]
    problems = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in sorted(imports_of(path)):
            if any(name == bad or name.startswith(bad + ".") for bad in forbidden):
                problems.append("%s imports %s" % (path.relative_to(ROOT.parent), name))
    return problems


def _module_path(name: str) -> Path | None:
    """The source file of placement module ``name``, if there is one."""
    relative = Path(*name.split(".")[1:])
    for candidate in (ROOT / relative / "__init__.py", ROOT / relative.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def reach(path: Path) -> dict[str, str]:
    """Every module ``path`` imports, directly or through placement modules
    it imports: ``{module: the placement module that imports it}``."""
    found: dict[str, str] = {}
    todo = [path]
    seen = {path}
    while todo:
        current = todo.pop()
        for name in imports_of(current):
            found.setdefault(name, _module_name(current))
            if not name.startswith("placement."):
                continue
            module = _module_path(name)
            if module is not None and module not in seen:
                seen.add(module)
                todo.append(module)
    return found


# Layers whose rules hold through other modules too: the data layer, the
# schemas and the database must not reach HTTP or the layers above them
# by way of a helper module.  (Handlers reach SQL through objects, by
# design, and rendering reads what objects return, so their rules are on
# their own imports only.)
TRANSITIVE = ("db", "objects", "schemas")


def _indirect_violations(package: str) -> list[str]:
    forbidden = FORBIDDEN[package]
    problems = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name, via in sorted(reach(path).items()):
            if any(name == bad or name.startswith(bad + ".") for bad in forbidden):
                problems.append("%s reaches %s through %s"
                                % (path.relative_to(ROOT.parent), name, via))
    return problems


@pytest.mark.parametrize("package", TRANSITIVE)
def test_layer_reaches_nothing_forbidden_indirectly(package: str) -> None:
    assert _indirect_violations(package) == []


def test_indirect_imports_are_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_root = tmp_path / "placement"
    (fake_root / "objects").mkdir(parents=True)
    (fake_root / "objects" / "thing.py").write_text("from placement import helper\n")
    (fake_root / "helper.py").write_text("from placement import errors\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake_root)
    assert _violations("objects") == []
    assert _indirect_violations("objects") == [
        "placement/objects/thing.py reaches placement.errors through placement.helper"]


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_imports(package: str) -> None:
    assert (ROOT / package).is_dir()
    assert _violations(package) == []


def test_the_scan_resolves_every_import_form(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake handlers module using each way of importing something forbidden.
    fake_root = tmp_path / "placement"
    handlers = fake_root / "handlers"
    handlers.mkdir(parents=True)
    (handlers / "bad.py").write_text(
        "import sqlalchemy as sa\n"
        "from ..db import tables\n"
        "from placement import db\n"
        "def late():\n"
        "    from oslo_db import exception\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake_root)
    assert _violations("handlers") == [
        "placement/handlers/bad.py imports " + name
        for name in ("oslo_db", "oslo_db.exception", "placement.db",
                     "placement.db.tables", "sqlalchemy")
    ]


def test_imports_of_resolves_relative_imports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_root = tmp_path / "placement"
    (fake_root / "objects").mkdir(parents=True)
    path = fake_root / "objects" / "thing.py"
    path.write_text("from .. import errors\nfrom . import trait\nimport webob\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake_root)
    assert imports_of(path) == {
        "placement", "placement.errors", "placement.objects",
        "placement.objects.trait", "webob",
    }
