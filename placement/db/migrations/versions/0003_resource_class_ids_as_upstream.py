"""Resource class ids numbered as OpenStack Placement numbers them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25

Earlier releases of ours let the id sequence number classes: standard
ones from 1 in sync order, custom ones after them.  Upstream gives a
standard class its place in os-resource-classes' list (VCPU is 0) and
custom classes ids from 10000 up, and treats any class below 10000 as
standard.  So that upstream can take a database of ours back (rename or
delete our custom classes, add a new standard class without clashing),
ids are renumbered here, with the inventories and allocations that point
at them.  A database adopted from upstream is already numbered so and is
left alone.

Renumbering goes through ids above every id in use, so that no two rows
ever hold the same id on the way.  Workers keep class ids in memory:
restart them after this migration (as after any schema change).
"""

import os_resource_classes
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

CUSTOM_MIN_ID = 10000

_classes = sa.table("resource_classes", sa.column("id"), sa.column("name"))
_referrers = [sa.table(name, sa.column("resource_class_id"))
              for name in ("inventories", "allocations")]


def _targets(rows: list[tuple[int, str]]) -> dict[int, int]:
    """{current id: wanted id} for every class whose id must change."""
    standards = {name: index for index, name in enumerate(os_resource_classes.STANDARDS)}
    wanted: dict[int, int] = {}
    next_custom = max([CUSTOM_MIN_ID] + [id_ + 1 for id_, _ in rows if id_ >= CUSTOM_MIN_ID])
    for id_, name in sorted(rows):
        if name in standards:
            target = standards[name]
        elif id_ >= CUSTOM_MIN_ID:
            target = id_
        else:  # a custom class (or a standard name no longer listed)
            target, next_custom = next_custom, next_custom + 1
        if target != id_:
            wanted[id_] = target
    return wanted


def _move(conn: sa.engine.Connection, old: int, new: int) -> None:
    conn.execute(_classes.update().where(_classes.c.id == old).values(id=new))
    for table in _referrers:
        conn.execute(table.update().where(table.c.resource_class_id == old)
                     .values(resource_class_id=new))


def upgrade() -> None:
    conn = op.get_bind()
    rows = [(int(id_), name) for id_, name in conn.execute(
        sa.select(_classes.c.id, _classes.c.name))]
    wanted = _targets(rows)
    if not wanted:
        return
    above = max([id_ for id_, _ in rows] + list(wanted.values())) + 1
    for offset, old in enumerate(sorted(wanted)):
        _move(conn, old, above + offset)
    for offset, old in enumerate(sorted(wanted)):
        _move(conn, above + offset, wanted[old])
