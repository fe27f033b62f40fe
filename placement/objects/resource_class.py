"""Resource classes: standard ones (os-resource-classes) and CUSTOM_ ones.

Other objects translate between class names (the API's) and ids (the
tables') with :func:`ids_by_name` and :func:`names_by_id`.
"""

from __future__ import annotations

from typing import Iterable

import sqlalchemy as sa

from placement import exceptions
from placement.db import tables

_RC = tables.resource_classes


def ids_by_name(conn: sa.engine.Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}`` for these names; ResourceClassNotFound for the first unknown."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = conn.execute(
        sa.select(_RC.c.name, _RC.c.id).where(_RC.c.name.in_(sorted(wanted)))
    ).all()
    found = {name: id_ for name, id_ in rows}
    for name in sorted(wanted):
        if name not in found:
            raise exceptions.ResourceClassNotFound(name=name)
    return found


def names_by_id(conn: sa.engine.Connection, ids: Iterable[int] | None = None
                ) -> dict[int, str]:
    """``{id: name}`` for these ids (all classes when ``ids`` is None)."""
    query = sa.select(_RC.c.id, _RC.c.name)
    if ids is not None:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        query = query.where(_RC.c.id.in_(wanted))
    return {id_: name for id_, name in conn.execute(query).all()}
