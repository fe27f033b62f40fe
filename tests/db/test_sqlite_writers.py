"""Several processes writing one SQLite file: no "database is locked", no
lost update.

Each writer transaction reads a provider's generation and then writes
generation + 1 only if it is unchanged, the way placement's objects guard
their writes.  A transaction that began with a plain (deferred) BEGIN would
fail to upgrade its read lock ("database is locked", at once and whatever
the busy timeout) or find the generation moved; ``Database.writer()``
begins with BEGIN IMMEDIATE, so writers queue instead.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import sqlalchemy as sa

from placement.db import migration, tables
from placement.db.api import Database
from tests.functional.fixtures import make_conf

PROVIDER_UUID = "5e1a0f0c-9a4e-4c55-9a59-2f3d2c7d1c11"
ROUNDS = 150
WORKERS = 3


def _bump(db: Database) -> None:
    rp = tables.resource_providers
    with db.writer() as conn:
        generation = conn.execute(
            sa.select(rp.c.generation).where(rp.c.uuid == PROVIDER_UUID)).scalar_one()
        result = conn.execute(
            rp.update()
            .where(rp.c.uuid == PROVIDER_UUID, rp.c.generation == generation)
            .values(generation=generation + 1))
        if result.rowcount != 1:
            raise AssertionError("generation %d moved under a writer" % generation)


def _writer(url: str, rounds: int, errors: "multiprocessing.Queue[str]") -> None:
    db = Database(make_conf(url))
    try:
        for _ in range(rounds):
            try:
                _bump(db)
                # A reader between writes must not disturb anyone either.
                with db.reader() as conn:
                    conn.execute(sa.select(sa.func.count()).select_from(
                        tables.resource_providers)).scalar()
            except Exception as exc:  # reported to the parent, which fails
                errors.put("%s: %s" % (type(exc).__name__, exc))
    finally:
        db.dispose()


def test_concurrent_sqlite_writers_queue_instead_of_failing(tmp_path: Path) -> None:
    url = "sqlite:///%s" % (tmp_path / "placement.sqlite")
    db = Database(make_conf(url))
    migration.upgrade(db)
    with db.writer() as conn:
        conn.execute(tables.resource_providers.insert().values(
            uuid=PROVIDER_UUID, name="shared", generation=0))
    ctx = multiprocessing.get_context("spawn")
    errors: multiprocessing.Queue[str] = ctx.Queue()
    workers = [ctx.Process(target=_writer, args=(url, ROUNDS, errors))
               for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert problems == []
    assert [worker.exitcode for worker in workers] == [0] * WORKERS
    with db.reader() as conn:
        final = conn.execute(sa.select(tables.resource_providers.c.generation)).scalar_one()
    db.dispose()
    assert final == ROUNDS * WORKERS


def test_writer_transactions_begin_immediate(tmp_path: Path) -> None:
    db = Database(make_conf("sqlite:///%s" % (tmp_path / "p.sqlite")))
    statements: list[str] = []

    @sa.event.listens_for(db.engine, "before_cursor_execute")
    def _record(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    with db.writer() as conn:
        conn.execute(sa.text("SELECT 1"))
    with db.reader() as conn:
        conn.execute(sa.text("SELECT 2"))
    db.dispose()
    assert statements.index("BEGIN IMMEDIATE") < statements.index("SELECT 1")
    after_writer = statements[statements.index("SELECT 1") + 1:]
    assert "BEGIN IMMEDIATE" not in after_writer  # readers are not serialised
