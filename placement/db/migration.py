"""Schema migrations and the standard names every database must hold.

``upgrade()`` runs alembic to the head revision and then syncs the standard
resource classes (os-resource-classes) and traits (os-traits) into their
tables.  Both steps are idempotent, so ``placement-manage db sync`` and
``sync_on_startup`` may run any number of times, from several workers at
once: a worker that loses the race to create a table or a row carries on.
"""

from __future__ import annotations

import logging
import os

import os_resource_classes
import os_traits
import sqlalchemy as sa
from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from oslo_db import exception as db_exc

from placement.db import tables
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


def upgrade(db: Database, revision: str = "head") -> None:
    """Bring the schema to ``revision`` and sync the standard names."""
    try:
        with db.engine.connect() as conn:
            alembic_command.upgrade(_alembic_config(conn), revision)
            conn.commit()
    except (db_exc.DBDuplicateEntry, db_exc.DBError) as exc:
        # Another process migrating the same database at the same moment.
        if current_revision(db) != head_revision():
            raise
        LOG.info("schema was migrated concurrently: %s", exc)
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

