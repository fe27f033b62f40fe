"""The alembic chain builds exactly ``placement/db/tables.py``, on every backend.

Each test gets a new, empty database on its backend (SQLite file, or a
throwaway database on the PostgreSQL / MariaDB server; see tests/backends).
"""

from __future__ import annotations

import multiprocessing
from typing import Iterator

import os_resource_classes
import os_traits
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from placement.db import adoption, migration, tables
from placement.db.api import Database
from tests import backends
from tests.functional.fixtures import make_conf

BACKENDS = ["sqlite", "postgresql", "mysql"]


@pytest.fixture(params=BACKENDS)
def empty_db(request: pytest.FixtureRequest) -> Iterator[Database]:
    with backends.fresh_db(request.param) as db:
        yield db


def _not_a_version_table(name: str | None, type_: str, _parents: object) -> bool:
    # Ours (alembic skips it given version_table) and upstream's.
    return not (type_ == "table" and name == adoption.UPSTREAM_VERSION_TABLE)


def differences(db: Database) -> list[object]:
    """What alembic finds between the database and tables.py."""
    with db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={
            "compare_type": True, "compare_server_default": True,
            "version_table": migration.VERSION_TABLE,
            "include_name": _not_a_version_table})
        return list(compare_metadata(context, tables.metadata))


def _names(db: Database, table: sa.Table) -> list[str]:
    with db.reader() as conn:
        return sorted(conn.execute(sa.select(table.c.name)).scalars())


def test_migrated_schema_equals_the_table_definitions(empty_db: Database) -> None:
    migration.upgrade(empty_db)
    assert differences(empty_db) == []


def test_the_comparison_sees_differences(empty_db: Database) -> None:
    # Guards the test above: an empty database differs by every table.
    found = differences(empty_db)
    added = {diff[1].name for diff in found
             if isinstance(diff, tuple) and diff[0] == "add_table"}
    assert added == set(tables.metadata.tables)


def test_upgrade_reaches_the_head_revision(empty_db: Database) -> None:
    assert migration.current_revision(empty_db) is None
    migration.upgrade(empty_db)
    head = migration.head_revision()
    assert head is not None
    assert migration.current_revision(empty_db) == head


def test_standard_classes_and_traits_are_synced(empty_db: Database) -> None:
    migration.upgrade(empty_db)
    assert set(os_resource_classes.STANDARDS) <= set(_names(empty_db, tables.resource_classes))
    assert set(os_traits.get_traits()) <= set(_names(empty_db, tables.traits))


def test_sync_is_idempotent(empty_db: Database) -> None:
    migration.upgrade(empty_db)
    classes = _names(empty_db, tables.resource_classes)
    traits = _names(empty_db, tables.traits)
    with empty_db.writer() as conn:
        conn.execute(tables.traits.insert().values(name="CUSTOM_KEPT"))
    migration.upgrade(empty_db)
    migration.upgrade(empty_db)
    assert migration.current_revision(empty_db) == migration.head_revision()
    assert _names(empty_db, tables.resource_classes) == classes
    assert _names(empty_db, tables.traits) == sorted(traits + ["CUSTOM_KEPT"])
    assert differences(empty_db) == []


def test_sync_restores_missing_standard_names(empty_db: Database) -> None:
    migration.upgrade(empty_db)
    with empty_db.writer() as conn:
        conn.execute(tables.resource_classes.delete().where(
            tables.resource_classes.c.name == "VCPU"))
        conn.execute(tables.traits.delete().where(
            tables.traits.c.name == "HW_CPU_X86_AVX2"))
    migration.upgrade(empty_db)
    assert "VCPU" in _names(empty_db, tables.resource_classes)
    assert "HW_CPU_X86_AVX2" in _names(empty_db, tables.traits)


