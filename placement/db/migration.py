"""Schema migrations, adoption of upstream databases, and standard names.

``upgrade()`` finds out what the database holds (:func:`state`): nothing
yet, our schema at a revision we know, or OpenStack Placement's at one of
its revisions.  It adopts an upstream schema in place
(:mod:`placement.db.adoption`), runs our alembic migrations to the head
revision and then syncs the standard resource classes (os-resource-classes)
and traits (os-traits) into their tables.  A revision it does not know
(a newer release of ours, or something else) is refused before anything
changes.

Our revision is kept in a table of our own, :data:`VERSION_TABLE`;
upstream's ``alembic_version`` is left holding upstream's head revision,
the upstream schema ours can be handed back as (see adoption.py).

Every step is idempotent, so ``placement-manage db sync`` and
``sync_on_startup`` may run any number of times, from several workers at
once: schema changes are serialised by a database-wide lock (an advisory
lock on PostgreSQL, a named lock on MySQL, a lock table on a Galera
cluster, the write lock on SQLite), so a worker that comes second finds the
schema migrated and does nothing, and a worker that loses the race to
insert a standard name looks again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
from typing import Iterator

import os_resource_classes
import os_traits
import sqlalchemy as sa
from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from oslo_db import exception as db_exc

from placement.db import adoption, api, failures, tables
from placement.db.api import Database

LOG = logging.getLogger(__name__)
_MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


# Our revisions live here; upstream's ``alembic_version`` is left to upstream.
VERSION_TABLE = "placement_alembic_version"


def _script() -> ScriptDirectory:
    config = AlembicConfig()
    config.set_main_option("script_location", _MIGRATIONS)
    return ScriptDirectory.from_config(config)


def _alembic_config(conn: sa.engine.Connection) -> AlembicConfig:
    config = AlembicConfig()
    config.set_main_option("script_location", _MIGRATIONS)
    config.attributes["connection"] = conn
    config.attributes["version_table"] = VERSION_TABLE
    return config


def head_revision() -> str | None:
    return _script().get_current_head()


def _known_revisions() -> set[str]:
    return {script.revision for script in _script().walk_revisions()}


class SchemaRefused(Exception):
    """The database holds a schema this code must not touch."""


@dataclasses.dataclass(frozen=True)
class SchemaState:
    """What a database holds, as :func:`state` found it.

    ``kind`` is one of ``empty``, ``ours``, ``upstream`` (OpenStack
    Placement's schema, not adopted yet) or ``unknown``; ``revision`` is
    our revision for ``ours`` (also when an earlier release of ours wrote
    it into ``alembic_version``) and upstream's for ``upstream``.
    """

    kind: str
    revision: str | None
    detail: str = ""


def _versions_in(conn: sa.engine.Connection, table: str) -> list[str]:
    return list(conn.exec_driver_sql(
        "SELECT version_num FROM %s" % table).scalars())


def state(conn: sa.engine.Connection) -> SchemaState:
    """Find out what the database on ``conn`` holds; reads only."""
    present = set(sa.inspect(conn).get_table_names())
    ours = _known_revisions()
    if VERSION_TABLE in present:
        revisions = _versions_in(conn, VERSION_TABLE)
        if len(revisions) == 1 and revisions[0] in ours:
            return SchemaState("ours", revisions[0])
        return SchemaState("unknown", ", ".join(revisions), (
            "schema revision %s is not one this release of placement knows "
            "(its newest is %s): the database was written by a newer "
            "release; nothing was changed" % (", ".join(revisions) or "(none)",
                                              head_revision())))
    if adoption.UPSTREAM_VERSION_TABLE in present:
        revisions = _versions_in(conn, adoption.UPSTREAM_VERSION_TABLE)
        if len(revisions) == 1 and revisions[0] in ours:
            # Written by a release of ours from before VERSION_TABLE.
            return SchemaState("ours", revisions[0])
        if len(revisions) == 1 and revisions[0] in adoption.UPSTREAM_REVISIONS:
            return SchemaState("upstream", revisions[0])
        return SchemaState("unknown", ", ".join(revisions), (
            "alembic revision %s is neither one of OpenStack Placement's "
            "(%s) nor one of ours; nothing was changed"
            % (", ".join(revisions) or "(none)",
               ", ".join(adoption.UPSTREAM_REVISIONS))))
    if present & set(tables.metadata.tables):
        return SchemaState("unknown", None, (
            "the database has placement tables (%s) but no schema revision; "
            "nothing was changed"
            % ", ".join(sorted(present & set(tables.metadata.tables)))))
    return SchemaState("empty", None)


def current_revision(db: Database) -> str | None:
    """Our schema revision, or None when the database is not ours (yet)."""
    with db.engine.connect() as conn:
        found = state(conn)
    return found.revision if found.kind == "ours" else None


def describe(db: Database) -> SchemaState:
    with db.engine.connect() as conn:
        return state(conn)


def adoptability(db: Database) -> str:
    """For an upstream database: whether ``db sync`` can adopt it, and if
    not, why; reads only."""
    with db.engine.connect() as conn:
        found = adoption.problems(conn)
    if found:
        return "not adoptable as it is: %s" % "; ".join(str(p) for p in found)
    return "adoptable: 'placement-manage db sync' adopts it in place"


# Any constant shared by every placement process; the name says what it is for.
_LOCK_NAME = "placement_schema_migration"
_PG_LOCK_KEY = 0x706C6163  # "plac"
_LOCK_WAIT_SECONDS = 600
# A Galera cluster's migration lock: the table exists while a migration
# runs (see _galera_exclusive).
_GALERA_LOCK_TABLE = "placement_migration_lock"
_TABLE_EXISTS = 1050


@contextlib.contextmanager
def _exclusive(conn: sa.engine.Connection) -> Iterator[None]:
    """Hold the database-wide migration lock on ``conn`` for the block."""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        # The whole migration in one BEGIN IMMEDIATE transaction (SQLite's
        # DDL is transactional); alembic sees it as the caller's transaction.
        conn.execution_options(**{api.WRITE_OPTION: True})
        with conn.begin():
            yield
    elif dialect == "postgresql":
        conn.exec_driver_sql("SELECT pg_advisory_lock(%d)" % _PG_LOCK_KEY)
        conn.commit()
        try:
            yield
        finally:
            conn.rollback()
            conn.exec_driver_sql("SELECT pg_advisory_unlock(%d)" % _PG_LOCK_KEY)
            conn.commit()
    elif dialect == "mysql" and _is_galera(conn):
        with _galera_exclusive(conn):
            yield
    elif dialect == "mysql":
        got = conn.exec_driver_sql(
            "SELECT GET_LOCK('%s', %d)" % (_LOCK_NAME, _LOCK_WAIT_SECONDS)).scalar()
        conn.commit()
        if got != 1:
            raise RuntimeError("timed out waiting for another schema migration")
        try:
            yield
        finally:
            conn.rollback()
            conn.exec_driver_sql("SELECT RELEASE_LOCK('%s')" % _LOCK_NAME)
            conn.commit()
    else:
        yield


def _is_galera(conn: sa.engine.Connection) -> bool:
    row = conn.exec_driver_sql("SHOW VARIABLES LIKE 'wsrep_on'").first()
    conn.commit()
    return row is not None and str(row[1]).upper() == "ON"


@contextlib.contextmanager
def _galera_exclusive(conn: sa.engine.Connection) -> Iterator[None]:
    """Hold the migration lock of a whole Galera cluster.

    GET_LOCK would hold on one node only, while workers migrate through
    several.  DDL, though, runs on all nodes at the same point of one total
    order, so exactly one CREATE TABLE of the lock table succeeds however
    many nodes try at once: its creator holds the lock until it drops the
    table, and everyone else waits for the table to go.  DDL that comes
    after the DROP in that order sees every write made before it, so the
    next holder reads the revision its predecessor left.  A migration
    killed while holding the lock leaves the table behind; the others then
    fail after waiting, naming it.
    """
    deadline = time.monotonic() + _LOCK_WAIT_SECONDS
    while True:
        try:
            conn.exec_driver_sql(
                "CREATE TABLE %s (id INTEGER PRIMARY KEY)" % _GALERA_LOCK_TABLE)
            conn.commit()
            break
        except (db_exc.DBError, sa.exc.DBAPIError) as exc:
            conn.rollback()
            if failures.driver_code(exc) != _TABLE_EXISTS:
                raise
        if time.monotonic() > deadline:
            raise RuntimeError(
                "timed out waiting for another schema migration; if none is "
                "running, a migration was killed: drop table %s" % _GALERA_LOCK_TABLE)
        time.sleep(0.5)
    try:
        yield
    finally:
        conn.rollback()
        conn.exec_driver_sql("DROP TABLE IF EXISTS %s" % _GALERA_LOCK_TABLE)
        conn.commit()


def upgrade(db: Database, revision: str = "head") -> SchemaState:
    """Bring the schema to ``revision`` and sync the standard names.

    Returns what the database held before.  Raises SchemaRefused, having
    changed nothing, for a database this code must not or cannot migrate.
    """
    with db.engine.connect() as conn:
        with _exclusive(conn):
            found = state(conn)
            if found.kind == "unknown":
                raise SchemaRefused(found.detail)
            if found.kind == "upstream":
                assert found.revision is not None
                LOG.info("adopting the OpenStack Placement database at "
                         "upstream revision %s", found.revision)
                try:
                    adoption.adopt(conn, found.revision)
                except adoption.NotAdoptable as exc:
                    raise SchemaRefused(str(exc)) from None
                _stamp(conn, VERSION_TABLE, adoption.ADOPTED_AS)
            elif found.kind == "ours" and not _has_table(conn, VERSION_TABLE):
                _stamp(conn, VERSION_TABLE, found.revision)
            alembic_command.upgrade(_alembic_config(conn), revision)
            _stamp(conn, adoption.UPSTREAM_VERSION_TABLE, adoption.UPSTREAM_HEAD)
            if conn.in_transaction():
                conn.commit()
    sync_standard_names(db)
    if revision == "head":
        db.migrated = True
    return found


def _has_table(conn: sa.engine.Connection, name: str) -> bool:
    return name in sa.inspect(conn).get_table_names()


def _stamp(conn: sa.engine.Connection, table: str, revision: str | None) -> None:
    """Make ``table`` (an alembic version table) hold just ``revision``."""
    version = sa.table(table, sa.column("version_num"))
    if not _has_table(conn, table):
        sa.Table(table, sa.MetaData(),
                 sa.Column("version_num", sa.String(32), primary_key=True)
                 ).create(conn)
    conn.execute(version.delete())
    conn.execute(version.insert().values(version_num=revision))


def sync_standard_names(db: Database) -> None:
    """Insert the standard resource classes and traits that are missing.

    Standard classes get the ids upstream gives them (tables.py).
    Standard names are never deleted here: a class or trait dropped from the
    libraries may still be in use.
    """
    _insert_missing(db, tables.resource_classes, [
        {"id": tables.standard_class_id(name), "name": name}
        for name in os_resource_classes.STANDARDS])
    _insert_missing(db, tables.traits, [
        {"name": name} for name in os_traits.get_traits()])


@contextlib.contextmanager
def _zero_is_an_id(conn: sa.engine.Connection) -> Iterator[None]:
    """Let an explicit id 0 (VCPU's) be stored as 0: MySQL otherwise takes
    0 in an AUTO_INCREMENT column to mean "the next id"."""
    if conn.dialect.name != "mysql":
        yield
        return
    mode = conn.exec_driver_sql("SELECT @@SESSION.sql_mode").scalar()
    conn.exec_driver_sql(
        "SET SESSION sql_mode = CONCAT_WS(',', @@SESSION.sql_mode, "
        "'NO_AUTO_VALUE_ON_ZERO')")
    try:
        yield
    finally:
        conn.execute(sa.text("SET SESSION sql_mode = :mode"), {"mode": mode})


def _insert_missing(db: Database, table: sa.Table, rows: list[dict[str, object]]) -> None:
    def attempt() -> None:
        with db.writer() as conn:
            present = set(conn.execute(sa.select(table.c.name)).scalars())
            missing = [row for row in rows if row["name"] not in present]
            if missing:
                with _zero_is_an_id(conn):
                    conn.execute(table.insert(), missing)

    # A concurrent sync that inserted some first makes ours a duplicate (or,
    # through another Galera node, a failed certification); look again.
    api.run_with_retries("sync of standard %s" % table.name, attempt,
                         also=(db_exc.DBDuplicateEntry,))
