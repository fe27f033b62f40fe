"""A worker's migration at start runs in a child process
(placement/db/startup.py): the schema is migrated, the worker connects,
and a failure fails the start with the child's own error."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from placement.db import migration, startup, tables
from placement.db.api import Database
from tests.functional.fixtures import make_conf


def _file_db(tmp_path: Path) -> Database:
    return Database(make_conf("sqlite:///%s" % (tmp_path / "placement.sqlite")))


def test_the_child_migrates_and_the_worker_connects(tmp_path: Path) -> None:
    db = _file_db(tmp_path)
    try:
        startup.migrate(db)
        assert db.started
        assert migration.current_revision(db) == migration.head_revision()
        with db.reader() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(
                tables.resource_classes)).scalar_one() > 0
    finally:
        db.dispose()


def test_a_refused_schema_fails_the_start_with_its_own_error(tmp_path: Path) -> None:
    db = _file_db(tmp_path)
    try:
        with db.engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE %s (version_num VARCHAR(32) NOT NULL)"
                                 % migration.VERSION_TABLE)
            conn.exec_driver_sql("INSERT INTO %s VALUES ('not-ours')"
                                 % migration.VERSION_TABLE)
        db.dispose()
        with pytest.raises(migration.SchemaRefused, match="not-ours"):
            startup.migrate(db)
        assert not db.started
    finally:
        db.dispose()


class _Unsendable(Exception):
    def __reduce__(self):  # type: ignore[no-untyped-def]
        raise TypeError("cannot be pickled")


def test_an_error_that_cannot_be_sent_back_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(_db: Database) -> None:
        raise _Unsendable("the disk is full")

    monkeypatch.setattr(migration, "upgrade", fail)
    db = _file_db(tmp_path)
    with pytest.raises(startup.MigrationFailed, match="_Unsendable: the disk is full"):
        startup.migrate(db)


def test_sqlite_in_memory_migrates_in_the_worker() -> None:
    db = Database(make_conf("sqlite://"))
    try:
        startup.migrate(db)  # a child could not see this database
        assert db.started
        assert migration.current_revision(db) == migration.head_revision()
    finally:
        db.dispose()