def _sync_in_process(url: str) -> None:
    db = Database(make_conf(url))
    try:
        migration.upgrade(db)
    finally:
        db.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_syncs_both_succeed(backend: str) -> None:
    # Several API workers with sync_on_startup start at the same moment.
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        ctx = multiprocessing.get_context("spawn")
        workers = [ctx.Process(target=_sync_in_process, args=(url,)) for _ in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        assert [worker.exitcode for worker in workers] == [0, 0, 0]
        db = Database(make_conf(url))
        try:
            assert migration.current_revision(db) == migration.head_revision()
            assert differences(db) == []
            classes = _names(db, tables.resource_classes)
            assert len(classes) == len(set(classes)) == len(os_resource_classes.STANDARDS)
        finally:
            db.dispose()


def _create_provider(conn: sa.engine.Connection, number: int, **columns: object) -> int:
    uuid = "00000000-0000-4000-8000-%012d" % number
    conn.execute(tables.resource_providers.insert().values(
        uuid=uuid, name="rp%d" % number, **columns))
    return conn.execute(sa.select(tables.resource_providers.c.id).where(
        tables.resource_providers.c.uuid == uuid)).scalar_one()


def test_provider_ids_are_never_reused(empty_db: Database) -> None:
    # Providers written before revision 0002 keep their ids and tree
    # links; afterwards the newest provider's id, once deleted, is not
    # handed out again (workers key what they keep of a provider by id).
    migration.upgrade(empty_db, "0001")
    rps = tables.resource_providers
    with empty_db.writer() as conn:
        first = _create_provider(conn, 1)
        conn.execute(rps.update().values(root_provider_id=first))
        child = _create_provider(conn, 2, root_provider_id=first, parent_provider_id=first)
    migration.upgrade(empty_db)
    assert differences(empty_db) == []
    with empty_db.writer() as conn:
        kept = conn.execute(sa.select(rps.c.id, rps.c.root_provider_id,
                                      rps.c.parent_provider_id).order_by(rps.c.id)).all()
        assert [tuple(row) for row in kept] == [(first, first, None),
                                                 (child, first, first)]
        newest = _create_provider(conn, 3)
        conn.execute(rps.delete().where(rps.c.id == newest))
    with empty_db.writer() as conn:
        assert _create_provider(conn, 3) > newest


def _versions(db: Database) -> dict[str, list[str]]:
    with db.reader() as conn:
        present = set(sa.inspect(conn).get_table_names())
        return {table: list(conn.exec_driver_sql(
                    "SELECT version_num FROM %s" % table).scalars())
                for table in (migration.VERSION_TABLE, adoption.UPSTREAM_VERSION_TABLE)
                if table in present}


def _class_of_each(db: Database) -> dict[str, list[tuple[str, str]]]:
    """(provider uuid, class name) of every inventory and allocation."""
    rc = tables.resource_classes
    found = {}
    with db.reader() as conn:
        for table in (tables.inventories, tables.allocations):
            found[table.name] = sorted(
                (str(uuid), str(name)) for uuid, name in conn.execute(
                    sa.select(tables.resource_providers.c.uuid, rc.c.name)
                    .join(table, table.c.resource_provider_id
                          == tables.resource_providers.c.id)
                    .join(rc, rc.c.id == table.c.resource_class_id)))
    return found


def test_an_earlier_release_of_ours_is_carried_on(empty_db: Database) -> None:
    # Releases before 0003 kept their revision in alembic_version and let
    # the id sequence number classes from 1.  Both are put right, and
    # inventories and allocations follow their classes.
    migration.upgrade(empty_db, "0002")
    rc = tables.resource_classes
    old_ids = {name: number for number, name in enumerate(
        os_resource_classes.STANDARDS + ["CUSTOM_OLD"], start=1)}
    with empty_db.writer() as conn:
        conn.execute(rc.delete())
        conn.execute(rc.insert(), [{"id": id_, "name": name}
                                   for name, id_ in old_ids.items()])
        rp = _create_provider(conn, 1)
        for name in ("VCPU", "MEMORY_MB", "CUSTOM_OLD"):
            conn.execute(tables.inventories.insert().values(
                resource_provider_id=rp, resource_class_id=old_ids[name], total=8,
                reserved=0, min_unit=1, max_unit=8, step_size=1, allocation_ratio=1.0))
            conn.execute(tables.allocations.insert().values(
                resource_provider_id=rp, resource_class_id=old_ids[name],
                consumer_id="00000000-0000-4000-8000-000000000099", used=1))
        conn.exec_driver_sql("DROP TABLE %s" % migration.VERSION_TABLE)
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0002'")
    linked = _class_of_each(empty_db)
    assert migration.current_revision(empty_db) == "0002"

    migration.upgrade(empty_db)
    assert _versions(empty_db) == {
        migration.VERSION_TABLE: [migration.head_revision()],
        adoption.UPSTREAM_VERSION_TABLE: [adoption.UPSTREAM_HEAD]}
    with empty_db.reader() as conn:
        ids = dict(conn.execute(sa.select(rc.c.name, rc.c.id)).tuples().all())
    assert ids == {**{name: index for index, name in enumerate(os_resource_classes.STANDARDS)},
                   "CUSTOM_OLD": tables.CUSTOM_CLASS_MIN_ID}
    assert _class_of_each(empty_db) == linked
    assert differences(empty_db) == []


@pytest.mark.parametrize("table, revision, says", [
    (migration.VERSION_TABLE, "9999",
     "schema revision 9999 is not one this release of placement knows"),
    (adoption.UPSTREAM_VERSION_TABLE, "123456abcdef",
     "alembic revision 123456abcdef is neither one of OpenStack Placement's"),
])
def test_an_unknown_revision_is_refused_untouched(
        empty_db: Database, table: str, revision: str, says: str) -> None:
    migration.upgrade(empty_db)
    with empty_db.writer() as conn:
        if table == adoption.UPSTREAM_VERSION_TABLE:
            conn.exec_driver_sql("DROP TABLE %s" % migration.VERSION_TABLE)
        conn.exec_driver_sql("UPDATE %s SET version_num = '%s'" % (table, revision))
        conn.execute(tables.resource_classes.delete().where(
            tables.resource_classes.c.name == "VCPU"))
    versions = _versions(empty_db)
    with pytest.raises(migration.SchemaRefused, match=says):
        migration.upgrade(empty_db)
    assert _versions(empty_db) == versions
    assert "VCPU" not in _names(empty_db, tables.resource_classes)  # no sync either
    assert migration.current_revision(empty_db) is None
