"""Commit marks (placement/db/commit_marks.py): one per MySQL write, none
elsewhere, deleted by age now and then.  What they are for, learning the
fate of a lost COMMIT, is tested in tests/functional/test_failures.py
(and across Galera nodes in tests/functional/test_galera.py)."""

from __future__ import annotations

import logging
from typing import Iterator

import pytest
import sqlalchemy as sa

from placement.db import commit_marks, migration, tables
from placement.db.api import Database
from tests import backends
from tests.functional.fixtures import make_conf

_MARKS = tables.commit_marks


def _migrated(backend: str) -> Iterator[Database]:
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        database = Database(make_conf(url))
        try:
            migration.upgrade(database)
            yield database
        finally:
            database.dispose()


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    yield from _migrated(request.param)


@pytest.fixture
def mysql_db() -> Iterator[Database]:
    """Marks are written and deleted on MySQL only."""
    yield from _migrated("mysql")


def _marks(db: Database) -> list[tuple[int, int, bool]]:
    with db.reader() as conn:
        return [tuple(row) for row in conn.execute(  # type: ignore[misc]
            sa.select(_MARKS).order_by(_MARKS.c.written_at, _MARKS.c.token))]


def _write(db: Database, name: str) -> None:
    with db.writer() as conn:
        conn.execute(tables.traits.insert().values(name=name))


def test_each_mysql_write_commits_one_mark(db: Database) -> None:
    before = _marks(db)
    _write(db, "CUSTOM_MARKED")
    with pytest.raises(LookupError):
        with db.writer() as conn:  # a write that fails leaves no mark
            conn.execute(tables.traits.insert().values(name="CUSTOM_FAILED"))
            raise LookupError("the write gives up")
    new = [mark for mark in _marks(db) if mark not in before]
    if db.dialect != "mysql":
        assert new == []  # PostgreSQL asks by transaction id; SQLite never loses one
        return
    assert len(new) == 1
    assert new[0][2] is False or new[0][2] == 0


def _insert(db: Database, *written_at: int) -> None:
    with db.writer() as conn:
        conn.execute(_MARKS.insert(), [
            {"written_at": when, "token": token, "aborted": False}
            for token, when in enumerate(written_at)])


def test_old_marks_are_deleted_in_batches(
        mysql_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    db = mysql_db
    monkeypatch.setattr(commit_marks, "_BATCH", 3)
    with db.writer() as conn:
        conn.execute(_MARKS.delete())
    _insert(db, *range(100, 107), 200, 201)
    assert commit_marks.delete_older(db.engine, 200) == 7  # three batches
    # (the writes of the test left marks of their own, written now)
    assert [mark[0] for mark in _marks(db) if mark[0] < 1000] == [200, 201]


def test_writes_delete_old_marks_now_and_then(mysql_db: Database) -> None:
    db = mysql_db
    old = commit_marks.new().written_at - commit_marks.KEEP_MS - 1000
    _insert(db, old)
    db.outcomes.sweeper.due = 0.0  # due now
    _write(db, "CUSTOM_CLEANING")
    assert [mark for mark in _marks(db) if mark[0] == old] == []
    _insert(db, old)
    _write(db, "CUSTOM_NOT_CLEANING")  # not due again for a while
    assert [mark[0] for mark in _marks(db) if mark[0] == old] == [old]


def test_a_schema_without_the_table_still_takes_writes(
        caplog: pytest.LogCaptureFixture) -> None:
    # Code upgraded before 'db sync': writes go on as before revision 0005.
    backends.require("mysql")
    with backends.fresh_database("mysql") as url:
        db = Database(make_conf(url))
        try:
            with caplog.at_level(logging.WARNING):
                migration.upgrade(db, "0004")
                _write(db, "CUSTOM_BEFORE_0005")
                _write(db, "CUSTOM_BEFORE_0005_TOO")
            with db.reader() as conn:
                names = conn.execute(sa.select(tables.traits.c.name).where(
                    tables.traits.c.name.like("CUSTOM_BEFORE_0005%"))).scalars().all()
            assert sorted(names) == ["CUSTOM_BEFORE_0005", "CUSTOM_BEFORE_0005_TOO"]
            missing = [r for r in caplog.records if "commit_marks is missing" in r.message]
            assert len(missing) == 1
        finally:
            db.dispose()
