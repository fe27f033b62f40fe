"""Taking over a database that OpenStack Placement has been using.

Upstream Placement keeps its schema revision in ``alembic_version``; we
keep ours in a table of our own (:data:`placement.db.migration.VERSION_TABLE`),
so the two histories never meet.  An upstream database is recognised by
its revision, checked, and changed in place into our schema as migration
``0002`` left it; our own migrations then carry it on from there.  Every
row keeps its id.

What changes (everything else, tables, columns, types, unique constraints,
is the same on both sides):

* revisions before ``422ece571366`` lack ``consumer_types`` and
  ``consumers.consumer_type_id``: both are added (empty / NULL, which
  microversion 1.38 reports as the "unknown" type, as upstream does);
* revisions before ``a082b8bb98d0`` still have five indexes that only
  repeat a unique constraint: they are dropped, as upstream drops them;
* upstream's foreign keys are dropped: ours are kept by the writes
  themselves (a provider is deleted with its links in one transaction),
  and upstream's self-referencing ``root_provider_id`` key makes MySQL
  refuse to delete a root provider in one statement;
* ``resource_providers.name``, ``.generation`` and
  ``placement_aggregates.uuid`` become NOT NULL (upstream always writes
  them but allows NULL), the index ``consumers_project_id_uuid_idx``
  (a prefix of ``consumers_project_id_user_id_uuid_idx`` in use) goes;
* on SQLite ``resource_providers`` is rebuilt with AUTOINCREMENT, as our
  migration 0002 does, so a deleted provider's id is never handed out
  again.

Before changing anything, :func:`problems` reads what the tightened
constraints and our code need of the data (no NULL where NULL goes away,
every provider with a root, every allocation with a consumer row).  Old
upstream releases fill roots and consumers in their online data
migrations; a database that skipped them is refused with what to run.

The way back: ``alembic_version`` is left at upstream's head
(:data:`UPSTREAM_HEAD`), which is also what every database of ours
carries there, and resource class ids follow upstream's numbering (see
``objects/resource_class.py``), so upstream 16.0.0's ``db sync`` finds
nothing to do and its service reads and writes what we wrote.
"""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext

# Upstream's revisions, oldest first, as shipped since Placement left Nova
# (openstack-placement 1.0.0 to 16.0.0).
UPSTREAM_REVISIONS = (
    "b4ed3a175331",  # 1.0.0: initial schema
    "611cd6dffd7b",  # 2.0.0: refuses NULL root_provider_id
    "b5c396305c25",  # 2.0.0: refuses allocations without a consumer row
    "422ece571366",  # 6.0.0: consumer_types, consumers.consumer_type_id
    "a082b8bb98d0",  # 10.0.0: drops indexes that repeat unique constraints
)
UPSTREAM_HEAD = UPSTREAM_REVISIONS[-1]
UPSTREAM_VERSION_TABLE = "alembic_version"
# The revision of ours whose schema adoption produces.
ADOPTED_AS = "0002"

_REDUNDANT_INDEXES = {
    "inventories": ("inventories_resource_provider_id_idx",
                    "inventories_resource_provider_resource_class_idx"),
    "placement_aggregates": ("ix_placement_aggregates_uuid",),
    "resource_providers": ("resource_providers_name_idx",
                           "resource_providers_uuid_idx"),
    "consumers": ("consumers_project_id_uuid_idx",),
}
# Most of upstream's SQLite foreign keys have no names; alembic's batch
# mode names the reflected ones by this convention so that they can be
# dropped.
_SQLITE_FK_NAMES = {"fk": "fk_%(table_name)s_%(column_0_name)s"}


class NotAdoptable(Exception):
    """The upstream database cannot be taken over as it is."""


@dataclasses.dataclass(frozen=True)
class Problem:
    count: int
    what: str
    remedy: str

    def __str__(self) -> str:
        return "%d %s (%s)" % (self.count, self.what, self.remedy)


_UPSTREAM_ONLINE = ("run upstream's 'placement-manage db online_data_migrations' "
                    "with the release that wrote this database")
_FIX_BY_HAND = "no release writes this; set it by hand or delete the row"

