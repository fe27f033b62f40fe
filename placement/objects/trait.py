"""Traits: standard ones (os-traits) and CUSTOM_ ones.

Other objects translate between trait names and ids with
:func:`ids_by_name` and :func:`names_by_id`.
"""

from __future__ import annotations

from typing import Iterable

import sqlalchemy as sa

from placement import exceptions
from placement.db import tables

_TRAITS = tables.traits


def ids_by_name(conn: sa.engine.Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}``; TraitNotFound naming every unknown trait."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = conn.execute(
        sa.select(_TRAITS.c.name, _TRAITS.c.id).where(
            _TRAITS.c.name.in_(sorted(wanted)))
    ).all()
    found = {name: id_ for name, id_ in rows}
    missing = sorted(wanted - set(found))
    if missing:
        raise exceptions.TraitNotFound(names=", ".join(missing))
    return found


def names_by_id(conn: sa.engine.Connection, ids: Iterable[int]) -> dict[int, str]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = conn.execute(
        sa.select(_TRAITS.c.id, _TRAITS.c.name).where(_TRAITS.c.id.in_(wanted))
    ).all()
    return {id_: name for id_, name in rows}
