"""Schema migrations and the standard names every database must hold.

``upgrade()`` runs alembic to the head revision and then syncs the standard
resource classes (os-resource-classes) and traits (os-traits) into their
tables.  Both steps are idempotent, so ``placement-manage db sync`` and
``sync_on_startup`` may run any number of times, from several workers at
once: schema changes are serialised by a database-wide lock (an advisory
lock on PostgreSQL, a named lock on MySQL, the write lock on SQLite), so a
worker that comes second finds the schema migrated and does nothing, and a
worker that loses the race to insert a standard name looks again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Iterator

import os_resource_classes
import os_traits
import sqlalchemy as sa
from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from oslo_db import exception as db_exc

from placement.db import api, tables
from placement.db.api import Database

LOG = logging.getLogger(__name__)
_MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


def _alembic_config(conn: sa.engine.Connection) -> AlembicConfig:
    config = AlembicConfig()
    config.set_main_option("script_location", _MIGRATIONS)
    config.attributes["connection"] = conn
    return config


def head_revision() -> str | None:
    config = AlembicConfig()
    config.set_main_option("script_location", _MIGRATIONS)
    return ScriptDirectory.from_config(config).get_current_head()


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


# Any constant shared by every placement process; the name says what it is for.
_LOCK_NAME = "placement_schema_migration"
_PG_LOCK_KEY = 0x706C6163  # "plac"
_LOCK_WAIT_SECONDS = 600


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


def upgrade(db: Database, revision: str = "head") -> None:
    """Bring the schema to ``revision`` and sync the standard names."""
    with db.engine.connect() as conn:
        with _exclusive(conn):
            alembic_command.upgrade(_alembic_config(conn), revision)
            if conn.in_transaction():
                conn.commit()
    sync_standard_names(db)


def sync_standard_names(db: Database) -> None:
    """Insert the standard resource classes and traits that are missing.

    Standard names are never deleted here: a class or trait dropped from the
    libraries may still be in use.
    """
    _insert_missing(db, tables.resource_classes, os_resource_classes.STANDARDS)
    _insert_missing(db, tables.traits, os_traits.get_traits())


def _insert_missing(db: Database, table: sa.Table, names: list[str]) -> None:
    for _attempt in range(3):
        try:
            with db.writer() as conn:
                present = set(conn.execute(sa.select(table.c.name)).scalars())
                missing = [name for name in names if name not in present]
                if missing:
                    conn.execute(table.insert(), [{"name": n} for n in missing])
            return
        except db_exc.DBDuplicateEntry:
            continue  # a concurrent sync inserted some; look again