# (count query, what it means, what to do); each counts rows our schema
# or our code cannot take.
_CHECKS = (
    ("SELECT COUNT(*) FROM resource_providers WHERE name IS NULL",
     "resource providers without a name", _FIX_BY_HAND),
    ("SELECT COUNT(*) FROM resource_providers WHERE generation IS NULL",
     "resource providers without a generation", _FIX_BY_HAND),
    ("SELECT COUNT(*) FROM resource_providers WHERE root_provider_id IS NULL",
     "resource providers without a root provider", _UPSTREAM_ONLINE),
    ("SELECT COUNT(*) FROM placement_aggregates WHERE uuid IS NULL",
     "aggregates without a uuid", _FIX_BY_HAND),
    ("SELECT COUNT(DISTINCT a.consumer_id) FROM allocations a "
     "LEFT JOIN consumers c ON c.uuid = a.consumer_id WHERE c.id IS NULL",
     "consumers with allocations but no consumer record", _UPSTREAM_ONLINE),
)


def problems(conn: sa.engine.Connection) -> list[Problem]:
    """What keeps this upstream database from being adopted; reads only."""
    found = []
    for query, what, remedy in _CHECKS:
        count = conn.exec_driver_sql(query).scalar_one()
        if count:
            found.append(Problem(int(count), what, remedy))
    return found


def adopt(conn: sa.engine.Connection, revision: str) -> None:
    """Change the upstream schema at ``revision`` into ours at ADOPTED_AS.

    Raises NotAdoptable, having changed nothing, when :func:`problems`
    finds any.  The caller holds the migration lock and records the
    revisions afterwards.
    """
    found = problems(conn)
    if found:
        raise NotAdoptable(
            "the upstream Placement database (revision %s) cannot be adopted "
            "as it is; nothing was changed: %s"
            % (revision, "; ".join(str(problem) for problem in found)))
    ops = Operations(MigrationContext.configure(conn))
    existing = set(sa.inspect(conn).get_table_names())
    if "consumer_types" not in existing:
        _add_consumer_types(ops)
    _drop_redundant_indexes(conn, ops)
    _tighten(conn, ops)


def _add_consumer_types(ops: Operations) -> None:
    ops.create_table(
        "consumer_types",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.Unicode(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("name", name="uniq_consumer_types0name"),
    )
    with ops.batch_alter_table("consumers") as batch:
        batch.add_column(sa.Column("consumer_type_id", sa.Integer, nullable=True))
    ops.create_index("consumers_consumer_type_id_idx", "consumers",
                     ["consumer_type_id"])


def _drop_redundant_indexes(conn: sa.engine.Connection, ops: Operations) -> None:
    inspector = sa.inspect(conn)
    for table, names in _REDUNDANT_INDEXES.items():
        present = {index["name"] for index in inspector.get_indexes(table)}
        for name in names:
            if name in present:
                ops.drop_index(name, table_name=table)


def _foreign_keys(conn: sa.engine.Connection, table: str) -> list[str]:
    """The names under which ``table``'s foreign keys can be dropped."""
    keys = sa.inspect(conn).get_foreign_keys(table)
    return [key["name"] or _SQLITE_FK_NAMES["fk"] % {
        "table_name": table, "column_0_name": key["constrained_columns"][0]}
        for key in keys]


# What becomes NOT NULL, per table: (column, its type, server default).
_TIGHTENED = {
    "resource_providers": (("name", sa.Unicode(200), None),
                           ("generation", sa.Integer(), "0")),
    "placement_aggregates": (("uuid", sa.String(36), None),),
}


def _tighten(conn: sa.engine.Connection, ops: Operations) -> None:
    sqlite = conn.dialect.name == "sqlite"
    for table in ("consumers", "resource_provider_traits", "resource_providers",
                  "placement_aggregates"):
        keys = _foreign_keys(conn, table)
        columns = _TIGHTENED.get(table, ())
        extra: dict[str, object] = {}
        if sqlite:
            # SQLite changes a table by copying it whole: once, with
            # everything, including migration 0002's AUTOINCREMENT.
            extra = {"naming_convention": _SQLITE_FK_NAMES, "recreate": "always",
                     "table_kwargs": ({"sqlite_autoincrement": True}
                                      if table == "resource_providers" else {})}
        with ops.batch_alter_table(table, **extra) as batch:  # type: ignore[arg-type]
            # Keys first: MySQL will not change a column a key still uses.
            for name in keys:
                batch.drop_constraint(name, type_="foreignkey")
            for column, type_, default in columns:
                batch.alter_column(column, existing_type=type_, nullable=False,
                                   server_default=default)
